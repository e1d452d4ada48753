/* SPDX-License-Identifier: Apache-2.0 */
/* Finding the active controller among the quorum members (see the
 * header). Reports name the address they are about: the broker's two
 * connections both see a member go away, and only the first report may
 * move; the second names an address that is no longer current. */
#include "broker/cluster/cluster_finder.h"

#include <stdio.h>
#include <string.h>

#include "common/net/addr.h"

static uint64_t cluster_finder_rand(struct cluster_finder *f)
{
    /* xorshift64*: enough for jitter, and repeatable from the seed */
    f->rng ^= f->rng >> 12;
    f->rng ^= f->rng << 25;
    f->rng ^= f->rng >> 27;
    return f->rng * 0x2545F4914F6CDD1DULL;
}

static int cluster_finder_find(const struct cluster_finder *f, const char *addr)
{
    uint32_t i;

    for (i = 0; i < f->n; i++) {
        if (strcmp(f->addrs[i], addr) == 0) {
            return (int)i;
        }
    }
    return -1;
}

/* One element of the list, trimmed, checked and appended. */
static int cluster_finder_add_configured(struct cluster_finder *f,
                                         const char *start,
                                         size_t len,
                                         uint32_t pos,
                                         struct err_detail *ed)
{
    char host[256];
    char *a;
    uint16_t port;
    struct err_detail aed;

    while (len > 0 && (*start == ' ' || *start == '\t')) {
        start++;
        len--;
    }
    while (len > 0 && (start[len - 1] == ' ' || start[len - 1] == '\t')) {
        len--;
    }
    if (len == 0) {
        return err_set(ed, WEIR_ECONFIG,
                       "controller: element %u of the list is empty (want "
                       "HOST:PORT[,HOST:PORT...])",
                       (unsigned)pos);
    }
    if (len >= CLUSTER_FINDER_ADDR_CAP) {
        return err_set(ed, WEIR_ECONFIG,
                       "controller: element %u of the list is longer than "
                       "%u bytes",
                       (unsigned)pos, (unsigned)CLUSTER_FINDER_ADDR_CAP - 1);
    }
    if (f->n == CLUSTER_FINDER_MAX_CONFIGURED) {
        return err_set(ed, WEIR_ECONFIG, "controller: more than %u addresses",
                       (unsigned)CLUSTER_FINDER_MAX_CONFIGURED);
    }
    a = f->addrs[f->n];
    memcpy(a, start, len);
    a[len] = '\0';
    if (addr_split(a, host, sizeof(host), &port, &aed) != 0 || port == 0) {
        return err_set(ed, WEIR_ECONFIG,
                       "controller: element %u of the list, '%s', is not "
                       "HOST:PORT with a port from 1 to 65535",
                       (unsigned)pos, a);
    }
    if (cluster_finder_find(f, a) >= 0) {
        return err_set(ed, WEIR_ECONFIG, "controller: '%s' is listed twice", a);
    }
    f->n++;
    return 0;
}

int cluster_finder_init(struct cluster_finder *f,
                        const char *list,
                        uint64_t backoff_min_ms,
                        uint64_t backoff_max_ms,
                        uint64_t seed,
                        struct err_detail *ed)
{
    const char *p = list != NULL ? list : "";
    uint32_t pos = 1;
    int rv;

    memset(f, 0, sizeof(*f));
    f->backoff_min_ms = backoff_min_ms > 0 ? backoff_min_ms : 1;
    f->backoff_max_ms = backoff_max_ms >= f->backoff_min_ms ? backoff_max_ms
                                                            : f->backoff_min_ms;
    f->backoff_ms = f->backoff_min_ms;
    f->rng = seed != 0 ? seed : 0x9E3779B97F4A7C15ULL;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma != NULL ? (size_t)(comma - p) : strlen(p);
        rv = cluster_finder_add_configured(f, p, len, pos++, ed);
        if (rv != 0) {
            f->n = 0;
            return rv;
        }
        if (comma == NULL) {
            break;
        }
        p = comma + 1;
    }
    f->n_configured = f->n;
    f->next_learned = f->n;
    return 0;
}

const char *cluster_finder_current(const struct cluster_finder *f)
{
    return f->addrs[f->cur];
}

uint64_t cluster_finder_not_before(const struct cluster_finder *f)
{
    return f->not_before_ms;
}

static bool cluster_finder_is_current(const struct cluster_finder *f,
                                      const char *addr)
{
    return f->n > 0 && addr != NULL && strcmp(addr, f->addrs[f->cur]) == 0;
}

static bool cluster_finder_shunned(const struct cluster_finder *f,
                                   uint32_t i,
                                   uint64_t now_ms)
{
    return f->shun_until_ms[i] > now_ms;
}

void cluster_finder_on_success(struct cluster_finder *f, const char *addr)
{
    if (!cluster_finder_is_current(f, addr)) {
        return;
    }
    f->shun_until_ms[f->cur] = 0;
    f->moves = 0;
    f->backoff_ms = f->backoff_min_ms;
    f->not_before_ms = 0;
}

/* Move to index to; the first round of moves goes at once, later ones
 * wait the backoff (3/4 to 5/4 of it, at most the bound). A move to a
 * named active controller is news, not a failure: it waits at most the
 * smallest backoff and does not grow it, so a broker reaches a new active
 * controller soon after a member learns of it (two members naming each
 * other with stale hints still cannot make a busy loop). */
