/* SPDX-License-Identifier: Apache-2.0 */
/* Fake broker: SASL/SCRAM login, users and ACLs; see the header. */
#include "test_client_auth_fake.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/scram.h"

#define FBA_MAX_CONNS 64
#define FBA_MAX_USERS 64
#define FBA_MAX_ACLS  256

struct fba_user {
    char name[SCRAM_MAX_USER + 1];
    struct scram_cred cred;
};

struct fba_acl {
    char principal[256];
    char name[256];
    int32_t resource, pattern, op, perm;
};

struct fba {
    bool required;
    struct fba_user users[FBA_MAX_USERS];
    size_t n_users;
    struct fba_acl acls[FBA_MAX_ACLS];
    size_t n_acls;
    struct scram_server srv[FBA_MAX_CONNS];
    bool started[FBA_MAX_CONNS]; /* handshake seen */
    bool authed[FBA_MAX_CONNS];
    uint64_t logins;
    uint64_t failed;
};

struct fba *fba_new(void)
{
    return calloc(1, sizeof(struct fba));
}

void fba_free(struct fba *a)
{
    free(a);
}

void fba_require(struct fba *a, bool on)
{
    a->required = on;
}

uint64_t fba_logins(const struct fba *a)
{
    return a->logins;
}

uint64_t fba_failed_logins(const struct fba *a)
{
    return a->failed;
}

size_t fba_acl_count(const struct fba *a)
{
    return a->n_acls;
}

void fba_conn_closed(struct fba *a, int ci)
{
    a->started[ci] = false;
    a->authed[ci] = false;
}

static struct fba_user *
fba_user(struct fba *a, enum scram_mech m, const char *name)
{
    size_t i;

    for (i = 0; i < a->n_users; i++) {
        if (a->users[i].cred.mech == m && strcmp(a->users[i].name, name) == 0) {
            return &a->users[i];
        }
    }
    return NULL;
}

static struct fba_user *
fba_user_slot(struct fba *a, enum scram_mech m, const char *name)
{
    struct fba_user *u = fba_user(a, m, name);

    if (u == NULL && a->n_users < FBA_MAX_USERS) {
        u = &a->users[a->n_users++];
        memset(u, 0, sizeof(*u));
        (void)snprintf(u->name, sizeof(u->name), "%s", name);
    }
    return u;
}

int fba_add_user(struct fba *a,
                 const char *mech,
                 const char *user,
                 const char *password)
{
    enum scram_mech m = scram_mech_parse(mech);
    struct fba_user *u = fba_user_slot(a, m, user);
    struct err_detail ed;

    if (m == 0 || u == NULL) {
        return -1;
    }
    return scram_cred_make(m, password, (const uint8_t *)"fixed-salt", 10, 4096,
                           &u->cred, &ed) == 0
               ? 0
               : -1;
}

static bool fba_lookup(void *arg,
                       enum scram_mech mech,
                       const char *user,
                       struct scram_cred *out)
{
    struct fba_user *u = fba_user(arg, mech, user);

    if (u == NULL) {
        return false;
    }
    *out = u->cred;
    return true;
}

static void fba_reply(fba_send_fn *fn,
                      void *ctx,
                      int ci,
                      const Weir__Request *q,
                      Weir__Response *r)
{
    r->correlation_id = q->correlation_id;
    fn(ctx, ci, r);
}

static enum fba_verdict fba_handshake(
    struct fba *a, int ci, const Weir__Request *q, fba_send_fn *fn, void *ctx)
{
    Weir__Response r = WEIR__RESPONSE__INIT;
    Weir__SaslHandshakeResponse b = WEIR__SASL_HANDSHAKE_RESPONSE__INIT;
    char *mechs[2] = {"SCRAM-SHA-256", "SCRAM-SHA-512"};
    enum scram_mech m = scram_mech_parse(q->sasl_handshake->mechanism);

