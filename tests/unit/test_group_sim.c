/* SPDX-License-Identifier: Apache-2.0 */
/* Seeded random runs of one group core: clients join, sync, heartbeat,
 * commit, leave, go silent and come back, on random time steps; the
 * adapter reports the group records committed (or failed) some steps
 * after they were asked for; the coordinator fails over at random
 * moments, its successor restoring the group from a record its log holds
 * (the last committed one, or a later one it may have received), and the
 * parked requests are lost. After every step: the core's invariants hold,
 * the generation never goes back (but at a failover), no generation is
 * handed out twice (one leader answer each, across failovers), no join is
 * answered before the record of its generation is committed nor a sync
 * before the record of its assignment, every answer is for a parked
 * request and answers it once, a STABLE group's assignments are the ones
 * its leader sent. At the end every client leaves and nothing is left
 * unanswered. A failing run prints its seed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "broker/group/group_core.h"
#include "tests/unit/test_group_fixture.h"

#define SIM_CLIENTS  10
#define SIM_STEPS    4000
#define SIM_MAX_REQS (SIM_STEPS + 16)
#define SIM_MAX_GENS (SIM_STEPS + 16)
#define SIM_RING     8 /* group records kept for failovers */

struct sim_client {
    char member_id[64]; /* "" before the first answer */
    int32_t generation;
    bool is_leader;
    char members[SIM_CLIENTS * 2][64]; /* the leader's list */
    size_t n_members;
    bool waiting; /* a join or sync is parked */
    bool synced;
    uint64_t silent_until_ms;
};

struct sim {
    uint64_t rng;
    uint64_t seed;
    struct group_config cfg;
    struct group_core *g;
    struct group_actions out;
    uint64_t now_ms;
    uint64_t next_request;
    int req_client[SIM_MAX_REQS];     /* -1: not parked */
    int leader_answers[SIM_MAX_GENS]; /* per generation */
    int32_t last_generation;
    struct sim_client c[SIM_CLIENTS];
    int tokens;
    unsigned stable_steps; /* coverage: the run must not stay stuck */
    unsigned answers;
    /* the adapter: records asked for, reported, committed */
    struct gfx_record recs[SIM_RING]; /* by seq % SIM_RING */
    struct gfx_record base;           /* what a successor restored */
    uint64_t written;
    uint64_t told;
    uint64_t committed;
    int32_t durable_gen;      /* newest generation in a committed record */
    int32_t durable_assigned; /* ... in one with the assignment */
    unsigned failovers;
};

static uint64_t sim_rand(struct sim *s)
{
    s->rng ^= s->rng << 13;
    s->rng ^= s->rng >> 7;
    s->rng ^= s->rng << 17;
    return s->rng;
}

static unsigned sim_below(struct sim *s, unsigned n)
{
    return (unsigned)(sim_rand(s) % n);
}

static void sim_fail(const struct sim *s, const char *what)
{
    print_error("seed %llu at %llu ms: %s\n", (unsigned long long)s->seed,
                (unsigned long long)s->now_ms, what);
    fail();
}

static void
sim_assignment_text(const char *member_id, int32_t gen, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s@%d", member_id, (int)gen);
}

static void sim_on_join_answer(struct sim *s,
                               struct sim_client *c,
                               const struct group_answer *a)
{
    size_t i;

    if (a->error != 0) {
        if (a->error == WEIR_EUNKNOWN_MEMBER_ID) {
            c->member_id[0] = '\0';
        } else if (a->error == WEIR_ECOORDINATOR_NOT_AVAILABLE) {
            c->generation = -1; /* its record failed: join again */
        }
        return;
    }
    snprintf(c->member_id, sizeof(c->member_id), "%s", a->member_id);
    c->generation = a->generation_id;
    c->synced = false;
    c->is_leader = strcmp(a->leader_id, a->member_id) == 0;
    if (a->generation_id < s->last_generation) {
        sim_fail(s, "join answered with an old generation");
    }
    if (a->generation_id > s->durable_gen) {
        sim_fail(s, "join answered before its generation's record was "
                    "committed");
    }
    if (c->is_leader) {
        if (++s->leader_answers[a->generation_id] > 1) {
            sim_fail(s, "a generation handed out twice (two leaders)");
        }
        assert_true(a->n_members <= SIM_CLIENTS * 2);
        c->n_members = a->n_members;
        for (i = 0; i < a->n_members; i++) {
            snprintf(c->members[i], sizeof(c->members[i]), "%s",
                     a->members[i].member_id);
            assert_true(a->members[i].metadata.len > 0);
        }
    } else if (a->n_members != 0) {
        sim_fail(s, "a follower got the member list");
    }
}

