/* SPDX-License-Identifier: Apache-2.0 */
/* Which controller a broker takes metadata from. A broker applies nothing
 * from a controller of another cluster (its data dir stores the cluster id
 * of its first registration), from one whose metadata ends before what
 * the broker has applied, or from one whose history differs from the one
 * the broker applied (a controller restored from an old copy: it may have
 * written records of its own since, so its log can be as long as ours; the
 * chain value at the broker's offset tells the histories apart, see
 * controller/meta/meta_chain.h): any of these would describe another
 * cluster's leaders and topics. Meanwhile it logs an error naming both
 * sides, keeps serving what it has, deletes nothing, does not register
 * (which would write to that controller's log), sends that controller
 * nothing else, and keeps asking with backoff, so putting the right
 * controller back heals it. A broker told its history diverged accepts
 * only an answer that checked its history point: never one that merely
 * cannot tell any more. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "broker/broker.h"
#include "broker/cluster/cluster_int.h"
#include "common/mem.h"
#include "common/trace.h"
#include "controller/meta/meta_chain.h"

#define CLUSTER_REFUSAL_LOG_MS  30000 /* repeat the refusal this often */
#define CLUSTER_APPLIED_SAVE_MS 1000

/* The cluster this broker belongs to: the stored id, else (a new data
 * dir, not registered yet) the one whose metadata it applied; "" none. */
static const char *cluster_ident_ours(const struct cluster *c)
{
    const char *stored = c->b->ident.props.cluster_id;

    return stored[0] != '\0' ? stored : c->meta_cluster_id;
}

static const char *cluster_ident_event(enum cluster_refusal why)
{
    switch (why) {
    case CLUSTER_REFUSAL_CLUSTER_ID:
        return "cluster_id_mismatch";
    case CLUSTER_REFUSAL_HISTORY:
        return "metadata_history_behind";
    case CLUSTER_REFUSAL_DIVERGED:
        return "metadata_history_diverged";
    case CLUSTER_REFUSAL_UNVERIFIABLE:
        return "metadata_history_unverifiable";
    case CLUSTER_REFUSAL_NONE:
        break;
    }
    return "controller_refused";
}

static void cluster_ident_refuse(struct cluster *c,
                                 enum cluster_refusal why,
                                 const char *fmt,
                                 ...) WEIR_PRINTF(3, 4);

static void cluster_ident_refuse(struct cluster *c,
                                 enum cluster_refusal why,
                                 const char *fmt,
                                 ...)
{
    uint64_t now = clock_now_ms(c->b->clock);
    char msg[600];
    va_list ap;

    if (c->refusal == why &&
        now - c->refusal_logged_ms < CLUSTER_REFUSAL_LOG_MS) {
        return;
    }
    va_start(ap, fmt);
    (void)vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    c->refusal = why;
    c->refusal_logged_ms = now;
    trace_error("cluster",
                "event=%s broker=%d controller=%s msg=\"%s; applying "
                "nothing, deleting nothing, serving what is here, retrying\"",
                cluster_ident_event(why), (int)c->id, cluster_controller(c),
                msg);
}

static void cluster_ident_clear(struct cluster *c)
{
    if (c->refusal != CLUSTER_REFUSAL_NONE) {
        trace_info("cluster",
                   "event=controller_accepted broker=%d controller=%s "
                   "cluster_id=%s",
                   (int)c->id, cluster_controller(c), cluster_ident_ours(c));
    }
    c->refusal = CLUSTER_REFUSAL_NONE;
}

