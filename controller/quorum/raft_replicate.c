/* SPDX-License-Identifier: Apache-2.0 */
/* Raft replication: the leader's APPENDs (entries or heartbeats), each
 * follower's match/next (probe with one batch in flight, then stream),
 * commit by a majority of admitted voters counting only entries of the
 * current term, the follower's side of APPEND, the snapshot sent in chunks
 * and assembled, and readmission (READMIT entries) after a disk loss.
 * Locality: one thread (the controller loop). */
#include <string.h>

#include "common/mem.h"
#include "controller/quorum/raft_int.h"

static void raft_progress_probe(struct raft_progress *p, uint64_t next)
{
    p->state = RAFT_PROGRESS_PROBE;
    p->next = next > p->match + 1 ? next : p->match + 1;
    p->inflight = false;
    p->n_ahead = 0;
}

int raft_become_leader(struct raft *r)
{
    uint64_t last = raft_log_last(&r->log);
    int rv;

    rv = raft_log_reserve(&r->log, 1);
    if (rv != 0) {
        return rv;
    }
    r->role = RAFT_ROLE_LEADER;
    r->leader = r->cfg.id;
    r->heartbeat_due_ms = r->now_ms + r->cfg.heartbeat_interval_ms;
    for (uint32_t i = 0; i < r->cfg.n_voters; i++) {
        struct raft_progress *p = &r->prs[i];

        memset(p, 0, sizeof(*p));
        raft_progress_probe(p, last + 1);
        p->nonce = r->admitted[i];
        p->contact_ms = r->now_ms;
    }
    /* Cannot fail: room was reserved and a no-op has no data. */
    return raft_leader_append(r, RAFT_ENTRY_NOOP, NULL, 0, &r->noop_index);
}

int raft_leader_append(struct raft *r,
                       enum raft_entry_type type,
                       const uint8_t *data,
                       uint32_t len,
                       uint64_t *index)
{
    struct raft_entry e = {
        .term = r->hs.term, .type = type, .data = data, .len = len};
    uint8_t *copy;
    int rv;

    rv = raft_log_reserve(&r->log, 1);
    if (rv != 0) {
        return rv;
    }
    rv = raft_log_copy_data(&e, &copy);
    if (rv != 0) {
        return rv;
    }
    raft_log_append_take(&r->log, &e, copy);
    *index = raft_log_last(&r->log);
    raft_broadcast(r, false);
    return 0;
}

static void raft_send_snapshot(struct raft *r, uint32_t pos)
{
    struct raft_progress *p = &r->prs[pos];
    struct raft_msg m;
    uint64_t left;

    if (p->state != RAFT_PROGRESS_SNAPSHOT || p->snap_index != r->snap.index) {
        p->state = RAFT_PROGRESS_SNAPSHOT;
        p->snap_index = r->snap.index;
        p->snap_offset = 0;
    }
    left = r->snap.len - p->snap_offset;
    memset(&m, 0, sizeof(m));
    m.type = RAFT_MSG_SNAPSHOT;
    m.to = r->cfg.voters[pos];
    m.term = r->hs.term;
    m.index = r->snap.index;
    m.log_term = r->snap.term;
    m.commit = r->commit;
    m.offset = p->snap_offset;
    m.len = (uint32_t)(left < r->chunk ? left : r->chunk);
    m.data = m.len > 0 ? r->snap.data + p->snap_offset : NULL;
    m.done = m.offset + m.len == r->snap.len;
    memcpy(m.admitted, r->snap.admitted, sizeof(m.admitted));
    raft_send(r, &m);
}

static uint32_t raft_batch_size(const struct raft *r,
                                const struct raft_progress *p)
{
    uint64_t n = raft_log_last(&r->log) - (p->next - 1);

    if (p->next - 1 > raft_log_last(&r->log)) {
        return 0;
    }
    if ((p->state == RAFT_PROGRESS_PROBE && p->inflight) ||
        (p->state == RAFT_PROGRESS_REPLICATE &&
         p->n_ahead >= RAFT_MAX_INFLIGHT)) {
        return 0;
    }
    return (uint32_t)(n < RAFT_MAX_BATCH ? n : RAFT_MAX_BATCH);
}

