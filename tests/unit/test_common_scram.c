/* SPDX-License-Identifier: Apache-2.0 */
/* SCRAM: RFC 7677's SCRAM-SHA-256 example on both sides, wrong
 * passwords, a replayed final message, unknown users, SHA-512, and
 * malformed messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/scram.h"

/* RFC 7677 section 3 */
#define RFC_CFIRST "n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
#define RFC_SNONCE "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
#define RFC_SFIRST                                                             \
    "r=rOprNGfwEbeRWgbNEkqO" RFC_SNONCE ",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
#define RFC_CFINAL                                                             \
    "c=biws,r=rOprNGfwEbeRWgbNEkqO" RFC_SNONCE                                 \
    ",p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
#define RFC_SFINAL "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="

static const uint8_t rfc_salt[] = {0x5b, 0x6d, 0x99, 0x68, 0x9d, 0x12,
                                   0x35, 0x8e, 0xec, 0xa0, 0x4b, 0x14,
                                   0x12, 0x36, 0xfa, 0x81};

struct users {
    const char *name;
    struct scram_cred cred;
};

static bool lookup(void *arg,
                   enum scram_mech mech,
                   const char *user,
                   struct scram_cred *out)
{
    struct users *u = arg;

    if (strcmp(user, u->name) != 0 || u->cred.mech != mech) {
        return false;
    }
    *out = u->cred;
    return true;
}

static void rfc_user(struct users *u)
{
    struct err_detail ed;

    u->name = "user";
    assert_int_equal(scram_cred_make(SCRAM_SHA_256, "pencil", rfc_salt,
                                     sizeof(rfc_salt), 4096, &u->cred, &ed),
                     0);
}

static void test_rfc7677_client(void **state)
{
    struct scram_client c;
    struct err_detail ed;
    char out[SCRAM_MAX_MESSAGE];

    (void)state;
    assert_int_equal(scram_client_first(&c, SCRAM_SHA_256, "user",
                                        "rOprNGfwEbeRWgbNEkqO", out,
                                        sizeof(out), &ed),
                     0);
    assert_string_equal(out, RFC_CFIRST);
    assert_int_equal(scram_client_final(&c, "pencil", RFC_SFIRST,
                                        strlen(RFC_SFIRST), out, sizeof(out),
                                        &ed),
                     0);
    assert_string_equal(out, RFC_CFINAL);
    assert_int_equal(
        scram_client_verify(&c, RFC_SFINAL, strlen(RFC_SFINAL), &ed), 0);
    /* a server that does not know the password cannot sign */
    assert_int_equal(scram_client_verify(&c, "v=AAAA", 6, &ed),
                     WEIR_EINVALID_ARGUMENT);
}

static void test_rfc7677_server(void **state)
{
    struct scram_server s;
    struct users u;
    struct err_detail ed;
    char out[SCRAM_MAX_MESSAGE];

    (void)state;
    rfc_user(&u);
    scram_server_init(&s, SCRAM_SHA_256);
    s.fixed_nonce = RFC_SNONCE;
    assert_int_equal(scram_server_first(&s, RFC_CFIRST, strlen(RFC_CFIRST),
                                        lookup, &u, out, sizeof(out), &ed),
                     0);
    assert_string_equal(out, RFC_SFIRST);
    assert_int_equal(scram_server_final(&s, RFC_CFINAL, strlen(RFC_CFINAL), out,
                                        sizeof(out), &ed),
                     0);
    assert_string_equal(out, RFC_SFINAL);
    assert_int_equal(s.state, SCRAM_SERVER_DONE);
    assert_string_equal(s.user, "user");
}

