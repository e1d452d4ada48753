/* SPDX-License-Identifier: Apache-2.0 */
/* Broker start-up and shutdown: data directory, listener, timers, signals,
 * and the dispatch of each request to its handler. */
#include "broker/server.h"

#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "broker/api/api.h"
#include "broker/cluster/cluster.h"
#include "broker/group/group_io.h"
#include "broker/log_health.h"
#include "broker/quota.h"
#include "broker/replica/repl_io.h"
#include "common/frame.h"
#include "common/mem.h"
#include "common/net/addr.h"
#include "common/rpc.h"
#include "common/tls.h"
#include "common/trace.h"

static void server_dispatch(void *arg, struct srv_req *req)
{
    struct broker *b = arg;
    Weir__Request *r = NULL;
    struct err_detail ed;
    int rv;

    err_detail_clear(&ed);
    rv = rpc_request_decode(req->header, req->payload_len, &r, &ed);
    if (rv != 0) {
        /* without a decodable header there is no correlation id to answer
         * with, and the stream can no longer be trusted: answer and close */
        trace_warn("api", "event=bad_request peer=%s error=%s msg=\"%s\"",
                   req->peer, weir_err_name(rv), ed.msg);
        broker_respond_error(req, r != NULL ? r->correlation_id : 0, rv, ed.msg,
                             r == NULL);
        rpc_request_free(r);
        return;
    }
    if (b->stopping) {
        broker_respond_error(req, r->correlation_id, WEIR_ESHUTTING_DOWN,
                             "broker is shutting down", false);
        rpc_request_free(r);
        return;
    }
    if (sasl_srv_gate(&b->sasl, req, r)) {
        rpc_request_free(r);
        return;
    }
    if (!api_authorize(b, req, r)) {
        return; /* refused and answered */
    }
    switch (r->body_case) {
    case WEIR__REQUEST__BODY_METADATA:
        api_metadata(b, req, r);
        break;
    case WEIR__REQUEST__BODY_CREATE_TOPICS:
        api_create_topics(b, req, r);
        break;
    case WEIR__REQUEST__BODY_DELETE_TOPICS:
        api_delete_topics(b, req, r);
        break;
    case WEIR__REQUEST__BODY_PRODUCE:
        api_produce(b, req, r);
        break;
    case WEIR__REQUEST__BODY_FETCH:
        api_fetch(b, req, r);
        break;
    case WEIR__REQUEST__BODY_LIST_OFFSETS:
        api_list_offsets(b, req, r);
        break;
    case WEIR__REQUEST__BODY_INIT_PRODUCER_ID:
        api_init_producer_id(b, req, r);
        break;
    case WEIR__REQUEST__BODY_FIND_COORDINATOR:
    case WEIR__REQUEST__BODY_JOIN_GROUP:
    case WEIR__REQUEST__BODY_SYNC_GROUP:
    case WEIR__REQUEST__BODY_HEARTBEAT:
    case WEIR__REQUEST__BODY_LEAVE_GROUP:
    case WEIR__REQUEST__BODY_OFFSET_COMMIT:
    case WEIR__REQUEST__BODY_OFFSET_FETCH:
    case WEIR__REQUEST__BODY_LIST_GROUPS:
    case WEIR__REQUEST__BODY_DESCRIBE_GROUPS:
    case WEIR__REQUEST__BODY_DELETE_GROUPS:
        api_group(b, req, r);
        break;
    case WEIR__REQUEST__BODY_ALTER_USERS:
    case WEIR__REQUEST__BODY_DESCRIBE_USERS:
    case WEIR__REQUEST__BODY_CREATE_ACLS:
    case WEIR__REQUEST__BODY_DELETE_ACLS:
    case WEIR__REQUEST__BODY_DESCRIBE_ACLS:
        api_admin_auth(b, req, r);
        break;
    default:
        broker_respond_error(req, r->correlation_id, WEIR_EUNSUPPORTED_API,
                             "unknown call", false);
        rpc_request_free(r);
        break;
    }
}

static void server_flush_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    broker_flush_dirty(arg);
}

static void server_flush_one(void *arg,
                             const char *topic,
                             int32_t partition,
                             struct plog *log)
{
    struct err_detail ed;

    (void)arg;
    if (plog_unflushed_messages(log) == 0 || plog_is_offline(log)) {
        return;
    }
    if (plog_flush(log, &ed) != 0) {
        trace_error("storage",
                    "event=flush_failed topic=%s partition=%d msg=\"%s\"",
                    topic, partition, ed.msg);
    }
}

