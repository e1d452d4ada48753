/* SPDX-License-Identifier: Apache-2.0 */
/* Client calls a broker answers differently in cluster mode: Metadata from
 * the metadata image (plus offsets of the partitions hosted here),
 * CreateTopics/DeleteTopics forwarded to the controller, and the leader
 * check in front of produce, fetch and list-offsets. Clients never need to
 * know where the controller is. */
#include <event2/event.h>
#include <stdio.h>
#include <string.h>

#include "broker/api/api.h"
#include "broker/broker.h"
#include "broker/cluster/cluster_int.h"
#include "broker/replica/repl_io.h"
#include "common/mem.h"
#include "common/rpc.h"
#include "common/trace.h"
#include "controller/meta/meta_pb.h"

#define CLUSTER_FWD_WAIT_MS                                                    \
    3000 /* for the image to show a forwarded change                           \
          */

struct cluster_fwd {
    struct cluster_fwd *next;
    struct cluster *c;
    struct srv_req *req;
    uint32_t correlation_id;
    bool create;
    char **names; /* topics whose change succeeded (owned) */
    uint32_t n_names;
    struct weir_buf frame; /* encoded answer, once the controller replied */
    bool answered;
    struct event *timer;
    Weir__Request *r;   /* the call, kept to send again (owned) */
    uint32_t redirects; /* NOT_CONTROLLER answers followed */
};

/* NOT_CONTROLLER answers (nothing done) a forward follows to the member
 * named, before the client gets the error */
#define CLUSTER_FWD_MAX_REDIRECTS 3

static int cluster_fwd_send(struct cluster *c, Weir__Request *r, void *arg);

int cluster_route(const struct cluster *c,
                  const char *topic,
                  int32_t partition,
                  char *msg,
                  size_t msg_cap)
{
    const struct meta_topic *t =
        meta_image_topic_by_name(c->img, topic, strlen(topic));
    const struct meta_partition *p;

    if (t == NULL || partition < 0 || (uint32_t)partition >= t->n_partitions) {
        (void)snprintf(msg, msg_cap, "unknown topic or partition %s/%d", topic,
                       (int)partition);
        return WEIR_EUNKNOWN_TOPIC_OR_PARTITION;
    }
    p = &t->partitions[partition];
    if (p->leader == c->id && !cluster_incarnation_applied(c)) {
        /* an earlier incarnation's leadership (see cluster_sync_roles) */
        (void)snprintf(msg, msg_cap,
                       "broker %d has not applied its own registration yet "
                       "(epoch %lld); %s/%d has no leader here now",
                       (int)c->id, (long long)c->broker_epoch, topic,
                       (int)partition);
        return WEIR_ELEADER_NOT_AVAILABLE;
    }
    if (p->leader == c->id && !cluster_logs_usable(c, t)) {
        (void)snprintf(msg, msg_cap,
                       "%s/%d: this broker holds stray logs under that name "
                       "(another topic id)",
                       topic, (int)partition);
        return WEIR_ELEADER_NOT_AVAILABLE;
    }
    if (p->leader == c->id) {
        return 0;
    }
    if (p->leader < 0) {
        (void)snprintf(msg, msg_cap, "%s/%d has no leader now", topic,
                       (int)partition);
        return WEIR_ELEADER_NOT_AVAILABLE;
    }
    (void)snprintf(msg, msg_cap, "broker %d leads %s/%d (epoch %d), not %d",
                   (int)p->leader, topic, (int)partition, (int)p->leader_epoch,
                   (int)c->id);
    return WEIR_ENOT_LEADER;
}

int broker_route(const struct broker *b,
                 const char *topic,
                 int32_t partition,
                 char *msg,
                 size_t msg_cap)
{
    int rv = b->cluster != NULL
                 ? cluster_route(b->cluster, topic, partition, msg, msg_cap)
                 : 0;

    /* led here by the metadata, but maybe without replication state */
    return rv != 0 ? rv
                   : repl_io_route(b->repl, topic, partition, msg, msg_cap);
}

/* Topics the caller may not describe: left out of a listing of every
 * topic; when named, answered TOPIC_AUTHORIZATION_FAILED whether they
 * exist or not, with nothing else about them. */
static void cluster_api_metadata_authorize(struct broker *b,
                                           struct srv_req *req,
                                           const Weir__MetadataRequest *mr,
                                           Weir__MetadataResponse *body)
{
    size_t t;
    size_t kept = 0;

    if (!b->authz.enabled) {
        return;
    }
    for (t = 0; t < body->n_topics; t++) {
        Weir__TopicInfo *ti = body->topics[t];
        if (api_may(b, req, ACL_TOPIC, ti->name, ACL_DESCRIBE)) {
            body->topics[kept++] = ti;
        } else if (!mr->all_topics && mr->n_topics > 0) {
            ti->error_code = WEIR_ETOPIC_AUTHORIZATION_FAILED;
            ti->error_message = "not authorized to describe this topic";
            ti->n_partitions = 0;
            ti->n_configs = 0;
            ti->internal = false;
            body->topics[kept++] = ti;
        }
    }
    body->n_topics = kept;
}