bool cluster_ident_accept_fetch(struct cluster *c,
                                const Weir__FetchMetadataResponse *m)
{
    const char *theirs = m->cluster_id != NULL ? m->cluster_id : "";
    const char *ours = cluster_ident_ours(c);
    int64_t applied = c->b->ident.applied_end;

    if (meta_image_end_offset(c->img) > applied) {
        applied = meta_image_end_offset(c->img);
    }
    if (ours[0] != '\0' && strcmp(theirs, ours) != 0) {
        cluster_ident_refuse(c, CLUSTER_REFUSAL_CLUSTER_ID,
                             "the controller belongs to cluster '%s', this "
                             "broker's data dir %s to cluster '%s'",
                             theirs, c->b->cfg.data_dir, ours);
        return false;
    }
    /* the stored offset is of the stored cluster: a data dir that has
     * none (new, or from before cluster ids) has no history to defend */
    if (c->b->ident.props.cluster_id[0] == '\0') {
        applied = meta_image_end_offset(c->img);
    }
    if (m->end_offset < applied) {
        cluster_ident_refuse(c, CLUSTER_REFUSAL_HISTORY,
                             "the controller's metadata ends at offset %lld, "
                             "this broker applied up to offset %lld: an "
                             "older history (a controller data dir restored "
                             "from an old copy?)",
                             (long long)m->end_offset, (long long)applied);
        return false;
    }
    if (c->diverged && !m->history_checked) {
        /* e.g. a diverged controller that no longer holds the value at
         * our offset: it has not shown the same history */
        cluster_ident_refuse(c, CLUSTER_REFUSAL_DIVERGED,
                             "this controller's metadata history differed "
                             "from the one this broker applied, and its "
                             "answer does not show the same history now");
        return false;
    }
    c->diverged = false;
    if (c->meta_cluster_id[0] == '\0') {
        (void)snprintf(c->meta_cluster_id, sizeof(c->meta_cluster_id), "%s",
                       theirs);
    }
    cluster_ident_clear(c);
    c->accepted_once = true;
    return true;
}

void cluster_ident_save_cluster(struct cluster *c)
{
    uint64_t now = clock_now_ms(c->b->clock);
    struct err_detail ed;

    if (c->cluster_id_unsaved[0] == '\0') {
        return;
    }
    err_detail_clear(&ed);
    if (broker_ident_set_cluster(&c->b->ident, c->cluster_id_unsaved, &ed) !=
        0) {
        /* retried from the heartbeat timer; said every 30 s */
        if (c->cluster_id_failed_ms == 0 ||
            now - c->cluster_id_failed_ms >= CLUSTER_REFUSAL_LOG_MS) {
            c->cluster_id_failed_ms = now;
            trace_error("cluster",
                        "event=cluster_id_not_saved broker=%d cluster_id=%s "
                        "data_dir=%s msg=\"%s; retrying every heartbeat\"",
                        (int)c->id, c->cluster_id_unsaved, c->b->cfg.data_dir,
                        ed.msg);
        }
        return;
    }
    trace_info("cluster",
               "event=cluster_joined broker=%d cluster_id=%s data_dir=%s",
               (int)c->id, c->cluster_id_unsaved, c->b->cfg.data_dir);
    c->cluster_id_unsaved[0] = '\0';
    c->cluster_id_failed_ms = 0;
}

bool cluster_ident_accept_register(struct cluster *c,
                                   const Weir__RegisterBrokerResponse *r)
{
    const char *theirs = r->cluster_id != NULL ? r->cluster_id : "";
    const char *ours = cluster_ident_ours(c);

    if (ours[0] != '\0' && strcmp(theirs, ours) != 0) {
        cluster_ident_refuse(c, CLUSTER_REFUSAL_CLUSTER_ID,
                             "the controller registered this broker in "
                             "cluster '%s', its data dir %s belongs to "
                             "cluster '%s'",
                             theirs, c->b->cfg.data_dir, ours);
        return false;
    }
    if (c->b->ident.props.cluster_id[0] == '\0' && theirs[0] != '\0') {
        (void)snprintf(c->cluster_id_unsaved, sizeof(c->cluster_id_unsaved),
                       "%s", theirs);
        cluster_ident_save_cluster(c);
    }
    if (c->meta_cluster_id[0] == '\0') {
        (void)snprintf(c->meta_cluster_id, sizeof(c->meta_cluster_id), "%s",
                       theirs);
    }
    return true;
}

void cluster_ident_refused(struct cluster *c, const char *msg)
{
    cluster_ident_refuse(c, CLUSTER_REFUSAL_CLUSTER_ID,
                         "the controller refused the registration: %s", msg);
}

