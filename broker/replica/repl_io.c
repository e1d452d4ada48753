/* SPDX-License-Identifier: Apache-2.0 */
/* Role and leader-epoch bookkeeping per hosted partition; see repl_io.h. */
#include "broker/replica/repl_io.h"

#include <event2/event.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/api/api.h"
#include "broker/broker.h"
#include "broker/idem/idem_io.h"
#include "broker/replica/fetcher.h"
#include "broker/replica/repl_epochs.h"
#include "broker/replica/repl_io_int.h"
#include "broker/replica/repl_leader.h"
#include "broker/storage/logmgr.h"
#include "broker/storage/plog.h"
#include "broker/storage/storage_ops.h"
#include "common/mem.h"
#include "common/trace.h"

#define REPL_IO_ISR_BACKOFF_MS 500

/* The leader side of one partition this broker leads in one epoch: the
 * repl_leader core and the timer it asks for. */
struct repl_io_lead {
    struct repl_io *io;
    struct repl_io_part *p;
    struct plog *log;
    int64_t topic_id;
    struct repl_leader *l;
    struct event *timer;
    bool isr_failed; /* a proposal could not be sent: reject it */
    struct repl_isr_proposal failed;
};

/* An AlterIsr in flight; the answer finds its leader by name and epoch. */
struct repl_io_isr_call {
    struct repl_io *io;
    char *topic;
    int32_t partition;
    struct repl_isr_proposal proposal;
};

static void repl_io_wake_cb(evutil_socket_t fd, short what, void *arg)
{
    struct repl_io *io = arg;

    (void)fd;
    (void)what;
    api_produce_complete_waits(io->b);
    broker_readable(io->b);
}

int repl_io_new(struct broker *b, struct repl_io **out)
{
    struct repl_io *io = mem_calloc(1, sizeof(*io));

    if (io == NULL) {
        return WEIR_ENOMEM;
    }
    io->b = b;
    if (b->base != NULL) {
        io->wake_ev = event_new(b->base, -1, 0, repl_io_wake_cb, io);
        if (io->wake_ev == NULL) {
            mem_free(io);
            return WEIR_ENOMEM;
        }
    }
    *out = io;
    return 0;
}

int64_t repl_io_durable_end(const struct plog *log)
{
    return plog_config(log)->flush_policy == PLOG_FLUSH_ACK
               ? plog_durable_offset(log)
               : plog_end_offset(log);
}

static void repl_io_lead_free(struct repl_io_lead *lead)
{
    if (lead == NULL) {
        return;
    }
    if (lead->timer != NULL) {
        event_free(lead->timer);
    }
    repl_leader_free(lead->l);
    mem_free(lead);
}

/* Stop leading p: drop the core and fail the acks=all writes waiting on
 * its high watermark with err. */
static void repl_io_part_unlead(struct repl_io *io,
                                struct repl_io_part *p,
                                int err,
                                const char *msg)
{
    struct repl_io_lead *lead = p->lead;

    if (lead == NULL) {
        return;
    }
    p->lead = NULL;
    api_produce_fail_log(io->b, lead->log, err, msg);
    repl_io_lead_free(lead);
}

void repl_io_part_failed(struct repl_io *io,
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
    repl_io_part_unlead(io, p, WEIR_ELEADER_NOT_AVAILABLE,
                        "the partition cannot be led here now");
    repl_io_follow_drop(p);
    p->failed = true;
    p->failed_log = log;
    trace_error("replica",
                "event=partition_failed topic=%s partition=%d role=%s "
                "leader=%d epoch=%d error=%s reason=\"%s\"",
                p->topic, (int)p->partition,
                p->role == CLUSTER_ROLE_LEADER ? "leader" : "follower",
                (int)p->leader, (int)p->leader_epoch, weir_err_name(err), why);
    /* Offline, the replica is listed in heartbeats: the controller moves
     * the leadership away (or, where it is the only eligible replica,
     * gives it a new epoch once log_health brought the log back). There
     * is no other way to ask for that, and a broker that cannot lead
     * must not stay leader; the cause says when the disk is not to
     * blame. */
    if (log != NULL && !plog_is_offline(log)) {
        plog_mark_offline(log, err, why);
    }
}

