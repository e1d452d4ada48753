/* SPDX-License-Identifier: Apache-2.0 */
/* The controller quorum as an operator sees it (`weir cluster`): one row
 * per voter with its state, its log end and its lag behind the leader,
 * from the leader's view (raft_peer_status) and its transport's
 * (raft_net_stats). Pure: the caller passes the time; no clock, socket or
 * file call. Also fills the QuorumStatus message from the rows.
 * Locality: any thread (no state). */
#ifndef CONTROLLER_CTL_QUORUM_VIEW_H
#define CONTROLLER_CTL_QUORUM_VIEW_H

#include <stdint.h>

#include "controller/quorum/raft.h"
#include "controller/quorum/raft_net.h"
#include "controller/quorum/raft_voters.h"
#include "proto/weir.pb-c.h"

/* Values are the QuorumVoter.state wire values. */
enum ctl_quorum_state {
    CTL_QUORUM_STATE_LEADER = 1,
    CTL_QUORUM_STATE_FOLLOWER = 2,
    /* no connection to it, or nothing heard from it within the election
     * timeout */
    CTL_QUORUM_STATE_UNREACHABLE = 3,
};

struct ctl_quorum_voter {
    uint32_t id;
    const char *address; /* "host:port", borrowed from the voter set */
    enum ctl_quorum_state state;
    /* the leader's own: its durable log end; a follower's: the last index
     * the leader knows it holds (its match index; 0 before the first
     * answer in this term) */
    uint64_t log_end;
    uint64_t lag; /* the leader's log end minus log_end (0 at least) */
};

/* What the leader knows, gathered by the adapter. */
struct ctl_quorum_view_in {
    uint32_t self; /* the leader: this member */
    uint64_t now_ms;
    uint64_t election_timeout_ms;
    const struct raft_voters *voters;
    const struct raft_peer_status *peers; /* raft_peer_status, every voter */
    uint32_t n_peers;
    const struct raft_net_peer_stats *links; /* raft_net_stats: the others */
    uint32_t n_links;
};

/* One row per voter in voter order (at most cap). Returns the count.
 * A voter missing from peers (it cannot be, from a leader) reads as
 * unreachable with log end 0. */
uint32_t ctl_quorum_view_rows(const struct ctl_quorum_view_in *in,
                              struct ctl_quorum_voter *rows,
                              uint32_t cap);

/* Storage for one QuorumStatus message built from rows (no allocation). */
struct ctl_quorum_pb {
    struct ctl_quorum_voter rows[RAFT_MAX_VOTERS];
    uint32_t n_rows;
    Weir__QuorumStatus status;
    Weir__QuorumVoter voters[RAFT_MAX_VOTERS];
    Weir__QuorumVoter *ptrs[RAFT_MAX_VOTERS];
};

/* st->status from st->rows (n_rows of them), term and leader. Returns
 * &st->status; its strings borrow the rows' addresses. */
Weir__QuorumStatus *
ctl_quorum_view_pb(struct ctl_quorum_pb *st, uint64_t term, uint32_t leader);

#endif /* CONTROLLER_CTL_QUORUM_VIEW_H */
