/* SPDX-License-Identifier: Apache-2.0 */
/* Raft core (controller/quorum/raft.h): creation, the ready loop and its
 * persist-before-send contract, proposals, the no-op that gates an active
 * leader, snapshots taken by the state machine, and messages that cannot
 * be right (refused with WEIR_EMALFORMED, changing nothing). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/mem.h"
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

static void test_new_refuses_a_config_or_log_that_does_not_hold(void **state)
{
    struct raft_config cfg = {.id = 4,
                              .n_voters = 3,
                              .voters = {1, 2, 3},
                              .election_timeout_ms = 1000,
                              .heartbeat_interval_ms = 100};
    struct raft_entry gap = {.index = 2, .term = 1, .type = RAFT_ENTRY_NORMAL};
    struct raft_start st;
    struct raft *r;

    (void)state;
    memset(&st, 0, sizeof(st));
    assert_int_equal(raft_new(&cfg, &st, 0, &r), WEIR_EINVALID_ARGUMENT);
    assert_null(r);
    cfg.id = 1;
    cfg.voters[2] = 2; /* duplicate */
    assert_int_equal(raft_new(&cfg, &st, 0, &r), WEIR_EINVALID_ARGUMENT);
    cfg.voters[2] = 3;
    st.hs.term = 1;
    st.n_entries = 1;
    st.entries = &gap; /* not dense after the (empty) snapshot */
    assert_int_equal(raft_new(&cfg, &st, 0, &r), WEIR_EINVALID_ARGUMENT);
    gap.index = 1;
    gap.term = 2; /* above the hard state's term */
    assert_int_equal(raft_new(&cfg, &st, 0, &r), WEIR_EINVALID_ARGUMENT);
    gap.term = 1;
    st.hs.readmit_term = 1; /* readmitted without a disk loss */
    assert_int_equal(raft_new(&cfg, &st, 0, &r), WEIR_EINVALID_ARGUMENT);
    st.hs.nonce = 9;
    st.hs.readmit_term = 2; /* in a term not reached */
    assert_int_equal(raft_new(&cfg, &st, 0, &r), WEIR_EINVALID_ARGUMENT);
    st.hs.readmit_term = 1;
    assert_int_equal(raft_new(&cfg, &st, 0, &r), 0);
    assert_int_equal(raft_last_index(r), 1);
    raft_free(r);
}

static void test_single_member_commits_its_no_op_only_once_durable(void **s)
{
    struct raft_fixture_rd rd;
    struct raft *r;
    uint64_t index;

    (void)s;
    assert_int_equal(raft_fixture_one(1, 1, NULL, NULL, 0, &r), 0);
    assert_int_equal(raft_tick(r, 2000), 0); /* timeout in [1000, 2000) */
    assert_int_equal(raft_role(r), RAFT_ROLE_LEADER);
    assert_int_equal(raft_term(r), 1);
    assert_int_equal(raft_commit_index(r), 0); /* no-op not on disk yet */
    assert_false(raft_is_active_leader(r));

    assert_int_equal(raft_fixture_one_ready(r, &rd), 0);
    assert_true(rd.hs_changed);
    assert_int_equal(rd.hs.vote, 1);
    assert_int_equal(rd.n_entries, 1); /* the no-op */
    assert_int_equal(rd.n_committed, 0);
    assert_int_equal(raft_commit_index(r), 1); /* durable after advance */
    assert_false(raft_is_active_leader(r));    /* not applied yet */

    assert_int_equal(raft_fixture_one_ready(r, &rd), 0);
    assert_int_equal(rd.n_committed, 1);
    assert_true(raft_is_active_leader(r));

    assert_int_equal(raft_propose(r, (const uint8_t *)"x", 1, &index), 0);
    assert_int_equal(index, 2);
    raft_free(r);
}

