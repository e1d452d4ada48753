/* SPDX-License-Identifier: Apache-2.0 */
/* Controller core, elections on a fake clock: failover to the first live
 * ISR member in replica order with epochs bumped in one batch, a sole ISR
 * member fenced leaves for the ELR and the partition leaderless (and it
 * leads again when back), unclean election only when enabled,
 * preferred-leader rebalance. test_ctl_elr.c has the ELR scenarios. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tests/unit/test_ctl_fixture.h"

static bool is_dead(int32_t id, const int32_t *dead, uint32_t n_dead)
{
    uint32_t i;

    for (i = 0; i < n_dead; i++) {
        if (dead[i] == id) {
            return true;
        }
    }
    return false;
}

static void
heartbeat_living(struct ctl_fixture *f, const int32_t *dead, uint32_t n_dead)
{
    int32_t id;

    for (id = 0; id < FX_MAX_BROKER_ID; id++) {
        if (f->epoch[id] >= 0 && !is_dead(id, dead, n_dead)) {
            assert_int_equal(fx_heartbeat(f, id), 0);
        }
    }
}

/* Keep every other broker alive until the dead ones are fenced; f->out is
 * left holding the step that fenced them. */
static void kill(struct ctl_fixture *f, const int32_t *dead, uint32_t n_dead)
{
    int i;

    heartbeat_living(f, NULL, 0);
    for (i = 0; i < 20; i++) {
        fx_advance(f, 500);
        if (f->out.n_fenced > 0) {
            assert_int_equal(f->out.n_fenced, n_dead);
            return;
        }
        heartbeat_living(f, dead, n_dead);
    }
    fail_msg("nobody was fenced");
}

/* Keep everybody but `dead` alive for ms. */
static void run_for(struct ctl_fixture *f,
                    uint64_t ms,
                    const int32_t *dead,
                    uint32_t n_dead)
{
    uint64_t t;

    for (t = 0; t < ms; t += 500) {
        fx_advance(f, 500);
        heartbeat_living(f, dead, n_dead);
    }
}

static int64_t four_brokers_one_partition(struct ctl_fixture *f)
{
    fx_join(f, 1, NULL);
    fx_join(f, 2, NULL);
    fx_join(f, 3, NULL);
    fx_join(f, 4, NULL);
    return fx_create(f, "t", 1, 3);
}

/* The same with min.insync.replicas 1, where a shrunk ISR leaves nobody
 * eligible but its own members. */
static int64_t four_brokers_min_isr_1(struct ctl_fixture *f)
{
    fx_join(f, 1, NULL);
    fx_join(f, 2, NULL);
    fx_join(f, 3, NULL);
    fx_join(f, 4, NULL);
    return fx_create_min_isr(f, "t", 1, 3, 1);
}

static void test_failover_to_first_live_isr_member(void **state)
{
    struct ctl_fixture *f = *state;
    int64_t t = four_brokers_one_partition(f);
    struct meta_partition p = *fx_part(f, t, 0);
    const int32_t a = p.replicas.ids[0];
    const int32_t b = p.replicas.ids[1];
    const int32_t c = p.replicas.ids[2];
    const int32_t isr_ac[] = {a, c};
    const int32_t only_c[] = {c};

    assert_int_equal(p.leader, a);
    /* b is alive but falls out of the ISR */
    assert_int_equal(fx_alter(f, a, t, 0, 0, 0, isr_ac, 2), 0);
    kill(f, &a, 1);
    p = *fx_part(f, t, 0);
    assert_false(fx_fenced(f, b));
    assert_int_equal(p.leader, c); /* not b: b is not in the ISR */
    assert_true(fx_ids_are(&p.isr, only_c, 1));
    assert_int_equal(p.leader_epoch, 1);
    assert_int_equal(p.partition_epoch, 2);
    assert_int_equal(f->out.n_records, 2);
    assert_int_equal(f->out.records[0].type, META_RECORD_PARTITION_CHANGE);
    assert_int_equal(f->out.records[1].type, META_RECORD_FENCE_BROKER);
    assert_int_equal(f->out.n_unclean, 0);
    fx_assert_replay_equal(f);
}

