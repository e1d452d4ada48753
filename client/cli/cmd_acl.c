/* SPDX-License-Identifier: Apache-2.0 */
/* weir acl add|remove|list: ACL rules (common/acl.h for what they mean). */
#include <stdio.h>
#include <string.h>

#include "client/cli/cli.h"
#include "common/acl.h"

#define ACL_USAGE                                                              \
    "acl add|remove --principal P --resource topic|group|cluster "             \
    "[--name N]\n"                                                             \
    "           [--pattern literal|prefixed] --operation "                     \
    "read|write|create|delete|describe|alter|cluster-action|all [--deny]\n"    \
    "       weir acl list [--principal P] [--resource T] [--name N]"

static const struct args_spec acl_specs[] = {
    CLI_COMMON_SPECS,
    {"principal", 0, ARGS_VALUE, "P",
     "\"User:NAME\", a certificate subject, or \"*\" (list: filter)"},
    {"resource", 0, ARGS_VALUE, "T", "topic, group or cluster (list: filter)"},
    {"name", 0, ARGS_VALUE, "N",
     "resource name (\"*\" = every one; none for cluster; list: filter)"},
    {"pattern", 0, ARGS_VALUE, "literal|prefixed",
     "add, remove: how --name matches (default literal)"},
    {"operation", 0, ARGS_VALUE, "OP", "add, remove: the operation"},
    {"deny", 0, ARGS_FLAG, NULL, "add, remove: a deny rule (default allow)"},
};

#define ACL_NSPECS (sizeof(acl_specs) / sizeof(acl_specs[0]))

/* The rule add/remove describe, from the options. */
static int acl_rule_from_args(const struct args *a, struct weir_acl *r)
{
    const char *res = args_get(a, "resource");
    const char *op = args_get(a, "operation");
    const char *pat = args_get(a, "pattern");
    const char *name = args_get(a, "name");

    memset(r, 0, sizeof(*r));
    if (args_get(a, "principal") == NULL || res == NULL || op == NULL) {
        return cli_usage("acl",
                         "acl %s needs --principal, --resource and "
                         "--operation",
                         a->pos[0]);
    }
    r->principal = (char *)args_get(a, "principal");
    r->resource = (int)acl_resource_parse(res);
    r->operation = (int)acl_op_parse(op);
    r->pattern = pat != NULL ? (int)acl_pattern_parse(pat) : ACL_LITERAL;
    r->permission = args_has(a, "deny") ? ACL_DENY : ACL_ALLOW;
    if (r->principal[0] == '\0') {
        return cli_usage("acl", "--principal is empty");
    }
    if (r->resource == 0) {
        return cli_usage("acl",
                         "--resource must be topic, group or cluster, "
                         "not '%s'",
                         res);
    }
    if (r->operation == 0) {
        return cli_usage("acl", "unknown --operation '%s'", op);
    }
    if (r->pattern == 0) {
        return cli_usage("acl",
                         "--pattern must be literal or prefixed, not "
                         "'%s'",
                         pat);
    }
    if (r->resource == ACL_CLUSTER) {
        if (name != NULL || r->pattern != ACL_LITERAL) {
            return cli_usage("acl", "a cluster rule takes no --name or "
                                    "--pattern");
        }
        name = "";
    } else if (name == NULL || name[0] == '\0') {
        return cli_usage("acl",
                         "a %s rule needs --name (\"*\" for every "
                         "one)",
                         res);
    }
    r->name = (char *)name;
    return 0;
}

static void acl_print(const struct weir_acl *r)
{
    (void)printf("%-24s %-8s %-9s %-24s %-15s %s\n", r->principal,
                 acl_resource_name((enum acl_resource)r->resource),
                 acl_pattern_name((enum acl_pattern)r->pattern),
                 r->name[0] != '\0' ? r->name : "-",
                 acl_op_name((enum acl_op)r->operation),
                 acl_perm_name((enum acl_perm)r->permission));
}

static int acl_list(struct weir_client *c, const struct args *a)
{
    const char *principal = args_get(a, "principal");
    const char *name = args_get(a, "name");
    const char *res = args_get(a, "resource");
    struct weir_acl_list *l;
    struct err_detail ed;
    size_t i;

    if (weir_admin_acl_list(c, &l, &ed) != 0) {
        return cli_fail(&ed);
    }
    (void)printf("%-24s %-8s %-9s %-24s %-15s %s\n", "PRINCIPAL", "RESOURCE",
                 "PATTERN", "NAME", "OPERATION", "PERMISSION");
    for (i = 0; i < l->n; i++) {
        const struct weir_acl *r = &l->acls[i];
        if ((principal != NULL && strcmp(r->principal, principal) != 0) ||
            (name != NULL && strcmp(r->name, name) != 0) ||
            (res != NULL && r->resource != (int)acl_resource_parse(res))) {
            continue;
        }
        acl_print(r);
    }
    weir_acl_list_free(l);
    return CLI_EXIT_OK;
}

static int acl_check_args(const struct args *a, struct weir_acl *r)
{
    const char *action;

    if (a->n_pos == 0) {
        return cli_usage("acl", "acl needs an action: add, remove or list");
    }
    action = a->pos[0];
    if (a->n_pos > 1) {
        return cli_usage("acl", "unexpected argument '%s'", a->pos[1]);
    }
    if (strcmp(action, "list") == 0) {
        if (args_has(a, "pattern") || args_has(a, "operation") ||
            args_has(a, "deny")) {
            return cli_usage("acl", "--pattern, --operation and --deny go "
                                    "with add and remove");
        }
        if (args_get(a, "resource") != NULL &&
            acl_resource_parse(args_get(a, "resource")) == 0) {
            return cli_usage("acl",
                             "--resource must be topic, group or "
                             "cluster, not '%s'",
                             args_get(a, "resource"));
        }
        return 0;
    }
    if (strcmp(action, "add") != 0 && strcmp(action, "remove") != 0) {
        return cli_usage("acl", "unknown acl action '%s'", action);
    }
    return acl_rule_from_args(a, r);
}

int cmd_acl(int argc, char **argv, const char *global_bs)
{
    struct weir_client *c;
    struct weir_acl r;
    struct err_detail ed;
    struct args a;
    bool done;
    int rv;

    rv = cli_parse("acl", ACL_USAGE, acl_specs, ACL_NSPECS, argc, argv, &a,
                   &done);
    if (done) {
        return rv;
    }
    rv = acl_check_args(&a, &r);
    if (rv != 0) {
        return rv;
    }
    rv = cli_client_open(cli_bootstrap(&a, global_bs), &c);
    if (rv != 0) {
        return rv;
    }
    if (strcmp(a.pos[0], "list") == 0) {
        rv = acl_list(c, &a);
    } else {
        bool add = strcmp(a.pos[0], "add") == 0;
        rv = add ? weir_admin_acl_create(c, &r, &ed)
                 : weir_admin_acl_delete(c, &r, &ed);
        if (rv != 0) {
            rv = cli_fail(&ed);
        } else {
            (void)printf("%s: ", add ? "added" : "removed");
            acl_print(&r);
            rv = CLI_EXIT_OK;
        }
    }
    weir_client_free(c);
    return rv;
}
