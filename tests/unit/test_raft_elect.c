/* SPDX-License-Identifier: Apache-2.0 */
/* Raft elections (controller/quorum/raft_elect.c): one leader, pre-vote
 * that never raises an isolated member's term, stickiness (no pre-vote or
 * vote while a live leader is heard), check-quorum, and the readmission
 * gate on campaigning and voting after a disk loss. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tests/lib/raft_fixture.h"

static struct raft_msg
msg(enum raft_msg_type t, uint32_t from, uint32_t to, uint64_t term)
{
    struct raft_msg m;

    memset(&m, 0, sizeof(m));
    m.type = t;
    m.from = from;
    m.to = to;
    m.term = term;
    return m;
}

static struct raft_fixture *cluster(uint32_t n, uint64_t seed)
{
    struct raft_fixture_opts o = {
        .n = n, .seed = seed, .election_ms = 1000, .heartbeat_ms = 100};
    struct raft_fixture *f;

    assert_int_equal(raft_fixture_new(&o, &f), 0);
    raft_fixture_net(f, 0, 0, 1, 10);
    return f;
}

static void test_three_members_elect_one_leader_and_commit(void **s)
{
    struct raft_fixture *f = cluster(3, 1);
    uint32_t l;
    uint64_t index;

    (void)s;
    assert_true(raft_fixture_run_until_active(f, RAFT_FIXTURE_NONE, 10000));
    l = raft_fixture_leader(f);
    assert_int_equal(raft_fixture_propose(f, l, "a", 1, &index), 0);
    raft_fixture_run(f, 1000);
    for (uint32_t i = 0; i < 3; i++) {
        assert_int_equal(raft_fixture_applied(f, i), index);
        assert_int_equal(raft_leader(raft_fixture_core(f, i)), l + 1);
    }
    assert_null(raft_fixture_error(f));
    raft_fixture_free(f);
}

static void test_isolated_follower_pre_votes_without_raising_its_term(void **s)
{
    struct raft_fixture *f = cluster(3, 2);
    uint32_t l, x;
    uint64_t term;

    (void)s;
    assert_true(raft_fixture_run_until_active(f, RAFT_FIXTURE_NONE, 10000));
    l = raft_fixture_leader(f);
    term = raft_term(raft_fixture_core(f, l));
    x = (l + 1) % 3;
    raft_fixture_partition(f, 1u << x);
    raft_fixture_run(f, 10000); /* many election timeouts */
    assert_int_equal(raft_term(raft_fixture_core(f, x)), term);
    assert_int_equal(raft_role(raft_fixture_core(f, x)),
                     RAFT_ROLE_PRE_CANDIDATE);
    raft_fixture_partition(f, 0);
    raft_fixture_run(f, 2000); /* it rejoins without disrupting */
    assert_int_equal(raft_fixture_leader(f), l);
    assert_int_equal(raft_term(raft_fixture_core(f, l)), term);
    assert_int_equal(raft_role(raft_fixture_core(f, x)), RAFT_ROLE_FOLLOWER);
    assert_null(raft_fixture_error(f));
    raft_fixture_free(f);
}

