/* SPDX-License-Identifier: Apache-2.0 */
/* Partition registry for producer state, and the joins to the log: the
 * tail scan that rebuilds a partition's state, the payload check before
 * an append and the record after it. Entries are kept sorted by topic and
 * partition (looked up on every idempotent produce, added rarely). Each
 * entry remembers the log it was built from: a partition whose log was
 * replaced (topic deleted and created again) is rebuilt, not reused. */
#include "broker/idem/idem_io.h"

#include <string.h>

#include "common/mem.h"
#include "common/trace.h"

struct idem_io_entry {
    char *topic; /* owned */
    int32_t partition;
    const struct plog *log; /* the log the state was built from */
    struct idem *state;     /* owned */
};

struct idem_io {
    int64_t expiry_ms;
    struct idem_io_entry *v; /* owned; sorted by (topic, partition) */
    size_t n;
    size_t cap;
};

int idem_io_new(int64_t expiry_ms, struct idem_io **out)
{
    *out = mem_calloc(1, sizeof(**out));
    if (*out == NULL) {
        return WEIR_ENOMEM;
    }
    (*out)->expiry_ms = expiry_ms;
    return 0;
}

static void idem_io_entry_fini(struct idem_io_entry *e)
{
    mem_free(e->topic);
    idem_free(e->state);
}

void idem_io_free(struct idem_io *r)
{
    size_t i;

    if (r == NULL) {
        return;
    }
    for (i = 0; i < r->n; i++) {
        idem_io_entry_fini(&r->v[i]);
    }
    mem_free(r->v);
    mem_free(r);
}

static int
idem_io_cmp(const struct idem_io_entry *e, const char *topic, int32_t partition)
{
    int c = strcmp(e->topic, topic);

    if (c != 0) {
        return c;
    }
    return e->partition < partition ? -1 : e->partition > partition;
}

/* Index of the entry, or of where it would go (*found false). */
static size_t idem_io_find(const struct idem_io *r,
                           const char *topic,
                           int32_t partition,
                           bool *found)
{
    size_t lo = 0;
    size_t hi = r->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = idem_io_cmp(&r->v[mid], topic, partition);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    *found = false;
    return lo;
}

static void idem_io_remove_at(struct idem_io *r, size_t i)
{
    idem_io_entry_fini(&r->v[i]);
    memmove(&r->v[i], &r->v[i + 1], (r->n - i - 1) * sizeof(r->v[0]));
    r->n--;
}

static int idem_io_replay_cb(void *arg, const struct batch_header *h)
{
    return idem_replay(arg, h);
}

/* Rebuild state from the tail of log. */
static int idem_io_build(const struct idem_io *r,
                         struct plog *log,
                         struct idem *state,
                         int64_t wall_ms,
                         struct err_detail *ed)
{
    int64_t from = plog_scan_start_for_time(log, wall_ms - r->expiry_ms);
    int rv;

    idem_clear(state);
    rv = plog_scan(log, from, idem_io_replay_cb, state, ed);
    if (rv != 0) {
        idem_clear(state);
        err_wrap(ed, "rebuilding producer state of %s", plog_dir(log));
        return rv;
    }
    (void)idem_expire(state, wall_ms, r->expiry_ms);
    return 0;
}

/* The entry for (topic, partition) built from log, creating or
 * rebuilding it as needed. */
static int idem_io_get(struct idem_io *r,
                       const char *topic,
                       int32_t partition,
                       struct plog *log,
                       int64_t wall_ms,
                       struct idem **out,
                       struct err_detail *ed)
{
    struct idem_io_entry e;
    bool found;
    size_t i = idem_io_find(r, topic, partition, &found);
    int rv;

    if (found && r->v[i].log == log) {
        *out = r->v[i].state;
        return 0;
    }
    if (found) { /* the partition's log was replaced */
        idem_io_remove_at(r, i);
    }
    if (r->n == r->cap) {
        size_t cap = r->cap == 0 ? 16 : r->cap * 2;
        struct idem_io_entry *v = mem_realloc(r->v, cap * sizeof(*v));
        if (v == NULL) {
            return err_set(ed, WEIR_ENOMEM, "producer state: out of memory");
        }
        r->v = v;
        r->cap = cap;
    }
    memset(&e, 0, sizeof(e));
    e.topic = mem_strdup(topic);
    e.partition = partition;
    e.log = log;
    if (e.topic == NULL || idem_new(&e.state) != 0) {
        idem_io_entry_fini(&e);
        return err_set(ed, WEIR_ENOMEM, "producer state: out of memory");
    }
    rv = idem_io_build(r, log, e.state, wall_ms, ed);
    if (rv != 0) {
        idem_io_entry_fini(&e);
        return rv;
    }
    memmove(&r->v[i + 1], &r->v[i], (r->n - i) * sizeof(r->v[0]));
    r->v[i] = e;
    r->n++;
    *out = e.state;
    return 0;
}

struct idem_io_load {
    struct idem_io *r;
    int64_t wall_ms;
    uint64_t producers;
};

static void idem_io_load_one(void *arg,
                             const char *topic,
                             int32_t partition,
                             struct plog *log)
{
    struct idem_io_load *l = arg;
    struct err_detail ed;
    struct idem *state;

