/* SPDX-License-Identifier: Apache-2.0 */
#include "common/net/srv.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/frame.h"
#include "common/mem.h"
#include "common/net/addr.h"
#include "common/rpc.h"
#include "common/tls.h"
#include "common/trace.h"

/* Stop reading requests while this much response data waits to be sent:
 * a client that does not read its responses cannot make the broker buffer
 * without bound. */
#define SRV_OUTPUT_LIMIT_BYTES    (16u * 1024 * 1024)
#define SRV_MAX_SINGLE_READ_BYTES (256 * 1024)

struct srv_conn {
    struct srv *srv;
    struct bufferevent *bev;
    char peer[64];
    char ip[48];
    char principal[512]; /* SASL principal, or the TLS client certificate
                            subject, once known */
    bool principal_known;
    bool authenticated;   /* by srv_req_authenticate */
    void *auth;           /* the handler's authentication state */
    struct srv_req *head; /* oldest request not yet written out */
    struct srv_req *tail;
    uint32_t n_inflight;
    uint32_t next_seq;
    bool have_prefix; /* frame below has been decoded */
    struct frame_info frame;
    bool in_read;     /* inside conn_process: do not recurse */
    bool read_paused; /* EV_READ disabled for back-pressure */
    bool close_after_write;
    bool closed;
    bool tagged;
    int64_t tag_id;
    int64_t tag_epoch;
    struct event *frame_timer;
    struct event *resume_ev;
    struct evbuffer_cb_entry *out_cb; /* keeps srv->out_total */
    struct srv_conn *prev;
    struct srv_conn *next;
};

struct srv {
    struct event_base *base;
    struct evconnlistener *lev;
    struct srv_config cfg;
    struct frame_limits limits;
    srv_request_fn on_request;
    void *arg;
    srv_lost_fn on_lost;
    void *lost_arg;
    struct srv_conn *conns;
    uint32_t n_conns;
    uint16_t port;
    uint64_t refused;
    uint64_t tls_failures;
    uint64_t tls_cert_refusals; /* client certificates that did not verify */
    uint64_t out_total;         /* bytes queued on every connection's output */
    uint64_t out_paused;        /* times a connection waited for out_total */
    uint64_t out_shed;          /* connections closed for out_total */
    bool out_over;              /* out_total > max_output_bytes */
    struct event *shed_ev;
};

static void conn_process(struct srv_conn *c);
static void conn_close(struct srv_conn *c, const char *why);

static void req_free(struct srv_req *req)
{
    if (req->out != NULL) {
        evbuffer_free(req->out);
    }
    mem_free((void *)(uintptr_t)req->header.p);
    mem_free(req);
}

static void conn_update_read(struct srv_conn *c)
{
    struct srv *s = c->srv;
    struct evbuffer *out = bufferevent_get_output(c->bev);
    size_t pending = evbuffer_get_length(out);
    /* past the server-wide limit no connection is read until the
     * connections holding the most unread answers have been closed
     * (srv_shed_cb, later in the same loop pass): clients that do not
     * read cannot make the server buffer without bound between them */
    bool over_all = s->out_over;
    bool pause = c->close_after_write ||
                 c->n_inflight >= s->cfg.max_inflight_per_conn ||
                 pending > SRV_OUTPUT_LIMIT_BYTES || over_all;

    if (over_all && !c->read_paused && (s->out_paused++ % 1000) == 0) {
        trace_warn("net",
                   "event=output_limit peer=%s queued_total=%llu max=%llu "
                   "paused_total=%llu",
                   c->peer, (unsigned long long)s->out_total,
                   (unsigned long long)s->cfg.max_output_bytes,
                   (unsigned long long)s->out_paused);
    }
    if (pause && !c->read_paused) {
        (void)bufferevent_disable(c->bev, EV_READ);
        c->read_paused = true;
    } else if (!pause && c->read_paused) {
        (void)bufferevent_enable(c->bev, EV_READ);
        c->read_paused = false;
        /* frames may already sit in the input buffer; EV_READ alone would
         * not call us again for them */
        event_active(c->resume_ev, EV_TIMEOUT, 0);
    }
}

/* Move finished responses, in order, to the socket's output buffer. */
static void conn_flush_ready(struct srv_conn *c)
{
    struct evbuffer *out = bufferevent_get_output(c->bev);
    struct srv_req *r;

    while (c->head != NULL && c->head->done) {
        r = c->head;
        c->head = r->next;
        if (c->head == NULL) {
            c->tail = NULL;
        }
        c->n_inflight--;
        if (r->out != NULL) {
            (void)evbuffer_add_buffer(out, r->out);
        }
        if (r->close_after) {
            c->close_after_write = true;
        }
        req_free(r);
        if (c->close_after_write) {
            break;
        }
    }
    conn_update_read(c);
}

