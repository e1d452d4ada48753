/* SPDX-License-Identifier: Apache-2.0 */
/* The quorum transport over real loopback sockets: three members in one
 * process on one event_base, each with its own RPC server (port 0) feeding
 * raft_net_on_request, exchange messages; a member that is down is
 * reached once it comes up; a full queue keeps the newest frames and
 * counts the dropped ones; another cluster's messages are refused.
 * Every wait is bounded (TN_STEPS steps of at most TN_STEP_MS each). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <event2/event.h>

#include "common/clock.h"
#include "common/rpc.h"
#include "controller/quorum/raft_net.h"

#define TN_STEPS   3000 /* 3000 x 10 ms: 30 s at worst on a loaded CI */
#define TN_STEP_MS 10

struct tn_member {
    uint32_t id;
    struct srv *srv;
    struct raft_net *net;
    uint16_t port;
    uint32_t got;         /* messages delivered to the callback */
    struct raft_msg last; /* scalars of the latest one */
    uint64_t first_term;  /* term of the first one */
};

struct tn {
    struct event_base *base;
    struct tn_member m[3];
    char voters[256];
};

static void tn_recv(void *arg, const struct raft_msg *msg)
{
    struct tn_member *m = arg;

    if (m->got == 0) {
        m->first_term = msg->term;
    }
    m->got++;
    m->last = *msg;
    m->last.entries = NULL;
    m->last.data = NULL;
}

static void tn_on_request(void *arg, struct srv_req *req)
{
    struct tn_member *m = arg;
    Weir__Request *r = NULL;
    struct err_detail ed;

    if (rpc_request_decode(req->header, req->payload_len, &r, &ed) != 0 ||
        m->net == NULL) {
        rpc_request_free(r);
        srv_req_finish(req);
        return;
    }
    raft_net_on_request(m->net, req, r);
    rpc_request_free(r);
}

static void tn_listen(struct tn *t, struct tn_member *m, uint16_t port)
{
    struct srv_config sc;
    struct err_detail ed;
    char addr[64];

    memset(&sc, 0, sizeof(sc));
    sc.max_frame_bytes = 8u * 1024 * 1024;
    sc.max_header_bytes = 1024 * 1024;
    sc.max_connections = 100;
    sc.max_connections_per_ip = 100;
    sc.max_inflight_per_conn = 64;
    sc.idle_timeout_ms = 600000;
    sc.frame_timeout_ms = 30000;
    (void)snprintf(addr, sizeof(addr), "127.0.0.1:%u", (unsigned)port);
    assert_int_equal(
        srv_open(t->base, addr, &sc, tn_on_request, m, &m->srv, &ed), 0);
    m->port = srv_port(m->srv);
}

static void tn_net_backoff(struct tn *t,
                           struct tn_member *m,
                           const char *cluster,
                           uint32_t queue_max,
                           uint32_t backoff_min_ms,
                           uint32_t backoff_max_ms)
{
    struct raft_net_config c;
    struct raft_voters vs;
    struct err_detail ed;

    assert_int_equal(raft_voters_parse(t->voters, &vs, &ed), 0);
    memset(&c, 0, sizeof(c));
    c.id = m->id;
    c.voters = &vs;
    c.cluster_id = cluster;
    c.clock = clock_system();
    c.queue_max = queue_max;
    c.backoff_min_ms = backoff_min_ms;
    c.backoff_max_ms = backoff_max_ms;
    c.seed = m->id;
    assert_int_equal(raft_net_open(t->base, &c, tn_recv, m, &m->net, &ed), 0);
}

static void tn_net(struct tn *t,
                   struct tn_member *m,
                   const char *cluster,
                   uint32_t queue_max)
{
    tn_net_backoff(t, m, cluster, queue_max, 10, 100);
}

/* Servers for all three (so the voter text has real ports); a member in
 * `down` gets its port and loses its server again. */
static void tn_setup(struct tn *t, int down)
{
    int i;

    memset(t, 0, sizeof(*t));
    t->base = event_base_new();
    assert_non_null(t->base);
    for (i = 0; i < 3; i++) {
        t->m[i].id = (uint32_t)i + 1;
        tn_listen(t, &t->m[i], 0);
    }
    (void)snprintf(t->voters, sizeof(t->voters),
                   "1@127.0.0.1:%u,2@127.0.0.1:%u,3@127.0.0.1:%u",
                   (unsigned)t->m[0].port, (unsigned)t->m[1].port,
                   (unsigned)t->m[2].port);
    if (down >= 0) {
        srv_close(t->m[down].srv);
        t->m[down].srv = NULL;
    }
}

static void tn_teardown(struct tn *t)
{
    int i;

    for (i = 0; i < 3; i++) {
        raft_net_close(t->m[i].net);
        srv_close(t->m[i].srv);
    }
    event_base_free(t->base);
}

/* Run the loop until *count >= want, in bounded steps. */
static bool tn_wait(struct tn *t, const uint32_t *count, uint32_t want)
{
    struct timeval tv = {0, TN_STEP_MS * 1000};
    int i;

    for (i = 0; i < TN_STEPS && *count < want; i++) {
        (void)event_base_loopexit(t->base, &tv);
        (void)event_base_dispatch(t->base);
    }
    return *count >= want;
}

