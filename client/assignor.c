/* SPDX-License-Identifier: Apache-2.0 */
/* Assignors. Every assignor works on the same "plan": members and topics
 * ranked by name, a subscription matrix, and one owner slot per partition
 * ("gid", dense over topics in name order, so gid order is the output's
 * topic-then-partition order). The codec lives in assignor_codec.c. */
#include "client/assignor.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/mem.h"

/* The working state of one asg_assign call; everything is indexed by rank
 * (position in name order), not by input position. */
struct asg_plan {
    const struct asg_member *members;
    const struct asg_topic *topics;
    size_t n_members;
    size_t n_topics;
    size_t *mrank;  /* rank -> input index of the member */
    size_t *trank;  /* rank -> input index of the topic */
    bool *sub;      /* [member rank * n_topics + topic rank] */
    size_t *nsubs;  /* per topic rank: subscribers */
    size_t *base;   /* per topic rank: first gid */
    size_t *gtopic; /* per gid: topic rank */
    size_t n_gids;  /* partitions of all topics */
    int64_t *owner; /* per gid: member rank, -1 none/unsubscribed */
    size_t *count;  /* per member rank: partitions held */
};

int asg_kind_from_name(const char *name)
{
    if (name == NULL) {
        return -1;
    }
    if (strcmp(name, "range") == 0) {
        return ASG_RANGE;
    }
    if (strcmp(name, "roundrobin") == 0) {
        return ASG_ROUNDROBIN;
    }
    if (strcmp(name, "sticky") == 0) {
        return ASG_STICKY;
    }
    return -1;
}

const char *asg_kind_name(enum asg_kind k)
{
    switch (k) {
    case ASG_RANGE:
        return "range";
    case ASG_ROUNDROBIN:
        return "roundrobin";
    case ASG_STICKY:
        return "sticky";
    }
    return "unknown";
}

/* A name and its input index: C11's qsort has no context argument, so the
 * ranking sorts these pairs. */
struct asg_named {
    const char *name;
    size_t index;
};

static int asg_named_cmp(const void *a, const void *b)
{
    const struct asg_named *x = a;
    const struct asg_named *y = b;

    return strcmp(x->name, y->name);
}

/* Rank names; fails on a NULL or duplicate name. */
static int asg_rank(struct asg_named *tmp, size_t n, size_t *rank)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (tmp[i].name == NULL) {
            return WEIR_EINVALID_ARGUMENT;
        }
    }
    if (n > 1) {
        qsort(tmp, n, sizeof(*tmp), asg_named_cmp);
    }
    for (i = 0; i < n; i++) {
        if (i > 0 && strcmp(tmp[i - 1].name, tmp[i].name) == 0) {
            return WEIR_EINVALID_ARGUMENT;
        }
        rank[i] = tmp[i].index;
    }
    return 0;
}

/* Topic rank of `name`, or -1 when no such topic exists. */
static int64_t asg_plan_topic(const struct asg_plan *p, const char *name)
{
    size_t lo = 0;
    size_t hi = p->n_topics;
    size_t mid;
    int c;

    if (name == NULL) {
        return -1;
    }
    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        c = strcmp(name, p->topics[p->trank[mid]].name);
        if (c == 0) {
            return (int64_t)mid;
        }
        if (c < 0) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    return -1;
}

static void asg_plan_fini(struct asg_plan *p)
{
    mem_free(p->mrank);
    mem_free(p->trank);
    mem_free(p->sub);
    mem_free(p->nsubs);
    mem_free(p->base);
    mem_free(p->gtopic);
    mem_free(p->owner);
    mem_free(p->count);
}

