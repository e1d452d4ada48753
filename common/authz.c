/* SPDX-License-Identifier: Apache-2.0 */
/* Authorization settings and the check in front of acl_allowed. */
#include "common/authz.h"

#include <string.h>

#include "common/mem.h"

int authz_init(struct authz *a,
               bool enabled,
               const char *super_users,
               struct err_detail *ed)
{
    const char *p = super_users != NULL ? super_users : "";

    memset(a, 0, sizeof(*a));
    a->enabled = enabled;
    while (*p != '\0') {
        size_t n = strcspn(p, ";");
        const char *s = p;
        size_t len = n;
        while (len > 0 && (*s == ' ' || *s == '\t')) {
            s++;
            len--;
        }
        while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t')) {
            len--;
        }
        if (len > 0) {
            if (a->n_super == AUTHZ_MAX_SUPER || len > ACL_MAX_NAME) {
                authz_fini(a);
                return err_set(ed, WEIR_ECONFIG,
                               "super-users: at most %d principals of at "
                               "most %d bytes each",
                               AUTHZ_MAX_SUPER, ACL_MAX_NAME);
            }
            a->super[a->n_super] = mem_malloc(len + 1);
            if (a->super[a->n_super] == NULL) {
                authz_fini(a);
                return err_set(ed, WEIR_ENOMEM, "out of memory");
            }
            memcpy(a->super[a->n_super], s, len);
            a->super[a->n_super][len] = '\0';
            a->n_super++;
        }
        p += n;
        if (*p == ';') {
            p++;
        }
    }
    return 0;
}

void authz_fini(struct authz *a)
{
    size_t i;

    for (i = 0; i < a->n_super; i++) {
        mem_free(a->super[i]);
    }
    a->n_super = 0;
}

const char *authz_principal(const char *authenticated)
{
    return authenticated != NULL && authenticated[0] != '\0' ? authenticated
                                                             : AUTHZ_ANONYMOUS;
}

bool authz_allowed(const struct authz *a,
                   const struct acl_set *rules,
                   const char *principal,
                   enum acl_resource resource,
                   const char *name,
                   enum acl_op op)
{
    static const struct acl_set none;

    if (!a->enabled) {
        return true;
    }
    return acl_allowed(rules != NULL ? rules : &none,
                       (const char *const *)a->super, a->n_super,
                       authz_principal(principal), resource, name, op);
}
