/* SPDX-License-Identifier: Apache-2.0 */
/* SASL, authorization and user/ACL administration on the controller. */
#include "controller/ctl_sec.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/authz.h"
#include "common/mem.h"
#include "common/net/sasl_srv.h"
#include "common/rpc.h"
#include "common/trace.h"

#define CTL_SEC_BOOTSTRAP_ITER 4096

static bool ctl_sec_lookup(void *arg,
                           enum scram_mech mech,
                           const char *user,
                           struct scram_cred *out)
{
    struct ctl_server *s = arg;
    const struct meta_user *u;

    if (ctl_server_image(s) == NULL) {
        return false;
    }
    u = meta_image_user(ctl_server_image(s), user, mech);
    if (u == NULL) {
        return false;
    }
    *out = u->cred;
    return true;
}

/* One user of the bootstrap file, for every mechanism it lacks. */
static int ctl_sec_bootstrap_user(struct ctl_server *s,
                                  const char *name,
                                  const char *password,
                                  struct err_detail *ed)
{
    enum scram_mech m;
    unsigned mechs = s->sasl.mechs != 0
                         ? s->sasl.mechs
                         : (1u << SCRAM_SHA_256) | (1u << SCRAM_SHA_512);
    int rv;

    for (m = SCRAM_SHA_256; m <= SCRAM_SHA_512; m++) {
        struct scram_cred cred;
        struct ctl_event ev;
        if ((mechs & (1u << m)) == 0 ||
            meta_image_user(ctl_core_image(s->core), name, m) != NULL) {
            continue;
        }
        rv = scram_cred_make(m, password, NULL, 0, CTL_SEC_BOOTSTRAP_ITER,
                             &cred, ed);
        if (rv != 0) {
            return rv;
        }
        memset(&ev, 0, sizeof(ev));
        ev.type = CTL_EV_UPSERT_USER;
        ev.u.user.name = name;
        ev.u.user.cred = &cred;
        rv = ctl_server_step(s, &ev);
        OPENSSL_cleanse(&cred, sizeof(cred));
        if (rv == 0) {
            rv = s->act.result;
        }
        if (rv != 0) {
            return err_set(ed, rv, "bootstrap user %s: %s", name,
                           s->act.detail.msg);
        }
        trace_info("controller", "event=bootstrap_user name=%s mech=%s", name,
                   scram_mech_name(m));
    }
    return 0;
}

int ctl_sec_bootstrap(struct ctl_server *s, struct err_detail *ed)
{
    const char *path = s->cfg.bootstrap_users_file;
    char line[1024];
    struct stat st;
    unsigned lineno = 0;
    FILE *f;
    int rv = 0;

    if (path == NULL || path[0] == '\0') {
        return 0;
    }
    f = fopen(path, "r");
    if (f == NULL) {
        return err_set(ed, WEIR_EIO, "bootstrap-users-file %s: open: %s", path,
                       strerror(errno));
    }
    if (fstat(fileno(f), &st) != 0 || (st.st_mode & 077) != 0) {
        (void)fclose(f);
        return err_set(ed, WEIR_ECONFIG,
                       "bootstrap-users-file %s: readable by group or others "
                       "(chmod 600 it)",
                       path);
    }
    while (rv == 0 && fgets(line, sizeof(line), f) != NULL) {
        size_t n = strcspn(line, "\r\n");
        char *sp;
        lineno++;
        line[n] = '\0';
        if (line[0] == '\0' || line[0] == '#') {
            continue;
        }
        sp = strchr(line, ' ');
        if (sp == NULL || sp == line || sp[1] == '\0') {
            rv = err_set(ed, WEIR_ECONFIG,
                         "bootstrap-users-file %s line %u: want NAME PASSWORD",
                         path, lineno);
            break;
        }
        *sp = '\0';
        rv = ctl_sec_bootstrap_user(s, line, sp + 1, ed);
    }
    OPENSSL_cleanse(line, sizeof(line));
    (void)fclose(f);
    return rv;
}

int ctl_sec_open(struct ctl_server *s, struct err_detail *ed)
{
    int rv;

    rv = sasl_srv_parse_mechs(s->cfg.sasl_mechanisms, &s->sasl.mechs, ed);
    if (rv != 0) {
        return rv;
    }
    s->sasl.lookup = ctl_sec_lookup;
    s->sasl.lookup_arg = s;
    s->sasl.who = "controller";
    return authz_init(&s->authz, s->cfg.authorizer, s->cfg.super_users, ed);
}

