/* SPDX-License-Identifier: Apache-2.0 */
#include "client/pool.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/mem.h"

/* One address and lane. The entry outlives its connections, so it can
 * remember the last connect failure for the backoff. */
struct pool_entry {
    struct pool_entry *next;
    char *host;
    uint16_t port;
    enum pool_lane lane;
    struct conn *conn;  /* NULL between connections */
    uint64_t failed_ms; /* last failed connect, 0 = none */
    int fail_err;
    char fail_msg[512];
};

struct pool {
    const struct conn_opts *opts;
    const struct clock *clock;
    struct pool_entry *entries;
    struct conn **dead; /* closed, freed at the end of pool_poll */
    size_t n_dead;
    size_t cap_dead;
    struct pollfd *pfds;  /* scratch for poll() */
    struct conn **pconns; /* the connection behind each pfds entry */
    size_t cap_pfds;
    bool in_poll;
    bool interrupted;
};

int pool_new(const struct conn_opts *opts,
             const struct clock *clock,
             struct pool **out)
{
    struct pool *p = mem_calloc(1, sizeof(*p));

    *out = p;
    if (p == NULL) {
        return WEIR_ENOMEM;
    }
    p->opts = opts;
    p->clock = clock;
    return 0;
}

void pool_free(struct pool *p)
{
    struct pool_entry *e;
    size_t i;

    if (p == NULL) {
        return;
    }
    while ((e = p->entries) != NULL) {
        p->entries = e->next;
        conn_free(e->conn);
        mem_free(e->host);
        mem_free(e);
    }
    for (i = 0; i < p->n_dead; i++) {
        conn_free(p->dead[i]);
    }
    mem_free(p->dead);
    mem_free(p->pfds);
    mem_free(p->pconns);
    mem_free(p);
}

uint64_t pool_now_ms(const struct pool *p)
{
    return clock_now_ms(p->clock);
}

bool pool_interrupted(const struct pool *p)
{
    return p->interrupted;
}

bool pool_in_poll(const struct pool *p)
{
    return p->in_poll;
}

static struct pool_entry *
pool_find(struct pool *p, const char *host, uint16_t port, enum pool_lane lane)
{
    struct pool_entry *e;

    for (e = p->entries; e != NULL; e = e->next) {
        if (e->port == port && e->lane == lane && strcmp(e->host, host) == 0) {
            return e;
        }
    }
    e = mem_calloc(1, sizeof(*e));
    if (e == NULL) {
        return NULL;
    }
    e->host = mem_strdup(host);
    if (e->host == NULL) {
        mem_free(e);
        return NULL;
    }
    e->port = port;
    e->lane = lane;
    e->next = p->entries;
    p->entries = e;
    return e;
}

/* Move a closed connection out of its entry, noting a failed connect.
 * It is freed at the end of pool_poll: we may be inside its callback. */
static int pool_retire(struct pool *p, struct pool_entry *e, uint64_t now)
{
    struct conn **d;

    if (p->n_dead == p->cap_dead) {
        size_t cap = p->cap_dead == 0 ? 8 : p->cap_dead * 2;
        d = mem_realloc(p->dead, cap * sizeof(*d));
        if (d == NULL) {
            return WEIR_ENOMEM;
        }
        p->dead = d;
        p->cap_dead = cap;
    }
    if (!conn_was_up(e->conn)) {
        e->failed_ms =
            conn_closed_ms(e->conn) != 0 ? conn_closed_ms(e->conn) : now;
        e->fail_err = conn_close_err(e->conn);
        (void)snprintf(e->fail_msg, sizeof(e->fail_msg), "%s",
                       conn_close_reason(e->conn));
    }
    p->dead[p->n_dead++] = e->conn;
    e->conn = NULL;
    return 0;
}

int pool_get(struct pool *p,
             const char *host,
             uint16_t port,
             enum pool_lane lane,
             struct conn **out,
             struct err_detail *ed)
{
    uint64_t now = clock_now_ms(p->clock);
    struct pool_entry *e;
    int rv;

