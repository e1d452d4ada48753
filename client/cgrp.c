/* SPDX-License-Identifier: Apache-2.0 */
/* Consumer group membership core (see cgrp.h). Eager rebalancing, as
 * Kafka's classic protocol: on a rebalance the member commits (auto
 * commit), gives up everything it owns, and joins again; the new
 * assignment starts from the committed offsets. A member that learns it
 * was fenced (unknown member, stale generation) gives its partitions up
 * without committing: its commits would be refused anyway, and another
 * member may own them already. */
#include "client/cgrp.h"

#include <stdio.h>
#include <string.h>

#include "common/mem.h"

#define CGRP_CHAIN                                                             \
    (CGRP_BIT(CGRP_REQ_FIND) | CGRP_BIT(CGRP_REQ_JOIN) |                       \
     CGRP_BIT(CGRP_REQ_SYNC) | CGRP_BIT(CGRP_REQ_OFFSETS) |                    \
     CGRP_BIT(CGRP_REQ_LEAVE))

static const char *const cgrp_req_names[CGRP_REQ_COUNT] = {
    "FindCoordinator", "JoinGroup",    "SyncGroup",  "OffsetFetch",
    "Heartbeat",       "OffsetCommit", "LeaveGroup",
};

const char *cgrp_state_name(enum cgrp_state s)
{
    static const char *const names[] = {
        "idle",     "join",    "sync",   "offsets", "stable",
        "revoking", "leaving", "closed", "failed",
    };
    return (size_t)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

bool cgrp_is_fencing_err(int err)
{
    return err == WEIR_EILLEGAL_GENERATION || err == WEIR_EUNKNOWN_MEMBER_ID ||
           err == WEIR_EREBALANCE_IN_PROGRESS;
}

bool cgrp_is_coordinator_err(int err)
{
    return err == WEIR_ENOT_COORDINATOR ||
           err == WEIR_ENOT_COORDINATOR_AFTER_APPEND ||
           err == WEIR_ECOORDINATOR_NOT_AVAILABLE ||
           err == WEIR_ECOORDINATOR_LOAD_IN_PROGRESS || err == WEIR_ENETWORK ||
           err == WEIR_EREQUEST_TIMED_OUT || err == WEIR_ESHUTTING_DOWN;
}

static bool cgrp_is_fatal_err(int err)
{
    return err == WEIR_EINCONSISTENT_GROUP_PROTOCOL ||
           err == WEIR_EINVALID_SESSION_TIMEOUT ||
           err == WEIR_EINVALID_GROUP_ID || err == WEIR_EUNSUPPORTED_API;
}

static void cgrp_tps_free(struct cgrp_tp *tps, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        mem_free(tps[i].topic);
    }
    mem_free(tps);
}

static int
cgrp_tps_copy(const struct cgrp_tp *src, size_t n, struct cgrp_tp **out)
{
    struct cgrp_tp *v = mem_calloc(n + 1, sizeof(*v));
    size_t i;

    *out = NULL;
    if (v == NULL) {
        return WEIR_ENOMEM;
    }
    for (i = 0; i < n; i++) {
        v[i].partition = src[i].partition;
        v[i].topic = mem_strdup(src[i].topic);
        if (v[i].topic == NULL) {
            cgrp_tps_free(v, i);
            return WEIR_ENOMEM;
        }
    }
    *out = v;
    return 0;
}

static int cgrp_set_str(char **dst, const char *src)
{
    char *s = mem_strdup(src != NULL ? src : "");

    if (s == NULL) {
        return WEIR_ENOMEM;
    }
    mem_free(*dst);
    *dst = s;
    return 0;
}

void cgrp_init(struct cgrp *cg, const struct cgrp_config *cfg)
{
    memset(cg, 0, sizeof(*cg));
    cg->cfg = *cfg;
    cg->state = CGRP_STATE_IDLE;
    cg->generation = -1;
}

void cgrp_fini(struct cgrp *cg)
{
    mem_free(cg->member_id);
    mem_free(cg->leader_id);
    mem_free(cg->protocol);
    mem_free(cg->coord_host);
    cgrp_tps_free(cg->assigned, cg->n_assigned);
    cgrp_tps_free(cg->pending, cg->n_pending);
    memset(cg, 0, sizeof(*cg));
}

