/* SPDX-License-Identifier: Apache-2.0 */
/* The consumer group membership core (client/cgrp.c) in virtual time:
 * each test plays the coordinator by hand, feeding replies as events and
 * checking the requests and actions the core asks for. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "client/cgrp.h"

struct fx {
    struct cgrp cg;
    struct cgrp_actions a;
    uint64_t now;
};

static int fx_setup(void **state)
{
    struct fx *f = test_malloc(sizeof(*f));
    struct cgrp_config cfg = {
        .session_timeout_ms = 10000,
        .heartbeat_interval_ms = 3000,
        .rebalance_timeout_ms = 30000,
        .auto_commit = true,
        .auto_commit_interval_ms = 5000,
        .retry_backoff_ms = 100,
        .retry_backoff_max_ms = 1000,
    };

    memset(f, 0, sizeof(*f));
    cgrp_init(&f->cg, &cfg);
    f->now = 1000;
    *state = f;
    return 0;
}

static int fx_teardown(void **state)
{
    struct fx *f = *state;

    cgrp_fini(&f->cg);
    test_free(f);
    return 0;
}

static void fx_event(struct fx *f, enum cgrp_event_type type)
{
    struct cgrp_event ev;

    memset(&ev, 0, sizeof(ev));
    ev.type = type;
    ev.now_ms = f->now;
    assert_int_equal(cgrp_step(&f->cg, &ev, &f->a), 0);
}

static void fx_tick(struct fx *f, uint64_t advance_ms)
{
    f->now += advance_ms;
    fx_event(f, CGRP_EV_TICK);
}

static void fx_reply(struct fx *f, enum cgrp_req req, int err)
{
    struct cgrp_event ev;

    memset(&ev, 0, sizeof(ev));
    ev.type = CGRP_EV_REPLY;
    ev.now_ms = f->now;
    ev.reply.req = req;
    ev.reply.err = err;
    ev.reply.host = "127.0.0.1";
    ev.reply.port = 9092;
    assert_int_equal(cgrp_step(&f->cg, &ev, &f->a), 0);
}

static void fx_join_ok(struct fx *f, int32_t generation)
{
    struct cgrp_event ev;

    memset(&ev, 0, sizeof(ev));
    ev.type = CGRP_EV_REPLY;
    ev.now_ms = f->now;
    ev.reply.req = CGRP_REQ_JOIN;
    ev.reply.generation = generation;
    ev.reply.member_id = "m-1";
    ev.reply.leader_id = "m-1";
    ev.reply.protocol = "range";
    assert_int_equal(cgrp_step(&f->cg, &ev, &f->a), 0);
}

static void fx_sync_ok(struct fx *f)
{
    struct cgrp_tp tps[2] = {{"t", 0}, {"t", 3}};
    struct cgrp_event ev;

    memset(&ev, 0, sizeof(ev));
    ev.type = CGRP_EV_REPLY;
    ev.now_ms = f->now;
    ev.reply.req = CGRP_REQ_SYNC;
    ev.reply.tps = tps;
    ev.reply.n_tps = 2;
    assert_int_equal(cgrp_step(&f->cg, &ev, &f->a), 0);
}

/* Subscribe and answer everything until the member is stable. */
static void fx_stable(struct fx *f, int32_t generation)
{
    fx_event(f, CGRP_EV_SUBSCRIBE);
    assert_int_equal(f->a.send, CGRP_BIT(CGRP_REQ_FIND));
    fx_reply(f, CGRP_REQ_FIND, 0);
    assert_int_equal(f->a.send, CGRP_BIT(CGRP_REQ_JOIN));
    fx_join_ok(f, generation);
    assert_int_equal(f->a.send, CGRP_BIT(CGRP_REQ_SYNC));
    fx_sync_ok(f);
    assert_int_equal(f->a.send, CGRP_BIT(CGRP_REQ_OFFSETS));
    fx_reply(f, CGRP_REQ_OFFSETS, 0);
    assert_true(f->a.assign);
    assert_int_equal(f->cg.state, CGRP_STATE_STABLE);
}

