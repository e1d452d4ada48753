/* SPDX-License-Identifier: Apache-2.0 */
/* Controller core on a fake clock: eligible leader replicas (KIP-966) and
 * what registrations say about a broker's data. Replicas that leave the
 * ISR while it is below min.insync.replicas stay eligible; the issue's
 * scenario (ISR {A,B,C}, min ISR 2; B and C fenced, A killed, A back with
 * a new data dir, B and C back) never elects A; an unclean stop leaves the
 * ELR unless the broker is its last member (an RF 1 partition comes back
 * after kill -9); a new data dir leaves it always; a clean stop, or a
 * broker that sends no directory id, keeps it; AlterIsr moves members in
 * and out of the ELR; all of it survives a controller restart. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tests/unit/test_ctl_fixture.h"

#define A 1
#define B 2
#define C 3

static const char *const dirs[] = {"", "dir-a", "dir-b", "dir-c"};

/* Register id with a directory id (NULL: none sent) and the previous
 * epoch it reports, saying no flush policy (as brokers from before that
 * field); returns the new epoch. */
static int64_t register_dir(struct ctl_fixture *f,
                            int32_t id,
                            const char *dir,
                            int64_t previous_epoch)
{
    return fx_register_dir(f, id, dir, previous_epoch, NULL);
}

/* Registered with its directory id and caught up: unfenced. */
static void join_dir(struct ctl_fixture *f, int32_t id)
{
    register_dir(f, id, dirs[id], -1);
    assert_int_equal(fx_heartbeat(f, id), 0);
    assert_false(fx_fenced(f, id));
}

static void
heartbeat_all_but(struct ctl_fixture *f, const int32_t *gone, uint32_t n_gone)
{
    int32_t id;
    uint32_t i;

    for (id = A; id <= C; id++) {
        bool skip = false;
        for (i = 0; i < n_gone; i++) {
            skip = skip || gone[i] == id;
        }
        if (!skip && f->epoch[id] >= 0) {
            assert_int_equal(fx_heartbeat(f, id), 0);
        }
    }
}

/* Silence the brokers in gone until the session timeout fences them;
 * f->out holds the step that did. */
static void fence(struct ctl_fixture *f, const int32_t *gone, uint32_t n)
{
    int i;

    heartbeat_all_but(f, NULL, 0);
    for (i = 0; i < 20; i++) {
        fx_advance(f, 500);
        if (f->out.n_fenced > 0) {
            assert_int_equal(f->out.n_fenced, n);
            return;
        }
        heartbeat_all_but(f, gone, n);
    }
    fail_msg("nobody was fenced");
}

/* A, B, C with directory ids; topic "t": one partition on A, B, C in that
 * order, led by A, min ISR 2. */
static int64_t three_brokers(struct ctl_fixture *f)
{
    int64_t t;

    join_dir(f, A);
    join_dir(f, B);
    join_dir(f, C);
    t = fx_create_min_isr(f, "t", 1, 3, 2);
    assert_int_equal(fx_part(f, t, 0)->replicas.ids[0], A);
    assert_int_equal(fx_part(f, t, 0)->leader, A);
    return t;
}

static void expect(const struct ctl_fixture *f,
                   int64_t t,
                   int32_t leader,
                   const int32_t *isr,
                   uint32_t n_isr,
                   const int32_t *elr,
                   uint32_t n_elr)
{
    const struct meta_partition *p = fx_part(f, t, 0);

    assert_int_equal(p->leader, leader);
    if (!fx_ids_are(&p->isr, isr, n_isr) || !fx_ids_are(&p->elr, elr, n_elr)) {
        fail_msg("ISR has %u, ELR %u members (want %u, %u)", p->isr.n, p->elr.n,
                 n_isr, n_elr);
    }
}

static const int32_t only_a[] = {A};
static const int32_t only_b[] = {B};
static const int32_t only_c[] = {C};
static const int32_t bc[] = {B, C};
static const int32_t abc[] = {A, B, C};

/* B and C stop past the session timeout in the same step: both join the
 * ELR, in one change, and A keeps leading with the ISR {A}. */
static void test_fenced_together_join_elr_in_one_change(void **state)
{
    struct ctl_fixture *f = *state;
    int64_t t = three_brokers(f);

    fence(f, bc, 2);
    assert_int_equal(fx_count(f, META_RECORD_PARTITION_CHANGE), 1);
    expect(f, t, A, only_a, 1, bc, 2);
    fx_assert_replay_equal(f);
}

