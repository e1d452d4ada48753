/* SPDX-License-Identifier: Apache-2.0 */
/* The SASL/SCRAM login a connection runs in CONN_AUTH, after TCP (and
 * TLS) is up and before any request queued with conn_send is written.
 * Locality: the client's thread. */
#include <stdio.h>
#include <string.h>

#include "client/conn_int.h"
#include "common/mem.h"
#include "common/rpc.h"
#include "common/scram.h"

/* The SASL login's own frames: SaslHandshake, then two
 * SaslAuthenticate. They go out from buf, ahead of wbuf, whose requests
 * wait for CONN_UP; each reply comes to conn_auth_reply. */
enum conn_auth_step {
    CONN_AUTH_HANDSHAKE,
    CONN_AUTH_FIRST,
    CONN_AUTH_FINAL,
};

struct conn_auth {
    enum conn_auth_step step;
    enum scram_mech mech;
    uint32_t correlation_id; /* of the frame awaiting its reply */
    struct weir_buf buf;     /* [pos, len) unwritten */
    size_t pos;
    struct scram_client scram;
};

const char *conn_sasl_user(const struct conn *c)
{
    return c->opts.sasl_user != NULL ? c->opts.sasl_user : "";
}

/* Close with "authentication failed for user 'U' at HOST:PORT: why". */
static void conn_auth_fail(struct conn *c, int err, const char *why)
{
    char msg[800];

    (void)snprintf(msg, sizeof(msg),
                   "authentication failed for user '%.100s' at %.200s: %.180s",
                   conn_sasl_user(c), c->name, why);
    conn_close(c, err, msg);
}

bool conn_auth_is_writing(const struct conn *c)
{
    return c->auth->pos < c->auth->buf.len;
}

void conn_auth_free(struct conn *c)
{
    if (c->auth != NULL) {
        buf_fini(&c->auth->buf);
        mem_free(c->auth);
        c->auth = NULL;
    }
}

void conn_auth_write(struct conn *c)
{
    struct conn_auth *a = c->auth;
    ssize_t n;

    while (a->pos < a->buf.len) {
        n = conn_send_bytes(c, a->buf.data + a->pos, a->buf.len - a->pos);
        if (n <= 0) {
            return; /* full, or closed (a is gone) */
        }
        a->pos += (size_t)n;
    }
    a->buf.len = 0;
    a->pos = 0;
}

/* Encode one login frame (correlation id from the connection's counter)
 * and start writing it. */
static void conn_auth_send(struct conn *c, Weir__Request *req)
{
    struct conn_auth *a = c->auth;
    int rv;

    req->correlation_id = ++c->next_correlation_id;
    req->client_id = (char *)c->opts.client_id;
    a->correlation_id = req->correlation_id;
    rv = rpc_encode_request(req, 0, &a->buf);
    if (rv != 0 || !buf_ok(&a->buf)) {
        conn_auth_fail(c, rv != 0 ? rv : WEIR_ENOMEM,
                       "cannot encode the login request");
        return;
    }
    conn_auth_write(c);
}

static void conn_auth_send_bytes(struct conn *c, const char *msg)
{
    Weir__Request req;
    Weir__SaslAuthenticateRequest ar;

    weir__sasl_authenticate_request__init(&ar);
    ar.auth_bytes.data = (uint8_t *)msg;
    ar.auth_bytes.len = strlen(msg);
    weir__request__init(&req);
    req.body_case = WEIR__REQUEST__BODY_SASL_AUTHENTICATE;
    req.sasl_authenticate = &ar;
    conn_auth_send(c, &req);
}

void conn_auth_start(struct conn *c)
{
    Weir__Request req;
    Weir__SaslHandshakeRequest hr;
    struct conn_auth *a;

    a = mem_calloc(1, sizeof(*a));
    if (a == NULL) {
        conn_close(c, WEIR_ENOMEM, "out of memory");
        return;
    }
    buf_init(&a->buf);
    a->step = CONN_AUTH_HANDSHAKE;
    a->mech = scram_mech_parse(c->opts.sasl_mechanism);
    c->auth = a;
    c->state = CONN_AUTH;
    if (a->mech == 0) {
        conn_auth_fail(c, WEIR_EUNSUPPORTED_SASL_MECHANISM,
                       "unknown SASL mechanism (use SCRAM-SHA-256 or "
                       "SCRAM-SHA-512)");
        return;
    }
    weir__sasl_handshake_request__init(&hr);
    hr.mechanism = (char *)c->opts.sasl_mechanism;
    weir__request__init(&req);
    req.body_case = WEIR__REQUEST__BODY_SASL_HANDSHAKE;
    req.sasl_handshake = &hr;
    conn_auth_send(c, &req);
}