static void req_complete(struct srv_req *req)
{
    struct srv_conn *c = req->conn;

    req->done = true;
    if (c == NULL) {
        req_free(req);
        return;
    }
    conn_flush_ready(c);
}

void srv_req_respond(struct srv_req *req,
                     const struct weir_buf *frame,
                     struct evbuffer *payload,
                     bool close_after)
{
    if (req->conn == NULL) {
        if (payload != NULL) {
            (void)evbuffer_drain(payload, evbuffer_get_length(payload));
        }
        req_free(req);
        return;
    }
    req->out = evbuffer_new();
    if (req->out == NULL ||
        evbuffer_add(req->out, frame->data, frame->len) != 0 ||
        (payload != NULL && evbuffer_add_buffer(req->out, payload) != 0)) {
        /* cannot answer in order: the client would misread later replies */
        req->close_after = true;
        if (req->out != NULL) {
            evbuffer_free(req->out);
            req->out = NULL;
        }
    }
    req->close_after = req->close_after || close_after;
    req_complete(req);
}

void srv_req_finish(struct srv_req *req)
{
    req_complete(req);
}

static void conn_frame_error(struct srv_conn *c, int code, const char *msg)
{
    Weir__Response resp = WEIR__RESPONSE__INIT;
    struct weir_buf b;

    /* No correlation id can be known from a broken prefix, so the answer
     * carries 0 and the connection closes after it. */
    resp.error_code = code;
    resp.error_message = (char *)msg;
    buf_init(&b);
    if (rpc_encode_response(&resp, 0, &b) == 0) {
        (void)bufferevent_write(c->bev, b.data, b.len);
    }
    buf_fini(&b);
    trace_warn("net", "event=bad_frame peer=%s error=%s msg=\"%s\"", c->peer,
               weir_err_name(code), msg);
    c->close_after_write = true;
    conn_update_read(c);
}

static const char *conn_principal(struct srv_conn *c)
{
    SSL *ssl;

    if (!c->principal_known) {
        ssl = c->srv->cfg.tls != NULL ? bufferevent_openssl_get_ssl(c->bev)
                                      : NULL;
        if (ssl != NULL) {
            tls_peer_subject(ssl, c->principal, sizeof(c->principal));
        }
        c->principal_known = true;
    }
    return c->principal;
}

/* A verified client certificate authenticates as its subject. */
static bool conn_authenticated(struct srv_conn *c)
{
    return c->authenticated || conn_principal(c)[0] != '\0';
}

/* A ClientHello's record header (handshake, version 3.x) read as a frame
 * prefix is a huge length: say what it is instead. */
static bool srv_is_tls_hello(const struct srv_conn *c, const uint8_t *prefix)
{
    return c->srv->cfg.tls == NULL && prefix[0] == 22 && prefix[1] == 3 &&
           prefix[2] <= 4;
}