static void test_vote_is_granted_in_the_ready_that_persists_it(void **s)
{
    struct raft_msg v = msg(RAFT_MSG_VOTE, 2, 1, 1);
    struct raft_fixture_rd rd;
    const struct raft_msg *resp;
    struct raft *r;

    (void)s;
    assert_int_equal(raft_fixture_one(1, 3, NULL, NULL, 0, &r), 0);
    assert_int_equal(raft_step(r, &v, 10), 0);
    assert_int_equal(raft_fixture_one_ready(r, &rd), 0);
    resp = raft_fixture_rd_msg(&rd, RAFT_MSG_VOTE_RESP, 2);
    assert_non_null(resp);
    assert_true(resp->granted);
    assert_true(rd.hs_changed); /* the adapter persists before sending */
    assert_int_equal(rd.hs.term, 1);
    assert_int_equal(rd.hs.vote, 2);

    v.from = 3; /* a second candidate in the same term */
    assert_int_equal(raft_step(r, &v, 20), 0);
    assert_int_equal(raft_fixture_one_ready(r, &rd), 0);
    resp = raft_fixture_rd_msg(&rd, RAFT_MSG_VOTE_RESP, 3);
    assert_non_null(resp);
    assert_false(resp->granted);
    assert_false(rd.hs_changed);
    raft_free(r);
}

static void test_append_is_acked_in_the_ready_that_persists_it(void **s)
{
    struct raft_entry e = {.index = 1,
                           .term = 1,
                           .type = RAFT_ENTRY_NORMAL,
                           .data = (const uint8_t *)"abc",
                           .len = 3};
    struct raft_msg a = msg(RAFT_MSG_APPEND, 1, 2, 1);
    struct raft_fixture_rd rd;
    const struct raft_msg *resp;
    struct raft *r;

    (void)s;
    assert_int_equal(raft_fixture_one(2, 3, NULL, NULL, 0, &r), 0);
    a.n_entries = 1;
    a.entries = &e;
    assert_int_equal(raft_step(r, &a, 10), 0);
    assert_int_equal(raft_fixture_one_ready(r, &rd), 0);
    assert_int_equal(rd.n_entries, 1);
    assert_int_equal(rd.first_index, 1);
    resp = raft_fixture_rd_msg(&rd, RAFT_MSG_APPEND_RESP, 1);
    assert_non_null(resp);
    assert_true(resp->success);
    assert_int_equal(resp->match, 1);
    assert_int_equal(raft_leader(r), 1);
    raft_free(r);
}

static void expect_malformed(struct raft *r, const struct raft_msg *m)
{
    assert_int_equal(raft_step(r, m, 10), WEIR_EMALFORMED);
    assert_int_equal(raft_term(r), 3);
    assert_int_equal(raft_role(r), RAFT_ROLE_FOLLOWER);
    assert_false(raft_has_ready(r));
}

static void test_malformed_messages_change_nothing(void **s)
{
    struct raft_hard_state hs = {.term = 3};
    struct raft_entry e = {.index = 5, .term = 3, .type = RAFT_ENTRY_NORMAL};
    struct raft_fixture_rd rd;
    struct raft_msg m;
    struct raft *r;

    (void)s;
    assert_int_equal(raft_fixture_one(1, 3, &hs, NULL, 0, &r), 0);
    /* a new core's first ready says when to tick; nothing after it */
    assert_true(raft_has_ready(r));
    assert_int_equal(raft_fixture_one_ready(r, &rd), 0);
    m = msg(RAFT_MSG_VOTE, 2, 1, UINT64_MAX); /* a term that would pin us */
    expect_malformed(r, &m);
    m = msg(RAFT_MSG_VOTE, 2, 1, RAFT_LIMIT);
    expect_malformed(r, &m);
    m = msg(RAFT_MSG_APPEND, 9, 1, 4); /* unknown voter */
    expect_malformed(r, &m);
    m = msg(RAFT_MSG_APPEND, 1, 1, 4); /* from ourselves */
    expect_malformed(r, &m);
    m = msg(RAFT_MSG_APPEND, 2, 3, 4); /* not for us */
    expect_malformed(r, &m);
    m = msg(RAFT_MSG_APPEND, 2, 1, 4);
    m.index = RAFT_LIMIT; /* index past the limit */
    expect_malformed(r, &m);
    m.index = 0;
    m.commit = RAFT_LIMIT;
    expect_malformed(r, &m);
    m.commit = 0;
    m.n_entries = 1;
    m.entries = &e; /* entry 5 after index 0: not dense */
    expect_malformed(r, &m);
    m = msg(RAFT_MSG_APPEND_RESP, 2, 1, 3);
    m.match = UINT64_MAX;
    expect_malformed(r, &m);
    m = msg(RAFT_MSG_SNAPSHOT, 2, 1, 4);
    m.index = 10;
    m.offset = 1ull << 30; /* past the 1 GiB bound */
    m.len = 1;
    m.data = (const uint8_t *)"x";
    expect_malformed(r, &m);

    /* Elections still work: the timer fires, pre-vote at term 4. */
    assert_int_equal(raft_tick(r, 2000), 0);
    assert_int_equal(raft_role(r), RAFT_ROLE_PRE_CANDIDATE);
    assert_int_equal(raft_term(r), 3);
    assert_int_equal(raft_fixture_one_ready(r, &rd), 0);
    assert_non_null(raft_fixture_rd_msg(&rd, RAFT_MSG_VOTE, 2));
    assert_true(rd.msgs[0].pre_vote);
    assert_int_equal(rd.msgs[0].term, 4);
    raft_free(r);
}

