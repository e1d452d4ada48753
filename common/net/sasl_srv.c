/* SPDX-License-Identifier: Apache-2.0 */
/* SaslHandshake / SaslAuthenticate on the server side. */
#include "common/net/sasl_srv.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>

#include "common/mem.h"
#include "common/rpc.h"
#include "common/trace.h"

/* One connection's exchange (its srv auth slot). */
struct sasl_conn {
    bool handshaken; /* a mechanism was chosen */
    struct scram_server scram;
};

void sasl_srv_state_free(void *state)
{
    struct sasl_conn *sc = state;

    if (sc != NULL) {
        /* the exchange holds keys: do not leave them in freed memory */
        OPENSSL_cleanse(sc, sizeof(*sc));
        mem_free(sc);
    }
}

int sasl_srv_parse_mechs(const char *list,
                         unsigned *mechs,
                         struct err_detail *ed)
{
    const char *p = list != NULL ? list : "";

    *mechs = 0;
    while (*p != '\0') {
        char name[32];
        size_t n = strcspn(p, ", ");
        enum scram_mech m;
        if (n > 0) {
            if (n >= sizeof(name)) {
                return err_set(ed, WEIR_ECONFIG,
                               "sasl-mechanisms: unknown mechanism %.*s",
                               (int)(n > 64 ? 64 : n), p);
            }
            memcpy(name, p, n);
            name[n] = '\0';
            m = scram_mech_parse(name);
            if (m == 0) {
                return err_set(ed, WEIR_ECONFIG,
                               "sasl-mechanisms: unknown mechanism %s (use "
                               "SCRAM-SHA-256 and/or SCRAM-SHA-512)",
                               name);
            }
            *mechs |= 1u << m;
        }
        p += n;
        p += strspn(p, ", ");
    }
    return 0;
}

static void sasl_respond(struct srv_req *req, Weir__Response *resp, bool close)
{
    struct weir_buf frame;

    buf_init(&frame);
    if (rpc_encode_response(resp, 0, &frame) != 0) {
        close = true;
    }
    srv_req_respond(req, &frame, NULL, close);
    buf_fini(&frame);
}

static void sasl_handshake(const struct sasl_srv *g,
                           struct srv_req *req,
                           const Weir__Request *r)
{
    Weir__Response resp = WEIR__RESPONSE__INIT;
    Weir__SaslHandshakeResponse body = WEIR__SASL_HANDSHAKE_RESPONSE__INIT;
    char *names[2];
    enum scram_mech m = scram_mech_parse(r->sasl_handshake->mechanism);
    void **slot = srv_req_auth_state(req);
    struct sasl_conn *sc;
    bool close = false;

    if ((g->mechs & (1u << SCRAM_SHA_256)) != 0) {
        names[body.n_mechanisms++] = (char *)scram_mech_name(SCRAM_SHA_256);
    }
    if ((g->mechs & (1u << SCRAM_SHA_512)) != 0) {
        names[body.n_mechanisms++] = (char *)scram_mech_name(SCRAM_SHA_512);
    }
    body.mechanisms = names;
    if (slot == NULL) {
        sasl_respond(req, &resp, true);
        return;
    }
    sc = *slot;
    if (g->mechs == 0) {
        body.error_code = WEIR_EUNSUPPORTED_SASL_MECHANISM;
        body.error_message = "this listener does not use SASL";
    } else if (srv_req_authenticated(req) || (sc != NULL && sc->handshaken)) {
        body.error_code = WEIR_EILLEGAL_SASL_STATE;
        body.error_message = "already authenticated or authenticating";
        close = true;
    } else if (m == 0 || (g->mechs & (1u << m)) == 0) {
        body.error_code = WEIR_EUNSUPPORTED_SASL_MECHANISM;
        body.error_message = "mechanism not enabled here; see mechanisms";
    } else {
        sc = mem_calloc(1, sizeof(*sc));
        if (sc == NULL) {
            body.error_code = WEIR_ENOMEM;
            body.error_message = "out of memory";
            close = true;
        } else {
            scram_server_init(&sc->scram, m);
            sc->handshaken = true;
            *slot = sc;
        }
    }
    resp.correlation_id = r->correlation_id;
    resp.body_case = WEIR__RESPONSE__BODY_SASL_HANDSHAKE;
    resp.sasl_handshake = &body;
    sasl_respond(req, &resp, close);
}

