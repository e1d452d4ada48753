/* SPDX-License-Identifier: Apache-2.0 */
/* The option is typed by people and read by every member: a typo must stop
 * the start with a message that points at the element, not resolve to a
 * different quorum. So nothing is guessed: no spaces, no leading zeros, no
 * empty elements. */
#include "controller/quorum/raft_voters.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* One element, for messages: at most this many characters of it. */
#define RAFT_VOTERS_SHOW 80

struct raft_voters_elem {
    const char *p; /* into the option text */
    size_t len;
    uint32_t pos; /* 1-based, for messages */
};

static int raft_voters_fail(struct err_detail *ed,
                            const struct raft_voters_elem *e,
                            const char *why)
{
    int show = e->len > RAFT_VOTERS_SHOW ? RAFT_VOTERS_SHOW : (int)e->len;

    return err_set(ed, WEIR_ECONFIG, "voters: element %u '%.*s%s': %s", e->pos,
                   show, e->p, e->len > RAFT_VOTERS_SHOW ? "..." : "", why);
}

/* Decimal without sign or leading zero, at most max. */
static bool
raft_voters_number(const char *p, size_t n, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    size_t i;

    if (n == 0 || n > 10 || (p[0] == '0' && n > 1)) {
        return false;
    }
    for (i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') {
            return false;
        }
        v = v * 10 + (uint64_t)(p[i] - '0');
    }
    if (v == 0 || v > max) {
        return false;
    }
    *out = v;
    return true;
}

static bool raft_voters_label_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '-';
}

/* A DNS name (labels of 1..63 letters, digits and '-', not starting or
 * ending with '-'), or dotted digits that must then be an IPv4 address. */
static bool raft_voters_host_ok(const char *h)
{
    struct in_addr a4;
    size_t n = strlen(h);
    size_t label = 0;
    bool all_digits = true;
    size_t i;

    if (n == 0 || n > RAFT_VOTERS_HOST_MAX) {
        return false;
    }
    for (i = 0; i <= n; i++) {
        if (i == n || h[i] == '.') {
            if (label == 0 || h[i - 1] == '-' || h[i - label] == '-') {
                return false;
            }
            label = 0;
            continue;
        }
        if (!raft_voters_label_char(h[i]) || ++label > 63) {
            return false;
        }
        if (h[i] < '0' || h[i] > '9') {
            all_digits = false;
        }
    }
    return !all_digits || inet_pton(AF_INET, h, &a4) == 1;
}

/* HOST:PORT or [V6]:PORT into v. */
static int raft_voters_addr(const struct raft_voters_elem *e,
                            const char *a,
                            size_t n,
                            struct raft_voter *v,
                            struct err_detail *ed)
{
    struct in6_addr a6;
    const char *colon;
    size_t hlen;
    uint64_t port;
    bool v6 = n > 0 && a[0] == '[';

    if (v6) {
        colon = memchr(a, ']', n);
        if (colon == NULL || colon + 1 == a + n || colon[1] != ':') {
            return raft_voters_fail(ed, e, "expected [IPV6]:PORT");
        }
        hlen = (size_t)(colon - a) - 1;
        colon++;
    } else {
        colon = memchr(a, ':', n);
        if (colon == NULL ||
            memchr(colon + 1, ':', n - (size_t)(colon - a) - 1) != NULL) {
            return raft_voters_fail(ed, e,
                                    "expected HOST:PORT (an IPv6 address "
                                    "goes in brackets)");
        }
        hlen = (size_t)(colon - a);
    }
    if (hlen == 0 || hlen > RAFT_VOTERS_HOST_MAX) {
        return raft_voters_fail(ed, e, "host is empty or too long");
    }
    memcpy(v->host, v6 ? a + 1 : a, hlen);
    v->host[hlen] = '\0';
    if (v6 ? inet_pton(AF_INET6, v->host, &a6) != 1
           : !raft_voters_host_ok(v->host)) {
        return raft_voters_fail(ed, e,
                                v6 ? "not an IPv6 address"
                                   : "host is neither a name nor an IPv4 "
                                     "address");
    }
    if (!raft_voters_number(colon + 1, n - (size_t)(colon + 1 - a), 65535,
                            &port)) {
        return raft_voters_fail(ed, e, "port must be 1..65535");
    }
    v->port = (uint16_t)port;
    (void)snprintf(v->address, sizeof(v->address), v6 ? "[%s]:%u" : "%s:%u",
                   v->host, (unsigned)v->port);
    return 0;
}

static int raft_voters_elem(const struct raft_voters_elem *e,
                            struct raft_voter *v,
                            struct err_detail *ed)
{
    const char *at = memchr(e->p, '@', e->len);
    uint64_t id;

    if (e->len == 0) {
        return raft_voters_fail(ed, e, "empty (expected ID@HOST:PORT)");
    }
    if (at == NULL) {
        return raft_voters_fail(ed, e, "expected ID@HOST:PORT");
    }
    if (!raft_voters_number(e->p, (size_t)(at - e->p), RAFT_MAX_ID, &id)) {
        return raft_voters_fail(ed, e,
                                "id must be a number 1..2147483647 (no sign, "
                                "no leading zero)");
    }
    v->id = (uint32_t)id;
    return raft_voters_addr(e, at + 1, e->len - (size_t)(at + 1 - e->p), v, ed);
}

static int raft_voters_distinct(const struct raft_voters *vs,
                                const struct raft_voters_elem *e,
                                struct err_detail *ed)
{
    const struct raft_voter *v = &vs->v[vs->n];
    uint32_t i;

    for (i = 0; i < vs->n; i++) {
        if (vs->v[i].id == v->id) {
            return raft_voters_fail(ed, e, "id given twice");
        }
        if (vs->v[i].port == v->port &&
            strcasecmp(vs->v[i].host, v->host) == 0) {
            return raft_voters_fail(ed, e, "address given twice");
        }
    }
    return 0;
}

int raft_voters_parse(const char *text,
                      struct raft_voters *out,
                      struct err_detail *ed)
{
    struct raft_voters_elem e;
    const char *p = text;
    const char *comma;
    int rv;

    memset(out, 0, sizeof(*out));
    if (text == NULL || text[0] == '\0') {
        return err_set(ed, WEIR_ECONFIG, "voters: empty");
    }
    if (strlen(text) > RAFT_VOTERS_TEXT_MAX) {
        return err_set(ed, WEIR_ECONFIG, "voters: longer than %u characters",
                       (unsigned)RAFT_VOTERS_TEXT_MAX);
    }
    for (e.pos = 1;; e.pos++) {
        comma = strchr(p, ',');
        e.p = p;
        e.len = comma != NULL ? (size_t)(comma - p) : strlen(p);
        if (out->n == RAFT_MAX_VOTERS) {
            rv = raft_voters_fail(ed, &e, "more than 7 voters");
            break;
        }
        rv = raft_voters_elem(&e, &out->v[out->n], ed);
        if (rv == 0) {
            rv = raft_voters_distinct(out, &e, ed);
        }
        if (rv != 0) {
            break;
        }
        out->n++;
        if (comma == NULL) {
            return 0;
        }
        p = comma + 1;
    }
    memset(out, 0, sizeof(*out));
    return rv;
}

const struct raft_voter *raft_voters_find(const struct raft_voters *vs,
                                          uint32_t id)
{
    uint32_t i;

    for (i = 0; i < vs->n; i++) {
        if (vs->v[i].id == id) {
            return &vs->v[i];
        }
    }
    return NULL;
}