static void test_join_sync_then_heartbeats(void **state)
{
    struct fx *f = *state;

    fx_stable(f, 7);
    assert_int_equal(f->cg.generation, 7);
    assert_string_equal(f->cg.member_id, "m-1");
    assert_int_equal(f->cg.n_assigned, 2);
    assert_string_equal(f->cg.assigned[1].topic, "t");
    assert_int_equal(f->cg.assigned[1].partition, 3);
    assert_int_equal(f->a.send, 0);
    assert_int_equal(f->a.next_ms, f->now + 3000);

    fx_tick(f, 2999);
    assert_int_equal(f->a.send, 0);
    fx_tick(f, 1);
    assert_int_equal(f->a.send, CGRP_BIT(CGRP_REQ_HEARTBEAT));
    fx_tick(f, 10); /* one heartbeat at a time */
    assert_int_equal(f->a.send, 0);
    fx_reply(f, CGRP_REQ_HEARTBEAT, 0);
    fx_tick(f, 2990); /* 6 s: the auto commit (5 s) is due too */
    assert_int_equal(f->a.send,
                     CGRP_BIT(CGRP_REQ_HEARTBEAT) | CGRP_BIT(CGRP_REQ_COMMIT));
}

static void test_first_join_uses_empty_member_id(void **state)
{
    struct fx *f = *state;

    fx_event(f, CGRP_EV_SUBSCRIBE);
    fx_reply(f, CGRP_REQ_FIND, 0);
    assert_string_equal(f->cg.member_id, "");
}

static void test_rebalance_commits_then_revokes_and_rejoins(void **state)
{
    struct fx *f = *state;

    fx_stable(f, 1);
    fx_tick(f, 3000);
    assert_int_equal(f->a.send, CGRP_BIT(CGRP_REQ_HEARTBEAT));
    fx_reply(f, CGRP_REQ_HEARTBEAT, WEIR_EREBALANCE_IN_PROGRESS);
    /* auto commit on: commit first, keep the partitions meanwhile */
    assert_int_equal(f->a.send, CGRP_BIT(CGRP_REQ_COMMIT));
    assert_false(f->a.revoke);
    assert_int_equal(f->cg.state, CGRP_STATE_REVOKING);
    assert_int_equal(f->cg.generation, 1); /* the commit carries it */
    fx_reply(f, CGRP_REQ_COMMIT, 0);
    assert_true(f->a.revoke);
    assert_int_equal(f->a.send, CGRP_BIT(CGRP_REQ_JOIN));
    assert_string_equal(f->cg.member_id, "m-1"); /* rejoins as itself */
    fx_join_ok(f, 2);
    fx_sync_ok(f);
    fx_reply(f, CGRP_REQ_OFFSETS, 0);
    assert_true(f->a.assign);
    assert_int_equal(f->cg.generation, 2);
}

static void test_revoke_waits_for_its_own_commit(void **state)
{
    struct fx *f = *state;

    fx_stable(f, 1);
    fx_tick(f, 5000); /* heartbeat and auto commit both go out */
    assert_true(f->a.send & CGRP_BIT(CGRP_REQ_COMMIT));
    fx_reply(f, CGRP_REQ_HEARTBEAT, WEIR_EREBALANCE_IN_PROGRESS);
    assert_int_equal(f->a.send, 0); /* the auto commit is still out */
    fx_reply(f, CGRP_REQ_COMMIT, 0);
    /* that commit carried older positions: commit again, then revoke */
    assert_false(f->a.revoke);
    assert_int_equal(f->a.send, CGRP_BIT(CGRP_REQ_COMMIT));
    fx_reply(f, CGRP_REQ_COMMIT, 0);
    assert_true(f->a.revoke);
    assert_int_equal(f->a.send, CGRP_BIT(CGRP_REQ_JOIN));
}

static void test_rebalance_without_auto_commit_revokes_at_once(void **state)
{
    struct fx *f = *state;

    f->cg.cfg.auto_commit = false;
    fx_stable(f, 1);
    fx_tick(f, 3000);
    fx_reply(f, CGRP_REQ_HEARTBEAT, WEIR_EREBALANCE_IN_PROGRESS);
    assert_true(f->a.revoke);
    assert_int_equal(f->a.send, CGRP_BIT(CGRP_REQ_JOIN));
}

static void test_unknown_member_rejoins_without_id_or_commit(void **state)
{
    struct fx *f = *state;

    fx_stable(f, 4);
    fx_tick(f, 3000);
    fx_reply(f, CGRP_REQ_HEARTBEAT, WEIR_EUNKNOWN_MEMBER_ID);
    /* fenced: its commits would be refused, so none is sent */
    assert_true(f->a.revoke);
    assert_int_equal(f->a.send, CGRP_BIT(CGRP_REQ_JOIN));
    assert_string_equal(f->cg.member_id, "");
}

