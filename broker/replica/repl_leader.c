/* SPDX-License-Identifier: Apache-2.0 */
/* Leader-side replication state machine: follower positions, ISR shrink
 * and expand proposals, and the high watermark. Follows Kafka's Partition
 * and Replica classes (KIP-101, KIP-279, KIP-320, KIP-497 "maximal ISR");
 * where we differ, the comment says why. */
#include "broker/replica/repl_leader.h"

#include <string.h>

#include "common/mem.h"

/* What the leader knows about one follower, in this epoch only. */
struct repl_leader_peer {
    int64_t fetch_offset;          /* its LEO = durable end (the fetch
                                      contract); REPL_OFFSET_NONE until it
                                      fetches in this epoch */
    uint64_t last_caught_up_ms;    /* last time it had everything we had */
    uint64_t last_fetch_ms;        /* time of its previous fetch */
    int64_t last_fetch_leader_leo; /* our LEO at its previous fetch */
};

struct repl_leader {
    int32_t self_id;
    int32_t leader_epoch;
    int32_t partition_epoch;
    struct repl_ids replicas;
    struct repl_ids isr; /* committed: what the controller has */
    uint32_t min_isr;
    uint64_t lag_ms;
    uint64_t retry_backoff_ms;
    int64_t leo;                /* local log end offset */
    int64_t durable;            /* local durable end offset, <= leo */
    int64_t hw;                 /* high watermark, monotonic, <= leo */
    int64_t epoch_start;        /* first offset of leader_epoch in the log */
    struct repl_epochs *epochs; /* borrowed from the partition */
    /* peers[i] belongs to replicas.ids[i]; our own slot is unused */
    struct repl_leader_peer peers[REPL_MAX_REPLICAS];
    bool in_flight; /* `proposal` sent, no answer yet */
    struct repl_isr_proposal proposal;
    uint64_t retry_at_ms; /* no new proposal before this */
};

static bool repl_leader_isr_ok(const struct repl_leader *l,
                               const struct repl_ids *isr)
{
    return repl_ids_is_valid(isr) && repl_ids_contains(isr, l->self_id) &&
           repl_ids_is_subset(isr, &l->replicas);
}

static bool repl_leader_config_ok(const struct repl_leader_config *cfg)
{
    return cfg->self_id >= 0 && cfg->leader_epoch >= 0 &&
           cfg->partition_epoch >= 0 && repl_ids_is_valid(&cfg->replicas) &&
           repl_ids_contains(&cfg->replicas, cfg->self_id) &&
           repl_ids_is_valid(&cfg->isr) &&
           repl_ids_contains(&cfg->isr, cfg->self_id) &&
           repl_ids_is_subset(&cfg->isr, &cfg->replicas) &&
           cfg->min_insync_replicas >= 1 && cfg->replica_lag_time_max_ms > 0 &&
           cfg->log_end_offset >= 0 && cfg->durable_offset >= 0 &&
           cfg->durable_offset <= cfg->log_end_offset &&
           cfg->high_watermark >= 0 &&
           cfg->high_watermark <= cfg->log_end_offset;
}

int repl_leader_new(const struct repl_leader_config *cfg,
                    struct repl_epochs *epochs,
                    uint64_t now_ms,
                    struct repl_leader **out)
{
    struct repl_leader *l;
    uint32_t i;
    int rv;

