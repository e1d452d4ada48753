/* SPDX-License-Identifier: Apache-2.0 */
/* The follower side of a hosted partition: drives the repl_follower core
 * (which decides what to fetch, what to keep and where to cut) and carries
 * out its actions on the log. Every decision is the core's; this file
 * moves bytes, makes them durable before the core may report them
 * (flush, then DURABLE: the fetch offset is never an unflushed end), and
 * routes every failure through repl_io_follow_failed: a log the storage
 * layer took offline fails the partition, anything else retries.
 * Locality: broker loop thread only. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "broker/broker.h"
#include "broker/idem/idem_io.h"
#include "broker/replica/repl_io_int.h"
#include "broker/storage/plog.h"
#include "common/batch.h"
#include "common/mem.h"
#include "common/trace.h"

void repl_io_follow_drop(struct repl_io_part *p)
{
    repl_follower_free(p->follow);
    p->follow = NULL;
}

static bool repl_io_follow_wanted(const struct repl_io *io,
                                  const struct repl_io_part *p)
{
    return !p->failed && p->role == CLUSTER_ROLE_FOLLOWER && p->leader >= 0 &&
           p->leader != (int32_t)io->b->cfg.id &&
           clock_now_ms(io->b->clock) >= p->retry_at_ms;
}

void repl_io_follow_failed(struct repl_io *io,
                           struct repl_io_part *p,
                           struct plog *log,
                           int err,
                           const char *fmt,
                           ...)
{
    char why[512];
    va_list ap;

    va_start(ap, fmt);
    (void)vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    if (log == NULL || plog_is_offline(log)) {
        repl_io_part_failed(io, p, log, err, "%s", why);
        return;
    }
    /* the core may have counted records the log does not hold: the next
     * one starts from the log as it is */
    repl_io_follow_drop(p);
    p->retry_at_ms = clock_now_ms(io->b->clock) + REPL_IO_RETRY_MS;
    trace_warn("replica",
               "event=follower_retry topic=%s partition=%d leader=%d "
               "epoch=%d error=%s retry_ms=%d reason=\"%s\"",
               p->topic, (int)p->partition, (int)p->leader,
               (int)p->leader_epoch, weir_err_name(err), REPL_IO_RETRY_MS, why);
}

/* Unflushed bytes (a leader demoted with records not yet fsynced) become
 * durable before a core exists that could report them. */
static int repl_io_follow_durable_start(struct plog *log, struct err_detail *ed)
{
    if (repl_io_durable_end(log) >= plog_end_offset(log)) {
        return 0;
    }
    return plog_flush(log, ed);
}

struct repl_follower *repl_io_follow_core(struct repl_io *io,
                                          struct repl_io_part *p,
                                          struct plog *log)
{
    struct repl_follower_config cfg;
    struct err_detail ed;
    int rv;

    if (p->follow != NULL || !repl_io_follow_wanted(io, p)) {
        return p->follow;
    }
    rv = repl_io_part_load(p, log);
    if (rv != 0) {
        repl_io_follow_failed(io, p, log, rv,
                              "rebuilding the epoch cache from the log");
        return NULL;
    }
    err_detail_clear(&ed);
    rv = repl_io_follow_durable_start(log, &ed);
    if (rv != 0) {
        repl_io_follow_failed(io, p, log, rv, "flushing before following: %s",
                              ed.msg);
        return NULL;
    }
    memset(&cfg, 0, sizeof(cfg));
    cfg.self_id = (int32_t)io->b->cfg.id;
    cfg.leader_id = p->leader;
    cfg.leader_epoch = p->leader_epoch;
    cfg.log_end_offset = plog_end_offset(log);
    cfg.durable_offset = repl_io_durable_end(log);
    /* what retention deleted was committed */
    cfg.high_watermark = p->follower_hw > plog_start_offset(log)
                             ? p->follower_hw
                             : plog_start_offset(log);
    cfg.fetch_backoff_ms = REPL_IO_FETCH_BACKOFF_MS;
    rv = repl_follower_new(&cfg, &p->epochs, &p->follow);
    if (rv != 0) {
        /* records of an epoch newer than the leader's: our view of the
         * leadership (or the leader's) is stale; new metadata will tell */
        repl_io_follow_failed(
            io, p, log, rv,
            "follower core refused (leader %d epoch %d, log "
            "end %lld, latest epoch %d): %s",
            (int)p->leader, (int)p->leader_epoch, (long long)cfg.log_end_offset,
            (int)repl_epochs_latest_epoch(&p->epochs), weir_err_name(rv));
        return NULL;
    }
    p->follow_gen = p->follow_gen + 1 == 0 ? 1 : p->follow_gen + 1;
    /* the core dropped epochs without records; the checkpoint follows */
    rv = repl_io_part_store(p, log, &ed);
    if (rv != 0) {
        (void)plog_storage_failed(log, rv, ed.msg);
        repl_io_follow_failed(
            io, p, log, rv, "writing the leader-epoch checkpoint: %s", ed.msg);
        return NULL;
    }
    trace_info("replica",
               "event=follower_core_start topic=%s partition=%d leader=%d "
               "epoch=%d leo=%lld hw=%lld last_epoch=%d",
               p->topic, (int)p->partition, (int)p->leader,
               (int)p->leader_epoch, (long long)cfg.log_end_offset,
               (long long)repl_follower_high_watermark(p->follow),
               (int)repl_epochs_latest_epoch(&p->epochs));
    return p->follow;
}

