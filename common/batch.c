/* SPDX-License-Identifier: Apache-2.0 */
#include "common/batch.h"

#include <string.h>

#include "common/crc32c.h"

/* Smallest batch_length: the header after the length field, no records. */
#define BATCH_MIN_LENGTH (BATCH_HEADER_BYTES - BATCH_LOG_OVERHEAD)

int batch_header_decode(const uint8_t *p,
                        size_t n,
                        uint32_t max_batch_bytes,
                        struct batch_header *h,
                        struct err_detail *ed)
{
    if (n < BATCH_HEADER_BYTES) {
        return err_set(ed, WEIR_ECORRUPT_MESSAGE,
                       "batch header truncated: %zu of %d bytes", n,
                       BATCH_HEADER_BYTES);
    }
    h->base_offset = (int64_t)wire_get_u64be(p + BATCH_OFF_BASE_OFFSET);
    h->batch_length = (int32_t)wire_get_u32be(p + BATCH_OFF_LENGTH);
    h->leader_epoch = (int32_t)wire_get_u32be(p + BATCH_OFF_LEADER_EPOCH);
    h->magic = (int8_t)p[BATCH_OFF_MAGIC];
    h->crc = wire_get_u32be(p + BATCH_OFF_CRC);
    h->attributes = (int16_t)wire_get_u16be(p + BATCH_OFF_ATTRIBUTES);
    h->last_offset_delta =
        (int32_t)wire_get_u32be(p + BATCH_OFF_LAST_OFFSET_DELTA);
    h->base_timestamp = (int64_t)wire_get_u64be(p + BATCH_OFF_BASE_TIMESTAMP);
    h->max_timestamp = (int64_t)wire_get_u64be(p + BATCH_OFF_MAX_TIMESTAMP);
    h->producer_id = (int64_t)wire_get_u64be(p + BATCH_OFF_PRODUCER_ID);
    h->producer_epoch = (int16_t)wire_get_u16be(p + BATCH_OFF_PRODUCER_EPOCH);
    h->base_sequence = (int32_t)wire_get_u32be(p + BATCH_OFF_BASE_SEQUENCE);
    h->record_count = (int32_t)wire_get_u32be(p + BATCH_OFF_RECORD_COUNT);

    if (h->magic != BATCH_MAGIC) {
        return err_set(ed, WEIR_EUNSUPPORTED_VERSION,
                       "batch magic %d, expected %d", h->magic, BATCH_MAGIC);
    }
    if (h->batch_length < BATCH_MIN_LENGTH) {
        return err_set(ed, WEIR_ECORRUPT_MESSAGE,
                       "batch length %d below the minimum %d", h->batch_length,
                       BATCH_MIN_LENGTH);
    }
    if (batch_size(h) > max_batch_bytes) {
        return err_set(ed, WEIR_EMESSAGE_TOO_LARGE,
                       "batch of %llu bytes exceeds the limit of %u",
                       (unsigned long long)batch_size(h), max_batch_bytes);
    }
    if (h->record_count < 0 || h->last_offset_delta < 0 || h->base_offset < 0) {
        return err_set(ed, WEIR_ECORRUPT_MESSAGE,
                       "batch has a negative offset, count or offset delta");
    }
    /* every offset in the batch must be representable: record offsets are
     * base_offset + delta with 0 <= delta <= last_offset_delta */
    if (h->base_offset > INT64_MAX - h->last_offset_delta) {
        return err_set(ed, WEIR_ECORRUPT_MESSAGE,
                       "batch last offset overflows: base %lld + delta %d",
                       (long long)h->base_offset, h->last_offset_delta);
    }
    return 0;
}

static int batch_check_headers(struct weir_cursor *c, int32_t count)
{
    int32_t i;
    int32_t klen;
    int32_t vlen;

    /* each header takes at least two bytes, so a count beyond the bytes that
     * remain is rejected before any loop runs long */
    if (count < 0 || (size_t)count > cur_remaining(c) / 2) {
        return -1;
    }
    for (i = 0; i < count; i++) {
        if (!cur_varint(c, &klen) || klen < 0 || !cur_skip(c, (size_t)klen)) {
            return -1;
        }
        if (!cur_varint(c, &vlen) || vlen < -1) {
            return -1;
        }
        if (vlen > 0 && !cur_skip(c, (size_t)vlen)) {
            return -1;
        }
    }
    return 0;
}