    *out = NULL;
    if (!repl_leader_config_ok(cfg)) {
        return WEIR_EINVALID_ARGUMENT;
    }
    /* Only one leader per epoch, and never the same one twice: a leader
     * that restarted may have lost unflushed records of its epoch, and
     * writing different records at those offsets in the same epoch would
     * hide the divergence from followers that still hold the old ones
     * (their last epoch and offset would validate). The controller gives a
     * returning broker a new epoch (as KRaft does on re-registration). */
    if (repl_epochs_latest_epoch(epochs) >= cfg->leader_epoch) {
        return WEIR_EFENCED_LEADER_EPOCH;
    }
    l = mem_calloc(1, sizeof(*l));
    if (l == NULL) {
        return WEIR_ENOMEM;
    }
    /* Kafka's makeLeader: the epoch starts at the current LEO, recorded
     * before anything is written, so followers asking "where did your
     * epoch E-1 end?" get this offset even if we never write in E. */
    rv = repl_epochs_assign(epochs, cfg->leader_epoch, cfg->log_end_offset);
    if (rv != 0) {
        mem_free(l);
        return rv;
    }
    l->self_id = cfg->self_id;
    l->leader_epoch = cfg->leader_epoch;
    l->partition_epoch = cfg->partition_epoch;
    l->replicas = cfg->replicas;
    l->isr = cfg->isr;
    l->min_isr = cfg->min_insync_replicas;
    l->lag_ms = cfg->replica_lag_time_max_ms;
    l->retry_backoff_ms = cfg->isr_retry_backoff_ms;
    l->leo = cfg->log_end_offset;
    l->durable = cfg->durable_offset;
    l->hw = cfg->high_watermark;
    l->epoch_start = cfg->log_end_offset;
    l->epochs = epochs;
    /* Positions from an earlier epoch prove nothing about this one: a
     * follower's log may have diverged from ours. Everyone starts unknown,
     * which holds the high watermark until each ISR member has fetched
     * (and been validated) in this epoch. ISR members get a full lag
     * period to do so. */
    for (i = 0; i < l->replicas.n; i++) {
        l->peers[i].fetch_offset = REPL_OFFSET_NONE;
        l->peers[i].last_caught_up_ms =
            repl_ids_contains(&l->isr, l->replicas.ids[i]) ? now_ms : 0;
        l->peers[i].last_fetch_ms = 0;
        l->peers[i].last_fetch_leader_leo = REPL_OFFSET_NONE;
    }
    *out = l;
    return 0;
}

void repl_leader_free(struct repl_leader *l)
{
    mem_free(l);
}

/* Index of a follower in replicas (and peers); -1 for ourselves or a
 * broker that is not a replica. */
static int repl_leader_peer_index(const struct repl_leader *l, int32_t id)
{
    uint32_t i;

    if (id == l->self_id) {
        return -1;
    }
    for (i = 0; i < l->replicas.n; i++) {
        if (l->replicas.ids[i] == id) {
            return (int)i;
        }
    }
    return -1;
}

static struct repl_leader_peer *repl_leader_peer(struct repl_leader *l,
                                                 int32_t id)
{
    int i = repl_leader_peer_index(l, id);

    return i < 0 ? NULL : &l->peers[i];
}

static const struct repl_leader_peer *
repl_leader_peer_const(const struct repl_leader *l, int32_t id)
{
    int i = repl_leader_peer_index(l, id);

    return i < 0 ? NULL : &l->peers[i];
}

/* Kafka's Replica.isCaughtUp: a follower is in sync while it has our whole
 * log, or while it had it no longer than the lag time ago. A silent
 * follower that holds everything we have is not dropped while nothing is
 * written: it delays nothing. */
static bool repl_leader_peer_caught_up(const struct repl_leader *l,
                                       const struct repl_leader_peer *p,
                                       uint64_t now_ms)
{
    return p->fetch_offset == l->leo || now_ms <= p->last_caught_up_ms ||
           now_ms - p->last_caught_up_ms <= l->lag_ms;
}

/* Kafka's Replica.updateFetchState. Reaching our LEO makes the follower
 * caught up now; reaching the LEO we had at its previous fetch makes it
 * caught up as of that fetch (a follower that keeps pace under steady
 * writes never equals the moving LEO, yet is in sync). */
