/* SPDX-License-Identifier: Apache-2.0 */
/* Snapshots are records, not a second format: the same decoder and the same
 * apply rebuild the image, so a snapshot cannot describe a state the log
 * could not have reached. Only the end offset is extra, because records in
 * a snapshot no longer sit at the offsets they were written at. */
#include <string.h>

#include "common/crc32c.h"
#include "controller/meta/meta_image_int.h"
#include "controller/meta/meta_snapshot.h"

static struct meta_str meta_snapshot_str(const char *s)
{
    struct meta_str out = {s, strlen(s)};
    return out;
}

static int meta_snapshot_walk_broker(const struct meta_broker *b,
                                     meta_snapshot_record_fn fn,
                                     void *ctx)
{
    struct meta_record rec;
    int rv;

    memset(&rec, 0, sizeof(rec));
    rec.type = META_RECORD_REGISTER_BROKER;
    rec.u.reg.id = b->id;
    rec.u.reg.epoch = b->epoch;
    rec.u.reg.host = meta_snapshot_str(b->host);
    rec.u.reg.port = b->port;
    rec.u.reg.rack = meta_snapshot_str(b->rack);
    rec.u.reg.directory_id = meta_snapshot_str(b->directory_id);
    rv = fn(ctx, &rec);
    if (rv == 0 && b->tls_port != 0) {
        memset(&rec, 0, sizeof(rec));
        rec.type = META_RECORD_BROKER_TLS;
        rec.u.tls.id = b->id;
        rec.u.tls.epoch = b->epoch;
        rec.u.tls.host = meta_snapshot_str(b->tls_host);
        rec.u.tls.port = b->tls_port;
        rv = fn(ctx, &rec);
    }
    if (rv != 0 || b->fenced) {
        return rv;
    }
    memset(&rec, 0, sizeof(rec));
    rec.type = META_RECORD_UNFENCE_BROKER;
    rec.u.fence.id = b->id;
    rec.u.fence.epoch = b->epoch;
    return fn(ctx, &rec);
}

static int meta_snapshot_walk_partition(const struct meta_topic *t,
                                        uint32_t i,
                                        meta_snapshot_record_fn fn,
                                        void *ctx)
{
    const struct meta_partition *p = &t->partitions[i];
    struct meta_record rec;
    uint32_t r;
    int rv;

    memset(&rec, 0, sizeof(rec));
    rec.type = META_RECORD_PARTITION;
    rec.u.part.topic_id = t->id;
    rec.u.part.partition = (int32_t)i;
    rec.u.part.replicas = p->replicas;
    rec.u.part.isr = p->isr;
    rec.u.part.elr = p->elr;
    rec.u.part.leader = p->leader;
    rec.u.part.leader_epoch = p->leader_epoch;
    rec.u.part.partition_epoch = p->partition_epoch;
    rec.u.part.flags = p->flags;
    rv = fn(ctx, &rec);
    if (rv != 0 || p->empty == 0) {
        return rv;
    }
    memset(&rec, 0, sizeof(rec));
    rec.type = META_RECORD_REPLICAS_EMPTY;
    rec.u.empty.topic_id = t->id;
    rec.u.empty.partition = (int32_t)i;
    for (r = 0; r < p->replicas.n; r++) {
        if (p->empty & (1u << r)) {
            rec.u.empty.ids.ids[rec.u.empty.ids.n++] = p->replicas.ids[r];
        }
    }
    return fn(ctx, &rec);
}

static int meta_snapshot_walk_topic(const struct meta_topic *t,
                                    meta_snapshot_record_fn fn,
                                    void *ctx)
{
    struct meta_record rec;
    uint32_t i;
    int rv;

    memset(&rec, 0, sizeof(rec));
    rec.type = META_RECORD_CREATE_TOPIC;
    rec.u.topic.topic_id = t->id;
    rec.u.topic.name = meta_snapshot_str(t->name);
    rv = fn(ctx, &rec);
    for (i = 0; rv == 0 && i < t->n_configs; i++) {
        memset(&rec, 0, sizeof(rec));
        rec.type = META_RECORD_TOPIC_CONFIG;
        rec.u.config.topic_id = t->id;
        rec.u.config.key = meta_snapshot_str(t->configs[i].key);
        rec.u.config.value = meta_snapshot_str(t->configs[i].value);
        rv = fn(ctx, &rec);
    }
    for (i = 0; rv == 0 && i < t->n_partitions; i++) {
        rv = meta_snapshot_walk_partition(t, i, fn, ctx);
    }
    return rv;
}

