/* SPDX-License-Identifier: Apache-2.0 */
/* Replicas end to end, in virtual time: each replica's log is modelled as
 * an array of (epoch, value) records, driven by the real repl_leader and
 * repl_follower cores and a tiny controller (compare-and-set ISR changes,
 * clean elections from the ISR, fencing of crashed brokers, leadership
 * moves without writes). Covers both KIP-101 data-loss scenarios step by
 * step, then seeded random schedules of writes, fetches, flushes, crashes
 * (some losing the epoch checkpoint, rebuilt from the records as the
 * adapter does), restarts, leadership moves that leave empty epochs, and
 * retention (followers behind the leader's log start restart there),
 * checking that nothing below a published high watermark is ever lost or
 * changed (above each replica's log start) and that the logs converge
 * once faults stop. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "broker/replica/repl_follower.h"
#include "broker/replica/repl_leader.h"

#define SIM_NODES   3
#define SIM_MAX_LOG 2048
#define SIM_LAG_MS  10000

struct sim_rec {
    int32_t epoch;
    int64_t value; /* unique per produced record */
};

struct sim_node {
    int32_t id;
    bool alive;
    struct sim_rec log[SIM_MAX_LOG]; /* valid from start to leo */
    int64_t start;                   /* log start: retention, restarts */
    int64_t leo;
    int64_t durable;
    int64_t hw;            /* in memory */
    int64_t hw_checkpoint; /* on "disk": written only by sim_checkpoint */
    struct repl_epochs epochs;
    struct weir_buf epochs_file; /* leader-epoch-checkpoint on "disk" */
    struct repl_leader *leader;
    struct repl_follower *follower;
};

struct sim {
    struct sim_node nodes[SIM_NODES];
    uint32_t n_nodes;
    uint32_t min_isr;
    uint64_t now;
    int64_t next_value;
    /* controller */
    int32_t leader; /* -1: offline */
    int32_t leader_epoch;
    int32_t partition_epoch;
    struct repl_ids replicas;
    struct repl_ids isr;
    bool has_pending;
    struct repl_isr_proposal pending;
    /* everything ever below a published high watermark */
    struct sim_rec committed[SIM_MAX_LOG];
    int64_t committed_len;
    bool allow_loss; /* scenario 2 loses unflushed data on purpose */
};

/* What the random runs went through, summed over all seeds: the test
 * fails if a change to the schedule stops exercising a path. */
struct sim_stats {
    unsigned long elections;
    unsigned long diverging; /* DIVERGING answers */
    unsigned long truncations;
    unsigned long below_hw; /* truncations that kept records below HW
                               which a cut-to-HW rule would have lost */
    unsigned long shrinks;
    unsigned long expands;
    unsigned long rejected;
    unsigned long committed;
    unsigned long moves;        /* leadership moved without a write */
    unsigned long restarts;     /* logs restarted at the leader's start */
    unsigned long rebuilt;      /* epoch caches rebuilt from records */
    unsigned long out_of_range; /* fetches below the leader's start */
};

static struct sim_stats sim_stats;

static struct sim_node *sim_node(struct sim *s, int32_t id)
{
    assert_true(id >= 1 && (uint32_t)id <= s->n_nodes);
    /* cmocka's assert does not tell the compiler it stops, so clamp too:
     * gcc -O2 with ASan otherwise sees a possible index of -1 */
    if (id < 1 || id > SIM_NODES) {
        id = 1;
    }
    return &s->nodes[id - 1];
}

static void sim_save_epochs(struct sim_node *n)
{
    buf_reset(&n->epochs_file);
    assert_int_equal(repl_epochs_encode(&n->epochs, &n->epochs_file), 0);
}

static void sim_init(struct sim *s, uint32_t n_nodes, uint32_t min_isr)
{
    uint32_t i;

    memset(s, 0, sizeof(*s));
    s->n_nodes = n_nodes;
    s->min_isr = min_isr;
    s->leader = -1;
    for (i = 0; i < n_nodes; i++) {
        s->nodes[i].id = (int32_t)i + 1;
        s->nodes[i].alive = true;
        repl_epochs_init(&s->nodes[i].epochs);
        buf_init(&s->nodes[i].epochs_file);
        sim_save_epochs(&s->nodes[i]);
        (void)repl_ids_add(&s->replicas, (int32_t)i + 1);
    }
    s->isr = s->replicas;
}

static void sim_drop_roles(struct sim_node *n)
{
    repl_leader_free(n->leader);
    n->leader = NULL;
    repl_follower_free(n->follower);
    n->follower = NULL;
}

static void sim_fini(struct sim *s)
{
    uint32_t i;

    for (i = 0; i < s->n_nodes; i++) {
        sim_drop_roles(&s->nodes[i]);
        repl_epochs_fini(&s->nodes[i].epochs);
        buf_fini(&s->nodes[i].epochs_file);
    }
}

