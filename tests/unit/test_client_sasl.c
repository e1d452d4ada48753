/* SPDX-License-Identifier: Apache-2.0 */
/* SASL/SCRAM login in libweir connections against the fake broker
 * (which runs the server side of common/scram.h), and the user and ACL
 * admin calls. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "client/weir.h"
#include "common/acl.h"
#include "test_client_fake_broker.h"

static struct fake_broker *fb;
static char bs[64];

static int setup(void **state)
{
    (void)state;
    if (fake_broker_start(0, &fb) != 0) {
        return -1;
    }
    (void)snprintf(bs, sizeof(bs), "127.0.0.1:%u", fake_broker_port(fb));
    if (fake_broker_create_topic(fb, "t", 1) != 0 ||
        fake_broker_add_user(fb, "SCRAM-SHA-256", "alice", "s3cret") != 0 ||
        fake_broker_add_user(fb, "SCRAM-SHA-512", "alice", "other") != 0) {
        return -1;
    }
    fake_broker_require_sasl(fb, true);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fake_broker_stop(fb);
    return 0;
}

static uint64_t now_ms(void)
{
    struct timespec ts;

    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static struct weir_client *
client_as(const char *mech, const char *user, const char *password)
{
    struct weir_client_config cfg;
    struct weir_client *c;
    struct err_detail ed;

    weir_client_config_init(&cfg);
    cfg.bootstrap = bs;
    cfg.request_timeout_ms = 5000;
    cfg.sasl_mechanism = mech;
    cfg.sasl_user = user;
    cfg.sasl_password = password;
    assert_int_equal(weir_client_new(&cfg, &c, &ed), 0);
    return c;
}

/* List topics; returns the error (0) and leaves its message in ed. */
static int list_topics(struct weir_client *c, struct err_detail *ed)
{
    struct weir_topic_list *l = NULL;
    int rv = weir_admin_list_topics(c, false, &l, ed);

    if (rv == 0) {
        assert_int_equal(l->n, 1);
        assert_string_equal(l->names[0], "t");
    }
    weir_topic_list_free(l);
    return rv;
}

static void test_right_password_logs_in(void **state)
{
    struct weir_client *c = client_as(NULL, "alice", "s3cret");
    uint64_t before = fake_broker_logins(fb);
    struct err_detail ed;

    (void)state;
    assert_int_equal(list_topics(c, &ed), 0);
    assert_int_equal(list_topics(c, &ed), 0); /* same connection */
    assert_int_equal(fake_broker_logins(fb), before + 1);
    weir_client_free(c);

    c = client_as("SCRAM-SHA-512", "alice", "other");
    assert_int_equal(list_topics(c, &ed), 0);
    weir_client_free(c);
}

static void test_wrong_password_fails(void **state)
{
    struct weir_client *c = client_as("SCRAM-SHA-256", "alice", "wrong");
    struct err_detail ed;
    uint64_t t0 = now_ms();
    int rv;

    (void)state;
    rv = list_topics(c, &ed);
    assert_int_equal(rv, WEIR_ESASL_AUTHENTICATION_FAILED);
    assert_int_equal(ed.code, WEIR_ESASL_AUTHENTICATION_FAILED);
    assert_non_null(strstr(ed.msg, "authentication failed"));
    assert_non_null(strstr(ed.msg, "alice"));
    assert_non_null(strstr(ed.msg, bs));
    assert_true(now_ms() - t0 < 3000); /* no retry loop */
    /* the next call fails the same way */
    assert_int_equal(list_topics(c, &ed), WEIR_ESASL_AUTHENTICATION_FAILED);
    weir_client_free(c);

    c = client_as(NULL, "mallory", "s3cret"); /* unknown user */
    assert_int_equal(list_topics(c, &ed), WEIR_ESASL_AUTHENTICATION_FAILED);
    assert_non_null(strstr(ed.msg, "authentication failed"));
    weir_client_free(c);
}

static void test_without_login_refused(void **state)
{
    struct weir_client *c = client_as(NULL, NULL, NULL);
    struct err_detail ed;

    (void)state;
    assert_int_equal(list_topics(c, &ed), WEIR_EILLEGAL_SASL_STATE);
    weir_client_free(c);
}

