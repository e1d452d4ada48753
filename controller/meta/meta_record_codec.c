/* SPDX-License-Identifier: Apache-2.0 */
/* Metadata record codec. The decoder reads bytes from disk or the network
 * and trusts none of them: every count is bounded by the bytes that remain
 * before anything is read, the body length must match the fields exactly,
 * and a decoded record passes meta_record_check. Encodings are canonical
 * (fixed-width fields; the one optional trailing field of a version 1
 * record is there exactly when it is not empty, see meta_record_version),
 * so re-encoding a decoded record gives back the same bytes; the fuzz
 * target relies on that. */
#include <string.h>

#include "controller/meta/meta_record.h"

static void meta_codec_put_i32(struct weir_buf *b, int32_t v)
{
    buf_put_u32be(b, (uint32_t)v);
}

static void meta_codec_put_i64(struct weir_buf *b, int64_t v)
{
    buf_put_u64be(b, (uint64_t)v);
}

static void meta_codec_put_str(struct weir_buf *b, struct meta_str s)
{
    buf_put_u16be(b, (uint16_t)s.len);
    buf_put(b, s.ptr, s.len);
}

static void meta_codec_put_bytes(struct weir_buf *b, struct meta_bytes s)
{
    buf_put_u16be(b, (uint16_t)s.len);
    buf_put(b, s.ptr, s.len);
}

static void meta_codec_put_user(struct weir_buf *b,
                                const struct meta_user_scram *u)
{
    meta_codec_put_str(b, u->name);
    buf_put_u8(b, u->mechanism);
    buf_put_u32be(b, u->iterations);
    meta_codec_put_bytes(b, u->salt);
    meta_codec_put_bytes(b, u->stored_key);
    meta_codec_put_bytes(b, u->server_key);
}

static void meta_codec_put_acl(struct weir_buf *b, const struct meta_acl *a)
{
    meta_codec_put_str(b, a->principal);
    buf_put_u8(b, a->resource);
    buf_put_u8(b, a->pattern);
    meta_codec_put_str(b, a->name);
    buf_put_u8(b, a->op);
    buf_put_u8(b, a->perm);
}

static void meta_codec_put_ids(struct weir_buf *b, const struct meta_ids *ids)
{
    uint32_t i;

    buf_put_u8(b, (uint8_t)ids->n);
    for (i = 0; i < ids->n; i++) {
        meta_codec_put_i32(b, ids->ids[i]);
    }
}

static void meta_codec_put_leader(struct weir_buf *b,
                                  int32_t leader,
                                  int32_t leader_epoch,
                                  int32_t partition_epoch,
                                  uint8_t flags)
{
    meta_codec_put_i32(b, leader);
    meta_codec_put_i32(b, leader_epoch);
    meta_codec_put_i32(b, partition_epoch);
    buf_put_u8(b, flags);
}