/* Nothing below a published HW may change, and the leader holds it all. */
static void sim_publish_hw(struct sim *s, const struct sim_node *n, int64_t hw)
{
    int64_t o;

    for (o = n->start; o < hw; o++) {
        if (o < s->committed_len && !s->allow_loss) {
            assert_int_equal(n->log[o].value, s->committed[o].value);
            assert_int_equal(n->log[o].epoch, s->committed[o].epoch);
        } else {
            s->committed[o] = n->log[o];
        }
    }
    if (hw > s->committed_len) {
        s->committed_len = hw;
    }
}

static void sim_leader_actions(struct sim *s,
                               struct sim_node *n,
                               const struct repl_leader_actions *out)
{
    if (out->hw_advanced) {
        n->hw = out->high_watermark;
        sim_publish_hw(s, n, n->hw);
    }
    if (out->propose) {
        s->has_pending = true;
        s->pending = out->proposal;
    }
}

static void sim_leader_step(struct sim *s,
                            struct sim_node *n,
                            struct repl_leader_event *ev,
                            struct repl_leader_actions *out)
{
    ev->now_ms = s->now;
    assert_int_equal(repl_leader_step(n->leader, ev, out), 0);
    assert_int_equal(repl_leader_check_invariants(n->leader), 0);
    sim_leader_actions(s, n, out);
}

static int sim_follower_step(struct sim_node *n,
                             struct repl_follower_event *ev,
                             uint64_t now,
                             struct repl_follower_actions *out)
{
    int rv;

    ev->now_ms = now;
    rv = repl_follower_step(n->follower, ev, out);
    assert_int_equal(repl_follower_check_invariants(n->follower), 0);
    if (out->truncate) {
        sim_stats.truncations++;
        if (out->truncate_offset > n->hw) {
            sim_stats.below_hw++;
        }
        assert_true(out->truncate_offset <= n->leo);
        n->leo = out->truncate_offset;
        if (n->durable > n->leo) {
            n->durable = n->leo;
        }
        if (n->start > n->leo) {
            n->start = n->leo; /* the adapter restarts the log there */
        }
    }
    if (out->restart) {
        sim_stats.restarts++;
        assert_true(out->restart_offset > n->leo);
        n->start = out->restart_offset;
        n->leo = out->restart_offset;
        n->durable = out->restart_offset;
    }
    if (out->epochs_changed) {
        sim_save_epochs(n); /* after truncating, before appending */
    }
    n->hw = out->high_watermark;
    return rv;
}

/* Take up the role the controller gives: lead, follow, or neither. */
static void sim_assume_role(struct sim *s, struct sim_node *n)
{
    struct repl_leader_config lc;
    struct repl_follower_config fc;

    sim_drop_roles(n);
    if (!n->alive || s->leader < 0) {
        return;
    }
    if (s->leader == n->id) {
        memset(&lc, 0, sizeof(lc));
        lc.self_id = n->id;
        lc.leader_epoch = s->leader_epoch;
        lc.partition_epoch = s->partition_epoch;
        lc.replicas = s->replicas;
        lc.isr = s->isr;
        lc.min_insync_replicas = s->min_isr;
        lc.replica_lag_time_max_ms = SIM_LAG_MS;
        lc.isr_retry_backoff_ms = 100;
        lc.log_end_offset = n->leo;
        lc.durable_offset = n->durable;
        /* as the adapter: what retention deleted was committed */
        lc.high_watermark = n->hw > n->start ? n->hw : n->start;
        assert_int_equal(repl_leader_new(&lc, &n->epochs, s->now, &n->leader),
                         0);
    } else {
        memset(&fc, 0, sizeof(fc));
        fc.self_id = n->id;
        fc.leader_id = s->leader;
        fc.leader_epoch = s->leader_epoch;
        fc.log_end_offset = n->leo;
        fc.durable_offset = n->durable;
        fc.high_watermark = n->hw > n->start ? n->hw : n->start;
        fc.fetch_backoff_ms = 100;
        assert_int_equal(repl_follower_new(&fc, &n->epochs, &n->follower), 0);
    }
    sim_save_epochs(n);
}

/* Clean election: the first live ISR member in replica order. */
static void sim_elect(struct sim *s)
{
    uint32_t i;

    s->leader = -1;
    for (i = 0; i < s->replicas.n; i++) {
        int32_t id = s->replicas.ids[i];

        if (repl_ids_contains(&s->isr, id) && sim_node(s, id)->alive) {
            s->leader = id;
            break;
        }
    }
    if (s->leader >= 0) {
        sim_stats.elections++;
        s->leader_epoch++;
        s->partition_epoch++;
        s->has_pending = false;
    }
    for (i = 0; i < s->n_nodes; i++) {
        sim_assume_role(s, &s->nodes[i]);
    }
}

/* The leader, if it is up and leading. */
static struct sim_node *sim_leader(struct sim *s)
{
    struct sim_node *l = s->leader < 0 ? NULL : sim_node(s, s->leader);

    return l != NULL && l->alive && l->leader != NULL ? l : NULL;
}

