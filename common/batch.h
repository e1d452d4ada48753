/* SPDX-License-Identifier: Apache-2.0 */
/* Record batch codec, Kafka RecordBatch v2 (magic 2) byte layout:
 *
 *   0 base_offset i64      8 batch_length i32 (bytes after this field)
 *  12 leader_epoch i32    16 magic i8 = 2
 *  17 crc u32 (CRC-32C over bytes 21..end)
 *  21 attributes i16 (bits 0-2 codec, 3 timestamp type, 4 txn, 5 control)
 *  23 last_offset_delta i32  27 base_timestamp i64  35 max_timestamp i64
 *  43 producer_id i64  51 producer_epoch i16  53 base_sequence i32
 *  57 record_count i32  61 records...
 *
 * record := length varint | attributes i8 | timestamp_delta varlong |
 *           offset_delta varint | key_len varint | key | value_len varint |
 *           value | header_count varint | headers (key_len, key, value_len,
 *           value)...  (lengths -1 = null)
 *
 * Base offset and leader epoch lie outside the CRC, so a leader assigns
 * offsets by patching them in place (batch_set_base) without re-encoding. */
#ifndef COMMON_BATCH_H
#define COMMON_BATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"

#define BATCH_HEADER_BYTES          61
#define BATCH_LOG_OVERHEAD          12 /* base_offset + batch_length */
#define BATCH_MAGIC                 2
#define BATCH_OFF_BASE_OFFSET       0
#define BATCH_OFF_LENGTH            8
#define BATCH_OFF_LEADER_EPOCH      12
#define BATCH_OFF_MAGIC             16
#define BATCH_OFF_CRC               17
#define BATCH_OFF_ATTRIBUTES        21
#define BATCH_OFF_LAST_OFFSET_DELTA 23
#define BATCH_OFF_BASE_TIMESTAMP    27
#define BATCH_OFF_MAX_TIMESTAMP     35
#define BATCH_OFF_PRODUCER_ID       43
#define BATCH_OFF_PRODUCER_EPOCH    51
#define BATCH_OFF_BASE_SEQUENCE     53
#define BATCH_OFF_RECORD_COUNT      57

#define BATCH_ATTR_CODEC_MASK      0x07
#define BATCH_CODEC_NONE           0
#define BATCH_CODEC_GZIP           1
#define BATCH_CODEC_SNAPPY         2
#define BATCH_CODEC_LZ4            3
#define BATCH_CODEC_ZSTD           4
#define BATCH_ATTR_LOG_APPEND_TIME 0x08
#define BATCH_ATTR_TRANSACTIONAL   0x10
#define BATCH_ATTR_CONTROL         0x20

/* Decoded fixed header. */
struct batch_header {
    int64_t base_offset;
    int32_t batch_length; /* bytes after the length field */
    int32_t leader_epoch;
    int8_t magic;
    uint32_t crc;
    int16_t attributes;
    int32_t last_offset_delta;
    int64_t base_timestamp;
    int64_t max_timestamp;
    int64_t producer_id;
    int16_t producer_epoch;
    int32_t base_sequence;
    int32_t record_count;
};

/* Total bytes of the batch on disk / on the wire. */
static inline uint64_t batch_size(const struct batch_header *h)
{
    return (uint64_t)BATCH_LOG_OVERHEAD + (uint32_t)h->batch_length;
}
static inline int64_t batch_last_offset(const struct batch_header *h)
{
    return h->base_offset + h->last_offset_delta;
}

/* Decode the header at p (n bytes available, n >= BATCH_HEADER_BYTES) and
 * check its shape only: magic, length (>= 49, fits max_batch_bytes), record
 * count and last offset delta not negative. Does not read the records or
 * check the CRC. Errors: WEIR_ECORRUPT_MESSAGE, WEIR_EMESSAGE_TOO_LARGE,
 * WEIR_EUNSUPPORTED_VERSION (magic other than 2). */
WEIR_MUST_CHECK int batch_header_decode(const uint8_t *p,
                                        size_t n,
                                        uint32_t max_batch_bytes,
                                        struct batch_header *h,
                                        struct err_detail *ed);

/* Full validation of one batch held whole in `b` (b.len == batch_size):
 * header shape, CRC-32C, and, for uncompressed batches, every record:
 * bounds, varints, offset deltas 0..count-1, last_offset_delta ==
 * count - 1, header counts bounded by the bytes that remain.
 * Compressed batches are checked to the CRC only.
 * Errors: as batch_header_decode, plus WEIR_ECORRUPT_MESSAGE. */
