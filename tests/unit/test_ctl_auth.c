/* SPDX-License-Identifier: Apache-2.0 */
/* Controller core, users and ACLs: UPSERT_USER and DELETE_USER emit one
 * USER_SCRAM / REMOVE_USER_SCRAM record, ADD_ACL and REMOVE_ACL one ACL /
 * REMOVE_ACL; bad requests are refused naming the field, with no record;
 * a rule added twice is one rule; the records own their bytes; replay and
 * restart rebuild the same users and rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/mem.h"
#include "tests/unit/test_ctl_fixture.h"

static void make_cred(struct scram_cred *c,
                      enum scram_mech mech,
                      uint32_t iterations,
                      uint8_t fill)
{
    memset(c, 0, sizeof(*c));
    c->mech = mech;
    c->iterations = iterations;
    c->salt_len = 12;
    memset(c->salt, fill, c->salt_len);
    memset(c->stored_key, fill + 1, sizeof(c->stored_key));
    memset(c->server_key, fill + 2, sizeof(c->server_key));
}

static int
upsert(struct ctl_fixture *f, const char *name, const struct scram_cred *cred)
{
    struct ctl_event ev = {.type = CTL_EV_UPSERT_USER};

    ev.u.user.name = name;
    ev.u.user.cred = cred;
    return fx_step(f, &ev);
}

static int
delete_user(struct ctl_fixture *f, const char *name, enum scram_mech mech)
{
    struct ctl_event ev = {.type = CTL_EV_DELETE_USER};

    ev.u.user_del.name = name;
    ev.u.user_del.mech = mech;
    return fx_step(f, &ev);
}

static int acl_step(struct ctl_fixture *f,
                    enum ctl_event_type type,
                    const struct acl_rule *r)
{
    struct ctl_event ev = {.type = type};

    ev.u.acl.rule = r;
    return fx_step(f, &ev);
}

static struct acl_rule rule(const char *principal,
                            enum acl_resource res,
                            enum acl_pattern pattern,
                            const char *name,
                            enum acl_op op,
                            enum acl_perm perm)
{
    struct acl_rule r;

    memset(&r, 0, sizeof(r));
    (void)snprintf(r.principal, sizeof(r.principal), "%s", principal);
    (void)snprintf(r.name, sizeof(r.name), "%s", name);
    r.resource = res;
    r.pattern = pattern;
    r.op = op;
    r.perm = perm;
    return r;
}

/* Refused with code, the detail naming `field`, and no record. */
static void
expect_refused(struct ctl_fixture *f, int rv, int code, const char *field)
{
    assert_int_equal(rv, code);
    assert_int_equal(f->out.n_records, 0);
    if (strstr(f->out.detail.msg, field) == NULL) {
        fail_msg("refusal \"%s\" does not name %s", f->out.detail.msg, field);
    }
}

static void test_upsert_user_emits_and_replaces(void **state)
{
    struct ctl_fixture *f = *state;
    const struct meta_user_scram *u;
    const struct meta_user *img_user;
    struct scram_cred cred;
    char name[] = "alice";

    make_cred(&cred, SCRAM_SHA_256, 4096, 0x10);
    assert_int_equal(upsert(f, name, &cred), 0);
    assert_int_equal(f->out.n_records, 1);
    assert_int_equal(fx_count(f, META_RECORD_USER_SCRAM), 1);
    u = &f->out.records[0].u.user;
    /* the record owns its bytes: the event's buffers may go */
    name[0] = 'X';
    memset(&cred, 0, sizeof(cred));
    assert_int_equal(u->name.len, 5);
    assert_memory_equal(u->name.ptr, "alice", 5);
    assert_int_equal(u->mechanism, SCRAM_SHA_256);
    assert_int_equal(u->iterations, 4096);
    assert_int_equal(u->salt.len, 12);
    assert_int_equal(u->salt.ptr[11], 0x10);
    assert_int_equal(u->stored_key.len, 32);
    assert_int_equal(u->stored_key.ptr[31], 0x11);
    assert_int_equal(u->server_key.len, 32);
    assert_int_equal(u->server_key.ptr[0], 0x12);
    img_user = meta_image_user(fx_image(f), "alice", SCRAM_SHA_256);
    assert_non_null(img_user);
    assert_int_equal(img_user->cred.stored_key[0], 0x11);
    /* a second mechanism, then a replacement of the first */
    make_cred(&cred, SCRAM_SHA_512, 8192, 0x20);
    assert_int_equal(upsert(f, "alice", &cred), 0);
    assert_int_equal(f->out.records[0].u.user.stored_key.len, 64);
    make_cred(&cred, SCRAM_SHA_256, 10000, 0x30);
    assert_int_equal(upsert(f, "alice", &cred), 0);
    assert_int_equal(fx_count(f, META_RECORD_USER_SCRAM), 1);
    assert_int_equal(meta_image_user_count(fx_image(f)), 2);
    img_user = meta_image_user(fx_image(f), "alice", SCRAM_SHA_256);
    assert_int_equal(img_user->cred.iterations, 10000);
    assert_int_equal(img_user->cred.salt[0], 0x30);
    fx_assert_replay_equal(f);
    fx_restart(f);
    img_user = meta_image_user(fx_image(f), "alice", SCRAM_SHA_512);
    assert_non_null(img_user);
    assert_int_equal(img_user->cred.iterations, 8192);
}