/* Users and ACL rules depend on nothing else in the image. */
static int meta_snapshot_walk_auth(const struct meta_image *img,
                                   meta_snapshot_record_fn fn,
                                   void *ctx)
{
    struct meta_record rec;
    uint32_t i;
    size_t j;
    int rv = 0;

    for (i = 0; rv == 0 && i < img->n_users; i++) {
        memset(&rec, 0, sizeof(rec));
        rec.type = META_RECORD_USER_SCRAM;
        meta_image_user_record(&img->users[i], &rec.u.user);
        rv = fn(ctx, &rec);
    }
    /* in the set's order, so the loaded image is equal, order included */
    for (j = 0; rv == 0 && j < img->acls.n; j++) {
        memset(&rec, 0, sizeof(rec));
        rec.type = META_RECORD_ACL;
        meta_image_acl_record(&img->acls.rules[j], &rec.u.acl);
        rv = fn(ctx, &rec);
    }
    return rv;
}

int meta_snapshot_walk(const struct meta_image *img,
                       meta_snapshot_record_fn fn,
                       void *ctx)
{
    struct meta_record rec;
    uint32_t i;
    int rv = 0;

    for (i = 0; rv == 0 && i < img->n_brokers; i++) {
        rv = meta_snapshot_walk_broker(&img->brokers[i], fn, ctx);
    }
    for (i = 0; rv == 0 && i < img->n_topics; i++) {
        rv = meta_snapshot_walk_topic(&img->topics[i].pub, fn, ctx);
    }
    for (i = 0; rv == 0 && i < img->n_tombs; i++) {
        memset(&rec, 0, sizeof(rec));
        rec.type = META_RECORD_TOPIC_TOMBSTONE;
        rec.u.tomb.topic_id = img->tombs[i].topic_id;
        rec.u.tomb.name = meta_snapshot_str(img->tombs[i].name);
        rv = fn(ctx, &rec);
    }
    if (rv == 0 && img->next_producer_id > 0) {
        memset(&rec, 0, sizeof(rec));
        rec.type = META_RECORD_PRODUCER_IDS;
        rec.u.next_producer_id = img->next_producer_id;
        rv = fn(ctx, &rec);
    }
    if (rv == 0) {
        rv = meta_snapshot_walk_auth(img, fn, ctx);
    }
    return rv;
}

struct meta_snapshot_writer {
    struct weir_buf *b;
    uint32_t count;
    struct err_detail *ed;
};

static int meta_snapshot_put(void *ctx, const struct meta_record *rec)
{
    struct meta_snapshot_writer *w = ctx;
    int rv = meta_record_encode(rec, w->b, w->ed);

    /* records from a checked image always pass meta_record_check */
    w->count += rv == 0;
    return rv;
}

int meta_snapshot_encode(const struct meta_image *img,
                         struct weir_buf *b,
                         struct err_detail *ed)
{
    struct meta_snapshot_writer w = {b, 0, ed};
    size_t start = b->len;
    size_t head;
    int rv;

    buf_put_u32be(b, META_SNAPSHOT_MAGIC);
    buf_put_u8(b, META_SNAPSHOT_VERSION);
    buf_put_u64be(b, (uint64_t)img->end_offset);
    head = buf_skip(b, 4);
    if (!buf_ok(b)) {
        b->len = start;
        return err_set(ed, WEIR_ENOMEM, "encoding a metadata snapshot");
    }
    rv = meta_snapshot_walk(img, meta_snapshot_put, &w);
    if (rv != 0) {
        b->len = start;
        return rv;
    }
    wire_put_u32be(b->data + head, w.count);
    buf_put_u32be(b, crc32c(b->data + start, b->len - start));
    if (!buf_ok(b)) {
        b->len = start;
        return err_set(ed, WEIR_ENOMEM, "encoding a metadata snapshot");
    }
    return 0;
}

