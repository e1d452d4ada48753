/* SPDX-License-Identifier: Apache-2.0 */
#include "client/call.h"

#include <stdio.h>
#include <string.h>

#include "common/rpc.h"

/* Lives on call_sync's stack; the callback always runs before call_sync
 * returns, because call_sync closes the connection when it gives up. */
struct call_wait {
    bool done;
    int err;
    char msg[512];
    char hint[300]; /* NOT_CONTROLLER: the active controller named */
    Weir__Response *resp;
};

static void call_on_reply(void *arg, struct conn_reply *r)
{
    struct call_wait *w = arg;

    w->done = true;
    w->err = r->err;
    if (r->err != 0) {
        (void)snprintf(w->msg, sizeof(w->msg), "%s", r->err_msg);
        if (r->err == WEIR_ENOT_CONTROLLER && r->resp != NULL &&
            r->resp->active_controller != NULL &&
            r->resp->active_controller->address != NULL) {
            (void)snprintf(w->hint, sizeof(w->hint), "%s",
                           r->resp->active_controller->address);
        }
        return;
    }
    w->resp = r->resp;
    r->resp = NULL;
}

bool call_is_transport_err(int err)
{
    return err == WEIR_ENETWORK || err == WEIR_EREQUEST_TIMED_OUT ||
           err == WEIR_ESHUTTING_DOWN;
}

int call_sync(struct pool *p,
              const char *host,
              uint16_t port,
              enum pool_lane lane,
              Weir__Request *req,
              uint32_t timeout_ms,
              Weir__Response **out,
              struct err_detail *ed)
{
    char hint[8];

    return call_sync_hint(p, host, port, lane, req, timeout_ms, out, hint,
                          sizeof(hint), ed);
}

int call_sync_hint(struct pool *p,
                   const char *host,
                   uint16_t port,
                   enum pool_lane lane,
                   Weir__Request *req,
                   uint32_t timeout_ms,
                   Weir__Response **out,
                   char *hint,
                   size_t hint_cap,
                   struct err_detail *ed)
{
    struct call_wait w = {0};
    struct conn *c;
    int rv;

    *out = NULL;
    hint[0] = '\0';
    if (pool_in_poll(p)) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "synchronous call made from inside a callback");
    }
    rv = pool_get(p, host, port, lane, &c, ed);
    if (rv != 0) {
        return rv;
    }
    rv = conn_send(c, req, NULL, 0, true, timeout_ms, pool_now_ms(p),
                   call_on_reply, &w, ed);
    if (rv != 0) {
        return rv;
    }
    while (!w.done) {
        rv = pool_poll(p, NULL, 0, -1);
        if (rv != 0) {
            return err_set(ed, rv, "poll failed: %s", weir_err_str(rv));
        }
        if (!w.done && pool_interrupted(p)) {
            /* The reply would arrive later with nobody waiting on this
             * stack frame: close the connection so the callback runs now. */
            conn_close(c, WEIR_EREQUEST_TIMED_OUT, "interrupted by a signal");
        }
    }
    if (w.err != 0) {
        if (w.hint[0] != '\0' && strlen(w.hint) < hint_cap) {
            memcpy(hint, w.hint, strlen(w.hint) + 1);
        }
        return err_set(ed, w.err, "%s", w.msg);
    }
    *out = w.resp;
    return 0;
}