static void repl_leader_peer_fetched(struct repl_leader *l,
                                     struct repl_leader_peer *p,
                                     int64_t fetch_offset,
                                     uint64_t now_ms)
{
    if (fetch_offset >= l->leo) {
        if (now_ms > p->last_caught_up_ms) {
            p->last_caught_up_ms = now_ms;
        }
    } else if (p->last_fetch_leader_leo != REPL_OFFSET_NONE &&
               fetch_offset >= p->last_fetch_leader_leo &&
               p->last_fetch_ms > p->last_caught_up_ms) {
        p->last_caught_up_ms = p->last_fetch_ms;
    }
    p->fetch_offset = fetch_offset;
    p->last_fetch_leader_leo = l->leo;
    p->last_fetch_ms = now_ms;
}

static void repl_leader_fetch_error(struct repl_fetch_answer *a, int err)
{
    a->verdict = REPL_FETCH_ERROR;
    a->err = err;
}

/* KIP-320 validation of (last fetched epoch, fetch offset) against our
 * epoch cache, then bookkeeping for a consistent fetch. */
static void repl_leader_fetch(struct repl_leader *l,
                              const struct repl_fetch_params *f,
                              uint64_t now_ms,
                              struct repl_fetch_answer *a)
{
    struct repl_leader_peer *p = repl_leader_peer(l, f->replica);
    struct repl_epoch_end end;

    if (p == NULL) {
        repl_leader_fetch_error(a, WEIR_ENOT_LEADER);
        return;
    }
    /* Fencing both ways: an older view means the follower missed a
     * leadership change (it must refresh); a newer one means we did (we
     * are a deposed leader and must not count its position). */
    if (f->current_leader_epoch < l->leader_epoch) {
        repl_leader_fetch_error(a, WEIR_EFENCED_LEADER_EPOCH);
        return;
    }
    if (f->current_leader_epoch > l->leader_epoch) {
        repl_leader_fetch_error(a, WEIR_EUNKNOWN_LEADER_EPOCH);
        return;
    }
    if (f->fetch_offset < 0 || f->last_fetched_epoch < REPL_EPOCH_NONE) {
        repl_leader_fetch_error(a, WEIR_EINVALID_REQUEST);
        return;
    }
    if (f->last_fetched_epoch != REPL_EPOCH_NONE) {
        end = repl_epochs_end_offset_for(l->epochs, f->last_fetched_epoch,
                                         l->leo);
        /* Our log agrees with the follower's up to fetch_offset only if we
         * have its last epoch and that epoch runs at least that far here.
         * Otherwise tell it where our history of that epoch ends. */
        if (end.epoch != f->last_fetched_epoch ||
            end.end_offset < f->fetch_offset) {
            a->verdict = REPL_FETCH_DIVERGING;
            a->diverging_epoch = end.epoch;
            a->diverging_end_offset = end.end_offset;
            return;
        }
    } else if (f->fetch_offset > l->leo) {
        /* A follower without epochs (an empty cache it could not rebuild)
         * holding more than we do: nothing tells where the logs part, so
         * it keeps what we have and drops the rest. Refusing the offset
         * instead would leave it retrying the same fetch for ever. */
        a->verdict = REPL_FETCH_DIVERGING;
        a->diverging_epoch = repl_epochs_latest_epoch(l->epochs);
        a->diverging_end_offset = l->leo;
        return;
    }
    repl_leader_peer_fetched(l, p, f->fetch_offset, now_ms);
    a->verdict = REPL_FETCH_SERVE;
    a->fetch_offset = f->fetch_offset;
}

/* Committed ISR plus members a pending proposal adds (KIP-497): a replica
 * being added counts for the high watermark at once, which is safe (it
 * only makes the HW wait for more replicas); one being removed keeps
 * counting until the controller agrees. */
static struct repl_ids repl_leader_maximal_isr(const struct repl_leader *l)
{
    struct repl_ids m = l->isr;
    uint32_t i;

    if (l->in_flight) {
        for (i = 0; i < l->proposal.isr.n; i++) {
            (void)repl_ids_add(&m, l->proposal.isr.ids[i]);
        }
    }
    return m;
}

static void repl_leader_update_hw(struct repl_leader *l,
                                  struct repl_leader_actions *out)
{
    const struct repl_leader_peer *p;
    struct repl_ids m;
    int64_t candidate = l->durable;
    uint32_t i;

