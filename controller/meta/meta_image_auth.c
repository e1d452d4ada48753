/* SPDX-License-Identifier: Apache-2.0 */
/* Users (SCRAM credentials) and ACL rules in the image: apply, lookups,
 * equality and checks. Like every apply, each one checks and allocates
 * before it changes anything, so a refused record leaves the image as it
 * was. The rules live in a common/acl.h set so brokers can decide with
 * acl_allowed on the image directly; acl_add keeps a duplicate silently,
 * so apply asks acl_has first and refuses one: a log that adds the same
 * rule twice was not written by a controller. */
#include <string.h>

#include "common/mem.h"
#include "controller/meta/meta_image_int.h"

void meta_image_free_auth(struct meta_image *img)
{
    uint32_t i;

    for (i = 0; i < img->n_users; i++) {
        mem_free(img->users[i].name);
    }
    mem_free(img->users);
    acl_set_fini(&img->acls);
}

/* Order of (name, mech) keys: names bytewise, shorter first on a tie of
 * the common prefix, then mechanism. */
static int meta_image_user_cmp(const struct meta_user *u,
                               struct meta_str name,
                               uint8_t mech)
{
    size_t len = strlen(u->name);
    int cmp = memcmp(u->name, name.ptr, len < name.len ? len : name.len);

    if (cmp == 0 && len != name.len) {
        cmp = len < name.len ? -1 : 1;
    }
    if (cmp == 0 && (uint8_t)u->cred.mech != mech) {
        cmp = (uint8_t)u->cred.mech < mech ? -1 : 1;
    }
    return cmp;
}