/* Parse one record at the cursor; the record must end exactly where its
 * length says. */
static int batch_parse_record(struct weir_cursor *c,
                              const struct batch_header *h,
                              struct batch_record *rec)
{
    int32_t len;
    int32_t odelta;
    int32_t klen;
    int32_t vlen;
    int64_t tdelta;
    uint8_t attrs;
    struct weir_cursor rc;
    struct weir_slice body;
    size_t hstart;

    if (!cur_varint(c, &len) || len < 0 || !cur_bytes(c, (size_t)len, &body)) {
        return -1;
    }
    cur_init(&rc, body.p, body.len);
    /* an offset delta outside 0..last_offset_delta would put the record
     * outside its batch, and base_offset + odelta could overflow */
    if (!cur_u8(&rc, &attrs) || !cur_varlong(&rc, &tdelta) ||
        !cur_varint(&rc, &odelta) || odelta < 0 ||
        odelta > h->last_offset_delta || !cur_varint(&rc, &klen) || klen < -1) {
        return -1;
    }
    (void)attrs;
    rec->offset = h->base_offset + odelta;
    rec->timestamp = (int64_t)((uint64_t)h->base_timestamp + (uint64_t)tdelta);
    rec->key_null = klen < 0;
    rec->key.p = NULL;
    rec->key.len = 0;
    if (klen > 0 && !cur_bytes(&rc, (size_t)klen, &rec->key)) {
        return -1;
    }
    if (!cur_varint(&rc, &vlen) || vlen < -1) {
        return -1;
    }
    rec->value_null = vlen < 0;
    rec->value.p = NULL;
    rec->value.len = 0;
    if (vlen > 0 && !cur_bytes(&rc, (size_t)vlen, &rec->value)) {
        return -1;
    }
    if (!cur_varint(&rc, &rec->header_count)) {
        return -1;
    }
    hstart = rc.pos;
    if (batch_check_headers(&rc, rec->header_count) != 0) {
        return -1;
    }
    rec->headers.p = rc.p + hstart;
    rec->headers.len = rc.pos - hstart;
    if (cur_remaining(&rc) != 0) {
        return -1;
    }
    return odelta;
}

int batch_validate(struct weir_slice b,
                   uint32_t max_batch_bytes,
                   struct batch_header *h,
                   struct err_detail *ed)
{
    struct batch_iter it;
    struct batch_record rec;
    uint32_t crc;
    int32_t expect = 0;
    int rv;

    rv = batch_header_decode(b.p, b.len, max_batch_bytes, h, ed);
    if (rv != 0) {
        return rv;
    }
    if (batch_size(h) != b.len) {
        return err_set(ed, WEIR_ECORRUPT_MESSAGE,
                       "batch length field says %llu bytes, have %zu",
                       (unsigned long long)batch_size(h), b.len);
    }
    crc = crc32c(b.p + BATCH_OFF_ATTRIBUTES, b.len - BATCH_OFF_ATTRIBUTES);
    if (crc != h->crc) {
        return err_set(ed, WEIR_ECORRUPT_MESSAGE,
                       "batch at offset %lld: CRC-32C 0x%08x, stored 0x%08x",
                       (long long)h->base_offset, crc, h->crc);
    }
    if ((h->attributes & BATCH_ATTR_CODEC_MASK) != BATCH_CODEC_NONE) {
        return 0;
    }
    if (h->record_count == 0 || h->last_offset_delta != h->record_count - 1) {
        return err_set(ed, WEIR_ECORRUPT_MESSAGE,
                       "batch has %d records but last offset delta %d",
                       h->record_count, h->last_offset_delta);
    }
    rv = batch_iter_init(&it, b, ed);
    if (rv != 0) {
        return rv;
    }
    while ((rv = batch_iter_next(&it, &rec)) == 1) {
        if (rec.offset - h->base_offset != expect) {
            return err_set(ed, WEIR_ECORRUPT_MESSAGE,
                           "record %d has offset delta %lld", expect,
                           (long long)(rec.offset - h->base_offset));
        }
        expect++;
    }
    if (rv < 0 || cur_remaining(&it.cur) != 0) {
        return err_set(ed, WEIR_ECORRUPT_MESSAGE,
                       "batch at offset %lld: record %d is malformed",
                       (long long)h->base_offset, expect);
    }
    return 0;
}