static void test_failover_follows_replica_order(void **state)
{
    struct ctl_fixture *f = *state;
    int64_t t = four_brokers_one_partition(f);
    struct meta_partition p = *fx_part(f, t, 0);
    const int32_t a = p.replicas.ids[0];
    const int32_t b = p.replicas.ids[1];
    const int32_t c = p.replicas.ids[2];
    const int32_t dead_ab[] = {a, b};
    const int32_t only_c[] = {c};

    kill(f, &a, 1);
    assert_int_equal(fx_part(f, t, 0)->leader, b);
    /* both remaining die together: one change, straight to c */
    fx_join(f, a, NULL);
    kill(f, dead_ab, 2);
    p = *fx_part(f, t, 0);
    assert_int_equal(p.leader, c);
    assert_true(fx_ids_are(&p.isr, only_c, 1));
    assert_int_equal(fx_count(f, META_RECORD_PARTITION_CHANGE), 1);
    assert_int_equal(p.leader_epoch, 2);
    fx_assert_replay_equal(f);
}

/* Everything a fenced broker led or followed changes in the step that
 * fences it, and the fence comes last. */
static void test_one_batch_per_fencing(void **state)
{
    struct ctl_fixture *f = *state;
    const int32_t dead = 2;
    int64_t t1;
    int64_t t2;
    uint32_t i;
    uint32_t n;

    fx_join(f, 1, NULL);
    fx_join(f, 2, NULL);
    fx_join(f, 3, NULL);
    t1 = fx_create(f, "a", 6, 3);
    t2 = fx_create(f, "b", 4, 2);
    kill(f, &dead, 1);
    n = f->out.n_records;
    assert_int_equal(f->out.records[n - 1].type, META_RECORD_FENCE_BROKER);
    assert_int_equal(fx_count(f, META_RECORD_PARTITION_CHANGE), n - 1);
    /* every partition with 2 in its ISR is in the batch */
    assert_true(n - 1 >= 6 + 2);
    for (i = 0; i < 6; i++) {
        assert_false(meta_ids_has(&fx_part(f, t1, (int32_t)i)->isr, 2));
        assert_int_not_equal(fx_part(f, t1, (int32_t)i)->leader, 2);
    }
    for (i = 0; i < 4; i++) {
        const struct meta_partition *p = fx_part(f, t2, (int32_t)i);
        assert_int_not_equal(p->leader, 2);
        assert_int_not_equal(p->leader, -1);
    }
    assert_int_equal(meta_image_broker(fx_image(f), 2)->n_led, 0);
    fx_assert_replay_equal(f);
}

/* min ISR 1: the ISR {a} is enough, so b and c are not eligible; a
 * fenced leaves the ISR empty and joins the ELR itself. */
static void test_sole_isr_member_fenced_leaves_no_leader(void **state)
{
    struct ctl_fixture *f = *state;
    int64_t t;
    int32_t a;
    struct meta_partition p;

    t = four_brokers_min_isr_1(f);
    a = fx_part(f, t, 0)->leader;
    assert_false(f->cfg.unclean_leader_election);
    assert_int_equal(fx_alter(f, a, t, 0, 0, 0, &a, 1), 0);
    assert_int_equal(fx_part(f, t, 0)->elr.n, 0);
    kill(f, &a, 1);
    p = *fx_part(f, t, 0);
    assert_int_equal(p.leader, -1);
    assert_int_equal(p.isr.n, 0);
    assert_true(fx_ids_are(&p.elr, &a, 1));
    assert_int_equal(p.leader_epoch, 1);
    assert_int_equal(p.partition_epoch, 2);
    assert_int_equal(f->out.n_unclean, 0);
    /* it comes back (same incarnation, caught up) and leads again */
    assert_int_equal(fx_heartbeat(f, a), 0);
    assert_int_equal(f->out.records[0].type, META_RECORD_UNFENCE_BROKER);
    assert_int_equal(f->out.records[1].type, META_RECORD_PARTITION_CHANGE);
    p = *fx_part(f, t, 0);
    assert_int_equal(p.leader, a);
    assert_int_equal(p.leader_epoch, 2);
    assert_true(fx_ids_are(&p.isr, &a, 1));
    assert_int_equal(p.elr.n, 0); /* ISR {a} is min ISR again */
    fx_assert_replay_equal(f);
}

/* Two ISR members fenced in the same step: both move to the ELR (either
 * has every committed record); the first back leads with an ISR of itself
 * and the other, still fenced, stays eligible. */
