/* SPDX-License-Identifier: Apache-2.0 */
/* Controller requests: broker registration, heartbeats, ISR changes and
 * producer ids become ctl_core events; FetchMetadata reads the log (or,
 * for a broker behind the last snapshot, sends the snapshot) and parks
 * until the log grows; CreateTopics, DeleteTopics and Metadata serve
 * clients and brokers that forward them. Every answer to a step goes out
 * only after ctl_server_step made its batch durable. */
#include <event2/buffer.h>
#include <event2/event.h>
#include <stdio.h>
#include <string.h>

#include "common/mem.h"
#include "common/rpc.h"
#include "common/trace.h"
#include "controller/ctl_io.h"
#include "controller/ctl_quorum.h"
#include "controller/ctl_sec.h"
#include "controller/meta/meta_pb.h"
#include "controller/meta/meta_snapshot.h"

struct ctl_wait {
    struct ctl_wait *next;
    struct ctl_server *s;
    struct srv_req *req;
    uint32_t correlation_id;
    int64_t from;
    uint32_t max_bytes;
    bool checked; /* its history point was checked and is ours */
    struct event *timer;
};

void ctl_rpc_respond(struct srv_req *req,
                     Weir__Response *resp,
                     struct evbuffer *payload)
{
    struct ctl_server *s = req->user;
    struct weir_buf frame;
    size_t plen = payload != NULL ? evbuffer_get_length(payload) : 0;

    buf_init(&frame);
    if (rpc_encode_response(resp, (uint32_t)plen, &frame) != 0) {
        trace_error("controller", "event=encode_failed peer=%s", req->peer);
        buf_fini(&frame);
        srv_req_respond(req, &frame, NULL, true);
        return;
    }
    /* in a quorum, an answer built after a proposal waits until the
     * proposal is applied (metadata fetches carry applied records only) */
    if (s != NULL && s->quorum != NULL && payload == NULL &&
        ctl_quorum_park(s->quorum, req, resp->correlation_id, &frame, false)) {
        buf_fini(&frame);
        return;
    }
    srv_req_respond(req, &frame, payload, false);
    buf_fini(&frame);
}

static void ctl_rpc_error(struct srv_req *req,
                          uint32_t corr,
                          int code,
                          const char *msg,
                          bool close_after)
{
    Weir__Response resp = WEIR__RESPONSE__INIT;
    struct weir_buf frame;

    resp.correlation_id = corr;
    resp.error_code = code;
    resp.error_message = (char *)msg;
    buf_init(&frame);
    if (rpc_encode_response(&resp, 0, &frame) != 0) {
        close_after = true;
    }
    srv_req_respond(req, &frame, NULL, close_after);
    buf_fini(&frame);
}

/* The step's refusal (or failure) at the envelope level, else 0. */
static int
ctl_rpc_result(struct ctl_server *s, struct ctl_event *ev, Weir__Response *resp)
{
    int rv = ctl_server_step(s, ev);

    if (rv == 0) {
        rv = s->act.result;
    }
    if (rv != 0) {
        resp->error_code = rv;
        resp->error_message = s->act.detail.msg;
    }
    return rv;
}

/* Offline replicas as the core takes them. More than CTL_MAX_OFFLINE are
 * not copied: the core refuses the count before it reads any. *out is
 * NULL when none were copied. Errors: WEIR_ENOMEM. */
static int ctl_rpc_offline(Weir__ReplicaRef *const *refs,
                           size_t n,
                           struct ctl_replica **out,
                           uint32_t *n_out)
{
    size_t i;

    *out = NULL;
    *n_out = n > CTL_MAX_OFFLINE ? CTL_MAX_OFFLINE + 1 : (uint32_t)n;
    if (n == 0 || n > CTL_MAX_OFFLINE) {
        return 0;
    }
    *out = mem_malloc(n * sizeof(**out));
    if (*out == NULL) {
        return WEIR_ENOMEM;
    }
    for (i = 0; i < n; i++) {
        (*out)[i].topic_id = refs[i]->topic_id;
        (*out)[i].partition = refs[i]->partition;
    }
    return 0;
}

