/* SPDX-License-Identifier: Apache-2.0 */
/* Quorum membership as the RPC layer sees it: a member that is not the
 * active controller does nothing for brokers and admins but point them at
 * the one that is (NOT_CONTROLLER + the active controller's id and
 * address). Which member is active is decided by the quorum code, which
 * calls ctl_server_set_active; until it exists every controller is active
 * (or, for tests, a standby named by the standby-of option). */
#include <event2/event.h>
#include <stdio.h>
#include <string.h>

#include "common/trace.h"
#include "controller/ctl_io.h"

void ctl_server_set_active_id(struct ctl_server *s, int32_t id)
{
    s->active_id = id;
}

void ctl_server_set_active(struct ctl_server *s,
                           bool active,
                           const char *active_addr)
{
    bool was = s->active;

    (void)snprintf(s->active_addr, sizeof(s->active_addr), "%s",
                   active || active_addr == NULL ? "" : active_addr);
    s->active = active;
    if (was != active) {
        trace_info("controller",
                   "event=member_state active=%s active_controller=%s "
                   "active_id=%d",
                   active ? "true" : "false",
                   active ? s->address
                          : (s->active_addr[0] ? s->active_addr : "unknown"),
                   (int)s->active_id);
    }
    if (!active) {
        /* parked long polls must not wait for records this member will
         * not append: their brokers go to the active one now */
        ctl_rpc_wake(s, false);
    } else if (!was && s->tick_ev != NULL) {
        /* the TICK timer stopped while inactive (ctl_server_step) */
        event_active(s->tick_ev, EV_TIMEOUT, 0);
    }
}

bool ctl_member_needs_active(const Weir__Request *r)
{
    switch (r->body_case) {
    case WEIR__REQUEST__BODY_REGISTER_BROKER:
    case WEIR__REQUEST__BODY_BROKER_HEARTBEAT:
    case WEIR__REQUEST__BODY_FETCH_METADATA:
    case WEIR__REQUEST__BODY_ALTER_ISR:
    case WEIR__REQUEST__BODY_ALLOCATE_PRODUCER_IDS:
    case WEIR__REQUEST__BODY_METADATA:
    case WEIR__REQUEST__BODY_CREATE_TOPICS:
    case WEIR__REQUEST__BODY_DELETE_TOPICS:
    case WEIR__REQUEST__BODY_ALTER_USERS:
    case WEIR__REQUEST__BODY_DESCRIBE_USERS:
    case WEIR__REQUEST__BODY_CREATE_ACLS:
    case WEIR__REQUEST__BODY_DELETE_ACLS:
    case WEIR__REQUEST__BODY_DESCRIBE_ACLS:
        return true;
    default:
        return false;
    }
}

void ctl_member_refuse(struct ctl_server *s, struct srv_req *req, uint32_t corr)
{
    Weir__Response resp = WEIR__RESPONSE__INIT;
    Weir__ActiveController hint = WEIR__ACTIVE_CONTROLLER__INIT;
    char msg[800];

    if (s->active_addr[0] != '\0') {
        (void)snprintf(msg, sizeof(msg),
                       "controller %s is not the active controller; the "
                       "active one is %s",
                       s->address, s->active_addr);
        hint.id = s->active_id;
        hint.address = s->active_addr;
        resp.active_controller = &hint;
    } else {
        (void)snprintf(msg, sizeof(msg),
                       "controller %s is not the active controller and "
                       "does not know which one is",
                       s->address);
    }
    resp.correlation_id = corr;
    resp.error_code = WEIR_ENOT_CONTROLLER;
    resp.error_message = msg;
    ctl_rpc_respond(req, &resp, NULL);
}
