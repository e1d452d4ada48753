/* SPDX-License-Identifier: Apache-2.0 */
/* Authorization of client calls on a broker: the checks every handler
 * makes, the whole-request ones made before dispatch (groups, replica
 * fetches, administration), and the forwarding of user and ACL calls to
 * the controller. Rules come from the cluster metadata. */
#include <string.h>

#include "broker/api/api.h"
#include "broker/cluster/cluster.h"
#include "common/rpc.h"
#include "common/trace.h"

static const struct acl_set *api_rules(const struct broker *b)
{
    return b->cluster != NULL ? meta_image_acls(cluster_image(b->cluster))
                              : NULL;
}

bool api_may(struct broker *b,
             struct srv_req *req,
             enum acl_resource res,
             const char *name,
             enum acl_op op)
{
    if (!b->authz.enabled) {
        return true; /* the common case, per partition: nothing to look up */
    }
    return authz_allowed(&b->authz, api_rules(b), srv_req_principal(req), res,
                         name, op);
}

/* InitProducerId: a producer that may write somewhere (as Kafka asks of
 * an idempotent producer without cluster rights). */
static bool api_may_write_some_topic(struct broker *b, struct srv_req *req)
{
    const struct acl_set *rules = api_rules(b);
    const char *who = authz_principal(srv_req_principal(req));
    size_t i;

    if (api_may(b, req, ACL_CLUSTER, "", ACL_CLUSTER_ACTION)) {
        return true;
    }
    for (i = 0; rules != NULL && i < rules->n; i++) {
        const struct acl_rule *r = &rules->rules[i];
        if (r->resource == ACL_TOPIC && r->perm == ACL_ALLOW &&
            (r->op == ACL_WRITE || r->op == ACL_ALL) &&
            (strcmp(r->principal, "*") == 0 ||
             strcmp(r->principal, who) == 0) &&
            (r->pattern == ACL_PREFIXED || strcmp(r->name, "*") == 0 ||
             api_may(b, req, ACL_TOPIC, r->name, ACL_WRITE))) {
            return true;
        }
    }
    return false;
}