static void repl_io_part_fini(struct repl_io_part *p)
{
    repl_io_lead_free(p->lead);
    p->lead = NULL;
    repl_io_follow_drop(p);
    mem_free(p->topic);
    repl_epochs_fini(&p->epochs);
    mem_free(p);
}

void repl_io_free(struct repl_io *io)
{
    uint32_t i;

    if (io == NULL) {
        return;
    }
    for (i = 0; i < io->n_fetchers; i++) {
        fetcher_free(io->fetchers[i]);
    }
    mem_free(io->fetchers);
    for (i = 0; i < io->n; i++) {
        repl_io_part_fini(io->parts[i]);
    }
    mem_free(io->parts);
    if (io->wake_ev != NULL) {
        event_free(io->wake_ev);
    }
    mem_free(io);
}

static struct repl_io_part *
repl_io_find(const struct repl_io *io, const char *topic, int32_t partition)
{
    uint32_t i;

    if (io == NULL) {
        return NULL;
    }
    for (i = 0; i < io->n; i++) {
        if (io->parts[i]->partition == partition &&
            strcmp(io->parts[i]->topic, topic) == 0) {
            return io->parts[i];
        }
    }
    return NULL;
}

static struct repl_io_part *
repl_io_add(struct repl_io *io, const char *topic, int32_t partition)
{
    struct repl_io_part **ps;
    struct repl_io_part *p;
    uint32_t cap;

    if (io->n == io->cap) {
        cap = io->cap == 0 ? 8 : io->cap * 2;
        ps = mem_realloc(io->parts, (size_t)cap * sizeof(*ps));
        if (ps == NULL) {
            return NULL;
        }
        io->parts = ps;
        io->cap = cap;
    }
    p = mem_calloc(1, sizeof(*p));
    if (p == NULL) {
        return NULL;
    }
    p->topic = mem_strdup(topic);
    if (p->topic == NULL) {
        mem_free(p);
        return NULL;
    }
    p->partition = partition;
    p->leader_epoch = 0;
    p->follower_hw = -1;
    repl_epochs_init(&p->epochs);
    io->parts[io->n++] = p;
    return p;
}

static void repl_io_remove(struct repl_io *io, struct repl_io_part *p)
{
    uint32_t i;

    for (i = 0; i < io->n; i++) {
        if (io->parts[i] == p) {
            break;
        }
    }
    if (i == io->n) {
        return;
    }
    repl_io_part_unlead(io, p, WEIR_ENOT_LEADER,
                        "the partition is no longer hosted here");
    repl_io_part_fini(p);
    io->parts[i] = io->parts[io->n - 1];
    io->n--;
}

/* The fetcher for `leader`, created on first use (NULL: out of memory). */
static struct fetcher *repl_io_fetcher(struct repl_io *io, int32_t leader)
{
    struct fetcher **fs;
    uint32_t i;

    for (i = 0; i < io->n_fetchers; i++) {
        if (fetcher_leader(io->fetchers[i]) == leader) {
            return io->fetchers[i];
        }
    }
    fs = mem_realloc(io->fetchers, (io->n_fetchers + 1) * sizeof(*fs));
    if (fs == NULL) {
        return NULL;
    }
    io->fetchers = fs;
    if (fetcher_new(io, leader, &fs[io->n_fetchers]) != 0) {
        return NULL;
    }
    return fs[io->n_fetchers++];
}

static void repl_io_ids_from_meta(struct repl_ids *out,
                                  const struct meta_ids *in)
{
    uint32_t i;

    memset(out, 0, sizeof(*out));
    for (i = 0; in != NULL && i < in->n && i < REPL_MAX_REPLICAS; i++) {
        out->ids[out->n++] = in->ids[i];
    }
}

static void repl_io_lead_step(struct repl_io_lead *lead,
                              struct repl_leader_event *ev,
                              struct repl_leader_actions *acts);