static void test_events_wait_for_advance(void **s)
{
    struct raft_ready rd;
    struct raft *r;
    uint64_t index;

    (void)s;
    assert_int_equal(raft_fixture_one(1, 3, NULL, NULL, 0, &r), 0);
    assert_int_equal(raft_propose(r, NULL, 0, &index), WEIR_ENOT_CONTROLLER);
    assert_int_equal(raft_ready(r, &rd), 0);
    assert_int_equal(raft_tick(r, 5000), WEIR_EINVALID_ARGUMENT);
    raft_advance(r, &rd);
    assert_int_equal(raft_tick(r, 5000), 0);
    raft_free(r);
}

static void test_snapshot_taken_drops_applied_entries(void **s)
{
    struct raft_snapshot snap;
    struct raft_fixture_rd rd;
    struct raft *r;
    uint64_t index;

    (void)s;
    assert_int_equal(raft_fixture_one(1, 1, NULL, NULL, 0, &r), 0);
    assert_int_equal(raft_tick(r, 2000), 0);
    for (int k = 0; k < 3; k++) {
        assert_int_equal(raft_propose(r, (const uint8_t *)"e", 1, &index), 0);
    }
    assert_int_equal(raft_fixture_one_ready(r, &rd), 0);
    assert_int_equal(raft_fixture_one_ready(r, &rd), 0);
    assert_int_equal(rd.n_committed, 4);
    memset(&snap, 0, sizeof(snap));
    snap.index = 5; /* past applied */
    snap.term = 1;
    assert_int_equal(raft_snapshot_taken(r, &snap), WEIR_EINVALID_ARGUMENT);
    snap.index = 3;
    snap.data = (const uint8_t *)"image";
    snap.len = 5;
    assert_int_equal(raft_snapshot_taken(r, &snap), 0);
    assert_int_equal(raft_last_index(r), 4);
    assert_int_equal(raft_propose(r, (const uint8_t *)"e", 1, &index), 0);
    assert_int_equal(index, 5);
    raft_free(r);
}

static void test_no_op_gates_the_active_leader(void **s)
{
    struct raft_fixture_opts o = {
        .n = 3, .seed = 7, .election_ms = 1000, .heartbeat_ms = 100};
    struct raft_fixture *f;
    uint32_t l = RAFT_FIXTURE_NONE;

    (void)s;
    assert_int_equal(raft_fixture_new(&o, &f), 0);
    raft_fixture_block_type(f, RAFT_MSG_APPEND_RESP); /* no-op can't commit */
    for (int k = 0; k < 100 && l == RAFT_FIXTURE_NONE; k++) {
        raft_fixture_run(f, 100);
        l = raft_fixture_leader(f);
    }
    assert_int_not_equal(l, RAFT_FIXTURE_NONE);
    assert_false(raft_is_active_leader(raft_fixture_core(f, l)));
    raft_fixture_block_type(f, 0);
    assert_true(raft_fixture_run_until_active(f, RAFT_FIXTURE_NONE, 10000));
    assert_null(raft_fixture_error(f));
    raft_fixture_free(f);
}

