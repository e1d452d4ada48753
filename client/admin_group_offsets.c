/* SPDX-License-Identifier: Apache-2.0 */
/* Admin calls on a group's offsets: fetch what it committed, compute lag
 * against the partitions' log start and end (ListOffsets), and commit as
 * an operator (generation -1, member ""), which the coordinator accepts
 * only while the group has no members. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/admin_group.h"
#include "common/mem.h"
#include "common/rpc.h"

void weir_group_offsets_free(struct weir_group_offsets *o)
{
    size_t i;

    if (o == NULL) {
        return;
    }
    for (i = 0; i < o->n; i++) {
        mem_free(o->o[i].topic);
    }
    mem_free(o->o);
    mem_free(o);
}

static int admin_offsets_cmp(const void *a, const void *b)
{
    const struct weir_group_offset *x = a;
    const struct weir_group_offset *y = b;
    int c = strcmp(x->topic, y->topic);

    if (c != 0) {
        return c;
    }
    return x->partition < y->partition ? -1 : x->partition > y->partition;
}

static int admin_offsets_fetch_err(const Weir__Response *r)
{
    return r->offset_fetch->error_code;
}

static int admin_offsets_fill(struct weir_group_offsets *o,
                              const Weir__OffsetFetchResponse *f)
{
    size_t i;

    o->o = mem_calloc(f->n_partitions + 1, sizeof(*o->o));
    if (o->o == NULL) {
        return WEIR_ENOMEM;
    }
    for (i = 0; i < f->n_partitions; i++) {
        struct weir_group_offset *e = &o->o[o->n];
        e->topic = mem_strdup(f->partitions[i]->topic);
        if (e->topic == NULL) {
            return WEIR_ENOMEM;
        }
        o->n++;
        e->partition = f->partitions[i]->partition;
        e->offset =
            f->partitions[i]->error_code == 0 ? f->partitions[i]->offset : -1;
        e->log_start = e->log_end = e->lag = -1;
    }
    if (o->n > 1) {
        qsort(o->o, o->n, sizeof(*o->o), admin_offsets_cmp);
    }
    return 0;
}

int weir_admin_group_offsets(struct weir_client *c,
                             const char *group,
                             const char *topic,
                             struct weir_group_offsets **out,
                             struct err_detail *ed)
{
    Weir__Request req;
    Weir__OffsetFetchRequest fr;
    Weir__TopicPartitions tp;
    Weir__TopicPartitions *ptp = &tp;
    Weir__Response *resp;
    struct weir_group_offsets *o;
    int32_t *parts = NULL;
    int32_t n = 0;
    int32_t i;
    int rv;

    *out = NULL;
    weir__offset_fetch_request__init(&fr);
    fr.group = (char *)group;
    if (topic != NULL) {
        rv = weir_client_partition_count(c, topic, &n, ed);
        if (rv != 0) {
            return rv;
        }
        parts = mem_calloc((size_t)n + 1, sizeof(*parts));
        if (parts == NULL) {
            return err_set(ed, WEIR_ENOMEM, "out of memory");
        }
        for (i = 0; i < n; i++) {
            parts[i] = i;
        }
        weir__topic_partitions__init(&tp);
        tp.topic = (char *)topic;
        tp.n_partitions = (size_t)n;
        tp.partitions = parts;
        fr.n_topics = 1;
        fr.topics = &ptp;
    }
    weir__request__init(&req);
    req.body_case = WEIR__REQUEST__BODY_OFFSET_FETCH;
    req.offset_fetch = &fr;
    rv = admin_group_call(c, group, &req, WEIR__RESPONSE__BODY_OFFSET_FETCH,
                          admin_offsets_fetch_err, &resp, ed);
    mem_free(parts);
    if (rv != 0) {
        return rv;
    }
    rv = resp->offset_fetch->error_code;
    if (rv != 0) {
        rv = err_set(ed, rv, "offsets of group '%s': %s", group,
                     weir_err_str(rv));
        rpc_response_free(resp);
        return rv;
    }
    o = mem_calloc(1, sizeof(*o));
    if (o == NULL || admin_offsets_fill(o, resp->offset_fetch) != 0) {
        weir_group_offsets_free(o);
        rpc_response_free(resp);
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    rpc_response_free(resp);
    *out = o;
    return 0;
}

/* Log start and end of every partition of one topic into the entries of
 * that topic. */
static int admin_offsets_topic(struct weir_client *c,
                               struct weir_group_offsets *o,
                               const char *topic,
                               struct err_detail *ed)
{
    struct weir_offset_result *lo = NULL;
    struct weir_offset_result *hi = NULL;
    size_t n_lo = 0;
    size_t n_hi = 0;
    size_t i;
    size_t j;
    int rv;