/* Returns false when no further frame can be taken now. */
static bool conn_take_frame(struct srv_conn *c)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);
    size_t have = evbuffer_get_length(in);
    struct err_detail ed;
    struct frame_limits lim;
    struct srv_req *req;
    uint8_t prefix[FRAME_PREFIX_BYTES];
    uint8_t *mem;
    size_t body;

    if (!c->have_prefix) {
        if (have < FRAME_PREFIX_BYTES) {
            return false;
        }
        (void)evbuffer_copyout(in, prefix, sizeof(prefix));
        err_detail_clear(&ed);
        lim = c->srv->limits;
        if (c->srv->cfg.require_auth && !conn_authenticated(c) &&
            c->srv->cfg.pre_auth_max_frame_bytes < lim.max_frame_bytes) {
            /* strangers get small frames only */
            lim.max_frame_bytes = c->srv->cfg.pre_auth_max_frame_bytes;
        }
        if (frame_decode_prefix(prefix, &lim, &c->frame, &ed) != 0) {
            conn_frame_error(c, ed.code,
                             srv_is_tls_hello(c, prefix)
                                 ? "a TLS handshake on a plain-TCP "
                                   "listener: the client speaks TLS"
                                 : ed.msg);
            return false;
        }
        c->have_prefix = true;
    }
    body = (size_t)c->frame.frame_len - 4;
    if (have < FRAME_PREFIX_BYTES + body) {
        /* wake us only once the whole frame is in */
        bufferevent_setwatermark(c->bev, EV_READ, FRAME_PREFIX_BYTES + body, 0);
        return false;
    }
    bufferevent_setwatermark(c->bev, EV_READ, 0, 0);
    req = mem_calloc(1, sizeof(*req));
    mem = mem_malloc(body);
    if (req == NULL || mem == NULL) {
        mem_free(req);
        mem_free(mem);
        conn_frame_error(c, WEIR_ENOMEM, "out of memory for a request");
        return false;
    }
    (void)evbuffer_drain(in, FRAME_PREFIX_BYTES);
    (void)evbuffer_remove(in, mem, body);
    c->have_prefix = false;
    req->conn = c;
    req->seq = c->next_seq++;
    req->header.p = mem;
    req->header.len = c->frame.header_len;
    req->payload = mem + c->frame.header_len;
    req->payload_len = c->frame.payload_len;
    req->received_us = clock_mono_us();
    req->peer = c->peer;
    req->tls = c->srv->cfg.tls != NULL;
    if (c->tail != NULL) {
        c->tail->next = req;
    } else {
        c->head = req;
    }
    c->tail = req;
    c->n_inflight++;
    c->srv->on_request(c->srv->arg, req);
    return !c->closed;
}

static void conn_process(struct srv_conn *c)
{
    struct evbuffer *in;

    if (c->in_read || c->closed) {
        return;
    }
    c->in_read = true;
    for (;;) {
        conn_update_read(c);
        if (c->read_paused || c->closed) {
            break;
        }
        if (!conn_take_frame(c)) {
            break;
        }
    }
    c->in_read = false;
    if (c->closed) {
        return;
    }
    in = bufferevent_get_input(c->bev);
    if (evbuffer_get_length(in) > 0 && !c->close_after_write) {
        struct timeval tv = {c->srv->cfg.frame_timeout_ms / 1000,
                             (c->srv->cfg.frame_timeout_ms % 1000) * 1000};
        if (!evtimer_pending(c->frame_timer, NULL)) {
            (void)evtimer_add(c->frame_timer, &tv);
        }
    } else {
        (void)evtimer_del(c->frame_timer);
    }
}

static void conn_read_cb(struct bufferevent *bev, void *arg)
{
    (void)bev;
    conn_process(arg);
}

static void conn_resume_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    conn_process(arg);
}

static void conn_write_cb(struct bufferevent *bev, void *arg)
{
    struct srv_conn *c = arg;

    if (c->close_after_write &&
        evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
        conn_close(c, "closed after error");
        return;
    }
    conn_update_read(c);
}

static void conn_frame_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
    struct srv_conn *c = arg;

    (void)fd;
    (void)what;
    trace_warn("net", "event=frame_timeout peer=%s timeout_ms=%u", c->peer,
               c->srv->cfg.frame_timeout_ms);
    conn_close(c, "partial frame timed out");
}

/* A TLS connection failed (handshake refused: no client certificate, an
 * old protocol version, plain text on a TLS port): say why. */
static void srv_log_tls_error(struct srv_conn *c)
{
    SSL *ssl = bufferevent_openssl_get_ssl(c->bev);
    long v = ssl != NULL ? SSL_get_verify_result(ssl) : X509_V_OK;
    unsigned long e;
    char why[256] = "";
    size_t n;

    while ((e = bufferevent_get_openssl_error(c->bev)) != 0) {
        if (ERR_GET_LIB(e) != 0) {
            ERR_error_string_n(e, why, sizeof(why));
        }
    }
    /* a client certificate that did not verify: say why (unknown CA,
     * expired...), which "certificate verify failed" alone does not */
    n = strlen(why);
    if (v != X509_V_OK && n + 4 < sizeof(why)) {
        (void)snprintf(why + n, sizeof(why) - n, "%s(%s)", n > 0 ? " " : "",
                       X509_verify_cert_error_string(v));
    }
    /* a refused client certificate (a quorum member, a broker or client
     * with the wrong CA) is an operator's matter: the 1st, 2nd, 4th... */
    if (v != X509_V_OK) {
        uint64_t k = ++c->srv->tls_cert_refusals;
        if ((k & (k - 1)) == 0) {
            trace_warn("net",
                       "event=tls_client_cert_refused peer=%s "
                       "subject=\"%s\" reason=\"%s\" refused_total=%llu",
                       c->peer, ssl != NULL ? tls_refused_subject(ssl) : "",
                       why, (unsigned long long)k);
        }
        return;
    }
    /* one line per 100 failures: a scanner must not flood the log */
    if ((c->srv->tls_failures++ % 100) == 0) {
        trace_info("net",
                   "event=tls_error peer=%s reason=\"%s\" failures_total=%llu",
                   c->peer, why[0] != '\0' ? why : "connection reset",
                   (unsigned long long)c->srv->tls_failures);
    }
}

