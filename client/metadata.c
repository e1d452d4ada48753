/* SPDX-License-Identifier: Apache-2.0 */
#include "client/metadata.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/call.h"
#include "common/mem.h"
#include "common/rpc.h"

#define METADATA_DEFAULT_PORT 9092

struct md_broker {
    int32_t id;
    struct md_addr addr;
    bool fenced; /* out of service: leads nothing, may be a zombie */
};

struct metadata {
    struct pool *pool; /* borrowed */
    uint32_t request_timeout_ms;
    struct md_addr *bootstrap;
    size_t n_bootstrap;
    struct md_broker *brokers; /* from the last answer */
    size_t n_brokers;
    struct md_topic **topics; /* entries never move or go away */
    size_t n_topics;
    size_t cap_topics;
    bool inflight; /* an async refresh is out */
    uint64_t last_async_ms;
    unsigned rr; /* next broker for async refreshes */
    uint64_t generation;
    bool tls; /* use brokers' TLS listeners (metadata_use_tls) */
};

void metadata_addrs_free(struct md_addr *a, size_t n)
{
    size_t i;

    for (i = 0; a != NULL && i < n; i++) {
        mem_free(a[i].host);
    }
    mem_free(a);
}

/* One "host:port", "host", "[v6]:port" item of length len. */
static int metadata_parse_addr(const char *s,
                               size_t len,
                               struct md_addr *a,
                               struct err_detail *ed)
{
    const char *host = s;
    size_t hlen = len;
    const char *colon = NULL;
    char portbuf[8];
    char *end;
    long port = METADATA_DEFAULT_PORT;
    size_t i;

    if (len > 0 && s[0] == '[') {
        const char *rb = memchr(s, ']', len);
        if (rb == NULL) {
            return err_set(ed, WEIR_EINVALID_ARGUMENT,
                           "bad broker address '%.*s': missing ']'", (int)len,
                           s);
        }
        host = s + 1;
        hlen = (size_t)(rb - s) - 1;
        colon = rb + 1 < s + len && rb[1] == ':' ? rb + 1 : NULL;
    } else {
        for (i = 0; i < len; i++) {
            if (s[i] == ':') {
                colon = s + i;
                hlen = i;
            }
        }
    }
    if (colon != NULL) {
        size_t plen = len - (size_t)(colon + 1 - s);
        if (plen == 0 || plen >= sizeof(portbuf)) {
            goto bad_port;
        }
        memcpy(portbuf, colon + 1, plen);
        portbuf[plen] = '\0';
        errno = 0;
        port = strtol(portbuf, &end, 10);
        if (*end != '\0' || port < 1 || port > 65535) {
            goto bad_port;
        }
    }
    if (hlen == 0) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "bad broker address '%.*s': no host", (int)len, s);
    }
    a->host = mem_strndup(host, hlen);
    if (a->host == NULL) {
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    a->port = (uint16_t)port;
    return 0;

bad_port:
    return err_set(ed, WEIR_EINVALID_ARGUMENT,
                   "bad broker address '%.*s': port must be 1-65535", (int)len,
                   s);
}

int metadata_parse_bootstrap(const char *list,
                             struct md_addr **out,
                             size_t *n,
                             struct err_detail *ed)
{
    struct md_addr *a;
    size_t count = 1;
    size_t k = 0;
    const char *p;
    const char *comma;
    size_t len;
    int rv;

    *out = NULL;
    *n = 0;
    for (p = list; *p != '\0'; p++) {
        count += *p == ',';
    }
    a = mem_calloc(count, sizeof(*a));
    if (a == NULL) {
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    for (p = list;; p = comma + 1) {
        comma = strchr(p, ',');
        len = comma != NULL ? (size_t)(comma - p) : strlen(p);
        while (len > 0 && *p == ' ') {
            p++;
            len--;
        }
        while (len > 0 && p[len - 1] == ' ') {
            len--;
        }
        if (len > 0) {
            rv = metadata_parse_addr(p, len, &a[k], ed);
            if (rv != 0) {
                metadata_addrs_free(a, k);
                return rv;
            }
            k++;
        }
        if (comma == NULL) {
            break;
        }
    }
    if (k == 0) {
        mem_free(a);
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "bootstrap list '%s' names no broker", list);
    }
    *out = a;
    *n = k;
    return 0;
}