void raft_send_append(struct raft *r, uint32_t pos, bool heartbeat)
{
    struct raft_progress *p = &r->prs[pos];
    struct raft_msg m;
    uint32_t n;

    if (p->state == RAFT_PROGRESS_SNAPSHOT && p->snap_index == r->snap.index) {
        if (heartbeat) {
            raft_send_snapshot(r, pos); /* the last chunk may be lost */
        }
        return;
    }
    if (p->next - 1 < r->log.snap_index) {
        raft_send_snapshot(r, pos);
        return;
    }
    if (p->state == RAFT_PROGRESS_SNAPSHOT) {
        raft_progress_probe(p, p->next);
    }
    n = raft_batch_size(r, p);
    if (n == 0 && !heartbeat) {
        return;
    }
    memset(&m, 0, sizeof(m));
    m.type = RAFT_MSG_APPEND;
    m.to = r->cfg.voters[pos];
    m.term = r->hs.term;
    /* A streaming follower's heartbeat names its match, which is known to
     * hold, so a heartbeat never refutes batches still in flight. */
    m.index = (n == 0 && p->state == RAFT_PROGRESS_REPLICATE) ? p->match
                                                              : p->next - 1;
    m.log_term = raft_log_term(&r->log, m.index);
    m.commit = r->commit;
    m.n_entries = n;
    m.entries = n > 0 ? raft_log_at(&r->log, p->next) : NULL;
    raft_send(r, &m);
    if (n == 0) {
        return;
    }
    if (p->state == RAFT_PROGRESS_PROBE) {
        p->inflight = true;
    } else {
        p->next += n;
        p->n_ahead++;
    }
}

void raft_broadcast(struct raft *r, bool heartbeat)
{
    for (uint32_t i = 0; i < r->cfg.n_voters; i++) {
        struct raft_progress *p = &r->prs[i];

        if (i == r->self) {
            continue;
        }
        if (heartbeat && p->state == RAFT_PROGRESS_REPLICATE &&
            p->next > p->match + 1 && p->match == p->hb_match) {
            /* No answer since the last heartbeat: batches may be lost. */
            raft_progress_probe(p, p->match + 1);
        }
        if (heartbeat) {
            p->hb_match = p->match;
        }
        raft_send_append(r, i, heartbeat);
        while (!heartbeat && p->state == RAFT_PROGRESS_REPLICATE &&
               raft_batch_size(r, p) > 0) {
            raft_send_append(r, i, false);
        }
    }
}

/* Voter i's match for commit, or 0 while its disk is not readmitted. */
static uint64_t raft_counted_match(const struct raft *r, uint32_t i)
{
    if (i == r->self) {
        return raft_is_admitted(r) ? r->durable : 0;
    }
    return r->prs[i].nonce == r->admitted[i] || r->prs[i].readmitted
               ? r->prs[i].match
               : 0;
}

void raft_maybe_commit(struct raft *r)
{
    uint64_t m[RAFT_MAX_VOTERS];
    uint32_t n = r->cfg.n_voters;
    uint64_t c;

    if (r->role != RAFT_ROLE_LEADER) {
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        m[i] = raft_counted_match(r, i);
    }
    for (uint32_t i = 1; i < n; i++) { /* insertion sort, descending */
        uint64_t v = m[i];
        uint32_t j = i;

        for (; j > 0 && m[j - 1] < v; j--) {
            m[j] = m[j - 1];
        }
        m[j] = v;
    }
    c = m[raft_quorum(r) - 1];
    /* Only an entry of this term commits by counting (Raft 5.4.2). */
    if (c > r->commit && raft_log_term(&r->log, c) == r->hs.term) {
        r->commit = c;
    }
}

static void raft_reply_append(struct raft *r,
                              const struct raft_msg *m,
                              bool success,
                              uint64_t match,
                              uint64_t hint)
{
    struct raft_msg resp;

    memset(&resp, 0, sizeof(resp));
    resp.type = RAFT_MSG_APPEND_RESP;
    resp.to = m->from;
    resp.term = r->hs.term;
    resp.index = m->index; /* the refused entry, to spot stale refusals */
    resp.success = success;
    resp.match = match;
    resp.hint = hint;
    resp.nonce = r->hs.nonce;
    resp.readmitted = r->hs.nonce != 0 && raft_is_admitted(r);
    raft_send(r, &resp);
}

/* Common term rules for APPEND and SNAPSHOT: false when handled. */
bool raft_accept_leader(struct raft *r, const struct raft_msg *m)
{
    if (m->term < r->hs.term) {
        /* A stale leader learns our term and steps down. */
        raft_reply_append(r, m, false, 0, raft_log_last(&r->log));
        return false;
    }
    if (m->term == r->hs.term && r->role == RAFT_ROLE_LEADER) {
        return false; /* cannot happen: one leader per term */
    }
    if (m->term > r->hs.term || r->role != RAFT_ROLE_FOLLOWER ||
        r->leader != m->from) {
        raft_become_follower(r, m->term, m->from);
    }
    r->heard_leader = true;
    r->leader_contact_ms = r->now_ms;
    raft_reset_election(r);
    return true;
}

