/* SPDX-License-Identifier: Apache-2.0 */
/* weir produce: one record per stdin line. stdin is read in chunks while
 * the producer runs (poll on stdin and the broker sockets together), so
 * batching and pipelining carry large inputs; delivery reports are put
 * back in input order by a sequence window before they are printed. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "client/cli/cli.h"
#include "client/cli/seqwin.h"
#include "common/buf.h"
#include "common/clock.h"

#define PRODUCE_USAGE                                                          \
    "produce TOPIC [--key-separator SEP] [--partition P] [--acks 0|1|all]\n"   \
    "              [--report [--report-times]] [--linger-ms N]\n"              \
    "              [--batch-size N] [--no-idempotence]\n"                      \
    "  One record per stdin line; with --key-separator the text before the\n"  \
    "  first SEP is the key (lines without SEP have no key).\n"                \
    "  --report prints 'PARTITION OFFSET' or 'ERROR NAME' per line, in\n"      \
    "  input order; --report-times adds the time the answer came (ms since\n"  \
    "  the epoch), as reports wait for earlier lines. An ERROR whose NAME\n"   \
    "  is indefinite (REQUEST_TIMED_OUT, NETWORK, *_AFTER_APPEND, ...) may\n"  \
    "  have been written"

#define PRODUCE_READ_BYTES (256u * 1024)
#define PRODUCE_MAX_NAMED  10 /* failures named one by one on stderr */

static const struct args_spec produce_specs[] = {
    CLI_COMMON_SPECS,
    {"key-separator", 0, ARGS_VALUE, "SEP",
     "split each line into key SEP value"},
    {"partition", 0, ARGS_VALUE, "P", "write every record to partition P"},
    {"acks", 0, ARGS_VALUE, "0|1|all", "acknowledgement level (default all)"},
    {"report", 0, ARGS_FLAG, NULL, "print the partition and offset per line"},
    {"report-times", 0, ARGS_FLAG, NULL,
     "report: add the time each answer came (ms since the epoch)"},
    {"linger-ms", 0, ARGS_VALUE, "N", "wait up to N ms to fill a batch (5)"},
    {"batch-size", 0, ARGS_VALUE, "N", "batch size in bytes (64k)"},
    {"delivery-timeout-ms", 0, ARGS_VALUE, "N",
     "give up on a record after N ms (120000)"},
    {"no-idempotence", 0, ARGS_FLAG, NULL,
     "no producer id and sequence numbers: a retry may write twice"},
};

#define PRODUCE_NSPECS (sizeof(produce_specs) / sizeof(produce_specs[0]))

struct produce_run {
    const char *topic;
    int32_t partition; /* or WEIR_PARTITION_ANY */
    const char *sep;   /* key separator, or NULL */
    size_t sep_len;
    bool report;
    bool report_times;
    struct weir_producer *p;
    struct seqwin win;  /* reports in input order */
    struct weir_buf in; /* unread stdin bytes */
    size_t in_pos;
    bool eof;
    uint64_t records;
    uint64_t failed;
    uint64_t unknown; /* failed, but may have been written */
    char first_err[600];
};

static void produce_print_ready(struct produce_run *r)
{
    struct seqwin_slot s;

    while (seqwin_pop(&r->win, &s)) {
        if (!r->report) {
            continue;
        }
        if (s.err != 0) {
            (void)printf("ERROR %s", weir_err_name(s.err));
        } else {
            (void)printf("%" PRId32 " %" PRId64, s.partition, s.offset);
        }
        if (r->report_times) {
            (void)printf(" %" PRIu64, s.stamp);
        }
        (void)putchar('\n');
    }
}

/* A failure's code tells whether the record may be in the log (libweir
 * reports a definite code only when no attempt can have written it), so
 * --report prints the name alone and readers of the report (the chaos
 * checker) judge it by the error table. */
static void
produce_failed(struct produce_run *r, uint64_t seq, int err, const char *msg)
{
    bool unknown = !weir_err_definite(err);

    if (r->failed < PRODUCE_MAX_NAMED) {
        (void)fprintf(
            stderr,
            "weir: record %" PRIu64 " (line %" PRIu64 ") failed%s: %s: %s\n",
            seq, seq + 1, unknown ? " (it may have been written)" : "",
            weir_err_name(err), msg);
    }
    r->failed++;
    r->unknown += unknown;
}

