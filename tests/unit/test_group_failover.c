/* SPDX-License-Identifier: Apache-2.0 */
/* Coordinator failover at every step of a scripted group life: two
 * members join, sync, one leaves, the other rejoins, and each group record
 * is reported committed a step after it was asked for. For every step k
 * the script runs to k, then the coordinator dies; its successor restores
 * the last committed record (or, as a new leader may hold it, the last one
 * written), and a new member joins with the old ones. The property: the
 * successor loads a generation at least as new as any handed out, so the
 * next one it hands out is new - no generation id ever names two
 * memberships. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tests/unit/test_group_fixture.h"

#define FO_STEPS 15

struct fo {
    struct gfx f;
    struct gfx_record written;   /* the last record asked for */
    struct gfx_record committed; /* the last one reported committed */
    int32_t handed;              /* newest generation in a join answer */
    char id[2][64];              /* c1, c2 as they know themselves */
    int32_t gen[2];
};

/* Note what a step handed out and asked to write. */
static void fo_after(struct fo *t)
{
    size_t i;

    for (i = 0; i < t->f.out.n_answers; i++) {
        const struct group_answer *a = &t->f.out.answers[i];

        if (a->type == GROUP_EV_JOIN && a->error == 0) {
            int c = a->member_id[1] - '1'; /* "c1-..." or "c2-..." */

            assert_true(c == 0 || c == 1);
            snprintf(t->id[c], sizeof(t->id[c]), "%s", a->member_id);
            t->gen[c] = a->generation_id;
            if (a->generation_id > t->handed) {
                t->handed = a->generation_id;
            }
        }
    }
    if (t->f.out.persist) {
        gfx_record_take(t->f.g, &t->written);
    }
}

static void fo_persisted(struct fo *t)
{
    struct gfx_record r;

    gfx_record_copy(&r, &t->written); /* what the report is about */
    assert_int_equal(gfx_persisted(&t->f), 0);
    gfx_record_copy(&t->committed, &r);
}

static void fo_sync(struct fo *t, int c, bool leader)
{
    char assign[256];

    snprintf(assign, sizeof(assign), "%s=A", t->id[0]);
    if (t->id[1][0] != '\0') {
        snprintf(assign + strlen(assign), sizeof(assign) - strlen(assign),
                 ",%s=B", t->id[1]);
    }
    assert_int_equal(
        gfx_sync(&t->f, t->id[c], t->gen[c], leader ? assign : NULL), 0);
}

/* Step k of the script; persisted reports are steps of their own. */
static void fo_step(struct fo *t, int k)
{
    static const char *const client[2] = {"c1", "c2"};

    switch (k) {
    case 0: /* c1 joins an empty group: generation 1 completes */
        assert_int_equal(gfx_join(&t->f, "", client[0]), 0);
        break;
    case 4: /* c2 joins: a rebalance, waiting for c1 */
        assert_int_equal(gfx_join(&t->f, "", client[1]), 0);
        break;
    case 5: /* c1 rejoins: generation 2 completes */
    case 11:
        assert_int_equal(gfx_join(&t->f, t->id[0], client[0]), 0);
        break;
    case 2: /* the leader's assignment */
    case 7:
    case 13:
        fo_sync(t, 0, true);
        break;
    case 8:
        fo_sync(t, 1, false);
        break;
    case 10: /* c2 leaves */
        assert_int_equal(gfx_leave(&t->f, t->id[1]), 0);
        t->id[1][0] = '\0';
        break;
    default: /* 1, 3, 6, 9, 12, 14 */
        fo_persisted(t);
        break;
    }
    fo_after(t);
}

/* The successor: restore rec, then a new member and the old ones join
 * until one generation answers them all. It must be newer than any the
 * dead coordinator handed out. */
static void fo_successor(struct fo *t, const struct gfx_record *rec, int k)
{
    struct group_core *g;
    const struct group_answer *a;
    uint64_t req[3];
    int32_t restored = rec->valid ? rec->v.generation_id : 0;
    int c;

    if (restored < t->handed) {
        print_error("step %d: generation %d handed out, successor loads %d\n",
                    k, (int)t->handed, (int)restored);
        fail();
    }
    assert_int_equal(group_core_new(&t->f.cfg, "g1", &g), 0);
    if (rec->valid) {
        assert_int_equal(group_core_restore(g, &rec->v, t->f.now_ms), 0);
    }
    group_core_free(t->f.g);
    t->f.g = g;
    t->f.persist_seq = 0; /* a new core counts its records afresh */
    assert_int_equal(gfx_join(&t->f, "", "x"), 0);
    req[2] = t->f.last_request;
    for (c = 0; c < 2; c++) {
        if (t->id[c][0] == '\0') {
            req[c] = 0;
            continue;
        }
        /* unknown to the successor (not in its record): join as new */
        if (gfx_join(&t->f, t->id[c], c == 0 ? "c1" : "c2") ==
            WEIR_EUNKNOWN_MEMBER_ID) {
            assert_int_equal(gfx_join(&t->f, "", c == 0 ? "c1" : "c2"), 0);
        }
        req[c] = t->f.last_request;
    }
    /* members of the record that did not rejoin are dropped at the
     * rebalance timeout */
    if (gfx_state(&t->f) == GROUP_PREPARING_REBALANCE) {
        assert_int_equal(gfx_advance(&t->f, 5000), 0);
    }
    assert_int_equal(gfx_state(&t->f), GROUP_COMPLETING_REBALANCE);
    assert_int_equal(t->f.out.n_answers, 0); /* held for the record */
    assert_int_equal(gfx_persisted(&t->f), 0);
    a = gfx_answer(&t->f, req[2]);
    assert_non_null(a);
    assert_int_equal(a->error, 0);
    if (a->generation_id <= t->handed) {
        print_error("step %d: generation %d handed out again\n", k,
                    (int)a->generation_id);
        fail();
    }
    for (c = 0; c < 2; c++) {
        if (req[c] != 0) {
            assert_int_equal(gfx_answer(&t->f, req[c])->generation_id,
                             a->generation_id);
        }
    }
}

static void fo_run(bool from_written)
{
    struct fo t;
    int k;
    int i;

    for (k = 0; k < FO_STEPS; k++) {
        memset(&t, 0, sizeof(t));
        gfx_init(&t.f, NULL);
        for (i = 0; i <= k; i++) {
            t.f.now_ms += 10;
            fo_step(&t, i);
        }
        fo_successor(
            &t, from_written && t.written.valid ? &t.written : &t.committed, k);
        gfx_fini(&t.f);
    }
}

static void test_failover_at_every_step_from_committed_record(void **state)
{
    (void)state;
    fo_run(false);
}

static void test_failover_at_every_step_from_written_record(void **state)
{
    (void)state;
    fo_run(true);
}

/* The script itself ends as it should: c1 alone, STABLE, generation 3,
 * and it handed out 1, 2, 3 only after their records. */
static void test_script_ends_stable(void **state)
{
    struct fo t;
    int k;

    (void)state;
    memset(&t, 0, sizeof(t));
    gfx_init(&t.f, NULL);
    for (k = 0; k < FO_STEPS; k++) {
        fo_step(&t, k);
        assert_true(t.handed <= t.committed.v.generation_id);
    }
    assert_int_equal(gfx_state(&t.f), GROUP_STABLE);
    assert_int_equal(gfx_generation(&t.f), 3);
    assert_int_equal(t.handed, 3);
    gfx_fini(&t.f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_script_ends_stable),
        cmocka_unit_test(test_failover_at_every_step_from_committed_record),
        cmocka_unit_test(test_failover_at_every_step_from_written_record),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
