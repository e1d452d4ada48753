/* SPDX-License-Identifier: Apache-2.0 */
/* meta.properties: ids, the strict parser, the writer (a round trip
 * through a real temporary directory) and the datadir small-file helpers
 * it stands on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/datadir.h"
#include "common/mem.h"
#include "common/metaprops.h"

static int parse(const char *text, struct metaprops *out, struct err_detail *ed)
{
    return metaprops_parse(text, strlen(text), out, ed);
}

static void test_parses_a_broker_file(void **state)
{
    struct metaprops p;
    struct err_detail ed;

    (void)state;
    assert_int_equal(parse("# comment\nversion=1\r\ncluster.id=Ab_9-x\n"
                           "node.id=3\ndirectory.id=dir1\nfuture.key=x\n",
                           &p, &ed),
                     0);
    assert_string_equal(p.cluster_id, "Ab_9-x");
    assert_string_equal(p.directory_id, "dir1");
    assert_int_equal(p.node_id, 3);
    assert_int_equal(parse("version=1\ncluster.id=\n", &p, &ed), 0);
    assert_string_equal(p.cluster_id, "");
    assert_int_equal(p.node_id, -1);
}

static void test_refuses_what_it_cannot_trust(void **state)
{
    static const char *const bad[] = {
        "",                                 /* no version */
        "cluster.id=abc\n",                 /* no version */
        "version=2\n",                      /* a newer format */
        "version=1\nversion=1\n",           /* twice */
        "version=1\ncluster.id=a b\n",      /* bad id */
        "version=1\ncluster.id=a/b\n",      /* bad id */
        "version=1\nnode.id=-1\n",          /* negative */
        "version=1\nnode.id=99999999999\n", /* > int32 */
        "version=1\nnode.id=\n",            /* empty */
        "version=1\nnonsense\n",            /* not key=value */
        "version=1\n=x\n",                  /* no key */
        "version=1\ncluster.id=a\ncluster.id=a\n",
        "version=1\ncluster.id=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "aaaaaaaaaaaaaaaaaa\n", /* 66 characters */
    };
    struct metaprops p;
    struct err_detail ed;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err_detail_clear(&ed);
        assert_int_equal(parse(bad[i], &p, &ed), WEIR_ECORRUPT);
        assert_true(strlen(ed.msg) > 0);
    }
    /* a NUL inside a line */
    assert_int_equal(
        metaprops_parse("version=1\ncluster.id=a\0b\n", 24, &p, &ed),
        WEIR_ECORRUPT);
}

static void test_stamps(void **state)
{
    static const char *const bad[] = {
        "",
        "broker.epoch=1\n",                   /* no cluster line */
        "cluster.id=\nbroker.epoch=1\n",      /* empty id */
        "cluster.id=a b\nbroker.epoch=1\n",   /* bad id */
        "cluster.id=abc\n",                   /* no value line */
        "cluster.id=abc\nbroker.epoch=\n",    /* empty value */
        "cluster.id=abc\nbroker.epoch=-1\n",  /* negative */
        "cluster.id=abc\nbroker.epoch=1x\n",  /* junk */
        "cluster.id=abc\nother=1\n",          /* another key */
        "cluster.id=abc\nbroker.epoch=1\n\n", /* a third line */
        "cluster.id=abc\nbroker.epoch=99999999999999999999\n",
    };
    char cluster[METAPROPS_ID_MAX + 1];
    struct weir_buf b;
    int64_t v = -1;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(metaprops_parse_stamp(bad[i], strlen(bad[i]),
                                               "broker.epoch", cluster, &v,
                                               NULL),
                         WEIR_ECORRUPT);
    }
    buf_init(&b);
    assert_int_equal(metaprops_format_stamp("abc", "broker.epoch", 42, &b), 0);
    assert_int_equal(metaprops_parse_stamp((const char *)b.data, b.len,
                                           "broker.epoch", cluster, &v, NULL),
                     0);
    assert_string_equal(cluster, "abc");
    assert_int_equal(v, 42);
    assert_int_equal(metaprops_parse_stamp((const char *)b.data, b.len - 1,
                                           "broker.epoch", cluster, &v, NULL),
                     0); /* the last newline is optional */
    assert_int_equal(metaprops_format_stamp("", "broker.epoch", 1, &b),
                     WEIR_EINVALID_ARGUMENT);
    assert_int_equal(metaprops_format_stamp("abc", "broker.epoch", -1, &b),
                     WEIR_EINVALID_ARGUMENT);
    buf_fini(&b);
}

/* The metadata-offset stamp carries the history's chain value on an
 * optional third line; a file without it (written before) still reads. */
