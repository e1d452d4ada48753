/* SPDX-License-Identifier: Apache-2.0 */
/* Follower-side replication state machine: fetch parameters and the
 * durability contract, validation of what the leader sends, the high
 * watermark, truncation on divergence (KIP-279: from epochs, never to
 * the high watermark, KIP-101) and fetch errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "broker/replica/repl_follower.h"
#include "common/mem.h"

#define SELF       2
#define LEADER     1
#define EPOCH      5
#define BACKOFF_MS 100

struct fixture {
    struct repl_epochs epochs;
    struct repl_follower_config cfg;
    struct repl_follower *f;
    struct repl_follower_actions out;
};

struct ep_pair {
    int32_t epoch;
    int64_t start;
};

static void fixture_start(struct fixture *x)
{
    repl_follower_free(x->f);
    x->f = NULL;
    assert_int_equal(repl_follower_new(&x->cfg, &x->epochs, &x->f), 0);
    assert_int_equal(repl_follower_check_invariants(x->f), 0);
}

/* Restart with this log: LEO (all durable), HW and epoch history. */
static void fixture_log(struct fixture *x,
                        int64_t leo,
                        int64_t hw,
                        const struct ep_pair *e,
                        size_t n)
{
    size_t i;

    repl_epochs_clear(&x->epochs);
    for (i = 0; i < n; i++) {
        assert_int_equal(repl_epochs_assign(&x->epochs, e[i].epoch, e[i].start),
                         0);
    }
    x->cfg.log_end_offset = leo;
    x->cfg.durable_offset = leo;
    x->cfg.high_watermark = hw;
    fixture_start(x);
}

static int setup(void **state)
{
    struct fixture *x = test_calloc(1, sizeof(*x));

    repl_epochs_init(&x->epochs);
    x->cfg.self_id = SELF;
    x->cfg.leader_id = LEADER;
    x->cfg.leader_epoch = EPOCH;
    x->cfg.fetch_backoff_ms = BACKOFF_MS;
    fixture_start(x);
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *x = *state;

    repl_follower_free(x->f);
    repl_epochs_fini(&x->epochs);
    test_free(x);
    return 0;
}

static int step(struct fixture *x, const struct repl_follower_event *ev)
{
    int rv = repl_follower_step(x->f, ev, &x->out);

    assert_int_equal(repl_follower_check_invariants(x->f), 0);
    assert_int_equal(x->out.high_watermark, repl_follower_high_watermark(x->f));
    return rv;
}

static int records(struct fixture *x, int32_t epoch, int64_t base, int64_t end)
{
    struct repl_follower_event ev = {.type = REPL_FOLLOWER_EV_RECORDS,
                                     .now_ms = 1};

    ev.u.records.epoch = epoch;
    ev.u.records.base_offset = base;
    ev.u.records.end_offset = end;
    return step(x, &ev);
}

static void durable(struct fixture *x, int64_t offset)
{
    struct repl_follower_event ev = {.type = REPL_FOLLOWER_EV_DURABLE,
                                     .now_ms = 1};

    ev.u.durable.durable_offset = offset;
    assert_int_equal(step(x, &ev), 0);
}

static void leader_hw(struct fixture *x, int64_t hw)
{
    struct repl_follower_event ev = {.type = REPL_FOLLOWER_EV_LEADER_HW,
                                     .now_ms = 1};

    ev.u.leader_hw.high_watermark = hw;
    assert_int_equal(step(x, &ev), 0);
}

static int diverging(struct fixture *x, int32_t epoch, int64_t end)
{
    struct repl_follower_event ev = {.type = REPL_FOLLOWER_EV_DIVERGING,
                                     .now_ms = 1};

    ev.u.diverging.epoch = epoch;
    ev.u.diverging.end_offset = end;
    return step(x, &ev);
}

static void fetch_error(struct fixture *x, int err, uint64_t now)
{
    struct repl_follower_event ev = {.type = REPL_FOLLOWER_EV_FETCH_ERROR,
                                     .now_ms = now};

    ev.u.fetch_error.err = err;
    assert_int_equal(step(x, &ev), 0);
}

