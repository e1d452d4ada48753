/* SPDX-License-Identifier: Apache-2.0 */
/* Broker wiring: dispatch of decoded requests to api/, group commit, and
 * the shared helpers handlers use to answer. */
#include "broker/broker.h"

#include <event2/buffer.h>
#include <event2/event.h>

#include "broker/api/api.h"
#include "broker/replica/repl_io.h"
#include "common/mem.h"
#include "common/rpc.h"
#include "common/trace.h"

int64_t broker_high_watermark(const struct broker *b, const struct plog *log)
{
    int64_t hw;

    if (b != NULL && b->repl != NULL &&
        repl_io_high_watermark(b->repl, log, &hw)) {
        return hw; /* cluster mode, led here: the replicated one */
    }
    return plog_config(log)->flush_policy == PLOG_FLUSH_ACK
               ? plog_durable_offset(log)
               : plog_end_offset(log);
}

void broker_respond(struct srv_req *req,
                    Weir__Response *resp,
                    struct evbuffer *payload,
                    bool close_after)
{
    struct weir_buf frame;
    size_t plen = payload != NULL ? evbuffer_get_length(payload) : 0;

    buf_init(&frame);
    if (rpc_encode_response(resp, (uint32_t)plen, &frame) != 0) {
        trace_error("api", "event=encode_failed peer=%s", req->peer);
        buf_fini(&frame);
        srv_req_respond(req, &frame, NULL, true);
        return;
    }
    srv_req_respond(req, &frame, payload, close_after);
    buf_fini(&frame);
}

/* An answer held for a quota: encoded, waiting for its timer. */
struct broker_held {
    struct broker_held *prev;
    struct broker_held *next;
    struct broker *b;
    struct srv_req *req;
    struct weir_buf frame;
    struct evbuffer *payload; /* NULL without one */
    struct event *timer;
};

static void broker_held_send(struct broker_held *h)
{
    struct broker *b = h->b;

    if (h->prev != NULL) {
        h->prev->next = h->next;
    } else {
        b->held = h->next;
    }
    if (h->next != NULL) {
        h->next->prev = h->prev;
    }
    srv_req_respond(h->req, &h->frame, h->payload, false);
    buf_fini(&h->frame);
    if (h->payload != NULL) {
        evbuffer_free(h->payload);
    }
    event_free(h->timer);
    mem_free(h);
}

static void broker_held_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    broker_held_send(arg);
}

void broker_respond_after(struct broker *b,
                          struct srv_req *req,
                          Weir__Response *resp,
                          struct evbuffer *payload,
                          uint32_t delay_ms)
{
    struct broker_held *h;
    struct timeval tv = {delay_ms / 1000, (delay_ms % 1000) * 1000};
    size_t plen = payload != NULL ? evbuffer_get_length(payload) : 0;

    h = delay_ms > 0 ? mem_calloc(1, sizeof(*h)) : NULL;
    if (h != NULL) {
        buf_init(&h->frame);
        h->payload = payload != NULL ? evbuffer_new() : NULL;
        h->timer = evtimer_new(b->base, broker_held_cb, h);
    }
    if (h == NULL || h->timer == NULL ||
        (payload != NULL && h->payload == NULL) ||
        rpc_encode_response(resp, (uint32_t)plen, &h->frame) != 0) {
        if (h != NULL) { /* out of memory: answer now rather than never */
            buf_fini(&h->frame);
            if (h->payload != NULL) {
                evbuffer_free(h->payload);
            }
            if (h->timer != NULL) {
                event_free(h->timer);
            }
            mem_free(h);
        }
        broker_respond(req, resp, payload, false);
        return;
    }
    if (payload != NULL) {
        /* file segments stay file segments (sendfile later), as in the
         * buffer they come from */
        if (!req->tls) {
            (void)evbuffer_set_flags(h->payload, EVBUFFER_FLAG_DRAINS_TO_FD);
        }
        (void)evbuffer_add_buffer(h->payload, payload);
    }
    h->b = b;
    h->req = req;
    h->next = b->held;
    if (b->held != NULL) {
        b->held->prev = h;
    }
    b->held = h;
    (void)evtimer_add(h->timer, &tv);
}

void broker_release_held(struct broker *b)
{
    while (b->held != NULL) {
        broker_held_send(b->held);
    }
}

const char *broker_quota_key(const struct srv_req *req, const Weir__Request *r)
{
    const char *p = srv_req_principal(req);

    if (p[0] != '\0') {
        return p;
    }
    return r->client_id != NULL ? r->client_id : "";
}

void broker_respond_error(struct srv_req *req,
                          uint32_t correlation_id,
                          int code,
                          const char *msg,
                          bool close_after)
{
    Weir__Response resp = WEIR__RESPONSE__INIT;

    resp.correlation_id = correlation_id;
    resp.error_code = code;
    resp.error_message = (char *)msg;
    broker_respond(req, &resp, NULL, close_after);
}

void broker_mark_dirty(struct broker *b, struct plog *log)
{
    uint32_t i;
    struct plog **d;

    for (i = 0; i < b->n_dirty; i++) {
        if (b->dirty[i] == log) {
            goto schedule;
        }
    }
    if (b->n_dirty == b->cap_dirty) {
        uint32_t cap = b->cap_dirty == 0 ? 16 : b->cap_dirty * 2;
        d = mem_realloc(b->dirty, cap * sizeof(*d));
        if (d == NULL) {
            /* cannot remember it: flush right away instead */
            struct err_detail ed;
            if (plog_flush(log, &ed) != 0) {
                trace_error("storage", "event=flush_failed dir=%s msg=\"%s\"",
                            plog_dir(log), ed.msg);
                api_produce_fail_log(b, log, WEIR_EIO, ed.msg);
            }
            goto schedule;
        }
        b->dirty = d;
        b->cap_dirty = cap;
    }
    b->dirty[b->n_dirty++] = log;
schedule:
    /* runs after the reads already pending in this loop pass, so every
     * request that arrived together shares one fsync per partition */
    event_active(b->flush_ev, EV_TIMEOUT, 0);
}

void broker_flush_dirty(struct broker *b)
{
    struct err_detail ed;
    uint32_t i;

    for (i = 0; i < b->n_dirty; i++) {
        if (plog_flush(b->dirty[i], &ed) != 0) {
            /* the records were written but may not be durable: the
             * producer gets an indefinite error and may retry */
            trace_error("storage", "event=flush_failed dir=%s msg=\"%s\"",
                        plog_dir(b->dirty[i]), ed.msg);
            api_produce_fail_log(b, b->dirty[i], WEIR_EIO, ed.msg);
        } else {
            repl_io_log_moved(b->repl, b->dirty[i]);
        }
    }
    b->n_dirty = 0;
    api_produce_complete_waits(b);
    broker_readable(b);
}

void broker_readable(struct broker *b)
{
    if (b->fetch_waits != NULL) {
        api_fetch_retry(b, false);
    }
}