static int asg_plan_rank(struct asg_plan *p)
{
    size_t n = p->n_members > p->n_topics ? p->n_members : p->n_topics;
    struct asg_named *tmp;
    size_t i;
    int rv;

    tmp = mem_calloc(n > 0 ? n : 1, sizeof(*tmp));
    if (tmp == NULL) {
        return WEIR_ENOMEM;
    }
    for (i = 0; i < p->n_members; i++) {
        tmp[i].name = p->members[i].member_id;
        tmp[i].index = i;
    }
    rv = asg_rank(tmp, p->n_members, p->mrank);
    for (i = 0; rv == 0 && i < p->n_topics; i++) {
        tmp[i].name = p->topics[i].name;
        tmp[i].index = i;
        if (p->topics[i].partitions < 0) {
            rv = WEIR_EINVALID_ARGUMENT;
        }
    }
    if (rv == 0) {
        rv = asg_rank(tmp, p->n_topics, p->trank);
    }
    mem_free(tmp);
    return rv;
}

/* Subscription matrix; topics that do not exist are ignored, repeats too. */
static int asg_plan_subscribe(struct asg_plan *p)
{
    const struct asg_member *m;
    size_t r;
    size_t i;
    int64_t t;

    for (r = 0; r < p->n_members; r++) {
        m = &p->members[p->mrank[r]];
        if (m->n_topics > 0 && m->topics == NULL) {
            return WEIR_EINVALID_ARGUMENT;
        }
        for (i = 0; i < m->n_topics; i++) {
            t = asg_plan_topic(p, m->topics[i]);
            if (t >= 0 && !p->sub[r * p->n_topics + (size_t)t]) {
                p->sub[r * p->n_topics + (size_t)t] = true;
                p->nsubs[t]++;
            }
        }
    }
    return 0;
}

static int asg_plan_gids(struct asg_plan *p)
{
    size_t t;
    size_t i;
    size_t g = 0;

    for (t = 0; t < p->n_topics; t++) {
        p->base[t] = p->n_gids;
        /* partitions >= 0 (checked); the sum of n_topics int32 values fits
         * a 64-bit size_t, and the allocation below bounds it further */
        p->n_gids += (size_t)p->topics[p->trank[t]].partitions;
    }
    if (p->n_gids > SIZE_MAX / sizeof(int64_t) / 2) {
        return WEIR_ENOMEM;
    }
    p->gtopic = mem_malloc((p->n_gids > 0 ? p->n_gids : 1) * sizeof(size_t));
    p->owner = mem_malloc((p->n_gids > 0 ? p->n_gids : 1) * sizeof(int64_t));
    if (p->gtopic == NULL || p->owner == NULL) {
        return WEIR_ENOMEM;
    }
    for (t = 0; t < p->n_topics; t++) {
        for (i = 0; i < (size_t)p->topics[p->trank[t]].partitions; i++) {
            p->gtopic[g] = t;
            p->owner[g] = -1;
            g++;
        }
    }
    return 0;
}

static int asg_plan_init(struct asg_plan *p,
                         const struct asg_member *members,
                         size_t n_members,
                         const struct asg_topic *topics,
                         size_t n_topics)
{
    size_t nm = n_members > 0 ? n_members : 1;
    size_t nt = n_topics > 0 ? n_topics : 1;
    int rv;

    memset(p, 0, sizeof(*p));
    p->members = members;
    p->topics = topics;
    p->n_members = n_members;
    p->n_topics = n_topics;
    if ((n_members > 0 && members == NULL) ||
        (n_topics > 0 && topics == NULL)) {
        return WEIR_EINVALID_ARGUMENT;
    }
    if (nt > SIZE_MAX / nm) {
        return WEIR_ENOMEM;
    }
    p->mrank = mem_calloc(nm, sizeof(size_t));
    p->trank = mem_calloc(nt, sizeof(size_t));
    p->sub = mem_calloc(nm * nt, sizeof(bool));
    p->nsubs = mem_calloc(nt, sizeof(size_t));
    p->base = mem_calloc(nt, sizeof(size_t));
    p->count = mem_calloc(nm, sizeof(size_t));
    if (p->mrank == NULL || p->trank == NULL || p->sub == NULL ||
        p->nsubs == NULL || p->base == NULL || p->count == NULL) {
        return WEIR_ENOMEM;
    }
    rv = asg_plan_rank(p);
    if (rv == 0) {
        rv = asg_plan_subscribe(p);
    }
    if (rv == 0) {
        rv = asg_plan_gids(p);
    }
    return rv;
}

