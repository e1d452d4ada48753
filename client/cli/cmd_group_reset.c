/* SPDX-License-Identifier: Apache-2.0 */
/* weir group reset-offsets: compute new committed offsets for a stopped
 * group, print them, and commit them only with --execute. The group must
 * have no members: checked here first, and enforced by the coordinator
 * (an operator commit into a live group is refused). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "client/cli/cli.h"
#include "client/cli/isotime.h"
#include "common/mem.h"

#define RESET_MAX_PARTS 4096

static const char *const reset_modes[] = {
    "to-earliest", "to-latest",   "to-offset",
    "to-datetime", "by-duration", "shift-by",
};

#define RESET_NMODES (sizeof(reset_modes) / sizeof(reset_modes[0]))

struct reset_plan {
    char topic[256];
    int32_t parts[RESET_MAX_PARTS];
    size_t n_parts; /* 0 = every partition */
    const char *mode;
    int64_t value; /* offset, ms since the epoch, or shift */
};

static int reset_plan(const struct args *a, struct reset_plan *p)
{
    const char *v;
    size_t n = 0;
    size_t i;

    memset(p, 0, sizeof(*p));
    v = args_get(a, "topic");
    if (v == NULL) {
        return cli_usage("group", "reset-offsets needs --topic "
                                  "TOPIC[:P[,P...]]");
    }
    if (cli_parse_topic_parts(v, p->topic, sizeof(p->topic), p->parts,
                              RESET_MAX_PARTS, &p->n_parts) != 0) {
        return cli_usage("group",
                         "--topic takes TOPIC or TOPIC:P[,P...], "
                         "not '%s'",
                         v);
    }
    for (i = 0; i < RESET_NMODES; i++) {
        if (args_has(a, reset_modes[i])) {
            p->mode = reset_modes[i];
            n++;
        }
    }
    if (n != 1) {
        return cli_usage("group", "reset-offsets takes one of --to-earliest, "
                                  "--to-latest, --to-offset, --to-datetime, "
                                  "--by-duration and --shift-by");
    }
    return 0;
}

static int reset_value(const struct args *a, struct reset_plan *p)
{
    const char *v = args_get(a, p->mode);
    int64_t ms;

    if (strcmp(p->mode, "to-offset") == 0) {
        return cli_opt_int("group", a, "to-offset", 0, INT64_MAX, 0, &p->value);
    }
    if (strcmp(p->mode, "shift-by") == 0) {
        return cli_opt_int("group", a, "shift-by", INT64_MIN + 1, INT64_MAX, 0,
                           &p->value);
    }
    if (strcmp(p->mode, "to-datetime") == 0 &&
        isotime_parse(v, &p->value) != 0) {
        return cli_usage("group",
                         "--to-datetime takes an ISO 8601 time such as "
                         "2024-05-01T12:00:00Z, not '%s'",
                         v);
    }
    if (strcmp(p->mode, "by-duration") == 0) {
        if (cli_parse_duration(v, &ms) != 0) {
            return cli_usage("group",
                             "--by-duration takes an ISO 8601 duration such "
                             "as P1DT2H or PT30M, not '%s'",
                             v);
        }
        p->value = clock_wall_ms(clock_system()) - ms;
    }
    return 0;
}

int cmd_group_reset_check(const struct args *a)
{
    struct reset_plan p;
    int rv;

    rv = reset_plan(a, &p);
    if (rv == 0) {
        rv = reset_value(a, &p);
    }
    return rv;
}

/* The group must be stopped. */
static int reset_check_empty(struct weir_client *c, const char *group)
{
    struct weir_group_desc *d;
    struct err_detail ed;
    size_t n;

    if (weir_admin_describe_group(c, group, &d, &ed) != 0) {
        return ed.code == WEIR_EGROUP_NOT_FOUND ? 0 : cli_fail(&ed);
    }
    n = d->n_members;
    weir_group_desc_free(d);
    if (n > 0) {
        return cli_failf("group '%s' has %zu live member%s; stop its "
                         "consumers before resetting its offsets",
                         group, n, n == 1 ? "" : "s");
    }
    return 0;
}

/* One entry per chosen partition, with the committed offset (or -1). */
static int reset_entries(struct weir_client *c,
                         const char *group,
                         const struct reset_plan *p,
                         struct weir_group_offsets *out,
                         struct err_detail *ed)
{
    struct weir_group_offsets *got = NULL;
    int32_t count;
    size_t n;
    size_t i;
    size_t j;
    int rv;

