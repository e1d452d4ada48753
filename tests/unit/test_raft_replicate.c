/* SPDX-License-Identifier: Apache-2.0 */
/* Raft replication (controller/quorum/raft_replicate.c, raft_snapshot.c):
 * commit only of current-term entries, match never lowered by stale
 * answers, one batch in flight to a silent follower, log conflicts
 * repaired, snapshots installed in chunks (and a chunk out of order
 * refused), and readmission of a member that lost its disk. */
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

static struct raft_msg ack(uint32_t from, uint64_t match, uint64_t nonce)
{
    struct raft_msg m = msg(RAFT_MSG_APPEND_RESP, from, 1, 2);

    m.success = true;
    m.match = match;
    m.index = match;
    m.nonce = nonce;
    return m;
}

/* Member 1 of 3 with one entry of term 1, elected leader of term 2 by
 * member 2; its no-op (index 2) is on disk. */
static struct raft *leader_of_term_2(void)
{
    static const uint64_t terms[] = {1};
    struct raft_hard_state hs = {.term = 1};
    struct raft_msg v = msg(RAFT_MSG_VOTE_RESP, 2, 1, 2);
    struct raft_fixture_rd rd;
    struct raft *r;

    assert_int_equal(raft_fixture_one(1, 3, &hs, terms, 1, &r), 0);
    assert_int_equal(raft_tick(r, 2000), 0);
    assert_int_equal(raft_role(r), RAFT_ROLE_PRE_CANDIDATE);
    v.pre_vote = true;
    v.granted = true;
    assert_int_equal(raft_step(r, &v, 2000), 0);
    assert_int_equal(raft_role(r), RAFT_ROLE_CANDIDATE);
    v.pre_vote = false;
    assert_int_equal(raft_step(r, &v, 2000), 0);
    assert_int_equal(raft_role(r), RAFT_ROLE_LEADER);
    assert_int_equal(raft_fixture_one_ready(r, &rd), 0);
    assert_int_equal(rd.first_index, 2); /* the no-op */
    return r;
}

static uint64_t peer_match(struct raft *r, uint32_t id)
{
    struct raft_peer_status ps[RAFT_MAX_VOTERS];
    uint32_t n = raft_peer_status(r, ps, RAFT_MAX_VOTERS);

    for (uint32_t k = 0; k < n; k++) {
        if (ps[k].id == id) {
            return ps[k].match;
        }
    }
    fail();
    return 0;
}

static void test_commit_counts_only_entries_of_the_current_term(void **s)
{
    struct raft *r = leader_of_term_2();
    struct raft_msg m = ack(2, 1, 0);

    (void)s;
    /* Entry 1 (term 1) is on a majority, but is not of this term. */
    assert_int_equal(raft_step(r, &m, 2010), 0);
    assert_int_equal(raft_commit_index(r), 0);
    m = ack(2, 2, 0); /* the no-op: commits both */
    assert_int_equal(raft_step(r, &m, 2020), 0);
    assert_int_equal(raft_commit_index(r), 2);
    raft_free(r);
}

static void test_stale_answers_never_lower_match(void **s)
{
    struct raft *r = leader_of_term_2();
    struct raft_msg m = ack(2, 2, 0);
    struct raft_fixture_rd rd;
    const struct raft_msg *a;

    (void)s;
    assert_int_equal(raft_step(r, &m, 2010), 0);
    assert_int_equal(peer_match(r, 2), 2);
    assert_int_equal(raft_fixture_one_ready(r, &rd), 0);
    m = ack(2, 1, 0); /* a duplicated older success */
    assert_int_equal(raft_step(r, &m, 2020), 0);
    m = msg(RAFT_MSG_APPEND_RESP, 2, 1, 2); /* a reordered old refusal */
    m.index = 1;
    m.hint = 0;
    assert_int_equal(raft_step(r, &m, 2030), 0);
    assert_int_equal(peer_match(r, 2), 2);
    assert_int_equal(raft_tick(r, 2200), 0); /* heartbeat */
    assert_int_equal(raft_fixture_one_ready(r, &rd), 0);
    a = raft_fixture_rd_msg(&rd, RAFT_MSG_APPEND, 2);
    assert_non_null(a);
    assert_true(a->index >= 2); /* no rewind */
    raft_free(r);
}

