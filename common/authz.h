/* SPDX-License-Identifier: Apache-2.0 */
/* The authorization settings of a server (broker or controller): whether
 * ACLs are enforced, and the super users, who may do everything. The
 * rules themselves are cluster metadata (meta_image_acls).
 * Locality: one thread. */
#ifndef COMMON_AUTHZ_H
#define COMMON_AUTHZ_H

#include <stdbool.h>
#include <stddef.h>

#include "common/acl.h"
#include "common/err.h"

#define AUTHZ_ANONYMOUS "User:ANONYMOUS" /* no SASL, no client certificate */
#define AUTHZ_MAX_SUPER 64

struct authz {
    bool enabled; /* false: everything is allowed */
    char *super[AUTHZ_MAX_SUPER];
    size_t n_super;
};

/* super_users: principals separated by ';' (certificate subjects hold
 * commas), e.g. "User:admin;CN=broker-1,O=weir"; NULL or "" for none.
 * Errors: WEIR_ECONFIG (too many, or one too long), WEIR_ENOMEM. */
WEIR_MUST_CHECK int authz_init(struct authz *a,
                               bool enabled,
                               const char *super_users,
                               struct err_detail *ed);
void authz_fini(struct authz *a);

/* The principal a request acts as: its authenticated one, else
 * AUTHZ_ANONYMOUS. */
const char *authz_principal(const char *authenticated);

/* May principal do op on (resource, name)? Always with authorization off,
 * and for super users; else by the rules (deny wins; no rule, no). */
bool authz_allowed(const struct authz *a,
                   const struct acl_set *rules,
                   const char *principal,
                   enum acl_resource resource,
                   const char *name,
                   enum acl_op op);

#endif /* COMMON_AUTHZ_H */