/* Run the loop for about ms. */
static void tn_run(struct tn *t, uint32_t ms)
{
    struct timeval tv = {0, TN_STEP_MS * 1000};
    uint32_t i;

    for (i = 0; i < ms / TN_STEP_MS; i++) {
        (void)event_base_loopexit(t->base, &tv);
        (void)event_base_dispatch(t->base);
    }
}

static struct raft_msg tn_vote(uint32_t from, uint32_t to, uint64_t term)
{
    struct raft_msg m;

    memset(&m, 0, sizeof(m));
    m.type = RAFT_MSG_VOTE;
    m.from = from;
    m.to = to;
    m.term = term;
    m.index = 3;
    m.log_term = 1;
    return m;
}

static struct raft_net_peer_stats tn_stats(struct tn_member *m, uint32_t id)
{
    struct raft_net_peer_stats rows[RAFT_MAX_VOTERS];
    uint32_t n = raft_net_stats(m->net, rows, RAFT_MAX_VOTERS);
    uint32_t i;

    for (i = 0; i < n; i++) {
        if (rows[i].id == id) {
            return rows[i];
        }
    }
    fail_msg("no peer %u", id);
    return rows[0];
}

static void test_three_members_exchange_messages(void **state)
{
    static const uint8_t data[] = "entry-bytes";
    struct raft_entry e = {4, 2, RAFT_ENTRY_NORMAL, data, sizeof(data)};
    struct raft_msg app;
    struct raft_msg v;
    struct raft_net_peer_stats st;
    struct tn t;
    int i;

    (void)state;
    tn_setup(&t, -1);
    for (i = 0; i < 3; i++) {
        tn_net(&t, &t.m[i], "cluster-a", 0);
    }
    v = tn_vote(1, 2, 2);
    assert_int_equal(raft_net_send(t.m[0].net, &v), 0);
    v = tn_vote(1, 3, 2);
    assert_int_equal(raft_net_send(t.m[0].net, &v), 0);
    assert_true(tn_wait(&t, &t.m[1].got, 1));
    assert_true(tn_wait(&t, &t.m[2].got, 1));
    assert_int_equal(t.m[1].last.from, 1);
    assert_int_equal(t.m[1].last.type, RAFT_MSG_VOTE);
    /* the answer goes back the other way, on 2's own connection */
    v = tn_vote(2, 1, 2);
    v.type = RAFT_MSG_VOTE_RESP;
    v.granted = true;
    assert_int_equal(raft_net_send(t.m[1].net, &v), 0);
    assert_true(tn_wait(&t, &t.m[0].got, 1));
    assert_true(t.m[0].last.granted);
    /* an append with a payload */
    memset(&app, 0, sizeof(app));
    app.type = RAFT_MSG_APPEND;
    app.from = 1;
    app.to = 3;
    app.term = 2;
    app.index = 3;
    app.log_term = 1;
    app.commit = 3;
    app.n_entries = 1;
    app.entries = &e;
    assert_int_equal(raft_net_send(t.m[0].net, &app), 0);
    assert_true(tn_wait(&t, &t.m[2].got, 2));
    assert_int_equal(t.m[2].last.n_entries, 1);
    assert_int_equal(t.m[2].last.commit, 3);
    st = tn_stats(&t.m[2], 1);
    assert_int_equal(st.received, 2);
    assert_true(st.last_contact_ms > 0);
    st = tn_stats(&t.m[0], 3);
    assert_true(st.connected);
    assert_int_equal(st.sent, 2);
    assert_int_equal(st.dropped, 0);
    /* not a peer: refused at once */
    v = tn_vote(1, 1, 2);
    assert_int_equal(raft_net_send(t.m[0].net, &v), WEIR_EINVALID_ARGUMENT);
    v = tn_vote(1, 9, 2);
    assert_int_equal(raft_net_send(t.m[0].net, &v), WEIR_EINVALID_ARGUMENT);
    tn_teardown(&t);
}

static void test_down_peer_reached_once_up_and_full_queue_drops(void **state)
{
    struct raft_net_peer_stats st;
    struct raft_msg v;
    struct tn t;
    uint16_t port;
    uint64_t term;

    (void)state;
    tn_setup(&t, 2); /* member 3 is down */
    tn_net(&t, &t.m[0], "cluster-a", 4);
    port = t.m[2].port;
    for (term = 1; term <= 10; term++) {
        v = tn_vote(1, 3, term);
        assert_int_equal(raft_net_send(t.m[0].net, &v), 0);
    }
    /* a few failed connects with backoff; nothing goes anywhere */
    tn_run(&t, 300);
    st = tn_stats(&t.m[0], 3);
    assert_false(st.connected);
    assert_int_equal(st.queued, 4);
    assert_int_equal(st.dropped, 6);
    assert_int_equal(st.sent, 0);
    /* member 3 comes up on its address: the newest four arrive */
    tn_listen(&t, &t.m[2], port);
    tn_net(&t, &t.m[2], "cluster-a", 0);
    assert_true(tn_wait(&t, &t.m[2].got, 4));
    assert_int_equal(t.m[2].first_term, 7);
    assert_int_equal(t.m[2].last.term, 10);
    st = tn_stats(&t.m[0], 3);
    assert_true(st.connected);
    assert_int_equal(st.sent, 4);
    assert_int_equal(st.queued, 0);
    assert_int_equal(st.connects, 1);
    tn_teardown(&t);
}