int batch_next(struct weir_slice all,
               size_t *pos,
               uint32_t max_batch_bytes,
               bool allow_partial_tail,
               struct batch_header *h,
               struct weir_slice *whole,
               struct err_detail *ed)
{
    size_t left = all.len - *pos;
    struct weir_slice b;
    uint32_t len;
    int rv;

    whole->p = NULL;
    whole->len = 0;
    if (left == 0) {
        return 0;
    }
    if (left < BATCH_HEADER_BYTES) {
        goto partial;
    }
    len = wire_get_u32be(all.p + *pos + BATCH_OFF_LENGTH);
    if ((uint64_t)BATCH_LOG_OVERHEAD + len > left &&
        (uint64_t)BATCH_LOG_OVERHEAD + len <= max_batch_bytes) {
        goto partial;
    }
    b.p = all.p + *pos;
    b.len = (size_t)((uint64_t)BATCH_LOG_OVERHEAD + len > left
                         ? left
                         : BATCH_LOG_OVERHEAD + len);
    rv = batch_validate(b, max_batch_bytes, h, ed);
    if (rv != 0) {
        return rv;
    }
    *whole = b;
    *pos += b.len;
    return 0;

partial:
    if (allow_partial_tail) {
        *pos = all.len;
        return 0;
    }
    return err_set(ed, WEIR_ECORRUPT_MESSAGE,
                   "truncated batch: %zu trailing bytes", left);
}

void batch_set_base(uint8_t *batch, int64_t base_offset, int32_t leader_epoch)
{
    wire_put_u64be(batch + BATCH_OFF_BASE_OFFSET, (uint64_t)base_offset);
    wire_put_u32be(batch + BATCH_OFF_LEADER_EPOCH, (uint32_t)leader_epoch);
}

int batch_iter_init(struct batch_iter *it,
                    struct weir_slice b,
                    struct err_detail *ed)
{
    int rv = batch_header_decode(b.p, b.len, UINT32_MAX, &it->h, ed);

    if (rv != 0) {
        return rv;
    }
    if ((it->h.attributes & BATCH_ATTR_CODEC_MASK) != BATCH_CODEC_NONE) {
        return err_set(ed, WEIR_EUNSUPPORTED_COMPRESSION,
                       "compression codec %d is not supported",
                       it->h.attributes & BATCH_ATTR_CODEC_MASK);
    }
    cur_init(&it->cur, b.p + BATCH_HEADER_BYTES,
             b.len < batch_size(&it->h)
                 ? b.len - BATCH_HEADER_BYTES
                 : batch_size(&it->h) - BATCH_HEADER_BYTES);
    it->left = it->h.record_count;
    return 0;
}

int batch_iter_next(struct batch_iter *it, struct batch_record *rec)
{
    if (it->left <= 0) {
        return 0;
    }
    if (batch_parse_record(&it->cur, &it->h, rec) < 0) {
        it->left = 0;
        return -WEIR_ECORRUPT_MESSAGE;
    }
    it->left--;
    return 1;
}

int batch_header_next(struct weir_cursor *cur,
                      int32_t *left,
                      struct weir_slice *key,
                      struct weir_slice *value,
                      bool *value_null)
{
    int32_t klen;
    int32_t vlen;

    if (*left <= 0) {
        return 0;
    }
    if (!cur_varint(cur, &klen) || klen < 0 ||
        !cur_bytes(cur, (size_t)klen, key) || !cur_varint(cur, &vlen) ||
        vlen < -1) {
        return -1;
    }
    *value_null = vlen < 0;
    value->p = NULL;
    value->len = 0;
    if (vlen > 0 && !cur_bytes(cur, (size_t)vlen, value)) {
        return -1;
    }
    (*left)--;
    return 1;
}

void batch_builder_init(struct batch_builder *bb)
{
    buf_init(&bb->buf);
    bb->producer_id = -1;
    bb->producer_epoch = -1;
    bb->base_sequence = -1;
    batch_builder_reset(bb);
}

void batch_builder_fini(struct batch_builder *bb)
{
    buf_fini(&bb->buf);
}

void batch_builder_reset(struct batch_builder *bb)
{
    buf_reset(&bb->buf);
    bb->count = 0;
    bb->base_timestamp = 0;
    bb->max_timestamp = 0;
}

size_t batch_builder_size(const struct batch_builder *bb)
{
    return bb->count == 0 ? BATCH_HEADER_BYTES : bb->buf.len;
}

