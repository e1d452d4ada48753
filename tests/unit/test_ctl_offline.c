/* SPDX-License-Identifier: Apache-2.0 */
/* Controller core on a fake clock: offline replicas. A broker lists the
 * replicas whose logs it took offline (I/O error, full disk, corrupt
 * range) in every heartbeat and in its registration. The step that first
 * sees one listed moves its leadership away and takes it out of the ISR,
 * as fencing would, while the broker stays unfenced and keeps its other
 * partitions; an AlterIsr that adds a listed replica is refused; once no
 * longer listed it may rejoin (and, when it is the only copy, lead). */
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

/* Heartbeat of id, caught up, listing n offline replicas. */
static int heartbeat_offline(struct ctl_fixture *f,
                             int32_t id,
                             const struct ctl_replica *offline,
                             uint32_t n)
{
    struct ctl_event ev = {.type = CTL_EV_BROKER_HEARTBEAT};

    ev.u.heartbeat.broker_id = id;
    ev.u.heartbeat.broker_epoch = f->epoch[id];
    ev.u.heartbeat.applied_offset = meta_image_end_offset(fx_image(f)) - 1;
    ev.u.heartbeat.offline = offline;
    ev.u.heartbeat.n_offline = n;
    return fx_step(f, &ev);
}

/* A, B, C; "t" and "u", one partition each on all three. */
static void three_brokers(struct ctl_fixture *f, int64_t *t, int64_t *u)
{
    fx_join(f, A, NULL);
    fx_join(f, B, NULL);
    fx_join(f, C, NULL);
    *t = fx_create_min_isr(f, "t", 1, 3, 2);
    *u = fx_create_min_isr(f, "u", 1, 3, 2);
}

static int32_t first_other(const struct meta_partition *p, int32_t not )
{
    uint32_t i;

    for (i = 0; i < p->replicas.n; i++) {
        if (p->replicas.ids[i] != not ) {
            return p->replicas.ids[i];
        }
    }
    return -1;
}

static void test_listed_replica_moves_in_one_heartbeat(void **state)
{
    struct ctl_fixture *f = *state;
    int64_t t;
    int64_t u;
    struct meta_partition before_u;
    struct ctl_replica off;
    int32_t lead;
    const struct meta_partition *p;

    three_brokers(f, &t, &u);
    lead = fx_part(f, t, 0)->leader;
    before_u = *fx_part(f, u, 0);
    off.topic_id = t;
    off.partition = 0;
    assert_int_equal(heartbeat_offline(f, lead, &off, 1), 0);
    assert_true(f->out.offline_changed);
    assert_int_equal(f->out.n_offline, 1);
    assert_int_equal(f->out.n_fenced, 0);
    assert_int_equal(fx_count(f, META_RECORD_PARTITION_CHANGE), 1);
    p = fx_part(f, t, 0);
    assert_int_not_equal(p->leader, lead);
    assert_int_equal(p->leader, first_other(p, lead));
    assert_false(meta_ids_has(&p->isr, lead));
    assert_int_equal(p->isr.n, 2);
    assert_int_equal(p->elr.n, 0); /* ISR 2 = min ISR */
    /* still in service, and its other partition is untouched */
    assert_false(fx_fenced(f, lead));
    assert_int_equal(fx_part(f, u, 0)->partition_epoch,
                     before_u.partition_epoch);
    assert_true(ctl_core_replica_offline(f->core, lead, t, 0));
    /* listing it again changes nothing */
    assert_int_equal(heartbeat_offline(f, lead, &off, 1), 0);
    assert_false(f->out.offline_changed);
    assert_int_equal(f->out.n_records, 0);
    fx_assert_replay_equal(f);
}

static void test_alter_isr_adding_listed_replica_refused(void **state)
{
    struct ctl_fixture *f = *state;
    int64_t t;
    int64_t u;
    struct ctl_replica off;
    const struct meta_partition *p;
    int32_t gone;
    int32_t all[3];

    three_brokers(f, &t, &u);
    gone = fx_part(f, t, 0)->leader;
    off.topic_id = t;
    off.partition = 0;
    assert_int_equal(heartbeat_offline(f, gone, &off, 1), 0);
    p = fx_part(f, t, 0);
    memcpy(all, p->replicas.ids, sizeof(all));
    assert_int_equal(fx_alter(f, p->leader, t, 0, p->leader_epoch,
                              p->partition_epoch, all, 3),
                     WEIR_EINVALID_REQUEST);
    assert_non_null(strstr(f->out.detail.msg, "offline"));
    /* no longer listed: an ordinary follower that caught up again */
    assert_int_equal(heartbeat_offline(f, gone, NULL, 0), 0);
    assert_true(f->out.offline_changed);
    assert_int_equal(f->out.n_records, 0);
    p = fx_part(f, t, 0);
    assert_int_equal(fx_alter(f, p->leader, t, 0, p->leader_epoch,
                              p->partition_epoch, all, 3),
                     0);
    assert_true(meta_ids_has(&fx_part(f, t, 0)->isr, gone));
    fx_assert_replay_equal(f);
}

/* The only replica goes offline: it may not lead, but it stays eligible
 * (there is no other copy) and leads again as soon as it is unlisted. */
