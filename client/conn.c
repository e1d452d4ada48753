/* SPDX-License-Identifier: Apache-2.0 */
#include "client/conn_int.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/frame.h"
#include "common/mem.h"
#include "common/rpc.h"
#include "common/tls.h"

#define CONN_READ_CHUNK (256u * 1024)
#define CONN_MAX_READS                                                         \
    16 /* per conn_handle, so one busy socket cannot                           \
          starve the others */

/* A request waiting for its reply (or, expect_reply false, for its bytes
 * to be written). Owned by the connection's FIFO. */
struct conn_req {
    struct conn_req *next;
    uint32_t correlation_id;
    bool expect_reply;
    uint64_t end_mark;    /* c->queued_total when its last byte was queued */
    uint64_t deadline_ms; /* reply (or write) deadline */
    uint32_t timeout_ms;  /* for the message */
    conn_reply_fn *cb;
    void *arg;
};

static void conn_set_name(struct conn *c)
{
    if (strchr(c->host, ':') != NULL) {
        (void)snprintf(c->name, sizeof(c->name), "[%s]:%u", c->host, c->port);
    } else {
        (void)snprintf(c->name, sizeof(c->name), "%s:%u", c->host, c->port);
    }
}

static int
conn_resolve(struct conn *c, struct addrinfo **res, struct err_detail *ed)
{
    struct addrinfo hints;
    char port[16];
    int rv;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    (void)snprintf(port, sizeof(port), "%u", c->port);
    rv = getaddrinfo(c->host, port, &hints, res);
    if (rv != 0) {
        return err_set(ed, WEIR_ENETWORK, "cannot resolve %s: %s", c->name,
                       gai_strerror(rv));
    }
    return 0;
}

/* OpenSSL writes to the socket with write(2): a peer that has gone would
 * raise SIGPIPE in the application. Block it around TLS writes and take
 * back one that this thread caused (the way libpq and libcurl do). */
struct conn_sigpipe {
    sigset_t old;
    bool was_pending;
};

static void conn_sigpipe_block(struct conn_sigpipe *s)
{
    sigset_t pipe;
    sigset_t pending;

    (void)sigemptyset(&pipe);
    (void)sigaddset(&pipe, SIGPIPE);
    (void)sigpending(&pending);
    s->was_pending = sigismember(&pending, SIGPIPE) == 1;
    (void)pthread_sigmask(SIG_BLOCK, &pipe, &s->old);
}

static void conn_sigpipe_restore(struct conn_sigpipe *s)
{
    sigset_t pipe;
    sigset_t pending;
    struct timespec zero = {0, 0};

    (void)sigemptyset(&pipe);
    (void)sigaddset(&pipe, SIGPIPE);
    (void)sigpending(&pending);
    if (!s->was_pending && sigismember(&pending, SIGPIPE) == 1) {
        (void)sigtimedwait(&pipe, NULL, &zero);
    }
    (void)pthread_sigmask(SIG_SETMASK, &s->old, NULL);
}

static void conn_tls_fail(struct conn *c, const char *what)
{
    char why[500];
    char msg[900];

    tls_last_error(c->ssl, why, sizeof(why));
    (void)snprintf(msg, sizeof(msg), "%s %s: %s", what, c->name, why);
    conn_close(c, WEIR_ENETWORK, msg);
}

/* TCP (and TLS) is up: log in first when SASL is configured. */
static void conn_secure_up(struct conn *c)
{
    if (c->opts.sasl_mechanism == NULL) {
        c->state = CONN_UP;
        c->was_up = true;
        return;
    }
    conn_auth_start(c);
}

/* Drive the TLS handshake as far as the socket allows. */
static void conn_tls_handshake(struct conn *c)
{
    struct conn_sigpipe sp;
    int r;

    conn_sigpipe_block(&sp);
    r = SSL_do_handshake(c->ssl);
    conn_sigpipe_restore(&sp);

    if (r == 1) {
        conn_secure_up(c);
        return;
    }
    switch (SSL_get_error(c->ssl, r)) {
    case SSL_ERROR_WANT_READ:
        c->hs_events = POLLIN;
        break;
    case SSL_ERROR_WANT_WRITE:
        c->hs_events = POLLOUT;
        break;
    default:
        conn_tls_fail(c, "TLS handshake failed with");
        break;
    }
}