static bool asg_plan_subscribes(const struct asg_plan *p, size_t r, size_t t)
{
    return p->sub[r * p->n_topics + t];
}

static void asg_plan_give(struct asg_plan *p, size_t gid, size_t r)
{
    if (p->owner[gid] >= 0) {
        p->count[p->owner[gid]]--;
    }
    p->owner[gid] = (int64_t)r;
    p->count[r]++;
}

/* Kafka RangeAssignor: per topic, contiguous ranges over its subscribers in
 * member id order; the first n % m get one more. */
static void asg_range(struct asg_plan *p)
{
    size_t t;
    size_t r;
    size_t k;
    size_t i;
    size_t n;
    size_t per;
    size_t extra;
    size_t start;
    size_t len;

    for (t = 0; t < p->n_topics; t++) {
        if (p->nsubs[t] == 0) {
            continue;
        }
        n = (size_t)p->topics[p->trank[t]].partitions;
        per = n / p->nsubs[t];
        extra = n % p->nsubs[t];
        k = 0;
        for (r = 0; r < p->n_members; r++) {
            if (!asg_plan_subscribes(p, r, t)) {
                continue;
            }
            start = k * per + (k < extra ? k : extra);
            len = per + (k < extra ? 1 : 0);
            for (i = start; i < start + len; i++) {
                asg_plan_give(p, p->base[t] + i, r);
            }
            k++;
        }
    }
}

/* Kafka RoundRobinAssignor: partitions in topic then partition order, dealt
 * to members in id order, skipping those not subscribed to the topic. The
 * cursor moves only past members that were skipped or dealt to. */
static void asg_roundrobin(struct asg_plan *p)
{
    size_t cur = 0;
    size_t gid;
    size_t t;

    for (gid = 0; gid < p->n_gids; gid++) {
        t = p->gtopic[gid];
        if (p->nsubs[t] == 0) {
            continue;
        }
        /* terminates: topic t has at least one subscriber */
        while (!asg_plan_subscribes(p, cur, t)) {
            cur = (cur + 1) % p->n_members;
        }
        asg_plan_give(p, gid, cur);
        cur = (cur + 1) % p->n_members;
    }
}

/* Sticky, step 1: the valid claims. A claim counts if the topic exists, the
 * partition is in range and the member still subscribes to the topic. The
 * highest generation wins; a tie between two members at the highest
 * generation leaves the partition unowned (neither claim is trusted, as
 * Kafka's partitionsWithMultiplePreviousOwners). */
static int asg_sticky_claims(struct asg_plan *p)
{
    const struct asg_member *m;
    int64_t *gen;
    bool *tie;
    size_t r;
    size_t i;
    size_t gid;
    int64_t t;
    int rv = 0;

    gen = mem_malloc((p->n_gids > 0 ? p->n_gids : 1) * sizeof(*gen));
    tie = mem_calloc(p->n_gids > 0 ? p->n_gids : 1, sizeof(*tie));
    if (gen == NULL || tie == NULL) {
        rv = WEIR_ENOMEM;
        goto out;
    }
    for (r = 0; r < p->n_members; r++) {
        m = &p->members[p->mrank[r]];
        if (m->n_owned > 0 && m->owned == NULL) {
            rv = WEIR_EINVALID_ARGUMENT;
            goto out;
        }
        for (i = 0; i < m->n_owned; i++) {
            t = asg_plan_topic(p, m->owned[i].topic);
            if (t < 0 || m->owned[i].partition < 0 ||
                m->owned[i].partition >= p->topics[p->trank[t]].partitions ||
                !asg_plan_subscribes(p, r, (size_t)t)) {
                continue;
            }
            gid = p->base[t] + (size_t)m->owned[i].partition;
            if (p->owner[gid] < 0 && !tie[gid]) {
                p->owner[gid] = (int64_t)r;
                gen[gid] = m->generation;
            } else if (m->generation > gen[gid]) {
                p->owner[gid] = (int64_t)r;
                gen[gid] = m->generation;
                tie[gid] = false;
            } else if (m->generation == gen[gid] &&
                       p->owner[gid] != (int64_t)r) {
                p->owner[gid] = -1;
                tie[gid] = true;
            }
        }
    }
    for (gid = 0; gid < p->n_gids; gid++) {
        if (p->owner[gid] >= 0) {
            p->count[p->owner[gid]]++;
        }
    }
out:
    mem_free(gen);
    mem_free(tie);
    return rv;
}

