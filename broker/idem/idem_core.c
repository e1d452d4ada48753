/* SPDX-License-Identifier: Apache-2.0 */
/* Producer state table: open addressing with linear probing, entries held
 * inline, at most half full. Deletion shifts the rest of a probe run back
 * (no tombstones), so a lookup stops at the first empty slot. A partition
 * that never sees an idempotent batch allocates nothing. */
#include "broker/idem/idem_core.h"

#include <stdio.h>
#include <string.h>

#include "common/mem.h"

#define IDEM_EMPTY       (-1) /* producer_id of a free slot */
#define IDEM_MIN_CAP     8
#define IDEM_PENDING_MAX 8 /* distinct producers in one payload */

struct idem {
    struct idem_producer *slots; /* owned; cap entries */
    uint32_t cap;                /* 0 or a power of two */
    uint32_t count;
};

/* A producer as it would be after the new batches seen so far in the
 * payload being checked. */
struct idem_pending {
    int64_t producer_id;
    int16_t epoch;
    int32_t last_seq;
    bool known; /* in the table already */
};

/* How one batch of a payload fares. */
enum idem_one {
    IDEM_ONE_NEW,
    IDEM_ONE_DUP,
    IDEM_ONE_REFUSE,
};

int32_t idem_seq_add(int32_t seq, int32_t n)
{
    /* Kafka's DefaultRecordBatch.incrementSequence */
    if (seq > INT32_MAX - n) {
        return n - (INT32_MAX - seq) - 1;
    }
    return seq + n;
}

static uint32_t idem_home(const struct idem *s, int64_t producer_id)
{
    uint64_t h = (uint64_t)producer_id * 0x9E3779B97F4A7C15ull;

    return (uint32_t)(h >> 32) & (s->cap - 1);
}

int idem_new(struct idem **out)
{
    *out = mem_calloc(1, sizeof(**out));
    return *out != NULL ? 0 : WEIR_ENOMEM;
}

void idem_free(struct idem *s)
{
    if (s == NULL) {
        return;
    }
    mem_free(s->slots);
    mem_free(s);
}

void idem_clear(struct idem *s)
{
    mem_free(s->slots);
    s->slots = NULL;
    s->cap = 0;
    s->count = 0;
}

static struct idem_producer *idem_slot(const struct idem *s,
                                       int64_t producer_id)
{
    uint32_t i;

    if (s->cap == 0) {
        return NULL;
    }
    for (i = idem_home(s, producer_id);; i = (i + 1) & (s->cap - 1)) {
        if (s->slots[i].producer_id == producer_id) {
            return &s->slots[i];
        }
        if (s->slots[i].producer_id == IDEM_EMPTY) {
            return NULL;
        }
    }
}

const struct idem_producer *idem_find(const struct idem *s, int64_t producer_id)
{
    return producer_id < 0 ? NULL : idem_slot(s, producer_id);
}

uint32_t idem_count(const struct idem *s)
{
    return s->count;
}

/* Place p in a table known to have room and not to hold it. */
static struct idem_producer *idem_place(struct idem *s,
                                        const struct idem_producer *p)
{
    uint32_t i = idem_home(s, p->producer_id);

    while (s->slots[i].producer_id != IDEM_EMPTY) {
        i = (i + 1) & (s->cap - 1);
    }
    s->slots[i] = *p;
    s->count++;
    return &s->slots[i];
}

/* Room for `extra` more producers at most half full. Errors: ENOMEM. */
static int idem_reserve(struct idem *s, uint32_t extra)
{
    struct idem_producer *old = s->slots;
    uint32_t old_cap = s->cap;
    uint32_t cap = s->cap == 0 ? IDEM_MIN_CAP : s->cap;
    uint64_t need = ((uint64_t)s->count + extra) * 2;
    uint32_t i;

    if (need <= s->cap) {
        return 0;
    }
    while (cap < need) {
        if (cap > UINT32_MAX / 2) {
            return WEIR_ENOMEM;
        }
        cap *= 2;
    }
    s->slots = mem_malloc((size_t)cap * sizeof(*s->slots));
    if (s->slots == NULL) {
        s->slots = old;
        return WEIR_ENOMEM;
    }
    for (i = 0; i < cap; i++) {
        s->slots[i].producer_id = IDEM_EMPTY;
    }
    s->cap = cap;
    s->count = 0;
    for (i = 0; i < old_cap; i++) {
        if (old[i].producer_id != IDEM_EMPTY) {
            (void)idem_place(s, &old[i]);
        }
    }
    mem_free(old);
    return 0;
}

/* Empty slot i and shift the rest of its probe run back so that every
 * entry stays reachable from its home slot. */