    /* With too few in-sync replicas a record below the HW could live on
     * fewer than min.insync.replicas brokers; hold it (DESIGN 5). */
    if (l->isr.n < l->min_isr) {
        return;
    }
    m = repl_leader_maximal_isr(l);
    for (i = 0; i < m.n; i++) {
        if (m.ids[i] == l->self_id) {
            continue;
        }
        p = repl_leader_peer_const(l, m.ids[i]);
        if (p == NULL || p->fetch_offset == REPL_OFFSET_NONE) {
            return; /* not yet fetched in this epoch: no HW from us yet */
        }
        if (p->fetch_offset < candidate) {
            candidate = p->fetch_offset;
        }
    }
    if (candidate > l->hw) {
        l->hw = candidate;
        out->hw_advanced = true;
    }
}

static bool repl_leader_can_propose(const struct repl_leader *l,
                                    uint64_t now_ms)
{
    return !l->in_flight && now_ms >= l->retry_at_ms;
}

/* Committed ISR members that fell behind for longer than the lag time. */
static bool repl_leader_shrunk_isr(const struct repl_leader *l,
                                   uint64_t now_ms,
                                   struct repl_ids *next)
{
    const struct repl_leader_peer *p;
    bool changed = false;
    uint32_t i;

    *next = l->isr;
    for (i = 0; i < l->isr.n; i++) {
        p = repl_leader_peer_const(l, l->isr.ids[i]);
        if (p != NULL && !repl_leader_peer_caught_up(l, p, now_ms)) {
            repl_ids_remove(next, l->isr.ids[i]);
            changed = true;
        }
    }
    return changed;
}

/* Replicas outside the ISR that may rejoin: they reached the HW, and the
 * start of our epoch (their log is known to match ours there, and they
 * hold every record an earlier leader may have acknowledged). Unlike
 * Kafka we also ask that the shrink rule would keep them, so a replica
 * that reaches a high watermark held far below the LEO (ISR below
 * minimum) is not added and evicted again at once. */
static bool repl_leader_expanded_isr(const struct repl_leader *l,
                                     uint64_t now_ms,
                                     struct repl_ids *next)
{
    const struct repl_leader_peer *p;
    bool changed = false;
    uint32_t i;

    *next = l->isr;
    for (i = 0; i < l->replicas.n; i++) {
        p = repl_leader_peer_const(l, l->replicas.ids[i]);
        if (p == NULL || repl_ids_contains(&l->isr, l->replicas.ids[i]) ||
            p->fetch_offset == REPL_OFFSET_NONE) {
            continue;
        }
        if (p->fetch_offset >= l->hw && p->fetch_offset >= l->epoch_start &&
            repl_leader_peer_caught_up(l, p, now_ms)) {
            changed = repl_ids_add(next, l->replicas.ids[i]) || changed;
        }
    }
    return changed;
}

/* One proposal at a time; shrinking first, since a dead ISR member holds
 * the high watermark back for everyone. */
static void repl_leader_maybe_propose(struct repl_leader *l,
                                      uint64_t now_ms,
                                      struct repl_leader_actions *out)
{
    struct repl_ids next;

    if (!repl_leader_can_propose(l, now_ms)) {
        return;
    }
    if (!repl_leader_shrunk_isr(l, now_ms, &next) &&
        !repl_leader_expanded_isr(l, now_ms, &next)) {
        return;
    }
    l->in_flight = true;
    l->proposal.leader_epoch = l->leader_epoch;
    l->proposal.partition_epoch = l->partition_epoch;
    l->proposal.isr = next;
    out->propose = true;
    out->proposal = l->proposal;
}

