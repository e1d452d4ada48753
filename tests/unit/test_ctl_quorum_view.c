/* SPDX-License-Identifier: Apache-2.0 */
/* The quorum's rows for `weir cluster` (controller/ctl_quorum_view.c):
 * states from the transport and the last contact, log ends and lags from
 * the leader's match indexes, and the QuorumStatus message built from
 * them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "controller/ctl_quorum_view.h"

#define TQV_NOW     100000
#define TQV_TIMEOUT 1000

struct tqv {
    struct raft_voters voters;
    struct raft_peer_status peers[RAFT_MAX_VOTERS];
    struct raft_net_peer_stats links[RAFT_MAX_VOTERS];
    struct ctl_quorum_view_in in;
    struct ctl_quorum_voter rows[RAFT_MAX_VOTERS];
};

/* Voters 1..3 on 127.0.0.1:900i; leader 2 at log end 50; both others
 * connected, heard from just now, caught up. */
static void tqv_init(struct tqv *t)
{
    struct err_detail ed;
    uint32_t n = 0;

    memset(t, 0, sizeof(*t));
    err_detail_clear(&ed);
    assert_int_equal(raft_voters_parse("1@127.0.0.1:9001,2@127.0.0.1:9002,"
                                       "3@127.0.0.1:9003",
                                       &t->voters, &ed),
                     0);
    for (uint32_t id = 1; id <= 3; id++) {
        t->peers[id - 1].id = id;
        t->peers[id - 1].match = 50;
        t->peers[id - 1].last_contact_ms = TQV_NOW;
        if (id != 2) {
            t->links[n].id = id;
            t->links[n].connected = true;
            t->links[n].last_contact_ms = TQV_NOW;
            n++;
        }
    }
    t->in.self = 2;
    t->in.now_ms = TQV_NOW;
    t->in.election_timeout_ms = TQV_TIMEOUT;
    t->in.voters = &t->voters;
    t->in.peers = t->peers;
    t->in.n_peers = 3;
    t->in.links = t->links;
    t->in.n_links = n;
}

static void test_all_caught_up(void **state)
{
    struct tqv t;

    (void)state;
    tqv_init(&t);
    assert_int_equal(ctl_quorum_view_rows(&t.in, t.rows, RAFT_MAX_VOTERS), 3);
    for (uint32_t i = 0; i < 3; i++) {
        assert_int_equal(t.rows[i].id, i + 1);
        assert_int_equal(t.rows[i].log_end, 50);
        assert_int_equal(t.rows[i].lag, 0);
    }
    assert_string_equal(t.rows[0].address, "127.0.0.1:9001");
    assert_string_equal(t.rows[2].address, "127.0.0.1:9003");
    assert_int_equal(t.rows[0].state, CTL_QUORUM_STATE_FOLLOWER);
    assert_int_equal(t.rows[1].state, CTL_QUORUM_STATE_LEADER);
    assert_int_equal(t.rows[2].state, CTL_QUORUM_STATE_FOLLOWER);
}

static void test_lag_from_match(void **state)
{
    struct tqv t;

    (void)state;
    tqv_init(&t);
    t.peers[0].match = 42; /* voter 1: 8 behind */
    t.peers[2].match = 0;  /* voter 3: no answer in this term yet */
    assert_int_equal(ctl_quorum_view_rows(&t.in, t.rows, RAFT_MAX_VOTERS), 3);
    assert_int_equal(t.rows[0].log_end, 42);
    assert_int_equal(t.rows[0].lag, 8);
    assert_int_equal(t.rows[1].lag, 0);
    assert_int_equal(t.rows[2].log_end, 0);
    assert_int_equal(t.rows[2].lag, 50);
    /* a match past the leader's durable end (it acked entries the
     * leader has not fsynced yet) is not a negative lag */
    t.peers[0].match = 51;
    (void)ctl_quorum_view_rows(&t.in, t.rows, RAFT_MAX_VOTERS);
    assert_int_equal(t.rows[0].lag, 0);
}