void ctl_sec_close(struct ctl_server *s)
{
    authz_fini(&s->authz);
}

void ctl_sec_listener(const struct ctl_server *s, struct srv_config *sc)
{
    sc->require_auth = s->sasl.mechs != 0;
    sc->pre_auth_max_frame_bytes = SASL_PRE_AUTH_MAX_FRAME;
    sc->auth_free = sasl_srv_state_free;
}

static void ctl_sec_respond(struct srv_req *req, Weir__Response *resp)
{
    ctl_rpc_respond(req, resp, NULL);
}

static bool ctl_sec_may(struct ctl_server *s,
                        struct srv_req *req,
                        enum acl_resource res,
                        const char *name,
                        enum acl_op op)
{
    return authz_allowed(&s->authz, meta_image_acls(ctl_server_image(s)),
                         srv_req_principal(req), res, name, op);
}

/* Topic calls: brokers forward them (cluster-action), else every topic
 * needs op. */
static bool ctl_sec_topics_ok(struct ctl_server *s,
                              struct srv_req *req,
                              const Weir__Request *r)
{
    size_t i;

    if (ctl_sec_may(s, req, ACL_CLUSTER, "", ACL_CLUSTER_ACTION)) {
        return true;
    }
    if (r->body_case == WEIR__REQUEST__BODY_CREATE_TOPICS) {
        if (ctl_sec_may(s, req, ACL_CLUSTER, "", ACL_CREATE)) {
            return true;
        }
        for (i = 0; i < r->create_topics->n_topics; i++) {
            if (!ctl_sec_may(s, req, ACL_TOPIC,
                             r->create_topics->topics[i]->name, ACL_CREATE)) {
                return false;
            }
        }
        return true;
    }
    for (i = 0; i < r->delete_topics->n_names; i++) {
        if (!ctl_sec_may(s, req, ACL_TOPIC, r->delete_topics->names[i],
                         ACL_DELETE)) {
            return false;
        }
    }
    return true;
}

bool ctl_sec_gate(struct ctl_server *s,
                  struct srv_req *req,
                  const Weir__Request *r)
{
    Weir__Response resp = WEIR__RESPONSE__INIT;
    int code = WEIR_ECLUSTER_AUTHORIZATION_FAILED;
    bool ok;

    if (sasl_srv_gate(&s->sasl, req, r)) {
        return true;
    }
    if (!s->authz.enabled) {
        return false;
    }
    switch (r->body_case) {
    case WEIR__REQUEST__BODY_REGISTER_BROKER:
    case WEIR__REQUEST__BODY_BROKER_HEARTBEAT:
    case WEIR__REQUEST__BODY_FETCH_METADATA:
    case WEIR__REQUEST__BODY_ALTER_ISR:
    case WEIR__REQUEST__BODY_ALLOCATE_PRODUCER_IDS:
        ok = ctl_sec_may(s, req, ACL_CLUSTER, "", ACL_CLUSTER_ACTION);
        break;
    case WEIR__REQUEST__BODY_METADATA:
    case WEIR__REQUEST__BODY_DESCRIBE_USERS:
    case WEIR__REQUEST__BODY_DESCRIBE_ACLS:
        ok = ctl_sec_may(s, req, ACL_CLUSTER, "", ACL_CLUSTER_ACTION) ||
             ctl_sec_may(s, req, ACL_CLUSTER, "", ACL_DESCRIBE);
        break;
    case WEIR__REQUEST__BODY_ALTER_USERS:
    case WEIR__REQUEST__BODY_CREATE_ACLS:
    case WEIR__REQUEST__BODY_DELETE_ACLS:
        ok = ctl_sec_may(s, req, ACL_CLUSTER, "", ACL_CLUSTER_ACTION) ||
             ctl_sec_may(s, req, ACL_CLUSTER, "", ACL_ALTER);
        break;
    case WEIR__REQUEST__BODY_CREATE_TOPICS:
    case WEIR__REQUEST__BODY_DELETE_TOPICS:
        ok = ctl_sec_topics_ok(s, req, r);
        code = WEIR_ETOPIC_AUTHORIZATION_FAILED;
        break;
    default:
        return false; /* the router refuses what it does not serve */
    }
    if (ok) {
        return false;
    }
    trace_warn("controller", "event=denied peer=%s principal=\"%s\" call=%s",
               req->peer, authz_principal(srv_req_principal(req)),
               rpc_api_name(r->body_case));
    resp.correlation_id = r->correlation_id;
    resp.error_code = code;
    resp.error_message = (char *)weir_err_str(code);
    ctl_sec_respond(req, &resp);
    return true;
}

