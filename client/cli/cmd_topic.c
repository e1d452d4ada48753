/* SPDX-License-Identifier: Apache-2.0 */
/* weir topic create|list|describe|delete */
#include <stdio.h>
#include <string.h>

#include "client/cli/cli.h"
#include "common/mem.h"

#define TOPIC_USAGE                                                            \
    "topic create NAME --partitions N [--replication-factor R] "               \
    "[--config KEY=VALUE ...]\n"                                               \
    "       weir topic list [--internal]\n"                                    \
    "       weir topic describe NAME\n"                                        \
    "       weir topic delete NAME"

static const struct args_spec topic_specs[] = {
    CLI_COMMON_SPECS,
    {"partitions", 0, ARGS_VALUE, "N", "create: number of partitions"},
    {"replication-factor", 0, ARGS_VALUE, "R",
     "create: replicas per partition (default: the broker's)"},
    {"config", 0, ARGS_LIST, "KEY=VALUE",
     "create: topic configuration (repeatable)"},
    {"internal", 0, ARGS_FLAG, NULL, "list: include internal topics"},
};

#define TOPIC_NSPECS (sizeof(topic_specs) / sizeof(topic_specs[0]))

static int topic_create(struct weir_client *c, const struct args *a)
{
    struct weir_config_entry cfgs[ARGS_MAX_LIST];
    struct weir_new_topic t;
    struct err_detail ed;
    const char *const *kv;
    size_t n;
    size_t i;
    int64_t parts;
    int64_t rf;
    int rv;

    if (!args_has(a, "partitions")) {
        return cli_usage("topic", "topic create needs --partitions N");
    }
    if ((rv = cli_opt_int("topic", a, "partitions", 1, 100000, 1, &parts)) !=
            0 ||
        (rv = cli_opt_int("topic", a, "replication-factor", 1, 1000, 0, &rf)) !=
            0) {
        return rv;
    }
    kv = args_list(a, "config", &n);
    for (i = 0; i < n; i++) {
        const char *eq = strchr(kv[i], '=');
        if (eq == NULL || eq == kv[i]) {
            return cli_usage("topic", "--config takes KEY=VALUE, not '%s'",
                             kv[i]);
        }
        cfgs[i].key = mem_strndup(kv[i], (size_t)(eq - kv[i]));
        cfgs[i].value = (char *)eq + 1;
        if (cfgs[i].key == NULL) {
            n = i;
            rv = err_set(&ed, WEIR_ENOMEM, "out of memory");
            goto out;
        }
    }
    memset(&t, 0, sizeof(t));
    t.name = a->pos[1];
    t.partitions = (int32_t)parts;
    t.replication_factor = (int32_t)rf;
    t.configs = cfgs;
    t.n_configs = n;
    rv = weir_admin_create_topic(c, &t, &ed);
out:
    for (i = 0; i < n; i++) {
        mem_free(cfgs[i].key);
    }
    if (rv != 0) {
        return cli_fail(&ed);
    }
    (void)printf("created topic %s with %d partitions\n", t.name, t.partitions);
    return CLI_EXIT_OK;
}

static int topic_list(struct weir_client *c, const struct args *a)
{
    struct weir_topic_list *l;
    struct err_detail ed;
    size_t i;

    if (weir_admin_list_topics(c, args_has(a, "internal"), &l, &ed) != 0) {
        return cli_fail(&ed);
    }
    for (i = 0; i < l->n; i++) {
        (void)printf("%s\n", l->names[i]);
    }
    weir_topic_list_free(l);
    return CLI_EXIT_OK;
}

static void topic_print_ids(const int32_t *v, size_t n)
{
    char buf[256];
    size_t used = 0;
    size_t i;

    buf[0] = '\0';
    for (i = 0; i < n && used < sizeof(buf) - 12; i++) {
        used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%d",
                                 i > 0 ? "," : "", v[i]);
    }
    (void)printf("%-12s", n > 0 ? buf : "-");
}

