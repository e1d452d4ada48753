/* SPDX-License-Identifier: Apache-2.0 */
/* Raft fixture: N cores on virtual time, the adapter's ready loop for each
 * (persist, check, send, apply, advance), the network (delays, drops,
 * duplicates, partitions) and crashes, restarts and disk losses. Events
 * run in time order; ties go to the oldest message.
 * Locality: the test's thread. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/mem.h"
#include "tests/lib/raft_fixture_int.h"

#define RF_READY_ROUNDS 64

uint64_t rf_hash(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;

    for (size_t k = 0; k < n; k++) {
        h = (h ^ b[k]) * 0x100000001b3ull;
    }
    return h;
}

void rf_trace(struct raft_fixture *f, const char *fmt, ...)
{
    char *line = f->trace[f->trace_next % RF_TRACE_LINES];
    int n =
        snprintf(line, RF_TRACE_WIDTH, "%8llu ", (unsigned long long)f->now_ms);
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line + n, RF_TRACE_WIDTH - (size_t)n, fmt, ap);
    va_end(ap);
    f->trace_next++;
}

void rf_fail(struct raft_fixture *f, const char *fmt, ...)
{
    va_list ap;

    if (f->error[0] != '\0') {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(f->error, sizeof(f->error), fmt, ap);
    va_end(ap);
    rf_trace(f, "FAIL %s", f->error);
}

uint64_t raft_fixture_rand(struct raft_fixture *f)
{
    uint64_t z = (f->rng += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void rf_q_drop(struct raft_fixture *f, uint32_t k)
{
    mem_free(f->q[k].buf);
    f->q[k] = f->q[--f->nq];
}

static void rf_enqueue_one(struct raft_fixture *f, const struct raft_msg *m)
{
    size_t sz = (size_t)m->n_entries * sizeof(struct raft_entry) + m->len;
    struct rf_qmsg *q;
    struct raft_entry *es;
    uint8_t *p;
    uint64_t span = f->max_delay_ms - f->min_delay_ms + 1;

    for (uint32_t k = 0; k < m->n_entries; k++) {
        sz += m->entries[k].len;
    }
    if (mem_grow((void **)&f->q, &f->capq, f->nq + 1, sizeof(*f->q)) != 0) {
        return;
    }
    q = &f->q[f->nq];
    q->buf = mem_malloc(sz + 1);
    if (q->buf == NULL) {
        return;
    }
    q->m = *m;
    es = q->buf;
    p = (uint8_t *)q->buf + (size_t)m->n_entries * sizeof(*es);
    for (uint32_t k = 0; k < m->n_entries; k++) {
        es[k] = m->entries[k];
        es[k].data = m->entries[k].len > 0 ? p : NULL;
        if (m->entries[k].len > 0) {
            memcpy(p, m->entries[k].data, m->entries[k].len);
        }
        p += m->entries[k].len;
    }
    q->m.entries = m->n_entries > 0 ? es : NULL;
    if (m->len > 0) {
        memcpy(p, m->data, m->len);
        q->m.data = p;
    }
    q->at_ms = f->now_ms + f->min_delay_ms + raft_fixture_rand(f) % span;
    q->seq = f->seq++;
    f->nq++;
}

static void
rf_send(struct raft_fixture *f, uint32_t i, const struct raft_msg *m)
{
    struct rf_member *mem = &f->mem[i];

    rf_check_msg(f, i, m);
    mem->sent++;
    mem->sent_entries += m->n_entries > 0;
    mem->sent_type[m->type & 7]++;
    if (m->type == f->blocked || raft_fixture_rand(f) % 100 < f->drop_pct) {
        return;
    }
    rf_enqueue_one(f, m);
    if (raft_fixture_rand(f) % 100 < f->dup_pct) {
        rf_enqueue_one(f, m);
    }
}

/* The adapter's ready loop: persist (1-3), send (4), apply (5), advance. */
static void rf_drain(struct raft_fixture *f, uint32_t i)
{
    struct rf_member *m = &f->mem[i];
    struct raft_ready rd;
    int k;

    for (k = 0; k < RF_READY_ROUNDS && m->r != NULL; k++) {
        if (k > 0 && !raft_has_ready(m->r)) {
            break;
        }
        if (raft_ready(m->r, &rd) != 0) {
            rf_fail(f, "member %u: raft_ready failed", i + 1);
            return;
        }
        if (raft_role(m->r) == RAFT_ROLE_LEADER &&
            raft_commit_index(m->r) > m->disk.snap_index + m->disk.n) {
            rf_fail(f, "leader %u commits %llu past its disk's last %llu",
                    i + 1, (unsigned long long)raft_commit_index(m->r),
                    (unsigned long long)(m->disk.snap_index + m->disk.n));
        }
        if (rf_persist(f, i, &rd) != 0) {
            rf_fail(f, "member %u: persisting a ready failed", i + 1);
            raft_advance(m->r, &rd);
            return;
        }
        for (uint32_t j = 0; j < rd.n_msgs; j++) {
            rf_send(f, i, &rd.msgs[j]);
        }
        if (rf_apply(f, i, &rd) != 0) {
            rf_fail(f, "member %u: applying failed", i + 1);
        }
        m->next_tick_ms = rd.next_tick_ms;
        raft_advance(m->r, &rd);
    }
    if (k == RF_READY_ROUNDS) {
        rf_fail(f, "member %u: the ready loop does not settle", i + 1);
    }
    for (uint32_t j = 0; j < f->o.n; j++) {
        rf_check_member(f, j);
    }
}

