/* SPDX-License-Identifier: Apache-2.0 */
/* The fake broker's SASL/SCRAM login and user/ACL store: the server side
 * of common/scram.h against users kept in memory, optionally required
 * before any other call (a connection that calls anything else first is
 * answered ILLEGAL_SASL_STATE and closed, as the broker does), and
 * AlterUsers, DescribeUsers, CreateAcls, DeleteAcls, DescribeAcls.
 * Locality: the fake broker's thread (under its lock). */
#ifndef TESTS_UNIT_TEST_CLIENT_AUTH_FAKE_H
#define TESTS_UNIT_TEST_CLIENT_AUTH_FAKE_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/weir.pb-c.h"

struct fba;

typedef void fba_send_fn(void *ctx, int ci, const Weir__Response *r);

enum fba_verdict {
    FBA_PASS,  /* not an auth call, and allowed: serve it */
    FBA_DONE,  /* answered */
    FBA_CLOSE, /* answered; close the connection */
};

struct fba *fba_new(void);
void fba_free(struct fba *a);

/* Require a SCRAM login on every new connection. */
void fba_require(struct fba *a, bool on);
/* Add (or replace) a user's credential. Returns 0 or -1. */
int fba_add_user(struct fba *a,
                 const char *mech,
                 const char *user,
                 const char *password);
/* Logins that succeeded / failed so far. */
uint64_t fba_logins(const struct fba *a);
uint64_t fba_failed_logins(const struct fba *a);
/* ACL rules held. */
size_t fba_acl_count(const struct fba *a);

enum fba_verdict fba_handle(
    struct fba *a, int ci, const Weir__Request *q, fba_send_fn *fn, void *ctx);
/* Connection ci closed or was reused: forget its login. */
void fba_conn_closed(struct fba *a, int ci);

#endif /* TESTS_UNIT_TEST_CLIENT_AUTH_FAKE_H */
