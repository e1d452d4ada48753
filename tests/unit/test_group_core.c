/* SPDX-License-Identifier: Apache-2.0 */
/* Group core scenarios on a fake time line: joins, rebalances, syncs,
 * heartbeats, expiry, leaves, protocol choice, commit checks, restore. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/mem.h"
#include "tests/unit/test_group_fixture.h"

static int setup(void **state)
{
    struct gfx *f = test_malloc(sizeof(*f));

    gfx_init(f, NULL);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct gfx *f = *state;

    gfx_fini(f);
    test_free(f);
    return 0;
}

static void test_first_join_gets_id_and_leads(void **state)
{
    struct gfx *f = *state;
    const struct group_answer *a;
    uint64_t r;

    assert_int_equal(gfx_join(f, "", "c1"), 0);
    r = f->last_request;
    /* the rebalance completes at once, but the join waits for the record
     * holding generation 1, bounded by the rebalance timeout */
    assert_int_equal(f->out.n_answers, 0);
    assert_true(f->out.persist);
    assert_int_equal(gfx_state(f), GROUP_COMPLETING_REBALANCE);
    assert_int_equal(gfx_generation(f), 1);
    assert_int_equal(f->out.next_tick_ms, 5000);
    assert_int_equal(gfx_heartbeat(f, "c1-t1", 1), WEIR_EREBALANCE_IN_PROGRESS);
    assert_int_equal(gfx_sync(f, "c1-t1", 1, "c1-t1=p0"),
                     WEIR_EREBALANCE_IN_PROGRESS);
    assert_int_equal(gfx_persisted(f), 0);
    assert_int_equal(f->out.n_answers, 1);
    a = gfx_answer(f, r);
    assert_non_null(a);
    assert_int_equal(a->type, GROUP_EV_JOIN);
    assert_int_equal(a->error, 0);
    assert_string_equal(a->member_id, "c1-t1");
    assert_string_equal(a->leader_id, "c1-t1");
    assert_string_equal(a->protocol, "range");
    assert_int_equal(a->generation_id, 1);
    assert_int_equal(a->n_members, 1);
    assert_string_equal(a->members[0].member_id, "c1-t1");
    assert_string_equal(a->members[0].client_id, "c1");
    assert_string_equal(gfx_str(a->members[0].metadata), "c1:range");
    assert_false(f->out.persist);
    assert_int_equal(gfx_state(f), GROUP_COMPLETING_REBALANCE);
    assert_int_equal(f->out.next_tick_ms, 10000);

    /* the assignment too is answered once its record is committed */
    assert_int_equal(gfx_sync(f, "c1-t1", 1, "c1-t1=p0"), 0);
    r = f->last_request;
    assert_int_equal(f->out.n_answers, 0);
    assert_true(f->out.persist);
    assert_int_equal(gfx_state(f), GROUP_COMPLETING_REBALANCE);
    assert_int_equal(gfx_commit(f, "c1-t1", 1), WEIR_EREBALANCE_IN_PROGRESS);
    assert_int_equal(gfx_persisted(f), 0);
    a = gfx_answer(f, r);
    assert_non_null(a);
    assert_int_equal(a->type, GROUP_EV_SYNC);
    assert_int_equal(a->error, 0);
    assert_string_equal(gfx_str(a->assignment), "p0");
    assert_int_equal(gfx_state(f), GROUP_STABLE);
    assert_int_equal(gfx_commit(f, "c1-t1", 1), 0);
}