/* The subscriber of topic t holding the fewest partitions; ties go to the
 * lower member id. -1 if t has no subscriber. */
static int64_t asg_sticky_lightest(const struct asg_plan *p, size_t t)
{
    int64_t best = -1;
    size_t r;

    for (r = 0; r < p->n_members; r++) {
        if (asg_plan_subscribes(p, r, t) &&
            (best < 0 || p->count[r] < p->count[best])) {
            best = (int64_t)r;
        }
    }
    return best;
}

/* Order for handing out unowned partitions: the most constrained topics
 * (fewest subscribers) first, as Kafka's generalAssign; then gid. The key
 * travels with the gid because C11's qsort has no context argument. */
struct asg_todo {
    size_t nsubs;
    size_t gid;
};

static int asg_todo_cmp(const void *a, const void *b)
{
    const struct asg_todo *x = a;
    const struct asg_todo *y = b;

    if (x->nsubs != y->nsubs) {
        return x->nsubs < y->nsubs ? -1 : 1;
    }
    return x->gid < y->gid ? -1 : (x->gid > y->gid ? 1 : 0);
}

/* Sticky, step 2: unowned partitions go to the lightest subscriber. */
static int asg_sticky_fill(struct asg_plan *p)
{
    struct asg_todo *todo;
    size_t n = 0;
    size_t gid;
    size_t i;
    int64_t r;

    todo = mem_malloc((p->n_gids > 0 ? p->n_gids : 1) * sizeof(*todo));
    if (todo == NULL) {
        return WEIR_ENOMEM;
    }
    for (gid = 0; gid < p->n_gids; gid++) {
        if (p->owner[gid] < 0 && p->nsubs[p->gtopic[gid]] > 0) {
            todo[n].nsubs = p->nsubs[p->gtopic[gid]];
            todo[n].gid = gid;
            n++;
        }
    }
    if (n > 1) {
        qsort(todo, n, sizeof(*todo), asg_todo_cmp);
    }
    for (i = 0; i < n; i++) {
        r = asg_sticky_lightest(p, p->gtopic[todo[i].gid]);
        asg_plan_give(p, todo[i].gid, (size_t)r);
    }
    mem_free(todo);
    return 0;
}

/* One balancing move, from the heaviest member that can give: the first of
 * its partitions (gid order) whose lightest subscriber holds at least two
 * fewer goes there. Taking from the heaviest first keeps a join minimal:
 * with identical subscriptions only the newcomer receives. `light` (per
 * topic) and `tried` (per member) are scratch. False when no move exists. */
static bool asg_sticky_move(struct asg_plan *p, int64_t *light, bool *tried)
{
    size_t t;
    size_t r;
    size_t gid;
    int64_t a;
    int64_t b;

    for (t = 0; t < p->n_topics; t++) {
        light[t] = asg_sticky_lightest(p, t);
    }
    memset(tried, 0, p->n_members * sizeof(*tried));
    for (;;) {
        a = -1;
        for (r = 0; r < p->n_members; r++) {
            if (!tried[r] && (a < 0 || p->count[r] > p->count[a])) {
                a = (int64_t)r;
            }
        }
        if (a < 0 || p->count[a] < 2) {
            return false;
        }
        tried[a] = true;
        for (gid = 0; gid < p->n_gids; gid++) {
            b = light[p->gtopic[gid]];
            if (p->owner[gid] == a && p->count[b] + 1 < p->count[a]) {
                asg_plan_give(p, gid, (size_t)b);
                return true;
            }
        }
    }
}