static void
cgrp_report(struct cgrp_actions *a, enum cgrp_req req, int err, const char *msg)
{
    if (a->err != 0) {
        return; /* the first one is the cause */
    }
    a->err = err;
    (void)snprintf(a->err_msg, sizeof(a->err_msg), "%s failed: %s",
                   cgrp_req_names[req],
                   msg != NULL && msg[0] != '\0' ? msg : weir_err_str(err));
}

static void cgrp_backoff(struct cgrp *cg, uint64_t now)
{
    if (cg->backoff_ms == 0) {
        cg->backoff_ms = cg->cfg.retry_backoff_ms;
    } else if (cg->backoff_ms < cg->cfg.retry_backoff_max_ms) {
        cg->backoff_ms *= 2;
        if (cg->backoff_ms > cg->cfg.retry_backoff_max_ms) {
            cg->backoff_ms = cg->cfg.retry_backoff_max_ms;
        }
    }
    cg->backoff_until_ms = now + cg->backoff_ms;
}

static void cgrp_lose_coordinator(struct cgrp *cg, uint64_t now)
{
    cg->coord_known = false;
    cgrp_backoff(cg, now);
}

/* Give up the assignment and join again; commit first when it is still
 * ours to commit (auto commit on, not fenced). */
static void cgrp_rejoin(struct cgrp *cg, bool may_commit)
{
    cgrp_tps_free(cg->pending, cg->n_pending);
    cg->pending = NULL;
    cg->n_pending = 0;
    if (cg->has_assignment) {
        cg->state = CGRP_STATE_REVOKING;
        cg->final_commit_sent = false;
        cg->revoke_committed = !(may_commit && cg->cfg.auto_commit);
    } else {
        cg->state = CGRP_STATE_JOIN;
    }
}

static void cgrp_fenced(struct cgrp *cg, int err)
{
    if (err == WEIR_EUNKNOWN_MEMBER_ID) {
        cg->member_id[0] = '\0';
        cg->generation = -1;
    }
    cgrp_rejoin(cg, err == WEIR_EREBALANCE_IN_PROGRESS);
}

static int cgrp_on_find(struct cgrp *cg,
                        const struct cgrp_event *ev,
                        struct cgrp_actions *a)
{
    if (ev->reply.err == 0) {
        if (cgrp_set_str(&cg->coord_host, ev->reply.host) != 0) {
            return WEIR_ENOMEM;
        }
        cg->coord_port = ev->reply.port;
        cg->coord_known = true;
        cg->backoff_ms = 0;
        cg->backoff_until_ms = 0;
        cg->last_contact_ms = ev->now_ms;
        return 0;
    }
    if (cgrp_is_fatal_err(ev->reply.err)) {
        cg->state = CGRP_STATE_FAILED;
        cgrp_report(a, CGRP_REQ_FIND, ev->reply.err, ev->reply.err_msg);
        return 0;
    }
    cgrp_backoff(cg, ev->now_ms);
    return 0;
}

static int cgrp_on_join(struct cgrp *cg,
                        const struct cgrp_event *ev,
                        struct cgrp_actions *a)
{
    int err = ev->reply.err;

    if (cg->state != CGRP_STATE_JOIN) {
        return 0;
    }
    if (err == 0) {
        if (cgrp_set_str(&cg->member_id, ev->reply.member_id) != 0 ||
            cgrp_set_str(&cg->leader_id, ev->reply.leader_id) != 0 ||
            cgrp_set_str(&cg->protocol, ev->reply.protocol) != 0) {
            return WEIR_ENOMEM;
        }
        cg->generation = ev->reply.generation;
        cg->state = CGRP_STATE_SYNC;
        cg->backoff_ms = 0;
        cg->last_contact_ms = ev->now_ms;
        cg->next_heartbeat_ms = ev->now_ms + cg->cfg.heartbeat_interval_ms;
        return 0;
    }
    if (err == WEIR_EUNKNOWN_MEMBER_ID) {
        cg->member_id[0] = '\0';
    } else if (cgrp_is_coordinator_err(err)) {
        cgrp_lose_coordinator(cg, ev->now_ms);
    } else if (cgrp_is_fatal_err(err)) {
        cg->state = CGRP_STATE_FAILED;
        cgrp_report(a, CGRP_REQ_JOIN, err, ev->reply.err_msg);
    } else if (err != WEIR_EILLEGAL_GENERATION &&
               err != WEIR_EREBALANCE_IN_PROGRESS) {
        cgrp_report(a, CGRP_REQ_JOIN, err, ev->reply.err_msg);
        cgrp_backoff(cg, ev->now_ms);
    }
    return 0;
}