static void sim_produce(struct sim *s, int count)
{
    struct sim_node *l = sim_leader(s);
    struct repl_leader_event ev = {.type = REPL_LEADER_EV_APPEND};
    struct repl_leader_actions out;
    int i;

    if (l == NULL || l->leo + count >= SIM_MAX_LOG) {
        return;
    }
    for (i = 0; i < count; i++) {
        l->log[l->leo].epoch = s->leader_epoch;
        l->log[l->leo].value = ++s->next_value;
        l->leo++;
    }
    ev.u.append.log_end_offset = l->leo;
    sim_leader_step(s, l, &ev, &out);
}

/* fsync: everything appended becomes durable */
static void sim_flush(struct sim *s, int32_t id)
{
    struct sim_node *n = sim_node(s, id);
    struct repl_leader_event lev = {.type = REPL_LEADER_EV_DURABLE};
    struct repl_follower_event fev = {.type = REPL_FOLLOWER_EV_DURABLE};
    struct repl_leader_actions lout;
    struct repl_follower_actions fout;

    if (!n->alive) {
        return;
    }
    n->durable = n->leo;
    if (n->leader != NULL) {
        lev.u.durable.durable_offset = n->leo;
        sim_leader_step(s, n, &lev, &lout);
    } else if (n->follower != NULL) {
        fev.u.durable.durable_offset = n->leo;
        assert_int_equal(sim_follower_step(n, &fev, s->now, &fout), 0);
    }
}

/* Follower fetch carrying at most max_records; the response is lost when
 * !deliver (the follower crashes first). Returns the verdict, or -1 when
 * no fetch could be sent. */
static int
sim_fetch(struct sim *s, int32_t id, int64_t max_records, bool deliver)
{
    struct sim_node *n = sim_node(s, id);
    struct sim_node *l = sim_leader(s);
    struct repl_leader_event lev = {.type = REPL_LEADER_EV_FOLLOWER_FETCH};
    struct repl_follower_event fev;
    struct repl_leader_actions lout;
    struct repl_follower_actions fout;
    int64_t o;
    int64_t end;

    if (!n->alive || n->follower == NULL || l == NULL ||
        !repl_follower_next_fetch(n->follower, s->now, &lev.u.fetch)) {
        return -1;
    }
    sim_leader_step(s, l, &lev, &lout);
    assert_true(lout.has_fetch_answer);
    if (!deliver) {
        return (int)lout.fetch.verdict;
    }
    memset(&fev, 0, sizeof(fev));
    if (lout.fetch.verdict == REPL_FETCH_DIVERGING) {
        sim_stats.diverging++;
        fev.type = REPL_FOLLOWER_EV_DIVERGING;
        fev.u.diverging.epoch = lout.fetch.diverging_epoch;
        fev.u.diverging.end_offset = lout.fetch.diverging_end_offset;
        assert_int_equal(sim_follower_step(n, &fev, s->now, &fout), 0);
        return REPL_FETCH_DIVERGING;
    }
    if (lout.fetch.verdict == REPL_FETCH_ERROR) {
        fev.type = REPL_FOLLOWER_EV_FETCH_ERROR;
        fev.u.fetch_error.err = lout.fetch.err;
        assert_int_equal(sim_follower_step(n, &fev, s->now, &fout), 0);
        return REPL_FETCH_ERROR;
    }
    if (lout.fetch.fetch_offset < l->start) {
        /* the adapter's range check after the core's verdict (fetch.c) */
        sim_stats.out_of_range++;
        fev.type = REPL_FOLLOWER_EV_OUT_OF_RANGE;
        fev.u.out_of_range.log_start_offset = l->start;
        assert_int_equal(sim_follower_step(n, &fev, s->now, &fout), 0);
        return REPL_FETCH_ERROR;
    }
    /* records from fetch_offset, one batch per run of equal epochs */
    end = l->leo < lout.fetch.fetch_offset + max_records
              ? l->leo
              : lout.fetch.fetch_offset + max_records;
    for (o = lout.fetch.fetch_offset; o < end;) {
        int64_t b = o;

        while (o < end && l->log[o].epoch == l->log[b].epoch) {
            o++;
        }
        fev.type = REPL_FOLLOWER_EV_RECORDS;
        fev.u.records.epoch = l->log[b].epoch;
        fev.u.records.base_offset = b;
        fev.u.records.end_offset = o;
        assert_int_equal(sim_follower_step(n, &fev, s->now, &fout), 0);
        assert_true(fout.append);
        memcpy(&n->log[b], &l->log[b], (size_t)(o - b) * sizeof(n->log[0]));
        n->leo = o;
    }
    fev.type = REPL_FOLLOWER_EV_LEADER_HW;
    fev.u.leader_hw.high_watermark = lout.fetch.high_watermark;
    assert_int_equal(sim_follower_step(n, &fev, s->now, &fout), 0);
    return REPL_FETCH_SERVE;
}

static void sim_tick(struct sim *s)
{
    struct sim_node *l = sim_leader(s);
    struct repl_leader_event ev = {.type = REPL_LEADER_EV_TICK};
    struct repl_leader_actions out;

    if (l != NULL) {
        sim_leader_step(s, l, &ev, &out);
    }
}