static void produce_on_delivery(void *arg, const struct weir_delivery *d)
{
    struct produce_run *r = arg;
    uint64_t seq = (uint64_t)(uintptr_t)d->opaque;
    struct seqwin_slot *slot = seqwin_at(&r->win, seq);

    if (slot != NULL && r->report_times) {
        slot->stamp = (uint64_t)clock_wall_ms(clock_system());
    }
    if (d->error_code != 0) {
        produce_failed(r, seq, d->error_code, d->error_msg);
    }
    seqwin_complete(&r->win, seq, d->partition, d->offset, d->error_code);
    produce_print_ready(r);
}

/* First occurrence of sep in line (memmem is a GNU extension). */
static const char *
produce_find(const char *line, size_t len, const char *sep, size_t sep_len)
{
    const char *p = line;
    const char *end = line + len;

    while ((size_t)(end - p) >= sep_len &&
           (p = memchr(p, sep[0], (size_t)(end - p) - sep_len + 1)) != NULL) {
        if (memcmp(p, sep, sep_len) == 0) {
            return p;
        }
        p++;
    }
    return NULL;
}

static int produce_line(struct produce_run *r, const char *line, size_t len)
{
    const char *key = NULL;
    size_t key_len = 0;
    struct err_detail ed;
    uint64_t seq;
    int rv;

    if (r->sep != NULL && r->sep_len <= len) {
        const char *hit = produce_find(line, len, r->sep, r->sep_len);
        if (hit != NULL) {
            key = line;
            key_len = (size_t)(hit - line);
            line = hit + r->sep_len;
            len -= key_len + r->sep_len;
        }
    }
    /* the stamp is replaced by the answer's time; a record refused at
     * once keeps this one */
    if (seqwin_push(&r->win,
                    r->report_times ? (uint64_t)clock_wall_ms(clock_system())
                                    : 0,
                    &seq) != 0) {
        return cli_failf("out of memory");
    }
    r->records++;
    rv = weir_produce(r->p, r->topic, r->partition, key, key_len, line, len, -1,
                      (void *)(uintptr_t)seq, &ed);
    if (rv != 0) {
        produce_failed(r, seq, rv, ed.msg);
        seqwin_complete(&r->win, seq, -1, -1, rv);
        produce_print_ready(r);
    }
    return 0;
}

/* Produce every complete line in the input buffer (and, at end of input,
 * the last line even without a newline). */
static int produce_lines(struct produce_run *r)
{
    const char *base = (const char *)r->in.data;
    const char *nl;
    size_t left;

    for (;;) {
        left = r->in.len - r->in_pos;
        nl = left > 0 ? memchr(base + r->in_pos, '\n', left) : NULL;
        if (nl == NULL) {
            break;
        }
        if (produce_line(r, base + r->in_pos,
                         (size_t)(nl - (base + r->in_pos))) != 0) {
            return CLI_EXIT_FAIL;
        }
        r->in_pos = (size_t)(nl - base) + 1;
    }
    if (r->eof && left > 0) {
        if (produce_line(r, base + r->in_pos, left) != 0) {
            return CLI_EXIT_FAIL;
        }
        r->in_pos = r->in.len;
    }
    memmove(r->in.data, r->in.data + r->in_pos, r->in.len - r->in_pos);
    r->in.len -= r->in_pos;
    r->in_pos = 0;
    return 0;
}

static int produce_read(struct produce_run *r)
{
    ssize_t n;

    if (buf_reserve(&r->in, PRODUCE_READ_BYTES) != 0) {
        return cli_failf("out of memory");
    }
    n = read(STDIN_FILENO, r->in.data + r->in.len, PRODUCE_READ_BYTES);
    if (n < 0) {
        if (errno == EINTR || errno == EAGAIN) {
            return 0;
        }
        return cli_failf("cannot read stdin: %s", strerror(errno));
    }
    if (n == 0) {
        r->eof = true;
    }
    r->in.len += (size_t)n;
    return produce_lines(r);
}