static void repl_io_isr_answer(void *arg,
                               int err,
                               int32_t leader_epoch,
                               int32_t partition_epoch,
                               const struct meta_ids *isr)
{
    struct repl_io_isr_call *call = arg;
    struct repl_io_part *p =
        repl_io_find(call->io, call->topic, call->partition);
    struct repl_leader_event ev;
    struct repl_leader_actions acts;

    (void)leader_epoch;
    if (p != NULL && p->lead != NULL &&
        repl_leader_leader_epoch(p->lead->l) == call->proposal.leader_epoch) {
        memset(&ev, 0, sizeof(ev));
        ev.type = REPL_LEADER_EV_ISR_RESULT;
        ev.u.isr_result.accepted = err == 0;
        ev.u.isr_result.leader_epoch = call->proposal.leader_epoch;
        ev.u.isr_result.partition_epoch = call->proposal.partition_epoch;
        ev.u.isr_result.new_partition_epoch = partition_epoch;
        repl_io_ids_from_meta(&ev.u.isr_result.isr, isr);
        trace_info("replica",
                   "event=isr_answer topic=%s partition=%d accepted=%d "
                   "error=%s partition_epoch=%d",
                   call->topic, (int)call->partition, err == 0 ? 1 : 0,
                   err == 0 ? "none" : weir_err_name(err),
                   (int)partition_epoch);
        repl_io_lead_step(p->lead, &ev, &acts);
    }
    mem_free(call->topic);
    mem_free(call);
}

static void repl_io_lead_propose(struct repl_io_lead *lead,
                                 const struct repl_isr_proposal *pr)
{
    struct repl_io *io = lead->io;
    struct repl_io_isr_call *call = mem_calloc(1, sizeof(*call));
    struct meta_ids isr;
    struct timeval tv = {0, 0};
    uint32_t i;
    int rv = WEIR_ENOMEM;

    memset(&isr, 0, sizeof(isr));
    for (i = 0; i < pr->isr.n && i < META_MAX_REPLICAS; i++) {
        isr.ids[isr.n++] = pr->isr.ids[i];
    }
    trace_info("replica",
               "event=isr_propose topic=%s partition=%d leader_epoch=%d "
               "partition_epoch=%d isr_size=%u",
               lead->p->topic, (int)lead->p->partition, (int)pr->leader_epoch,
               (int)pr->partition_epoch, (unsigned)pr->isr.n);
    if (call != NULL) {
        call->io = io;
        call->partition = lead->p->partition;
        call->proposal = *pr;
        call->topic = mem_strdup(lead->p->topic);
        if (call->topic != NULL && io->b->cluster != NULL) {
            rv = cluster_alter_isr(io->b->cluster, lead->topic_id,
                                   lead->p->partition, pr->leader_epoch,
                                   pr->partition_epoch, &isr,
                                   repl_io_isr_answer, call);
        }
        if (rv != 0) {
            mem_free(call->topic);
            mem_free(call);
        }
    }
    if (rv != 0) {
        /* not sent: deliver the rejection from the timer, not from here */
        lead->isr_failed = true;
        lead->failed = *pr;
        (void)evtimer_add(lead->timer, &tv);
    }
}

/* Step the core and carry out its actions (except the fetch answer, which
 * stays in *acts for the caller). */
static void repl_io_lead_step(struct repl_io_lead *lead,
                              struct repl_leader_event *ev,
                              struct repl_leader_actions *acts)
{
    struct repl_io *io = lead->io;
    uint64_t now = clock_now_ms(io->b->clock);
    struct timeval tv;
    uint64_t delay;
    int rv;