static void test_silent_follower_gets_one_batch_at_a_time(void **s)
{
    struct raft *r = leader_of_term_2();
    struct raft_fixture_rd rd;
    uint32_t batches = 0, heartbeats = 0;
    uint64_t index;

    (void)s;
    for (int k = 0; k < 10; k++) {
        assert_int_equal(raft_propose(r, (const uint8_t *)"e", 1, &index), 0);
    }
    for (uint64_t t = 2100; t < 6000; t += 100) {
        struct raft_msg m = ack(2, raft_last_index(r), 0);

        assert_int_equal(raft_step(r, &m, t), 0); /* 2 keeps answering */
        assert_int_equal(raft_tick(r, t), 0);
        assert_int_equal(raft_fixture_one_ready(r, &rd), 0);
        for (uint32_t k = 0; k < rd.n_msgs; k++) {
            if (rd.msgs[k].type == RAFT_MSG_APPEND && rd.msgs[k].to == 3) {
                batches += rd.msgs[k].n_entries > 0;
                heartbeats += rd.msgs[k].n_entries == 0;
            }
        }
    }
    /* The batch with the no-op, sent at election, is still unanswered. */
    assert_int_equal(batches, 0);
    assert_true(heartbeats > 10);
    assert_int_equal(raft_commit_index(r), raft_last_index(r));

    /* Member 3 answers at last (it lacks entry 1): one new batch. */
    struct raft_msg no = msg(RAFT_MSG_APPEND_RESP, 3, 1, 2);
    const struct raft_msg *a;

    no.index = 1;
    no.hint = 0;
    assert_int_equal(raft_step(r, &no, 6000), 0);
    assert_int_equal(raft_fixture_one_ready(r, &rd), 0);
    a = raft_fixture_rd_msg(&rd, RAFT_MSG_APPEND, 3);
    assert_non_null(a);
    assert_int_equal(a->index, 0);
    assert_int_equal(a->n_entries, raft_last_index(r));
    raft_free(r);
}

static struct raft_fixture *cluster(uint32_t n, uint64_t seed)
{
    struct raft_fixture_opts o = {.n = n,
                                  .seed = seed,
                                  .election_ms = 1000,
                                  .heartbeat_ms = 100,
                                  .chunk_bytes = 64};
    struct raft_fixture *f;

    assert_int_equal(raft_fixture_new(&o, &f), 0);
    raft_fixture_net(f, 0, 0, 1, 10);
    assert_true(raft_fixture_run_until_active(f, RAFT_FIXTURE_NONE, 10000));
    return f;
}

static void assert_converged(struct raft_fixture *f, uint32_t n)
{
    uint32_t l = raft_fixture_leader(f);

    assert_int_not_equal(l, RAFT_FIXTURE_NONE);
    for (uint32_t i = 0; i < n; i++) {
        assert_int_equal(raft_fixture_applied(f, i),
                         raft_fixture_applied(f, l));
        assert_int_equal(raft_last_index(raft_fixture_core(f, i)),
                         raft_last_index(raft_fixture_core(f, l)));
    }
    assert_null(raft_fixture_error(f));
}

static void test_log_conflict_is_repaired(void **s)
{
    struct raft_fixture *f = cluster(3, 11);
    uint32_t old = raft_fixture_leader(f);
    uint64_t index;

    (void)s;
    raft_fixture_partition(f, 1u << old);
    for (int k = 0; k < 3; k++) { /* never committed */
        assert_int_equal(raft_fixture_propose(f, old, "old", 3, &index), 0);
    }
    raft_fixture_run(f, 4000);
    assert_int_not_equal(raft_fixture_leader(f), old);
    assert_int_equal(
        raft_fixture_propose(f, raft_fixture_leader(f), "new", 3, &index), 0);
    raft_fixture_run(f, 500);
    raft_fixture_partition(f, 0);
    raft_fixture_run(f, 3000);
    assert_converged(f, 3);
    assert_true(raft_fixture_applied(f, old) >= index);
    raft_fixture_free(f);
}

static void test_snapshot_installs_in_chunks(void **s)
{
    struct raft_fixture *f = cluster(3, 12);
    uint32_t l = raft_fixture_leader(f);
    uint32_t x = (l + 1) % 3;
    uint64_t index;

    (void)s;
    raft_fixture_crash(f, x);
    for (int k = 0; k < 20; k++) {
        assert_int_equal(raft_fixture_propose(f, l, "entry", 5, &index), 0);
    }
    raft_fixture_run(f, 1000);
    assert_int_equal(raft_fixture_applied(f, l), index);
    assert_int_equal(raft_fixture_snapshot(f, l), 0);
    assert_int_equal(raft_fixture_snapshot(f, (l + 2) % 3), 0);
    assert_int_equal(raft_fixture_restart(f, x), 0);
    raft_fixture_run(f, 3000);
    assert_converged(f, 3);
    /* 22 records of 24 bytes, 64-byte chunks. */
    assert_true(raft_fixture_sent_type(f, l, RAFT_MSG_SNAPSHOT) >= 8);
    raft_fixture_free(f);
}

