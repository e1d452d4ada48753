/* SPDX-License-Identifier: Apache-2.0 */
/* The quorum adapter: the ready loop of the Raft core on the controller's
 * event loop, the active-controller switch and the answers that wait for
 * the commit. Start-up (which kind of start, the log, the core, the wire)
 * is in ctl_quorum_open.c. No branch here makes a consensus decision: the
 * core makes them all (STYLE 2.7). */
#include "controller/ctl_quorum_int.h"

#include <event2/event.h>
#include <stdio.h>
#include <string.h>

#include "common/mem.h"
#include "common/rpc.h"
#include "common/trace.h"
#include "controller/ctl_log_frame.h"
#include "controller/ctl_log_raft.h"
#include "controller/ctl_sec.h"
#include "controller/meta/meta_snapshot.h"

static void ctl_quorum_fatal(struct ctl_quorum *q,
                             const char *what,
                             int rv,
                             const struct err_detail *ed)
{
    struct ctl_server *s = q->s;

    /* the log or the hard state could not be made durable: going on would
     * send messages that promise what the disk does not hold */
    trace_error("controller", "event=quorum_fatal step=%s error=%s msg=\"%s\"",
                what, weir_err_name(rv), ed->msg);
    s->exit_code = 1;
    s->stopping = true;
    q->failed = true;
    (void)event_base_loopexit(s->base, NULL);
}

void ctl_quorum_schedule(struct ctl_quorum *q)
{
    if (!q->failed) {
        event_active(q->ready_ev, EV_TIMEOUT, 0);
    }
}

/* The next raft_tick: when the core last asked for it, else soon (the
 * core asks only in a ready; a tick is cheap). */
static void ctl_quorum_arm_tick(struct ctl_quorum *q)
{
    uint64_t now = clock_now_ms(q->s->clock);
    uint64_t delay = CTL_QUORUM_TICK_MIN_MS;
    struct timeval tv;

    if (q->next_tick_ms > now && q->next_tick_ms - now < 1000) {
        delay = q->next_tick_ms - now;
    }
    tv.tv_sec = (time_t)(delay / 1000);
    tv.tv_usec = (suseconds_t)((delay % 1000) * 1000);
    (void)event_add(q->tick_ev, &tv);
}

/* ---- answers that wait for the commit ---------------------------------- */

bool ctl_quorum_park(struct ctl_quorum *q,
                     struct srv_req *req,
                     uint32_t corr,
                     const struct weir_buf *frame,
                     bool close_after)
{
    struct ctl_quorum_reply *r;

    if (q == NULL || q->barrier <= ctl_log_raft_applied(q->s->log)) {
        return false;
    }
    r = mem_calloc(1, sizeof(*r));
    if (r == NULL) {
        return false; /* answer now: late is worse than early here */
    }
    r->index = q->barrier;
    r->req = req;
    r->corr = corr;
    r->close_after = close_after;
    buf_init(&r->frame);
    buf_put(&r->frame, frame->data, frame->len);
    if (!buf_ok(&r->frame)) {
        buf_fini(&r->frame);
        mem_free(r);
        return false;
    }
    *q->replies_tail = r;
    q->replies_tail = &r->next;
    return true;
}

/* Send the waiting answers whose entries are applied (all of them when
 * `refuse`: replaced by NOT_CONTROLLER, their fate unknown). */
static void ctl_quorum_release(struct ctl_quorum *q, bool refuse)
{
    uint64_t applied = ctl_log_raft_applied(q->s->log);
    struct ctl_quorum_reply *r;

    while ((r = q->replies) != NULL && (refuse || r->index <= applied)) {
        q->replies = r->next;
        if (q->replies == NULL) {
            q->replies_tail = &q->replies;
        }
        if (refuse) {
            /* its entry may still commit under the next leader: the
             * caller retries there (the answer is retriable) */
            ctl_member_refuse(q->s, r->req, r->corr);
        } else {
            srv_req_respond(r->req, &r->frame, NULL, r->close_after);
        }
        buf_fini(&r->frame);
        mem_free(r);
    }
}

/* ---- proposals ---------------------------------------------------------- */

int ctl_quorum_propose(struct ctl_quorum *q,
                       const struct meta_record *recs,
                       uint32_t n,
                       int64_t first_offset,
                       struct err_detail *ed)
{
    uint64_t index = 0;
    int rv;