int metadata_new(const char *bootstrap,
                 struct pool *pool,
                 uint32_t request_timeout_ms,
                 struct metadata **out,
                 struct err_detail *ed)
{
    struct metadata *md;
    int rv;

    *out = NULL;
    md = mem_calloc(1, sizeof(*md));
    if (md == NULL) {
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    rv = metadata_parse_bootstrap(bootstrap, &md->bootstrap, &md->n_bootstrap,
                                  ed);
    if (rv != 0) {
        mem_free(md);
        return rv;
    }
    md->pool = pool;
    md->request_timeout_ms = request_timeout_ms;
    *out = md;
    return 0;
}

static void metadata_brokers_free(struct metadata *md)
{
    size_t i;

    for (i = 0; i < md->n_brokers; i++) {
        mem_free(md->brokers[i].addr.host);
    }
    mem_free(md->brokers);
    md->brokers = NULL;
    md->n_brokers = 0;
}

void metadata_use_tls(struct metadata *md)
{
    md->tls = true;
}

void metadata_free(struct metadata *md)
{
    size_t i;

    if (md == NULL) {
        return;
    }
    for (i = 0; i < md->n_topics; i++) {
        mem_free(md->topics[i]->name);
        mem_free(md->topics[i]->parts);
        mem_free(md->topics[i]);
    }
    mem_free(md->topics);
    metadata_brokers_free(md);
    metadata_addrs_free(md->bootstrap, md->n_bootstrap);
    mem_free(md);
}

struct md_topic *metadata_topic(struct metadata *md, const char *topic)
{
    size_t i;

    for (i = 0; i < md->n_topics; i++) {
        if (strcmp(md->topics[i]->name, topic) == 0) {
            return md->topics[i];
        }
    }
    return NULL;
}

struct md_topic *metadata_want(struct metadata *md, const char *topic)
{
    struct md_topic *t = metadata_topic(md, topic);
    struct md_topic **v;

