/* SPDX-License-Identifier: Apache-2.0 */
/* A cluster of N Raft cores (controller/quorum/raft.h) on virtual time:
 * the fixture plays each member's adapter (persist rd to a fake disk, then
 * send, apply, advance), carries messages with delays, drops, duplicates
 * and reordering, partitions the members, crashes them (losing what is in
 * flight and what was not persisted), wipes their disks (restart at term 0
 * with a fresh nonce), and keeps a state machine per member that records
 * what it applied. After every event it checks election safety, log
 * matching, leader completeness, state-machine safety, commit monotonicity
 * and that no message reflects unpersisted state; the first violation is
 * kept in raft_fixture_error(). Members are 0..n-1 with ids 1..n.
 * Locality: the test's thread. */
#ifndef TESTS_LIB_RAFT_FIXTURE_H
#define TESTS_LIB_RAFT_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "controller/quorum/raft.h"

#define RAFT_FIXTURE_NONE UINT32_MAX

struct raft_fixture;

struct raft_fixture_opts {
    uint32_t n;            /* 1..RAFT_MAX_VOTERS */
    uint64_t seed;         /* cores' jitter and the network's choices */
    uint64_t election_ms;  /* cfg.election_timeout_ms */
    uint64_t heartbeat_ms; /* cfg.heartbeat_interval_ms */
    uint32_t chunk_bytes;  /* cfg.snapshot_chunk_bytes (0: default) */
};

/* Errors: WEIR_EINVALID_ARGUMENT, WEIR_ENOMEM. */
int raft_fixture_new(const struct raft_fixture_opts *o,
                     struct raft_fixture **out);
void raft_fixture_free(struct raft_fixture *f);

/* The member's core (borrowed; NULL while it is down). */
struct raft *raft_fixture_core(struct raft_fixture *f, uint32_t i);
uint64_t raft_fixture_now(const struct raft_fixture *f);
uint64_t raft_fixture_rand(struct raft_fixture *f);

/* Network: each message is dropped with drop_pct %, sent twice with
 * dup_pct %, and delayed uniformly in [min, max] ms (reordering). */
void raft_fixture_net(struct raft_fixture *f,
                      uint32_t drop_pct,
                      uint32_t dup_pct,
                      uint64_t min_delay_ms,
                      uint64_t max_delay_ms);
/* Members in mask talk only among themselves, the rest likewise; 0 heals.
 * Checked at delivery. */
void raft_fixture_partition(struct raft_fixture *f, uint32_t mask);
/* Drop every message of this type from now on (0: none). */
void raft_fixture_block_type(struct raft_fixture *f, enum raft_msg_type t);

void raft_fixture_crash(struct raft_fixture *f, uint32_t i);
int raft_fixture_restart(struct raft_fixture *f, uint32_t i);
/* Crash, wipe the disk (term 0, empty log, a fresh nonce), restart. */
int raft_fixture_lose_disk(struct raft_fixture *f, uint32_t i);
bool raft_fixture_is_up(const struct raft_fixture *f, uint32_t i);
/* Lost its disk and has not applied its READMIT yet. */
bool raft_fixture_is_pending(const struct raft_fixture *f, uint32_t i);

/* Lost its disk and has applied its READMIT (or a snapshot naming it). */
bool raft_fixture_was_readmitted(const struct raft_fixture *f, uint32_t i);

/* Run the next event (a delivery or a due tick) in time order; false when
 * there is none before `until`. */
bool raft_fixture_step(struct raft_fixture *f, uint64_t until);
/* Run every event up to now + ms, then move the clock there. */
void raft_fixture_run(struct raft_fixture *f, uint64_t ms);
/* Run until member i's core is an active leader, at most ms; bool. */
bool raft_fixture_run_until_active(struct raft_fixture *f,
                                   uint32_t i,
                                   uint64_t ms);

/* The up member that is leader with the highest term, or NONE. */
uint32_t raft_fixture_leader(const struct raft_fixture *f);
int raft_fixture_propose(struct raft_fixture *f,
                         uint32_t i,
                         const void *data,
                         uint32_t len,
                         uint64_t *index);
/* The member's state machine snapshots itself at its applied index. */
int raft_fixture_snapshot(struct raft_fixture *f, uint32_t i);
uint64_t raft_fixture_applied(const struct raft_fixture *f, uint32_t i);
/* Messages the member sent so far (all types). */
uint64_t raft_fixture_sent(const struct raft_fixture *f, uint32_t i);
/* Messages of type t sent by member i carrying entries (APPEND). */
uint64_t raft_fixture_sent_entries(const struct raft_fixture *f, uint32_t i);
uint64_t raft_fixture_sent_type(const struct raft_fixture *f,
                                uint32_t i,
                                enum raft_msg_type t);

/* The first invariant violation, or NULL. */
const char *raft_fixture_error(const struct raft_fixture *f);
void raft_fixture_dump_trace(const struct raft_fixture *f, FILE *out);

/* One core driven by hand (scenario tests): ids 1..n, election 1000 ms,
 * heartbeat 100 ms, seed 1, a log of NORMAL entries with the given terms
 * (empty data) after no snapshot. */
int raft_fixture_one(uint32_t id,
                     uint32_t n,
                     const struct raft_hard_state *hs,
                     const uint64_t *terms,
                     uint32_t n_entries,
                     struct raft **out);

/* What one ready held (message scalars only; entries counted). */
struct raft_fixture_rd {
    bool hs_changed;
    struct raft_hard_state hs;
    bool has_snapshot;
    uint64_t truncate_from;
    uint32_t n_entries;
    uint64_t first_index;
    uint32_t n_committed;
    uint32_t n_msgs;
    struct raft_msg msgs[16]; /* entries/data pointers cleared */
};

/* raft_ready, copy, raft_advance. Returns raft_ready's result. */
int raft_fixture_one_ready(struct raft *r, struct raft_fixture_rd *rd);
/* The first message of type t to `to` in rd, or NULL. */
const struct raft_msg *raft_fixture_rd_msg(const struct raft_fixture_rd *rd,
                                           enum raft_msg_type t,
                                           uint32_t to);

#endif /* TESTS_LIB_RAFT_FIXTURE_H */