static void test_unreachable(void **state)
{
    struct tqv t;

    (void)state;
    tqv_init(&t);
    /* no connection: unreachable at once, though heard from just now */
    t.links[0].connected = false;
    /* connected, but silent for longer than the election timeout */
    t.peers[2].last_contact_ms = TQV_NOW - TQV_TIMEOUT - 1;
    (void)ctl_quorum_view_rows(&t.in, t.rows, RAFT_MAX_VOTERS);
    assert_int_equal(t.rows[0].state, CTL_QUORUM_STATE_UNREACHABLE);
    assert_int_equal(t.rows[1].state, CTL_QUORUM_STATE_LEADER);
    assert_int_equal(t.rows[2].state, CTL_QUORUM_STATE_UNREACHABLE);
    /* its log end stays the last one the leader knew */
    assert_int_equal(t.rows[0].log_end, 50);
    /* exactly the election timeout: still a follower */
    t.peers[2].last_contact_ms = TQV_NOW - TQV_TIMEOUT;
    (void)ctl_quorum_view_rows(&t.in, t.rows, RAFT_MAX_VOTERS);
    assert_int_equal(t.rows[2].state, CTL_QUORUM_STATE_FOLLOWER);
    /* a contact stamped after now (a clock step) is not silence */
    t.peers[2].last_contact_ms = TQV_NOW + 5;
    (void)ctl_quorum_view_rows(&t.in, t.rows, RAFT_MAX_VOTERS);
    assert_int_equal(t.rows[2].state, CTL_QUORUM_STATE_FOLLOWER);
    /* no transport row, or no core row: unreachable, log end 0 */
    t.in.n_links = 1; /* voter 1's only */
    t.in.n_peers = 2; /* voters 1 and 2 */
    (void)ctl_quorum_view_rows(&t.in, t.rows, RAFT_MAX_VOTERS);
    assert_int_equal(t.rows[2].state, CTL_QUORUM_STATE_UNREACHABLE);
    assert_int_equal(t.rows[2].log_end, 0);
}

static void test_cap_and_single(void **state)
{
    struct tqv t;
    struct err_detail ed;

    (void)state;
    tqv_init(&t);
    assert_int_equal(ctl_quorum_view_rows(&t.in, t.rows, 2), 2);
    assert_int_equal(t.rows[1].id, 2);
    /* a quorum of one: the leader alone */
    err_detail_clear(&ed);
    assert_int_equal(raft_voters_parse("7@h:1", &t.voters, &ed), 0);
    t.peers[0].id = 7;
    t.peers[0].match = 3;
    t.in.self = 7;
    t.in.n_peers = 1;
    t.in.n_links = 0;
    assert_int_equal(ctl_quorum_view_rows(&t.in, t.rows, RAFT_MAX_VOTERS), 1);
    assert_int_equal(t.rows[0].state, CTL_QUORUM_STATE_LEADER);
    assert_int_equal(t.rows[0].log_end, 3);
    assert_int_equal(t.rows[0].lag, 0);
    assert_string_equal(t.rows[0].address, "h:1");
}

static void test_message(void **state)
{
    struct tqv t;
    struct ctl_quorum_pb pb;
    Weir__QuorumStatus *qs;

    (void)state;
    tqv_init(&t);
    t.links[1].connected = false; /* voter 3 */
    t.peers[2].match = 47;
    memset(&pb, 0xa5, sizeof(pb)); /* nothing read before it is written */
    pb.n_rows = ctl_quorum_view_rows(&t.in, pb.rows, RAFT_MAX_VOTERS);
    qs = ctl_quorum_view_pb(&pb, 9, 2);
    assert_ptr_equal(qs, &pb.status);
    assert_int_equal(qs->term, 9);
    assert_int_equal(qs->leader_id, 2);
    assert_int_equal(qs->n_voters, 3);
    assert_int_equal(qs->voters[0]->id, 1);
    assert_string_equal(qs->voters[0]->address, "127.0.0.1:9001");
    assert_int_equal(qs->voters[0]->state, 2);
    assert_int_equal(qs->voters[1]->state, 1);
    assert_int_equal(qs->voters[2]->state, 3);
    assert_int_equal(qs->voters[2]->log_end, 47);
    assert_int_equal(qs->voters[2]->lag, 3);
    /* it encodes (every pointer set) */
    assert_true(weir__quorum_status__get_packed_size(qs) > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_caught_up),
        cmocka_unit_test(test_lag_from_match),
        cmocka_unit_test(test_unreachable),
        cmocka_unit_test(test_cap_and_single),
        cmocka_unit_test(test_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
