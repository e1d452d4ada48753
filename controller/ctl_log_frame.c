/* SPDX-License-Identifier: Apache-2.0 */
/* Metadata log frames (format in ctl_log_frame.h): a strict decoder that
 * never asserts on its input, and the two encoders. */
#include "controller/ctl_log_frame.h"

#include <string.h>

#include "common/crc32c.h"

/* the largest batch body (ctl_log.h's CTL_LOG_MAX_BATCH) */
#define CTL_LOG_FRAME_MAX_BATCH (64u * 1024 * 1024)

int ctl_log_frame_check_batch(const uint8_t *p,
                              size_t len,
                              int64_t *first,
                              uint32_t *count,
                              struct err_detail *ed)
{
    struct weir_cursor c;
    uint64_t f;
    uint32_t n;
    uint32_t i;

    cur_init(&c, p, len);
    if (!cur_u64be(&c, &f) || !cur_u32be(&c, &n)) {
        return err_set(ed, WEIR_ECORRUPT, "batch header truncated");
    }
    if (f > (uint64_t)INT64_MAX - n) {
        return err_set(ed, WEIR_ECORRUPT,
                       "batch first offset %llu out of range",
                       (unsigned long long)f);
    }
    if (n == 0 || n > len / 4) {
        return err_set(ed, WEIR_ECORRUPT, "batch of %u records in %zu bytes", n,
                       len);
    }
    for (i = 0; i < n; i++) {
        uint32_t rlen;
        if (!cur_u32be(&c, &rlen) || !cur_skip(&c, rlen)) {
            return err_set(ed, WEIR_ECORRUPT, "record %u truncated", i);
        }
    }
    if (cur_remaining(&c) != 0) {
        return err_set(ed, WEIR_ECORRUPT, "%zu bytes after the last record",
                       cur_remaining(&c));
    }
    *first = (int64_t)f;
    *count = n;
    return 0;
}

/* The data of an entry of type t: NORMAL a batch, NOOP nothing, READMIT
 * id | nonce. */
static int ctl_log_frame_check_data(struct ctl_log_frame *f,
                                    struct err_detail *ed)
{
    switch (f->type) {
    case RAFT_ENTRY_NORMAL:
        return ctl_log_frame_check_batch(f->data.p, f->data.len, &f->first,
                                         &f->count, ed);
    case RAFT_ENTRY_NOOP:
        if (f->data.len != 0) {
            return err_set(ed, WEIR_ECORRUPT, "NOOP entry with %zu bytes",
                           f->data.len);
        }
        return 0;
    case RAFT_ENTRY_READMIT:
        if (f->data.len != CTL_LOG_READMIT_BYTES) {
            return err_set(ed, WEIR_ECORRUPT, "READMIT entry of %zu bytes",
                           f->data.len);
        }
        f->id = wire_get_u32be(f->data.p);
        f->nonce = wire_get_u64be(f->data.p + 4);
        if (f->id == 0 || f->id > RAFT_MAX_ID || f->nonce == 0) {
            return err_set(ed, WEIR_ECORRUPT, "READMIT of id %u nonce %llu",
                           f->id, (unsigned long long)f->nonce);
        }
        return 0;
    }
    return err_set(ed, WEIR_ECORRUPT, "unknown entry type %d", (int)f->type);
}