bool repl_io_follow_params(struct repl_io *io,
                           struct repl_io_part *p,
                           struct plog *log,
                           uint64_t now_ms,
                           struct repl_fetch_params *out,
                           uint64_t *next_ms)
{
    struct repl_follower *f = repl_io_follow_core(io, p, log);
    uint64_t at;

    if (f == NULL) {
        if (p->retry_at_ms > now_ms && p->retry_at_ms < *next_ms) {
            *next_ms = p->retry_at_ms; /* a new core then */
        }
        return false;
    }
    if (!repl_follower_next_fetch(f, now_ms, out)) {
        at = repl_follower_next_fetch_ms(f, now_ms);
        if (at < *next_ms) {
            *next_ms = at;
        }
        return false;
    }
    p->sent_gen = p->follow_gen;
    return true;
}

/* Cut the log where the core said: below its start means nothing of it
 * is kept, so it restarts empty there (Kafka's truncateTo does the same). */
static int repl_io_follow_cut(struct repl_io *io,
                              struct plog *log,
                              int64_t to,
                              bool restart,
                              struct err_detail *ed)
{
    int rv;

    if (restart || to < plog_start_offset(log)) {
        return plog_restart_at(log, to, clock_wall_ms(io->b->clock), ed);
    }
    rv = plog_truncate_to(log, to, ed);
    return rv != 0 ? rv : plog_flush(log, ed);
}

/* Truncation or restart, then the epoch checkpoint: false when the part
 * failed. */
static bool repl_io_follow_reshape(struct repl_io *io,
                                   struct repl_io_part *p,
                                   struct plog *log,
                                   const struct repl_follower_actions *a)
{
    int64_t from = plog_end_offset(log);
    int64_t to = a->restart ? a->restart_offset : a->truncate_offset;
    struct err_detail ed;
    int rv;

    err_detail_clear(&ed);
    if (a->truncate || a->restart) {
        if (a->truncate && p->follower_hw > to) {
            /* committed records are never cut in a clean election: only
             * an unclean one (or a bug) gets here; say so loudly */
            trace_error("replica",
                        "event=truncate_below_high_watermark topic=%s "
                        "partition=%d to=%lld high_watermark=%lld leader=%d",
                        p->topic, (int)p->partition, (long long)to,
                        (long long)p->follower_hw, (int)p->leader);
        }
        rv = repl_io_follow_cut(io, log, to, a->restart, &ed);
        if (rv != 0) {
            repl_io_follow_failed(io, p, log, rv, "%s to %lld: %s",
                                  a->restart ? "restarting the log"
                                             : "truncating the log",
                                  (long long)to, ed.msg);
            return false;
        }
        idem_io_invalidate(io->b->idem, p->topic, p->partition);
        trace_info("replica",
                   "event=%s topic=%s partition=%d from=%lld to=%lld "
                   "leader=%d",
                   a->restart ? "restarted_at_leader_start" : "truncated",
                   p->topic, (int)p->partition, (long long)from, (long long)to,
                   (int)p->leader);
    }
    if (a->epochs_changed) {
        rv = repl_io_part_store(p, log, &ed);
        if (rv != 0) {
            (void)plog_storage_failed(log, rv, ed.msg);
            repl_io_follow_failed(io, p, log, rv,
                                  "writing the leader-epoch checkpoint: %s",
                                  ed.msg);
            return false;
        }
    }
    return true;
}