static void meta_codec_put_body(struct weir_buf *b,
                                const struct meta_record *rec)
{
    const struct meta_partition_rec *p = &rec->u.part;
    const struct meta_partition_change *c = &rec->u.change;

    switch (rec->type) {
    case META_RECORD_REGISTER_BROKER:
        meta_codec_put_i32(b, rec->u.reg.id);
        meta_codec_put_i64(b, rec->u.reg.epoch);
        meta_codec_put_str(b, rec->u.reg.host);
        buf_put_u16be(b, rec->u.reg.port);
        meta_codec_put_str(b, rec->u.reg.rack);
        if (rec->u.reg.directory_id.len > 0) {
            meta_codec_put_str(b, rec->u.reg.directory_id);
        }
        break;
    case META_RECORD_FENCE_BROKER:
    case META_RECORD_UNFENCE_BROKER:
        meta_codec_put_i32(b, rec->u.fence.id);
        meta_codec_put_i64(b, rec->u.fence.epoch);
        break;
    case META_RECORD_CREATE_TOPIC:
        meta_codec_put_i64(b, rec->u.topic.topic_id);
        meta_codec_put_str(b, rec->u.topic.name);
        break;
    case META_RECORD_TOPIC_CONFIG:
        meta_codec_put_i64(b, rec->u.config.topic_id);
        meta_codec_put_str(b, rec->u.config.key);
        meta_codec_put_str(b, rec->u.config.value);
        break;
    case META_RECORD_REMOVE_TOPIC:
        meta_codec_put_i64(b, rec->u.remove_topic_id);
        break;
    case META_RECORD_PARTITION:
        meta_codec_put_i64(b, p->topic_id);
        meta_codec_put_i32(b, p->partition);
        meta_codec_put_ids(b, &p->replicas);
        meta_codec_put_ids(b, &p->isr);
        meta_codec_put_leader(b, p->leader, p->leader_epoch, p->partition_epoch,
                              p->flags);
        if (p->elr.n > 0) {
            meta_codec_put_ids(b, &p->elr);
        }
        break;
    case META_RECORD_PARTITION_CHANGE:
        meta_codec_put_i64(b, c->topic_id);
        meta_codec_put_i32(b, c->partition);
        meta_codec_put_ids(b, &c->isr);
        meta_codec_put_leader(b, c->leader, c->leader_epoch, c->partition_epoch,
                              c->flags);
        if (c->elr.n > 0) {
            meta_codec_put_ids(b, &c->elr);
        }
        break;
    case META_RECORD_PRODUCER_IDS:
        meta_codec_put_i64(b, rec->u.next_producer_id);
        break;
    case META_RECORD_BROKER_TLS:
        meta_codec_put_i32(b, rec->u.tls.id);
        meta_codec_put_i64(b, rec->u.tls.epoch);
        meta_codec_put_str(b, rec->u.tls.host);
        buf_put_u16be(b, rec->u.tls.port);
        break;
    case META_RECORD_USER_SCRAM:
        meta_codec_put_user(b, &rec->u.user);
        break;
    case META_RECORD_REMOVE_USER_SCRAM:
        meta_codec_put_str(b, rec->u.user_ref.name);
        buf_put_u8(b, rec->u.user_ref.mechanism);
        break;
    case META_RECORD_ACL:
    case META_RECORD_REMOVE_ACL:
        meta_codec_put_acl(b, &rec->u.acl);
        break;
    case META_RECORD_TOPIC_TOMBSTONE:
        meta_codec_put_i64(b, rec->u.tomb.topic_id);
        meta_codec_put_str(b, rec->u.tomb.name);
        break;
    case META_RECORD_REPLICAS_EMPTY:
        meta_codec_put_i64(b, rec->u.empty.topic_id);
        meta_codec_put_i32(b, rec->u.empty.partition);
        meta_codec_put_ids(b, &rec->u.empty.ids);
        break;
    }
}

int meta_record_encode(const struct meta_record *rec,
                       struct weir_buf *b,
                       struct err_detail *ed)
{
    struct err_detail why;
    size_t start = b->len;
    size_t len_at;

    if (meta_record_check(rec, &why) != 0) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT, "%s record: %s",
                       meta_record_type_name((int)rec->type), why.msg);
    }
    buf_put_u8(b, (uint8_t)rec->type);
    buf_put_u8(b, meta_record_version(rec));
    len_at = buf_skip(b, 4);
    meta_codec_put_body(b, rec);
    if (!buf_ok(b)) {
        b->len = start;
        return err_set(ed, WEIR_ENOMEM, "encoding a metadata record");
    }
    wire_put_u32be(b->data + len_at, (uint32_t)(b->len - len_at - 4));
    return 0;
}

static bool meta_codec_i32(struct weir_cursor *c, int32_t *v)
{
    uint32_t u;

    if (!cur_u32be(c, &u)) {
        return false;
    }
    *v = (int32_t)u; /* two's complement, as written */
    return true;
}

static bool meta_codec_i64(struct weir_cursor *c, int64_t *v)
{
    uint64_t u;

    if (!cur_u64be(c, &u)) {
        return false;
    }
    *v = (int64_t)u;
    return true;
}

static bool meta_codec_str(struct weir_cursor *c, struct meta_str *s)
{
    struct weir_slice sl;
    uint16_t len;

    if (!cur_u16be(c, &len) || !cur_bytes(c, len, &sl)) {
        return false;
    }
    s->ptr = (const char *)sl.p;
    s->len = sl.len;
    return true;
}

static bool meta_codec_bytes(struct weir_cursor *c, struct meta_bytes *s)
{
    struct weir_slice sl;
    uint16_t len;

    if (!cur_u16be(c, &len) || !cur_bytes(c, len, &sl)) {
        return false;
    }
    s->ptr = sl.p;
    s->len = sl.len;
    return true;
}