static void idem_remove_at(struct idem *s, uint32_t i)
{
    uint32_t mask = s->cap - 1;
    uint32_t j = i;
    uint32_t home;

    s->slots[i].producer_id = IDEM_EMPTY;
    s->count--;
    for (;;) {
        j = (j + 1) & mask;
        if (s->slots[j].producer_id == IDEM_EMPTY) {
            return;
        }
        home = idem_home(s, s->slots[j].producer_id);
        /* j may move to the hole at i unless its home lies cyclically in
         * (i, j]: then the hole is before its home */
        if (((j - home) & mask) >= ((j - i) & mask)) {
            s->slots[i] = s->slots[j];
            s->slots[j].producer_id = IDEM_EMPTY;
            i = j;
        }
    }
}

/* Apply one written batch (offsets known). The table has room. */
static void
idem_apply(struct idem *s, const struct batch_header *h, int64_t base_offset)
{
    struct idem_producer *p = idem_slot(s, h->producer_id);
    struct idem_batch *b;

    if (p == NULL) {
        struct idem_producer fresh;
        memset(&fresh, 0, sizeof(fresh));
        fresh.producer_id = h->producer_id;
        fresh.epoch = h->producer_epoch;
        fresh.last_timestamp_ms = h->max_timestamp;
        p = idem_place(s, &fresh);
    } else if (h->producer_epoch > p->epoch) {
        p->epoch = h->producer_epoch; /* a new epoch starts over at 0 */
        p->n_batches = 0;
    } else if (h->producer_epoch < p->epoch) {
        return; /* only a replay can meet this: a fenced writer's batch */
    }
    if (p->n_batches == IDEM_MAX_BATCHES) {
        memmove(&p->batches[0], &p->batches[1],
                (IDEM_MAX_BATCHES - 1) * sizeof(p->batches[0]));
        p->n_batches--;
    }
    b = &p->batches[p->n_batches++];
    b->first_seq = h->base_sequence;
    b->last_seq = idem_seq_add(h->base_sequence, h->last_offset_delta);
    b->base_offset = base_offset;
    b->last_offset = base_offset + h->last_offset_delta;
    if (h->max_timestamp > p->last_timestamp_ms) {
        p->last_timestamp_ms = h->max_timestamp;
    }
}

/* Judge one idempotent batch against the producer's state: `pend` (after
 * earlier new batches of the payload) or else `p` (the table; NULL when
 * unknown). A duplicate's remembered batch goes to *dup. */
static enum idem_one idem_judge(const struct idem_producer *p,
                                const struct idem_pending *pend,
                                const struct batch_header *h,
                                const struct idem_batch **dup,
                                int *code,
                                struct err_detail *ed)
{
    int32_t first = h->base_sequence;
    int32_t last = idem_seq_add(first, h->last_offset_delta);
    int16_t epoch;
    int32_t last_seq;
    uint32_t i;

    if (pend == NULL && p == NULL) {
        if (first == 0) {
            return IDEM_ONE_NEW;
        }
        *code = err_set(ed, WEIR_EUNKNOWN_PRODUCER_ID,
                        "producer %lld is unknown to this partition and its "
                        "batch starts at sequence %d, not 0",
                        (long long)h->producer_id, first);
        return IDEM_ONE_REFUSE;
    }
    epoch = pend != NULL ? pend->epoch : p->epoch;
    last_seq =
        pend != NULL ? pend->last_seq : p->batches[p->n_batches - 1].last_seq;
    if (h->producer_epoch < epoch) {
        *code = err_set(ed, WEIR_EINVALID_PRODUCER_EPOCH,
                        "producer %lld epoch %d is older than epoch %d "
                        "(fenced)",
                        (long long)h->producer_id, h->producer_epoch, epoch);
        return IDEM_ONE_REFUSE;
    }
    if (h->producer_epoch > epoch) {
        if (first == 0) {
            return IDEM_ONE_NEW;
        }
        *code = err_set(ed, WEIR_EOUT_OF_ORDER_SEQUENCE,
                        "producer %lld: new epoch %d must start at "
                        "sequence 0, not %d",
                        (long long)h->producer_id, h->producer_epoch, first);
        return IDEM_ONE_REFUSE;
    }
    for (i = 0; pend == NULL && i < p->n_batches; i++) {
        if (p->batches[i].first_seq == first &&
            p->batches[i].last_seq == last) {
            *dup = &p->batches[i];
            return IDEM_ONE_DUP;
        }
    }
    if (first == idem_seq_add(last_seq, 1)) {
        return IDEM_ONE_NEW;
    }
    *code = err_set(ed, WEIR_EOUT_OF_ORDER_SEQUENCE,
                    "producer %lld epoch %d: expected sequence %d, got "
                    "%d..%d (a gap, or a retry older than the last %d "
                    "batches)",
                    (long long)h->producer_id, epoch, idem_seq_add(last_seq, 1),
                    first, last, IDEM_MAX_BATCHES);
    return IDEM_ONE_REFUSE;
}