static void cluster_finder_move_to(struct cluster_finder *f,
                                   uint32_t to,
                                   enum cluster_finder_reason reason,
                                   uint64_t now_ms,
                                   struct cluster_finder_move *out)
{
    uint64_t b =
        reason == CLUSTER_FINDER_HINT ? f->backoff_min_ms : f->backoff_ms;

    (void)snprintf(out->from, sizeof(out->from), "%s", f->addrs[f->cur]);
    out->moved = true;
    out->reason = reason;
    out->delay_ms = 0;
    f->cur = to;
    f->moves++;
    if (f->moves > f->n) {
        out->delay_ms = b - b / 4 + cluster_finder_rand(f) % (b / 2 + 1);
        if (out->delay_ms > f->backoff_max_ms) {
            out->delay_ms = f->backoff_max_ms;
        }
        if (reason != CLUSTER_FINDER_HINT) {
            f->backoff_ms =
                b * 2 > f->backoff_max_ms ? f->backoff_max_ms : b * 2;
        }
    }
    f->not_before_ms = now_ms + out->delay_ms;
}

/* The slot of hint: found, appended, or (list full) a learned one
 * replaced in turn; never the current one. */
static uint32_t cluster_finder_slot(struct cluster_finder *f, const char *hint)
{
    int at = cluster_finder_find(f, hint);
    uint32_t slot;

    if (at >= 0) {
        return (uint32_t)at;
    }
    if (f->n < CLUSTER_FINDER_MAX_ADDRS) {
        slot = f->n++;
    } else {
        slot = f->next_learned;
        if (slot == f->cur) {
            slot = slot + 1 < f->n ? slot + 1 : f->n_configured;
        }
        f->next_learned = slot + 1 < f->n ? slot + 1 : f->n_configured;
    }
    (void)snprintf(f->addrs[slot], sizeof(f->addrs[slot]), "%s", hint);
    f->shun_until_ms[slot] = 0;
    return slot;
}

static void cluster_finder_next(struct cluster_finder *f,
                                enum cluster_finder_reason reason,
                                uint64_t now_ms,
                                struct cluster_finder_move *out)
{
    uint32_t to = (f->cur + 1) % f->n;
    uint32_t i;

    if (to == f->cur) {
        /* one address: nowhere else to go, but the caller's next call
         * waits as a move would (cluster_finder_not_before) */
        cluster_finder_move_to(f, to, reason, now_ms, out);
        out->moved = false;
        return;
    }
    /* the next one not passed over; if all others are, the next one */
    for (i = 0; i + 1 < f->n; i++) {
        uint32_t k = (f->cur + 1 + i) % f->n;
        if (!cluster_finder_shunned(f, k, now_ms)) {
            to = k;
            break;
        }
    }
    cluster_finder_move_to(f, to, reason, now_ms, out);
}

void cluster_finder_on_not_controller(struct cluster_finder *f,
                                      const char *addr,
                                      const char *hint,
                                      uint64_t now_ms,
                                      struct cluster_finder_move *out)
{
    char h[CLUSTER_FINDER_ADDR_CAP];
    char host[256];
    uint16_t port;
    struct err_detail ed;

    int at;

    memset(out, 0, sizeof(*out));
    if (!cluster_finder_is_current(f, addr)) {
        return;
    }
    f->shun_until_ms[f->cur] = 0; /* it answered */
    at = hint != NULL ? cluster_finder_find(f, hint) : -1;
    /* a hint is untrusted input: only a usable host:port is followed, and
     * not to an address that just failed (a stale name for a dead one) */
    if (hint == NULL || hint[0] == '\0' || strlen(hint) >= sizeof(h) ||
        strcmp(hint, addr) == 0 ||
        (at >= 0 && cluster_finder_shunned(f, (uint32_t)at, now_ms)) ||
        addr_split(hint, host, sizeof(host), &port, &ed) != 0 || port == 0) {
        cluster_finder_next(f, CLUSTER_FINDER_NOT_ACTIVE, now_ms, out);
        return;
    }
    (void)snprintf(h, sizeof(h), "%s", hint);
    cluster_finder_move_to(f, cluster_finder_slot(f, h), CLUSTER_FINDER_HINT,
                           now_ms, out);
}

void cluster_finder_on_failure(struct cluster_finder *f,
                               const char *addr,
                               bool timeout,
                               uint64_t now_ms,
                               struct cluster_finder_move *out)
{
    memset(out, 0, sizeof(*out));
    if (!cluster_finder_is_current(f, addr)) {
        return;
    }
    if (timeout) {
        /* silent (a host gone): every call to it costs a whole timeout;
         * a refused connection costs nothing and is tried as usual (a
         * member restarting on a new port refuses for a moment) */
        f->shun_until_ms[f->cur] = now_ms + CLUSTER_FINDER_SHUN_MS;
    }
    cluster_finder_next(
        f, timeout ? CLUSTER_FINDER_TIMEOUT : CLUSTER_FINDER_UNREACHABLE,
        now_ms, out);
}

const char *cluster_finder_reason_name(enum cluster_finder_reason r)
{
    switch (r) {
    case CLUSTER_FINDER_HINT:
        return "hint";
    case CLUSTER_FINDER_NOT_ACTIVE:
        return "not_active";
    case CLUSTER_FINDER_UNREACHABLE:
        return "unreachable";
    case CLUSTER_FINDER_TIMEOUT:
        return "timeout";
    }
    return "unknown";
}
