/* SPDX-License-Identifier: Apache-2.0 */
/* Follower-side replication state machine (Kafka's AbstractFetcherThread
 * truncation logic after KIP-279/KIP-320, without the separate
 * OffsetsForLeaderEpoch round trip: the divergence point comes in the
 * fetch answer). */
#include "broker/replica/repl_follower.h"

#include <string.h>

#include "common/mem.h"

struct repl_follower {
    int32_t self_id;
    int32_t leader_id;
    int32_t leader_epoch;
    int64_t leo;     /* local log end offset */
    int64_t durable; /* local durable end offset, <= leo */
    int64_t hw;      /* high watermark, <= leo */
    uint64_t backoff_ms;
    uint64_t retry_at_ms;       /* no fetch before this */
    bool stopped;               /* fenced: wait for new leadership */
    struct repl_epochs *epochs; /* borrowed from the partition */
};

/* Latest epoch with a record in a log ending at leo: entries starting at
 * or after leo have none. */
static int32_t repl_follower_latest_held(const struct repl_epochs *epochs,
                                         int64_t leo)
{
    uint32_t n = repl_epochs_count(epochs);

    while (n > 0 && repl_epochs_entry(epochs, n - 1)->start_offset >= leo) {
        n--;
    }
    return n > 0 ? repl_epochs_entry(epochs, n - 1)->epoch : REPL_EPOCH_NONE;
}

int repl_follower_new(const struct repl_follower_config *cfg,
                      struct repl_epochs *epochs,
                      struct repl_follower **out)
{
    struct repl_follower *f;

    *out = NULL;
    /* An empty epoch newer than the leader's (one this replica was given
     * and never wrote in, say a leadership it refused) goes below; records
     * of a newer epoch mean our view of the leadership is stale. */
    if (cfg->self_id < 0 || cfg->leader_id < 0 ||
        cfg->leader_id == cfg->self_id || cfg->leader_epoch < 0 ||
        cfg->log_end_offset < 0 || cfg->durable_offset < 0 ||
        cfg->durable_offset > cfg->log_end_offset || cfg->high_watermark < 0 ||
        repl_follower_latest_held(epochs, cfg->log_end_offset) >
            cfg->leader_epoch) {
        return WEIR_EINVALID_ARGUMENT;
    }
    f = mem_calloc(1, sizeof(*f));
    if (f == NULL) {
        return WEIR_ENOMEM;
    }
    f->self_id = cfg->self_id;
    f->leader_id = cfg->leader_id;
    f->leader_epoch = cfg->leader_epoch;
    f->leo = cfg->log_end_offset;
    f->durable = cfg->durable_offset;
    f->hw = cfg->high_watermark < f->leo ? cfg->high_watermark : f->leo;
    f->backoff_ms = cfg->fetch_backoff_ms;
    f->epochs = epochs;
    /* The last fetched epoch we send must be the epoch of our last record:
     * an entry with no record (an epoch we led without writing, or one
     * whose records a crash lost) would make us claim history we lack, and
     * a later assign of an older epoch would be ignored behind it. */
    (void)repl_epochs_truncate_from_end(epochs, f->leo);
    *out = f;
    return 0;
}

void repl_follower_free(struct repl_follower *f)
{
    mem_free(f);
}

static bool repl_follower_may_fetch(const struct repl_follower *f,
                                    uint64_t now_ms)
{
    return !f->stopped && f->durable >= f->leo && now_ms >= f->retry_at_ms;
}

bool repl_follower_next_fetch(const struct repl_follower *f,
                              uint64_t now_ms,
                              struct repl_fetch_params *out)
{
    if (!repl_follower_may_fetch(f, now_ms)) {
        return false;
    }
    out->replica = f->self_id;
    out->fetch_offset = f->leo;
    out->last_fetched_epoch = repl_epochs_latest_epoch(f->epochs);
    out->current_leader_epoch = f->leader_epoch;
    return true;
}

uint64_t repl_follower_next_fetch_ms(const struct repl_follower *f,
                                     uint64_t now_ms)
{
    if (f->stopped || f->durable < f->leo) {
        return REPL_TICK_NEVER;
    }
    return now_ms < f->retry_at_ms ? f->retry_at_ms : now_ms;
}

static int repl_follower_records(struct repl_follower *f,
                                 int32_t epoch,
                                 int64_t base,
                                 int64_t end,
                                 struct repl_follower_actions *out)
{
    int32_t latest = repl_epochs_latest_epoch(f->epochs);
    uint32_t n_before = repl_epochs_count(f->epochs);
    int rv;