static void batch_put_bytes(struct weir_buf *b, const void *p, int32_t len)
{
    buf_put_varint(b, len < 0 ? -1 : len);
    if (len > 0) {
        buf_put(b, p, (size_t)len);
    }
}

int batch_builder_add(struct batch_builder *bb,
                      int64_t timestamp,
                      const void *key,
                      int32_t key_len,
                      const void *value,
                      int32_t value_len,
                      const struct batch_kv *headers,
                      uint32_t n_headers)
{
    struct weir_buf body;
    uint32_t i;
    size_t mark = bb->buf.len;

    if (bb->count == 0) {
        buf_reset(&bb->buf);
        if (buf_skip(&bb->buf, BATCH_HEADER_BYTES) == SIZE_MAX) {
            return WEIR_ENOMEM;
        }
        mark = bb->buf.len;
        bb->base_timestamp = timestamp;
        bb->max_timestamp = timestamp;
    }
    buf_init(&body);
    buf_put_u8(&body, 0);
    /* wraps like the reader's base + delta, so timestamps far apart
     * round-trip without signed overflow */
    buf_put_varlong(
        &body, (int64_t)((uint64_t)timestamp - (uint64_t)bb->base_timestamp));
    buf_put_varint(&body, bb->count);
    batch_put_bytes(&body, key, key == NULL ? -1 : key_len);
    batch_put_bytes(&body, value, value == NULL ? -1 : value_len);
    buf_put_varint(&body, (int32_t)n_headers);
    for (i = 0; i < n_headers; i++) {
        batch_put_bytes(&body, headers[i].key,
                        headers[i].key_len < 0 ? 0 : headers[i].key_len);
        batch_put_bytes(&body, headers[i].value,
                        headers[i].value == NULL ? -1 : headers[i].value_len);
    }
    buf_put_varint(&bb->buf, (int32_t)body.len);
    buf_put(&bb->buf, body.data, body.len);
    if (!buf_ok(&body) || !buf_ok(&bb->buf)) {
        buf_fini(&body);
        bb->buf.len = mark;
        bb->buf.oom = false;
        return WEIR_ENOMEM;
    }
    buf_fini(&body);
    if (timestamp > bb->max_timestamp) {
        bb->max_timestamp = timestamp;
    }
    bb->count++;
    return 0;
}

int batch_builder_finish(struct batch_builder *bb, struct weir_slice *out)
{
    uint8_t *p;

    if (bb->count == 0) {
        return WEIR_EINVALID_ARGUMENT;
    }
    if (!buf_ok(&bb->buf)) {
        return WEIR_ENOMEM;
    }
    p = bb->buf.data;
    wire_put_u64be(p + BATCH_OFF_BASE_OFFSET, 0);
    wire_put_u32be(p + BATCH_OFF_LENGTH,
                   (uint32_t)(bb->buf.len - BATCH_LOG_OVERHEAD));
    wire_put_u32be(p + BATCH_OFF_LEADER_EPOCH, (uint32_t)-1);
    p[BATCH_OFF_MAGIC] = BATCH_MAGIC;
    wire_put_u16be(p + BATCH_OFF_ATTRIBUTES, 0);
    wire_put_u32be(p + BATCH_OFF_LAST_OFFSET_DELTA, (uint32_t)(bb->count - 1));
    wire_put_u64be(p + BATCH_OFF_BASE_TIMESTAMP, (uint64_t)bb->base_timestamp);
    wire_put_u64be(p + BATCH_OFF_MAX_TIMESTAMP, (uint64_t)bb->max_timestamp);
    wire_put_u64be(p + BATCH_OFF_PRODUCER_ID, (uint64_t)bb->producer_id);
    wire_put_u16be(p + BATCH_OFF_PRODUCER_EPOCH, (uint16_t)bb->producer_epoch);
    wire_put_u32be(p + BATCH_OFF_BASE_SEQUENCE, (uint32_t)bb->base_sequence);
    wire_put_u32be(p + BATCH_OFF_RECORD_COUNT, (uint32_t)bb->count);
    wire_put_u32be(
        p + BATCH_OFF_CRC,
        crc32c(p + BATCH_OFF_ATTRIBUTES, bb->buf.len - BATCH_OFF_ATTRIBUTES));
    out->p = p;
    out->len = bb->buf.len;
    return 0;
}