static void
expect_fetch(const struct fixture *x, int64_t offset, int32_t last_epoch)
{
    struct repl_fetch_params p;

    assert_true(repl_follower_next_fetch(x->f, 1, &p));
    assert_int_equal(p.replica, SELF);
    assert_int_equal(p.fetch_offset, offset);
    assert_int_equal(p.last_fetched_epoch, last_epoch);
    assert_int_equal(p.current_leader_epoch, EPOCH);
}

static void
expect_epochs(const struct fixture *x, const struct ep_pair *e, size_t n)
{
    size_t i;

    assert_int_equal(repl_epochs_count(&x->epochs), n);
    for (i = 0; i < n; i++) {
        assert_int_equal(repl_epochs_entry(&x->epochs, (uint32_t)i)->epoch,
                         e[i].epoch);
        assert_int_equal(
            repl_epochs_entry(&x->epochs, (uint32_t)i)->start_offset,
            e[i].start);
    }
}

static void test_fetch_params_follow_log_end_and_latest_epoch(void **state)
{
    static const struct ep_pair log[] = {{1, 0}, {3, 10}};
    struct fixture *x = *state;

    expect_fetch(x, 0, REPL_EPOCH_NONE); /* empty log */
    fixture_log(x, 20, 0, log, 2);
    expect_fetch(x, 20, 3);
}

static void test_records_extend_log_and_epoch_cache(void **state)
{
    static const struct ep_pair one[] = {{3, 0}};
    static const struct ep_pair two[] = {{3, 0}, {5, 10}};
    struct fixture *x = *state;
    struct repl_fetch_params p;

    fixture_log(x, 0, 0, NULL, 0);
    assert_int_equal(records(x, 3, 0, 10), 0);
    assert_true(x->out.append);
    assert_true(x->out.epochs_changed);
    expect_epochs(x, one, 1);
    assert_int_equal(repl_follower_log_end_offset(x->f), 10);
    /* not durable yet: no fetch, so the leader never counts records we
     * could still lose */
    assert_int_equal(x->out.next_fetch_ms, REPL_TICK_NEVER);
    assert_false(repl_follower_next_fetch(x->f, 1, &p));
    durable(x, 4);
    assert_false(repl_follower_next_fetch(x->f, 1, &p));
    durable(x, 10);
    assert_int_equal(x->out.next_fetch_ms, 1);
    expect_fetch(x, 10, 3);
    /* a new epoch starts where its first batch does */
    assert_int_equal(records(x, 5, 10, 15), 0);
    assert_true(x->out.epochs_changed);
    assert_int_equal(records(x, 5, 15, 20), 0);
    assert_true(x->out.append);
    assert_false(x->out.epochs_changed);
    expect_epochs(x, two, 2);
    durable(x, 20);
    expect_fetch(x, 20, 5);
}

static void test_records_validated_before_append(void **state)
{
    static const struct ep_pair log[] = {{3, 0}};
    struct fixture *x = *state;

    fixture_log(x, 10, 0, log, 1);
    assert_int_equal(records(x, 3, 9, 20), WEIR_ECORRUPT_MESSAGE);  /* below */
    assert_int_equal(records(x, 3, 10, 10), WEIR_ECORRUPT_MESSAGE); /* empty */
    assert_int_equal(records(x, 2, 10, 20), WEIR_ECORRUPT_MESSAGE); /* older */
    assert_int_equal(records(x, EPOCH + 1, 10, 20), WEIR_ECORRUPT_MESSAGE);
    assert_int_equal(records(x, -1, 10, 20), WEIR_ECORRUPT_MESSAGE);
    assert_false(x->out.append);
    assert_int_equal(repl_follower_log_end_offset(x->f), 10);
    expect_epochs(x, log, 1);
    assert_int_equal(records(x, 3, 10, 20), 0);
}

/* A compacted leader serves the next batch it kept: its base may lie past
 * our LEO, and the LEO moves past the gap. A new epoch starts at the
 * batch, not at the old LEO. */