static void sim_on_sync_answer(struct sim *s,
                               struct sim_client *c,
                               const struct group_answer *a)
{
    char want[96];

    if (a->error != 0) {
        c->generation = -1; /* join again */
        return;
    }
    if (c->generation > s->durable_assigned) {
        sim_fail(s, "sync answered before its assignment's record was "
                    "committed");
    }
    sim_assignment_text(c->member_id, c->generation, want, sizeof(want));
    if (a->assignment.len != strlen(want) ||
        memcmp(a->assignment.p, want, a->assignment.len) != 0) {
        sim_fail(s, "sync answered with someone else's assignment");
    }
    c->synced = true;
}

static void sim_deliver(struct sim *s)
{
    size_t i;

    for (i = 0; i < s->out.n_answers; i++) {
        const struct group_answer *a = &s->out.answers[i];
        int k;

        if (a->request_id >= SIM_MAX_REQS || s->req_client[a->request_id] < 0) {
            sim_fail(s, "an answer for no parked request (or twice)");
        }
        k = s->req_client[a->request_id];
        s->req_client[a->request_id] = -1;
        s->c[k].waiting = false;
        s->answers++;
        if (a->type == GROUP_EV_JOIN) {
            sim_on_join_answer(s, &s->c[k], a);
        } else {
            sim_on_sync_answer(s, &s->c[k], a);
        }
    }
}

static void sim_check(struct sim *s)
{
    struct group_view v;
    char want[96];
    size_t i;

    if (group_core_check_invariants(s->g) != 0) {
        sim_fail(s, "core invariants");
    }
    group_core_describe(s->g, &v);
    if (v.generation_id < s->last_generation) {
        sim_fail(s, "generation went back");
    }
    s->last_generation = v.generation_id;
    if (v.state != GROUP_STABLE) {
        return;
    }
    s->stable_steps++;
    for (i = 0; i < v.n_members; i++) {
        sim_assignment_text(v.members[i].member_id, v.generation_id, want,
                            sizeof(want));
        if (v.members[i].assignment.len != strlen(want) ||
            memcmp(v.members[i].assignment.p, want, strlen(want)) != 0) {
            sim_fail(s, "STABLE member without its assignment");
        }
    }
}

static void sim_step(struct sim *s, struct group_event *ev, int k);

/* The adapter reports a record: usually the newest, sometimes an older
 * one still unreported; sometimes it failed. Records of a group are
 * committed in order, so a commit covers every earlier record. */
static void sim_report(struct sim *s)
{
    struct group_event ev = {.type = GROUP_EV_PERSISTED};
    uint64_t seq = s->written;
    uint64_t oldest = s->written > SIM_RING ? s->written - SIM_RING + 1 : 1;
    const struct gfx_record *r;

    if (oldest <= s->told) {
        oldest = s->told + 1;
    }
    if (s->written <= s->told) {
        return;
    }
    if (sim_below(s, 4) == 0) {
        seq = oldest + sim_below(s, (unsigned)(s->written - oldest + 1));
    }
    ev.u.persisted.seq = seq;
    ev.u.persisted.error =
        sim_below(s, 20) == 0 ? WEIR_ECOORDINATOR_NOT_AVAILABLE : 0;
    if (ev.u.persisted.error == 0) {
        r = &s->recs[seq % SIM_RING];
        s->committed = seq;
        if (r->v.generation_id > s->durable_gen) {
            s->durable_gen = r->v.generation_id;
        }
        if (!r->v.assignment_pending &&
            r->v.generation_id > s->durable_assigned) {
            s->durable_assigned = r->v.generation_id;
        }
    }
    s->told = seq;
    sim_step(s, &ev, 0);
}