static void ctl_rpc_trace_broker(const struct ctl_server *s, int32_t id)
{
    if (s->act.data_lost) {
        trace_warn("controller",
                   "event=broker_data_dir_new broker=%d msg=\"its replicas "
                   "left every ISR and ELR: their data is gone\"",
                   (int)id);
    }
    if (s->act.unclean_stop) {
        trace_info("controller",
                   "event=broker_unclean_stop broker=%d msg=\"it left the "
                   "ELRs where others hold the committed records, of topics "
                   "whose flush policy is not ack\"",
                   (int)id);
    }
    if (s->act.offline_changed) {
        trace_warn("controller", "event=offline_replicas broker=%d count=%u",
                   (int)id, s->act.n_offline);
    }
}

static void ctl_rpc_refuse_cluster(struct ctl_server *s,
                                   struct srv_req *req,
                                   uint32_t corr,
                                   const Weir__RegisterBrokerRequest *m)
{
    char msg[400];

    (void)snprintf(msg, sizeof(msg),
                   "broker %d's data dir belongs to cluster %s, this "
                   "controller (data dir %s) to cluster %s",
                   (int)m->broker_id, m->cluster_id, s->cfg.data_dir,
                   s->cluster_id);
    trace_error("controller",
                "event=register_refused broker=%d peer=%s "
                "error=INCONSISTENT_CLUSTER_ID broker_cluster_id=%s "
                "cluster_id=%s",
                (int)m->broker_id, req->peer, m->cluster_id, s->cluster_id);
    ctl_rpc_error(req, corr, WEIR_EINCONSISTENT_CLUSTER_ID, msg, false);
}

static void ctl_rpc_register(struct ctl_server *s,
                             struct srv_req *req,
                             const Weir__Request *r)
{
    const Weir__RegisterBrokerRequest *m = r->register_broker;
    Weir__Response resp = WEIR__RESPONSE__INIT;
    Weir__RegisterBrokerResponse body = WEIR__REGISTER_BROKER_RESPONSE__INIT;
    struct ctl_replica *offline;
    struct ctl_event ev;

    if (m->cluster_id != NULL && m->cluster_id[0] != '\0' &&
        strcmp(m->cluster_id, s->cluster_id) != 0) {
        /* its data belongs to another cluster: nothing of it may be
         * registered here, and the broker must not take this metadata */
        ctl_rpc_refuse_cluster(s, req, r->correlation_id, m);
        return;
    }
    memset(&ev, 0, sizeof(ev));
    if (ctl_rpc_offline(m->offline_replicas, m->n_offline_replicas, &offline,
                        &ev.u.reg.n_offline) != 0) {
        ctl_rpc_error(req, r->correlation_id, WEIR_ENOMEM, "out of memory",
                      false);
        return;
    }
    ev.type = CTL_EV_BROKER_REGISTER;
    ev.u.reg.broker_id = m->broker_id;
    ev.u.reg.host = m->host;
    ev.u.reg.port = m->port <= UINT16_MAX ? (uint16_t)m->port : 0;
    ev.u.reg.rack = m->rack;
    ev.u.reg.tls_host = m->tls_host;
    ev.u.reg.tls_port = m->tls_port <= UINT16_MAX ? (uint16_t)m->tls_port : 0;
    ev.u.reg.directory_id = m->directory_id;
    ev.u.reg.previous_broker_epoch = m->previous_broker_epoch;
    ev.u.reg.default_flush_policy = m->default_flush_policy;
    ev.u.reg.offline = offline;
    resp.correlation_id = r->correlation_id;
    if (ctl_rpc_result(s, &ev, &resp) == 0) {
        ctl_rpc_trace_broker(s, m->broker_id);
        body.broker_epoch = s->act.broker_epoch;
        body.cluster_id = s->cluster_id;
        body.session_timeout_ms = (uint32_t)s->cfg.session_timeout_ms;
        resp.body_case = WEIR__RESPONSE__BODY_REGISTER_BROKER;
        resp.register_broker = &body;
    } else {
        trace_warn("controller",
                   "event=register_refused broker=%d peer=%s msg=\"%s\"",
                   (int)m->broker_id, req->peer, resp.error_message);
    }
    ctl_rpc_respond(req, &resp, NULL);
    mem_free(offline);
}

