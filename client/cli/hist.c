/* SPDX-License-Identifier: Apache-2.0 */
#include "client/cli/hist.h"

#include <math.h>
#include <string.h>

void hist_init(struct hist *h)
{
    memset(h, 0, sizeof(*h));
    h->min = UINT64_MAX;
}

uint32_t hist_index(uint64_t v)
{
    uint32_t e;

    if (v < HIST_LINEAR) {
        return (uint32_t)v;
    }
    /* v in [2^e, 2^(e+1)), e >= HIST_SUB_BITS + 1: keep the top
     * HIST_SUB_BITS + 1 bits, whose leading one is implied. */
    e = 63u - (uint32_t)__builtin_clzll(v);
    return HIST_LINEAR + (e - HIST_SUB_BITS - 1) * (1u << HIST_SUB_BITS) +
           (uint32_t)((v >> (e - HIST_SUB_BITS)) & ((1u << HIST_SUB_BITS) - 1));
}

uint64_t hist_bucket_low(uint32_t idx)
{
    uint32_t e;
    uint32_t sub;

    if (idx < HIST_LINEAR) {
        return idx;
    }
    e = (idx - HIST_LINEAR) / (1u << HIST_SUB_BITS) + HIST_SUB_BITS + 1;
    sub = (idx - HIST_LINEAR) % (1u << HIST_SUB_BITS);
    return ((uint64_t)(1u << HIST_SUB_BITS) + sub) << (e - HIST_SUB_BITS);
}

uint64_t hist_bucket_high(uint32_t idx)
{
    uint32_t e;

    if (idx < HIST_LINEAR) {
        return idx;
    }
    e = (idx - HIST_LINEAR) / (1u << HIST_SUB_BITS) + HIST_SUB_BITS + 1;
    return hist_bucket_low(idx) + ((uint64_t)1 << (e - HIST_SUB_BITS)) - 1;
}

void hist_record(struct hist *h, uint64_t v)
{
    h->counts[hist_index(v)]++;
    h->total++;
    h->sum += (long double)v;
    if (v < h->min) {
        h->min = v;
    }
    if (v > h->max) {
        h->max = v;
    }
}

uint64_t hist_percentile(const struct hist *h, double pct)
{
    uint64_t rank;
    uint64_t seen = 0;
    uint32_t i;

    if (h->total == 0) {
        return 0;
    }
    if (pct <= 0.0) {
        return h->min;
    }
    /* the epsilon keeps 99.9% of 1000 at rank 999 despite rounding */
    rank = (uint64_t)ceil(pct / 100.0 * (double)h->total - 1e-9);
    if (rank == 0) {
        rank = 1;
    }
    if (rank >= h->total) {
        return h->max;
    }
    for (i = 0; i < HIST_BUCKETS; i++) {
        seen += h->counts[i];
        if (seen >= rank) {
            uint64_t v = hist_bucket_high(i);
            return v > h->max ? h->max : v;
        }
    }
    return h->max;
}

double hist_mean(const struct hist *h)
{
    return h->total == 0 ? 0.0 : (double)(h->sum / (long double)h->total);
}