/* ---- users ------------------------------------------------------------ */

/* One core step; its refusal or failure in *ed. */
static int
ctl_sec_step(struct ctl_server *s, struct ctl_event *ev, struct err_detail *ed)
{
    int rv = ctl_server_step(s, ev);

    if (rv == 0) {
        rv = s->act.result;
    }
    if (rv != 0) {
        *ed = s->act.detail;
        ed->code = rv;
    }
    return rv;
}

static int ctl_sec_upsert(struct ctl_server *s,
                          const Weir__ScramCredential *c,
                          struct err_detail *ed)
{
    struct scram_cred cred;
    struct ctl_event ev;
    size_t klen;

    memset(&cred, 0, sizeof(cred));
    cred.mech = scram_mech_parse(c->mechanism);
    if (cred.mech == 0) {
        return err_set(ed, WEIR_EUNSUPPORTED_SASL_MECHANISM,
                       "unknown mechanism %.64s", c->mechanism);
    }
    klen = cred.mech == SCRAM_SHA_256 ? 32 : 64;
    if (c->salt.len == 0 || c->salt.len > SCRAM_MAX_SALT ||
        c->stored_key.len != klen || c->server_key.len != klen) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "salt must be 1..%d bytes and both keys %zu bytes "
                       "for %s",
                       SCRAM_MAX_SALT, klen, c->mechanism);
    }
    memcpy(cred.salt, c->salt.data, c->salt.len);
    cred.salt_len = c->salt.len;
    cred.iterations = c->iterations;
    memcpy(cred.stored_key, c->stored_key.data, klen);
    memcpy(cred.server_key, c->server_key.data, klen);
    memset(&ev, 0, sizeof(ev));
    ev.type = CTL_EV_UPSERT_USER;
    ev.u.user.name = c->name;
    ev.u.user.cred = &cred;
    return ctl_sec_step(s, &ev, ed);
}

static int ctl_sec_delete_user(struct ctl_server *s,
                               const Weir__UserMechanism *d,
                               struct err_detail *ed)
{
    struct ctl_event ev;

    memset(&ev, 0, sizeof(ev));
    ev.type = CTL_EV_DELETE_USER;
    ev.u.user_del.name = d->name;
    ev.u.user_del.mech = scram_mech_parse(d->mechanism);
    if (ev.u.user_del.mech == 0) {
        return err_set(ed, WEIR_EUNSUPPORTED_SASL_MECHANISM,
                       "unknown mechanism %.64s", d->mechanism);
    }
    return ctl_sec_step(s, &ev, ed);
}

/* Arrays for n per-item results (items of item_size bytes, their
 * pointers, their error details); false after answering out of memory,
 * with everything freed. */
static bool ctl_sec_results(struct srv_req *req,
                            Weir__Response *resp,
                            size_t n,
                            size_t item_size,
                            void **items,
                            void **ptrs,
                            struct err_detail **eds)
{
    *items = mem_calloc(n + 1, item_size);
    *ptrs = mem_calloc(n + 1, sizeof(void *));
    *eds = mem_calloc(n + 1, sizeof(**eds));
    if (*items != NULL && *ptrs != NULL && *eds != NULL) {
        return true;
    }
    mem_free(*items);
    mem_free(*ptrs);
    mem_free(*eds);
    resp->error_code = WEIR_ENOMEM;
    resp->error_message = "out of memory";
    ctl_sec_respond(req, resp);
    return false;
}

