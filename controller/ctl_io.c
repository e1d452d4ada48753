/* SPDX-License-Identifier: Apache-2.0 */
/* Controller adapter: joins ctl_core to the clock, the metadata log, the
 * TICK timer and signals. No branch here decides cluster metadata; it
 * only carries out the core's contract (ctl_core.h): persist each batch
 * before replying or serving it, rebuild from the log after a failure. */
#include "controller/ctl_io.h"
#include "controller/ctl_quorum.h"
#include "controller/ctl_sec.h"

#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "common/mem.h"
#include "common/net/addr.h"
#include "common/tls.h"
#include "common/trace.h"

/* A broker's id list as "1,2,3" for traces. */
static const char *ctl_io_ids(const struct meta_ids *ids, char *buf, size_t n)
{
    size_t at = 0;
    uint32_t i;

    buf[0] = '\0';
    for (i = 0; i < ids->n && at < n; i++) {
        int w =
            snprintf(buf + at, n - at, "%s%d", i ? "," : "", (int)ids->ids[i]);
        if (w < 0) {
            break;
        }
        at += (size_t)w;
    }
    return buf;
}

static const char *ctl_io_topic_name(const struct ctl_server *s, int64_t id)
{
    const struct meta_topic *t = meta_image_topic(ctl_core_image(s->core), id);

    return t != NULL ? t->name : "?";
}

static void ctl_io_trace_change(const struct ctl_server *s,
                                const struct meta_partition_change *ch,
                                int64_t offset)
{
    char isr[META_MAX_REPLICAS * 12];
    char elr[META_MAX_REPLICAS * 12];

    trace_info("controller",
               "event=partition_change topic=%s topic_id=%lld partition=%d "
               "leader=%d leader_epoch=%d partition_epoch=%d isr=%s elr=%s "
               "unclean=%s offset=%lld",
               ctl_io_topic_name(s, ch->topic_id), (long long)ch->topic_id,
               (int)ch->partition, (int)ch->leader, (int)ch->leader_epoch,
               (int)ch->partition_epoch, ctl_io_ids(&ch->isr, isr, sizeof(isr)),
               ctl_io_ids(&ch->elr, elr, sizeof(elr)),
               (ch->flags & META_PART_UNCLEAN) ? "true" : "false",
               (long long)offset);
    if (ch->isr.n == 0 && ch->elr.n == 0) {
        trace_error("controller",
                    "event=partition_without_eligible_replica topic=%s "
                    "partition=%d msg=\"no replica is known to hold every "
                    "committed record: no leader until one is elected "
                    "uncleanly (unclean_leader_election)\"",
                    ctl_io_topic_name(s, ch->topic_id), (int)ch->partition);
    }
    if (ch->flags & META_PART_UNCLEAN) {
        trace_warn("controller",
                   "event=unclean_election topic_id=%lld partition=%d "
                   "leader=%d msg=\"committed records may be lost\"",
                   (long long)ch->topic_id, (int)ch->partition,
                   (int)ch->leader);
    }
}

/* One line per durable record: fences, elections and ISR changes are
 * what an operator reads after an incident. */
