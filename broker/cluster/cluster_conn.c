/* SPDX-License-Identifier: Apache-2.0 */
/* Controller connection: frames in, frames out, a FIFO of pending calls
 * matched by correlation id. Callbacks run from the loop with the pending
 * list already detached, so a callback may issue new calls (or reset). */
#include "broker/cluster/cluster_conn.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/frame.h"
#include "common/mem.h"
#include "common/net/addr.h"
#include "common/rpc.h"
#include "common/scram.h"
#include "common/tls.h"
#include "common/trace.h"

#define CCONN_MAX_FRAME (64u * 1024 * 1024)

struct cconn_call {
    struct cconn_call *next;
    uint32_t correlation_id;
    uint64_t deadline_ms;
    cconn_reply_fn fn;
    void *arg;
};

struct cconn {
    struct event_base *base;
    char *address;
    struct bufferevent *bev; /* NULL while disconnected */
    struct event *timer;     /* deadline checks */
    struct cconn_call *head; /* oldest first */
    struct cconn_call *tail;
    uint32_t n_pending;
    uint32_t next_corr;
    SSL_CTX *tls; /* borrowed; NULL = plain */
    /* SCRAM login on every connect (cconn_use_sasl); calls made meanwhile
     * wait in `held` and go out once it succeeds */
    enum scram_mech sasl_mech; /* 0: none */
    const char *sasl_user;
    const char *sasl_password;
    bool authing;
    struct evbuffer *held;
    struct scram_client scram;
    cconn_outcome_fn outcome; /* NULL: not reported */
    void *outcome_arg;
    uint64_t not_before_ms; /* no connect before (cconn_set_address) */
};

static int cconn_send(struct cconn *c,
                      Weir__Request *req,
                      uint32_t timeout_ms,
                      cconn_reply_fn fn,
                      void *arg,
                      bool front);

static void
cconn_report(struct cconn *c, int err, const Weir__ActiveController *hint)
{
    char addr[300];

    if (c->outcome == NULL) {
        return;
    }
    /* the function may change c->address: it gets a copy */
    (void)snprintf(addr, sizeof(addr), "%s", c->address);
    c->outcome(c->outcome_arg, addr, err, hint);
}

/* Fail every pending call with err; report = tell the outcome function
 * first (after the list is detached and the socket closed, so the calls
 * it answers retry at the address it may have chosen). */
static void
cconn_fail_all_report(struct cconn *c, int err, const char *why, bool report)
{
    struct cconn_call *list = c->head;
    struct err_detail ed;

    c->head = c->tail = NULL;
    c->n_pending = 0;
    c->authing = false;
    if (c->held != NULL) {
        (void)evbuffer_drain(c->held, evbuffer_get_length(c->held));
    }
    if (c->bev != NULL) {
        bufferevent_free(c->bev);
        c->bev = NULL;
    }
    err_set(&ed, err, "controller %s: %s", c->address, why);
    if (report) {
        cconn_report(c, err == WEIR_EREQUEST_TIMED_OUT ? err : WEIR_ENETWORK,
                     NULL);
    }
    while (list != NULL) {
        struct cconn_call *next = list->next;
        list->fn(list->arg, err, NULL, NULL, 0, &ed);
        mem_free(list);
        list = next;
    }
}

static void cconn_fail_all(struct cconn *c, int err, const char *why)
{
    cconn_fail_all_report(c, err, why,
                          err != WEIR_ESASL_AUTHENTICATION_FAILED &&
                              err != WEIR_ENOMEM);
}

void cconn_reset(struct cconn *c)
{
    cconn_fail_all_report(c, WEIR_ENETWORK, "connection reset", false);
}

void cconn_on_outcome(struct cconn *c, cconn_outcome_fn fn, void *arg)
{
    c->outcome = fn;
    c->outcome_arg = arg;
}

const char *cconn_address(const struct cconn *c)
{
    return c->address;
}

int cconn_set_address(struct cconn *c,
                      const char *address,
                      uint64_t not_before_ms)
{
    char *a;

    c->not_before_ms = not_before_ms;
    if (strcmp(address, c->address) == 0) {
        return 0;
    }
    a = mem_strdup(address);
    if (a == NULL) {
        return WEIR_ENOMEM;
    }
    mem_free(c->address);
    c->address = a;
    cconn_fail_all_report(c, WEIR_ENETWORK, "the active controller moved",
                          false);
    return 0;
}