    if (t != NULL) {
        return t;
    }
    if (md->n_topics == md->cap_topics) {
        size_t cap = md->cap_topics == 0 ? 8 : md->cap_topics * 2;
        v = mem_realloc(md->topics, cap * sizeof(*v));
        if (v == NULL) {
            return NULL;
        }
        md->topics = v;
        md->cap_topics = cap;
    }
    t = mem_calloc(1, sizeof(*t));
    if (t == NULL) {
        return NULL;
    }
    t->name = mem_strdup(topic);
    if (t->name == NULL) {
        mem_free(t);
        return NULL;
    }
    t->err = WEIR_EUNKNOWN_TOPIC_OR_PARTITION;
    (void)snprintf(t->err_msg, sizeof(t->err_msg), "no metadata yet");
    md->topics[md->n_topics++] = t;
    return t;
}

const struct md_addr *metadata_broker(const struct metadata *md, int32_t id)
{
    size_t i;

    for (i = 0; i < md->n_brokers; i++) {
        if (md->brokers[i].id == id) {
            return &md->brokers[i].addr;
        }
    }
    return NULL;
}

uint64_t metadata_generation(const struct metadata *md)
{
    return md->generation;
}

int metadata_leader(struct metadata *md,
                    const char *topic,
                    int32_t partition,
                    const char **host,
                    uint16_t *port)
{
    struct md_topic *t = metadata_topic(md, topic);
    const struct md_addr *a;

    if (t == NULL || !t->known || partition < 0 ||
        partition >= t->n_partitions) {
        return WEIR_EUNKNOWN_TOPIC_OR_PARTITION;
    }
    if (t->parts[partition].leader < 0) {
        return WEIR_ELEADER_NOT_AVAILABLE;
    }
    a = metadata_broker(md, t->parts[partition].leader);
    if (a == NULL) {
        return WEIR_ELEADER_NOT_AVAILABLE;
    }
    *host = a->host;
    *port = a->port;
    return 0;
}

int32_t
metadata_leader_id(struct metadata *md, const char *topic, int32_t partition)
{
    struct md_topic *t = metadata_topic(md, topic);

    if (t == NULL || !t->known || partition < 0 ||
        partition >= t->n_partitions) {
        return -1;
    }
    return t->parts[partition].leader;
}

static int metadata_apply_brokers(struct metadata *md,
                                  const Weir__MetadataResponse *r)
{
    struct md_broker *b;
    size_t i;

    if (r->n_brokers == 0) {
        return 0; /* keep what we had rather than forget every address */
    }
    b = mem_calloc(r->n_brokers, sizeof(*b));
    if (b == NULL) {
        return WEIR_ENOMEM;
    }
    for (i = 0; i < r->n_brokers; i++) {
        b[i].id = r->brokers[i]->id;
        b[i].fenced = r->brokers[i]->fenced;
        /* a TLS client uses a broker's TLS listener if it has one beside
         * the plain one */
        bool tls = md->tls && r->brokers[i]->tls_port != 0;
        b[i].addr.port =
            (uint16_t)(tls ? r->brokers[i]->tls_port : r->brokers[i]->port);
        b[i].addr.host =
            mem_strdup(tls ? r->brokers[i]->tls_host : r->brokers[i]->host);
        if (b[i].addr.host == NULL) {
            while (i-- > 0) {
                mem_free(b[i].addr.host);
            }
            mem_free(b);
            return WEIR_ENOMEM;
        }
    }
    metadata_brokers_free(md);
    md->brokers = b;
    md->n_brokers = r->n_brokers;
    return 0;
}

/* Partitions are indexed by number; an answer that skips a number leaves
 * that partition leaderless rather than shifting the others. */
static int metadata_apply_topic(struct md_topic *t, const Weir__TopicInfo *ti)
{
    struct md_partition *parts = NULL;
    int32_t n = 0;
    size_t i;
    int32_t k;

    t->err = ti->error_code;
    (void)snprintf(t->err_msg, sizeof(t->err_msg), "%s",
                   ti->error_message != NULL && ti->error_message[0] != '\0'
                       ? ti->error_message
                       : weir_err_str(ti->error_code));
    if (ti->error_code != 0) {
        return 0;
    }
    for (i = 0; i < ti->n_partitions; i++) {
        k = ti->partitions[i]->partition;
        if (k >= 0 && k < RPC_MAX_PARTITIONS && k + 1 > n) {
            n = k + 1;
        }
    }
    if (n > 0) {
        parts = mem_calloc((size_t)n, sizeof(*parts));
        if (parts == NULL) {
            return WEIR_ENOMEM;
        }
    }
    for (k = 0; k < n; k++) {
        parts[k].err = WEIR_ELEADER_NOT_AVAILABLE;
        parts[k].leader = -1;
    }
    for (i = 0; i < ti->n_partitions; i++) {
        const Weir__PartitionInfo *pi = ti->partitions[i];
        if (pi->partition < 0 || pi->partition >= n) {
            continue;
        }
        parts[pi->partition].err = pi->error_code;
        parts[pi->partition].leader = pi->leader;
        parts[pi->partition].leader_epoch = pi->leader_epoch;
    }
    mem_free(t->parts);
    t->parts = parts;
    t->n_partitions = n;
    t->known = true;
    return 0;
}

int metadata_apply(struct metadata *md, const Weir__MetadataResponse *r)
{
    struct md_topic *t;
    size_t i;
    int rv;

    rv = metadata_apply_brokers(md, r);
    if (rv != 0) {
        return rv;
    }
    for (i = 0; i < r->n_topics; i++) {
        t = metadata_topic(md, r->topics[i]->name);
        if (t == NULL) {
            continue;
        }
        rv = metadata_apply_topic(t, r->topics[i]);
        if (rv != 0) {
            return rv;
        }
    }
    md->generation++;
    /* A fenced broker leads nothing: what is in flight to it will never
     * be acknowledged (a paused or cut-off leader may not answer at all
     * before the request timeout), so fail it now and let it be retried
     * against the new leaders. */
    for (i = 0; i < md->n_brokers; i++) {
        if (md->brokers[i].fenced) {
            char msg[128];
            (void)snprintf(msg, sizeof(msg), "broker %d is fenced",
                           (int)md->brokers[i].id);
            pool_close_addr(md->pool, md->brokers[i].addr.host,
                            md->brokers[i].addr.port, WEIR_ENETWORK, msg);
        }
    }
    return 0;
}

/* Candidate brokers: known brokers, then bootstrap addresses not already
 * listed. Entries borrow the cache's strings. */
static size_t
metadata_candidates(struct metadata *md, const struct md_addr **out, size_t cap)
{
    size_t n = 0;
    size_t i;
    size_t j;

    for (i = 0; i < md->n_brokers && n < cap; i++) {
        out[n++] = &md->brokers[i].addr;
    }
    for (i = 0; i < md->n_bootstrap && n < cap; i++) {
        for (j = 0; j < n; j++) {
            if (out[j]->port == md->bootstrap[i].port &&
                strcmp(out[j]->host, md->bootstrap[i].host) == 0) {
                break;
            }
        }
        if (j == n) {
            out[n++] = &md->bootstrap[i];
        }
    }
    return n;
}

#define METADATA_MAX_CANDIDATES 64

/* NOT_CONTROLLER hints followed by one call before the next candidate */
#define METADATA_MAX_REDIRECTS 3

/* One call to host:port; a NOT_CONTROLLER answer (a controller quorum
 * member given as a bootstrap address, not the active one) is followed
 * to the member it names, a few hops at most. */
static int metadata_call_one(struct metadata *md,
                             const char *host,
                             uint16_t port,
                             Weir__Request *req,
                             uint32_t timeout_ms,
                             Weir__Response **out,
                             struct err_detail *ed)
{
    char hint[300];
    struct md_addr a = {NULL, 0};
    struct err_detail ped;
    int hops;
    int rv;

