/* SPDX-License-Identifier: Apache-2.0 */
/* Raft core: creation, the ready loop, proposals, snapshots taken by the
 * state machine, queries, and the checks every incoming message passes
 * before anything changes (so a bad message never half-changes the core).
 * Locality: one thread (the controller loop). */
#include <string.h>

#include "common/mem.h"
#include "controller/quorum/raft_int.h"

uint32_t raft_voter_pos(const struct raft *r, uint32_t id)
{
    for (uint32_t i = 0; i < r->cfg.n_voters; i++) {
        if (r->cfg.voters[i] == id) {
            return i;
        }
    }
    return RAFT_MAX_VOTERS;
}

uint32_t raft_quorum(const struct raft *r)
{
    return r->cfg.n_voters / 2 + 1;
}

uint64_t raft_rand(struct raft *r)
{
    /* splitmix64: jitter only, seeded by cfg.seed. */
    uint64_t z = (r->rng += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void raft_snap_own_fini(struct raft_snap_own *s)
{
    mem_free(s->data);
    memset(s, 0, sizeof(*s));
}

static bool raft_config_ok(const struct raft_config *c)
{
    bool self = false;

    if (c->n_voters == 0 || c->n_voters > RAFT_MAX_VOTERS ||
        c->election_timeout_ms == 0 || c->heartbeat_interval_ms == 0 ||
        c->election_timeout_ms > RAFT_LIMIT) {
        return false;
    }
    for (uint32_t i = 0; i < c->n_voters; i++) {
        if (c->voters[i] == 0 || c->voters[i] > RAFT_MAX_ID) {
            return false;
        }
        for (uint32_t j = 0; j < i; j++) {
            if (c->voters[j] == c->voters[i]) {
                return false;
            }
        }
        self = self || c->voters[i] == c->id;
    }
    return self;
}

static bool raft_start_ok(const struct raft_config *c,
                          const struct raft_start *s)
{
    uint64_t prev_term = s->snapshot.term;
    bool vote_ok = s->hs.vote == 0;

    if (s->hs.term >= RAFT_LIMIT || s->hs.readmit_term > s->hs.term ||
        (s->hs.nonce == 0 && s->hs.readmit_term != 0) ||
        s->snapshot.index >= RAFT_LIMIT || s->snapshot.term > s->hs.term ||
        (s->snapshot.index == 0 && s->snapshot.term != 0) ||
        s->snapshot.len > RAFT_MAX_SNAPSHOT_BYTES ||
        (s->snapshot.len > 0 && s->snapshot.data == NULL) ||
        s->snapshot.index + s->n_entries >= RAFT_LIMIT ||
        (s->n_entries > 0 && s->entries == NULL)) {
        return false;
    }
    for (uint32_t i = 0; i < c->n_voters; i++) {
        vote_ok = vote_ok || c->voters[i] == s->hs.vote;
    }
    for (uint32_t i = 0; i < s->n_entries; i++) {
        const struct raft_entry *e = &s->entries[i];

        if (e->index != s->snapshot.index + 1 + i || e->term < prev_term ||
            e->term > s->hs.term || e->type < RAFT_ENTRY_NORMAL ||
            e->type > RAFT_ENTRY_READMIT || e->len > RAFT_MAX_ENTRY_BYTES ||
            (e->len > 0 && e->data == NULL)) {
            return false;
        }
        prev_term = e->term;
    }
    return vote_ok;
}

static int raft_new_load(struct raft *r, const struct raft_start *s)
{
    int rv;

    raft_log_init(&r->log, s->snapshot.index, s->snapshot.term);
    rv = raft_log_reserve(&r->log, s->n_entries + 1);
    if (rv != 0) {
        return rv;
    }
    for (uint32_t i = 0; i < s->n_entries; i++) {
        uint8_t *data;

        rv = raft_log_copy_data(&s->entries[i], &data);
        if (rv != 0) {
            return rv;
        }
        raft_log_append_take(&r->log, &s->entries[i], data);
    }
    if (s->snapshot.len > 0) {
        r->snap.data = mem_malloc(s->snapshot.len);
        if (r->snap.data == NULL) {
            return WEIR_ENOMEM;
        }
        memcpy(r->snap.data, s->snapshot.data, s->snapshot.len);
    }
    r->snap.index = s->snapshot.index;
    r->snap.term = s->snapshot.term;
    r->snap.len = s->snapshot.len;
    memcpy(r->snap.admitted, s->snapshot.admitted, sizeof(r->snap.admitted));
    return 0;
}

int raft_new(const struct raft_config *cfg,
             const struct raft_start *start,
             uint64_t now_ms,
             struct raft **out)
{
    struct raft *r;
    int rv;

    *out = NULL;
    if (!raft_config_ok(cfg) || !raft_start_ok(cfg, start)) {
        return WEIR_EINVALID_ARGUMENT;
    }
    r = mem_calloc(1, sizeof(*r));
    if (r == NULL) {
        return WEIR_ENOMEM;
    }
    r->cfg = *cfg;
    r->self = raft_voter_pos(r, cfg->id);
    r->chunk = cfg->snapshot_chunk_bytes != 0 ? cfg->snapshot_chunk_bytes
                                              : RAFT_SNAPSHOT_CHUNK;
    r->now_ms = now_ms;
    r->rng = cfg->seed ^ ((uint64_t)cfg->id << 32);
    r->hs = start->hs;
    rv = raft_new_load(r, start);
    if (rv != 0) {
        raft_free(r);
        return rv;
    }
    r->durable = raft_log_last(&r->log);
    r->unstable = r->durable + 1;
    r->commit = start->snapshot.index;
    r->applied = start->snapshot.index;
    memcpy(r->admitted, start->snapshot.admitted, sizeof(r->admitted));
    raft_refresh_admitted(r, start->snapshot.term);
    r->role = RAFT_ROLE_FOLLOWER;
    raft_reset_election(r);
    *out = r;
    return 0;
}

static void raft_msgs_clear(struct raft *r)
{
    for (uint32_t i = 0; i < r->n_msgs; i++) {
        mem_free(r->msg_buf[i]);
    }
    r->n_msgs = 0;
}

void raft_free(struct raft *r)
{
    if (r == NULL) {
        return;
    }
    raft_msgs_clear(r);
    mem_free(r->msgs);
    mem_free(r->msg_buf);
    raft_log_fini(&r->log);
    raft_snap_own_fini(&r->snap);
    raft_snap_own_fini(&r->recv);
    mem_free(r);
}

/* Copy what m points at into one buffer owned by the queue. */
static void *raft_msg_copy(struct raft_msg *m)
{
    size_t sz = (size_t)m->n_entries * sizeof(struct raft_entry) + m->len;
    struct raft_entry *es;
    uint8_t *p;
    void *buf;

    for (uint32_t i = 0; i < m->n_entries; i++) {
        sz += m->entries[i].len;
    }
    buf = mem_malloc(sz == 0 ? 1 : sz);
    if (buf == NULL) {
        return NULL;
    }
    es = buf;
    p = (uint8_t *)buf + (size_t)m->n_entries * sizeof(*es);
    for (uint32_t i = 0; i < m->n_entries; i++) {
        es[i] = m->entries[i];
        es[i].data = m->entries[i].len > 0 ? p : NULL;
        if (m->entries[i].len > 0) {
            memcpy(p, m->entries[i].data, m->entries[i].len);
        }
        p += m->entries[i].len;
    }
    if (m->len > 0) {
        memcpy(p, m->data, m->len);
        m->data = p;
    }
    m->entries = m->n_entries > 0 ? es : NULL;
    return buf;
}

void raft_send(struct raft *r, const struct raft_msg *m)
{
    uint32_t cap = r->cap_msgs;
    void *buf;

    if (r->n_msgs == r->cap_msgs) {
        if (mem_grow((void **)&r->msgs, &cap, r->n_msgs + 1,
                     sizeof(*r->msgs)) != 0) {
            return;
        }
        cap = r->cap_msgs;
        if (mem_grow((void **)&r->msg_buf, &cap, r->n_msgs + 1,
                     sizeof(*r->msg_buf)) != 0) {
            return;
        }
        r->cap_msgs = cap;
    }
    r->msgs[r->n_msgs] = *m;
    r->msgs[r->n_msgs].from = r->cfg.id;
    buf = raft_msg_copy(&r->msgs[r->n_msgs]);
    if (buf == NULL) {
        return; /* a lost message */
    }
    r->msg_buf[r->n_msgs++] = buf;
}

void raft_mark_cut(struct raft *r, uint64_t from)
{
    if (r->truncate_from == 0 || from < r->truncate_from) {
        r->truncate_from = from;
    }
    if (r->unstable > from) {
        r->unstable = from;
    }
    if (r->durable >= from) {
        r->durable = from - 1;
    }
}

static bool raft_below_limit(const struct raft_msg *m)
{
    return m->term < RAFT_LIMIT && m->index < RAFT_LIMIT &&
           m->log_term < RAFT_LIMIT && m->commit < RAFT_LIMIT &&
           m->match < RAFT_LIMIT && m->hint < RAFT_LIMIT &&
           m->offset < RAFT_LIMIT;
}

static bool raft_entries_ok(const struct raft_msg *m)
{
    uint64_t prev_term = m->log_term;

    if (m->n_entries > RAFT_MAX_BATCH || (m->n_entries > 0 && !m->entries) ||
        m->index + m->n_entries >= RAFT_LIMIT) {
        return false;
    }
    for (uint32_t i = 0; i < m->n_entries; i++) {
        const struct raft_entry *e = &m->entries[i];

        if (e->index != m->index + 1 + i || e->term < prev_term ||
            e->term > m->term || e->type < RAFT_ENTRY_NORMAL ||
            e->type > RAFT_ENTRY_READMIT || e->len > RAFT_MAX_ENTRY_BYTES ||
            (e->len > 0 && e->data == NULL)) {
            return false;
        }
        prev_term = e->term;
    }
    return true;
}

/* Everything that makes a message impossible, checked before any change. */
static bool raft_msg_ok(const struct raft *r, const struct raft_msg *m)
{
    uint32_t pos = raft_voter_pos(r, m->from);

    if (pos == RAFT_MAX_VOTERS || pos == r->self || m->to != r->cfg.id ||
        !raft_below_limit(m) || m->log_term > m->term) {
        return false;
    }
    switch (m->type) {
    case RAFT_MSG_VOTE:
    case RAFT_MSG_VOTE_RESP:
    case RAFT_MSG_APPEND_RESP:
        return true;
    case RAFT_MSG_APPEND:
        /* Index 0 is the empty log's point: its term is 0. */
        return (m->index > 0 || m->log_term == 0) && raft_entries_ok(m);
    case RAFT_MSG_SNAPSHOT:
        return m->len <= RAFT_MAX_SNAPSHOT_BYTES &&
               m->offset + m->len <= RAFT_MAX_SNAPSHOT_BYTES &&
               (m->len == 0 || m->data != NULL) && m->index > 0;
    case RAFT_MSG_SNAPSHOT_RESP:
        return m->offset <= RAFT_MAX_SNAPSHOT_BYTES;
    }
    return false;
}

int raft_step(struct raft *r, const struct raft_msg *m, uint64_t now_ms)
{
    if (r->in_ready) {
        return WEIR_EINVALID_ARGUMENT;
    }
    if (m == NULL || !raft_msg_ok(r, m)) {
        return WEIR_EMALFORMED;
    }
    if (now_ms > r->now_ms) {
        r->now_ms = now_ms;
    }
    switch (m->type) {
    case RAFT_MSG_VOTE:
        return raft_step_vote(r, m);
    case RAFT_MSG_VOTE_RESP:
        return raft_step_vote_resp(r, m);
    case RAFT_MSG_APPEND:
        return raft_step_append(r, m);
    case RAFT_MSG_APPEND_RESP:
        return raft_step_append_resp(r, m);
    case RAFT_MSG_SNAPSHOT:
        return raft_step_snapshot(r, m);
    case RAFT_MSG_SNAPSHOT_RESP:
        return raft_step_snapshot_resp(r, m);
    }
    return WEIR_EMALFORMED;
}

int raft_tick(struct raft *r, uint64_t now_ms)
{
    if (r->in_ready) {
        return WEIR_EINVALID_ARGUMENT;
    }
    if (now_ms > r->now_ms) {
        r->now_ms = now_ms;
    }
    return raft_elect_tick(r);
}

int raft_peer_lost(struct raft *r, uint32_t id, uint64_t now_ms)
{
    if (r->in_ready) {
        return WEIR_EINVALID_ARGUMENT;
    }
    if (now_ms > r->now_ms) {
        r->now_ms = now_ms;
    }
    raft_elect_peer_lost(r, id);
    return 0;
}

int raft_propose(struct raft *r,
                 const uint8_t *data,
                 uint32_t len,
                 uint64_t *index)
{
    if (r->in_ready) {
        return WEIR_EINVALID_ARGUMENT;
    }
    if (r->role != RAFT_ROLE_LEADER) {
        return WEIR_ENOT_CONTROLLER;
    }
    if (len > RAFT_MAX_ENTRY_BYTES || (len > 0 && data == NULL) ||
        raft_log_last(&r->log) + 1 >= RAFT_LIMIT) {
        return WEIR_EINVALID_ARGUMENT;
    }
    return raft_leader_append(r, RAFT_ENTRY_NORMAL, data, len, index);
}

int raft_snapshot_taken(struct raft *r, const struct raft_snapshot *snap)
{
    uint8_t *data = NULL;

    if (r->in_ready || snap == NULL || snap->index > r->applied ||
        snap->len > RAFT_MAX_SNAPSHOT_BYTES ||
        (snap->len > 0 && snap->data == NULL)) {
        return WEIR_EINVALID_ARGUMENT;
    }
    if (snap->index <= r->snap.index) {
        return 0; /* we already have a newer one */
    }
    if (raft_log_term(&r->log, snap->index) != snap->term) {
        return WEIR_EINVALID_ARGUMENT;
    }
    if (snap->len > 0) {
        data = mem_malloc(snap->len);
        if (data == NULL) {
            return WEIR_ENOMEM;
        }
        memcpy(data, snap->data, snap->len);
    }
    raft_snap_own_fini(&r->snap);
    r->snap.index = snap->index;
    r->snap.term = snap->term;
    r->snap.data = data;
    r->snap.len = snap->len;
    memcpy(r->snap.admitted, snap->admitted, sizeof(r->snap.admitted));
    raft_log_compact(&r->log, snap->index, snap->term);
    return 0;
}

static uint64_t raft_next_tick(const struct raft *r)
{
    /* a leader checks its quorum at every heartbeat (raft_check_quorum) */
    return r->role == RAFT_ROLE_LEADER ? r->heartbeat_due_ms
                                       : r->election_due_ms;
}

/* A moved timer is a ready too: raft_peer_lost brings the election
 * forward without a message or a state change to persist, and the owner
 * learns when to tick only from a ready. */
bool raft_has_ready(const struct raft *r)
{
    return r->hs_dirty || r->snap_install || r->truncate_from != 0 ||
           r->unstable <= raft_log_last(&r->log) || r->n_msgs > 0 ||
           r->commit > r->applied || raft_next_tick(r) != r->told_tick_ms;
}

int raft_ready(struct raft *r, struct raft_ready *rd)
{
    uint64_t last = raft_log_last(&r->log);

    memset(rd, 0, sizeof(*rd));
    if (r->in_ready) {
        return WEIR_EINVALID_ARGUMENT;
    }
    r->in_ready = true;
    rd->hard_state_changed = r->hs_dirty;
    rd->hs = r->hs;
    if (r->snap_install) {
        rd->has_snapshot = true;
        rd->snapshot.index = r->snap.index;
        rd->snapshot.term = r->snap.term;
        memcpy(rd->snapshot.admitted, r->snap.admitted,
               sizeof(rd->snapshot.admitted));
        rd->snapshot.data = r->snap.data;
        rd->snapshot.len = r->snap.len;
    }
    if (r->unstable <= r->log.snap_index) {
        r->unstable = r->log.snap_index + 1;
    }
    if (r->truncate_from != 0) {
        rd->truncate_from = r->unstable;
    }
    if (r->unstable <= last) {
        rd->entries = raft_log_at(&r->log, r->unstable);
        rd->n_entries = (uint32_t)(last - r->unstable + 1);
    }
    rd->msgs = r->msgs;
    rd->n_msgs = r->n_msgs;
    if (r->commit > r->applied) {
        uint64_t from = r->applied + 1;

        rd->committed = raft_log_at(&r->log, from);
        rd->n_committed = (uint32_t)(r->commit - r->applied);
    }
    rd->next_tick_ms = raft_next_tick(r);
    r->told_tick_ms = rd->next_tick_ms;
    return 0;
}

void raft_advance(struct raft *r, const struct raft_ready *rd)
{
    if (!r->in_ready) {
        return;
    }
    r->in_ready = false;
    r->hs_dirty = false;
    r->snap_install = false;
    r->truncate_from = 0;
    r->durable = raft_log_last(&r->log);
    r->unstable = r->durable + 1;
    raft_msgs_clear(r);
    for (uint32_t i = 0; i < rd->n_committed; i++) {
        if (rd->committed[i].type == RAFT_ENTRY_READMIT) {
            raft_apply_readmit(r, &rd->committed[i]);
        }
    }
    if (rd->n_committed > 0) {
        r->applied = rd->committed[rd->n_committed - 1].index;
    }
    if (r->role == RAFT_ROLE_LEADER) {
        raft_maybe_commit(r);
    }
}

enum raft_role raft_role(const struct raft *r)
{
    return r->role;
}

uint64_t raft_term(const struct raft *r)
{
    return r->hs.term;
}

uint32_t raft_leader(const struct raft *r)
{
    return r->leader;
}

bool raft_is_active_leader(const struct raft *r)
{
    return r->role == RAFT_ROLE_LEADER && r->noop_index != 0 &&
           r->applied >= r->noop_index;
}

uint64_t raft_commit_index(const struct raft *r)
{
    return r->commit;
}

uint64_t raft_last_index(const struct raft *r)
{
    return raft_log_last(&r->log);
}

uint32_t raft_peer_status(const struct raft *r,
                          struct raft_peer_status *rows,
                          uint32_t cap)
{
    uint32_t n = 0;

    for (uint32_t i = 0; i < r->cfg.n_voters && n < cap; i++) {
        const struct raft_progress *p = &r->prs[i];
        bool leader = r->role == RAFT_ROLE_LEADER;

        rows[n].id = r->cfg.voters[i];
        rows[n].match = !leader ? 0 : i == r->self ? r->durable : p->match;
        rows[n].last_contact_ms = i == r->self ? r->now_ms : p->contact_ms;
        rows[n].readmitted =
            i == r->self ? raft_is_admitted(r) : p->nonce == r->admitted[i];
        n++;
    }
    return n;
}