static struct idem_pending *
idem_pending_find(struct idem_pending *pend, uint32_t n, int64_t producer_id)
{
    uint32_t i;

    for (i = 0; i < n; i++) {
        if (pend[i].producer_id == producer_id) {
            return &pend[i];
        }
    }
    return NULL;
}

static void idem_refuse(struct idem_check_result *out, int code)
{
    out->verdict = IDEM_VERDICT_REFUSE;
    out->code = code;
}

/* Note a new batch in the pending view. Returns false when the payload
 * names too many producers. */
static bool idem_pending_note(struct idem_pending *pend,
                              uint32_t *n_pend,
                              const struct idem_producer *p,
                              const struct batch_header *h)
{
    struct idem_pending *e = idem_pending_find(pend, *n_pend, h->producer_id);

    if (e == NULL) {
        if (*n_pend == IDEM_PENDING_MAX) {
            return false;
        }
        e = &pend[(*n_pend)++];
        e->producer_id = h->producer_id;
        e->known = p != NULL;
    }
    e->epoch = h->producer_epoch;
    e->last_seq = idem_seq_add(h->base_sequence, h->last_offset_delta);
    return true;
}

/* One payload being checked. */
struct idem_scan {
    struct idem_pending pend[IDEM_PENDING_MAX];
    uint32_t n_pend;
    size_t n_dup;   /* duplicates of remembered batches */
    size_t n_fresh; /* new or not idempotent */
    bool apart;     /* duplicates not written one after the other */
};

/* Judge batch h of the payload; false when it refuses the payload (out
 * says why). */
static bool idem_scan_one(const struct idem *s,
                          struct idem_scan *sc,
                          const struct batch_header *h,
                          struct idem_check_result *out,
                          struct err_detail *ed)
{
    const struct idem_producer *p;
    const struct idem_batch *dup = NULL;
    int code = 0;

    if (h->producer_id < 0) {
        sc->n_fresh++;
        return true;
    }
    out->n_idempotent++;
    if (h->producer_epoch < 0 || h->base_sequence < 0) {
        idem_refuse(out, err_set(ed, WEIR_EINVALID_REQUEST,
                                 "batch of producer %lld has epoch %d and "
                                 "sequence %d: both must be >= 0",
                                 (long long)h->producer_id, h->producer_epoch,
                                 h->base_sequence));
        return false;
    }
    p = idem_slot(s, h->producer_id);
    switch (idem_judge(p,
                       idem_pending_find(sc->pend, sc->n_pend, h->producer_id),
                       h, &dup, &code, ed)) {
    case IDEM_ONE_REFUSE:
        idem_refuse(out, code);
        return false;
    case IDEM_ONE_DUP:
        sc->apart = sc->apart ||
                    (sc->n_dup > 0 && dup->base_offset != out->last_offset + 1);
        if (sc->n_dup++ == 0) {
            out->base_offset = dup->base_offset;
        }
        out->last_offset = dup->last_offset;
        return true;
    case IDEM_ONE_NEW:
        break;
    }
    sc->n_fresh++;
    if (!idem_pending_note(sc->pend, &sc->n_pend, p, h)) {
        idem_refuse(out, err_set(ed, WEIR_EINVALID_REQUEST,
                                 "more than %d producers in one partition's "
                                 "payload",
                                 IDEM_PENDING_MAX));
        return false;
    }
    return true;
}

int idem_check(struct idem *s,
               const struct batch_header *hs,
               size_t n,
               struct idem_check_result *out,
               struct err_detail *ed)
{
    struct idem_scan sc;
    uint32_t n_unknown = 0;
    size_t i;

    memset(out, 0, sizeof(*out));
    memset(&sc, 0, sizeof(sc));
    out->verdict = IDEM_VERDICT_APPEND;
    for (i = 0; i < n; i++) {
        if (!idem_scan_one(s, &sc, &hs[i], out, ed)) {
            return 0;
        }
    }
    if (sc.n_dup > 0 && (sc.n_fresh > 0 || sc.apart)) {
        idem_refuse(out,
                    err_set(ed, WEIR_EINVALID_REQUEST,
                            "%zu of %zu batches were written before and "
                            "%s: send retried batches on their own",
                            sc.n_dup, n,
                            sc.apart ? "not together" : "the others are new"));
        return 0;
    }
    if (sc.n_dup > 0) {
        out->verdict = IDEM_VERDICT_DUPLICATE;
        return 0;
    }
    for (i = 0; i < sc.n_pend; i++) {
        n_unknown += !sc.pend[i].known;
    }
    if (idem_reserve(s, n_unknown) != 0) {
        return err_set(ed, WEIR_ENOMEM, "producer state: out of memory");
    }
    return 0;
}

