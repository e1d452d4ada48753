/* SPDX-License-Identifier: Apache-2.0 */
/* Admin calls: create, delete, list and describe topics, list offsets.
 * Synchronous: each sends to any broker that answers (ListOffsets to each
 * partition's leader) and polls until the reply. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/call.h"
#include "client/client.h"
#include "common/mem.h"
#include "common/names.h"
#include "common/rpc.h"

static int admin_expect(Weir__Response *resp,
                        Weir__Response__BodyCase want,
                        struct err_detail *ed)
{
    if (resp->body_case != want) {
        rpc_response_free(resp);
        return err_set(ed, WEIR_EMALFORMED,
                       "broker answered with another call's response");
    }
    return 0;
}

static int admin_topic_result(const char *verb,
                              const char *name,
                              Weir__TopicResult *const *res,
                              size_t n,
                              struct err_detail *ed)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (strcmp(res[i]->name, name) != 0) {
            continue;
        }
        if (res[i]->error_code == WEIR_EUNKNOWN_TOPIC_OR_PARTITION) {
            return err_set(ed, res[i]->error_code, "topic '%s' does not exist",
                           name);
        }
        if (res[i]->error_code == WEIR_ETOPIC_EXISTS) {
            return err_set(ed, res[i]->error_code, "topic '%s' already exists",
                           name);
        }
        if (res[i]->error_code != 0) {
            return err_set(ed, res[i]->error_code, "cannot %s topic '%s': %s",
                           verb, name,
                           res[i]->error_message[0] != '\0'
                               ? res[i]->error_message
                               : weir_err_str(res[i]->error_code));
        }
        return 0;
    }
    return err_set(ed, WEIR_EMALFORMED, "broker reply has no result for '%s'",
                   name);
}

int weir_admin_create_topic(struct weir_client *c,
                            const struct weir_new_topic *t,
                            struct err_detail *ed)
{
    Weir__Request req;
    Weir__CreateTopicsRequest cr;
    Weir__CreateTopic ct;
    Weir__CreateTopic *pct = &ct;
    Weir__ConfigEntry *ents = NULL;
    Weir__ConfigEntry **pents = NULL;
    Weir__Response *resp;
    size_t i;
    int rv;

    rv = names_topic_check(t->name, strlen(t->name), ed);
    if (rv != 0) {
        return rv;
    }
    if (t->n_configs > 0) {
        ents = mem_calloc(t->n_configs, sizeof(*ents));
        pents = mem_calloc(t->n_configs, sizeof(*pents));
        if (ents == NULL || pents == NULL) {
            rv = err_set(ed, WEIR_ENOMEM, "out of memory");
            goto out;
        }
    }
    for (i = 0; i < t->n_configs; i++) {
        weir__config_entry__init(&ents[i]);
        ents[i].key = t->configs[i].key;
        ents[i].value = t->configs[i].value;
        pents[i] = &ents[i];
    }
    weir__create_topic__init(&ct);
    ct.name = (char *)t->name;
    ct.partitions = t->partitions;
    ct.replication_factor = t->replication_factor;
    ct.n_configs = t->n_configs;
    ct.configs = pents;
    weir__create_topics_request__init(&cr);
    cr.n_topics = 1;
    cr.topics = &pct;
    weir__request__init(&req);
    req.body_case = WEIR__REQUEST__BODY_CREATE_TOPICS;
    req.create_topics = &cr;
    rv = metadata_call_any(c->md, &req, c->cfg.request_timeout_ms, &resp, ed);
    if (rv == 0 && (rv = admin_expect(resp, WEIR__RESPONSE__BODY_CREATE_TOPICS,
                                      ed)) == 0) {
        rv = admin_topic_result("create", t->name, resp->create_topics->topics,
                                resp->create_topics->n_topics, ed);
        rpc_response_free(resp);
    }
out:
    mem_free(ents);
    mem_free(pents);
    return rv;
}

int weir_admin_delete_topic(struct weir_client *c,
                            const char *name,
                            struct err_detail *ed)
{
    Weir__Request req;
    Weir__DeleteTopicsRequest dr;
    Weir__Response *resp;
    char *names[1] = {(char *)name};
    int rv;

    rv = names_topic_check(name, strlen(name), ed);
    if (rv != 0) {
        return rv;
    }
    weir__delete_topics_request__init(&dr);
    dr.n_names = 1;
    dr.names = names;
    weir__request__init(&req);
    req.body_case = WEIR__REQUEST__BODY_DELETE_TOPICS;
    req.delete_topics = &dr;
    rv = metadata_call_any(c->md, &req, c->cfg.request_timeout_ms, &resp, ed);
    if (rv != 0) {
        return rv;
    }
    rv = admin_expect(resp, WEIR__RESPONSE__BODY_DELETE_TOPICS, ed);
    if (rv != 0) {
        return rv;
    }
    rv = admin_topic_result("delete", name, resp->delete_topics->topics,
                            resp->delete_topics->n_topics, ed);
    rpc_response_free(resp);
    return rv;
}

/* Metadata for one topic (NULL = all), straight from a broker. The broker
 * list also refreshes the cache, for leader lookups. */
