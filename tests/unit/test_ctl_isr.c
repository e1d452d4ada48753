/* SPDX-License-Identifier: Apache-2.0 */
/* Controller core, ISR changes by compare-and-set: accepted only from the
 * current leader with the current leader and partition epochs; stale,
 * future and malformed proposals are refused with the documented codes,
 * and the answer always carries the partition's current state. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tests/unit/test_ctl_fixture.h"

struct isr_case {
    struct ctl_fixture *f;
    int64_t t;
    int32_t a, b, c; /* replicas in order; a leads */
};

static void setup_case(struct ctl_fixture *f, struct isr_case *k)
{
    const struct meta_partition *p;

    fx_join(f, 1, NULL);
    fx_join(f, 2, NULL);
    fx_join(f, 3, NULL);
    k->f = f;
    k->t = fx_create(f, "isr", 1, 3);
    p = fx_part(f, k->t, 0);
    k->a = p->replicas.ids[0];
    k->b = p->replicas.ids[1];
    k->c = p->replicas.ids[2];
    assert_int_equal(p->leader, k->a);
}

static void test_leader_shrinks_and_expands(void **state)
{
    struct ctl_fixture *f = *state;
    struct isr_case k;
    int32_t ab[2];
    int32_t cba[3];

    setup_case(f, &k);
    ab[0] = k.a;
    ab[1] = k.b;
    assert_int_equal(fx_alter(f, k.a, k.t, 0, 0, 0, ab, 2), 0);
    assert_int_equal(f->out.n_records, 1);
    assert_int_equal(f->out.records[0].type, META_RECORD_PARTITION_CHANGE);
    assert_true(fx_ids_are(&fx_part(f, k.t, 0)->isr, ab, 2));
    assert_int_equal(f->out.partition_epoch, 1);
    assert_int_equal(f->out.leader_epoch, 0); /* same leader, same epoch */
    assert_true(fx_ids_are(&f->out.isr, ab, 2));
    /* any order in, replica order stored */
    cba[0] = k.c;
    cba[1] = k.b;
    cba[2] = k.a;
    assert_int_equal(fx_alter(f, k.a, k.t, 0, 0, 1, cba, 3), 0);
    assert_int_equal(fx_part(f, k.t, 0)->isr.ids[0], k.a);
    assert_int_equal(fx_part(f, k.t, 0)->isr.ids[2], k.c);
    assert_int_equal(f->out.partition_epoch, 2);
    /* the same ISR again changes nothing and is no error */
    assert_int_equal(fx_alter(f, k.a, k.t, 0, 0, 2, cba, 3), 0);
    assert_int_equal(f->out.n_records, 0);
    assert_int_equal(f->out.partition_epoch, 2);
    fx_assert_replay_equal(f);
}

static void test_stale_and_future_epochs_are_refused(void **state)
{
    struct ctl_fixture *f = *state;
    struct isr_case k;
    int32_t ab[2];
    int64_t end;

    setup_case(f, &k);
    ab[0] = k.a;
    ab[1] = k.b;
    assert_int_equal(fx_alter(f, k.a, k.t, 0, 0, 0, ab, 2), 0); /* pe 1 */
    end = meta_image_end_offset(fx_image(f));
    /* old partition epoch: the proposal was based on an older ISR */
    assert_int_equal(fx_alter(f, k.a, k.t, 0, 0, 0, &k.a, 1),
                     WEIR_EFENCED_LEADER_EPOCH);
    assert_int_equal(f->out.partition_epoch, 1);
    assert_true(fx_ids_are(&f->out.isr, ab, 2));
    /* partition epoch from the future */
    assert_int_equal(fx_alter(f, k.a, k.t, 0, 0, 2, &k.a, 1),
                     WEIR_EINVALID_REQUEST);
    /* leader epoch from the future */
    assert_int_equal(fx_alter(f, k.a, k.t, 0, 1, 1, &k.a, 1),
                     WEIR_EUNKNOWN_LEADER_EPOCH);
    assert_int_equal(meta_image_end_offset(fx_image(f)), end);
    assert_true(fx_ids_are(&fx_part(f, k.t, 0)->isr, ab, 2));
}

