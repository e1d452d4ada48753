/* SPDX-License-Identifier: Apache-2.0 */
/* Each peer has one outbound connection that only writes; what arrives
 * from peers comes through the controller's server (raft_net_receive), so
 * a member needs no second listener. A queue of encoded frames sits in
 * front of the socket and only a small window (RAFT_NET_OUT_BYTES) is
 * handed to libevent at a time: what waits in the queue can still be
 * dropped when newer messages come, which is what Raft wants from a
 * lossy link (the newest heartbeat or append supersedes the older).
 * A failed connection is never freed inside its own callback: the callback
 * disables it and arms the retry timer, whose callback frees it.
 * With TLS the same connection is a TLS client: the dialer checks the
 * peer's certificate against tls-ca and the voter's address, and presents
 * its own; the receiving member's listener verifies that one in the
 * handshake, and raft_net_on_request refuses raft messages from a
 * connection that presented none (brokers and clients may still connect
 * without one). */
#include "controller/quorum/raft_net.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <string.h>

#include "common/mem.h"
#include "common/net/addr.h"
#include "common/tls.h"
#include "common/trace.h"
#include "controller/quorum/raft_codec.h"

#define RAFT_NET_OUT_BYTES (256u * 1024) /* in libevent's hands at most */
#define RAFT_NET_LASTED_MS 1000 /* a connection up this long resets backoff */

struct raft_net_frame {
    uint8_t *data; /* owned */
    size_t len;
};

struct raft_net_peer {
    struct raft_net *net;
    const struct raft_voter *voter; /* in net->voters */
    struct bufferevent *bev;        /* NULL: none; else connecting or up */
    struct event *retry;            /* reconnect timer */
    bool connected;
    bool answered;        /* the peer wrote back (logged once per connection) */
    uint32_t attempt;     /* failures since a connection that lasted */
    uint64_t up_ms;       /* clock time of the last connect */
    char tls_reason[512]; /* the last TLS failure logged */
    struct raft_net_frame *q; /* ring of queue_max */
    uint32_t q_head;
    uint32_t q_len;
    struct raft_net_peer_stats st;
};

struct raft_net {
    struct event_base *base;
    struct raft_net_config cfg;
    struct raft_voters voters;
    char cluster_id[RAFT_CODEC_CLUSTER_ID_MAX + 1];
    raft_net_recv_fn fn;
    void *arg;
    uint64_t rng; /* xorshift64 state, for jitter */
    uint32_t n_peers;
    struct raft_net_peer peers[RAFT_MAX_VOTERS];
    struct raft_wire wire;       /* receive scratch */
    uint64_t refused_unknown;    /* refused from no known voter */
    uint64_t refused_unverified; /* TLS: no verified client certificate */
};

static void raft_net_connect(struct raft_net_peer *p);
static bool raft_net_log_refusal(uint64_t count);

static uint64_t raft_net_now_ms(const struct raft_net *n)
{
    return n->cfg.clock != NULL ? clock_now_ms(n->cfg.clock) : 0;
}

static uint64_t raft_net_rand(struct raft_net *n)
{
    n->rng ^= n->rng << 13;
    n->rng ^= n->rng >> 7;
    n->rng ^= n->rng << 17;
    return n->rng;
}

/* Exponential from backoff_min_ms up to backoff_max_ms, then a random
 * point in its upper half, so members that lost each other at once do not
 * retry in step. */
static uint32_t raft_net_backoff_ms(struct raft_net_peer *p)
{
    const struct raft_net_config *c = &p->net->cfg;
    uint64_t d = c->backoff_min_ms;
    uint32_t i;

    for (i = 0; i < p->attempt && d < c->backoff_max_ms; i++) {
        d *= 2;
    }
    if (d > c->backoff_max_ms) {
        d = c->backoff_max_ms;
    }
    return (uint32_t)(d - d / 2 + raft_net_rand(p->net) % (d / 2 + 1));
}