static void test_records_may_start_past_log_end(void **state)
{
    static const struct ep_pair log[] = {{3, 0}};
    static const struct ep_pair two[] = {{3, 0}, {5, 40}};
    struct fixture *x = *state;

    fixture_log(x, 10, 0, log, 1);
    assert_int_equal(records(x, 3, 25, 30), 0);
    assert_true(x->out.append);
    assert_false(x->out.epochs_changed);
    assert_int_equal(repl_follower_log_end_offset(x->f), 30);
    durable(x, 30);
    expect_fetch(x, 30, 3);
    assert_int_equal(records(x, 5, 40, 41), 0);
    assert_true(x->out.epochs_changed);
    expect_epochs(x, two, 2);
    assert_int_equal(records(x, 5, 40, 45), WEIR_ECORRUPT_MESSAGE);
    assert_int_equal(repl_follower_check_invariants(x->f), 0);
}

static void test_hw_is_min_of_leader_hw_and_leo(void **state)
{
    struct fixture *x = *state;

    assert_int_equal(records(x, 1, 0, 10), 0);
    leader_hw(x, 50);
    assert_true(x->out.hw_changed);
    assert_int_equal(repl_follower_high_watermark(x->f), 10);
    /* a new leader re-establishing its HW may send a lower one */
    leader_hw(x, 5);
    assert_false(x->out.hw_changed);
    assert_int_equal(repl_follower_high_watermark(x->f), 10);
    assert_int_equal(records(x, 1, 10, 30), 0);
    leader_hw(x, 15);
    assert_int_equal(repl_follower_high_watermark(x->f), 15);
    /* a checkpointed HW past the log end is clamped at start */
    x->cfg.log_end_offset = 8;
    x->cfg.durable_offset = 8;
    x->cfg.high_watermark = 12;
    repl_epochs_clear(&x->epochs);
    fixture_start(x);
    assert_int_equal(repl_follower_high_watermark(x->f), 8);
}

static void test_diverging_same_epoch_cuts_at_shorter_end(void **state)
{
    static const struct ep_pair log[] = {{1, 0}, {3, 10}};
    struct fixture *x = *state;

    fixture_log(x, 30, 5, log, 2);
    /* the leader's epoch 3 ends at 20; ours runs to 30 */
    assert_int_equal(diverging(x, 3, 20), 0);
    assert_true(x->out.truncate);
    assert_int_equal(x->out.truncate_offset, 20);
    assert_false(x->out.epochs_changed);
    assert_int_equal(repl_follower_log_end_offset(x->f), 20);
    assert_int_equal(repl_follower_durable_offset(x->f), 20);
    /* the HW (5) had nothing to do with it */
    assert_false(x->out.hw_changed);
    assert_int_equal(repl_follower_high_watermark(x->f), 5);
    assert_int_equal(x->out.next_fetch_ms, 1);
    expect_fetch(x, 20, 3);
}

static void test_diverging_unknown_epoch_takes_two_rounds(void **state)
{
    /* ours: 1 from 0, 2 from 10, 4 from 15, LEO 25
     * leader: 1 from 0, 3 from 12, 5 from 20 */
    static const struct ep_pair log[] = {{1, 0}, {2, 10}, {4, 15}};
    static const struct ep_pair after[] = {{1, 0}};
    struct fixture *x = *state;

    fixture_log(x, 25, 0, log, 3);
    expect_fetch(x, 25, 4);
    /* leader: largest of its epochs <= 4 is 3, ending at 20 */
    assert_int_equal(diverging(x, 3, 20), 0);
    /* we lack epoch 3: everything from our first newer epoch (4 at 15)
     * differs; cut there and ask again */
    assert_true(x->out.truncate);
    assert_int_equal(x->out.truncate_offset, 15);
    assert_true(x->out.epochs_changed);
    expect_fetch(x, 15, 2);
    /* leader: largest <= 2 is 1, ending at 12 */
    assert_int_equal(diverging(x, 1, 12), 0);
    /* both have epoch 1; ours ends at 10, the shorter */
    assert_int_equal(x->out.truncate_offset, 10);
    expect_epochs(x, after, 1);
    expect_fetch(x, 10, 1); /* consistent: leader's 1 runs to 12 */
}

