/* SPDX-License-Identifier: Apache-2.0 */
/* Raft fixture: each member's fake disk (hard state, snapshot, entries),
 * its state machine (the applied entries and the readmission table), and
 * the safety checks that need them: log matching through a hash of each
 * log prefix, state-machine safety against the first applied entry per
 * index, leader completeness, and no message ahead of its disk.
 * Locality: the test's thread. */
#include <stdlib.h>
#include <string.h>

#include "common/mem.h"
#include "tests/lib/raft_fixture_int.h"

void rf_disk_fini(struct rf_disk *d)
{
    for (uint32_t k = 0; k < d->n; k++) {
        mem_free(d->e[k].data);
    }
    mem_free(d->e);
    mem_free(d->snap_data);
    memset(d, 0, sizeof(*d));
}

void rf_sm_fini(struct rf_sm *s)
{
    mem_free(s->rec);
    memset(s, 0, sizeof(*s));
}

static uint64_t rf_disk_last(const struct rf_disk *d)
{
    return d->snap_index + d->n;
}

static const struct rf_entry *rf_disk_at(const struct rf_disk *d, uint64_t i)
{
    if (i <= d->snap_index || i > rf_disk_last(d)) {
        return NULL;
    }
    return &d->e[i - d->snap_index - 1];
}

static uint64_t
rf_entry_hash(uint64_t term, int type, const uint8_t *data, uint32_t len)
{
    uint64_t h = rf_hash(0xcbf29ce484222325ull, &term, sizeof(term));

    h = rf_hash(h, &type, sizeof(type));
    return rf_hash(h, data, len);
}

/* Log matching: the same (index, term) anywhere has the same prefix. */
static void
rf_check_ph(struct raft_fixture *f, uint64_t index, uint64_t term, uint64_t ph)
{
    uint64_t k;

    if (f->ph_n * 2 >= f->ph_cap) {
        uint64_t cap = f->ph_cap ? f->ph_cap * 2 : 1024;
        struct rf_ph *n = mem_calloc(cap, sizeof(*n));
        struct rf_ph *old = f->ph;

        if (n == NULL) {
            rf_fail(f, "out of memory in the checker");
            return;
        }
        for (uint64_t j = 0; j < f->ph_cap; j++) {
            if (old[j].index != 0) {
                k = (old[j].index * 0x9e3779b97f4a7c15ull ^ old[j].term) &
                    (cap - 1);
                while (n[k].index != 0) {
                    k = (k + 1) & (cap - 1);
                }
                n[k] = old[j];
            }
        }
        mem_free(old);
        f->ph = n;
        f->ph_cap = cap;
    }
    k = (index * 0x9e3779b97f4a7c15ull ^ term) & (f->ph_cap - 1);
    while (f->ph[k].index != 0) {
        if (f->ph[k].index == index && f->ph[k].term == term) {
            if (f->ph[k].ph != ph) {
                rf_fail(f,
                        "log matching: entry %llu term %llu has two "
                        "different prefixes",
                        (unsigned long long)index, (unsigned long long)term);
            }
            return;
        }
        k = (k + 1) & (f->ph_cap - 1);
    }
    f->ph[k].index = index;
    f->ph[k].term = term;
    f->ph[k].ph = ph;
    f->ph_n++;
}

static int rf_disk_append(struct raft_fixture *f,
                          struct rf_disk *d,
                          const struct raft_entry *e)
{
    const struct rf_entry *prev = rf_disk_at(d, e->index - 1);
    uint64_t ph = prev != NULL ? prev->ph : d->snap_ph;
    struct rf_entry *n;
    uint64_t eh;

    if (e->index != rf_disk_last(d) + 1) {
        rf_fail(f, "ready entry %llu does not follow the disk's last %llu",
                (unsigned long long)e->index,
                (unsigned long long)rf_disk_last(d));
        return WEIR_EINVALID_ARGUMENT;
    }
    if (mem_grow((void **)&d->e, &d->cap, d->n + 1, sizeof(*d->e)) != 0) {
        return WEIR_ENOMEM;
    }
    n = &d->e[d->n];
    memset(n, 0, sizeof(*n));
    if (e->len > 0) {
        n->data = mem_malloc(e->len);
        if (n->data == NULL) {
            return WEIR_ENOMEM;
        }
        memcpy(n->data, e->data, e->len);
    }
    n->index = e->index;
    n->term = e->term;
    n->type = (int)e->type;
    n->len = e->len;
    eh = rf_entry_hash(e->term, (int)e->type, e->data, e->len);
    n->ph = rf_hash(ph, &eh, sizeof(eh));
    d->n++;
    rf_check_ph(f, n->index, n->term, n->ph);
    return 0;
}

