/* SPDX-License-Identifier: Apache-2.0 */
/* weir consume and weir offsets. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "client/cli/cli.h"
#include "client/cli/fmt.h"
#include "client/cli/isotime.h"
#include "common/buf.h"
#include "common/mem.h"

#define CONSUME_USAGE                                                          \
    "consume TOPIC [--partition P] [--from-beginning | --offset N |\n"         \
    "              --from-time ISO8601] [--max-messages N] [--timeout-ms T]\n" \
    "              [--format FMT] [--group G [--auto-offset-reset "            \
    "earliest|latest|none]\n"                                                  \
    "              [--no-auto-commit] [--strategy range|roundrobin|sticky]\n"  \
    "              [--auto-commit-interval-ms N] [--group-events]]\n"          \
    "  Starts at the end (new records only) unless told otherwise.\n"          \
    "  With --group: joins the group, reads the partitions it is given from\n" \
    "  the group's committed offsets (else --auto-offset-reset, default\n"     \
    "  latest; --from-beginning means earliest), commits as it goes and on\n"  \
    "  exit (unless --no-auto-commit), then leaves the group.\n"               \
    "  --group-events puts the group's events among the records, in order:\n"  \
    "  '# assigned P...', '# revoked P...', '# committed P:OFFSET...' and\n"   \
    "  '# commit failed NAME P:OFFSET...'.\n"                                  \
    "  FMT: %p partition, %o offset, %t timestamp (ms), %k key, %v value,\n"   \
    "  %% percent; \\n \\t \\r \\\\ escapes. A newline follows each record\n"  \
    "  unless FMT ends with \\n. Default '%v'."

static const struct args_spec consume_specs[] = {
    CLI_COMMON_SPECS,
    {"partition", 0, ARGS_VALUE, "P", "only partition P (default: all)"},
    {"from-beginning", 0, ARGS_FLAG, NULL, "start at the oldest record"},
    {"offset", 0, ARGS_VALUE, "N", "start at offset N"},
    {"from-time", 0, ARGS_VALUE, "ISO8601",
     "start at the first record at or after this time (UTC unless zoned)"},
    {"max-messages", 0, ARGS_VALUE, "N", "stop after N records"},
    {"timeout-ms", 0, ARGS_VALUE, "T", "stop after T ms without records"},
    {"format", 0, ARGS_VALUE, "FMT", "output format (default '%v')"},
    {"group", 0, ARGS_VALUE, "G", "consume as a member of group G"},
    {"auto-offset-reset", 0, ARGS_VALUE, "earliest|latest|none",
     "group: where partitions without a committed offset start"},
    {"no-auto-commit", 0, ARGS_FLAG, NULL, "group: never commit"},
    {"strategy", 0, ARGS_VALUE, "range|roundrobin|sticky",
     "group: the assignment strategy (default range, then the others)"},
    {"auto-commit-interval-ms", 0, ARGS_VALUE, "N",
     "group: commit every N ms (default 5000)"},
    {"group-events", 0, ARGS_FLAG, NULL,
     "group: print assignments, revocations and commits among the records"},
};

#define CONSUME_NSPECS (sizeof(consume_specs) / sizeof(consume_specs[0]))

struct consume_opts {
    const char *topic;
    int32_t partition; /* -1 = all */
    enum weir_start start;
    int64_t start_value;
    int64_t max_messages; /* 0 = no limit */
    int64_t timeout_ms;   /* -1 = none */
    const char *format;
    const char *group;     /* NULL = assign partitions by hand */
    enum weir_start reset; /* group: EARLIEST, LATEST, OFFSET = none */
    bool auto_commit;
    const char *strategy; /* NULL = the library's default list */
    bool group_events;
    int64_t commit_interval_ms; /* 0 = the library's default */
};

