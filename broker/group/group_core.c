/* SPDX-License-Identifier: Apache-2.0 */
/* Group core: the step. Every step runs in two phases so that an
 * allocation failure leaves the group unchanged: first everything the
 * step might need is allocated or reserved (member copies, room for
 * answers and views), then the state changes and nothing can fail.
 * Timers (session expiry, rebalance completion) run at the start of every
 * step for its now_ms, so the outcome does not depend on how punctually
 * the adapter delivers TICKs. */
#include <assert.h>
#include <string.h>

#include "broker/group/group_core_int.h"
#include "common/mem.h"

static const char *group_nz(const char *s)
{
    return s != NULL ? s : "";
}

void group_config_init(struct group_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->min_session_timeout_ms = 1000;
    cfg->max_session_timeout_ms = 300000;
    cfg->initial_rebalance_delay_ms = 0;
    cfg->max_members = GROUP_MAX_MEMBERS;
}

const char *group_state_name(enum group_state s)
{
    switch (s) {
    case GROUP_EMPTY:
        return "Empty";
    case GROUP_PREPARING_REBALANCE:
        return "PreparingRebalance";
    case GROUP_COMPLETING_REBALANCE:
        return "CompletingRebalance";
    case GROUP_STABLE:
        return "Stable";
    case GROUP_DEAD:
        return "Dead";
    }
    return "Unknown";
}

void group_actions_init(struct group_actions *a)
{
    memset(a, 0, sizeof(*a));
    a->next_tick_ms = UINT64_MAX;
}

void group_actions_fini(struct group_actions *a)
{
    mem_free(a->answers);
    group_actions_init(a);
}

int group_core_new(const struct group_config *cfg,
                   const char *group_id,
                   struct group_core **out)
{
    struct group_core *g;

    *out = NULL;
    g = mem_calloc(1, sizeof(*g));
    if (g == NULL) {
        return WEIR_ENOMEM;
    }
    g->cfg = *cfg;
    if (g->cfg.max_members == 0 || g->cfg.max_members > GROUP_MAX_MEMBERS) {
        g->cfg.max_members = GROUP_MAX_MEMBERS;
    }
    g->group_id = mem_strdup(group_id);
    g->protocol_type = mem_strdup("");
    if (g->group_id == NULL || g->protocol_type == NULL) {
        group_core_free(g);
        return WEIR_ENOMEM;
    }
    g->state = GROUP_EMPTY;
    *out = g;
    return 0;
}

void group_core_free(struct group_core *g)
{
    uint32_t i;

    if (g == NULL) {
        return;
    }
    for (i = 0; i < g->n_members; i++) {
        group_member_retire(g, g->members[i]);
    }
    group_protos_unref(g, g->protocol_blob);
    group_free_dead(g);
    mem_free(g->members);
    mem_free(g->views);
    mem_free(g->answer_views);
    mem_free(g->protocol_type);
    mem_free(g->group_id);
    mem_free(g);
}

static int group_grow(void **arr, uint32_t *cap, uint32_t need, size_t size)
{
    if (*cap >= need) {
        return 0;
    }
    return mem_grow(arr, cap, need, size);
}

/* Room for every answer, view and member this step can produce: at most
 * one answer per parked request (one per member) plus the event's own and
 * the one it supersedes; at most two leader answers (timers, then the
 * event); at most one new member. */
static int group_reserve(struct group_core *g, struct group_actions *out)
{
    uint32_t n = g->n_members + 1;
    size_t need = (size_t)n + 2;
    int rv;

    rv = group_grow((void **)&g->members, &g->cap_members, n,
                    sizeof(*g->members));
    if (rv == 0) {
        rv =
            group_grow((void **)&g->views, &g->cap_views, n, sizeof(*g->views));
    }
    if (rv == 0) {
        rv = group_grow((void **)&g->answer_views, &g->cap_answer_views, 2 * n,
                        sizeof(*g->answer_views));
    }
    if (rv == 0 && out->cap_answers < need) {
        struct group_answer *a =
            mem_realloc(out->answers, need * sizeof(*out->answers));

        if (a == NULL) {
            return WEIR_ENOMEM;
        }
        out->answers = a;
        out->cap_answers = need;
    }
    return rv;
}