static int meta_snapshot_head(struct weir_cursor *c,
                              int64_t *end_offset,
                              uint32_t *count,
                              struct err_detail *ed)
{
    uint32_t magic;
    uint8_t version;
    uint64_t end;

    if (!cur_u32be(c, &magic) || !cur_u8(c, &version) || !cur_u64be(c, &end) ||
        !cur_u32be(c, count)) {
        return err_set(ed, WEIR_ECORRUPT, "truncated snapshot header");
    }
    if (magic != META_SNAPSHOT_MAGIC || version != META_SNAPSHOT_VERSION) {
        return err_set(ed, WEIR_ECORRUPT,
                       "not a metadata snapshot (magic %08x version %u)", magic,
                       version);
    }
    /* every record in the image took at least one record of the log */
    if (end > INT64_MAX || *count > end ||
        *count > cur_remaining(c) / META_RECORD_HEAD_BYTES) {
        return err_set(ed, WEIR_ECORRUPT,
                       "snapshot end offset %llu or record count %u "
                       "impossible",
                       (unsigned long long)end, *count);
    }
    *end_offset = (int64_t)end;
    return 0;
}

/* Every epoch and topic id was an offset before the snapshot's end. */
static int meta_snapshot_check_ids(const struct meta_image *img,
                                   struct err_detail *ed)
{
    uint32_t i;

    for (i = 0; i < img->n_brokers; i++) {
        if (img->brokers[i].epoch >= img->end_offset) {
            return err_set(ed, WEIR_ECORRUPT,
                           "broker %d epoch %lld is past the snapshot end",
                           (int)img->brokers[i].id,
                           (long long)img->brokers[i].epoch);
        }
    }
    if (img->n_topics > 0 &&
        img->topics[img->n_topics - 1].pub.id >= img->end_offset) {
        return err_set(ed, WEIR_ECORRUPT, "topic id past the snapshot end");
    }
    for (i = 0; i < img->n_tombs; i++) {
        if (img->tombs[i].topic_id >= img->end_offset) {
            return err_set(ed, WEIR_ECORRUPT,
                           "tombstone of topic id %lld is past the snapshot "
                           "end",
                           (long long)img->tombs[i].topic_id);
        }
    }
    return 0;
}

static int meta_snapshot_records(struct weir_cursor *c,
                                 uint32_t count,
                                 struct meta_image *img,
                                 struct err_detail *ed)
{
    struct meta_record rec;
    uint32_t i;
    int rv;

    for (i = 0; i < count; i++) {
        rv = meta_record_decode(c, &rec, ed);
        if (rv == 0) {
            rv = meta_image_apply(img, &rec, ed);
        }
        if (rv != 0) {
            err_wrap(ed, "snapshot record %u", i);
            return rv;
        }
    }
    if (cur_remaining(c) != 0) {
        return err_set(ed, WEIR_ECORRUPT, "%zu bytes after the last record",
                       cur_remaining(c));
    }
    return 0;
}

int meta_snapshot_decode(const void *p,
                         size_t len,
                         struct meta_image **out,
                         struct err_detail *ed)
{
    struct meta_image *img = NULL;
    struct weir_cursor c;
    int64_t end_offset = 0;
    uint32_t count;
    int rv;

    *out = NULL;
    if (len < META_SNAPSHOT_HEAD_BYTES + 4) {
        return err_set(ed, WEIR_ECORRUPT, "snapshot of %zu bytes", len);
    }
    len -= 4;
    if (crc32c(p, len) != wire_get_u32be((const uint8_t *)p + len)) {
        return err_set(ed, WEIR_ECORRUPT, "snapshot CRC mismatch");
    }
    cur_init(&c, p, len);
    rv = meta_snapshot_head(&c, &end_offset, &count, ed);
    if (rv == 0 && meta_image_new(&img) != 0) {
        rv = err_set(ed, WEIR_ENOMEM, "loading a metadata snapshot");
    }
    if (rv == 0) {
        img->loading = true;
        rv = meta_snapshot_records(&c, count, img, ed);
    }
    if (rv == 0) {
        img->loading = false;
        img->end_offset = end_offset;
        rv = meta_snapshot_check_ids(img, ed);
    }
    if (rv != 0) {
        meta_image_free(img);
        return rv;
    }
    *out = img;
    return 0;
}