/* The scenario, controller side: A (the ISR alone) is killed, its
 * data dir wiped, and it registers again; A must never lead, and once B
 * and C are back one of them does. */
static void test_wiped_broker_never_elected_over_elr(void **state)
{
    struct ctl_fixture *f = *state;
    int64_t t = three_brokers(f);

    fence(f, bc, 2);
    /* A dies too: the ISR empties and A joins the ELR (it had it all) */
    fx_advance(f, 3001);
    assert_true(fx_fenced(f, A));
    expect(f, t, -1, NULL, 0, abc, 3);
    /* A is back with an empty data dir (another directory id) */
    register_dir(f, A, "dir-a-new", -1);
    assert_true(f->out.data_lost);
    expect(f, t, -1, NULL, 0, bc, 2);
    assert_int_equal(fx_heartbeat(f, A), 0);
    assert_false(fx_fenced(f, A));
    expect(f, t, -1, NULL, 0, bc, 2); /* A may not lead */
    /* SIGCONT: B heartbeats first with its old epoch and leads */
    assert_int_equal(fx_heartbeat(f, B), 0);
    assert_false(fx_fenced(f, B));
    expect(f, t, B, only_b, 1, only_c, 1);
    assert_int_equal(f->out.n_unclean, 0);
    assert_int_equal(fx_heartbeat(f, C), 0);
    expect(f, t, B, only_b, 1, only_c, 1);
    fx_assert_replay_equal(f);
}

/* A simply dies (no restart): B or C leads once back, cleanly. */
static void test_isr_leader_dies_elr_member_leads(void **state)
{
    struct ctl_fixture *f = *state;
    int64_t t = three_brokers(f);
    const int32_t ab[] = {A, B};

    fence(f, bc, 2);
    fx_advance(f, 3001); /* A silent too */
    expect(f, t, -1, NULL, 0, abc, 3);
    assert_int_equal(fx_heartbeat(f, C), 0); /* C is back first */
    expect(f, t, C, only_c, 1, ab, 2);       /* A and B stay eligible */
    assert_int_equal(f->out.n_unclean, 0);
    fx_assert_replay_equal(f);
}

/* The ELR empties once the ISR is back at min ISR; a member that rejoins
 * leaves it; a shrink below min ISR puts the removed member in it. */
static void test_alter_isr_moves_members_in_and_out_of_elr(void **state)
{
    struct ctl_fixture *f = *state;
    int64_t t = three_brokers(f);
    const int32_t ab[] = {A, B};
    const struct meta_partition *p;

    fence(f, bc, 2);
    expect(f, t, A, only_a, 1, bc, 2);
    fx_heartbeat(f, B);
    fx_heartbeat(f, C);
    p = fx_part(f, t, 0);
    /* B caught up: the ISR {A, B} is min ISR, the ELR empties (C too) */
    assert_int_equal(
        fx_alter(f, A, t, 0, p->leader_epoch, p->partition_epoch, ab, 2), 0);
    expect(f, t, A, ab, 2, NULL, 0);
    /* A shrinks to itself: B, who left below min ISR, is eligible */
    p = fx_part(f, t, 0);
    assert_int_equal(
        fx_alter(f, A, t, 0, p->leader_epoch, p->partition_epoch, only_a, 1),
        0);
    expect(f, t, A, only_a, 1, only_b, 1);
    /* C rejoins: {A, C} is min ISR again, and B is no longer eligible */
    p = fx_part(f, t, 0);
    {
        const int32_t ac[] = {A, C};
        assert_int_equal(
            fx_alter(f, A, t, 0, p->leader_epoch, p->partition_epoch, ac, 2),
            0);
        expect(f, t, A, ac, 2, NULL, 0);
    }
    fx_assert_replay_equal(f);
}

/* min ISR 3: a member that rejoins leaves the ELR while the ISR is still
 * below min ISR, and the others stay. */
