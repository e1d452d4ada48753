/* SPDX-License-Identifier: Apache-2.0 */
/* Partition assignors: Kafka's documented examples, then properties over
 * seeded random groups (validity, order independence, sticky balance and
 * stickiness), and the consumer protocol codec. A failing random case
 * prints its seed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "client/assignor.h"
#include "common/mem.h"

#define T_MAX_MEMBERS 11
#define T_MAX_TOPICS  6
#define T_MAX_OWNED   64
#define T_RUNS        3000

static const char *const t_topic_names[] = {"t0", "t1", "t2",
                                            "t3", "t4", "ghost"};
static const char *const t_member_names[] = {"c00", "c01", "c02", "c03",
                                             "c04", "c05", "c06", "c07",
                                             "c08", "c09", "c10"};

/* A random group: members, topics, and storage the views point into. */
struct t_group {
    struct asg_member members[T_MAX_MEMBERS];
    size_t n_members;
    struct asg_topic topics[T_MAX_TOPICS];
    size_t n_topics;
    const char *subs[T_MAX_MEMBERS][T_MAX_TOPICS];
    struct asg_tp owned[T_MAX_MEMBERS][T_MAX_OWNED];
};

static uint64_t t_rng_next(uint64_t *s)
{
    uint64_t x = *s;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *s = x;
    return x;
}

static size_t t_rng(uint64_t *s, size_t n)
{
    return (size_t)(t_rng_next(s) % n);
}

static void t_shuffle(void *base, size_t n, size_t size, uint64_t *s)
{
    unsigned char tmp[sizeof(struct asg_member)];
    unsigned char *p = base;
    size_t i;
    size_t j;

    assert_true(size <= sizeof(tmp));
    for (i = n; i > 1; i--) {
        j = t_rng(s, i);
        memcpy(tmp, p + (i - 1) * size, size);
        memcpy(p + (i - 1) * size, p + j * size, size);
        memcpy(p + j * size, tmp, size);
    }
}

/* Members 1..10, topics 1..5 of 1..20 partitions; subscriptions random
 * (identical for all when `same`), sometimes naming a missing topic. */
static void t_group_random(struct t_group *g, uint64_t *s, bool same)
{
    size_t m;
    size_t t;
    size_t k;
    size_t n;
    size_t mask = 0;

    memset(g, 0, sizeof(*g));
    g->n_members = 1 + t_rng(s, 10);
    g->n_topics = 1 + t_rng(s, 5);
    for (t = 0; t < g->n_topics; t++) {
        g->topics[t].name = t_topic_names[t];
        g->topics[t].partitions = (int32_t)(1 + t_rng(s, 20));
    }
    if (same) {
        mask = 1 + t_rng(s, (size_t)1 << (g->n_topics + 1));
    }
    for (m = 0; m < g->n_members; m++) {
        struct asg_member *mb = &g->members[m];

        mb->member_id = t_member_names[m];
        mb->topics = g->subs[m];
        n = same ? mask : t_rng(s, (size_t)1 << (g->n_topics + 1));
        for (t = 0; t <= g->n_topics; t++) {
            if ((n >> t) & 1) {
                g->subs[m][mb->n_topics++] =
                    t_topic_names[t < g->n_topics ? t : 5];
            }
        }
        mb->generation = (int32_t)t_rng(s, 4) - 1;
        mb->owned = g->owned[m];
        mb->n_owned = t_rng(s, 3) == 0 ? 0 : t_rng(s, T_MAX_OWNED);
        for (k = 0; k < mb->n_owned; k++) {
            g->owned[m][k].topic = t_topic_names[t_rng(s, 6)];
            g->owned[m][k].partition = (int32_t)t_rng(s, 22) - 1;
        }
    }
    t_shuffle(g->members, g->n_members, sizeof(g->members[0]), s);
}

static bool t_subscribes(const struct asg_member *m, const char *topic)
{
    size_t i;

    for (i = 0; i < m->n_topics; i++) {
        if (strcmp(m->topics[i], topic) == 0) {
            return true;
        }
    }
    return false;
}

/* Every partition of a subscribed topic exactly once, to a subscriber;
 * each result sorted; topic pointers from the input topics. */
