/* SPDX-License-Identifier: Apache-2.0 */
/* Leader-side replication state machine, in virtual time: ISR shrink and
 * expand by lag time, the high watermark rules (min durable over the ISR,
 * frozen below min ISR, monotonic, re-established by a new leader),
 * KIP-320 fetch validation, fencing, and compare-and-set proposals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "broker/replica/repl_leader.h"
#include "common/mem.h"

#define LAG_MS     30000
#define BACKOFF_MS 500
#define EPOCH      5
#define PEPOCH     10

struct fixture {
    struct repl_epochs epochs;
    struct repl_leader_config cfg;
    struct repl_leader *l;
    struct repl_leader_actions out;
    unsigned n_proposals;                   /* made by any step so far */
    unsigned n_checked;                     /* of those, seen by a test */
    struct repl_isr_proposal last_proposal; /* the latest one made */
};

static struct repl_ids ids3(int32_t a, int32_t b, int32_t c)
{
    struct repl_ids s = {0, {0}};

    (void)repl_ids_add(&s, a);
    if (b >= 0) {
        (void)repl_ids_add(&s, b);
    }
    if (c >= 0) {
        (void)repl_ids_add(&s, c);
    }
    return s;
}

/* leader 1 of {1,2,3}, all in sync, min ISR 2, empty log, time 0 */
static void fixture_defaults(struct repl_leader_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->self_id = 1;
    cfg->leader_epoch = EPOCH;
    cfg->partition_epoch = PEPOCH;
    cfg->replicas = ids3(1, 2, 3);
    cfg->isr = ids3(1, 2, 3);
    cfg->min_insync_replicas = 2;
    cfg->replica_lag_time_max_ms = LAG_MS;
    cfg->isr_retry_backoff_ms = BACKOFF_MS;
}

static void fixture_start(struct fixture *f, uint64_t now)
{
    repl_leader_free(f->l);
    f->l = NULL;
    assert_int_equal(repl_leader_new(&f->cfg, &f->epochs, now, &f->l), 0);
    assert_int_equal(repl_leader_check_invariants(f->l), 0);
}

