/* SPDX-License-Identifier: Apache-2.0 */
/* Record batch codec, malformed input: every broken header field and every
 * broken record shape is an error code, never a crash or an out-of-bounds
 * read. Batches are assembled here from raw record bytes, with a correct
 * CRC unless the CRC itself is under test, so each case reaches the check
 * it is aimed at. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/batch.h"
#include "common/crc32c.h"

#define BB_MAX (1u << 20)
#define BB_CAP 512

struct bb_batch {
    uint8_t b[BB_CAP];
    size_t len;
};

static void bb_fix_crc(struct bb_batch *x)
{
    wire_put_u32be(x->b + BATCH_OFF_CRC, crc32c(x->b + BATCH_OFF_ATTRIBUTES,
                                                x->len - BATCH_OFF_ATTRIBUTES));
}

/* A batch around raw record bytes with the given count and last offset
 * delta; length and CRC consistent with the bytes. */
static void bb_make(struct bb_batch *x,
                    int32_t count,
                    int32_t last_delta,
                    const uint8_t *recs,
                    size_t rlen)
{
    assert_true(BATCH_HEADER_BYTES + rlen <= BB_CAP);
    memset(x->b, 0, BATCH_HEADER_BYTES);
    x->len = BATCH_HEADER_BYTES + rlen;
    wire_put_u32be(x->b + BATCH_OFF_LENGTH,
                   (uint32_t)(x->len - BATCH_LOG_OVERHEAD));
    wire_put_u32be(x->b + BATCH_OFF_LEADER_EPOCH, 5);
    x->b[BATCH_OFF_MAGIC] = BATCH_MAGIC;
    wire_put_u32be(x->b + BATCH_OFF_LAST_OFFSET_DELTA, (uint32_t)last_delta);
    wire_put_u64be(x->b + BATCH_OFF_PRODUCER_ID, UINT64_MAX);
    wire_put_u32be(x->b + BATCH_OFF_RECORD_COUNT, (uint32_t)count);
    memcpy(x->b + BATCH_HEADER_BYTES, recs, rlen);
    bb_fix_crc(x);
}

static struct weir_slice bb_slice(const struct bb_batch *x)
{
    struct weir_slice s = {x->b, x->len};
    return s;
}

/* Validate, and also iterate (fuzz-style) to show the iterator stops
 * cleanly on the same bytes. Returns batch_validate's result. */
static int bb_check(const struct bb_batch *x)
{
    struct batch_header h;
    struct batch_iter it;
    struct batch_record rec;
    struct err_detail ed;
    int rv = batch_validate(bb_slice(x), BB_MAX, &h, &ed);
    int n = 0;

    if (rv != 0) {
        assert_int_equal(ed.code, rv);
        assert_true(strlen(ed.msg) > 0);
    }
    if (batch_iter_init(&it, bb_slice(x), NULL) == 0) {
        while (batch_iter_next(&it, &rec) == 1) {
            n++;
        }
        assert_true(n <= it.h.record_count);
    }
    return rv;
}

/* two good records: deltas 0 and 1, key "k", value "v" */
#define BB_REC0 0x10, 0x00, 0x00, 0x00, 0x02, 'k', 0x02, 'v', 0x00
#define BB_REC1 0x10, 0x00, 0x00, 0x02, 0x02, 'k', 0x02, 'v', 0x00

static void test_reference_batch_is_valid(void **state)
{
    static const uint8_t r[] = {BB_REC0, BB_REC1};
    struct bb_batch x;

    (void)state;
    bb_make(&x, 2, 1, r, sizeof(r));
    assert_int_equal(bb_check(&x), 0);
}

static void test_bad_magic_rejected(void **state)
{
    static const uint8_t r[] = {BB_REC0};
    static const uint8_t magics[] = {0, 1, 3, 0xff};
    struct bb_batch x;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(magics); i++) {
        bb_make(&x, 1, 0, r, sizeof(r));
        x.b[BATCH_OFF_MAGIC] = magics[i];
        assert_int_equal(bb_check(&x), WEIR_EUNSUPPORTED_VERSION);
    }
}