static void t_check_valid(const struct t_group *g,
                          const struct asg_result *res,
                          uint64_t seed)
{
    int seen[T_MAX_TOPICS][21];
    size_t m;
    size_t t;
    size_t i;
    int32_t p;
    bool any;

    memset(seen, 0, sizeof(seen));
    for (m = 0; m < g->n_members; m++) {
        for (i = 0; i < res[m].n; i++) {
            const struct asg_tp *tp = &res[m].tps[i];

            for (t = 0; t < g->n_topics; t++) {
                if (tp->topic == g->topics[t].name) {
                    break;
                }
            }
            if (t == g->n_topics || tp->partition < 0 ||
                tp->partition >= g->topics[t].partitions ||
                !t_subscribes(&g->members[m], tp->topic)) {
                fail_msg("seed %llu: bad tp", (unsigned long long)seed);
            }
            seen[t][tp->partition]++;
            if (i > 0) {
                int c = strcmp(res[m].tps[i - 1].topic, tp->topic);

                assert_true(c < 0 || (c == 0 && res[m].tps[i - 1].partition <
                                                    tp->partition));
            }
        }
    }
    for (t = 0; t < g->n_topics; t++) {
        any = false;
        for (m = 0; m < g->n_members; m++) {
            any = any || t_subscribes(&g->members[m], g->topics[t].name);
        }
        for (p = 0; p < g->topics[t].partitions; p++) {
            if (seen[t][p] != (any ? 1 : 0)) {
                fail_msg("seed %llu: %s-%d assigned %d times",
                         (unsigned long long)seed, g->topics[t].name, p,
                         seen[t][p]);
            }
        }
    }
}

static bool t_result_equal(const struct asg_result *a,
                           const struct asg_result *b)
{
    size_t i;

    if (a->n != b->n) {
        return false;
    }
    for (i = 0; i < a->n; i++) {
        if (strcmp(a->tps[i].topic, b->tps[i].topic) != 0 ||
            a->tps[i].partition != b->tps[i].partition) {
            return false;
        }
    }
    return true;
}

static void t_expect(const struct asg_result *r, const char *want)
{
    char got[512];
    size_t used = 0;
    size_t i;

    got[0] = '\0';
    for (i = 0; i < r->n; i++) {
        used += (size_t)snprintf(got + used, sizeof(got) - used, "%s%s-%d",
                                 i > 0 ? " " : "", r->tps[i].topic,
                                 r->tps[i].partition);
        assert_true(used < sizeof(got));
    }
    assert_string_equal(got, want);
}

static const char *const t_two_topics[] = {"t0", "t1"};

static void test_range_splits_each_topic_like_kafka(void **state)
{
    /* Kafka RangeAssignor javadoc: C0 gets t0p0 t0p1 t1p0 t1p1 */
    struct asg_member m[2] = {{"C1", t_two_topics, 2, NULL, 0, -1},
                              {"C0", t_two_topics, 2, NULL, 0, -1}};
    struct asg_topic t[2] = {{"t1", 3}, {"t0", 3}};
    struct asg_result r[2];

    (void)state;
    assert_int_equal(asg_assign(ASG_RANGE, m, 2, t, 2, r), 0);
    t_expect(&r[1], "t0-0 t0-1 t1-0 t1-1");
    t_expect(&r[0], "t0-2 t1-2");
    asg_results_free(r, 2);
}

static void test_roundrobin_deals_in_turn_like_kafka(void **state)
{
    struct asg_member m[2] = {{"C0", t_two_topics, 2, NULL, 0, -1},
                              {"C1", t_two_topics, 2, NULL, 0, -1}};
    struct asg_topic t[2] = {{"t0", 3}, {"t1", 3}};
    struct asg_result r[2];

    (void)state;
    assert_int_equal(asg_assign(ASG_ROUNDROBIN, m, 2, t, 2, r), 0);
    t_expect(&r[0], "t0-0 t0-2 t1-1");
    t_expect(&r[1], "t0-1 t1-0 t1-2");
    asg_results_free(r, 2);
}