/* TCP is up: plain connections are ready, TLS ones start the handshake. */
static void conn_tcp_up(struct conn *c)
{
    if (c->opts.tls == NULL) {
        conn_secure_up(c);
        return;
    }
    c->ssl = tls_client_new(c->opts.tls, c->host);
    if (c->ssl == NULL || SSL_set_fd(c->ssl, c->fd) != 1) {
        conn_tls_fail(c, "cannot start TLS with");
        return;
    }
    c->state = CONN_HANDSHAKE;
    conn_tls_handshake(c);
}

static int conn_connect(struct conn *c, uint64_t now_ms, struct err_detail *ed)
{
    struct addrinfo *res = NULL;
    int one = 1;
    int rv;
    int e;

    rv = conn_resolve(c, &res, ed);
    if (rv != 0) {
        return rv;
    }
    c->fd =
        socket(res->ai_family, res->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
               res->ai_protocol);
    if (c->fd < 0) {
        e = errno;
        freeaddrinfo(res);
        return err_sys(ed, WEIR_ENETWORK, e, "socket", "cannot connect to %s",
                       c->name);
    }
    (void)setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    rv = connect(c->fd, res->ai_addr, res->ai_addrlen);
    e = errno;
    freeaddrinfo(res);
    c->connect_deadline_ms = now_ms + c->opts.connect_timeout_ms;
    if (rv == 0) {
        conn_tcp_up(c);
        return 0;
    }
    if (e != EINPROGRESS) {
        return err_set(ed, WEIR_ENETWORK, "cannot connect to %s: %s", c->name,
                       strerror(e));
    }
    c->state = CONN_CONNECTING;
    return 0;
}

int conn_open(const char *host,
              uint16_t port,
              const struct conn_opts *o,
              uint64_t now_ms,
              struct conn **out,
              struct err_detail *ed)
{
    struct conn *c;
    int rv;