/* Fail the nth allocation (once) while a single member elects itself and
 * commits, and while a follower takes entries: every call either succeeds
 * or fails with WEIR_ENOMEM leaving the core as it was, so the retry
 * succeeds and the end state is always the same. */
static void test_out_of_memory_leaves_the_core_unchanged(void **s)
{
    static const uint8_t data[] = "abc";
    struct raft_entry es[3] = {
        {.index = 1,
         .term = 1,
         .type = RAFT_ENTRY_NORMAL,
         .data = data,
         .len = 3},
        {.index = 2,
         .term = 1,
         .type = RAFT_ENTRY_NORMAL,
         .data = data,
         .len = 3},
        {.index = 3, .term = 1, .type = RAFT_ENTRY_NORMAL},
    };
    struct raft_fixture_rd rd;
    unsigned long failed = 1;

    (void)s;
    for (unsigned long n = 1; failed > 0 && n < 200; n++) {
        struct raft_msg a = msg(RAFT_MSG_APPEND, 1, 2, 1);
        struct raft *r, *fl;
        uint64_t index, last;
        int rv;

        assert_int_equal(raft_fixture_one(1, 1, NULL, NULL, 0, &r), 0);
        assert_int_equal(raft_fixture_one(2, 3, NULL, NULL, 0, &fl), 0);
        mem_fault_set(n, 0);
        while ((rv = raft_tick(r, 2000)) == WEIR_ENOMEM) {
            assert_int_equal(raft_role(r), RAFT_ROLE_FOLLOWER);
            assert_int_equal(raft_term(r), 0);
        }
        assert_int_equal(rv, 0);
        for (int k = 0; k < 3; k++) {
            last = raft_last_index(r);
            while (raft_propose(r, data, 3, &index) == WEIR_ENOMEM) {
                assert_int_equal(raft_last_index(r), last);
            }
        }
        a.n_entries = 3;
        a.entries = es;
        a.commit = 3;
        while ((rv = raft_step(fl, &a, 10)) == WEIR_ENOMEM) {
            assert_int_equal(raft_last_index(fl), 0);
            assert_int_equal(raft_term(fl), 0);
        }
        assert_int_equal(rv, 0);
        failed = mem_fault_count();
        mem_fault_set(0, 0);
        for (int k = 0; k < 3; k++) {
            assert_int_equal(raft_fixture_one_ready(r, &rd), 0);
            assert_int_equal(raft_fixture_one_ready(fl, &rd), 0);
        }
        assert_true(raft_is_active_leader(r));
        assert_int_equal(raft_commit_index(r), 4);
        assert_int_equal(raft_commit_index(fl), 3);
        raft_free(r);
        raft_free(fl);
    }
    assert_int_equal(failed, 0); /* ran once with no failure left */
}