static void test_initial_delay_waits_for_more_members(void **state)
{
    struct gfx *f = *state;
    struct group_config cfg;
    uint64_t r1;
    uint64_t r2;
    const struct group_answer *a;

    gfx_fini(f);
    group_config_init(&cfg);
    cfg.initial_rebalance_delay_ms = 3000;
    gfx_init(f, &cfg);
    assert_int_equal(gfx_join(f, "", "c1"), 0);
    r1 = f->last_request;
    assert_int_equal(f->out.n_answers, 0);
    assert_int_equal(f->out.next_tick_ms, 3000);
    assert_int_equal(gfx_state(f), GROUP_PREPARING_REBALANCE);
    f->now_ms = 1000;
    assert_int_equal(gfx_join(f, "", "c2"), 0);
    r2 = f->last_request;
    assert_int_equal(f->out.n_answers, 0);
    assert_int_equal(gfx_advance(f, 1999), 0);
    assert_int_equal(f->out.n_answers, 0);
    assert_int_equal(gfx_advance(f, 1), 0);
    assert_int_equal(f->out.n_answers, 0);
    assert_int_equal(gfx_persisted(f), 0);
    assert_int_equal(f->out.n_answers, 2);
    a = gfx_answer(f, r1);
    assert_int_equal(a->generation_id, 1);
    assert_string_equal(a->leader_id, "c1-t1");
    assert_int_equal(a->n_members, 2);
    assert_string_equal(a->members[1].member_id, "c2-t2");
    assert_string_equal(gfx_str(a->members[1].metadata), "c2:range");
    a = gfx_answer(f, r2);
    assert_int_equal(a->error, 0);
    assert_string_equal(a->member_id, "c2-t2");
    assert_string_equal(a->leader_id, "c1-t1");
    assert_int_equal(a->n_members, 0);
    assert_null(a->members);
}

static void test_new_member_rebalances_stable_group(void **state)
{
    struct gfx *f = *state;
    const char *ids[2];
    const char *b;
    uint64_t rb;
    uint64_t ra;
    uint64_t sb;

    gfx_stable_group(f, 1, ids);
    b = gfx_new_member(f, "c2");
    rb = f->last_request;
    assert_int_equal(f->out.n_answers, 0);
    assert_int_equal(gfx_state(f), GROUP_PREPARING_REBALANCE);
    assert_int_equal(gfx_heartbeat(f, ids[0], 1), WEIR_EREBALANCE_IN_PROGRESS);
    assert_int_equal(gfx_join(f, ids[0], "c1"), 0);
    ra = f->last_request;
    assert_int_equal(f->out.n_answers, 0);
    assert_true(f->out.persist);
    assert_int_equal(gfx_persisted(f), 0);
    assert_int_equal(f->out.n_answers, 2);
    assert_int_equal(gfx_answer(f, ra)->generation_id, 2);
    assert_int_equal(gfx_answer(f, rb)->generation_id, 2);
    assert_int_equal(gfx_answer(f, ra)->n_members, 2);
    assert_int_equal(gfx_answer(f, rb)->n_members, 0);

    /* the follower's sync waits for the leader's */
    assert_int_equal(gfx_sync(f, b, 2, NULL), 0);
    sb = f->last_request;
    assert_int_equal(f->out.n_answers, 0);
    assert_int_equal(gfx_heartbeat(f, b, 2), 0);
    assert_int_equal(gfx_commit(f, b, 2), WEIR_EREBALANCE_IN_PROGRESS);
    assert_int_equal(gfx_sync(f, ids[0], 2, "c2-t2=B,c1-t1=A"), 0);
    assert_int_equal(f->out.n_answers, 0);
    assert_int_equal(gfx_heartbeat(f, b, 2), 0);
    assert_int_equal(gfx_commit(f, b, 2), WEIR_EREBALANCE_IN_PROGRESS);
    assert_int_equal(gfx_persisted(f), 0);
    assert_int_equal(f->out.n_answers, 2);
    assert_string_equal(gfx_str(gfx_answer(f, sb)->assignment), "B");
    assert_string_equal(gfx_str(gfx_answer(f, f->last_request)->assignment),
                        "A");
    assert_int_equal(gfx_state(f), GROUP_STABLE);
    assert_int_equal(gfx_heartbeat(f, b, 2), 0);
    /* a late sync in STABLE is answered at once */
    assert_int_equal(gfx_sync(f, b, 2, NULL), 0);
    assert_string_equal(gfx_str(gfx_answer(f, f->last_request)->assignment),
                        "B");
}