static void ctl_rpc_heartbeat(struct ctl_server *s,
                              struct srv_req *req,
                              const Weir__Request *r)
{
    const Weir__BrokerHeartbeatRequest *m = r->broker_heartbeat;
    Weir__Response resp = WEIR__RESPONSE__INIT;
    Weir__BrokerHeartbeatResponse body = WEIR__BROKER_HEARTBEAT_RESPONSE__INIT;
    struct ctl_quorum_pb quorum; /* the broker serves it in Metadata */
    struct ctl_replica *offline;
    struct ctl_event ev;

    memset(&ev, 0, sizeof(ev));
    if (ctl_rpc_offline(m->offline_replicas, m->n_offline_replicas, &offline,
                        &ev.u.heartbeat.n_offline) != 0) {
        ctl_rpc_error(req, r->correlation_id, WEIR_ENOMEM, "out of memory",
                      false);
        return;
    }
    ev.u.heartbeat.offline = offline;
    ev.type = CTL_EV_BROKER_HEARTBEAT;
    ev.u.heartbeat.broker_id = m->broker_id;
    ev.u.heartbeat.broker_epoch = m->broker_epoch;
    ev.u.heartbeat.applied_offset = m->applied_offset;
    ev.u.heartbeat.want_shutdown = m->want_shutdown;
    resp.correlation_id = r->correlation_id;
    if (ctl_rpc_result(s, &ev, &resp) == 0) {
        /* a dead broker's connection closes: see ctl_io_broker_lost */
        srv_req_tag(req, m->broker_id, m->broker_epoch);
        ctl_rpc_trace_broker(s, m->broker_id);
        body.fenced = s->act.broker_fenced;
        body.shutdown_ok = s->act.shutdown_ok;
        body.quorum = ctl_quorum_status(s->quorum, &quorum);
        resp.body_case = WEIR__RESPONSE__BODY_BROKER_HEARTBEAT;
        resp.broker_heartbeat = &body;
        if (m->want_shutdown && s->act.shutdown_ok) {
            trace_info("controller",
                       "event=controlled_shutdown broker=%d epoch=%lld",
                       (int)m->broker_id, (long long)m->broker_epoch);
        }
    }
    ctl_rpc_respond(req, &resp, NULL);
    mem_free(offline);
}

static void ctl_rpc_alter_isr(struct ctl_server *s,
                              struct srv_req *req,
                              const Weir__Request *r)
{
    const Weir__AlterIsrRequest *m = r->alter_isr;
    Weir__Response resp = WEIR__RESPONSE__INIT;
    Weir__AlterIsrResponse body = WEIR__ALTER_ISR_RESPONSE__INIT;
    struct ctl_event ev;
    size_t i;

    memset(&ev, 0, sizeof(ev));
    ev.type = CTL_EV_ALTER_ISR;
    ev.u.alter_isr.broker_id = m->broker_id;
    ev.u.alter_isr.broker_epoch = m->broker_epoch;
    ev.u.alter_isr.topic_id = m->topic_id;
    ev.u.alter_isr.partition = m->partition;
    ev.u.alter_isr.leader_epoch = m->leader_epoch;
    ev.u.alter_isr.partition_epoch = m->partition_epoch;
    if (m->n_isr > META_MAX_REPLICAS) {
        ctl_rpc_error(req, r->correlation_id, WEIR_EINVALID_REQUEST,
                      "ISR too long", false);
        return;
    }
    ev.u.alter_isr.isr.n = (uint32_t)m->n_isr;
    for (i = 0; i < m->n_isr; i++) {
        ev.u.alter_isr.isr.ids[i] = m->isr[i];
    }
    resp.correlation_id = r->correlation_id;
    (void)ctl_rpc_result(s, &ev, &resp);
    /* the partition's state goes back on refusal too */
    body.leader_epoch = s->act.leader_epoch;
    body.partition_epoch = s->act.partition_epoch;
    body.isr = s->act.isr.ids;
    body.n_isr = s->act.isr.n;
    resp.body_case = WEIR__RESPONSE__BODY_ALTER_ISR;
    resp.alter_isr = &body;
    ctl_rpc_respond(req, &resp, NULL);
}