static void ctl_io_trace_record(const struct ctl_server *s,
                                const struct meta_record *r,
                                int64_t off)
{
    switch (r->type) {
    case META_RECORD_REGISTER_BROKER:
        trace_info("controller",
                   "event=broker_registered broker=%d epoch=%lld "
                   "address=%.*s:%u rack=%.*s directory_id=%.*s",
                   (int)r->u.reg.id, (long long)r->u.reg.epoch,
                   (int)r->u.reg.host.len, r->u.reg.host.ptr,
                   (unsigned)r->u.reg.port, (int)r->u.reg.rack.len,
                   r->u.reg.rack.ptr, (int)r->u.reg.directory_id.len,
                   r->u.reg.directory_id.ptr);
        break;
    case META_RECORD_BROKER_TLS:
        trace_info("controller",
                   "event=broker_tls_listener broker=%d epoch=%lld "
                   "address=%.*s:%u",
                   (int)r->u.tls.id, (long long)r->u.tls.epoch,
                   (int)r->u.tls.host.len, r->u.tls.host.ptr,
                   (unsigned)r->u.tls.port);
        break;
    case META_RECORD_FENCE_BROKER:
    case META_RECORD_UNFENCE_BROKER:
        trace_info("controller", "event=broker_%s broker=%d epoch=%lld",
                   r->type == META_RECORD_FENCE_BROKER ? "fenced" : "unfenced",
                   (int)r->u.fence.id, (long long)r->u.fence.epoch);
        break;
    case META_RECORD_CREATE_TOPIC:
        trace_info("controller", "event=topic_created topic=%.*s id=%lld",
                   (int)r->u.topic.name.len, r->u.topic.name.ptr,
                   (long long)r->u.topic.topic_id);
        break;
    case META_RECORD_REMOVE_TOPIC:
        trace_info("controller", "event=topic_removed topic_id=%lld",
                   (long long)r->u.remove_topic_id);
        break;
    case META_RECORD_PARTITION_CHANGE:
        ctl_io_trace_change(s, &r->u.change, off);
        break;
    default:
        trace_debug("controller", "event=record type=%s offset=%lld",
                    meta_record_type_name((int)r->type), (long long)off);
        break;
    }
}

static void ctl_io_arm_tick(struct ctl_server *s, uint64_t next_ms)
{
    uint64_t now = clock_now_ms(s->clock);
    uint64_t delay = next_ms > now ? next_ms - now : 0;
    struct timeval tv;

    if (next_ms == UINT64_MAX) {
        (void)event_del(s->tick_ev);
        return;
    }
    tv.tv_sec = (time_t)(delay / 1000);
    tv.tv_usec = (suseconds_t)((delay % 1000) * 1000);
    (void)event_add(s->tick_ev, &tv);
}

/* The image ran ahead of the log (a failed step or append): the log is
 * the truth, so the core is built again from it. */
static void ctl_io_rebuild(struct ctl_server *s)
{
    struct meta_image *img = NULL;
    struct err_detail ed;
    int rv;

    if (s->quorum != NULL) {
        /* the log holds proposals that may still commit: the core is
         * built from the applied image once they are all applied */
        ctl_quorum_core_lost(s->quorum);
        return;
    }

    err_detail_clear(&ed);
    ctl_core_free(s->core);
    s->core = NULL;
    rv = ctl_log_reload(s->log, &img, &ed);
    if (rv == 0) {
        rv = ctl_core_new(&s->core_cfg, img, &s->core);
    }
    if (rv != 0) {
        trace_error("controller", "event=rebuild_failed error=%s msg=\"%s\"",
                    weir_err_name(rv), ed.msg);
        s->exit_code = 1;
        s->stopping = true;
        (void)event_base_loopexit(s->base, NULL);
        return;
    }
    trace_warn("controller", "event=rebuilt_from_log end_offset=%lld",
               (long long)ctl_log_end_offset(s->log));
}

static void ctl_io_maybe_snapshot(struct ctl_server *s)
{
    struct err_detail ed;

    if (ctl_log_records_since_snapshot(s->log) <
        (uint64_t)s->cfg.snapshot_every_records) {
        return;
    }
    err_detail_clear(&ed);
    if (ctl_log_snapshot(s->log, ctl_core_image(s->core), &ed) != 0) {
        /* the log still holds everything: retry after the next batch */
        trace_error("controller", "event=snapshot_failed msg=\"%s\"", ed.msg);
        return;
    }
    trace_info("controller", "event=snapshot_written end_offset=%lld",
               (long long)ctl_log_end_offset(s->log));
}

const struct meta_image *ctl_server_image(const struct ctl_server *s)
{
    if (s->quorum != NULL) {
        return ctl_quorum_image(s->quorum);
    }
    return s->core != NULL ? ctl_core_image(s->core) : NULL;
}