static int admin_metadata(struct weir_client *c,
                          const char *name,
                          bool internal,
                          bool configs,
                          Weir__Response **out,
                          struct err_detail *ed)
{
    Weir__Request req;
    Weir__MetadataRequest mr;
    char *names[1] = {(char *)name};
    int rv;

    weir__metadata_request__init(&mr);
    mr.all_topics = name == NULL;
    mr.n_topics = name != NULL ? 1 : 0;
    mr.topics = name != NULL ? names : NULL;
    mr.include_configs = configs;
    mr.include_internal = internal;
    weir__request__init(&req);
    req.body_case = WEIR__REQUEST__BODY_METADATA;
    req.metadata = &mr;
    rv = metadata_call_any(c->md, &req, c->cfg.request_timeout_ms, out, ed);
    if (rv != 0) {
        return rv;
    }
    rv = admin_expect(*out, WEIR__RESPONSE__BODY_METADATA, ed);
    if (rv != 0) {
        *out = NULL;
        return rv;
    }
    if (metadata_apply(c->md, (*out)->metadata) != 0) {
        rpc_response_free(*out);
        *out = NULL;
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    return 0;
}

static int admin_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void weir_topic_list_free(struct weir_topic_list *l)
{
    size_t i;

    if (l == NULL) {
        return;
    }
    for (i = 0; i < l->n; i++) {
        mem_free(l->names[i]);
    }
    mem_free(l->names);
    mem_free(l);
}

int weir_admin_list_topics(struct weir_client *c,
                           bool include_internal,
                           struct weir_topic_list **out,
                           struct err_detail *ed)
{
    Weir__MetadataResponse *m;
    Weir__Response *resp;
    struct weir_topic_list *l;
    size_t i;
    int rv;

