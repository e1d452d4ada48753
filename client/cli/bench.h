/* SPDX-License-Identifier: Apache-2.0 */
/* weir bench internals: options, running statistics, and the two runs.
 * Locality: the main thread. */
#ifndef CLIENT_CLI_BENCH_H
#define CLIENT_CLI_BENCH_H

#include <stdbool.h>
#include <stdint.h>

#include "client/cli/hist.h"
#include "client/weir.h"

#define BENCH_MAGIC       "WEIRBNCH"
#define BENCH_MAGIC_BYTES 8
#define BENCH_STAMP_BYTES 16 /* magic + u64be send time, µs since epoch */

struct bench_opts {
    bool produce;
    const char *topic;
    int64_t records;
    int64_t record_size;
    int64_t rate;       /* records/s, 0 = unlimited */
    int64_t partitions; /* create with this many if missing, 0 = never */
    int64_t timeout_ms; /* consume: idle limit */
    bool from_latest;   /* consume */
    bool json;
    struct weir_producer_config pc;
};

struct bench_stats {
    const char *mode; /* "produce" or "consume" */
    const char *topic;
    const char *lat_kind; /* "ack", "end-to-end" or "fetch" */
    size_t record_size;   /* produce: value size; consume: mean */
    uint64_t records;     /* acknowledged or received */
    uint64_t bytes;       /* value bytes of those records */
    uint64_t errors;
    uint64_t unacked;  /* produce: sent, neither acknowledged nor failed
                          when the run ended (interrupted) */
    uint64_t start_us; /* monotonic */
    uint64_t end_us;
    uint64_t last_progress_us;
    uint64_t last_progress_records;
    uint64_t next_progress_us;
    struct hist lat; /* µs */
};

/* Wall-clock µs since the epoch (for stamps compared across processes). */
uint64_t bench_wall_us(void);
/* A progress line on stderr once a second (final: only reset). */
void bench_progress(struct bench_stats *s, bool final);
void bench_summary(const struct bench_stats *s, bool json);

int bench_produce(struct weir_client *c, struct bench_opts *o);
int bench_consume(struct weir_client *c, const struct bench_opts *o);

#endif /* CLIENT_CLI_BENCH_H */