/* The controller answers the pending proposal (compare-and-set on both
 * epochs; a crashed broker is not admitted). A lost request reaches the
 * leader as a rejection, as the adapter would report it. */
static void sim_deliver(struct sim *s, bool lose)
{
    struct sim_node *l = sim_leader(s);
    struct repl_leader_event ev = {.type = REPL_LEADER_EV_ISR_RESULT};
    struct repl_leader_actions out;
    uint32_t i;
    bool ok;

    if (!s->has_pending) {
        return;
    }
    s->has_pending = false;
    ok = !lose && s->pending.leader_epoch == s->leader_epoch &&
         s->pending.partition_epoch == s->partition_epoch;
    for (i = 0; ok && i < s->pending.isr.n; i++) {
        ok = sim_node(s, s->pending.isr.ids[i])->alive;
    }
    if (ok) {
        if (s->pending.isr.n < s->isr.n) {
            sim_stats.shrinks++;
        } else {
            sim_stats.expands++;
        }
        s->isr = s->pending.isr;
        s->partition_epoch++;
    } else {
        sim_stats.rejected++;
    }
    if (l == NULL || s->pending.leader_epoch != s->leader_epoch) {
        return; /* the proposer is gone */
    }
    ev.u.isr_result.accepted = ok;
    ev.u.isr_result.leader_epoch = s->pending.leader_epoch;
    ev.u.isr_result.partition_epoch = s->pending.partition_epoch;
    ev.u.isr_result.new_partition_epoch = s->partition_epoch;
    ev.u.isr_result.isr = s->isr;
    sim_leader_step(s, l, &ev, &out);
}

static void sim_checkpoint_hw(struct sim *s, int32_t id)
{
    sim_node(s, id)->hw_checkpoint = sim_node(s, id)->hw;
}

/* Crash: memory is gone, the log keeps `keep` records (normally the
 * durable ones; fewer models a page cache lost under flush=none). When
 * `fence`, the controller notices (session timeout): the broker leaves
 * the ISR unless it is the last member, and leadership moves. */
static void sim_crash(struct sim *s, int32_t id, bool fence, int64_t keep)
{
    struct sim_node *n = sim_node(s, id);
    struct sim_node *l;
    struct repl_leader_event ev = {.type = REPL_LEADER_EV_PARTITION_UPDATE};
    struct repl_leader_actions out;

    if (!n->alive) {
        return;
    }
    n->alive = false;
    sim_drop_roles(n);
    n->leo = keep < n->leo ? keep : n->leo;
    n->durable = n->leo;
    n->hw = 0;
    if (!fence) {
        return;
    }
    if (repl_ids_contains(&s->isr, id) && s->isr.n > 1) {
        repl_ids_remove(&s->isr, id);
        s->partition_epoch++;
    }
    if (s->leader == id) {
        sim_elect(s);
        return;
    }
    l = sim_leader(s);
    if (l != NULL) {
        ev.u.partition_update.partition_epoch = s->partition_epoch;
        ev.u.partition_update.isr = s->isr;
        sim_leader_step(s, l, &ev, &out);
    }
}

/* The adapter's load of a cache: reconcile it with the log, then read
 * the "batch headers" (here the records) from where it says. */
static void sim_reconcile_epochs(struct sim_node *n)
{
    uint32_t before;
    int64_t from;
    int64_t o;

    from = repl_epochs_reconcile(&n->epochs, n->start, n->leo,
                                 n->leo > n->start ? n->log[n->leo - 1].epoch
                                                   : REPL_EPOCH_NONE);
    if (from == REPL_OFFSET_NONE) {
        return;
    }
    before = repl_epochs_count(&n->epochs);
    for (o = from; o < n->leo; o++) {
        assert_int_equal(repl_epochs_assign(&n->epochs, n->log[o].epoch, o), 0);
    }
    sim_stats.rebuilt += repl_epochs_count(&n->epochs) != before;
}

/* The leader-epoch checkpoint of a down broker is emptied (a crash between
 * the flush of a new epoch's records and the checkpoint write, or a lost
 * file). */
static void sim_lose_checkpoint(struct sim *s, int32_t id)
{
    struct sim_node *n = sim_node(s, id);
    struct repl_epochs empty;

    if (n->alive) {
        return;
    }
    repl_epochs_init(&empty);
    buf_reset(&n->epochs_file);
    assert_int_equal(repl_epochs_encode(&empty, &n->epochs_file), 0);
    repl_epochs_fini(&empty);
}

/* Controlled move: leadership goes to the next live ISR member with a new
 * epoch, before anyone writes (a controlled shutdown or a preferred
 * leader election): the old leader's epoch may be left without a record
 * in its cache. */
