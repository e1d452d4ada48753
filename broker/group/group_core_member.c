/* SPDX-License-Identifier: Apache-2.0 */
/* Group core: member memory (single-allocation blobs so that retiring is
 * one list push and cannot fail), views, describe, restore, delete. */
#include <assert.h>
#include <string.h>

#include "broker/group/group_core_int.h"
#include "common/mem.h"

static const char *group_nz(const char *s)
{
    return s != NULL ? s : "";
}

void group_retire(struct group_core *g, void *p)
{
    struct group_dead *d = p;

    if (d == NULL) {
        return;
    }
    d->next = g->dead;
    g->dead = d;
}

void group_free_dead(struct group_core *g)
{
    while (g->dead != NULL) {
        struct group_dead *d = g->dead;

        g->dead = d->next;
        mem_free(d);
    }
}

int group_protos_new(const struct group_protocol *p,
                     size_t n,
                     struct group_protos **out)
{
    struct group_protos *ps;
    size_t bytes = 0;
    size_t i;
    uint8_t *w;

    *out = NULL;
    assert(n <= GROUP_MAX_PROTOCOLS);
    for (i = 0; i < n; i++) {
        bytes += strlen(group_nz(p[i].name)) + 1 + p[i].metadata.len;
    }
    ps = mem_calloc(1, sizeof(*ps) + bytes);
    if (ps == NULL) {
        return WEIR_ENOMEM;
    }
    ps->refs = 1;
    ps->n = n;
    w = ps->data;
    for (i = 0; i < n; i++) {
        size_t len = strlen(group_nz(p[i].name));

        memcpy(w, group_nz(p[i].name), len + 1);
        ps->p[i].name = (const char *)w;
        w += len + 1;
        if (p[i].metadata.len > 0) {
            memcpy(w, p[i].metadata.p, p[i].metadata.len);
        }
        ps->p[i].metadata.p = w;
        ps->p[i].metadata.len = p[i].metadata.len;
        w += p[i].metadata.len;
    }
    *out = ps;
    return 0;
}

void group_protos_unref(struct group_core *g, struct group_protos *p)
{
    if (p == NULL) {
        return;
    }
    assert(p->refs > 0);
    if (--p->refs == 0) {
        group_retire(g, p);
    }
}

int group_protos_find(const struct group_protos *p, const char *name)
{
    size_t i;

    for (i = 0; p != NULL && i < p->n; i++) {
        if (strcmp(p->p[i].name, name) == 0) {
            return (int)i;
        }
    }
    return -1;
}

int group_bytes_new(struct weir_slice s, struct group_bytes **out)
{
    struct group_bytes *b = mem_malloc(sizeof(*b) + s.len);

    *out = NULL;
    if (b == NULL) {
        return WEIR_ENOMEM;
    }
    b->dead.next = NULL;
    b->len = s.len;
    if (s.len > 0) {
        memcpy(b->data, s.p, s.len);
    }
    *out = b;
    return 0;
}

int group_member_new(const char *id,
                     const char *token,
                     const char *client_id,
                     const char *client_host,
                     struct group_member **out)
{
    size_t id_len = strlen(id);
    size_t tok_len = token != NULL ? strlen(token) + 1 : 0;
    size_t cid_len = strlen(group_nz(client_id));
    size_t host_len = strlen(group_nz(client_host));
    struct group_member *m;
    char *w;

    *out = NULL;
    m = mem_calloc(1, sizeof(*m) + id_len + tok_len + cid_len + host_len + 3);
    if (m == NULL) {
        return WEIR_ENOMEM;
    }
    w = m->strings;
    m->member_id = w;
    memcpy(w, id, id_len);
    w += id_len;
    if (token != NULL) {
        *w++ = '-';
        memcpy(w, token, tok_len - 1);
        w += tok_len - 1;
    }
    *w++ = '\0';
    m->client_id = w;
    memcpy(w, group_nz(client_id), cid_len + 1);
    w += cid_len + 1;
    m->client_host = w;
    memcpy(w, group_nz(client_host), host_len + 1);
    m->assignment_generation = -1;
    *out = m;
    return 0;
}

void group_member_free_unused(struct group_member *m)
{
    if (m == NULL) {
        return;
    }
    if (m->protos != NULL && --m->protos->refs == 0) {
        mem_free(m->protos);
    }
    mem_free(m->assignment);
    mem_free(m);
}

void group_member_retire(struct group_core *g, struct group_member *m)
{
    group_protos_unref(g, m->protos);
    m->protos = NULL;
    group_retire(g, m->assignment);
    m->assignment = NULL;
    group_retire(g, m);
}

int group_find(const struct group_core *g, const char *member_id)
{
    uint32_t i;

    for (i = 0; i < g->n_members; i++) {
        if (strcmp(g->members[i]->member_id, member_id) == 0) {
            return (int)i;
        }
    }
    return -1;
}

const char *group_protocol_name(const struct group_core *g)
{
    if (g->protocol_blob == NULL) {
        return "";
    }
    return g->protocol_blob->p[g->protocol_idx].name;
}