static void test_rejoining_member_leaves_elr(void **state)
{
    struct ctl_fixture *f = *state;
    int64_t t;
    const int32_t ab[] = {A, B};
    const struct meta_partition *p;

    join_dir(f, A);
    join_dir(f, B);
    join_dir(f, C);
    t = fx_create_min_isr(f, "t3", 1, 3, 3);
    p = fx_part(f, t, 0);
    assert_int_equal(fx_alter(f, A, t, 0, 0, 0, only_a, 1), 0);
    expect(f, t, A, only_a, 1, bc, 2);
    p = fx_part(f, t, 0);
    assert_int_equal(
        fx_alter(f, A, t, 0, p->leader_epoch, p->partition_epoch, ab, 2), 0);
    expect(f, t, A, ab, 2, only_c, 1);
    fx_assert_replay_equal(f);
}

/* An unclean stop (previous epoch -1) takes A out of the ELR while B and
 * C hold the committed records; a clean one (its last epoch) keeps it. */
static void test_unclean_stop_leaves_elr_clean_stop_keeps_it(void **state)
{
    struct ctl_fixture *f = *state;
    int64_t t = three_brokers(f);
    int64_t epoch_a;

    fence(f, bc, 2);
    fx_advance(f, 3001);
    expect(f, t, -1, NULL, 0, abc, 3);
    epoch_a = f->epoch[A];
    register_dir(f, A, dirs[A], epoch_a); /* clean: keeps its seat */
    assert_false(f->out.unclean_stop);
    assert_false(f->out.data_lost);
    expect(f, t, -1, NULL, 0, abc, 3);
    assert_int_equal(fx_heartbeat(f, A), 0);
    expect(f, t, A, only_a, 1, bc, 2); /* and leads again */
    /* killed again, back uncleanly: B and C have it all, A leaves */
    fx_advance(f, 3001);
    expect(f, t, -1, NULL, 0, abc, 3);
    register_dir(f, A, dirs[A], -1);
    assert_true(f->out.unclean_stop);
    expect(f, t, -1, NULL, 0, bc, 2);
    assert_int_equal(fx_heartbeat(f, A), 0);
    expect(f, t, -1, NULL, 0, bc, 2);
    fx_assert_replay_equal(f);
}

/* RF 1 after kill -9: the only copy may have lost unflushed records, but
 * it is all there is (and with the default flush policy nothing it
 * acknowledged is lost): it stays eligible and leads again. */
static void test_rf1_comes_back_after_unclean_stop(void **state)
{
    struct ctl_fixture *f = *state;
    int64_t t;

    join_dir(f, A);
    t = fx_create(f, "one", 1, 1);
    expect(f, t, A, only_a, 1, NULL, 0);
    fx_advance(f, 3001);
    expect(f, t, -1, NULL, 0, only_a, 1);
    register_dir(f, A, dirs[A], -1);
    assert_true(f->out.unclean_stop);
    expect(f, t, -1, NULL, 0, only_a, 1);
    assert_int_equal(fx_heartbeat(f, A), 0);
    expect(f, t, A, only_a, 1, NULL, 0);
    fx_assert_replay_equal(f);
}

/* A new data dir takes the broker out of every ISR and ELR even when it
 * is the last member: its partition stays without a leader. */
static void test_wiped_last_member_strands_partition(void **state)
{
    struct ctl_fixture *f = *state;
    int64_t t;

    join_dir(f, A);
    t = fx_create(f, "one", 1, 1);
    /* a fast restart: registers again before it was fenced */
    register_dir(f, A, "dir-a-2", -1);
    assert_true(f->out.data_lost);
    expect(f, t, -1, NULL, 0, NULL, 0);
    assert_int_equal(fx_heartbeat(f, A), 0);
    expect(f, t, -1, NULL, 0, NULL, 0);
    /* and stays so across a controller restart */
    fx_restart(f);
    assert_int_equal(fx_heartbeat(f, A), 0);
    expect(f, t, -1, NULL, 0, NULL, 0);
    assert_string_equal(meta_image_broker(fx_image(f), A)->directory_id,
                        "dir-a-2");
}

/* A broker that sends no directory id (before brokers send one) says
 * nothing about its data: it keeps its ELR seat, as before. */