static void sim_move(struct sim *s)
{
    struct sim_node *l = sim_leader(s);
    uint32_t i;
    uint32_t k;

    if (l == NULL) {
        return;
    }
    for (k = 0; k < s->replicas.n && s->replicas.ids[k] != l->id; k++) {
    }
    for (i = 1; i < s->replicas.n; i++) {
        int32_t id = s->replicas.ids[(k + i) % s->replicas.n];

        if (repl_ids_contains(&s->isr, id) && sim_node(s, id)->alive) {
            sim_stats.moves++;
            s->leader = id;
            s->leader_epoch++;
            s->partition_epoch++;
            s->has_pending = false;
            for (k = 0; k < s->n_nodes; k++) {
                sim_assume_role(s, &s->nodes[k]);
            }
            return;
        }
    }
}

/* Retention: delete records from the front, only below the replica's own
 * high watermark (the guarantee retention gives) and only durable ones
 * (it deletes closed segments, fsynced when they were closed). */
static void sim_retain(struct sim *s, int32_t id, uint64_t r)
{
    struct sim_node *n = sim_node(s, id);
    int64_t limit = n->hw < n->durable ? n->hw : n->durable;

    if (!n->alive || limit <= n->start) {
        return;
    }
    /* often all it may delete: a follower down meanwhile falls behind */
    n->start = r % 2 == 0
                   ? limit
                   : n->start + 1 + (int64_t)(r % (uint64_t)(limit - n->start));
}

/* Restart: recover the log (already cut to what survived), the epoch
 * cache from its checkpoint reconciled with the log, the HW from its
 * checkpoint; then take up a role. */
static void sim_restart(struct sim *s, int32_t id)
{
    struct sim_node *n = sim_node(s, id);
    struct err_detail ed;

    if (n->alive) {
        return;
    }
    n->alive = true;
    assert_int_equal(repl_epochs_decode(&n->epochs, n->epochs_file.data,
                                        n->epochs_file.len, &ed),
                     0);
    sim_reconcile_epochs(n);
    n->hw = n->hw_checkpoint < n->leo ? n->hw_checkpoint : n->leo;
    if (s->leader < 0 || s->leader == id) {
        /* an ISR member is back, or the leader itself: a returning broker
         * never resumes an old leadership (it may have lost records of
         * that epoch), the controller elects again with a new epoch */
        sim_elect(s);
    } else {
        sim_assume_role(s, n);
    }
}

static void sim_expect_log(const struct sim *s,
                           int32_t id,
                           const struct sim_rec *want,
                           int64_t n)
{
    const struct sim_node *node = &s->nodes[id - 1];
    int64_t o;

    assert_int_equal(node->leo, n);
    for (o = 0; o < n; o++) {
        assert_int_equal(node->log[o].epoch, want[o].epoch);
        assert_int_equal(node->log[o].value, want[o].value);
    }
}

/* Replica id holds the leader's records where both still hold them, and
 * ends where it does. */
static void
sim_expect_same(const struct sim *s, int32_t id, const struct sim_node *l)
{
    const struct sim_node *n = &s->nodes[id - 1];
    int64_t o;

    assert_int_equal(n->leo, l->leo);
    for (o = n->start > l->start ? n->start : l->start; o < n->leo; o++) {
        assert_int_equal(n->log[o].epoch, l->log[o].epoch);
        assert_int_equal(n->log[o].value, l->log[o].value);
    }
}

/* Every live replica agrees with what was committed below its own HW, and
 * the leader holds all of it. */
static void sim_check(const struct sim *s)
{
    const struct sim_node *l = s->leader < 0 ? NULL : &s->nodes[s->leader - 1];
    uint32_t i;
    int64_t o;

    if (s->allow_loss) {
        return;
    }
    if (l != NULL && l->alive) {
        assert_true(l->leo >= s->committed_len);
        for (o = l->start; o < s->committed_len; o++) {
            assert_int_equal(l->log[o].value, s->committed[o].value);
        }
    }
    for (i = 0; i < s->n_nodes; i++) {
        const struct sim_node *n = &s->nodes[i];

        if (!n->alive) {
            continue;
        }
        assert_true(n->hw <= n->leo);
        assert_true(n->start <= n->leo);
        for (o = n->start; o < n->hw && o < s->committed_len; o++) {
            assert_int_equal(n->log[o].value, s->committed[o].value);
        }
    }
}

/* KIP-101 scenario 1: a follower that truncated to its (lagging) HW on
 * restart and was then elected lost a record the old leader had already
 * acknowledged. */