static int cgrp_on_sync(struct cgrp *cg,
                        const struct cgrp_event *ev,
                        struct cgrp_actions *a)
{
    int err = ev->reply.err;

    if (cg->state != CGRP_STATE_SYNC) {
        return 0;
    }
    if (err == 0) {
        cgrp_tps_free(cg->pending, cg->n_pending);
        cg->pending = NULL;
        cg->n_pending = 0;
        if (cgrp_tps_copy(ev->reply.tps, ev->reply.n_tps, &cg->pending) != 0) {
            return WEIR_ENOMEM;
        }
        cg->n_pending = ev->reply.n_tps;
        cg->state = CGRP_STATE_OFFSETS;
        return 0;
    }
    cg->state = CGRP_STATE_JOIN;
    if (err == WEIR_EUNKNOWN_MEMBER_ID) {
        cg->member_id[0] = '\0';
    } else if (cgrp_is_coordinator_err(err)) {
        cgrp_lose_coordinator(cg, ev->now_ms);
    } else if (err != WEIR_EILLEGAL_GENERATION &&
               err != WEIR_EREBALANCE_IN_PROGRESS) {
        cgrp_report(a, CGRP_REQ_SYNC, err, ev->reply.err_msg);
        cgrp_backoff(cg, ev->now_ms);
    }
    return 0;
}

static void cgrp_on_offsets(struct cgrp *cg,
                            const struct cgrp_event *ev,
                            struct cgrp_actions *a)
{
    int err = ev->reply.err;

    if (cg->state != CGRP_STATE_OFFSETS) {
        return;
    }
    if (err == 0) {
        cgrp_tps_free(cg->assigned, cg->n_assigned);
        cg->assigned = cg->pending;
        cg->n_assigned = cg->n_pending;
        cg->pending = NULL;
        cg->n_pending = 0;
        cg->has_assignment = true;
        cg->state = CGRP_STATE_STABLE;
        cg->next_heartbeat_ms = ev->now_ms + cg->cfg.heartbeat_interval_ms;
        cg->next_commit_ms = ev->now_ms + cg->cfg.auto_commit_interval_ms;
        cg->last_contact_ms = ev->now_ms;
        a->assign = true;
        return;
    }
    if (cgrp_is_coordinator_err(err)) {
        cgrp_lose_coordinator(cg, ev->now_ms);
        return;
    }
    cgrp_report(a, CGRP_REQ_OFFSETS, err, ev->reply.err_msg);
    cgrp_backoff(cg, ev->now_ms);
}

static void cgrp_on_heartbeat(struct cgrp *cg, const struct cgrp_event *ev)
{
    int err = ev->reply.err;

    if (cg->state != CGRP_STATE_STABLE && cg->state != CGRP_STATE_OFFSETS) {
        return;
    }
    if (err == 0) {
        cg->last_contact_ms = ev->now_ms;
    } else if (cgrp_is_fencing_err(err)) {
        cgrp_fenced(cg, err);
    } else if (cgrp_is_coordinator_err(err)) {
        cgrp_lose_coordinator(cg, ev->now_ms);
    }
}

static void cgrp_on_commit(struct cgrp *cg,
                           const struct cgrp_event *ev,
                           struct cgrp_actions *a)
{
    int err = ev->reply.err;

    if ((cg->state == CGRP_STATE_REVOKING || cg->state == CGRP_STATE_LEAVING) &&
        (cg->final_commit_sent || cgrp_is_fencing_err(err))) {
        /* One attempt: the partitions are given up either way. An older
         * commit's reply does not count (it carries older positions),
         * unless it says the member is fenced. */
        cg->revoke_committed = true;
        /* a fenced member's commit is refused; the next owner reads again
         * from the last commit that took (at least once): the caller
         * learns it from on_commit or weir_consumer_commit, and poll goes
         * on */
        if (err != 0 && !cgrp_is_fencing_err(err)) {
            cgrp_report(a, CGRP_REQ_COMMIT, err, ev->reply.err_msg);
        }
        if (cgrp_is_coordinator_err(err)) {
            cgrp_lose_coordinator(cg, ev->now_ms);
        }
        return;
    }
    if (err == 0 || cg->state == CGRP_STATE_REVOKING ||
        cg->state == CGRP_STATE_LEAVING) {
        return;
    }
    if (cgrp_is_fencing_err(err)) {
        /* not an error for poll: the member joins again */
        if (cg->state == CGRP_STATE_STABLE) {
            if (err == WEIR_EUNKNOWN_MEMBER_ID) {
                cg->member_id[0] = '\0';
            }
            cgrp_rejoin(cg, false);
        }
    } else if (cgrp_is_coordinator_err(err)) {
        cgrp_lose_coordinator(cg, ev->now_ms);
    } else {
        cgrp_report(a, CGRP_REQ_COMMIT, err, ev->reply.err_msg);
    }
}