static void test_no_directory_id_changes_nothing(void **state)
{
    struct ctl_fixture *f = *state;
    int64_t t = three_brokers(f);

    fence(f, bc, 2);
    fx_advance(f, 3001);
    register_dir(f, A, NULL, 0);
    assert_false(f->out.unclean_stop);
    assert_false(f->out.data_lost);
    expect(f, t, -1, NULL, 0, abc, 3);
    /* and a later registration with an id is not taken for a new dir */
    register_dir(f, A, "dir-a-3", -1);
    assert_false(f->out.data_lost);
    assert_true(f->out.unclean_stop);
    expect(f, t, -1, NULL, 0, bc, 2);
}

/* The ELR and directory ids are in the log: a restarted controller (from
 * the snapshot or from the log) elects the same way. */
static void test_elr_survives_controller_restart(void **state)
{
    struct ctl_fixture *f = *state;
    int64_t t = three_brokers(f);

    fence(f, bc, 2);
    fx_advance(f, 3001);
    fx_restart_from_log(f);
    expect(f, t, -1, NULL, 0, abc, 3);
    fx_restart(f);
    expect(f, t, -1, NULL, 0, abc, 3);
    register_dir(f, A, "dir-a-new", -1);
    expect(f, t, -1, NULL, 0, bc, 2);
    assert_int_equal(fx_heartbeat(f, A), 0);
    assert_int_equal(fx_heartbeat(f, C), 0);
    expect(f, t, C, only_c, 1, only_b, 1);
}

/* Unclean election is on, all three are down (the ELR is {A, B, C}) and
 * A comes back with a new (empty) data dir. B and C are merely down and
 * hold every committed record: no unclean election runs while they are
 * eligible, and A is never elected; B leads, cleanly, once back. (Before,
 * A led uncleanly with an empty log.) */
static void test_unclean_election_waits_for_elr_and_skips_wiped(void **state)
{
    struct ctl_fixture *f = *state;
    int64_t t = three_brokers(f);

    fence(f, abc, 3);
    expect(f, t, -1, NULL, 0, abc, 3);
    f->cfg.unclean_leader_election = true;
    fx_restart(f);
    register_dir(f, A, "dir-a-new", -1);
    assert_true(f->out.data_lost);
    expect(f, t, -1, NULL, 0, bc, 2);
    assert_int_equal(fx_heartbeat(f, A), 0);
    assert_false(fx_fenced(f, A));
    expect(f, t, -1, NULL, 0, bc, 2);
    assert_int_equal(f->out.n_unclean, 0);
    fx_restart(f); /* the first tick after a restart elects too */
    assert_int_equal(fx_advance(f, 0), 0);
    expect(f, t, -1, NULL, 0, bc, 2);
    assert_int_equal(fx_heartbeat(f, B), 0);
    expect(f, t, B, only_b, 1, only_c, 1);
    assert_int_equal(f->out.n_unclean, 0);
    fx_assert_replay_equal(f);
}

/* All three lose power; B and C come back uncleanly, then A with a new
 * disk. Under flush policy ack (the brokers' default, said at
 * registration) an unclean stop loses nothing acknowledged, so B and C
 * stay eligible whatever the order, and B leads. (Before, each left the
 * ELR while another member remained, A's wipe took the last one out, and
 * the partition had no leader for ever.) */
static void test_power_loss_under_flush_ack_keeps_elr(void **state)
{
    struct ctl_fixture *f = *state;
    int64_t t = three_brokers(f);

    fence(f, abc, 3);
    expect(f, t, -1, NULL, 0, abc, 3);
    fx_register_dir(f, B, dirs[B], -1, "ack");
    assert_true(f->out.unclean_stop);
    fx_register_dir(f, C, dirs[C], -1, "ack");
    fx_register_dir(f, A, "dir-a-new", -1, "ack");
    assert_true(f->out.data_lost);
    expect(f, t, -1, NULL, 0, bc, 2);
    assert_int_equal(fx_heartbeat(f, B), 0);
    assert_int_equal(fx_heartbeat(f, C), 0);
    assert_int_equal(fx_heartbeat(f, A), 0);
    expect(f, t, B, only_b, 1, only_c, 1);
    assert_int_equal(f->out.n_unclean, 0);
    fx_assert_replay_equal(f);
}

/* The same power loss with a broker default other than ack: B and C may
 * lack records they had not flushed, so they leave the ELR, and with A's
 * disk new nobody is eligible. Unclean election (turned on by restarting
 * the controller) elects at its first tick, and never A, whose data is
 * gone, though A is first in replica order: the fact survives the
 * restart (REPLICAS_EMPTY in the snapshot). A topic whose own
 * flush.policy is ack keeps B and C eligible under the same brokers. */