int ctl_server_step(struct ctl_server *s, struct ctl_event *ev)
{
    struct ctl_actions *a = &s->act;
    uint32_t i;
    int rv;

    if (s->core == NULL) {
        return err_set(&a->detail, WEIR_EUNKNOWN, "controller is stopping");
    }
    if (!s->active) {
        /* only the active member decides: no fencing on its ticks or lost
         * connections, nothing written (the TICK timer stops here too) */
        return err_set(&a->detail, WEIR_ENOT_CONTROLLER,
                       "not the active controller");
    }
    ev->now_ms = clock_now_ms(s->clock);
    rv = ctl_core_step(s->core, ev, a);
    if (rv != 0) {
        trace_error("controller", "event=step_failed error=%s msg=\"%s\"",
                    weir_err_name(rv), a->detail.msg);
        if (ctl_core_failed(s->core)) {
            ctl_io_rebuild(s);
        }
        return rv;
    }
    if (a->n_records > 0 && s->quorum != NULL) {
        /* a majority stores it before it is applied or answered */
        rv = ctl_quorum_propose(s->quorum, a->records, a->n_records,
                                a->first_offset, &a->detail);
        if (rv != 0) {
            trace_error("controller",
                        "event=propose_failed error=%s msg=\"%s\"",
                        weir_err_name(rv), a->detail.msg);
            ctl_io_rebuild(s);
            return rv;
        }
        for (i = 0; i < a->n_records; i++) {
            ctl_io_trace_record(s, &a->records[i], a->first_offset + i);
        }
    } else if (a->n_records > 0) {
        rv = ctl_log_append(s->log, a->records, a->n_records, a->first_offset,
                            &a->detail);
        if (rv != 0) {
            trace_error("controller",
                        "event=log_append_failed error=%s msg=\"%s\"",
                        weir_err_name(rv), a->detail.msg);
            ctl_io_rebuild(s);
            return rv;
        }
        for (i = 0; i < a->n_records; i++) {
            ctl_io_trace_record(s, &a->records[i], a->first_offset + i);
        }
        ctl_io_maybe_snapshot(s);
        ctl_rpc_wake(s, false);
    }
    ctl_io_arm_tick(s, a->next_tick_ms);
    return 0;
}

/* A broker's heartbeat connection was closed from its side: most likely
 * the process is gone (kill -9 closes its sockets), so it is fenced after
 * disconnect-timeout-ms unless it heartbeats again first. */
static void ctl_io_broker_lost(void *arg, int64_t tag_id, int64_t tag_epoch)
{
    struct ctl_server *s = arg;
    struct ctl_event ev;

    if (tag_id < 0 || tag_id > INT32_MAX) {
        return;
    }
    memset(&ev, 0, sizeof(ev));
    ev.type = CTL_EV_BROKER_DISCONNECTED;
    ev.u.broker.broker_id = (int32_t)tag_id;
    ev.u.broker.broker_epoch = tag_epoch;
    trace_info("controller",
               "event=broker_connection_lost broker=%d epoch=%lld "
               "fence_in_ms=%llu",
               (int)tag_id, (long long)tag_epoch,
               (unsigned long long)s->core_cfg.disconnect_timeout_ms);
    (void)ctl_server_step(s, &ev);
}

static void ctl_io_tick_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ctl_server *s = arg;
    struct ctl_event ev;

    (void)fd;
    (void)what;
    memset(&ev, 0, sizeof(ev));
    ev.type = CTL_EV_TICK;
    (void)ctl_server_step(s, &ev);
    if (s->core != NULL && s->act.n_fenced > 0) {
        trace_info("controller", "event=sessions_expired fenced=%u",
                   s->act.n_fenced);
    }
}

static void ctl_io_signal_cb(evutil_socket_t sig, short what, void *arg)
{
    struct ctl_server *s = arg;

    (void)what;
    if (s->stopping) {
        return;
    }
    trace_info("controller", "event=shutdown_begin signal=%d", (int)sig);
    s->stopping = true;
    (void)event_base_loopexit(s->base, NULL);
}

