/* SPDX-License-Identifier: Apache-2.0 */
/* Error table and err_detail formatting: every code has a name and a
 * description, names round-trip, and messages never overflow. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"

static const int err_all_codes[] = {
#define ERR_TEST_CODE(name, code, retr, def, desc) code,
    WEIR_ERR_TABLE(ERR_TEST_CODE)
#undef ERR_TEST_CODE
};

#define ERR_N_CODES (sizeof(err_all_codes) / sizeof(err_all_codes[0]))

static void test_every_code_has_a_name_that_round_trips(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < ERR_N_CODES; i++) {
        const char *name = weir_err_name(err_all_codes[i]);
        assert_string_not_equal(name, "UNKNOWN_CODE");
        assert_true(strlen(weir_err_str(err_all_codes[i])) > 0);
        assert_int_equal(weir_err_from_name(name), err_all_codes[i]);
    }
}

static void test_codes_are_unique_and_ascending(void **state)
{
    size_t i;

    (void)state;
    /* the enum value is the wire code: codes must never be reused; the
     * table is in code order (ranges may be reserved, so gaps are fine) */
    assert_int_equal(err_all_codes[0], 0);
    for (i = 1; i < ERR_N_CODES; i++) {
        assert_true(err_all_codes[i] > err_all_codes[i - 1]);
    }
}

static void test_names_are_case_insensitive(void **state)
{
    (void)state;
    assert_int_equal(weir_err_from_name("not_leader"), WEIR_ENOT_LEADER);
    assert_int_equal(weir_err_from_name("Not_Leader"), WEIR_ENOT_LEADER);
    assert_int_equal(weir_err_from_name("NO_SUCH_ERROR"), -1);
    assert_int_equal(weir_err_from_name(""), -1);
}

static void test_unknown_code_is_reported_not_crashed(void **state)
{
    (void)state;
    assert_string_equal(weir_err_name(-1), "UNKNOWN_CODE");
    assert_string_equal(weir_err_name(100000), "UNKNOWN_CODE");
    assert_string_equal(weir_err_str(100000), "unknown error code");
    /* a code from a newer peer might mean "maybe applied" */
    assert_false(weir_err_definite(100000));
    assert_false(weir_err_retriable(100000));
}

static void test_retriable_and_definite_flags(void **state)
{
    (void)state;
    assert_true(weir_err_retriable(WEIR_ENOT_LEADER));
    assert_true(weir_err_retriable(WEIR_EREQUEST_TIMED_OUT));
    assert_false(weir_err_retriable(WEIR_EMALFORMED));
    assert_false(weir_err_retriable(WEIR_EOK));
    assert_true(weir_err_definite(WEIR_ENOT_LEADER));
    assert_false(weir_err_definite(WEIR_EREQUEST_TIMED_OUT));
    assert_false(weir_err_definite(WEIR_ENETWORK));
    assert_false(weir_err_definite(WEIR_EIO));
}

/* Answers given after the broker began to write say "maybe written"
 * (indefinite) and invite a retry; refusals before it stay definite. */
static void test_after_append_codes_are_indefinite(void **state)
{
    static const int after[] = {
        WEIR_ENOT_ENOUGH_REPLICAS_AFTER_APPEND,
        WEIR_ENOT_LEADER_AFTER_APPEND,
        WEIR_ENOT_COORDINATOR_AFTER_APPEND,
        WEIR_ESTORAGE,
        WEIR_EREQUEST_TIMED_OUT,
        WEIR_EIO,
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(after) / sizeof(after[0]); i++) {
        assert_true(weir_err_retriable(after[i]));
        assert_false(weir_err_definite(after[i]));
    }
    assert_int_equal(WEIR_ENOT_ENOUGH_REPLICAS_AFTER_APPEND, 70);
    assert_int_equal(WEIR_ENOT_LEADER_AFTER_APPEND, 71);
    assert_int_equal(WEIR_ENOT_COORDINATOR_AFTER_APPEND, 72);
    assert_string_equal(weir_err_name(71), "NOT_LEADER_AFTER_APPEND");
    assert_int_equal(weir_err_from_name("not_enough_replicas_after_append"),
                     70);
    /* refused before anything was written: definite */
    assert_true(weir_err_definite(WEIR_ENOT_LEADER));
    assert_true(weir_err_definite(WEIR_ENOT_ENOUGH_REPLICAS));
    assert_true(weir_err_definite(WEIR_ENOT_COORDINATOR));
}

