/* SPDX-License-Identifier: Apache-2.0 */
/* Latency histogram with log-linear buckets, in the manner of
 * HdrHistogram: values below 256 are exact, larger ones fall into 128
 * buckets per power of two, so any value is off by less than 1/128
 * (0.8%) of itself, over the whole uint64 range, in fixed memory (60 KiB).
 * Units are the caller's (the CLI records microseconds). Pure.
 * Locality: one thread per histogram. */
#ifndef CLIENT_CLI_HIST_H
#define CLIENT_CLI_HIST_H

#include <stdint.h>

#define HIST_SUB_BITS 7                           /* 128 buckets per octave */
#define HIST_LINEAR   (1u << (HIST_SUB_BITS + 1)) /* 256 exact values */
#define HIST_BUCKETS                                                           \
    (HIST_LINEAR + (64 - HIST_SUB_BITS - 1) * (1u << HIST_SUB_BITS))

struct hist {
    uint64_t counts[HIST_BUCKETS];
    uint64_t total;
    uint64_t min; /* exact */
    uint64_t max; /* exact */
    long double sum;
};

void hist_init(struct hist *h);
void hist_record(struct hist *h, uint64_t v);
/* Smallest recorded-bucket value v such that pct percent of values are
 * <= v (within the bucket resolution, never above max). 0 when empty. */
uint64_t hist_percentile(const struct hist *h, double pct);
double hist_mean(const struct hist *h);

/* Bucket index of a value and the range a bucket covers (for tests). */
uint32_t hist_index(uint64_t v);
uint64_t hist_bucket_low(uint32_t idx);
uint64_t hist_bucket_high(uint32_t idx);

#endif /* CLIENT_CLI_HIST_H */