static void rf_disk_cut(struct rf_disk *d, uint64_t from)
{
    while (d->n > 0 && d->e[d->n - 1].index >= from) {
        d->n--;
        mem_free(d->e[d->n].data);
        d->e[d->n].data = NULL;
    }
}

/* Drop entries up to index; the snapshot takes their place. */
static void rf_disk_compact(struct rf_disk *d, uint64_t index)
{
    uint32_t drop = 0;

    while (drop < d->n && d->e[drop].index <= index) {
        mem_free(d->e[drop].data);
        drop++;
    }
    if (drop > 0) {
        memmove(d->e, d->e + drop, (d->n - drop) * sizeof(*d->e));
        d->n -= drop;
    }
}

static uint64_t rf_sm_last(const struct rf_sm *s)
{
    return s->n == 0 ? 0 : s->rec[s->n - 1].index;
}

static void rf_note_committed(struct raft_fixture *f,
                              uint64_t index,
                              uint64_t term,
                              uint64_t hash)
{
    struct rf_committed *c;

    if (index >= f->cap_committed) {
        uint64_t cap = f->cap_committed ? f->cap_committed : 256;
        struct rf_committed *n;

        while (cap <= index) {
            cap *= 2;
        }
        n = mem_realloc(f->committed, cap * sizeof(*n));
        if (n == NULL) {
            rf_fail(f, "out of memory in the checker");
            return;
        }
        memset(n + f->cap_committed, 0, (cap - f->cap_committed) * sizeof(*n));
        f->committed = n;
        f->cap_committed = cap;
    }
    c = &f->committed[index];
    if (c->term == 0) {
        c->term = term;
        c->hash = hash;
        if (index > f->max_committed) {
            f->max_committed = index;
        }
        /* Leader completeness: every leader of a later term has it. */
        for (uint32_t i = 0; i < f->o.n; i++) {
            struct rf_member *m = &f->mem[i];
            const struct rf_entry *e;

            if (m->r == NULL || raft_role(m->r) != RAFT_ROLE_LEADER ||
                raft_term(m->r) <= term || index <= m->disk.snap_index) {
                continue;
            }
            e = rf_disk_at(&m->disk, index);
            if (e == NULL || e->term != term) {
                rf_fail(f,
                        "leader completeness: leader %u of term %llu "
                        "lacks committed entry %llu",
                        i + 1, (unsigned long long)raft_term(m->r),
                        (unsigned long long)index);
            }
        }
    } else if (c->term != term || c->hash != hash) {
        rf_fail(f,
                "state machine safety: two different entries applied at "
                "index %llu",
                (unsigned long long)index);
    }
}

static int
rf_sm_push(struct rf_sm *s, uint64_t index, uint64_t term, uint64_t hash)
{
    if (mem_grow((void **)&s->rec, &s->cap, s->n + 1, sizeof(*s->rec)) != 0) {
        return WEIR_ENOMEM;
    }
    s->rec[s->n].index = index;
    s->rec[s->n].term = term;
    s->rec[s->n].hash = hash;
    s->n++;
    return 0;
}

/* Snapshot bytes: u64 ph | u64 count | count x (index, term, hash). */
static int rf_sm_decode(struct raft_fixture *f,
                        struct rf_sm *s,
                        const uint8_t *data,
                        uint64_t len,
                        uint64_t index,
                        uint64_t *ph)
{
    uint64_t count;

    s->n = 0;
    if (len < 16) {
        rf_fail(f, "snapshot of %llu bytes is too short",
                (unsigned long long)len);
        return WEIR_EINVALID_ARGUMENT;
    }
    memcpy(ph, data, 8);
    memcpy(&count, data + 8, 8);
    if (len != 16 + count * 24 || count != index) {
        rf_fail(f, "snapshot at %llu is not whole", (unsigned long long)index);
        return WEIR_EINVALID_ARGUMENT;
    }
    for (uint64_t k = 0; k < count; k++) {
        struct rf_rec rec;

        memcpy(&rec, data + 16 + k * 24, 24);
        if (rec.index != k + 1 ||
            rf_sm_push(s, rec.index, rec.term, rec.hash) != 0) {
            rf_fail(f, "snapshot record %llu is wrong", (unsigned long long)k);
            return WEIR_EINVALID_ARGUMENT;
        }
        rf_note_committed(f, rec.index, rec.term, rec.hash);
    }
    return 0;
}