    /* The leader validated our (last epoch, LEO) before serving, so its
     * records continue our log, in epochs no older than our latest and no
     * newer than its own. They may start past our LEO: the leader's
     * cleaner removed the records in between (a compacted topic), and
     * our log end moves past the gap (Kafka's appendAsFollower). A batch
     * starting below our LEO, or anything else, is a stale or broken
     * response: refuse it before it reaches the log. */
    if (base < f->leo || end <= base || epoch < 0 || epoch < latest ||
        epoch > f->leader_epoch) {
        return WEIR_ECORRUPT_MESSAGE;
    }
    rv = repl_epochs_assign(f->epochs, epoch, base);
    if (rv != 0) {
        return rv;
    }
    out->epochs_changed = repl_epochs_count(f->epochs) != n_before ||
                          repl_epochs_latest_epoch(f->epochs) != latest;
    f->leo = end;
    out->append = true;
    return 0;
}

static void repl_follower_leader_hw(struct repl_follower *f,
                                    int64_t leader_hw,
                                    struct repl_follower_actions *out)
{
    int64_t hw = leader_hw < f->leo ? leader_hw : f->leo;

    /* A new leader may publish a lower HW than its predecessor did until
     * it re-establishes one (KIP-207); what we already know to be
     * committed stays committed. */
    if (hw > f->hw) {
        f->hw = hw;
        out->hw_changed = true;
    }
}

/* Where to cut after the leader said its history of epoch `epoch` ends at
 * `end` (Kafka's getOffsetTruncationState). */
static int64_t repl_follower_truncation_point(const struct repl_follower *f,
                                              int32_t epoch,
                                              int64_t end)
{
    struct repl_epoch_end mine;
    int64_t t = f->leo;

    mine = repl_epochs_end_offset_for(f->epochs, epoch, f->leo);
    if (mine.epoch == REPL_EPOCH_NONE) {
        /* no epoch history here: trust the leader's offset */
        t = end;
    } else if (mine.epoch == epoch) {
        /* Both have `epoch`: the logs agree up to where the shorter of
         * the two ends it. */
        t = mine.end_offset < end ? mine.end_offset : end;
    } else {
        /* We lack `epoch`: everything from our first newer epoch on
         * differs. Cut there and ask again with our older last epoch; the
         * next answer finishes the job (each round drops at least one
         * epoch entry, so this ends). */
        t = mine.end_offset;
    }
    return t < f->leo ? t : f->leo;
}

static int repl_follower_diverging(struct repl_follower *f,
                                   int32_t epoch,
                                   int64_t end,
                                   uint64_t now_ms,
                                   struct repl_follower_actions *out)
{
    int64_t t;

    if (end < 0) {
        return WEIR_EINVALID_ARGUMENT;
    }
    /* KIP-101: the cut comes only from the leader's epoch history, never
     * from our high watermark. Records below our HW may be committed (we
     * may have stored them before the leader's HW caught up with ours), so
     * cutting there could lose acknowledged writes. */
    t = repl_follower_truncation_point(f, epoch, end);
    if (repl_epochs_truncate_from_end(f->epochs, t) > 0) {
        out->epochs_changed = true;
    }
    if (t < f->leo) {
        out->truncate = true;
        out->truncate_offset = t;
        f->leo = t;
        if (f->durable > t) {
            f->durable = t;
        }
        if (f->hw > t) {
            f->hw = t; /* only after an unclean election */
            out->hw_changed = true;
        }
    }
    if (!out->truncate && !out->epochs_changed) {
        /* Nothing to cut: the same fetch would get the same answer at
         * once, for ever, burning a core on both sides (an empty epoch
         * left in a cache did that before it was dropped at creation).
         * Retry later; the leader's state may move meanwhile. */
        f->retry_at_ms = now_ms + f->backoff_ms;
        out->stalled = true;
    }
    return 0;
}

/* The leader refused our fetch offset as outside its log. Below its log
 * start, the records we lack exist nowhere any more (retention deleted
 * them, only ever below its high watermark): start our log over at its
 * start. Everything below that start is committed, so it is our high
 * watermark. */