static uint64_t rnd(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* Mostly small values, sometimes at or past RAFT_LIMIT or anything. */
static uint64_t edgy(uint64_t *x)
{
    switch (rnd(x) % 32) {
    case 0:
        return RAFT_LIMIT - 2 + rnd(x) % 4;
    case 1:
        return rnd(x);
    }
    return rnd(x) % 8;
}

/* Random messages, most of them nonsense, into a core that also ticks and
 * proposes: every call returns 0 or a documented error, nothing asserts,
 * terms and indexes stay below the limit (run it under ASan/UBSan). */
static void test_random_messages_never_break_the_core(void **s)
{
    static const uint8_t data[16];
    struct raft_entry es[4];
    struct raft_fixture_rd rd;
    uint64_t x = 88172645463325252ull;
    uint32_t accepted = 0, led = 0, cands = 0;
    struct raft *r;
    uint64_t index;

    (void)s;
    assert_int_equal(raft_fixture_one(1, 3, NULL, NULL, 0, &r), 0);
    for (uint64_t t = 1; t < 100000; t++) {
        struct raft_msg m =
            msg((enum raft_msg_type)(1 + rnd(&x) % 7), (uint32_t)(rnd(&x) % 5),
                1 + (rnd(&x) % 9 == 0), edgy(&x));
        int rv;

        if (t % 5000 == 0) { /* terms near the limit pin a core: anew */
            raft_free(r);
            assert_int_equal(raft_fixture_one(1, 3, NULL, NULL, 0, &r), 0);
        }
        m.pre_vote = rnd(&x) % 2;
        m.granted = rnd(&x) % 2;
        m.success = rnd(&x) % 2;
        m.done = rnd(&x) % 2;
        m.readmitted = rnd(&x) % 2;
        m.nonce = rnd(&x) % 3;
        m.index = edgy(&x);
        m.log_term = edgy(&x) % (m.term + 1);
        m.commit = edgy(&x);
        m.match = edgy(&x);
        m.hint = edgy(&x);
        m.offset = rnd(&x) % 3 == 0 ? edgy(&x) * 16 : 0;
        m.len = (uint32_t)(rnd(&x) % 17);
        m.data = data;
        m.n_entries = (uint32_t)(rnd(&x) % 5);
        for (uint32_t k = 0; k < m.n_entries; k++) {
            es[k].index = m.index + 1 + k;
            es[k].term = m.log_term + (rnd(&x) % 2);
            es[k].type = (enum raft_entry_type)(1 + rnd(&x) % 3);
            es[k].data = data;
            es[k].len = (uint32_t)(rnd(&x) % 13);
        }
        m.entries = es;
        if (raft_role(r) == RAFT_ROLE_PRE_CANDIDATE ||
            raft_role(r) == RAFT_ROLE_CANDIDATE) {
            /* Help it win now and then, to fuzz a leader too. */
            m.type = RAFT_MSG_VOTE_RESP;
            m.pre_vote = raft_role(r) == RAFT_ROLE_PRE_CANDIDATE;
            m.term = raft_term(r) + m.pre_vote;
            m.granted = true;
            m.from = 2;
            m.to = 1;
            m.log_term = 0;
            m.index = 0;
            m.commit = 0;
            m.match = 0;
            m.hint = 0;
            m.offset = 0;
            cands++;
        } else if (rnd(&x) % 4 != 0) {
            m.to = 0; /* mostly quiet: let the election timer fire */
        }
        rv = raft_step(r, &m, (t % 5000) * 50);
        assert_true(rv == 0 || rv == WEIR_EMALFORMED);
        accepted += rv == 0;
        led += raft_role(r) == RAFT_ROLE_LEADER;
        if (rnd(&x) % 2 == 0) {
            assert_int_equal(raft_tick(r, (t % 5000) * 50), 0);
        }
        if (raft_role(r) == RAFT_ROLE_LEADER) {
            assert_int_equal(raft_propose(r, data, 4, &index), 0);
        }
        assert_int_equal(raft_fixture_one_ready(r, &rd), 0);
        assert_true(raft_term(r) < RAFT_LIMIT);
        assert_true(raft_last_index(r) < RAFT_LIMIT);
        assert_true(raft_commit_index(r) <= raft_last_index(r));
    }
    assert_true(accepted > 1000 && led > 1000 && cands > 100);
    raft_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_refuses_a_config_or_log_that_does_not_hold),
        cmocka_unit_test(
            test_single_member_commits_its_no_op_only_once_durable),
        cmocka_unit_test(test_vote_is_granted_in_the_ready_that_persists_it),
        cmocka_unit_test(test_append_is_acked_in_the_ready_that_persists_it),
        cmocka_unit_test(test_malformed_messages_change_nothing),
        cmocka_unit_test(test_events_wait_for_advance),
        cmocka_unit_test(test_snapshot_taken_drops_applied_entries),
        cmocka_unit_test(test_no_op_gates_the_active_leader),
        cmocka_unit_test(test_out_of_memory_leaves_the_core_unchanged),
        cmocka_unit_test(test_random_messages_never_break_the_core),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