static uint64_t repl_leader_next_tick(const struct repl_leader *l,
                                      uint64_t now_ms)
{
    const struct repl_leader_peer *p;
    uint64_t next = REPL_TICK_NEVER;
    uint64_t due;
    uint32_t i;

    /* The controller's answer (or the adapter turning a lost request into
     * a rejection) is the next thing that can change the ISR. */
    if (l->in_flight) {
        return REPL_TICK_NEVER;
    }
    if (now_ms < l->retry_at_ms) {
        return l->retry_at_ms;
    }
    for (i = 0; i < l->isr.n; i++) {
        p = repl_leader_peer_const(l, l->isr.ids[i]);
        if (p == NULL || p->fetch_offset == l->leo) {
            continue;
        }
        /* first moment at which now - last_caught_up > lag */
        due = p->last_caught_up_ms > UINT64_MAX - l->lag_ms - 1
                  ? REPL_TICK_NEVER
                  : p->last_caught_up_ms + l->lag_ms + 1;
        if (due < next) {
            next = due;
        }
    }
    return next;
}

static int repl_leader_isr_result(struct repl_leader *l,
                                  const struct repl_leader_event *ev,
                                  struct repl_leader_actions *out)
{
    /* An answer to anything but the proposal in flight is stale (a
     * duplicate, or one overtaken by a partition update): drop it. */
    if (!l->in_flight ||
        ev->u.isr_result.leader_epoch != l->proposal.leader_epoch ||
        ev->u.isr_result.partition_epoch != l->proposal.partition_epoch) {
        return 0;
    }
    if (!ev->u.isr_result.accepted) {
        l->in_flight = false;
        l->retry_at_ms = ev->now_ms + l->retry_backoff_ms;
        return 0;
    }
    if (!repl_leader_isr_ok(l, &ev->u.isr_result.isr) ||
        ev->u.isr_result.new_partition_epoch <= l->partition_epoch) {
        return WEIR_EINVALID_ARGUMENT;
    }
    l->in_flight = false;
    l->isr = ev->u.isr_result.isr;
    l->partition_epoch = ev->u.isr_result.new_partition_epoch;
    out->isr_changed = true;
    return 0;
}

/* Followers the controller took out of the ISR (fenced, shut down, an
 * unclean stop, an offline log) start over as unknown: what they fetched
 * before says nothing about them now. Otherwise a follower that had all
 * of an idle log when its broker stopped would count as caught up for
 * ever (nothing is written: its offset still equals our LEO), be put back
 * in every expansion proposal, and the controller would refuse each one,
 * keeping the live followers out with it. Like a new leader's, they must
 * fetch again before they can rejoin. */
static void repl_leader_forget_removed(struct repl_leader *l,
                                       const struct repl_ids *old_isr)
{
    uint32_t i;

    for (i = 0; i < l->replicas.n; i++) {
        int32_t id = l->replicas.ids[i];

        if (id != l->self_id && repl_ids_contains(old_isr, id) &&
            !repl_ids_contains(&l->isr, id)) {
            l->peers[i].fetch_offset = REPL_OFFSET_NONE;
            l->peers[i].last_caught_up_ms = 0;
            l->peers[i].last_fetch_ms = 0;
            l->peers[i].last_fetch_leader_leo = REPL_OFFSET_NONE;
        }
    }
}

static int repl_leader_partition_update(struct repl_leader *l,
                                        const struct repl_leader_event *ev,
                                        struct repl_leader_actions *out)
{
    struct repl_ids old_isr = l->isr;

    if (ev->u.partition_update.partition_epoch <= l->partition_epoch) {
        return 0; /* already known, or older than what we have */
    }
    if (!repl_leader_isr_ok(l, &ev->u.partition_update.isr)) {
        return WEIR_EINVALID_ARGUMENT;
    }
    /* The controller moved on (e.g. fenced a dead broker): any proposal in
     * flight was based on the old epoch and will be refused. */
    l->isr = ev->u.partition_update.isr;
    l->partition_epoch = ev->u.partition_update.partition_epoch;
    l->in_flight = false;
    l->retry_at_ms = 0;
    repl_leader_forget_removed(l, &old_isr);
    out->isr_changed = true;
    return 0;
}