static void test_roundrobin_skips_unsubscribed_members(void **state)
{
    /* Kafka javadoc: C0 {t0}, C1 {t0,t1}, C2 {t0,t1,t2}; t0:1 t1:2 t2:3 */
    static const char *const s0[] = {"t0"};
    static const char *const s1[] = {"t0", "t1"};
    static const char *const s2[] = {"t0", "t1", "t2"};
    struct asg_member m[3] = {{"C0", s0, 1, NULL, 0, -1},
                              {"C1", s1, 2, NULL, 0, -1},
                              {"C2", s2, 3, NULL, 0, -1}};
    struct asg_topic t[3] = {{"t0", 1}, {"t1", 2}, {"t2", 3}};
    struct asg_result r[3];

    (void)state;
    assert_int_equal(asg_assign(ASG_ROUNDROBIN, m, 3, t, 3, r), 0);
    t_expect(&r[0], "t0-0");
    t_expect(&r[1], "t1-0");
    t_expect(&r[2], "t1-1 t2-0 t2-1 t2-2");
    asg_results_free(r, 3);
}

static void test_sticky_matches_kafka_example(void **state)
{
    /* Kafka StickyAssignor javadoc: C0..C2, t0..t3 of 2 partitions, then
     * C1 leaves: C0 and C2 keep theirs and split C1's. */
    static const char *const all[] = {"t0", "t1", "t2", "t3"};
    struct asg_member m[3] = {{"C0", all, 4, NULL, 0, -1},
                              {"C1", all, 4, NULL, 0, -1},
                              {"C2", all, 4, NULL, 0, -1}};
    struct asg_topic t[4] = {{"t0", 2}, {"t1", 2}, {"t2", 2}, {"t3", 2}};
    struct asg_result r[3];
    struct asg_result r2[2];
    struct asg_member left[2];

    (void)state;
    assert_int_equal(asg_assign(ASG_STICKY, m, 3, t, 4, r), 0);
    t_expect(&r[0], "t0-0 t1-1 t3-0");
    t_expect(&r[1], "t0-1 t2-0 t3-1");
    t_expect(&r[2], "t1-0 t2-1");

    left[0] = m[0];
    left[0].owned = r[0].tps;
    left[0].n_owned = r[0].n;
    left[0].generation = 1;
    left[1] = m[2];
    left[1].owned = r[2].tps;
    left[1].n_owned = r[2].n;
    left[1].generation = 1;
    assert_int_equal(asg_assign(ASG_STICKY, left, 2, t, 4, r2), 0);
    t_expect(&r2[0], "t0-0 t1-1 t2-0 t3-0");
    t_expect(&r2[1], "t0-1 t1-0 t2-1 t3-1");
    asg_results_free(r2, 2);
    asg_results_free(r, 3);
}

static void test_sticky_higher_generation_wins_a_claim(void **state)
{
    static const char *const s[] = {"t0"};
    static const struct asg_tp both[] = {{"t0", 0}, {"t0", 1}};
    static const struct asg_tp stale[] = {{"t0", 0}, {"t0", 7}, {"x", 0}};
    struct asg_member m[2] = {{"a", s, 1, stale, 3, 4},
                              {"b", s, 1, both, 2, 5}};
    struct asg_topic t[1] = {{"t0", 4}};
    struct asg_result r[2];

    (void)state;
    assert_int_equal(asg_assign(ASG_STICKY, m, 2, t, 1, r), 0);
    t_expect(&r[0], "t0-2 t0-3");
    t_expect(&r[1], "t0-0 t0-1");
    asg_results_free(r, 2);
}

static void test_assign_refuses_bad_input(void **state)
{
    static const char *const s[] = {"t0"};
    struct asg_member m[2] = {{"a", s, 1, NULL, 0, -1},
                              {"a", s, 1, NULL, 0, -1}};
    struct asg_topic t[1] = {{"t0", 4}};
    struct asg_topic neg[1] = {{"t0", -1}};
    struct asg_result r[2];

    (void)state;
    assert_int_equal(asg_assign(ASG_RANGE, m, 2, t, 1, r),
                     WEIR_EINVALID_ARGUMENT);
    assert_int_equal(asg_assign(ASG_STICKY, m, 1, neg, 1, r),
                     WEIR_EINVALID_ARGUMENT);
    assert_int_equal(asg_assign((enum asg_kind)7, m, 1, t, 1, r),
                     WEIR_EINVALID_ARGUMENT);
    assert_int_equal(asg_assign(ASG_STICKY, m, 0, t, 1, r), 0);
    assert_int_equal(asg_kind_from_name("sticky"), ASG_STICKY);
    assert_int_equal(asg_kind_from_name("range"), ASG_RANGE);
    assert_int_equal(asg_kind_from_name("roundrobin"), ASG_ROUNDROBIN);
    assert_int_equal(asg_kind_from_name("cooperative-sticky"), -1);
    assert_string_equal(asg_kind_name(ASG_ROUNDROBIN), "roundrobin");
}