static void test_kip101_hw_truncation_then_election(void **state)
{
    struct sim s;
    int64_t m1;

    (void)state;
    sim_init(&s, 2, 1); /* A = 1, B = 2 */
    sim_elect(&s);      /* A leads epoch 1 */
    assert_int_equal(s.leader, 1);

    /* A writes m0, m1; B replicates them one fetch at a time */
    sim_produce(&s, 2);
    sim_flush(&s, 1);
    assert_int_equal(sim_fetch(&s, 2, 1, true), REPL_FETCH_SERVE); /* m0 */
    sim_flush(&s, 2);
    assert_int_equal(sim_fetch(&s, 2, 1, true), REPL_FETCH_SERVE); /* m1 */
    assert_int_equal(sim_node(&s, 2)->hw, 1); /* m0 known committed */
    sim_checkpoint_hw(&s, 2);
    sim_flush(&s, 2);
    /* B's next fetch (at 2) tells A that B has m1 durably: A's HW goes to
     * 2 and m1 is acknowledged. B crashes before the answer (with HW 2)
     * reaches it: B's HW stays 1. */
    assert_int_equal(sim_fetch(&s, 2, 1, false), REPL_FETCH_SERVE);
    assert_int_equal(sim_node(&s, 1)->hw, 2);
    m1 = sim_node(&s, 1)->log[1].value;
    sim_crash(&s, 2, false, sim_node(&s, 2)->durable); /* quick restart */
    sim_restart(&s, 2);
    /* Restarted B: HW 1 but LEO 2. It does not cut its log to its HW. */
    assert_int_equal(sim_node(&s, 2)->hw, 1);
    assert_int_equal(sim_node(&s, 2)->leo, 2);

    /* A dies before B fetches again; B is elected (it is in the ISR) */
    sim_crash(&s, 1, true, sim_node(&s, 1)->durable);
    assert_int_equal(s.leader, 2);
    assert_int_equal(s.leader_epoch, 2);
    /* the acknowledged m1 is still there */
    assert_int_equal(sim_node(&s, 2)->log[1].value, m1);
    sim_check(&s);

    /* A comes back as a follower; its history agrees with B's */
    sim_restart(&s, 1);
    assert_int_equal(sim_fetch(&s, 1, 100, true), REPL_FETCH_SERVE);
    sim_produce(&s, 1);
    sim_flush(&s, 2);
    assert_int_equal(sim_fetch(&s, 1, 100, true), REPL_FETCH_SERVE);
    sim_flush(&s, 1);
    assert_int_equal(sim_fetch(&s, 1, 100, true), REPL_FETCH_SERVE);
    assert_int_equal(sim_node(&s, 2)->hw, 3);
    sim_expect_log(&s, 1, sim_node(&s, 2)->log, 3);
    sim_check(&s);
    sim_fini(&s);
}

/* KIP-101 scenario 2: after a power failure takes out both replicas, each
 * comes back with a different record at offset 1. A HW-based rule keeps
 * both (A's HW covers its m1) and the logs diverge for good; epochs find
 * the divergence and A converges on B. */
static void test_kip101_divergence_after_both_restart(void **state)
{
    struct sim s;
    struct sim_rec want[2];

    (void)state;
    sim_init(&s, 2, 1);
    sim_elect(&s);       /* A = 1 leads epoch 1 */
    s.allow_loss = true; /* B runs with flush=none: m1 dies in its cache */

    /* m0 replicated and committed everywhere */
    sim_produce(&s, 1);
    sim_flush(&s, 1);
    assert_int_equal(sim_fetch(&s, 2, 10, true), REPL_FETCH_SERVE);
    sim_flush(&s, 2);
    assert_int_equal(sim_fetch(&s, 2, 10, true), REPL_FETCH_SERVE);
    assert_int_equal(sim_node(&s, 2)->hw, 1);

    /* m1: on A's disk; B has it only in its page cache (flush=none reports
     * it durable at once) and acknowledges it with its next fetch */
    sim_produce(&s, 1);
    sim_flush(&s, 1);
    assert_int_equal(sim_fetch(&s, 2, 10, true), REPL_FETCH_SERVE);
    sim_flush(&s, 2);
    assert_int_equal(sim_fetch(&s, 2, 10, true), REPL_FETCH_SERVE);
    assert_int_equal(sim_node(&s, 1)->hw, 2);
    sim_checkpoint_hw(&s, 1); /* A's HW checkpoint: 2 */

    /* power failure: B loses m1, A keeps it; both fenced */
    sim_crash(&s, 2, false, 1);
    sim_crash(&s, 1, true, 2);
    assert_int_equal(s.leader, -1); /* B is down too: offline */

    /* B returns first and, in the ISR, is elected (epoch 2); it takes a
     * new record m2 at offset 1 */
    sim_restart(&s, 2);
    assert_int_equal(s.leader, 2);
    assert_int_equal(s.leader_epoch, 2);
    sim_produce(&s, 1);
    sim_flush(&s, 2);
    want[0] = sim_node(&s, 2)->log[0];
    want[1] = sim_node(&s, 2)->log[1];
    assert_int_equal(want[1].epoch, 2);

    /* A returns: log m0 m1 (epoch 1), HW 2. It would keep m1 by its HW. */
    sim_restart(&s, 1);
    assert_int_equal(sim_node(&s, 1)->hw, 2);
    assert_int_not_equal(sim_node(&s, 1)->log[1].value, want[1].value);
    /* fetch (2, last epoch 1): B's epoch 1 ends at 1 */
    assert_int_equal(sim_fetch(&s, 1, 10, true), REPL_FETCH_DIVERGING);
    assert_int_equal(sim_node(&s, 1)->leo, 1); /* m1 cut, below its HW */
    assert_int_equal(sim_fetch(&s, 1, 10, true), REPL_FETCH_SERVE);
    sim_flush(&s, 1);
    assert_int_equal(sim_fetch(&s, 1, 10, true), REPL_FETCH_SERVE);
    /* converged: same records, same epochs, m0 kept */
    sim_expect_log(&s, 1, want, 2);
    sim_expect_log(&s, 2, want, 2);
    assert_int_equal(sim_node(&s, 2)->hw, 2);
    assert_int_equal(sim_node(&s, 1)->hw, 2);
    sim_fini(&s);
}

