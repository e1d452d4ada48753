/* SPDX-License-Identifier: Apache-2.0 */
/* Admin calls for users (SCRAM credentials) and ACLs. Synchronous, like
 * the topic calls: each goes to any broker that answers, which passes it
 * to the controller. A credential is computed here from the password;
 * only the salt, iteration count and derived keys go on the wire. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "common/mem.h"
#include "common/rpc.h"
#include "common/scram.h"

#define ADMIN_AUTH_DEFAULT_MECH "SCRAM-SHA-256"
#define ADMIN_AUTH_DEFAULT_ITER 4096

/* Send req to any broker; the response must be of kind want. */
static int admin_auth_call(struct weir_client *c,
                           Weir__Request *req,
                           Weir__Response__BodyCase want,
                           Weir__Response **out,
                           struct err_detail *ed)
{
    int rv;

    rv = metadata_call_any(c->md, req, c->cfg.request_timeout_ms, out, ed);
    if (rv != 0) {
        return rv;
    }
    if ((*out)->body_case != want) {
        rpc_response_free(*out);
        *out = NULL;
        return err_set(ed, WEIR_EMALFORMED,
                       "broker answered with another call's response");
    }
    return 0;
}

/* "cannot <verb>: <the broker's message>" for a non-zero code. */
static int admin_auth_check(const char *verb,
                            int32_t code,
                            const char *msg,
                            struct err_detail *ed)
{
    if (code == 0) {
        return 0;
    }
    return err_set(ed, code, "cannot %s: %s (%s)", verb,
                   msg != NULL && msg[0] != '\0' ? msg : weir_err_str(code),
                   weir_err_name(code));
}

static int admin_auth_mech(const char *mechanism,
                           enum scram_mech *m,
                           struct err_detail *ed)
{
    *m = scram_mech_parse(mechanism != NULL ? mechanism
                                            : ADMIN_AUTH_DEFAULT_MECH);
    if (*m == 0) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "unknown SASL mechanism '%s' (use SCRAM-SHA-256 or "
                       "SCRAM-SHA-512)",
                       mechanism);
    }
    return 0;
}

/* AlterUsers with one upsertion or one deletion; checks both levels. */
static int admin_alter_users(struct weir_client *c,
                             Weir__AlterUsersRequest *ar,
                             const char *verb,
                             struct err_detail *ed)
{
    Weir__Request req;
    Weir__Response *resp;
    Weir__AlterUsersResponse *r;
    int rv;

    weir__request__init(&req);
    req.body_case = WEIR__REQUEST__BODY_ALTER_USERS;
    req.alter_users = ar;
    rv = admin_auth_call(c, &req, WEIR__RESPONSE__BODY_ALTER_USERS, &resp, ed);
    if (rv != 0) {
        return rv;
    }
    r = resp->alter_users;
    rv = admin_auth_check(verb, r->error_code, r->error_message, ed);
    if (rv == 0 && r->n_results < 1) {
        rv = err_set(ed, WEIR_EMALFORMED,
                     "cannot %s: the broker's reply has "
                     "no result",
                     verb);
    }
    if (rv == 0) {
        rv = admin_auth_check(verb, r->results[0]->error_code,
                              r->results[0]->error_message, ed);
    }
    rpc_response_free(resp);
    return rv;
}

int weir_admin_user_upsert(struct weir_client *c,
                           const char *name,
                           const char *mechanism,
                           uint32_t iterations,
                           const char *password,
                           struct err_detail *ed)
{
    Weir__AlterUsersRequest ar;
    Weir__ScramCredential sc;
    Weir__ScramCredential *psc = &sc;
    struct scram_cred cred;
    enum scram_mech m;
    char verb[320];
    size_t key_len;
    int rv;

    if (name == NULL || name[0] == '\0' || strlen(name) > SCRAM_MAX_USER) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "a user name is 1 to %d bytes", SCRAM_MAX_USER);
    }
    rv = admin_auth_mech(mechanism, &m, ed);
    if (rv != 0) {
        return rv;
    }
    rv = scram_cred_make(m, password, NULL, 0,
                         iterations != 0 ? iterations : ADMIN_AUTH_DEFAULT_ITER,
                         &cred, ed);
    if (rv != 0) {
        return rv;
    }
    key_len = m == SCRAM_SHA_512 ? 64 : 32;
    weir__scram_credential__init(&sc);
    sc.name = (char *)name;
    sc.mechanism = (char *)scram_mech_name(m);
    sc.iterations = cred.iterations;
    sc.salt.data = cred.salt;
    sc.salt.len = cred.salt_len;
    sc.stored_key.data = cred.stored_key;
    sc.stored_key.len = key_len;
    sc.server_key.data = cred.server_key;
    sc.server_key.len = key_len;
    weir__alter_users_request__init(&ar);
    ar.n_upsertions = 1;
    ar.upsertions = &psc;
    (void)snprintf(verb, sizeof(verb), "set the %s credential of user '%.255s'",
                   scram_mech_name(m), name);
    rv = admin_alter_users(c, &ar, verb, ed);
    explicit_bzero(&cred, sizeof(cred));
    return rv;
}

