/* SPDX-License-Identifier: Apache-2.0 */
/* weir group list|describe|delete|reset-offsets */
#include <ctype.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "client/cli/cli.h"
#include "client/cli/isotime.h"
#include "common/mem.h"

#define GROUP_USAGE                                                            \
    "group list\n"                                                             \
    "       weir group describe GROUP\n"                                       \
    "       weir group delete GROUP\n"                                         \
    "       weir group reset-offsets GROUP --topic TOPIC[:P[,P...]]\n"         \
    "            (--to-earliest | --to-latest | --to-offset N |\n"             \
    "             --to-datetime ISO8601 | --by-duration PnDTnHnMnS |\n"        \
    "             --shift-by N) [--execute]\n"                                 \
    "  reset-offsets prints 'TOPIC PARTITION OLD NEW' per partition and\n"     \
    "  commits only with --execute; the group must have no members. New\n"     \
    "  offsets are clamped to [log start, log end]."

static const struct args_spec group_specs[] = {
    CLI_COMMON_SPECS,
    {"topic", 0, ARGS_VALUE, "TOPIC[:P,...]",
     "reset-offsets: the topic, optionally some partitions"},
    {"to-earliest", 0, ARGS_FLAG, NULL, "reset to the log start"},
    {"to-latest", 0, ARGS_FLAG, NULL, "reset to the log end"},
    {"to-offset", 0, ARGS_VALUE, "N", "reset to offset N"},
    {"to-datetime", 0, ARGS_VALUE, "ISO8601",
     "reset to the first record at or after this time"},
    {"by-duration", 0, ARGS_VALUE, "PnDTnHnMnS",
     "reset to the first record at or after this long ago"},
    {"shift-by", 0, ARGS_VALUE, "N",
     "move the committed offset by N (negative: back)"},
    {"execute", 0, ARGS_FLAG, NULL, "commit the new offsets (else dry run)"},
};

#define GROUP_NSPECS (sizeof(group_specs) / sizeof(group_specs[0]))

int cli_parse_duration(const char *s, int64_t *ms)
{
    static const struct {
        char unit;
        int64_t ms;
        bool timepart;
    } units[] = {
        {'D', 86400000, false},
        {'H', 3600000, true},
        {'M', 60000, true},
        {'S', 1000, true},
    };
    bool in_time = false;
    bool any = false;
    int64_t total = 0;
    size_t next = 0; /* units must come in order */
    size_t u;

    if (s[0] != 'P') {
        return -1;
    }
    for (s++; *s != '\0';) {
        int64_t n = 0;
        if (*s == 'T' && !in_time) {
            in_time = true;
            s++;
            continue;
        }
        if (!isdigit((unsigned char)*s)) {
            return -1;
        }
        while (isdigit((unsigned char)*s)) {
            if (n > INT64_MAX / 10 - 10) {
                return -1;
            }
            n = n * 10 + (*s++ - '0');
        }
        for (u = next; u < 4 && units[u].unit != *s; u++) {
        }
        if (u == 4 || units[u].timepart != in_time ||
            n > INT64_MAX / units[u].ms - total / units[u].ms - 1) {
            return -1;
        }
        total += n * units[u].ms;
        next = u + 1;
        any = true;
        s++;
    }
    if (!any) {
        return -1;
    }
    *ms = total;
    return 0;
}

int cli_parse_topic_parts(const char *s,
                          char *topic,
                          size_t topic_len,
                          int32_t *parts,
                          size_t cap,
                          size_t *n)
{
    const char *colon = strchr(s, ':');
    size_t len = colon != NULL ? (size_t)(colon - s) : strlen(s);
    const char *p;

    *n = 0;
    if (len == 0 || len >= topic_len) {
        return -1;
    }
    memcpy(topic, s, len);
    topic[len] = '\0';
    if (colon == NULL) {
        return 0;
    }
    for (p = colon + 1;;) {
        char *end;
        long v;
        if (!isdigit((unsigned char)*p) || *n == cap) {
            return -1;
        }
        v = strtol(p, &end, 10);
        if (v > INT32_MAX) {
            return -1;
        }
        parts[(*n)++] = (int32_t)v;
        if (*end == '\0') {
            return 0;
        }
        if (*end != ',') {
            return -1;
        }
        p = end + 1;
    }
}

static int group_list(struct weir_client *c)
{
    struct weir_group_list *l;
    struct err_detail ed;
    size_t i;

    if (weir_admin_list_groups(c, &l, &ed) != 0) {
        return cli_fail(&ed);
    }
    for (i = 0; i < l->n; i++) {
        (void)printf("%s %s\n", l->groups[i].group, l->groups[i].state);
    }
    weir_group_list_free(l);
    return CLI_EXIT_OK;
}

