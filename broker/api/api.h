/* SPDX-License-Identifier: Apache-2.0 */
/* Request handlers, one file per call. Each takes ownership of the decoded
 * request `r` (rpc_request_free when done) and answers `req` exactly once,
 * now or later. */
#ifndef BROKER_API_API_H
#define BROKER_API_API_H

#include "broker/broker.h"

/* authz.c: with authorization on, may the request's principal do op on
 * (res, name)? Always true with it off. */
bool api_may(struct broker *b,
             struct srv_req *req,
             enum acl_resource res,
             const char *name,
             enum acl_op op);
/* The checks made before dispatch (groups, replica fetches, topic and
 * security administration). false: refused, answered, and r freed. */
bool api_authorize(struct broker *b, struct srv_req *req, Weir__Request *r);
/* AlterUsers, DescribeUsers, CreateAcls, DeleteAcls, DescribeAcls: to the
 * controller. */
void api_admin_auth(struct broker *b, struct srv_req *req, Weir__Request *r);

void api_metadata(struct broker *b, struct srv_req *req, Weir__Request *r);
void api_create_topics(struct broker *b, struct srv_req *req, Weir__Request *r);
void api_delete_topics(struct broker *b, struct srv_req *req, Weir__Request *r);
void api_produce(struct broker *b, struct srv_req *req, Weir__Request *r);
void api_fetch(struct broker *b, struct srv_req *req, Weir__Request *r);
void api_list_offsets(struct broker *b, struct srv_req *req, Weir__Request *r);
/* group.c: consumer group calls, to the coordinator (broker/group). */
void api_group(struct broker *b, struct srv_req *req, Weir__Request *r);
/* producer_id.c: the idempotent producer's id. */
void api_init_producer_id(struct broker *b,
                          struct srv_req *req,
                          Weir__Request *r);
/* Answer InitProducerIds still waiting for the controller (shutdown,
 * before the cluster connection goes). */
void api_producer_id_shutdown(struct broker *b);

/* Produce requests waiting for group commit: complete those now durable
 * (or fail them with `code` when a flush failed, code != 0). */
void api_produce_complete_waits(struct broker *b);
/* A flush of `log` failed or its leadership was lost: answer every wait
 * on it. The waits were appended, so a definite `code` is answered with
 * its indefinite *_AFTER_APPEND form (NOT_LEADER becomes
 * NOT_LEADER_AFTER_APPEND; see produce_error_code in produce.c). */
void api_produce_fail_log(struct broker *b,
                          const struct plog *log,
                          int code,
                          const char *msg);
/* Retry parked fetches; final = answer them all now (shutdown). */
void api_fetch_retry(struct broker *b, bool final);

#endif /* BROKER_API_API_H */