static bool meta_codec_get_user(struct weir_cursor *c,
                                struct meta_user_scram *u)
{
    return meta_codec_str(c, &u->name) && cur_u8(c, &u->mechanism) &&
           cur_u32be(c, &u->iterations) && meta_codec_bytes(c, &u->salt) &&
           meta_codec_bytes(c, &u->stored_key) &&
           meta_codec_bytes(c, &u->server_key);
}

static bool meta_codec_get_acl(struct weir_cursor *c, struct meta_acl *a)
{
    return meta_codec_str(c, &a->principal) && cur_u8(c, &a->resource) &&
           cur_u8(c, &a->pattern) && meta_codec_str(c, &a->name) &&
           cur_u8(c, &a->op) && cur_u8(c, &a->perm);
}

/* The count is checked against the limit and against the bytes left
 * before any id is read. */
static bool meta_codec_ids(struct weir_cursor *c, struct meta_ids *ids)
{
    uint8_t n;
    uint32_t i;

    if (!cur_u8(c, &n) || n > META_MAX_REPLICAS ||
        (size_t)n * 4 > cur_remaining(c)) {
        return false;
    }
    ids->n = n;
    for (i = 0; i < n; i++) {
        if (!meta_codec_i32(c, &ids->ids[i])) {
            return false;
        }
    }
    return true;
}

static bool meta_codec_leader(struct weir_cursor *c,
                              int32_t *leader,
                              int32_t *leader_epoch,
                              int32_t *partition_epoch,
                              uint8_t *flags)
{
    return meta_codec_i32(c, leader) && meta_codec_i32(c, leader_epoch) &&
           meta_codec_i32(c, partition_epoch) && cur_u8(c, flags);
}

/* The ELR of a version 1 record: present and non-empty (an empty one is
 * written as version 0, so this keeps encodings canonical). */
static bool meta_codec_elr(struct weir_cursor *c, bool v1, struct meta_ids *elr)
{
    if (!v1) {
        elr->n = 0;
        return true;
    }
    return meta_codec_ids(c, elr) && elr->n > 0;
}

static bool meta_codec_get_part(struct weir_cursor *c,
                                bool v1,
                                struct meta_partition_rec *p)
{
    return meta_codec_i64(c, &p->topic_id) &&
           meta_codec_i32(c, &p->partition) &&
           meta_codec_ids(c, &p->replicas) && meta_codec_ids(c, &p->isr) &&
           meta_codec_leader(c, &p->leader, &p->leader_epoch,
                             &p->partition_epoch, &p->flags) &&
           meta_codec_elr(c, v1, &p->elr);
}

static bool meta_codec_get_change(struct weir_cursor *c,
                                  bool v1,
                                  struct meta_partition_change *p)
{
    return meta_codec_i64(c, &p->topic_id) &&
           meta_codec_i32(c, &p->partition) && meta_codec_ids(c, &p->isr) &&
           meta_codec_leader(c, &p->leader, &p->leader_epoch,
                             &p->partition_epoch, &p->flags) &&
           meta_codec_elr(c, v1, &p->elr);
}

/* REGISTER_BROKER; version 1 adds a non-empty directory id. */
static bool meta_codec_get_register(struct weir_cursor *c,
                                    bool v1,
                                    struct meta_register_broker *r)
{
    if (!(meta_codec_i32(c, &r->id) && meta_codec_i64(c, &r->epoch) &&
          meta_codec_str(c, &r->host) && cur_u16be(c, &r->port) &&
          meta_codec_str(c, &r->rack))) {
        return false;
    }
    if (!v1) {
        r->directory_id.ptr = "";
        r->directory_id.len = 0;
        return true;
    }
    return meta_codec_str(c, &r->directory_id) && r->directory_id.len > 0;
}