static void group_draft_discard(struct group_draft *d, size_t n_assigned)
{
    size_t i;

    group_member_free_unused(d->member);
    if (d->protos != NULL && --d->protos->refs == 0) {
        mem_free(d->protos);
    }
    mem_free(d->protocol_type);
    for (i = 0; d->assigned != NULL && i < n_assigned; i++) {
        mem_free(d->assigned[i]);
    }
    mem_free(d->assigned);
    memset(d, 0, sizeof(*d));
}

static int group_draft_join(const struct group_core *g,
                            const struct group_event *ev,
                            struct group_draft *d)
{
    int rv;

    if (ev->u.join.n_protocols == 0 ||
        ev->u.join.n_protocols > GROUP_MAX_PROTOCOLS) {
        return 0; /* refused later; nothing to copy */
    }
    rv = group_protos_new(ev->u.join.protocols, ev->u.join.n_protocols,
                          &d->protos);
    if (rv == 0 && *group_nz(ev->member_id) == '\0') {
        rv = group_member_new(group_nz(ev->u.join.client_id),
                              group_nz(ev->u.join.new_member_token),
                              ev->u.join.client_id, ev->u.join.client_host,
                              &d->member);
    }
    if (rv == 0 &&
        strcmp(g->protocol_type, group_nz(ev->u.join.protocol_type)) != 0) {
        d->protocol_type = mem_strdup(group_nz(ev->u.join.protocol_type));
        rv = d->protocol_type == NULL ? WEIR_ENOMEM : 0;
    }
    return rv;
}

static int group_draft_sync(const struct group_event *ev, struct group_draft *d)
{
    size_t n = ev->u.sync.n_assignments;
    size_t i;
    int rv;

    if (n == 0) {
        return 0;
    }
    d->assigned = mem_calloc(n, sizeof(*d->assigned));
    if (d->assigned == NULL) {
        return WEIR_ENOMEM;
    }
    for (i = 0; i < n; i++) {
        rv = group_bytes_new(ev->u.sync.assignments[i].assignment,
                             &d->assigned[i]);
        if (rv != 0) {
            return rv;
        }
    }
    return 0;
}

struct group_answer *group_answer_add(struct group_actions *out,
                                      enum group_event_type type,
                                      uint64_t request_id,
                                      int error)
{
    struct group_answer *a;

    assert(out->n_answers < out->cap_answers);
    a = &out->answers[out->n_answers++];
    memset(a, 0, sizeof(*a));
    a->type = type;
    a->request_id = request_id;
    a->error = error;
    a->generation_id = -1;
    a->protocol = "";
    a->leader_id = "";
    a->member_id = "";
    return a;
}

/* Answer whatever m has parked with `error`. */
void group_answer_parked(struct group_member *m,
                         int error,
                         struct group_actions *out)
{
    struct group_answer *a;

    if (m->join_pending) {
        a = group_answer_add(out, GROUP_EV_JOIN, m->join_request_id, error);
        a->member_id = m->member_id;
        m->join_pending = false;
    }
    if (m->sync_pending) {
        group_answer_add(out, GROUP_EV_SYNC, m->sync_request_id, error);
        m->sync_pending = false;
    }
}

void group_remove_at(struct group_core *g,
                     uint32_t i,
                     struct group_actions *out)
{
    struct group_member *m = g->members[i];

    group_answer_parked(m, WEIR_EUNKNOWN_MEMBER_ID, out);
    memmove(&g->members[i], &g->members[i + 1],
            (g->n_members - i - 1) * sizeof(*g->members));
    g->n_members--;
    if (g->leader == m) {
        g->leader = g->n_members > 0 ? g->members[0] : NULL;
    }
    group_member_retire(g, m);
}

void group_prepare_rebalance(struct group_core *g,
                             uint64_t now_ms,
                             struct group_actions *out)
{
    uint32_t i;

    if (g->state == GROUP_PREPARING_REBALANCE) {
        return;
    }
    /* Joins held for their record stay parked: they count for this round,
     * whose generation will be newer than the one they waited for. */
    if (g->state == GROUP_COMPLETING_REBALANCE && !group_joins_held(g)) {
        for (i = 0; i < g->n_members; i++) {
            group_answer_parked(g->members[i], WEIR_EREBALANCE_IN_PROGRESS,
                                out);
        }
    }
    g->hold_seq = 0;
    g->assigned = false;
    g->rebalance_not_before_ms = now_ms;
    if (g->state == GROUP_EMPTY) {
        g->rebalance_not_before_ms += g->cfg.initial_rebalance_delay_ms;
    }
    g->rebalance_start_ms = now_ms;
    g->state = GROUP_PREPARING_REBALANCE;
}