void cluster_api_metadata(struct broker *b,
                          struct srv_req *req,
                          Weir__Request *r)
{
    Weir__Response resp = WEIR__RESPONSE__INIT;
    Weir__MetadataResponse body = WEIR__METADATA_RESPONSE__INIT;
    struct meta_pb m;
    size_t t;
    size_t p;

    memset(&m, 0, sizeof(m));
    if (meta_pb_build(b->cluster->img, r->metadata, &body, &m) != 0) {
        meta_pb_free(&m);
        broker_respond_error(req, r->correlation_id, WEIR_ENOMEM,
                             "out of memory", false);
        rpc_request_free(r);
        return;
    }
    cluster_api_metadata_authorize(b, req, r->metadata, &body);
    for (t = 0; t < body.n_topics; t++) {
        Weir__TopicInfo *ti = body.topics[t];
        for (p = 0; p < ti->n_partitions; p++) {
            Weir__PartitionInfo *pi = ti->partitions[p];
            struct plog *log =
                logmgr_partition(b->logs, ti->name, pi->partition);
            if (log != NULL) {
                pi->log_start_offset = plog_start_offset(log);
                pi->high_watermark = broker_high_watermark(b, log);
            }
        }
    }
    body.cluster_id = b->ident.props.cluster_id;
    body.controller_id = -1;
    body.controller_address = (char *)cluster_controller(b->cluster);
    body.quorum = b->cluster->quorum; /* the active controller's view */
    resp.correlation_id = r->correlation_id;
    resp.body_case = WEIR__RESPONSE__BODY_METADATA;
    resp.metadata = &body;
    broker_respond(req, &resp, NULL, false);
    meta_pb_free(&m);
    rpc_request_free(r);
}

static void cluster_fwd_free(struct cluster_fwd *f)
{
    struct cluster_fwd **pp = &f->c->fwds;
    uint32_t i;

    while (*pp != NULL && *pp != f) {
        pp = &(*pp)->next;
    }
    if (*pp == f) {
        *pp = f->next;
    }
    for (i = 0; i < f->n_names; i++) {
        mem_free(f->names[i]);
    }
    mem_free(f->names);
    rpc_request_free(f->r);
    buf_fini(&f->frame);
    if (f->timer != NULL) {
        event_free(f->timer);
    }
    mem_free(f);
}

/* Does this broker's image show the change yet? */
static bool cluster_fwd_visible(const struct cluster_fwd *f)
{
    const struct meta_image *img = f->c->img;
    uint32_t i;

    for (i = 0; i < f->n_names; i++) {
        bool there = meta_image_topic_by_name(img, f->names[i],
                                              strlen(f->names[i])) != NULL;
        if (there != f->create) {
            return false;
        }
    }
    return true;
}

static void cluster_fwd_finish(struct cluster_fwd *f)
{
    srv_req_respond(f->req, &f->frame, NULL, false);
    cluster_fwd_free(f);
}

void cluster_api_wake(struct cluster *c, bool final)
{
    struct cluster_fwd *f = c->fwds;

    while (f != NULL) {
        struct cluster_fwd *next = f->next;
        if (final && !f->answered) {
            broker_respond_error(f->req, f->correlation_id, WEIR_ESHUTTING_DOWN,
                                 "broker is shutting down", false);
            cluster_fwd_free(f);
        } else if (f->answered && (final || cluster_fwd_visible(f))) {
            cluster_fwd_finish(f);
        }
        f = next;
    }
}

static void cluster_fwd_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct cluster_fwd *f = arg;

    (void)fd;
    (void)what;
    if (f->answered) {
        cluster_fwd_finish(f); /* the image lags: answer anyway */
    }
}

/* Remember the topics whose change the controller accepted. */
static int cluster_fwd_names(struct cluster_fwd *f,
                             Weir__TopicResult *const *res,
                             size_t n)
{
    size_t i;

    f->names = mem_calloc(n + 1, sizeof(*f->names));
    if (f->names == NULL) {
        return WEIR_ENOMEM;
    }
    for (i = 0; i < n; i++) {
        if (res[i]->error_code == 0 &&
            (f->names[f->n_names] = mem_strdup(res[i]->name)) != NULL) {
            f->n_names++;
        }
    }
    return 0;
}