static void test_isr_kept_when_all_members_fenced(void **state)
{
    struct ctl_fixture *f = *state;
    int64_t t = four_brokers_one_partition(f);
    struct meta_partition p = *fx_part(f, t, 0);
    const int32_t ab[] = {p.replicas.ids[0], p.replicas.ids[1]};
    const int32_t b = p.replicas.ids[1];

    assert_int_equal(fx_alter(f, ab[0], t, 0, 0, 0, ab, 2), 0);
    assert_int_equal(fx_part(f, t, 0)->elr.n, 0); /* ISR {a, b} = min ISR */
    kill(f, ab, 2);
    p = *fx_part(f, t, 0);
    assert_int_equal(p.leader, -1);
    assert_int_equal(p.isr.n, 0);
    assert_true(fx_ids_are(&p.elr, ab, 2));
    assert_int_equal(fx_heartbeat(f, b), 0);
    p = *fx_part(f, t, 0);
    assert_int_equal(p.leader, b);
    assert_true(fx_ids_are(&p.isr, &b, 1));
    assert_true(fx_ids_are(&p.elr, ab, 1));
    fx_assert_replay_equal(f);
}

/* Brokers 1..4 with directory ids, one partition of RF 3 and min ISR 1. */
static int64_t four_brokers_with_dirs_min_isr_1(struct ctl_fixture *f)
{
    static const char *const dirs[] = {"", "d1", "d2", "d3", "d4"};
    int32_t id;

    for (id = 1; id <= 4; id++) {
        fx_register_dir(f, id, dirs[id], -1, NULL);
        assert_int_equal(fx_heartbeat(f, id), 0);
    }
    return fx_create_min_isr(f, "t", 1, 3, 1);
}

/* Unclean election runs only once neither the ISR nor the ELR holds
 * anybody (an ELR member that is merely down holds every committed
 * record and may come back), and never picks a replica whose data dir is
 * new: here A, the only eligible replica, comes back with a new one. */
static void test_unclean_election_when_enabled(void **state)
{
    struct ctl_fixture *f = *state;
    int64_t t;
    struct meta_partition p;
    int32_t a;
    int32_t b;
    int32_t bc[2];

    f->cfg.unclean_leader_election = true;
    fx_restart(f);
    /* min ISR 1: b and c leave the ISR without becoming eligible */
    t = four_brokers_with_dirs_min_isr_1(f);
    p = *fx_part(f, t, 0);
    a = p.replicas.ids[0];
    b = p.replicas.ids[1];
    bc[0] = b;
    bc[1] = p.replicas.ids[2];
    assert_int_equal(fx_alter(f, a, t, 0, 0, 0, &a, 1), 0);
    kill(f, &a, 1);
    p = *fx_part(f, t, 0);
    assert_int_equal(p.leader, -1); /* A is eligible, only down */
    assert_true(fx_ids_are(&p.elr, &a, 1));
    assert_int_equal(f->out.n_unclean, 0);
    /* A is back on an empty disk: nobody holds the committed records */
    fx_register_dir(f, a, "d-new", -1, "ack");
    assert_true(f->out.data_lost);
    p = *fx_part(f, t, 0);
    assert_int_equal(p.leader, b); /* first live replica that is not empty */
    assert_true(fx_ids_are(&p.isr, &b, 1));
    assert_int_equal(p.elr.n, 0);
    assert_int_equal(p.flags, META_PART_UNCLEAN);
    assert_int_equal(f->out.n_unclean, 1);
    assert_true(meta_partition_replica_empty(&p, a));
    assert_int_equal(fx_heartbeat(f, a), 0);
    assert_int_equal(fx_part(f, t, 0)->leader, b);
    /* the new leader's next ISR change clears the mark */
    assert_int_equal(
        fx_alter(f, b, t, 0, p.leader_epoch, p.partition_epoch, bc, 2), 0);
    assert_int_equal(fx_part(f, t, 0)->flags, 0);
    fx_assert_replay_equal(f);
}

/* A partition left leaderless (its only eligible replica came back on a
 * new disk) before unclean election was switched on gets a leader at the
 * first tick after the restart that switched it on, not at the next
 * rebalance check (300 s by default). */