/* Where a leader should retry after our log refused prev: skip back over
 * the whole conflicting term, never below what is committed. */
static uint64_t raft_refusal_hint(const struct raft *r, uint64_t prev)
{
    uint64_t last = raft_log_last(&r->log);
    uint64_t i, t;

    if (prev > last) {
        return last;
    }
    if (prev <= r->commit) {
        return r->commit; /* cannot conflict: the leader is wrong */
    }
    t = raft_log_term(&r->log, prev);
    for (i = prev - 1; i > r->commit && raft_log_term(&r->log, i) == t; i--) {
    }
    return i;
}

/* Copies of entries [first, n) and room in the log, taken before
 * anything changes so that ENOMEM leaves the core as it was. */
static int raft_append_prepare(struct raft *r,
                               const struct raft_msg *m,
                               uint32_t first,
                               uint8_t **copies)
{
    uint32_t n = m->n_entries - first;
    int rv;

    rv = raft_log_reserve(&r->log, n);
    for (uint32_t i = 0; i < n && rv == 0; i++) {
        rv = raft_log_copy_data(&m->entries[first + i], &copies[i]);
        if (rv != 0) {
            for (uint32_t j = 0; j < i; j++) {
                mem_free(copies[j]);
            }
        }
    }
    return rv;
}

/* The first entry of m not already in the log (entries up to commit are
 * committed, so they match the leader's). */
static uint32_t raft_append_first_new(const struct raft *r,
                                      const struct raft_msg *m)
{
    uint32_t first = 0;

    while (first < m->n_entries) {
        const struct raft_entry *e = &m->entries[first];

        if (e->index > r->commit &&
            (e->index > raft_log_last(&r->log) ||
             raft_log_term(&r->log, e->index) != e->term)) {
            break;
        }
        first++;
    }
    return first;
}

static bool raft_append_fits(const struct raft *r, const struct raft_msg *m)
{
    return m->index <= raft_log_last(&r->log) &&
           (m->index < r->commit ||
            raft_log_term(&r->log, m->index) == m->log_term);
}

int raft_step_append(struct raft *r, const struct raft_msg *m)
{
    uint8_t *copies[RAFT_MAX_BATCH];
    uint64_t end = m->index + m->n_entries;
    bool fits = raft_append_fits(r, m);
    uint32_t first = fits ? raft_append_first_new(r, m) : m->n_entries;
    bool prepared = false;
    uint64_t at;
    int rv;

    if (m->term >= r->hs.term && first < m->n_entries) {
        rv = raft_append_prepare(r, m, first, copies);
        if (rv != 0) {
            return rv;
        }
        prepared = true;
    }
    if (!raft_accept_leader(r, m)) {
        for (uint32_t i = first; prepared && i < m->n_entries; i++) {
            mem_free(copies[i - first]);
        }
        return 0;
    }
    if (!fits) {
        raft_reply_append(r, m, false, 0, raft_refusal_hint(r, m->index));
        return 0;
    }
    if (first < m->n_entries) {
        at = m->entries[first].index;
        if (at <= raft_log_last(&r->log)) {
            raft_log_truncate(&r->log, at);
            raft_mark_cut(r, at);
        }
        for (uint32_t i = first; i < m->n_entries; i++) {
            raft_log_append_take(&r->log, &m->entries[i], copies[i - first]);
        }
    }
    if (m->commit > r->commit && end > r->commit) {
        r->commit = m->commit < end ? m->commit : end;
    }
    /* Acknowledged once this ready's entries are durable (step 3 < 4). */
    raft_reply_append(r, m, true, end, 0);
    return 0;
}

/* Ignore what an earlier incarnation of voter pos sent (it lost its disk
 * since): nonce 0 once a nonce was seen or admitted, or the nonce it had
 * before the one it reports now. */
static bool
raft_is_stale_incarnation(const struct raft *r, uint32_t pos, uint64_t nonce)
{
    const struct raft_progress *p = &r->prs[pos];

    if (nonce == 0) {
        return p->nonce != 0 || r->admitted[pos] != 0;
    }
    return nonce != p->nonce && nonce == p->retired;
}

/* Is READMIT(d) in the log past what was applied? One is enough. */
static bool raft_has_readmit(const struct raft *r, const uint8_t *d)
{
    for (uint64_t i = r->applied + 1; i <= raft_log_last(&r->log); i++) {
        const struct raft_entry *e = raft_log_at(&r->log, i);

        if (e != NULL && e->type == RAFT_ENTRY_READMIT &&
            e->len == RAFT_READMIT_BYTES &&
            memcmp(e->data, d, RAFT_READMIT_BYTES) == 0) {
            return true;
        }
    }
    return false;
}