static void test_member_missing_rejoin_is_removed(void **state)
{
    struct gfx *f = *state;
    const char *ids[2];
    const struct group_answer *a;
    struct group_view v;
    uint64_t ra;
    uint64_t rc;

    gfx_stable_group(f, 2, ids); /* rebalance timeouts 5000 */
    f->now_ms = 1000;
    gfx_new_member(f, "c3");
    rc = f->last_request;
    assert_int_equal(f->out.next_tick_ms, 6000);
    assert_int_equal(gfx_join(f, ids[0], "c1"), 0);
    ra = f->last_request;
    f->now_ms = 4000;
    assert_int_equal(gfx_heartbeat(f, ids[1], 2), WEIR_EREBALANCE_IN_PROGRESS);
    assert_int_equal(gfx_advance(f, 1999), 0);
    assert_int_equal(f->out.n_answers, 0);
    assert_int_equal(gfx_advance(f, 1), 0);
    assert_int_equal(f->out.n_answers, 0);
    assert_int_equal(gfx_persisted(f), 0);
    assert_int_equal(f->out.n_answers, 2);
    a = gfx_answer(f, ra);
    assert_int_equal(a->generation_id, 3);
    assert_int_equal(a->n_members, 2);
    assert_non_null(gfx_answer(f, rc));
    group_core_describe(f->g, &v);
    assert_int_equal(v.n_members, 2);
    assert_int_equal(v.state, GROUP_COMPLETING_REBALANCE);
    assert_int_equal(gfx_heartbeat(f, ids[1], 3), WEIR_EUNKNOWN_MEMBER_ID);
}

static void test_wrong_generation_and_unknown_member(void **state)
{
    struct gfx *f = *state;
    const char *ids[2];

    gfx_stable_group(f, 2, ids);
    assert_int_equal(gfx_heartbeat(f, ids[1], 1), WEIR_EILLEGAL_GENERATION);
    assert_int_equal(gfx_heartbeat(f, ids[1], 3), WEIR_EILLEGAL_GENERATION);
    assert_int_equal(gfx_sync(f, ids[1], 1, NULL), WEIR_EILLEGAL_GENERATION);
    assert_int_equal(f->out.n_answers, 0);
    assert_int_equal(gfx_heartbeat(f, "nobody", 2), WEIR_EUNKNOWN_MEMBER_ID);
    assert_int_equal(gfx_sync(f, "nobody", 2, NULL), WEIR_EUNKNOWN_MEMBER_ID);
    assert_int_equal(gfx_join(f, "nobody", "c9"), WEIR_EUNKNOWN_MEMBER_ID);
    assert_int_equal(gfx_leave(f, "nobody"), WEIR_EUNKNOWN_MEMBER_ID);
    assert_int_equal(gfx_state(f), GROUP_STABLE);
}

static void test_session_expiry_rebalances(void **state)
{
    struct gfx *f = *state;
    const char *ids[2];
    const struct group_answer *a;
    uint64_t r;

    gfx_stable_group(f, 2, ids); /* sessions 10000 from 0 */
    assert_int_equal(f->out.next_tick_ms, 10000);
    f->now_ms = 6000;
    assert_int_equal(gfx_heartbeat(f, ids[0], 2), 0);
    assert_int_equal(f->out.next_tick_ms, 10000); /* ids[1] */
    assert_int_equal(gfx_advance(f, 3999), 0);
    assert_int_equal(gfx_state(f), GROUP_STABLE);
    assert_int_equal(gfx_advance(f, 1), 0);
    assert_int_equal(gfx_state(f), GROUP_PREPARING_REBALANCE);
    /* the rebalance deadline, 5000 from now, is due before ids[0]'s
     * session ends at 16000 */
    assert_int_equal(f->out.next_tick_ms, 15000);
    assert_int_equal(gfx_heartbeat(f, ids[0], 2), WEIR_EREBALANCE_IN_PROGRESS);
    assert_int_equal(gfx_join(f, ids[0], "c1"), 0);
    r = f->last_request;
    assert_null(gfx_answer(f, r));
    assert_int_equal(f->out.next_tick_ms, 15000); /* the record's deadline */
    assert_int_equal(gfx_persisted(f), 0);
    a = gfx_answer(f, r);
    assert_non_null(a);
    assert_int_equal(a->generation_id, 3);
    assert_int_equal(a->n_members, 1);
    assert_int_equal(f->out.next_tick_ms, 20000);
}

