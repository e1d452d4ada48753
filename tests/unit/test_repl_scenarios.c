/* SPDX-License-Identifier: Apache-2.0 */
/* Replicas end to end, in virtual time: each replica's log is modelled as
 * an array of (epoch, value) records, driven by the real repl_leader and
 * repl_follower cores and a tiny controller (compare-and-set ISR changes,
 * clean elections from the ISR, fencing of crashed brokers). Covers both
 * KIP-101 data-loss scenarios step by step, then seeded random schedules
 * of writes, fetches, flushes, crashes and restarts checking that nothing
 * below a published high watermark is ever lost or changed and that the
 * logs converge once faults stop. */
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
    struct sim_rec log[SIM_MAX_LOG];
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

    for (o = 0; o < hw; o++) {
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
        lc.high_watermark = n->hw;
        assert_int_equal(repl_leader_new(&lc, &n->epochs, s->now, &n->leader),
                         0);
    } else {
        memset(&fc, 0, sizeof(fc));
        fc.self_id = n->id;
        fc.leader_id = s->leader;
        fc.leader_epoch = s->leader_epoch;
        fc.log_end_offset = n->leo;
        fc.durable_offset = n->durable;
        fc.high_watermark = n->hw;
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

/* Restart: recover the log (already cut to what survived), the epoch
 * cache from its checkpoint cut to the log end, the HW from its
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
    (void)repl_epochs_truncate_from_end(&n->epochs, n->leo);
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
        for (o = 0; o < s->committed_len; o++) {
            assert_int_equal(l->log[o].value, s->committed[o].value);
        }
    }
    for (i = 0; i < s->n_nodes; i++) {
        const struct sim_node *n = &s->nodes[i];

        if (!n->alive) {
            continue;
        }
        assert_true(n->hw <= n->leo);
        for (o = 0; o < n->hw && o < s->committed_len; o++) {
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
    if (r < 25) {
        sim_produce(s, (int)(sim_rand(rng) % 4) + 1);
    } else if (r < 55) {
        (void)sim_fetch(s, id, (int64_t)(sim_rand(rng) % 8) + 1,
                        sim_rand(rng) % 20 != 0);
    } else if (r < 72) {
        sim_flush(s, id);
    } else if (r < 80) {
        sim_tick(s);
    } else if (r < 87) {
        sim_deliver(s, sim_rand(rng) % 10 == 0);
    } else if (r < 91) {
        sim_checkpoint_hw(s, id);
    } else if (r < 95) {
        sim_crash(s, id, sim_rand(rng) % 3 != 0, sim_node(s, id)->durable);
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
        sim_expect_log(s, (int32_t)i, sim_leader(s)->log, sim_leader(s)->leo);
    }
    sim_check(s);
}

static void test_random_faults_never_lose_committed_records(void **state)
{
    static struct sim s; /* large: keep it off the stack */
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
        assert_true(s.committed_len > 0);
        sim_stats.committed += (unsigned long)s.committed_len;
        sim_fini(&s);
    }
    (void)fprintf(stderr,
                  "\n%lu elections, %lu diverging answers, %lu truncations "
                  "(%lu keeping records a cut to HW would drop), %lu ISR "
                  "shrinks, %lu expands, %lu refusals, %lu records "
                  "committed\n",
                  sim_stats.elections, sim_stats.diverging,
                  sim_stats.truncations, sim_stats.below_hw, sim_stats.shrinks,
                  sim_stats.expands, sim_stats.rejected, sim_stats.committed);
    assert_true(sim_stats.elections > 300);
    assert_true(sim_stats.diverging > 50);
    assert_true(sim_stats.truncations > 50);
    assert_true(sim_stats.below_hw > 10);
    assert_true(sim_stats.shrinks > 50);
    assert_true(sim_stats.expands > 50);
    assert_true(sim_stats.rejected > 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kip101_hw_truncation_then_election),
        cmocka_unit_test(test_kip101_divergence_after_both_restart),
        cmocka_unit_test(test_random_faults_never_lose_committed_records),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