uint32_t cconn_pending(const struct cconn *c)
{
    return c->n_pending;
}

static void cconn_deliver(struct cconn *c,
                          const uint8_t *frame,
                          uint32_t len,
                          const struct frame_info *fi)
{
    struct cconn_call *call = c->head;
    struct weir_slice hdr = {frame + FRAME_PREFIX_BYTES, fi->header_len};
    Weir__Response *resp = NULL;
    struct err_detail ed;
    int rv;

    (void)len;
    err_detail_clear(&ed);
    rv = rpc_response_decode(hdr, fi->payload_len, &resp, &ed);
    if (rv != 0 || call == NULL ||
        resp->correlation_id != call->correlation_id) {
        rpc_response_free(resp);
        cconn_fail_all(c, WEIR_EMALFORMED, "unexpected response");
        return;
    }
    c->head = call->next;
    if (c->head == NULL) {
        c->tail = NULL;
    }
    c->n_pending--;
    rv = resp->error_code;
    if (rv != 0) {
        err_set(&ed, rv, "%s",
                resp->error_message != NULL && resp->error_message[0]
                    ? resp->error_message
                    : weir_err_str(rv));
    }
    if (rv == WEIR_ENOT_CONTROLLER) {
        /* may move this connection (and free the frame's buffer): the
         * answer carries no payload, so none is passed on */
        cconn_report(c, rv, resp->active_controller);
        call->fn(call->arg, rv, resp, NULL, 0, &ed);
        rpc_response_free(resp);
        mem_free(call);
        return;
    }
    if (resp->body_case != WEIR__RESPONSE__BODY_SASL_HANDSHAKE &&
        resp->body_case != WEIR__RESPONSE__BODY_SASL_AUTHENTICATE) {
        /* a login is served by every member: it shows none is active */
        cconn_report(c, 0, NULL);
    }
    call->fn(call->arg, rv, resp, frame + FRAME_PREFIX_BYTES + fi->header_len,
             fi->payload_len, &ed);
    rpc_response_free(resp);
    mem_free(call);
}

static void cconn_read_cb(struct bufferevent *bev, void *arg)
{
    struct cconn *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    struct frame_limits lim = {CCONN_MAX_FRAME, FRAME_DEFAULT_MAX_HEADER_BYTES};

    while (c->bev == bev && evbuffer_get_length(in) >= FRAME_PREFIX_BYTES) {
        uint8_t prefix[FRAME_PREFIX_BYTES];
        struct frame_info fi;
        struct err_detail ed;
        uint8_t *frame;
        size_t total;
        (void)evbuffer_copyout(in, prefix, sizeof(prefix));
        if (frame_decode_prefix(prefix, &lim, &fi, &ed) != 0) {
            cconn_fail_all(c, WEIR_EMALFORMED, "bad frame");
            return;
        }
        total = 4 + (size_t)fi.frame_len;
        if (evbuffer_get_length(in) < total) {
            return;
        }
        frame = evbuffer_pullup(in, (ev_ssize_t)total);
        if (frame == NULL) {
            cconn_fail_all(c, WEIR_ENOMEM, "out of memory");
            return;
        }
        cconn_deliver(c, frame, (uint32_t)total, &fi);
        if (c->bev == bev) {
            (void)evbuffer_drain(in, total);
        }
    }
}

static void cconn_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct cconn *c = arg;

    (void)bev;
    if (what & BEV_EVENT_CONNECTED) {
        int one = 1;
        (void)setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one,
                         sizeof(one));
        return;
    }
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        char why[300] = "connection failed";
        unsigned long e;
        if (c->tls != NULL && (what & BEV_EVENT_ERROR) &&
            (e = bufferevent_get_openssl_error(bev)) != 0) {
            char reason[256];
            ERR_error_string_n(e, reason, sizeof(reason));
            (void)snprintf(why, sizeof(why), "TLS: %s", reason);
        }
        cconn_fail_all(c, WEIR_ENETWORK, what & BEV_EVENT_EOF ? "closed" : why);
    }
}

