/* SPDX-License-Identifier: Apache-2.0 */
/* Raft core: the consensus state machine of the controller quorum, pure in
 * the style of the other cores (STYLE 2.7). Events stamped with the time go
 * in (a tick, a message from a peer, a proposal, "persisted up to"); the
 * caller collects what to do with raft_ready() and confirms it with
 * raft_advance(). No clock, socket, file or random call: randomness comes
 * from the seed given at creation.
 *
 * Features: leader election with pre-vote and leader stickiness (a member
 * that heard from a live leader within the election timeout neither grants
 * a vote nor a pre-vote), check-quorum (a leader that has not heard from a
 * majority within an election timeout steps down), a no-op entry at the
 * start of each term (the leader counts as active only once it is
 * committed), snapshots (install to a far-behind or empty follower, in
 * chunks), and readmission after disk loss: a member that lost its disk
 * starts with a nonce != 0 and neither votes nor counts toward a commit
 * majority until a committed READMIT(id, nonce) entry names it (the
 * adapter restarts it with hs = {0, 0, a fresh random nonce, 0}); it then
 * votes only in terms above that entry's (hs.readmit_term).
 *
 * The voter set is fixed at creation (ids 1..2^31-1, at most RAFT_MAX_VOTERS).
 *
 * Contract of the ready loop (the adapter does, in this order):
 *   1. persist rd.hard_state when rd.hard_state_changed (fsync);
 *   2. install rd.snapshot when rd.has_snapshot (the state machine takes
 *      its bytes; drop log entries up to its index, keep later ones);
 *   3. cut the log from rd.truncate_from when != 0 (then it equals the
 *      first entry's index), append rd.entries, fsync;
 *   4. send rd.msgs (only after 1-3 are durable);
 *   5. apply rd.committed (entries known committed, in order);
 *   6. raft_advance(r, &rd): the core learns what is durable.
 * No event (tick, step, propose, snapshot_taken) may come between
 * raft_ready and raft_advance: it is refused with WEIR_EINVALID_ARGUMENT.
 * Locality: one thread (the controller loop). */
#ifndef CONTROLLER_QUORUM_RAFT_H
#define CONTROLLER_QUORUM_RAFT_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"

#define RAFT_MAX_VOTERS      7
#define RAFT_MAX_ID          0x7fffffff
#define RAFT_LIMIT           (1ull << 62) /* terms and indexes stay below */
#define RAFT_MAX_ENTRY_BYTES (64u * 1024 * 1024)
#define RAFT_MAX_BATCH       256 /* entries in one APPEND */
#define RAFT_SNAPSHOT_CHUNK  (1024u * 1024)

enum raft_role {
    RAFT_ROLE_FOLLOWER,
    RAFT_ROLE_PRE_CANDIDATE,
    RAFT_ROLE_CANDIDATE,
    RAFT_ROLE_LEADER,
};

enum raft_entry_type {
    RAFT_ENTRY_NORMAL = 1,  /* data: one ctl_core batch */
    RAFT_ENTRY_NOOP = 2,    /* a new leader's first entry */
    RAFT_ENTRY_READMIT = 3, /* data: u32be id | u64be nonce */
};

/* One log entry. The data bytes are borrowed in every struct the core
 * hands out (valid until the next call into the core) and copied by the
 * core when it takes them. */
struct raft_entry {
    uint64_t index;
    uint64_t term;
    enum raft_entry_type type;
    const uint8_t *data;
    uint32_t len;
};

enum raft_msg_type {
    RAFT_MSG_VOTE = 1, /* also pre-vote: see pre_vote */
    RAFT_MSG_VOTE_RESP = 2,
    RAFT_MSG_APPEND = 3, /* entries, or none as a heartbeat */
    RAFT_MSG_APPEND_RESP = 4,
    RAFT_MSG_SNAPSHOT = 5, /* one chunk */
    RAFT_MSG_SNAPSHOT_RESP = 6,
};

struct raft_msg {
    enum raft_msg_type type;
    uint32_t from;
    uint32_t to;
    uint64_t term; /* a pre-vote carries the term it would campaign in */
    bool pre_vote; /* VOTE, VOTE_RESP */
    bool granted;  /* VOTE_RESP */
    /* APPEND_RESP: the sender (nonce != 0) applied a committed
     * READMIT(its id, nonce), so the leader may count it before the
     * leader's own table shows it. */
    bool readmitted;
    uint64_t nonce; /* VOTE, APPEND_RESP: the sender's readmission nonce
                     * (also set in VOTE_RESP, SNAPSHOT_RESP; unused) */
    /* VOTE: the candidate's last entry. APPEND: the entry before entries.
     * SNAPSHOT: the snapshot's last included entry. */
    uint64_t index;
    uint64_t log_term;
    uint64_t commit; /* APPEND: leader's commit index */
    /* APPEND_RESP: success -> match index; refusal -> hint: where to
     * retry (the last index before the follower's conflicting term), and
     * index: the refused APPEND's index (spots stale refusals).
     * SNAPSHOT_RESP: index: the snapshot's; success: chunk taken; offset:
     * bytes received so far; done (with success): installed, match is the
     * snapshot index. */
    bool success;
    uint64_t match;
    uint64_t hint;
    uint32_t n_entries; /* APPEND */
    const struct raft_entry *entries;
    uint64_t offset;     /* SNAPSHOT: byte offset of this chunk */
    bool done;           /* SNAPSHOT: last chunk */
    const uint8_t *data; /* SNAPSHOT: chunk bytes */
    uint32_t len;
    /* SNAPSHOT (every chunk): the snapshot's readmission table, one nonce
     * per voter in raft_config order (0: never readmitted). */
    uint64_t admitted[RAFT_MAX_VOTERS];
};