void group_member_view_fill(const struct group_core *g,
                            const struct group_member *m,
                            struct group_member_view *v)
{
    int i = -1;

    memset(v, 0, sizeof(*v));
    v->member_id = m->member_id;
    v->client_id = m->client_id;
    v->client_host = m->client_host;
    if (g->protocol_blob != NULL) {
        i = group_protos_find(m->protos, group_protocol_name(g));
    }
    if (i >= 0) {
        v->metadata = m->protos->p[i].metadata;
    }
    if (m->assignment != NULL) {
        v->assignment.p = m->assignment->data;
        v->assignment.len = m->assignment->len;
    }
    v->session_timeout_ms = m->session_timeout_ms;
    v->rebalance_timeout_ms = m->rebalance_timeout_ms;
}

void group_views_refresh(struct group_core *g)
{
    uint32_t i;

    assert(g->n_members == 0 || g->cap_views >= g->n_members);
    for (i = 0; i < g->n_members; i++) {
        group_member_view_fill(g, g->members[i], &g->views[i]);
    }
}

bool group_joins_held(const struct group_core *g)
{
    return g->state == GROUP_COMPLETING_REBALANCE && g->hold_seq != 0 &&
           !g->assigned;
}

void group_core_describe(const struct group_core *g, struct group_view *v)
{
    memset(v, 0, sizeof(*v));
    v->state = g->state;
    v->assignment_pending =
        g->state == GROUP_COMPLETING_REBALANCE && !g->assigned;
    v->protocol_type = g->protocol_type;
    v->protocol = group_protocol_name(g);
    v->generation_id = g->generation_id;
    v->leader_id = g->leader != NULL ? g->leader->member_id : "";
    v->members = g->views;
    v->n_members = g->n_members;
}

bool group_core_is_empty(const struct group_core *g)
{
    return g->n_members == 0;
}

bool group_core_delete(struct group_core *g)
{
    if (g->state == GROUP_EMPTY) {
        g->state = GROUP_DEAD;
    }
    return g->state == GROUP_DEAD;
}

/* Everything a restore installs, built before the group is touched. */
struct group_restore {
    struct group_member **members;
    struct group_member_view *views;
    struct group_member_view *answer_views;
    char *protocol_type;
};

static void group_restore_discard(struct group_restore *r, size_t n)
{
    size_t i;

    for (i = 0; r->members != NULL && i < n; i++) {
        group_member_free_unused(r->members[i]);
    }
    mem_free(r->members);
    mem_free(r->views);
    mem_free(r->answer_views);
    mem_free(r->protocol_type);
}

static int group_restore_check(const struct group_core *g,
                               const struct group_view *v)
{
    size_t i;
    size_t j;
    bool leader_found = false;

    if (v->generation_id < 0 || v->n_members > g->cfg.max_members ||
        v->n_members > GROUP_MAX_MEMBERS || g->state == GROUP_DEAD) {
        return WEIR_EINVALID_ARGUMENT;
    }
    for (i = 0; i < g->n_members; i++) {
        if (g->members[i]->join_pending || g->members[i]->sync_pending) {
            return WEIR_EINVALID_ARGUMENT; /* would never be answered */
        }
    }
    if (v->n_members == 0) {
        return 0;
    }
    if (*group_nz(v->protocol) == '\0' || *group_nz(v->protocol_type) == '\0') {
        return WEIR_EINVALID_ARGUMENT;
    }
    for (i = 0; i < v->n_members; i++) {
        const char *id = group_nz(v->members[i].member_id);

        if (*id == '\0') {
            return WEIR_EINVALID_ARGUMENT;
        }
        for (j = 0; j < i; j++) {
            if (strcmp(id, group_nz(v->members[j].member_id)) == 0) {
                return WEIR_EINVALID_ARGUMENT;
            }
        }
        leader_found = leader_found || strcmp(id, group_nz(v->leader_id)) == 0;
    }
    return leader_found ? 0 : WEIR_EINVALID_ARGUMENT;
}

static int group_restore_member(const struct group_view *v,
                                const struct group_member_view *mv,
                                uint64_t now_ms,
                                struct group_member **out)
{
    struct group_protocol p = {v->protocol, mv->metadata};
    struct group_member *m;
    int rv;

    rv = group_member_new(mv->member_id, NULL, mv->client_id, mv->client_host,
                          &m);
    if (rv != 0) {
        return rv;
    }
    rv = group_protos_new(&p, 1, &m->protos);
    if (rv == 0 && !v->assignment_pending) {
        rv = group_bytes_new(mv->assignment, &m->assignment);
    }
    if (rv != 0) {
        group_member_free_unused(m);
        return rv;
    }
    m->assignment_generation = v->assignment_pending ? -1 : v->generation_id;
    m->session_timeout_ms = mv->session_timeout_ms;
    m->rebalance_timeout_ms = mv->rebalance_timeout_ms;
    m->last_heard_ms = now_ms;
    *out = m;
    return 0;
}

