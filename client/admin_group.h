/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to admin_group*.c: a call to a group's coordinator.
 * Locality: the client's thread. */
#ifndef CLIENT_ADMIN_GROUP_H
#define CLIENT_ADMIN_GROUP_H

#include "client/client.h"

/* The body's error code of a response of the expected kind. */
typedef int admin_group_err_fn(const Weir__Response *r);

/* Find the coordinator and send req there, again while the coordinator is
 * unavailable, moved or loading (as body_err or the transport says).
 * Success: *out owns a response of kind `want` (its body error may be
 * anything else; the caller words it). Errors: transport, coordinator
 * errors after the last try, WEIR_EMALFORMED. */
WEIR_MUST_CHECK int admin_group_call(struct weir_client *c,
                                     const char *group,
                                     Weir__Request *req,
                                     Weir__Response__BodyCase want,
                                     admin_group_err_fn *body_err,
                                     Weir__Response **out,
                                     struct err_detail *ed);

#endif /* CLIENT_ADMIN_GROUP_H */