static void test_upsert_user_refusals_name_the_field(void **state)
{
    struct ctl_fixture *f = *state;
    char long_name[SCRAM_MAX_USER + 2];
    struct scram_cred cred;

    memset(long_name, 'u', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    make_cred(&cred, SCRAM_SHA_256, 4096, 1);
    expect_refused(f, upsert(f, NULL, &cred), WEIR_EINVALID_ARGUMENT, "name");
    expect_refused(f, upsert(f, "a", NULL), WEIR_EINVALID_ARGUMENT,
                   "credential");
    expect_refused(f, upsert(f, "", &cred), WEIR_EINVALID_ARGUMENT,
                   "user name");
    expect_refused(f, upsert(f, "a,b", &cred), WEIR_EINVALID_ARGUMENT,
                   "user name");
    expect_refused(f, upsert(f, "a=b", &cred), WEIR_EINVALID_ARGUMENT,
                   "user name");
    expect_refused(f, upsert(f, "a b", &cred), WEIR_EINVALID_ARGUMENT,
                   "user name");
    expect_refused(f, upsert(f, long_name, &cred), WEIR_EINVALID_ARGUMENT,
                   "user name");
    long_name[SCRAM_MAX_USER] = '\0';
    assert_int_equal(upsert(f, long_name, &cred), 0);
    cred.mech = (enum scram_mech)3;
    expect_refused(f, upsert(f, "a", &cred), WEIR_EINVALID_ARGUMENT,
                   "mechanism");
    cred.mech = (enum scram_mech)(256 + SCRAM_SHA_256); /* no wrap to 1 */
    expect_refused(f, upsert(f, "a", &cred), WEIR_EINVALID_ARGUMENT,
                   "mechanism");
    make_cred(&cred, SCRAM_SHA_256, SCRAM_MIN_ITER - 1, 1);
    expect_refused(f, upsert(f, "a", &cred), WEIR_EINVALID_ARGUMENT,
                   "iterations");
    cred.iterations = SCRAM_MAX_ITER + 1;
    expect_refused(f, upsert(f, "a", &cred), WEIR_EINVALID_ARGUMENT,
                   "iterations");
    make_cred(&cred, SCRAM_SHA_512, 4096, 1);
    cred.salt_len = 0;
    expect_refused(f, upsert(f, "a", &cred), WEIR_EINVALID_ARGUMENT, "salt");
    cred.salt_len = SCRAM_MAX_SALT + 1;
    expect_refused(f, upsert(f, "a", &cred), WEIR_EINVALID_ARGUMENT, "salt");
    assert_int_equal(meta_image_user_count(fx_image(f)), 1);
    fx_assert_replay_equal(f);
}

static void test_delete_user(void **state)
{
    struct ctl_fixture *f = *state;
    struct scram_cred cred;

    expect_refused(f, delete_user(f, "bob", SCRAM_SHA_256), WEIR_ENOT_FOUND,
                   "user bob has no SCRAM-SHA-256 credential");
    make_cred(&cred, SCRAM_SHA_256, 4096, 1);
    assert_int_equal(upsert(f, "bob", &cred), 0);
    cred.mech = SCRAM_SHA_512;
    assert_int_equal(upsert(f, "bob", &cred), 0);
    expect_refused(f, delete_user(f, NULL, SCRAM_SHA_256),
                   WEIR_EINVALID_ARGUMENT, "name");
    expect_refused(f, delete_user(f, "b,ob", SCRAM_SHA_256),
                   WEIR_EINVALID_ARGUMENT, "user name");
    expect_refused(f, delete_user(f, "bob", (enum scram_mech)0),
                   WEIR_EINVALID_ARGUMENT, "mechanism");
    assert_int_equal(delete_user(f, "bob", SCRAM_SHA_256), 0);
    assert_int_equal(f->out.n_records, 1);
    assert_int_equal(f->out.records[0].type, META_RECORD_REMOVE_USER_SCRAM);
    assert_memory_equal(f->out.records[0].u.user_ref.name.ptr, "bob", 3);
    assert_int_equal(f->out.records[0].u.user_ref.mechanism, SCRAM_SHA_256);
    assert_null(meta_image_user(fx_image(f), "bob", SCRAM_SHA_256));
    assert_non_null(meta_image_user(fx_image(f), "bob", SCRAM_SHA_512));
    expect_refused(f, delete_user(f, "bob", SCRAM_SHA_256), WEIR_ENOT_FOUND,
                   "user bob has no SCRAM-SHA-256 credential");
    fx_assert_replay_equal(f);
    fx_restart(f);
    assert_int_equal(meta_image_user_count(fx_image(f)), 1);
}

static void test_add_acl_is_idempotent(void **state)
{
    struct ctl_fixture *f = *state;
    struct acl_rule r = rule("CN=app,O=weir", ACL_TOPIC, ACL_PREFIXED,
                             "orders.", ACL_WRITE, ACL_ALLOW);
    const struct meta_acl *a;

    assert_int_equal(acl_step(f, CTL_EV_ADD_ACL, &r), 0);
    assert_int_equal(f->out.n_records, 1);
    assert_int_equal(f->out.records[0].type, META_RECORD_ACL);
    a = &f->out.records[0].u.acl;
    assert_int_equal(a->principal.len, strlen("CN=app,O=weir"));
    assert_memory_equal(a->principal.ptr, "CN=app,O=weir", a->principal.len);
    assert_int_equal(a->resource, ACL_TOPIC);
    assert_int_equal(a->pattern, ACL_PREFIXED);
    assert_memory_equal(a->name.ptr, "orders.", 7);
    assert_int_equal(a->op, ACL_WRITE);
    assert_int_equal(a->perm, ACL_ALLOW);
    assert_true(acl_allowed(meta_image_acls(fx_image(f)), NULL, 0,
                            "CN=app,O=weir", ACL_TOPIC, "orders.eu",
                            ACL_WRITE));
    /* the same rule again: nothing to do, and not an error */
    assert_int_equal(acl_step(f, CTL_EV_ADD_ACL, &r), 0);
    assert_int_equal(f->out.n_records, 0);
    assert_int_equal(meta_image_acls(fx_image(f))->n, 1);
    /* one field apart is another rule */
    r.perm = ACL_DENY;
    assert_int_equal(acl_step(f, CTL_EV_ADD_ACL, &r), 0);
    assert_int_equal(f->out.n_records, 1);
    r = rule("User:broker", ACL_CLUSTER, ACL_LITERAL, "", ACL_ALL, ACL_ALLOW);
    assert_int_equal(acl_step(f, CTL_EV_ADD_ACL, &r), 0);
    assert_int_equal(meta_image_acls(fx_image(f))->n, 3);
    fx_assert_replay_equal(f);
    fx_restart(f);
    assert_int_equal(meta_image_acls(fx_image(f))->n, 3);
}

static void test_bad_acl_rules_are_refused(void **state)
{
    struct ctl_fixture *f = *state;
    struct acl_rule r;

    expect_refused(f, acl_step(f, CTL_EV_ADD_ACL, NULL), WEIR_EINVALID_ARGUMENT,
                   "rule");
    r = rule("User:a", ACL_CLUSTER, ACL_LITERAL, "kafka-cluster", ACL_ALL,
             ACL_ALLOW);
    expect_refused(f, acl_step(f, CTL_EV_ADD_ACL, &r), WEIR_EINVALID_ARGUMENT,
                   "cluster ACL name");
    r = rule("User:a", ACL_CLUSTER, ACL_PREFIXED, "", ACL_ALL, ACL_ALLOW);
    expect_refused(f, acl_step(f, CTL_EV_ADD_ACL, &r), WEIR_EINVALID_ARGUMENT,
                   "literal");
    r = rule("", ACL_TOPIC, ACL_LITERAL, "t", ACL_READ, ACL_ALLOW);
    expect_refused(f, acl_step(f, CTL_EV_ADD_ACL, &r), WEIR_EINVALID_ARGUMENT,
                   "principal");
    r = rule("User:a", ACL_TOPIC, ACL_LITERAL, "", ACL_READ, ACL_ALLOW);
    expect_refused(f, acl_step(f, CTL_EV_ADD_ACL, &r), WEIR_EINVALID_ARGUMENT,
                   "resource name");
    r = rule("User:a", (enum acl_resource)9, ACL_LITERAL, "t", ACL_READ,
             ACL_ALLOW);
    expect_refused(f, acl_step(f, CTL_EV_ADD_ACL, &r), WEIR_EINVALID_ARGUMENT,
                   "resource type");
    r = rule("User:a", ACL_TOPIC, ACL_LITERAL, "t", (enum acl_op)(256 + 1),
             ACL_ALLOW);
    expect_refused(f, acl_step(f, CTL_EV_ADD_ACL, &r), WEIR_EINVALID_ARGUMENT,
                   "operation");
    r = rule("User:a", ACL_TOPIC, ACL_LITERAL, "t", ACL_READ, (enum acl_perm)0);
    expect_refused(f, acl_step(f, CTL_EV_REMOVE_ACL, &r),
                   WEIR_EINVALID_ARGUMENT, "permission");
    r = rule("User:a", ACL_TOPIC, ACL_LITERAL, "t", ACL_READ, ACL_ALLOW);
    memset(r.principal, 'p', sizeof(r.principal)); /* no terminator */
    expect_refused(f, acl_step(f, CTL_EV_ADD_ACL, &r), WEIR_EINVALID_ARGUMENT,
                   "terminated");
    assert_int_equal(meta_image_acls(fx_image(f))->n, 0);
}

static void test_remove_acl(void **state)
{
    struct ctl_fixture *f = *state;
    struct acl_rule r =
        rule("User:a", ACL_GROUP, ACL_LITERAL, "g 1", ACL_READ, ACL_ALLOW);
    struct acl_rule keep =
        rule("*", ACL_TOPIC, ACL_LITERAL, "*", ACL_DESCRIBE, ACL_ALLOW);

    expect_refused(f, acl_step(f, CTL_EV_REMOVE_ACL, &r), WEIR_ENOT_FOUND,
                   "no such ACL");
    assert_int_equal(acl_step(f, CTL_EV_ADD_ACL, &r), 0);
    assert_int_equal(acl_step(f, CTL_EV_ADD_ACL, &keep), 0);
    assert_int_equal(acl_step(f, CTL_EV_REMOVE_ACL, &r), 0);
    assert_int_equal(f->out.n_records, 1);
    assert_int_equal(f->out.records[0].type, META_RECORD_REMOVE_ACL);
    assert_memory_equal(f->out.records[0].u.acl.name.ptr, "g 1", 3);
    assert_int_equal(meta_image_acls(fx_image(f))->n, 1);
    assert_false(acl_has(meta_image_acls(fx_image(f)), &r));
    assert_true(acl_has(meta_image_acls(fx_image(f)), &keep));
    expect_refused(f, acl_step(f, CTL_EV_REMOVE_ACL, &r), WEIR_ENOT_FOUND,
                   "no such ACL");
    fx_assert_replay_equal(f);
}

/* Out of memory in a one-record step: the step fails with ENOMEM, the
 * image is unchanged and the core is not failed, so a retry works. */
static void test_failed_allocations_leave_the_core_usable(void **state)
{
    struct ctl_fixture *f = *state;
    struct acl_rule r =
        rule("User:a", ACL_TOPIC, ACL_LITERAL, "t", ACL_READ, ACL_ALLOW);
    struct ctl_event events[3];
    struct scram_cred cred;
    unsigned long k;
    size_t i;
    int rv;

    make_cred(&cred, SCRAM_SHA_512, 4096, 7);
    memset(events, 0, sizeof(events));
    events[0].type = CTL_EV_UPSERT_USER;
    events[0].u.user.name = "carol";
    events[0].u.user.cred = &cred;
    events[1].type = CTL_EV_ADD_ACL;
    events[1].u.acl.rule = &r;
    events[2].type = CTL_EV_REMOVE_ACL;
    events[2].u.acl.rule = &r;
    for (i = 0; i < 3; i++) {
        int64_t end = meta_image_end_offset(fx_image(f));
        for (k = 1;; k++) {
            mem_fault_set(k, 0);
            rv = ctl_core_step(f->core, &events[i], &f->out);
            mem_fault_set(0, 0);
            if (rv == 0) {
                break;
            }
            assert_int_equal(rv, WEIR_ENOMEM);
            assert_false(ctl_core_failed(f->core));
            assert_int_equal(meta_image_end_offset(fx_image(f)), end);
        }
        assert_int_equal(f->out.result, 0);
        assert_int_equal(f->out.n_records, 1);
        assert_int_equal(meta_image_end_offset(fx_image(f)), end + 1);
    }
    assert_non_null(meta_image_user(fx_image(f), "carol", SCRAM_SHA_512));
    assert_int_equal(meta_image_acls(fx_image(f))->n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_upsert_user_emits_and_replaces,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(
            test_upsert_user_refusals_name_the_field, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_delete_user, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(test_add_acl_is_idempotent, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(test_bad_acl_rules_are_refused,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_remove_acl, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(
            test_failed_allocations_leave_the_core_usable, fx_setup,
            fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