bool cluster_ident_refuse_fetch(struct cluster *c, int err, const char *msg)
{
    int64_t at;
    int64_t chain;

    cluster_ident_history_point(c, &at, &chain);
    switch (err) {
    case WEIR_EMETADATA_DIVERGED:
        c->diverged = true;
        cluster_ident_refuse(c, CLUSTER_REFUSAL_DIVERGED,
                             "not the metadata history this broker applied "
                             "(its offset %lld, chain value %lld): %s. Put "
                             "the right controller data dir back, or see "
                             "docs/operations.md (metadata history "
                             "diverged)",
                             (long long)at, (long long)chain, msg);
        return true;
    case WEIR_EMETADATA_HISTORY_UNVERIFIABLE:
        cluster_ident_refuse(c, CLUSTER_REFUSAL_UNVERIFIABLE,
                             "%s (this broker's point: offset %lld, chain "
                             "value %lld). See docs/operations.md (metadata "
                             "history diverged)",
                             msg, (long long)at, (long long)chain);
        return true;
    case WEIR_EINCONSISTENT_CLUSTER_ID:
        cluster_ident_refuse(c, CLUSTER_REFUSAL_CLUSTER_ID,
                             "the controller refused this broker: %s", msg);
        return true;
    default:
        return false;
    }
}

void cluster_ident_history_point(const struct cluster *c,
                                 int64_t *offset,
                                 int64_t *chain)
{
    const struct broker_ident *id = &c->b->ident;
    int64_t end = meta_image_end_offset(c->img);

    *offset = 0;
    *chain = META_CHAIN_UNKNOWN;
    if (c->chain >= 0 && end > 0 && end >= id->applied_end) {
        *offset = end;
        *chain = c->chain;
    } else if (id->applied_end > 0 && id->applied_chain >= 0) {
        *offset = id->applied_end;
        *chain = id->applied_chain;
    }
}

void cluster_ident_save_applied(struct cluster *c, bool now)
{
    uint64_t t = clock_now_ms(c->b->clock);
    int64_t end = meta_image_end_offset(c->img);
    struct err_detail ed;

    /* only once the cluster is known: the offset is of that cluster */
    if (!c->caught_up || end < c->b->ident.applied_end ||
        (end == c->b->ident.applied_end &&
         (c->chain < 0 || c->chain == c->b->ident.applied_chain)) ||
        c->b->ident.props.cluster_id[0] == '\0' ||
        (!now && t - c->applied_saved_ms < CLUSTER_APPLIED_SAVE_MS)) {
        return;
    }
    c->applied_saved_ms = t;
    err_detail_clear(&ed);
    if (broker_ident_set_applied(&c->b->ident, end, c->chain, &ed) != 0) {
        trace_error("cluster",
                    "event=metadata_offset_not_saved broker=%d offset=%lld "
                    "msg=\"%s\"",
                    (int)c->id, (long long)end, ed.msg);
    }
}

void cluster_ident_stray(struct cluster *c,
                         const char *name,
                         int64_t topic_id,
                         const char *why)
{
    char key[300];
    char **grown;
    uint32_t i;

    (void)snprintf(key, sizeof(key), "%s %lld", name, (long long)topic_id);
    for (i = 0; i < c->n_strays; i++) {
        if (strcmp(c->strays[i], key) == 0) {
            return;
        }
    }
    trace_warn("cluster",
               "event=stray_partition_logs broker=%d topic=%s topic_id=%lld "
               "reason=%s action=kept msg=\"the cluster metadata does not "
               "know these logs: not served, not deleted (see "
               "docs/operations.md, stray partition logs)\"",
               (int)c->id, name, (long long)topic_id, why);
    grown = mem_realloc(c->strays, (c->n_strays + 1) * sizeof(*grown));
    if (grown == NULL) {
        return; /* reported again next time: harmless */
    }
    c->strays = grown;
    if ((c->strays[c->n_strays] = mem_strdup(key)) != NULL) {
        c->n_strays++;
    }
}