static void conn_auth_handshake(struct conn *c,
                                const Weir__SaslHandshakeResponse *r)
{
    char out[SCRAM_MAX_MESSAGE];
    char why[400];
    struct err_detail ed;
    size_t used = 0;
    size_t i;

    if (r->error_code != 0) {
        used = (size_t)snprintf(why, sizeof(why), "%.150s (enabled:",
                                r->error_message[0] != '\0'
                                    ? r->error_message
                                    : weir_err_str(r->error_code));
        for (i = 0; i < r->n_mechanisms && used < sizeof(why) - 40; i++) {
            used += (size_t)snprintf(why + used, sizeof(why) - used, " %.30s",
                                     r->mechanisms[i]);
        }
        (void)snprintf(why + used, sizeof(why) - used, "%s)",
                       r->n_mechanisms == 0 ? " none" : "");
        conn_auth_fail(c,
                       r->error_code == WEIR_EUNSUPPORTED_SASL_MECHANISM
                           ? WEIR_EUNSUPPORTED_SASL_MECHANISM
                           : WEIR_ESASL_AUTHENTICATION_FAILED,
                       why);
        return;
    }
    if (scram_client_first(&c->auth->scram, c->auth->mech, conn_sasl_user(c),
                           NULL, out, sizeof(out), &ed) != 0) {
        conn_auth_fail(c, WEIR_ESASL_AUTHENTICATION_FAILED, ed.msg);
        return;
    }
    c->auth->step = CONN_AUTH_FIRST;
    conn_auth_send_bytes(c, out);
}

/* The login succeeded: requests queued meanwhile go out now. */
static void conn_auth_done(struct conn *c)
{
    conn_auth_free(c);
    c->state = CONN_UP;
    c->was_up = true;
}

static void conn_auth_exchange(struct conn *c,
                               const Weir__SaslAuthenticateResponse *r)
{
    char out[SCRAM_MAX_MESSAGE];
    struct err_detail ed;
    const char *p = (const char *)r->auth_bytes.data;
    size_t len = r->auth_bytes.len;

    if (r->error_code != 0) {
        conn_auth_fail(c, WEIR_ESASL_AUTHENTICATION_FAILED,
                       r->error_message[0] != '\0'
                           ? r->error_message
                           : weir_err_str(r->error_code));
        return;
    }
    if (p == NULL) {
        p = "";
    }
    if (c->auth->step == CONN_AUTH_FIRST) {
        if (scram_client_final(
                &c->auth->scram,
                c->opts.sasl_password != NULL ? c->opts.sasl_password : "", p,
                len, out, sizeof(out), &ed) != 0) {
            conn_auth_fail(c, WEIR_ESASL_AUTHENTICATION_FAILED, ed.msg);
            return;
        }
        c->auth->step = CONN_AUTH_FINAL;
        conn_auth_send_bytes(c, out);
        return;
    }
    if (scram_client_verify(&c->auth->scram, p, len, &ed) != 0) {
        conn_auth_fail(c, WEIR_ESASL_AUTHENTICATION_FAILED, ed.msg);
        return;
    }
    conn_auth_done(c);
}

void conn_auth_reply(struct conn *c,
                     struct weir_slice header,
                     struct weir_slice p)
{
    Weir__Response__BodyCase want =
        c->auth->step == CONN_AUTH_HANDSHAKE
            ? WEIR__RESPONSE__BODY_SASL_HANDSHAKE
            : WEIR__RESPONSE__BODY_SASL_AUTHENTICATE;
    Weir__Response *resp = NULL;
    struct err_detail ed;

    if (rpc_response_decode(header, (uint32_t)p.len, &resp, &ed) != 0) {
        rpc_response_free(resp);
        conn_protocol_error(c, "bad reply", ed.msg);
        return;
    }
    if (resp->correlation_id != c->auth->correlation_id) {
        conn_protocol_error(c, "out-of-order reply", "");
    } else if (resp->error_code != 0) {
        conn_auth_fail(c,
                       resp->error_code == WEIR_EUNSUPPORTED_SASL_MECHANISM
                           ? WEIR_EUNSUPPORTED_SASL_MECHANISM
                           : WEIR_ESASL_AUTHENTICATION_FAILED,
                       resp->error_message != NULL && resp->error_message[0]
                           ? resp->error_message
                           : weir_err_str(resp->error_code));
    } else if (resp->body_case != want) {
        conn_auth_fail(c, WEIR_ESASL_AUTHENTICATION_FAILED,
                       "the broker answered the login with another call's "
                       "response");
    } else if (want == WEIR__RESPONSE__BODY_SASL_HANDSHAKE) {
        conn_auth_handshake(c, resp->sasl_handshake);
    } else {
        conn_auth_exchange(c, resp->sasl_authenticate);
    }
    rpc_response_free(resp);
}
