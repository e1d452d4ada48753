/* SPDX-License-Identifier: Apache-2.0 */
/* ListOffsets: earliest (-2), latest (-1: the high watermark), or the first
 * offset whose record timestamp is at or after a time (time index). */
#include <stdio.h>

#include "broker/api/api.h"
#include "broker/cluster/cluster.h"
#include "broker/replica/repl_io.h"
#include "common/mem.h"
#include "common/rpc.h"

#define LIST_OFFSETS_LATEST   (-1)
#define LIST_OFFSETS_EARLIEST (-2)

static void list_offsets_one(struct broker *b,
                             struct srv_req *req,
                             const Weir__ListOffsetsPartition *lp,
                             Weir__ListOffsetsPartitionResult *res,
                             char *msg,
                             size_t msg_cap)
{
    struct plog *log = logmgr_partition(b->logs, lp->topic, lp->partition);
    struct err_detail ed;
    int64_t off;
    int64_t ts;
    int rv;

    res->offset = -1;
    res->timestamp = -1;
    if (!api_may(b, req, ACL_TOPIC, lp->topic, ACL_DESCRIBE)) {
        res->error_code = WEIR_ETOPIC_AUTHORIZATION_FAILED;
        (void)snprintf(msg, msg_cap, "not authorized to describe %s",
                       lp->topic);
        return;
    }
    rv = broker_route(b, lp->topic, lp->partition, msg, msg_cap);
    if (rv != 0) {
        res->error_code = rv; /* cluster mode: ask the leader */
        return;
    }
    if (log == NULL) {
        res->error_code = WEIR_EUNKNOWN_TOPIC_OR_PARTITION;
        (void)snprintf(msg, msg_cap, "unknown topic or partition %s/%d",
                       lp->topic, lp->partition);
        return;
    }
    if (plog_is_offline(log)) {
        res->error_code = WEIR_ELOG_OFFLINE;
        (void)snprintf(msg, msg_cap, "%s/%d: %s", lp->topic, lp->partition,
                       plog_offline_reason(log));
        return;
    }
    if (lp->timestamp != LIST_OFFSETS_EARLIEST && b->repl != NULL &&
        !repl_io_hw_established(b->repl, log)) {
        res->error_code = WEIR_EOFFSET_NOT_AVAILABLE;
        (void)snprintf(msg, msg_cap,
                       "%s/%d has a new leader whose high watermark is not "
                       "established yet; retry",
                       lp->topic, lp->partition);
        return;
    }
    if (lp->timestamp == LIST_OFFSETS_LATEST) {
        res->offset = broker_high_watermark(b, log);
        return;
    }
    if (lp->timestamp == LIST_OFFSETS_EARLIEST) {
        res->offset = plog_start_offset(log);
        return;
    }
    if (lp->timestamp < 0) {
        res->error_code = WEIR_EINVALID_TIMESTAMP;
        (void)snprintf(msg, msg_cap, "timestamp %lld is not -1, -2 or a time",
                       (long long)lp->timestamp);
        return;
    }
    rv = plog_offset_for_time(log, lp->timestamp, &off, &ts, &ed);
    if (rv != 0) {
        res->error_code = rv;
        (void)snprintf(msg, msg_cap, "%s", ed.msg);
        return;
    }
    /* records not yet below the high watermark are not visible */
    if (off >= 0 && off < broker_high_watermark(b, log)) {
        res->offset = off;
        res->timestamp = ts;
    }
}

void api_list_offsets(struct broker *b, struct srv_req *req, Weir__Request *r)
{
    const Weir__ListOffsetsRequest *lr = r->list_offsets;
    Weir__Response resp = WEIR__RESPONSE__INIT;
    Weir__ListOffsetsResponse body = WEIR__LIST_OFFSETS_RESPONSE__INIT;
    size_t n = lr->n_partitions;
    Weir__ListOffsetsPartitionResult *res = mem_calloc(n + 1, sizeof(*res));
    Weir__ListOffsetsPartitionResult **ptrs = mem_calloc(n + 1, sizeof(*ptrs));
    char(*msgs)[512] = mem_calloc(n + 1, sizeof(*msgs));
    size_t i;

    if (res == NULL || ptrs == NULL || msgs == NULL) {
        broker_respond_error(req, r->correlation_id, WEIR_ENOMEM,
                             "out of memory", false);
        goto out;
    }
    for (i = 0; i < n; i++) {
        weir__list_offsets_partition_result__init(&res[i]);
        res[i].topic = lr->partitions[i]->topic;
        res[i].partition = lr->partitions[i]->partition;
        list_offsets_one(b, req, lr->partitions[i], &res[i], msgs[i],
                         sizeof(msgs[i]));
        res[i].error_message = msgs[i];
        ptrs[i] = &res[i];
    }
    body.partitions = ptrs;
    body.n_partitions = n;
    resp.correlation_id = r->correlation_id;
    resp.body_case = WEIR__RESPONSE__BODY_LIST_OFFSETS;
    resp.list_offsets = &body;
    broker_respond(req, &resp, NULL, false);
out:
    mem_free(res);
    mem_free(ptrs);
    mem_free(msgs);
    rpc_request_free(r);
}