    rv = weir_client_partition_count(c, p->topic, &count, ed);
    if (rv == 0) {
        rv = weir_admin_group_offsets(c, group, p->topic, &got, ed);
    }
    if (rv != 0) {
        return rv;
    }
    n = p->n_parts > 0 ? p->n_parts : (size_t)count;
    out->o = mem_calloc(n + 1, sizeof(*out->o));
    for (i = 0; out->o != NULL && i < n; i++) {
        int32_t part = p->n_parts > 0 ? p->parts[i] : (int32_t)i;
        struct weir_group_offset *e = &out->o[out->n];
        if (part >= count) {
            weir_group_offsets_free(got);
            return err_set(ed, WEIR_EUNKNOWN_TOPIC_OR_PARTITION,
                           "topic '%s' has no partition %d (it has %d)",
                           p->topic, part, count);
        }
        e->topic = mem_strdup(p->topic);
        if (e->topic == NULL) {
            break;
        }
        out->n++;
        e->partition = part;
        e->offset = e->log_start = e->log_end = e->lag = -1;
        for (j = 0; j < got->n; j++) {
            if (got->o[j].partition == part) {
                e->offset = got->o[j].offset;
            }
        }
    }
    weir_group_offsets_free(got);
    if (out->o == NULL || out->n < n) {
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    return weir_admin_group_lag(c, out, ed);
}

static int64_t reset_clamp(const struct weir_group_offset *e, int64_t v)
{
    if (e->log_start >= 0 && v < e->log_start) {
        v = e->log_start;
    }
    if (e->log_end >= 0 && v > e->log_end) {
        v = e->log_end;
    }
    return v < 0 ? 0 : v;
}

/* The new offsets into *next (n entries). */
static int reset_compute(struct weir_client *c,
                         const struct reset_plan *p,
                         const struct weir_group_offsets *o,
                         int64_t *next,
                         struct err_detail *ed)
{
    struct weir_offset_result *byt = NULL;
    size_t n_byt = 0;
    size_t i;
    size_t j;
    int rv;

    if (strcmp(p->mode, "to-datetime") == 0 ||
        strcmp(p->mode, "by-duration") == 0) {
        rv = weir_admin_list_offsets(c, p->topic, -1, p->value, &byt, &n_byt,
                                     ed);
        if (rv != 0) {
            return rv;
        }
    }
    for (i = 0; i < o->n; i++) {
        const struct weir_group_offset *e = &o->o[i];
        int64_t v = 0;
        if (strcmp(p->mode, "to-earliest") == 0) {
            v = e->log_start;
        } else if (strcmp(p->mode, "to-latest") == 0) {
            v = e->log_end;
        } else if (strcmp(p->mode, "to-offset") == 0) {
            v = p->value;
        } else if (strcmp(p->mode, "shift-by") == 0) {
            int64_t base = e->offset >= 0 ? e->offset : e->log_start;
            v = p->value < 0 && base < -p->value ? 0 : base + p->value;
        } else {
            v = e->log_end; /* no record at or after the time */
            for (j = 0; j < n_byt; j++) {
                if (byt[j].partition == e->partition &&
                    byt[j].error_code == 0 && byt[j].offset >= 0) {
                    v = byt[j].offset;
                }
            }
        }
        next[i] = reset_clamp(e, v);
    }
    weir_offsets_free(byt);
    return 0;
}

static int reset_run(struct weir_client *c,
                     const char *group,
                     const struct reset_plan *p,
                     bool execute,
                     struct weir_group_offsets *o,
                     struct err_detail *ed)
{
    int64_t *next;
    size_t i;
    int rv;

    rv = reset_entries(c, group, p, o, ed);
    if (rv != 0) {
        return rv;
    }
    next = mem_calloc(o->n + 1, sizeof(*next));
    if (next == NULL) {
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    rv = reset_compute(c, p, o, next, ed);
    for (i = 0; rv == 0 && i < o->n; i++) {
        (void)printf("%s %" PRId32 " %" PRId64 " %" PRId64 "\n", o->o[i].topic,
                     o->o[i].partition, o->o[i].offset, next[i]);
        o->o[i].offset = next[i];
    }
    mem_free(next);
    if (rv == 0 && execute) {
        rv = weir_admin_commit_group_offsets(c, group, o->o, o->n, ed);
    }
    return rv;
}

int cmd_group_reset(struct weir_client *c,
                    const char *group,
                    const struct args *a)
{
    struct weir_group_offsets o = {0, NULL};
    struct reset_plan *p = mem_calloc(1, sizeof(*p));
    struct err_detail ed;
    size_t i;
    int rv;

    if (p == NULL) {
        return cli_failf("out of memory");
    }
    rv = reset_plan(a, p);
    if (rv == 0) {
        rv = reset_value(a, p);
    }
    if (rv == 0) {
        rv = reset_check_empty(c, group);
    }
    if (rv == 0) {
        if (reset_run(c, group, p, args_has(a, "execute"), &o, &ed) != 0) {
            rv = cli_fail(&ed);
        } else if (!args_has(a, "execute")) {
            (void)fprintf(stderr, "weir: dry run; add --execute to commit "
                                  "these offsets\n");
        }
    }
    for (i = 0; i < o.n; i++) {
        mem_free(o.o[i].topic);
    }
    mem_free(o.o);
    mem_free(p);
    return rv;
}
