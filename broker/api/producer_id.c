/* SPDX-License-Identifier: Apache-2.0 */
/* InitProducerId: a fresh producer id for an idempotent producer. Alone, a
 * broker takes ids from blocks it reserves in its data directory. In a
 * cluster, blocks come from the controller (AllocateProducerIds, logged
 * there before the answer), so no two brokers and no two incarnations of
 * one ever give the same id; requests that arrive while a block is being
 * fetched wait for it (bounded by the controller call's timeout). */
#include <string.h>

#include "broker/api/api.h"
#include "broker/cluster/cluster.h"
#include "common/mem.h"
#include "common/rpc.h"
#include "common/trace.h"

/* An InitProducerId waiting for the controller's block. */
struct pid_wait {
    struct pid_wait *next;
    struct srv_req *req;
    uint32_t correlation_id;
};

static void pid_answer(struct srv_req *req, uint32_t correlation_id, int64_t id)
{
    Weir__Response resp = WEIR__RESPONSE__INIT;
    Weir__InitProducerIdResponse body = WEIR__INIT_PRODUCER_ID_RESPONSE__INIT;

    trace_debug("idem", "event=producer_id producer_id=%lld peer=%s",
                (long long)id, req->peer);
    /* a fresh id per producer: epoch 0, and epochs only move when that
     * producer restarts its sequences on a partition (client side) */
    body.producer_id = id;
    body.producer_epoch = 0;
    resp.correlation_id = correlation_id;
    resp.body_case = WEIR__RESPONSE__BODY_INIT_PRODUCER_ID;
    resp.init_producer_id = &body;
    broker_respond(req, &resp, NULL, false);
}

static void pid_fail_waits(struct broker *b, int code, const char *msg)
{
    struct pid_wait *w;

    while ((w = b->pid_waits) != NULL) {
        b->pid_waits = w->next;
        broker_respond_error(w->req, w->correlation_id, code, msg, false);
        mem_free(w);
    }
}

static void pid_ask(struct broker *b);

static void
pid_on_block(void *arg, int err, const char *msg, int64_t first, int64_t count)
{
    struct broker *b = arg;
    struct pid_wait **tail;
    struct pid_wait *w;
    int64_t id;

    b->pid_asking = false;
    if (err != 0) {
        trace_warn("idem", "event=producer_ids_refused error=%s msg=\"%s\"",
                   weir_err_name(err), msg);
        /* retriable for the client: it asks again after its backoff */
        pid_fail_waits(
            b, weir_err_retriable(err) ? err : WEIR_ELEADER_NOT_AVAILABLE, msg);
        return;
    }
    trace_info("idem", "event=producer_ids_block first=%lld count=%lld",
               (long long)first, (long long)count);
    idem_pid_give(&b->pids, first, count);
    /* answer in arrival order (the list is newest first) */
    while (b->pid_waits != NULL) {
        tail = &b->pid_waits;
        while ((*tail)->next != NULL) {
            tail = &(*tail)->next;
        }
        w = *tail;
        if (!idem_pid_take(&b->pids, &id)) {
            pid_ask(b); /* more waiters than the block held */
            return;
        }
        *tail = NULL;
        pid_answer(w->req, w->correlation_id, id);
        mem_free(w);
    }
}

static void pid_ask(struct broker *b)
{
    int rv;

    if (b->pid_asking) {
        return;
    }
    rv = cluster_allocate_producer_ids(b->cluster, IDEM_PID_BLOCK_SIZE,
                                       pid_on_block, b);
    if (rv != 0) {
        pid_fail_waits(b, rv == WEIR_ENOMEM ? rv : WEIR_ELEADER_NOT_AVAILABLE,
                       "cannot reach the controller for producer ids");
        return;
    }
    b->pid_asking = true;
}

void api_init_producer_id(struct broker *b,
                          struct srv_req *req,
                          Weir__Request *r)
{
    struct err_detail ed;
    struct pid_wait *w;
    int64_t id;
    int rv;

    if (b->cluster != NULL) {
        if (idem_pid_take(&b->pids, &id)) {
            pid_answer(req, r->correlation_id, id);
            rpc_request_free(r);
            return;
        }
        w = mem_calloc(1, sizeof(*w));
        if (w == NULL) {
            broker_respond_error(req, r->correlation_id, WEIR_ENOMEM,
                                 "out of memory", false);
            rpc_request_free(r);
            return;
        }
        w->req = req;
        w->correlation_id = r->correlation_id;
        w->next = b->pid_waits;
        b->pid_waits = w;
        rpc_request_free(r);
        pid_ask(b);
        return;
    }
    err_detail_clear(&ed);
    rv = idem_pid_next(&b->pids, &id, &ed);
    if (rv != 0) {
        trace_error("idem", "event=producer_id_failed msg=\"%s\" peer=%s",
                    ed.msg, req->peer);
        broker_respond_error(req, r->correlation_id, rv, ed.msg, false);
        rpc_request_free(r);
        return;
    }
    pid_answer(req, r->correlation_id, id);
    rpc_request_free(r);
}

void api_producer_id_shutdown(struct broker *b)
{
    pid_fail_waits(b, WEIR_ESHUTTING_DOWN, "the broker is shutting down");
    b->pid_asking = false;
}
