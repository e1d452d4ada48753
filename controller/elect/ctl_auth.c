/* SPDX-License-Identifier: Apache-2.0 */
/* SCRAM users and ACL rules: each request is one record, checked here by
 * the same meta_record_check the log's readers run, so a refusal names
 * the bad field and nothing the image would refuse is ever emitted. The
 * credential arrives already derived (salt, iterations, keys): the
 * password never reaches the controller or its log. Adding a rule that
 * is present answers 0 with no record, so a retried request is harmless;
 * removing an absent one is NOT_FOUND, as deleting an unknown user is. */
#include <stdio.h>
#include <string.h>

#include "controller/elect/ctl_core_int.h"

/* An enum value as the record's u8; values past it become 0, which every
 * check refuses as unknown (a plain cast could wrap onto a valid one). */
static uint8_t ctl_auth_u8(int v)
{
    return v >= 0 && v <= UINT8_MAX ? (uint8_t)v : 0;
}

static size_t ctl_auth_key_len(enum scram_mech mech)
{
    return mech == SCRAM_SHA_512 ? 64 : 32;
}

/* Check rec as the log's readers will; false after refusing. */
static bool ctl_auth_check(const struct meta_record *rec,
                           struct ctl_actions *out)
{
    struct err_detail why;

    if (meta_record_check(rec, &why) != 0) {
        ctl_core_refuse(out, WEIR_EINVALID_ARGUMENT, "%s", why.msg);
        return false;
    }
    return true;
}

int ctl_auth_upsert_user(struct ctl_core *core,
                         const struct ctl_event *ev,
                         struct ctl_actions *out)
{
    const struct scram_cred *cred = ev->u.user.cred;
    struct meta_user_scram *u;
    struct meta_record rec;

    if (ev->u.user.name == NULL || cred == NULL) {
        ctl_core_refuse(out, WEIR_EINVALID_ARGUMENT, "no user %s",
                        ev->u.user.name == NULL ? "name" : "credential");
        return 0;
    }
    if (cred->salt_len > SCRAM_MAX_SALT) {
        ctl_core_refuse(out, WEIR_EINVALID_ARGUMENT,
                        "salt is %zu bytes, expected 1..%d", cred->salt_len,
                        SCRAM_MAX_SALT);
        return 0;
    }
    memset(&rec, 0, sizeof(rec));
    rec.type = META_RECORD_USER_SCRAM;
    u = &rec.u.user;
    u->name.ptr = ev->u.user.name;
    u->name.len = strlen(ev->u.user.name);
    u->mechanism = ctl_auth_u8((int)cred->mech);
    u->iterations = cred->iterations;
    u->salt.ptr = cred->salt;
    u->salt.len = cred->salt_len;
    /* the arrays hold SCRAM_MAX_KEY; the mechanism says how much is key */
    u->stored_key.ptr = cred->stored_key;
    u->stored_key.len = ctl_auth_key_len(cred->mech);
    u->server_key.ptr = cred->server_key;
    u->server_key.len = ctl_auth_key_len(cred->mech);
    if (!ctl_auth_check(&rec, out)) {
        return 0;
    }
    if (meta_image_user_count(core->img) >= META_MAX_USERS &&
        meta_image_user(core->img, ev->u.user.name, cred->mech) == NULL) {
        ctl_core_refuse(out, WEIR_EPOLICY_VIOLATION,
                        "at most %d user credentials", META_MAX_USERS);
        return 0;
    }
    return ctl_core_emit(core, out, &rec);
}

int ctl_auth_delete_user(struct ctl_core *core,
                         const struct ctl_event *ev,
                         struct ctl_actions *out)
{
    const char *name = ev->u.user_del.name;
    struct meta_record rec;

    if (name == NULL) {
        ctl_core_refuse(out, WEIR_EINVALID_ARGUMENT, "no user name");
        return 0;
    }
    memset(&rec, 0, sizeof(rec));
    rec.type = META_RECORD_REMOVE_USER_SCRAM;
    rec.u.user_ref.name.ptr = name;
    rec.u.user_ref.name.len = strlen(name);
    rec.u.user_ref.mechanism = ctl_auth_u8((int)ev->u.user_del.mech);
    if (!ctl_auth_check(&rec, out)) {
        return 0;
    }
    if (meta_image_user(core->img, name, ev->u.user_del.mech) == NULL) {
        ctl_core_refuse(out, WEIR_ENOT_FOUND, "user %s has no %s credential",
                        name, scram_mech_name(ev->u.user_del.mech));
        return 0;
    }
    return ctl_core_emit(core, out, &rec);
}

/* The record for a rule; false after refusing. */
static bool ctl_auth_acl_record(const struct acl_rule *r,
                                struct meta_acl *a,
                                struct ctl_actions *out)
{
    if (r == NULL) {
        ctl_core_refuse(out, WEIR_EINVALID_ARGUMENT, "no ACL rule");
        return false;
    }
    if (memchr(r->principal, '\0', sizeof(r->principal)) == NULL ||
        memchr(r->name, '\0', sizeof(r->name)) == NULL) {
        ctl_core_refuse(out, WEIR_EINVALID_ARGUMENT,
                        "ACL principal or resource name is not terminated");
        return false;
    }
    memset(a, 0, sizeof(*a));
    a->principal.ptr = r->principal;
    a->principal.len = strlen(r->principal);
    a->resource = ctl_auth_u8((int)r->resource);
    a->pattern = ctl_auth_u8((int)r->pattern);
    a->name.ptr = r->name;
    a->name.len = strlen(r->name);
    a->op = ctl_auth_u8((int)r->op);
    a->perm = ctl_auth_u8((int)r->perm);
    return true;
}

int ctl_auth_acl(struct ctl_core *core,
                 const struct ctl_event *ev,
                 struct ctl_actions *out)
{
    const struct acl_rule *r = ev->u.acl.rule;
    bool add = ev->type == CTL_EV_ADD_ACL;
    struct meta_record rec;
    bool present;

    memset(&rec, 0, sizeof(rec));
    rec.type = add ? META_RECORD_ACL : META_RECORD_REMOVE_ACL;
    if (!ctl_auth_acl_record(r, &rec.u.acl, out) ||
        !ctl_auth_check(&rec, out)) {
        return 0;
    }
    present = acl_has(meta_image_acls(core->img), r);
    if (add && present) {
        return 0; /* idempotent: the rule is what was asked for */
    }
    if (!add && !present) {
        ctl_core_refuse(out, WEIR_ENOT_FOUND, "no such ACL: %s %s %s %s:%s%s",
                        r->perm == ACL_DENY ? "deny" : "allow", r->principal,
                        acl_op_name(r->op), acl_resource_name(r->resource),
                        r->name, r->pattern == ACL_PREFIXED ? "*" : "");
        return 0;
    }
    if (add && meta_image_acls(core->img)->n >= ACL_MAX_RULES) {
        ctl_core_refuse(out, WEIR_EPOLICY_VIOLATION, "at most %d ACL rules",
                        ACL_MAX_RULES);
        return 0;
    }
    return ctl_core_emit(core, out, &rec);
}
