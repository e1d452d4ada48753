/* SPDX-License-Identifier: Apache-2.0 */
/* The SASL gate in front of a server's dispatcher (broker and controller
 * alike): answers SaslHandshake and SaslAuthenticate with the SCRAM server
 * of common/scram.h, keeps each connection's exchange in its srv auth
 * slot, and refuses every other call on a connection that must still
 * authenticate (ILLEGAL_SASL_STATE, then close). A failed exchange is
 * answered SASL_AUTHENTICATION_FAILED and the connection closed, so a
 * password guess costs a connection.
 * Locality: the event loop thread. */
#ifndef COMMON_NET_SASL_SRV_H
#define COMMON_NET_SASL_SRV_H

#include <stdbool.h>

#include "common/net/srv.h"
#include "common/scram.h"
#include "proto/weir.pb-c.h"

#define SASL_PRE_AUTH_MAX_FRAME 8192 /* frame limit before authentication */

struct sasl_srv {
    unsigned mechs;          /* 1u << enum scram_mech per enabled one */
    scram_lookup_fn *lookup; /* the user's credential from metadata */
    void *lookup_arg;
    const char *who; /* "broker" / "controller", for traces */
};

/* "SCRAM-SHA-256,SCRAM-SHA-512" -> *mechs (empty = none). Errors:
 * WEIR_ECONFIG naming the unknown mechanism. */
WEIR_MUST_CHECK int
sasl_srv_parse_mechs(const char *list, unsigned *mechs, struct err_detail *ed);

/* Handle r if it is a SASL call, or if the connection may not make it
 * yet; true when answered (the caller frees r and is done with req),
 * false to dispatch as usual. */
bool sasl_srv_gate(const struct sasl_srv *g,
                   struct srv_req *req,
                   const Weir__Request *r);

/* The srv_config.auth_free for connections the gate served. */
void sasl_srv_state_free(void *state);

#endif /* COMMON_NET_SASL_SRV_H */