    b.n_mechanisms = 2;
    b.mechanisms = mechs;
    if (m == 0) {
        b.error_code = WEIR_EUNSUPPORTED_SASL_MECHANISM;
        b.error_message = "mechanism not enabled";
    } else {
        scram_server_init(&a->srv[ci], m);
        a->started[ci] = true;
    }
    r.body_case = WEIR__RESPONSE__BODY_SASL_HANDSHAKE;
    r.sasl_handshake = &b;
    fba_reply(fn, ctx, ci, q, &r);
    return m == 0 ? FBA_CLOSE : FBA_DONE;
}

static enum fba_verdict fba_authenticate(
    struct fba *a, int ci, const Weir__Request *q, fba_send_fn *fn, void *ctx)
{
    Weir__Response r = WEIR__RESPONSE__INIT;
    Weir__SaslAuthenticateResponse b = WEIR__SASL_AUTHENTICATE_RESPONSE__INIT;
    struct scram_server *s = &a->srv[ci];
    const char *msg = (const char *)q->sasl_authenticate->auth_bytes.data;
    size_t len = q->sasl_authenticate->auth_bytes.len;
    char out[SCRAM_MAX_MESSAGE];
    char principal[300];
    struct err_detail ed;
    int rv;

    r.body_case = WEIR__RESPONSE__BODY_SASL_AUTHENTICATE;
    r.sasl_authenticate = &b;
    if (!a->started[ci]) {
        b.error_code = WEIR_EILLEGAL_SASL_STATE;
        b.error_message = "SaslHandshake first";
        fba_reply(fn, ctx, ci, q, &r);
        return FBA_CLOSE;
    }
    rv = s->state == SCRAM_SERVER_START
             ? scram_server_first(s, msg != NULL ? msg : "", len, fba_lookup, a,
                                  out, sizeof(out), &ed)
             : scram_server_final(s, msg != NULL ? msg : "", len, out,
                                  sizeof(out), &ed);
    if (rv != 0) {
        a->failed++;
        b.error_code = WEIR_ESASL_AUTHENTICATION_FAILED;
        b.error_message = ed.msg;
        fba_reply(fn, ctx, ci, q, &r);
        return FBA_CLOSE;
    }
    b.auth_bytes.data = (uint8_t *)out;
    b.auth_bytes.len = strlen(out);
    if (s->state == SCRAM_SERVER_DONE) {
        a->authed[ci] = true;
        a->logins++;
        (void)snprintf(principal, sizeof(principal), "User:%s", s->user);
        b.principal = principal;
    }
    fba_reply(fn, ctx, ci, q, &r);
    return FBA_DONE;
}

static void fba_alter_users(
    struct fba *a, int ci, const Weir__Request *q, fba_send_fn *fn, void *ctx)
{
    const Weir__AlterUsersRequest *ar = q->alter_users;
    Weir__Response r = WEIR__RESPONSE__INIT;
    Weir__AlterUsersResponse b = WEIR__ALTER_USERS_RESPONSE__INIT;
    Weir__UserResult res[16];
    Weir__UserResult *pres[16];
    size_t n = 0;
    size_t i;

