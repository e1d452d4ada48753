/* SPDX-License-Identifier: Apache-2.0 */
/* Framed RPC server over libevent: a listener and its connections. Reads
 * frames (limits checked from the 8-byte prefix before any allocation),
 * hands each whole request to a handler, and writes responses strictly in
 * request order, so clients may pipeline. A handler may answer later (long
 * polls, group commit); requests behind it wait for their turn.
 * Locality: the event loop thread. */
#ifndef COMMON_NET_SRV_H
#define COMMON_NET_SRV_H

#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"

struct event_base;
struct evbuffer;
struct ssl_ctx_st;
struct srv;
struct srv_conn;

struct srv_config {
    uint32_t max_frame_bytes;
    uint32_t max_header_bytes;
    uint32_t max_connections;        /* beyond this new ones are closed */
    uint32_t max_connections_per_ip; /* per client address */
    uint32_t max_inflight_per_conn;  /* stop reading past this many */
    uint32_t idle_timeout_ms;        /* close after this long unheard */
    uint32_t frame_timeout_ms;       /* a started frame must end by then */
    uint64_t max_output_bytes;       /* responses queued on all connections:
                                        past this, connections with output
                                        pending stop being read; 0 = no limit */
    struct ssl_ctx_st *tls;          /* TLS on every connection (tls_server_ctx;
                                        borrowed, outlives the server); NULL = plain */
    bool require_auth;               /* connections must authenticate (SASL,
                                        or a verified TLS client certificate)
                                        before the handler serves them */
    uint32_t pre_auth_max_frame_bytes; /* frame limit until then */
    void (*auth_free)(void *state);    /* frees srv_req_auth_state's value */
};

/* One request. Owned by the server until srv_req_respond/srv_req_finish;
 * the handler keeps the pointer while it works on it. */
struct srv_req {
    struct srv_conn *conn;    /* NULL once the connection is gone */
    uint32_t seq;             /* position in the connection's order */
    struct weir_slice header; /* protobuf header bytes */
    uint8_t *payload;         /* raw payload (mutable: produce patches it) */
    uint32_t payload_len;
    uint64_t received_us; /* monotonic, for latency */
    const char *peer;     /* "ip:port" of the client */
    bool tls;             /* came over TLS: answer with bytes in memory,
                             not file segments (no sendfile through TLS) */
    void *user;           /* for the handler */
    /* private */
    struct evbuffer *out;
    bool done;
    bool close_after;
    struct srv_req *next;
};

/* Called once per request frame. The handler must eventually call exactly
 * one of srv_req_respond / srv_req_finish for it. */
typedef void (*srv_request_fn)(void *arg, struct srv_req *req);

/* Listen on "host:port" (port 0 = any). *out owns the server.
 * Errors: WEIR_ENETWORK (bind/listen failed: message names the address
 * and the call), WEIR_ENOMEM. */
WEIR_MUST_CHECK int srv_open(struct event_base *base,
                             const char *listen,
                             const struct srv_config *cfg,
                             srv_request_fn on_request,
                             void *arg,
                             struct srv **out,
                             struct err_detail *ed);
/* Connections can carry a tag (an owner id and epoch, say a broker's)
 * set by the handler; fn is called when a tagged connection is lost from
 * the client's side (end of stream or socket error), not when the server
 * closes it (limits, timeouts, bad frames, srv_close). */
typedef void (*srv_lost_fn)(void *arg, int64_t tag_id, int64_t tag_epoch);
void srv_on_lost(struct srv *s, srv_lost_fn fn, void *arg);
/* Tag the request's connection; no-op once the connection is gone. */
void srv_req_tag(struct srv_req *req, int64_t tag_id, int64_t tag_epoch);

/* Stop accepting; existing connections go on. */
void srv_stop_accepting(struct srv *s);
/* Close every connection and free. Requests still held by handlers become
 * orphans (conn == NULL); answering them then just frees them. */
void srv_close(struct srv *s);
/* The bound port (useful with port 0). */
uint16_t srv_port(const struct srv *s);
uint32_t srv_connection_count(const struct srv *s);

/* Queue a response: `frame` (bytes, typically prefix + header) followed by
 * `payload` (moved out of it without copying; may hold file segments for
 * sendfile; may be NULL). Frees the request once it has been written out in
 * order. close_after: close the connection after this response. */
void srv_req_respond(struct srv_req *req,
                     const struct weir_buf *frame,
                     struct evbuffer *payload,
                     bool close_after);
/* Finish without a response (acks=0 produce). */
void srv_req_finish(struct srv_req *req);
/* Who the request's connection is: the principal srv_req_authenticate set,
 * else the TLS client certificate's subject ("CN=..."); "" without either,
 * or once the connection is gone. */
const char *srv_req_principal(const struct srv_req *req);
/* Authentication of the request's connection (false once it is gone):
 * true when the server does not require it, after srv_req_authenticate,
 * or with a verified TLS client certificate. */
bool srv_req_authenticated(const struct srv_req *req);
/* True when the request came over TLS from a client that presented a
 * certificate which verified (false once the connection is gone). */
bool srv_req_peer_verified(const struct srv_req *req);
/* Mark the connection authenticated as principal ("User:alice"), which
 * srv_req_principal returns from now on. No-op once it is gone. */
void srv_req_authenticate(struct srv_req *req, const char *principal);
/* A per-connection slot for the handler's authentication state (freed with
 * cfg.auth_free when the connection closes); NULL once it is gone. */
void **srv_req_auth_state(struct srv_req *req);

/* True when the client has gone and nobody will read an answer. */
static inline bool srv_req_orphaned(const struct srv_req *req)
{
    return req->conn == NULL;
}

#endif /* COMMON_NET_SRV_H */