void idem_record(struct idem *s,
                 const struct batch_header *hs,
                 size_t n,
                 int64_t base_offset)
{
    int64_t off = base_offset;
    size_t i;

    for (i = 0; i < n; i++) {
        if (hs[i].producer_id >= 0) {
            idem_apply(s, &hs[i], off);
        }
        off += (int64_t)hs[i].last_offset_delta + 1;
    }
}

int idem_replay(struct idem *s, const struct batch_header *h)
{
    if (h->producer_id < 0 || h->producer_epoch < 0 || h->base_sequence < 0) {
        return 0;
    }
    if (idem_slot(s, h->producer_id) == NULL && idem_reserve(s, 1) != 0) {
        return WEIR_ENOMEM;
    }
    idem_apply(s, h, h->base_offset);
    return 0;
}

uint32_t idem_expire(struct idem *s, int64_t now_wall_ms, int64_t expiry_ms)
{
    uint32_t removed = 0;
    uint32_t i = 0;

    /* a removal may shift a later entry into slot i: look at i again */
    while (i < s->cap) {
        const struct idem_producer *p = &s->slots[i];
        if (p->producer_id != IDEM_EMPTY &&
            p->last_timestamp_ms < now_wall_ms - expiry_ms) {
            idem_remove_at(s, i);
            removed++;
        } else {
            i++;
        }
    }
    return removed;
}

void idem_each(const struct idem *s, idem_each_fn fn, void *arg)
{
    uint32_t i;

    for (i = 0; i < s->cap; i++) {
        if (s->slots[i].producer_id != IDEM_EMPTY) {
            fn(arg, &s->slots[i]);
        }
    }
}

static bool idem_producer_equal(const struct idem_producer *a,
                                const struct idem_producer *b)
{
    uint32_t i;

    if (a->epoch != b->epoch || a->n_batches != b->n_batches ||
        a->last_timestamp_ms != b->last_timestamp_ms) {
        return false;
    }
    for (i = 0; i < a->n_batches; i++) {
        if (a->batches[i].first_seq != b->batches[i].first_seq ||
            a->batches[i].last_seq != b->batches[i].last_seq ||
            a->batches[i].base_offset != b->batches[i].base_offset ||
            a->batches[i].last_offset != b->batches[i].last_offset) {
            return false;
        }
    }
    return true;
}

bool idem_equal(const struct idem *a, const struct idem *b)
{
    uint32_t i;

    if (a->count != b->count) {
        return false;
    }
    for (i = 0; i < a->cap; i++) {
        const struct idem_producer *p = &a->slots[i];
        const struct idem_producer *q;
        if (p->producer_id == IDEM_EMPTY) {
            continue;
        }
        q = idem_slot(b, p->producer_id);
        if (q == NULL || !idem_producer_equal(p, q)) {
            return false;
        }
    }
    return true;
}

int idem_check_invariants(const struct idem *s, struct err_detail *ed)
{
    uint32_t seen = 0;
    uint32_t i;
    uint32_t k;

    for (i = 0; i < s->cap; i++) {
        const struct idem_producer *p = &s->slots[i];
        if (p->producer_id == IDEM_EMPTY) {
            continue;
        }
        seen++;
        if (idem_slot(s, p->producer_id) != p) {
            return err_set(ed, WEIR_ECORRUPT, "producer %lld unreachable",
                           (long long)p->producer_id);
        }
        if (p->n_batches < 1 || p->n_batches > IDEM_MAX_BATCHES) {
            return err_set(ed, WEIR_ECORRUPT, "producer %lld holds %u batches",
                           (long long)p->producer_id, p->n_batches);
        }
        for (k = 1; k < p->n_batches; k++) {
            if (p->batches[k].base_offset <= p->batches[k - 1].last_offset) {
                return err_set(ed, WEIR_ECORRUPT,
                               "producer %lld: batches out of offset order",
                               (long long)p->producer_id);
            }
        }
    }
    if (seen != s->count || s->count * 2 > s->cap) {
        return err_set(ed, WEIR_ECORRUPT, "count %u, found %u, capacity %u",
                       s->count, seen, s->cap);
    }
    return 0;
}
