/* SPDX-License-Identifier: Apache-2.0 */
/* The topic config table: for every key, values that parse (and to what)
 * and values that are refused with INVALID_CONFIG naming the key; unknown
 * keys refused with the list of valid ones; min.insync.replicas bounded
 * by the replication factor. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/batch.h"
#include "common/topic_config.h"

struct tc_case {
    const char *key;
    const char *value;
};

/* Accepted values (replication factor 3): one integer each. */
static void test_integer_keys_accept_their_range(void **state)
{
    static const struct {
        const char *key;
        const char *value;
        int64_t want;
    } ok[] = {
        {"segment.bytes", "61", BATCH_HEADER_BYTES},
        {"segment.bytes", "1073741824", 1073741824},
        {"segment.bytes", "2147483647", INT32_MAX},
        {"segment.ms", "1", 1},
        {"segment.ms", "604800000", 604800000},
        {"retention.ms", "-1", -1},
        {"retention.ms", "0", 0},
        {"retention.ms", "604800000", 604800000},
        {"retention.ms", "9223372036854775807", INT64_MAX},
        {"retention.bytes", "-1", -1},
        {"retention.bytes", "1000000", 1000000},
        {"index.interval.bytes", "0", 0},
        {"index.interval.bytes", "4096", 4096},
        {"max.message.bytes", "61", BATCH_HEADER_BYTES},
        {"max.message.bytes", "1048576", 1048576},
        {"flush.ms", "0", 0},
        {"flush.ms", "1000", 1000},
        {"flush.messages", "1", 1},
        {"flush.messages", "10000", 10000},
        {"delete.retention.ms", "0", 0},
        {"delete.retention.ms", "86400000", 86400000},
        {"min.compaction.lag.ms", "0", 0},
        {"min.compaction.lag.ms", "5000", 5000},
        {"min.insync.replicas", "1", 1},
        {"min.insync.replicas", "3", 3},
    };
    struct topic_config_value v;
    struct err_detail ed;
    size_t i;

    (void)state;
    assert_int_equal(BATCH_HEADER_BYTES, 61);
    for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        int rv = topic_config_parse(ok[i].key, ok[i].value, 3, &v, &ed);

        if (rv != 0) {
            print_error("%s=%s: %s\n", ok[i].key, ok[i].value, ed.msg);
        }
        assert_int_equal(rv, 0);
        assert_string_equal(topic_config_key_name(v.key), ok[i].key);
        assert_true(v.i == ok[i].want);
    }
}

static void test_bad_values_are_refused_naming_the_key(void **state)
{
    static const struct tc_case bad[] = {
        {"segment.bytes", "60"},
        {"segment.bytes", "2147483648"},
        {"segment.bytes", "1g"},
        {"segment.bytes", ""},
        {"segment.ms", "0"},
        {"segment.ms", "-5"},
        {"retention.ms", "abc"},
        {"retention.ms", "-2"},
        {"retention.ms", "1 000"},
        {"retention.ms", " 1000"},
        {"retention.ms", "1000 "},
        {"retention.ms", "+1000"},
        {"retention.ms", "1e3"},
        {"retention.ms", "9223372036854775808"},
        {"retention.ms", "-"},
        {"retention.bytes", "-2"},
        {"retention.bytes", "0x10"},
        {"index.interval.bytes", "-1"},
        {"index.interval.bytes", "2147483648"},
        {"max.message.bytes", "0"},
        {"max.message.bytes", "big"},
        {"flush.policy", "sometimes"},
        {"flush.policy", "ACK"},
        {"flush.policy", ""},
        {"flush.ms", "-1"},
        {"flush.messages", "0"},
        {"cleanup.policy", "banana"},
        {"cleanup.policy", "compact;delete"},
        {"cleanup.policy", "compact, delete"},
        {"cleanup.policy", "compact,compact"},
        {"cleanup.policy", "Delete"},
        {"cleanup.policy", ""},
        {"delete.retention.ms", "-1"},
        {"min.compaction.lag.ms", "soon"},
        {"min.cleanable.dirty.ratio", "1.5"},
        {"min.cleanable.dirty.ratio", "-0.1"},
        {"min.cleanable.dirty.ratio", ".5"},
        {"min.cleanable.dirty.ratio", "0.5x"},
        {"min.cleanable.dirty.ratio", "nan"},
        {"min.cleanable.dirty.ratio", "1e-1"},
        {"min.cleanable.dirty.ratio", ""},
        {"min.insync.replicas", "0"},
        {"min.insync.replicas", "4"},
        {"min.insync.replicas", "-1"},
        {"min.insync.replicas", "2x"},
        {"min.insync.replicas", ""},
    };
    struct topic_config_value v;
    struct err_detail ed;
    char needle[128];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err_detail_clear(&ed);
        assert_int_equal(
            topic_config_parse(bad[i].key, bad[i].value, 3, &v, &ed),
            WEIR_EINVALID_CONFIG);
        assert_int_equal(ed.code, WEIR_EINVALID_CONFIG);
        snprintf(needle, sizeof(needle), "'%s' for %s", bad[i].value,
                 bad[i].key);
        if (strstr(ed.msg, needle) == NULL) {
            print_error("'%s' lacks \"%s\"\n", ed.msg, needle);
            fail();
        }
    }
}