static bool
meta_codec_get_body(struct weir_cursor *c, bool v1, struct meta_record *rec)
{
    switch (rec->type) {
    case META_RECORD_REGISTER_BROKER:
        return meta_codec_get_register(c, v1, &rec->u.reg);
    case META_RECORD_FENCE_BROKER:
    case META_RECORD_UNFENCE_BROKER:
        return meta_codec_i32(c, &rec->u.fence.id) &&
               meta_codec_i64(c, &rec->u.fence.epoch);
    case META_RECORD_CREATE_TOPIC:
        return meta_codec_i64(c, &rec->u.topic.topic_id) &&
               meta_codec_str(c, &rec->u.topic.name);
    case META_RECORD_TOPIC_CONFIG:
        return meta_codec_i64(c, &rec->u.config.topic_id) &&
               meta_codec_str(c, &rec->u.config.key) &&
               meta_codec_str(c, &rec->u.config.value);
    case META_RECORD_REMOVE_TOPIC:
        return meta_codec_i64(c, &rec->u.remove_topic_id);
    case META_RECORD_PARTITION:
        return meta_codec_get_part(c, v1, &rec->u.part);
    case META_RECORD_PARTITION_CHANGE:
        return meta_codec_get_change(c, v1, &rec->u.change);
    case META_RECORD_PRODUCER_IDS:
        return meta_codec_i64(c, &rec->u.next_producer_id);
    case META_RECORD_BROKER_TLS:
        return meta_codec_i32(c, &rec->u.tls.id) &&
               meta_codec_i64(c, &rec->u.tls.epoch) &&
               meta_codec_str(c, &rec->u.tls.host) &&
               cur_u16be(c, &rec->u.tls.port);
    case META_RECORD_USER_SCRAM:
        return meta_codec_get_user(c, &rec->u.user);
    case META_RECORD_REMOVE_USER_SCRAM:
        return meta_codec_str(c, &rec->u.user_ref.name) &&
               cur_u8(c, &rec->u.user_ref.mechanism);
    case META_RECORD_ACL:
    case META_RECORD_REMOVE_ACL:
        return meta_codec_get_acl(c, &rec->u.acl);
    case META_RECORD_TOPIC_TOMBSTONE:
        return meta_codec_i64(c, &rec->u.tomb.topic_id) &&
               meta_codec_str(c, &rec->u.tomb.name);
    case META_RECORD_REPLICAS_EMPTY:
        return meta_codec_i64(c, &rec->u.empty.topic_id) &&
               meta_codec_i32(c, &rec->u.empty.partition) &&
               meta_codec_ids(c, &rec->u.empty.ids);
    }
    return false;
}

static bool meta_codec_has_v1(uint8_t type)
{
    return type == META_RECORD_REGISTER_BROKER ||
           type == META_RECORD_PARTITION ||
           type == META_RECORD_PARTITION_CHANGE;
}

int meta_record_decode(struct weir_cursor *c,
                       struct meta_record *out,
                       struct err_detail *ed)
{
    struct weir_cursor body;
    struct weir_slice bytes;
    uint32_t body_len;
    uint8_t version;
    uint8_t type;
    const char *name;

    if (!cur_u8(c, &type) || !cur_u8(c, &version) || !cur_u32be(c, &body_len)) {
        return err_set(ed, WEIR_ECORRUPT, "truncated record header");
    }
    name = meta_record_type_name(type);
    if (strcmp(name, "UNKNOWN") == 0) {
        return err_set(ed, WEIR_ECORRUPT, "unknown record type %u", type);
    }
    if (version != META_RECORD_VERSION &&
        !(version == META_RECORD_VERSION_V1 && meta_codec_has_v1(type))) {
        return err_set(ed, WEIR_ECORRUPT, "%s record version %u unknown", name,
                       version);
    }
    if (!cur_bytes(c, body_len, &bytes)) {
        return err_set(ed, WEIR_ECORRUPT,
                       "%s record body of %u bytes, only %zu remain", name,
                       body_len, cur_remaining(c));
    }
    memset(out, 0, sizeof(*out));
    out->type = (enum meta_record_type)type;
    cur_init(&body, bytes.p, bytes.len);
    if (!meta_codec_get_body(&body, version == META_RECORD_VERSION_V1, out)) {
        return err_set(ed, WEIR_ECORRUPT,
                       "%s record version %u body truncated, count too large "
                       "or new field empty",
                       name, version);
    }
    if (cur_remaining(&body) != 0) {
        return err_set(ed, WEIR_ECORRUPT, "%zu trailing bytes in %s record",
                       cur_remaining(&body), name);
    }
    return meta_record_check(out, ed);
}