static void test_expiry_of_parked_sync_answers_it(void **state)
{
    struct gfx *f = *state;
    const char *ids[2];
    uint64_t s2;

    gfx_stable_group(f, 2, ids);
    assert_int_equal(gfx_join(f, ids[1], "c2"), 0);
    assert_int_equal(gfx_join(f, ids[0], "c1"), 0);
    assert_int_equal(gfx_state(f), GROUP_COMPLETING_REBALANCE);
    assert_int_equal(gfx_persisted(f), 0);
    assert_int_equal(gfx_sync(f, ids[1], 3, NULL), 0);
    s2 = f->last_request;
    /* the leader never syncs: its session ends, the follower's parked
     * sync is told to rejoin */
    f->now_ms = 5000;
    assert_int_equal(gfx_heartbeat(f, ids[1], 3), 0);
    assert_int_equal(gfx_advance(f, 5000), 0);
    assert_int_equal(f->out.n_answers, 1);
    assert_int_equal(gfx_answer(f, s2)->error, WEIR_EREBALANCE_IN_PROGRESS);
    assert_int_equal(gfx_state(f), GROUP_PREPARING_REBALANCE);
}

static void test_leave_answers_parked_join(void **state)
{
    struct gfx *f = *state;
    const char *ids[2];
    uint64_t r2;
    uint64_t r3;
    const char *c3;

    gfx_stable_group(f, 2, ids);
    c3 = gfx_new_member(f, "c3");
    r3 = f->last_request;
    assert_int_equal(gfx_join(f, ids[1], "c2"), 0);
    r2 = f->last_request;
    assert_int_equal(gfx_leave(f, ids[1]), 0);
    assert_int_equal(f->out.n_answers, 1);
    assert_int_equal(gfx_answer(f, r2)->error, WEIR_EUNKNOWN_MEMBER_ID);
    assert_int_equal(gfx_leave(f, ids[0]), 0);
    /* only c3 is left and it has joined: the rebalance completes, and is
     * answered once its record is committed */
    assert_int_equal(f->out.n_answers, 0);
    assert_int_equal(gfx_persisted(f), 0);
    assert_int_equal(f->out.n_answers, 1);
    assert_int_equal(gfx_answer(f, r3)->generation_id, 3);
    assert_string_equal(gfx_answer(f, r3)->leader_id, c3);
    assert_int_equal(gfx_leave(f, c3), 0);
    assert_int_equal(gfx_state(f), GROUP_EMPTY);
    assert_int_equal(gfx_generation(f), 4);
    assert_true(f->out.persist);
    assert_int_equal(f->out.next_tick_ms, UINT64_MAX);
}

static void test_protocol_is_leaders_first_shared(void **state)
{
    struct gfx *f = *state;
    struct group_config cfg;
    uint64_t r1;

    gfx_fini(f);
    group_config_init(&cfg);
    cfg.initial_rebalance_delay_ms = 100;
    gfx_init(f, &cfg);
    assert_int_equal(
        gfx_join_full(f, "", "c1", "consumer", "rr,range,sticky", 10000, 5000),
        0);
    r1 = f->last_request;
    assert_int_equal(
        gfx_join_full(f, "", "c2", "consumer", "sticky,range", 10000, 5000), 0);
    assert_int_equal(gfx_join_full(f, "", "c3", "consumer", "rr", 10000, 5000),
                     WEIR_EINCONSISTENT_GROUP_PROTOCOL);
    assert_int_equal(
        gfx_join_full(f, "", "c4", "connect", "range", 10000, 5000),
        WEIR_EINCONSISTENT_GROUP_PROTOCOL);
    assert_int_equal(gfx_join_full(f, "", "c5", "consumer", "", 10000, 5000),
                     WEIR_EINCONSISTENT_GROUP_PROTOCOL);
    assert_int_equal(gfx_advance(f, 100), 0);
    assert_int_equal(gfx_persisted(f), 0);
    assert_int_equal(f->out.n_answers, 2);
    assert_string_equal(gfx_answer(f, r1)->protocol, "range");
    assert_string_equal(gfx_str(gfx_answer(f, r1)->members[1].metadata),
                        "c2:range");
}

