/* SPDX-License-Identifier: Apache-2.0 */
/* A broker's connection to the controller: framed protobuf RPC over a
 * libevent bufferevent, pipelined (answers come back in request order).
 * Connects on the first call; when the connection fails or a call passes
 * its deadline, every pending call is answered with WEIR_ENETWORK (or
 * WEIR_EREQUEST_TIMED_OUT) and the next call connects again.
 * Locality: the broker loop thread. */
#ifndef BROKER_CLUSTER_CLUSTER_CONN_H
#define BROKER_CLUSTER_CLUSTER_CONN_H

#include <stdint.h>

#include "common/err.h"
#include "proto/weir.pb-c.h"

struct event_base;
struct cconn;
struct ssl_ctx_st;

/* The answer to one call. err != 0: transport failure or an envelope
 * error (resp may then be NULL; ed says why). resp and payload are
 * borrowed for the duration of the callback. */
typedef void (*cconn_reply_fn)(void *arg,
                               int err,
                               const Weir__Response *resp,
                               const uint8_t *payload,
                               uint32_t payload_len,
                               const struct err_detail *ed);

/* A connection to "host:port" (resolved at each connect). Errors:
 * WEIR_ENOMEM. */
WEIR_MUST_CHECK int
cconn_new(struct event_base *base, const char *address, struct cconn **out);
/* Drop the connection; pending calls are forgotten without callbacks.
 * NULL is a no-op. */
void cconn_free(struct cconn *c);

/* Speak TLS on every later connect (tls_client_ctx; borrowed, must
 * outlive c), checking the address's host against the certificate. */
void cconn_use_tls(struct cconn *c, struct ssl_ctx_st *tls);
/* Log in with SCRAM (mechanism "SCRAM-SHA-256"/"SCRAM-SHA-512") on every
 * later connect, before any call goes out; user NULL = no login. The
 * strings are borrowed and must outlive c. A refused login fails the
 * pending calls with WEIR_ESASL_AUTHENTICATION_FAILED. */
void cconn_use_sasl(struct cconn *c,
                    const char *mechanism,
                    const char *user,
                    const char *password);
/* What the connection learned about its peer: err 0 (an answer other
 * than NOT_CONTROLLER), WEIR_ENOT_CONTROLLER (hint: the active controller
 * the answer named, or NULL), WEIR_ENETWORK (cannot connect, closed,
 * malformed answer) or WEIR_EREQUEST_TIMED_OUT. addr is the address it was
 * about (borrowed for the call). Runs before the calls concerned are
 * answered, and may call cconn_set_address (on any connection). */
typedef void (*cconn_outcome_fn)(void *arg,
                                 const char *addr,
                                 int err,
                                 const Weir__ActiveController *hint);
/* Report every outcome to fn (NULL: none). Not for cconn_reset and
 * cconn_set_address, which report nothing. */
void cconn_on_outcome(struct cconn *c, cconn_outcome_fn fn, void *arg);
/* Talk to address from now on: when it differs from the current one,
 * pending calls fail with WEIR_ENETWORK and the socket closes; calls made
 * before not_before_ms (monotonic; 0: none) fail with WEIR_ENETWORK
 * without connecting. Errors: WEIR_ENOMEM (the address is kept). */
WEIR_MUST_CHECK int
cconn_set_address(struct cconn *c, const char *address, uint64_t not_before_ms);
/* The address calls go to now (borrowed until cconn_set_address). */
const char *cconn_address(const struct cconn *c);

/* Send req (under a correlation id of this connection; req is left as
 * it was) and call fn once with the
 * answer, never from inside this call. timeout_ms bounds the wait.
 * Errors: WEIR_ENOMEM, WEIR_ENETWORK (cannot connect; fn not called). */
WEIR_MUST_CHECK int cconn_call(struct cconn *c,
                               Weir__Request *req,
                               uint32_t timeout_ms,
                               cconn_reply_fn fn,
                               void *arg);
/* Fail every pending call with WEIR_ENETWORK and close the socket (not
 * reported to the outcome function). */
void cconn_reset(struct cconn *c);
/* Calls sent and not answered yet. */
uint32_t cconn_pending(const struct cconn *c);

#endif /* BROKER_CLUSTER_CLUSTER_CONN_H */
