/* SPDX-License-Identifier: Apache-2.0 */
/* Clocks are inputs: code that needs time takes a struct clock, so tests can
 * move time by hand. now_ms is monotonic; wall_ms is ms since the epoch. */
#ifndef COMMON_CLOCK_H
#define COMMON_CLOCK_H

#include <stdint.h>

struct clock {
    uint64_t (*now_ms)(void *ctx); /* monotonic */
    int64_t (*wall_ms)(void *ctx); /* ms since 1970-01-01 UTC */
    void *ctx;
};

/* The process clocks (CLOCK_MONOTONIC, CLOCK_REALTIME). */
const struct clock *clock_system(void);

static inline uint64_t clock_now_ms(const struct clock *c)
{
    return c->now_ms(c->ctx);
}
static inline int64_t clock_wall_ms(const struct clock *c)
{
    return c->wall_ms(c->ctx);
}

/* Microsecond monotonic time for latency measurement. */
uint64_t clock_mono_us(void);

#endif /* COMMON_CLOCK_H */
