/* SPDX-License-Identifier: Apache-2.0 */
/* Synchronous request/reply over the pool: send one request and poll
 * until its reply, its deadline, or a signal. For admin calls, metadata
 * and start-up checks; the data path (produce, fetch) stays asynchronous.
 * Locality: the client's thread, never from inside a callback. */
#ifndef CLIENT_CALL_H
#define CLIENT_CALL_H

#include <stddef.h>
#include <stdint.h>

#include "client/pool.h"
#include "common/err.h"
#include "proto/weir.pb-c.h"

/* Send req to host:port on lane and wait. Success: *out owns the
 * response (rpc_response_free); its envelope error_code was 0.
 * Errors: transport (WEIR_ENETWORK, WEIR_EREQUEST_TIMED_OUT, also when
 * interrupted by a signal), the envelope's error code, WEIR_ENOMEM,
 * WEIR_EINVALID_ARGUMENT when called from inside a callback. */
WEIR_MUST_CHECK int call_sync(struct pool *p,
                              const char *host,
                              uint16_t port,
                              enum pool_lane lane,
                              Weir__Request *req,
                              uint32_t timeout_ms,
                              Weir__Response **out,
                              struct err_detail *ed);

/* call_sync, and on a NOT_CONTROLLER answer (a controller quorum member
 * that is not the active one) the active controller's host:port it named
 * goes to hint ("" when none; always set, hint_cap > 0). */
WEIR_MUST_CHECK int call_sync_hint(struct pool *p,
                                   const char *host,
                                   uint16_t port,
                                   enum pool_lane lane,
                                   Weir__Request *req,
                                   uint32_t timeout_ms,
                                   Weir__Response **out,
                                   char *hint,
                                   size_t hint_cap,
                                   struct err_detail *ed);

/* True for errors after which another broker might answer. */
bool call_is_transport_err(int err);

#endif /* CLIENT_CALL_H */
