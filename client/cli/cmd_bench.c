/* SPDX-License-Identifier: Apache-2.0 */
/* weir bench produce|consume: throughput and latency. Produced values
 * start with "WEIRBNCH" and the send time (µs since the epoch, big-endian)
 * when they are at least 16 bytes, so a consume bench running alongside
 * measures end-to-end latency; otherwise it measures fetch round trips. */
#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "client/cli/bench.h"
#include "client/cli/cli.h"
#include "common/mem.h"

#define BENCH_USAGE                                                            \
    "bench produce|consume --topic T [--records N] [--record-size B]\n"        \
    "            [--rate R] [--acks 0|1|all] [--partitions P] [--linger-ms "   \
    "N]\n"                                                                     \
    "            [--batch-size N] [--from earliest|latest] [--timeout-ms T]\n" \
    "            [--json] [--no-idempotence]\n"                                \
    "  Progress every second on stderr; a summary (records/s, MB/s with\n"     \
    "  MB = 10^6 bytes of values, latency percentiles in ms) on stdout.\n"     \
    "  produce: send-to-ack latency; consume: end-to-end latency when the\n"   \
    "  values carry a send time (written by bench produce), else fetch\n"      \
    "  round-trip latency. consume stops after N records or T ms idle."

static const struct args_spec bench_specs[] = {
    CLI_COMMON_SPECS,
    {"topic", 0, ARGS_VALUE, "T", "topic to use"},
    {"records", 0, ARGS_VALUE, "N", "records to send or read (1000000)"},
    {"record-size", 0, ARGS_VALUE, "B", "value bytes per record (100)"},
    {"rate", 0, ARGS_VALUE, "R", "records per second, 0 = unlimited (0)"},
    {"acks", 0, ARGS_VALUE, "0|1|all", "acknowledgement level (all)"},
    {"partitions", 0, ARGS_VALUE, "P",
     "create the topic with P partitions if missing"},
    {"linger-ms", 0, ARGS_VALUE, "N", "producer linger (5)"},
    {"batch-size", 0, ARGS_VALUE, "N", "producer batch size (64k)"},
    {"from", 0, ARGS_VALUE, "WHERE", "consume: earliest (default) or latest"},
    {"timeout-ms", 0, ARGS_VALUE, "T", "consume: stop after T ms idle (10000)"},
    {"json", 0, ARGS_FLAG, NULL, "print the summary as one JSON line"},
    {"no-idempotence", 0, ARGS_FLAG, NULL,
     "produce: no producer id and sequence numbers"},
};

#define BENCH_NSPECS (sizeof(bench_specs) / sizeof(bench_specs[0]))