/* Shuffle member order, topic order and each subscription list. */
static void t_group_shuffle(const struct t_group *g,
                            struct t_group *h,
                            size_t *perm,
                            uint64_t *s)
{
    size_t m;
    size_t i;

    *h = *g;
    for (m = 0; m < g->n_members; m++) {
        perm[m] = m;
    }
    t_shuffle(perm, g->n_members, sizeof(perm[0]), s);
    t_shuffle(h->topics, h->n_topics, sizeof(h->topics[0]), s);
    for (m = 0; m < g->n_members; m++) {
        h->members[m] = g->members[perm[m]];
        for (i = 0; i < h->members[m].n_topics; i++) {
            h->subs[m][i] = h->members[m].topics[i];
        }
        h->members[m].topics = h->subs[m];
        t_shuffle(h->subs[m], h->members[m].n_topics, sizeof(char *), s);
    }
}

static void t_check_order_independent(enum asg_kind kind,
                                      const struct t_group *g,
                                      const struct asg_result *res,
                                      uint64_t *s)
{
    struct t_group h;
    struct asg_result r2[T_MAX_MEMBERS];
    size_t perm[T_MAX_MEMBERS];
    size_t m;

    t_group_shuffle(g, &h, perm, s);
    assert_int_equal(
        asg_assign(kind, h.members, h.n_members, h.topics, h.n_topics, r2), 0);
    for (m = 0; m < h.n_members; m++) {
        assert_true(t_result_equal(&r2[m], &res[perm[m]]));
    }
    asg_results_free(r2, h.n_members);
}

static void test_range_and_roundrobin_properties(void **state)
{
    static const enum asg_kind kinds[] = {ASG_RANGE, ASG_ROUNDROBIN};
    struct t_group g;
    struct asg_result res[T_MAX_MEMBERS];
    uint64_t seed;
    uint64_t s;
    size_t k;

    (void)state;
    for (seed = 1; seed <= T_RUNS; seed++) {
        s = seed * 0x9E3779B97F4A7C15ULL;
        t_group_random(&g, &s, t_rng(&s, 4) == 0);
        for (k = 0; k < 2; k++) {
            assert_int_equal(asg_assign(kinds[k], g.members, g.n_members,
                                        g.topics, g.n_topics, res),
                             0);
            t_check_valid(&g, res, seed);
            t_check_order_independent(kinds[k], &g, res, &s);
            asg_results_free(res, g.n_members);
        }
    }
}

static bool t_same_subscription(const struct t_group *g, size_t a, size_t b)
{
    size_t t;

    for (t = 0; t < g->n_topics; t++) {
        if (t_subscribes(&g->members[a], g->topics[t].name) !=
            t_subscribes(&g->members[b], g->topics[t].name)) {
            return false;
        }
    }
    return true;
}

/* Members with the same (existing) topics differ by at most one. */
static void t_check_balanced(const struct t_group *g,
                             const struct asg_result *res,
                             uint64_t seed)
{
    size_t a;
    size_t b;

    for (a = 0; a < g->n_members; a++) {
        for (b = 0; b < g->n_members; b++) {
            if (t_same_subscription(g, a, b) && res[a].n > res[b].n + 1) {
                fail_msg("seed %llu: %s has %zu, %s has %zu",
                         (unsigned long long)seed, g->members[a].member_id,
                         res[a].n, g->members[b].member_id, res[b].n);
            }
        }
    }
}

/* The members now own what res gave them, in generation `gen`. */
static void
t_group_adopt(struct t_group *g, const struct asg_result *res, int32_t gen)
{
    size_t m;

    for (m = 0; m < g->n_members; m++) {
        g->members[m].owned = res[m].tps;
        g->members[m].n_owned = res[m].n;
        g->members[m].generation = gen;
    }
}