static void test_illegal_generation_rejoins(void **state)
{
    struct fx *f = *state;

    fx_stable(f, 4);
    fx_tick(f, 3000);
    fx_reply(f, CGRP_REQ_HEARTBEAT, WEIR_EILLEGAL_GENERATION);
    assert_true(f->a.revoke);
    assert_int_equal(f->a.send, CGRP_BIT(CGRP_REQ_JOIN));
    assert_string_equal(f->cg.member_id, "m-1");
}

static void test_coordinator_moved_is_found_again(void **state)
{
    struct fx *f = *state;

    fx_stable(f, 1);
    fx_tick(f, 3000);
    fx_reply(f, CGRP_REQ_HEARTBEAT, WEIR_ENOT_COORDINATOR);
    assert_false(f->cg.coord_known);
    assert_int_equal(f->a.send, 0); /* backoff first */
    assert_int_equal(f->a.next_ms, f->now + 100);
    fx_tick(f, 100);
    assert_int_equal(f->a.send, CGRP_BIT(CGRP_REQ_FIND));
    fx_reply(f, CGRP_REQ_FIND, WEIR_ECOORDINATOR_NOT_AVAILABLE);
    assert_int_equal(f->a.next_ms, f->now + 200); /* doubled */
    fx_tick(f, 200);
    assert_int_equal(f->a.send, CGRP_BIT(CGRP_REQ_FIND));
    fx_reply(f, CGRP_REQ_FIND, 0);
    assert_true(f->cg.coord_known);
    /* still a member of generation 1: heartbeats go on, no rejoin */
    assert_int_equal(f->cg.state, CGRP_STATE_STABLE);
    if (f->a.send & CGRP_BIT(CGRP_REQ_HEARTBEAT)) {
        fx_reply(f, CGRP_REQ_HEARTBEAT, 0);
    }
    fx_tick(f, 3000);
    assert_true(f->a.send & CGRP_BIT(CGRP_REQ_HEARTBEAT));
    assert_false(f->a.send & CGRP_BIT(CGRP_REQ_JOIN));
}

static void test_transport_error_on_join_rediscovers(void **state)
{
    struct fx *f = *state;

    fx_event(f, CGRP_EV_SUBSCRIBE);
    fx_reply(f, CGRP_REQ_FIND, 0);
    fx_reply(f, CGRP_REQ_JOIN, WEIR_ENETWORK);
    assert_false(f->cg.coord_known);
    fx_tick(f, 100);
    assert_int_equal(f->a.send, CGRP_BIT(CGRP_REQ_FIND));
    fx_reply(f, CGRP_REQ_FIND, 0);
    assert_int_equal(f->a.send, CGRP_BIT(CGRP_REQ_JOIN));
}

static void test_auto_commit_every_interval(void **state)
{
    struct fx *f = *state;
    int commits = 0;
    int i;

    fx_stable(f, 1);
    for (i = 0; i < 1000; i++) { /* 10 s in 10 ms steps */
        fx_tick(f, 10);
        if (f->a.send & CGRP_BIT(CGRP_REQ_HEARTBEAT)) {
            fx_reply(f, CGRP_REQ_HEARTBEAT, 0);
        }
        if (f->a.send & CGRP_BIT(CGRP_REQ_COMMIT)) {
            commits++;
            fx_reply(f, CGRP_REQ_COMMIT, 0);
        }
    }
    assert_int_equal(commits, 2);
}

static void test_auto_commit_off_never_commits(void **state)
{
    struct fx *f = *state;
    int i;

    f->cg.cfg.auto_commit = false;
    fx_stable(f, 1);
    for (i = 0; i < 100; i++) {
        fx_tick(f, 100);
        assert_false(f->a.send & CGRP_BIT(CGRP_REQ_COMMIT));
        if (f->a.send & CGRP_BIT(CGRP_REQ_HEARTBEAT)) {
            fx_reply(f, CGRP_REQ_HEARTBEAT, 0);
        }
    }
    fx_event(f, CGRP_EV_COMMIT); /* but an explicit one is sent */
    assert_true(f->a.send & CGRP_BIT(CGRP_REQ_COMMIT));
}

/* A commit refused because the member is fenced is not an error for poll
 * (weir_consumer_commit and on_commit still see it): the member gives up
 * its partitions and joins again, without retrying the commit. */