uint64_t bench_wall_us(void)
{
    struct timespec ts;

    (void)clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void bench_progress(struct bench_stats *s, bool final)
{
    uint64_t now = clock_mono_us();
    double secs;
    double rate;

    if (!final && now < s->next_progress_us) {
        return;
    }
    secs = (double)(now - s->last_progress_us) / 1e6;
    rate =
        secs > 0 ? (double)(s->records - s->last_progress_records) / secs : 0.0;
    if (!final) {
        (void)fprintf(stderr,
                      "bench %s: %" PRIu64 " records, %.0f records/s, "
                      "%.2f MB/s, p99 %.2f ms, max %.2f ms\n",
                      s->mode, s->records, rate,
                      s->records > 0
                          ? rate * (double)s->bytes / (double)s->records / 1e6
                          : 0.0,
                      (double)hist_percentile(&s->lat, 99.0) / 1000.0,
                      (double)s->lat.max / 1000.0);
    }
    s->last_progress_us = now;
    s->last_progress_records = s->records;
    s->next_progress_us = now + 1000000;
}

void bench_summary(const struct bench_stats *s, bool json)
{
    double secs = (double)(s->end_us - s->start_us) / 1e6;
    double rps = secs > 0 ? (double)s->records / secs : 0.0;
    double mbps = secs > 0 ? (double)s->bytes / secs / 1e6 : 0.0;
    double p50 = (double)hist_percentile(&s->lat, 50.0) / 1000.0;
    double p99 = (double)hist_percentile(&s->lat, 99.0) / 1000.0;
    double p999 = (double)hist_percentile(&s->lat, 99.9) / 1000.0;
    double max = (double)s->lat.max / 1000.0;

    if (json) {
        (void)printf("{\"bench\":\"%s\",\"topic\":\"%s\",\"records\":%" PRIu64
                     ",\"errors\":%" PRIu64 ",\"unacknowledged\":%" PRIu64
                     ",\"record_size\":%zu,"
                     "\"seconds\":%.3f,\"records_per_sec\":%.1f,"
                     "\"mb_per_sec\":%.3f,\"latency\":\"%s\","
                     "\"latency_count\":%" PRIu64 ",\"p50_ms\":%.3f,"
                     "\"p99_ms\":%.3f,\"p999_ms\":%.3f,\"max_ms\":%.3f}\n",
                     s->mode, s->topic, s->records, s->errors, s->unacked,
                     s->record_size, secs, rps, mbps, s->lat_kind, s->lat.total,
                     p50, p99, p999, max);
        return;
    }
    (void)printf("%s: %" PRIu64 " records (%zu B values) in %.2f s: "
                 "%.1f records/s, %.2f MB/s",
                 s->mode, s->records, s->record_size, secs, rps, mbps);
    if (s->errors > 0) {
        (void)printf(", %" PRIu64 " errors", s->errors);
    }
    if (s->unacked > 0) {
        (void)printf(", %" PRIu64 " unacknowledged", s->unacked);
    }
    (void)printf("\n%s latency ms: p50 %.3f  p99 %.3f  p99.9 %.3f  max %.3f\n",
                 s->lat_kind, p50, p99, p999, max);
}

static int bench_options(const struct args *a, struct bench_opts *o)
{
    const char *from = args_get(a, "from");
    int64_t v;
    int rv;

    if (a->n_pos != 1 || (strcmp(a->pos[0], "produce") != 0 &&
                          strcmp(a->pos[0], "consume") != 0)) {
        return cli_usage("bench", "bench needs 'produce' or 'consume'");
    }
    o->produce = strcmp(a->pos[0], "produce") == 0;
    o->topic = args_get(a, "topic");
    if (o->topic == NULL) {
        return cli_usage("bench", "bench needs --topic T");
    }
    if ((rv = cli_check_topic("bench", o->topic)) != 0) {
        return rv;
    }
    if ((rv = cli_opt_int("bench", a, "records", 1, INT64_MAX, 1000000,
                          &o->records)) != 0 ||
        (rv = cli_opt_int("bench", a, "record-size", 0, 1024 * 1024, 100,
                          &o->record_size)) != 0 ||
        (rv = cli_opt_int("bench", a, "rate", 0, INT64_MAX, 0, &o->rate)) !=
            0 ||
        (rv = cli_opt_int("bench", a, "partitions", 1, 100000, 0,
                          &o->partitions)) != 0 ||
        (rv = cli_opt_int("bench", a, "timeout-ms", 1, INT32_MAX, 10000,
                          &o->timeout_ms)) != 0 ||
        (rv = cli_opt_acks("bench", a, -1, &o->pc.acks)) != 0) {
        return rv;
    }
    if ((rv = cli_opt_int("bench", a, "linger-ms", 0, 600000, o->pc.linger_ms,
                          &v)) != 0) {
        return rv;
    }
    o->pc.linger_ms = (uint32_t)v;
    if ((rv = cli_opt_int("bench", a, "batch-size", 1, 4 * 1024 * 1024,
                          o->pc.batch_size_bytes, &v)) != 0) {
        return rv;
    }
    o->pc.batch_size_bytes = (uint32_t)v;
    if (from != NULL && strcmp(from, "earliest") != 0 &&
        strcmp(from, "latest") != 0) {
        return cli_usage("bench", "--from must be earliest or latest");
    }
    o->from_latest = from != NULL && strcmp(from, "latest") == 0;
    o->json = args_has(a, "json");
    o->pc.idempotence = !args_has(a, "no-idempotence");
    return 0;
}

/* Create the topic when asked to and it is missing. */
static int bench_topic(struct weir_client *c,
                       const struct bench_opts *o,
                       struct err_detail *ed)
{
    struct weir_new_topic t;
    int32_t n;
    int rv = weir_client_partition_count(c, o->topic, &n, ed);

    if (rv != WEIR_EUNKNOWN_TOPIC_OR_PARTITION || o->partitions == 0) {
        return rv;
    }
    memset(&t, 0, sizeof(t));
    t.name = o->topic;
    t.partitions = (int32_t)o->partitions;
    rv = weir_admin_create_topic(c, &t, ed);
    if (rv != 0 && rv != WEIR_ETOPIC_EXISTS) {
        return rv;
    }
    return weir_client_partition_count(c, o->topic, &n, ed);
}

int cmd_bench(int argc, char **argv, const char *global_bs)
{
    struct bench_opts o;
    struct weir_client *c = NULL;
    struct err_detail ed;
    struct args a;
    bool done;
    int rv;

    rv = cli_parse("bench", BENCH_USAGE, bench_specs, BENCH_NSPECS, argc, argv,
                   &a, &done);
    if (done) {
        return rv;
    }
    memset(&o, 0, sizeof(o));
    weir_producer_config_init(&o.pc);
    rv = bench_options(&a, &o);
    if (rv != 0) {
        return rv;
    }
    rv = cli_client_open(cli_bootstrap(&a, global_bs), &c);
    if (rv != 0) {
        return rv;
    }
    if (bench_topic(c, &o, &ed) != 0) {
        rv = cli_fail(&ed);
        goto out;
    }
    cli_signals_install();
    rv = o.produce ? bench_produce(c, &o) : bench_consume(c, &o);
out:
    weir_client_free(c);
    return rv;
}