static void test_diverging_never_truncates_to_hw(void **state)
{
    static const struct ep_pair log[] = {{1, 0}};
    struct fixture *x = *state;

    /* LEO 10, HW 2: before KIP-101 a follower cut to 2 before fetching */
    fixture_log(x, 10, 2, log, 1);
    expect_fetch(x, 10, 1);
    /* the leader holds more of epoch 1 than we do: nothing to cut */
    assert_int_equal(diverging(x, 1, 15), 0);
    assert_false(x->out.truncate);
    assert_int_equal(repl_follower_log_end_offset(x->f), 10);
    /* the leader's epoch 1 ends at 8: cut there, not at 2 */
    assert_int_equal(diverging(x, 1, 8), 0);
    assert_true(x->out.truncate);
    assert_int_equal(x->out.truncate_offset, 8);
    assert_int_equal(repl_follower_high_watermark(x->f), 2);
}

static void test_truncation_below_hw_lowers_it(void **state)
{
    static const struct ep_pair log[] = {{1, 0}};
    struct fixture *x = *state;

    /* only an unclean election can get here: the leader lacks records we
     * saw committed */
    fixture_log(x, 10, 10, log, 1);
    assert_int_equal(diverging(x, 1, 4), 0);
    assert_int_equal(x->out.truncate_offset, 4);
    assert_true(x->out.hw_changed);
    assert_int_equal(x->out.high_watermark, 4);
}

static void test_diverging_without_local_epochs_trusts_leader(void **state)
{
    struct fixture *x = *state;

    fixture_log(x, 10, 0, NULL, 0);
    assert_int_equal(diverging(x, 3, 6), 0);
    assert_int_equal(x->out.truncate_offset, 6);
    assert_false(x->out.epochs_changed);
}

static void test_diverging_epoch_older_than_our_history(void **state)
{
    /* log starts at 10 (retention), in epoch 4 */
    static const struct ep_pair log[] = {{4, 10}, {5, 20}};
    struct fixture *x = *state;

    fixture_log(x, 30, 0, log, 2);
    /* the leader's history of epochs <= 5 is only epoch 2, to 15: all of
     * ours (epochs 4 and 5, from 10) is foreign to it */
    assert_int_equal(diverging(x, 2, 15), 0);
    assert_int_equal(x->out.truncate_offset, 10);
    assert_true(x->out.epochs_changed);
    assert_int_equal(repl_epochs_count(&x->epochs), 0);
    expect_fetch(x, 10, REPL_EPOCH_NONE);
}

static void test_divergence_rounds_always_make_progress(void **state)
{
    static const struct ep_pair log[] = {{1, 0}, {2, 5}, {3, 9}, {4, 12}};
    struct fixture *x = *state;
    int64_t leo;
    uint32_t n;
    int32_t e;

    /* whatever (epoch <= our latest, end) the leader answers, each round
     * shortens the log or the epoch list, so the exchange ends */
    for (e = 0; e <= 4; e++) {
        for (leo = 0; leo <= 20; leo++) {
            if (e == 4 && leo >= 16) {
                continue; /* the leader would have served this fetch */
            }
            fixture_log(x, 16, 0, log, 4);
            n = repl_epochs_count(&x->epochs);
            assert_int_equal(diverging(x, e, leo), 0);
            assert_true(repl_follower_log_end_offset(x->f) < 16 ||
                        repl_epochs_count(&x->epochs) < n);
        }
    }
}

static void test_new_follower_drops_epochs_without_records(void **state)
{
    /* we led epoch 5 from 20 but never wrote in it */
    static const struct ep_pair log[] = {{1, 0}, {3, 10}, {5, 20}};
    static const struct ep_pair kept[] = {{1, 0}, {3, 10}};
    struct fixture *x = *state;

    x->cfg.leader_epoch = 6;
    fixture_log(x, 20, 0, log, 3);
    expect_epochs(x, kept, 2);
    /* the new leader sends epoch 3 records past 20 (it had more of 3) */
    assert_int_equal(records(x, 3, 20, 25), 0);
    assert_false(x->out.epochs_changed);
    assert_int_equal(records(x, 6, 25, 30), 0);
    assert_int_equal(repl_epochs_start_offset(&x->epochs, 6), 25);
}