static int rf_start(struct raft_fixture *f, uint32_t i)
{
    struct rf_member *m = &f->mem[i];
    struct rf_disk *d = &m->disk;
    struct raft_config cfg;
    struct raft_start st;
    struct raft_entry *es = NULL;
    int rv;

    memset(&cfg, 0, sizeof(cfg));
    cfg.id = i + 1;
    cfg.n_voters = f->o.n;
    for (uint32_t k = 0; k < f->o.n; k++) {
        cfg.voters[k] = k + 1;
    }
    cfg.election_timeout_ms = f->o.election_ms;
    cfg.heartbeat_interval_ms = f->o.heartbeat_ms;
    cfg.seed = raft_fixture_rand(f);
    cfg.snapshot_chunk_bytes = f->o.chunk_bytes;
    memset(&st, 0, sizeof(st));
    st.hs = d->hs;
    st.snapshot.index = d->snap_index;
    st.snapshot.term = d->snap_term;
    memcpy(st.snapshot.admitted, d->snap_admitted, sizeof(d->snap_admitted));
    st.snapshot.data = d->snap_data;
    st.snapshot.len = d->snap_len;
    if (d->n > 0) {
        es = mem_calloc(d->n, sizeof(*es));
        if (es == NULL) {
            return WEIR_ENOMEM;
        }
    }
    for (uint32_t k = 0; k < d->n; k++) {
        es[k].index = d->e[k].index;
        es[k].term = d->e[k].term;
        es[k].type = (enum raft_entry_type)d->e[k].type;
        es[k].data = d->e[k].data;
        es[k].len = d->e[k].len;
    }
    st.n_entries = d->n;
    st.entries = es;
    rv = raft_new(&cfg, &st, f->now_ms, &m->r);
    mem_free(es);
    if (rv != 0) {
        rf_fail(f, "member %u: raft_new failed: %d", i + 1, rv);
        return rv;
    }
    m->last_commit = 0; /* the commit index is volatile */
    rv = rf_sm_load(f, i);
    if (rv != 0) {
        return rv;
    }
    rf_trace(f, "member %u starts: term %llu nonce %llx snap %llu last %llu",
             i + 1, (unsigned long long)d->hs.term,
             (unsigned long long)d->hs.nonce, (unsigned long long)d->snap_index,
             (unsigned long long)(d->snap_index + d->n));
    rf_drain(f, i);
    return 0;
}