    *out = NULL;
    c = mem_calloc(1, sizeof(*c));
    if (c == NULL) {
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    c->fd = -1;
    c->host = mem_strdup(host);
    if (c->host == NULL) {
        mem_free(c);
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    c->port = port;
    c->opts = *o;
    buf_init(&c->wbuf);
    buf_init(&c->rbuf);
    conn_set_name(c);
    rv = conn_connect(c, now_ms, ed);
    if (rv != 0) {
        c->state = CONN_CLOSED;
        conn_free(c);
        return rv;
    }
    *out = c;
    return 0;
}

/* Unlink every pending request and run its callback with an error. The
 * list is detached first, so a callback that sends on this (closed)
 * connection only gets an error back. */
static void conn_fail_all(struct conn *c, int err, const char *msg)
{
    struct conn_req *r = c->head;
    struct conn_req *next;
    struct conn_reply reply;

    c->head = NULL;
    c->tail = NULL;
    c->n_pending = 0;
    while (r != NULL) {
        next = r->next;
        memset(&reply, 0, sizeof(reply));
        reply.err = err;
        reply.err_msg = msg;
        r->cb(r->arg, &reply);
        mem_free(r);
        r = next;
    }
}

void conn_close(struct conn *c, int err, const char *msg)
{
    if (c->state == CONN_CLOSED) {
        return;
    }
    c->state = CONN_CLOSED;
    c->close_err = err;
    (void)snprintf(c->close_reason, sizeof(c->close_reason), "%s", msg);
    if (c->ssl != NULL) {
        if (SSL_is_init_finished(c->ssl)) {
            struct conn_sigpipe sp;
            conn_sigpipe_block(&sp);
            (void)SSL_shutdown(c->ssl); /* close_notify, if it fits */
            conn_sigpipe_restore(&sp);
        }
        SSL_free(c->ssl);
        c->ssl = NULL;
    }
    if (c->fd >= 0) {
        (void)close(c->fd);
        c->fd = -1;
    }
    buf_fini(&c->wbuf);
    c->wpos = 0;
    conn_auth_free(c);
    conn_fail_all(c, err, c->close_reason);
}

void conn_free(struct conn *c)
{
    if (c == NULL) {
        return;
    }
    if (c->state != CONN_CLOSED) {
        char msg[400];
        (void)snprintf(msg, sizeof(msg),
                       "connection to %s closed by the "
                       "client",
                       c->name);
        conn_close(c, WEIR_ENETWORK, msg);
    }
    buf_fini(&c->wbuf);
    buf_fini(&c->rbuf);
    mem_free(c->host);
    mem_free(c);
}

static void conn_close_errno(struct conn *c, const char *what, int e)
{
    char msg[400];

    (void)snprintf(msg, sizeof(msg), "%s %s: %s", what, c->name, strerror(e));
    conn_close(c, WEIR_ENETWORK, msg);
}

int conn_send(struct conn *c,
              Weir__Request *req,
              const struct weir_slice *payload,
              size_t n_payload,
              bool expect_reply,
              uint32_t timeout_ms,
              uint64_t now_ms,
              conn_reply_fn *cb,
              void *arg,
              struct err_detail *ed)
{
    struct conn_req *r;
    uint64_t plen = 0;
    size_t mark;
    size_t i;
    int rv;

    if (c->state == CONN_CLOSED) {
        return err_set(ed, c->close_err != 0 ? c->close_err : WEIR_ENETWORK,
                       "%s", c->close_reason);
    }
    for (i = 0; i < n_payload; i++) {
        plen += payload[i].len;
    }
    if (plen > UINT32_MAX / 2) {
        return err_set(ed, WEIR_EFRAME_TOO_LARGE,
                       "request payload of %llu "
                       "bytes is too large",
                       (unsigned long long)plen);
    }
    r = mem_calloc(1, sizeof(*r));
    if (r == NULL) {
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    req->correlation_id = ++c->next_correlation_id;
    req->client_id = (char *)c->opts.client_id;
    mark = c->wbuf.len;
    rv = rpc_encode_request(req, (uint32_t)plen, &c->wbuf);
    for (i = 0; rv == 0 && i < n_payload; i++) {
        buf_put(&c->wbuf, payload[i].p, payload[i].len);
    }
    if (rv != 0 || !buf_ok(&c->wbuf)) {
        c->wbuf.len = mark;
        c->wbuf.oom = false;
        mem_free(r);
        rv = rv != 0 ? rv : WEIR_ENOMEM;
        return err_set(ed, rv, "cannot encode request: %s", weir_err_str(rv));
    }
    c->queued_total += c->wbuf.len - mark;
    r->correlation_id = req->correlation_id;
    r->expect_reply = expect_reply;
    r->end_mark = c->queued_total;
    r->timeout_ms = timeout_ms;
    r->deadline_ms = now_ms + timeout_ms;
    r->cb = cb;
    r->arg = arg;
    if (c->tail != NULL) {
        c->tail->next = r;
    } else {
        c->head = r;
    }
    c->tail = r;
    c->n_pending++;
    return 0;
}

/* Requests that expect no reply are done once their bytes are written;
 * they are unlinked first and their callbacks run afterwards. */
static void conn_complete_written(struct conn *c)
{
    struct conn_req *done = NULL;
    struct conn_req **donep = &done;
    struct conn_req *prev = NULL;
    struct conn_req *r = c->head;
    struct conn_req *next;
    struct conn_reply reply;

    while (r != NULL && r->end_mark <= c->written_total) {
        next = r->next;
        if (!r->expect_reply) {
            if (prev != NULL) {
                prev->next = next;
            } else {
                c->head = next;
            }
            if (c->tail == r) {
                c->tail = prev;
            }
            c->n_pending--;
            r->next = NULL;
            *donep = r;
            donep = &r->next;
        } else {
            prev = r;
        }
        r = next;
    }
    while (done != NULL) {
        next = done->next;
        memset(&reply, 0, sizeof(reply));
        done->cb(done->arg, &reply);
        mem_free(done);
        done = next;
    }
}

ssize_t conn_send_bytes(struct conn *c, const uint8_t *p, size_t len)
{
    ssize_t n;

    for (;;) {
        if (c->ssl != NULL) {
            struct conn_sigpipe sp;
            int r;
            conn_sigpipe_block(&sp);
            r = SSL_write(c->ssl, p, len > INT32_MAX ? INT32_MAX : (int)len);
            conn_sigpipe_restore(&sp);
            if (r <= 0) {
                int e = SSL_get_error(c->ssl, r);
                if (e != SSL_ERROR_WANT_WRITE && e != SSL_ERROR_WANT_READ) {
                    conn_tls_fail(c, "TLS connection lost to");
                    return -1;
                }
                return 0;
            }
            return r;
        }
        n = send(c->fd, p, len, MSG_NOSIGNAL);
        if (n >= 0) {
            return n;
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            return 0;
        }
        conn_close_errno(c, "connection lost to", errno);
        return -1;
    }
}

static void conn_write(struct conn *c)
{
    ssize_t n;

    while (c->wpos < c->wbuf.len) {
        n = conn_send_bytes(c, c->wbuf.data + c->wpos, c->wbuf.len - c->wpos);
        if (n < 0) {
            return;
        }
        if (n == 0) {
            break;
        }
        c->wpos += (size_t)n;
        c->written_total += (uint64_t)n;
    }
    if (c->wpos == c->wbuf.len) {
        c->wbuf.len = 0;
        c->wpos = 0;
    } else if (c->wpos > (1u << 20) && c->wpos > c->wbuf.len / 2) {
        memmove(c->wbuf.data, c->wbuf.data + c->wpos, c->wbuf.len - c->wpos);
        c->wbuf.len -= c->wpos;
        c->wpos = 0;
    }
    conn_complete_written(c);
}

void conn_protocol_error(struct conn *c, const char *what, const char *detail)
{
    char msg[512];

    (void)snprintf(msg, sizeof(msg), "%s from %.300s%s%.180s", what, c->name,
                   detail[0] != '\0' ? ": " : "", detail);
    conn_close(c, WEIR_EMALFORMED, msg);
}

/* Match one reply frame to the oldest request expecting a reply. */
static void conn_dispatch(struct conn *c,
                          struct weir_slice header,
                          struct weir_slice payload)
{
    struct err_detail ed;
    struct conn_req *r = c->head;
    struct conn_req *prev = NULL;
    struct conn_reply reply;
    Weir__Response *resp = NULL;

    while (r != NULL && !r->expect_reply) {
        prev = r;
        r = r->next;
    }
    if (r == NULL) {
        conn_protocol_error(c, "unexpected reply", "");
        return;
    }
    if (rpc_response_decode(header, (uint32_t)payload.len, &resp, &ed) != 0) {
        rpc_response_free(resp);
        conn_protocol_error(c, "bad reply", ed.msg);
        return;
    }
    if (resp->correlation_id != r->correlation_id) {
        rpc_response_free(resp);
        conn_protocol_error(c, "out-of-order reply", "");
        return;
    }
    if (prev != NULL) {
        prev->next = r->next;
    } else {
        c->head = r->next;
    }
    if (c->tail == r) {
        c->tail = prev;
    }
    c->n_pending--;
    memset(&reply, 0, sizeof(reply));
    reply.err = resp->error_code;
    reply.err_msg = resp->error_message != NULL && resp->error_message[0]
                        ? resp->error_message
                        : weir_err_str(resp->error_code);
    reply.resp = resp;
    reply.payload = payload;
    r->cb(r->arg, &reply);
    rpc_response_free(reply.resp);
    mem_free(r);
}

/* Handle every complete frame in rbuf, then keep the partial tail. */
static void conn_process_frames(struct conn *c)
{
    struct frame_limits lim = {c->opts.max_frame_bytes,
                               FRAME_DEFAULT_MAX_HEADER_BYTES};
    struct frame_info fi;
    struct err_detail ed;
    struct weir_slice h;
    struct weir_slice p;
    size_t pos = 0;

    while (c->state != CONN_CLOSED && c->rbuf.len - pos >= FRAME_PREFIX_BYTES) {
        if (frame_decode_prefix(c->rbuf.data + pos, &lim, &fi, &ed) != 0) {
            conn_protocol_error(c, "bad frame", ed.msg);
            return;
        }
        if (c->rbuf.len - pos < 4 + (size_t)fi.frame_len) {
            break;
        }
        h.p = c->rbuf.data + pos + FRAME_PREFIX_BYTES;
        h.len = fi.header_len;
        p.p = h.p + h.len;
        p.len = fi.payload_len;
        pos += 4 + (size_t)fi.frame_len;
        if (c->state == CONN_AUTH) {
            conn_auth_reply(c, h, p);
        } else {
            conn_dispatch(c, h, p);
        }
    }
    if (c->state == CONN_CLOSED) {
        return;
    }
    if (pos > 0) {
        memmove(c->rbuf.data, c->rbuf.data + pos, c->rbuf.len - pos);
        c->rbuf.len -= pos;
    }
}

/* Room for the rest of the frame being assembled, or a fresh chunk. */
static int conn_read_reserve(struct conn *c)
{
    size_t want = CONN_READ_CHUNK;
    uint32_t flen;

    if (c->rbuf.len >= 4) {
        flen = wire_get_u32be(c->rbuf.data);
        if (flen <= c->opts.max_frame_bytes && 4 + (size_t)flen > c->rbuf.len &&
            4 + (size_t)flen - c->rbuf.len > want) {
            want = 4 + (size_t)flen - c->rbuf.len;
        }
    }
    return buf_reserve(&c->rbuf, want);
}

/* Read into p: returns how many bytes (0 when none are ready), or -1
 * after closing the connection (the broker hung up, or an error). */
static ssize_t conn_recv_bytes(struct conn *c, uint8_t *p, size_t cap)
{
    char msg[500];
    ssize_t n;

    for (;;) {
        if (c->ssl != NULL) {
            struct conn_sigpipe sp;
            int saved;
            int r;
            conn_sigpipe_block(&sp);
            errno = 0;
            r = SSL_read(c->ssl, p, cap > INT32_MAX ? INT32_MAX : (int)cap);
            saved = errno;
            conn_sigpipe_restore(&sp);
            errno = saved;
            if (r <= 0) {
                int e = SSL_get_error(c->ssl, r);
                if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
                    return 0;
                }
                if (e != SSL_ERROR_ZERO_RETURN &&
                    !(e == SSL_ERROR_SYSCALL && errno == 0)) {
                    conn_tls_fail(c, "TLS connection lost to");
                    return -1;
                }
                r = 0; /* closed */
            }
            n = r;
        } else {
            n = read(c->fd, p, cap);
        }
        if (n > 0) {
            return n;
        }
        if (n == 0) {
            (void)snprintf(
                msg, sizeof(msg),
                "connection to %s closed by the broker%s%.100s%s", c->name,
                c->state == CONN_AUTH ? " while logging in as '" : "",
                c->state == CONN_AUTH ? conn_sasl_user(c) : "",
                c->state == CONN_AUTH ? "'" : "");
            conn_close(c, WEIR_ENETWORK, msg);
            return -1;
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            conn_close_errno(c, "connection lost to", errno);
            return -1;
        }
        return 0;
    }
}

static void conn_read(struct conn *c)
{
    char msg[400];
    ssize_t n;
    int i;

    for (i = 0;
         i < CONN_MAX_READS && (c->state == CONN_UP || c->state == CONN_AUTH);
         i++) {
        if (conn_read_reserve(c) != 0) {
            (void)snprintf(msg, sizeof(msg), "out of memory reading from %s",
                           c->name);
            conn_close(c, WEIR_ENOMEM, msg);
            return;
        }
        n = conn_recv_bytes(c, c->rbuf.data + c->rbuf.len,
                            c->rbuf.cap - c->rbuf.len);
        if (n <= 0) {
            return;
        }
        c->rbuf.len += (size_t)n;
        conn_process_frames(c);
    }
}

static void conn_finish_connect(struct conn *c)
{
    int e = 0;
    socklen_t len = sizeof(e);

    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &e, &len) != 0) {
        e = errno;
    }
    if (e != 0) {
        conn_close_errno(c, "cannot connect to", e);
        return;
    }
    conn_tcp_up(c);
}

