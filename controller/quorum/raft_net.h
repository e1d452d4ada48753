/* SPDX-License-Identifier: Apache-2.0 */
/* The quorum's transport over libevent: one outbound connection to each
 * other voter (connected with bounded, jittered backoff, reconnected when
 * it fails) with a bounded queue of encoded frames in front of it, and the
 * receive side the controller's RPC server feeds with the RaftMessage
 * frames it gets. Messages are one-way and may be lost (Raft retries):
 * a full queue drops its oldest frame and counts it. A received message
 * reaches the callback only when it decodes strictly, names this cluster,
 * comes from another voter of the set and is addressed to this member.
 * With a TLS context the links are mutual TLS: each member dials with
 * TLS, checks the peer's certificate and its voter address, presents its
 * own, and takes raft messages only from connections whose client
 * certificate verified (docs/controller.md, "Quorum wire").
 * Locality: the event loop thread. */
#ifndef CONTROLLER_QUORUM_RAFT_NET_H
#define CONTROLLER_QUORUM_RAFT_NET_H

#include <stdbool.h>
#include <stdint.h>

#include "common/clock.h"
#include "common/err.h"
#include "common/net/srv.h"
#include "controller/quorum/raft.h"
#include "controller/quorum/raft_voters.h"
#include "proto/weir.pb-c.h"

struct event_base;
struct ssl_ctx_st;
struct raft_net; /* opaque */

/* An established connection to voter id closed (or failed). */
typedef void (*raft_net_lost_fn)(void *arg, uint32_t id);

struct raft_net_config {
    uint32_t id;                      /* this member: one of voters */
    const struct raft_voters *voters; /* copied */
    const char *cluster_id;           /* copied; 1..64 bytes */
    const struct clock *clock;        /* last contact; borrowed */
    uint32_t queue_max;               /* frames per peer; 0: 256 */
    uint32_t max_frame_bytes;         /* bigger messages are dropped (the
                                         peers' max-frame-bytes); 0: 8 MiB */
    uint32_t backoff_min_ms;          /* first retry after; 0: 50 */
    uint32_t backoff_max_ms;          /* doubling stops here; 0: 2000 */
    uint32_t connect_timeout_ms;      /* 0: 3000 */
    uint64_t seed;                    /* backoff jitter */
    raft_net_lost_fn lost;            /* NULL: not told; called with the
                                         arg given to raft_net_open */
    struct ssl_ctx_st *tls;           /* NULL: plain TCP; else a client
                                         context (tls_client_ctx, with a
                                         certificate; borrowed, outlives the
                                         transport): dial with TLS and take
                                         messages only from connections with
                                         a verified client certificate */
};

/* A decoded message; m and its bytes are valid during the call only. */
typedef void (*raft_net_recv_fn)(void *arg, const struct raft_msg *m);

/* Start connecting to every other voter. *out owns the transport.
 * Errors: WEIR_EINVALID_ARGUMENT (id not a voter, bad cluster id),
 * WEIR_ENOMEM. */
WEIR_MUST_CHECK int raft_net_open(struct event_base *base,
                                  const struct raft_net_config *cfg,
                                  raft_net_recv_fn fn,
                                  void *arg,
                                  struct raft_net **out,
                                  struct err_detail *ed);
/* Close the connections, drop the queues, free. NULL is a no-op. */
void raft_net_close(struct raft_net *n);

/* Encode m (m->from must be this member) and queue it for m->to; it is
 * written once the connection is up. Errors: WEIR_EINVALID_ARGUMENT (not
 * a peer, a message the codec refuses), WEIR_EFRAME_TOO_LARGE (dropped
 * and counted: bigger than max_frame_bytes), WEIR_ENOMEM. A frame dropped
 * to make room is not an error: it is counted. */
WEIR_MUST_CHECK int raft_net_send(struct raft_net *n, const struct raft_msg *m);

/* The receive hook: one RaftMessage and its frame's payload, from the
 * connection of `peer` ("ip:port", for log lines). Checks it and calls
 * the callback. Errors (logged, message ignored): WEIR_EMALFORMED,
 * WEIR_EINCONSISTENT_CLUSTER_ID, WEIR_EINVALID_ARGUMENT (sender not
 * another voter, or not addressed to this member). */
int raft_net_receive(struct raft_net *n,
                     const Weir__RaftMessage *rm,
                     const uint8_t *payload,
                     uint32_t payload_len,
                     const char *peer);
/* The same as the controller's server hook: r's body is a RaftMessage
 * (decoded by rpc_request_decode from req); finishes req without an
 * answer. arg is the struct raft_net. With TLS, a message from a
 * connection without a verified client certificate is refused (logged,
 * counted in refused_unverified). */
void raft_net_on_request(void *arg,
                         struct srv_req *req,
                         const Weir__Request *r);

struct raft_net_peer_stats {
    uint32_t id;
    bool connected;
    uint64_t sent;            /* frames handed to the socket */
    uint64_t dropped;         /* frames dropped: queue full, too large */
    uint64_t received;        /* messages from it passed to the callback */
    uint64_t refused;         /* messages from it refused */
    uint64_t connects;        /* connections established */
    uint64_t tls_failures;    /* TLS handshakes or sessions that failed */
    uint32_t queued;          /* frames waiting */
    uint64_t last_contact_ms; /* clock time of the last message received
                                 from it; 0: never */
};
/* One row per other voter, in voter order. Returns the count. */
uint32_t raft_net_stats(const struct raft_net *n,
                        struct raft_net_peer_stats *rows,
                        uint32_t cap);

#endif /* CONTROLLER_QUORUM_RAFT_NET_H */