static void test_bad_crc_rejected(void **state)
{
    static const uint8_t r[] = {BB_REC0, BB_REC1};
    struct bb_batch x;
    size_t i;

    (void)state;
    /* a flipped bit anywhere in bytes 21..end breaks the CRC */
    for (i = BATCH_OFF_ATTRIBUTES; i < BATCH_HEADER_BYTES + sizeof(r); i++) {
        bb_make(&x, 2, 1, r, sizeof(r));
        x.b[i] ^= 0x10;
        assert_int_not_equal(bb_check(&x), 0);
    }
    bb_make(&x, 2, 1, r, sizeof(r));
    x.b[BATCH_OFF_CRC + 3] ^= 0x01;
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    bb_make(&x, 2, 1, r, sizeof(r));
    x.b[BATCH_OFF_ATTRIBUTES + 1] ^= 0x40; /* unused attribute bit */
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
}

static void test_bad_length_rejected(void **state)
{
    static const uint8_t r[] = {BB_REC0};
    struct batch_header h;
    struct bb_batch x;
    uint32_t good;

    (void)state;
    bb_make(&x, 1, 0, r, sizeof(r));
    good = wire_get_u32be(x.b + BATCH_OFF_LENGTH);
    /* below the 49-byte minimum */
    wire_put_u32be(x.b + BATCH_OFF_LENGTH, 48);
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    wire_put_u32be(x.b + BATCH_OFF_LENGTH, 0);
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    /* negative as i32 */
    wire_put_u32be(x.b + BATCH_OFF_LENGTH, 0x80000000u);
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    wire_put_u32be(x.b + BATCH_OFF_LENGTH, UINT32_MAX);
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    /* says one byte fewer, or one more, than the buffer holds */
    wire_put_u32be(x.b + BATCH_OFF_LENGTH, good - 1);
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    wire_put_u32be(x.b + BATCH_OFF_LENGTH, good + 1);
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    /* far beyond the buffer but within the limit */
    wire_put_u32be(x.b + BATCH_OFF_LENGTH, 100000);
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    /* beyond max_batch_bytes */
    wire_put_u32be(x.b + BATCH_OFF_LENGTH, BB_MAX);
    assert_int_equal(bb_check(&x), WEIR_EMESSAGE_TOO_LARGE);
    wire_put_u32be(x.b + BATCH_OFF_LENGTH, good);
    assert_int_equal(
        batch_validate(bb_slice(&x), (uint32_t)x.len - 1, &h, NULL),
        WEIR_EMESSAGE_TOO_LARGE);
    assert_int_equal(bb_check(&x), 0);
}

static void test_truncated_header_rejected(void **state)
{
    static const uint8_t r[] = {BB_REC0};
    struct batch_header h;
    struct batch_iter it;
    struct bb_batch x;
    struct weir_slice s;
    size_t n;

    (void)state;
    bb_make(&x, 1, 0, r, sizeof(r));
    for (n = 0; n < x.len; n++) {
        s.p = x.b;
        s.len = n;
        assert_int_equal(batch_validate(s, BB_MAX, &h, NULL),
                         WEIR_ECORRUPT_MESSAGE);
        if (n < BATCH_HEADER_BYTES) {
            assert_int_equal(batch_iter_init(&it, s, NULL),
                             WEIR_ECORRUPT_MESSAGE);
        }
    }
}

static void test_negative_header_fields_rejected(void **state)
{
    static const uint8_t r[] = {BB_REC0};
    struct bb_batch x;

    (void)state;
    bb_make(&x, 1, 0, r, sizeof(r));
    wire_put_u64be(x.b + BATCH_OFF_BASE_OFFSET, (uint64_t)-1);
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    bb_make(&x, -1, 0, r, sizeof(r));
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    bb_make(&x, 1, -1, r, sizeof(r));
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
}