int rf_persist(struct raft_fixture *f, uint32_t i, const struct raft_ready *rd)
{
    struct rf_member *m = &f->mem[i];
    struct rf_disk *d = &m->disk;
    int rv;

    if (rd->hard_state_changed) {
        d->hs = rd->hs;
    }
    if (rd->has_snapshot) {
        uint8_t *copy = mem_malloc(rd->snapshot.len + 1);

        if (copy == NULL) {
            return WEIR_ENOMEM;
        }
        if (rd->snapshot.len > 0) {
            memcpy(copy, rd->snapshot.data, rd->snapshot.len);
        }
        rv = rf_sm_decode(f, &m->sm, copy, rd->snapshot.len, rd->snapshot.index,
                          &d->snap_ph);
        if (rv != 0) {
            mem_free(copy);
            return rv;
        }
        memcpy(m->sm.admitted, rd->snapshot.admitted, sizeof(m->sm.admitted));
        rf_disk_compact(d, rd->snapshot.index);
        mem_free(d->snap_data);
        d->snap_data = copy;
        d->snap_len = rd->snapshot.len;
        d->snap_index = rd->snapshot.index;
        d->snap_term = rd->snapshot.term;
        memcpy(d->snap_admitted, rd->snapshot.admitted,
               sizeof(d->snap_admitted));
    }
    if (rd->truncate_from != 0) {
        if (rd->truncate_from <= rf_sm_last(&m->sm) ||
            (rd->n_entries > 0 && rd->entries[0].index != rd->truncate_from)) {
            rf_fail(f, "member %u: cut from %llu below applied %llu", i + 1,
                    (unsigned long long)rd->truncate_from,
                    (unsigned long long)rf_sm_last(&m->sm));
            return WEIR_EINVALID_ARGUMENT;
        }
        rf_disk_cut(d, rd->truncate_from);
    }
    for (uint32_t k = 0; k < rd->n_entries; k++) {
        rv = rf_disk_append(f, d, &rd->entries[k]);
        if (rv != 0) {
            return rv;
        }
    }
    return 0;
}

void rf_check_msg(struct raft_fixture *f, uint32_t i, const struct raft_msg *m)
{
    const struct rf_disk *d = &f->mem[i].disk;
    bool ok = true;

    switch (m->type) {
    case RAFT_MSG_VOTE:
        ok = m->pre_vote || (d->hs.term == m->term && d->hs.vote == i + 1);
        break;
    case RAFT_MSG_VOTE_RESP:
        ok = m->pre_vote || !m->granted ||
             (d->hs.term == m->term && d->hs.vote == m->to);
        break;
    case RAFT_MSG_APPEND:
    case RAFT_MSG_SNAPSHOT:
        ok = d->hs.term == m->term;
        break;
    case RAFT_MSG_APPEND_RESP:
        ok = (!m->success ||
              (d->hs.term >= m->term && rf_disk_last(d) >= m->match)) &&
             (!m->readmitted || d->hs.readmit_term != 0);
        break;
    case RAFT_MSG_SNAPSHOT_RESP:
        ok = !m->done || !m->success || rf_disk_last(d) >= m->index;
        break;
    }
    if (!ok) {
        rf_fail(f,
                "member %u sent type %d term %llu to %u before its disk "
                "held it (disk term %llu vote %u last %llu)",
                i + 1, (int)m->type, (unsigned long long)m->term, m->to,
                (unsigned long long)d->hs.term, d->hs.vote,
                (unsigned long long)rf_disk_last(d));
    }
}

static void rf_sm_readmit(struct rf_sm *s, const struct raft_entry *e)
{
    uint64_t nonce = 0;
    uint32_t id = 0;

    if (e->len != 12) {
        return;
    }
    for (int k = 0; k < 4; k++) {
        id = (id << 8) | e->data[k];
    }
    for (int k = 0; k < 8; k++) {
        nonce = (nonce << 8) | e->data[4 + k];
    }
    if (id >= 1 && id <= RAFT_MAX_VOTERS) {
        s->admitted[id - 1] = nonce;
    }
}

int rf_apply(struct raft_fixture *f, uint32_t i, const struct raft_ready *rd)
{
    struct rf_sm *s = &f->mem[i].sm;

    for (uint32_t k = 0; k < rd->n_committed; k++) {
        const struct raft_entry *e = &rd->committed[k];
        uint64_t h = rf_entry_hash(e->term, (int)e->type, e->data, e->len);

        if (e->index != rf_sm_last(s) + 1) {
            rf_fail(f, "member %u applies %llu after %llu", i + 1,
                    (unsigned long long)e->index,
                    (unsigned long long)rf_sm_last(s));
            return WEIR_EINVALID_ARGUMENT;
        }
        if (rf_sm_push(s, e->index, e->term, h) != 0) {
            return WEIR_ENOMEM;
        }
        if (e->type == RAFT_ENTRY_READMIT) {
            rf_sm_readmit(s, e);
        }
        rf_note_committed(f, e->index, e->term, h);
    }
    return 0;
}