static void test_snapshot_chunk_out_of_order_is_refused(void **s)
{
    struct raft_msg m = msg(RAFT_MSG_SNAPSHOT, 1, 2, 1);
    struct raft_fixture_rd rd;
    const struct raft_msg *resp;
    struct raft *r;

    (void)s;
    assert_int_equal(raft_fixture_one(2, 3, NULL, NULL, 0, &r), 0);
    m.index = 7;
    m.log_term = 1;
    m.offset = 4; /* the first chunk is missing */
    m.data = (const uint8_t *)"efgh";
    m.len = 4;
    assert_int_equal(raft_step(r, &m, 10), 0);
    assert_int_equal(raft_fixture_one_ready(r, &rd), 0);
    resp = raft_fixture_rd_msg(&rd, RAFT_MSG_SNAPSHOT_RESP, 1);
    assert_non_null(resp);
    assert_false(resp->success);
    assert_int_equal(resp->offset, 0);

    m.offset = 0;
    m.data = (const uint8_t *)"abcd";
    assert_int_equal(raft_step(r, &m, 20), 0);
    m.offset = 4;
    m.data = (const uint8_t *)"efgh";
    m.done = true;
    assert_int_equal(raft_step(r, &m, 30), 0);
    assert_int_equal(raft_fixture_one_ready(r, &rd), 0);
    assert_true(rd.has_snapshot);
    resp = &rd.msgs[rd.n_msgs - 1];
    assert_int_equal(resp->type, RAFT_MSG_SNAPSHOT_RESP);
    assert_true(resp->done);
    assert_int_equal(resp->match, 7);
    assert_int_equal(raft_commit_index(r), 7);
    assert_int_equal(raft_last_index(r), 7);
    raft_free(r);
}

static void test_leader_counts_a_new_disk_only_once_readmitted(void **s)
{
    struct raft *r = leader_of_term_2();
    struct raft_msg m = ack(2, 2, 77); /* member 2 lost its disk: nonce 77 */
    struct raft_fixture_rd rd;

    (void)s;
    assert_int_equal(raft_step(r, &m, 2010), 0);
    assert_int_equal(raft_commit_index(r), 0); /* 2 does not count */
    assert_int_equal(raft_last_index(r), 3);   /* READMIT(2, 77) */
    assert_int_equal(raft_fixture_one_ready(r, &rd), 0);
    m = ack(3, 3, 0);
    assert_int_equal(raft_step(r, &m, 2020), 0);
    assert_int_equal(raft_commit_index(r), 3);
    assert_int_equal(raft_fixture_one_ready(r, &rd), 0);
    assert_int_equal(rd.n_committed, 3); /* READMIT applied: 2 counts */
    m = ack(2, 3, 77);
    assert_int_equal(raft_step(r, &m, 2030), 0);
    assert_int_equal(peer_match(r, 2), 3);
    raft_free(r);
}

static void test_member_that_lost_its_disk_is_readmitted(void **s)
{
    struct raft_fixture *f = cluster(3, 13);
    uint32_t l = raft_fixture_leader(f);
    uint32_t x = (l + 1) % 3;
    uint64_t index;

    (void)s;
    for (int k = 0; k < 5; k++) {
        assert_int_equal(raft_fixture_propose(f, l, "entry", 5, &index), 0);
    }
    raft_fixture_run(f, 1000);
    assert_int_equal(raft_fixture_lose_disk(f, x), 0);
    assert_true(raft_fixture_is_pending(f, x));
    raft_fixture_run(f, 3000);
    assert_false(raft_fixture_is_pending(f, x));
    assert_true(raft_fixture_was_readmitted(f, x));
    assert_converged(f, 3);
    raft_fixture_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_commit_counts_only_entries_of_the_current_term),
        cmocka_unit_test(test_stale_answers_never_lower_match),
        cmocka_unit_test(test_silent_follower_gets_one_batch_at_a_time),
        cmocka_unit_test(test_log_conflict_is_repaired),
        cmocka_unit_test(test_snapshot_installs_in_chunks),
        cmocka_unit_test(test_snapshot_chunk_out_of_order_is_refused),
        cmocka_unit_test(test_leader_counts_a_new_disk_only_once_readmitted),
        cmocka_unit_test(test_member_that_lost_its_disk_is_readmitted),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