static int consume_group_options(const struct args *a, struct consume_opts *o)
{
    const char *r = args_get(a, "auto-offset-reset");
    const char *s = args_get(a, "strategy");

    o->group = args_get(a, "group");
    o->auto_commit = !args_has(a, "no-auto-commit");
    o->group_events = args_has(a, "group-events");
    if (o->group == NULL) {
        if (r != NULL || s != NULL || !o->auto_commit || o->group_events ||
            args_has(a, "auto-commit-interval-ms")) {
            return cli_usage("consume", "--auto-offset-reset, --strategy, "
                                        "--no-auto-commit, "
                                        "--auto-commit-interval-ms and "
                                        "--group-events need --group");
        }
        return 0;
    }
    if (o->group[0] == '\0' || strlen(o->group) > 255) {
        return cli_usage("consume", "--group takes a name of 1 to 255 bytes");
    }
    if (args_has(a, "partition") || args_has(a, "offset") ||
        args_has(a, "from-time")) {
        return cli_usage("consume", "--group chooses the partitions and "
                                    "starts at the committed offsets: "
                                    "--partition, --offset and --from-time "
                                    "do not go with it");
    }
    o->reset =
        args_has(a, "from-beginning") ? WEIR_START_EARLIEST : WEIR_START_LATEST;
    if (r != NULL) {
        if (strcmp(r, "earliest") == 0) {
            o->reset = WEIR_START_EARLIEST;
        } else if (strcmp(r, "latest") == 0) {
            o->reset = WEIR_START_LATEST;
        } else if (strcmp(r, "none") == 0) {
            o->reset = WEIR_START_OFFSET;
        } else {
            return cli_usage("consume",
                             "--auto-offset-reset takes earliest, "
                             "latest or none, not '%s'",
                             r);
        }
    }
    if (s != NULL && strcmp(s, "range") != 0 && strcmp(s, "roundrobin") != 0 &&
        strcmp(s, "sticky") != 0) {
        return cli_usage("consume",
                         "--strategy takes range, roundrobin or "
                         "sticky, not '%s'",
                         s);
    }
    o->strategy = s;
    return cli_opt_int("consume", a, "auto-commit-interval-ms", 1, 86400000, 0,
                       &o->commit_interval_ms);
}

static int consume_start(const struct args *a, struct consume_opts *o)
{
    int n = args_has(a, "from-beginning") + args_has(a, "offset") +
            args_has(a, "from-time");
    int rv;

    if (n > 1) {
        return cli_usage("consume", "use one of --from-beginning, --offset "
                                    "and --from-time");
    }
    o->start = WEIR_START_LATEST;
    if (args_has(a, "from-beginning")) {
        o->start = WEIR_START_EARLIEST;
    } else if (args_has(a, "offset")) {
        o->start = WEIR_START_OFFSET;
        rv = cli_opt_int("consume", a, "offset", 0, INT64_MAX, 0,
                         &o->start_value);
        if (rv != 0) {
            return rv;
        }
    } else if (args_has(a, "from-time")) {
        o->start = WEIR_START_TIMESTAMP;
        if (isotime_parse(args_get(a, "from-time"), &o->start_value) != 0) {
            return cli_usage("consume",
                             "--from-time takes an ISO 8601 time such as "
                             "2024-05-01T12:00:00Z, not '%s'",
                             args_get(a, "from-time"));
        }
    }
    return 0;
}

static int consume_options(const struct args *a, struct consume_opts *o)
{
    char err[300];
    int64_t v;
    int rv;

    if (a->n_pos != 1) {
        return cli_usage("consume", a->n_pos == 0
                                        ? "consume needs a topic name"
                                        : "consume takes one topic name");
    }
    o->topic = a->pos[0];
    if ((rv = cli_check_topic("consume", o->topic)) != 0) {
        return rv;
    }
    if ((rv = cli_opt_int("consume", a, "partition", 0, INT32_MAX, -1, &v)) !=
        0) {
        return rv;
    }
    o->partition = (int32_t)v;
    if ((rv = cli_opt_int("consume", a, "max-messages", 1, INT64_MAX, 0,
                          &o->max_messages)) != 0 ||
        (rv = cli_opt_int("consume", a, "timeout-ms", 0, INT32_MAX, -1,
                          &o->timeout_ms)) != 0) {
        return rv;
    }
    o->format = args_get(a, "format") != NULL ? args_get(a, "format") : "%v";
    if (fmt_check(o->format, err, sizeof(err)) != 0) {
        return cli_usage("consume", "--format: %s", err);
    }
    rv = consume_start(a, o);
    return rv != 0 ? rv : consume_group_options(a, o);
}

/* Assign the partitions asked for, all at the same start. */
static int consume_assign(struct weir_client *c,
                          struct weir_consumer *k,
                          const struct consume_opts *o,
                          struct err_detail *ed)
{
    struct weir_assignment *as;
    int32_t n;
    int32_t i;
    int rv;