static int setup(void **state)
{
    struct fixture *f = test_calloc(1, sizeof(*f));

    repl_epochs_init(&f->epochs);
    fixture_defaults(&f->cfg);
    fixture_start(f, 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    repl_leader_free(f->l);
    repl_epochs_fini(&f->epochs);
    test_free(f);
    return 0;
}

static int step(struct fixture *f, const struct repl_leader_event *ev)
{
    int rv = repl_leader_step(f->l, ev, &f->out);

    if (f->out.propose) {
        f->n_proposals++;
        f->last_proposal = f->out.proposal;
    }
    assert_int_equal(repl_leader_check_invariants(f->l), 0);
    /* the HW never moves backwards, whatever the event */
    assert_true(f->out.high_watermark >= 0);
    return rv;
}

static void tick(struct fixture *f, uint64_t now)
{
    struct repl_leader_event ev = {.type = REPL_LEADER_EV_TICK, .now_ms = now};

    assert_int_equal(step(f, &ev), 0);
}

/* Local append, made durable at once (flush=ack after the fsync). */
static void append(struct fixture *f, int64_t leo, uint64_t now)
{
    struct repl_leader_event ev = {.type = REPL_LEADER_EV_APPEND,
                                   .now_ms = now};

    ev.u.append.log_end_offset = leo;
    assert_int_equal(step(f, &ev), 0);
    ev.type = REPL_LEADER_EV_DURABLE;
    ev.u.durable.durable_offset = leo;
    assert_int_equal(step(f, &ev), 0);
}

static void fetch_full(struct fixture *f,
                       int32_t replica,
                       int64_t offset,
                       int32_t last_epoch,
                       int32_t view,
                       uint64_t now)
{
    struct repl_leader_event ev = {.type = REPL_LEADER_EV_FOLLOWER_FETCH,
                                   .now_ms = now};

    ev.u.fetch.replica = replica;
    ev.u.fetch.fetch_offset = offset;
    ev.u.fetch.last_fetched_epoch = last_epoch;
    ev.u.fetch.current_leader_epoch = view;
    assert_int_equal(step(f, &ev), 0);
    assert_true(f->out.has_fetch_answer);
    assert_int_equal(f->out.fetch.high_watermark,
                     repl_leader_high_watermark(f->l));
}

/* A consistent fetch: the follower's log is a prefix of ours, all in our
 * epoch (or empty). */
static void
fetch(struct fixture *f, int32_t replica, int64_t offset, uint64_t now)
{
    fetch_full(f, replica, offset, offset > 0 ? EPOCH : REPL_EPOCH_NONE, EPOCH,
               now);
    assert_int_equal(f->out.fetch.verdict, REPL_FETCH_SERVE);
    assert_int_equal(f->out.fetch.fetch_offset, offset);
}

static void isr_result(struct fixture *f,
                       bool accepted,
                       int32_t le,
                       int32_t pe,
                       int32_t new_pe,
                       struct repl_ids isr,
                       uint64_t now)
{
    struct repl_leader_event ev = {.type = REPL_LEADER_EV_ISR_RESULT,
                                   .now_ms = now};

    ev.u.isr_result.accepted = accepted;
    ev.u.isr_result.leader_epoch = le;
    ev.u.isr_result.partition_epoch = pe;
    ev.u.isr_result.new_partition_epoch = new_pe;
    ev.u.isr_result.isr = isr;
    assert_int_equal(step(f, &ev), 0);
}

/* The controller accepts the latest proposal, as proposed. */
static void accept_proposal(struct fixture *f, uint64_t now)
{
    struct repl_isr_proposal p = f->last_proposal;

    assert_true(repl_leader_proposal_in_flight(f->l));
    isr_result(f, true, p.leader_epoch, p.partition_epoch,
               p.partition_epoch + 1, p.isr, now);
    assert_true(f->out.isr_changed);
    assert_true(repl_ids_same_members(repl_leader_isr(f->l), &p.isr));
}

/* Exactly one proposal was made since the last check, with this ISR and
 * the leader's current epochs (for the controller's compare-and-set). */
static void expect_proposal(struct fixture *f, struct repl_ids isr)
{
    assert_int_equal(f->n_proposals, f->n_checked + 1);
    f->n_checked = f->n_proposals;
    assert_int_equal(f->last_proposal.leader_epoch, EPOCH);
    assert_int_equal(f->last_proposal.partition_epoch,
                     repl_leader_partition_epoch(f->l));
    assert_true(repl_ids_same_members(&f->last_proposal.isr, &isr));
    assert_true(repl_leader_proposal_in_flight(f->l));
}

static void expect_no_proposal(const struct fixture *f)
{
    assert_int_equal(f->n_proposals, f->n_checked);
}

/* Promote again with f->cfg over an empty epoch cache. */
static void fixture_restart(struct fixture *f, uint64_t now)
{
    repl_epochs_clear(&f->epochs);
    fixture_start(f, now);
}

static void test_silent_follower_leaves_isr(void **state)
{
    struct fixture *f = *state;

    append(f, 100, 0);
    fetch(f, 2, 100, 20000); /* replica 2 caught up; 3 silent since 0 */
    assert_int_equal(f->out.next_tick_ms, LAG_MS + 1);
    tick(f, LAG_MS);
    expect_no_proposal(f);
    tick(f, LAG_MS + 1);
    expect_proposal(f, ids3(1, 2, -1));
    /* removal needs the controller's agreement */
    assert_true(repl_leader_is_in_sync(f->l, 3));
    accept_proposal(f, LAG_MS + 2);
    assert_false(repl_leader_is_in_sync(f->l, 3));
    assert_int_equal(repl_leader_partition_epoch(f->l), PEPOCH + 1);
}

static void test_follower_falling_behind_leaves_after_lag(void **state)
{
    struct fixture *f = *state;
    uint64_t t;
    int64_t leo = 0;

    /* replica 3 fetches every second but never reaches what the leader
     * had at its previous fetch: it never catches up */
    for (t = 1000; t <= 40000; t += 1000) {
        leo += 100;
        append(f, leo, t);
        fetch(f, 2, leo, t);
        fetch(f, 3, leo / 3, t);
        if (repl_leader_proposal_in_flight(f->l)) {
            break;
        }
    }
    /* caught up last at promotion (time 0), out once LAG_MS has passed */
    assert_int_equal(t, LAG_MS + 1000);
    expect_proposal(f, ids3(1, 2, -1));
}

static void test_follower_keeping_pace_stays_in_isr(void **state)
{
    struct fixture *f = *state;
    uint64_t t;
    int64_t leo = 0;

    /* under steady writes the follower never equals the moving LEO, but
     * each fetch reaches what the leader had at the previous one */
    for (t = 1000; t <= 10 * LAG_MS; t += 1000) {
        int64_t had = leo;

        leo += 100;
        append(f, leo, t);
        fetch(f, 2, had, t);
        fetch(f, 3, had, t);
        expect_no_proposal(f);
        assert_true(repl_leader_is_in_sync(f->l, 3));
    }
}

static void test_idle_caught_up_follower_stays_in_isr(void **state)
{
    struct fixture *f = *state;

    append(f, 100, 0);
    fetch(f, 2, 100, 1000);
    fetch(f, 3, 100, 1000);
    assert_int_equal(repl_leader_high_watermark(f->l), 100);
    /* nothing written since: a silent follower holding all we have delays
     * nothing and stays in the ISR (Kafka's isCaughtUp) */
    assert_int_equal(f->out.next_tick_ms, REPL_TICK_NEVER);
    tick(f, 10 * LAG_MS);
    expect_no_proposal(f);
    assert_true(repl_leader_is_in_sync(f->l, 3));
    /* replica 2 keeps fetching at the LEO; 3 has stopped */
    fetch(f, 2, 100, 10 * LAG_MS);
    /* the first write exposes 3: its last catch-up was long ago */
    append(f, 101, 10 * LAG_MS + 1);
    expect_proposal(f, ids3(1, 2, -1));
}

static void test_fetching_at_leo_refreshes_caught_up_time(void **state)
{
    struct fixture *f = *state;
    uint64_t t;

    append(f, 100, 0);
    /* both keep long-polling at the LEO of an idle partition */
    for (t = 10000; t <= 5 * LAG_MS; t += 10000) {
        fetch(f, 2, 100, t);
        fetch(f, 3, 100, t);
    }
    t -= 10000;
    append(f, 150, t + 1);
    expect_no_proposal(f);
    assert_int_equal(f->out.next_tick_ms, t + LAG_MS + 1);
    /* 2 fetches the new records; 3 goes silent from here */
    fetch(f, 2, 150, t + 100);
    tick(f, t + LAG_MS);
    expect_no_proposal(f);
    tick(f, t + LAG_MS + 1);
    expect_proposal(f, ids3(1, 2, -1));
}

static void test_out_of_sync_follower_rejoins_at_hw(void **state)
{
    struct fixture *f = *state;

    append(f, 100, 0);
    fetch(f, 2, 100, 1000);
    tick(f, LAG_MS + 1);
    expect_proposal(f, ids3(1, 2, -1));
    accept_proposal(f, LAG_MS + 1); /* 3 is out */
    fetch(f, 2, 100, LAG_MS + 2);
    assert_int_equal(repl_leader_high_watermark(f->l), 100);
    append(f, 120, LAG_MS + 3);
    fetch(f, 2, 120, LAG_MS + 4);
    assert_int_equal(repl_leader_high_watermark(f->l), 120);

    /* 3 comes back, below the HW: not yet */
    fetch(f, 3, 50, LAG_MS + 10);
    expect_no_proposal(f);
    fetch(f, 3, 119, LAG_MS + 20);
    expect_no_proposal(f);
    /* at the HW (= LEO here): rejoin proposed */
    fetch(f, 3, 120, LAG_MS + 30);
    expect_proposal(f, ids3(1, 2, 3));
    assert_false(repl_leader_is_in_sync(f->l, 3));
    /* while proposed it already counts for the HW (maximal ISR) */
    append(f, 130, LAG_MS + 31);
    fetch(f, 2, 130, LAG_MS + 32);
    assert_int_equal(repl_leader_high_watermark(f->l), 120);
    accept_proposal(f, LAG_MS + 33);
    assert_true(repl_leader_is_in_sync(f->l, 3));
    assert_int_equal(repl_leader_partition_epoch(f->l), PEPOCH + 2);
}

static void test_rejoin_needs_a_fetch_in_the_current_epoch(void **state)
{
    struct fixture *f = *state;

    /* new leader at LEO 50 (its epoch starts there), HW inherited 40,
     * replica 3 outside the ISR */
    f->cfg.isr = ids3(1, 2, -1);
    f->cfg.log_end_offset = 50;
    f->cfg.durable_offset = 50;
    f->cfg.high_watermark = 40;
    repl_epochs_clear(&f->epochs);
    assert_int_equal(repl_epochs_assign(&f->epochs, 2, 0), 0);
    fixture_start(f, 0);
    assert_int_equal(repl_leader_epoch_start_offset(f->l), 50);
    /* 3's log ends in epoch 2 at 45: at or past the HW, but it lacks the
     * start of this epoch, so it may still miss records an earlier leader
     * acknowledged */
    fetch_full(f, 3, 45, 2, EPOCH, 10);
    assert_int_equal(f->out.fetch.verdict, REPL_FETCH_SERVE);
    expect_no_proposal(f);
    fetch_full(f, 3, 50, 2, EPOCH, 20);
    assert_int_equal(f->out.fetch.verdict, REPL_FETCH_SERVE);
    expect_proposal(f, ids3(1, 2, 3));
}

static void test_rejoin_waits_until_follower_is_caught_up(void **state)
{
    struct fixture *f = *state;

    /* ISR down to the leader: HW frozen at 0 while the LEO runs on */
    f->cfg.isr = ids3(1, -1, -1);
    fixture_restart(f, 0);
    append(f, 1000, LAG_MS * 2);
    assert_int_equal(repl_leader_high_watermark(f->l), 0);
    /* 2 is at the HW but far behind the LEO and has never caught up:
     * admitting it would only evict it again on the next tick */
    fetch(f, 2, 10, LAG_MS * 2 + 1);
    expect_no_proposal(f);
    fetch(f, 2, 1000, LAG_MS * 2 + 2);
    expect_proposal(f, ids3(1, 2, -1));
}

static void test_hw_is_min_durable_offset_over_isr(void **state)
{
    struct fixture *f = *state;
    struct repl_leader_event ev = {.type = REPL_LEADER_EV_APPEND};

    append(f, 100, 1);
    fetch(f, 2, 80, 2);
    assert_int_equal(repl_leader_high_watermark(f->l), 0); /* 3 unknown */
    fetch(f, 3, 60, 3);
    assert_true(f->out.hw_advanced);
    assert_int_equal(f->out.high_watermark, 60);
    fetch(f, 3, 100, 4);
    assert_int_equal(repl_leader_high_watermark(f->l), 80);
    fetch(f, 2, 100, 5);
    assert_int_equal(repl_leader_high_watermark(f->l), 100);

    /* appended but not yet fsynced here: followers are ahead of our
     * durable end, which now bounds the HW */
    ev.now_ms = 6;
    ev.u.append.log_end_offset = 150;
    assert_int_equal(step(f, &ev), 0);
    fetch(f, 2, 150, 7);
    fetch(f, 3, 150, 7);
    assert_false(f->out.hw_advanced);
    assert_int_equal(repl_leader_high_watermark(f->l), 100);
    ev.type = REPL_LEADER_EV_DURABLE;
    ev.now_ms = 8;
    ev.u.durable.durable_offset = 140;
    assert_int_equal(step(f, &ev), 0);
    assert_true(f->out.hw_advanced);
    assert_int_equal(f->out.high_watermark, 140);
}

static void test_hw_never_moves_backwards(void **state)
{
    struct fixture *f = *state;

    append(f, 100, 1);
    fetch(f, 2, 100, 2);
    fetch(f, 3, 100, 3);
    assert_int_equal(repl_leader_high_watermark(f->l), 100);
    /* a follower coming back shorter (flush=none crash, or truncation) */
    fetch(f, 3, 40, 4);
    assert_false(f->out.hw_advanced);
    assert_int_equal(repl_leader_high_watermark(f->l), 100);
    assert_int_equal(f->out.fetch.high_watermark, 100);
    append(f, 110, 5);
    fetch(f, 2, 110, 6);
    assert_int_equal(repl_leader_high_watermark(f->l), 100);
    fetch(f, 3, 105, 7);
    assert_int_equal(repl_leader_high_watermark(f->l), 105);
}

static void test_hw_frozen_while_isr_below_min(void **state)
{
    struct fixture *f = *state;

    append(f, 100, 0);
    tick(f, LAG_MS + 1); /* neither follower ever fetched */
    expect_proposal(f, ids3(1, -1, -1));
    accept_proposal(f, LAG_MS + 2);
    assert_false(repl_leader_can_accept_acks_all(f->l));
    /* everything in the (one-member) ISR is durable, yet no HW: a record
     * below it would live on fewer than min.insync.replicas brokers */
    append(f, 200, LAG_MS + 3);
    assert_false(f->out.hw_advanced);
    assert_int_equal(repl_leader_high_watermark(f->l), 0);
    /* 2 comes back and catches up: proposed, but the committed ISR is
     * still below the minimum until the controller agrees */
    fetch(f, 2, 200, LAG_MS + 4);
    expect_proposal(f, ids3(1, 2, -1));
    assert_int_equal(repl_leader_high_watermark(f->l), 0);
    assert_false(repl_leader_can_accept_acks_all(f->l));
    accept_proposal(f, LAG_MS + 5);
    assert_true(repl_leader_can_accept_acks_all(f->l));
    assert_true(f->out.hw_advanced);
    assert_int_equal(f->out.high_watermark, 200);
}

static void test_acks_all_refused_below_min_isr(void **state)
{
    struct fixture *f = *state;

    assert_true(repl_leader_can_accept_acks_all(f->l)); /* 3 >= 2 */
    f->cfg.isr = ids3(1, 3, -1);
    fixture_restart(f, 0);
    assert_true(repl_leader_can_accept_acks_all(f->l)); /* 2 >= 2 */
    f->cfg.isr = ids3(1, -1, -1);
    fixture_restart(f, 0);
    assert_false(repl_leader_can_accept_acks_all(f->l)); /* 1 < 2 */
    f->cfg.min_insync_replicas = 1;
    fixture_restart(f, 0);
    assert_true(repl_leader_can_accept_acks_all(f->l));
}

static void test_pending_shrink_still_holds_hw(void **state)
{
    struct fixture *f = *state;

    append(f, 100, 0);
    fetch(f, 2, 100, 1);
    fetch(f, 3, 50, 1);
    assert_int_equal(repl_leader_high_watermark(f->l), 50);
    fetch(f, 2, 100, LAG_MS + 1);
    expect_proposal(f, ids3(1, 2, -1)); /* 3 is stuck at 50 */
    tick(f, LAG_MS + 2);
    assert_int_equal(repl_leader_high_watermark(f->l), 50);
    accept_proposal(f, LAG_MS + 3);
    assert_true(f->out.hw_advanced);
    assert_int_equal(f->out.high_watermark, 100);
}

static void test_fetch_validation_reports_divergence(void **state)
{
    struct fixture *f = *state;

    /* our history: epoch 1 from 0, 3 from 10, and ours (5) from 20 */
    repl_epochs_clear(&f->epochs);
    assert_int_equal(repl_epochs_assign(&f->epochs, 1, 0), 0);
    assert_int_equal(repl_epochs_assign(&f->epochs, 3, 10), 0);
    f->cfg.log_end_offset = 20;
    f->cfg.durable_offset = 20;
    fixture_start(f, 0);
    append(f, 30, 1);

    /* consistent: epoch 3 runs to 20 here */
    fetch_full(f, 2, 10, 3, EPOCH, 2);
    assert_int_equal(f->out.fetch.verdict, REPL_FETCH_SERVE);
    fetch_full(f, 2, 20, 3, EPOCH, 2);
    assert_int_equal(f->out.fetch.verdict, REPL_FETCH_SERVE);
    fetch_full(f, 2, 30, EPOCH, EPOCH, 2);
    assert_int_equal(f->out.fetch.verdict, REPL_FETCH_SERVE);

    /* follower has more of epoch 3 than we do */
    fetch_full(f, 3, 25, 3, EPOCH, 3);
    assert_int_equal(f->out.fetch.verdict, REPL_FETCH_DIVERGING);
    assert_int_equal(f->out.fetch.diverging_epoch, 3);
    assert_int_equal(f->out.fetch.diverging_end_offset, 20);
    /* follower's last epoch 2 is unknown here: our largest below is 1 */
    fetch_full(f, 3, 8, 2, EPOCH, 3);
    assert_int_equal(f->out.fetch.verdict, REPL_FETCH_DIVERGING);
    assert_int_equal(f->out.fetch.diverging_epoch, 1);
    assert_int_equal(f->out.fetch.diverging_end_offset, 10);
    fetch_full(f, 3, 15, 4, EPOCH, 3);
    assert_int_equal(f->out.fetch.diverging_epoch, 3);
    assert_int_equal(f->out.fetch.diverging_end_offset, 20);
    /* past our end in our own epoch */
    fetch_full(f, 3, 31, EPOCH, EPOCH, 3);
    assert_int_equal(f->out.fetch.verdict, REPL_FETCH_DIVERGING);
    assert_int_equal(f->out.fetch.diverging_epoch, EPOCH);
    assert_int_equal(f->out.fetch.diverging_end_offset, 30);
    /* an epoch newer than ours (impossible for an honest follower) */
    fetch_full(f, 3, 30, EPOCH + 2, EPOCH, 3);
    assert_int_equal(f->out.fetch.verdict, REPL_FETCH_DIVERGING);
    assert_int_equal(f->out.fetch.diverging_epoch, EPOCH);
    assert_int_equal(f->out.fetch.diverging_end_offset, 30);
    /* none of these counted as a position */
    assert_int_equal(repl_leader_follower_offset(f->l, 3), REPL_OFFSET_NONE);

    /* an empty follower log: no epoch to check */
    fetch_full(f, 3, 0, REPL_EPOCH_NONE, EPOCH, 4);
    assert_int_equal(f->out.fetch.verdict, REPL_FETCH_SERVE);
    assert_int_equal(repl_leader_follower_offset(f->l, 3), 0);
    /* a follower without epochs holding more than we do: cut to our end
     * (refusing the offset left it retrying the same fetch for ever) */
    fetch_full(f, 3, 31, REPL_EPOCH_NONE, EPOCH, 4);
    assert_int_equal(f->out.fetch.verdict, REPL_FETCH_DIVERGING);
    assert_int_equal(f->out.fetch.diverging_epoch, EPOCH);
    assert_int_equal(f->out.fetch.diverging_end_offset, 30);
    assert_int_equal(repl_leader_follower_offset(f->l, 3), 0);
}

static void expect_fetch_error(struct fixture *f,
                               int32_t replica,
                               int64_t offset,
                               int32_t last_epoch,
                               int32_t view,
                               int err)
{
    int64_t hw = repl_leader_high_watermark(f->l);

    fetch_full(f, replica, offset, last_epoch, view, 50);
    assert_int_equal(f->out.fetch.verdict, REPL_FETCH_ERROR);
    assert_int_equal(f->out.fetch.err, err);
    assert_false(f->out.hw_advanced);
    assert_int_equal(repl_leader_high_watermark(f->l), hw);
}

static void test_fetch_fencing_by_leader_epoch(void **state)
{
    struct fixture *f = *state;

    append(f, 100, 1);
    fetch(f, 2, 100, 2);
    /* 3 still thinks an older leader leads: fenced, position ignored */
    expect_fetch_error(f, 3, 100, EPOCH, EPOCH - 1, WEIR_EFENCED_LEADER_EPOCH);
    expect_fetch_error(f, 3, 100, EPOCH, REPL_EPOCH_NONE,
                       WEIR_EFENCED_LEADER_EPOCH);
    /* 3 knows a newer epoch: we are the ones behind (a deposed leader) and
     * must not count its fetch towards our HW */
    expect_fetch_error(f, 3, 100, EPOCH, EPOCH + 1, WEIR_EUNKNOWN_LEADER_EPOCH);
    assert_int_equal(repl_leader_follower_offset(f->l, 3), REPL_OFFSET_NONE);
    assert_int_equal(repl_leader_high_watermark(f->l), 0);
    /* not a replica, or ourselves */
    expect_fetch_error(f, 9, 100, EPOCH, EPOCH, WEIR_ENOT_LEADER);
    expect_fetch_error(f, 1, 100, EPOCH, EPOCH, WEIR_ENOT_LEADER);
    /* nonsense */
    expect_fetch_error(f, 3, -1, EPOCH, EPOCH, WEIR_EINVALID_REQUEST);
    expect_fetch_error(f, 3, 10, -7, EPOCH, WEIR_EINVALID_REQUEST);
    fetch(f, 3, 100, 60);
    assert_int_equal(repl_leader_high_watermark(f->l), 100);
}

static void test_deposed_leader_acknowledges_nothing(void **state)
{
    struct fixture *f = *state;

    append(f, 100, 1);
    fetch(f, 2, 100, 2);
    fetch(f, 3, 100, 2);
    assert_int_equal(repl_leader_high_watermark(f->l), 100);
    /* the controller moved leadership to 2 at EPOCH + 1; we have not heard.
     * Writes keep arriving here, followers fetch from 2 with the new epoch
     * and any fetch that reaches us is refused: the HW stays put. */
    append(f, 150, 3);
    expect_fetch_error(f, 3, 150, EPOCH, EPOCH + 1, WEIR_EUNKNOWN_LEADER_EPOCH);
    tick(f, LAG_MS + 10);
    expect_proposal(f, ids3(1, -1, -1));
    /* the controller refuses: leader epoch changed */
    isr_result(f, false, EPOCH, PEPOCH, 0, ids3(1, -1, -1), LAG_MS + 11);
    assert_false(repl_leader_proposal_in_flight(f->l));
    assert_true(repl_leader_is_in_sync(f->l, 2));
    assert_int_equal(repl_leader_high_watermark(f->l), 100);
}

static void test_new_leader_reestablishes_hw_in_its_epoch(void **state)
{
    struct fixture *f = *state;

    /* promoted at LEO 50 (epoch 3 before), HW 40 inherited as follower */
    repl_epochs_clear(&f->epochs);
    assert_int_equal(repl_epochs_assign(&f->epochs, 3, 0), 0);
    f->cfg.log_end_offset = 50;
    f->cfg.durable_offset = 50;
    f->cfg.high_watermark = 40;
    fixture_start(f, 1000);
    assert_int_equal(repl_leader_high_watermark(f->l), 40);
    assert_false(repl_leader_hw_established(f->l));
    /* every ISR member must fetch in this epoch first */
    tick(f, 1001);
    assert_int_equal(repl_leader_high_watermark(f->l), 40);
    fetch_full(f, 2, 50, 3, EPOCH, 1002);
    assert_int_equal(f->out.fetch.verdict, REPL_FETCH_SERVE);
    assert_false(f->out.hw_advanced);
    assert_int_equal(f->out.fetch.high_watermark, 40);
    fetch_full(f, 3, 45, 3, EPOCH, 1003);
    assert_int_equal(f->out.fetch.verdict, REPL_FETCH_SERVE);
    assert_int_equal(repl_leader_high_watermark(f->l), 45);
    assert_false(repl_leader_hw_established(f->l));
    fetch_full(f, 3, 50, 3, EPOCH, 1004);
    assert_int_equal(repl_leader_high_watermark(f->l), 50);
    assert_true(repl_leader_hw_established(f->l));
}

static void test_new_leader_drops_isr_member_that_never_fetches(void **state)
{
    struct fixture *f = *state;

    f->cfg.log_end_offset = 50;
    f->cfg.durable_offset = 50;
    f->cfg.high_watermark = 40;
    fixture_restart(f, 1000);
    fetch(f, 2, 50, 1100);
    assert_int_equal(repl_leader_high_watermark(f->l), 40);
    /* 3 died with the old leader: a full lag period from promotion */
    assert_int_equal(f->out.next_tick_ms, 1000 + LAG_MS + 1);
    tick(f, 1000 + LAG_MS + 1);
    expect_proposal(f, ids3(1, 2, -1));
    accept_proposal(f, 1000 + LAG_MS + 2);
    assert_int_equal(repl_leader_high_watermark(f->l), 50);
    assert_true(repl_leader_hw_established(f->l));
}

static void test_one_proposal_in_flight_at_a_time(void **state)
{
    struct fixture *f = *state;

    append(f, 100, 0);
    fetch(f, 2, 100, 10000);
    fetch(f, 3, 100, 20000);
    append(f, 110, 20001);
    tick(f, 10000 + LAG_MS + 1);
    expect_proposal(f, ids3(1, 3, -1));
    assert_int_equal(f->out.next_tick_ms, REPL_TICK_NEVER);
    /* 3 falls out too while the first proposal is pending */
    tick(f, 20000 + LAG_MS + 1);
    expect_no_proposal(f);
    accept_proposal(f, 20000 + LAG_MS + 2);
    /* the answer frees the slot: the next change goes out at once */
    expect_proposal(f, ids3(1, -1, -1));
    assert_int_equal(f->out.proposal.partition_epoch, PEPOCH + 1);
}

static void test_rejected_proposal_dropped_and_retried(void **state)
{
    struct fixture *f = *state;
    uint64_t t = LAG_MS + 1;

    append(f, 100, 0);
    fetch(f, 2, 100, 1);
    tick(f, t);
    expect_proposal(f, ids3(1, 2, -1));
    isr_result(f, false, EPOCH, PEPOCH, 0, ids3(1, 2, -1), t + 1);
    assert_false(repl_leader_proposal_in_flight(f->l));
    expect_no_proposal(f);
    assert_false(f->out.isr_changed);
    assert_true(repl_leader_is_in_sync(f->l, 3));
    assert_int_equal(f->out.next_tick_ms, t + 1 + BACKOFF_MS);
    tick(f, t + BACKOFF_MS);
    expect_no_proposal(f);
    tick(f, t + 1 + BACKOFF_MS);
    expect_proposal(f, ids3(1, 2, -1));
}

static void test_stale_proposal_answers_ignored(void **state)
{
    struct fixture *f = *state;
    uint64_t t = LAG_MS + 1;

    /* nothing in flight: any answer is stale */
    isr_result(f, true, EPOCH, PEPOCH, PEPOCH + 1, ids3(1, -1, -1), 1);
    assert_false(f->out.isr_changed);
    assert_int_equal(repl_leader_isr(f->l)->n, 3);

    append(f, 100, 0);
    fetch(f, 2, 100, 1);
    tick(f, t);
    expect_proposal(f, ids3(1, 2, -1));
    /* answers to other proposals (older partition epoch, other leader
     * epoch) change nothing and keep ours in flight */
    isr_result(f, true, EPOCH, PEPOCH - 1, PEPOCH + 1, ids3(1, -1, -1), t);
    assert_false(f->out.isr_changed);
    isr_result(f, true, EPOCH - 1, PEPOCH, PEPOCH + 1, ids3(1, -1, -1), t);
    assert_false(f->out.isr_changed);
    isr_result(f, false, EPOCH, PEPOCH + 3, 0, ids3(1, -1, -1), t);
    assert_true(repl_leader_proposal_in_flight(f->l));
    assert_int_equal(repl_leader_isr(f->l)->n, 3);
    accept_proposal(f, t + 1);
    /* a duplicate of the accepted answer is stale now */
    isr_result(f, true, EPOCH, PEPOCH, PEPOCH + 1, ids3(1, -1, -1), t + 2);
    assert_false(f->out.isr_changed);
    assert_true(repl_leader_is_in_sync(f->l, 2));
}

static void test_partition_update_supersedes_proposal(void **state)
{
    struct fixture *f = *state;
    struct repl_leader_event ev = {.type = REPL_LEADER_EV_PARTITION_UPDATE};
    uint64_t t = LAG_MS + 1;

    append(f, 100, 0);
    fetch(f, 3, 100, 1);
    tick(f, t);
    expect_proposal(f, ids3(1, 3, -1));
    /* meanwhile the controller fenced broker 3 and bumped the epoch */
    ev.now_ms = t + 1;
    ev.u.partition_update.partition_epoch = PEPOCH + 1;
    ev.u.partition_update.isr = ids3(1, 2, -1);
    assert_int_equal(step(f, &ev), 0);
    assert_true(f->out.isr_changed);
    assert_false(repl_ids_contains(repl_leader_isr(f->l), 3));
    assert_int_equal(repl_leader_partition_epoch(f->l), PEPOCH + 1);
    /* our stale proposal was dropped, and the next one uses the new
     * epoch: 2 is still silent */
    expect_proposal(f, ids3(1, -1, -1));
    assert_int_equal(f->out.proposal.partition_epoch, PEPOCH + 1);
    /* the refusal of the first proposal arrives late: ignored */
    isr_result(f, false, EPOCH, PEPOCH, 0, ids3(1, 3, -1), t + 2);
    assert_true(repl_leader_proposal_in_flight(f->l));
    /* updates that are not newer are ignored */
    ev.u.partition_update.partition_epoch = PEPOCH;
    ev.u.partition_update.isr = ids3(1, 2, 3);
    assert_int_equal(step(f, &ev), 0);
    assert_false(f->out.isr_changed);
    assert_int_equal(repl_leader_isr(f->l)->n, 2);
    /* an ISR without the leader or outside the replicas is refused */
    ev.u.partition_update.partition_epoch = PEPOCH + 5;
    ev.u.partition_update.isr = ids3(2, 3, -1);
    assert_int_equal(step(f, &ev), WEIR_EINVALID_ARGUMENT);
    ev.u.partition_update.isr = ids3(1, 7, -1);
    assert_int_equal(step(f, &ev), WEIR_EINVALID_ARGUMENT);
    assert_int_equal(repl_leader_partition_epoch(f->l), PEPOCH + 1);
}

/* An idle partition: the controller takes 2 and 3 out of the ISR (their
 * brokers shut down) after they had fetched everything. Broker 3 stays
 * down; 2 comes back and fetches. The proposal must add 2 only: 3's old
 * fetch still equals the LEO of the idle log, but it says nothing now,
 * and a proposal naming the fenced 3 would be refused for ever. */
static void test_followers_removed_by_controller_must_fetch_again(void **state)
{
    struct fixture *f = *state;
    struct repl_leader_event ev = {.type = REPL_LEADER_EV_PARTITION_UPDATE};

    fetch(f, 2, 0, 1);
    fetch(f, 3, 0, 1);
    ev.now_ms = 2;
    ev.u.partition_update.partition_epoch = PEPOCH + 1;
    ev.u.partition_update.isr = ids3(1, 3, -1); /* 2 shut down */
    assert_int_equal(step(f, &ev), 0);
    ev.now_ms = 3;
    ev.u.partition_update.partition_epoch = PEPOCH + 2;
    ev.u.partition_update.isr = ids3(1, -1, -1); /* then 3 */
    assert_int_equal(step(f, &ev), 0);
    expect_no_proposal(f);
    assert_int_equal(repl_leader_follower_offset(f->l, 3), REPL_OFFSET_NONE);
    tick(f, 1000);
    expect_no_proposal(f);
    fetch(f, 2, 0, 2000); /* broker 2 is back */
    expect_proposal(f, ids3(1, 2, -1));
    accept_proposal(f, 2001);
    tick(f, 2002);
    expect_no_proposal(f);
    fetch(f, 3, 0, 5000); /* and 3 once it fetches again */
    expect_proposal(f, ids3(1, 2, 3));
}

static void test_bad_events_leave_state_unchanged(void **state)
{
    struct fixture *f = *state;
    struct repl_leader_event ev = {.type = REPL_LEADER_EV_APPEND, .now_ms = 5};

    append(f, 100, 1);
    ev.u.append.log_end_offset = 99;
    assert_int_equal(step(f, &ev), WEIR_EINVALID_ARGUMENT);
    assert_int_equal(repl_leader_log_end_offset(f->l), 100);
    ev.type = REPL_LEADER_EV_DURABLE;
    ev.u.durable.durable_offset = 101;
    assert_int_equal(step(f, &ev), WEIR_EINVALID_ARGUMENT);
    ev.type = (enum repl_leader_event_type)99;
    assert_int_equal(step(f, &ev), WEIR_EINVALID_ARGUMENT);

    /* an accepted answer that makes no sense */
    tick(f, LAG_MS + 1);
    expect_proposal(f, ids3(1, -1, -1));
    ev.type = REPL_LEADER_EV_ISR_RESULT;
    ev.u.isr_result.accepted = true;
    ev.u.isr_result.leader_epoch = EPOCH;
    ev.u.isr_result.partition_epoch = PEPOCH;
    ev.u.isr_result.new_partition_epoch = PEPOCH; /* not newer */
    ev.u.isr_result.isr = ids3(1, -1, -1);
    assert_int_equal(step(f, &ev), WEIR_EINVALID_ARGUMENT);
    ev.u.isr_result.new_partition_epoch = PEPOCH + 1;
    ev.u.isr_result.isr = ids3(2, -1, -1); /* without the leader */
    assert_int_equal(step(f, &ev), WEIR_EINVALID_ARGUMENT);
    assert_true(repl_leader_proposal_in_flight(f->l));
    assert_int_equal(repl_leader_isr(f->l)->n, 3);
}

static void test_config_checked_at_promotion(void **state)
{
    struct fixture *f = *state;
    struct repl_leader_config bad;
    struct repl_leader *l = NULL;

    (void)state;
    bad = f->cfg;
    bad.isr = ids3(2, 3, -1); /* leader missing */
    assert_int_equal(repl_leader_new(&bad, &f->epochs, 0, &l),
                     WEIR_EINVALID_ARGUMENT);
    assert_null(l);
    bad = f->cfg;
    bad.isr = ids3(1, 4, -1); /* not a replica */
    assert_int_equal(repl_leader_new(&bad, &f->epochs, 0, &l),
                     WEIR_EINVALID_ARGUMENT);
    bad = f->cfg;
    bad.min_insync_replicas = 0;
    assert_int_equal(repl_leader_new(&bad, &f->epochs, 0, &l),
                     WEIR_EINVALID_ARGUMENT);
    bad = f->cfg;
    bad.high_watermark = 1; /* past the LEO */
    assert_int_equal(repl_leader_new(&bad, &f->epochs, 0, &l),
                     WEIR_EINVALID_ARGUMENT);
    bad = f->cfg;
    bad.replica_lag_time_max_ms = 0;
    assert_int_equal(repl_leader_new(&bad, &f->epochs, 0, &l),
                     WEIR_EINVALID_ARGUMENT);
    /* the log already holds a newer epoch: this promotion is stale */
    assert_int_equal(repl_epochs_assign(&f->epochs, EPOCH + 1, 0), 0);
    assert_int_equal(repl_leader_new(&f->cfg, &f->epochs, 0, &l),
                     WEIR_EFENCED_LEADER_EPOCH);
    assert_null(l);
}

static void test_promotion_records_epoch_start(void **state)
{
    struct fixture *f = *state;

    /* epoch 2 wrote 0..29; we take over at 30 */
    repl_epochs_clear(&f->epochs);
    assert_int_equal(repl_epochs_assign(&f->epochs, 2, 0), 0);
    f->cfg.log_end_offset = 30;
    f->cfg.durable_offset = 30;
    fixture_start(f, 0);
    assert_int_equal(repl_epochs_latest_epoch(&f->epochs), EPOCH);
    assert_int_equal(repl_epochs_start_offset(&f->epochs, EPOCH), 30);
    assert_int_equal(repl_leader_epoch_start_offset(f->l), 30);
    /* Leading the same epoch again (say after a restart that lost
     * unflushed records) is refused: new records at those offsets would
     * carry the same epoch as the lost ones some follower may hold, and
     * no epoch check could tell them apart. */
    append(f, 40, 1);
    repl_leader_free(f->l);
    f->l = NULL;
    f->cfg.log_end_offset = 35;
    f->cfg.durable_offset = 35;
    assert_int_equal(repl_leader_new(&f->cfg, &f->epochs, 2, &f->l),
                     WEIR_EFENCED_LEADER_EPOCH);
    assert_null(f->l);
    assert_int_equal(repl_epochs_count(&f->epochs), 2);
    /* with the next epoch from the controller it is fine */
    f->cfg.leader_epoch = EPOCH + 1;
    assert_int_equal(repl_leader_new(&f->cfg, &f->epochs, 2, &f->l), 0);
    assert_int_equal(repl_leader_epoch_start_offset(f->l), 35);
}

static void test_promotion_survives_allocation_failures(void **state)
{
    struct fixture *f = *state;
    struct repl_leader *l = NULL;
    unsigned long n;
    int rv;

    repl_leader_free(f->l);
    f->l = NULL;
    repl_epochs_fini(&f->epochs);
    for (n = 1;; n++) {
        repl_epochs_init(&f->epochs);
        mem_fault_set(n, 0);
        rv = repl_leader_new(&f->cfg, &f->epochs, 0, &l);
        mem_fault_set(0, 0);
        if (rv == 0) {
            break;
        }
        assert_int_equal(rv, WEIR_ENOMEM);
        assert_null(l);
        assert_int_equal(repl_epochs_count(&f->epochs), 0);
        repl_epochs_fini(&f->epochs);
        assert_true(n < 100);
    }
    f->l = l;
    assert_int_equal(repl_leader_check_invariants(f->l), 0);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_silent_follower_leaves_isr),
        T(test_follower_falling_behind_leaves_after_lag),
        T(test_follower_keeping_pace_stays_in_isr),
        T(test_idle_caught_up_follower_stays_in_isr),
        T(test_fetching_at_leo_refreshes_caught_up_time),
        T(test_out_of_sync_follower_rejoins_at_hw),
        T(test_rejoin_needs_a_fetch_in_the_current_epoch),
        T(test_rejoin_waits_until_follower_is_caught_up),
        T(test_hw_is_min_durable_offset_over_isr),
        T(test_hw_never_moves_backwards),
        T(test_hw_frozen_while_isr_below_min),
        T(test_acks_all_refused_below_min_isr),
        T(test_pending_shrink_still_holds_hw),
        T(test_fetch_validation_reports_divergence),
        T(test_fetch_fencing_by_leader_epoch),
        T(test_deposed_leader_acknowledges_nothing),
        T(test_new_leader_reestablishes_hw_in_its_epoch),
        T(test_new_leader_drops_isr_member_that_never_fetches),
        T(test_one_proposal_in_flight_at_a_time),
        T(test_rejected_proposal_dropped_and_retried),
        T(test_stale_proposal_answers_ignored),
        T(test_partition_update_supersedes_proposal),
        T(test_followers_removed_by_controller_must_fetch_again),
        T(test_bad_events_leave_state_unchanged),
        T(test_config_checked_at_promotion),
        T(test_promotion_records_epoch_start),
        T(test_promotion_survives_allocation_failures),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