/* One event to the core; its non-record actions carried out. False when
 * the part failed (the core is gone then). */
static bool repl_io_follow_step(struct repl_io *io,
                                struct repl_io_part *p,
                                struct plog *log,
                                struct repl_follower_event *ev)
{
    struct repl_follower_actions a;
    int rv;

    ev->now_ms = clock_now_ms(io->b->clock);
    rv = repl_follower_step(p->follow, ev, &a);
    if (rv != 0) {
        trace_warn("replica",
                   "event=follower_step_refused topic=%s partition=%d "
                   "type=%d error=%s",
                   p->topic, (int)p->partition, (int)ev->type,
                   weir_err_name(rv));
        /* a broken answer: ask again after a pause */
        memset(ev, 0, sizeof(*ev));
        ev->type = REPL_FOLLOWER_EV_FETCH_ERROR;
        ev->now_ms = clock_now_ms(io->b->clock);
        ev->u.fetch_error.err = rv;
        if (repl_follower_step(p->follow, ev, &a) != 0) {
            return true;
        }
    }
    if (a.stalled) {
        trace_warn("replica",
                   "event=divergence_stalled topic=%s partition=%d leader=%d "
                   "leo=%lld last_epoch=%d backoff_ms=%d",
                   p->topic, (int)p->partition, (int)p->leader,
                   (long long)repl_follower_log_end_offset(p->follow),
                   (int)repl_epochs_latest_epoch(&p->epochs),
                   REPL_IO_FETCH_BACKOFF_MS);
    }
    if (a.stopped) {
        trace_info("replica",
                   "event=follower_stopped topic=%s partition=%d leader=%d "
                   "epoch=%d reason=fenced",
                   p->topic, (int)p->partition, (int)p->leader,
                   (int)p->leader_epoch);
    }
    if (!repl_io_follow_reshape(io, p, log, &a)) {
        return false;
    }
    p->follower_hw = a.high_watermark;
    return true;
}

/* The run of whole batches in the answer that the core accepts, as byte
 * positions [*start, *end): batches the log holds already are skipped
 * (the leader's read begins with the batch holding our offset). Returns
 * the core's refusal of the batch after the run, or a decoding error (0:
 * none); *new_epoch when an epoch starts in the run. */
static int repl_io_follow_accept(struct repl_io *io,
                                 struct repl_io_part *p,
                                 const struct repl_io_answer *ans,
                                 size_t *start,
                                 size_t *end,
                                 bool *new_epoch)
{
    struct weir_slice all = {ans->data, ans->len};
    struct repl_follower_actions a;
    struct repl_follower_event ev;
    struct batch_header h;
    struct weir_slice whole;
    struct err_detail ed;
    size_t pos = 0;
    int rv;

    *start = *end = 0;
    *new_epoch = false;
    err_detail_clear(&ed);
    for (;;) {
        rv = batch_next(all, &pos, UINT32_MAX, true, &h, &whole, &ed);
        if (rv != 0 || whole.len == 0) {
            return rv;
        }
        if (h.base_offset + h.last_offset_delta <
            repl_follower_log_end_offset(p->follow)) {
            *start = *end = pos;
            continue;
        }
        memset(&ev, 0, sizeof(ev));
        ev.type = REPL_FOLLOWER_EV_RECORDS;
        ev.now_ms = clock_now_ms(io->b->clock);
        ev.u.records.epoch = h.leader_epoch;
        ev.u.records.base_offset = h.base_offset;
        ev.u.records.end_offset = h.base_offset + h.last_offset_delta + 1;
        rv = repl_follower_step(p->follow, &ev, &a);
        if (rv != 0) {
            return rv;
        }
        *new_epoch |= a.epochs_changed;
        *end = pos;
    }
}

/* Records the leader sent: each whole batch the core accepts is appended,
 * then flushed, then reported DURABLE, then the checkpoint is written if
 * an epoch started. Returns the core's refusal of a batch (0: none). */