    for (i = 0; i < ar->n_upsertions && n < 16; i++, n++) {
        const Weir__ScramCredential *c = ar->upsertions[i];
        enum scram_mech m = scram_mech_parse(c->mechanism);
        struct fba_user *u = m != 0 ? fba_user_slot(a, m, c->name) : NULL;
        weir__user_result__init(&res[n]);
        res[n].name = c->name;
        res[n].mechanism = c->mechanism;
        if (u == NULL || c->salt.len > SCRAM_MAX_SALT ||
            c->stored_key.len > SCRAM_MAX_KEY ||
            c->server_key.len > SCRAM_MAX_KEY) {
            res[n].error_code = WEIR_EINVALID_REQUEST;
            res[n].error_message = "bad credential";
            continue;
        }
        u->cred.mech = m;
        u->cred.iterations = c->iterations;
        u->cred.salt_len = c->salt.len;
        memcpy(u->cred.salt, c->salt.data, c->salt.len);
        memcpy(u->cred.stored_key, c->stored_key.data, c->stored_key.len);
        memcpy(u->cred.server_key, c->server_key.data, c->server_key.len);
    }
    for (i = 0; i < ar->n_deletions && n < 16; i++, n++) {
        const Weir__UserMechanism *d = ar->deletions[i];
        struct fba_user *u =
            fba_user(a, scram_mech_parse(d->mechanism), d->name);
        weir__user_result__init(&res[n]);
        res[n].name = d->name;
        res[n].mechanism = d->mechanism;
        if (u == NULL) {
            res[n].error_code = WEIR_EINVALID_REQUEST;
            res[n].error_message = "no such user";
            continue;
        }
        *u = a->users[--a->n_users];
    }
    for (i = 0; i < n; i++) {
        pres[i] = &res[i];
    }
    b.n_results = n;
    b.results = pres;
    r.body_case = WEIR__RESPONSE__BODY_ALTER_USERS;
    r.alter_users = &b;
    fba_reply(fn, ctx, ci, q, &r);
}

static void fba_describe_users(
    struct fba *a, int ci, const Weir__Request *q, fba_send_fn *fn, void *ctx)
{
    Weir__Response r = WEIR__RESPONSE__INIT;
    Weir__DescribeUsersResponse b = WEIR__DESCRIBE_USERS_RESPONSE__INIT;
    Weir__UserInfo info[FBA_MAX_USERS];
    Weir__UserInfo *pinfo[FBA_MAX_USERS];
    size_t i;

    for (i = 0; i < a->n_users; i++) {
        weir__user_info__init(&info[i]);
        info[i].name = a->users[i].name;
        info[i].mechanism = (char *)scram_mech_name(a->users[i].cred.mech);
        info[i].iterations = a->users[i].cred.iterations;
        pinfo[i] = &info[i];
    }
    b.n_users = a->n_users;
    b.users = pinfo;
    r.body_case = WEIR__RESPONSE__BODY_DESCRIBE_USERS;
    r.describe_users = &b;
    fba_reply(fn, ctx, ci, q, &r);
}

static bool fba_acl_eq(const struct fba_acl *x, const Weir__AclBinding *b)
{
    return strcmp(x->principal, b->principal) == 0 &&
           strcmp(x->name, b->resource_name) == 0 &&
           x->resource == b->resource_type && x->pattern == b->pattern_type &&
           x->op == b->operation && x->perm == b->permission;
}

/* CreateAcls / DeleteAcls: one result per binding. */
static void fba_alter_acls(
    struct fba *a, int ci, const Weir__Request *q, fba_send_fn *fn, void *ctx)
{
    bool create = q->body_case == WEIR__REQUEST__BODY_CREATE_ACLS;
    Weir__AclBinding **bs =
        create ? q->create_acls->acls : q->delete_acls->acls;
    size_t n = create ? q->create_acls->n_acls : q->delete_acls->n_acls;
    Weir__Response r = WEIR__RESPONSE__INIT;
    Weir__CreateAclsResponse cb = WEIR__CREATE_ACLS_RESPONSE__INIT;
    Weir__AclResult res[16];
    Weir__AclResult *pres[16];
    size_t i;
    size_t j;