    buf_reset(&q->scratch);
    rv = ctl_log_frame_put_batch(&q->scratch, recs, n, first_offset, ed);
    if (rv != 0) {
        return rv;
    }
    /* the entry's data is the frame's body: skip length and CRC */
    if (q->scratch.len < CTL_QUORUM_FRAME_HEAD ||
        q->scratch.len - CTL_QUORUM_FRAME_HEAD > RAFT_MAX_ENTRY_BYTES) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT, "a batch of %zu bytes",
                       q->scratch.len);
    }
    rv = raft_propose(q->raft, q->scratch.data + CTL_QUORUM_FRAME_HEAD,
                      (uint32_t)(q->scratch.len - CTL_QUORUM_FRAME_HEAD),
                      &index);
    if (rv != 0) {
        return err_set(ed, rv, "proposing %u records at offset %lld", n,
                       (long long)first_offset);
    }
    if (index > q->barrier) {
        q->barrier = index;
    }
    ctl_quorum_schedule(q);
    return 0;
}

/* ---- the active controller ---------------------------------------------- */

static int ctl_quorum_image_copy(const struct meta_image *img,
                                 struct meta_image **out,
                                 struct err_detail *ed)
{
    struct weir_buf b;
    int rv;

    buf_init(&b);
    rv = meta_snapshot_encode(img, &b, ed);
    if (rv == 0) {
        rv = meta_snapshot_decode(b.data, b.len, out, ed);
    }
    buf_fini(&b);
    return rv;
}

static const char *ctl_quorum_addr(const struct ctl_quorum *q, uint32_t id)
{
    const struct raft_voter *v = raft_voters_find(&q->s->voters, id);

    return v != NULL ? v->address : NULL;
}

static void ctl_quorum_become_active(struct ctl_quorum *q)
{
    struct ctl_server *s = q->s;
    struct meta_image *img = NULL;
    struct err_detail ed;
    int rv;

    err_detail_clear(&ed);
    rv = ctl_quorum_image_copy(q->img, &img, &ed);
    if (rv == 0) {
        /* a fresh core: every broker gets a full session from its first
         * event, so none is fenced because the controller moved */
        rv = ctl_core_new(&s->core_cfg, img, &s->core);
    }
    if (rv != 0) {
        trace_error("controller", "event=activate_failed error=%s msg=\"%s\"",
                    weir_err_name(rv), ed.msg);
        s->core = NULL;
        return;
    }
    q->barrier = 0;
    ctl_server_set_active_id(s, (int32_t)s->cfg.id);
    trace_info("controller",
               "event=active_controller term=%llu applied=%llu "
               "end_offset=%lld",
               (unsigned long long)raft_term(q->raft),
               (unsigned long long)ctl_log_raft_applied(s->log),
               (long long)ctl_log_end_offset(s->log));
    ctl_server_set_active(s, true, NULL);
    err_detail_clear(&ed);
    if (!q->bootstrapped) {
        q->bootstrapped = true;
        if (ctl_sec_bootstrap(s, &ed) != 0) {
            trace_error("controller", "event=bootstrap_users_failed msg=\"%s\"",
                        ed.msg);
        }
    }
}

static uint32_t ctl_quorum_hint(const struct ctl_quorum *q);

static void ctl_quorum_step_down(struct ctl_quorum *q, const char *why)
{
    struct ctl_server *s = q->s;
    uint32_t leader = ctl_quorum_hint(q);

    ctl_core_free(s->core);
    s->core = NULL;
    q->barrier = 0;
    if (s->active) {
        trace_warn("controller",
                   "event=no_longer_active reason=%s term=%llu leader=%u", why,
                   (unsigned long long)raft_term(q->raft), leader);
    }
    ctl_server_set_active_id(s, leader != 0 ? (int32_t)leader : -1);
    ctl_server_set_active(s, false, ctl_quorum_addr(q, leader));
    q->hint_leader = leader;
    ctl_quorum_release(q, true);
}

void ctl_quorum_core_lost(struct ctl_quorum *q)
{
    /* what was proposed may still commit: the core is built again from
     * the applied image once all of it is applied (ctl_quorum_roles) */
    ctl_quorum_step_down(q, "core_rebuild");
    ctl_quorum_schedule(q);
}

/* The leader to name in NOT_CONTROLLER: only one this member hears now
 * (connected, and a message within an election timeout). A leader that
 * was killed stays the core's leader until the next election; naming it
 * would send brokers to a dead address. */
static uint32_t ctl_quorum_hint(const struct ctl_quorum *q)
{
    struct raft_net_peer_stats rows[RAFT_MAX_VOTERS];
    uint32_t leader = raft_leader(q->raft);
    uint64_t now = clock_now_ms(q->s->clock);
    uint32_t n;
    uint32_t i;

    if (leader == 0 || leader == (uint32_t)q->s->cfg.id) {
        return leader;
    }
    n = raft_net_stats(q->net, rows, RAFT_MAX_VOTERS);
    for (i = 0; i < n; i++) {
        if (rows[i].id == leader) {
            return rows[i].connected && rows[i].last_contact_ms != 0 &&
                           now - rows[i].last_contact_ms <=
                               (uint64_t)q->s->cfg.election_timeout_ms
                       ? leader
                       : 0;
        }
    }
    return 0;
}