static void test_session_timeout_out_of_range(void **state)
{
    struct gfx *f = *state;
    uint64_t r;

    assert_int_equal(gfx_join_full(f, "", "c1", "consumer", "range", 999, 0),
                     WEIR_EINVALID_SESSION_TIMEOUT);
    assert_int_equal(gfx_join_full(f, "", "c1", "consumer", "range", 300001, 0),
                     WEIR_EINVALID_SESSION_TIMEOUT);
    assert_int_equal(f->out.n_answers, 0);
    assert_true(group_core_is_empty(f->g));
    assert_int_equal(gfx_join_full(f, "", "c1", "consumer", "range", 1000, 0),
                     0);
    r = f->last_request;
    assert_int_equal(gfx_persisted(f), 0);
    assert_int_equal(gfx_answer(f, r)->error, 0);
}

static void test_commit_checks(void **state)
{
    struct gfx *f = *state;
    const char *ids[2];

    assert_int_equal(gfx_commit(f, "", -1), 0);
    gfx_stable_group(f, 2, ids);
    assert_int_equal(gfx_commit(f, "", -1), WEIR_EUNKNOWN_MEMBER_ID);
    assert_int_equal(gfx_commit(f, ids[1], 2), 0);
    assert_int_equal(gfx_commit(f, ids[1], 1), WEIR_EILLEGAL_GENERATION);
    assert_int_equal(gfx_commit(f, "zombie", 2), WEIR_EUNKNOWN_MEMBER_ID);
    gfx_new_member(f, "c3");
    assert_int_equal(gfx_state(f), GROUP_PREPARING_REBALANCE);
    assert_int_equal(gfx_commit(f, ids[1], 2), 0);
    assert_int_equal(gfx_join(f, ids[0], "c1"), 0);
    assert_int_equal(gfx_join(f, ids[1], "c2"), 0);
    assert_int_equal(gfx_state(f), GROUP_COMPLETING_REBALANCE);
    assert_int_equal(gfx_commit(f, ids[1], 3), WEIR_EREBALANCE_IN_PROGRESS);
    assert_int_equal(gfx_persisted(f), 0);
    assert_int_equal(gfx_commit(f, ids[1], 3), WEIR_EREBALANCE_IN_PROGRESS);
    /* every session expires: the zombie's commit is refused */
    assert_int_equal(gfx_advance(f, 10000), 0);
    assert_int_equal(gfx_state(f), GROUP_EMPTY);
    assert_int_equal(gfx_commit(f, ids[1], 3), WEIR_EUNKNOWN_MEMBER_ID);
    assert_int_equal(gfx_commit(f, "", -1), 0);
}

static void test_describe_restore_round_trip(void **state)
{
    struct gfx *f = *state;
    struct group_core *g2;
    struct group_view v;
    struct group_view v2;
    const char *ids[3];
    size_t i;

    gfx_stable_group(f, 3, ids);
    group_core_describe(f->g, &v);
    assert_int_equal(v.state, GROUP_STABLE);
    assert_string_equal(v.protocol_type, "consumer");
    assert_string_equal(v.protocol, "range");
    assert_int_equal(v.generation_id, 3);
    assert_string_equal(v.leader_id, ids[0]);
    assert_int_equal(v.n_members, 3);
    assert_int_equal(group_core_new(&f->cfg, "g1", &g2), 0);
    assert_int_equal(group_core_restore(g2, &v, 50000), 0);
    assert_int_equal(group_core_check_invariants(g2), 0);
    group_core_describe(g2, &v2);
    assert_int_equal(v2.state, GROUP_STABLE);
    assert_string_equal(v2.protocol_type, v.protocol_type);
    assert_string_equal(v2.protocol, v.protocol);
    assert_int_equal(v2.generation_id, v.generation_id);
    assert_string_equal(v2.leader_id, v.leader_id);
    assert_int_equal(v2.n_members, v.n_members);
    for (i = 0; i < v.n_members; i++) {
        assert_string_equal(v2.members[i].member_id, v.members[i].member_id);
        assert_string_equal(v2.members[i].client_id, v.members[i].client_id);
        assert_string_equal(gfx_str(v2.members[i].metadata),
                            gfx_str(v.members[i].metadata));
        assert_string_equal(gfx_str(v2.members[i].assignment),
                            gfx_str(v.members[i].assignment));
        assert_int_equal(v2.members[i].session_timeout_ms, 10000);
    }
    /* restoring onto itself works too (the view points into the core) */
    assert_int_equal(group_core_restore(f->g, &v, 0), 0);
    group_core_free(f->g);
    f->g = g2;
    /* full sessions from 50000; members carry on in their generation */
    f->now_ms = 59999;
    assert_int_equal(gfx_heartbeat(f, ids[2], 3), 0);
    f->now_ms = 60000; /* the other two expire */
    assert_int_equal(gfx_heartbeat(f, ids[2], 3), WEIR_EREBALANCE_IN_PROGRESS);
    assert_int_equal(gfx_state(f), GROUP_PREPARING_REBALANCE);
    assert_int_equal(gfx_heartbeat(f, ids[0], 3), WEIR_EUNKNOWN_MEMBER_ID);
}