static void cconn_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct cconn *c = arg;

    (void)fd;
    (void)what;
    if (c->head != NULL &&
        clock_now_ms(clock_system()) >= c->head->deadline_ms) {
        cconn_fail_all(c, WEIR_EREQUEST_TIMED_OUT, "request timed out");
    }
}

int cconn_new(struct event_base *base, const char *address, struct cconn **out)
{
    struct cconn *c = mem_calloc(1, sizeof(*c));
    struct timeval tv = {0, 100000};

    *out = NULL;
    if (c == NULL) {
        return WEIR_ENOMEM;
    }
    c->base = base;
    c->address = mem_strdup(address);
    c->timer = event_new(base, -1, EV_PERSIST, cconn_timer_cb, c);
    if (c->address == NULL || c->timer == NULL) {
        cconn_free(c);
        return WEIR_ENOMEM;
    }
    (void)event_add(c->timer, &tv);
    c->next_corr = 1;
    *out = c;
    return 0;
}

void cconn_free(struct cconn *c)
{
    struct cconn_call *call;

    if (c == NULL) {
        return;
    }
    if (c->bev != NULL) {
        bufferevent_free(c->bev);
    }
    while ((call = c->head) != NULL) {
        c->head = call->next;
        mem_free(call);
    }
    if (c->timer != NULL) {
        event_free(c->timer);
    }
    if (c->held != NULL) {
        evbuffer_free(c->held);
    }
    OPENSSL_cleanse(&c->scram, sizeof(c->scram));
    mem_free(c->address);
    mem_free(c);
}

/* ---- SCRAM login --------------------------------------------------- */

static void cconn_auth_fail(struct cconn *c, const char *step, const char *why)
{
    char msg[400];

    (void)snprintf(msg, sizeof(msg), "SASL login as %s failed at %s: %s",
                   c->sasl_user, step, why);
    trace_error("cluster", "event=sasl_login_failed peer=%s user=%s msg=\"%s\"",
                c->address, c->sasl_user, msg);
    cconn_fail_all(c, WEIR_ESASL_AUTHENTICATION_FAILED, msg);
}

static void
cconn_auth_send(struct cconn *c, const char *msg, cconn_reply_fn fn, bool front)
{
    Weir__Request req = WEIR__REQUEST__INIT;
    Weir__SaslAuthenticateRequest a = WEIR__SASL_AUTHENTICATE_REQUEST__INIT;

    a.auth_bytes.data = (uint8_t *)msg;
    a.auth_bytes.len = strlen(msg);
    req.body_case = WEIR__REQUEST__BODY_SASL_AUTHENTICATE;
    req.sasl_authenticate = &a;
    if (cconn_send(c, &req, 10000, fn, c, front) != 0) {
        cconn_auth_fail(c, "SaslAuthenticate", "cannot send");
    }
}

/* The SaslAuthenticate answer of a login step, or NULL once the login
 * failed (answered here) or the connection went away meanwhile. */
static const Weir__SaslAuthenticateResponse *
cconn_auth_answer(struct cconn *c,
                  int err,
                  const Weir__Response *resp,
                  const struct err_detail *ed,
                  const char *step)
{
    const Weir__SaslAuthenticateResponse *a;

    if (err != 0 || resp == NULL) {
        if (c->authing) {
            cconn_auth_fail(c, step, ed->msg);
        }
        return NULL;
    }
    a = resp->body_case == WEIR__RESPONSE__BODY_SASL_AUTHENTICATE
            ? resp->sasl_authenticate
            : NULL;
    if (a == NULL || a->error_code != 0) {
        cconn_auth_fail(c, step,
                        a != NULL ? a->error_message : "unexpected answer");
        return NULL;
    }
    return a;
}

/* server-final: check the server's signature, then release held calls */
static void cconn_auth_final_cb(void *arg,
                                int err,
                                const Weir__Response *resp,
                                const uint8_t *payload,
                                uint32_t payload_len,
                                const struct err_detail *ed)
{
    struct cconn *c = arg;
    const Weir__SaslAuthenticateResponse *a;
    struct err_detail ved;

    (void)payload;
    (void)payload_len;
    a = cconn_auth_answer(c, err, resp, ed, "the final message");
    if (a == NULL) {
        return;
    }
    if (scram_client_verify(&c->scram, (const char *)a->auth_bytes.data,
                            a->auth_bytes.len, &ved) != 0) {
        cconn_auth_fail(c, "the server's signature", ved.msg);
        return;
    }
    c->authing = false;
    if (bufferevent_write_buffer(c->bev, c->held) != 0) {
        cconn_fail_all(c, WEIR_ENOMEM, "out of memory");
    }
}

