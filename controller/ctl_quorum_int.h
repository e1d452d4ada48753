/* SPDX-License-Identifier: Apache-2.0 */
/* Inside the quorum adapter (ctl_quorum.c, ctl_quorum_open.c). */
#ifndef CONTROLLER_CTL_QUORUM_INT_H
#define CONTROLLER_CTL_QUORUM_INT_H

#include <event2/util.h>

#include "controller/ctl_io.h"
#include "controller/ctl_quorum.h"
#include "controller/quorum/raft.h"
#include "controller/quorum/raft_net.h"

/* a version-0 frame's head: u32be length | u32be CRC (ctl_log.h) */
#define CTL_QUORUM_FRAME_HEAD 8
/* raft_tick at least this often when the core named no time */
#define CTL_QUORUM_TICK_MIN_MS 50

/* An answer built after a proposal, sent once the proposal is applied. */
struct ctl_quorum_reply {
    uint64_t index; /* the last entry proposed before it was built */
    struct srv_req *req;
    uint32_t corr;         /* its correlation id */
    struct weir_buf frame; /* the encoded answer */
    bool close_after;
    struct ctl_quorum_reply *next;
};

struct ctl_quorum {
    struct ctl_server *s; /* borrowed: the server owns the quorum */
    struct raft *raft;
    struct raft_net *net;
    struct ssl_ctx_st *tls; /* members' client context (tls on), or NULL */
    struct meta_image *img; /* the applied image (owned) */
    struct event *tick_ev;  /* raft_tick */
    struct event *ready_ev; /* one ready turn after the current callback */
    uint64_t barrier;       /* last index proposed while leading */
    uint64_t next_tick_ms;  /* from the last ready */
    struct ctl_quorum_reply *replies; /* FIFO, by index */
    struct ctl_quorum_reply **replies_tail;
    struct weir_buf scratch;  /* a proposal's frame */
    struct weir_buf snap_buf; /* the snapshot last handed to the core */
    uint32_t hint_leader;     /* the leader named in NOT_CONTROLLER */
    bool bootstrapped;        /* bootstrap users run once active */
    bool failed;              /* a fatal error: the loop is exiting */
};

void ctl_quorum_schedule(struct ctl_quorum *q);
void ctl_quorum_ready_cb(evutil_socket_t fd, short what, void *arg);
void ctl_quorum_tick_cb(evutil_socket_t fd, short what, void *arg);
void ctl_quorum_recv(void *arg, const struct raft_msg *m);
void ctl_quorum_peer_lost(void *arg, uint32_t id);

#endif /* CONTROLLER_CTL_QUORUM_INT_H */
