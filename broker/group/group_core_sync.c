/* SPDX-License-Identifier: Apache-2.0 */
/* Group core: the events of a member already in the group (SYNC,
 * HEARTBEAT, LEAVE, COMMIT) and the reports on group records (PERSISTED):
 * the second half of a rebalance. group_core.c has the step, joins and
 * timers. */
#include <assert.h>
#include <string.h>

#include "broker/group/group_core_int.h"

static const char *group_nz(const char *s)
{
    return s != NULL ? s : "";
}

/* What waits for a record that failed, or was not committed in time, is
 * answered with the error, and the group rebalances: its members join
 * again and the next generation gets a record of its own. */
void group_hold_fail(struct group_core *g,
                     int error,
                     uint64_t now_ms,
                     struct group_actions *out)
{
    uint32_t i;

    g->hold_seq = 0;
    for (i = 0; i < g->n_members; i++) {
        group_answer_parked(g->members[i], error, out);
        g->members[i]->last_heard_ms = now_ms;
    }
    group_prepare_rebalance(g, now_ms, out);
}

/* Common checks of SYNC, HEARTBEAT and COMMIT: the member, or NULL with
 * out->result set. */
static struct group_member *group_member_check(struct group_core *g,
                                               const struct group_event *ev,
                                               struct group_actions *out)
{
    int i = group_find(g, group_nz(ev->member_id));

    if (i < 0) {
        out->result = WEIR_EUNKNOWN_MEMBER_ID;
        return NULL;
    }
    if (ev->generation_id != g->generation_id) {
        out->result = WEIR_EILLEGAL_GENERATION;
        return NULL;
    }
    return g->members[i];
}

static void group_answer_sync(struct group_member *m,
                              uint64_t request_id,
                              struct group_actions *out)
{
    struct group_answer *a =
        group_answer_add(out, GROUP_EV_SYNC, request_id, 0);

    a->member_id = m->member_id;
    if (m->assignment != NULL) {
        a->assignment.p = m->assignment->data;
        a->assignment.len = m->assignment->len;
    }
}

/* The leader's sync: members it names get their assignment, the others
 * an empty one (as Kafka). Unknown or repeated names are ignored. */
static void group_assign(struct group_core *g,
                         const struct group_event *ev,
                         struct group_draft *d,
                         struct group_actions *out)
{
    struct group_member *m;
    size_t j;
    uint32_t i;
    int k;

    for (j = 0; j < ev->u.sync.n_assignments; j++) {
        k = group_find(g, group_nz(ev->u.sync.assignments[j].member_id));
        if (k < 0 || g->members[k]->assignment != NULL) {
            continue;
        }
        g->members[k]->assignment = d->assigned[j];
        d->assigned[j] = NULL;
    }
    for (i = 0; i < g->n_members; i++) {
        m = g->members[i];
        m->assignment_generation = g->generation_id;
    }
    g->assigned = true;
    /* the syncs are answered, and the group STABLE, once the record with
     * the assignment is committed: see group_on_persisted */
    group_persist(g, true, g->now_ms, out);
}

void group_on_sync(struct group_core *g,
                   const struct group_event *ev,
                   struct group_draft *d,
                   struct group_actions *out)
{
    struct group_member *m = group_member_check(g, ev, out);

    if (m == NULL) {
        return;
    }
    if (g->state == GROUP_PREPARING_REBALANCE || group_joins_held(g)) {
        out->result = WEIR_EREBALANCE_IN_PROGRESS;
        return;
    }
    m->last_heard_ms = g->now_ms;
    if (g->state == GROUP_STABLE) {
        group_answer_sync(m, ev->request_id, out);
        return;
    }
    assert(g->state == GROUP_COMPLETING_REBALANCE);
    if (m->sync_pending) {
        group_answer_add(out, GROUP_EV_SYNC, m->sync_request_id,
                         WEIR_EREBALANCE_IN_PROGRESS);
    }
    m->sync_pending = true;
    m->sync_request_id = ev->request_id;
    if (m == g->leader && !g->assigned) {
        group_assign(g, ev, d, out);
    }
}

/* The record a hold waits for is committed (or failed). A report for an
 * older record, or with nothing held, changes nothing: records of one
 * group are committed in the order they were asked for. */
void group_on_persisted(struct group_core *g,
                        const struct group_event *ev,
                        struct group_actions *out)
{
    uint32_t i;

    if (g->hold_seq == 0 || ev->u.persisted.seq < g->hold_seq) {
        return;
    }
    assert(g->state == GROUP_COMPLETING_REBALANCE);
    if (ev->u.persisted.error != 0) {
        group_hold_fail(g, ev->u.persisted.error, g->now_ms, out);
        return;
    }
    g->hold_seq = 0;
    if (!g->assigned) {
        group_answer_joins(g, g->now_ms, out);
        return;
    }
    g->state = GROUP_STABLE;
    g->assigned = false;
    for (i = 0; i < g->n_members; i++) {
        struct group_member *m = g->members[i];

        if (m->sync_pending) {
            m->sync_pending = false;
            group_answer_sync(m, m->sync_request_id, out);
        }
    }
}

void group_on_heartbeat(struct group_core *g,
                        const struct group_event *ev,
                        struct group_actions *out)
{
    struct group_member *m;
    int i;

    if (group_joins_held(g)) {
        /* the new generation is not handed out yet: rejoin is the news */
        i = group_find(g, group_nz(ev->member_id));
        out->result =
            i < 0 ? WEIR_EUNKNOWN_MEMBER_ID : WEIR_EREBALANCE_IN_PROGRESS;
        if (i >= 0) {
            g->members[i]->last_heard_ms = g->now_ms;
        }
        return;
    }
    m = group_member_check(g, ev, out);
    if (m == NULL) {
        return;
    }
    m->last_heard_ms = g->now_ms;
    if (g->state == GROUP_PREPARING_REBALANCE) {
        out->result = WEIR_EREBALANCE_IN_PROGRESS;
    }
}

void group_on_leave(struct group_core *g,
                    const struct group_event *ev,
                    struct group_actions *out)
{
    int i = group_find(g, group_nz(ev->member_id));

    if (i < 0) {
        out->result = WEIR_EUNKNOWN_MEMBER_ID;
        return;
    }
    group_remove_at(g, (uint32_t)i, out);
    group_prepare_rebalance(g, g->now_ms, out);
    group_try_complete(g, g->now_ms, out);
}

/* Kafka's order: an operator commit into an EMPTY group first, then the
 * rebalance, then the member and its generation. */
void group_on_commit(struct group_core *g,
                     const struct group_event *ev,
                     struct group_actions *out)
{
    struct group_member *m;

    if (g->state == GROUP_EMPTY && ev->generation_id < 0 &&
        *group_nz(ev->member_id) == '\0') {
        return;
    }
    if (g->state == GROUP_COMPLETING_REBALANCE) {
        out->result = WEIR_EREBALANCE_IN_PROGRESS;
        return;
    }
    m = group_member_check(g, ev, out);
    if (m != NULL) {
        m->last_heard_ms = g->now_ms;
    }
}