/* server-first -> client-final, ahead of every held call */
static void cconn_auth_first_cb(void *arg,
                                int err,
                                const Weir__Response *resp,
                                const uint8_t *payload,
                                uint32_t payload_len,
                                const struct err_detail *ed)
{
    struct cconn *c = arg;
    const Weir__SaslAuthenticateResponse *a;
    char out[SCRAM_MAX_MESSAGE];
    struct err_detail fed;

    (void)payload;
    (void)payload_len;
    a = cconn_auth_answer(c, err, resp, ed, "the first message");
    if (a == NULL) {
        return;
    }
    if (scram_client_final(&c->scram, c->sasl_password,
                           (const char *)a->auth_bytes.data, a->auth_bytes.len,
                           out, sizeof(out), &fed) != 0) {
        cconn_auth_fail(c, "the server's first message", fed.msg);
        return;
    }
    cconn_auth_send(c, out, cconn_auth_final_cb, true);
    OPENSSL_cleanse(out, sizeof(out));
}

static void cconn_auth_handshake_cb(void *arg,
                                    int err,
                                    const Weir__Response *resp,
                                    const uint8_t *payload,
                                    uint32_t payload_len,
                                    const struct err_detail *ed)
{
    struct cconn *c = arg;
    const Weir__SaslHandshakeResponse *h;

    (void)payload;
    (void)payload_len;
    if (err != 0 || resp == NULL) {
        if (c->authing) {
            cconn_auth_fail(c, "SaslHandshake", ed->msg);
        }
        return;
    }
    h = resp->body_case == WEIR__RESPONSE__BODY_SASL_HANDSHAKE
            ? resp->sasl_handshake
            : NULL;
    if (h == NULL || h->error_code != 0) {
        cconn_auth_fail(c, "SaslHandshake",
                        h != NULL ? h->error_message : "unexpected answer");
    }
}

/* Handshake and client-first go out at once (the server takes them in
 * order); client-final waits for the server's first message. */
static void cconn_auth_start(struct cconn *c)
{
    Weir__Request req = WEIR__REQUEST__INIT;
    Weir__SaslHandshakeRequest h = WEIR__SASL_HANDSHAKE_REQUEST__INIT;
    char first[SCRAM_MAX_MESSAGE];
    struct err_detail ed;

    c->authing = true;
    h.mechanism = (char *)scram_mech_name(c->sasl_mech);
    req.body_case = WEIR__REQUEST__BODY_SASL_HANDSHAKE;
    req.sasl_handshake = &h;
    if (cconn_send(c, &req, 10000, cconn_auth_handshake_cb, c, false) != 0) {
        cconn_auth_fail(c, "SaslHandshake", "cannot send");
        return;
    }
    if (scram_client_first(&c->scram, c->sasl_mech, c->sasl_user, NULL, first,
                           sizeof(first), &ed) != 0) {
        cconn_auth_fail(c, "the first message", ed.msg);
        return;
    }
    cconn_auth_send(c, first, cconn_auth_first_cb, false);
}

void cconn_use_sasl(struct cconn *c,
                    const char *mechanism,
                    const char *user,
                    const char *password)
{
    c->sasl_mech = user != NULL ? scram_mech_parse(mechanism) : 0;
    c->sasl_user = user;
    c->sasl_password = password;
}