/* The coordinator dies. Its successor loads the last committed record,
 * or a later one its log may hold (written, not known committed); the
 * parked requests are lost and their clients join again. */
static void sim_failover(struct sim *s)
{
    const struct gfx_record *r = &s->base;
    struct group_view v;
    size_t i;
    int k;

    if (s->committed > 0 && s->committed + SIM_RING > s->written) {
        r = &s->recs[s->committed % SIM_RING];
    }
    if (s->written > s->committed && sim_below(s, 2) == 0) {
        uint64_t seq =
            s->written - sim_below(s, (unsigned)(s->written - s->committed));
        if (seq + SIM_RING > s->written) {
            r = &s->recs[seq % SIM_RING];
        }
    }
    if (r != &s->base) {
        gfx_record_copy(&s->base, r);
    }
    /* what the successor loads is its log: committed from now on */
    if (s->base.valid && s->base.v.generation_id > s->durable_gen) {
        s->durable_gen = s->base.v.generation_id;
    }
    if (s->base.valid && !s->base.v.assignment_pending &&
        s->base.v.generation_id > s->durable_assigned) {
        s->durable_assigned = s->base.v.generation_id;
    }
    group_core_free(s->g);
    assert_int_equal(group_core_new(&s->cfg, "sim", &s->g), 0);
    if (s->base.valid) {
        assert_int_equal(group_core_restore(s->g, &s->base.v, s->now_ms), 0);
    }
    assert_int_equal(group_core_check_invariants(s->g), 0);
    memset(s->recs, 0, sizeof(s->recs));
    s->written = s->told = s->committed = 0;
    for (i = 0; i < SIM_MAX_REQS; i++) {
        k = s->req_client[i];
        if (k >= 0) {
            s->req_client[i] = -1;
            s->c[k].waiting = false;
            s->c[k].generation = -1; /* NOT_COORDINATOR: join again */
        }
    }
    group_core_describe(s->g, &v);
    s->last_generation = v.generation_id;
    s->failovers++;
}

static void sim_step(struct sim *s, struct group_event *ev, int k)
{
    bool parks = ev->type == GROUP_EV_JOIN || ev->type == GROUP_EV_SYNC;

    ev->now_ms = s->now_ms;
    if (parks) {
        ev->request_id = s->next_request++;
        s->req_client[ev->request_id] = k;
        s->c[k].waiting = true;
    }
    assert_int_equal(group_core_step(s->g, ev, &s->out), 0);
    if (s->out.next_tick_ms != UINT64_MAX && s->out.next_tick_ms < s->now_ms) {
        sim_fail(s, "next tick in the past");
    }
    if (s->out.persist) {
        if (s->out.persist_seq <= s->written) {
            sim_fail(s, "a record asked for twice");
        }
        s->written = s->out.persist_seq;
        gfx_record_take(s->g, &s->recs[s->written % SIM_RING]);
    }
    sim_deliver(s);
    if (parks && s->out.result != 0) {
        if (s->req_client[ev->request_id] < 0) {
            sim_fail(s, "refused and answered");
        }
        s->req_client[ev->request_id] = -1;
        s->c[k].waiting = false;
        if (s->out.result == WEIR_EUNKNOWN_MEMBER_ID) {
            s->c[k].member_id[0] = '\0';
        } else if (ev->type == GROUP_EV_SYNC) {
            s->c[k].generation = -1; /* join again */
        }
    }
    sim_check(s);
}