    ev->now_ms = now;
    memset(acts, 0, sizeof(*acts));
    rv = repl_leader_step(lead->l, ev, acts);
    if (rv != 0) {
        trace_warn("replica",
                   "event=leader_step_refused topic=%s partition=%d type=%d "
                   "error=%s",
                   lead->p->topic, (int)lead->p->partition, (int)ev->type,
                   weir_err_name(rv));
        memset(acts, 0, sizeof(*acts));
        return;
    }
    if (acts->hw_advanced && io->wake_ev != NULL) {
        /* complete waits outside this call: it may run inside a fetch */
        event_active(io->wake_ev, EV_TIMEOUT, 0);
    }
    if (acts->isr_changed) {
        trace_info("replica",
                   "event=isr_changed topic=%s partition=%d "
                   "partition_epoch=%d isr_size=%u",
                   lead->p->topic, (int)lead->p->partition,
                   (int)repl_leader_partition_epoch(lead->l),
                   (unsigned)repl_leader_isr(lead->l)->n);
    }
    if (acts->propose) {
        repl_io_lead_propose(lead, &acts->proposal);
    }
    if (acts->next_tick_ms != REPL_TICK_NEVER && !lead->isr_failed) {
        delay = acts->next_tick_ms > now ? acts->next_tick_ms - now : 0;
        tv.tv_sec = (time_t)(delay / 1000);
        tv.tv_usec = (suseconds_t)((delay % 1000) * 1000);
        (void)evtimer_add(lead->timer, &tv);
    }
}

static void repl_io_lead_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct repl_io_lead *lead = arg;
    struct repl_leader_event ev;
    struct repl_leader_actions acts;

    (void)fd;
    (void)what;
    memset(&ev, 0, sizeof(ev));
    if (lead->isr_failed) {
        lead->isr_failed = false;
        ev.type = REPL_LEADER_EV_ISR_RESULT;
        ev.u.isr_result.accepted = false;
        ev.u.isr_result.leader_epoch = lead->failed.leader_epoch;
        ev.u.isr_result.partition_epoch = lead->failed.partition_epoch;
        repl_io_lead_step(lead, &ev, &acts);
        if (lead->isr_failed) {
            return; /* the timer is armed again */
        }
        memset(&ev, 0, sizeof(ev));
    }
    ev.type = REPL_LEADER_EV_TICK;
    repl_io_lead_step(lead, &ev, &acts);
}

static uint32_t repl_io_min_isr(struct repl_io *io,
                                const struct cluster_partition_state *st)
{
    const struct meta_topic *t;
    const char *v = NULL;
    long n;

    if (io->b->cluster != NULL) {
        t = meta_image_topic(cluster_image(io->b->cluster), st->topic_id);
        v = t != NULL ? meta_topic_config(t, "min.insync.replicas") : NULL;
    }
    n = v != NULL ? strtol(v, NULL, 10) : 1;
    return n >= 1 && n <= REPL_MAX_REPLICAS ? (uint32_t)n : 1;
}

/* Start the leader core of p in st->leader_epoch (which it records in the
 * epoch cache at the log end). False when it cannot (traced). */