static int cconn_connect(struct cconn *c)
{
    struct sockaddr_storage ss;
    struct err_detail ed;
    socklen_t len;

    if (addr_parse(c->address, &ss, &len, &ed) != 0) {
        return WEIR_ENETWORK;
    }
    if (c->tls != NULL) {
        char host[256];
        const char *colon = strrchr(c->address, ':');
        size_t n = colon != NULL ? (size_t)(colon - c->address) : 0;
        const char *h = c->address;
        SSL *ssl;
        if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
            h++;
            n -= 2;
        }
        if (n == 0 || n >= sizeof(host)) {
            return WEIR_ENETWORK;
        }
        memcpy(host, h, n);
        host[n] = '\0';
        ssl = tls_client_new(c->tls, host);
        if (ssl == NULL) {
            return WEIR_ENOMEM;
        }
        /* the bufferevent owns the session from here */
        c->bev = bufferevent_openssl_socket_new(c->base, -1, ssl,
                                                BUFFEREVENT_SSL_CONNECTING,
                                                BEV_OPT_CLOSE_ON_FREE);
        if (c->bev != NULL) {
            bufferevent_openssl_set_allow_dirty_shutdown(c->bev, 1);
        }
    } else {
        c->bev = bufferevent_socket_new(c->base, -1, BEV_OPT_CLOSE_ON_FREE);
    }
    if (c->bev == NULL) {
        return WEIR_ENOMEM;
    }
    bufferevent_setcb(c->bev, cconn_read_cb, NULL, cconn_event_cb, c);
    if (bufferevent_socket_connect(c->bev, (struct sockaddr *)&ss, (int)len) !=
            0 ||
        bufferevent_enable(c->bev, EV_READ | EV_WRITE) != 0) {
        bufferevent_free(c->bev);
        c->bev = NULL;
        return WEIR_ENETWORK;
    }
    if (c->sasl_mech != 0) {
        if (c->held == NULL && (c->held = evbuffer_new()) == NULL) {
            bufferevent_free(c->bev);
            c->bev = NULL;
            return WEIR_ENOMEM;
        }
        cconn_auth_start(c);
        if (c->bev == NULL) {
            return WEIR_ESASL_AUTHENTICATION_FAILED;
        }
    }
    return 0;
}

void cconn_use_tls(struct cconn *c, SSL_CTX *tls)
{
    c->tls = tls;
}

int cconn_call(struct cconn *c,
               Weir__Request *req,
               uint32_t timeout_ms,
               cconn_reply_fn fn,
               void *arg)
{
    int rv;

    if (c->bev == NULL) {
        if (c->not_before_ms != 0 &&
            clock_now_ms(clock_system()) < c->not_before_ms) {
            return WEIR_ENETWORK; /* backing off between members */
        }
        rv = cconn_connect(c);
        if (rv == WEIR_ENETWORK) {
            cconn_report(c, rv, NULL); /* e.g. a name that does not resolve */
        }
        if (rv != 0) {
            return rv;
        }
    }
    return cconn_send(c, req, timeout_ms, fn, arg, false);
}

/* Encode and queue one call: at the tail of the FIFO (its bytes held while
 * a login runs), or, front (the login's final message), at the head with
 * its bytes written at once. */
static int cconn_send(struct cconn *c,
                      Weir__Request *req,
                      uint32_t timeout_ms,
                      cconn_reply_fn fn,
                      void *arg,
                      bool front)
{
    bool login = req->body_case == WEIR__REQUEST__BODY_SASL_HANDSHAKE ||
                 req->body_case == WEIR__REQUEST__BODY_SASL_AUTHENTICATE;
    struct cconn_call *call;
    struct weir_buf b;
    uint32_t saved_corr;
    int rv;

    call = mem_calloc(1, sizeof(*call));
    if (call == NULL) {
        return WEIR_ENOMEM;
    }
    /* a forwarded request keeps its own id once sent: restore it */
    saved_corr = req->correlation_id;
    req->correlation_id = c->next_corr++;
    call->correlation_id = req->correlation_id;
    buf_init(&b);
    rv = rpc_encode_request(req, 0, &b);
    req->correlation_id = saved_corr;
    if (rv == 0 && ((c->authing && !login)
                        ? evbuffer_add(c->held, b.data, b.len)
                        : bufferevent_write(c->bev, b.data, b.len)) != 0) {
        rv = WEIR_ENOMEM;
    }
    buf_fini(&b);
    if (rv != 0) {
        mem_free(call);
        return rv;
    }
    call->deadline_ms = clock_now_ms(clock_system()) + timeout_ms;
    call->fn = fn;
    call->arg = arg;
    if (front) {
        call->next = c->head;
        c->head = call;
        if (c->tail == NULL) {
            c->tail = call;
        }
    } else {
        if (c->tail != NULL) {
            c->tail->next = call;
        } else {
            c->head = call;
        }
        c->tail = call;
    }
    c->n_pending++;
    return 0;
}