/* Sticky, step 3: move partitions until no subscriber of any partition
 * holds two fewer than its owner. Each move lowers the sum of squared
 * counts by at least 2, so this ends. At the end, two members with the
 * same subscription differ by at most one partition (the heavier one holds
 * a partition the lighter one could take), and an assignment this produced
 * is left as it is when run again. */
static int asg_sticky_balance(struct asg_plan *p)
{
    int64_t *light;
    bool *tried;
    int rv = 0;

    light = mem_malloc((p->n_topics + 1) * sizeof(*light));
    tried = mem_malloc((p->n_members + 1) * sizeof(*tried));
    if (light == NULL || tried == NULL) {
        rv = WEIR_ENOMEM;
    }
    while (rv == 0 && asg_sticky_move(p, light, tried)) {
    }
    mem_free(tried);
    mem_free(light);
    return rv;
}

static int asg_sticky(struct asg_plan *p)
{
    int rv;

    rv = asg_sticky_claims(p);
    if (rv == 0) {
        rv = asg_sticky_fill(p);
    }
    if (rv == 0) {
        rv = asg_sticky_balance(p);
    }
    return rv;
}

void asg_results_free(struct asg_result *r, size_t n)
{
    size_t i;

    if (r == NULL) {
        return;
    }
    for (i = 0; i < n; i++) {
        mem_free(r[i].tps);
        r[i].tps = NULL;
        r[i].n = 0;
    }
}

static int asg_plan_results(const struct asg_plan *p, struct asg_result *out)
{
    struct asg_result *res;
    size_t r;
    size_t gid;
    size_t t;

    for (r = 0; r < p->n_members; r++) {
        res = &out[p->mrank[r]];
        res->tps =
            mem_calloc(p->count[r] > 0 ? p->count[r] : 1, sizeof(*res->tps));
        if (res->tps == NULL) {
            return WEIR_ENOMEM;
        }
    }
    for (gid = 0; gid < p->n_gids; gid++) {
        if (p->owner[gid] < 0) {
            continue;
        }
        t = p->gtopic[gid];
        res = &out[p->mrank[p->owner[gid]]];
        res->tps[res->n].topic = p->topics[p->trank[t]].name;
        res->tps[res->n].partition = (int32_t)(gid - p->base[t]);
        res->n++;
    }
    return 0;
}

int asg_assign(enum asg_kind kind,
               const struct asg_member *members,
               size_t n_members,
               const struct asg_topic *topics,
               size_t n_topics,
               struct asg_result *out)
{
    struct asg_plan p;
    int rv;

    if (n_members > 0 && out == NULL) {
        return WEIR_EINVALID_ARGUMENT;
    }
    if (out != NULL) {
        memset(out, 0, n_members * sizeof(*out));
    }
    rv = asg_plan_init(&p, members, n_members, topics, n_topics);
    if (rv != 0) {
        goto out;
    }
    switch (kind) {
    case ASG_RANGE:
        asg_range(&p);
        break;
    case ASG_ROUNDROBIN:
        asg_roundrobin(&p);
        break;
    case ASG_STICKY:
        rv = asg_sticky(&p);
        break;
    default:
        rv = WEIR_EINVALID_ARGUMENT;
        break;
    }
    if (rv == 0) {
        rv = asg_plan_results(&p, out);
    }
    if (rv != 0 && out != NULL) {
        asg_results_free(out, n_members);
    }
out:
    asg_plan_fini(&p);
    return rv;
}