static void test_only_the_leader_may_propose(void **state)
{
    struct ctl_fixture *f = *state;
    struct isr_case k;
    int32_t bc[2];

    setup_case(f, &k);
    bc[0] = k.b;
    bc[1] = k.c;
    /* current epochs, but b does not lead */
    assert_int_equal(fx_alter(f, k.b, k.t, 0, 0, 0, bc, 2), WEIR_ENOT_LEADER);
    assert_int_equal(fx_part(f, k.t, 0)->isr.n, 3);
    /* a registration that is not current */
    f->epoch[k.a] += 1000;
    assert_int_equal(fx_alter(f, k.a, k.t, 0, 0, 0, &k.a, 1), WEIR_ENOT_FOUND);
    f->epoch[k.a] -= 1000;
    assert_int_equal(fx_alter(f, 9, k.t, 0, 0, 0, &k.a, 1), WEIR_ENOT_FOUND);
    /* no such partition or topic */
    assert_int_equal(fx_alter(f, k.a, k.t, 1, 0, 0, &k.a, 1),
                     WEIR_EUNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(f->out.partition_epoch, -1);
    assert_int_equal(fx_alter(f, k.a, k.t + 1, 0, 0, 0, &k.a, 1),
                     WEIR_EUNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(fx_alter(f, k.a, k.t, -1, 0, 0, &k.a, 1),
                     WEIR_EUNKNOWN_TOPIC_OR_PARTITION);
}

/* The leader is deposed (fenced, then back): with its old epochs it can
 * neither shrink the ISR to itself nor change anything else. */
static void test_deposed_leader_cannot_shrink_to_itself(void **state)
{
    struct ctl_fixture *f = *state;
    struct isr_case k;
    const struct meta_partition *p;
    int32_t others[2];
    int i;

    setup_case(f, &k);
    others[0] = k.b;
    others[1] = k.c;
    for (i = 0; i < 7; i++) {
        fx_advance(f, 500);
        fx_heartbeat_all(f, others, 2);
    }
    assert_true(fx_fenced(f, k.a));
    assert_int_equal(fx_part(f, k.t, 0)->leader, k.b);
    assert_int_equal(fx_heartbeat(f, k.a), 0); /* back, unfenced */
    assert_false(fx_fenced(f, k.a));
    assert_int_equal(fx_alter(f, k.a, k.t, 0, 0, 0, &k.a, 1),
                     WEIR_EFENCED_LEADER_EPOCH);
    assert_int_equal(f->out.leader_epoch, 1);
    /* even with the partition epoch guessed right */
    assert_int_equal(fx_alter(f, k.a, k.t, 0, 0, 1, &k.a, 1),
                     WEIR_EFENCED_LEADER_EPOCH);
    /* and with the leader epoch guessed right it still does not lead */
    assert_int_equal(fx_alter(f, k.a, k.t, 0, 1, 1, &k.a, 1), WEIR_ENOT_LEADER);
    p = fx_part(f, k.t, 0);
    assert_int_equal(p->leader, k.b);
    assert_true(fx_ids_are(&p->isr, others, 2));
}

/* The controller changed the ISR behind the leader's back (a follower
 * was fenced): the leader's next proposal fails until it has caught up. */
static void test_proposal_after_controller_change_must_retry(void **state)
{
    struct ctl_fixture *f = *state;
    struct isr_case k;
    int32_t live[2];
    int32_t all[3];
    const struct meta_partition *p;
    int i;

    setup_case(f, &k);
    live[0] = k.a;
    live[1] = k.b;
    for (i = 0; i < 7; i++) {
        fx_advance(f, 500);
        fx_heartbeat_all(f, live, 2);
    }
    assert_true(fx_fenced(f, k.c));
    p = fx_part(f, k.t, 0);
    assert_int_equal(p->leader_epoch, 0); /* the leader did not change */
    assert_int_equal(p->partition_epoch, 1);
    all[0] = k.a;
    all[1] = k.b;
    all[2] = k.c;
    /* the leader still thinks c is in the ISR and drops b */
    assert_int_equal(fx_alter(f, k.a, k.t, 0, 0, 0, (int32_t[]){k.a, k.c}, 2),
                     WEIR_EFENCED_LEADER_EPOCH);
    /* with the current epoch, adding fenced c is refused */
    assert_int_equal(fx_alter(f, k.a, k.t, 0, 0, 1, all, 3),
                     WEIR_EINVALID_REQUEST);
    assert_non_null(strstr(f->out.detail.msg, "fenced"));
    /* once c is back it may join */
    assert_int_equal(fx_heartbeat(f, k.c), 0);
    assert_int_equal(fx_alter(f, k.a, k.t, 0, 0, 1, all, 3), 0);
    assert_int_equal(fx_part(f, k.t, 0)->isr.n, 3);
    fx_assert_replay_equal(f);
}

static void test_malformed_isr_is_refused(void **state)
{
    struct ctl_fixture *f = *state;
    struct isr_case k;
    int32_t ids[META_MAX_REPLICAS + 1];

    setup_case(f, &k);
    assert_int_equal(fx_alter(f, k.a, k.t, 0, 0, 0, ids, 0),
                     WEIR_EINVALID_REQUEST); /* empty */
    ids[0] = k.a;
    ids[1] = k.a;
    assert_int_equal(fx_alter(f, k.a, k.t, 0, 0, 0, ids, 2),
                     WEIR_EINVALID_REQUEST); /* duplicate */
    ids[1] = 7;
    assert_int_equal(fx_alter(f, k.a, k.t, 0, 0, 0, ids, 2),
                     WEIR_EINVALID_REQUEST); /* not a replica */
    ids[0] = k.b;
    ids[1] = k.c;
    assert_int_equal(fx_alter(f, k.a, k.t, 0, 0, 0, ids, 2),
                     WEIR_EINVALID_REQUEST); /* without the leader */
    assert_non_null(strstr(f->out.detail.msg, "leader"));
    {
        struct ctl_event ev = {.type = CTL_EV_ALTER_ISR};
        ev.u.alter_isr.broker_id = k.a;
        ev.u.alter_isr.broker_epoch = f->epoch[k.a];
        ev.u.alter_isr.topic_id = k.t;
        ev.u.alter_isr.isr.n = META_MAX_REPLICAS + 1; /* too many */
        assert_int_equal(fx_step(f, &ev), WEIR_EINVALID_REQUEST);
    }
    assert_int_equal(fx_part(f, k.t, 0)->partition_epoch, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_leader_shrinks_and_expands,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(
            test_stale_and_future_epochs_are_refused, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_only_the_leader_may_propose,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(
            test_deposed_leader_cannot_shrink_to_itself, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(
            test_proposal_after_controller_change_must_retry, fx_setup,
            fx_teardown),
        cmocka_unit_test_setup_teardown(test_malformed_isr_is_refused, fx_setup,
                                        fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
