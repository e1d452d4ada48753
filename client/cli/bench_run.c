/* SPDX-License-Identifier: Apache-2.0 */
/* The two bench loops. */
#include <inttypes.h>
#include <string.h>

#include "client/cli/bench.h"
#include "client/cli/cli.h"
#include "client/cli/seqwin.h"
#include "common/buf.h"
#include "common/mem.h"

#define BENCH_POLL_EVERY 128 /* records between producer polls */

struct bench_prod {
    struct bench_stats *s;
    struct seqwin win; /* send times by record number */
    uint64_t sent;     /* accepted by weir_produce */
    char first_err[400];
};

static void bench_on_delivery(void *arg, const struct weir_delivery *d)
{
    struct bench_prod *b = arg;
    uint64_t seq = (uint64_t)(uintptr_t)d->opaque;
    struct seqwin_slot *slot = seqwin_at(&b->win, seq);
    struct seqwin_slot done;
    uint64_t now = clock_mono_us();

    if (d->error_code != 0) {
        if (b->s->errors++ == 0) {
            (void)snprintf(b->first_err, sizeof(b->first_err), "%s: %s",
                           weir_err_name(d->error_code), d->error_msg);
        }
    } else {
        b->s->records++;
        b->s->bytes += b->s->record_size;
        if (slot != NULL) {
            hist_record(&b->s->lat, now - slot->stamp);
        }
    }
    seqwin_complete(&b->win, seq, d->partition, d->offset, d->error_code);
    while (seqwin_pop(&b->win, &done)) {
    }
    b->s->end_us = now;
    bench_progress(b->s, false);
}

/* Wait until record i is due at the requested rate. */
static void bench_pace(struct weir_producer *p,
                       const struct bench_opts *o,
                       uint64_t start,
                       int64_t i,
                       struct bench_stats *s)
{
    uint64_t due = start + (uint64_t)((double)i * 1e6 / (double)o->rate);
    uint64_t now;

    /* records may go up to 1 ms early, so the wait is always at least a
     * millisecond of poll() rather than a busy loop of zero timeouts */
    while (!cli_stop && (now = clock_mono_us()) + 1000 < due) {
        (void)weir_producer_poll(p, (int)((due - now) / 1000));
        bench_progress(s, false);
    }
}

static int bench_send_all(struct weir_producer *p,
                          const struct bench_opts *o,
                          struct bench_prod *b,
                          uint8_t *value)
{
    struct err_detail ed;
    uint64_t seq;
    int64_t i;

    for (i = 0; i < o->records && !cli_stop; i++) {
        if (o->rate > 0) {
            bench_pace(p, o, b->s->start_us, i, b->s);
        }
        if (o->record_size >= BENCH_STAMP_BYTES) {
            wire_put_u64be(value + BENCH_MAGIC_BYTES, bench_wall_us());
        }
        if (seqwin_push(&b->win, clock_mono_us(), &seq) != 0) {
            return cli_failf("out of memory");
        }
        if (weir_produce(p, o->topic, WEIR_PARTITION_ANY, NULL, 0, value,
                         (size_t)o->record_size, -1, (void *)(uintptr_t)seq,
                         &ed) != 0) {
            return cli_fail(&ed);
        }
        b->sent++;
        if (i % BENCH_POLL_EVERY == 0) {
            (void)weir_producer_poll(p, 0);
            bench_progress(b->s, false);
        }
    }
    return 0;
}

int bench_produce(struct weir_client *c, struct bench_opts *o)
{
    struct bench_prod b;
    struct weir_producer *p = NULL;
    struct err_detail ed;
    uint8_t *value;
    int rv;

    memset(&b, 0, sizeof(b));
    b.s = mem_calloc(1, sizeof(*b.s));
    value = mem_malloc((size_t)o->record_size + 1);
    if (b.s == NULL || value == NULL) {
        mem_free(b.s);
        mem_free(value);
        return cli_failf("out of memory");
    }
    memset(value, 'x', (size_t)o->record_size);
    if (o->record_size >= BENCH_STAMP_BYTES) {
        memcpy(value, BENCH_MAGIC, BENCH_MAGIC_BYTES);
    }
    hist_init(&b.s->lat);
    seqwin_init(&b.win);
    b.s->mode = "produce";
    b.s->topic = o->topic;
    b.s->lat_kind = "ack";
    b.s->record_size = (size_t)o->record_size;
    o->pc.on_delivery = bench_on_delivery;
    o->pc.cb_arg = &b;
    rv = weir_producer_new(c, &o->pc, &p, &ed);
    if (rv != 0) {
        rv = cli_fail(&ed);
        goto out;
    }
    b.s->start_us = clock_mono_us();
    b.s->end_us = b.s->start_us;
    b.s->last_progress_us = b.s->start_us;
    b.s->next_progress_us = b.s->start_us + 1000000;
    rv = bench_send_all(p, o, &b, value);
    if (rv == 0 && weir_producer_flush(p, -1, &ed) != 0) {
        rv = cli_fail(&ed);
    }
    b.s->unacked = b.sent - b.s->records - b.s->errors;
    bench_summary(b.s, o->json);
    if (rv == 0 && b.s->errors > 0) {
        rv = cli_failf("%" PRIu64 " records failed (first: %s)", b.s->errors,
                       b.first_err);
    }
out:
    weir_producer_free(p);
    seqwin_fini(&b.win);
    mem_free(value);
    mem_free(b.s);
    return rv;
}