int weir_admin_user_delete(struct weir_client *c,
                           const char *name,
                           const char *mechanism,
                           struct err_detail *ed)
{
    Weir__AlterUsersRequest ar;
    Weir__UserMechanism um;
    Weir__UserMechanism *pum = &um;
    enum scram_mech m;
    char verb[320];
    int rv;

    rv = admin_auth_mech(mechanism, &m, ed);
    if (rv != 0) {
        return rv;
    }
    weir__user_mechanism__init(&um);
    um.name = (char *)name;
    um.mechanism = (char *)scram_mech_name(m);
    weir__alter_users_request__init(&ar);
    ar.n_deletions = 1;
    ar.deletions = &pum;
    (void)snprintf(verb, sizeof(verb),
                   "delete the %s credential of user "
                   "'%.255s'",
                   scram_mech_name(m), name);
    return admin_alter_users(c, &ar, verb, ed);
}

static int admin_user_cmp(const void *a, const void *b)
{
    const struct weir_user_info *x = a;
    const struct weir_user_info *y = b;
    int d = strcmp(x->name, y->name);

    return d != 0 ? d : strcmp(x->mechanism, y->mechanism);
}

void weir_user_list_free(struct weir_user_list *l)
{
    size_t i;

    if (l == NULL) {
        return;
    }
    for (i = 0; i < l->n; i++) {
        mem_free(l->users[i].name);
        mem_free(l->users[i].mechanism);
    }
    mem_free(l->users);
    mem_free(l);
}

int weir_admin_user_list(struct weir_client *c,
                         struct weir_user_list **out,
                         struct err_detail *ed)
{
    Weir__Request req;
    Weir__DescribeUsersRequest dr;
    Weir__DescribeUsersResponse *r;
    Weir__Response *resp;
    struct weir_user_list *l;
    bool oom;
    size_t i;
    int rv;

    *out = NULL;
    weir__describe_users_request__init(&dr);
    weir__request__init(&req);
    req.body_case = WEIR__REQUEST__BODY_DESCRIBE_USERS;
    req.describe_users = &dr;
    rv = admin_auth_call(c, &req, WEIR__RESPONSE__BODY_DESCRIBE_USERS, &resp,
                         ed);
    if (rv != 0) {
        return rv;
    }
    r = resp->describe_users;
    rv = admin_auth_check("list users", r->error_code, r->error_message, ed);
    if (rv != 0) {
        rpc_response_free(resp);
        return rv;
    }
    l = mem_calloc(1, sizeof(*l));
    oom = l == NULL ||
          (l->users = mem_calloc(r->n_users + 1, sizeof(*l->users))) == NULL;
    for (i = 0; !oom && i < r->n_users; i++) {
        struct weir_user_info *u = &l->users[l->n++];
        u->name = mem_strdup(r->users[i]->name);
        u->mechanism = mem_strdup(r->users[i]->mechanism);
        u->iterations = r->users[i]->iterations;
        oom = u->name == NULL || u->mechanism == NULL;
    }
    rpc_response_free(resp);
    if (oom) {
        weir_user_list_free(l);
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    qsort(l->users, l->n, sizeof(*l->users), admin_user_cmp);
    *out = l;
    return 0;
}

/* ---- ACLs ---- */

static void admin_acl_binding(const struct weir_acl *a, Weir__AclBinding *b)
{
    weir__acl_binding__init(b);
    b->principal = a->principal;
    b->resource_type = a->resource;
    b->pattern_type = a->pattern;
    b->resource_name = a->name != NULL ? a->name : "";
    b->operation = a->operation;
    b->permission = a->permission;
}

/* CreateAcls (create) or DeleteAcls with one binding. */
static int admin_acl_alter(struct weir_client *c,
                           const struct weir_acl *acl,
                           bool create,
                           struct err_detail *ed)
{
    const char *verb = create ? "add the ACL" : "remove the ACL";
    Weir__Request req;
    Weir__CreateAclsRequest cr;
    Weir__DeleteAclsRequest dr;
    Weir__AclBinding b;
    Weir__AclBinding *pb = &b;
    Weir__Response *resp;
    Weir__AclResult *const *res;
    size_t n_res;
    int32_t code;
    const char *msg;
    int rv;