static int out_of_range(struct fixture *x, int64_t leader_start, uint64_t now)
{
    struct repl_follower_event ev = {.type = REPL_FOLLOWER_EV_OUT_OF_RANGE,
                                     .now_ms = now};

    ev.u.out_of_range.log_start_offset = leader_start;
    return step(x, &ev);
}

/* Issue 12 item 9: a leadership this replica held without writing left
 * (4, 200) in its cache; the next leader (epoch 5) has 1 up to 200, then 5.
 * Sending last epoch 4 got DIVERGING(1, 200) for ever (nothing to cut at
 * the log end, so the entry stayed). */
static void test_empty_epoch_never_wedges_the_follower(void **state)
{
    static const struct ep_pair log[] = {{1, 0}, {EPOCH - 1, 200}};
    static const struct ep_pair kept[] = {{1, 0}};
    struct fixture *x = *state;

    fixture_log(x, 200, 200, log, 2);
    /* a new follower drops the entry at once ... */
    expect_epochs(x, kept, 1);
    expect_fetch(x, 200, 1);
    /* ... and one that got there otherwise drops it on the first answer */
    assert_int_equal(repl_epochs_assign(&x->epochs, EPOCH - 1, 200), 0);
    assert_int_equal(diverging(x, 1, 200), 0);
    assert_false(x->out.truncate);
    assert_true(x->out.epochs_changed);
    assert_false(x->out.stalled);
    expect_epochs(x, kept, 1);
    expect_fetch(x, 200, 1);
}

/* An empty epoch newer than the leader's (a leadership refused before it
 * wrote anything) does not stop the replica from following; records of a
 * newer epoch do. */
static void test_new_follower_ignores_empty_newer_epoch(void **state)
{
    static const struct ep_pair empty_newer[] = {{1, 0}, {EPOCH + 2, 50}};
    static const struct ep_pair kept[] = {{1, 0}};
    static const struct ep_pair newer_records[] = {{1, 0}, {EPOCH + 2, 40}};
    struct fixture *x = *state;
    struct repl_follower *f = NULL;

    fixture_log(x, 50, 0, empty_newer, 2);
    expect_epochs(x, kept, 1);
    repl_epochs_clear(&x->epochs);
    assert_int_equal(repl_epochs_assign(&x->epochs, 1, 0), 0);
    assert_int_equal(repl_epochs_assign(&x->epochs, EPOCH + 2, 40), 0);
    x->cfg.log_end_offset = 50;
    x->cfg.durable_offset = 50;
    assert_int_equal(repl_follower_new(&x->cfg, &x->epochs, &f),
                     WEIR_EINVALID_ARGUMENT);
    assert_null(f);
    expect_epochs(x, newer_records, 2);
}

/* A DIVERGING answer that cuts nothing comes back identical on the next
 * fetch: back off instead of asking again at once. */
static void test_diverging_without_progress_backs_off(void **state)
{
    static const struct ep_pair log[] = {{1, 0}, {3, 10}};
    struct fixture *x = *state;
    struct repl_fetch_params p;
    int i;

    fixture_log(x, 30, 0, log, 2);
    for (i = 0; i < 3; i++) {
        uint64_t now = 1000 + (uint64_t)i * 1000;
        struct repl_follower_event ev = {.type = REPL_FOLLOWER_EV_DIVERGING,
                                         .now_ms = now};

        /* the leader's epoch 3 runs past our end: nothing to cut */
        ev.u.diverging.epoch = 3;
        ev.u.diverging.end_offset = 40;
        assert_int_equal(step(x, &ev), 0);
        assert_false(x->out.truncate);
        assert_false(x->out.epochs_changed);
        assert_true(x->out.stalled);
        assert_int_equal(x->out.next_fetch_ms, now + BACKOFF_MS);
        assert_false(repl_follower_next_fetch(x->f, now + BACKOFF_MS - 1, &p));
        assert_true(repl_follower_next_fetch(x->f, now + BACKOFF_MS, &p));
    }
    assert_int_equal(repl_follower_log_end_offset(x->f), 30);
    /* a cut is progress: fetch again at once */
    {
        struct repl_follower_event ev = {.type = REPL_FOLLOWER_EV_DIVERGING,
                                         .now_ms = 9000};

        ev.u.diverging.epoch = 3;
        ev.u.diverging.end_offset = 20;
        assert_int_equal(step(x, &ev), 0);
    }
    assert_true(x->out.truncate);
    assert_false(x->out.stalled);
    assert_int_equal(x->out.next_fetch_ms, 9000);
}