static void ctl_sec_alter_users(struct ctl_server *s,
                                struct srv_req *req,
                                const Weir__Request *r)
{
    const Weir__AlterUsersRequest *a = r->alter_users;
    size_t n = a->n_upsertions + a->n_deletions;
    Weir__Response resp = WEIR__RESPONSE__INIT;
    Weir__AlterUsersResponse body = WEIR__ALTER_USERS_RESPONSE__INIT;
    Weir__UserResult *res;
    Weir__UserResult **ptrs;
    struct err_detail *eds;
    void *items;
    void *ptrv;
    size_t i;

    resp.correlation_id = r->correlation_id;
    if (!ctl_sec_results(req, &resp, n, sizeof(*res), &items, &ptrv, &eds)) {
        return;
    }
    res = items;
    ptrs = ptrv;
    for (i = 0; i < n; i++) {
        bool up = i < a->n_upsertions;
        int rv;
        weir__user_result__init(&res[i]);
        if (up) {
            rv = ctl_sec_upsert(s, a->upsertions[i], &eds[i]);
            res[i].name = a->upsertions[i]->name;
            res[i].mechanism = a->upsertions[i]->mechanism;
        } else {
            const Weir__UserMechanism *d = a->deletions[i - a->n_upsertions];
            rv = ctl_sec_delete_user(s, d, &eds[i]);
            res[i].name = d->name;
            res[i].mechanism = d->mechanism;
        }
        res[i].error_code = rv;
        res[i].error_message = rv != 0 ? eds[i].msg : "";
        ptrs[i] = &res[i];
    }
    body.results = ptrs;
    body.n_results = n;
    resp.body_case = WEIR__RESPONSE__BODY_ALTER_USERS;
    resp.alter_users = &body;
    ctl_sec_respond(req, &resp);
    mem_free(res);
    mem_free(ptrs);
    mem_free(eds);
}

static void ctl_sec_describe_users(struct ctl_server *s,
                                   struct srv_req *req,
                                   const Weir__Request *r)
{
    const struct meta_image *img = ctl_core_image(s->core);
    uint32_t n = meta_image_user_count(img);
    Weir__Response resp = WEIR__RESPONSE__INIT;
    Weir__DescribeUsersResponse body = WEIR__DESCRIBE_USERS_RESPONSE__INIT;
    Weir__UserInfo *info = mem_calloc((size_t)n + 1, sizeof(*info));
    Weir__UserInfo **ptrs = mem_calloc((size_t)n + 1, sizeof(*ptrs));
    uint32_t i;

    resp.correlation_id = r->correlation_id;
    if (info == NULL || ptrs == NULL) {
        resp.error_code = WEIR_ENOMEM;
        resp.error_message = "out of memory";
    } else {
        for (i = 0; i < n; i++) {
            const struct meta_user *u = meta_image_user_at(img, i);
            weir__user_info__init(&info[i]);
            info[i].name = u->name;
            info[i].mechanism = (char *)scram_mech_name(u->cred.mech);
            info[i].iterations = u->cred.iterations;
            ptrs[i] = &info[i];
        }
        body.users = ptrs;
        body.n_users = n;
        resp.body_case = WEIR__RESPONSE__BODY_DESCRIBE_USERS;
        resp.describe_users = &body;
    }
    ctl_sec_respond(req, &resp);
    mem_free(info);
    mem_free(ptrs);
}

/* ---- ACLs ------------------------------------------------------------- */

static int ctl_sec_rule(const Weir__AclBinding *b,
                        struct acl_rule *out,
                        struct err_detail *ed)
{
    memset(out, 0, sizeof(*out));
    if (b->principal[0] == '\0' || strlen(b->principal) > ACL_MAX_NAME ||
        strlen(b->resource_name) > ACL_MAX_NAME) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "principal must be 1..%d bytes and the name at most %d",
                       ACL_MAX_NAME, ACL_MAX_NAME);
    }
    (void)snprintf(out->principal, sizeof(out->principal), "%s", b->principal);
    (void)snprintf(out->name, sizeof(out->name), "%s", b->resource_name);
    out->resource = (enum acl_resource)b->resource_type;
    out->pattern = (enum acl_pattern)b->pattern_type;
    out->op = (enum acl_op)b->operation;
    out->perm = (enum acl_perm)b->permission;
    return 0;
}