static int repl_leader_apply(struct repl_leader *l,
                             const struct repl_leader_event *ev,
                             struct repl_leader_actions *out)
{
    switch (ev->type) {
    case REPL_LEADER_EV_TICK:
        return 0;
    case REPL_LEADER_EV_FOLLOWER_FETCH:
        out->has_fetch_answer = true;
        repl_leader_fetch(l, &ev->u.fetch, ev->now_ms, &out->fetch);
        return 0;
    case REPL_LEADER_EV_APPEND:
        if (ev->u.append.log_end_offset < l->leo) {
            return WEIR_EINVALID_ARGUMENT;
        }
        l->leo = ev->u.append.log_end_offset;
        return 0;
    case REPL_LEADER_EV_DURABLE:
        if (ev->u.durable.durable_offset > l->leo) {
            return WEIR_EINVALID_ARGUMENT;
        }
        if (ev->u.durable.durable_offset > l->durable) {
            l->durable = ev->u.durable.durable_offset;
        }
        return 0;
    case REPL_LEADER_EV_ISR_RESULT:
        return repl_leader_isr_result(l, ev, out);
    case REPL_LEADER_EV_PARTITION_UPDATE:
        return repl_leader_partition_update(l, ev, out);
    }
    return WEIR_EINVALID_ARGUMENT;
}

int repl_leader_step(struct repl_leader *l,
                     const struct repl_leader_event *ev,
                     struct repl_leader_actions *out)
{
    int rv;

    memset(out, 0, sizeof(*out));
    rv = repl_leader_apply(l, ev, out);
    if (rv == 0) {
        repl_leader_maybe_propose(l, ev->now_ms, out);
        repl_leader_update_hw(l, out);
    }
    out->high_watermark = l->hw;
    out->fetch.high_watermark = l->hw;
    out->next_tick_ms = repl_leader_next_tick(l, ev->now_ms);
    return rv;
}

int64_t repl_leader_high_watermark(const struct repl_leader *l)
{
    return l->hw;
}

int64_t repl_leader_log_end_offset(const struct repl_leader *l)
{
    return l->leo;
}

int32_t repl_leader_leader_epoch(const struct repl_leader *l)
{
    return l->leader_epoch;
}

int32_t repl_leader_partition_epoch(const struct repl_leader *l)
{
    return l->partition_epoch;
}

int64_t repl_leader_epoch_start_offset(const struct repl_leader *l)
{
    return l->epoch_start;
}

const struct repl_ids *repl_leader_isr(const struct repl_leader *l)
{
    return &l->isr;
}

bool repl_leader_is_in_sync(const struct repl_leader *l, int32_t replica)
{
    return repl_ids_contains(&l->isr, replica);
}

bool repl_leader_proposal_in_flight(const struct repl_leader *l)
{
    return l->in_flight;
}

int64_t repl_leader_follower_offset(const struct repl_leader *l,
                                    int32_t replica)
{
    const struct repl_leader_peer *p = repl_leader_peer_const(l, replica);

    return p == NULL ? REPL_OFFSET_NONE : p->fetch_offset;
}

bool repl_leader_can_accept_acks_all(const struct repl_leader *l)
{
    return l->isr.n >= l->min_isr;
}

bool repl_leader_hw_established(const struct repl_leader *l)
{
    return l->hw >= l->epoch_start;
}

int repl_leader_check_invariants(const struct repl_leader *l)
{
    uint32_t i;

    if (!repl_leader_isr_ok(l, &l->isr) || l->hw < 0 || l->hw > l->leo ||
        l->durable > l->leo || l->epoch_start < 0 || l->epoch_start > l->leo ||
        repl_epochs_start_offset(l->epochs, l->leader_epoch) !=
            l->epoch_start) {
        return WEIR_ECORRUPT;
    }
    if (l->in_flight && !repl_leader_isr_ok(l, &l->proposal.isr)) {
        return WEIR_ECORRUPT;
    }
    for (i = 0; i < l->replicas.n; i++) {
        if (l->peers[i].fetch_offset > l->leo) {
            return WEIR_ECORRUPT;
        }
    }
    return 0;
}