    rv = call_sync_hint(md->pool, host, port, POOL_LANE_DEFAULT, req,
                        timeout_ms, out, hint, sizeof(hint), ed);
    for (hops = 0; rv == WEIR_ENOT_CONTROLLER && hint[0] != '\0' &&
                   hops < METADATA_MAX_REDIRECTS;
         hops++) {
        mem_free(a.host);
        a.host = NULL;
        if (metadata_parse_addr(hint, strlen(hint), &a, &ped) != 0) {
            break;
        }
        rv = call_sync_hint(md->pool, a.host, a.port, POOL_LANE_DEFAULT, req,
                            timeout_ms, out, hint, sizeof(hint), ed);
    }
    mem_free(a.host);
    return rv;
}

int metadata_call_any(struct metadata *md,
                      Weir__Request *req,
                      uint32_t timeout_ms,
                      Weir__Response **out,
                      struct err_detail *ed)
{
    const struct md_addr *cand[METADATA_MAX_CANDIDATES];
    char msgs[512] = "";
    size_t used = 0;
    size_t n;
    size_t i;
    int rv = WEIR_ENETWORK;
    struct err_detail one;

    n = metadata_candidates(md, cand, METADATA_MAX_CANDIDATES);
    for (i = 0; i < n; i++) {
        err_detail_clear(&one);
        rv = metadata_call_one(md, cand[i]->host, cand[i]->port, req,
                               timeout_ms, out, &one);
        /* a member that is not the active controller, naming none that
         * answers: the next address may */
        if (rv == 0 ||
            (!call_is_transport_err(rv) && rv != WEIR_ENOT_CONTROLLER)) {
            if (rv != 0) {
                (void)err_set(ed, rv, "%s", one.msg);
            }
            return rv;
        }
        if (used < sizeof(msgs)) {
            int k = snprintf(msgs + used, sizeof(msgs) - used, "%s%s",
                             used > 0 ? "; " : "", one.msg);
            used += k > 0 ? (size_t)k : 0;
        }
        if (strcmp(one.msg, "interrupted by a signal") == 0) {
            break;
        }
    }
    if (n > 1) {
        return err_set(ed, rv, "no broker reachable: %s", msgs);
    }
    return err_set(ed, rv, "%s", msgs);
}

/* A request for every wanted topic. The topic array borrows entry names;
 * the caller frees it with mem_free. */
static int metadata_build(struct metadata *md,
                          Weir__Request *req,
                          Weir__MetadataRequest *mr,
                          char ***names)
{
    size_t i;

    weir__request__init(req);
    weir__metadata_request__init(mr);
    *names = NULL;
    if (md->n_topics > 0) {
        *names = mem_calloc(md->n_topics, sizeof(char *));
        if (*names == NULL) {
            return WEIR_ENOMEM;
        }
        for (i = 0; i < md->n_topics; i++) {
            (*names)[i] = md->topics[i]->name;
        }
    }
    mr->n_topics = md->n_topics;
    mr->topics = *names;
    mr->include_internal = true;
    req->body_case = WEIR__REQUEST__BODY_METADATA;
    req->metadata = mr;
    return 0;
}

int metadata_refresh_sync(struct metadata *md, struct err_detail *ed)
{
    Weir__Request req;
    Weir__MetadataRequest mr;
    Weir__Response *resp = NULL;
    char **names;
    int rv;

    if (md->n_topics == 0) {
        return 0;
    }
    rv = metadata_build(md, &req, &mr, &names);
    if (rv != 0) {
        return err_set(ed, rv, "out of memory");
    }
    rv = metadata_call_any(md, &req, md->request_timeout_ms, &resp, ed);
    mem_free(names);
    if (rv != 0) {
        return rv;
    }
    if (resp->body_case != WEIR__RESPONSE__BODY_METADATA) {
        rpc_response_free(resp);
        return err_set(ed, WEIR_EMALFORMED,
                       "broker answered Metadata with "
                       "another call's response");
    }
    rv = metadata_apply(md, resp->metadata);
    rpc_response_free(resp);
    if (rv != 0) {
        return err_set(ed, rv, "out of memory");
    }
    return 0;
}

static void metadata_on_reply(void *arg, struct conn_reply *r)
{
    struct metadata *md = arg;

    md->inflight = false;
    if (r->err != 0 || r->resp == NULL ||
        r->resp->body_case != WEIR__RESPONSE__BODY_METADATA) {
        md->rr++; /* try the next broker next time */
        return;
    }
    if (metadata_apply(md, r->resp->metadata) != 0) {
        md->rr++; /* out of memory: the next refresh tries again */
    }
}

void metadata_refresh_async(struct metadata *md)
{
    const struct md_addr *cand[METADATA_MAX_CANDIDATES];
    uint64_t now = pool_now_ms(md->pool);
    Weir__Request req;
    Weir__MetadataRequest mr;
    struct conn *c;
    char **names;
    size_t n;
    size_t i;

    if (md->inflight || md->n_topics == 0 ||
        (md->last_async_ms != 0 &&
         now < md->last_async_ms + METADATA_REFRESH_BACKOFF_MS)) {
        return;
    }
    md->last_async_ms = now == 0 ? 1 : now;
    n = metadata_candidates(md, cand, METADATA_MAX_CANDIDATES);
    /* Skip brokers we cannot connect to right now. */
    for (i = 0; i < n; i++) {
        const struct md_addr *a = cand[(md->rr + i) % n];
        if (pool_get(md->pool, a->host, a->port, POOL_LANE_DEFAULT, &c, NULL) ==
            0) {
            break;
        }
    }
    if (i == n || metadata_build(md, &req, &mr, &names) != 0) {
        return;
    }
    md->rr += (unsigned)i;
    if (conn_send(c, &req, NULL, 0, true,
                  md->request_timeout_ms < METADATA_ASYNC_TIMEOUT_MS
                      ? md->request_timeout_ms
                      : METADATA_ASYNC_TIMEOUT_MS,
                  now, metadata_on_reply, md, NULL) == 0) {
        md->inflight = true;
    }
    mem_free(names);
}