static int cgrp_on_reply(struct cgrp *cg,
                         const struct cgrp_event *ev,
                         struct cgrp_actions *a)
{
    cg->inflight &= ~CGRP_BIT(ev->reply.req);
    switch (ev->reply.req) {
    case CGRP_REQ_FIND:
        return cgrp_on_find(cg, ev, a);
    case CGRP_REQ_JOIN:
        return cgrp_on_join(cg, ev, a);
    case CGRP_REQ_SYNC:
        return cgrp_on_sync(cg, ev, a);
    case CGRP_REQ_OFFSETS:
        cgrp_on_offsets(cg, ev, a);
        return 0;
    case CGRP_REQ_HEARTBEAT:
        cgrp_on_heartbeat(cg, ev);
        return 0;
    case CGRP_REQ_COMMIT:
        cgrp_on_commit(cg, ev, a);
        return 0;
    case CGRP_REQ_LEAVE:
        if (cg->state == CGRP_STATE_LEAVING) {
            cg->state = CGRP_STATE_CLOSED;
        }
        return 0;
    default:
        return 0;
    }
}

static void cgrp_on_close(struct cgrp *cg)
{
    if (cg->state == CGRP_STATE_IDLE || cg->state == CGRP_STATE_FAILED ||
        cg->state == CGRP_STATE_CLOSED) {
        cg->state = CGRP_STATE_CLOSED;
        return;
    }
    cg->state = CGRP_STATE_LEAVING;
    cg->final_commit_sent = false;
    cg->revoke_committed = !(cg->has_assignment && cg->cfg.auto_commit);
    cg->leave_sent = false;
    cg->backoff_until_ms = 0;
}

static void cgrp_send(struct cgrp *cg, struct cgrp_actions *a, enum cgrp_req r)
{
    cg->inflight |= CGRP_BIT(r);
    a->send |= CGRP_BIT(r);
}

static void cgrp_wake(struct cgrp_actions *a, uint64_t at)
{
    if (at < a->next_ms) {
        a->next_ms = at;
    }
}

/* Revoke what is owned (after the final commit, if any). Returns false
 * while that commit is pending. */
static bool cgrp_drive_revoke(struct cgrp *cg, struct cgrp_actions *a)
{
    if (!cg->revoke_committed) {
        if (!(cg->inflight & CGRP_BIT(CGRP_REQ_COMMIT)) && cg->coord_known) {
            cgrp_send(cg, a, CGRP_REQ_COMMIT);
            cg->commit_wanted = false;
            cg->final_commit_sent = true;
        }
        return false;
    }
    if (cg->has_assignment) {
        a->revoke = true;
        cg->has_assignment = false;
    }
    return true;
}

static void cgrp_drive_leave(struct cgrp *cg, struct cgrp_actions *a)
{
    if (!cgrp_drive_revoke(cg, a)) {
        return;
    }
    if (cg->member_id == NULL || cg->member_id[0] == '\0' || !cg->coord_known) {
        cg->state = CGRP_STATE_CLOSED;
        return;
    }
    if (!cg->leave_sent) {
        cg->leave_sent = true;
        cgrp_send(cg, a, CGRP_REQ_LEAVE);
    }
}

/* Heartbeats, auto commit and the session check of a member in the
 * group. */
