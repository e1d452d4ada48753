/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: record batch decoding. The input is a concatenation of
 * batches, walked with batch_next both with and without a partial tail
 * allowed, and under a small size limit; every batch the walk accepts is
 * iterated record by record and header by header, and must stay valid
 * after its base offset is patched to any offset its last record still
 * fits under (and be rejected, not overflow, beyond). The same walk then runs
 * over a copy whose CRCs are recomputed, so the fuzzer reaches the record
 * parser without having to forge CRC-32C. batch_iter also runs over the raw
 * input: iterating unvalidated bytes must be safe too. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/batch.h"
#include "common/crc32c.h"
#include "common/mem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_BATCH_MAX   (1u << 20)
#define FUZZ_BATCH_SMALL 128u

static void fuzz_batch_headers(const struct batch_record *rec)
{
    struct weir_cursor c;
    struct weir_slice k;
    struct weir_slice v;
    bool vnull;
    int32_t left = rec->header_count;
    int32_t n = 0;
    int rv;

    cur_init(&c, rec->headers.p, rec->headers.len);
    while ((rv = batch_header_next(&c, &left, &k, &v, &vnull)) == 1) {
        n++;
        if (k.len > rec->headers.len || v.len > rec->headers.len) {
            abort();
        }
    }
    /* validated records hold exactly header_count well-formed headers */
    if (rv != 0 || n != rec->header_count || cur_remaining(&c) != 0) {
        abort();
    }
}

/* Iterate a validated batch: every record, every header, in order. */
static void fuzz_batch_records(struct weir_slice whole,
                               const struct batch_header *h)
{
    struct batch_iter it;
    struct batch_record rec;
    int32_t n = 0;
    int rv;

    if ((h->attributes & BATCH_ATTR_CODEC_MASK) != BATCH_CODEC_NONE) {
        return;
    }
    if (batch_iter_init(&it, whole, NULL) != 0) {
        abort();
    }
    while ((rv = batch_iter_next(&it, &rec)) == 1) {
        if (rec.offset != h->base_offset + n || rec.key.len > whole.len ||
            rec.value.len > whole.len) {
            abort();
        }
        fuzz_batch_headers(&rec);
        n++;
    }
    if (rv != 0 || n != h->record_count) {
        abort();
    }
}

/* Checks on a batch that batch_validate accepted; then the same batch
 * with its base offset patched (outside the CRC) to each edge a leader
 * could assign: it stays valid exactly while its last offset fits. */
static void fuzz_batch_valid(struct weir_slice whole,
                             const struct batch_header *h,
                             uint32_t max)
{
    const int64_t bases[] = {0, h->base_offset / 2,
                             INT64_MAX - h->last_offset_delta, INT64_MAX};
    struct batch_header h2;
    struct weir_slice s;
    uint8_t *copy;
    size_t i;
    int rv;

    if (whole.len != batch_size(h) || whole.len > max) {
        abort();
    }
    fuzz_batch_records(whole, h);
    copy = mem_malloc(whole.len);
    if (copy == NULL) {
        return;
    }
    s.p = copy;
    s.len = whole.len;
    for (i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
        memcpy(copy, whole.p, whole.len);
        batch_set_base(copy, bases[i], h->leader_epoch ^ 1);
        rv = batch_validate(s, max, &h2, NULL);
        if (rv == 0) {
            if (h2.base_offset != bases[i] || h2.crc != h->crc ||
                h2.leader_epoch != (h->leader_epoch ^ 1)) {
                abort();
            }
            fuzz_batch_records(s, &h2);
        } else if (bases[i] <= INT64_MAX - h->last_offset_delta) {
            abort();
        }
    }
    mem_free(copy);
}

static void
fuzz_batch_walk(struct weir_slice all, bool partial_ok, uint32_t max)
{
    struct batch_header h;
    struct weir_slice whole;
    struct err_detail ed;
    size_t pos = 0;
    int rv;

    for (;;) {
        size_t before = pos;
        rv = batch_next(all, &pos, max, partial_ok, &h, &whole, &ed);
        if (rv != 0) {
            if ((rv != WEIR_ECORRUPT_MESSAGE && rv != WEIR_EMESSAGE_TOO_LARGE &&
                 rv != WEIR_EUNSUPPORTED_VERSION) ||
                ed.code != rv || pos != before) {
                abort();
            }
            return;
        }
        if (whole.len == 0) {
            /* clean end or a tolerated partial tail: nothing is left */
            if (pos != all.len || (before != all.len && !partial_ok)) {
                abort();
            }
            return;
        }
        if (whole.p != all.p + before || pos != before + whole.len) {
            abort();
        }
        fuzz_batch_valid(whole, &h, max);
    }
}

/* Recompute the CRC of every batch whose length field fits the input. */
static void fuzz_batch_fix_crcs(uint8_t *p, size_t size)
{
    size_t pos = 0;

    while (size - pos >= BATCH_HEADER_BYTES) {
        uint64_t len = (uint64_t)BATCH_LOG_OVERHEAD +
                       wire_get_u32be(p + pos + BATCH_OFF_LENGTH);
        if (len < BATCH_HEADER_BYTES || len > size - pos) {
            return;
        }
        wire_put_u32be(p + pos + BATCH_OFF_CRC,
                       crc32c(p + pos + BATCH_OFF_ATTRIBUTES,
                              (size_t)len - BATCH_OFF_ATTRIBUTES));
        pos += (size_t)len;
    }
}

static void fuzz_batch_all(struct weir_slice all)
{
    struct batch_iter it;
    struct batch_record rec;
    struct batch_header h;
    int32_t n = 0;

    fuzz_batch_walk(all, false, FUZZ_BATCH_MAX);
    fuzz_batch_walk(all, true, FUZZ_BATCH_MAX);
    fuzz_batch_walk(all, true, FUZZ_BATCH_SMALL);
    if (batch_validate(all, FUZZ_BATCH_MAX, &h, NULL) == 0) {
        fuzz_batch_valid(all, &h, FUZZ_BATCH_MAX);
    }
    if (batch_iter_init(&it, all, NULL) == 0) {
        while (batch_iter_next(&it, &rec) == 1) {
            n++;
        }
        if (n > it.h.record_count) {
            abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct weir_slice all = {data, size};
    uint8_t *fixed;

    fuzz_batch_all(all);
    fixed = mem_malloc(size);
    if (fixed == NULL) {
        return 0;
    }
    memcpy(fixed, data, size);
    fuzz_batch_fix_crcs(fixed, size);
    all.p = fixed;
    fuzz_batch_all(all);
    mem_free(fixed);
    return 0;
}