static void t_check_sticky_leave(const struct t_group *g,
                                 const struct asg_result *res,
                                 uint64_t seed,
                                 uint64_t *s)
{
    struct t_group h = *g;
    struct asg_result r2[T_MAX_MEMBERS];
    size_t gone = t_rng(s, g->n_members);
    size_t m;
    size_t i;
    size_t k;
    size_t j;

    t_group_adopt(&h, res, 9);
    for (m = gone; m + 1 < h.n_members; m++) {
        h.members[m] = h.members[m + 1];
    }
    h.n_members--;
    assert_int_equal(asg_assign(ASG_STICKY, h.members, h.n_members, h.topics,
                                h.n_topics, r2),
                     0);
    t_check_valid(&h, r2, seed);
    t_check_balanced(&h, r2, seed);
    for (m = 0; m < h.n_members; m++) {
        /* everything it held is still there */
        for (i = 0, j = 0; i < h.members[m].n_owned; i++) {
            for (k = j; k < r2[m].n; k++) {
                if (r2[m].tps[k].topic == h.members[m].owned[i].topic &&
                    r2[m].tps[k].partition == h.members[m].owned[i].partition) {
                    break;
                }
            }
            if (k == r2[m].n) {
                fail_msg("seed %llu: leave moved a partition",
                         (unsigned long long)seed);
            }
            j = k + 1;
        }
    }
    asg_results_free(r2, h.n_members);
}

static bool t_owns(const struct asg_result *r, const struct asg_tp *tp)
{
    size_t i;

    for (i = 0; i < r->n; i++) {
        if (r->tps[i].topic == tp->topic &&
            r->tps[i].partition == tp->partition) {
            return true;
        }
    }
    return false;
}

static void t_check_sticky_join(const struct t_group *g,
                                const struct asg_result *res,
                                uint64_t seed)
{
    struct t_group h = *g;
    struct asg_result r2[T_MAX_MEMBERS];
    size_t m;
    size_t i;
    size_t n = g->n_members;

    t_group_adopt(&h, res, 9);
    h.members[n] = g->members[0];
    h.members[n].member_id = t_member_names[10];
    h.members[n].owned = NULL;
    h.members[n].n_owned = 0;
    h.members[n].generation = -1;
    h.n_members++;
    assert_int_equal(asg_assign(ASG_STICKY, h.members, h.n_members, h.topics,
                                h.n_topics, r2),
                     0);
    t_check_valid(&h, r2, seed);
    t_check_balanced(&h, r2, seed);
    /* a partition either stays or goes to the newcomer */
    for (m = 0; m < n; m++) {
        for (i = 0; i < r2[m].n; i++) {
            if (!t_owns(&res[m], &r2[m].tps[i])) {
                fail_msg("seed %llu: join moved a partition between old "
                         "members",
                         (unsigned long long)seed);
            }
        }
    }
    asg_results_free(r2, h.n_members);
}

static void test_sticky_properties(void **state)
{
    struct t_group g;
    struct t_group h;
    struct asg_result res[T_MAX_MEMBERS];
    struct asg_result again[T_MAX_MEMBERS];
    uint64_t seed;
    uint64_t s;
    size_t m;
    bool same;

    (void)state;
    for (seed = 1; seed <= T_RUNS; seed++) {
        s = seed * 0xD1B54A32D192ED03ULL;
        same = t_rng(&s, 2) == 0;
        t_group_random(&g, &s, same);
        assert_int_equal(asg_assign(ASG_STICKY, g.members, g.n_members,
                                    g.topics, g.n_topics, res),
                         0);
        t_check_valid(&g, res, seed);
        t_check_balanced(&g, res, seed);
        t_check_order_independent(ASG_STICKY, &g, res, &s);

        /* same membership, owning what it was given: nothing moves */
        h = g;
        t_group_adopt(&h, res, 7);
        assert_int_equal(asg_assign(ASG_STICKY, h.members, h.n_members,
                                    h.topics, h.n_topics, again),
                         0);
        for (m = 0; m < g.n_members; m++) {
            if (!t_result_equal(&again[m], &res[m])) {
                fail_msg("seed %llu: sticky moved with no change",
                         (unsigned long long)seed);
            }
        }
        asg_results_free(again, g.n_members);
        if (same && g.n_members > 1) {
            t_check_sticky_leave(&g, res, seed, &s);
        }
        if (same && g.n_members < 10) {
            t_check_sticky_join(&g, res, seed);
        }
        asg_results_free(res, g.n_members);
    }
}