static void test_last_offset_overflow_rejected(void **state)
{
    static const uint8_t r[] = {BB_REC0, BB_REC1};
    struct bb_batch x;

    (void)state;
    /* base + last_offset_delta would pass INT64_MAX */
    bb_make(&x, 2, 1, r, sizeof(r));
    batch_set_base(x.b, INT64_MAX, 0);
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    bb_make(&x, 1, INT32_MAX, r, 9);
    batch_set_base(x.b, INT64_MAX - 5, 0);
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    /* one record at INT64_MAX is still a valid position */
    bb_make(&x, 1, 0, r, 9);
    batch_set_base(x.b, INT64_MAX, 0);
    assert_int_equal(bb_check(&x), 0);
}

static void test_record_count_mismatch_rejected(void **state)
{
    static const uint8_t r[] = {BB_REC0, BB_REC1};
    struct bb_batch x;

    (void)state;
    bb_make(&x, 3, 2, r, sizeof(r)); /* claims a third record */
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    bb_make(&x, 1, 0, r, sizeof(r)); /* one record and leftover bytes */
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    bb_make(&x, 0, 0, r, 0); /* no records at all */
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    bb_make(&x, INT32_MAX, INT32_MAX - 1, r, sizeof(r));
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
}

static void test_last_offset_delta_mismatch_rejected(void **state)
{
    static const uint8_t r[] = {BB_REC0, BB_REC1};
    static const uint8_t dup[] = {BB_REC0, BB_REC0};
    struct bb_batch x;

    (void)state;
    bb_make(&x, 2, 0, r, sizeof(r));
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    bb_make(&x, 2, 5, r, sizeof(r));
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    /* header agrees, records repeat delta 0 */
    bb_make(&x, 2, 1, dup, sizeof(dup));
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
}

static void test_record_length_overruns_rejected(void **state)
{
    /* record length 100, 8 bytes follow */
    static const uint8_t over[] = {0xc8, 0x01, 0x00, 0x00, 0x00,
                                   0x02, 'k',  0x02, 'v',  0x00};
    /* record length 5: the record ends before its value length */
    static const uint8_t short_len[] = {0x0a, 0x00, 0x00, 0x00, 0x02,
                                        'k',  0x02, 'v',  0x00};
    /* record length 9 with 8 bytes of fields and a stray byte */
    static const uint8_t slack[] = {0x12, 0x00, 0x00, 0x00, 0x02,
                                    'k',  0x02, 'v',  0x00, 0x00};
    /* negative record length */
    static const uint8_t neg[] = {0x01, 0x00, 0x00, 0x00, 0x02,
                                  'k',  0x02, 'v',  0x00};
    /* value length 50 inside an 8-byte record */
    static const uint8_t val[] = {0x10, 0x00, 0x00, 0x00, 0x02,
                                  'k',  0x64, 'v',  0x00};
    /* zero-length record (no attributes byte) */
    static const uint8_t empty[] = {0x00};
    struct bb_batch x;

    (void)state;
    bb_make(&x, 1, 0, over, sizeof(over));
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    bb_make(&x, 1, 0, short_len, sizeof(short_len));
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    bb_make(&x, 1, 0, slack, sizeof(slack));
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    bb_make(&x, 1, 0, neg, sizeof(neg));
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    bb_make(&x, 1, 0, val, sizeof(val));
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    bb_make(&x, 1, 0, empty, sizeof(empty));
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
}

