/* SPDX-License-Identifier: Apache-2.0 */
/* The checkpoint files of a partition log as pure codecs: good files
 * decode, and each thing strtoll used to let through ('+', a leading
 * space, bytes after the number, a NUL, overflow, an empty file) is
 * refused with WEIR_ECORRUPT naming the file and the byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "broker/storage/plog_ckpt.h"

#define CKPT_PATH "/d/t-0/recovery-point-offset-checkpoint"

static void offset_bad(const char *text, size_t len, size_t at)
{
    struct err_detail ed;
    char want[64];
    int64_t v = 55;

    err_detail_clear(&ed);
    assert_int_equal(plog_ckpt_parse_offset(text, len, CKPT_PATH, &v, &ed),
                     WEIR_ECORRUPT);
    assert_int_equal(v, 55);
    assert_int_equal(ed.code, WEIR_ECORRUPT);
    (void)snprintf(want, sizeof(want), "byte %zu:", at);
    if (strstr(ed.msg, CKPT_PATH) == NULL || strstr(ed.msg, want) == NULL) {
        print_error("'%.*s': want '%s' in '%s'\n", (int)len, text, want,
                    ed.msg);
        fail();
    }
}

#define OFFSET_BAD(lit, at) offset_bad(lit, sizeof(lit) - 1, at)

static void test_offset_good(void **state)
{
    struct err_detail ed;
    char text[PLOG_CKPT_OFFSET_MAX_LEN];
    size_t len = 0;
    int64_t v = -1;

    (void)state;
    assert_int_equal(plog_ckpt_parse_offset("0\n0\n", 4, CKPT_PATH, &v, &ed),
                     0);
    assert_int_equal(v, 0);
    assert_int_equal(
        plog_ckpt_parse_offset("0\n12345\n", 8, CKPT_PATH, &v, &ed), 0);
    assert_int_equal(v, 12345);
    assert_int_equal(plog_ckpt_parse_offset("0\n9223372036854775807\n", 22,
                                            CKPT_PATH, &v, &ed),
                     0);
    assert_true(v == INT64_MAX);
    /* what the writer writes reads back */
    assert_int_equal(
        plog_ckpt_format_offset(987654321, text, sizeof(text), &len), 0);
    assert_int_equal(len, 12);
    assert_memory_equal(text, "0\n987654321\n", len);
    assert_int_equal(plog_ckpt_parse_offset(text, len, CKPT_PATH, &v, &ed), 0);
    assert_int_equal(v, 987654321);
    assert_int_equal(plog_ckpt_format_offset(-1, text, sizeof(text), &len),
                     WEIR_EINVALID_ARGUMENT);
    assert_int_equal(plog_ckpt_format_offset(1, text, 3, &len),
                     WEIR_EINVALID_ARGUMENT);
}

static void test_offset_refuses_plus(void **state)
{
    (void)state;
    OFFSET_BAD("0\n+5\n", 2);
    OFFSET_BAD("+0\n5\n", 0);
}

static void test_offset_refuses_leading_space(void **state)
{
    (void)state;
    OFFSET_BAD("0\n 5\n", 2);
    OFFSET_BAD(" 0\n5\n", 0);
    OFFSET_BAD("0\n\t5\n", 2);
}

static void test_offset_refuses_trailing_junk(void **state)
{
    (void)state;
    OFFSET_BAD("0\n5\nx", 4);
    OFFSET_BAD("0\n5\n\n", 4);
    OFFSET_BAD("0\n5 \n", 3);
    OFFSET_BAD("0\n5x\n", 3);
    OFFSET_BAD("0\n5", 3); /* no newline */
    OFFSET_BAD("0\n", 2);  /* no offset */
    OFFSET_BAD("1\n5\n", 0);
    OFFSET_BAD("0\n-5\n", 2);
    OFFSET_BAD("0\r\n5\r\n", 1);
}

static void test_offset_refuses_nul(void **state)
{
    (void)state;
    OFFSET_BAD("0\n5\n\0", 4);
    OFFSET_BAD("0\n5\0\n", 3);
    OFFSET_BAD("0\n\0005\n", 2);
}

static void test_offset_refuses_overflow(void **state)
{
    (void)state;
    OFFSET_BAD("0\n9223372036854775808\n", 20);
    OFFSET_BAD("0\n99999999999999999999999\n", 20);
}

static void test_offset_refuses_empty(void **state)
{
    (void)state;
    OFFSET_BAD("", 0);
    OFFSET_BAD("\n", 0);
}

static void cleaner_bad(const char *text, size_t len, size_t at)
{
    struct plog_ckpt_cleaner c;
    struct err_detail ed;
    char want[64];

    err_detail_clear(&ed);
    assert_int_equal(plog_ckpt_parse_cleaner(text, len, "/d/cleaner", &c, &ed),
                     WEIR_ECORRUPT);
    (void)snprintf(want, sizeof(want), "byte %zu:", at);
    if (strstr(ed.msg, "/d/cleaner") == NULL || strstr(ed.msg, want) == NULL) {
        print_error("'%.*s': want '%s' in '%s'\n", (int)len, text, want,
                    ed.msg);
        fail();
    }
}