void raft_note_nonce(struct raft *r,
                     uint32_t pos,
                     uint64_t nonce,
                     bool readmitted)
{
    struct raft_progress *p = &r->prs[pos];
    uint8_t d[RAFT_READMIT_BYTES];
    uint32_t id = r->cfg.voters[pos];
    uint64_t index;

    if (nonce != p->nonce) {
        /* A new disk: what it had is gone. */
        p->retired = p->nonce;
        p->nonce = nonce;
        p->readmitted = false;
        p->match = 0;
        p->hb_match = 0;
        raft_progress_probe(p, raft_log_last(&r->log) + 1);
    }
    /* Its own word is enough: it applied a committed READMIT, so no
     * leader was elected with the votes its lost disk had cast in a later
     * term than that READMIT's (raft_elect.c), and its term is at least
     * that one: its acks are as good as any voter's. */
    p->readmitted = p->readmitted || (readmitted && nonce != 0);
    if (nonce == r->admitted[pos] || p->readmitted || p->proposed == nonce) {
        return;
    }
    for (int i = 0; i < 4; i++) {
        d[i] = (uint8_t)(id >> (24 - 8 * i));
    }
    for (int i = 0; i < 8; i++) {
        d[4 + i] = (uint8_t)(nonce >> (56 - 8 * i));
    }
    if (raft_has_readmit(r, d)) {
        p->proposed = nonce; /* already in our log, not yet applied */
        return;
    }
    if (raft_leader_append(r, RAFT_ENTRY_READMIT, d, sizeof(d), &index) == 0) {
        p->proposed = nonce;
    }
}

int raft_step_append_resp(struct raft *r, const struct raft_msg *m)
{
    uint32_t pos = raft_voter_pos(r, m->from);
    struct raft_progress *p = &r->prs[pos];

    if (m->term > r->hs.term) {
        raft_become_follower(r, m->term, 0);
        return 0;
    }
    if (m->term < r->hs.term || r->role != RAFT_ROLE_LEADER ||
        raft_is_stale_incarnation(r, pos, m->nonce)) {
        return 0;
    }
    p->contact_ms = r->now_ms;
    raft_note_nonce(r, pos, m->nonce, m->readmitted);
    if (m->success) {
        if (m->match > raft_log_last(&r->log)) {
            return 0; /* cannot be ours */
        }
        if (m->match > p->match) {
            p->match = m->match;
        }
        if (p->state == RAFT_PROGRESS_PROBE) {
            p->state = RAFT_PROGRESS_REPLICATE;
            p->next = p->match + 1;
            p->inflight = false;
            p->n_ahead = 0;
        } else if (p->state == RAFT_PROGRESS_REPLICATE) {
            p->n_ahead = p->n_ahead > 0 ? p->n_ahead - 1 : 0;
            if (p->next < p->match + 1) {
                p->next = p->match + 1;
            }
        }
        raft_maybe_commit(r);
        raft_send_append(r, pos, false);
        return 0;
    }
    /* A refusal older than what we know (duplicate, reordered) changes
     * nothing: match never goes down. */
    if (m->index <= p->match || p->state == RAFT_PROGRESS_SNAPSHOT ||
        (p->state == RAFT_PROGRESS_PROBE && m->index != p->next - 1)) {
        return 0;
    }
    raft_progress_probe(p, m->index < m->hint + 1 ? m->index : m->hint + 1);
    raft_send_append(r, pos, false);
    return 0;
}

int raft_step_snapshot_resp(struct raft *r, const struct raft_msg *m)
{
    uint32_t pos = raft_voter_pos(r, m->from);
    struct raft_progress *p = &r->prs[pos];

    if (m->term > r->hs.term) {
        raft_become_follower(r, m->term, 0);
        return 0;
    }
    if (m->term < r->hs.term || r->role != RAFT_ROLE_LEADER) {
        return 0;
    }
    p->contact_ms = r->now_ms;
    if (m->done && m->success) {
        if (m->index > raft_log_last(&r->log)) {
            return 0;
        }
        if (m->index > p->match) {
            p->match = m->index;
        }
        raft_progress_probe(p, p->match + 1);
        raft_maybe_commit(r);
        raft_send_append(r, pos, false);
        return 0;
    }
    if (p->state != RAFT_PROGRESS_SNAPSHOT || m->index != p->snap_index ||
        m->offset > r->snap.len ||
        (m->success && m->offset <= p->snap_offset)) {
        return 0;
    }
    p->snap_offset = m->offset;
    raft_send_snapshot(r, pos);
    return 0;
}
