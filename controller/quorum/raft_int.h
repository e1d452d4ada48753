/* SPDX-License-Identifier: Apache-2.0 */
/* Raft core internals shared by raft_core.c, raft_elect.c,
 * raft_replicate.c and raft_log.c. Not for use outside controller/quorum.
 * Locality: one thread (the controller loop). */
#ifndef CONTROLLER_QUORUM_RAFT_INT_H
#define CONTROLLER_QUORUM_RAFT_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "controller/quorum/raft.h"

#define RAFT_MAX_SNAPSHOT_BYTES (1ull << 30)
#define RAFT_READMIT_BYTES      12u /* u32be id | u64be nonce */
/* Batches sent ahead of acknowledgement to a follower in replicate mode. */
#define RAFT_MAX_INFLIGHT 4
/* after the leader's connection is lost, a follower campaigns after this
 * plus RAFT_LOST_RANK_MS per surviving voter listed before it, plus up to
 * RAFT_LOST_JITTER_MS: the survivors campaign one after another, so two of
 * them rarely split the vote and wait a whole election timeout */
#define RAFT_LOST_DELAY_MS  50
#define RAFT_LOST_RANK_MS   100
#define RAFT_LOST_JITTER_MS 25

/* The in-memory log: the snapshot point, then dense entries whose data
 * bytes the log owns. Entries up to `durable` are on disk. */
struct raft_log {
    uint64_t snap_index;
    uint64_t snap_term;
    struct raft_entry *e; /* e[i].index == snap_index + 1 + i */
    uint32_t n;
    uint32_t cap;
};

enum raft_progress_state {
    RAFT_PROGRESS_PROBE,     /* one batch in flight until answered */
    RAFT_PROGRESS_REPLICATE, /* match known: stream ahead */
    RAFT_PROGRESS_SNAPSHOT,  /* sending the snapshot in chunks */
};

/* The leader's view of one voter (self included, unused fields). */
struct raft_progress {
    uint64_t match; /* highest index known on its disk */
    uint64_t next;  /* next index to send */
    enum raft_progress_state state;
    bool inflight;        /* PROBE: a batch is unanswered */
    uint32_t n_ahead;     /* REPLICATE: batches sent since the last answer */
    uint64_t nonce;       /* last nonce it reported */
    uint64_t retired;     /* the nonce before `nonce`: stale */
    uint64_t proposed;    /* nonce of a READMIT proposed this term, 0 none */
    bool readmitted;      /* it said its READMIT for `nonce` is committed */
    uint64_t contact_ms;  /* last message from it (leader view) */
    uint64_t snap_index;  /* SNAPSHOT: which snapshot is being sent */
    uint64_t snap_offset; /* SNAPSHOT: bytes the follower has */
    uint64_t hb_match;    /* REPLICATE: match at the last heartbeat */
};

/* A snapshot the core owns (bytes copied). */
struct raft_snap_own {
    uint64_t index;
    uint64_t term;
    uint64_t admitted[RAFT_MAX_VOTERS];
    uint8_t *data;
    uint64_t len;
};

struct raft {
    struct raft_config cfg;
    uint32_t self;  /* position of cfg.id in cfg.voters */
    uint32_t chunk; /* snapshot chunk bytes */
    uint64_t now_ms;
    uint64_t rng;

    struct raft_hard_state hs;
    bool hs_dirty;
    enum raft_role role;
    uint32_t leader; /* id, 0 unknown */
    uint32_t votes;  /* bit per voter position: granted this campaign */
    uint64_t election_due_ms;
    uint64_t heartbeat_due_ms;
    uint64_t leader_contact_ms; /* last message from the live leader */
    bool heard_leader;          /* leader_contact_ms is meaningful */
    uint64_t told_tick_ms;      /* next_tick_ms of the last ready */

    struct raft_log log;
    uint64_t durable;       /* last index on disk (after raft_advance) */
    uint64_t unstable;      /* first index not yet handed to a ready */
    uint64_t truncate_from; /* pending cut, 0 none */
    uint64_t commit;
    uint64_t applied;    /* handed out in rd.committed and advanced */
    uint64_t noop_index; /* leader: this term's no-op */

    /* The readmission table as of `applied`; our own status is in
     * hs.readmit_term (persisted, so a restart keeps it). */
    uint64_t admitted[RAFT_MAX_VOTERS];

    struct raft_progress prs[RAFT_MAX_VOTERS];

    struct raft_snap_own snap; /* latest snapshot (taken or installed) */
    bool snap_install;         /* snap must go out in the next ready */
    struct raft_snap_own recv; /* being assembled from chunks */
    uint64_t recv_cap;

