/* SPDX-License-Identifier: Apache-2.0 */
/* The topic manifest decoder on its own (no storage): a good manifest
 * gives its topics; each thing a loose number parser would let through
 * ('+', a leading space, trailing junk, a NUL, overflow, an empty file)
 * is refused with WEIR_ECORRUPT naming the file and the byte, and leaves
 * no topics behind. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "broker/storage/logmgr_int.h"
#include "common/mem.h"

#define MPATH "/data/topics.meta"

static void mf_init(struct logmgr *m)
{
    memset(m, 0, sizeof(*m));
    plog_config_defaults(&m->defaults);
}

static void mf_fini(struct logmgr *m)
{
    while (m->n_topics > 0) {
        logmgr_rec_free(logmgr_remove_at(m, m->n_topics - 1));
    }
    mem_free(m->topics);
    m->topics = NULL;
}

static void mf_bad(const char *text, size_t len, size_t at)
{
    struct err_detail ed;
    struct logmgr m;
    char want[64];

    mf_init(&m);
    err_detail_clear(&ed);
    assert_int_equal(logmgr_manifest_parse(&m, text, len, MPATH, &ed),
                     WEIR_ECORRUPT);
    assert_int_equal(m.n_topics, 0);
    (void)snprintf(want, sizeof(want), "byte %zu:", at);
    if (strstr(ed.msg, MPATH) == NULL || strstr(ed.msg, want) == NULL) {
        print_error("'%.*s': want '%s' in '%s'\n", (int)len, text, want,
                    ed.msg);
        fail();
    }
    mf_fini(&m);
}

#define MF_BAD(lit, at) mf_bad(lit, sizeof(lit) - 1, at)
#define HEAD            "weir-topics 1\n" /* 14 bytes */

static void test_manifest_good(void **state)
{
    static const char text[] = HEAD "topic a 3 2 1 id=77\n"
                                    "config retention.ms 1000\n"
                                    "topic b 1 1 0\n"
                                    "end 2\n";
    struct err_detail ed;
    struct logmgr m;

    (void)state;
    mf_init(&m);
    assert_int_equal(
        logmgr_manifest_parse(&m, text, sizeof(text) - 1, MPATH, &ed), 0);
    assert_int_equal(m.n_topics, 2);
    assert_string_equal(m.topics[0]->name, "a");
    assert_int_equal(m.topics[0]->partitions, 3);
    assert_int_equal(m.topics[0]->replication_factor, 2);
    assert_int_equal(m.topics[0]->topic_id, 77);
    assert_int_equal(m.topics[0]->cfg.retention_ms, 1000);
    assert_string_equal(m.topics[1]->name, "b");
    assert_int_equal(m.topics[1]->topic_id, -1);
    mf_fini(&m);
    /* no topics; a last line without its newline is still read */
    mf_init(&m);
    assert_int_equal(logmgr_manifest_parse(&m, HEAD "end 0", 19, MPATH, &ed),
                     0);
    assert_int_equal(m.n_topics, 0);
    mf_fini(&m);
}

static void test_manifest_refuses_plus(void **state)
{
    (void)state;
    MF_BAD(HEAD "topic t +1 1 0\nend 1\n", 22);
    MF_BAD(HEAD "topic t 1 1 0 id=+5\nend 1\n", 28);
    MF_BAD(HEAD "topic t 1 1 0\nend +1\n", 32);
}

static void test_manifest_refuses_leading_space(void **state)
{
    (void)state;
    MF_BAD(HEAD " topic t 1 1 0\nend 1\n", 14);
    MF_BAD(HEAD "topic t  1 1 0\nend 1\n", 22); /* an empty token */
    MF_BAD(HEAD "topic t 1 1 0\nend  1\n", 28);
}

static void test_manifest_refuses_trailing_junk(void **state)
{
    (void)state;
    MF_BAD(HEAD "topic t 1x 1 0\nend 1\n", 22);
    MF_BAD(HEAD "topic t 1 1 0 \nend 1\n", 28);
    MF_BAD(HEAD "topic t 1 1 0\nend 1\nextra\n", 34);
    MF_BAD(HEAD "topic t 1 1 0\nend 1\n\n", 34);
    MF_BAD(HEAD "topic t 1 1 0\nend 1x\n", 32);
    MF_BAD(HEAD "topic t 1 1 0\r\nend 1\n", 26);
}

static void test_manifest_refuses_nul(void **state)
{
    (void)state;
    MF_BAD(HEAD "topic t 1 1 0\nend 1\n\0", 34);
    MF_BAD(HEAD "topic t 1\0 1 0\nend 1\n", 23);
    MF_BAD("\0" HEAD, 0);
}

static void test_manifest_refuses_overflow(void **state)
{
    (void)state;
    MF_BAD(HEAD "topic t 1 1 0 id=9223372036854775808\nend 1\n", 28);
    MF_BAD(HEAD "topic t 99999999999999999999 1 0\nend 1\n", 22);
    MF_BAD(HEAD "topic t 1 1 0\nend 18446744073709551617\n", 32);
    MF_BAD(HEAD "topic t 10001 1 0\nend 1\n", 22); /* past the limit */
}

static void test_manifest_refuses_empty(void **state)
{
    (void)state;
    MF_BAD("", 0);
    MF_BAD(HEAD, 14);
    MF_BAD("\n", 0);
}

static void test_manifest_refusal_drops_parsed_topics(void **state)
{
    (void)state;
    /* two good topics, then a bad line: none of them stay */
    MF_BAD(HEAD "topic a 1 1 0\ntopic b 1 1 0\ntopic c -1 1 0\nend 3\n", 50);
    MF_BAD(HEAD "topic a 1 1 0\nend 2\n", 32);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_manifest_good),
        cmocka_unit_test(test_manifest_refuses_plus),
        cmocka_unit_test(test_manifest_refuses_leading_space),
        cmocka_unit_test(test_manifest_refuses_trailing_junk),
        cmocka_unit_test(test_manifest_refuses_nul),
        cmocka_unit_test(test_manifest_refuses_overflow),
        cmocka_unit_test(test_manifest_refuses_empty),
        cmocka_unit_test(test_manifest_refusal_drops_parsed_topics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