static uint32_t group_max_rebalance_ms(const struct group_core *g)
{
    uint32_t max_ms = 0;
    uint32_t i;

    for (i = 0; i < g->n_members; i++) {
        if (g->members[i]->rebalance_timeout_ms > max_ms) {
            max_ms = g->members[i]->rebalance_timeout_ms;
        }
    }
    return max_ms;
}

static uint64_t group_rebalance_deadline(const struct group_core *g)
{
    return g->rebalance_start_ms + group_max_rebalance_ms(g);
}

/* Ask for a group record; parked answers may wait for it (hold). */
void group_persist(struct group_core *g,
                   bool hold,
                   uint64_t now_ms,
                   struct group_actions *out)
{
    out->persist = true;
    out->persist_seq = ++g->persist_seq;
    g->hold_seq = hold ? g->persist_seq : 0;
    g->hold_deadline_ms = now_ms + group_max_rebalance_ms(g);
}

static bool group_all_joined(const struct group_core *g)
{
    uint32_t i;

    for (i = 0; i < g->n_members; i++) {
        if (!g->members[i]->join_pending) {
            return false;
        }
    }
    return true;
}

/* The first of the leader's protocols that every member supports. Joins
 * are refused unless this exists, and removals only widen the choice. */
static size_t group_choose_protocol(const struct group_core *g)
{
    const struct group_protos *lp = g->leader->protos;
    size_t p;
    uint32_t i;

    for (p = 0; p < lp->n; p++) {
        for (i = 0; i < g->n_members; i++) {
            if (group_protos_find(g->members[i]->protos, lp->p[p].name) < 0) {
                break;
            }
        }
        if (i == g->n_members) {
            return p;
        }
    }
    assert(!"members share no protocol");
    return 0;
}

void group_answer_joins(struct group_core *g,
                        uint64_t now_ms,
                        struct group_actions *out)
{
    struct group_member_view *views;
    struct group_answer *a;
    uint32_t i;

    assert(g->n_answer_views + g->n_members <= g->cap_answer_views);
    views = &g->answer_views[g->n_answer_views];
    g->n_answer_views += g->n_members;
    for (i = 0; i < g->n_members; i++) {
        struct group_member *m = g->members[i];

        group_member_view_fill(g, m, &views[i]);
        m->last_heard_ms = now_ms;
        m->join_pending = false;
        a = group_answer_add(out, GROUP_EV_JOIN, m->join_request_id, 0);
        a->generation_id = g->generation_id;
        a->protocol = group_protocol_name(g);
        a->leader_id = g->leader->member_id;
        a->member_id = m->member_id;
        if (m == g->leader) {
            a->members = views;
            a->n_members = g->n_members;
        }
    }
}

/* Members without a pending join are dropped; the generation moves on,
 * even into EMPTY (as Kafka does), so stale commits are refused. */
static void group_complete_rebalance(struct group_core *g,
                                     uint64_t now_ms,
                                     struct group_actions *out)
{
    uint32_t i = 0;

    while (i < g->n_members) {
        if (!g->members[i]->join_pending) {
            group_remove_at(g, i, out);
        } else {
            i++;
        }
    }
    for (i = 0; i < g->n_members; i++) {
        group_retire(g, g->members[i]->assignment);
        g->members[i]->assignment = NULL;
        g->members[i]->assignment_generation = -1;
    }
    g->generation_id++;
    g->assigned = false;
    group_protos_unref(g, g->protocol_blob);
    g->protocol_blob = NULL;
    if (g->n_members == 0) {
        g->state = GROUP_EMPTY;
        group_persist(g, false, now_ms, out);
        return;
    }
    g->protocol_idx = group_choose_protocol(g);
    g->protocol_blob = g->leader->protos;
    g->protocol_blob->refs++;
    g->state = GROUP_COMPLETING_REBALANCE;
    /* The joins are answered (the generation handed out) once the record
     * holding it is committed: see group_on_persisted. */
    group_persist(g, true, now_ms, out);
}