int rf_sm_load(struct raft_fixture *f, uint32_t i)
{
    struct rf_member *m = &f->mem[i];
    uint64_t ph;

    m->sm.n = 0;
    memcpy(m->sm.admitted, m->disk.snap_admitted, sizeof(m->sm.admitted));
    if (m->disk.snap_index == 0) {
        return 0;
    }
    return rf_sm_decode(f, &m->sm, m->disk.snap_data, m->disk.snap_len,
                        m->disk.snap_index, &ph);
}

int rf_take_snapshot(struct raft_fixture *f, uint32_t i)
{
    struct rf_member *m = &f->mem[i];
    uint64_t last = rf_sm_last(&m->sm);
    const struct rf_entry *e = rf_disk_at(&m->disk, last);
    struct raft_snapshot snap;
    uint64_t len = 16 + (uint64_t)m->sm.n * 24;
    uint64_t count = m->sm.n;
    uint8_t *data;
    int rv;

    if (m->r == NULL || e == NULL || last <= m->disk.snap_index) {
        return 0;
    }
    data = mem_malloc(len);
    if (data == NULL) {
        return WEIR_ENOMEM;
    }
    memcpy(data, &e->ph, 8);
    memcpy(data + 8, &count, 8);
    memcpy(data + 16, m->sm.rec, count * 24);
    memset(&snap, 0, sizeof(snap));
    snap.index = last;
    snap.term = e->term;
    memcpy(snap.admitted, m->sm.admitted, sizeof(snap.admitted));
    snap.data = data;
    snap.len = len;
    rv = raft_snapshot_taken(m->r, &snap);
    if (rv != 0) {
        mem_free(data);
        return rv;
    }
    m->disk.snap_ph = e->ph;
    rf_disk_compact(&m->disk, last);
    mem_free(m->disk.snap_data);
    m->disk.snap_data = data;
    m->disk.snap_len = len;
    m->disk.snap_index = snap.index;
    m->disk.snap_term = snap.term;
    memcpy(m->disk.snap_admitted, snap.admitted, sizeof(snap.admitted));
    return 0;
}

static void rf_check_new_leader(struct raft_fixture *f, uint32_t i)
{
    const struct rf_disk *d = &f->mem[i].disk;

    for (uint64_t k = d->snap_index + 1; k <= f->max_committed; k++) {
        const struct rf_entry *e = rf_disk_at(d, k);
        const struct rf_committed *c = &f->committed[k];

        if (c->term == 0) {
            continue;
        }
        if (e == NULL || e->term != c->term ||
            rf_entry_hash(e->term, e->type, e->data, e->len) != c->hash) {
            rf_fail(f,
                    "leader completeness: new leader %u of term %llu "
                    "lacks committed entry %llu",
                    i + 1, (unsigned long long)d->hs.term,
                    (unsigned long long)k);
            return;
        }
    }
}

void rf_check_member(struct raft_fixture *f, uint32_t i)
{
    struct rf_member *m = &f->mem[i];
    uint64_t t, c;

    if (m->r == NULL) {
        return;
    }
    c = raft_commit_index(m->r);
    if (c < m->last_commit) {
        rf_fail(f, "member %u: commit went from %llu down to %llu", i + 1,
                (unsigned long long)m->last_commit, (unsigned long long)c);
    }
    m->last_commit = c;
    if (raft_role(m->r) != RAFT_ROLE_LEADER) {
        return;
    }
    t = raft_term(m->r);
    if (t >= f->cap_terms) {
        uint64_t cap = f->cap_terms ? f->cap_terms : 256;
        uint32_t *n;

        while (cap <= t) {
            cap *= 2;
        }
        if (cap > (1u << 24)) {
            rf_fail(f, "term %llu runs away", (unsigned long long)t);
            return;
        }
        n = mem_realloc(f->leader_of, cap * sizeof(*n));
        if (n == NULL) {
            rf_fail(f, "out of memory in the checker");
            return;
        }
        memset(n + f->cap_terms, 0, (cap - f->cap_terms) * sizeof(*n));
        f->leader_of = n;
        f->cap_terms = cap;
    }
    if (f->leader_of[t] == 0) {
        f->leader_of[t] = i + 1;
        rf_trace(f, "member %u leads term %llu", i + 1, (unsigned long long)t);
        rf_check_new_leader(f, i);
    } else if (f->leader_of[t] != i + 1) {
        rf_fail(f, "election safety: members %u and %u both lead term %llu",
                f->leader_of[t], i + 1, (unsigned long long)t);
    }
}