    rv = weir_client_partition_count(c, o->topic, &n, ed);
    if (rv != 0) {
        return rv;
    }
    if (o->partition >= n) {
        return err_set(ed, WEIR_EUNKNOWN_TOPIC_OR_PARTITION,
                       "topic '%s' has no partition %d (it has %d)", o->topic,
                       o->partition, n);
    }
    if (o->partition >= 0) {
        n = 1;
    }
    as = mem_calloc((size_t)n, sizeof(*as));
    if (as == NULL) {
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    for (i = 0; i < n; i++) {
        as[i].topic = o->topic;
        as[i].partition = o->partition >= 0 ? o->partition : i;
        as[i].start = o->start;
        as[i].value = o->start_value;
    }
    rv = weir_consumer_assign(k, as, (size_t)n, ed);
    mem_free(as);
    return rv;
}

/* How long the consume loop may sleep before it looks at cli_stop again
 * (SIGINT/SIGTERM). */
#define CONSUME_STOP_CHECK_MS 200

static int consume_loop(struct weir_client *c,
                        struct weir_consumer *k,
                        const struct consume_opts *o)
{
    const struct weir_record *rec;
    struct err_detail ed;
    struct weir_buf out;
    int64_t count = 0;
    uint64_t last = clock_now_ms(clock_system());
    uint64_t now;
    int wait;
    int rv = CLI_EXIT_OK;

    (void)c;
    buf_init(&out);
    while (!cli_stop && (o->max_messages == 0 || count < o->max_messages)) {
        now = clock_now_ms(clock_system());
        if (o->timeout_ms >= 0 && now >= last + (uint64_t)o->timeout_ms) {
            break;
        }
        wait = o->timeout_ms < 0 ? -1
                                 : (int)(last + (uint64_t)o->timeout_ms - now);
        /* A signal can land between the cli_stop check above and the
         * poll() inside weir_consumer_poll; without SA_RESTART it only
         * interrupts a poll already sleeping. A bounded wait makes any
         * such miss cost at most CONSUME_STOP_CHECK_MS. */
        if (wait < 0 || wait > CONSUME_STOP_CHECK_MS) {
            wait = CONSUME_STOP_CHECK_MS;
        }
        if (weir_consumer_poll(k, wait, &rec, &ed) != 0) {
            rv = cli_fail(&ed);
            break;
        }
        if (rec == NULL) {
            (void)fflush(stdout);
            continue;
        }
        last = clock_now_ms(clock_system());
        buf_reset(&out);
        fmt_render(o->format, rec, &out);
        if (!buf_ok(&out) || fwrite(out.data, 1, out.len, stdout) != out.len) {
            rv = cli_failf("cannot write to stdout");
            break;
        }
        count++;
    }
    (void)fflush(stdout);
    buf_fini(&out);
    return rv;
}

static void consume_flush(void *arg)
{
    (void)arg;
    (void)fflush(stdout);
}

static void consume_event_tps(const char *what,
                              const struct weir_topic_partition *tps,
                              size_t n)
{
    size_t i;

    (void)printf("# %s", what);
    for (i = 0; i < n; i++) {
        (void)printf(" %" PRId32, tps[i].partition);
    }
    (void)putchar('\n');
    (void)fflush(stdout);
}

static void
consume_on_assign(void *arg, const struct weir_topic_partition *tps, size_t n)
{
    (void)arg;
    consume_event_tps("assigned", tps, n);
}

static void
consume_on_revoke(void *arg, const struct weir_topic_partition *tps, size_t n)
{
    (void)arg;
    consume_event_tps("revoked", tps, n);
}

static void consume_on_commit(void *arg,
                              const struct weir_committed *offs,
                              size_t n,
                              int err)
{
    size_t i;

    (void)arg;
    if (err == 0) {
        (void)printf("# committed");
    } else {
        (void)printf("# commit failed %s", weir_err_name(err));
    }
    for (i = 0; i < n; i++) {
        (void)printf(" %" PRId32 ":%" PRId64, offs[i].partition,
                     offs[i].offset);
    }
    (void)putchar('\n');
    (void)fflush(stdout);
}

int cmd_consume(int argc, char **argv, const char *global_bs)
{
    struct weir_consumer_config kc;
    struct weir_consumer *k = NULL;
    struct weir_client *c = NULL;
    struct consume_opts o;
    struct err_detail ed;
    struct args a;
    bool done;
    int rv;

    rv = cli_parse("consume", CONSUME_USAGE, consume_specs, CONSUME_NSPECS,
                   argc, argv, &a, &done);
    if (done) {
        return rv;
    }
    memset(&o, 0, sizeof(o));
    rv = consume_options(&a, &o);
    if (rv != 0) {
        return rv;
    }
    rv = cli_client_open(cli_bootstrap(&a, global_bs), &c);
    if (rv != 0) {
        return rv;
    }
    weir_consumer_config_init(&kc);
    /* An explicit --offset past the end is an error, not a silent jump. */
    kc.reset = o.start == WEIR_START_OFFSET   ? WEIR_START_OFFSET
               : o.start == WEIR_START_LATEST ? WEIR_START_LATEST
                                              : WEIR_START_EARLIEST;
    if (o.group != NULL) {
        kc.group_id = o.group;
        kc.reset = o.reset;
        kc.auto_commit = o.auto_commit;
        /* records handed out are committed: they must be out of stdio's
         * buffer by then, or a kill after the commit loses them */
        kc.before_commit = consume_flush;
        if (o.strategy != NULL) {
            kc.strategies = o.strategy;
        }
        if (o.commit_interval_ms > 0) {
            kc.auto_commit_interval_ms = (uint32_t)o.commit_interval_ms;
        }
        if (o.group_events) {
            kc.on_assign = consume_on_assign;
            kc.on_revoke = consume_on_revoke;
            kc.on_commit = consume_on_commit;
        }
    }
    cli_signals_install();
    if (weir_consumer_new(c, &kc, &k, &ed) != 0 ||
        (o.group != NULL ? weir_consumer_subscribe(k, &o.topic, 1, &ed)
                         : consume_assign(c, k, &o, &ed)) != 0) {
        rv = cli_stop ? CLI_EXIT_OK : cli_fail(&ed);
        goto out;
    }
    rv = consume_loop(c, k, &o);
    if (o.group != NULL) {
        if (weir_consumer_close(k, &ed) != 0 && rv == CLI_EXIT_OK) {
            rv = cli_fail(&ed);
        }
    }
out:
    weir_consumer_free(k);
    weir_client_free(c);
    return rv;
}

#define OFFSETS_USAGE                                                          \
    "offsets TOPIC [--partition P] [--time earliest|latest|ISO8601]\n"         \
    "  Prints 'PARTITION OFFSET' per partition: the first offset at or "       \
    "after\n"                                                                  \
    "  the time (-1 if none), the log start (earliest) or the next offset\n"   \
    "  to be written (latest, the default)."

static const struct args_spec offsets_specs[] = {
    CLI_COMMON_SPECS,
    {"partition", 0, ARGS_VALUE, "P", "only partition P"},
    {"time", 0, ARGS_VALUE, "WHEN", "earliest, latest (default) or ISO 8601"},
};

static int offsets_time(const struct args *a, int64_t *ts)
{
    const char *t = args_get(a, "time");

    *ts = WEIR_OFFSET_LATEST;
    if (t == NULL || strcmp(t, "latest") == 0) {
        return 0;
    }
    if (strcmp(t, "earliest") == 0) {
        *ts = WEIR_OFFSET_EARLIEST;
        return 0;
    }
    if (isotime_parse(t, ts) != 0) {
        return cli_usage("offsets",
                         "--time takes earliest, latest or an ISO 8601 time "
                         "such as 2024-05-01T12:00:00Z, not '%s'",
                         t);
    }
    return 0;
}

int cmd_offsets(int argc, char **argv, const char *global_bs)
{
    struct weir_offset_result *res = NULL;
    struct weir_client *c = NULL;
    struct err_detail ed;
    struct args a;
    size_t n = 0;
    size_t i;
    int64_t part;
    int64_t ts;
    bool done;
    int rv;

    rv = cli_parse("offsets", OFFSETS_USAGE, offsets_specs,
                   sizeof(offsets_specs) / sizeof(offsets_specs[0]), argc, argv,
                   &a, &done);
    if (done) {
        return rv;
    }
    if (a.n_pos != 1) {
        return cli_usage("offsets", "offsets needs one topic name");
    }
    if ((rv = cli_check_topic("offsets", a.pos[0])) != 0) {
        return rv;
    }
    if ((rv = cli_opt_int("offsets", &a, "partition", 0, INT32_MAX, -1,
                          &part)) != 0 ||
        (rv = offsets_time(&a, &ts)) != 0 ||
        (rv = cli_client_open(cli_bootstrap(&a, global_bs), &c)) != 0) {
        return rv;
    }
    if (weir_admin_list_offsets(c, a.pos[0], (int32_t)part, ts, &res, &n,
                                &ed) != 0) {
        rv = cli_fail(&ed);
        goto out;
    }
    for (i = 0; i < n; i++) {
        if (res[i].error_code != 0) {
            rv = cli_failf("%s/%d: %s", a.pos[0], res[i].partition,
                           weir_err_str(res[i].error_code));
            continue;
        }
        (void)printf("%" PRId32 " %" PRId64 "\n", res[i].partition,
                     res[i].offset);
    }
out:
    weir_offsets_free(res);
    weir_client_free(c);
    return rv;
}