static int group_restore_build(const struct group_view *v,
                               uint64_t now_ms,
                               struct group_restore *r)
{
    size_t n = v->n_members;
    size_t i;
    int rv;

    r->members = mem_calloc(n + 1, sizeof(*r->members));
    r->views = mem_calloc(n + 1, sizeof(*r->views));
    r->answer_views = mem_calloc(2 * (n + 1), sizeof(*r->answer_views));
    r->protocol_type = mem_strdup(group_nz(v->protocol_type));
    if (r->members == NULL || r->views == NULL || r->answer_views == NULL ||
        r->protocol_type == NULL) {
        return WEIR_ENOMEM;
    }
    for (i = 0; i < n; i++) {
        rv = group_restore_member(v, &v->members[i], now_ms, &r->members[i]);
        if (rv != 0) {
            return rv;
        }
    }
    return 0;
}

static void group_restore_install(struct group_core *g,
                                  const struct group_view *v,
                                  struct group_restore *r,
                                  uint64_t now_ms)
{
    uint32_t i;

    for (i = 0; i < g->n_members; i++) {
        group_member_retire(g, g->members[i]);
    }
    group_protos_unref(g, g->protocol_blob);
    g->protocol_blob = NULL;
    mem_free(g->members);
    mem_free(g->views);
    mem_free(g->answer_views);
    mem_free(g->protocol_type);
    g->members = r->members;
    g->n_members = (uint32_t)v->n_members;
    g->cap_members = g->n_members + 1;
    g->views = r->views;
    g->cap_views = g->n_members + 1;
    g->answer_views = r->answer_views;
    g->cap_answer_views = 2 * (g->n_members + 1);
    g->n_answer_views = 0;
    g->protocol_type = r->protocol_type;
    g->generation_id = v->generation_id;
    g->leader = NULL;
    g->state = v->n_members == 0       ? GROUP_EMPTY
               : v->assignment_pending ? GROUP_COMPLETING_REBALANCE
                                       : GROUP_STABLE;
    g->hold_seq = 0;
    g->assigned = false;
    for (i = 0; i < g->n_members; i++) {
        if (strcmp(g->members[i]->member_id, v->leader_id) == 0) {
            g->leader = g->members[i];
        }
    }
    if (g->leader != NULL) {
        g->protocol_blob = g->leader->protos;
        g->protocol_blob->refs++;
        g->protocol_idx = 0;
    }
    if (now_ms > g->now_ms) {
        g->now_ms = now_ms;
    }
    group_views_refresh(g);
}

int group_core_restore(struct group_core *g,
                       const struct group_view *v,
                       uint64_t now_ms)
{
    struct group_restore r = {0};
    int rv;

    group_free_dead(g);
    rv = group_restore_check(g, v);
    if (rv != 0) {
        return rv;
    }
    rv = group_restore_build(v, now_ms, &r);
    if (rv != 0) {
        group_restore_discard(&r, v->n_members);
        return rv;
    }
    group_restore_install(g, v, &r, now_ms);
    return 0;
}

int group_core_check_invariants(const struct group_core *g)
{
    uint32_t i;
    uint32_t n_leaders = 0;

    if ((g->n_members == 0) != (g->leader == NULL)) {
        return WEIR_ECORRUPT;
    }
    if (g->state == GROUP_EMPTY && g->n_members != 0) {
        return WEIR_ECORRUPT;
    }
    if ((g->state == GROUP_STABLE || g->state == GROUP_COMPLETING_REBALANCE) &&
        (g->n_members == 0 || g->protocol_blob == NULL)) {
        return WEIR_ECORRUPT;
    }
    /* only a completed rebalance waits for its record; an assignment is
     * in only while its record is awaited */
    if ((g->hold_seq != 0 && g->state != GROUP_COMPLETING_REBALANCE) ||
        (g->assigned && g->hold_seq == 0)) {
        return WEIR_ECORRUPT;
    }
    for (i = 0; i < g->n_members; i++) {
        const struct group_member *m = g->members[i];

        n_leaders += m == g->leader;
        if ((m->join_pending && g->state != GROUP_PREPARING_REBALANCE &&
             !group_joins_held(g)) ||
            (!m->join_pending && group_joins_held(g)) ||
            (m->sync_pending && g->state != GROUP_COMPLETING_REBALANCE) ||
            m->protos == NULL) {
            return WEIR_ECORRUPT;
        }
        if (g->state == GROUP_STABLE &&
            m->assignment_generation != g->generation_id) {
            return WEIR_ECORRUPT;
        }
        if (g->protocol_blob != NULL && g->state != GROUP_PREPARING_REBALANCE &&
            group_protos_find(m->protos, group_protocol_name(g)) < 0) {
            return WEIR_ECORRUPT;
        }
    }
    return n_leaders == (g->n_members > 0 ? 1u : 0u) ? 0 : WEIR_ECORRUPT;
}