    *out = NULL;
    rv = admin_metadata(c, NULL, include_internal, false, &resp, ed);
    if (rv != 0) {
        return rv;
    }
    m = resp->metadata;
    l = mem_calloc(1, sizeof(*l));
    if (l == NULL ||
        (m->n_topics > 0 &&
         (l->names = mem_calloc(m->n_topics, sizeof(char *))) == NULL)) {
        rv = err_set(ed, WEIR_ENOMEM, "out of memory");
        goto fail;
    }
    for (i = 0; i < m->n_topics; i++) {
        if (m->topics[i]->error_code != 0 ||
            (m->topics[i]->internal && !include_internal)) {
            continue;
        }
        l->names[l->n] = mem_strdup(m->topics[i]->name);
        if (l->names[l->n] == NULL) {
            rv = err_set(ed, WEIR_ENOMEM, "out of memory");
            goto fail;
        }
        l->n++;
    }
    if (l->n > 1) {
        qsort(l->names, l->n, sizeof(char *), admin_cmp_str);
    }
    rpc_response_free(resp);
    *out = l;
    return 0;

fail:
    weir_topic_list_free(l);
    rpc_response_free(resp);
    return rv;
}

void weir_offsets_free(struct weir_offset_result *r)
{
    mem_free(r);
}

/* One ListOffsets request to host:port for the partitions in res[] whose
 * leader it is (leader[i] == id); fills those results. */
static void admin_offsets_from(struct weir_client *c,
                               const char *topic,
                               int64_t ts,
                               int32_t id,
                               const int32_t *leader,
                               struct weir_offset_result *res,
                               size_t n)
{
    const struct md_addr *a = metadata_broker(c->md, id);
    Weir__ListOffsetsPartition *ps = mem_calloc(n, sizeof(*ps));
    Weir__ListOffsetsPartition **pp = mem_calloc(n, sizeof(*pp));
    Weir__ListOffsetsRequest lr;
    Weir__Request req;
    Weir__Response *resp = NULL;
    struct err_detail ed;
    size_t m = 0;
    size_t i;
    size_t j;
    int rv = WEIR_ENOMEM;

    if (ps == NULL || pp == NULL || a == NULL) {
        goto out;
    }
    for (i = 0; i < n; i++) {
        if (leader[i] == id) {
            weir__list_offsets_partition__init(&ps[m]);
            ps[m].topic = (char *)topic;
            ps[m].partition = res[i].partition;
            ps[m].timestamp = ts;
            pp[m] = &ps[m];
            m++;
        }
    }
    weir__list_offsets_request__init(&lr);
    lr.n_partitions = m;
    lr.partitions = pp;
    weir__request__init(&req);
    req.body_case = WEIR__REQUEST__BODY_LIST_OFFSETS;
    req.list_offsets = &lr;
    rv = call_sync(c->pool, a->host, a->port, POOL_LANE_DEFAULT, &req,
                   c->cfg.request_timeout_ms, &resp, &ed);
    if (rv == 0 && resp->body_case != WEIR__RESPONSE__BODY_LIST_OFFSETS) {
        rv = WEIR_EMALFORMED;
    }
out:
    for (i = 0; i < n; i++) {
        if (leader[i] != id) {
            continue;
        }
        res[i].error_code = rv != 0 ? rv : WEIR_EUNKNOWN;
        for (j = 0; rv == 0 && j < resp->list_offsets->n_partitions; j++) {
            const Weir__ListOffsetsPartitionResult *r =
                resp->list_offsets->partitions[j];
            if (r->partition == res[i].partition &&
                strcmp(r->topic, topic) == 0) {
                res[i].error_code = r->error_code;
                res[i].offset = r->offset;
                res[i].timestamp = r->timestamp;
            }
        }
    }
    rpc_response_free(resp);
    mem_free(ps);
    mem_free(pp);
}

/* Offsets for partitions [0, n) of a topic whose metadata is fresh. */
static int admin_offsets(struct weir_client *c,
                         const struct md_topic *t,
                         int32_t only,
                         int64_t ts,
                         struct weir_offset_result **out,
                         size_t *n_out)
{
    size_t n = only >= 0 ? 1 : (size_t)t->n_partitions;
    struct weir_offset_result *res = mem_calloc(n == 0 ? 1 : n, sizeof(*res));
    int32_t *leader = mem_calloc(n == 0 ? 1 : n, sizeof(*leader));
    size_t i;
    size_t j;

    if (res == NULL || leader == NULL) {
        mem_free(res);
        mem_free(leader);
        return WEIR_ENOMEM;
    }
    for (i = 0; i < n; i++) {
        int32_t p = only >= 0 ? only : (int32_t)i;
        res[i].partition = p;
        res[i].offset = -1;
        res[i].timestamp = -1;
        leader[i] = t->parts[p].leader;
        res[i].error_code = leader[i] < 0 ? WEIR_ELEADER_NOT_AVAILABLE : 0;
    }
    /* One request per distinct leader, in order of first appearance. */
    for (i = 0; i < n; i++) {
        for (j = 0; j < i && leader[j] != leader[i]; j++) {
        }
        if (j == i && leader[i] >= 0) {
            admin_offsets_from(c, t->name, ts, leader[i], leader, res, n);
        }
    }
    mem_free(leader);
    *out = res;
    *n_out = n;
    return 0;
}

#define ADMIN_OFFSETS_ATTEMPTS   8
#define ADMIN_OFFSETS_BACKOFF_MS 100 /* times the attempt: ~2.8 s in all */

static void admin_sleep_ms(uint32_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

int weir_admin_list_offsets(struct weir_client *c,
                            const char *topic,
                            int32_t partition,
                            int64_t timestamp,
                            struct weir_offset_result **out,
                            size_t *n,
                            struct err_detail *ed)
{
    struct md_topic *t;
    uint32_t attempt;
    size_t i;
    int rv;

    *out = NULL;
    *n = 0;
    rv = client_topic(c, topic, true, &t, ed);
    if (rv != 0) {
        return rv;
    }
    if (partition >= t->n_partitions || partition < -1) {
        return err_set(ed, WEIR_EUNKNOWN_TOPIC_OR_PARTITION,
                       "topic '%s' has no partition %d (it has %d)", topic,
                       partition, t->n_partitions);
    }
    /* a moved or brand-new leader answers with a retriable error for a
     * moment: refresh metadata and ask again, a bounded number of times */
    for (attempt = 0;; attempt++) {
        rv = admin_offsets(c, t, partition, timestamp, out, n);
        if (rv != 0) {
            return err_set(ed, rv, "out of memory");
        }
        for (i = 0; i < *n && !weir_err_retriable((*out)[i].error_code); i++) {
        }
        if (i == *n || attempt + 1 >= ADMIN_OFFSETS_ATTEMPTS) {
            return 0;
        }
        weir_offsets_free(*out);
        *out = NULL;
        *n = 0;
        admin_sleep_ms(ADMIN_OFFSETS_BACKOFF_MS * (attempt + 1));
        rv = client_topic(c, topic, true, &t, ed);
        if (rv != 0) {
            return rv;
        }
    }
}

void weir_topic_desc_free(struct weir_topic_desc *d)
{
    size_t i;

    if (d == NULL) {
        return;
    }
    for (i = 0; i < d->n_partitions; i++) {
        mem_free(d->partitions[i].replicas);
        mem_free(d->partitions[i].isr);
    }
    for (i = 0; i < d->n_configs; i++) {
        mem_free(d->configs[i].key);
        mem_free(d->configs[i].value);
    }
    mem_free(d->partitions);
    mem_free(d->configs);
    mem_free(d->name);
    mem_free(d);
}

static int admin_cmp_part(const void *a, const void *b)
{
    const struct weir_partition_desc *x = a;
    const struct weir_partition_desc *y = b;

    return (x->partition > y->partition) - (x->partition < y->partition);
}

static int32_t *admin_dup_ids(const int32_t *v, size_t n)
{
    int32_t *d = mem_calloc(n == 0 ? 1 : n, sizeof(*d));

    if (d != NULL && n > 0) {
        memcpy(d, v, n * sizeof(*d));
    }
    return d;
}

static int admin_fill_desc(struct weir_topic_desc *d, const Weir__TopicInfo *ti)
{
    size_t i;

    d->name = mem_strdup(ti->name);
    d->internal = ti->internal;
    d->partitions = mem_calloc(ti->n_partitions + 1, sizeof(*d->partitions));
    d->configs = mem_calloc(ti->n_configs + 1, sizeof(*d->configs));
    if (d->name == NULL || d->partitions == NULL || d->configs == NULL) {
        return WEIR_ENOMEM;
    }
    for (i = 0; i < ti->n_partitions; i++) {
        const Weir__PartitionInfo *pi = ti->partitions[i];
        struct weir_partition_desc *pd = &d->partitions[i];
        d->n_partitions++;
        pd->partition = pi->partition;
        pd->error_code = pi->error_code;
        pd->leader = pi->leader;
        pd->leader_epoch = pi->leader_epoch;
        pd->start_offset = pi->log_start_offset;
        pd->end_offset = pi->high_watermark;
        pd->replicas = admin_dup_ids(pi->replicas, pi->n_replicas);
        pd->isr = admin_dup_ids(pi->isr, pi->n_isr);
        if (pd->replicas == NULL || pd->isr == NULL) {
            return WEIR_ENOMEM;
        }
        pd->n_replicas = pi->n_replicas;
        pd->n_isr = pi->n_isr;
    }
    qsort(d->partitions, d->n_partitions, sizeof(*d->partitions),
          admin_cmp_part);
    for (i = 0; i < ti->n_configs; i++) {
        d->configs[i].key = mem_strdup(ti->configs[i]->key);
        d->configs[i].value = mem_strdup(ti->configs[i]->value);
        d->n_configs++;
        if (d->configs[i].key == NULL || d->configs[i].value == NULL) {
            return WEIR_ENOMEM;
        }
    }
    return 0;
}

/* Start and end offsets from the leaders, where they answer. */
static void admin_desc_offsets(struct weir_client *c, struct weir_topic_desc *d)
{
    struct weir_offset_result *lo = NULL;
    struct weir_offset_result *hi = NULL;
    struct md_topic *t = metadata_topic(c->md, d->name);
    size_t nlo = 0;
    size_t nhi = 0;
    size_t i;

    if (t == NULL || !t->known || t->err != 0) {
        return;
    }
    if (admin_offsets(c, t, -1, WEIR_OFFSET_EARLIEST, &lo, &nlo) != 0 ||
        admin_offsets(c, t, -1, WEIR_OFFSET_LATEST, &hi, &nhi) != 0) {
        goto out;
    }
    for (i = 0; i < d->n_partitions; i++) {
        int32_t p = d->partitions[i].partition;
        if (p >= 0 && (size_t)p < nlo && lo[p].error_code == 0) {
            d->partitions[i].start_offset = lo[p].offset;
        }
        if (p >= 0 && (size_t)p < nhi && hi[p].error_code == 0) {
            d->partitions[i].end_offset = hi[p].offset;
        }
    }
out:
    mem_free(lo);
    mem_free(hi);
}

int weir_admin_describe_topic(struct weir_client *c,
                              const char *name,
                              struct weir_topic_desc **out,
                              struct err_detail *ed)
{
    const Weir__TopicInfo *ti = NULL;
    struct weir_topic_desc *d;
    Weir__Response *resp;
    size_t i;
    int rv;

    *out = NULL;
    rv = names_topic_check(name, strlen(name), ed);
    if (rv != 0) {
        return rv;
    }
    if (metadata_want(c->md, name) == NULL) {
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    rv = admin_metadata(c, name, true, true, &resp, ed);
    if (rv != 0) {
        return rv;
    }
    for (i = 0; i < resp->metadata->n_topics; i++) {
        if (strcmp(resp->metadata->topics[i]->name, name) == 0) {
            ti = resp->metadata->topics[i];
        }
    }
    if (ti == NULL || ti->error_code == WEIR_EUNKNOWN_TOPIC_OR_PARTITION) {
        rpc_response_free(resp);
        return err_set(ed, WEIR_EUNKNOWN_TOPIC_OR_PARTITION,
                       "topic '%s' does not exist", name);
    }
    if (ti->error_code != 0) {
        rv = err_set(ed, ti->error_code, "topic '%s': %s", name,
                     ti->error_message[0] != '\0'
                         ? ti->error_message
                         : weir_err_str(ti->error_code));
        rpc_response_free(resp);
        return rv;
    }
    d = mem_calloc(1, sizeof(*d));
    rv = d == NULL ? WEIR_ENOMEM : admin_fill_desc(d, ti);
    rpc_response_free(resp);
    if (rv != 0) {
        weir_topic_desc_free(d);
        return err_set(ed, rv, "out of memory");
    }
    admin_desc_offsets(c, d);
    *out = d;
    return 0;
}