    *out = NULL;
    e = pool_find(p, host, port, lane);
    if (e == NULL) {
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    if (e->conn != NULL && !conn_is_closed(e->conn)) {
        *out = e->conn;
        return 0;
    }
    if (e->conn != NULL && pool_retire(p, e, now) != 0) {
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    if (e->failed_ms != 0 && now < e->failed_ms + POOL_RECONNECT_BACKOFF_MS) {
        return err_set(ed, e->fail_err != 0 ? e->fail_err : WEIR_ENETWORK, "%s",
                       e->fail_msg);
    }
    rv = conn_open(host, port, p->opts, now, &e->conn, ed);
    if (rv != 0) {
        e->failed_ms = now == 0 ? 1 : now;
        e->fail_err = rv;
        (void)snprintf(e->fail_msg, sizeof(e->fail_msg), "%s",
                       ed != NULL ? ed->msg : weir_err_str(rv));
        return rv;
    }
    e->failed_ms = 0;
    *out = e->conn;
    return 0;
}

void pool_close_addr(
    struct pool *p, const char *host, uint16_t port, int err, const char *msg)
{
    struct pool_entry *e;

    for (e = p->entries; e != NULL; e = e->next) {
        if (e->conn != NULL && !conn_is_closed(e->conn) && e->port == port &&
            strcmp(e->host, host) == 0) {
            conn_close(e->conn, err, msg);
        }
    }
}

static int pool_reserve_pfds(struct pool *p, size_t n)
{
    struct pollfd *pf;
    struct conn **pc;
    size_t cap;

    if (n <= p->cap_pfds) {
        return 0;
    }
    cap = n < 16 ? 16 : n * 2;
    pf = mem_realloc(p->pfds, cap * sizeof(*pf));
    if (pf == NULL) {
        return WEIR_ENOMEM;
    }
    p->pfds = pf;
    pc = mem_realloc(p->pconns, cap * sizeof(*pc));
    if (pc == NULL) {
        return WEIR_ENOMEM;
    }
    p->pconns = pc;
    p->cap_pfds = cap;
    return 0;
}

/* Fill pfds with live connections then the extras; returns the count of
 * connections, or SIZE_MAX when out of memory. */
static size_t pool_fill(struct pool *p,
                        const struct pollfd *extra,
                        size_t n_extra,
                        uint64_t *deadline)
{
    struct pool_entry *e;
    size_t n = 0;
    uint64_t d;

    for (e = p->entries; e != NULL; e = e->next) {
        n += e->conn != NULL && !conn_is_closed(e->conn);
    }
    if (pool_reserve_pfds(p, n + n_extra) != 0) {
        return SIZE_MAX;
    }
    n = 0;
    for (e = p->entries; e != NULL; e = e->next) {
        if (e->conn == NULL || conn_is_closed(e->conn)) {
            continue;
        }
        p->pfds[n].fd = conn_fd(e->conn);
        p->pfds[n].events = conn_events(e->conn);
        p->pfds[n].revents = 0;
        p->pconns[n] = e->conn;
        d = conn_next_deadline(e->conn);
        if (d < *deadline) {
            *deadline = d;
        }
        n++;
    }
    if (n_extra > 0) {
        memcpy(p->pfds + n, extra, n_extra * sizeof(*extra));
    }
    return n;
}

/* Free connections that closed, outside any of their callbacks. */
static void pool_reap(struct pool *p, uint64_t now)
{
    struct pool_entry *e;
    size_t i;

    for (e = p->entries; e != NULL; e = e->next) {
        if (e->conn != NULL && conn_is_closed(e->conn)) {
            (void)pool_retire(p, e, now);
        }
    }
    for (i = 0; i < p->n_dead; i++) {
        conn_free(p->dead[i]);
    }
    p->n_dead = 0;
}

static int pool_wait_ms(uint64_t now, uint64_t deadline, int timeout_ms)
{
    uint64_t left;

    if (deadline == UINT64_MAX) {
        return timeout_ms;
    }
    left = deadline > now ? deadline - now : 0;
    if (timeout_ms < 0 || left < (uint64_t)timeout_ms) {
        return left > 3600000 ? 3600000 : (int)left;
    }
    return timeout_ms;
}

int pool_poll(struct pool *p,
              struct pollfd *extra,
              size_t n_extra,
              int timeout_ms)
{
    uint64_t deadline = UINT64_MAX;
    uint64_t now;
    size_t n;
    size_t i;
    int rc;

    if (p->in_poll) {
        return WEIR_EINVALID_ARGUMENT;
    }
    p->in_poll = true;
    p->interrupted = false;
    n = pool_fill(p, extra, n_extra, &deadline);
    if (n == SIZE_MAX) {
        p->in_poll = false;
        return WEIR_ENOMEM;
    }
    now = clock_now_ms(p->clock);
    rc = poll(p->pfds, (nfds_t)(n + n_extra),
              pool_wait_ms(now, deadline, timeout_ms));
    if (rc < 0 && errno == EINTR) {
        p->interrupted = true;
    }
    now = clock_now_ms(p->clock);
    for (i = 0; i < n_extra; i++) {
        extra[i].revents = rc > 0 ? p->pfds[n + i].revents : 0;
    }
    for (i = 0; i < n; i++) {
        conn_handle(p->pconns[i], rc > 0 ? p->pfds[i].revents : 0, now);
    }
    pool_reap(p, now);
    p->in_poll = false;
    return 0;
}