static void server_flush_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct broker *b = arg;

    (void)fd;
    (void)what;
    logmgr_each(b->logs, server_flush_one, b);
    api_produce_complete_waits(b);
}

/* Retention and compaction stop at the high watermark: the leader's
 * replicated one, the one a follower's leader reported (-1 before any:
 * nothing goes), or the log end alone. */
static int64_t server_housekeep_keep(void *arg,
                                     const char *topic,
                                     int32_t partition,
                                     const struct plog *log)
{
    struct broker *b = arg;
    int64_t end = plog_end_offset(log);
    int64_t hw;

    if (b->repl == NULL) {
        return end;
    }
    if (repl_io_known_hw(b->repl, topic, partition, &hw)) {
        return hw < end ? hw : end;
    }
    return broker_high_watermark(b, log);
}

static void server_housekeep_cb(evutil_socket_t fd, short what, void *arg)
{
    struct broker *b = arg;
    struct err_detail ed;

    (void)fd;
    (void)what;
    if (logmgr_housekeep(b->logs, clock_wall_ms(b->clock),
                         server_housekeep_keep, b, &ed) != 0) {
        trace_error("storage", "event=housekeeping_failed msg=\"%s\"", ed.msg);
    }
    (void)idem_io_expire(b->idem, clock_wall_ms(b->clock));
}

static void server_signal_cb(evutil_socket_t sig, short what, void *arg)
{
    struct broker *b = arg;

    (void)what;
    if (b->stopping) {
        return;
    }
    trace_info("broker", "event=shutdown_begin signal=%d", (int)sig);
    /* cluster mode: leaderships move away first; the loop stops after */
    if (b->cluster != NULL && cluster_shutdown_begin(b->cluster)) {
        return;
    }
    b->stopping = true;
    (void)event_base_loopexit(b->base, NULL);
}

static int server_timers(struct broker *b, struct err_detail *ed)
{
    struct timeval tv;

    b->flush_ev = event_new(b->base, -1, 0, server_flush_cb, b);
    b->flush_timer =
        event_new(b->base, -1, EV_PERSIST, server_flush_timer_cb, b);
    b->housekeep_timer =
        event_new(b->base, -1, EV_PERSIST, server_housekeep_cb, b);
    b->sig_term = evsignal_new(b->base, SIGTERM, server_signal_cb, b);
    b->sig_int = evsignal_new(b->base, SIGINT, server_signal_cb, b);
    if (b->flush_ev == NULL || b->flush_timer == NULL ||
        b->housekeep_timer == NULL || b->sig_term == NULL ||
        b->sig_int == NULL) {
        return err_set(ed, WEIR_ENOMEM, "cannot create timers");
    }
    tv.tv_sec = b->cfg.flush_interval_ms / 1000;
    tv.tv_usec = (b->cfg.flush_interval_ms % 1000) * 1000;
    (void)event_add(b->flush_timer, &tv);
    tv.tv_sec = b->cfg.retention_check_interval_ms / 1000;
    tv.tv_usec = (b->cfg.retention_check_interval_ms % 1000) * 1000;
    (void)event_add(b->housekeep_timer, &tv);
    (void)event_add(b->sig_term, NULL);
    (void)event_add(b->sig_int, NULL);
    return log_health_open(b, ed);
}

static int server_log_defaults(struct broker *b, struct err_detail *ed)
{
    struct plog_config *d = &b->log_defaults;

    plog_config_defaults(d);
    d->segment_bytes = (uint64_t)b->cfg.segment_bytes;
    d->segment_ms = b->cfg.segment_ms;
    d->retention_ms = b->cfg.retention_ms;
    d->retention_bytes = b->cfg.retention_bytes;
    d->index_interval_bytes = (uint32_t)b->cfg.index_interval_bytes;
    d->max_batch_bytes = (uint32_t)b->cfg.max_message_bytes;
    d->flush_ms = b->cfg.flush_interval_ms;
    d->flush_messages = b->cfg.flush_messages;
    if (broker_parse_flush_policy(b->cfg.flush_policy, &d->flush_policy) != 0) {
        return err_set(ed, WEIR_ECONFIG,
                       "flush-policy '%s' is not one of ack, interval, never",
                       b->cfg.flush_policy);
    }
    if (b->cfg.max_message_bytes + 1024 > b->cfg.max_frame_bytes) {
        return err_set(ed, WEIR_ECONFIG,
                       "max-message-bytes (%lld) must leave room for the "
                       "header within max-frame-bytes (%lld)",
                       (long long)b->cfg.max_message_bytes,
                       (long long)b->cfg.max_frame_bytes);
    }
    return 0;
}