    if (acl->principal == NULL || acl->principal[0] == '\0') {
        return err_set(ed, WEIR_EINVALID_ARGUMENT, "an ACL needs a principal");
    }
    admin_acl_binding(acl, &b);
    weir__request__init(&req);
    if (create) {
        weir__create_acls_request__init(&cr);
        cr.n_acls = 1;
        cr.acls = &pb;
        req.body_case = WEIR__REQUEST__BODY_CREATE_ACLS;
        req.create_acls = &cr;
    } else {
        weir__delete_acls_request__init(&dr);
        dr.n_acls = 1;
        dr.acls = &pb;
        req.body_case = WEIR__REQUEST__BODY_DELETE_ACLS;
        req.delete_acls = &dr;
    }
    rv = admin_auth_call(c, &req,
                         create ? WEIR__RESPONSE__BODY_CREATE_ACLS
                                : WEIR__RESPONSE__BODY_DELETE_ACLS,
                         &resp, ed);
    if (rv != 0) {
        return rv;
    }
    code =
        create ? resp->create_acls->error_code : resp->delete_acls->error_code;
    msg = create ? resp->create_acls->error_message
                 : resp->delete_acls->error_message;
    res = create ? resp->create_acls->results : resp->delete_acls->results;
    n_res =
        create ? resp->create_acls->n_results : resp->delete_acls->n_results;
    rv = admin_auth_check(verb, code, msg, ed);
    if (rv == 0 && n_res < 1) {
        rv = err_set(ed, WEIR_EMALFORMED,
                     "cannot %s: the broker's reply has no result", verb);
    }
    if (rv == 0) {
        rv = admin_auth_check(verb, res[0]->error_code, res[0]->error_message,
                              ed);
    }
    rpc_response_free(resp);
    return rv;
}

int weir_admin_acl_create(struct weir_client *c,
                          const struct weir_acl *acl,
                          struct err_detail *ed)
{
    return admin_acl_alter(c, acl, true, ed);
}

int weir_admin_acl_delete(struct weir_client *c,
                          const struct weir_acl *acl,
                          struct err_detail *ed)
{
    return admin_acl_alter(c, acl, false, ed);
}

void weir_acl_list_free(struct weir_acl_list *l)
{
    size_t i;

    if (l == NULL) {
        return;
    }
    for (i = 0; i < l->n; i++) {
        mem_free(l->acls[i].principal);
        mem_free(l->acls[i].name);
    }
    mem_free(l->acls);
    mem_free(l);
}

int weir_admin_acl_list(struct weir_client *c,
                        struct weir_acl_list **out,
                        struct err_detail *ed)
{
    Weir__Request req;
    Weir__DescribeAclsRequest dr;
    Weir__DescribeAclsResponse *r;
    Weir__Response *resp;
    struct weir_acl_list *l;
    bool oom;
    size_t i;
    int rv;

    *out = NULL;
    weir__describe_acls_request__init(&dr);
    weir__request__init(&req);
    req.body_case = WEIR__REQUEST__BODY_DESCRIBE_ACLS;
    req.describe_acls = &dr;
    rv =
        admin_auth_call(c, &req, WEIR__RESPONSE__BODY_DESCRIBE_ACLS, &resp, ed);
    if (rv != 0) {
        return rv;
    }
    r = resp->describe_acls;
    rv = admin_auth_check("list ACLs", r->error_code, r->error_message, ed);
    if (rv != 0) {
        rpc_response_free(resp);
        return rv;
    }
    l = mem_calloc(1, sizeof(*l));
    oom = l == NULL ||
          (l->acls = mem_calloc(r->n_acls + 1, sizeof(*l->acls))) == NULL;
    for (i = 0; !oom && i < r->n_acls; i++) {
        const Weir__AclBinding *b = r->acls[i];
        struct weir_acl *a = &l->acls[l->n++];
        a->principal = mem_strdup(b->principal);
        a->name = mem_strdup(b->resource_name);
        a->resource = b->resource_type;
        a->pattern = b->pattern_type;
        a->operation = b->operation;
        a->permission = b->permission;
        oom = a->principal == NULL || a->name == NULL;
    }
    rpc_response_free(resp);
    if (oom) {
        weir_acl_list_free(l);
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    *out = l;
    return 0;
}