static void test_only_copy_offline_then_back(void **state)
{
    struct ctl_fixture *f = *state;
    struct ctl_replica off;
    int64_t t;
    const struct meta_partition *p;

    fx_join(f, A, NULL);
    t = fx_create(f, "one", 1, 1);
    off.topic_id = t;
    off.partition = 0;
    assert_int_equal(heartbeat_offline(f, A, &off, 1), 0);
    p = fx_part(f, t, 0);
    assert_int_equal(p->leader, -1);
    assert_int_equal(p->isr.n, 0);
    assert_true(fx_ids_are(&p->elr, (const int32_t[]){A}, 1));
    assert_false(fx_fenced(f, A));
    assert_int_equal(heartbeat_offline(f, A, NULL, 0), 0);
    p = fx_part(f, t, 0);
    assert_int_equal(p->leader, A);
    assert_true(fx_ids_are(&p->isr, (const int32_t[]){A}, 1));
    fx_assert_replay_equal(f);
}

/* Listed at registration (a restart with a log still offline): once
 * unfenced, by the explicit catch-up event that carries no list, it may
 * rejoin the ISR of its other partitions but not of that one. */
static void test_registration_lists_offline(void **state)
{
    struct ctl_fixture *f = *state;
    struct ctl_event ev = {.type = CTL_EV_BROKER_REGISTER};
    struct ctl_replica off;
    int64_t t;
    int64_t u;
    const struct meta_partition *p;
    int32_t lead;
    int32_t all[3];

    three_brokers(f, &t, &u);
    lead = fx_part(f, t, 0)->leader;
    off.topic_id = t;
    off.partition = 0;
    ev.u.reg.broker_id = lead;
    ev.u.reg.host = "again";
    ev.u.reg.port = 9100;
    ev.u.reg.offline = &off;
    ev.u.reg.n_offline = 1;
    assert_int_equal(fx_step(f, &ev), 0);
    assert_true(f->out.offline_changed);
    f->epoch[lead] = f->out.broker_epoch;
    memset(&ev, 0, sizeof(ev));
    ev.type = CTL_EV_BROKER_CAUGHT_UP;
    ev.u.broker.broker_id = lead;
    ev.u.broker.broker_epoch = f->epoch[lead];
    assert_int_equal(fx_step(f, &ev), 0);
    assert_false(fx_fenced(f, lead));
    assert_true(ctl_core_replica_offline(f->core, lead, t, 0));
    p = fx_part(f, t, 0);
    assert_false(meta_ids_has(&p->isr, lead));
    memcpy(all, p->replicas.ids, sizeof(all));
    assert_int_equal(fx_alter(f, p->leader, t, 0, p->leader_epoch,
                              p->partition_epoch, all, 3),
                     WEIR_EINVALID_REQUEST);
    p = fx_part(f, u, 0);
    assert_false(meta_ids_has(&p->isr, lead));
    memcpy(all, p->replicas.ids, sizeof(all));
    assert_int_equal(fx_alter(f, p->leader, u, 0, p->leader_epoch,
                              p->partition_epoch, all, 3),
                     0);
    fx_assert_replay_equal(f);
}

/* The set is soft state: a restarted controller knows it again from the
 * next heartbeat, which lists the whole set. */
static void test_offline_relearned_after_controller_restart(void **state)
{
    struct ctl_fixture *f = *state;
    struct ctl_replica off;
    int64_t t;
    int64_t u;
    const struct meta_partition *p;
    int32_t gone;
    int32_t all[3];

    three_brokers(f, &t, &u);
    gone = fx_part(f, t, 0)->leader;
    off.topic_id = t;
    off.partition = 0;
    assert_int_equal(heartbeat_offline(f, gone, &off, 1), 0);
    fx_restart(f);
    assert_false(ctl_core_replica_offline(f->core, gone, t, 0));
    assert_int_equal(heartbeat_offline(f, gone, &off, 1), 0);
    assert_true(ctl_core_replica_offline(f->core, gone, t, 0));
    assert_int_equal(f->out.n_records, 0); /* already out of the ISR */
    p = fx_part(f, t, 0);
    memcpy(all, p->replicas.ids, sizeof(all));
    assert_int_equal(fx_alter(f, p->leader, t, 0, p->leader_epoch,
                              p->partition_epoch, all, 3),
                     WEIR_EINVALID_REQUEST);
}

static void test_too_many_offline_refused(void **state)
{
    struct ctl_fixture *f = *state;
    struct ctl_replica off = {7, 0};

    fx_join(f, A, NULL);
    assert_int_equal(heartbeat_offline(f, A, &off, CTL_MAX_OFFLINE + 1),
                     WEIR_EINVALID_REQUEST);
    assert_int_equal(f->out.n_records, 0);
    assert_false(ctl_core_replica_offline(f->core, A, 7, 0));
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, fx_teardown)
    const struct CMUnitTest tests[] = {
        T(test_listed_replica_moves_in_one_heartbeat),
        T(test_alter_isr_adding_listed_replica_refused),
        T(test_only_copy_offline_then_back),
        T(test_registration_lists_offline),
        T(test_offline_relearned_after_controller_restart),
        T(test_too_many_offline_refused),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