/* Until nothing moves: every live node flushes and fetches, the leader
 * ticks and the controller answers. Returns the verdicts seen. */
struct sim_rounds {
    unsigned serve;
    unsigned diverging;
    unsigned error;
};

static struct sim_rounds sim_rounds(struct sim *s, int n)
{
    struct sim_rounds r = {0, 0, 0};
    int v;
    int i;
    uint32_t id;

    for (i = 0; i < n; i++) {
        s->now += 100;
        for (id = 1; id <= s->n_nodes; id++) {
            sim_flush(s, (int32_t)id);
            v = sim_fetch(s, (int32_t)id, SIM_MAX_LOG, true);
            r.serve += v == REPL_FETCH_SERVE;
            r.diverging += v == REPL_FETCH_DIVERGING;
            r.error += v == REPL_FETCH_ERROR;
        }
        sim_tick(s);
        sim_deliver(s, false);
    }
    return r;
}

/* Issue 12 item 9 in virtual time: leadership moves three times with no
 * write in between (a rolling restart of an idle partition), each leaving
 * an epoch without a record in its old leader's cache. Followers keep
 * fetching what their leader serves: no DIVERGING answer at all, the ISR
 * stays full, and the next writes commit everywhere. */
static void test_moves_without_writes_leave_no_wedge(void **state)
{
    struct sim s;
    struct sim_rounds r;
    uint32_t i;
    int move;

    (void)state;
    sim_init(&s, 3, 2);
    sim_elect(&s);
    sim_produce(&s, 200);
    r = sim_rounds(&s, 5);
    assert_int_equal(sim_leader(&s)->hw, 200);
    for (move = 0; move < 3; move++) {
        int32_t old = s.leader;

        sim_move(&s);
        assert_int_not_equal(s.leader, old);
        /* the old leader's empty epoch is gone from its cache */
        assert_int_equal(repl_epochs_latest_epoch(&sim_node(&s, old)->epochs),
                         1);
        r = sim_rounds(&s, 5);
        assert_int_equal(r.diverging, 0);
        assert_int_equal(r.error, 0);
        assert_true(r.serve >= 10);
        assert_int_equal(s.isr.n, 3);
        assert_true(repl_leader_hw_established(sim_leader(&s)->leader));
    }
    sim_produce(&s, 10);
    (void)sim_rounds(&s, 5);
    assert_int_equal(sim_leader(&s)->hw, 210);
    for (i = 1; i <= 3; i++) {
        sim_expect_same(&s, (int32_t)i, sim_leader(&s));
    }
    sim_check(&s);
    sim_fini(&s);
}

/* Issue 12 item 5: a follower down while the leader's retention passed its
 * log end restarts its log at the leader's start, catches up and rejoins
 * the ISR. */
static void test_follower_behind_leader_start_rejoins(void **state)
{
    struct sim s;
    struct sim_node *f;

    (void)state;
    sim_init(&s, 3, 2);
    sim_elect(&s);
    sim_produce(&s, 10);
    (void)sim_rounds(&s, 5);
    sim_crash(&s, 3, true, sim_node(&s, 3)->durable);
    assert_false(repl_ids_contains(&s.isr, 3));
    sim_produce(&s, 20);
    (void)sim_rounds(&s, 5);
    assert_int_equal(sim_node(&s, 1)->hw, 30);
    sim_node(&s, 1)->start = 25; /* retention, below the HW */
    sim_node(&s, 2)->start = 20;
    sim_restart(&s, 3);
    f = sim_node(&s, 3);
    assert_int_equal(f->leo, 10);
    /* the first fetch is below the leader's start: restart there */
    assert_int_equal(sim_fetch(&s, 3, SIM_MAX_LOG, true), REPL_FETCH_ERROR);
    assert_int_equal(f->start, 25);
    assert_int_equal(f->leo, 25);
    assert_int_equal(repl_epochs_count(&f->epochs), 0);
    assert_int_equal(f->hw, 25);
    (void)sim_rounds(&s, 5);
    assert_int_equal(f->leo, 30);
    assert_int_equal(repl_epochs_start_offset(&f->epochs, 1), 25);
    assert_true(repl_ids_contains(&s.isr, 3));
    sim_produce(&s, 5);
    (void)sim_rounds(&s, 5);
    assert_int_equal(f->hw, 35);
    sim_expect_same(&s, 3, sim_leader(&s));
    sim_check(&s);
    sim_fini(&s);
}