static void conn_check_deadlines(struct conn *c, uint64_t now_ms)
{
    struct conn_req *r;
    char msg[600];

    if (c->state == CONN_AUTH && now_ms >= c->connect_deadline_ms) {
        (void)snprintf(msg, sizeof(msg),
                       "cannot log in to %s as '%.100s': no answer within "
                       "%u ms",
                       c->name, conn_sasl_user(c), c->opts.connect_timeout_ms);
        conn_close(c, WEIR_ENETWORK, msg);
        return;
    }
    if ((c->state == CONN_CONNECTING || c->state == CONN_HANDSHAKE) &&
        now_ms >= c->connect_deadline_ms) {
        (void)snprintf(msg, sizeof(msg),
                       "cannot connect to %s: timed out after %u ms", c->name,
                       c->opts.connect_timeout_ms);
        conn_close(c, WEIR_ENETWORK, msg);
        return;
    }
    for (r = c->head; r != NULL; r = r->next) {
        if (now_ms >= r->deadline_ms) {
            (void)snprintf(msg, sizeof(msg), "no reply from %s within %u ms",
                           c->name, r->timeout_ms);
            conn_close(c, WEIR_EREQUEST_TIMED_OUT, msg);
            return;
        }
    }
}

void conn_handle(struct conn *c, short revents, uint64_t now_ms)
{
    if (c->state == CONN_CONNECTING &&
        (revents & (POLLOUT | POLLERR | POLLHUP)) != 0) {
        conn_finish_connect(c);
    } else if (c->state == CONN_HANDSHAKE &&
               (revents & (POLLIN | POLLOUT | POLLERR | POLLHUP)) != 0) {
        conn_tls_handshake(c);
    }
    if ((c->state == CONN_UP || c->state == CONN_AUTH) &&
        (revents & (POLLIN | POLLERR | POLLHUP)) != 0) {
        conn_read(c);
    }
    if (c->state == CONN_AUTH && conn_auth_is_writing(c)) {
        conn_auth_write(c);
    }
    if (c->state == CONN_UP && c->wpos < c->wbuf.len) {
        conn_write(c);
    }
    if (c->state != CONN_CLOSED) {
        conn_check_deadlines(c, now_ms);
    }
    if (c->state == CONN_CLOSED && c->closed_ms == 0) {
        c->closed_ms = now_ms == 0 ? 1 : now_ms;
    }
}