static int topic_describe(struct weir_client *c, const char *name)
{
    struct weir_topic_desc *d;
    struct err_detail ed;
    size_t i;

    if (weir_admin_describe_topic(c, name, &d, &ed) != 0) {
        return cli_fail(&ed);
    }
    (void)printf("Topic: %s  Partitions: %zu  ReplicationFactor: %zu%s\n",
                 d->name, d->n_partitions,
                 d->n_partitions > 0 ? d->partitions[0].n_replicas : 0,
                 d->internal ? "  Internal: yes" : "");
    (void)printf("Configs:");
    for (i = 0; i < d->n_configs; i++) {
        (void)printf("%s%s=%s", i > 0 ? "," : " ", d->configs[i].key,
                     d->configs[i].value);
    }
    (void)printf("%s\n", d->n_configs == 0 ? " (defaults)" : "");
    (void)printf("%-10s %-7s %-6s %-12s%-12s%-12s %-12s%s\n", "Partition",
                 "Leader", "Epoch", "Replicas", "Isr", "StartOffset",
                 "EndOffset", "");
    for (i = 0; i < d->n_partitions; i++) {
        const struct weir_partition_desc *p = &d->partitions[i];
        (void)printf("%-10d %-7d %-6d ", p->partition, p->leader,
                     p->leader_epoch);
        topic_print_ids(p->replicas, p->n_replicas);
        topic_print_ids(p->isr, p->n_isr);
        (void)printf("%-12lld %-12lld%s%s\n", (long long)p->start_offset,
                     (long long)p->end_offset, p->error_code != 0 ? " " : "",
                     p->error_code != 0 ? weir_err_name(p->error_code) : "");
    }
    weir_topic_desc_free(d);
    return CLI_EXIT_OK;
}

static int topic_delete(struct weir_client *c, const char *name)
{
    struct err_detail ed;

    if (weir_admin_delete_topic(c, name, &ed) != 0) {
        return cli_fail(&ed);
    }
    (void)printf("deleted topic %s\n", name);
    return CLI_EXIT_OK;
}

static int topic_check_args(const struct args *a, const char **action)
{
    size_t want;

    if (a->n_pos == 0) {
        return cli_usage("topic", "topic needs an action: create, list, "
                                  "describe or delete");
    }
    *action = a->pos[0];
    if (strcmp(*action, "list") == 0) {
        want = 1;
    } else if (strcmp(*action, "create") == 0 ||
               strcmp(*action, "describe") == 0 ||
               strcmp(*action, "delete") == 0) {
        want = 2;
    } else {
        return cli_usage("topic", "unknown topic action '%s'", *action);
    }
    if (a->n_pos < want) {
        return cli_usage("topic", "topic %s needs a topic name", *action);
    }
    if (a->n_pos > want) {
        return cli_usage("topic", "unexpected argument '%s'", a->pos[want]);
    }
    if (want == 2 && cli_check_topic("topic", a->pos[1]) != 0) {
        return CLI_EXIT_USAGE;
    }
    if (strcmp(*action, "create") != 0 &&
        (args_has(a, "partitions") || args_has(a, "replication-factor") ||
         args_has(a, "config"))) {
        return cli_usage("topic", "--partitions, --replication-factor and "
                                  "--config go with topic create");
    }
    return 0;
}

int cmd_topic(int argc, char **argv, const char *global_bs)
{
    struct weir_client *c;
    const char *action = NULL;
    struct args a;
    bool done;
    int rv;

    rv = cli_parse("topic", TOPIC_USAGE, topic_specs, TOPIC_NSPECS, argc, argv,
                   &a, &done);
    if (done) {
        return rv;
    }
    rv = topic_check_args(&a, &action);
    if (rv != 0) {
        return rv;
    }
    rv = cli_client_open(cli_bootstrap(&a, global_bs), &c);
    if (rv != 0) {
        return rv;
    }
    if (strcmp(action, "create") == 0) {
        rv = topic_create(c, &a);
    } else if (strcmp(action, "list") == 0) {
        rv = topic_list(c, &a);
    } else if (strcmp(action, "describe") == 0) {
        rv = topic_describe(c, a.pos[1]);
    } else {
        rv = topic_delete(c, a.pos[1]);
    }
    weir_client_free(c);
    return rv;
}