static void
ctl_rpc_pids(struct ctl_server *s, struct srv_req *req, const Weir__Request *r)
{
    const Weir__AllocateProducerIdsRequest *m = r->allocate_producer_ids;
    Weir__Response resp = WEIR__RESPONSE__INIT;
    Weir__AllocateProducerIdsResponse body =
        WEIR__ALLOCATE_PRODUCER_IDS_RESPONSE__INIT;
    struct ctl_event ev;

    memset(&ev, 0, sizeof(ev));
    ev.type = CTL_EV_ALLOCATE_PRODUCER_IDS;
    ev.u.pids.broker_id = m->broker_id;
    ev.u.pids.broker_epoch = m->broker_epoch;
    ev.u.pids.count = m->count;
    resp.correlation_id = r->correlation_id;
    if (ctl_rpc_result(s, &ev, &resp) == 0) {
        body.first_producer_id = s->act.producer_id;
        body.count = s->act.producer_id_count;
        resp.body_case = WEIR__RESPONSE__BODY_ALLOCATE_PRODUCER_IDS;
        resp.allocate_producer_ids = &body;
    }
    ctl_rpc_respond(req, &resp, NULL);
}

/* Records from w->from on, or the snapshot when the log no longer holds
 * them (or the broker claims more than there is: it follows another
 * history, and the snapshot replaces its image). */
static void ctl_rpc_fetch_answer(struct ctl_server *s, struct ctl_wait *w)
{
    Weir__Response resp = WEIR__RESPONSE__INIT;
    Weir__FetchMetadataResponse body = WEIR__FETCH_METADATA_RESPONSE__INIT;
    struct evbuffer *payload = evbuffer_new();
    struct weir_buf b;
    uint32_t count = 0;
    int rv;

    buf_init(&b);
    body.cluster_id = s->cluster_id;
    body.end_offset = ctl_log_end_offset(s->log);
    body.history_checked = w->checked;
    if (w->from < ctl_log_start_offset(s->log) || w->from > body.end_offset) {
        body.snapshot = true;
        body.first_offset = 0;
        body.first_chain = ctl_log_chain_at(s->log, body.end_offset);
        rv = meta_snapshot_encode(ctl_server_image(s), &b, NULL);
    } else {
        body.first_offset = w->from;
        body.first_chain = ctl_log_chain_at(s->log, w->from);
        rv = ctl_log_read(s->log, w->from, w->max_bytes, &b, &count);
    }
    body.chain_known = body.first_chain >= 0;
    body.record_count = count;
    if (rv == 0 && payload != NULL && b.len > 0 &&
        evbuffer_add(payload, b.data, b.len) != 0) {
        rv = WEIR_ENOMEM;
    }
    buf_fini(&b);
    if (rv != 0 || payload == NULL) {
        ctl_rpc_error(w->req, w->correlation_id, WEIR_ENOMEM, "out of memory",
                      false);
    } else {
        resp.correlation_id = w->correlation_id;
        resp.body_case = WEIR__RESPONSE__BODY_FETCH_METADATA;
        resp.fetch_metadata = &body;
        ctl_rpc_respond(w->req, &resp, payload);
    }
    if (payload != NULL) {
        evbuffer_free(payload);
    }
}