static void test_err_set_formats_and_returns_code(void **state)
{
    struct err_detail ed;

    (void)state;
    err_detail_clear(&ed);
    assert_int_equal(ed.code, 0);
    assert_string_equal(ed.msg, "");
    assert_int_equal(err_set(&ed, WEIR_ECONFIG, "bad %s=%d", "port", 7),
                     WEIR_ECONFIG);
    assert_int_equal(ed.code, WEIR_ECONFIG);
    assert_int_equal(ed.sys_errno, 0);
    assert_string_equal(ed.msg, "bad port=7");
    /* a NULL detail is allowed everywhere */
    assert_int_equal(err_set(NULL, WEIR_EIO, "x"), WEIR_EIO);
    err_wrap(NULL, "y");
    err_detail_clear(NULL);
}

static void test_err_sys_names_the_call_and_errno(void **state)
{
    struct err_detail ed;

    (void)state;
    assert_int_equal(err_sys(&ed, WEIR_EIO, ENOENT, "open", "opening %s", "/x"),
                     WEIR_EIO);
    assert_int_equal(ed.sys_errno, ENOENT);
    assert_non_null(strstr(ed.msg, "opening /x: open: "));
    assert_non_null(strstr(ed.msg, "No such file"));
}

static void test_err_wrap_prefixes_context(void **state)
{
    struct err_detail ed;

    (void)state;
    (void)err_set(&ed, WEIR_ECORRUPT, "bad crc");
    err_wrap(&ed, "segment %d", 3);
    assert_string_equal(ed.msg, "segment 3: bad crc");
    assert_int_equal(ed.code, WEIR_ECORRUPT);
}

static void test_long_messages_are_truncated_safely(void **state)
{
    struct err_detail ed;
    char big[2000];

    (void)state;
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    (void)err_set(&ed, WEIR_EIO, "%s", big);
    assert_int_equal(strlen(ed.msg), sizeof(ed.msg) - 1);
    err_wrap(&ed, "%s", big); /* prefix is cut at 199 characters */
    assert_int_equal(strlen(ed.msg), sizeof(ed.msg) - 1);
    assert_memory_equal(ed.msg + 199, ": a", 3);
    (void)err_sys(&ed, WEIR_EIO, EIO, "write", "%s", big);
    assert_int_equal(strlen(ed.msg), sizeof(ed.msg) - 1);
}

static void test_errno_mapping(void **state)
{
    (void)state;
    assert_int_equal(err_from_errno(ENOMEM), WEIR_ENOMEM);
    assert_int_equal(err_from_errno(ENOENT), WEIR_ENOT_FOUND);
    assert_int_equal(err_from_errno(ENOSPC), WEIR_ESTORAGE);
    assert_int_equal(err_from_errno(ECONNRESET), WEIR_ENETWORK);
    assert_int_equal(err_from_errno(EBADF), WEIR_EIO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_code_has_a_name_that_round_trips),
        cmocka_unit_test(test_codes_are_unique_and_ascending),
        cmocka_unit_test(test_names_are_case_insensitive),
        cmocka_unit_test(test_unknown_code_is_reported_not_crashed),
        cmocka_unit_test(test_retriable_and_definite_flags),
        cmocka_unit_test(test_after_append_codes_are_indefinite),
        cmocka_unit_test(test_err_set_formats_and_returns_code),
        cmocka_unit_test(test_err_sys_names_the_call_and_errno),
        cmocka_unit_test(test_err_wrap_prefixes_context),
        cmocka_unit_test(test_long_messages_are_truncated_safely),
        cmocka_unit_test(test_errno_mapping),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
