/* SPDX-License-Identifier: Apache-2.0 */
/* The offline replicas a broker reports: every partition log of this
 * broker that is offline now (storage failure or corruption, see
 * docs/storage.md), as (topic id, partition), the whole set in each
 * heartbeat and registration. The controller moves leadership away from
 * them and keeps them out of ISRs until they are no longer listed. */
#include <stdio.h>
#include <string.h>

#include "broker/broker.h"
#include "broker/cluster/cluster_int.h"
#include "common/mem.h"
#include "common/trace.h"

struct cluster_offline_walk {
    struct cluster *c;
    struct cluster_offline *out;
    size_t cap;
    uint64_t sig; /* FNV-1a over the set, to trace changes */
    char names[512];
    bool nomem;
};

static int64_t cluster_offline_topic_id(const struct cluster *c,
                                        const char *topic)
{
    struct logmgr_topic t;
    const struct meta_topic *mt;

    if (logmgr_topic(c->b->logs, topic, &t) && t.topic_id >= 0) {
        return t.topic_id;
    }
    mt = meta_image_topic_by_name(c->img, topic, strlen(topic));
    return mt != NULL ? mt->id : -1;
}

static void cluster_offline_add(void *arg,
                                const char *topic,
                                int32_t partition,
                                struct plog *log)
{
    struct cluster_offline_walk *w = arg;
    struct cluster_offline *o = w->out;
    int64_t id;
    size_t used;

    if (log == NULL || !plog_is_offline(log) || w->nomem) {
        return;
    }
    id = cluster_offline_topic_id(w->c, topic);
    if (id < 0) {
        return; /* a topic the cluster does not know: nothing to move */
    }
    if (o->n == w->cap) {
        size_t cap = w->cap == 0 ? 8 : w->cap * 2;
        Weir__ReplicaRef *r = mem_realloc(o->refs, cap * sizeof(*r));
        if (r == NULL) {
            w->nomem = true;
            return;
        }
        o->refs = r;
        w->cap = cap;
    }
    weir__replica_ref__init(&o->refs[o->n]);
    o->refs[o->n].topic_id = id;
    o->refs[o->n].partition = partition;
    o->n++;
    w->sig = (w->sig ^ (uint64_t)id) * 1099511628211ULL;
    w->sig = (w->sig ^ (uint64_t)(uint32_t)partition) * 1099511628211ULL;
    used = strlen(w->names);
    if (used + 2 < sizeof(w->names)) {
        (void)snprintf(w->names + used, sizeof(w->names) - used, "%s%s-%d",
                       used > 0 ? "," : "", topic, (int)partition);
    }
}

void cluster_offline_collect(struct cluster *c, struct cluster_offline *out)
{
    struct cluster_offline_walk w;
    size_t i;

    memset(out, 0, sizeof(*out));
    memset(&w, 0, sizeof(w));
    w.c = c;
    w.out = out;
    w.sig = 14695981039346656037ULL;
    logmgr_each(c->b->logs, cluster_offline_add, &w);
    if (out->n > 0) {
        out->ptrs = mem_calloc(out->n, sizeof(*out->ptrs));
    }
    if (w.nomem || (out->n > 0 && out->ptrs == NULL)) {
        /* the list must be whole or absent: a partial one would tell the
         * controller that the others are back */
        trace_warn("cluster", "event=offline_replicas_unreported "
                              "reason=\"out of memory\"");
        cluster_offline_fini(out);
        return;
    }
    for (i = 0; i < out->n; i++) {
        out->ptrs[i] = &out->refs[i];
    }
    if (w.sig != c->offline_sig && (c->offline_sig != 0 || out->n > 0)) {
        c->offline_sig = w.sig;
        trace_info("cluster",
                   "event=offline_replicas_reported broker=%d count=%zu "
                   "replicas=%s",
                   (int)c->id, out->n, out->n > 0 ? w.names : "-");
    }
}

void cluster_offline_fini(struct cluster_offline *o)
{
    mem_free(o->refs);
    mem_free(o->ptrs);
    memset(o, 0, sizeof(*o));
}