static void raft_net_arm_retry(struct raft_net_peer *p)
{
    uint32_t ms = raft_net_backoff_ms(p);
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};

    p->attempt++;
    (void)event_add(p->retry, &tv);
}

static void raft_net_frame_free(struct raft_net_frame *f)
{
    mem_free(f->data);
    f->data = NULL;
    f->len = 0;
}

/* Hand queued frames to the socket until the window is full. */
static void raft_net_pump(struct raft_net_peer *p)
{
    struct evbuffer *out;
    struct raft_net_frame *f;

    if (!p->connected || p->bev == NULL) {
        return;
    }
    out = bufferevent_get_output(p->bev);
    while (p->q_len > 0 && evbuffer_get_length(out) < RAFT_NET_OUT_BYTES) {
        f = &p->q[p->q_head];
        if (evbuffer_add(out, f->data, f->len) != 0) {
            return; /* no memory: the frame waits */
        }
        raft_net_frame_free(f);
        p->q_head = (p->q_head + 1) % p->net->cfg.queue_max;
        p->q_len--;
        p->st.sent++;
    }
    p->st.queued = p->q_len;
}

static void raft_net_write_cb(struct bufferevent *bev, void *arg)
{
    (void)bev;
    raft_net_pump(arg);
}

/* Peers write nothing back on this connection, except an error answer
 * from a controller that does not take raft messages (no --voters there,
 * or an older build): say so once and throw the bytes away. */
static void raft_net_read_cb(struct bufferevent *bev, void *arg)
{
    struct raft_net_peer *p = arg;
    struct evbuffer *in = bufferevent_get_input(bev);

    if (!p->answered) {
        p->answered = true;
        trace_warn("quorum",
                   "event=raft_peer_answered voter=%u address=%s msg=\"the "
                   "peer answered a raft message: is it started with "
                   "--voters?\"",
                   p->voter->id, p->voter->address);
    }
    (void)evbuffer_drain(in, evbuffer_get_length(in));
}

static bool raft_net_is_eof(unsigned long e)
{
#ifdef SSL_R_UNEXPECTED_EOF_WHILE_READING
    return ERR_GET_REASON(e) == SSL_R_UNEXPECTED_EOF_WHILE_READING;
#else
    (void)e;
    return false;
#endif
}

/* Why a TLS link failed, or false when it is no TLS matter (refused,
 * reset, timed out: the peer is down or unreachable). */
static bool raft_net_tls_reason(struct raft_net_peer *p, char *out, size_t len)
{
    SSL *ssl = bufferevent_openssl_get_ssl(p->bev);
    long v = ssl != NULL ? SSL_get_verify_result(ssl) : X509_V_OK;
    const char *hint = "";
    unsigned long e;
    char last[256] = "";
    size_t n;

    /* libevent also queues socket errors here (library 0): a refused
     * connection is no TLS failure, and neither is a peer that went away
     * without a TLS close (killed, restarted): raft_peer_lost says so */
    while ((e = bufferevent_get_openssl_error(p->bev)) != 0) {
        if (ERR_GET_LIB(e) != 0 && !raft_net_is_eof(e)) {
            ERR_error_string_n(e, last, sizeof(last));
            hint = ERR_GET_REASON(e) == SSL_R_WRONG_VERSION_NUMBER
                       ? " (does the peer listen with TLS?)"
                       : "";
        }
    }
    if (last[0] == '\0') {
        return false;
    }
    n = (size_t)snprintf(out, len, "%s%s", last, hint);
    if (v != X509_V_OK && n < len) {
        /* our check of the peer's certificate: unknown CA, wrong address */
        (void)snprintf(out + n, len - n, " (%s)",
                       X509_verify_cert_error_string(v));
    }
    return true;
}