struct bench_cons {
    struct bench_stats *s;
    struct hist *fetch; /* fetch round trips, µs */
};

static void bench_on_fetch(void *arg, uint64_t latency_us, size_t bytes)
{
    struct bench_cons *b = arg;

    (void)bytes;
    hist_record(b->fetch, latency_us);
}

static int bench_assign(struct weir_client *c,
                        struct weir_consumer *k,
                        const struct bench_opts *o,
                        struct err_detail *ed)
{
    struct weir_assignment *as;
    int32_t n;
    int32_t i;
    int rv = weir_client_partition_count(c, o->topic, &n, ed);

    if (rv != 0) {
        return rv;
    }
    as = mem_calloc((size_t)n, sizeof(*as));
    if (as == NULL) {
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    for (i = 0; i < n; i++) {
        as[i].topic = o->topic;
        as[i].partition = i;
        as[i].start = o->from_latest ? WEIR_START_LATEST : WEIR_START_EARLIEST;
    }
    rv = weir_consumer_assign(k, as, (size_t)n, ed);
    mem_free(as);
    return rv;
}

static void bench_record(struct bench_stats *s, const struct weir_record *r)
{
    const uint8_t *v = r->value;
    uint64_t now = clock_mono_us();
    uint64_t sent;
    uint64_t wall;

    if (s->records == 0) {
        s->start_us = now;
        s->last_progress_us = now;
        s->next_progress_us = now + 1000000;
    }
    s->records++;
    s->bytes += r->value_len;
    s->end_us = now;
    if (r->value_len >= BENCH_STAMP_BYTES &&
        memcmp(v, BENCH_MAGIC, BENCH_MAGIC_BYTES) == 0) {
        sent = wire_get_u64be(v + BENCH_MAGIC_BYTES);
        wall = bench_wall_us();
        hist_record(&s->lat, wall > sent ? wall - sent : 0);
    }
}

static int bench_consume_loop(struct weir_consumer *k,
                              const struct bench_opts *o,
                              struct bench_stats *s)
{
    const struct weir_record *rec;
    struct err_detail ed;
    uint64_t last = clock_mono_us();
    uint64_t now;

    while (!cli_stop && s->records < (uint64_t)o->records) {
        now = clock_mono_us();
        if (now >= last + (uint64_t)o->timeout_ms * 1000) {
            break;
        }
        if (weir_consumer_poll(
                k,
                (int)((last + (uint64_t)o->timeout_ms * 1000 - now) / 1000) + 1,
                &rec, &ed) != 0) {
            return cli_fail(&ed);
        }
        if (rec != NULL) {
            bench_record(s, rec);
            last = clock_mono_us();
        }
        bench_progress(s, false);
    }
    return 0;
}

int bench_consume(struct weir_client *c, const struct bench_opts *o)
{
    struct weir_consumer_config kc;
    struct weir_consumer *k = NULL;
    struct bench_cons b;
    struct err_detail ed;
    int rv;

    b.s = mem_calloc(1, sizeof(*b.s));
    b.fetch = mem_malloc(sizeof(*b.fetch));
    if (b.s == NULL || b.fetch == NULL) {
        rv = cli_failf("out of memory");
        goto out;
    }
    hist_init(&b.s->lat);
    hist_init(b.fetch);
    b.s->mode = "consume";
    b.s->topic = o->topic;
    b.s->record_size = (size_t)o->record_size;
    weir_consumer_config_init(&kc);
    kc.on_fetch = bench_on_fetch;
    kc.cb_arg = &b;
    if (weir_consumer_new(c, &kc, &k, &ed) != 0 ||
        bench_assign(c, k, o, &ed) != 0) {
        rv = cli_fail(&ed);
        goto out;
    }
    rv = bench_consume_loop(k, o, b.s);
    b.s->record_size = b.s->records > 0 ? b.s->bytes / b.s->records : 0;
    b.s->lat_kind = "end-to-end";
    if (b.s->lat.total == 0) {
        memcpy(&b.s->lat, b.fetch, sizeof(*b.fetch));
        b.s->lat_kind = "fetch";
    }
    if (rv == 0) {
        bench_summary(b.s, o->json);
    }
out:
    weir_consumer_free(k);
    mem_free(b.fetch);
    mem_free(b.s);
    return rv;
}