    /* Outgoing messages; buf[i] owns msgs[i]'s entries and data. */
    struct raft_msg *msgs;
    void **msg_buf;
    uint32_t n_msgs;
    uint32_t cap_msgs;
    bool in_ready; /* between raft_ready and raft_advance */
};

/* raft_log.c */
void raft_log_init(struct raft_log *l, uint64_t snap_index, uint64_t term);
void raft_log_fini(struct raft_log *l);
uint64_t raft_log_last(const struct raft_log *l);
uint64_t raft_log_last_term(const struct raft_log *l);
/* Term at index, or 0 when outside [snap_index, last]. */
uint64_t raft_log_term(const struct raft_log *l, uint64_t index);
const struct raft_entry *raft_log_at(const struct raft_log *l, uint64_t i);
/* Make room for `more` entries, so appends after it cannot fail. */
WEIR_MUST_CHECK int raft_log_reserve(struct raft_log *l, uint32_t more);
/* Copy e's data into a new buffer (*out, NULL when len is 0). */
WEIR_MUST_CHECK int raft_log_copy_data(const struct raft_entry *e,
                                       uint8_t **out);
/* Append at last + 1, taking `data` (from raft_log_copy_data); room must
 * have been reserved. */
void raft_log_append_take(struct raft_log *l,
                          const struct raft_entry *e,
                          uint8_t *data);
void raft_log_truncate(struct raft_log *l, uint64_t from);
/* Drop entries up to index (a snapshot's), keeping later ones. */
void raft_log_compact(struct raft_log *l, uint64_t index, uint64_t term);

/* raft_core.c */
uint32_t raft_voter_pos(const struct raft *r, uint32_t id);
uint32_t raft_quorum(const struct raft *r);
uint64_t raft_rand(struct raft *r);
/* Queue a message (copies entries' data and `data`); a failed copy drops
 * the message, which Raft tolerates as a loss. */
void raft_send(struct raft *r, const struct raft_msg *m);
void raft_mark_cut(struct raft *r, uint64_t from);
void raft_snap_own_fini(struct raft_snap_own *s);

/* raft_elect.c */
void raft_reset_election(struct raft *r);
void raft_become_follower(struct raft *r, uint64_t term, uint32_t leader);
WEIR_MUST_CHECK int raft_elect_tick(struct raft *r);
void raft_elect_peer_lost(struct raft *r, uint32_t id);
WEIR_MUST_CHECK int raft_step_vote(struct raft *r, const struct raft_msg *m);
WEIR_MUST_CHECK int raft_step_vote_resp(struct raft *r,
                                        const struct raft_msg *m);
bool raft_in_lease(const struct raft *r);
/* Leader: step down when a majority was silent for an election timeout. */
void raft_check_quorum(struct raft *r);

/* raft_replicate.c */
/* Term rules for APPEND and SNAPSHOT: false when m was handled (stale). */
bool raft_accept_leader(struct raft *r, const struct raft_msg *m);
WEIR_MUST_CHECK int raft_become_leader(struct raft *r);
void raft_send_append(struct raft *r, uint32_t pos, bool heartbeat);
void raft_broadcast(struct raft *r, bool heartbeat);
void raft_maybe_commit(struct raft *r);
WEIR_MUST_CHECK int raft_step_append(struct raft *r, const struct raft_msg *m);
WEIR_MUST_CHECK int raft_step_append_resp(struct raft *r,
                                          const struct raft_msg *m);
WEIR_MUST_CHECK int raft_step_snapshot(struct raft *r,
                                       const struct raft_msg *m);
WEIR_MUST_CHECK int raft_step_snapshot_resp(struct raft *r,
                                            const struct raft_msg *m);
/* Append an entry of this term at the leader (copies data). */
WEIR_MUST_CHECK int raft_leader_append(struct raft *r,
                                       enum raft_entry_type type,
                                       const uint8_t *data,
                                       uint32_t len,
                                       uint64_t *index);
/* Leader: note voter pos's nonce; propose READMIT when it is new. */
void raft_note_nonce(struct raft *r,
                     uint32_t pos,
                     uint64_t nonce,
                     bool readmitted);
/* Apply a committed READMIT to the table (and to our own status). */
void raft_apply_readmit(struct raft *r, const struct raft_entry *e);
/* The table names our nonce (from a snapshot of term_hint): admitted. */
void raft_refresh_admitted(struct raft *r, uint64_t term_hint);
bool raft_is_admitted(const struct raft *r);

#endif /* CONTROLLER_QUORUM_RAFT_INT_H */