int raft_fixture_new(const struct raft_fixture_opts *o,
                     struct raft_fixture **out)
{
    struct raft_fixture *f;

    *out = NULL;
    if (o->n == 0 || o->n > RAFT_MAX_VOTERS || o->election_ms == 0 ||
        o->heartbeat_ms == 0) {
        return WEIR_EINVALID_ARGUMENT;
    }
    f = mem_calloc(1, sizeof(*f));
    if (f == NULL) {
        return WEIR_ENOMEM;
    }
    f->o = *o;
    f->rng = o->seed;
    f->min_delay_ms = 1;
    f->max_delay_ms = 1;
    for (uint32_t i = 0; i < o->n; i++) {
        if (rf_start(f, i) != 0) {
            raft_fixture_free(f);
            return WEIR_ENOMEM;
        }
    }
    *out = f;
    return 0;
}

void raft_fixture_free(struct raft_fixture *f)
{
    if (f == NULL) {
        return;
    }
    for (uint32_t i = 0; i < RAFT_MAX_VOTERS; i++) {
        raft_free(f->mem[i].r);
        rf_disk_fini(&f->mem[i].disk);
        rf_sm_fini(&f->mem[i].sm);
    }
    while (f->nq > 0) {
        rf_q_drop(f, f->nq - 1);
    }
    mem_free(f->q);
    mem_free(f->leader_of);
    mem_free(f->committed);
    mem_free(f->ph);
    mem_free(f);
}

struct raft *raft_fixture_core(struct raft_fixture *f, uint32_t i)
{
    return i < f->o.n ? f->mem[i].r : NULL;
}

uint64_t raft_fixture_now(const struct raft_fixture *f)
{
    return f->now_ms;
}

void raft_fixture_net(struct raft_fixture *f,
                      uint32_t drop_pct,
                      uint32_t dup_pct,
                      uint64_t min_delay_ms,
                      uint64_t max_delay_ms)
{
    f->drop_pct = drop_pct;
    f->dup_pct = dup_pct;
    f->min_delay_ms = min_delay_ms;
    f->max_delay_ms = max_delay_ms < min_delay_ms ? min_delay_ms : max_delay_ms;
}

void raft_fixture_partition(struct raft_fixture *f, uint32_t mask)
{
    f->part_mask = mask;
    rf_trace(f, "partition %#x", mask);
}

void raft_fixture_block_type(struct raft_fixture *f, enum raft_msg_type t)
{
    f->blocked = t;
}

void raft_fixture_crash(struct raft_fixture *f, uint32_t i)
{
    struct rf_member *m = &f->mem[i];

    if (m->r == NULL) {
        return;
    }
    raft_free(m->r);
    m->r = NULL;
    for (uint32_t k = f->nq; k > 0; k--) {
        if (f->q[k - 1].m.to == i + 1 || f->q[k - 1].m.from == i + 1) {
            rf_q_drop(f, k - 1);
        }
    }
    rf_trace(f, "member %u crashes", i + 1);
    /* its sockets close: the others' transports see their connections to
     * it go (what ctl_quorum passes on with raft_peer_lost) */
    for (uint32_t j = 0; j < f->o.n; j++) {
        if (j != i && f->mem[j].r != NULL) {
            if (raft_peer_lost(f->mem[j].r, i + 1, f->now_ms) != 0) {
                rf_fail(f, "member %u: raft_peer_lost failed", j + 1);
            }
            rf_drain(f, j);
        }
    }
}

int raft_fixture_restart(struct raft_fixture *f, uint32_t i)
{
    return f->mem[i].r != NULL ? 0 : rf_start(f, i);
}