static void test_bad_config(void **state)
{
    struct weir_client_config cfg;
    struct weir_client *c;
    struct err_detail ed;

    (void)state;
    weir_client_config_init(&cfg);
    cfg.bootstrap = bs;
    cfg.sasl_user = "alice";
    cfg.sasl_password = "x";
    cfg.sasl_mechanism = "PLAIN";
    assert_int_equal(weir_client_new(&cfg, &c, &ed), WEIR_EINVALID_ARGUMENT);
    cfg.sasl_mechanism = NULL;
    cfg.sasl_password = NULL;
    assert_int_equal(weir_client_new(&cfg, &c, &ed), WEIR_EINVALID_ARGUMENT);
}

static void test_user_admin_then_login(void **state)
{
    struct weir_client *admin = client_as(NULL, "alice", "s3cret");
    struct weir_client *c;
    struct weir_user_list *l;
    struct err_detail ed;
    size_t i;
    bool found = false;

    (void)state;
    assert_int_equal(weir_admin_user_upsert(admin, "bob", "SCRAM-SHA-512", 8192,
                                            "hunter2", &ed),
                     0);
    assert_int_equal(weir_admin_user_list(admin, &l, &ed), 0);
    for (i = 0; i < l->n; i++) {
        if (strcmp(l->users[i].name, "bob") == 0) {
            found = true;
            assert_string_equal(l->users[i].mechanism, "SCRAM-SHA-512");
            assert_int_equal(l->users[i].iterations, 8192);
        }
    }
    assert_true(found);
    weir_user_list_free(l);

    /* the credential computed by the client logs bob in */
    c = client_as("SCRAM-SHA-512", "bob", "hunter2");
    assert_int_equal(list_topics(c, &ed), 0);
    weir_client_free(c);

    assert_int_equal(weir_admin_user_delete(admin, "bob", "SCRAM-SHA-512", &ed),
                     0);
    assert_int_equal(weir_admin_user_delete(admin, "bob", "SCRAM-SHA-512", &ed),
                     WEIR_EINVALID_REQUEST);
    assert_non_null(strstr(ed.msg, "INVALID_REQUEST"));
    assert_int_equal(weir_admin_user_upsert(admin, "bob", "PLAIN", 0, "x", &ed),
                     WEIR_EINVALID_ARGUMENT);
    c = client_as("SCRAM-SHA-512", "bob", "hunter2");
    assert_int_equal(list_topics(c, &ed), WEIR_ESASL_AUTHENTICATION_FAILED);
    weir_client_free(c);
    weir_client_free(admin);
}

static void test_acl_admin(void **state)
{
    struct weir_client *c = client_as(NULL, "alice", "s3cret");
    struct weir_acl_list *l;
    struct err_detail ed;
    struct weir_acl a = {"User:bob", ACL_TOPIC, ACL_PREFIXED,
                         "orders-",  ACL_WRITE, ACL_ALLOW};

    (void)state;
    assert_int_equal(weir_admin_acl_create(c, &a, &ed), 0);
    assert_int_equal(fake_broker_acl_count(fb), 1);
    assert_int_equal(weir_admin_acl_list(c, &l, &ed), 0);
    assert_int_equal(l->n, 1);
    assert_string_equal(l->acls[0].principal, "User:bob");
    assert_string_equal(l->acls[0].name, "orders-");
    assert_int_equal(l->acls[0].resource, ACL_TOPIC);
    assert_int_equal(l->acls[0].pattern, ACL_PREFIXED);
    assert_int_equal(l->acls[0].operation, ACL_WRITE);
    assert_int_equal(l->acls[0].permission, ACL_ALLOW);
    weir_acl_list_free(l);
    assert_int_equal(weir_admin_acl_delete(c, &a, &ed), 0);
    assert_int_equal(fake_broker_acl_count(fb), 0);
    assert_int_equal(weir_admin_acl_delete(c, &a, &ed), WEIR_EINVALID_REQUEST);
    weir_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_right_password_logs_in),
        cmocka_unit_test(test_wrong_password_fails),
        cmocka_unit_test(test_without_login_refused),
        cmocka_unit_test(test_bad_config),
        cmocka_unit_test(test_user_admin_then_login),
        cmocka_unit_test(test_acl_admin),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
