/* SPDX-License-Identifier: Apache-2.0 */
/* Log manager over memory storage: topic creation and its checks (names,
 * partitions, replication factor, configs), the manifest across reopen and
 * corruption, deletion, leftovers, rollbacks and housekeeping. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "broker/storage/logmgr.h"
#include "common/mem.h"
#include "tests/lib/batch_gen.h"
#include "tests/lib/mem_storage.h"

#define DATA "/data"

struct fx {
    struct mem_storage *ms;
    const struct storage_ops *ops;
    struct plog_config defaults;
    struct logmgr *m;
    struct err_detail ed;
};

static int setup(void **state)
{
    static struct fx f;

    memset(&f, 0, sizeof(f));
    f.ms = mem_storage_new();
    f.ops = mem_storage_ops(f.ms);
    plog_config_defaults(&f.defaults);
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    logmgr_close(f->m);
    assert_int_equal(mem_storage_open_files(f->ms), 0);
    mem_storage_free(f->ms);
    return 0;
}

static void fx_open(struct fx *f)
{
    int rv = logmgr_open(f->ops, DATA, &f->defaults, 1000, &f->m, &f->ed);

    if (rv != 0) {
        printf("logmgr_open: %s\n", f->ed.msg);
    }
    assert_int_equal(rv, 0);
}

static void fx_reopen(struct fx *f)
{
    logmgr_close(f->m);
    f->m = NULL;
    fx_open(f);
}

static int fx_create(struct fx *f, const char *name, int32_t parts, int32_t rf)
{
    return logmgr_create_topic(f->m, name, parts, rf, NULL, 0, false, 1000,
                               &f->ed);
}

static void append_to(struct fx *f, const char *topic, int32_t p, int32_t n)
{
    struct plog *log = logmgr_partition(f->m, topic, p);
    struct weir_buf b;
    int64_t base;
    int64_t last;

    assert_non_null(log);
    buf_init(&b);
    assert_int_equal(batch_gen_make(&b, 1, n, 1000, 1, 20), 0);
    assert_int_equal(
        plog_append(log, b.data, b.len, 0, 1000, &base, &last, &f->ed), 0);
    buf_fini(&b);
}

/* The whole file tree as one string, to compare before and after. */
struct tree {
    char text[8192];
    size_t len;
};

static void tree_add(void *arg, const char *path, bool is_dir)
{
    struct tree *t = arg;
    int n = snprintf(t->text + t->len, sizeof(t->text) - t->len, "%s%s\n", path,
                     is_dir ? "/" : "");

    if (n > 0 && (size_t)n < sizeof(t->text) - t->len) {
        t->len += (size_t)n;
    }
}

static void tree_of(struct fx *f, struct tree *t)
{
    memset(t, 0, sizeof(*t));
    mem_storage_walk(f->ms, tree_add, t);
}

static void test_create_topic_makes_partitions_and_manifest(void **state)
{
    struct fx *f = *state;
    struct logmgr_topic t;

    fx_open(f);
    assert_int_equal(logmgr_topic_count(f->m), 0);
    assert_int_equal(fx_create(f, "orders", 3, 0), 0);
    assert_int_equal(logmgr_topic_count(f->m), 1);
    assert_true(logmgr_topic(f->m, "orders", &t));
    assert_string_equal(t.name, "orders");
    assert_int_equal(t.partitions, 3);
    assert_int_equal(t.replication_factor, 1);
    assert_int_equal(f->ops->exists(f->ops->ctx, DATA "/orders-0"), 1);
    assert_int_equal(f->ops->exists(f->ops->ctx, DATA "/orders-2"), 1);
    assert_int_equal(f->ops->exists(f->ops->ctx, DATA "/orders-3"), 0);
    assert_int_equal(f->ops->exists(f->ops->ctx, DATA "/topics.meta"), 1);
    assert_non_null(logmgr_partition(f->m, "orders", 2));
    assert_null(logmgr_partition(f->m, "orders", 3));
    assert_null(logmgr_partition(f->m, "orders", -1));
    assert_null(logmgr_partition(f->m, "nope", 0));
    assert_false(logmgr_topic(f->m, "nope", &t));
    append_to(f, "orders", 1, 5);

    /* everything survives a clean reopen */
    fx_reopen(f);
    assert_true(logmgr_topic(f->m, "orders", &t));
    assert_int_equal(t.partitions, 3);
    assert_true(plog_end_offset(logmgr_partition(f->m, "orders", 1)) == 5);
    assert_true(plog_end_offset(logmgr_partition(f->m, "orders", 0)) == 0);
    assert_false(plog_recovered(logmgr_partition(f->m, "orders", 1)));
}