int raft_fixture_lose_disk(struct raft_fixture *f, uint32_t i)
{
    struct rf_member *m = &f->mem[i];

    raft_fixture_crash(f, i);
    rf_disk_fini(&m->disk);
    rf_sm_fini(&m->sm);
    do {
        m->disk.hs.nonce = raft_fixture_rand(f);
    } while (m->disk.hs.nonce == 0);
    rf_trace(f, "member %u loses its disk", i + 1);
    return rf_start(f, i);
}

bool raft_fixture_is_up(const struct raft_fixture *f, uint32_t i)
{
    return f->mem[i].r != NULL;
}

bool raft_fixture_is_pending(const struct raft_fixture *f, uint32_t i)
{
    const struct rf_member *m = &f->mem[i];

    return m->disk.hs.nonce != 0 && m->disk.hs.readmit_term == 0;
}

bool raft_fixture_was_readmitted(const struct raft_fixture *f, uint32_t i)
{
    const struct rf_member *m = &f->mem[i];

    return m->disk.hs.nonce != 0 && m->disk.hs.readmit_term != 0;
}

static bool rf_same_side(const struct raft_fixture *f, uint32_t a, uint32_t b)
{
    return ((f->part_mask >> a) & 1u) == ((f->part_mask >> b) & 1u);
}

static void rf_deliver(struct raft_fixture *f, uint32_t k)
{
    struct raft_msg m = f->q[k].m;
    void *buf = f->q[k].buf;
    uint32_t to = m.to - 1;
    int rv;

    f->q[k] = f->q[--f->nq];
    if (f->mem[to].r != NULL && rf_same_side(f, m.from - 1, to)) {
        rv = raft_step(f->mem[to].r, &m, f->now_ms);
        if (rv != 0) {
            rf_fail(f, "member %u refused a message of type %d from %u: %d",
                    to + 1, (int)m.type, m.from, rv);
        }
        rf_drain(f, to);
    }
    mem_free(buf);
}

bool raft_fixture_step(struct raft_fixture *f, uint64_t until)
{
    uint64_t best = UINT64_MAX;
    uint32_t qk = UINT32_MAX, mi = UINT32_MAX;

    for (uint32_t k = 0; k < f->nq; k++) {
        if (f->q[k].at_ms < best ||
            (f->q[k].at_ms == best && f->q[k].seq < f->q[qk].seq)) {
            best = f->q[k].at_ms;
            qk = k;
        }
    }
    for (uint32_t i = 0; i < f->o.n; i++) {
        if (f->mem[i].r != NULL && f->mem[i].next_tick_ms < best) {
            best = f->mem[i].next_tick_ms;
            mi = i;
        }
    }
    if (best > until || (qk == UINT32_MAX && mi == UINT32_MAX)) {
        return false;
    }
    if (best > f->now_ms) {
        f->now_ms = best;
    }
    if (mi != UINT32_MAX) {
        if (raft_tick(f->mem[mi].r, f->now_ms) != 0) {
            rf_fail(f, "member %u: raft_tick failed", mi + 1);
        }
        rf_drain(f, mi);
        return true;
    }
    rf_deliver(f, qk);
    return true;
}

void raft_fixture_run(struct raft_fixture *f, uint64_t ms)
{
    uint64_t until = f->now_ms + ms;

    while (raft_fixture_step(f, until)) {
    }
    f->now_ms = until;
}

bool raft_fixture_run_until_active(struct raft_fixture *f,
                                   uint32_t i,
                                   uint64_t ms)
{
    uint64_t until = f->now_ms + ms;

    for (;;) {
        for (uint32_t k = 0; k < f->o.n; k++) {
            if ((i == RAFT_FIXTURE_NONE || i == k) && f->mem[k].r != NULL &&
                raft_is_active_leader(f->mem[k].r)) {
                return true;
            }
        }
        if (!raft_fixture_step(f, until)) {
            return false;
        }
    }
}