static void t_check_subscription_round_trip(const struct asg_member *m)
{
    struct asg_subscription *sub = NULL;
    struct asg_member back;
    struct asg_tp tps[T_MAX_OWNED];
    size_t n = 0;
    size_t i;
    size_t k;
    struct weir_buf b;

    /* the encoder refuses repeats: keep valid, distinct ones */
    for (i = 0; i < m->n_owned; i++) {
        bool dup = m->owned[i].partition < 0;

        for (k = 0; k < n && !dup; k++) {
            dup = strcmp(tps[k].topic, m->owned[i].topic) == 0 &&
                  tps[k].partition == m->owned[i].partition;
        }
        if (!dup) {
            tps[n++] = m->owned[i];
        }
    }
    buf_init(&b);
    assert_int_equal(asg_encode_subscription(m->topics, m->n_topics, tps, n,
                                             m->generation, &b),
                     0);
    assert_int_equal(asg_decode_subscription(b.data, b.len, &sub), 0);
    asg_subscription_member(sub, "x", &back);
    assert_int_equal(back.n_topics, m->n_topics);
    for (i = 0; i < m->n_topics; i++) {
        assert_string_equal(back.topics[i], m->topics[i]);
    }
    assert_int_equal(back.generation, m->generation);
    assert_int_equal(back.n_owned, n);
    for (i = 0; i < n; i++) {
        assert_true(i == 0 ||
                    strcmp(back.owned[i - 1].topic, back.owned[i].topic) <= 0);
        for (k = 0; k < n; k++) {
            if (strcmp(back.owned[k].topic, tps[i].topic) == 0 &&
                back.owned[k].partition == tps[i].partition) {
                break;
            }
        }
        assert_true(k < n);
    }
    asg_subscription_free(sub);
    buf_fini(&b);
}

static void test_codec_round_trips(void **state)
{
    struct t_group g;
    struct asg_result res[T_MAX_MEMBERS];
    struct asg_assignment *a;
    struct weir_buf b;
    uint64_t seed;
    uint64_t s;
    size_t m;
    size_t i;

    (void)state;
    for (seed = 1; seed <= 500; seed++) {
        s = seed * 0x2545F4914F6CDD1DULL;
        t_group_random(&g, &s, false);
        assert_int_equal(asg_assign(ASG_ROUNDROBIN, g.members, g.n_members,
                                    g.topics, g.n_topics, res),
                         0);
        for (m = 0; m < g.n_members; m++) {
            t_check_subscription_round_trip(&g.members[m]);
            buf_init(&b);
            assert_int_equal(asg_encode_assignment(res[m].tps, res[m].n, &b),
                             0);
            assert_int_equal(asg_decode_assignment(b.data, b.len, &a), 0);
            assert_int_equal(a->n, res[m].n);
            for (i = 0; i < a->n; i++) {
                assert_string_equal(a->tps[i].topic, res[m].tps[i].topic);
                assert_int_equal(a->tps[i].partition, res[m].tps[i].partition);
            }
            asg_assignment_free(a);
            buf_fini(&b);
        }
        asg_results_free(res, g.n_members);
    }
}

