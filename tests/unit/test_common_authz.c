/* SPDX-License-Identifier: Apache-2.0 */
/* Authorization settings: super-users parsing (';'-separated, subjects
 * with commas, spaces trimmed, limits), authorization off allowing
 * everything, ANONYMOUS for connections without a principal, and super
 * users passing without rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/authz.h"

static void test_super_users_parse(void **state)
{
    struct authz a;
    struct err_detail ed;

    (void)state;
    assert_int_equal(
        authz_init(&a, true, " User:admin ; CN=broker-1,O=weir;;User:b ", &ed),
        0);
    assert_int_equal(a.n_super, 3);
    assert_string_equal(a.super[0], "User:admin");
    assert_string_equal(a.super[1], "CN=broker-1,O=weir");
    assert_string_equal(a.super[2], "User:b");
    authz_fini(&a);
    assert_int_equal(authz_init(&a, true, NULL, &ed), 0);
    assert_int_equal(a.n_super, 0);
    authz_fini(&a);
}

static void test_super_users_limits(void **state)
{
    char many[AUTHZ_MAX_SUPER * 8 + 64] = "";
    char longname[ACL_MAX_NAME + 16];
    struct authz a;
    struct err_detail ed;
    int i;

    (void)state;
    for (i = 0; i <= AUTHZ_MAX_SUPER; i++) {
        (void)snprintf(many + strlen(many), sizeof(many) - strlen(many),
                       "U:%d;", i);
    }
    assert_int_equal(authz_init(&a, true, many, &ed), WEIR_ECONFIG);
    assert_int_equal(a.n_super, 0);
    memset(longname, 'x', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    assert_int_equal(authz_init(&a, true, longname, &ed), WEIR_ECONFIG);
}

static void test_decisions(void **state)
{
    struct acl_set rules;
    struct acl_rule r;
    struct authz off;
    struct authz on;
    struct err_detail ed;

    (void)state;
    acl_set_init(&rules);
    memset(&r, 0, sizeof(r));
    (void)snprintf(r.principal, sizeof(r.principal), "%s", AUTHZ_ANONYMOUS);
    (void)snprintf(r.name, sizeof(r.name), "%s", "public");
    r.resource = ACL_TOPIC;
    r.pattern = ACL_LITERAL;
    r.op = ACL_READ;
    r.perm = ACL_ALLOW;
    assert_int_equal(acl_add(&rules, &r, &ed), 0);
    assert_int_equal(authz_init(&off, false, NULL, &ed), 0);
    assert_int_equal(authz_init(&on, true, "User:admin", &ed), 0);
    /* off: everything, even with no rules at all */
    assert_true(authz_allowed(&off, NULL, "", ACL_CLUSTER, "", ACL_ALTER));
    /* on: nothing without a rule */
    assert_false(
        authz_allowed(&on, &rules, "User:bob", ACL_TOPIC, "public", ACL_READ));
    assert_false(
        authz_allowed(&on, NULL, "User:bob", ACL_TOPIC, "public", ACL_READ));
    /* no principal acts as ANONYMOUS */
    assert_string_equal(authz_principal(""), AUTHZ_ANONYMOUS);
    assert_string_equal(authz_principal(NULL), AUTHZ_ANONYMOUS);
    assert_true(authz_allowed(&on, &rules, "", ACL_TOPIC, "public", ACL_READ));
    assert_false(
        authz_allowed(&on, &rules, "", ACL_TOPIC, "public", ACL_WRITE));
    /* super users need no rule */
    assert_true(authz_allowed(&on, NULL, "User:admin", ACL_CLUSTER, "",
                              ACL_CLUSTER_ACTION));
    authz_fini(&on);
    authz_fini(&off);
    acl_set_fini(&rules);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_super_users_parse),
        cmocka_unit_test(test_super_users_limits),
        cmocka_unit_test(test_decisions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