static int server_no_pid_source(void *ctx,
                                int64_t count,
                                int64_t *first,
                                struct err_detail *ed)
{
    (void)ctx;
    (void)count;
    (void)first;
    return err_set(ed, WEIR_ELEADER_NOT_AVAILABLE,
                   "producer ids come from the controller");
}

/* Producer ids and the producer state of every partition, rebuilt from
 * the tails of the logs. */
static int server_idem_open(struct broker *b, struct err_detail *ed)
{
    struct idem_pid_source src;
    uint64_t start_ms = clock_now_ms(b->clock);
    uint64_t producers;
    int rv;

    if (b->cfg.controller != NULL && b->cfg.controller[0] != '\0') {
        /* blocks come from the controller (api/producer_id.c) */
        src.allocate = server_no_pid_source;
        src.ctx = NULL;
    } else {
        rv = idem_pid_file_open(&b->pid_file, storage_posix(), b->cfg.data_dir,
                                idem_pid_first_for_broker(b->cfg.id), ed);
        if (rv != 0) {
            return rv;
        }
        idem_pid_file_source(&b->pid_file, &src);
    }
    idem_pid_init(&b->pids, &src);
    if (idem_io_new(b->cfg.producer_id_expiry_ms, &b->idem) != 0) {
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    producers = idem_io_load_all(b->idem, b->logs, clock_wall_ms(b->clock));
    trace_info("idem", "event=producer_state_loaded producers=%llu ms=%llu",
               (unsigned long long)producers,
               (unsigned long long)(clock_now_ms(b->clock) - start_ms));
    return 0;
}

/* TLS contexts from tls-cert, tls-key, tls-ca, tls-client-auth; the
 * same certificate identifies this broker to the controller and its
 * peers. */
/* A user's SCRAM credential, from the cluster metadata. */
static bool server_scram_lookup(void *arg,
                                enum scram_mech mech,
                                const char *user,
                                struct scram_cred *out)
{
    struct broker *b = arg;
    const struct meta_user *u;

    if (b->cluster == NULL) {
        return false;
    }
    u = meta_image_user(cluster_image(b->cluster), user, mech);
    if (u == NULL) {
        return false;
    }
    *out = u->cred;
    return true;
}

/* sasl-mechanisms, authorizer and super-users. */
static int server_auth(struct broker *b, struct err_detail *ed)
{
    bool cluster = b->cfg.controller != NULL && b->cfg.controller[0] != '\0';
    int rv;

    rv = sasl_srv_parse_mechs(b->cfg.sasl_mechanisms, &b->sasl.mechs, ed);
    if (rv != 0) {
        return rv;
    }
    if ((b->sasl.mechs != 0 || b->cfg.authorizer) && !cluster) {
        return err_set(ed, WEIR_ECONFIG,
                       "sasl-mechanisms and authorizer need cluster mode "
                       "(users and ACLs are controller metadata): set "
                       "controller");
    }
    if (b->cfg.sasl_username != NULL &&
        (b->cfg.sasl_password == NULL ||
         scram_mech_parse(b->cfg.sasl_mechanism) == 0)) {
        return err_set(ed, WEIR_ECONFIG,
                       "sasl-username needs sasl-password and a "
                       "sasl-mechanism of SCRAM-SHA-256 or SCRAM-SHA-512");
    }
    b->sasl.lookup = server_scram_lookup;
    b->sasl.lookup_arg = b;
    b->sasl.who = "broker";
    return authz_init(&b->authz, b->cfg.authorizer, b->cfg.super_users, ed);
}

static int server_tls(struct broker *b, struct err_detail *ed)
{
    if (!b->cfg.tls && b->cfg.tls_listen == NULL) {
        return 0;
    }
    /* links to the controller and other brokers follow `tls` only */
    return tls_daemon_ctxs(b->cfg.tls_cert, b->cfg.tls_key, b->cfg.tls_ca,
                           b->cfg.tls_client_auth, &b->tls_server,
                           b->cfg.tls ? &b->tls_client : NULL, ed);
}

/* tls-listen: the same calls over TLS, beside the main listener. */
static int server_open_tls_listener(struct broker *b,
                                    const struct srv_config *main_cfg,
                                    struct err_detail *ed)
{
    struct srv_config sc = *main_cfg;
    const char *adv;
    int rv;

    if (b->cfg.tls_listen == NULL) {
        return 0;
    }
    adv =
        b->cfg.tls_advertise != NULL ? b->cfg.tls_advertise : b->cfg.tls_listen;
    rv = addr_split(adv, b->tls_adv_host, sizeof(b->tls_adv_host),
                    &b->tls_adv_port, ed);
    if (rv != 0) {
        err_wrap(ed, "tls-advertise");
        return rv;
    }
    sc.tls = b->tls_server;
    rv = srv_open(b->base, b->cfg.tls_listen, &sc, server_dispatch, b,
                  &b->srv_tls, ed);
    if (rv == 0 && b->tls_adv_port == 0) {
        b->tls_adv_port = srv_port(b->srv_tls);
    }
    return rv;
}

int server_open(struct broker *b, struct err_detail *ed)
{
    struct srv_config sc;
    const char *adv;
    int rv;

    memset(&sc, 0, sizeof(sc));

    b->clock = clock_system();
    rv = server_log_defaults(b, ed);
    if (rv != 0) {
        return rv;
    }
    adv = b->cfg.advertise != NULL ? b->cfg.advertise : b->cfg.listen;
    rv = addr_split(adv, b->adv_host, sizeof(b->adv_host), &b->adv_port, ed);
    if (rv != 0) {
        err_wrap(ed, "advertise");
        return rv;
    }
    b->base = event_base_new();
    if (b->base == NULL) {
        return err_set(ed, WEIR_ENOMEM, "cannot create the event loop");
    }
    /* before any log is touched: a data dir of another broker id stops
     * here, and the clean-shutdown marker is spent before registering */
    rv = broker_ident_open(&b->ident, b->cfg.data_dir, b->cfg.id, ed);
    if (rv != 0) {
        return rv;
    }
    rv = logmgr_open(storage_posix(), b->cfg.data_dir, &b->log_defaults,
                     clock_wall_ms(b->clock), &b->logs, ed);
    if (rv != 0) {
        return rv;
    }
    rv = server_idem_open(b, ed);
    if (rv != 0) {
        return rv;
    }
    sc.max_frame_bytes = (uint32_t)b->cfg.max_frame_bytes;
    sc.max_header_bytes = FRAME_DEFAULT_MAX_HEADER_BYTES;
    sc.max_connections = (uint32_t)b->cfg.max_connections;
    sc.max_connections_per_ip = (uint32_t)b->cfg.max_connections_per_ip;
    sc.max_inflight_per_conn = (uint32_t)b->cfg.max_inflight_per_connection;
    sc.idle_timeout_ms = (uint32_t)b->cfg.idle_timeout_ms;
    sc.frame_timeout_ms = (uint32_t)b->cfg.frame_timeout_ms;
    sc.max_output_bytes = (uint64_t)b->cfg.max_queued_response_bytes;
    rv = server_auth(b, ed);
    if (rv != 0) {
        return rv;
    }
    sc.require_auth = b->sasl.mechs != 0;
    sc.pre_auth_max_frame_bytes = SASL_PRE_AUTH_MAX_FRAME;
    sc.auth_free = sasl_srv_state_free;
    rv = server_tls(b, ed);
    if (rv != 0) {
        return rv;
    }
    sc.tls = b->cfg.tls ? b->tls_server : NULL;
    if ((b->cfg.quota_produce_bytes_per_sec > 0 &&
         quota_new((uint64_t)b->cfg.quota_produce_bytes_per_sec,
                   &b->produce_quota) != 0) ||
        (b->cfg.quota_fetch_bytes_per_sec > 0 &&
         quota_new((uint64_t)b->cfg.quota_fetch_bytes_per_sec,
                   &b->fetch_quota) != 0)) {
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    rv = srv_open(b->base, b->cfg.listen, &sc, server_dispatch, b, &b->srv, ed);
    if (rv != 0) {
        return rv;
    }
    if (b->adv_port == 0) {
        b->adv_port = srv_port(b->srv);
    }
    rv = server_open_tls_listener(b, &sc, ed);
    if (rv != 0) {
        return rv;
    }
    if (b->cfg.controller != NULL && b->cfg.controller[0] != '\0') {
        rv = cluster_new(b, &b->cluster, ed);
        if (rv != 0) {
            return rv;
        }
        if (repl_io_new(b, &b->repl) != 0) {
            return err_set(ed, WEIR_ENOMEM, "out of memory");
        }
        cluster_set_partition_hook(b->cluster, repl_io_on_partition, b->repl);
    }
    if (group_io_new(b, &b->group) != 0) {
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    return server_timers(b, ed);
}

int server_run(struct broker *b)
{
    trace_info("broker",
               "event=started id=%lld listen=%s port=%u advertise=%s:%u "
               "tls=%s tls_advertise=%s:%u data_dir=%s topics=%u "
               "flush_policy=%s",
               (long long)b->cfg.id, b->cfg.listen, srv_port(b->srv),
               b->adv_host, b->adv_port,
               b->cfg.tls ? "on" : (b->srv_tls != NULL ? "beside" : "off"),
               b->srv_tls != NULL ? b->tls_adv_host : "-", b->tls_adv_port,
               b->cfg.data_dir, logmgr_topic_count(b->logs),
               broker_flush_policy_name(b->log_defaults.flush_policy));
    if (event_base_dispatch(b->base) < 0) {
        return WEIR_EIO;
    }
    return 0;
}

static void server_free_event(struct event *ev)
{
    if (ev != NULL) {
        event_free(ev);
    }
}

/* After a clean stop (every log flushed and closed), leave the broker
 * epoch for the next start: it tells the controller the logs are whole. */
static void server_mark_clean(struct broker *b, int64_t broker_epoch)
{
    struct err_detail ed;

    if (broker_epoch < 0) {
        return;
    }
    err_detail_clear(&ed);
    if (broker_ident_mark_clean(&b->ident, broker_epoch, &ed) != 0) {
        trace_error("broker", "event=clean_shutdown_marker_failed msg=\"%s\"",
                    ed.msg);
    }
}

void server_close(struct broker *b)
{
    int64_t broker_epoch = -1;

    if (b->cluster != NULL) {
        broker_epoch = cluster_broker_epoch(b->cluster);
        cluster_save_applied(b->cluster);
    }
    api_producer_id_shutdown(b);
    group_io_free(b->group); /* answers parked group calls */
    b->group = NULL;
    /* parked replica fetches are answered while the replication state
     * that makes sense of them still exists */
    if (b->logs != NULL) {
        api_fetch_retry(b, true);
    }
    cluster_free(b->cluster); /* answers forwards still waiting */
    b->cluster = NULL;
    repl_io_free(b->repl);
    b->repl = NULL;
    if (b->srv != NULL) {
        srv_stop_accepting(b->srv);
        if (b->srv_tls != NULL) {
            srv_stop_accepting(b->srv_tls);
        }
    }
    if (b->logs != NULL) {
        /* acknowledge what was written, then release the long polls */
        struct timeval drain = {0, 200000};
        broker_flush_dirty(b);
        api_fetch_retry(b, true);
        broker_release_held(b); /* held for a quota: answer now */
        /* give the answers just queued a moment to reach their clients */
        (void)event_base_loopexit(b->base, &drain);
        (void)event_base_dispatch(b->base);
    }
    broker_release_held(b); /* held for a quota: answer now */
    srv_close(b->srv);
    b->srv = NULL;
    srv_close(b->srv_tls);
    b->srv_tls = NULL;
    log_health_close(b);
    if (b->logs != NULL) {
        uint32_t unclean = logmgr_close(b->logs);

        b->logs = NULL;
        if (unclean == 0) {
            server_mark_clean(b, broker_epoch);
        } else {
            /* Some log may lack records it acknowledged as flushed (an
             * fsync failed) or was not closed: without the marker the
             * next registration reports an unclean stop, and the
             * controller takes this broker out of every ELR it is in
             * (unless it is the last member), as after kill -9. */
            trace_warn("broker",
                       "event=clean_shutdown_marker_skipped unclean_logs=%u "
                       "reason=\"logs offline or not closed cleanly: the "
                       "controller will see an unclean stop\"",
                       unclean);
        }
        trace_info("broker", "event=shutdown_complete clean=%s",
                   unclean == 0 ? "true" : "false");
    }
    idem_io_free(b->idem);
    b->idem = NULL;
    server_free_event(b->flush_ev);
    server_free_event(b->flush_timer);
    server_free_event(b->housekeep_timer);
    server_free_event(b->sig_term);
    server_free_event(b->sig_int);
    if (b->base != NULL) {
        event_base_free(b->base);
    }
    mem_free(b->dirty);
    quota_free(b->produce_quota);
    quota_free(b->fetch_quota);
    b->produce_quota = b->fetch_quota = NULL;
    authz_fini(&b->authz);
    tls_ctx_free(b->tls_server);
    tls_ctx_free(b->tls_client);
    b->tls_server = b->tls_client = NULL;
}
