/* SPDX-License-Identifier: Apache-2.0 */
/* Raft follower side of snapshots (chunks assembled in order, installed
 * when the last one arrives) and the readmission table that snapshots
 * carry: the nonce of the last committed READMIT per voter.
 * Locality: one thread (the controller loop). */
#include <string.h>

#include "common/mem.h"
#include "controller/quorum/raft_int.h"

bool raft_is_admitted(const struct raft *r)
{
    return r->hs.nonce == 0 || r->hs.readmit_term != 0;
}

static void raft_admit_self(struct raft *r, uint64_t term)
{
    if (!raft_is_admitted(r)) {
        /* Persisted with the ready before any vote it allows is sent. */
        r->hs.readmit_term = term;
        r->hs_dirty = true;
    }
}

void raft_refresh_admitted(struct raft *r, uint64_t term_hint)
{
    if (r->hs.nonce != 0 && r->admitted[r->self] == r->hs.nonce) {
        /* Learnt from a snapshot: its term is >= the READMIT's. */
        raft_admit_self(r, term_hint);
    }
}

void raft_apply_readmit(struct raft *r, const struct raft_entry *e)
{
    uint64_t nonce = 0;
    uint32_t id = 0;
    uint32_t pos;

    if (e->len != RAFT_READMIT_BYTES || e->data == NULL) {
        return; /* not one we wrote: nothing to apply */
    }
    for (int i = 0; i < 4; i++) {
        id = (id << 8) | e->data[i];
    }
    for (int i = 0; i < 8; i++) {
        nonce = (nonce << 8) | e->data[4 + i];
    }
    pos = raft_voter_pos(r, id);
    if (pos == RAFT_MAX_VOTERS) {
        return;
    }
    r->admitted[pos] = nonce;
    if (pos == r->self && nonce == r->hs.nonce && nonce != 0) {
        raft_admit_self(r, e->term);
    }
}

static void raft_reply_snapshot(struct raft *r,
                                const struct raft_msg *m,
                                bool success,
                                bool done,
                                uint64_t offset)
{
    struct raft_msg resp;

    memset(&resp, 0, sizeof(resp));
    resp.type = RAFT_MSG_SNAPSHOT_RESP;
    resp.to = m->from;
    resp.term = r->hs.term;
    resp.index = m->index;
    resp.success = success;
    resp.done = done;
    resp.offset = offset;
    resp.match = done ? m->index : 0;
    resp.nonce = r->hs.nonce;
    raft_send(r, &resp);
}

/* Room for `need` bytes in the assembly buffer (doubling, capped). */
static int raft_recv_grow(struct raft *r, uint64_t need)
{
    uint64_t cap = r->recv_cap < 4096 ? 4096 : r->recv_cap;
    uint8_t *p;

    if (need <= r->recv_cap) {
        return 0;
    }
    while (cap < need) {
        cap *= 2;
    }
    if (cap > RAFT_MAX_SNAPSHOT_BYTES) {
        cap = RAFT_MAX_SNAPSHOT_BYTES;
    }
    p = mem_realloc(r->recv.data, (size_t)cap);
    if (p == NULL) {
        return WEIR_ENOMEM;
    }
    r->recv.data = p;
    r->recv_cap = cap;
    return 0;
}

/* The last chunk is in: the assembled snapshot replaces the log up to its
 * index; entries after it survive only if the log holds its last entry. */
static void raft_install(struct raft *r)
{
    uint64_t idx = r->recv.index;
    bool keep = raft_log_term(&r->log, idx) == r->recv.term;

    raft_snap_own_fini(&r->snap);
    r->snap = r->recv;
    memset(&r->recv, 0, sizeof(r->recv));
    r->recv_cap = 0;
    raft_log_compact(&r->log, idx, r->snap.term);
    if (!keep) {
        raft_mark_cut(r, idx + 1);
    }
    r->commit = idx;
    r->applied = idx;
    memcpy(r->admitted, r->snap.admitted, sizeof(r->admitted));
    raft_refresh_admitted(r, r->snap.term);
    r->snap_install = true;
}

int raft_step_snapshot(struct raft *r, const struct raft_msg *m)
{
    struct raft_snap_own *s = &r->recv;

    if (m->term >= r->hs.term && m->index > r->commit &&
        raft_recv_grow(r, m->offset + m->len) != 0) {
        return WEIR_ENOMEM; /* before any change */
    }
    if (!raft_accept_leader(r, m)) {
        return 0;
    }
    if (m->index <= r->commit) {
        raft_reply_snapshot(r, m, true, true, 0); /* we have it already */
        return 0;
    }
    if (m->offset == 0) {
        s->index = m->index;
        s->term = m->log_term;
        s->len = 0;
        memcpy(s->admitted, m->admitted, sizeof(s->admitted));
    } else if (s->index != m->index || s->term != m->log_term ||
               m->offset != s->len) {
        /* Not the chunk we expect: tell the leader where we are. */
        raft_reply_snapshot(r, m, false, false,
                            s->index == m->index ? s->len : 0);
        return 0;
    }
    if (m->len > 0) {
        memcpy(s->data + s->len, m->data, m->len);
    }
    s->len += m->len;
    if (!m->done) {
        raft_reply_snapshot(r, m, true, false, s->len);
        return 0;
    }
    raft_install(r);
    /* Sent after this ready installed the snapshot (step 2 < 4). */
    raft_reply_snapshot(r, m, true, true, r->snap.len);
    return 0;
}