static void test_sticky_follower_refuses_pre_vote_and_vote(void **s)
{
    struct raft_msg hb = msg(RAFT_MSG_APPEND, 1, 2, 1);
    struct raft_msg v = msg(RAFT_MSG_VOTE, 3, 2, 2);
    struct raft_fixture_rd rd;
    const struct raft_msg *resp;
    struct raft *r;

    (void)s;
    assert_int_equal(raft_fixture_one(2, 3, NULL, NULL, 0, &r), 0);
    assert_int_equal(raft_step(r, &hb, 100), 0); /* leader 1 is live */
    assert_int_equal(raft_fixture_one_ready(r, &rd), 0);
    v.pre_vote = true;
    assert_int_equal(raft_step(r, &v, 600), 0);
    v.pre_vote = false;
    assert_int_equal(raft_step(r, &v, 700), 0);
    assert_int_equal(raft_fixture_one_ready(r, &rd), 0);
    assert_null(raft_fixture_rd_msg(&rd, RAFT_MSG_VOTE_RESP, 3));
    assert_int_equal(raft_term(r), 1); /* not raised */
    assert_int_equal(raft_leader(r), 1);

    /* Silence from the leader for an election timeout: grants now. */
    v.pre_vote = true;
    assert_int_equal(raft_step(r, &v, 1200), 0);
    assert_int_equal(raft_fixture_one_ready(r, &rd), 0);
    resp = raft_fixture_rd_msg(&rd, RAFT_MSG_VOTE_RESP, 3);
    assert_non_null(resp);
    assert_true(resp->pre_vote);
    assert_true(resp->granted);
    assert_int_equal(raft_term(r), 1); /* a pre-vote changes no term */
    raft_free(r);
}

/* The transport saw the leader's connection close: the lease ends there
 * (a pre-vote is granted at once) and the member campaigns within
 * 2 x RAFT_LOST_DELAY_MS (100 ms) instead of an election timeout. A lost
 * connection to another member changes nothing. */
static void test_lost_leader_connection_ends_the_lease(void **s)
{
    struct raft_msg hb = msg(RAFT_MSG_APPEND, 1, 2, 1);
    struct raft_msg v = msg(RAFT_MSG_VOTE, 3, 2, 2);
    struct raft_fixture_rd rd;
    const struct raft_msg *resp;
    struct raft *r;

    (void)s;
    assert_int_equal(raft_fixture_one(2, 3, NULL, NULL, 0, &r), 0);
    assert_int_equal(raft_step(r, &hb, 100), 0); /* leader 1 is live */
    assert_int_equal(raft_fixture_one_ready(r, &rd), 0);
    assert_int_equal(raft_peer_lost(r, 3, 150), 0); /* not the leader */
    v.pre_vote = true;
    assert_int_equal(raft_step(r, &v, 200), 0);
    assert_int_equal(raft_fixture_one_ready(r, &rd), 0);
    assert_null(raft_fixture_rd_msg(&rd, RAFT_MSG_VOTE_RESP, 3));

    assert_int_equal(raft_peer_lost(r, 1, 300), 0);
    assert_int_equal(raft_step(r, &v, 310), 0);
    assert_int_equal(raft_fixture_one_ready(r, &rd), 0);
    resp = raft_fixture_rd_msg(&rd, RAFT_MSG_VOTE_RESP, 3);
    assert_non_null(resp);
    assert_true(resp->granted);
    assert_int_equal(raft_term(r), 1);

    /* its own pre-vote goes out well before an election timeout */
    assert_int_equal(raft_tick(r, 300 + 2 * 50), 0);
    assert_int_equal(raft_fixture_one_ready(r, &rd), 0);
    assert_non_null(raft_fixture_rd_msg(&rd, RAFT_MSG_VOTE, 1));
    assert_int_equal(raft_role(r), RAFT_ROLE_PRE_CANDIDATE);
    raft_free(r);
}

/* The survivors of a lost leader campaign one after another in voter-list
 * order (the lost leader skipped), so they do not split the vote. */
