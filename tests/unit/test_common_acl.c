/* SPDX-License-Identifier: Apache-2.0 */
/* ACL decisions: deny wins, nothing without a rule, super users, literal,
 * wildcard and prefixed names, describe implied by an allow of read /
 * write / delete / alter (never by a deny), and rule validation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/acl.h"

static void add(struct acl_set *s,
                const char *principal,
                enum acl_resource res,
                enum acl_pattern pat,
                const char *name,
                enum acl_op op,
                enum acl_perm perm)
{
    struct acl_rule r;
    struct err_detail ed;

    memset(&r, 0, sizeof(r));
    (void)snprintf(r.principal, sizeof(r.principal), "%s", principal);
    (void)snprintf(r.name, sizeof(r.name), "%s", name);
    r.resource = res;
    r.pattern = pat;
    r.op = op;
    r.perm = perm;
    assert_int_equal(acl_add(s, &r, &ed), 0);
}

#define ALLOWED(p, res, name, op) acl_allowed(&s, supers, 1, p, res, name, op)

static const char *const supers[] = {"CN=admin"};

static void test_matrix(void **state)
{
    struct acl_set s;

    (void)state;
    acl_set_init(&s);
    /* nothing is allowed without a rule; super users everything */
    assert_false(ALLOWED("CN=alice", ACL_TOPIC, "orders", ACL_READ));
    assert_true(ALLOWED("CN=admin", ACL_TOPIC, "orders", ACL_DELETE));
    add(&s, "CN=alice", ACL_TOPIC, ACL_LITERAL, "orders", ACL_WRITE, ACL_ALLOW);
    add(&s, "CN=alice", ACL_TOPIC, ACL_PREFIXED, "logs.", ACL_READ, ACL_ALLOW);
    add(&s, "CN=alice", ACL_TOPIC, ACL_LITERAL, "logs.secret", ACL_ALL,
        ACL_DENY);
    add(&s, "*", ACL_GROUP, ACL_LITERAL, "*", ACL_READ, ACL_ALLOW);
    add(&s, "CN=bob", ACL_GROUP, ACL_LITERAL, "payroll", ACL_READ, ACL_DENY);
    add(&s, "CN=broker", ACL_CLUSTER, ACL_LITERAL, "", ACL_CLUSTER_ACTION,
        ACL_ALLOW);
    /* literal */
    assert_true(ALLOWED("CN=alice", ACL_TOPIC, "orders", ACL_WRITE));
    assert_false(ALLOWED("CN=alice", ACL_TOPIC, "orders", ACL_READ));
    assert_false(ALLOWED("CN=alice", ACL_TOPIC, "orders2", ACL_WRITE));
    assert_false(ALLOWED("CN=bob", ACL_TOPIC, "orders", ACL_WRITE));
    /* describe follows write/read allows */
    assert_true(ALLOWED("CN=alice", ACL_TOPIC, "orders", ACL_DESCRIBE));
    assert_true(ALLOWED("CN=alice", ACL_TOPIC, "logs.web", ACL_DESCRIBE));
    assert_false(ALLOWED("CN=alice", ACL_TOPIC, "orders", ACL_DELETE));
    /* prefixed, and deny wins over it */
    assert_true(ALLOWED("CN=alice", ACL_TOPIC, "logs.web", ACL_READ));
    assert_false(ALLOWED("CN=alice", ACL_TOPIC, "logs", ACL_READ));
    assert_false(ALLOWED("CN=alice", ACL_TOPIC, "logs.secret", ACL_READ));
    assert_false(ALLOWED("CN=alice", ACL_TOPIC, "logs.secret", ACL_DESCRIBE));
    /* wildcard principal and name; a deny for one principal */
    assert_true(ALLOWED("CN=carol", ACL_GROUP, "anything", ACL_READ));
    assert_true(ALLOWED("CN=bob", ACL_GROUP, "other", ACL_READ));
    assert_false(ALLOWED("CN=bob", ACL_GROUP, "payroll", ACL_READ));
    /* resource types do not mix */
    assert_false(ALLOWED("CN=carol", ACL_TOPIC, "anything", ACL_READ));
    /* cluster action: only who has it (a client posing as a follower
     * does not) */
    assert_true(ALLOWED("CN=broker", ACL_CLUSTER, "", ACL_CLUSTER_ACTION));
    assert_false(ALLOWED("CN=alice", ACL_CLUSTER, "", ACL_CLUSTER_ACTION));
    acl_set_fini(&s);
}