static bool repl_io_lead_start(struct repl_io *io,
                               struct repl_io_part *p,
                               struct plog *log,
                               const struct cluster_partition_state *st)
{
    struct repl_leader_config cfg;
    struct repl_io_lead *lead = mem_calloc(1, sizeof(*lead));
    struct repl_leader_event ev;
    struct repl_leader_actions acts;
    int rv = WEIR_ENOMEM;

    if (lead == NULL || io->b->base == NULL) {
        mem_free(lead);
        return false;
    }
    memset(&cfg, 0, sizeof(cfg));
    cfg.self_id = (int32_t)io->b->cfg.id;
    cfg.leader_epoch = st->leader_epoch;
    cfg.partition_epoch = st->partition_epoch;
    repl_io_ids_from_meta(&cfg.replicas, st->replicas);
    repl_io_ids_from_meta(&cfg.isr, st->isr);
    cfg.min_insync_replicas = repl_io_min_isr(io, st);
    cfg.replica_lag_time_max_ms =
        io->b->cfg.replica_lag_time_max_ms > 0
            ? (uint64_t)io->b->cfg.replica_lag_time_max_ms
            : 30000;
    cfg.isr_retry_backoff_ms = REPL_IO_ISR_BACKOFF_MS;
    cfg.log_end_offset = plog_end_offset(log);
    cfg.durable_offset = repl_io_durable_end(log);
    cfg.high_watermark = plog_start_offset(log);
    if (p->follower_hw > cfg.high_watermark) {
        cfg.high_watermark = p->follower_hw < cfg.log_end_offset
                                 ? p->follower_hw
                                 : cfg.log_end_offset;
    }
    lead->timer = evtimer_new(io->b->base, repl_io_lead_timer_cb, lead);
    if (lead->timer != NULL) {
        rv = repl_leader_new(&cfg, &p->epochs, clock_now_ms(io->b->clock),
                             &lead->l);
    }
    if (rv != 0) {
        trace_warn("replica",
                   "event=leader_core_unavailable topic=%s partition=%d "
                   "epoch=%d error=%s",
                   st->topic, (int)st->partition, (int)st->leader_epoch,
                   weir_err_name(rv));
        repl_io_lead_free(lead);
        return false;
    }
    lead->io = io;
    lead->p = p;
    lead->log = log;
    lead->topic_id = st->topic_id;
    p->lead = lead;
    trace_info("replica",
               "event=leader_core_start topic=%s partition=%d epoch=%d "
               "min_isr=%u lag_ms=%llu hw=%lld leo=%lld",
               st->topic, (int)st->partition, (int)st->leader_epoch,
               (unsigned)cfg.min_insync_replicas,
               (unsigned long long)cfg.replica_lag_time_max_ms,
               (long long)cfg.high_watermark, (long long)cfg.log_end_offset);
    memset(&ev, 0, sizeof(ev));
    ev.type = REPL_LEADER_EV_TICK;
    repl_io_lead_step(lead, &ev, &acts);
    return true;
}

/* This broker now leads p in st->leader_epoch: that epoch starts at the log
 * end offset. */
static void repl_io_become_leader(struct repl_io *io,
                                  struct repl_io_part *p,
                                  const struct cluster_partition_state *st)
{
    struct plog *log = logmgr_partition(io->b->logs, st->topic, st->partition);
    struct err_detail ed;
    int rv;

    if (log == NULL) {
        trace_warn("replica",
                   "event=leader_without_log topic=%s partition=%d epoch=%d",
                   st->topic, (int)st->partition, (int)st->leader_epoch);
        return;
    }
    rv = repl_io_part_load(p, log);
    if (rv != 0) {
        /* a cache short of the log's latest epochs could make this broker
         * lead an epoch older than records it holds */
        repl_io_part_failed(io, p, log, rv,
                            "the epoch cache could not be rebuilt from the "
                            "log (see epoch_cache_rebuild_failed)");
        return;
    }
    /* the log grew under other leaders: rebuild producer state from it */
    idem_io_invalidate(io->b->idem, st->topic, st->partition);
    /* Never lead an epoch this replica has already seen: records of it
     * that were never flushed may be gone, and taking their offsets again
     * in the same epoch would hide that from every divergence check (the
     * restart race with registration gets here). Without the core there
     * is no replicated HW and acks=all would be acks=1: serve nothing. */
    if (st->leader_epoch <= repl_epochs_latest_epoch(&p->epochs)) {
        repl_io_part_failed(io, p, log, WEIR_EFENCED_LEADER_EPOCH,
                            "leader epoch %d is not newer than %d in the "
                            "epoch cache: records of it may be lost here; "
                            "waiting for a new epoch",
                            (int)st->leader_epoch,
                            (int)repl_epochs_latest_epoch(&p->epochs));
        return;
    }
    if (!repl_io_lead_start(io, p, log, st)) {
        repl_io_part_failed(io, p, log, WEIR_ENOMEM,
                            "the replication core could not start");
        return;
    }
    err_detail_clear(&ed);
    rv = repl_io_part_store(p, log, &ed);
    if (rv != 0) {
        /* a restart would not know this epoch started here */
        (void)plog_storage_failed(log, rv, ed.msg);
        repl_io_part_failed(io, p, log, rv,
                            "writing the leader-epoch checkpoint for epoch "
                            "%d: %s",
                            (int)st->leader_epoch, ed.msg);
        return;
    }
    trace_info("replica",
               "event=leader_epoch_start topic=%s partition=%d epoch=%d "
               "start_offset=%lld",
               st->topic, (int)st->partition, (int)st->leader_epoch,
               (long long)plog_end_offset(log));
}