static void raft_net_log_tls_failure(struct raft_net_peer *p)
{
    char why[512];

    if (!raft_net_tls_reason(p, why, sizeof(why))) {
        return;
    }
    p->st.tls_failures++;
    /* a new reason (the peer was fixed, or broke another way) is always
     * told; the same one again on the 1st, 2nd, 4th... failure */
    if (strcmp(why, p->tls_reason) != 0 ||
        raft_net_log_refusal(p->st.tls_failures)) {
        (void)snprintf(p->tls_reason, sizeof(p->tls_reason), "%s", why);
        trace_error("quorum",
                    "event=raft_peer_tls_failed voter=%u address=%s "
                    "failures=%llu reason=\"%s\"",
                    p->voter->id, p->voter->address,
                    (unsigned long long)p->st.tls_failures, why);
    }
}

static void raft_net_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct raft_net_peer *p = arg;
    bool was;

    (void)bev;
    if ((what & BEV_EVENT_CONNECTED) != 0) {
        p->connected = true;
        p->up_ms = raft_net_now_ms(p->net);
        p->st.connected = true;
        p->st.connects++;
        trace_info("quorum", "event=raft_peer_connected voter=%u address=%s",
                   p->voter->id, p->voter->address);
        raft_net_pump(p);
        return;
    }
    if (p->net->cfg.tls != NULL) {
        raft_net_log_tls_failure(p);
    }
    was = p->connected;
    if (was) {
        trace_warn("quorum",
                   "event=raft_peer_lost voter=%u address=%s eof=%d "
                   "timeout=%d",
                   p->voter->id, p->voter->address, (what & BEV_EVENT_EOF) != 0,
                   (what & BEV_EVENT_TIMEOUT) != 0);
    }
    /* a TLS 1.3 client is "connected" before the server has checked its
     * certificate: a link refused at once keeps backing off */
    if (was && (p->net->cfg.clock == NULL ||
                raft_net_now_ms(p->net) - p->up_ms >= RAFT_NET_LASTED_MS)) {
        p->attempt = 0;
    }
    p->connected = false;
    p->st.connected = false;
    bufferevent_disable(p->bev, EV_READ | EV_WRITE);
    raft_net_arm_retry(p);
    if (was && p->net->cfg.lost != NULL) {
        p->net->cfg.lost(p->net->arg, p->voter->id);
    }
}

static void raft_net_retry_cb(evutil_socket_t fd, short what, void *arg)
{
    struct raft_net_peer *p = arg;

    (void)fd;
    (void)what;
    if (p->bev != NULL) {
        bufferevent_free(p->bev);
        p->bev = NULL;
    }
    p->answered = false;
    raft_net_connect(p);
}

/* A TLS session checks the peer's certificate against the host of the
 * voter's address (its DNS or IP names), as brokers check controllers. */
static struct bufferevent *raft_net_new_bev(struct raft_net_peer *p)
{
    struct bufferevent *bev;
    struct err_detail ed;
    char host[256];
    uint16_t port;
    SSL *ssl;

    if (p->net->cfg.tls == NULL) {
        return bufferevent_socket_new(p->net->base, -1, BEV_OPT_CLOSE_ON_FREE);
    }
    if (addr_split(p->voter->address, host, sizeof(host), &port, &ed) != 0) {
        return NULL;
    }
    ssl = tls_client_new(p->net->cfg.tls, host);
    if (ssl == NULL) {
        return NULL;
    }
    /* the bufferevent owns the session from here, also on failure */
    bev = bufferevent_openssl_socket_new(p->net->base, -1, ssl,
                                         BUFFEREVENT_SSL_CONNECTING,
                                         BEV_OPT_CLOSE_ON_FREE);
    if (bev != NULL) {
        bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    }
    return bev;
}

/* Names are resolved at each attempt (getaddrinfo, blocking: voter
 * addresses are expected to be IPs or names in /etc/hosts), so a member
 * that comes back at a new address under the same name is found. */