static void test_enumerations_and_ratio(void **state)
{
    static const struct {
        const char *value;
        uint32_t bits;
    } cleanup[] = {
        {"delete", TOPIC_CONFIG_CLEANUP_DELETE},
        {"compact", TOPIC_CONFIG_CLEANUP_COMPACT},
        {"compact,delete",
         TOPIC_CONFIG_CLEANUP_COMPACT | TOPIC_CONFIG_CLEANUP_DELETE},
        {"delete,compact",
         TOPIC_CONFIG_CLEANUP_COMPACT | TOPIC_CONFIG_CLEANUP_DELETE},
    };
    static const struct {
        const char *value;
        uint32_t flush;
    } flush[] = {
        {"ack", TOPIC_CONFIG_FLUSH_ACK},
        {"interval", TOPIC_CONFIG_FLUSH_INTERVAL},
        {"never", TOPIC_CONFIG_FLUSH_NEVER},
    };
    static const struct {
        const char *value;
        double ratio;
    } ratio[] = {
        {"0", 0.0}, {"1", 1.0}, {"0.5", 0.5}, {"1.", 1.0}, {"0.25", 0.25}};
    struct topic_config_value v;
    struct err_detail ed;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cleanup) / sizeof(cleanup[0]); i++) {
        assert_int_equal(
            topic_config_parse("cleanup.policy", cleanup[i].value, 0, &v, &ed),
            0);
        assert_int_equal(v.key, TOPIC_CONFIG_CLEANUP_POLICY);
        assert_int_equal(v.bits, cleanup[i].bits);
    }
    for (i = 0; i < sizeof(flush) / sizeof(flush[0]); i++) {
        assert_int_equal(
            topic_config_parse("flush.policy", flush[i].value, 0, &v, &ed), 0);
        assert_int_equal(v.key, TOPIC_CONFIG_FLUSH_POLICY);
        assert_int_equal(v.flush, flush[i].flush);
    }
    for (i = 0; i < sizeof(ratio) / sizeof(ratio[0]); i++) {
        assert_int_equal(topic_config_parse("min.cleanable.dirty.ratio",
                                            ratio[i].value, 0, &v, &ed),
                         0);
        assert_true(v.ratio == ratio[i].ratio);
    }
}

static void test_unknown_keys_are_refused_listing_valid_ones(void **state)
{
    static const char *const unknown[] = {"nosuch.key",    "",
                                          "retention",     "Retention.ms",
                                          "retention.ms ", "compression.type"};
    struct topic_config_value v;
    struct err_detail ed;
    char needle[128];
    size_t i;
    unsigned k;

    (void)state;
    for (i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
        assert_int_equal(topic_config_parse(unknown[i], "1", 0, &v, &ed),
                         WEIR_EINVALID_CONFIG);
        snprintf(needle, sizeof(needle), "unknown topic config '%s'",
                 unknown[i]);
        assert_non_null(strstr(ed.msg, needle));
        for (k = 0; k < TOPIC_CONFIG_KEY_COUNT; k++) {
            assert_non_null(strstr(ed.msg, topic_config_key_name(k)));
        }
    }
    assert_int_equal(topic_config_parse(NULL, "1", 0, &v, &ed),
                     WEIR_EINVALID_CONFIG);
    assert_int_equal(topic_config_parse("retention.ms", NULL, 0, &v, &ed),
                     WEIR_EINVALID_CONFIG);
    assert_non_null(strstr(ed.msg, "retention.ms"));
}

static void test_min_isr_follows_the_replication_factor(void **state)
{
    struct topic_config_value v;
    struct err_detail ed;

    (void)state;
    assert_int_equal(topic_config_parse("min.insync.replicas", "2", 1, &v, &ed),
                     WEIR_EINVALID_CONFIG);
    assert_non_null(strstr(ed.msg, "[1, 1]"));
    assert_non_null(strstr(ed.msg, "replication factor"));
    assert_int_equal(topic_config_parse("min.insync.replicas", "1", 1, &v, &ed),
                     0);
    assert_int_equal(topic_config_parse("min.insync.replicas", "5", 5, &v, &ed),
                     0);
    assert_true(v.i == 5);
    /* replication factor unknown: only the outer bound */
    assert_int_equal(
        topic_config_parse("min.insync.replicas", "32767", 0, &v, &ed), 0);
    assert_int_equal(
        topic_config_parse("min.insync.replicas", "32768", 0, &v, &ed),
        WEIR_EINVALID_CONFIG);
}

static void test_every_key_has_a_name_and_a_place(void **state)
{
    struct topic_config_value v;
    struct err_detail ed;
    unsigned k;

    (void)state;
    for (k = 0; k < TOPIC_CONFIG_KEY_COUNT; k++) {
        const char *name = topic_config_key_name(k);

        assert_non_null(name);
        /* a key is found under its own name (the value may be refused) */
        err_detail_clear(&ed);
        if (topic_config_parse(name, "1", 0, &v, &ed) != 0) {
            assert_null(strstr(ed.msg, "unknown topic config"));
        } else {
            assert_int_equal(v.key, k);
        }
        assert_int_equal(topic_config_is_log_key(k),
                         k != TOPIC_CONFIG_MIN_INSYNC_REPLICAS);
    }
    assert_null(topic_config_key_name(TOPIC_CONFIG_KEY_COUNT));
    assert_false(topic_config_is_log_key(TOPIC_CONFIG_KEY_COUNT));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_integer_keys_accept_their_range),
        cmocka_unit_test(test_bad_values_are_refused_naming_the_key),
        cmocka_unit_test(test_enumerations_and_ratio),
        cmocka_unit_test(test_unknown_keys_are_refused_listing_valid_ones),
        cmocka_unit_test(test_min_isr_follows_the_replication_factor),
        cmocka_unit_test(test_every_key_has_a_name_and_a_place),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