static void ctl_quorum_roles(struct ctl_quorum *q)
{
    struct ctl_server *s = q->s;
    bool leads = raft_is_active_leader(q->raft);
    uint32_t hint;

    if (!leads && (s->active || s->core != NULL)) {
        ctl_quorum_step_down(q, "lost_leadership");
    } else if (leads && s->core == NULL &&
               ctl_log_raft_applied(s->log) == raft_last_index(q->raft)) {
        ctl_quorum_become_active(q);
    } else if (!s->active && (hint = ctl_quorum_hint(q)) != q->hint_leader) {
        q->hint_leader = hint;
        ctl_server_set_active_id(s, hint != 0 ? (int32_t)hint : -1);
        ctl_server_set_active(s, false, ctl_quorum_addr(q, hint));
    }
}

/* ---- the ready loop ----------------------------------------------------- */

static int ctl_quorum_install(struct ctl_quorum *q,
                              const struct raft_snapshot *snap,
                              struct err_detail *ed)
{
    struct meta_image *img = NULL;
    int rv;

    rv = ctl_log_raft_install(q->s->log, snap, &img, ed);
    if (rv != 0) {
        return rv;
    }
    meta_image_free(q->img);
    q->img = img;
    trace_info("controller",
               "event=snapshot_installed index=%llu term=%llu end_offset=%lld",
               (unsigned long long)snap->index, (unsigned long long)snap->term,
               (long long)ctl_log_end_offset(q->s->log));
    return 0;
}

static int ctl_quorum_persist(struct ctl_quorum *q,
                              const struct raft_ready *rd,
                              struct err_detail *ed)
{
    struct ctl_server *s = q->s;
    int rv;

    if (rd->hard_state_changed) {
        rv = ctl_log_raft_save_hard_state(s->log, &rd->hs, ed);
        if (rv != 0) {
            return rv;
        }
    }
    if (rd->has_snapshot) {
        rv = ctl_quorum_install(q, &rd->snapshot, ed);
        if (rv != 0) {
            return rv;
        }
    }
    if (rd->truncate_from != 0) {
        rv = ctl_log_raft_truncate(s->log, rd->truncate_from, ed);
        if (rv != 0) {
            return rv;
        }
    }
    if (rd->n_entries > 0) {
        /* one fsync for every entry proposed since the last turn */
        rv = ctl_log_raft_append(s->log, rd->entries, rd->n_entries, ed);
        if (rv != 0) {
            return rv;
        }
    }
    return 0;
}

static void ctl_quorum_send(struct ctl_quorum *q, const struct raft_ready *rd)
{
    uint32_t i;
    int rv;

    for (i = 0; i < rd->n_msgs; i++) {
        rv = raft_net_send(q->net, &rd->msgs[i]);
        if (rv != 0) {
            /* lost like any message on the wire: Raft sends again */
            trace_debug(
                "controller", "event=raft_send_failed to=%u type=%d error=%s",
                rd->msgs[i].to, (int)rd->msgs[i].type, weir_err_name(rv));
        }
    }
}

/* The applied history, one line per run of entries of one term: every
 * member's lines must agree on the term of each index (the failover
 * harness compares them; a record of a deposed leader's term applied
 * anywhere at an index another member applied at a newer term would be
 * two active controllers). */
static void ctl_quorum_trace_applied(const struct raft_ready *rd,
                                     uint64_t applied)
{
    uint64_t from = 0;
    uint64_t term = 0;
    uint32_t i;

    for (i = 0; i < rd->n_committed; i++) {
        const struct raft_entry *e = &rd->committed[i];

        if (e->index <= applied) {
            continue;
        }
        if (from != 0 && e->term != term) {
            trace_info(
                "controller", "event=applied from=%llu to=%llu term=%llu",
                (unsigned long long)from, (unsigned long long)(e->index - 1),
                (unsigned long long)term);
            from = 0;
        }
        if (from == 0) {
            from = e->index;
            term = e->term;
        }
    }
    if (from != 0) {
        trace_info("controller", "event=applied from=%llu to=%llu term=%llu",
                   (unsigned long long)from,
                   (unsigned long long)rd->committed[rd->n_committed - 1].index,
                   (unsigned long long)term);
    }
}