static void ctl_rpc_wait_free(struct ctl_server *s, struct ctl_wait *w)
{
    struct ctl_wait **pp = &s->waits;

    while (*pp != NULL && *pp != w) {
        pp = &(*pp)->next;
    }
    if (*pp == w) {
        *pp = w->next;
    }
    if (w->timer != NULL) {
        event_free(w->timer);
    }
    mem_free(w);
}

static void ctl_rpc_wait_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct ctl_wait *w = arg;
    struct ctl_server *s = w->s;

    (void)fd;
    (void)what;
    ctl_rpc_fetch_answer(s, w);
    ctl_rpc_wait_free(s, w);
}

void ctl_rpc_wake(struct ctl_server *s, bool final)
{
    struct ctl_wait *w = s->waits;

    while (w != NULL) {
        struct ctl_wait *next = w->next;
        if (!s->active) {
            ctl_member_refuse(s, w->req, w->correlation_id);
            ctl_rpc_wait_free(s, w);
        } else if (final || w->from != ctl_log_end_offset(s->log) ||
                   srv_req_orphaned(w->req)) {
            ctl_rpc_fetch_answer(s, w);
            ctl_rpc_wait_free(s, w);
        }
        w = next;
    }
}

/* Is the history point the broker names (an offset and the chain value
 * there, of the metadata it applied) this controller's history? 0 when
 * it is (*checked) or cannot be told from here because the offset is
 * past our end (the broker sees end_offset and refuses an older history
 * itself); else the error to answer, with msg (also traced: a diverged
 * broker keeps asking, with backoff, so the line repeats). */
static int ctl_rpc_history_check(struct ctl_server *s,
                                 const Weir__FetchMetadataRequest *m,
                                 const char *peer,
                                 bool *checked,
                                 char *msg,
                                 size_t cap)
{
    int64_t at = m->history_offset;
    int64_t ours;

    *checked = false;
    if (at <= 0 || at > ctl_log_end_offset(s->log)) {
        return 0;
    }
    ours = ctl_log_chain_at(s->log, at);
    if (ours >= 0 && ours == m->history_chain) {
        *checked = true;
        return 0;
    }
    if (ours < 0) {
        (void)snprintf(msg, cap,
                       "broker %d applied metadata up to offset %lld; this "
                       "controller (data dir %s) keeps the history values "
                       "from offset %lld on only, so it cannot show that "
                       "its history is the same",
                       (int)m->broker_id, (long long)at, s->cfg.data_dir,
                       (long long)ctl_log_chain_first(s->log));
    } else {
        (void)snprintf(msg, cap,
                       "broker %d's chain value at offset %lld is %lld, this "
                       "controller's (data dir %s) is %lld",
                       (int)m->broker_id, (long long)at,
                       (long long)m->history_chain, s->cfg.data_dir,
                       (long long)ours);
    }
    trace_error(
        "controller", "event=%s broker=%d peer=%s offset=%lld msg=\"%s\"",
        ours < 0 ? "broker_history_unverifiable" : "broker_history_diverged",
        (int)m->broker_id, peer, (long long)at, msg);
    return ours < 0 ? WEIR_EMETADATA_HISTORY_UNVERIFIABLE
                    : WEIR_EMETADATA_DIVERGED;
}