struct raft_hard_state {
    uint64_t term;
    uint32_t vote;  /* 0: none in term */
    uint64_t nonce; /* readmission nonce (0: never lost its disk) */
    /* nonce != 0: the term of the applied READMIT(self, nonce) (or of the
     * snapshot that carried it); 0: not readmitted yet. Votes only in
     * terms above it. */
    uint64_t readmit_term;
};

/* Snapshot metadata plus its bytes (the state machine's image). */
struct raft_snapshot {
    uint64_t index; /* last entry included */
    uint64_t term;
    /* The readmission table through index: the nonce of the last committed
     * READMIT per voter, in raft_config order (0: none). */
    uint64_t admitted[RAFT_MAX_VOTERS];
    const uint8_t *data;
    uint64_t len;
};

struct raft_config {
    uint32_t id;
    uint32_t n_voters;
    uint32_t voters[RAFT_MAX_VOTERS];
    uint64_t election_timeout_ms;   /* 1000; randomised in [t, 2t) */
    uint64_t heartbeat_interval_ms; /* 100 */
    uint64_t seed;                  /* jitter */
    uint32_t snapshot_chunk_bytes;  /* 0: RAFT_SNAPSHOT_CHUNK (tests) */
};

/* What the core starts from: the hard state and the log on disk. */
struct raft_start {
    struct raft_hard_state hs;
    struct raft_snapshot snapshot; /* index 0: none */
    uint32_t n_entries;            /* after the snapshot, dense */
    const struct raft_entry *entries;
};

struct raft_ready {
    bool hard_state_changed;
    struct raft_hard_state hs;
    bool has_snapshot; /* a complete snapshot received: install it */
    struct raft_snapshot snapshot;
    uint64_t truncate_from; /* 0: no cut; else drop entries >= this */
    uint32_t n_entries;     /* to append after the cut */
    const struct raft_entry *entries;
    uint32_t n_msgs;
    const struct raft_msg *msgs;
    uint32_t n_committed; /* to apply, in order */
    const struct raft_entry *committed;
    uint64_t next_tick_ms; /* deliver raft_tick no later than this (a change
                              of it alone makes a ready) */
};

struct raft; /* opaque */

/* Errors: WEIR_EINVALID_ARGUMENT (bad config or a start state that does
 * not hold together: entries not dense after the snapshot, a term above the
 * hard state's), WEIR_ENOMEM. */
WEIR_MUST_CHECK int raft_new(const struct raft_config *cfg,
                             const struct raft_start *start,
                             uint64_t now_ms,
                             struct raft **out);
void raft_free(struct raft *r);

/* Events. Each returns 0 or an error that leaves the core unchanged
 * (WEIR_EMALFORMED for a message that cannot be right: unknown voter,
 * index past the limit; WEIR_ENOMEM). */
WEIR_MUST_CHECK int raft_tick(struct raft *r, uint64_t now_ms);
WEIR_MUST_CHECK int
raft_step(struct raft *r, const struct raft_msg *m, uint64_t now_ms);
/* Leader only (else WEIR_ENOT_CONTROLLER): append a NORMAL entry; its index
 * goes to *index. Copies data. */
WEIR_MUST_CHECK int raft_propose(struct raft *r,
                                 const uint8_t *data,
                                 uint32_t len,
                                 uint64_t *index);
/* The state machine's snapshot through index (<= applied) is on disk:
 * the core drops entries up to it and will send it to followers that are
 * behind. snap->admitted must be the table exactly through index (the
 * state machine applies READMIT entries too). The bytes are copied. */
WEIR_MUST_CHECK int raft_snapshot_taken(struct raft *r,
                                        const struct raft_snapshot *snap);

/* The connection to voter id was closed (the transport saw it go: a
 * process killed with its sockets closed, a host gone). If it is the
 * leader this member follows, the leader's lease ends here and an
 * election may start after a short random delay instead of a full
 * election timeout; pre-vote still keeps a member that hears the leader
 * from being deposed. Otherwise nothing changes. Errors:
 * WEIR_EINVALID_ARGUMENT (between ready and advance). */
WEIR_MUST_CHECK int
raft_peer_lost(struct raft *r, uint32_t id, uint64_t now_ms);

/* Collect what to do; rd stays valid until raft_advance. */
bool raft_has_ready(const struct raft *r);
WEIR_MUST_CHECK int raft_ready(struct raft *r, struct raft_ready *rd);
void raft_advance(struct raft *r, const struct raft_ready *rd);

/* Queries. */
enum raft_role raft_role(const struct raft *r);
uint64_t raft_term(const struct raft *r);
uint32_t raft_leader(const struct raft *r); /* 0: unknown */
/* Leader whose no-op of this term is committed and applied. */
bool raft_is_active_leader(const struct raft *r);
uint64_t raft_commit_index(const struct raft *r);
uint64_t raft_last_index(const struct raft *r);

struct raft_peer_status {
    uint32_t id;
    uint64_t match; /* leader's view; 0 elsewhere */
    uint64_t last_contact_ms;
    bool readmitted;
};
/* Leader: one row per voter (self included). Returns the count. */
uint32_t raft_peer_status(const struct raft *r,
                          struct raft_peer_status *rows,
                          uint32_t cap);

#endif /* CONTROLLER_QUORUM_RAFT_H */