static int ctl_quorum_apply(struct ctl_quorum *q,
                            const struct raft_ready *rd,
                            struct err_detail *ed)
{
    struct ctl_server *s = q->s;
    int64_t end = ctl_log_end_offset(s->log);
    uint64_t upto;
    int rv;

    if (rd->n_committed == 0) {
        return 0;
    }
    upto = rd->committed[rd->n_committed - 1].index;
    if (upto <= ctl_log_raft_applied(s->log)) {
        return 0;
    }
    ctl_quorum_trace_applied(rd, ctl_log_raft_applied(s->log));
    rv = ctl_log_raft_apply(s->log, upto, q->img, ed);
    if (rv != 0) {
        return rv;
    }
    if (ctl_log_end_offset(s->log) != end) {
        ctl_rpc_wake(s, false);
    }
    return 0;
}

static void ctl_quorum_maybe_snapshot(struct ctl_quorum *q)
{
    struct ctl_server *s = q->s;
    struct raft_snapshot snap;
    struct err_detail ed;
    int rv;

    if (ctl_log_records_since_snapshot(s->log) <
        (uint64_t)s->cfg.snapshot_every_records) {
        return;
    }
    err_detail_clear(&ed);
    rv = ctl_log_snapshot(s->log, q->img, &ed);
    if (rv == 0) {
        rv = ctl_log_raft_snapshot_read(s->log, &q->snap_buf, &snap, &ed);
    }
    if (rv == 0) {
        rv = raft_snapshot_taken(q->raft, &snap);
    }
    if (rv != 0) {
        /* the log still holds everything: tried again after more records */
        trace_error("controller", "event=snapshot_failed error=%s msg=\"%s\"",
                    weir_err_name(rv), ed.msg);
        return;
    }
    trace_info(
        "controller", "event=snapshot_written index=%llu end_offset=%lld",
        (unsigned long long)snap.index, (long long)ctl_log_end_offset(s->log));
}

/* One turn: persist, send, apply, advance, until nothing is left. */
static void ctl_quorum_run(struct ctl_quorum *q)
{
    struct raft_ready rd;
    struct err_detail ed;
    unsigned turns = 0;
    int rv;

    while (!q->failed && raft_has_ready(q->raft) && turns++ < 64) {
        err_detail_clear(&ed);
        rv = raft_ready(q->raft, &rd);
        if (rv != 0) {
            ctl_quorum_fatal(q, "ready", rv, &ed);
            return;
        }
        rv = ctl_quorum_persist(q, &rd, &ed);
        if (rv != 0) {
            ctl_quorum_fatal(q, "persist", rv, &ed);
            return;
        }
        ctl_quorum_send(q, &rd);
        rv = ctl_quorum_apply(q, &rd, &ed);
        if (rv != 0) {
            ctl_quorum_fatal(q, "apply", rv, &ed);
            return;
        }
        q->next_tick_ms = rd.next_tick_ms;
        raft_advance(q->raft, &rd);
    }
    if (q->failed) {
        return;
    }
    if (raft_has_ready(q->raft)) {
        ctl_quorum_schedule(q); /* let the loop breathe */
    }
    ctl_quorum_maybe_snapshot(q);
    ctl_quorum_release(q, false);
    ctl_quorum_roles(q);
    ctl_quorum_arm_tick(q);
}

void ctl_quorum_ready_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    ctl_quorum_run(arg);
}

void ctl_quorum_tick_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ctl_quorum *q = arg;
    int rv;

    (void)fd;
    (void)what;
    rv = raft_tick(q->raft, clock_now_ms(q->s->clock));
    if (rv != 0) {
        trace_error("controller", "event=raft_tick_failed error=%s",
                    weir_err_name(rv));
    }
    ctl_quorum_run(q);
}

void ctl_quorum_peer_lost(void *arg, uint32_t id)
{
    struct ctl_quorum *q = arg;

    /* a leader killed with its sockets: elect without waiting out the
     * election timeout (the core decides whether it is the leader) */
    if (raft_peer_lost(q->raft, id, clock_now_ms(q->s->clock)) == 0) {
        ctl_quorum_schedule(q);
    }
}

void ctl_quorum_recv(void *arg, const struct raft_msg *m)
{
    struct ctl_quorum *q = arg;
    int rv;

    rv = raft_step(q->raft, m, clock_now_ms(q->s->clock));
    if (rv != 0) {
        trace_debug("controller",
                    "event=raft_message_refused from=%u type=%d error=%s",
                    m->from, (int)m->type, weir_err_name(rv));
        return;
    }
    ctl_quorum_schedule(q);
}