static void ctl_rpc_fetch_metadata(struct ctl_server *s,
                                   struct srv_req *req,
                                   const Weir__Request *r)
{
    const Weir__FetchMetadataRequest *m = r->fetch_metadata;
    struct ctl_wait *w;
    uint64_t wait_ms = m->max_wait_ms;
    struct timeval tv;
    char msg[600];
    bool checked;
    int rv;

    rv = ctl_rpc_history_check(s, m, req->peer, &checked, msg, sizeof(msg));
    if (rv != 0) {
        ctl_rpc_error(req, r->correlation_id, rv, msg, false);
        return;
    }
    w = mem_calloc(1, sizeof(*w));
    if (w == NULL) {
        ctl_rpc_error(req, r->correlation_id, WEIR_ENOMEM, "out of memory",
                      false);
        return;
    }
    w->s = s;
    w->req = req;
    w->checked = checked;
    w->correlation_id = r->correlation_id;
    w->from = m->from_offset < 0 ? 0 : m->from_offset;
    w->max_bytes = m->max_bytes > 0 ? m->max_bytes : 1024 * 1024;
    if (wait_ms > (uint64_t)s->cfg.metadata_max_wait_ms) {
        wait_ms = (uint64_t)s->cfg.metadata_max_wait_ms;
    }
    if (w->from != ctl_log_end_offset(s->log) || wait_ms == 0 || s->stopping) {
        ctl_rpc_fetch_answer(s, w);
        mem_free(w);
        return;
    }
    w->timer = evtimer_new(s->base, ctl_rpc_wait_timeout, w);
    if (w->timer == NULL) {
        ctl_rpc_fetch_answer(s, w);
        mem_free(w);
        return;
    }
    tv.tv_sec = (time_t)(wait_ms / 1000);
    tv.tv_usec = (suseconds_t)((wait_ms % 1000) * 1000);
    (void)event_add(w->timer, &tv);
    w->next = s->waits;
    s->waits = w;
}

static void ctl_rpc_metadata(struct ctl_server *s,
                             struct srv_req *req,
                             const Weir__Request *r)
{
    Weir__Response resp = WEIR__RESPONSE__INIT;
    Weir__MetadataResponse body = WEIR__METADATA_RESPONSE__INIT;
    struct ctl_quorum_pb quorum;
    struct meta_pb m;

    memset(&m, 0, sizeof(m));
    if (meta_pb_build(ctl_core_image(s->core), r->metadata, &body, &m) != 0) {
        meta_pb_free(&m);
        ctl_rpc_error(req, r->correlation_id, WEIR_ENOMEM, "out of memory",
                      false);
        return;
    }
    body.cluster_id = s->cluster_id;
    body.controller_id = -1;
    body.controller_address = s->address;
    body.quorum = ctl_quorum_status(s->quorum, &quorum);
    resp.correlation_id = r->correlation_id;
    resp.body_case = WEIR__RESPONSE__BODY_METADATA;
    resp.metadata = &body;
    ctl_rpc_respond(req, &resp, NULL);
    meta_pb_free(&m);
}

/* One create or delete as a core step; *ed gets the refusal. */
static int ctl_rpc_topic_one(struct ctl_server *s,
                             const Weir__CreateTopic *ct,
                             const char *del_name,
                             struct err_detail *ed)
{
    struct ctl_kv kv[RPC_MAX_CONFIGS];
    struct ctl_event ev;
    size_t i;
    int rv;

    memset(&ev, 0, sizeof(ev));
    if (del_name != NULL) {
        ev.type = CTL_EV_DELETE_TOPIC;
        ev.u.del.name = del_name;
    } else {
        if (ct->n_configs > RPC_MAX_CONFIGS) {
            return err_set(ed, WEIR_EINVALID_CONFIG, "too many configs");
        }
        for (i = 0; i < ct->n_configs; i++) {
            kv[i].key = ct->configs[i]->key;
            kv[i].value = ct->configs[i]->value;
        }
        ev.type = CTL_EV_CREATE_TOPIC;
        ev.u.create.name = ct->name;
        ev.u.create.partitions = ct->partitions;
        ev.u.create.replication_factor = ct->replication_factor;
        ev.u.create.n_configs = (uint32_t)ct->n_configs;
        ev.u.create.configs = kv;
    }
    rv = ctl_server_step(s, &ev);
    if (rv == 0) {
        rv = s->act.result;
    }
    if (rv != 0) {
        *ed = s->act.detail;
        ed->code = rv;
    }
    return rv;
}