static int ctl_io_open_log(struct ctl_server *s, struct err_detail *ed)
{
    struct meta_image *img = NULL;
    struct ctl_log_stats st;
    int rv;

    rv = ctl_log_open(s->cfg.data_dir, &s->log, &img, &st, ed);
    if (rv != 0) {
        return rv;
    }
    if (st.cut_bytes > 0) {
        trace_warn("controller",
                   "event=log_torn_tail_cut bytes=%llu at_byte=%llu "
                   "end_offset=%lld saved=%s/%s msg=\"the torn last write "
                   "was cut from %s; its bytes are kept in the saved file\"",
                   (unsigned long long)st.cut_bytes,
                   (unsigned long long)st.cut_at_byte,
                   (long long)ctl_log_end_offset(s->log), s->cfg.data_dir,
                   st.cut_file, CTL_LOG_FILE);
    }
    trace_info("controller",
               "event=log_loaded snapshot_end=%lld batches=%u end_offset=%lld "
               "brokers=%u topics=%u",
               (long long)st.snapshot_end, st.batches,
               (long long)ctl_log_end_offset(s->log),
               meta_image_broker_count(img), meta_image_topic_count(img));
    rv = ctl_core_new(&s->core_cfg, img, &s->core);
    if (rv != 0) {
        return err_set(ed, rv, "cannot create the controller core");
    }
    return 0;
}

static int ctl_io_listen(struct ctl_server *s, struct err_detail *ed)
{
    struct srv_config sc;
    char host[256];
    uint16_t port;
    int rv;

    memset(&sc, 0, sizeof(sc));
    sc.max_frame_bytes = (uint32_t)s->cfg.max_frame_bytes;
    sc.max_header_bytes = 1024 * 1024;
    sc.max_connections = 10000;
    sc.max_connections_per_ip = 1000;
    sc.max_inflight_per_conn = 64;
    sc.idle_timeout_ms = 600000;
    sc.frame_timeout_ms = 30000;
    sc.max_output_bytes = 256u * 1024 * 1024;
    if ((s->cfg.tls || s->cfg.tls_listen != NULL) &&
        (rv = tls_daemon_ctxs(s->cfg.tls_cert, s->cfg.tls_key, s->cfg.tls_ca,
                              s->cfg.tls_client_auth, &s->tls, NULL, ed)) !=
            0) {
        return rv;
    }
    /* a TLS quorum's members reach each other on this listener: ask for a
     * certificate, which raft_net requires of raft messages */
    if (s->cfg.tls && s->voters.n > 0 &&
        (rv = tls_server_request_client_cert(s->tls, s->cfg.tls_ca, ed)) != 0) {
        return rv;
    }
    sc.tls = s->cfg.tls ? s->tls : NULL;
    ctl_sec_listener(s, &sc);
    rv =
        srv_open(s->base, s->cfg.listen, &sc, ctl_rpc_dispatch, s, &s->srv, ed);
    if (rv != 0) {
        return rv;
    }
    srv_on_lost(s->srv, ctl_io_broker_lost, s);
    if (s->cfg.tls_listen != NULL) {
        /* the same calls over TLS, beside the main listener */
        sc.tls = s->tls;
        rv = srv_open(s->base, s->cfg.tls_listen, &sc, ctl_rpc_dispatch, s,
                      &s->srv_tls, ed);
        if (rv != 0) {
            return rv;
        }
        srv_on_lost(s->srv_tls, ctl_io_broker_lost, s);
    }
    rv = addr_split(s->cfg.advertise != NULL ? s->cfg.advertise : s->cfg.listen,
                    host, sizeof(host), &port, ed);
    if (rv != 0) {
        return rv;
    }
    if (port == 0) {
        port = srv_port(s->srv);
    }
    (void)snprintf(s->address, sizeof(s->address), "%s:%u", host,
                   (unsigned)port);
    return 0;
}