static void test_lost_leader_survivors_campaign_in_turn(void **s)
{
    static const struct {
        uint32_t self, lost;
        uint64_t earliest; /* after the loss */
    } cases[] = {
        {1, 3, 50},  {2, 1, 50},  {2, 3, 150},
        {3, 1, 150}, {3, 2, 150}, {1, 2, 50},
    };
    struct raft_msg hb;
    struct raft_fixture_rd rd;
    struct raft_ready full;
    struct raft *r;

    (void)s;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        uint64_t lost_at = 300;
        uint64_t first = cases[c].earliest;
        uint32_t other = 6 - cases[c].self - cases[c].lost;

        hb = msg(RAFT_MSG_APPEND, cases[c].lost, cases[c].self, 1);
        assert_int_equal(raft_fixture_one(cases[c].self, 3, NULL, NULL, 0, &r),
                         0);
        assert_int_equal(raft_step(r, &hb, 100), 0);
        assert_int_equal(raft_fixture_one_ready(r, &rd), 0);
        assert_int_equal(raft_peer_lost(r, cases[c].lost, lost_at), 0);
        /* the owner learns of the earlier timer from a ready */
        assert_true(raft_has_ready(r));
        assert_int_equal(raft_ready(r, &full), 0);
        assert_in_range(full.next_tick_ms, lost_at + first,
                        lost_at + first + 24);
        raft_advance(r, &full);
        assert_false(raft_has_ready(r));
        /* nothing before its turn */
        assert_int_equal(raft_tick(r, lost_at + first - 1), 0);
        assert_int_equal(raft_fixture_one_ready(r, &rd), 0);
        assert_null(raft_fixture_rd_msg(&rd, RAFT_MSG_VOTE, other));
        assert_int_equal(raft_role(r), RAFT_ROLE_FOLLOWER);
        /* its pre-vote by the end of its turn's jitter */
        assert_int_equal(raft_tick(r, lost_at + first + 25), 0);
        assert_int_equal(raft_fixture_one_ready(r, &rd), 0);
        assert_non_null(raft_fixture_rd_msg(&rd, RAFT_MSG_VOTE, other));
        assert_int_equal(raft_role(r), RAFT_ROLE_PRE_CANDIDATE);
        raft_free(r);
    }
}

static void test_leader_cut_off_from_majority_steps_down(void **s)
{
    struct raft_fixture *f = cluster(5, 3);
    uint32_t l;

    (void)s;
    assert_true(raft_fixture_run_until_active(f, RAFT_FIXTURE_NONE, 10000));
    l = raft_fixture_leader(f);
    raft_fixture_partition(f, (1u << l) | (1u << ((l + 1) % 5)));
    raft_fixture_run(f, 2500); /* > one check-quorum window */
    assert_int_not_equal(raft_role(raft_fixture_core(f, l)), RAFT_ROLE_LEADER);
    /* The majority side elected its own leader meanwhile. */
    assert_int_not_equal(raft_fixture_leader(f), RAFT_FIXTURE_NONE);
    assert_null(raft_fixture_error(f));
    raft_fixture_free(f);
}

/* Check-quorum runs at every heartbeat: a leader cut off from everyone
 * stops leading about one election timeout after the cut, not two. */
static void test_leader_steps_down_one_timeout_after_the_cut(void **s)
{
    struct raft_fixture *f = cluster(3, 5);
    uint32_t l;

    (void)s;
    assert_true(raft_fixture_run_until_active(f, RAFT_FIXTURE_NONE, 10000));
    l = raft_fixture_leader(f);
    raft_fixture_run(f, 500);
    raft_fixture_partition(f, 1u << l);
    raft_fixture_run(f, 800); /* heard from both within the last second */
    assert_int_equal(raft_role(raft_fixture_core(f, l)), RAFT_ROLE_LEADER);
    /* last contact >= cut - heartbeat - delay; checked every heartbeat */
    raft_fixture_run(f, 1000 + 100 + 100 - 800);
    assert_int_not_equal(raft_role(raft_fixture_core(f, l)), RAFT_ROLE_LEADER);
    assert_null(raft_fixture_error(f));
    raft_fixture_free(f);
}

static void test_huge_term_does_not_stop_elections(void **s)
{
    struct raft_fixture *f = cluster(3, 4);
    struct raft_msg v = msg(RAFT_MSG_VOTE, 2, 1, UINT64_MAX);

    (void)s;
    assert_int_equal(raft_step(raft_fixture_core(f, 0), &v, 0),
                     WEIR_EMALFORMED);
    assert_true(raft_fixture_run_until_active(f, RAFT_FIXTURE_NONE, 10000));
    assert_true(raft_term(raft_fixture_core(f, 0)) < 100);
    assert_null(raft_fixture_error(f));
    raft_fixture_free(f);
}

