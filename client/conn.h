/* SPDX-License-Identifier: Apache-2.0 */
/* One TCP connection to a broker: non-blocking connect, a write buffer of
 * encoded frames, a read buffer that assembles frames, and the FIFO of
 * requests waiting for replies. Replies come back in request order, so a
 * reply is matched to the oldest request that expects one, and its
 * correlation id must agree. The pool (pool.c) owns connections and drives
 * them from poll(); a closed connection stays in the pool until the pool
 * reaps it, so none is freed inside its own callback.
 * Locality: the client's thread. */
#ifndef CLIENT_CONN_H
#define CLIENT_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"
#include "proto/weir.pb-c.h"

struct conn; /* opaque: layout in conn_int.h */
struct ssl_ctx_st;

struct conn_opts {
    const char *client_id; /* borrowed for the connection's life */
    uint32_t connect_timeout_ms;
    uint32_t max_frame_bytes; /* reply frames beyond this close it */
    struct ssl_ctx_st *tls;   /* TLS (tls_client_ctx); NULL = plain */
    /* SASL/SCRAM login right after TCP (and TLS) is up, before any
     * request queued with conn_send is written: "SCRAM-SHA-256" or
     * "SCRAM-SHA-512", NULL = no SASL. All three borrowed. A failed login
     * closes the connection with WEIR_ESASL_AUTHENTICATION_FAILED (or
     * WEIR_EUNSUPPORTED_SASL_MECHANISM); the connect timeout covers it. */
    const char *sasl_mechanism;
    const char *sasl_user;
    const char *sasl_password;
};

/* What a request's callback receives. */
struct conn_reply {
    int err;              /* 0, a transport error, or the envelope's code */
    const char *err_msg;  /* when err != 0 */
    Weir__Response *resp; /* decoded header, or NULL (transport error, or
                             a request that expects no reply); the callback
                             may take it by setting it to NULL */
    struct weir_slice payload; /* valid during the callback only */
};

typedef void conn_reply_fn(void *arg, struct conn_reply *r);

/* Start connecting to host:port (name resolution is synchronous).
 * Success: *out owns the connection (conn_free). Errors: WEIR_ENETWORK
 * (cannot resolve or create a socket), WEIR_ENOMEM. */
WEIR_MUST_CHECK int conn_open(const char *host,
                              uint16_t port,
                              const struct conn_opts *o,
                              uint64_t now_ms,
                              struct conn **out,
                              struct err_detail *ed);
/* Fail pending requests (WEIR_ENETWORK), close, free. NULL is a no-op. */
void conn_free(struct conn *c);

/* Queue a request: c fills in the correlation and client ids, encodes it
 * and copies the payload slices after it. The callback runs exactly once:
 * with the reply, or with an error if the connection fails or the reply
 * does not come within timeout_ms (the connection is then closed, since a
 * late reply would stall the ones behind it). expect_reply false (acks=0
 * produce): the callback runs, with no response, once the bytes are
 * written. On error the callback will not run.
 * Errors: WEIR_ENETWORK (connection closed), WEIR_ENOMEM,
 * WEIR_EFRAME_TOO_LARGE. */
WEIR_MUST_CHECK int conn_send(struct conn *c,
                              Weir__Request *req,
                              const struct weir_slice *payload,
                              size_t n_payload,
                              bool expect_reply,
                              uint32_t timeout_ms,
                              uint64_t now_ms,
                              conn_reply_fn *cb,
                              void *arg,
                              struct err_detail *ed);

int conn_fd(const struct conn *c);
/* poll() events the connection waits for (0 when closed). */
short conn_events(const struct conn *c);
/* Handle poll() results and expired deadlines; callbacks run here. */
void conn_handle(struct conn *c, short revents, uint64_t now_ms);
/* Earliest deadline (connect or reply), UINT64_MAX when none. */
uint64_t conn_next_deadline(const struct conn *c);
/* Close now, failing pending requests with err and msg. */
void conn_close(struct conn *c, int err, const char *msg);

bool conn_is_closed(const struct conn *c);
bool conn_is_up(const struct conn *c);
/* The connect (and login, with SASL) succeeded at some point (a refused
 * connect or a failed login never was up). */
bool conn_was_up(const struct conn *c);
/* Requests sent or queued and not yet answered. */
size_t conn_in_flight(const struct conn *c);
/* Bytes queued and not yet written. */
size_t conn_unwritten(const struct conn *c);
const char *conn_host(const struct conn *c);
uint16_t conn_port(const struct conn *c);
/* "host:port" */
const char *conn_name(const struct conn *c);
/* Why it closed ("" while open). */
const char *conn_close_reason(const struct conn *c);
int conn_close_err(const struct conn *c);
uint64_t conn_closed_ms(const struct conn *c);

#endif /* CLIENT_CONN_H */
