/* SPDX-License-Identifier: Apache-2.0 */
/* Consumer group calls: FindCoordinator (any broker), membership
 * (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), offsets (OffsetCommit,
 * OffsetFetch) and group admin (ListGroups, DescribeGroups, DeleteGroups),
 * all carried out by the coordinator adapter in broker/group/group_io. */
#include "broker/api/api.h"
#include "broker/group/group_io.h"
#include "common/rpc.h"

void api_group(struct broker *b, struct srv_req *req, Weir__Request *r)
{
    struct group_io *g = b->group;

    if (g == NULL) { /* shutting down: the coordinator is gone already */
        broker_respond_error(req, r->correlation_id, WEIR_ESHUTTING_DOWN,
                             "broker is shutting down", false);
        rpc_request_free(r);
        return;
    }
    switch (r->body_case) {
    case WEIR__REQUEST__BODY_FIND_COORDINATOR:
        group_io_find_coordinator(g, req, r);
        break;
    case WEIR__REQUEST__BODY_JOIN_GROUP:
        group_io_join(g, req, r);
        break;
    case WEIR__REQUEST__BODY_SYNC_GROUP:
        group_io_sync(g, req, r);
        break;
    case WEIR__REQUEST__BODY_HEARTBEAT:
        group_io_heartbeat(g, req, r);
        break;
    case WEIR__REQUEST__BODY_LEAVE_GROUP:
        group_io_leave(g, req, r);
        break;
    case WEIR__REQUEST__BODY_OFFSET_COMMIT:
        group_io_offset_commit(g, req, r);
        break;
    case WEIR__REQUEST__BODY_OFFSET_FETCH:
        group_io_offset_fetch(g, req, r);
        break;
    case WEIR__REQUEST__BODY_LIST_GROUPS:
        group_io_list(g, req, r);
        break;
    case WEIR__REQUEST__BODY_DESCRIBE_GROUPS:
        group_io_describe(g, req, r);
        break;
    case WEIR__REQUEST__BODY_DELETE_GROUPS:
        group_io_delete(g, req, r);
        break;
    default:
        broker_respond_error(req, r->correlation_id, WEIR_EUNSUPPORTED_API,
                             "unknown call", false);
        rpc_request_free(r);
        break;
    }
}