static void
cgrp_drive_member(struct cgrp *cg, uint64_t now, struct cgrp_actions *a)
{
    if (now >= cg->last_contact_ms + cg->cfg.session_timeout_ms) {
        /* The coordinator has not answered for a whole session: it has
         * evicted us (a paused process wakes up as a zombie) or moved.
         * Either way the partitions may already be someone else's: stop
         * handing out their records, give them up without a commit (it
         * would be refused) and join again once the coordinator is found. */
        cgrp_rejoin(cg, false);
        cgrp_lose_coordinator(cg, now);
        return;
    }
    if (now >= cg->next_heartbeat_ms &&
        !(cg->inflight & CGRP_BIT(CGRP_REQ_HEARTBEAT))) {
        cgrp_send(cg, a, CGRP_REQ_HEARTBEAT);
        cg->next_heartbeat_ms = now + cg->cfg.heartbeat_interval_ms;
    }
    cgrp_wake(a, cg->next_heartbeat_ms);
    cgrp_wake(a, cg->last_contact_ms + cg->cfg.session_timeout_ms);
    if (cg->state != CGRP_STATE_STABLE) {
        return;
    }
    if (cg->cfg.auto_commit) {
        if (now >= cg->next_commit_ms) {
            cg->commit_wanted = true;
            cg->next_commit_ms = now + cg->cfg.auto_commit_interval_ms;
        }
        cgrp_wake(a, cg->next_commit_ms);
    }
    if (cg->commit_wanted && !(cg->inflight & CGRP_BIT(CGRP_REQ_COMMIT))) {
        cg->commit_wanted = false;
        cgrp_send(cg, a, CGRP_REQ_COMMIT);
    }
}

static void cgrp_drive_chain(struct cgrp *cg, struct cgrp_actions *a)
{
    switch (cg->state) {
    case CGRP_STATE_JOIN:
        cgrp_send(cg, a, CGRP_REQ_JOIN);
        break;
    case CGRP_STATE_SYNC:
        cgrp_send(cg, a, CGRP_REQ_SYNC);
        break;
    case CGRP_STATE_OFFSETS:
        cgrp_send(cg, a, CGRP_REQ_OFFSETS);
        break;
    default:
        break;
    }
}

static void cgrp_drive(struct cgrp *cg, uint64_t now, struct cgrp_actions *a)
{
    bool waiting = now < cg->backoff_until_ms;

    if (cg->state == CGRP_STATE_IDLE || cg->state == CGRP_STATE_CLOSED ||
        cg->state == CGRP_STATE_FAILED) {
        return;
    }
    if (cg->state == CGRP_STATE_REVOKING && cgrp_drive_revoke(cg, a)) {
        cg->state = CGRP_STATE_JOIN;
    }
    if (!cg->coord_known) {
        if (cg->state == CGRP_STATE_LEAVING && cg->revoke_committed) {
            cgrp_drive_leave(cg, a); /* nobody to tell: just close */
            return;
        }
        if (waiting) {
            cgrp_wake(a, cg->backoff_until_ms);
        } else if (!(cg->inflight & CGRP_BIT(CGRP_REQ_FIND))) {
            cgrp_send(cg, a, CGRP_REQ_FIND);
        }
        return;
    }
    if (cg->state == CGRP_STATE_LEAVING) {
        cgrp_drive_leave(cg, a);
        return;
    }
    if (cg->state == CGRP_STATE_STABLE || cg->state == CGRP_STATE_OFFSETS) {
        cgrp_drive_member(cg, now, a);
        if (!cg->coord_known) {
            cgrp_wake(a, cg->backoff_until_ms);
            return;
        }
    }
    if (cg->inflight & CGRP_CHAIN) {
        return;
    }
    if (waiting) {
        cgrp_wake(a, cg->backoff_until_ms);
        return;
    }
    cgrp_drive_chain(cg, a);
}

int cgrp_step(struct cgrp *cg,
              const struct cgrp_event *ev,
              struct cgrp_actions *a)
{
    int rv = 0;

    memset(a, 0, sizeof(*a));
    a->next_ms = UINT64_MAX;
    if (cg->member_id == NULL && cgrp_set_str(&cg->member_id, "") != 0) {
        return WEIR_ENOMEM;
    }
    switch (ev->type) {
    case CGRP_EV_SUBSCRIBE:
        if (cg->state == CGRP_STATE_CLOSED) {
            break;
        }
        cg->backoff_until_ms = 0;
        if (cg->state == CGRP_STATE_IDLE || cg->state == CGRP_STATE_FAILED) {
            cg->state = CGRP_STATE_JOIN;
        } else {
            cgrp_rejoin(cg, true);
        }
        break;
    case CGRP_EV_COMMIT:
        cg->commit_wanted = true;
        break;
    case CGRP_EV_CLOSE:
        cgrp_on_close(cg);
        break;
    case CGRP_EV_REPLY:
        rv = cgrp_on_reply(cg, ev, a);
        break;
    case CGRP_EV_TICK:
        break;
    }
    if (rv != 0) {
        return rv;
    }
    cgrp_drive(cg, ev->now_ms, a);
    return 0;
}