static void test_restore_refuses_bad_views(void **state)
{
    struct gfx *f = *state;
    struct group_member_view m[2] = {{.member_id = "a"}, {.member_id = "a"}};
    struct group_view v = {.state = GROUP_STABLE,
                           .protocol_type = "consumer",
                           .protocol = "range",
                           .generation_id = 4,
                           .leader_id = "a",
                           .members = m,
                           .n_members = 2};

    assert_int_equal(group_core_restore(f->g, &v, 0), WEIR_EINVALID_ARGUMENT);
    m[1].member_id = "b";
    v.leader_id = "c";
    assert_int_equal(group_core_restore(f->g, &v, 0), WEIR_EINVALID_ARGUMENT);
    v.leader_id = "b";
    assert_int_equal(group_core_restore(f->g, &v, 0), 0);
    assert_int_equal(gfx_generation(f), 4);
    v.n_members = 0;
    assert_int_equal(group_core_restore(f->g, &v, 0), 0);
    assert_int_equal(gfx_state(f), GROUP_EMPTY);
    assert_int_equal(gfx_generation(f), 4);
}

static void test_delete_only_when_empty(void **state)
{
    struct gfx *f = *state;
    const char *ids[1];

    gfx_stable_group(f, 1, ids);
    assert_false(group_core_delete(f->g));
    assert_int_equal(gfx_state(f), GROUP_STABLE);
    assert_int_equal(gfx_leave(f, ids[0]), 0);
    assert_int_equal(gfx_state(f), GROUP_EMPTY);
    assert_true(group_core_delete(f->g));
    assert_int_equal(gfx_state(f), GROUP_DEAD);
    assert_int_equal(gfx_join(f, "", "c1"), WEIR_ECOORDINATOR_NOT_AVAILABLE);
    assert_int_equal(gfx_commit(f, "", -1), WEIR_ECOORDINATOR_NOT_AVAILABLE);
    assert_int_equal(gfx_tick(f), 0);
    assert_int_equal(f->out.next_tick_ms, UINT64_MAX);
}

static void test_max_members_enforced(void **state)
{
    struct gfx *f = *state;
    struct group_config cfg;

    gfx_fini(f);
    group_config_init(&cfg);
    cfg.max_members = 2;
    gfx_init(f, &cfg);
    gfx_new_member(f, "c1");
    gfx_new_member(f, "c2");
    assert_int_equal(gfx_join(f, "", "c3"), WEIR_EPOLICY_VIOLATION);
    assert_int_equal(f->out.n_answers, 0);
}

static void test_repeated_join_answers_the_older(void **state)
{
    struct gfx *f = *state;
    const char *ids[2];
    uint64_t r1;

    gfx_stable_group(f, 2, ids);
    assert_int_equal(gfx_join(f, ids[1], "c2"), 0);
    r1 = f->last_request;
    assert_int_equal(gfx_join(f, ids[1], "c2"), 0);
    assert_int_equal(f->out.n_answers, 1);
    assert_int_equal(gfx_answer(f, r1)->error, WEIR_EREBALANCE_IN_PROGRESS);
}