/* A peer that was down long enough for our backoff to reach seconds is
 * dialled as soon as a message from it shows it is up: what we queued
 * for it (a vote answer, say) goes at once, not when the backoff ends. */
static void test_peer_heard_from_is_dialled_at_once(void **state)
{
    struct raft_msg v;
    struct tn t;
    uint16_t port;
    int i;

    (void)state;
    tn_setup(&t, 2); /* member 3 is down */
    tn_net_backoff(&t, &t.m[0], "cluster-a", 4, 5000, 5000);
    port = t.m[2].port;
    v = tn_vote(1, 3, 1);
    assert_int_equal(raft_net_send(t.m[0].net, &v), 0);
    tn_run(&t, 100); /* the connect fails: next try in 2.5-5 s */
    assert_false(tn_stats(&t.m[0], 3).connected);
    tn_listen(&t, &t.m[2], port);
    tn_net(&t, &t.m[2], "cluster-a", 0);
    v = tn_vote(3, 1, 2);
    assert_int_equal(raft_net_send(t.m[2].net, &v), 0);
    /* well under the 2.5 s the backoff would take */
    for (i = 0; i < 100 && t.m[2].got < 1; i++) {
        tn_run(&t, TN_STEP_MS);
    }
    assert_int_equal(t.m[0].got, 1);
    assert_int_equal(t.m[2].got, 1);
    assert_int_equal(t.m[2].last.term, 1);
    assert_true(tn_stats(&t.m[0], 3).connected);
    tn_teardown(&t);
}

static void test_another_clusters_messages_are_refused(void **state)
{
    struct raft_net_peer_stats st;
    struct raft_msg v;
    struct tn t;
    int i;

    (void)state;
    tn_setup(&t, -1);
    tn_net(&t, &t.m[0], "cluster-a", 0);
    tn_net(&t, &t.m[1], "cluster-b", 0); /* a member of another cluster */
    tn_net(&t, &t.m[2], "cluster-a", 0);
    v = tn_vote(2, 1, 5);
    assert_int_equal(raft_net_send(t.m[1].net, &v), 0);
    v = tn_vote(3, 1, 6);
    assert_int_equal(raft_net_send(t.m[2].net, &v), 0);
    assert_true(tn_wait(&t, &t.m[0].got, 1));
    assert_int_equal(t.m[0].last.from, 3);
    /* 2's message arrives too, and is refused, not delivered */
    st = tn_stats(&t.m[0], 2);
    for (i = 0; i < TN_STEPS && st.refused == 0; i++) {
        tn_run(&t, TN_STEP_MS);
        st = tn_stats(&t.m[0], 2);
    }
    assert_int_equal(st.refused, 1);
    assert_int_equal(st.received, 0);
    assert_int_equal(t.m[0].got, 1);
    tn_teardown(&t);
}

/* The receive hook directly: a sender outside the voter set, and a message
 * for another member, never reach the callback. */
static void test_receive_checks_sender_and_addressee(void **state)
{
    Weir__RaftMessage rm = WEIR__RAFT_MESSAGE__INIT;
    struct tn t;

    (void)state;
    tn_setup(&t, -1);
    tn_net(&t, &t.m[0], "cluster-a", 0);
    rm.cluster_id = "cluster-a";
    rm.type = RAFT_MSG_VOTE;
    rm.term = 1;
    rm.voter_id = 9;
    rm.to = 1;
    assert_int_equal(raft_net_receive(t.m[0].net, &rm, NULL, 0, "test"),
                     WEIR_EINVALID_ARGUMENT);
    rm.voter_id = 2;
    rm.to = 3;
    assert_int_equal(raft_net_receive(t.m[0].net, &rm, NULL, 0, "test"),
                     WEIR_EINVALID_ARGUMENT);
    rm.to = 1;
    rm.term = RAFT_LIMIT;
    assert_int_equal(raft_net_receive(t.m[0].net, &rm, NULL, 0, "test"),
                     WEIR_EMALFORMED);
    rm.term = 1;
    assert_int_equal(raft_net_receive(t.m[0].net, &rm, NULL, 0, "test"), 0);
    assert_int_equal(t.m[0].got, 1);
    tn_teardown(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_three_members_exchange_messages),
        cmocka_unit_test(test_down_peer_reached_once_up_and_full_queue_drops),
        cmocka_unit_test(test_peer_heard_from_is_dialled_at_once),
        cmocka_unit_test(test_another_clusters_messages_are_refused),
        cmocka_unit_test(test_receive_checks_sender_and_addressee),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