/* A small deterministic generator, so a failing seed replays exactly. */
static uint64_t sim_rand(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void sim_random_op(struct sim *s, uint64_t *rng)
{
    int32_t id = (int32_t)(sim_rand(rng) % s->n_nodes) + 1;
    uint64_t r = sim_rand(rng) % 100;

    s->now += sim_rand(rng) % 1500;
    if (r < 24) {
        sim_produce(s, (int)(sim_rand(rng) % 4) + 1);
    } else if (r < 52) {
        (void)sim_fetch(s, id, (int64_t)(sim_rand(rng) % 8) + 1,
                        sim_rand(rng) % 20 != 0);
    } else if (r < 68) {
        sim_flush(s, id);
    } else if (r < 75) {
        sim_tick(s);
    } else if (r < 82) {
        sim_deliver(s, sim_rand(rng) % 10 == 0);
    } else if (r < 86) {
        sim_checkpoint_hw(s, id);
    } else if (r < 88) {
        sim_move(s);
    } else if (r < 92) {
        sim_retain(s, id, sim_rand(rng));
    } else if (r < 96) {
        sim_crash(s, id, sim_rand(rng) % 3 != 0, sim_node(s, id)->durable);
        if (sim_rand(rng) % 3 == 0) {
            sim_lose_checkpoint(s, id);
        }
    } else {
        sim_restart(s, id);
    }
}

/* Faults stop: everyone back, then replicate until all agree. */
static void sim_heal(struct sim *s)
{
    int round;
    uint32_t i;
    bool same;

    for (i = 1; i <= s->n_nodes; i++) {
        sim_restart(s, (int32_t)i);
    }
    assert_true(s->leader > 0);
    for (round = 0; round < 200; round++) {
        s->now += 100;
        for (i = 1; i <= s->n_nodes; i++) {
            sim_flush(s, (int32_t)i);
            (void)sim_fetch(s, (int32_t)i, SIM_MAX_LOG, true);
        }
        sim_tick(s);
        sim_deliver(s, false);
        same =
            s->isr.n == s->n_nodes && sim_leader(s)->hw == sim_leader(s)->leo;
        for (i = 0; same && i < s->n_nodes; i++) {
            same = s->nodes[i].leo == sim_leader(s)->leo &&
                   s->nodes[i].hw == sim_leader(s)->leo;
        }
        if (same) {
            break;
        }
    }
    assert_true(round < 200);
    for (i = 1; i <= s->n_nodes; i++) {
        sim_expect_same(s, (int32_t)i, sim_leader(s));
    }
    sim_check(s);
}

static void test_random_faults_never_lose_committed_records(void **state)
{
    static struct sim s; /* large: keep it off the stack */
    unsigned committing = 0;
    uint64_t seed;
    uint64_t rng;
    int op;

    (void)state;
    for (seed = 1; seed <= 300; seed++) {
        /* a failing assertion names the line; this names the seed */
        (void)fprintf(stderr, "seed %" PRIu64 "\r", seed);
        rng = seed * 0x9E3779B97F4A7C15ULL;
        sim_init(&s, SIM_NODES, 2);
        sim_elect(&s);
        for (op = 0; op < 600; op++) {
            sim_random_op(&s, &rng);
            sim_check(&s);
        }
        sim_heal(&s);
        /* a schedule may keep the only ISR member down until it has lost
         * every record, so count the seeds that commit */
        committing += s.committed_len > 0;
        sim_stats.committed += (unsigned long)s.committed_len;
        sim_fini(&s);
    }
    (void)fprintf(stderr,
                  "\n%lu elections, %lu diverging answers, %lu truncations "
                  "(%lu keeping records a cut to HW would drop), %lu ISR "
                  "shrinks, %lu expands, %lu refusals, %lu records "
                  "committed, %lu leadership moves, %lu fetches below the "
                  "leader's start, %lu log restarts, %lu caches rebuilt\n",
                  sim_stats.elections, sim_stats.diverging,
                  sim_stats.truncations, sim_stats.below_hw, sim_stats.shrinks,
                  sim_stats.expands, sim_stats.rejected, sim_stats.committed,
                  sim_stats.moves, sim_stats.out_of_range, sim_stats.restarts,
                  sim_stats.rebuilt);
    assert_true(committing > 270);
    assert_true(sim_stats.elections > 300);
    assert_true(sim_stats.diverging > 50);
    assert_true(sim_stats.truncations > 50);
    assert_true(sim_stats.below_hw > 10);
    assert_true(sim_stats.shrinks > 50);
    assert_true(sim_stats.expands > 50);
    assert_true(sim_stats.rejected > 10);
    assert_true(sim_stats.moves > 100);
    assert_true(sim_stats.out_of_range > 5);
    assert_true(sim_stats.restarts > 5);
    assert_true(sim_stats.rebuilt > 50);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kip101_hw_truncation_then_election),
        cmocka_unit_test(test_kip101_divergence_after_both_restart),
        cmocka_unit_test(test_moves_without_writes_leave_no_wedge),
        cmocka_unit_test(test_follower_behind_leader_start_rejoins),
        cmocka_unit_test(test_random_faults_never_lose_committed_records),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