static void raft_net_connect(struct raft_net_peer *p)
{
    const struct raft_net_config *c = &p->net->cfg;
    struct timeval tv = {(time_t)(c->connect_timeout_ms / 1000),
                         (suseconds_t)(c->connect_timeout_ms % 1000) * 1000};
    struct sockaddr_storage ss;
    struct err_detail ed;
    socklen_t len;

    err_detail_clear(&ed);
    if (addr_parse(p->voter->address, &ss, &len, &ed) != 0) {
        if (p->attempt == 0) {
            trace_warn("quorum",
                       "event=raft_peer_unresolved voter=%u msg=\"%s\"",
                       p->voter->id, ed.msg);
        }
        raft_net_arm_retry(p);
        return;
    }
    p->bev = raft_net_new_bev(p);
    if (p->bev == NULL) {
        raft_net_arm_retry(p);
        return;
    }
    bufferevent_setcb(p->bev, raft_net_read_cb, raft_net_write_cb,
                      raft_net_event_cb, p);
    /* the write timeout also bounds the connect */
    (void)bufferevent_set_timeouts(p->bev, NULL, &tv);
    if (bufferevent_enable(p->bev, EV_READ | EV_WRITE) != 0 ||
        bufferevent_socket_connect(p->bev, (struct sockaddr *)&ss, (int)len) !=
            0) {
        /* the bufferevent is not in a callback yet: free it now */
        bufferevent_free(p->bev);
        p->bev = NULL;
        raft_net_arm_retry(p);
    }
}

static void raft_net_defaults(struct raft_net_config *c)
{
    if (c->queue_max == 0) {
        c->queue_max = 256;
    }
    if (c->max_frame_bytes == 0) {
        c->max_frame_bytes = 8u * 1024 * 1024;
    }
    if (c->backoff_min_ms == 0) {
        c->backoff_min_ms = 50;
    }
    if (c->backoff_max_ms < c->backoff_min_ms) {
        c->backoff_max_ms = c->backoff_min_ms > 2000 ? c->backoff_min_ms : 2000;
    }
    if (c->connect_timeout_ms == 0) {
        c->connect_timeout_ms = 3000;
    }
}

static int raft_net_peers_init(struct raft_net *n)
{
    struct raft_net_peer *p;
    uint32_t i;

    for (i = 0; i < n->voters.n; i++) {
        if (n->voters.v[i].id == n->cfg.id) {
            continue;
        }
        p = &n->peers[n->n_peers++];
        p->net = n;
        p->voter = &n->voters.v[i];
        p->st.id = p->voter->id;
        p->q = mem_calloc(n->cfg.queue_max, sizeof(*p->q));
        p->retry = evtimer_new(n->base, raft_net_retry_cb, p);
        if (p->q == NULL || p->retry == NULL) {
            return WEIR_ENOMEM;
        }
    }
    return 0;
}

int raft_net_open(struct event_base *base,
                  const struct raft_net_config *cfg,
                  raft_net_recv_fn fn,
                  void *arg,
                  struct raft_net **out,
                  struct err_detail *ed)
{
    struct raft_net *n;
    size_t cid_len = cfg->cluster_id != NULL ? strlen(cfg->cluster_id) : 0;
    uint32_t i;