static int ctl_log_frame_body(const uint8_t *body,
                              uint32_t blen,
                              struct ctl_log_frame *f,
                              struct err_detail *ed)
{
    if (body[0] < 0x80) {
        if (blen > CTL_LOG_FRAME_MAX_BATCH) {
            return err_set(ed, WEIR_ECORRUPT, "batch of %u bytes", blen);
        }
        f->version = 0;
        f->type = RAFT_ENTRY_NORMAL;
        f->data.p = body;
        f->data.len = blen;
        return ctl_log_frame_check_data(f, ed);
    }
    if (body[0] != CTL_LOG_V1) {
        return err_set(ed, WEIR_ECORRUPT, "unknown frame version byte 0x%02x",
                       body[0]);
    }
    if (blen < CTL_LOG_V1_HEAD) {
        return err_set(ed, WEIR_ECORRUPT, "entry head truncated");
    }
    f->version = 1;
    f->type = (enum raft_entry_type)body[1];
    f->index = wire_get_u64be(body + 2);
    f->term = wire_get_u64be(body + 10);
    if (f->index == 0 || f->index >= RAFT_LIMIT || f->term >= RAFT_LIMIT) {
        return err_set(ed, WEIR_ECORRUPT, "entry index %llu term %llu",
                       (unsigned long long)f->index,
                       (unsigned long long)f->term);
    }
    if (body[1] < RAFT_ENTRY_NORMAL || body[1] > RAFT_ENTRY_READMIT) {
        return err_set(ed, WEIR_ECORRUPT, "unknown entry type %u", body[1]);
    }
    f->data.p = body + CTL_LOG_V1_HEAD;
    f->data.len = blen - CTL_LOG_V1_HEAD;
    return ctl_log_frame_check_data(f, ed);
}

enum ctl_log_frame_status ctl_log_frame_decode(const uint8_t *p,
                                               size_t len,
                                               struct ctl_log_frame *f,
                                               struct err_detail *ed)
{
    uint32_t blen;

    memset(f, 0, sizeof(*f));
    if (len < CTL_LOG_FRAME_HEAD) {
        return CTL_LOG_FRAME_SHORT;
    }
    blen = wire_get_u32be(p);
    if (blen < CTL_LOG_BODY_HEAD || blen > CTL_LOG_MAX_BODY) {
        return CTL_LOG_FRAME_BAD_LENGTH;
    }
    if (blen > len - CTL_LOG_FRAME_HEAD) {
        return CTL_LOG_FRAME_SHORT;
    }
    if (crc32c(p + CTL_LOG_FRAME_HEAD, blen) != wire_get_u32be(p + 4)) {
        return CTL_LOG_FRAME_BAD_CRC;
    }
    f->frame_bytes = CTL_LOG_FRAME_HEAD + (size_t)blen;
    if (ctl_log_frame_body(p + CTL_LOG_FRAME_HEAD, blen, f, ed) != 0) {
        return CTL_LOG_FRAME_BAD_BODY;
    }
    return CTL_LOG_FRAME_OK;
}

/* Fill in the length and CRC of the frame that starts at byte at of b. */
static void ctl_log_frame_seal(struct weir_buf *b, size_t at)
{
    size_t blen = b->len - at - CTL_LOG_FRAME_HEAD;

    wire_put_u32be(b->data + at, (uint32_t)blen);
    wire_put_u32be(b->data + at + 4,
                   crc32c(b->data + at + CTL_LOG_FRAME_HEAD, blen));
}

int ctl_log_frame_put_batch(struct weir_buf *b,
                            const struct meta_record *recs,
                            uint32_t n,
                            int64_t first,
                            struct err_detail *ed)
{
    size_t start = b->len;
    uint32_t i;
    int rv;

    buf_put_u32be(b, 0);
    buf_put_u32be(b, 0);
    buf_put_u64be(b, (uint64_t)first);
    buf_put_u32be(b, n);
    for (i = 0; i < n; i++) {
        size_t at = b->len;
        buf_put_u32be(b, 0);
        rv = meta_record_encode(&recs[i], b, ed);
        if (rv != 0) {
            return rv;
        }
        if (buf_ok(b)) {
            wire_put_u32be(b->data + at, (uint32_t)(b->len - at - 4));
        }
    }
    if (!buf_ok(b) ||
        b->len - start - CTL_LOG_FRAME_HEAD > CTL_LOG_FRAME_MAX_BATCH) {
        return err_set(ed, buf_ok(b) ? WEIR_EINVALID_ARGUMENT : WEIR_ENOMEM,
                       "encoding a metadata batch of %u records", n);
    }
    ctl_log_frame_seal(b, start);
    return 0;
}

int ctl_log_frame_put_entry(struct weir_buf *b,
                            const struct raft_entry *e,
                            struct err_detail *ed)
{
    struct ctl_log_frame f;
    size_t start = b->len;
    int rv;