static void test_header_count_beyond_bytes_rejected(void **state)
{
    /* header count 1000 (zigzag 2000 = 0xd0 0x0f) with 4 bytes left */
    static const uint8_t many[] = {0x1a, 0x00, 0x00, 0x00, 0x02, 'k',  0x02,
                                   'v',  0xd0, 0x0f, 0x02, 'a',  0x02, 'b'};
    /* header count INT32_MAX */
    static const uint8_t huge[] = {0x18, 0x00, 0x00, 0x00, 0x02, 'k', 0x02,
                                   'v',  0xfe, 0xff, 0xff, 0xff, 0x0f};
    /* header count -2 */
    static const uint8_t negc[] = {0x10, 0x00, 0x00, 0x00, 0x02,
                                   'k',  0x02, 'v',  0x03};
    /* one header with a null key (keys may not be null) */
    static const uint8_t nullk[] = {0x16, 0x00, 0x00, 0x00, 0x02, 'k',
                                    0x02, 'v',  0x02, 0x01, 0x02, 'b'};
    /* one header whose value length is -2 */
    static const uint8_t negv[] = {0x16, 0x00, 0x00, 0x00, 0x02, 'k',
                                   0x02, 'v',  0x02, 0x02, 'a',  0x03};
    /* one header whose value runs past the record */
    static const uint8_t longv[] = {0x18, 0x00, 0x00, 0x00, 0x02, 'k', 0x02,
                                    'v',  0x02, 0x02, 'a',  0x10, 'b'};
    struct bb_batch x;

    (void)state;
    bb_make(&x, 1, 0, many, sizeof(many));
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    bb_make(&x, 1, 0, huge, sizeof(huge));
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    bb_make(&x, 1, 0, negc, sizeof(negc));
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    bb_make(&x, 1, 0, nullk, sizeof(nullk));
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    bb_make(&x, 1, 0, negv, sizeof(negv));
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    bb_make(&x, 1, 0, longv, sizeof(longv));
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
}

static void test_negative_key_or_value_length_rejected(void **state)
{
    /* key length -2 (zigzag 3) */
    static const uint8_t k2[] = {0x10, 0x00, 0x00, 0x00, 0x03,
                                 'k',  0x02, 'v',  0x00};
    /* key length INT32_MIN */
    static const uint8_t kmin[] = {0x18, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff,
                                   0xff, 0x0f, 'k',  0x02, 'v',  0x00};
    /* value length -7 */
    static const uint8_t v7[] = {0x10, 0x00, 0x00, 0x00, 0x02,
                                 'k',  0x0d, 'v',  0x00};
    struct bb_batch x;

    (void)state;
    bb_make(&x, 1, 0, k2, sizeof(k2));
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    bb_make(&x, 1, 0, kmin, sizeof(kmin));
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    bb_make(&x, 1, 0, v7, sizeof(v7));
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
}

static void test_over_long_varints_in_record_rejected(void **state)
{
    /* offset delta 0 written in 6 bytes */
    static const uint8_t odelta[] = {0x1a, 0x00, 0x00, 0x80, 0x80, 0x80, 0x80,
                                     0x80, 0x00, 0x02, 'k',  0x02, 'v',  0x00};
    /* timestamp delta 0 written in 11 bytes */
    static const uint8_t tdelta[] = {0x24, 0x00, 0x80, 0x80, 0x80, 0x80, 0x80,
                                     0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x00,
                                     0x02, 'k',  0x02, 'v',  0x00};
    /* record length written in 6 bytes */
    static const uint8_t rlen[] = {0x90, 0x80, 0x80, 0x80, 0x80, 0x00, 0x00,
                                   0x00, 0x00, 0x02, 'k',  0x02, 'v',  0x00};
    /* key length with a 5th byte beyond 32 bits */
    static const uint8_t klen[] = {0x18, 0x00, 0x00, 0x00, 0x82, 0x80, 0x80,
                                   0x80, 0x10, 'k',  0x02, 'v',  0x00};
    /* truncated varint: the record ends inside the header count */
    static const uint8_t cut[] = {0x10, 0x00, 0x00, 0x00, 0x02,
                                  'k',  0x02, 'v',  0x80};
    struct bb_batch x;

    (void)state;
    bb_make(&x, 1, 0, odelta, sizeof(odelta));
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    bb_make(&x, 1, 0, tdelta, sizeof(tdelta));
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    bb_make(&x, 1, 0, rlen, sizeof(rlen));
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    bb_make(&x, 1, 0, klen, sizeof(klen));
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    bb_make(&x, 1, 0, cut, sizeof(cut));
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
}