static int repl_io_follow_records(struct repl_io *io,
                                  struct repl_io_part *p,
                                  struct plog *log,
                                  const struct repl_io_answer *ans,
                                  bool *failed)
{
    struct repl_follower_event ev;
    struct err_detail ed;
    int64_t at = plog_end_offset(log);
    bool new_epoch;
    size_t start;
    size_t end;
    int64_t last;
    int refused;
    int rv = 0;

    err_detail_clear(&ed);
    refused = repl_io_follow_accept(io, p, ans, &start, &end, &new_epoch);
    if (end > start) {
        rv = plog_append_replica(log, ans->data + start, end - start,
                                 clock_wall_ms(io->b->clock), &last, &ed);
        if (rv == 0) {
            rv = plog_flush(log, &ed);
        }
    }
    if (rv == 0 && new_epoch) {
        rv = repl_io_part_store(p, log, &ed);
        if (rv != 0) {
            (void)plog_storage_failed(log, rv, ed.msg);
        }
    }
    if (rv != 0) {
        /* The core counted these records, so it and the log no longer
         * agree: never report them. A failed write or fsync took the log
         * offline (after a failed fsync the page cache cannot be trusted
         * either); a batch the log refuses (or no memory) is a fetch
         * error: a new core starts from the log after a pause. */
        repl_io_follow_failed(io, p, log, rv,
                              "storing fetched records at %lld: %s",
                              (long long)at, ed.msg);
        *failed = true;
        return 0;
    }
    memset(&ev, 0, sizeof(ev));
    ev.type = REPL_FOLLOWER_EV_DURABLE;
    ev.u.durable.durable_offset = repl_io_durable_end(log);
    if (!repl_io_follow_step(io, p, log, &ev)) {
        *failed = true;
    }
    return refused;
}

/* An error answer as the core's event. */
static void repl_io_follow_error(struct repl_io_part *p,
                                 const struct repl_io_answer *ans,
                                 struct repl_follower_event *ev)
{
    trace_debug("replica",
                "event=fetch_refused topic=%s partition=%d leader=%d "
                "error=%s msg=\"%s\"",
                p->topic, (int)p->partition, (int)p->leader,
                weir_err_name(ans->err), ans->err_msg);
    if (ans->err == WEIR_EOFFSET_OUT_OF_RANGE && ans->log_start_offset >= 0) {
        ev->type = REPL_FOLLOWER_EV_OUT_OF_RANGE;
        ev->u.out_of_range.log_start_offset = ans->log_start_offset;
        return;
    }
    ev->type = REPL_FOLLOWER_EV_FETCH_ERROR;
    ev->u.fetch_error.err = ans->err;
}

void repl_io_follow_answer(struct repl_io *io,
                           struct repl_io_part *p,
                           struct plog *log,
                           const struct repl_io_answer *ans)
{
    struct repl_follower_event ev;
    bool failed = false;
    int refused;

    if (p->follow == NULL || p->sent_gen != p->follow_gen) {
        return; /* a fetch of an earlier leadership */
    }
    p->sent_gen = 0;
    memset(&ev, 0, sizeof(ev));
    if (ans->err != 0) {
        repl_io_follow_error(p, ans, &ev);
        (void)repl_io_follow_step(io, p, log, &ev);
        return;
    }
    if (ans->diverging_end_offset >= 0) {
        ev.type = REPL_FOLLOWER_EV_DIVERGING;
        ev.u.diverging.epoch = ans->diverging_epoch;
        ev.u.diverging.end_offset = ans->diverging_end_offset;
        if (ans->leader_epoch != p->leader_epoch) {
            ev.type = REPL_FOLLOWER_EV_FETCH_ERROR; /* not our leadership's */
            ev.u.fetch_error.err = WEIR_EUNKNOWN_LEADER_EPOCH;
        }
        (void)repl_io_follow_step(io, p, log, &ev);
        return;
    }
    refused = repl_io_follow_records(io, p, log, ans, &failed);
    if (failed) {
        return;
    }
    if (ans->high_watermark >= 0) {
        ev.type = REPL_FOLLOWER_EV_LEADER_HW;
        ev.u.leader_hw.high_watermark = ans->high_watermark;
        if (!repl_io_follow_step(io, p, log, &ev)) {
            return;
        }
    }
    if (refused != 0) {
        trace_warn("replica",
                   "event=fetched_batch_refused topic=%s partition=%d "
                   "leader=%d error=%s",
                   p->topic, (int)p->partition, (int)p->leader,
                   weir_err_name(refused));
        memset(&ev, 0, sizeof(ev));
        ev.type = REPL_FOLLOWER_EV_FETCH_ERROR;
        ev.u.fetch_error.err = refused;
        (void)repl_io_follow_step(io, p, log, &ev);
    }
}