WEIR_MUST_CHECK int batch_validate(struct weir_slice b,
                                   uint32_t max_batch_bytes,
                                   struct batch_header *h,
                                   struct err_detail *ed);

/* Walk a concatenation of batches: on success *h describes the next batch
 * and *whole its bytes, and *pos advances past it. Returns 0 with
 * whole->len == 0 at a clean end, WEIR_ECORRUPT_MESSAGE on a bad batch, and
 * WEIR_ECORRUPT_MESSAGE too for a truncated tail unless allow_partial_tail,
 * in which case a trailing partial batch ends the walk like a clean end
 * (a fetch may cut the last batch). Validates each batch fully. */
WEIR_MUST_CHECK int batch_next(struct weir_slice all,
                               size_t *pos,
                               uint32_t max_batch_bytes,
                               bool allow_partial_tail,
                               struct batch_header *h,
                               struct weir_slice *whole,
                               struct err_detail *ed);

/* Patch base offset and leader epoch in place (outside the CRC). */
void batch_set_base(uint8_t *batch, int64_t base_offset, int32_t leader_epoch);

/* One record, pointing into the batch's memory. */
struct batch_record {
    int64_t offset;    /* base_offset + offset_delta */
    int64_t timestamp; /* base_timestamp + timestamp_delta */
    bool key_null;
    struct weir_slice key;
    bool value_null;
    struct weir_slice value;
    int32_t header_count;
    struct weir_slice headers; /* raw encoded headers */
};

/* Iterator over the records of one validated, uncompressed batch. */
struct batch_iter {
    struct batch_header h;
    struct weir_cursor cur;
    int32_t left;
};

/* Errors: WEIR_EUNSUPPORTED_COMPRESSION for a compressed batch. */
WEIR_MUST_CHECK int batch_iter_init(struct batch_iter *it,
                                    struct weir_slice b,
                                    struct err_detail *ed);
/* Returns 1 with *rec filled, 0 at the end, or WEIR_ECORRUPT_MESSAGE
 * (as a negative value: -WEIR_ECORRUPT_MESSAGE) on a bad record. */
int batch_iter_next(struct batch_iter *it, struct batch_record *rec);

/* Walk raw headers of a record. Returns 1 with a header, 0 at the end,
 * negative on malformed input. `cur` starts over batch_record.headers. */
int batch_header_next(struct weir_cursor *cur,
                      int32_t *left,
                      struct weir_slice *key,
                      struct weir_slice *value,
                      bool *value_null);

/* Builds one uncompressed batch. Embed; init; add; finish; fini. */
struct batch_builder {
    struct weir_buf buf;
    int32_t count;
    int64_t base_timestamp;
    int64_t max_timestamp;
    int64_t producer_id;    /* -1 when not idempotent */
    int16_t producer_epoch; /* -1 when not idempotent */
    int32_t base_sequence;  /* -1 when not idempotent */
};

struct batch_kv {
    const void *key;
    int32_t key_len; /* -1 = null */
    const void *value;
    int32_t value_len; /* -1 = null */
};

void batch_builder_init(struct batch_builder *bb);
void batch_builder_fini(struct batch_builder *bb);
/* Drop records, keep memory. */
void batch_builder_reset(struct batch_builder *bb);
/* Append one record. headers may be NULL when n_headers is 0.
 * Errors: WEIR_ENOMEM. */
WEIR_MUST_CHECK int batch_builder_add(struct batch_builder *bb,
                                      int64_t timestamp,
                                      const void *key,
                                      int32_t key_len,
                                      const void *value,
                                      int32_t value_len,
                                      const struct batch_kv *headers,
                                      uint32_t n_headers);
/* Bytes the batch would take if finished now. */
size_t batch_builder_size(const struct batch_builder *bb);
/* Write the header and CRC; *out points into the builder (valid until the
 * next reset/fini). Base offset 0, leader epoch -1. Errors: WEIR_ENOMEM,
 * WEIR_EINVALID_ARGUMENT for an empty batch. */
WEIR_MUST_CHECK int batch_builder_finish(struct batch_builder *bb,
                                         struct weir_slice *out);

#endif /* COMMON_BATCH_H */