uint32_t raft_fixture_leader(const struct raft_fixture *f)
{
    uint32_t best = RAFT_FIXTURE_NONE;

    for (uint32_t i = 0; i < f->o.n; i++) {
        const struct raft *r = f->mem[i].r;

        if (r != NULL && raft_role(r) == RAFT_ROLE_LEADER &&
            (best == RAFT_FIXTURE_NONE ||
             raft_term(r) > raft_term(f->mem[best].r))) {
            best = i;
        }
    }
    return best;
}

int raft_fixture_propose(struct raft_fixture *f,
                         uint32_t i,
                         const void *data,
                         uint32_t len,
                         uint64_t *index)
{
    int rv;

    if (f->mem[i].r == NULL) {
        return WEIR_ENOT_CONTROLLER;
    }
    rv = raft_propose(f->mem[i].r, data, len, index);
    if (rv == 0) {
        rf_drain(f, i);
    }
    return rv;
}

int raft_fixture_snapshot(struct raft_fixture *f, uint32_t i)
{
    return rf_take_snapshot(f, i);
}

uint64_t raft_fixture_applied(const struct raft_fixture *f, uint32_t i)
{
    const struct rf_sm *s = &f->mem[i].sm;

    return s->n == 0 ? 0 : s->rec[s->n - 1].index;
}

uint64_t raft_fixture_sent(const struct raft_fixture *f, uint32_t i)
{
    return f->mem[i].sent;
}

uint64_t raft_fixture_sent_entries(const struct raft_fixture *f, uint32_t i)
{
    return f->mem[i].sent_entries;
}

uint64_t raft_fixture_sent_type(const struct raft_fixture *f,
                                uint32_t i,
                                enum raft_msg_type t)
{
    return f->mem[i].sent_type[t & 7];
}

const char *raft_fixture_error(const struct raft_fixture *f)
{
    return f->error[0] != '\0' ? f->error : NULL;
}

void raft_fixture_dump_trace(const struct raft_fixture *f, FILE *out)
{
    uint32_t n =
        f->trace_next < RF_TRACE_LINES ? f->trace_next : RF_TRACE_LINES;

    for (uint32_t k = f->trace_next - n; k < f->trace_next; k++) {
        fprintf(out, "  %s\n", f->trace[k % RF_TRACE_LINES]);
    }
    for (uint32_t i = 0; i < f->o.n; i++) {
        const struct rf_member *m = &f->mem[i];

        if (m->r == NULL) {
            fprintf(out, "  member %u: down\n", i + 1);
            continue;
        }
        fprintf(out,
                "  member %u: role %d term %llu vote %u leader %u commit "
                "%llu last %llu applied %llu pending %d next tick %llu\n",
                i + 1, (int)raft_role(m->r),
                (unsigned long long)raft_term(m->r), m->disk.hs.vote,
                raft_leader(m->r), (unsigned long long)raft_commit_index(m->r),
                (unsigned long long)raft_last_index(m->r),
                (unsigned long long)raft_fixture_applied(f, i),
                raft_fixture_is_pending(f, i),
                (unsigned long long)m->next_tick_ms);
    }
    for (uint32_t i = 0; i < f->o.n; i++) {
        struct raft_peer_status ps[RAFT_MAX_VOTERS];
        uint32_t np;

        if (f->mem[i].r == NULL || raft_role(f->mem[i].r) != RAFT_ROLE_LEADER) {
            continue;
        }
        np = raft_peer_status(f->mem[i].r, ps, RAFT_MAX_VOTERS);
        for (uint32_t k = 0; k < np; k++) {
            fprintf(out, "  leader %u sees %u: match %llu contact %llu%s\n",
                    i + 1, ps[k].id, (unsigned long long)ps[k].match,
                    (unsigned long long)ps[k].last_contact_ms,
                    ps[k].readmitted ? " readmitted" : "");
        }
    }
    fprintf(out, "  now %llu, %u messages in flight\n",
            (unsigned long long)f->now_ms, f->nq);
}