static void test_member_not_readmitted_never_campaigns_or_votes(void **s)
{
    struct raft_hard_state hs = {.nonce = 42};
    struct raft_msg v = msg(RAFT_MSG_VOTE, 3, 2, 1);
    struct raft_fixture_rd rd;
    const struct raft_msg *resp;
    struct raft *r;

    (void)s;
    assert_int_equal(raft_fixture_one(2, 3, &hs, NULL, 0, &r), 0);
    for (uint64_t t = 0; t < 20000; t += 500) {
        assert_int_equal(raft_tick(r, t), 0);
    }
    assert_int_equal(raft_role(r), RAFT_ROLE_FOLLOWER);
    assert_int_equal(raft_fixture_one_ready(r, &rd), 0);
    assert_null(raft_fixture_rd_msg(&rd, RAFT_MSG_VOTE, 1));

    v.pre_vote = true;
    assert_int_equal(raft_step(r, &v, 20000), 0);
    v.pre_vote = false;
    v.from = 1;
    assert_int_equal(raft_step(r, &v, 20000), 0);
    assert_int_equal(raft_fixture_one_ready(r, &rd), 0);
    resp = raft_fixture_rd_msg(&rd, RAFT_MSG_VOTE_RESP, 3);
    assert_non_null(resp);
    assert_false(resp->granted);
    resp = raft_fixture_rd_msg(&rd, RAFT_MSG_VOTE_RESP, 1);
    assert_non_null(resp);
    assert_false(resp->granted);
    assert_int_equal(resp->nonce, 42); /* tells the leader its nonce */
    raft_free(r);
}

static void test_readmitted_member_votes_only_above_readmit_term(void **s)
{
    /* Readmitted by a READMIT of term 5, then restarted: it may have voted
     * in term 5 before losing its disk, so term 5 is out; 6 is fine. */
    struct raft_hard_state hs = {.term = 5, .nonce = 42, .readmit_term = 5};
    struct raft_msg v = msg(RAFT_MSG_VOTE, 3, 2, 5);
    struct raft_fixture_rd rd;
    const struct raft_msg *resp;
    struct raft *r;

    (void)s;
    assert_int_equal(raft_fixture_one(2, 3, &hs, NULL, 0, &r), 0);
    assert_int_equal(raft_step(r, &v, 10), 0);
    assert_int_equal(raft_fixture_one_ready(r, &rd), 0);
    resp = raft_fixture_rd_msg(&rd, RAFT_MSG_VOTE_RESP, 3);
    assert_non_null(resp);
    assert_false(resp->granted);
    v.term = 6;
    assert_int_equal(raft_step(r, &v, 20), 0);
    assert_int_equal(raft_fixture_one_ready(r, &rd), 0);
    resp = raft_fixture_rd_msg(&rd, RAFT_MSG_VOTE_RESP, 3);
    assert_non_null(resp);
    assert_true(resp->granted);
    assert_true(rd.hs_changed);
    assert_int_equal(rd.hs.vote, 3);
    raft_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_three_members_elect_one_leader_and_commit),
        cmocka_unit_test(
            test_isolated_follower_pre_votes_without_raising_its_term),
        cmocka_unit_test(test_sticky_follower_refuses_pre_vote_and_vote),
        cmocka_unit_test(test_lost_leader_connection_ends_the_lease),
        cmocka_unit_test(test_lost_leader_survivors_campaign_in_turn),
        cmocka_unit_test(test_leader_cut_off_from_majority_steps_down),
        cmocka_unit_test(test_leader_steps_down_one_timeout_after_the_cut),
        cmocka_unit_test(test_huge_term_does_not_stop_elections),
        cmocka_unit_test(test_member_not_readmitted_never_campaigns_or_votes),
        cmocka_unit_test(test_readmitted_member_votes_only_above_readmit_term),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