static void test_codec_refuses_bad_input(void **state)
{
    static const struct asg_tp dup[] = {{"t0", 1}, {"t0", 1}};
    static const struct asg_tp neg[] = {{"t0", -1}};
    static const char *const empty[] = {""};
    /* TopicPartitions{topic "t0", partitions [-1]} inside field 1 */
    static const uint8_t neg_bytes[] = {0x0a, 0x0f, 0x0a, 0x02, 't',  '0',
                                        0x10, 0xff, 0xff, 0xff, 0xff, 0xff,
                                        0xff, 0xff, 0xff, 0xff, 0x01};
    /* the same partition twice, in two groups */
    static const uint8_t dup_bytes[] = {0x0a, 0x06, 0x0a, 0x02, 't',  '0',
                                        0x10, 0x01, 0x0a, 0x06, 0x0a, 0x02,
                                        't',  '0',  0x10, 0x01};
    static const uint8_t empty_topic[] = {0x0a, 0x00};
    static const uint8_t truncated[] = {0x0a, 0x05, 't'};
    static const uint8_t bad_gen[] = {0x18, 0xfe, 0xff, 0xff, 0xff, 0xff,
                                      0xff, 0xff, 0xff, 0xff, 0x01};
    struct asg_subscription *s = (void *)1;
    struct asg_assignment *a = (void *)1;
    struct weir_buf b;
    uint64_t seed = 42;
    uint8_t junk[64];
    size_t i;
    size_t k;
    int rv;

    (void)state;
    buf_init(&b);
    assert_int_equal(asg_encode_assignment(dup, 2, &b), WEIR_EINVALID_ARGUMENT);
    assert_int_equal(asg_encode_assignment(neg, 1, &b), WEIR_EINVALID_ARGUMENT);
    assert_int_equal(asg_encode_subscription(empty, 1, NULL, 0, -1, &b),
                     WEIR_EINVALID_ARGUMENT);
    assert_int_equal(b.len, 0);
    /* an empty assignment is zero bytes (found by fuzzing) */
    assert_int_equal(asg_encode_assignment(NULL, 0, &b), 0);
    assert_int_equal(b.len, 0);
    buf_fini(&b);

    assert_int_equal(asg_decode_assignment(neg_bytes, sizeof(neg_bytes), &a),
                     WEIR_EMALFORMED);
    assert_null(a);
    assert_int_equal(asg_decode_assignment(dup_bytes, sizeof(dup_bytes), &a),
                     WEIR_EMALFORMED);
    assert_int_equal(
        asg_decode_subscription(empty_topic, sizeof(empty_topic), &s),
        WEIR_EMALFORMED);
    assert_null(s);
    assert_int_equal(asg_decode_subscription(truncated, sizeof(truncated), &s),
                     WEIR_EMALFORMED);
    assert_int_equal(asg_decode_subscription(bad_gen, sizeof(bad_gen), &s),
                     WEIR_EMALFORMED);
    assert_int_equal(asg_decode_subscription(NULL, 0, &s), 0);
    assert_int_equal(s->n_topics, 0);
    assert_int_equal(s->generation, 0);
    asg_subscription_free(s);

    for (i = 0; i < 20000; i++) {
        size_t n = t_rng(&seed, sizeof(junk));

        for (k = 0; k < n; k++) {
            junk[k] = (uint8_t)t_rng_next(&seed);
        }
        rv = asg_decode_subscription(junk, n, &s);
        assert_true(rv == 0 || rv == WEIR_EMALFORMED);
        asg_subscription_free(s);
        rv = asg_decode_assignment(junk, n, &a);
        assert_true(rv == 0 || rv == WEIR_EMALFORMED);
        asg_assignment_free(a);
    }
}

/* Failing the Nth allocation: a clean error, no leak (cmocka checks). */
static void test_assign_survives_allocation_failures(void **state)
{
    static const char *const all[] = {"t0", "t1"};
    static const struct asg_tp owned[] = {{"t0", 1}, {"t1", 0}};
    struct asg_member m[2] = {{"C0", all, 2, owned, 2, 3},
                              {"C1", all, 2, NULL, 0, -1}};
    struct asg_topic t[2] = {{"t0", 3}, {"t1", 3}};
    struct asg_result r[2];
    struct asg_subscription *s;
    struct weir_buf b;
    unsigned long n;
    int rv = WEIR_ENOMEM;

    (void)state;
    for (n = 1; rv != 0; n++) {
        mem_fault_set(n, 0);
        rv = asg_assign(ASG_STICKY, m, 2, t, 2, r);
        mem_fault_set(0, 0);
        assert_true(rv == 0 || rv == WEIR_ENOMEM);
    }
    asg_results_free(r, 2);

    buf_init(&b);
    assert_int_equal(asg_encode_subscription(all, 2, owned, 2, 3, &b), 0);
    rv = WEIR_ENOMEM;
    for (n = 1; rv != 0; n++) {
        mem_fault_set(n, 0);
        rv = asg_decode_subscription(b.data, b.len, &s);
        mem_fault_set(0, 0);
        assert_true(rv == 0 || rv == WEIR_ENOMEM);
    }
    asg_subscription_free(s);
    buf_fini(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_range_splits_each_topic_like_kafka),
        cmocka_unit_test(test_roundrobin_deals_in_turn_like_kafka),
        cmocka_unit_test(test_roundrobin_skips_unsubscribed_members),
        cmocka_unit_test(test_sticky_matches_kafka_example),
        cmocka_unit_test(test_sticky_higher_generation_wins_a_claim),
        cmocka_unit_test(test_assign_refuses_bad_input),
        cmocka_unit_test(test_range_and_roundrobin_properties),
        cmocka_unit_test(test_sticky_properties),
        cmocka_unit_test(test_codec_round_trips),
        cmocka_unit_test(test_codec_refuses_bad_input),
        cmocka_unit_test(test_assign_survives_allocation_failures),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