    for (i = 0; i < n && i < 16; i++) {
        weir__acl_result__init(&res[i]);
        pres[i] = &res[i];
        for (j = 0; j < a->n_acls && !fba_acl_eq(&a->acls[j], bs[i]); j++) {
        }
        if (!create && j < a->n_acls) {
            a->acls[j] = a->acls[--a->n_acls];
        } else if (create && j == a->n_acls && a->n_acls < FBA_MAX_ACLS) {
            struct fba_acl *x = &a->acls[a->n_acls++];
            (void)snprintf(x->principal, sizeof(x->principal), "%s",
                           bs[i]->principal);
            (void)snprintf(x->name, sizeof(x->name), "%s",
                           bs[i]->resource_name);
            x->resource = bs[i]->resource_type;
            x->pattern = bs[i]->pattern_type;
            x->op = bs[i]->operation;
            x->perm = bs[i]->permission;
        } else if (!create) {
            res[i].error_code = WEIR_EINVALID_REQUEST;
            res[i].error_message = "no such ACL";
        }
    }
    /* CreateAclsResponse and DeleteAclsResponse have the same layout of
     * fields; fill each by its own type. */
    cb.n_results = i;
    cb.results = pres;
    if (create) {
        r.body_case = WEIR__RESPONSE__BODY_CREATE_ACLS;
        r.create_acls = &cb;
        fba_reply(fn, ctx, ci, q, &r);
    } else {
        Weir__DeleteAclsResponse db = WEIR__DELETE_ACLS_RESPONSE__INIT;
        db.n_results = i;
        db.results = pres;
        r.body_case = WEIR__RESPONSE__BODY_DELETE_ACLS;
        r.delete_acls = &db;
        fba_reply(fn, ctx, ci, q, &r);
    }
}

static void fba_describe_acls(
    struct fba *a, int ci, const Weir__Request *q, fba_send_fn *fn, void *ctx)
{
    Weir__Response r = WEIR__RESPONSE__INIT;
    Weir__DescribeAclsResponse b = WEIR__DESCRIBE_ACLS_RESPONSE__INIT;
    Weir__AclBinding *bind = calloc(a->n_acls + 1, sizeof(*bind));
    Weir__AclBinding **pb = calloc(a->n_acls + 1, sizeof(*pb));
    size_t i;

    for (i = 0; i < a->n_acls; i++) {
        weir__acl_binding__init(&bind[i]);
        bind[i].principal = a->acls[i].principal;
        bind[i].resource_name = a->acls[i].name;
        bind[i].resource_type = a->acls[i].resource;
        bind[i].pattern_type = a->acls[i].pattern;
        bind[i].operation = a->acls[i].op;
        bind[i].permission = a->acls[i].perm;
        pb[i] = &bind[i];
    }
    b.n_acls = a->n_acls;
    b.acls = pb;
    r.body_case = WEIR__RESPONSE__BODY_DESCRIBE_ACLS;
    r.describe_acls = &b;
    fba_reply(fn, ctx, ci, q, &r);
    free(bind);
    free(pb);
}

enum fba_verdict fba_handle(
    struct fba *a, int ci, const Weir__Request *q, fba_send_fn *fn, void *ctx)
{
    Weir__Response r = WEIR__RESPONSE__INIT;

    switch (q->body_case) {
    case WEIR__REQUEST__BODY_SASL_HANDSHAKE:
        return fba_handshake(a, ci, q, fn, ctx);
    case WEIR__REQUEST__BODY_SASL_AUTHENTICATE:
        return fba_authenticate(a, ci, q, fn, ctx);
    default:
        break;
    }
    if (a->required && !a->authed[ci]) {
        r.error_code = WEIR_EILLEGAL_SASL_STATE;
        r.error_message = "log in first";
        fba_reply(fn, ctx, ci, q, &r);
        return FBA_CLOSE;
    }
    switch (q->body_case) {
    case WEIR__REQUEST__BODY_ALTER_USERS:
        fba_alter_users(a, ci, q, fn, ctx);
        return FBA_DONE;
    case WEIR__REQUEST__BODY_DESCRIBE_USERS:
        fba_describe_users(a, ci, q, fn, ctx);
        return FBA_DONE;
    case WEIR__REQUEST__BODY_CREATE_ACLS:
    case WEIR__REQUEST__BODY_DELETE_ACLS:
        fba_alter_acls(a, ci, q, fn, ctx);
        return FBA_DONE;
    case WEIR__REQUEST__BODY_DESCRIBE_ACLS:
        fba_describe_acls(a, ci, q, fn, ctx);
        return FBA_DONE;
    default:
        return FBA_PASS;
    }
}
