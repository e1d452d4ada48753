/* SPDX-License-Identifier: Apache-2.0 */
/* Internals of the Raft fixture shared by raft_fixture.c (cluster, network,
 * events) and raft_fixture_disk.c (fake disk, state machine, checks).
 * Locality: the test's thread. */
#ifndef TESTS_LIB_RAFT_FIXTURE_INT_H
#define TESTS_LIB_RAFT_FIXTURE_INT_H

#include "tests/lib/raft_fixture.h"

#define RF_TRACE_LINES 48
#define RF_TRACE_WIDTH 128

/* One entry on a fake disk; ph is the hash of the log up to it. */
struct rf_entry {
    uint64_t index;
    uint64_t term;
    int type;
    uint8_t *data;
    uint32_t len;
    uint64_t ph;
};

/* What survives a crash. */
struct rf_disk {
    struct raft_hard_state hs;
    uint64_t snap_index;
    uint64_t snap_term;
    uint64_t snap_ph;
    uint64_t snap_admitted[RAFT_MAX_VOTERS];
    uint8_t *snap_data;
    uint64_t snap_len;
    struct rf_entry *e; /* e[k].index == snap_index + 1 + k */
    uint32_t n;
    uint32_t cap;
};

/* One applied entry, as the state machine remembers it. */
struct rf_rec {
    uint64_t index;
    uint64_t term;
    uint64_t hash;
};

/* The state machine: everything applied, plus the readmission table. */
struct rf_sm {
    struct rf_rec *rec;
    uint32_t n;
    uint32_t cap;
    uint64_t admitted[RAFT_MAX_VOTERS];
};

struct rf_member {
    struct raft *r; /* NULL while down */
    struct rf_disk disk;
    struct rf_sm sm;
    uint64_t next_tick_ms;
    uint64_t last_commit; /* this incarnation's highest */
    uint64_t sent;
    uint64_t sent_entries;
    uint64_t sent_type[8];
};

struct rf_qmsg {
    struct raft_msg m;
    void *buf;
    uint64_t at_ms;
    uint64_t seq;
};

struct rf_ph {
    uint64_t index; /* 0: empty slot */
    uint64_t term;
    uint64_t ph;
};

struct rf_committed {
    uint64_t term;
    uint64_t hash;
};

struct raft_fixture {
    struct raft_fixture_opts o;
    struct rf_member mem[RAFT_MAX_VOTERS];
    uint64_t now_ms;
    uint64_t rng;
    uint32_t drop_pct, dup_pct;
    uint64_t min_delay_ms, max_delay_ms;
    uint32_t part_mask;
    enum raft_msg_type blocked;
    struct rf_qmsg *q;
    uint32_t nq, capq;
    uint64_t seq;
    /* Checker state. */
    uint32_t *leader_of; /* by term: id + 0 */
    uint64_t cap_terms;
    struct rf_committed *committed; /* by index: first applied */
    uint64_t cap_committed;
    uint64_t max_committed;
    struct rf_ph *ph; /* (index, term) -> ph, open addressing */
    uint64_t ph_cap, ph_n;
    char error[256];
    char trace[RF_TRACE_LINES][RF_TRACE_WIDTH];
    uint32_t trace_next;
};

uint64_t rf_hash(uint64_t h, const void *p, size_t n);
void rf_fail(struct raft_fixture *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void rf_trace(struct raft_fixture *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* raft_fixture_disk.c */
void rf_disk_fini(struct rf_disk *d);
void rf_sm_fini(struct rf_sm *s);
/* Persist steps 1-3 of rd on member i's disk, checking log matching. */
int rf_persist(struct raft_fixture *f, uint32_t i, const struct raft_ready *rd);
/* Messages must reflect only what is on the disk now. */
void rf_check_msg(struct raft_fixture *f, uint32_t i, const struct raft_msg *m);
/* Apply rd.committed to member i's state machine (state-machine safety). */
int rf_apply(struct raft_fixture *f, uint32_t i, const struct raft_ready *rd);
/* Rebuild the state machine from the disk's snapshot (restart). */
int rf_sm_load(struct raft_fixture *f, uint32_t i);
int rf_take_snapshot(struct raft_fixture *f, uint32_t i);
/* Election safety, leader completeness, commit monotonicity. */
void rf_check_member(struct raft_fixture *f, uint32_t i);

#endif /* TESTS_LIB_RAFT_FIXTURE_INT_H */