static void ctl_rpc_topics(struct ctl_server *s,
                           struct srv_req *req,
                           const Weir__Request *r,
                           bool create)
{
    size_t n = create ? r->create_topics->n_topics : r->delete_topics->n_names;
    Weir__Response resp = WEIR__RESPONSE__INIT;
    Weir__CreateTopicsResponse cbody = WEIR__CREATE_TOPICS_RESPONSE__INIT;
    Weir__DeleteTopicsResponse dbody = WEIR__DELETE_TOPICS_RESPONSE__INIT;
    Weir__TopicResult *res = mem_calloc(n + 1, sizeof(*res));
    Weir__TopicResult **ptrs = mem_calloc(n + 1, sizeof(*ptrs));
    struct err_detail *eds = mem_calloc(n + 1, sizeof(*eds));
    size_t i;

    if (res == NULL || ptrs == NULL || eds == NULL) {
        ctl_rpc_error(req, r->correlation_id, WEIR_ENOMEM, "out of memory",
                      false);
        goto out;
    }
    for (i = 0; i < n; i++) {
        const Weir__CreateTopic *ct =
            create ? r->create_topics->topics[i] : NULL;
        char *name = create ? ct->name : r->delete_topics->names[i];
        int rv;
        weir__topic_result__init(&res[i]);
        if (create && r->create_topics->validate_only) {
            rv = err_set(&eds[i], WEIR_EINVALID_REQUEST,
                         "validate_only is not supported in cluster mode");
        } else {
            rv = ctl_rpc_topic_one(s, ct, create ? NULL : name, &eds[i]);
        }
        res[i].name = name;
        res[i].error_code = rv;
        res[i].error_message = rv != 0 ? eds[i].msg : "";
        ptrs[i] = &res[i];
    }
    resp.correlation_id = r->correlation_id;
    if (create) {
        cbody.topics = ptrs;
        cbody.n_topics = n;
        resp.body_case = WEIR__RESPONSE__BODY_CREATE_TOPICS;
        resp.create_topics = &cbody;
    } else {
        dbody.topics = ptrs;
        dbody.n_topics = n;
        resp.body_case = WEIR__RESPONSE__BODY_DELETE_TOPICS;
        resp.delete_topics = &dbody;
    }
    ctl_rpc_respond(req, &resp, NULL);
out:
    mem_free(res);
    mem_free(ptrs);
    mem_free(eds);
}

/* The cluster id a broker's call names ("" or NULL: none, as from clients
 * and older brokers). */
static const char *ctl_rpc_cluster_of(const Weir__Request *r)
{
    switch (r->body_case) {
    case WEIR__REQUEST__BODY_BROKER_HEARTBEAT:
        return r->broker_heartbeat->cluster_id;
    case WEIR__REQUEST__BODY_FETCH_METADATA:
        return r->fetch_metadata->cluster_id;
    case WEIR__REQUEST__BODY_ALTER_ISR:
        return r->alter_isr->cluster_id;
    case WEIR__REQUEST__BODY_ALLOCATE_PRODUCER_IDS:
        return r->allocate_producer_ids->cluster_id;
    case WEIR__REQUEST__BODY_CREATE_TOPICS:
        return r->create_topics->cluster_id;
    case WEIR__REQUEST__BODY_DELETE_TOPICS:
        return r->delete_topics->cluster_id;
    default:
        return NULL; /* RegisterBroker checks its own */
    }
}