/* Add the members' partitions that have no commit yet. */
static int group_add_owned(struct weir_group_offsets *o,
                           const struct weir_group_desc *d)
{
    struct weir_group_offset *v;
    size_t i;
    size_t j;
    size_t k;

    for (i = 0; i < d->n_members; i++) {
        for (j = 0; j < d->members[i].n_partitions; j++) {
            const struct weir_group_tp *tp = &d->members[i].partitions[j];
            for (k = 0; k < o->n; k++) {
                if (o->o[k].partition == tp->partition &&
                    strcmp(o->o[k].topic, tp->topic) == 0) {
                    break;
                }
            }
            if (k < o->n) {
                continue;
            }
            v = mem_realloc(o->o, (o->n + 1) * sizeof(*v));
            if (v == NULL) {
                return WEIR_ENOMEM;
            }
            o->o = v;
            v[o->n].topic = mem_strdup(tp->topic);
            if (v[o->n].topic == NULL) {
                return WEIR_ENOMEM;
            }
            v[o->n].partition = tp->partition;
            v[o->n].offset = -1;
            v[o->n].log_start = v[o->n].log_end = v[o->n].lag = -1;
            o->n++;
        }
    }
    return 0;
}

static const char *group_owner(const struct weir_group_desc *d,
                               const char *topic,
                               int32_t partition)
{
    size_t i;
    size_t j;

    for (i = 0; i < d->n_members; i++) {
        for (j = 0; j < d->members[i].n_partitions; j++) {
            if (d->members[i].partitions[j].partition == partition &&
                strcmp(d->members[i].partitions[j].topic, topic) == 0) {
                return d->members[i].member_id;
            }
        }
    }
    return "-";
}

static void group_print_members(const struct weir_group_desc *d)
{
    size_t i;
    size_t j;

    (void)printf("group %s state %s generation %" PRId32
                 " protocol %s leader %s\n",
                 d->group, d->state, d->generation,
                 d->protocol[0] != '\0' ? d->protocol : "-",
                 d->leader_id[0] != '\0' ? d->leader_id : "-");
    (void)printf("MEMBER CLIENT HOST PARTITIONS\n");
    for (i = 0; i < d->n_members; i++) {
        const struct weir_group_member *m = &d->members[i];
        (void)printf("%s %s %s ", m->member_id, m->client_id, m->client_host);
        for (j = 0; j < m->n_partitions; j++) {
            (void)printf("%s%s:%" PRId32, j > 0 ? "," : "",
                         m->partitions[j].topic, m->partitions[j].partition);
        }
        (void)printf("%s\n", m->n_partitions == 0 ? "-" : "");
    }
}

static int group_describe(struct weir_client *c, const char *group)
{
    struct weir_group_offsets *o = NULL;
    struct weir_group_desc *d = NULL;
    struct err_detail ed;
    size_t i;
    int rv = CLI_EXIT_OK;

    if (weir_admin_describe_group(c, group, &d, &ed) != 0 ||
        weir_admin_group_offsets(c, group, NULL, &o, &ed) != 0) {
        rv = cli_fail(&ed);
        goto out;
    }
    if (group_add_owned(o, d) != 0) {
        rv = cli_failf("out of memory");
        goto out;
    }
    if (weir_admin_group_lag(c, o, &ed) != 0) {
        rv = cli_fail(&ed);
        goto out;
    }
    group_print_members(d);
    (void)printf("TOPIC PARTITION COMMITTED LOG-END LAG OWNER\n");
    for (i = 0; i < o->n; i++) {
        const struct weir_group_offset *e = &o->o[i];
        (void)printf("%s %" PRId32 " %s%" PRId64 " %" PRId64 " %" PRId64
                     " %s\n",
                     e->topic, e->partition, "", e->offset, e->log_end, e->lag,
                     group_owner(d, e->topic, e->partition));
    }
out:
    weir_group_offsets_free(o);
    weir_group_desc_free(d);
    return rv;
}

static int group_delete(struct weir_client *c, const char *group)
{
    struct err_detail ed;

    if (weir_admin_delete_group(c, group, &ed) != 0) {
        return cli_fail(&ed);
    }
    return CLI_EXIT_OK;
}

int cmd_group(int argc, char **argv, const char *global_bs)
{
    struct weir_client *c = NULL;
    struct args a;
    const char *sub;
    bool done;
    int rv;

    rv = cli_parse("group", GROUP_USAGE, group_specs, GROUP_NSPECS, argc, argv,
                   &a, &done);
    if (done) {
        return rv;
    }
    if (a.n_pos == 0) {
        return cli_usage("group", "group needs list, describe, delete or "
                                  "reset-offsets");
    }
    sub = a.pos[0];
    if (strcmp(sub, "list") == 0 ? a.n_pos != 1 : a.n_pos != 2) {
        return cli_usage("group",
                         strcmp(sub, "list") == 0
                             ? "group list takes no arguments"
                             : "group %s needs one group name",
                         sub);
    }
    if (strcmp(sub, "list") != 0 && strcmp(sub, "describe") != 0 &&
        strcmp(sub, "delete") != 0 && strcmp(sub, "reset-offsets") != 0) {
        return cli_usage("group", "unknown group command '%s'", sub);
    }
    if (strcmp(sub, "reset-offsets") == 0 &&
        (rv = cmd_group_reset_check(&a)) != 0) {
        return rv;
    }
    rv = cli_client_open(cli_bootstrap(&a, global_bs), &c);
    if (rv != 0) {
        return rv;
    }
    if (strcmp(sub, "list") == 0) {
        rv = group_list(c);
    } else if (strcmp(sub, "describe") == 0) {
        rv = group_describe(c, a.pos[1]);
    } else if (strcmp(sub, "delete") == 0) {
        rv = group_delete(c, a.pos[1]);
    } else {
        rv = cmd_group_reset(c, a.pos[1], &a);
    }
    weir_client_free(c);
    return rv;
}
