/* SPDX-License-Identifier: Apache-2.0 */
/* Access control lists: rules of (principal, resource type, literal or
 * prefixed resource name, operation, allow or deny), and the decision
 * for one request. Deny wins over allow; with no matching allow the
 * answer is no; super users are always allowed. An allow of read, write,
 * delete or alter also allows describe (as in Kafka), a deny does not
 * spread. Pure data: the broker and the controller hold a set each (not
 * yet wired: the decision core only).
 * Locality: one thread per set. */
#ifndef COMMON_ACL_H
#define COMMON_ACL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

enum acl_resource { ACL_TOPIC = 1, ACL_GROUP, ACL_CLUSTER };
enum acl_pattern { ACL_LITERAL = 1, ACL_PREFIXED };
enum acl_op {
    ACL_READ = 1,
    ACL_WRITE,
    ACL_CREATE,
    ACL_DELETE,
    ACL_DESCRIBE,
    ACL_ALTER,
    ACL_CLUSTER_ACTION,
    ACL_ALL /* rules only: every operation */
};
enum acl_perm { ACL_ALLOW = 1, ACL_DENY };

#define ACL_MAX_NAME  255
#define ACL_MAX_RULES 100000

struct acl_rule {
    char principal[ACL_MAX_NAME + 1]; /* "CN=alice", "User:bob", or "*" */
    enum acl_resource resource;
    enum acl_pattern pattern;
    char name[ACL_MAX_NAME + 1]; /* literal "*" = every name; cluster: "" */
    enum acl_op op;
    enum acl_perm perm;
};

struct acl_set {
    struct acl_rule *rules;
    size_t n;
    size_t cap;
};

void acl_set_init(struct acl_set *s);
void acl_set_fini(struct acl_set *s);

/* Add a rule (a duplicate is kept once). Errors: WEIR_EINVALID_ARGUMENT
 * (empty principal, unknown enum values, a prefixed cluster rule),
 * WEIR_ENOMEM, and WEIR_EPOLICY_VIOLATION past ACL_MAX_RULES. */
WEIR_MUST_CHECK int
acl_add(struct acl_set *s, const struct acl_rule *r, struct err_detail *ed);
/* True if a rule equal to r (every field) is in the set. */
bool acl_has(const struct acl_set *s, const struct acl_rule *r);
/* Remove the rules equal to r; returns how many. */
size_t acl_remove(struct acl_set *s, const struct acl_rule *r);

/* May principal do op on the resource (type, name)? */
bool acl_allowed(const struct acl_set *s,
                 const char *const *super_users,
                 size_t n_super,
                 const char *principal,
                 enum acl_resource resource,
                 const char *name,
                 enum acl_op op);

/* Names for the CLI and messages ("read", "topic", "prefixed", "deny"),
 * and back (0 when unknown). */
const char *acl_op_name(enum acl_op op);
enum acl_op acl_op_parse(const char *s);
const char *acl_resource_name(enum acl_resource r);
enum acl_resource acl_resource_parse(const char *s);
const char *acl_pattern_name(enum acl_pattern p);
enum acl_pattern acl_pattern_parse(const char *s);
const char *acl_perm_name(enum acl_perm p);
enum acl_perm acl_perm_parse(const char *s);

#endif /* COMMON_ACL_H */