void group_try_complete(struct group_core *g,
                        uint64_t now_ms,
                        struct group_actions *out)
{
    if (g->state != GROUP_PREPARING_REBALANCE) {
        return;
    }
    if (g->n_members == 0 ||
        (now_ms >= g->rebalance_not_before_ms &&
         (group_all_joined(g) || now_ms >= group_rebalance_deadline(g)))) {
        group_complete_rebalance(g, now_ms, out);
    }
}

static bool group_expired(const struct group_member *m, uint64_t now_ms)
{
    return !m->join_pending &&
           now_ms >= m->last_heard_ms + m->session_timeout_ms;
}

static void group_run_timers(struct group_core *g,
                             uint64_t now_ms,
                             struct group_actions *out)
{
    uint32_t i = 0;
    bool removed = false;

    if (g->hold_seq != 0 && now_ms >= g->hold_deadline_ms) {
        group_hold_fail(g, WEIR_ECOORDINATOR_NOT_AVAILABLE, now_ms, out);
    }

    while (i < g->n_members) {
        if (group_expired(g->members[i], now_ms)) {
            group_remove_at(g, i, out);
            removed = true;
        } else {
            i++;
        }
    }
    if (removed) {
        group_prepare_rebalance(g, now_ms, out);
    }
    group_try_complete(g, now_ms, out);
}

static uint64_t group_next_tick(const struct group_core *g)
{
    uint64_t next = UINT64_MAX;
    uint64_t t;
    uint32_t i;

    if (g->state == GROUP_DEAD) {
        return UINT64_MAX;
    }
    for (i = 0; i < g->n_members; i++) {
        const struct group_member *m = g->members[i];

        t = m->last_heard_ms + m->session_timeout_ms;
        if (!m->join_pending && t < next) {
            next = t;
        }
    }
    if (g->state == GROUP_PREPARING_REBALANCE) {
        t = g->rebalance_not_before_ms;
        if (!group_all_joined(g) && group_rebalance_deadline(g) > t) {
            t = group_rebalance_deadline(g);
        }
        if (t < next) {
            next = t;
        }
    }
    if (g->hold_seq != 0 && g->hold_deadline_ms < next) {
        next = g->hold_deadline_ms;
    }
    return next;
}

/* True if the protocols of everyone but `except`, and `ps`, share one. */
static bool group_supports(const struct group_core *g,
                           const struct group_member *except,
                           const struct group_protos *ps)
{
    size_t p;
    uint32_t i;

    for (p = 0; p < ps->n; p++) {
        for (i = 0; i < g->n_members; i++) {
            const struct group_member *m = g->members[i];

            if (m != except &&
                group_protos_find(m->protos, ps->p[p].name) < 0) {
                break;
            }
        }
        if (i == g->n_members) {
            return true;
        }
    }
    return false;
}

static int group_join_check(const struct group_core *g,
                            const struct group_event *ev,
                            const struct group_member *m,
                            const struct group_draft *d)
{
    uint32_t session = ev->u.join.session_timeout_ms;

    if (session < g->cfg.min_session_timeout_ms ||
        session > g->cfg.max_session_timeout_ms) {
        return WEIR_EINVALID_SESSION_TIMEOUT;
    }
    if (ev->u.join.n_protocols > GROUP_MAX_PROTOCOLS) {
        return WEIR_EINVALID_REQUEST;
    }
    if (d->protos == NULL || *group_nz(ev->u.join.protocol_type) == '\0') {
        return WEIR_EINCONSISTENT_GROUP_PROTOCOL;
    }
    if (g->n_members > 0 &&
        (strcmp(g->protocol_type, ev->u.join.protocol_type) != 0 ||
         !group_supports(g, m, d->protos))) {
        return WEIR_EINCONSISTENT_GROUP_PROTOCOL;
    }
    if (m == NULL && g->n_members >= g->cfg.max_members) {
        return WEIR_EPOLICY_VIOLATION;
    }
    if (m == NULL && group_find(g, d->member->member_id) >= 0) {
        return WEIR_EUNKNOWN; /* the adapter's token was not unique */
    }
    return 0;
}