void repl_io_drop_topic(struct repl_io *io, const char *topic)
{
    uint32_t i = 0;

    if (io == NULL) {
        return;
    }
    while (i < io->n) {
        if (strcmp(io->parts[i]->topic, topic) == 0) {
            repl_io_remove(io, io->parts[i]); /* moves the last one here */
        } else {
            i++;
        }
    }
}

/* Following st->leader: its fetcher builds the follower core lazily. */
static void repl_io_become_follower(struct repl_io *io,
                                    const struct cluster_partition_state *st)
{
    struct fetcher *f = repl_io_fetcher(io, st->leader);

    if (f == NULL) {
        trace_error("replica",
                    "event=fetcher_unavailable topic=%s partition=%d "
                    "leader=%d reason=\"out of memory\"",
                    st->topic, (int)st->partition, (int)st->leader);
        return;
    }
    fetcher_kick(f);
}

void repl_io_on_partition(void *arg, const struct cluster_partition_state *st)
{
    struct repl_io *io = arg;
    struct repl_io_part *p = repl_io_find(io, st->topic, st->partition);

    cluster_role_trace(io->b->cluster, st);
    if (st->role == CLUSTER_ROLE_NONE) {
        if (p != NULL) {
            repl_io_remove(io, p);
        }
        return;
    }
    if (p != NULL && p->topic_id != st->topic_id) {
        repl_io_remove(io, p); /* deleted and created again */
        p = NULL;
    }
    if (p == NULL) {
        p = repl_io_add(io, st->topic, st->partition);
        if (p == NULL) {
            trace_error("replica",
                        "event=partition_untracked topic=%s partition=%d "
                        "reason=\"out of memory\"",
                        st->topic, (int)st->partition);
            return;
        }
        p->topic_id = st->topic_id;
    }
    if (p->lead != NULL && st->role == CLUSTER_ROLE_LEADER &&
        st->leader_epoch == repl_leader_leader_epoch(p->lead->l)) {
        struct repl_leader_event ev;
        struct repl_leader_actions acts;

        memset(&ev, 0, sizeof(ev));
        ev.type = REPL_LEADER_EV_PARTITION_UPDATE;
        ev.u.partition_update.partition_epoch = st->partition_epoch;
        repl_io_ids_from_meta(&ev.u.partition_update.isr, st->isr);
        repl_io_lead_step(p->lead, &ev, &acts);
        return;
    }
    if (st->role == p->role && st->leader == p->leader &&
        st->leader_epoch == p->leader_epoch &&
        (p->failed || p->follow != NULL)) {
        return; /* an ISR change within the same leadership */
    }
    repl_io_part_unlead(io, p, WEIR_ENOT_LEADER,
                        "leadership moved before the write was replicated");
    repl_io_follow_drop(p);
    p->failed = false;
    p->failed_log = NULL;
    p->retry_at_ms = 0;
    p->role = st->role;
    p->leader = st->leader;
    p->leader_epoch = st->leader_epoch;
    if (st->role == CLUSTER_ROLE_LEADER) {
        repl_io_become_leader(io, p, st);
    } else if (st->leader >= 0 && st->leader != (int32_t)io->b->cfg.id) {
        repl_io_become_follower(io, st);
    }
}