    memset(&f, 0, sizeof(f));
    f.type = e->type;
    f.data.p = e->data;
    f.data.len = e->len;
    if (e->index == 0 || e->index >= RAFT_LIMIT || e->term >= RAFT_LIMIT ||
        e->len > RAFT_MAX_ENTRY_BYTES || (e->len > 0 && e->data == NULL)) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "entry index %llu term %llu of %u bytes",
                       (unsigned long long)e->index,
                       (unsigned long long)e->term, e->len);
    }
    rv = ctl_log_frame_check_data(&f, ed);
    if (rv != 0) {
        err_wrap(ed, "entry %llu", (unsigned long long)e->index);
        if (ed != NULL) {
            ed->code = WEIR_EINVALID_ARGUMENT;
        }
        return WEIR_EINVALID_ARGUMENT;
    }
    buf_put_u32be(b, 0);
    buf_put_u32be(b, 0);
    buf_put_u8(b, CTL_LOG_V1);
    buf_put_u8(b, (uint8_t)e->type);
    buf_put_u64be(b, e->index);
    buf_put_u64be(b, e->term);
    if (e->len > 0) {
        buf_put(b, e->data, e->len);
    }
    if (!buf_ok(b)) {
        return err_set(ed, WEIR_ENOMEM, "encoding entry %llu",
                       (unsigned long long)e->index);
    }
    ctl_log_frame_seal(b, start);
    return 0;
}

void ctl_log_snap_head_put(struct weir_buf *b,
                           const struct ctl_log_snap_head *h)
{
    size_t start = b->len;
    uint32_t i;

    buf_put_u32be(b, CTL_LOG_SNAP_MAGIC);
    buf_put_u8(b, 0);
    buf_put_u64be(b, h->index);
    buf_put_u64be(b, h->term);
    buf_put_u8(b, RAFT_MAX_VOTERS);
    for (i = 0; i < RAFT_MAX_VOTERS; i++) {
        buf_put_u64be(b, h->admitted[i]);
    }
    if (buf_ok(b)) {
        buf_put_u32be(b, crc32c(b->data + start, b->len - start));
    }
}

int ctl_log_snap_head_decode(const uint8_t *p,
                             size_t len,
                             struct ctl_log_snap_head *h,
                             size_t *used,
                             struct err_detail *ed)
{
    struct weir_cursor c;
    uint32_t magic;
    uint32_t crc;
    uint8_t version;
    uint8_t n;
    uint8_t i;

    memset(h, 0, sizeof(*h));
    *used = 0;
    if (len < 4 || wire_get_u32be(p) != CTL_LOG_SNAP_MAGIC) {
        return 0;
    }
    cur_init(&c, p, len);
    if (!cur_u32be(&c, &magic) || !cur_u8(&c, &version) ||
        !cur_u64be(&c, &h->index) || !cur_u64be(&c, &h->term) ||
        !cur_u8(&c, &n)) {
        return err_set(ed, WEIR_ECORRUPT, "snapshot head truncated");
    }
    if (version != 0 || n > RAFT_MAX_VOTERS) {
        return err_set(ed, WEIR_ECORRUPT,
                       "snapshot head version %u with %u voters", version, n);
    }
    for (i = 0; i < n; i++) {
        if (!cur_u64be(&c, &h->admitted[i])) {
            return err_set(ed, WEIR_ECORRUPT, "snapshot head truncated");
        }
    }
    if (!cur_u32be(&c, &crc) || crc != crc32c(p, c.pos - 4)) {
        return err_set(ed, WEIR_ECORRUPT, "snapshot head fails its CRC");
    }
    if (h->index >= RAFT_LIMIT || h->term >= RAFT_LIMIT ||
        (h->index == 0 && h->term != 0)) {
        return err_set(ed, WEIR_ECORRUPT, "snapshot at index %llu term %llu",
                       (unsigned long long)h->index,
                       (unsigned long long)h->term);
    }
    *used = c.pos;
    return 0;
}