static void sim_join(struct sim *s, int k)
{
    struct sim_client *c = &s->c[k];
    struct group_event ev = {.type = GROUP_EV_JOIN};
    struct group_protocol p[3] = {
        {"range", {(const uint8_t *)"r", 1}},
        {"rr", {(const uint8_t *)"rr", 2}},
        {"sticky", {(const uint8_t *)"s", 1}},
    };
    char client[16];
    char token[16];
    unsigned first = sim_below(s, 3);

    snprintf(client, sizeof(client), "c%d", k);
    snprintf(token, sizeof(token), "t%d", ++s->tokens);
    ev.member_id = c->member_id;
    ev.u.join.client_id = client;
    ev.u.join.new_member_token = token;
    ev.u.join.session_timeout_ms = 3000 + sim_below(s, 5000);
    ev.u.join.rebalance_timeout_ms = 2000 + sim_below(s, 8000);
    ev.u.join.protocol_type = sim_below(s, 50) == 0 ? "other" : "consumer";
    /* some clients support only "sticky": sometimes inconsistent */
    ev.u.join.protocols = &p[first];
    ev.u.join.n_protocols = 3 - first;
    sim_step(s, &ev, k);
}

static void sim_sync(struct sim *s, int k)
{
    struct sim_client *c = &s->c[k];
    struct group_event ev = {.type = GROUP_EV_SYNC};
    struct group_assignment as[SIM_CLIENTS * 2];
    char text[SIM_CLIENTS * 2][96];
    size_t i;

    ev.member_id = c->member_id;
    ev.generation_id = c->generation;
    if (c->is_leader) {
        for (i = 0; i < c->n_members; i++) {
            sim_assignment_text(c->members[i], c->generation, text[i],
                                sizeof(text[i]));
            as[i].member_id = c->members[i];
            as[i].assignment.p = (const uint8_t *)text[i];
            as[i].assignment.len = strlen(text[i]);
        }
        ev.u.sync.assignments = as;
        ev.u.sync.n_assignments = c->n_members;
    }
    sim_step(s, &ev, k);
}

static void sim_simple(struct sim *s, int k, enum group_event_type type)
{
    struct sim_client *c = &s->c[k];
    struct group_event ev = {.type = type};

    ev.member_id = c->member_id;
    ev.generation_id =
        sim_below(s, 20) == 0 ? c->generation - 1 : c->generation;
    sim_step(s, &ev, k);
    if (type == GROUP_EV_LEAVE) {
        c->member_id[0] = '\0';
    } else if (s->out.result == WEIR_EREBALANCE_IN_PROGRESS ||
               s->out.result == WEIR_EILLEGAL_GENERATION) {
        c->synced = false;
        c->generation = -1; /* join again */
    } else if (s->out.result == WEIR_EUNKNOWN_MEMBER_ID) {
        c->member_id[0] = '\0';
    }
}

/* A well-behaved client most of the time, a confused one sometimes. */
static void sim_act(struct sim *s, int k)
{
    struct sim_client *c = &s->c[k];
    unsigned r = sim_below(s, 100);

    if (c->silent_until_ms > s->now_ms) {
        return;
    }
    if (r < 1) {
        c->silent_until_ms = s->now_ms + sim_below(s, 15000);
    } else if (r < 2 && c->member_id[0] != '\0') {
        sim_simple(s, k, GROUP_EV_LEAVE);
    } else if (c->waiting && r >= 3) {
        return;
    } else if (c->member_id[0] == '\0' || c->generation < 0 || r < 3) {
        sim_join(s, k);
    } else if (!c->synced) {
        sim_sync(s, k);
    } else {
        sim_simple(s, k, r < 50 ? GROUP_EV_HEARTBEAT : GROUP_EV_COMMIT);
    }
}

static void sim_drain(struct sim *s)
{
    struct group_event ev = {.type = GROUP_EV_TICK};
    size_t i;
    int k;

    for (k = 0; k < SIM_CLIENTS; k++) {
        if (s->c[k].member_id[0] != '\0') {
            sim_simple(s, k, GROUP_EV_LEAVE);
        }
    }
    /* members a client lost track of (a second join sent with "" while
     * the first was parked) time out too: the rebalance, then a session */
    for (k = 0; k < 3 && !group_core_is_empty(s->g); k++) {
        s->now_ms += 1000000;
        sim_step(s, &ev, 0);
    }
    assert_true(group_core_is_empty(s->g));
    for (i = 0; i < SIM_MAX_REQS; i++) {
        if (s->req_client[i] >= 0) {
            sim_fail(s, "a parked request was never answered");
        }
    }
}