    *out = NULL;
    if (raft_voters_find(cfg->voters, cfg->id) == NULL) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "raft: member %u is not one of the voters", cfg->id);
    }
    if (cid_len == 0 || cid_len > RAFT_CODEC_CLUSTER_ID_MAX) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "raft: a cluster id is 1..64 bytes");
    }
    n = mem_calloc(1, sizeof(*n));
    if (n == NULL) {
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    n->base = base;
    n->cfg = *cfg;
    raft_net_defaults(&n->cfg);
    n->voters = *cfg->voters;
    n->cfg.voters = &n->voters;
    memcpy(n->cluster_id, cfg->cluster_id, cid_len + 1);
    n->cfg.cluster_id = n->cluster_id;
    n->fn = fn;
    n->arg = arg;
    n->rng = cfg->seed != 0 ? cfg->seed : 0x9e3779b97f4a7c15ull;
    if (raft_net_peers_init(n) != 0) {
        raft_net_close(n);
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    for (i = 0; i < n->n_peers; i++) {
        raft_net_connect(&n->peers[i]);
    }
    *out = n;
    return 0;
}

void raft_net_close(struct raft_net *n)
{
    struct raft_net_peer *p;
    uint32_t i;
    uint32_t k;

    if (n == NULL) {
        return;
    }
    for (i = 0; i < n->n_peers; i++) {
        p = &n->peers[i];
        if (p->bev != NULL) {
            bufferevent_free(p->bev);
        }
        if (p->retry != NULL) {
            event_free(p->retry);
        }
        for (k = 0; p->q != NULL && k < n->cfg.queue_max; k++) {
            raft_net_frame_free(&p->q[k]);
        }
        mem_free(p->q);
    }
    mem_free(n);
}

static struct raft_net_peer *raft_net_peer(struct raft_net *n, uint32_t id)
{
    uint32_t i;

    for (i = 0; i < n->n_peers; i++) {
        if (n->peers[i].voter->id == id) {
            return &n->peers[i];
        }
    }
    return NULL;
}

/* Queue a frame (consumed), dropping the oldest when full. */
static void raft_net_enqueue(struct raft_net_peer *p, uint8_t *data, size_t len)
{
    uint32_t qmax = p->net->cfg.queue_max;
    struct raft_net_frame *f;

    if (p->q_len == qmax) {
        raft_net_frame_free(&p->q[p->q_head]);
        p->q_head = (p->q_head + 1) % qmax;
        p->q_len--;
        p->st.dropped++;
    }
    f = &p->q[(p->q_head + p->q_len) % qmax];
    f->data = data;
    f->len = len;
    p->q_len++;
    p->st.queued = p->q_len;
}

int raft_net_send(struct raft_net *n, const struct raft_msg *m)
{
    struct raft_net_peer *p = raft_net_peer(n, m->to);
    struct err_detail ed;
    struct weir_buf b;
    uint8_t *data;
    size_t len;
    int rv;

    if (p == NULL || m->from != n->cfg.id) {
        return WEIR_EINVALID_ARGUMENT;
    }
    err_detail_clear(&ed);
    buf_init(&b);
    rv = raft_codec_encode(m, n->cluster_id, &b, &ed);
    if (rv == 0 && b.len - 4 > n->cfg.max_frame_bytes) {
        p->st.dropped++;
        rv = err_set(&ed, WEIR_EFRAME_TOO_LARGE,
                     "raft %s of %zu bytes: larger than max-frame-bytes %u",
                     raft_codec_type_name(m->type), b.len,
                     n->cfg.max_frame_bytes);
    }
    if (rv != 0) {
        trace_warn("quorum",
                   "event=raft_send_failed voter=%u error=%s "
                   "msg=\"%s\"",
                   m->to, weir_err_name(rv), ed.msg);
        buf_fini(&b);
        return rv;
    }
    data = buf_take(&b, &len);
    raft_net_enqueue(p, data, len);
    raft_net_pump(p);
    return 0;
}

/* Another cluster's member is a deployment mistake worth a loud line, but
 * it retries many times a second: log the 1st, 2nd, 4th, 8th... */
static bool raft_net_log_refusal(uint64_t count)
{
    return (count & (count - 1)) == 0;
}

static int raft_net_check_sender(struct raft_net *n,
                                 const struct raft_msg *m,
                                 const char *cluster_id,
                                 const char *peer,
                                 struct raft_net_peer **out)
{
    struct raft_net_peer *p = raft_net_peer(n, m->from);
    uint64_t *refused = p != NULL ? &p->st.refused : &n->refused_unknown;

    *out = p;
    if (strcmp(cluster_id, n->cluster_id) != 0) {
        if (raft_net_log_refusal(++*refused)) {
            trace_error("quorum",
                        "event=raft_refused peer=%s voter=%u "
                        "error=INCONSISTENT_CLUSTER_ID peer_cluster_id=%s "
                        "cluster_id=%s refused=%llu msg=\"a member of "
                        "another cluster\"",
                        peer, m->from, cluster_id, n->cluster_id,
                        (unsigned long long)*refused);
        }
        return WEIR_EINCONSISTENT_CLUSTER_ID;
    }
    if (p == NULL || m->to != n->cfg.id) {
        if (raft_net_log_refusal(++*refused)) {
            trace_warn("quorum",
                       "event=raft_refused peer=%s voter=%u to=%u "
                       "refused=%llu msg=\"not from another voter of this "
                       "quorum, or not for this member (%u)\"",
                       peer, m->from, m->to, (unsigned long long)*refused,
                       n->cfg.id);
        }
        return WEIR_EINVALID_ARGUMENT;
    }
    return 0;
}

/* A message from the peer shows it is up: dial it now instead of when
 * the backoff ends. It may have been down long enough for the backoff to
 * reach seconds, and until we reach it everything we say to it waits: a
 * member restarted just before the leader died asked for votes and got
 * its answers a second later (bench_quorum, 1.0-1.4 s elections). */
static void raft_net_redial(struct raft_net_peer *p)
{
    if (p->connected || !event_pending(p->retry, EV_TIMEOUT, NULL)) {
        return; /* up, or a connect is under way */
    }
    (void)event_del(p->retry);
    p->attempt = 0;
    trace_info("quorum", "event=raft_peer_redial voter=%u address=%s",
               p->voter->id, p->voter->address);
    raft_net_retry_cb(-1, 0, p);
}

int raft_net_receive(struct raft_net *n,
                     const Weir__RaftMessage *rm,
                     const uint8_t *payload,
                     uint32_t payload_len,
                     const char *peer)
{
    struct raft_net_peer *p;
    struct err_detail ed;
    int rv;

    err_detail_clear(&ed);
    rv = raft_codec_decode_body(rm, payload, payload_len, &n->wire, &ed);
    if (rv != 0) {
        n->refused_unknown++;
        trace_warn("quorum", "event=raft_bad_message peer=%s msg=\"%s\"", peer,
                   ed.msg);
        return rv;
    }
    rv = raft_net_check_sender(n, &n->wire.msg, n->wire.cluster_id, peer, &p);
    if (rv != 0) {
        return rv;
    }
    p->st.received++;
    p->st.last_contact_ms =
        n->cfg.clock != NULL ? clock_now_ms(n->cfg.clock) : 0;
    raft_net_redial(p);
    n->fn(n->arg, &n->wire.msg);
    return 0;
}

/* A TLS quorum takes raft messages only from a connection whose client
 * certificate verified against tls-ca: the listener lets brokers and
 * clients in without one, members never. */
static bool raft_net_peer_ok(struct raft_net *n, const struct srv_req *req)
{
    if (n->cfg.tls == NULL || srv_req_peer_verified(req)) {
        return true;
    }
    n->refused_unverified++;
    if (raft_net_log_refusal(n->refused_unverified)) {
        trace_error("quorum",
                    "event=raft_refused peer=%s error=AUTHENTICATION "
                    "refused=%llu msg=\"a raft message from a connection "
                    "without a verified TLS client certificate: members of "
                    "a TLS quorum present one signed by tls-ca\"",
                    req->peer, (unsigned long long)n->refused_unverified);
    }
    return false;
}

void raft_net_on_request(void *arg, struct srv_req *req, const Weir__Request *r)
{
    struct raft_net *n = arg;

    if (r->body_case == WEIR__REQUEST__BODY_RAFT && raft_net_peer_ok(n, req)) {
        (void)raft_net_receive(n, r->raft, req->payload, req->payload_len,
                               req->peer);
    }
    srv_req_finish(req);
}

uint32_t raft_net_stats(const struct raft_net *n,
                        struct raft_net_peer_stats *rows,
                        uint32_t cap)
{
    uint32_t i;

    for (i = 0; i < n->n_peers && i < cap; i++) {
        rows[i] = n->peers[i].st;
    }
    return i;
}