static void test_topics_listed_in_name_order(void **state)
{
    struct fx *f = *state;
    struct logmgr_topic t;
    const char *names[] = {"zeta", "alpha", "Mid", "alpha.2", "b_c-d"};
    const char *sorted[] = {"Mid", "alpha", "alpha.2", "b_c-d", "zeta"};
    uint32_t i;

    fx_open(f);
    for (i = 0; i < 5; i++) {
        assert_int_equal(fx_create(f, names[i], 1, 1), 0);
    }
    fx_reopen(f);
    assert_int_equal(logmgr_topic_count(f->m), 5);
    for (i = 0; i < 5; i++) {
        logmgr_topic_at(f->m, i, &t);
        assert_string_equal(t.name, sorted[i]);
    }
}

static void
count_each(void *arg, const char *topic, int32_t partition, struct plog *log)
{
    int *n = arg;

    assert_non_null(log);
    assert_non_null(topic);
    assert_true(partition >= 0);
    (*n)++;
}

static void test_each_visits_every_partition(void **state)
{
    struct fx *f = *state;
    int n = 0;

    fx_open(f);
    assert_int_equal(fx_create(f, "a", 3, 1), 0);
    assert_int_equal(fx_create(f, "b", 4, 1), 0);
    logmgr_each(f->m, count_each, &n);
    assert_int_equal(n, 7);
}

static void test_invalid_names_create_nothing(void **state)
{
    struct fx *f = *state;
    char long_name[251];
    char max_name[250];
    const char *bad[] = {"",     ".",   "..",  "a/b", "../evil",
                         "/abs", "a b", "x\n", "é",   long_name};
    struct tree before;
    struct tree after;
    size_t i;

    memset(long_name, 'a', 250);
    long_name[250] = '\0';
    fx_open(f);
    tree_of(f, &before);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(logmgr_create_topic(f->m, bad[i], 1, 1, NULL, 0, false,
                                             1000, &f->ed),
                         WEIR_EINVALID_TOPIC);
        assert_int_equal(logmgr_delete_topic(f->m, bad[i], 1000, &f->ed),
                         WEIR_EINVALID_TOPIC);
        assert_null(logmgr_partition(f->m, bad[i], 0));
    }
    tree_of(f, &after);
    assert_string_equal(before.text, after.text);
    assert_int_equal(logmgr_topic_count(f->m), 0);
    /* 249 characters is the longest name that works */
    memset(max_name, 'b', 249);
    max_name[249] = '\0';
    assert_int_equal(fx_create(f, max_name, 1, 1), 0);
    fx_reopen(f);
    assert_int_equal(logmgr_topic_count(f->m), 1);
}

static void test_partition_and_replication_checks(void **state)
{
    struct fx *f = *state;
    struct tree before;
    struct tree after;

    fx_open(f);
    tree_of(f, &before);
    assert_int_equal(fx_create(f, "t", 0, 1), WEIR_EINVALID_PARTITIONS);
    assert_int_equal(fx_create(f, "t", -3, 1), WEIR_EINVALID_PARTITIONS);
    assert_int_equal(fx_create(f, "t", LOGMGR_MAX_PARTITIONS + 1, 1),
                     WEIR_EINVALID_PARTITIONS);
    assert_int_equal(fx_create(f, "t", 1, 2), WEIR_EINVALID_REPLICATION_FACTOR);
    assert_non_null(strstr(f->ed.msg, "only 1 broker"));
    assert_int_equal(fx_create(f, "t", 1, 3), WEIR_EINVALID_REPLICATION_FACTOR);
    assert_int_equal(fx_create(f, "t", 1, -1),
                     WEIR_EINVALID_REPLICATION_FACTOR);
    tree_of(f, &after);
    assert_string_equal(before.text, after.text);
    assert_int_equal(fx_create(f, "t", 1, 1), 0);
    assert_int_equal(fx_create(f, "t", 1, 1), WEIR_ETOPIC_EXISTS);
    assert_int_equal(fx_create(f, "u", 1, 0), 0);
}