static void test_stamp_with_a_second_number(void **state)
{
    static const char *const bad[] = {
        "cluster.id=abc\nmetadata.end_offset=5\nmetadata.chain=\n",
        "cluster.id=abc\nmetadata.end_offset=5\nmetadata.chain=-1\n",
        "cluster.id=abc\nmetadata.end_offset=5\nother=1\n",
        "cluster.id=abc\nmetadata.end_offset=5\nmetadata.chain=1\n\n",
        "cluster.id=abc\nmetadata.end_offset=5\n\n",
    };
    char cluster[METAPROPS_ID_MAX + 1];
    struct weir_buf b;
    int64_t v = -1;
    int64_t v2 = -1;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(metaprops_parse_stamp2(
                             bad[i], strlen(bad[i]), "metadata.end_offset",
                             "metadata.chain", cluster, &v, &v2, NULL),
                         WEIR_ECORRUPT);
    }
    buf_init(&b);
    assert_int_equal(metaprops_format_stamp2("abc", "metadata.end_offset", 5,
                                             "metadata.chain", 77, &b),
                     0);
    assert_int_equal(metaprops_parse_stamp2(
                         (const char *)b.data, b.len, "metadata.end_offset",
                         "metadata.chain", cluster, &v, &v2, NULL),
                     0);
    assert_int_equal(v, 5);
    assert_int_equal(v2, 77);
    /* a reader of the two-line form refuses the third line */
    assert_int_equal(metaprops_parse_stamp((const char *)b.data, b.len,
                                           "metadata.end_offset", cluster, &v,
                                           NULL),
                     WEIR_ECORRUPT);
    buf_reset(&b);
    /* without a chain value: the two-line form, read with v2 = -1 */
    assert_int_equal(metaprops_format_stamp2("abc", "metadata.end_offset", 6,
                                             "metadata.chain", -1, &b),
                     0);
    assert_int_equal(metaprops_parse_stamp2(
                         (const char *)b.data, b.len, "metadata.end_offset",
                         "metadata.chain", cluster, &v, &v2, NULL),
                     0);
    assert_int_equal(v, 6);
    assert_int_equal(v2, -1);
    buf_fini(&b);
}

static void test_new_ids_are_valid_and_differ(void **state)
{
    char a[METAPROPS_NEW_ID + 1];
    char b[METAPROPS_NEW_ID + 1];

    (void)state;
    assert_int_equal(metaprops_new_id(a, NULL), 0);
    assert_int_equal(metaprops_new_id(b, NULL), 0);
    assert_int_equal(strlen(a), METAPROPS_NEW_ID);
    assert_true(metaprops_id_valid(a, strlen(a)));
    assert_true(metaprops_id_valid(b, strlen(b)));
    assert_string_not_equal(a, b);
    assert_false(metaprops_id_valid("", 0));
    assert_false(metaprops_id_valid("a.b", 3));
}

static void test_write_then_read_round_trips(void **state)
{
    char dir[] = "/tmp/weir-metaprops-XXXXXX";
    struct metaprops w;
    struct metaprops r;
    struct err_detail ed;
    bool found = true;
    char path[128];

    (void)state;
    assert_non_null(mkdtemp(dir));
    assert_int_equal(metaprops_read(dir, &r, &found, &ed), 0);
    assert_false(found);
    metaprops_init(&w);
    w.node_id = 7;
    assert_int_equal(metaprops_new_id(w.directory_id, &ed), 0);
    assert_int_equal(metaprops_write(dir, &w, &ed), 0);
    assert_int_equal(metaprops_read(dir, &r, &found, &ed), 0);
    assert_true(found);
    assert_int_equal(r.node_id, 7);
    assert_string_equal(r.directory_id, w.directory_id);
    assert_string_equal(r.cluster_id, "");
    (void)snprintf(w.cluster_id, sizeof(w.cluster_id), "cluster-1");
    assert_int_equal(metaprops_write(dir, &w, &ed), 0);
    assert_int_equal(metaprops_read(dir, &r, &found, &ed), 0);
    assert_string_equal(r.cluster_id, "cluster-1");
    assert_true(datadir_exists(dir, METAPROPS_FILE));
    assert_false(datadir_exists(dir, METAPROPS_FILE ".tmp"));
    /* a damaged file: the error names it */
    assert_int_equal(datadir_write(dir, METAPROPS_FILE, "junk\n", 5, &ed), 0);
    assert_int_equal(metaprops_read(dir, &r, &found, &ed), WEIR_ECORRUPT);
    assert_non_null(strstr(ed.msg, METAPROPS_FILE));
    assert_int_equal(datadir_remove(dir, METAPROPS_FILE, &ed), 0);
    assert_int_equal(datadir_remove(dir, METAPROPS_FILE, &ed), 0); /* gone */
    assert_false(datadir_exists(dir, METAPROPS_FILE));
    (void)snprintf(path, sizeof(path), "%s", dir);
    assert_int_equal(rmdir(path), 0);
}

static void test_datadir_read_refuses_large_files(void **state)
{
    char dir[] = "/tmp/weir-datadir-XXXXXX";
    char *big = calloc(1, DATADIR_SMALL_MAX + 1);
    char *out = NULL;
    struct err_detail ed;
    size_t len;
    bool found;

    (void)state;
    assert_non_null(big);
    assert_non_null(mkdtemp(dir));
    assert_int_equal(datadir_write(dir, "f", big, DATADIR_SMALL_MAX + 1, &ed),
                     0);
    assert_int_equal(datadir_read(dir, "f", &out, &len, &found, &ed),
                     WEIR_ECORRUPT);
    assert_null(out);
    assert_int_equal(datadir_write(dir, "f", "abc", 3, &ed), 0);
    assert_int_equal(datadir_read(dir, "f", &out, &len, &found, &ed), 0);
    assert_true(found);
    assert_int_equal(len, 3);
    assert_string_equal(out, "abc");
    mem_free(out);
    assert_int_equal(datadir_remove(dir, "f", &ed), 0);
    assert_int_equal(rmdir(dir), 0);
    free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parses_a_broker_file),
        cmocka_unit_test(test_refuses_what_it_cannot_trust),
        cmocka_unit_test(test_stamps),
        cmocka_unit_test(test_stamp_with_a_second_number),
        cmocka_unit_test(test_new_ids_are_valid_and_differ),
        cmocka_unit_test(test_write_then_read_round_trips),
        cmocka_unit_test(test_datadir_read_refuses_large_files),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