/* Every allocation of a scenario fails in turn: the failed step leaves
 * the group exactly as it was, and the retry then succeeds. */
static void gfx_view_text(struct gfx *f, char *buf, size_t cap)
{
    struct group_view v;
    size_t i;
    size_t n;

    group_core_describe(f->g, &v);
    n = (size_t)snprintf(buf, cap, "%d %s %s %d %s |", (int)v.state,
                         v.protocol_type, v.protocol, (int)v.generation_id,
                         v.leader_id);
    for (i = 0; i < v.n_members && n < cap; i++) {
        n += (size_t)snprintf(
            buf + n, cap - n, " %s/%s/%s/%u", v.members[i].member_id,
            gfx_str(v.members[i].metadata), gfx_str(v.members[i].assignment),
            v.members[i].session_timeout_ms);
    }
}

static void test_out_of_memory_leaves_group_unchanged(void **state)
{
    struct gfx *f = *state;
    char before[2048];
    char after[2048];
    const char *ids[3];
    unsigned long n;
    int rv;
    int i;

    gfx_stable_group(f, 2, ids);
    for (i = 0; i < 8; i++) {
        struct group_event ev = {.type = GROUP_EV_JOIN};
        struct group_protocol p[2] = {
            {"range", {(const uint8_t *)"m", 1}},
            {"rr", {(const uint8_t *)"mm", 2}},
        };
        struct group_assignment as[3] = {
            {ids[0], {(const uint8_t *)"x", 1}},
            {ids[1], {(const uint8_t *)"y", 1}},
            {"c9-new", {(const uint8_t *)"z", 1}},
        };

        ev.now_ms = f->now_ms;
        ev.request_id = 900 + (uint64_t)i;
        ev.member_id = i == 0 ? "" : ids[i % 2];
        ev.u.join.client_id = "c9";
        ev.u.join.new_member_token = "new";
        ev.u.join.session_timeout_ms = 10000;
        ev.u.join.rebalance_timeout_ms = 1000;
        ev.u.join.protocol_type = "consumer";
        ev.u.join.protocols = p;
        ev.u.join.n_protocols = 2;
        if (i >= 4) {
            ev.type = GROUP_EV_SYNC;
            ev.generation_id = gfx_generation(f);
            ev.member_id = i == 4 ? ids[0] : ids[1];
            ev.u.sync.assignments = as;
            ev.u.sync.n_assignments = 3;
        }
        if (i == 3 || i == 7) { /* the joins', then the assignment's record */
            memset(&ev.u, 0, sizeof(ev.u));
            ev.type = GROUP_EV_PERSISTED;
            ev.u.persisted.seq = f->persist_seq;
        }
        for (n = 1;; n++) {
            gfx_view_text(f, before, sizeof(before));
            mem_fault_set(n, 0);
            rv = group_core_step(f->g, &ev, &f->out);
            mem_fault_set(0, 0);
            assert_int_equal(group_core_check_invariants(f->g), 0);
            if (rv == 0) {
                if (f->out.persist) {
                    f->persist_seq = f->out.persist_seq;
                }
                break;
            }
            assert_int_equal(rv, WEIR_ENOMEM);
            gfx_view_text(f, after, sizeof(after));
            assert_string_equal(before, after);
        }
        f->now_ms += 100;
    }
    assert_int_equal(gfx_generation(f), 3);
    assert_int_equal(gfx_state(f), GROUP_STABLE);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_first_join_gets_id_and_leads),
        T(test_initial_delay_waits_for_more_members),
        T(test_new_member_rebalances_stable_group),
        T(test_member_missing_rejoin_is_removed),
        T(test_wrong_generation_and_unknown_member),
        T(test_session_expiry_rebalances),
        T(test_expiry_of_parked_sync_answers_it),
        T(test_leave_answers_parked_join),
        T(test_protocol_is_leaders_first_shared),
        T(test_session_timeout_out_of_range),
        T(test_commit_checks),
        T(test_describe_restore_round_trip),
        T(test_restore_refuses_bad_views),
        T(test_delete_only_when_empty),
        T(test_max_members_enforced),
        T(test_repeated_join_answers_the_older),
        T(test_out_of_memory_leaves_group_unchanged),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