static void test_topic_configs_parse_strictly(void **state)
{
    struct fx *f = *state;
    struct plog_config cfg;
    struct logmgr_topic t;
    const struct logmgr_kv good[] = {
        {"segment.bytes", "1048576"},  {"segment.ms", "60000"},
        {"retention.ms", "-1"},        {"retention.bytes", "5000000"},
        {"index.interval.bytes", "0"}, {"max.message.bytes", "2000"},
        {"flush.policy", "never"},     {"flush.ms", "250"},
        {"flush.messages", "7"},       {"cleanup.policy", "delete"},
    };
    struct {
        struct logmgr_kv kv;
        const char *needle;
    } bad[] = {
        {{"retention.foo", "1"}, "retention.foo"},
        {{"segment.bytes", "abc"}, "'abc' for segment.bytes"},
        {{"segment.bytes", "-5"}, "'-5' for segment.bytes"},
        {{"segment.bytes", "1k"}, "'1k'"},
        {{"segment.bytes", " 5"}, "' 5'"},
        {{"segment.bytes", ""}, "''"},
        {{"segment.bytes", "99999999999999999999"}, "segment.bytes"},
        {{"retention.ms", "-2"}, "retention.ms"},
        {{"flush.policy", "sometimes"}, "'sometimes' for flush.policy"},
        {{"cleanup.policy", "compact;delete"}, "for cleanup.policy"},
        {{"cleanup.policy", "compacted"}, "for cleanup.policy"},
        {{"cleanup.policy", "keep"}, "'keep' for cleanup.policy"},
        {{"segment.bytes", NULL}, "segment.bytes has no value"},
    };
    const struct logmgr_kv dup[] = {{"flush.ms", "1"}, {"flush.ms", "2"}};
    size_t i;

    assert_int_equal(
        logmgr_parse_topic_config(&f->defaults, good, 10, &cfg, &f->ed), 0);
    assert_true(cfg.segment_bytes == 1048576);
    assert_true(cfg.segment_ms == 60000);
    assert_true(cfg.retention_ms == -1);
    assert_true(cfg.retention_bytes == 5000000);
    assert_int_equal(cfg.index_interval_bytes, 0);
    assert_int_equal(cfg.max_batch_bytes, 2000);
    assert_int_equal(cfg.flush_policy, PLOG_FLUSH_NEVER);
    assert_true(cfg.flush_ms == 250 && cfg.flush_messages == 7);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(logmgr_parse_topic_config(&f->defaults, &bad[i].kv, 1,
                                                   &cfg, &f->ed),
                         WEIR_EINVALID_CONFIG);
        if (strstr(f->ed.msg, bad[i].needle) == NULL) {
            printf("'%s' lacks '%s'\n", f->ed.msg, bad[i].needle);
            fail();
        }
    }
    assert_int_equal(
        logmgr_parse_topic_config(&f->defaults, dup, 2, &cfg, &f->ed),
        WEIR_EINVALID_CONFIG);
    assert_non_null(strstr(f->ed.msg, "twice"));

    /* through create: refused configs create nothing; accepted ones reach
     * the partition logs and survive a reopen */
    fx_open(f);
    assert_int_equal(logmgr_create_topic(f->m, "c", 2, 1, &bad[9].kv, 1, false,
                                         1000, &f->ed),
                     WEIR_EINVALID_CONFIG);
    assert_int_equal(f->ops->exists(f->ops->ctx, DATA "/c-0"), 0);
    assert_int_equal(
        logmgr_create_topic(f->m, "c", 2, 1, good, 10, false, 1000, &f->ed), 0);
    fx_reopen(f);
    assert_true(logmgr_topic(f->m, "c", &t));
    assert_int_equal(t.n_configs, 10);
    assert_string_equal(t.configs[6].key, "flush.policy");
    assert_string_equal(t.configs[6].value, "never");
    assert_true(t.log_config->segment_bytes == 1048576);
    assert_int_equal(plog_config(logmgr_partition(f->m, "c", 1))->flush_policy,
                     PLOG_FLUSH_NEVER);
    assert_true(plog_config(logmgr_partition(f->m, "c", 1))->retention_ms ==
                -1);
}

/* The standalone broker checks configs against the same table as the
 * controller: the keys of the issue are refused naming the key, nothing
 * is created, and min.insync.replicas is valid up to its one replica. */