/* One whole exchange; returns the server's final result. */
static int exchange(struct users *u,
                    enum scram_mech mech,
                    const char *user,
                    const char *password,
                    char *final_out,
                    size_t final_cap)
{
    struct scram_client c;
    struct scram_server s;
    struct err_detail ed;
    char m1[SCRAM_MAX_MESSAGE];
    char m2[SCRAM_MAX_MESSAGE];
    char m3[SCRAM_MAX_MESSAGE];
    char m4[SCRAM_MAX_MESSAGE];
    int rv;

    assert_int_equal(
        scram_client_first(&c, mech, user, NULL, m1, sizeof(m1), &ed), 0);
    scram_server_init(&s, mech);
    assert_int_equal(
        scram_server_first(&s, m1, strlen(m1), lookup, u, m2, sizeof(m2), &ed),
        0);
    assert_int_equal(
        scram_client_final(&c, password, m2, strlen(m2), m3, sizeof(m3), &ed),
        0);
    if (final_out != NULL) {
        (void)snprintf(final_out, final_cap, "%s", m3);
    }
    rv = scram_server_final(&s, m3, strlen(m3), m4, sizeof(m4), &ed);
    if (rv == 0) {
        assert_int_equal(scram_client_verify(&c, m4, strlen(m4), &ed), 0);
    } else {
        assert_int_equal(s.state, SCRAM_SERVER_FAILED);
        assert_non_null(strstr(ed.msg, "authentication failed"));
    }
    return rv;
}

static void test_passwords(void **state)
{
    struct users u;
    struct err_detail ed;

    (void)state;
    u.name = "alice,=bob"; /* escaped as saslname */
    assert_int_equal(
        scram_cred_make(SCRAM_SHA_512, "s3cret", NULL, 0, 4096, &u.cred, &ed),
        0);
    assert_int_equal(
        exchange(&u, SCRAM_SHA_512, "alice,=bob", "s3cret", NULL, 0), 0);
    assert_int_equal(
        exchange(&u, SCRAM_SHA_512, "alice,=bob", "wrong", NULL, 0),
        WEIR_EINVALID_ARGUMENT);
    /* unknown user and wrong mechanism: the same failure, at the end */
    assert_int_equal(exchange(&u, SCRAM_SHA_512, "carol", "s3cret", NULL, 0),
                     WEIR_EINVALID_ARGUMENT);
    assert_int_equal(
        exchange(&u, SCRAM_SHA_256, "alice,=bob", "s3cret", NULL, 0),
        WEIR_EINVALID_ARGUMENT);
    assert_int_equal(scram_mech_parse("SCRAM-SHA-1"), 0);
    assert_int_equal(scram_mech_parse("SCRAM-SHA-256"), SCRAM_SHA_256);
}

/* A final message captured from one exchange, sent into another: the
 * server nonce differs, so it fails even with the right proof. */
static void test_replayed_final(void **state)
{
    struct users u;
    struct scram_server s;
    struct err_detail ed;
    char captured[SCRAM_MAX_MESSAGE];
    char out[SCRAM_MAX_MESSAGE];
    const char *first = "n,,n=user,r=abcdef";

    (void)state;
    rfc_user(&u);
    assert_int_equal(exchange(&u, SCRAM_SHA_256, "user", "pencil", captured,
                              sizeof(captured)),
                     0);
    scram_server_init(&s, SCRAM_SHA_256);
    assert_int_equal(scram_server_first(&s, first, strlen(first), lookup, &u,
                                        out, sizeof(out), &ed),
                     0);
    assert_int_equal(scram_server_final(&s, captured, strlen(captured), out,
                                        sizeof(out), &ed),
                     WEIR_EINVALID_ARGUMENT);
    /* and the RFC's own final, replayed against a fresh server nonce */
    scram_server_init(&s, SCRAM_SHA_256);
    assert_int_equal(scram_server_first(&s, RFC_CFIRST, strlen(RFC_CFIRST),
                                        lookup, &u, out, sizeof(out), &ed),
                     0);
    assert_int_equal(scram_server_final(&s, RFC_CFINAL, strlen(RFC_CFINAL), out,
                                        sizeof(out), &ed),
                     WEIR_EINVALID_ARGUMENT);
}

/* A server for RFC 7677's user (server nonce fixed if given) that has
 * taken msg as the client's first message; returns that step's result. */