static void test_trailing_bytes_after_records_rejected(void **state)
{
    static const uint8_t r[] = {BB_REC0, BB_REC1, 0x00};
    static const uint8_t r3[] = {BB_REC0, BB_REC1, 0xde, 0xad, 0xbe, 0xef};
    struct bb_batch x;

    (void)state;
    bb_make(&x, 2, 1, r, sizeof(r));
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    bb_make(&x, 2, 1, r3, sizeof(r3));
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
}

static void test_out_of_range_offset_delta_rejected(void **state)
{
    /* offset deltas 0 and INT32_MAX, -1 and 1 */
    static const uint8_t big[] = {BB_REC0, 0x18, 0x00, 0x00, 0xfe, 0xff, 0xff,
                                  0xff,    0x0f, 0x02, 'k',  0x02, 'v',  0x00};
    static const uint8_t neg[] = {0x10, 0x00, 0x00, 0x01, 0x02,
                                  'k',  0x02, 'v',  0x00, BB_REC1};
    struct bb_batch x;

    (void)state;
    bb_make(&x, 2, 1, big, sizeof(big));
    batch_set_base(x.b, INT64_MAX - 1, 0);
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
    bb_make(&x, 2, 1, neg, sizeof(neg));
    assert_int_equal(bb_check(&x), WEIR_ECORRUPT_MESSAGE);
}

static void test_compressed_batch_checked_to_crc_only(void **state)
{
    static const uint8_t blob[] = {0x12, 0x34, 0x56}; /* opaque zstd bytes */
    struct batch_header h;
    struct batch_iter it;
    struct bb_batch x;

    (void)state;
    bb_make(&x, 10, 9, blob, sizeof(blob));
    wire_put_u16be(x.b + BATCH_OFF_ATTRIBUTES, BATCH_CODEC_ZSTD);
    bb_fix_crc(&x);
    assert_int_equal(batch_validate(bb_slice(&x), BB_MAX, &h, NULL), 0);
    assert_int_equal(batch_iter_init(&it, bb_slice(&x), NULL),
                     WEIR_EUNSUPPORTED_COMPRESSION);
    x.b[BATCH_HEADER_BYTES] ^= 1;
    assert_int_equal(batch_validate(bb_slice(&x), BB_MAX, &h, NULL),
                     WEIR_ECORRUPT_MESSAGE);
}

static void test_header_next_rejects_malformed(void **state)
{
    static const uint8_t bad[] = {0x02, 'a', 0x05};
    struct weir_cursor c;
    struct weir_slice k;
    struct weir_slice v;
    bool vnull;
    int32_t left = 1;

    (void)state;
    cur_init(&c, bad, sizeof(bad));
    assert_true(batch_header_next(&c, &left, &k, &v, &vnull) < 0);
    left = 0;
    cur_init(&c, bad, sizeof(bad));
    assert_int_equal(batch_header_next(&c, &left, &k, &v, &vnull), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_batch_is_valid),
        cmocka_unit_test(test_bad_magic_rejected),
        cmocka_unit_test(test_bad_crc_rejected),
        cmocka_unit_test(test_bad_length_rejected),
        cmocka_unit_test(test_truncated_header_rejected),
        cmocka_unit_test(test_negative_header_fields_rejected),
        cmocka_unit_test(test_last_offset_overflow_rejected),
        cmocka_unit_test(test_record_count_mismatch_rejected),
        cmocka_unit_test(test_last_offset_delta_mismatch_rejected),
        cmocka_unit_test(test_record_length_overruns_rejected),
        cmocka_unit_test(test_header_count_beyond_bytes_rejected),
        cmocka_unit_test(test_negative_key_or_value_length_rejected),
        cmocka_unit_test(test_over_long_varints_in_record_rejected),
        cmocka_unit_test(test_trailing_bytes_after_records_rejected),
        cmocka_unit_test(test_out_of_range_offset_delta_rejected),
        cmocka_unit_test(test_compressed_batch_checked_to_crc_only),
        cmocka_unit_test(test_header_next_rejects_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