static void test_fenced_commit_rejoins_not_retried(void **state)
{
    struct fx *f = *state;
    int i;

    fx_stable(f, 1);
    fx_event(f, CGRP_EV_COMMIT);
    assert_true(f->a.send & CGRP_BIT(CGRP_REQ_COMMIT));
    fx_reply(f, CGRP_REQ_COMMIT, WEIR_EILLEGAL_GENERATION);
    assert_int_equal(f->a.err, 0);
    /* no commit-on-revoke either: the partitions are lost */
    assert_true(f->a.revoke);
    assert_int_equal(f->a.send, CGRP_BIT(CGRP_REQ_JOIN));
    for (i = 0; i < 100; i++) {
        fx_tick(f, 100);
        assert_false(f->a.send & CGRP_BIT(CGRP_REQ_COMMIT));
    }
}

static void test_session_silence_rediscovers(void **state)
{
    struct fx *f = *state;

    fx_stable(f, 1);
    fx_tick(f, 3000); /* heartbeat sent, never answered */
    assert_int_equal(f->a.send, CGRP_BIT(CGRP_REQ_HEARTBEAT));
    fx_tick(f, 7000);
    assert_false(f->cg.coord_known);
    /* a whole session unheard: maybe evicted (a zombie waking up), so its
     * partitions are given up, without a commit, before anything else */
    assert_int_not_equal(f->cg.state, CGRP_STATE_STABLE);
    assert_true(f->cg.revoke_committed); /* nothing to commit first */
}

static void test_close_commits_then_leaves(void **state)
{
    struct fx *f = *state;

    fx_stable(f, 1);
    fx_event(f, CGRP_EV_CLOSE);
    assert_int_equal(f->a.send, CGRP_BIT(CGRP_REQ_COMMIT));
    assert_false(f->a.revoke);
    fx_reply(f, CGRP_REQ_COMMIT, 0);
    assert_true(f->a.revoke);
    assert_int_equal(f->a.send, CGRP_BIT(CGRP_REQ_LEAVE));
    fx_reply(f, CGRP_REQ_LEAVE, 0);
    assert_int_equal(f->cg.state, CGRP_STATE_CLOSED);
}

static void test_close_before_joining_is_immediate(void **state)
{
    struct fx *f = *state;

    fx_event(f, CGRP_EV_CLOSE);
    assert_int_equal(f->cg.state, CGRP_STATE_CLOSED);
    assert_int_equal(f->a.send, 0);
}

static void test_inconsistent_protocol_is_fatal(void **state)
{
    struct fx *f = *state;

    fx_event(f, CGRP_EV_SUBSCRIBE);
    fx_reply(f, CGRP_REQ_FIND, 0);
    fx_reply(f, CGRP_REQ_JOIN, WEIR_EINCONSISTENT_GROUP_PROTOCOL);
    assert_int_equal(f->a.err, WEIR_EINCONSISTENT_GROUP_PROTOCOL);
    assert_int_equal(f->cg.state, CGRP_STATE_FAILED);
    fx_tick(f, 10000);
    assert_int_equal(f->a.send, 0);
}

static void test_sync_rebalance_rejoins_without_revoke(void **state)
{
    struct fx *f = *state;

    fx_event(f, CGRP_EV_SUBSCRIBE);
    fx_reply(f, CGRP_REQ_FIND, 0);
    fx_join_ok(f, 1);
    fx_reply(f, CGRP_REQ_SYNC, WEIR_EREBALANCE_IN_PROGRESS);
    assert_false(f->a.revoke);
    assert_int_equal(f->a.send, CGRP_BIT(CGRP_REQ_JOIN));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, fx_teardown)
        T(test_join_sync_then_heartbeats),
        T(test_first_join_uses_empty_member_id),
        T(test_rebalance_commits_then_revokes_and_rejoins),
        T(test_rebalance_without_auto_commit_revokes_at_once),
        T(test_revoke_waits_for_its_own_commit),
        T(test_unknown_member_rejoins_without_id_or_commit),
        T(test_illegal_generation_rejoins),
        T(test_coordinator_moved_is_found_again),
        T(test_transport_error_on_join_rediscovers),
        T(test_auto_commit_every_interval),
        T(test_auto_commit_off_never_commits),
        T(test_fenced_commit_rejoins_not_retried),
        T(test_session_silence_rediscovers),
        T(test_close_commits_then_leaves),
        T(test_close_before_joining_is_immediate),
        T(test_inconsistent_protocol_is_fatal),
        T(test_sync_rebalance_rejoins_without_revoke),
#undef T
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