static void
ctl_rpc_route(struct ctl_server *s, struct srv_req *req, const Weir__Request *r)
{
    const char *cid = ctl_rpc_cluster_of(r);
    char msg[300];

    if (cid != NULL && cid[0] != '\0' && strcmp(cid, s->cluster_id) != 0) {
        /* a broker of another cluster: nothing of it may reach this log */
        (void)snprintf(msg, sizeof(msg),
                       "the caller belongs to cluster %s, this controller "
                       "(data dir %s) to cluster %s",
                       cid, s->cfg.data_dir, s->cluster_id);
        trace_warn("controller",
                   "event=request_refused call=%s peer=%s "
                   "error=INCONSISTENT_CLUSTER_ID msg=\"%s\"",
                   rpc_api_name(r->body_case), req->peer, msg);
        ctl_rpc_error(req, r->correlation_id, WEIR_EINCONSISTENT_CLUSTER_ID,
                      msg, false);
        return;
    }
    switch (r->body_case) {
    case WEIR__REQUEST__BODY_REGISTER_BROKER:
        ctl_rpc_register(s, req, r);
        break;
    case WEIR__REQUEST__BODY_BROKER_HEARTBEAT:
        ctl_rpc_heartbeat(s, req, r);
        break;
    case WEIR__REQUEST__BODY_FETCH_METADATA:
        ctl_rpc_fetch_metadata(s, req, r);
        break;
    case WEIR__REQUEST__BODY_ALTER_ISR:
        ctl_rpc_alter_isr(s, req, r);
        break;
    case WEIR__REQUEST__BODY_ALLOCATE_PRODUCER_IDS:
        ctl_rpc_pids(s, req, r);
        break;
    case WEIR__REQUEST__BODY_METADATA:
        ctl_rpc_metadata(s, req, r);
        break;
    case WEIR__REQUEST__BODY_CREATE_TOPICS:
        ctl_rpc_topics(s, req, r, true);
        break;
    case WEIR__REQUEST__BODY_DELETE_TOPICS:
        ctl_rpc_topics(s, req, r, false);
        break;
    case WEIR__REQUEST__BODY_ALTER_USERS:
    case WEIR__REQUEST__BODY_DESCRIBE_USERS:
    case WEIR__REQUEST__BODY_CREATE_ACLS:
    case WEIR__REQUEST__BODY_DELETE_ACLS:
    case WEIR__REQUEST__BODY_DESCRIBE_ACLS:
        ctl_sec_rpc(s, req, r);
        break;
    case WEIR__REQUEST__BODY_RAFT:
        if (s->voters.n > 0 && s->raft_hook != NULL) {
            /* one-way: the hook finishes req without an answer */
            s->raft_hook(s->raft_hook_arg, req, r);
            break;
        }
        ctl_rpc_error(req, r->correlation_id, WEIR_EUNSUPPORTED_API,
                      s->voters.n == 0
                          ? "this controller is not a quorum member (no "
                            "--voters)"
                          : "this controller does not run the quorum yet",
                      false);
        break;
    default:
        ctl_rpc_error(req, r->correlation_id, WEIR_EUNSUPPORTED_API,
                      "the controller does not serve this call; ask a broker",
                      false);
        break;
    }
}

void ctl_rpc_dispatch(void *arg, struct srv_req *req)
{
    struct ctl_server *s = arg;
    Weir__Request *r = NULL;
    struct err_detail ed;
    int rv;

    req->user = s; /* ctl_rpc_respond: answers may wait for the commit */
    err_detail_clear(&ed);
    rv = rpc_request_decode(req->header, req->payload_len, &r, &ed);
    if (rv != 0) {
        trace_warn("controller",
                   "event=bad_request peer=%s error=%s msg=\"%s\"", req->peer,
                   weir_err_name(rv), ed.msg);
        ctl_rpc_error(req, r != NULL ? r->correlation_id : 0, rv, ed.msg,
                      r == NULL);
        rpc_request_free(r);
        return;
    }
    if (s->stopping || (s->core == NULL && s->quorum == NULL)) {
        ctl_rpc_error(req, r->correlation_id, WEIR_ESHUTTING_DOWN,
                      "controller is shutting down", false);
    } else if (ctl_sec_gate(s, req, r)) {
        /* answered: a login step, or refused */
    } else if (!s->active && ctl_member_needs_active(r)) {
        ctl_member_refuse(s, req, r->correlation_id);
    } else {
        ctl_rpc_route(s, req, r);
    }
    rpc_request_free(r);
}