static void test_leaderless_elected_at_first_tick_after_restart(void **state)
{
    struct ctl_fixture *f = *state;
    int64_t t = four_brokers_with_dirs_min_isr_1(f);
    const int32_t a = fx_part(f, t, 0)->leader;
    const int32_t b = fx_part(f, t, 0)->replicas.ids[1];

    assert_int_equal(fx_alter(f, a, t, 0, 0, 0, &a, 1), 0);
    kill(f, &a, 1);
    fx_register_dir(f, a, "d-new", -1, "ack");
    assert_int_equal(fx_heartbeat(f, a), 0);
    assert_int_equal(fx_part(f, t, 0)->leader, -1);
    assert_int_equal(fx_part(f, t, 0)->elr.n, 0);
    f->cfg.unclean_leader_election = true;
    f->cfg.rebalance_interval_ms = 300000;
    fx_restart(f);
    assert_int_equal(fx_advance(f, 0), 0);
    assert_int_equal(fx_part(f, t, 0)->leader, b); /* never a, empty */
    assert_int_equal(f->out.n_unclean, 1);
    fx_assert_replay_equal(f);
}

static void test_preferred_leader_rebalance(void **state)
{
    struct ctl_fixture *f = *state;
    struct meta_partition p;
    int64_t t;
    int32_t pref;
    int32_t i;
    uint64_t due;

    f->cfg.rebalance_interval_ms = 10000;
    fx_restart(f);
    t = four_brokers_one_partition(f);
    due = f->clock.now_ms + 10000;
    assert_int_equal(f->out.next_tick_ms, 1000 + 3001);
    pref = fx_part(f, t, 0)->replicas.ids[0];
    kill(f, &pref, 1);
    p = *fx_part(f, t, 0);
    assert_int_not_equal(p.leader, pref);
    /* back, but out of the ISR: no move */
    fx_join(f, pref, NULL);
    run_for(f, due - f->clock.now_ms, NULL, 0);
    assert_int_equal(fx_part(f, t, 0)->leader, p.leader);
    /* the leader lets it back into the ISR */
    p = *fx_part(f, t, 0);
    {
        int32_t all[3];
        for (i = 0; i < 3; i++) {
            all[i] = p.replicas.ids[i];
        }
        assert_int_equal(fx_alter(f, p.leader, t, 0, p.leader_epoch,
                                  p.partition_epoch, all, 3),
                         0);
    }
    assert_true(f->out.next_tick_ms <= due + 10000);
    run_for(f, 9500, NULL, 0);
    assert_int_not_equal(fx_part(f, t, 0)->leader, pref);
    fx_advance(f, 500);
    assert_int_equal(fx_count(f, META_RECORD_PARTITION_CHANGE), 1);
    assert_int_equal(fx_part(f, t, 0)->leader, pref);
    assert_int_equal(fx_part(f, t, 0)->leader_epoch, p.leader_epoch + 1);
    assert_int_equal(fx_part(f, t, 0)->isr.n, 3);
    fx_assert_replay_equal(f);
}

/* Leaders go back to preferred replicas, so they stay spread. */
static void test_rebalance_restores_spread(void **state)
{
    struct ctl_fixture *f = *state;
    const int32_t dead = 1;
    int64_t t;
    int32_t p;
    int32_t id;

    f->cfg.rebalance_interval_ms = 5000;
    fx_restart(f);
    fx_join(f, 1, NULL);
    fx_join(f, 2, NULL);
    fx_join(f, 3, NULL);
    t = fx_create(f, "spread", 6, 2);
    kill(f, &dead, 1);
    assert_int_equal(meta_image_broker(fx_image(f), 1)->n_led, 0);
    fx_join(f, 1, NULL);
    for (p = 0; p < 6; p++) { /* leaders add 1 back to the ISRs */
        const struct meta_partition *part = fx_part(f, t, p);
        int32_t all[2] = {part->replicas.ids[0], part->replicas.ids[1]};
        if (part->isr.n < 2) {
            assert_int_equal(fx_alter(f, part->leader, t, p, part->leader_epoch,
                                      part->partition_epoch, all, 2),
                             0);
        }
    }
    run_for(f, 6000, NULL, 0);
    for (id = 1; id <= 3; id++) {
        assert_int_equal(meta_image_broker(fx_image(f), id)->n_led, 2);
    }
    fx_assert_replay_equal(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_failover_to_first_live_isr_member,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_failover_follows_replica_order,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_one_batch_per_fencing, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(
            test_sole_isr_member_fenced_leaves_no_leader, fx_setup,
            fx_teardown),
        cmocka_unit_test_setup_teardown(test_isr_kept_when_all_members_fenced,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_unclean_election_when_enabled,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(
            test_leaderless_elected_at_first_tick_after_restart, fx_setup,
            fx_teardown),
        cmocka_unit_test_setup_teardown(test_preferred_leader_rebalance,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_rebalance_restores_spread,
                                        fx_setup, fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