/* Every third step or so the adapter reports a record; now and then the
 * coordinator fails over (failovers per 1000 steps). */
static void sim_adapter(struct sim *s, unsigned failovers_per_1000)
{
    if (sim_below(s, 3) == 0) {
        sim_report(s);
    }
    if (sim_below(s, 1000) < failovers_per_1000) {
        sim_failover(s);
    }
}

static void
sim_run(uint64_t seed, uint32_t initial_delay_ms, unsigned failovers_per_1000)
{
    static struct sim sim;
    struct sim *s = &sim;
    struct group_event tick = {.type = GROUP_EV_TICK};
    int step;
    int k;

    memset(s, 0, sizeof(*s));
    memset(s->req_client, -1, sizeof(s->req_client));
    s->seed = seed;
    s->rng = seed * 0x9E3779B97F4A7C15ull + 1;
    s->next_request = 1;
    for (k = 0; k < SIM_CLIENTS; k++) {
        s->c[k].generation = -1;
    }
    group_config_init(&s->cfg);
    s->cfg.initial_rebalance_delay_ms = initial_delay_ms;
    s->cfg.max_members = SIM_CLIENTS - 2;
    group_actions_init(&s->out);
    assert_int_equal(group_core_new(&s->cfg, "sim", &s->g), 0);
    for (step = 0; step < SIM_STEPS; step++) {
        if (sim_below(s, 4) == 0) {
            uint64_t dt = sim_below(s, 800);

            if (s->out.next_tick_ms != UINT64_MAX &&
                s->out.next_tick_ms < s->now_ms + dt && sim_below(s, 2)) {
                dt = s->out.next_tick_ms - s->now_ms;
            }
            s->now_ms += dt;
            sim_step(s, &tick, 0);
        } else {
            sim_act(s, (int)sim_below(s, SIM_CLIENTS));
        }
        sim_adapter(s, failovers_per_1000);
        if (sim_below(s, 500) == 0 && group_core_is_empty(s->g)) {
            /* deleted (a tombstone): a new group starts from 0 */
            assert_true(group_core_delete(s->g));
            group_core_free(s->g);
            assert_int_equal(group_core_new(&s->cfg, "sim", &s->g), 0);
            s->last_generation = 0;
            memset(s->leader_answers, 0, sizeof(s->leader_answers));
            memset(s->recs, 0, sizeof(s->recs));
            memset(&s->base, 0, sizeof(s->base));
            s->written = s->told = s->committed = 0;
            s->durable_gen = s->durable_assigned = 0;
        }
    }
    print_message("seed %llu: %u steps STABLE, %u answers, generation %d, "
                  "%u failovers\n",
                  (unsigned long long)seed, s->stable_steps, s->answers,
                  (int)s->last_generation, s->failovers);
    assert_true(s->stable_steps > SIM_STEPS / 20);
    sim_drain(s);
    group_core_free(s->g);
    group_actions_fini(&s->out);
}

static void test_random_runs_keep_invariants(void **state)
{
    uint64_t seed;

    (void)state;
    for (seed = 1; seed <= 8; seed++) {
        sim_run(seed, 0, 0);
    }
}

static void test_random_runs_with_initial_delay(void **state)
{
    uint64_t seed;

    (void)state;
    for (seed = 100; seed <= 104; seed++) {
        sim_run(seed, 3000, 0);
    }
}

/* The coordinator fails over often (about every 100 steps), restoring from
 * the last committed record or a later written one: no generation is ever
 * handed out twice. */
static void test_random_failovers_never_repeat_a_generation(void **state)
{
    uint64_t seed;

    (void)state;
    for (seed = 200; seed <= 215; seed++) {
        sim_run(seed, 0, 10);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_runs_keep_invariants),
        cmocka_unit_test(test_random_runs_with_initial_delay),
        cmocka_unit_test(test_random_failovers_never_repeat_a_generation),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