    rv = weir_admin_list_offsets(c, topic, -1, WEIR_OFFSET_EARLIEST, &lo, &n_lo,
                                 ed);
    if (rv == 0) {
        rv = weir_admin_list_offsets(c, topic, -1, WEIR_OFFSET_LATEST, &hi,
                                     &n_hi, ed);
    }
    for (i = 0; rv == 0 && i < o->n; i++) {
        struct weir_group_offset *e = &o->o[i];
        if (strcmp(e->topic, topic) != 0) {
            continue;
        }
        for (j = 0; j < n_lo; j++) {
            if (lo[j].partition == e->partition && lo[j].error_code == 0) {
                e->log_start = lo[j].offset;
            }
        }
        for (j = 0; j < n_hi; j++) {
            if (hi[j].partition == e->partition && hi[j].error_code == 0) {
                e->log_end = hi[j].offset;
            }
        }
        if (e->log_end >= 0) {
            int64_t from = e->offset >= 0 ? e->offset : e->log_start;
            e->lag = from >= 0 && e->log_end > from ? e->log_end - from : 0;
        }
    }
    weir_offsets_free(lo);
    weir_offsets_free(hi);
    return rv;
}

int weir_admin_group_lag(struct weir_client *c,
                         struct weir_group_offsets *o,
                         struct err_detail *ed)
{
    size_t i;
    int rv;

    for (i = 0; i < o->n; i++) {
        if (i > 0 && strcmp(o->o[i].topic, o->o[i - 1].topic) == 0) {
            continue; /* sorted: each topic once */
        }
        rv = admin_offsets_topic(c, o, o->o[i].topic, ed);
        if (rv != 0 && rv != WEIR_EUNKNOWN_TOPIC_OR_PARTITION) {
            return rv;
        }
    }
    return 0;
}

static int admin_offsets_commit_err(const Weir__Response *r)
{
    return r->offset_commit->error_code;
}

static int admin_offsets_commit_result(const char *group,
                                       const Weir__OffsetCommitResponse *cr,
                                       struct err_detail *ed)
{
    size_t i;

    if (cr->error_code == WEIR_ENON_EMPTY_GROUP ||
        cr->error_code == WEIR_EUNKNOWN_MEMBER_ID ||
        cr->error_code == WEIR_EILLEGAL_GENERATION ||
        cr->error_code == WEIR_EREBALANCE_IN_PROGRESS) {
        return err_set(ed, WEIR_ENON_EMPTY_GROUP,
                       "group '%s' has live members; stop its consumers "
                       "before changing its offsets",
                       group);
    }
    if (cr->error_code != 0) {
        return err_set(ed, cr->error_code, "commit to group '%s': %s", group,
                       cr->error_message[0] != '\0'
                           ? cr->error_message
                           : weir_err_str(cr->error_code));
    }
    for (i = 0; i < cr->n_partitions; i++) {
        const Weir__OffsetCommitPartitionResult *p = cr->partitions[i];
        if (p->error_code != 0) {
            return err_set(
                ed, p->error_code, "commit %s/%d: %s", p->topic, p->partition,
                p->error_message[0] != '\0' ? p->error_message
                                            : weir_err_str(p->error_code));
        }
    }
    return 0;
}

int weir_admin_commit_group_offsets(struct weir_client *c,
                                    const char *group,
                                    const struct weir_group_offset *o,
                                    size_t n,
                                    struct err_detail *ed)
{
    Weir__Request req;
    Weir__OffsetCommitRequest cr;
    Weir__OffsetCommitPartition *ps;
    Weir__OffsetCommitPartition **pp;
    Weir__Response *resp;
    size_t i;
    int rv;

    ps = mem_calloc(n + 1, sizeof(*ps));
    pp = mem_calloc(n + 1, sizeof(*pp));
    if (ps == NULL || pp == NULL) {
        mem_free(ps);
        mem_free(pp);
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    for (i = 0; i < n; i++) {
        weir__offset_commit_partition__init(&ps[i]);
        ps[i].topic = o[i].topic;
        ps[i].partition = o[i].partition;
        ps[i].offset = o[i].offset;
        ps[i].leader_epoch = -1;
        ps[i].metadata = "";
        pp[i] = &ps[i];
    }
    weir__offset_commit_request__init(&cr);
    cr.group = (char *)group;
    cr.generation_id = -1;
    cr.member_id = "";
    cr.n_partitions = n;
    cr.partitions = pp;
    weir__request__init(&req);
    req.body_case = WEIR__REQUEST__BODY_OFFSET_COMMIT;
    req.offset_commit = &cr;
    rv = admin_group_call(c, group, &req, WEIR__RESPONSE__BODY_OFFSET_COMMIT,
                          admin_offsets_commit_err, &resp, ed);
    mem_free(ps);
    mem_free(pp);
    if (rv != 0) {
        return rv;
    }
    rv = admin_offsets_commit_result(group, resp->offset_commit, ed);
    rpc_response_free(resp);
    return rv;
}