static void ctl_sec_acls(struct ctl_server *s,
                         struct srv_req *req,
                         const Weir__Request *r,
                         bool add)
{
    Weir__AclBinding **list = add ? r->create_acls->acls : r->delete_acls->acls;
    size_t n = add ? r->create_acls->n_acls : r->delete_acls->n_acls;
    Weir__Response resp = WEIR__RESPONSE__INIT;
    Weir__CreateAclsResponse cbody = WEIR__CREATE_ACLS_RESPONSE__INIT;
    Weir__DeleteAclsResponse dbody = WEIR__DELETE_ACLS_RESPONSE__INIT;
    Weir__AclResult *res;
    Weir__AclResult **ptrs;
    struct err_detail *eds;
    void *items;
    void *ptrv;
    size_t i;

    resp.correlation_id = r->correlation_id;
    if (!ctl_sec_results(req, &resp, n, sizeof(*res), &items, &ptrv, &eds)) {
        return;
    }
    res = items;
    ptrs = ptrv;
    for (i = 0; i < n; i++) {
        struct acl_rule rule;
        struct ctl_event ev;
        int rv = ctl_sec_rule(list[i], &rule, &eds[i]);
        if (rv == 0) {
            memset(&ev, 0, sizeof(ev));
            ev.type = add ? CTL_EV_ADD_ACL : CTL_EV_REMOVE_ACL;
            ev.u.acl.rule = &rule;
            rv = ctl_sec_step(s, &ev, &eds[i]);
        }
        weir__acl_result__init(&res[i]);
        res[i].error_code = rv;
        res[i].error_message = rv != 0 ? eds[i].msg : "";
        ptrs[i] = &res[i];
    }
    if (add) {
        cbody.results = ptrs;
        cbody.n_results = n;
        resp.body_case = WEIR__RESPONSE__BODY_CREATE_ACLS;
        resp.create_acls = &cbody;
    } else {
        dbody.results = ptrs;
        dbody.n_results = n;
        resp.body_case = WEIR__RESPONSE__BODY_DELETE_ACLS;
        resp.delete_acls = &dbody;
    }
    ctl_sec_respond(req, &resp);
    mem_free(res);
    mem_free(ptrs);
    mem_free(eds);
}

static void ctl_sec_describe_acls(struct ctl_server *s,
                                  struct srv_req *req,
                                  const Weir__Request *r)
{
    const struct acl_set *set = meta_image_acls(ctl_core_image(s->core));
    size_t n = set != NULL ? set->n : 0;
    Weir__Response resp = WEIR__RESPONSE__INIT;
    Weir__DescribeAclsResponse body = WEIR__DESCRIBE_ACLS_RESPONSE__INIT;
    Weir__AclBinding *b = mem_calloc(n + 1, sizeof(*b));
    Weir__AclBinding **ptrs = mem_calloc(n + 1, sizeof(*ptrs));
    size_t i;

    resp.correlation_id = r->correlation_id;
    if (b == NULL || ptrs == NULL) {
        resp.error_code = WEIR_ENOMEM;
        resp.error_message = "out of memory";
    } else {
        for (i = 0; i < n; i++) {
            const struct acl_rule *ru = &set->rules[i];
            weir__acl_binding__init(&b[i]);
            b[i].principal = (char *)ru->principal;
            b[i].resource_type = (int32_t)ru->resource;
            b[i].pattern_type = (int32_t)ru->pattern;
            b[i].resource_name = (char *)ru->name;
            b[i].operation = (int32_t)ru->op;
            b[i].permission = (int32_t)ru->perm;
            ptrs[i] = &b[i];
        }
        body.acls = ptrs;
        body.n_acls = n;
        resp.body_case = WEIR__RESPONSE__BODY_DESCRIBE_ACLS;
        resp.describe_acls = &body;
    }
    ctl_sec_respond(req, &resp);
    mem_free(b);
    mem_free(ptrs);
}

void ctl_sec_rpc(struct ctl_server *s,
                 struct srv_req *req,
                 const Weir__Request *r)
{
    switch (r->body_case) {
    case WEIR__REQUEST__BODY_ALTER_USERS:
        ctl_sec_alter_users(s, req, r);
        break;
    case WEIR__REQUEST__BODY_DESCRIBE_USERS:
        ctl_sec_describe_users(s, req, r);
        break;
    case WEIR__REQUEST__BODY_CREATE_ACLS:
        ctl_sec_acls(s, req, r, true);
        break;
    case WEIR__REQUEST__BODY_DELETE_ACLS:
        ctl_sec_acls(s, req, r, false);
        break;
    default:
        ctl_sec_describe_acls(s, req, r);
        break;
    }
}