uint64_t conn_next_deadline(const struct conn *c)
{
    uint64_t d = UINT64_MAX;
    const struct conn_req *r;

    if (c->state == CONN_CLOSED) {
        return d;
    }
    if (c->state == CONN_CONNECTING || c->state == CONN_HANDSHAKE ||
        c->state == CONN_AUTH) {
        d = c->connect_deadline_ms;
    }
    for (r = c->head; r != NULL; r = r->next) {
        if (r->deadline_ms < d) {
            d = r->deadline_ms;
        }
    }
    return d;
}

int conn_fd(const struct conn *c)
{
    return c->fd;
}

short conn_events(const struct conn *c)
{
    switch (c->state) {
    case CONN_CONNECTING:
        return POLLOUT;
    case CONN_HANDSHAKE:
        return c->hs_events;
    case CONN_AUTH:
        return (short)(POLLIN | (conn_auth_is_writing(c) ? POLLOUT : 0));
    case CONN_UP:
        return (short)(POLLIN | (c->wpos < c->wbuf.len ? POLLOUT : 0));
    default:
        return 0;
    }
}

bool conn_is_closed(const struct conn *c)
{
    return c->state == CONN_CLOSED;
}

bool conn_is_up(const struct conn *c)
{
    return c->state == CONN_UP;
}

size_t conn_in_flight(const struct conn *c)
{
    return c->n_pending;
}

size_t conn_unwritten(const struct conn *c)
{
    return c->wbuf.len - c->wpos;
}

const char *conn_host(const struct conn *c)
{
    return c->host;
}

uint16_t conn_port(const struct conn *c)
{
    return c->port;
}

const char *conn_name(const struct conn *c)
{
    return c->name;
}

const char *conn_close_reason(const struct conn *c)
{
    return c->close_reason;
}

int conn_close_err(const struct conn *c)
{
    return c->close_err;
}

uint64_t conn_closed_ms(const struct conn *c)
{
    return c->closed_ms;
}

bool conn_was_up(const struct conn *c)
{
    return c->was_up;
}