    err_detail_clear(&ed);
    if (log == NULL) {
        return;
    }
    if (idem_io_get(l->r, topic, partition, log, l->wall_ms, &state, &ed) !=
        0) {
        trace_error("idem",
                    "event=producer_state_failed topic=%s partition=%d "
                    "msg=\"%s\" action=retry_on_first_produce",
                    topic, partition, ed.msg);
        return;
    }
    l->producers += idem_count(state);
}

uint64_t idem_io_load_all(struct idem_io *r, struct logmgr *m, int64_t wall_ms)
{
    struct idem_io_load l = {r, wall_ms, 0};

    logmgr_each(m, idem_io_load_one, &l);
    return l.producers;
}

void idem_io_drop_topic(struct idem_io *r, const char *topic)
{
    size_t i = 0;

    while (i < r->n) {
        if (strcmp(r->v[i].topic, topic) == 0) {
            idem_io_remove_at(r, i);
        } else {
            i++;
        }
    }
}

void idem_io_invalidate(struct idem_io *r, const char *topic, int32_t partition)
{
    bool found;
    size_t i = idem_io_find(r, topic, partition, &found);

    if (found) {
        idem_io_remove_at(r, i);
    }
}

uint64_t idem_io_expire(struct idem_io *r, int64_t wall_ms)
{
    uint64_t n = 0;
    size_t i;

    for (i = 0; i < r->n; i++) {
        n += idem_expire(r->v[i].state, wall_ms, r->expiry_ms);
    }
    return n;
}

/* Walk the batch headers of a payload, storing them in hs when not NULL.
 * False when one does not decode: the append will say what is wrong. */
static bool idem_io_walk(const uint8_t *data,
                         size_t len,
                         struct batch_header *hs,
                         size_t *n,
                         bool *idempotent)
{
    struct batch_header h;
    size_t pos;

    *n = 0;
    *idempotent = false;
    for (pos = 0; pos < len; pos += batch_size(&h)) {
        if (len - pos < BATCH_HEADER_BYTES ||
            batch_header_decode(data + pos, len - pos, UINT32_MAX, &h, NULL) !=
                0 ||
            batch_size(&h) > len - pos) {
            return false;
        }
        *idempotent = *idempotent || h.producer_id >= 0;
        if (hs != NULL) {
            hs[*n] = h;
        }
        (*n)++;
    }
    return true;
}

/* The payload's batch headers into p; p->n stays 0 when none is
 * idempotent or they do not all decode. Errors: WEIR_ENOMEM. */
static int
idem_io_headers(const uint8_t *data, size_t len, struct idem_io_payload *p)
{
    size_t n;
    bool idempotent;

    if (!idem_io_walk(data, len, NULL, &n, &idempotent) || !idempotent) {
        return 0;
    }
    p->hs = n <= sizeof(p->inline_hs) / sizeof(p->inline_hs[0])
                ? p->inline_hs
                : mem_calloc(n, sizeof(*p->hs));
    if (p->hs == NULL) {
        return WEIR_ENOMEM;
    }
    (void)idem_io_walk(data, len, p->hs, &p->n, &idempotent);
    return 0;
}

int idem_io_check(struct idem_io *r,
                  const char *topic,
                  int32_t partition,
                  struct plog *log,
                  int64_t wall_ms,
                  const uint8_t *data,
                  size_t len,
                  struct idem_io_payload *p,
                  struct err_detail *ed)
{
    int rv;

    memset(p, 0, sizeof(*p));
    p->res.verdict = IDEM_VERDICT_APPEND;
    if (idem_io_headers(data, len, p) != 0) {
        return err_set(ed, WEIR_ENOMEM, "producer state: out of memory");
    }
    if (p->n == 0) {
        return 0;
    }
    rv = idem_io_get(r, topic, partition, log, wall_ms, &p->state, ed);
    if (rv != 0) {
        return rv;
    }
    return idem_check(p->state, p->hs, p->n, &p->res, ed);
}

void idem_io_appended(struct idem_io_payload *p, int64_t base_offset)
{
    if (p->state != NULL) {
        idem_record(p->state, p->hs, p->n, base_offset);
    }
}

void idem_io_append_failed(struct idem_io *r,
                           struct idem_io_payload *p,
                           const char *topic,
                           int32_t partition,
                           struct plog *log,
                           int64_t end_before)
{
    struct err_detail ed;

    /* A failure after part of the payload reached the log (a later
     * segment could not be written) leaves batches a retry must find. */
    if (p->state == NULL || plog_end_offset(log) <= end_before) {
        return;
    }
    if (plog_scan(log, end_before, idem_io_replay_cb, p->state, &ed) != 0) {
        trace_error("idem",
                    "event=producer_state_dropped topic=%s partition=%d "
                    "msg=\"%s\" action=rebuild_on_next_produce",
                    topic, partition, ed.msg);
        idem_io_invalidate(r, topic, partition);
        p->state = NULL;
    }
}

void idem_io_payload_fini(struct idem_io_payload *p)
{
    if (p->hs != p->inline_hs) {
        mem_free(p->hs);
    }
    p->hs = NULL;
    p->n = 0;
}