bool repl_io_diverging(struct repl_io *io,
                       const char *topic,
                       int32_t partition,
                       const struct plog *log,
                       int32_t last_fetched_epoch,
                       int64_t fetch_offset,
                       int32_t *epoch,
                       int64_t *end_offset)
{
    struct repl_io_part *p = repl_io_find(io, topic, partition);
    int64_t leo = plog_end_offset(log);
    struct repl_epoch_end e;

    *epoch = REPL_EPOCH_NONE;
    *end_offset = REPL_OFFSET_NONE;
    if (p == NULL || p->role != CLUSTER_ROLE_LEADER) {
        return false;
    }
    if (!p->loaded && repl_io_part_load(p, logmgr_partition(io->b->logs, topic,
                                                            partition)) != 0) {
        /* a failed load leaves a correct prefix of the history: an answer
         * from it cuts a follower no later than the real one would, and
         * the next fetch loads again */
        trace_debug("replica",
                    "event=divergence_from_partial_epochs topic=%s "
                    "partition=%d",
                    topic, (int)partition);
    }
    if (last_fetched_epoch >= 0 && repl_epochs_count(&p->epochs) > 0) {
        e = repl_epochs_end_offset_for(&p->epochs, last_fetched_epoch, leo);
        if (e.end_offset >= 0 &&
            (e.epoch != last_fetched_epoch || e.end_offset < fetch_offset)) {
            *epoch = e.epoch;
            *end_offset =
                e.end_offset < fetch_offset ? e.end_offset : fetch_offset;
            return true;
        }
    }
    if (fetch_offset > leo) {
        /* the follower holds more than this leader: cut it back */
        *epoch = repl_epochs_latest_epoch(&p->epochs);
        *end_offset = leo;
        return true;
    }
    return false;
}

int32_t repl_io_leader_epoch(const struct repl_io *io,
                             const char *topic,
                             int32_t partition)
{
    const struct repl_io_part *p = repl_io_find(io, topic, partition);

    if (p == NULL || p->role != CLUSTER_ROLE_LEADER || p->leader_epoch < 0) {
        return 0;
    }
    return p->leader_epoch;
}

const struct repl_epochs *
repl_io_epochs(const struct repl_io *io, const char *topic, int32_t partition)
{
    const struct repl_io_part *p = repl_io_find(io, topic, partition);

    return p != NULL ? &p->epochs : NULL;
}

static struct repl_io_lead *repl_io_lead_of(const struct repl_io *io,
                                            const struct plog *log)
{
    uint32_t i;

    if (io == NULL) {
        return NULL;
    }
    for (i = 0; i < io->n; i++) {
        if (io->parts[i]->lead != NULL && io->parts[i]->lead->log == log) {
            return io->parts[i]->lead;
        }
    }
    return NULL;
}

/* A partition led here without a core: failed (repl_io_part_failed). */
static bool repl_io_leads_without_core(const struct repl_io *io,
                                       const struct plog *log)
{
    uint32_t i;

    for (i = 0; io != NULL && i < io->n; i++) {
        const struct repl_io_part *p = io->parts[i];

        if (p->failed && p->failed_log == log &&
            p->role == CLUSTER_ROLE_LEADER) {
            return true;
        }
    }
    return false;
}

bool repl_io_high_watermark(const struct repl_io *io,
                            const struct plog *log,
                            int64_t *hw)
{
    const struct repl_io_lead *lead = repl_io_lead_of(io, log);

    if (lead != NULL) {
        *hw = repl_leader_high_watermark(lead->l);
        return true;
    }
    if (repl_io_leads_without_core(io, log)) {
        *hw = REPL_OFFSET_NONE; /* none: the log end is not one */
        return true;
    }
    return false;
}

int repl_io_route(const struct repl_io *io,
                  const char *topic,
                  int32_t partition,
                  char *msg,
                  size_t msg_cap)
{
    const struct repl_io_part *p = repl_io_find(io, topic, partition);

    if (p == NULL || p->role != CLUSTER_ROLE_LEADER || p->lead != NULL) {
        return 0;
    }
    (void)snprintf(msg, msg_cap,
                   "%s/%d is led here in epoch %d without replication "
                   "state (see the broker's partition_failed trace); retry",
                   topic, (int)partition, (int)p->leader_epoch);
    return WEIR_ELEADER_NOT_AVAILABLE;
}

bool repl_io_hw_established(const struct repl_io *io, const struct plog *log)
{
    const struct repl_io_lead *lead = repl_io_lead_of(io, log);

    return lead == NULL || repl_leader_hw_established(lead->l);
}