static void cluster_fwd_reply(void *arg,
                              int err,
                              const Weir__Response *resp,
                              const uint8_t *payload,
                              uint32_t len,
                              const struct err_detail *ed)
{
    struct cluster_fwd *f = arg;
    Weir__Response out = WEIR__RESPONSE__INIT;
    int rv = err;

    (void)payload;
    (void)len;
    if (err == WEIR_ENOT_CONTROLLER &&
        f->redirects < CLUSTER_FWD_MAX_REDIRECTS) {
        /* the connection moved to the member named (cluster_follow.c)
         * before this answer: ask there; nothing was done here */
        f->redirects++;
        if (cluster_fwd_send(f->c, f->r, f) == 0) {
            return;
        }
    }
    if (resp != NULL) {
        out = *resp;
    }
    out.active_controller = NULL; /* the client asked a broker */
    out.correlation_id = f->correlation_id;
    if (rv != 0) {
        out.error_code = rv == WEIR_ENETWORK || rv == WEIR_EREQUEST_TIMED_OUT
                             ? WEIR_ENETWORK
                             : rv;
        out.error_message = (char *)ed->msg;
    } else if (f->create &&
               resp->body_case == WEIR__RESPONSE__BODY_CREATE_TOPICS) {
        rv = cluster_fwd_names(f, resp->create_topics->topics,
                               resp->create_topics->n_topics);
    } else if (!f->create &&
               resp->body_case == WEIR__RESPONSE__BODY_DELETE_TOPICS) {
        rv = cluster_fwd_names(f, resp->delete_topics->topics,
                               resp->delete_topics->n_topics);
    }
    if (rpc_encode_response(&out, 0, &f->frame) != 0 || rv == WEIR_ENOMEM) {
        broker_respond_error(f->req, f->correlation_id, WEIR_ENOMEM,
                             "out of memory", false);
        cluster_fwd_free(f);
        return;
    }
    f->answered = true;
    if (err != 0 || cluster_fwd_visible(f)) {
        cluster_fwd_finish(f);
    }
}

/* Send the forwarded call with this broker's cluster id in it (create
 * and delete carry one), so a controller of another cluster refuses it;
 * the field is put back before r is freed (r owns its strings). */
static int cluster_fwd_send(struct cluster *c, Weir__Request *r, void *arg)
{
    char **slot = NULL;
    char *saved;
    int rv;

    if (r->body_case == WEIR__REQUEST__BODY_CREATE_TOPICS) {
        slot = &r->create_topics->cluster_id;
    } else if (r->body_case == WEIR__REQUEST__BODY_DELETE_TOPICS) {
        slot = &r->delete_topics->cluster_id;
    }
    if (slot == NULL) {
        return cconn_call(c->rpc, r, CLUSTER_FWD_WAIT_MS, cluster_fwd_reply,
                          arg);
    }
    saved = *slot;
    *slot = c->b->ident.props.cluster_id;
    rv = cconn_call(c->rpc, r, CLUSTER_FWD_WAIT_MS, cluster_fwd_reply, arg);
    *slot = saved;
    return rv;
}

void cluster_api_forward(struct broker *b,
                         struct srv_req *req,
                         Weir__Request *r)
{
    struct cluster *c = b->cluster;
    struct cluster_fwd *f;
    struct timeval tv = {CLUSTER_FWD_WAIT_MS / 1000,
                         (CLUSTER_FWD_WAIT_MS % 1000) * 1000};
    int rv = WEIR_ENOMEM;

    if (c->refusal != CLUSTER_REFUSAL_NONE) {
        /* a refused controller (another cluster or history) is asked
         * nothing: a topic it created would exist in its history only */
        broker_respond_error(req, r->correlation_id, WEIR_ECONTROLLER_REFUSED,
                             "this broker refuses its controller (another "
                             "cluster or another metadata history): not "
                             "forwarded",
                             false);
        rpc_request_free(r);
        return;
    }
    f = mem_calloc(1, sizeof(*f));
    if (f != NULL) {
        f->c = c;
        f->req = req;
        f->correlation_id = r->correlation_id;
        f->create = r->body_case == WEIR__REQUEST__BODY_CREATE_TOPICS;
        buf_init(&f->frame);
        f->timer = evtimer_new(b->base, cluster_fwd_timeout, f);
        f->next = c->fwds;
        c->fwds = f;
        rv = f->timer == NULL ? WEIR_ENOMEM : cluster_fwd_send(c, r, f);
        if (rv == 0) {
            f->r = r;
            r = NULL;
        }
    }
    if (rv != 0) {
        broker_respond_error(req, r->correlation_id, rv,
                             rv == WEIR_ENETWORK
                                 ? "controller unreachable, retry"
                                 : "out of memory",
                             false);
        if (f != NULL) {
            cluster_fwd_free(f);
        }
    } else {
        (void)event_add(f->timer, &tv);
        trace_debug("cluster", "event=forwarded call=%s peer=%s",
                    rpc_api_name(f->r->body_case), req->peer);
    }
    rpc_request_free(r);
}