static void
test_power_loss_without_ack_elects_uncleanly_never_wiped(void **state)
{
    struct ctl_fixture *f = *state;
    int64_t t = three_brokers(f);
    struct ctl_event ev = {.type = CTL_EV_CREATE_TOPIC};
    struct ctl_kv kv[2] = {{"min.insync.replicas", "2"},
                           {"flush.policy", "ack"}};
    const struct meta_partition *p;
    int64_t acked;

    ev.u.create.name = "acked";
    ev.u.create.partitions = 1;
    ev.u.create.replication_factor = 3;
    ev.u.create.n_configs = 2;
    ev.u.create.configs = kv;
    assert_int_equal(fx_step(f, &ev), 0);
    acked = f->out.topic_id;
    fence(f, abc, 3);
    expect(f, t, -1, NULL, 0, abc, 3);
    fx_register_dir(f, B, dirs[B], -1, "interval");
    fx_register_dir(f, C, dirs[C], -1, "interval");
    fx_register_dir(f, A, "dir-a-new", -1, "interval");
    expect(f, t, -1, NULL, 0, NULL, 0);
    p = fx_part(f, acked, 0);
    assert_true(fx_ids_are(&p->elr, bc, 2));
    fx_heartbeat(f, A);
    fx_heartbeat(f, B);
    fx_heartbeat(f, C);
    expect(f, t, -1, NULL, 0, NULL, 0);
    assert_int_equal(fx_part(f, acked, 0)->leader, B);
    f->cfg.unclean_leader_election = true;
    fx_restart(f);
    assert_int_equal(fx_advance(f, 0), 0);
    expect(f, t, B, only_b, 1, NULL, 0);
    assert_int_equal(fx_part(f, t, 0)->flags, META_PART_UNCLEAN);
    assert_int_equal(f->out.n_unclean, 1);
    fx_assert_replay_equal(f);
}

/* A clean restart whose first RegisterBroker answer is lost: the retry
 * carries the same previous epoch, but the first one was applied and the
 * epoch moved on. The retry is judged clean too (before, it was taken for
 * an unclean stop and A left the ELR). A running broker that registers
 * again sends the epoch it holds: clean. A later -1 is unclean again. */
static void test_retried_clean_registration_stays_clean(void **state)
{
    struct ctl_fixture *f = *state;
    int64_t t = three_brokers(f);
    int64_t epoch_a;
    int64_t held;

    fence(f, abc, 3);
    epoch_a = f->epoch[A];
    held = register_dir(f, A, dirs[A], epoch_a);
    assert_false(f->out.unclean_stop);
    register_dir(f, A, dirs[A], epoch_a); /* the retry */
    assert_false(f->out.unclean_stop);
    expect(f, t, -1, NULL, 0, abc, 3);
    /* the running broker (it holds the retry's epoch) registers again */
    held = f->epoch[A];
    register_dir(f, A, dirs[A], held);
    assert_false(f->out.unclean_stop);
    expect(f, t, -1, NULL, 0, abc, 3);
    register_dir(f, A, dirs[A], -1);
    assert_true(f->out.unclean_stop);
    expect(f, t, -1, NULL, 0, bc, 2);
    fx_assert_replay_equal(f);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, fx_teardown)
    const struct CMUnitTest tests[] = {
        T(test_fenced_together_join_elr_in_one_change),
        T(test_wiped_broker_never_elected_over_elr),
        T(test_isr_leader_dies_elr_member_leads),
        T(test_alter_isr_moves_members_in_and_out_of_elr),
        T(test_rejoining_member_leaves_elr),
        T(test_unclean_stop_leaves_elr_clean_stop_keeps_it),
        T(test_rf1_comes_back_after_unclean_stop),
        T(test_wiped_last_member_strands_partition),
        T(test_no_directory_id_changes_nothing),
        T(test_elr_survives_controller_restart),
        T(test_unclean_election_waits_for_elr_and_skips_wiped),
        T(test_power_loss_under_flush_ack_keeps_elr),
        T(test_power_loss_without_ack_elects_uncleanly_never_wiped),
        T(test_retried_clean_registration_stays_clean),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