static int repl_follower_out_of_range(struct repl_follower *f,
                                      int64_t leader_start,
                                      uint64_t now_ms,
                                      struct repl_follower_actions *out)
{
    if (leader_start < 0) {
        return WEIR_EINVALID_ARGUMENT;
    }
    if (leader_start <= f->leo) {
        /* In range by its start: the leader moved on between its checks,
         * or holds less than we do without saying where we diverge.
         * Either way, ask again after a pause. */
        f->retry_at_ms = now_ms + f->backoff_ms;
        return 0;
    }
    repl_epochs_clear(f->epochs);
    out->epochs_changed = true;
    out->restart = true;
    out->restart_offset = leader_start;
    f->leo = leader_start;
    f->durable = leader_start;
    f->hw = leader_start;
    out->hw_changed = true;
    return 0;
}

static void repl_follower_fetch_error(struct repl_follower *f,
                                      int err,
                                      uint64_t now_ms,
                                      struct repl_follower_actions *out)
{
    /* Our leadership view is stale (the leader moved on to a newer
     * epoch): fetching again cannot help until the metadata says who leads
     * now, which creates a new follower. Anything else is worth retrying
     * after a pause: NOT_LEADER too, since the leader may not have applied
     * the metadata that makes it leader yet, and nothing would restart a
     * follower stopped on that (our own metadata does not change). */
    if (err == WEIR_EFENCED_LEADER_EPOCH) {
        f->stopped = true;
        out->stopped = true;
        return;
    }
    f->retry_at_ms = now_ms + f->backoff_ms;
}

static int repl_follower_apply(struct repl_follower *f,
                               const struct repl_follower_event *ev,
                               struct repl_follower_actions *out)
{
    switch (ev->type) {
    case REPL_FOLLOWER_EV_RECORDS:
        return repl_follower_records(f, ev->u.records.epoch,
                                     ev->u.records.base_offset,
                                     ev->u.records.end_offset, out);
    case REPL_FOLLOWER_EV_DURABLE:
        if (ev->u.durable.durable_offset > f->leo) {
            return WEIR_EINVALID_ARGUMENT;
        }
        if (ev->u.durable.durable_offset > f->durable) {
            f->durable = ev->u.durable.durable_offset;
        }
        return 0;
    case REPL_FOLLOWER_EV_LEADER_HW:
        repl_follower_leader_hw(f, ev->u.leader_hw.high_watermark, out);
        return 0;
    case REPL_FOLLOWER_EV_DIVERGING:
        return repl_follower_diverging(f, ev->u.diverging.epoch,
                                       ev->u.diverging.end_offset, ev->now_ms,
                                       out);
    case REPL_FOLLOWER_EV_FETCH_ERROR:
        repl_follower_fetch_error(f, ev->u.fetch_error.err, ev->now_ms, out);
        return 0;
    case REPL_FOLLOWER_EV_OUT_OF_RANGE:
        return repl_follower_out_of_range(
            f, ev->u.out_of_range.log_start_offset, ev->now_ms, out);
    }
    return WEIR_EINVALID_ARGUMENT;
}

int repl_follower_step(struct repl_follower *f,
                       const struct repl_follower_event *ev,
                       struct repl_follower_actions *out)
{
    int rv;

    memset(out, 0, sizeof(*out));
    rv = repl_follower_apply(f, ev, out);
    out->high_watermark = f->hw;
    out->stopped = f->stopped;
    out->next_fetch_ms = repl_follower_next_fetch_ms(f, ev->now_ms);
    return rv;
}

int64_t repl_follower_log_end_offset(const struct repl_follower *f)
{
    return f->leo;
}

int64_t repl_follower_durable_offset(const struct repl_follower *f)
{
    return f->durable;
}

int64_t repl_follower_high_watermark(const struct repl_follower *f)
{
    return f->hw;
}

int32_t repl_follower_leader_epoch(const struct repl_follower *f)
{
    return f->leader_epoch;
}

bool repl_follower_is_stopped(const struct repl_follower *f)
{
    return f->stopped;
}

int repl_follower_check_invariants(const struct repl_follower *f)
{
    uint32_t n = repl_epochs_count(f->epochs);

    if (f->durable > f->leo || f->hw > f->leo || f->hw < 0 ||
        repl_epochs_check_invariants(f->epochs) != 0 ||
        repl_epochs_latest_epoch(f->epochs) > f->leader_epoch) {
        return WEIR_ECORRUPT;
    }
    /* every epoch entry describes records we hold */
    if (n > 0 && repl_epochs_entry(f->epochs, n - 1)->start_offset >= f->leo) {
        return WEIR_ECORRUPT;
    }
    return 0;
}