static void conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct srv_conn *c = arg;

    (void)bev;
    if (what & BEV_EVENT_TIMEOUT) {
        trace_info("net", "event=idle_close peer=%s idle_ms=%u", c->peer,
                   c->srv->cfg.idle_timeout_ms);
        conn_close(c, "idle");
    } else if (what & (BEV_EVENT_ERROR | BEV_EVENT_EOF)) {
        struct srv *s = c->srv;
        if (s->cfg.tls != NULL && (what & BEV_EVENT_ERROR)) {
            srv_log_tls_error(c);
        }
        bool tagged = c->tagged;
        int64_t id = c->tag_id;
        int64_t epoch = c->tag_epoch;
        conn_close(c, what & BEV_EVENT_ERROR ? "socket error" : "peer closed");
        if (tagged && s->on_lost != NULL) {
            s->on_lost(s->lost_arg, id, epoch);
        }
    }
}

static void conn_close(struct srv_conn *c, const char *why)
{
    struct srv *s = c->srv;
    struct srv_req *r;
    struct srv_req *next;

    if (c->closed) {
        return;
    }
    c->closed = true;
    trace_debug("net", "event=conn_close peer=%s why=\"%s\"", c->peer, why);
    if (c->out_cb != NULL) {
        struct evbuffer *out = bufferevent_get_output(c->bev);
        (void)evbuffer_remove_cb_entry(out, c->out_cb);
        s->out_total -= evbuffer_get_length(out);
        if (s->out_over && s->out_total <= s->cfg.max_output_bytes) {
            s->out_over = false; /* the others may be read again */
            if (s->shed_ev != NULL) {
                event_active(s->shed_ev, EV_TIMEOUT, 0);
            }
        }
    }
    /* requests a handler still holds become orphans; finished ones that
     * were waiting for their turn go now */
    for (r = c->head; r != NULL; r = next) {
        next = r->next;
        r->next = NULL;
        if (r->done) {
            req_free(r);
        } else {
            r->conn = NULL;
        }
    }
    c->head = c->tail = NULL;
    if (c->prev != NULL) {
        c->prev->next = c->next;
    } else {
        s->conns = c->next;
    }
    if (c->next != NULL) {
        c->next->prev = c->prev;
    }
    s->n_conns--;
    /* libevent defers the real free of a bufferevent that is inside its own
     * callback, so this is safe from conn_read_cb too */
    bufferevent_free(c->bev);
    if (c->auth != NULL && s->cfg.auth_free != NULL) {
        s->cfg.auth_free(c->auth);
    }
    event_free(c->frame_timer);
    event_free(c->resume_ev);
    mem_free(c);
}

static uint32_t srv_count_ip(const struct srv *s, const char *ip)
{
    const struct srv_conn *c;
    uint32_t n = 0;

    for (c = s->conns; c != NULL; c = c->next) {
        n += strcmp(c->ip, ip) == 0;
    }
    return n;
}

static void conn_out_cb(struct evbuffer *buf,
                        const struct evbuffer_cb_info *info,
                        void *arg)
{
    struct srv *s = arg;
    bool over;

    (void)buf;
    s->out_total += info->n_added;
    s->out_total -= info->n_deleted;
    over =
        s->cfg.max_output_bytes > 0 && s->out_total > s->cfg.max_output_bytes;
    if (over != s->out_over && s->shed_ev != NULL) {
        /* shed or resume reading, outside libevent's buffer callback */
        event_active(s->shed_ev, EV_TIMEOUT, 0);
    }
    s->out_over = over;
}

/* Over the server-wide output limit: close the connections holding the
 * most unread answers until under it. A client that reads keeps almost
 * nothing queued; one that does not (or cannot keep up at all) loses its
 * connection and may come back, rather than every client losing the
 * server to memory. */