static int
rfc_server_first(struct scram_server *s, const char *nonce, const char *msg)
{
    struct users u;
    struct err_detail ed;
    char out[SCRAM_MAX_MESSAGE];

    rfc_user(&u);
    scram_server_init(s, SCRAM_SHA_256);
    s->fixed_nonce = nonce;
    return scram_server_first(s, msg, strlen(msg), lookup, &u, out, sizeof(out),
                              &ed);
}

static int server_first_rv(const char *msg)
{
    struct scram_server s;

    return rfc_server_first(&s, NULL, msg);
}

static int server_final_rv(const char *final)
{
    struct scram_server s;
    struct err_detail ed;
    char out[SCRAM_MAX_MESSAGE];

    assert_int_equal(rfc_server_first(&s, RFC_SNONCE, RFC_CFIRST), 0);
    return scram_server_final(&s, final, strlen(final), out, sizeof(out), &ed);
}

static void test_malformed(void **state)
{
    static const char *bad_first[] = {
        "",
        "p=tls-unique,,n=user,r=x", /* channel binding */
        "n,a=admin,n=user,r=x",     /* authorization identity */
        "n,,r=x,n=user",            /* order */
        "n,,n=us=2Xer,r=x",         /* bad escape */
        "n,,n=,r=x",                /* empty name */
        "n,,n=user",                /* no nonce */
        "n,,n=user,r=a,b",          /* junk */
        "n,,n=user,r=x,m=ext",      /* mandatory extension */
        "n,,n=user,r=x,",           /* trailing comma */
    };
    static const char *bad_final[] = {
        "",
        "r=rOprNGfwEbeRWgbNEkqO" RFC_SNONCE ",p=AAAA",
        "c=bad,r=rOprNGfwEbeRWgbNEkqO" RFC_SNONCE ",p=AAAA",
        "c=biws,r=rOprNGfwEbeRWgbNEkqO" RFC_SNONCE,
        "c=biws,r=rOprNGfwEbeRWgbNEkqO" RFC_SNONCE ",p=!!!!",
        "c=biws,r=rOprNGfwEbeRWgbNEkqO" RFC_SNONCE ",p=AAAA",
        "c=biws,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=,r=x",
    };
    char big[SCRAM_MAX_MESSAGE + 10];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad_first) / sizeof(bad_first[0]); i++) {
        assert_int_equal(server_first_rv(bad_first[i]), WEIR_EMALFORMED);
    }
    for (i = 0; i < sizeof(bad_final) / sizeof(bad_final[0]); i++) {
        assert_int_equal(server_final_rv(bad_final[i]), WEIR_EMALFORMED);
    }
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    memcpy(big, "n,,n=u,r=", 9);
    assert_int_equal(server_first_rv(big), WEIR_EMALFORMED);
}

/* The client refuses a server that dropped its nonce or asks for too few
 * iterations. */
static void test_client_checks_server(void **state)
{
    struct scram_client c;
    struct err_detail ed;
    char out[SCRAM_MAX_MESSAGE];
    static const char *bad[] = {
        "r=other" RFC_SNONCE ",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
        "r=rOprNGfwEbeRWgbNEkqO" RFC_SNONCE ",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=1",
        "r=rOprNGfwEbeRWgbNEkqO,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
        "r=rOprNGfwEbeRWgbNEkqO" RFC_SNONCE ",s=!,i=4096",
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(scram_client_first(&c, SCRAM_SHA_256, "user",
                                            "rOprNGfwEbeRWgbNEkqO", out,
                                            sizeof(out), &ed),
                         0);
        assert_int_equal(scram_client_final(&c, "pencil", bad[i],
                                            strlen(bad[i]), out, sizeof(out),
                                            &ed),
                         WEIR_EMALFORMED);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc7677_client),
        cmocka_unit_test(test_rfc7677_server),
        cmocka_unit_test(test_passwords),
        cmocka_unit_test(test_replayed_final),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_client_checks_server),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