#define CLEANER_BAD(lit, at) cleaner_bad(lit, sizeof(lit) - 1, at)

static void test_cleaner_good(void **state)
{
    static const char text[] = "0\n40\n2\n10 1000\n40 -5\n";
    struct plog_ckpt_cleaner c;
    struct plog_ckpt_cleaner back;
    struct err_detail ed;
    char out[PLOG_CKPT_CLEANER_MAX];
    size_t len = 0;
    uint32_t i;

    (void)state;
    assert_int_equal(
        plog_ckpt_parse_cleaner(text, sizeof(text) - 1, "/d/c", &c, &ed), 0);
    assert_int_equal(c.clean_offset, 40);
    assert_int_equal(c.n_marks, 2);
    assert_int_equal(c.marks[0].offset, 10);
    assert_int_equal(c.marks[0].wall_ms, 1000);
    assert_int_equal(c.marks[1].offset, 40);
    assert_int_equal(c.marks[1].wall_ms, -5);
    assert_int_equal(plog_ckpt_format_cleaner(&c, out, sizeof(out), &len), 0);
    assert_int_equal(len, sizeof(text) - 1);
    assert_memory_equal(out, text, len);
    assert_int_equal(plog_ckpt_parse_cleaner("0\n0\n0\n", 6, "/d/c", &c, &ed),
                     0);
    assert_int_equal(c.n_marks, 0);
    /* the most marks there can be, round trip */
    c.clean_offset = 1000;
    c.n_marks = PLOG_CLEAN_MARKS_MAX;
    for (i = 0; i < PLOG_CLEAN_MARKS_MAX; i++) {
        c.marks[i].offset = INT64_MAX - PLOG_CLEAN_MARKS_MAX + i;
        c.marks[i].wall_ms = INT64_MIN + i;
    }
    assert_int_equal(plog_ckpt_format_cleaner(&c, out, sizeof(out), &len), 0);
    assert_int_equal(plog_ckpt_parse_cleaner(out, len, "/d/c", &back, &ed), 0);
    assert_true(back.clean_offset == c.clean_offset);
    assert_int_equal(back.n_marks, c.n_marks);
    assert_memory_equal(back.marks, c.marks, sizeof(c.marks));
    /* the writer refuses what the reader would refuse */
    c.marks[3].offset = c.marks[2].offset;
    assert_int_equal(plog_ckpt_format_cleaner(&c, out, sizeof(out), &len),
                     WEIR_EINVALID_ARGUMENT);
}

static void test_cleaner_refuses_each_defect(void **state)
{
    (void)state;
    CLEANER_BAD("0\n+40\n0\n", 2);                  /* '+' */
    CLEANER_BAD("0\n40\n1\n+10 1\n", 7);            /* '+' in a mark */
    CLEANER_BAD("0\n40\n1\n10 +1\n", 10);           /* '+' in a wall time */
    CLEANER_BAD("0\n 40\n0\n", 2);                  /* leading space */
    CLEANER_BAD("0\n40\n1\n10  1\n", 10);           /* two spaces */
    CLEANER_BAD("0\n40\n0\nx", 7);                  /* trailing junk */
    CLEANER_BAD("0\n40\n0\n10 1\n", 7);             /* a mark past the count */
    CLEANER_BAD("0\n40\n2\n10 1\n", 12);            /* a mark missing */
    CLEANER_BAD("0\n40\n0\n\0", 7);                 /* NUL after the end */
    CLEANER_BAD("0\n4\0000\n0\n", 3);               /* NUL inside */
    CLEANER_BAD("0\n40\n1\n10 1\0\n", 11);          /* NUL in a mark */
    CLEANER_BAD("0\n9223372036854775808\n0\n", 20); /* overflow */
    CLEANER_BAD("0\n4\n1\n1 -9223372036854775809\n", 27); /* overflow */
    CLEANER_BAD("", 0);                                   /* empty */
    CLEANER_BAD("0\n-1\n0\n", 2);                         /* negative offset */
    CLEANER_BAD("0\n40\n33\n", 5);                        /* too many marks */
    CLEANER_BAD("0\n40\n2\n10 1\n10 2\n", 12);            /* not ascending */
    CLEANER_BAD("0\n40\n1\n-10 1\n", 7);                  /* negative mark */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_offset_good),
        cmocka_unit_test(test_offset_refuses_plus),
        cmocka_unit_test(test_offset_refuses_leading_space),
        cmocka_unit_test(test_offset_refuses_trailing_junk),
        cmocka_unit_test(test_offset_refuses_nul),
        cmocka_unit_test(test_offset_refuses_overflow),
        cmocka_unit_test(test_offset_refuses_empty),
        cmocka_unit_test(test_cleaner_good),
        cmocka_unit_test(test_cleaner_refuses_each_defect),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