static void srv_shed_cb(evutil_socket_t fd, short what, void *arg)
{
    struct srv *s = arg;
    struct srv_conn *c;
    struct srv_conn *worst;
    size_t worst_len;
    size_t len;

    (void)fd;
    (void)what;
    while (s->out_total > s->cfg.max_output_bytes) {
        worst = NULL;
        worst_len = 0;
        for (c = s->conns; c != NULL; c = c->next) {
            len = evbuffer_get_length(bufferevent_get_output(c->bev));
            if (len > worst_len) {
                worst = c;
                worst_len = len;
            }
        }
        if (worst == NULL) {
            /* nothing queued anywhere: the count drifted; never leave
             * every connection paused on it */
            s->out_total = 0;
            s->out_over = false;
            break;
        }
        if ((s->out_shed++ % 100) == 0) {
            trace_warn("net",
                       "event=output_shed peer=%s queued=%zu "
                       "queued_total=%llu max=%llu shed_total=%llu",
                       worst->peer, worst_len, (unsigned long long)s->out_total,
                       (unsigned long long)s->cfg.max_output_bytes,
                       (unsigned long long)s->out_shed);
        }
        conn_close(worst, "answers left unread past the output limit");
    }
    /* under the limit again: every connection may be read */
    for (c = s->conns; c != NULL; c = c->next) {
        conn_update_read(c);
    }
}

static void srv_accept_cb(struct evconnlistener *lev,
                          evutil_socket_t fd,
                          struct sockaddr *sa,
                          int salen,
                          void *arg)
{
    struct srv *s = arg;
    struct srv_conn *c;
    struct timeval idle;
    char ip[48];
    char peer[64];
    int one = 1;

    (void)lev;
    addr_format(sa, (socklen_t)salen, ip, sizeof(ip), peer, sizeof(peer));
    if (s->n_conns >= s->cfg.max_connections ||
        srv_count_ip(s, ip) >= s->cfg.max_connections_per_ip) {
        if ((s->refused++ % 1000) == 0) {
            trace_warn("net",
                       "event=conn_refused peer=%s conns=%u "
                       "max=%u max_per_ip=%u refused_total=%llu",
                       peer, s->n_conns, s->cfg.max_connections,
                       s->cfg.max_connections_per_ip,
                       (unsigned long long)s->refused);
        }
        (void)close(fd);
        return;
    }
    c = mem_calloc(1, sizeof(*c));
    if (c == NULL) {
        (void)close(fd);
        return;
    }
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    c->srv = s;
    memcpy(c->ip, ip, sizeof(c->ip));
    memcpy(c->peer, peer, sizeof(c->peer));
    if (s->cfg.tls != NULL) {
        /* the bufferevent owns the session and frees it */
        SSL *ssl = SSL_new(s->cfg.tls);
        c->bev = ssl == NULL
                     ? NULL
                     : bufferevent_openssl_socket_new(s->base, fd, ssl,
                                                      BUFFEREVENT_SSL_ACCEPTING,
                                                      BEV_OPT_CLOSE_ON_FREE);
        /* on failure libevent has freed the session (CLOSE_ON_FREE); a
         * peer that closes without a TLS close_notify has just left */
        if (c->bev != NULL) {
            bufferevent_openssl_set_allow_dirty_shutdown(c->bev, 1);
        }
    } else {
        c->bev = bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
    }
    c->frame_timer = evtimer_new(s->base, conn_frame_timeout_cb, c);
    c->resume_ev = event_new(s->base, -1, 0, conn_resume_cb, c);
    if (c->bev == NULL || c->frame_timer == NULL || c->resume_ev == NULL) {
        if (c->bev != NULL) {
            bufferevent_free(c->bev);
        } else {
            (void)close(fd);
        }
        if (c->frame_timer != NULL) {
            event_free(c->frame_timer);
        }
        if (c->resume_ev != NULL) {
            event_free(c->resume_ev);
        }
        mem_free(c);
        return;
    }
    c->next = s->conns;
    if (s->conns != NULL) {
        s->conns->prev = c;
    }
    s->conns = c;
    s->n_conns++;
    bufferevent_setcb(c->bev, conn_read_cb, conn_write_cb, conn_event_cb, c);
    c->out_cb = evbuffer_add_cb(bufferevent_get_output(c->bev), conn_out_cb, s);
    idle.tv_sec = s->cfg.idle_timeout_ms / 1000;
    idle.tv_usec = (s->cfg.idle_timeout_ms % 1000) * 1000;
    /* the write side too: a client that stops reading its answers is cut
     * after the idle timeout, and what it left queued is freed */
    bufferevent_set_timeouts(c->bev, &idle, &idle);
    /* libevent reads 4 KiB per callback by default: a 1 MiB produce would
     * take 256 wakeups */
    (void)bufferevent_set_max_single_read(c->bev, SRV_MAX_SINGLE_READ_BYTES);
    (void)bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    trace_debug("net", "event=conn_open peer=%s", c->peer);
}