/* Issue 12 item 5: behind the leader's log start, restart the log at that
 * start with an empty epoch cache, and fetch from there. */
static void test_out_of_range_below_leader_start_restarts_log(void **state)
{
    static const struct ep_pair log[] = {{1, 0}, {3, 10}};
    static const struct ep_pair after[] = {{EPOCH, 500}};
    struct fixture *x = *state;

    fixture_log(x, 30, 25, log, 2);
    expect_fetch(x, 30, 3);
    assert_int_equal(out_of_range(x, 500, 1000), 0);
    assert_true(x->out.restart);
    assert_int_equal(x->out.restart_offset, 500);
    assert_false(x->out.truncate);
    assert_true(x->out.epochs_changed);
    assert_int_equal(repl_epochs_count(&x->epochs), 0);
    /* what the leader deleted was below its HW: committed */
    assert_true(x->out.hw_changed);
    assert_int_equal(repl_follower_high_watermark(x->f), 500);
    assert_int_equal(repl_follower_log_end_offset(x->f), 500);
    assert_int_equal(repl_follower_durable_offset(x->f), 500);
    /* no backoff: fetch from the leader's start right away */
    assert_int_equal(x->out.next_fetch_ms, 1000);
    expect_fetch(x, 500, REPL_EPOCH_NONE);
    assert_int_equal(records(x, EPOCH, 500, 520), 0);
    expect_epochs(x, after, 1);
}

static void test_out_of_range_within_leader_log_backs_off(void **state)
{
    static const struct ep_pair log[] = {{1, 0}};
    struct fixture *x = *state;

    fixture_log(x, 30, 0, log, 1);
    /* the leader starts at or below our end: not behind; retry later */
    assert_int_equal(out_of_range(x, 30, 1000), 0);
    assert_false(x->out.restart);
    assert_false(x->out.truncate);
    assert_false(x->out.epochs_changed);
    assert_int_equal(x->out.next_fetch_ms, 1000 + BACKOFF_MS);
    assert_int_equal(out_of_range(x, 0, 2000), 0);
    assert_false(x->out.restart);
    assert_int_equal(repl_follower_log_end_offset(x->f), 30);
    assert_int_equal(repl_epochs_count(&x->epochs), 1);
    assert_int_equal(out_of_range(x, -1, 3000), WEIR_EINVALID_ARGUMENT);
}

static void test_fetch_errors_stop_or_back_off(void **state)
{
    struct fixture *x = *state;
    struct repl_fetch_params p;

    fetch_error(x, WEIR_EUNKNOWN_LEADER_EPOCH, 1000);
    assert_false(x->out.stopped);
    assert_int_equal(x->out.next_fetch_ms, 1000 + BACKOFF_MS);
    assert_false(repl_follower_next_fetch(x->f, 1000 + BACKOFF_MS - 1, &p));
    assert_true(repl_follower_next_fetch(x->f, 1000 + BACKOFF_MS, &p));
    fetch_error(x, WEIR_ENETWORK, 2000);
    assert_int_equal(x->out.next_fetch_ms, 2000 + BACKOFF_MS);

    /* our leader epoch is stale: only new metadata helps */
    fetch_error(x, WEIR_EFENCED_LEADER_EPOCH, 3000);
    assert_true(x->out.stopped);
    assert_true(repl_follower_is_stopped(x->f));
    assert_int_equal(x->out.next_fetch_ms, REPL_TICK_NEVER);
    assert_false(repl_follower_next_fetch(x->f, UINT64_MAX - 1, &p));
    /* the leader has not applied its own leadership yet: nothing would
     * restart a follower stopped on that, so it retries */
    fixture_start(x);
    fetch_error(x, WEIR_ENOT_LEADER, 3000);
    assert_false(x->out.stopped);
    assert_int_equal(x->out.next_fetch_ms, 3000 + BACKOFF_MS);
    fetch_error(x, WEIR_ELEADER_NOT_AVAILABLE, 4000);
    assert_false(x->out.stopped);
    assert_int_equal(repl_follower_next_fetch_ms(x->f, 4000),
                     4000 + BACKOFF_MS);
}