/* Read stdin to the end while the producer sends, then flush. */
static int produce_loop(struct produce_run *r)
{
    struct pollfd pfd;
    struct err_detail ed;
    int rv;

    while (!r->eof && !cli_stop) {
        pfd.fd = STDIN_FILENO;
        pfd.events = POLLIN;
        pfd.revents = 0;
        (void)weir_producer_poll_fds(r->p, &pfd, 1, -1);
        if ((pfd.revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
            rv = produce_read(r);
            if (rv != 0) {
                return rv;
            }
        }
        (void)fflush(stdout);
    }
    rv = weir_producer_flush(r->p, -1, &ed);
    (void)fflush(stdout);
    if (rv != 0) {
        return cli_fail(&ed);
    }
    if (cli_stop && !r->eof) {
        return cli_failf("interrupted after %" PRIu64 " records", r->records);
    }
    if (r->failed > 0) {
        return cli_failf("%" PRIu64 " of %" PRIu64 " records failed (%" PRIu64
                         " of them may have been written)",
                         r->failed, r->records, r->unknown);
    }
    return CLI_EXIT_OK;
}

static int produce_options(const struct args *a,
                           struct produce_run *r,
                           struct weir_producer_config *pc)
{
    int64_t v;
    int rv;

    if (a->n_pos != 1) {
        return cli_usage("produce", a->n_pos == 0
                                        ? "produce needs a topic name"
                                        : "produce takes one topic name");
    }
    r->topic = a->pos[0];
    if ((rv = cli_check_topic("produce", r->topic)) != 0) {
        return rv;
    }
    r->sep = args_get(a, "key-separator");
    if (r->sep != NULL && r->sep[0] == '\0') {
        return cli_usage("produce", "--key-separator must not be empty");
    }
    r->sep_len = r->sep != NULL ? strlen(r->sep) : 0;
    r->report = args_has(a, "report");
    r->report_times = args_has(a, "report-times");
    if (r->report_times && !r->report) {
        return cli_usage("produce", "--report-times needs --report");
    }
    if ((rv = cli_opt_int("produce", a, "partition", 0, INT32_MAX,
                          WEIR_PARTITION_ANY, &v)) != 0) {
        return rv;
    }
    r->partition = (int32_t)v;
    weir_producer_config_init(pc);
    if ((rv = cli_opt_acks("produce", a, -1, &pc->acks)) != 0 ||
        (rv = cli_opt_int("produce", a, "linger-ms", 0, 600000, pc->linger_ms,
                          &v)) != 0) {
        return rv;
    }
    pc->linger_ms = (uint32_t)v;
    if ((rv = cli_opt_int("produce", a, "batch-size", 1, 4 * 1024 * 1024,
                          pc->batch_size_bytes, &v)) != 0) {
        return rv;
    }
    pc->batch_size_bytes = (uint32_t)v;
    if ((rv = cli_opt_int("produce", a, "delivery-timeout-ms", 1, INT32_MAX,
                          pc->delivery_timeout_ms, &v)) != 0) {
        return rv;
    }
    pc->delivery_timeout_ms = (uint32_t)v;
    pc->idempotence = !args_has(a, "no-idempotence");
    return 0;
}

int cmd_produce(int argc, char **argv, const char *global_bs)
{
    struct produce_run r;
    struct weir_producer_config pc;
    struct weir_client *c = NULL;
    struct err_detail ed;
    struct args a;
    int32_t nparts;
    bool done;
    int rv;

    rv = cli_parse("produce", PRODUCE_USAGE, produce_specs, PRODUCE_NSPECS,
                   argc, argv, &a, &done);
    if (done) {
        return rv;
    }
    memset(&r, 0, sizeof(r));
    rv = produce_options(&a, &r, &pc);
    if (rv != 0) {
        return rv;
    }
    rv = cli_client_open(cli_bootstrap(&a, global_bs), &c);
    if (rv != 0) {
        return rv;
    }
    /* Fail before reading any input if the topic or partition is wrong. */
    if (weir_client_partition_count(c, r.topic, &nparts, &ed) != 0) {
        rv = cli_fail(&ed);
        goto out;
    }
    if (r.partition >= nparts) {
        rv = cli_failf("topic '%s' has no partition %d (it has %d)", r.topic,
                       r.partition, nparts);
        goto out;
    }
    pc.on_delivery = produce_on_delivery;
    pc.cb_arg = &r;
    if (weir_producer_new(c, &pc, &r.p, &ed) != 0) {
        rv = cli_fail(&ed);
        goto out;
    }
    seqwin_init(&r.win);
    buf_init(&r.in);
    cli_signals_install();
    rv = produce_loop(&r);
    weir_producer_free(r.p);
    produce_print_ready(&r);
    buf_fini(&r.in);
    seqwin_fini(&r.win);
out:
    weir_client_free(c);
    return rv;
}