static void srv_accept_error_cb(struct evconnlistener *lev, void *arg)
{
    int e = EVUTIL_SOCKET_ERROR();

    (void)lev;
    (void)arg;
    /* EMFILE and friends: log and keep serving the connections we have */
    trace_error("net", "event=accept_error errno=%d msg=\"%s\"", e,
                evutil_socket_error_to_string(e));
}

int srv_open(struct event_base *base,
             const char *listen,
             const struct srv_config *cfg,
             srv_request_fn on_request,
             void *arg,
             struct srv **out,
             struct err_detail *ed)
{
    struct sockaddr_storage ss;
    socklen_t sslen;
    struct srv *s;
    int rv;

    *out = NULL;
    rv = addr_parse(listen, &ss, &sslen, ed);
    if (rv != 0) {
        return rv;
    }
    s = mem_calloc(1, sizeof(*s));
    if (s == NULL) {
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    s->base = base;
    s->cfg = *cfg;
    s->limits.max_frame_bytes = cfg->max_frame_bytes;
    s->limits.max_header_bytes = cfg->max_header_bytes;
    s->on_request = on_request;
    s->arg = arg;
    s->lev = evconnlistener_new_bind(base, srv_accept_cb, s,
                                     LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE |
                                         LEV_OPT_CLOSE_ON_EXEC,
                                     1024, (struct sockaddr *)&ss, (int)sslen);
    if (s->lev == NULL) {
        rv = err_sys(ed, WEIR_ENETWORK, errno, "bind/listen",
                     "cannot listen on %s", listen);
        mem_free(s);
        return rv;
    }
    evconnlistener_set_error_cb(s->lev, srv_accept_error_cb);
    s->shed_ev = event_new(base, -1, 0, srv_shed_cb, s);
    if (s->shed_ev == NULL) {
        evconnlistener_free(s->lev);
        mem_free(s);
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    s->port = addr_local_port(evconnlistener_get_fd(s->lev));
    *out = s;
    return 0;
}

void srv_stop_accepting(struct srv *s)
{
    if (s->lev != NULL) {
        evconnlistener_free(s->lev);
        s->lev = NULL;
    }
}

void srv_close(struct srv *s)
{
    if (s == NULL) {
        return;
    }
    srv_stop_accepting(s);
    while (s->conns != NULL) {
        conn_close(s->conns, "server closing");
    }
    if (s->shed_ev != NULL) {
        event_free(s->shed_ev);
    }
    mem_free(s);
}

void srv_on_lost(struct srv *s, srv_lost_fn fn, void *arg)
{
    s->on_lost = fn;
    s->lost_arg = arg;
}

void srv_req_tag(struct srv_req *req, int64_t tag_id, int64_t tag_epoch)
{
    if (req->conn != NULL) {
        req->conn->tagged = true;
        req->conn->tag_id = tag_id;
        req->conn->tag_epoch = tag_epoch;
    }
}

const char *srv_req_principal(const struct srv_req *req)
{
    return req->conn != NULL ? conn_principal(req->conn) : "";
}

bool srv_req_authenticated(const struct srv_req *req)
{
    if (req->conn == NULL) {
        return false;
    }
    return !req->conn->srv->cfg.require_auth || conn_authenticated(req->conn);
}

bool srv_req_peer_verified(const struct srv_req *req)
{
    SSL *ssl;

    if (req->conn == NULL || req->conn->srv->cfg.tls == NULL) {
        return false;
    }
    ssl = bufferevent_openssl_get_ssl(req->conn->bev);
    return ssl != NULL && tls_peer_verified(ssl);
}

void srv_req_authenticate(struct srv_req *req, const char *principal)
{
    struct srv_conn *c = req->conn;

    if (c == NULL) {
        return;
    }
    (void)snprintf(c->principal, sizeof(c->principal), "%s", principal);
    c->principal_known = true;
    c->authenticated = true;
}

void **srv_req_auth_state(struct srv_req *req)
{
    return req->conn != NULL ? &req->conn->auth : NULL;
}

uint16_t srv_port(const struct srv *s)
{
    return s->port;
}

uint32_t srv_connection_count(const struct srv *s)
{
    return s->n_conns;
}