void repl_io_log_moved(struct repl_io *io, const struct plog *log)
{
    struct repl_io_lead *lead = repl_io_lead_of(io, log);
    struct repl_leader_event ev;
    struct repl_leader_actions acts;
    int64_t leo;
    int64_t durable;

    if (lead == NULL) {
        return;
    }
    leo = plog_end_offset(log);
    durable = repl_io_durable_end(log);
    if (leo > repl_leader_log_end_offset(lead->l)) {
        memset(&ev, 0, sizeof(ev));
        ev.type = REPL_LEADER_EV_APPEND;
        ev.u.append.log_end_offset = leo;
        repl_io_lead_step(lead, &ev, &acts);
    }
    memset(&ev, 0, sizeof(ev));
    ev.type = REPL_LEADER_EV_DURABLE;
    ev.u.durable.durable_offset = durable;
    repl_io_lead_step(lead, &ev, &acts);
}

int repl_io_acks_all(const struct repl_io *io,
                     const char *topic,
                     int32_t partition,
                     bool *replicated)
{
    const struct repl_io_part *p = repl_io_find(io, topic, partition);

    *replicated = p != NULL && p->lead != NULL;
    if (*replicated && !repl_leader_can_accept_acks_all(p->lead->l)) {
        return WEIR_ENOT_ENOUGH_REPLICAS;
    }
    return 0;
}

bool repl_io_follower_fetch(struct repl_io *io,
                            const char *topic,
                            int32_t partition,
                            const struct repl_fetch_params *fp,
                            struct repl_fetch_answer *out)
{
    struct repl_io_part *p = repl_io_find(io, topic, partition);
    struct repl_leader_event ev;
    struct repl_leader_actions acts;

    if (p == NULL || p->lead == NULL) {
        return false;
    }
    memset(&ev, 0, sizeof(ev));
    ev.type = REPL_LEADER_EV_FOLLOWER_FETCH;
    ev.u.fetch = *fp;
    repl_io_lead_step(p->lead, &ev, &acts);
    if (!acts.has_fetch_answer) {
        return false;
    }
    *out = acts.fetch;
    return true;
}

bool repl_io_known_hw(const struct repl_io *io,
                      const char *topic,
                      int32_t partition,
                      int64_t *hw)
{
    const struct repl_io_part *p = repl_io_find(io, topic, partition);

    if (p == NULL) {
        return false;
    }
    if (p->lead != NULL) {
        *hw = repl_leader_high_watermark(p->lead->l);
        return true;
    }
    if (p->role == CLUSTER_ROLE_FOLLOWER) {
        *hw = p->follower_hw;
        return true;
    }
    return false;
}

void repl_io_log_reopened(struct repl_io *io,
                          const char *topic,
                          int32_t partition,
                          struct plog *log)
{
    struct repl_io_part *p = repl_io_find(io, topic, partition);
    struct err_detail ed;
    struct fetcher *f;
    int rv;

    if (p == NULL) {
        return;
    }
    /* the log may be shorter now: a follower core starts again from it,
     * and the epoch cache is reconciled with it again */
    repl_io_follow_drop(p);
    p->failed = false;
    p->failed_log = NULL;
    p->loaded = false;
    rv = repl_io_part_load(p, log);
    if (rv != 0) {
        repl_io_follow_failed(io, p, log, rv,
                              "rebuilding the epoch cache from the reopened "
                              "log");
        return;
    }
    if (repl_epochs_truncate_from_end(&p->epochs, plog_end_offset(log)) > 0) {
        err_detail_clear(&ed);
        rv = repl_io_part_store(p, log, &ed);
        if (rv != 0) {
            (void)plog_storage_failed(log, rv, ed.msg);
            repl_io_follow_failed(io, p, log, rv,
                                  "writing the leader-epoch checkpoint: %s",
                                  ed.msg);
            return;
        }
    }
    if (p->role == CLUSTER_ROLE_FOLLOWER && p->leader >= 0 &&
        p->leader != (int32_t)io->b->cfg.id) {
        f = repl_io_fetcher(io, p->leader);
        if (f != NULL) {
            fetcher_kick(f);
        }
    }
}