/* A deny of read does not deny describe; an allow of all covers it. */
static void test_implication_direction(void **state)
{
    struct acl_set s;

    (void)state;
    acl_set_init(&s);
    add(&s, "CN=x", ACL_TOPIC, ACL_LITERAL, "t", ACL_ALL, ACL_ALLOW);
    add(&s, "CN=x", ACL_TOPIC, ACL_LITERAL, "t", ACL_READ, ACL_DENY);
    assert_false(ALLOWED("CN=x", ACL_TOPIC, "t", ACL_READ));
    assert_true(ALLOWED("CN=x", ACL_TOPIC, "t", ACL_DESCRIBE));
    assert_true(ALLOWED("CN=x", ACL_TOPIC, "t", ACL_WRITE));
    acl_set_fini(&s);
}

static void test_add_remove_validate(void **state)
{
    struct acl_set s;
    struct acl_rule r;
    struct err_detail ed;

    (void)state;
    acl_set_init(&s);
    add(&s, "CN=x", ACL_TOPIC, ACL_LITERAL, "t", ACL_READ, ACL_ALLOW);
    add(&s, "CN=x", ACL_TOPIC, ACL_LITERAL, "t", ACL_READ, ACL_ALLOW);
    assert_int_equal(s.n, 1);
    r = s.rules[0];
    assert_int_equal(acl_remove(&s, &r), 1);
    assert_int_equal(acl_remove(&s, &r), 0);
    assert_false(ALLOWED("CN=x", ACL_TOPIC, "t", ACL_READ));
    memset(&r, 0, sizeof(r));
    r.resource = ACL_TOPIC;
    r.pattern = ACL_LITERAL;
    r.op = ACL_READ;
    r.perm = ACL_ALLOW;
    (void)snprintf(r.name, sizeof(r.name), "t");
    assert_int_equal(acl_add(&s, &r, &ed), WEIR_EINVALID_ARGUMENT);
    (void)snprintf(r.principal, sizeof(r.principal), "CN=x");
    r.resource = ACL_CLUSTER;
    r.pattern = ACL_PREFIXED;
    assert_int_equal(acl_add(&s, &r, &ed), WEIR_EINVALID_ARGUMENT);
    r.resource = ACL_TOPIC;
    r.pattern = ACL_LITERAL;
    r.name[0] = '\0';
    assert_int_equal(acl_add(&s, &r, &ed), WEIR_EINVALID_ARGUMENT);
    r.op = (enum acl_op)42;
    (void)snprintf(r.name, sizeof(r.name), "t");
    assert_int_equal(acl_add(&s, &r, &ed), WEIR_EINVALID_ARGUMENT);
    assert_int_equal(acl_op_parse("cluster-action"), ACL_CLUSTER_ACTION);
    assert_int_equal(acl_op_parse("fly"), 0);
    assert_string_equal(acl_resource_name(ACL_GROUP), "group");
    assert_int_equal(acl_resource_parse("cluster"), ACL_CLUSTER);
    acl_set_fini(&s);
}

static void test_has_matches_every_field(void **state)
{
    struct acl_set s;
    struct acl_rule r;
    struct acl_rule other;

    (void)state;
    acl_set_init(&s);
    memset(&r, 0, sizeof(r));
    (void)snprintf(r.principal, sizeof(r.principal), "%s", "CN=a,O=weir");
    (void)snprintf(r.name, sizeof(r.name), "%s", "orders");
    r.resource = ACL_TOPIC;
    r.pattern = ACL_LITERAL;
    r.op = ACL_READ;
    r.perm = ACL_ALLOW;
    assert_false(acl_has(&s, &r));
    assert_int_equal(acl_add(&s, &r, NULL), 0);
    assert_true(acl_has(&s, &r));
    other = r;
    other.pattern = ACL_PREFIXED;
    assert_false(acl_has(&s, &other));
    other = r;
    other.perm = ACL_DENY;
    assert_false(acl_has(&s, &other));
    other = r;
    other.op = ACL_WRITE;
    assert_false(acl_has(&s, &other));
    other = r;
    other.resource = ACL_GROUP;
    assert_false(acl_has(&s, &other));
    other = r;
    other.name[5] = '\0'; /* "order" */
    assert_false(acl_has(&s, &other));
    other = r;
    other.principal[0] = 'c';
    assert_false(acl_has(&s, &other));
    /* bytes after the terminator do not count */
    other = r;
    other.name[200] = 'x';
    assert_true(acl_has(&s, &other));
    assert_int_equal(acl_remove(&s, &r), 1);
    assert_false(acl_has(&s, &r));
    acl_set_fini(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matrix),
        cmocka_unit_test(test_implication_direction),
        cmocka_unit_test(test_add_remove_validate),
        cmocka_unit_test(test_has_matches_every_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