int ctl_server_open(struct ctl_server *s, struct err_detail *ed)
{
    int rv;

    s->clock = clock_system();
    s->active = true;
    s->active_id = -1;
    ctl_actions_init(&s->act);
    rv = ctl_server_core_config(&s->cfg, &s->core_cfg, ed);
    if (rv != 0) {
        return rv;
    }
    s->base = event_base_new();
    if (s->base == NULL) {
        return err_set(ed, WEIR_ENOMEM, "cannot create the event loop");
    }
    if (s->voters.n > 0) {
        rv = ctl_quorum_open(s, ed);
    } else {
        rv = ctl_ident_load(s, ed);
        if (rv == 0) {
            rv = ctl_io_open_log(s, ed);
        }
    }
    if (rv == 0) {
        rv = ctl_sec_open(s, ed);
    }
    if (rv == 0) {
        rv = ctl_io_listen(s, ed);
    }
    if (rv != 0) {
        return rv;
    }
    s->tick_ev = evtimer_new(s->base, ctl_io_tick_cb, s);
    s->sig_term = evsignal_new(s->base, SIGTERM, ctl_io_signal_cb, s);
    s->sig_int = evsignal_new(s->base, SIGINT, ctl_io_signal_cb, s);
    if (s->tick_ev == NULL || s->sig_term == NULL || s->sig_int == NULL) {
        return err_set(ed, WEIR_ENOMEM, "cannot create timers");
    }
    (void)event_add(s->sig_term, NULL);
    (void)event_add(s->sig_int, NULL);
    /* a quorum member bootstraps users once it is the active one */
    rv = s->quorum != NULL ? 0 : ctl_sec_bootstrap(s, ed);
    if (rv != 0) {
        return rv;
    }
    if (s->cfg.standby_of != NULL && s->cfg.standby_of[0] != '\0') {
        ctl_server_set_active(s, false, s->cfg.standby_of);
    }
    /* the first TICK starts every known broker's session */
    ctl_io_arm_tick(s, clock_now_ms(s->clock));
    return 0;
}

int ctl_server_run(struct ctl_server *s)
{
    trace_info("controller",
               "event=started listen=%s port=%u address=%s data_dir=%s "
               "cluster_id=%s session_timeout_ms=%lld end_offset=%lld",
               s->cfg.listen, (unsigned)srv_port(s->srv), s->address,
               s->cfg.data_dir, s->cluster_id,
               (long long)s->cfg.session_timeout_ms,
               (long long)ctl_log_end_offset(s->log));
    if (event_base_dispatch(s->base) < 0) {
        return 1;
    }
    return s->exit_code;
}

static void ctl_io_free_event(struct event *ev)
{
    if (ev != NULL) {
        event_free(ev);
    }
}

void ctl_server_close(struct ctl_server *s)
{
    if (s->srv != NULL) {
        struct timeval drain = {0, 100000};
        srv_stop_accepting(s->srv);
        if (s->srv_tls != NULL) {
            srv_stop_accepting(s->srv_tls);
        }
        ctl_quorum_close(s->quorum);
        s->quorum = NULL;
        ctl_rpc_wake(s, true);
        /* let the answers just queued reach the brokers */
        (void)event_base_loopexit(s->base, &drain);
        (void)event_base_dispatch(s->base);
        srv_close(s->srv);
        s->srv = NULL;
        srv_close(s->srv_tls);
        s->srv_tls = NULL;
        trace_info("controller", "event=shutdown_complete clean=true");
    }
    ctl_sec_close(s);
    tls_ctx_free(s->tls);
    s->tls = NULL;
    ctl_io_free_event(s->tick_ev);
    ctl_io_free_event(s->sig_term);
    ctl_io_free_event(s->sig_int);
    ctl_quorum_close(s->quorum);
    s->quorum = NULL;
    ctl_core_free(s->core);
    s->core = NULL;
    ctl_log_close(s->log);
    s->log = NULL;
    ctl_actions_fini(&s->act);
    if (s->base != NULL) {
        event_base_free(s->base);
        s->base = NULL;
    }
}
