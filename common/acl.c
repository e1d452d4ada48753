/* SPDX-License-Identifier: Apache-2.0 */
#include "common/acl.h"

#include <string.h>

#include "common/mem.h"

static const char *const acl_op_names[] = {
    NULL,       "read",  "write",          "create", "delete",
    "describe", "alter", "cluster-action", "all",
};

static const char *const acl_res_names[] = {NULL, "topic", "group", "cluster"};

const char *acl_op_name(enum acl_op op)
{
    return op >= ACL_READ && op <= ACL_ALL ? acl_op_names[op] : "?";
}

enum acl_op acl_op_parse(const char *s)
{
    int i;

    for (i = ACL_READ; i <= ACL_ALL; i++) {
        if (strcmp(s, acl_op_names[i]) == 0) {
            return (enum acl_op)i;
        }
    }
    return (enum acl_op)0;
}

const char *acl_resource_name(enum acl_resource r)
{
    return r >= ACL_TOPIC && r <= ACL_CLUSTER ? acl_res_names[r] : "?";
}

enum acl_resource acl_resource_parse(const char *s)
{
    int i;

    for (i = ACL_TOPIC; i <= ACL_CLUSTER; i++) {
        if (strcmp(s, acl_res_names[i]) == 0) {
            return (enum acl_resource)i;
        }
    }
    return (enum acl_resource)0;
}

void acl_set_init(struct acl_set *s)
{
    memset(s, 0, sizeof(*s));
}

void acl_set_fini(struct acl_set *s)
{
    mem_free(s->rules);
    memset(s, 0, sizeof(*s));
}

static bool acl_rule_equal(const struct acl_rule *a, const struct acl_rule *b)
{
    return a->resource == b->resource && a->pattern == b->pattern &&
           a->op == b->op && a->perm == b->perm &&
           strcmp(a->principal, b->principal) == 0 &&
           strcmp(a->name, b->name) == 0;
}

int acl_add(struct acl_set *s, const struct acl_rule *r, struct err_detail *ed)
{
    size_t i;

    if (r->principal[0] == '\0' ||
        memchr(r->principal, '\0', sizeof(r->principal)) == NULL ||
        memchr(r->name, '\0', sizeof(r->name)) == NULL ||
        r->resource < ACL_TOPIC || r->resource > ACL_CLUSTER ||
        (r->pattern != ACL_LITERAL && r->pattern != ACL_PREFIXED) ||
        r->op < ACL_READ || r->op > ACL_ALL ||
        (r->perm != ACL_ALLOW && r->perm != ACL_DENY) ||
        (r->resource == ACL_CLUSTER && r->pattern != ACL_LITERAL) ||
        (r->resource != ACL_CLUSTER && r->name[0] == '\0')) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "ACL: a rule needs a principal, a resource type, a "
                       "name (a cluster rule: literal, no name), an "
                       "operation and allow or deny");
    }
    for (i = 0; i < s->n; i++) {
        if (acl_rule_equal(&s->rules[i], r)) {
            return 0;
        }
    }
    if (s->n >= ACL_MAX_RULES) {
        return err_set(ed, WEIR_EPOLICY_VIOLATION, "ACL: at most %u rules",
                       ACL_MAX_RULES);
    }
    if (s->n == s->cap) {
        size_t cap = s->cap == 0 ? 16 : s->cap * 2;
        struct acl_rule *nr = mem_realloc(s->rules, cap * sizeof(*nr));
        if (nr == NULL) {
            return err_set(ed, WEIR_ENOMEM, "out of memory");
        }
        s->rules = nr;
        s->cap = cap;
    }
    s->rules[s->n++] = *r;
    return 0;
}

bool acl_has(const struct acl_set *s, const struct acl_rule *r)
{
    size_t i;

    for (i = 0; i < s->n; i++) {
        if (acl_rule_equal(&s->rules[i], r)) {
            return true;
        }
    }
    return false;
}

size_t acl_remove(struct acl_set *s, const struct acl_rule *r)
{
    size_t i = 0;
    size_t removed = 0;

    while (i < s->n) {
        if (acl_rule_equal(&s->rules[i], r)) {
            s->rules[i] = s->rules[--s->n];
            removed++;
        } else {
            i++;
        }
    }
    return removed;
}

static bool acl_name_matches(const struct acl_rule *r, const char *name)
{
    if (r->resource == ACL_CLUSTER) {
        return true;
    }
    if (r->pattern == ACL_PREFIXED) {
        return strncmp(name, r->name, strlen(r->name)) == 0;
    }
    return strcmp(r->name, "*") == 0 || strcmp(r->name, name) == 0;
}

/* Does the rule's operation cover op? An allow of read, write, delete or
 * alter covers describe too. */
static bool acl_op_covers(const struct acl_rule *r, enum acl_op op)
{
    if (r->op == op || r->op == ACL_ALL) {
        return true;
    }
    return r->perm == ACL_ALLOW && op == ACL_DESCRIBE &&
           (r->op == ACL_READ || r->op == ACL_WRITE || r->op == ACL_DELETE ||
            r->op == ACL_ALTER);
}

bool acl_allowed(const struct acl_set *s,
                 const char *const *super_users,
                 size_t n_super,
                 const char *principal,
                 enum acl_resource resource,
                 const char *name,
                 enum acl_op op)
{
    bool allow = false;
    size_t i;

    for (i = 0; i < n_super; i++) {
        if (strcmp(super_users[i], principal) == 0) {
            return true;
        }
    }
    for (i = 0; i < s->n; i++) {
        const struct acl_rule *r = &s->rules[i];
        if (r->resource != resource ||
            (strcmp(r->principal, "*") != 0 &&
             strcmp(r->principal, principal) != 0) ||
            !acl_name_matches(r, name) || !acl_op_covers(r, op)) {
            continue;
        }
        if (r->perm == ACL_DENY) {
            return false; /* deny wins */
        }
        allow = true;
    }
    return allow;
}

const char *acl_pattern_name(enum acl_pattern p)
{
    return p == ACL_LITERAL ? "literal" : p == ACL_PREFIXED ? "prefixed" : "?";
}

enum acl_pattern acl_pattern_parse(const char *s)
{
    if (strcmp(s, "literal") == 0) {
        return ACL_LITERAL;
    }
    return strcmp(s, "prefixed") == 0 ? ACL_PREFIXED : (enum acl_pattern)0;
}

const char *acl_perm_name(enum acl_perm p)
{
    return p == ACL_ALLOW ? "allow" : p == ACL_DENY ? "deny" : "?";
}

enum acl_perm acl_perm_parse(const char *s)
{
    if (strcmp(s, "allow") == 0) {
        return ACL_ALLOW;
    }
    return strcmp(s, "deny") == 0 ? ACL_DENY : (enum acl_perm)0;
}