static void test_bad_events_rejected(void **state)
{
    struct fixture *x = *state;
    struct repl_follower_event ev = {.type = REPL_FOLLOWER_EV_DURABLE};

    ev.u.durable.durable_offset = 1;
    assert_int_equal(step(x, &ev), WEIR_EINVALID_ARGUMENT);
    assert_int_equal(diverging(x, 1, -1), WEIR_EINVALID_ARGUMENT);
    ev.type = (enum repl_follower_event_type)77;
    assert_int_equal(step(x, &ev), WEIR_EINVALID_ARGUMENT);
}

static void test_config_checked(void **state)
{
    struct fixture *x = *state;
    struct repl_follower_config bad;
    struct repl_follower *f = NULL;

    bad = x->cfg;
    bad.leader_id = SELF;
    assert_int_equal(repl_follower_new(&bad, &x->epochs, &f),
                     WEIR_EINVALID_ARGUMENT);
    assert_null(f);
    bad = x->cfg;
    bad.durable_offset = 1; /* past LEO 0 */
    assert_int_equal(repl_follower_new(&bad, &x->epochs, &f),
                     WEIR_EINVALID_ARGUMENT);
    bad = x->cfg;
    bad.leader_epoch = -1;
    assert_int_equal(repl_follower_new(&bad, &x->epochs, &f),
                     WEIR_EINVALID_ARGUMENT);
    /* our log already has records of an epoch newer than this
     * leadership */
    assert_int_equal(repl_epochs_assign(&x->epochs, EPOCH + 1, 0), 0);
    bad = x->cfg;
    bad.log_end_offset = 10;
    bad.durable_offset = 10;
    assert_int_equal(repl_follower_new(&bad, &x->epochs, &f),
                     WEIR_EINVALID_ARGUMENT);
    assert_int_equal(repl_epochs_count(&x->epochs), 1);
}

static void test_allocation_failures_leave_state_unchanged(void **state)
{
    static const struct ep_pair log[] = {{1, 0}, {2, 1}, {3, 2}, {4, 3}};
    struct fixture *x = *state;
    struct repl_follower *f = NULL;

    fixture_log(x, 4, 0, log, 4); /* the cache is full at 4 entries */
    mem_fault_set(1, 0);
    assert_int_equal(records(x, EPOCH, 4, 8), WEIR_ENOMEM);
    mem_fault_set(0, 0);
    assert_false(x->out.append);
    assert_int_equal(repl_follower_log_end_offset(x->f), 4);
    expect_epochs(x, log, 4);
    assert_int_equal(records(x, EPOCH, 4, 8), 0);

    mem_fault_set(1, 0);
    assert_int_equal(repl_follower_new(&x->cfg, &x->epochs, &f), WEIR_ENOMEM);
    mem_fault_set(0, 0);
    assert_null(f);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_fetch_params_follow_log_end_and_latest_epoch),
        T(test_records_extend_log_and_epoch_cache),
        T(test_records_validated_before_append),
        T(test_records_may_start_past_log_end),
        T(test_hw_is_min_of_leader_hw_and_leo),
        T(test_diverging_same_epoch_cuts_at_shorter_end),
        T(test_diverging_unknown_epoch_takes_two_rounds),
        T(test_diverging_never_truncates_to_hw),
        T(test_truncation_below_hw_lowers_it),
        T(test_diverging_without_local_epochs_trusts_leader),
        T(test_diverging_epoch_older_than_our_history),
        T(test_divergence_rounds_always_make_progress),
        T(test_new_follower_drops_epochs_without_records),
        T(test_empty_epoch_never_wedges_the_follower),
        T(test_new_follower_ignores_empty_newer_epoch),
        T(test_diverging_without_progress_backs_off),
        T(test_out_of_range_below_leader_start_restarts_log),
        T(test_out_of_range_within_leader_log_backs_off),
        T(test_fetch_errors_stop_or_back_off),
        T(test_bad_events_rejected),
        T(test_config_checked),
        T(test_allocation_failures_leave_state_unchanged),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
