/* SPDX-License-Identifier: Apache-2.0 */
/* CreateTopics and DeleteTopics. */
#include <string.h>

#include "broker/api/api.h"
#include "broker/cluster/cluster.h"
#include "common/mem.h"
#include "common/rpc.h"
#include "common/trace.h"

struct topic_results {
    Weir__TopicResult *res;
    Weir__TopicResult **ptrs;
    struct err_detail *eds;
};

static int topic_results_alloc(struct topic_results *t, size_t n)
{
    t->res = mem_calloc(n + 1, sizeof(*t->res));
    t->ptrs = mem_calloc(n + 1, sizeof(*t->ptrs));
    t->eds = mem_calloc(n + 1, sizeof(*t->eds));
    return t->res != NULL && t->ptrs != NULL && t->eds != NULL ? 0
                                                               : WEIR_ENOMEM;
}

static void topic_results_free(struct topic_results *t)
{
    mem_free(t->res);
    mem_free(t->ptrs);
    mem_free(t->eds);
}

static void
topic_result_set(struct topic_results *t, size_t i, char *name, int rv)
{
    weir__topic_result__init(&t->res[i]);
    t->res[i].name = name;
    t->res[i].error_code = rv;
    t->res[i].error_message = rv != 0 ? t->eds[i].msg : "";
    t->ptrs[i] = &t->res[i];
}

static int topics_create_one(struct broker *b,
                             const Weir__CreateTopic *ct,
                             bool validate_only,
                             struct err_detail *ed)
{
    struct logmgr_kv kv[RPC_MAX_CONFIGS];
    int32_t parts = ct->partitions;
    size_t i;

    if (ct->n_configs > RPC_MAX_CONFIGS) {
        return err_set(ed, WEIR_EINVALID_CONFIG, "too many configs");
    }
    for (i = 0; i < ct->n_configs; i++) {
        kv[i].key = ct->configs[i]->key;
        kv[i].value = ct->configs[i]->value;
    }
    if (parts == 0) {
        parts = (int32_t)b->cfg.default_partitions;
    }
    return logmgr_create_topic(b->logs, ct->name, parts, ct->replication_factor,
                               kv, (uint32_t)ct->n_configs, validate_only,
                               clock_wall_ms(b->clock), ed);
}

void api_create_topics(struct broker *b, struct srv_req *req, Weir__Request *r)
{
    const Weir__CreateTopicsRequest *cr = r->create_topics;
    Weir__Response resp = WEIR__RESPONSE__INIT;
    Weir__CreateTopicsResponse body = WEIR__CREATE_TOPICS_RESPONSE__INIT;
    struct topic_results t;
    size_t i;
    int rv;

    if (b->cluster != NULL) {
        cluster_api_forward(b, req, r); /* the controller decides */
        return;
    }
    if (topic_results_alloc(&t, cr->n_topics) != 0) {
        topic_results_free(&t);
        broker_respond_error(req, r->correlation_id, WEIR_ENOMEM,
                             "out of memory", false);
        rpc_request_free(r);
        return;
    }
    for (i = 0; i < cr->n_topics; i++) {
        const Weir__CreateTopic *ct = cr->topics[i];
        err_detail_clear(&t.eds[i]);
        rv = topics_create_one(b, ct, cr->validate_only, &t.eds[i]);
        if (rv == 0 && !cr->validate_only) {
            trace_info("api",
                       "event=topic_created topic=%s partitions=%d "
                       "peer=%s",
                       ct->name, ct->partitions, req->peer);
        } else if (rv != 0) {
            trace_info("api",
                       "event=topic_create_refused error=%s "
                       "msg=\"%s\" peer=%s",
                       weir_err_name(rv), t.eds[i].msg, req->peer);
        }
        topic_result_set(&t, i, ct->name, rv);
    }
    body.topics = t.ptrs;
    body.n_topics = cr->n_topics;
    resp.correlation_id = r->correlation_id;
    resp.body_case = WEIR__RESPONSE__BODY_CREATE_TOPICS;
    resp.create_topics = &body;
    broker_respond(req, &resp, NULL, false);
    topic_results_free(&t);
    rpc_request_free(r);
}

void api_delete_topics(struct broker *b, struct srv_req *req, Weir__Request *r)
{
    const Weir__DeleteTopicsRequest *dr = r->delete_topics;
    Weir__Response resp = WEIR__RESPONSE__INIT;
    Weir__DeleteTopicsResponse body = WEIR__DELETE_TOPICS_RESPONSE__INIT;
    struct topic_results t;
    size_t i;
    int rv;

    if (b->cluster != NULL) {
        cluster_api_forward(b, req, r);
        return;
    }
    if (topic_results_alloc(&t, dr->n_names) != 0) {
        topic_results_free(&t);
        broker_respond_error(req, r->correlation_id, WEIR_ENOMEM,
                             "out of memory", false);
        rpc_request_free(r);
        return;
    }
    /* nothing may keep pointing at a log that is about to go: finish the
     * pending group commit first, then let parked fetches see it gone */
    broker_flush_dirty(b);
    for (i = 0; i < dr->n_names; i++) {
        err_detail_clear(&t.eds[i]);
        rv = logmgr_delete_topic(b->logs, dr->names[i], clock_wall_ms(b->clock),
                                 &t.eds[i]);
        if (rv == 0) {
            idem_io_drop_topic(b->idem, dr->names[i]);
            trace_info("api", "event=topic_deleted topic=%s peer=%s",
                       dr->names[i], req->peer);
        }
        topic_result_set(&t, i, dr->names[i], rv);
    }
    broker_readable(b);
    body.topics = t.ptrs;
    body.n_topics = dr->n_names;
    resp.correlation_id = r->correlation_id;
    resp.body_case = WEIR__RESPONSE__BODY_DELETE_TOPICS;
    resp.delete_topics = &body;
    broker_respond(req, &resp, NULL, false);
    topic_results_free(&t);
    rpc_request_free(r);
}