static void test_standalone_create_checks_the_shared_table(void **state)
{
    struct fx *f = *state;
    static const struct logmgr_kv bad[] = {
        {"retention.ms", "abc"},
        {"cleanup.policy", "banana"},
        {"nosuch.key", "1"},
        {"min.insync.replicas", "2"},
    };
    const struct logmgr_kv isr1 = {"min.insync.replicas", "1"};
    struct logmgr_topic t;
    size_t i;

    fx_open(f);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(logmgr_create_topic(f->m, "t", 1, 0, &bad[i], 1, false,
                                             1000, &f->ed),
                         WEIR_EINVALID_CONFIG);
        assert_non_null(strstr(f->ed.msg, bad[i].key));
        assert_false(logmgr_topic(f->m, "t", &t));
        assert_int_equal(f->ops->exists(f->ops->ctx, DATA "/t-0"), 0);
    }
    assert_non_null(strstr(f->ed.msg, "replication factor"));
    assert_int_equal(
        logmgr_create_topic(f->m, "t", 1, 1, &isr1, 1, false, 1000, &f->ed), 0);
    fx_reopen(f);
    assert_true(logmgr_topic(f->m, "t", &t));
    assert_string_equal(t.configs[0].key, "min.insync.replicas");
}

static void test_validate_only_creates_nothing(void **state)
{
    struct fx *f = *state;
    struct tree before;
    struct tree after;

    fx_open(f);
    tree_of(f, &before);
    assert_int_equal(
        logmgr_create_topic(f->m, "v", 4, 1, NULL, 0, true, 1000, &f->ed), 0);
    tree_of(f, &after);
    assert_string_equal(before.text, after.text);
    assert_int_equal(logmgr_topic_count(f->m), 0);
    assert_int_equal(
        logmgr_create_topic(f->m, "v", 0, 1, NULL, 0, true, 1000, &f->ed),
        WEIR_EINVALID_PARTITIONS);
}

static void test_delete_topic_removes_everything(void **state)
{
    struct fx *f = *state;
    struct tree t;

    fx_open(f);
    assert_int_equal(fx_create(f, "keep", 2, 1), 0);
    assert_int_equal(fx_create(f, "gone", 3, 1), 0);
    append_to(f, "gone", 0, 10);
    append_to(f, "keep", 1, 4);
    assert_int_equal(logmgr_delete_topic(f->m, "gone", 5000, &f->ed), 0);
    assert_null(logmgr_partition(f->m, "gone", 0));
    assert_int_equal(logmgr_topic_count(f->m), 1);
    tree_of(f, &t);
    assert_null(strstr(t.text, "gone"));
    assert_null(strstr(t.text, ".delete"));
    assert_int_equal(logmgr_delete_topic(f->m, "gone", 5000, &f->ed),
                     WEIR_EUNKNOWN_TOPIC_OR_PARTITION);
    fx_reopen(f);
    assert_int_equal(logmgr_topic_count(f->m), 1);
    assert_true(plog_end_offset(logmgr_partition(f->m, "keep", 1)) == 4);
    /* the name can be used again, from scratch */
    assert_int_equal(fx_create(f, "gone", 1, 1), 0);
    assert_true(plog_end_offset(logmgr_partition(f->m, "gone", 0)) == 0);
}

static void test_leftovers_removed_and_strangers_kept(void **state)
{
    struct fx *f = *state;
    struct storage_file *file;
    struct tree t;

    assert_int_equal(f->ops->mkdir(f->ops->ctx, DATA, &f->ed), 0);
    assert_int_equal(
        f->ops->mkdir(f->ops->ctx, DATA "/old-0.123.delete", &f->ed), 0);
    assert_int_equal(f->ops->open(f->ops->ctx,
                                  DATA
                                  "/old-0.123.delete/00000000000000000000.log",
                                  true, &file, &f->ed),
                     0);
    f->ops->close(f->ops->ctx, file);
    assert_int_equal(f->ops->mkdir(f->ops->ctx, DATA "/stranger-0", &f->ed), 0);
    fx_open(f);
    tree_of(f, &t);
    assert_null(strstr(t.text, "old-0"));
    assert_non_null(strstr(t.text, "/data/stranger-0/"));
    /* a topic whose directory is taken by a stranger is refused */
    assert_int_equal(fx_create(f, "stranger", 1, 1), WEIR_ETOPIC_EXISTS);
    assert_non_null(strstr(f->ed.msg, "not in the topic manifest"));
}

static void write_manifest(struct fx *f, const char *text)
{
    struct err_detail ed;

    assert_int_equal(storage_write_atomic(f->ops, DATA, DATA "/topics.meta",
                                          text, strlen(text), &ed),
                     0);
}