static void
group_add_member(struct group_core *g, struct group_draft *d, uint64_t now_ms)
{
    struct group_member *m = d->member;

    d->member = NULL;
    if (g->n_members == 0 && d->protocol_type != NULL) {
        mem_free(g->protocol_type);
        g->protocol_type = d->protocol_type;
        d->protocol_type = NULL;
    }
    g->members[g->n_members++] = m;
    if (g->leader == NULL) {
        g->leader = m;
    }
    m->last_heard_ms = now_ms;
}

static void group_on_join(struct group_core *g,
                          const struct group_event *ev,
                          struct group_draft *d,
                          struct group_actions *out)
{
    struct group_member *m = NULL;
    int i;

    if (*group_nz(ev->member_id) != '\0') {
        i = group_find(g, ev->member_id);
        if (i < 0) {
            out->result = WEIR_EUNKNOWN_MEMBER_ID;
            return;
        }
        m = g->members[i];
    }
    out->result = group_join_check(g, ev, m, d);
    if (out->result != 0) {
        return;
    }
    if (m == NULL) {
        m = d->member;
        group_add_member(g, d, g->now_ms);
    } else if (m->join_pending) {
        group_answer_add(out, GROUP_EV_JOIN, m->join_request_id,
                         WEIR_EREBALANCE_IN_PROGRESS)
            ->member_id = m->member_id;
    }
    group_protos_unref(g, m->protos);
    m->protos = d->protos;
    d->protos = NULL;
    m->session_timeout_ms = ev->u.join.session_timeout_ms;
    m->rebalance_timeout_ms = ev->u.join.rebalance_timeout_ms != 0
                                  ? ev->u.join.rebalance_timeout_ms
                                  : ev->u.join.session_timeout_ms;
    m->last_heard_ms = g->now_ms;
    group_prepare_rebalance(g, g->now_ms, out);
    m->join_pending = true;
    m->join_request_id = ev->request_id;
    group_try_complete(g, g->now_ms, out);
}

static void group_dispatch(struct group_core *g,
                           const struct group_event *ev,
                           struct group_draft *d,
                           struct group_actions *out)
{
    switch (ev->type) {
    case GROUP_EV_TICK:
        break;
    case GROUP_EV_JOIN:
        group_on_join(g, ev, d, out);
        break;
    case GROUP_EV_SYNC:
        group_on_sync(g, ev, d, out);
        break;
    case GROUP_EV_HEARTBEAT:
        group_on_heartbeat(g, ev, out);
        break;
    case GROUP_EV_LEAVE:
        group_on_leave(g, ev, out);
        break;
    case GROUP_EV_COMMIT:
        group_on_commit(g, ev, out);
        break;
    case GROUP_EV_PERSISTED:
        group_on_persisted(g, ev, out);
        break;
    }
}

static void group_actions_reset(struct group_actions *out)
{
    out->result = 0;
    out->n_answers = 0;
    out->persist = false;
    out->persist_seq = 0;
}

int group_core_step(struct group_core *g,
                    const struct group_event *ev,
                    struct group_actions *out)
{
    struct group_draft d = {0};
    size_t n_assigned = 0;
    int rv;

    group_actions_reset(out);
    group_free_dead(g);
    g->n_answer_views = 0;
    rv = group_reserve(g, out);
    if (rv == 0 && ev->type == GROUP_EV_JOIN) {
        rv = group_draft_join(g, ev, &d);
    } else if (rv == 0 && ev->type == GROUP_EV_SYNC) {
        n_assigned = ev->u.sync.n_assignments;
        rv = group_draft_sync(ev, &d);
    }
    if (rv != 0) {
        group_draft_discard(&d, n_assigned);
        out->next_tick_ms = group_next_tick(g);
        return rv;
    }
    if (ev->now_ms > g->now_ms) {
        g->now_ms = ev->now_ms;
    }
    if (g->state == GROUP_DEAD) {
        if (ev->type != GROUP_EV_TICK && ev->type != GROUP_EV_PERSISTED) {
            out->result = WEIR_ECOORDINATOR_NOT_AVAILABLE;
        }
    } else {
        group_run_timers(g, g->now_ms, out);
        group_dispatch(g, ev, &d, out);
    }
    group_draft_discard(&d, n_assigned);
    group_views_refresh(g);
    out->next_tick_ms = group_next_tick(g);
    return 0;
}
