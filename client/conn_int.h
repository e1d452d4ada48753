/* SPDX-License-Identifier: Apache-2.0 */
/* Connection internals shared by conn.c (socket, TLS, request FIFO,
 * frames) and conn_auth.c (the SASL/SCRAM login run in CONN_AUTH).
 * Not part of the client's API: only those two files include it.
 * Locality: the client's thread. */
#ifndef CLIENT_CONN_INT_H
#define CLIENT_CONN_INT_H

#include <openssl/ssl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "client/conn.h"
#include "common/buf.h"

/* CONNECTING: TCP; HANDSHAKE: TLS (when opts.tls); AUTH: SASL login
 * (when opts.sasl_mechanism). */
enum conn_state {
    CONN_CONNECTING,
    CONN_HANDSHAKE,
    CONN_AUTH,
    CONN_UP,
    CONN_CLOSED
};

struct conn_req;  /* a request waiting for its reply: conn.c */
struct conn_auth; /* the login in progress: conn_auth.c */

struct conn {
    int fd;
    SSL *ssl;        /* with opts.tls, from the TCP connect on */
    short hs_events; /* what the TLS handshake waits for */
    enum conn_state state;
    char *host;
    uint16_t port;
    char name[300]; /* "host:port" for messages */
    struct conn_opts opts;
    uint64_t connect_deadline_ms;
    uint32_t next_correlation_id;
    struct weir_buf wbuf; /* encoded frames; [wpos, len) unwritten */
    size_t wpos;
    uint64_t queued_total;  /* bytes ever queued */
    uint64_t written_total; /* bytes ever written */
    struct weir_buf rbuf;   /* received bytes, frames assembled here */
    struct conn_req *head;  /* FIFO, oldest first */
    struct conn_req *tail;
    size_t n_pending;
    struct conn_auth *auth; /* while CONN_AUTH */
    bool was_up;            /* the connect succeeded at some point */
    int close_err;
    uint64_t closed_ms;
    char close_reason[512];
};

/* Write up to len bytes: returns how many (0 when the socket is full),
 * or -1 after closing the connection. Both wbuf and the login's frames
 * go out through here. */
ssize_t conn_send_bytes(struct conn *c, const uint8_t *p, size_t len);

/* "<what> from <broker>[: <detail>]", and close with WEIR_EMALFORMED. */
void conn_protocol_error(struct conn *c, const char *what, const char *detail);

/* The configured SASL user, "" when none. Borrowed from c->opts. */
const char *conn_sasl_user(const struct conn *c);

/* TCP (and TLS) is up and opts.sasl_mechanism is set: enter CONN_AUTH
 * and send the SaslHandshake. On failure c is closed. */
void conn_auth_start(struct conn *c);

/* One reply frame received in CONN_AUTH. May close c, or move it to
 * CONN_UP once the login succeeds. */
void conn_auth_reply(struct conn *c,
                     struct weir_slice header,
                     struct weir_slice p);

/* Login bytes are waiting to be written (CONN_AUTH only). */
bool conn_auth_is_writing(const struct conn *c);

/* Write what the socket takes of the login's pending bytes. */
void conn_auth_write(struct conn *c);

/* Drop the login state, if any (conn_close). */
void conn_auth_free(struct conn *c);

#endif /* CLIENT_CONN_INT_H */