/* The whole-request check: 0, or the error to answer with. */
static int api_authorize_request(struct broker *b,
                                 struct srv_req *req,
                                 const Weir__Request *r)
{
    size_t i;

    switch (r->body_case) {
    case WEIR__REQUEST__BODY_FETCH:
        /* a follower's fetch reads uncommitted data and moves the high
         * watermark: brokers only */
        if (r->fetch->replica_id >= 0 &&
            !api_may(b, req, ACL_CLUSTER, "", ACL_CLUSTER_ACTION)) {
            return WEIR_ECLUSTER_AUTHORIZATION_FAILED;
        }
        return 0;
    case WEIR__REQUEST__BODY_INIT_PRODUCER_ID:
        return api_may_write_some_topic(b, req)
                   ? 0
                   : WEIR_ECLUSTER_AUTHORIZATION_FAILED;
    case WEIR__REQUEST__BODY_FIND_COORDINATOR:
        return api_may(b, req, ACL_GROUP, r->find_coordinator->group,
                       ACL_DESCRIBE)
                   ? 0
                   : WEIR_EGROUP_AUTHORIZATION_FAILED;
    case WEIR__REQUEST__BODY_JOIN_GROUP:
    case WEIR__REQUEST__BODY_SYNC_GROUP:
    case WEIR__REQUEST__BODY_HEARTBEAT:
    case WEIR__REQUEST__BODY_LEAVE_GROUP: {
        const char *g = r->body_case == WEIR__REQUEST__BODY_JOIN_GROUP
                            ? r->join_group->group
                        : r->body_case == WEIR__REQUEST__BODY_SYNC_GROUP
                            ? r->sync_group->group
                        : r->body_case == WEIR__REQUEST__BODY_HEARTBEAT
                            ? r->heartbeat->group
                            : r->leave_group->group;
        return api_may(b, req, ACL_GROUP, g, ACL_READ)
                   ? 0
                   : WEIR_EGROUP_AUTHORIZATION_FAILED;
    }
    case WEIR__REQUEST__BODY_OFFSET_COMMIT:
        if (!api_may(b, req, ACL_GROUP, r->offset_commit->group, ACL_READ)) {
            return WEIR_EGROUP_AUTHORIZATION_FAILED;
        }
        for (i = 0; i < r->offset_commit->n_partitions; i++) {
            if (!api_may(b, req, ACL_TOPIC,
                         r->offset_commit->partitions[i]->topic, ACL_READ)) {
                return WEIR_ETOPIC_AUTHORIZATION_FAILED;
            }
        }
        return 0;
    case WEIR__REQUEST__BODY_OFFSET_FETCH:
        if (!api_may(b, req, ACL_GROUP, r->offset_fetch->group, ACL_DESCRIBE)) {
            return WEIR_EGROUP_AUTHORIZATION_FAILED;
        }
        for (i = 0; i < r->offset_fetch->n_topics; i++) {
            if (!api_may(b, req, ACL_TOPIC, r->offset_fetch->topics[i]->topic,
                         ACL_DESCRIBE)) {
                return WEIR_ETOPIC_AUTHORIZATION_FAILED;
            }
        }
        return 0;
    case WEIR__REQUEST__BODY_LIST_GROUPS:
        return api_may(b, req, ACL_CLUSTER, "", ACL_DESCRIBE)
                   ? 0
                   : WEIR_ECLUSTER_AUTHORIZATION_FAILED;
    case WEIR__REQUEST__BODY_DESCRIBE_GROUPS:
    case WEIR__REQUEST__BODY_DELETE_GROUPS: {
        bool del = r->body_case == WEIR__REQUEST__BODY_DELETE_GROUPS;
        size_t n =
            del ? r->delete_groups->n_groups : r->describe_groups->n_groups;
        for (i = 0; i < n; i++) {
            if (!api_may(b, req, ACL_GROUP,
                         del ? r->delete_groups->groups[i]
                             : r->describe_groups->groups[i],
                         del ? ACL_DELETE : ACL_DESCRIBE)) {
                return WEIR_EGROUP_AUTHORIZATION_FAILED;
            }
        }
        return 0;
    }
    case WEIR__REQUEST__BODY_CREATE_TOPICS:
        if (api_may(b, req, ACL_CLUSTER, "", ACL_CREATE)) {
            return 0;
        }
        for (i = 0; i < r->create_topics->n_topics; i++) {
            if (!api_may(b, req, ACL_TOPIC, r->create_topics->topics[i]->name,
                         ACL_CREATE)) {
                return WEIR_ETOPIC_AUTHORIZATION_FAILED;
            }
        }
        return 0;
    case WEIR__REQUEST__BODY_DELETE_TOPICS:
        for (i = 0; i < r->delete_topics->n_names; i++) {
            if (!api_may(b, req, ACL_TOPIC, r->delete_topics->names[i],
                         ACL_DELETE)) {
                return WEIR_ETOPIC_AUTHORIZATION_FAILED;
            }
        }
        return 0;
    case WEIR__REQUEST__BODY_ALTER_USERS:
    case WEIR__REQUEST__BODY_CREATE_ACLS:
    case WEIR__REQUEST__BODY_DELETE_ACLS:
        return api_may(b, req, ACL_CLUSTER, "", ACL_ALTER)
                   ? 0
                   : WEIR_ECLUSTER_AUTHORIZATION_FAILED;
    case WEIR__REQUEST__BODY_DESCRIBE_USERS:
    case WEIR__REQUEST__BODY_DESCRIBE_ACLS:
        return api_may(b, req, ACL_CLUSTER, "", ACL_DESCRIBE)
                   ? 0
                   : WEIR_ECLUSTER_AUTHORIZATION_FAILED;
    case WEIR__REQUEST__BODY_REGISTER_BROKER:
    case WEIR__REQUEST__BODY_BROKER_HEARTBEAT:
    case WEIR__REQUEST__BODY_FETCH_METADATA:
    case WEIR__REQUEST__BODY_ALTER_ISR:
    case WEIR__REQUEST__BODY_ALLOCATE_PRODUCER_IDS:
        return api_may(b, req, ACL_CLUSTER, "", ACL_CLUSTER_ACTION)
                   ? 0
                   : WEIR_ECLUSTER_AUTHORIZATION_FAILED;
    default:
        /* produce, fetch, list offsets and metadata check per topic */
        return 0;
    }
}

bool api_authorize(struct broker *b, struct srv_req *req, Weir__Request *r)
{
    int code;

    if (!b->authz.enabled) {
        return true;
    }
    code = api_authorize_request(b, req, r);
    if (code == 0) {
        return true;
    }
    trace_warn("api", "event=denied peer=%s principal=\"%s\" call=%s",
               req->peer, authz_principal(srv_req_principal(req)),
               rpc_api_name(r->body_case));
    broker_respond_error(req, r->correlation_id, code, weir_err_str(code),
                         false);
    rpc_request_free(r);
    return false;
}

void api_admin_auth(struct broker *b, struct srv_req *req, Weir__Request *r)
{
    if (b->cluster == NULL) {
        broker_respond_error(req, r->correlation_id, WEIR_EUNSUPPORTED_API,
                             "users and ACLs are cluster metadata: this "
                             "broker runs alone",
                             false);
        rpc_request_free(r);
        return;
    }
    cluster_api_forward(b, req, r);
}