static void test_corrupt_manifest_refuses_open(void **state)
{
    struct fx *f = *state;
    const char *bad[] = {
        "garbage\n",
        "weir-topics 2\nend 0\n",
        "weir-topics 1\ntopic t 1 1 0\n",
        "weir-topics 1\ntopic a/b 1 1 0\nend 1\n",
        "weir-topics 1\ntopic .. 1 1 0\nend 1\n",
        "weir-topics 1\ntopic t 0 1 0\nend 1\n",
        "weir-topics 1\ntopic t 1x 1 0\nend 1\n",
        "weir-topics 1\ntopic t 1 1 1\nconfig nope 1\nend 1\n",
        "weir-topics 1\ntopic t 1 1 1\nend 1\n",
        "weir-topics 1\ntopic t 1 1 0\ntopic t 1 1 0\nend 2\n",
        "weir-topics 1\ntopic t 1 1 0\nend 2\n",
        "weir-topics 1\ntopic t 1 1 0\nend 1\nextra\n",
        "weir-topics 1\ntopic t 1 1 0 extra\nend 1\n",
    };
    struct tree before;
    struct tree after;
    struct logmgr *m = NULL;
    size_t i;

    fx_open(f);
    assert_int_equal(fx_create(f, "t", 1, 1), 0);
    append_to(f, "t", 0, 3);
    logmgr_close(f->m);
    f->m = NULL;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        write_manifest(f, bad[i]);
        tree_of(f, &before);
        assert_int_equal(
            logmgr_open(f->ops, DATA, &f->defaults, 1000, &m, &f->ed),
            WEIR_ECORRUPT);
        assert_null(m);
        if (strstr(f->ed.msg, "/data/topics.meta") == NULL) {
            printf("case %zu: '%s'\n", i, f->ed.msg);
            fail();
        }
        tree_of(f, &after);
        assert_string_equal(before.text, after.text);
        assert_int_equal(mem_storage_open_files(f->ms), 0);
    }
    /* restoring the file brings everything back */
    write_manifest(f, "weir-topics 1\ntopic t 1 1 0\nend 1\n");
    fx_open(f);
    assert_true(plog_end_offset(logmgr_partition(f->m, "t", 0)) == 3);
}

static void test_failed_manifest_write_rolls_back(void **state)
{
    struct fx *f = *state;
    struct logmgr_topic t;
    struct tree before;
    struct tree after;

    fx_open(f);
    assert_int_equal(fx_create(f, "a", 2, 1), 0);
    append_to(f, "a", 1, 6);
    /* create: the manifest's rename fails, so no directory appears */
    tree_of(f, &before);
    mem_storage_fail(f->ms, MEM_OP_RENAME, 1, EIO, 0, false);
    assert_int_equal(fx_create(f, "b", 2, 1), WEIR_EIO);
    assert_false(logmgr_topic(f->m, "b", &t));
    tree_of(f, &after);
    assert_string_equal(before.text, after.text);
    /* delete: the partitions rename, then the manifest write fails: the
     * partitions come back under their names, data intact */
    mem_storage_fail(f->ms, MEM_OP_RENAME, 3, EIO, 0, false);
    assert_int_equal(logmgr_delete_topic(f->m, "a", 2000, &f->ed), WEIR_EIO);
    assert_true(logmgr_topic(f->m, "a", &t));
    tree_of(f, &after);
    assert_string_equal(before.text, after.text);
    assert_true(plog_end_offset(logmgr_partition(f->m, "a", 1)) == 6);
    append_to(f, "a", 1, 2);
    fx_reopen(f);
    assert_true(plog_end_offset(logmgr_partition(f->m, "a", 1)) == 8);
}

static void test_data_dir_is_created_with_parents(void **state)
{
    struct fx *f = *state;
    struct logmgr *m;

    assert_int_equal(
        logmgr_open(f->ops, "/var/lib/weir", &f->defaults, 1000, &m, &f->ed),
        0);
    assert_int_equal(
        logmgr_create_topic(m, "x", 1, 1, NULL, 0, false, 1000, &f->ed), 0);
    logmgr_close(m);
    /* every level was made durable */
    mem_storage_crash(f->ms);
    assert_int_equal(f->ops->exists(f->ops->ctx, "/var/lib/weir/x-0"), 1);
    assert_int_equal(
        logmgr_open(f->ops, "/var/lib/weir", &f->defaults, 1000, &m, &f->ed),
        0);
    assert_int_equal(logmgr_topic_count(m), 1);
    logmgr_close(m);
}

