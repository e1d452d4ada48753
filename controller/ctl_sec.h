/* SPDX-License-Identifier: Apache-2.0 */
/* The controller's security: SASL logins (users from its own image),
 * authorization of every call, users created at start from
 * bootstrap-users-file, and the user and ACL administration calls
 * (which become USER_SCRAM / ACL metadata records).
 * Locality: the controller loop thread. */
#ifndef CONTROLLER_CTL_SEC_H
#define CONTROLLER_CTL_SEC_H

#include <stdbool.h>

#include "common/net/srv.h"
#include "controller/ctl_io.h"

/* Parse the options. Errors: WEIR_ECONFIG, WEIR_ENOMEM. */
WEIR_MUST_CHECK int ctl_sec_open(struct ctl_server *s, struct err_detail *ed);
/* Create the users of bootstrap-users-file that do not exist yet (the
 * core and timers must exist). Errors: WEIR_ECONFIG, WEIR_EIO, and the
 * step's. */
WEIR_MUST_CHECK int ctl_sec_bootstrap(struct ctl_server *s,
                                      struct err_detail *ed);
void ctl_sec_close(struct ctl_server *s);
/* Set the listener's authentication fields. */
void ctl_sec_listener(const struct ctl_server *s, struct srv_config *sc);

/* SASL and authorization in front of the routing: true when r was
 * answered here (refused, or a SASL call). */
bool ctl_sec_gate(struct ctl_server *s,
                  struct srv_req *req,
                  const Weir__Request *r);

/* AlterUsers, DescribeUsers, CreateAcls, DeleteAcls, DescribeAcls. */
void ctl_sec_rpc(struct ctl_server *s,
                 struct srv_req *req,
                 const Weir__Request *r);

#endif /* CONTROLLER_CTL_SEC_H */
