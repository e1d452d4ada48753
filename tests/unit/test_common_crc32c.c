/* SPDX-License-Identifier: Apache-2.0 */
/* CRC-32C (Castagnoli) known answers and the extend property. A bitwise
 * reference implementation cross-checks ISA-L on odd lengths and
 * alignments, where the SIMD paths switch. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/crc32c.h"

static uint32_t crc32c_reference(const uint8_t *p, size_t n)
{
    uint32_t crc = 0xffffffffu;
    size_t i;
    int k;

    for (i = 0; i < n; i++) {
        crc ^= p[i];
        for (k = 0; k < 8; k++) {
            crc = (crc >> 1) ^ ((crc & 1u) != 0 ? 0x82f63b78u : 0u);
        }
    }
    return ~crc;
}

static void test_crc32c_check_value(void **state)
{
    (void)state;
    /* the "check" value of CRC-32C/ISCSI in the CRC catalogue */
    assert_int_equal(crc32c("123456789", 9), 0xe3069283u);
    assert_int_equal(crc32c("", 0), 0);
    assert_int_equal(crc32c_extend(0, "", 0), 0);
}

static void test_crc32c_rfc3720_vectors(void **state)
{
    uint8_t b[32];
    size_t i;

    (void)state;
    /* RFC 3720 appendix B.4 */
    memset(b, 0, sizeof(b));
    assert_int_equal(crc32c(b, sizeof(b)), 0x8a9136aau);
    memset(b, 0xff, sizeof(b));
    assert_int_equal(crc32c(b, sizeof(b)), 0x62a8ab43u);
    for (i = 0; i < sizeof(b); i++) {
        b[i] = (uint8_t)i;
    }
    assert_int_equal(crc32c(b, sizeof(b)), 0x46dd794eu);
    for (i = 0; i < sizeof(b); i++) {
        b[i] = (uint8_t)(31 - i);
    }
    assert_int_equal(crc32c(b, sizeof(b)), 0x113fdb5cu);
}

static void test_crc32c_extend_equals_one_shot(void **state)
{
    uint8_t b[4096];
    size_t i;
    size_t cut;

    (void)state;
    for (i = 0; i < sizeof(b); i++) {
        b[i] = (uint8_t)(i * 131u + 7u);
    }
    for (cut = 0; cut <= sizeof(b); cut += 97) {
        uint32_t one = crc32c(b, sizeof(b));
        uint32_t two = crc32c_extend(crc32c(b, cut), b + cut, sizeof(b) - cut);
        assert_int_equal(one, two);
    }
    /* three pieces, one of them empty */
    assert_int_equal(
        crc32c_extend(crc32c_extend(crc32c(b, 10), b + 10, 0), b + 10, 90),
        crc32c(b, 100));
}

static void test_crc32c_matches_reference_on_odd_shapes(void **state)
{
    uint8_t b[1100];
    size_t off;
    size_t len;

    (void)state;
    for (off = 0; off < sizeof(b); off++) {
        b[off] = (uint8_t)(off ^ (off >> 3));
    }
    for (off = 0; off < 9; off++) {
        for (len = 0; len + off <= sizeof(b); len += 37) {
            assert_int_equal(crc32c(b + off, len),
                             crc32c_reference(b + off, len));
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc32c_check_value),
        cmocka_unit_test(test_crc32c_rfc3720_vectors),
        cmocka_unit_test(test_crc32c_extend_equals_one_shot),
        cmocka_unit_test(test_crc32c_matches_reference_on_odd_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