static uint32_t meta_image_user_pos(const struct meta_image *img,
                                    struct meta_str name,
                                    uint8_t mech,
                                    bool *found)
{
    uint32_t lo = 0;
    uint32_t hi = img->n_users;

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (meta_image_user_cmp(&img->users[mid], name, mech) < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    *found = lo < img->n_users &&
             meta_image_user_cmp(&img->users[lo], name, mech) == 0;
    return lo;
}

static void meta_image_user_cred(const struct meta_user_scram *rec,
                                 struct scram_cred *cred)
{
    memset(cred, 0, sizeof(*cred));
    cred->mech = (enum scram_mech)rec->mechanism;
    cred->iterations = rec->iterations;
    /* lengths were checked by meta_record_check */
    memcpy(cred->salt, rec->salt.ptr, rec->salt.len);
    cred->salt_len = rec->salt.len;
    memcpy(cred->stored_key, rec->stored_key.ptr, rec->stored_key.len);
    memcpy(cred->server_key, rec->server_key.ptr, rec->server_key.len);
}

int meta_image_apply_user(struct meta_image *img,
                          const struct meta_user_scram *rec,
                          struct err_detail *ed)
{
    struct meta_user *u;
    bool found;
    uint32_t pos = meta_image_user_pos(img, rec->name, rec->mechanism, &found);
    char *name;

    if (found) {
        meta_image_user_cred(rec, &img->users[pos].cred);
        return 0;
    }
    if (img->n_users >= META_MAX_USERS) {
        return err_set(ed, WEIR_ECORRUPT, "more than %d user credentials",
                       META_MAX_USERS);
    }
    if (mem_grow((void **)&img->users, &img->cap_users, img->n_users + 1,
                 sizeof(img->users[0])) != 0) {
        return err_set(ed, WEIR_ENOMEM, "adding a user");
    }
    name = mem_strndup(rec->name.ptr, rec->name.len);
    if (name == NULL) {
        return err_set(ed, WEIR_ENOMEM, "adding a user");
    }
    memmove(&img->users[pos + 1], &img->users[pos],
            (size_t)(img->n_users - pos) * sizeof(img->users[0]));
    img->n_users++;
    u = &img->users[pos];
    u->name = name;
    meta_image_user_cred(rec, &u->cred);
    return 0;
}

int meta_image_apply_user_remove(struct meta_image *img,
                                 const struct meta_user_ref *rec,
                                 struct err_detail *ed)
{
    bool found;
    uint32_t pos = meta_image_user_pos(img, rec->name, rec->mechanism, &found);

    if (!found) {
        return err_set(ed, WEIR_ECORRUPT, "user %.*s has no %s credential",
                       (int)rec->name.len, rec->name.ptr,
                       scram_mech_name((enum scram_mech)rec->mechanism));
    }
    mem_free(img->users[pos].name);
    memmove(&img->users[pos], &img->users[pos + 1],
            (size_t)(img->n_users - pos - 1) * sizeof(img->users[0]));
    img->n_users--;
    return 0;
}

/* Lengths were checked by meta_record_check (at most ACL_MAX_NAME). */
static void meta_image_acl_rule(const struct meta_acl *rec, struct acl_rule *r)
{
    memset(r, 0, sizeof(*r));
    memcpy(r->principal, rec->principal.ptr, rec->principal.len);
    r->resource = (enum acl_resource)rec->resource;
    r->pattern = (enum acl_pattern)rec->pattern;
    if (rec->name.len > 0) {
        memcpy(r->name, rec->name.ptr, rec->name.len);
    }
    r->op = (enum acl_op)rec->op;
    r->perm = (enum acl_perm)rec->perm;
}

int meta_image_apply_acl(struct meta_image *img,
                         const struct meta_acl *rec,
                         bool add,
                         struct err_detail *ed)
{
    struct acl_rule r;
    bool present;
    int rv;

    meta_image_acl_rule(rec, &r);
    present = acl_has(&img->acls, &r);
    if (add == present) {
        return err_set(ed, WEIR_ECORRUPT, "ACL %s %s:%s for %s is %s",
                       acl_op_name(r.op), acl_resource_name(r.resource), r.name,
                       r.principal,
                       present ? "already present" : "not present");
    }
    if (!add) {
        (void)acl_remove(&img->acls, &r);
        return 0;
    }
    if (img->acls.n >= ACL_MAX_RULES) {
        return err_set(ed, WEIR_ECORRUPT, "more than %d ACL rules",
                       ACL_MAX_RULES);
    }
    rv = acl_add(&img->acls, &r, ed);
    if (rv != 0 && rv != WEIR_ENOMEM) {
        /* acl_add's rules are meta_record_check's: should not happen */
        return err_set(ed, WEIR_ECORRUPT, "ACL rule refused by the set");
    }
    return rv;
}

uint32_t meta_image_user_count(const struct meta_image *img)
{
    return img->n_users;
}

const struct meta_user *meta_image_user_at(const struct meta_image *img,
                                           uint32_t i)
{
    return i < img->n_users ? &img->users[i] : NULL;
}

const struct meta_user *meta_image_user(const struct meta_image *img,
                                        const char *name,
                                        enum scram_mech mech)
{
    struct meta_str key = {name, strlen(name)};
    bool found;
    uint32_t pos = meta_image_user_pos(img, key, (uint8_t)mech, &found);

    return found ? &img->users[pos] : NULL;
}

const struct acl_set *meta_image_acls(const struct meta_image *img)
{
    return &img->acls;
}

void meta_image_user_record(const struct meta_user *u,
                            struct meta_user_scram *out)
{
    size_t key_len = u->cred.mech == SCRAM_SHA_512 ? 64 : 32;

    memset(out, 0, sizeof(*out));
    out->name.ptr = u->name;
    out->name.len = strlen(u->name);
    out->mechanism = (uint8_t)u->cred.mech;
    out->iterations = u->cred.iterations;
    out->salt.ptr = u->cred.salt;
    out->salt.len = u->cred.salt_len;
    out->stored_key.ptr = u->cred.stored_key;
    out->stored_key.len = key_len;
    out->server_key.ptr = u->cred.server_key;
    out->server_key.len = key_len;
}

void meta_image_acl_record(const struct acl_rule *r, struct meta_acl *out)
{
    memset(out, 0, sizeof(*out));
    out->principal.ptr = r->principal;
    out->principal.len = strnlen(r->principal, sizeof(r->principal));
    out->resource = (uint8_t)r->resource;
    out->pattern = (uint8_t)r->pattern;
    out->name.ptr = r->name;
    out->name.len = strnlen(r->name, sizeof(r->name));
    out->op = (uint8_t)r->op;
    out->perm = (uint8_t)r->perm;
}

static bool meta_image_rule_equal(const struct acl_rule *a,
                                  const struct acl_rule *b)
{
    return a->resource == b->resource && a->pattern == b->pattern &&
           a->op == b->op && a->perm == b->perm &&
           strcmp(a->principal, b->principal) == 0 &&
           strcmp(a->name, b->name) == 0;
}

bool meta_image_auth_equal(const struct meta_image *a,
                           const struct meta_image *b)
{
    uint32_t i;
    size_t j;

    if (a->n_users != b->n_users || a->acls.n != b->acls.n) {
        return false;
    }
    for (i = 0; i < a->n_users; i++) {
        const struct scram_cred *x = &a->users[i].cred;
        const struct scram_cred *y = &b->users[i].cred;
        if (strcmp(a->users[i].name, b->users[i].name) != 0 ||
            x->mech != y->mech || x->iterations != y->iterations ||
            x->salt_len != y->salt_len ||
            memcmp(x->salt, y->salt, x->salt_len) != 0 ||
            memcmp(x->stored_key, y->stored_key, sizeof(x->stored_key)) != 0 ||
            memcmp(x->server_key, y->server_key, sizeof(x->server_key)) != 0) {
            return false;
        }
    }
    for (j = 0; j < a->acls.n; j++) {
        if (!meta_image_rule_equal(&a->acls.rules[j], &b->acls.rules[j])) {
            return false;
        }
    }
    return true;
}

static int meta_image_check_users(const struct meta_image *img,
                                  struct err_detail *ed)
{
    struct meta_record rec;
    uint32_t i;

    for (i = 0; i < img->n_users; i++) {
        const struct meta_user *u = &img->users[i];
        memset(&rec, 0, sizeof(rec));
        rec.type = META_RECORD_USER_SCRAM;
        meta_image_user_record(u, &rec.u.user);
        if (u->cred.salt_len > SCRAM_MAX_SALT) {
            return err_set(ed, WEIR_ECORRUPT, "user %u: salt too long", i);
        }
        if (meta_record_check(&rec, ed) != 0) {
            err_wrap(ed, "user %u", i);
            return WEIR_ECORRUPT;
        }
        if (i > 0 && meta_image_user_cmp(&img->users[i - 1], rec.u.user.name,
                                         rec.u.user.mechanism) >= 0) {
            return err_set(ed, WEIR_ECORRUPT, "users out of order at %s",
                           u->name);
        }
    }
    return 0;
}

/* Quadratic in the rules: meant for tests and the fuzzer, not a hot
 * path. */
int meta_image_check_auth(const struct meta_image *img, struct err_detail *ed)
{
    struct meta_record rec;
    size_t i;
    size_t j;
    int rv = meta_image_check_users(img, ed);

    if (rv != 0) {
        return rv;
    }
    if (img->acls.n > ACL_MAX_RULES) {
        return err_set(ed, WEIR_ECORRUPT, "%zu ACL rules", img->acls.n);
    }
    for (i = 0; i < img->acls.n; i++) {
        const struct acl_rule *r = &img->acls.rules[i];
        memset(&rec, 0, sizeof(rec));
        rec.type = META_RECORD_ACL;
        meta_image_acl_record(r, &rec.u.acl);
        if (memchr(r->principal, '\0', sizeof(r->principal)) == NULL ||
            memchr(r->name, '\0', sizeof(r->name)) == NULL) {
            return err_set(ed, WEIR_ECORRUPT, "ACL rule %zu: unterminated", i);
        }
        if (meta_record_check(&rec, ed) != 0) {
            err_wrap(ed, "ACL rule %zu", i);
            return WEIR_ECORRUPT;
        }
        for (j = 0; j < i; j++) {
            if (meta_image_rule_equal(&img->acls.rules[j], r)) {
                return err_set(ed, WEIR_ECORRUPT, "ACL rule %zu twice", i);
            }
        }
    }
    return 0;
}