static void test_missing_partition_dir_is_recreated(void **state)
{
    struct fx *f = *state;
    struct err_detail ed;

    fx_open(f);
    assert_int_equal(fx_create(f, "m", 2, 1), 0);
    logmgr_close(f->m);
    f->m = NULL;
    /* as a crash between the manifest and the directories would leave */
    assert_int_equal(storage_remove_dir(f->ops, DATA "/m-1", &ed), 0);
    fx_open(f);
    assert_non_null(logmgr_partition(f->m, "m", 1));
    assert_int_equal(f->ops->exists(f->ops->ctx, DATA "/m-1"), 1);
}

static void test_housekeep_rolls_and_applies_retention(void **state)
{
    struct fx *f = *state;
    const struct logmgr_kv cfg[] = {{"segment.ms", "1000"},
                                    {"retention.ms", "5000"}};
    struct plog *log;
    int i;

    fx_open(f);
    assert_int_equal(
        logmgr_create_topic(f->m, "h", 2, 1, cfg, 2, false, 1000, &f->ed), 0);
    for (i = 0; i < 3; i++) {
        append_to(f, "h", 0, 2); /* records stamped 1000, 1001 */
        assert_int_equal(
            logmgr_housekeep(f->m, 2000 + i * 1000, NULL, NULL, &f->ed), 0);
    }
    log = logmgr_partition(f->m, "h", 0);
    assert_int_equal(plog_segment_count(log), 4);
    assert_int_equal(plog_segment_count(logmgr_partition(f->m, "h", 1)), 1);
    /* at 7000 every record is older than 5 s: all closed segments go */
    assert_int_equal(logmgr_housekeep(f->m, 7000, NULL, NULL, &f->ed), 0);
    assert_int_equal(plog_segment_count(log), 1);
    assert_true(plog_start_offset(log) == 6);
    assert_true(plog_end_offset(log) == 6);
}

static void oom_scenario(struct fx *f)
{
    const struct logmgr_kv cfg[] = {{"retention.ms", "1000"},
                                    {"flush.policy", "never"}};
    int fails = 0;

    if (logmgr_open(f->ops, DATA, &f->defaults, 1000, &f->m, &f->ed) != 0) {
        return;
    }
    fails +=
        logmgr_create_topic(f->m, "a", 2, 1, cfg, 2, false, 1000, &f->ed) != 0;
    fails +=
        logmgr_create_topic(f->m, "b", 3, 1, NULL, 0, false, 1000, &f->ed) != 0;
    fails += logmgr_delete_topic(f->m, "b", 2000, &f->ed) != 0;
    fails += logmgr_housekeep(f->m, 5000, NULL, NULL, &f->ed) != 0;
    logmgr_close(f->m);
    f->m = NULL;
    fails += logmgr_open(f->ops, DATA, &f->defaults, 1000, &f->m, &f->ed) != 0;
    assert_true(fails == 0 || mem_fault_count() > 0);
}

static void test_out_of_memory_anywhere_is_survivable(void **state)
{
    struct fx *f = *state;
    struct logmgr_topic t;
    unsigned long n;
    unsigned long injected = 1;
    uint32_t i;

    for (n = 1; injected > 0; n++) {
        logmgr_close(f->m);
        f->m = NULL;
        mem_storage_free(f->ms);
        f->ms = mem_storage_new();
        f->ops = mem_storage_ops(f->ms);
        mem_fault_set(n, 0);
        oom_scenario(f);
        injected = mem_fault_count();
        mem_fault_set(0, 0);
        /* whatever survived is whole: every listed topic has its logs */
        for (i = 0; f->m != NULL && i < logmgr_topic_count(f->m); i++) {
            logmgr_topic_at(f->m, i, &t);
            assert_non_null(logmgr_partition(f->m, t.name, t.partitions - 1));
        }
    }
    assert_true(n > 20);
    assert_non_null(f->m);
    assert_int_equal(logmgr_topic_count(f->m), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_create_topic_makes_partitions_and_manifest, setup, teardown),
        cmocka_unit_test_setup_teardown(test_topics_listed_in_name_order, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_each_visits_every_partition, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_invalid_names_create_nothing,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_standalone_create_checks_the_shared_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_partition_and_replication_checks,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_topic_configs_parse_strictly,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_validate_only_creates_nothing,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_topic_removes_everything,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_leftovers_removed_and_strangers_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_manifest_refuses_open,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_manifest_write_rolls_back,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_data_dir_is_created_with_parents,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_partition_dir_is_recreated,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_housekeep_rolls_and_applies_retention, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_out_of_memory_anywhere_is_survivable, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