static void sasl_authenticate(const struct sasl_srv *g,
                              struct srv_req *req,
                              const Weir__Request *r)
{
    Weir__Response resp = WEIR__RESPONSE__INIT;
    Weir__SaslAuthenticateResponse body =
        WEIR__SASL_AUTHENTICATE_RESPONSE__INIT;
    const ProtobufCBinaryData *in = &r->sasl_authenticate->auth_bytes;
    void **slot = srv_req_auth_state(req);
    struct sasl_conn *sc = slot != NULL ? *slot : NULL;
    char out[SCRAM_MAX_MESSAGE];
    char principal[SCRAM_MAX_USER + 8];
    struct err_detail ed;
    bool close = false;
    int rv;

    err_detail_clear(&ed);
    out[0] = '\0';
    if (sc == NULL || !sc->handshaken || srv_req_authenticated(req)) {
        rv = err_set(&ed, WEIR_EILLEGAL_SASL_STATE,
                     "SaslAuthenticate before SaslHandshake, or after the "
                     "exchange ended");
    } else if (sc->scram.state == SCRAM_SERVER_START) {
        rv =
            scram_server_first(&sc->scram, (const char *)in->data, in->len,
                               g->lookup, g->lookup_arg, out, sizeof(out), &ed);
    } else {
        rv = scram_server_final(&sc->scram, (const char *)in->data, in->len,
                                out, sizeof(out), &ed);
    }
    if (rv == 0 && sc->scram.state == SCRAM_SERVER_DONE) {
        (void)snprintf(principal, sizeof(principal), "User:%s", sc->scram.user);
        srv_req_authenticate(req, principal);
        body.principal = principal;
        trace_info(g->who, "event=sasl_ok peer=%s principal=\"%s\" mech=%s",
                   req->peer, principal, scram_mech_name(sc->scram.mech));
    } else if (rv != 0) {
        /* one answer for every failure: no probing of names or state */
        trace_warn(g->who,
                   "event=sasl_failed peer=%s user=\"%s\" error=%s "
                   "msg=\"%s\"",
                   req->peer, sc != NULL ? sc->scram.user : "",
                   weir_err_name(rv), ed.msg);
        body.error_code = rv == WEIR_EILLEGAL_SASL_STATE
                              ? WEIR_EILLEGAL_SASL_STATE
                              : WEIR_ESASL_AUTHENTICATION_FAILED;
        body.error_message =
            rv == WEIR_EILLEGAL_SASL_STATE ? ed.msg : "authentication failed";
        close = true;
    }
    body.auth_bytes.data = (uint8_t *)out;
    body.auth_bytes.len = rv == 0 ? strlen(out) : 0;
    resp.correlation_id = r->correlation_id;
    resp.body_case = WEIR__RESPONSE__BODY_SASL_AUTHENTICATE;
    resp.sasl_authenticate = &body;
    sasl_respond(req, &resp, close);
}

bool sasl_srv_gate(const struct sasl_srv *g,
                   struct srv_req *req,
                   const Weir__Request *r)
{
    Weir__Response resp = WEIR__RESPONSE__INIT;

    switch (r->body_case) {
    case WEIR__REQUEST__BODY_SASL_HANDSHAKE:
        sasl_handshake(g, req, r);
        return true;
    case WEIR__REQUEST__BODY_SASL_AUTHENTICATE:
        sasl_authenticate(g, req, r);
        return true;
    default:
        break;
    }
    if (srv_req_authenticated(req)) {
        return false;
    }
    trace_warn(g->who, "event=unauthenticated_call peer=%s call=%s", req->peer,
               rpc_api_name(r->body_case));
    resp.correlation_id = r->correlation_id;
    resp.error_code = WEIR_EILLEGAL_SASL_STATE;
    resp.error_message = "authenticate first (SaslHandshake, then "
                         "SaslAuthenticate)";
    sasl_respond(req, &resp, true);
    return true;
}
