/* SPDX-License-Identifier: Apache-2.0 */
#include "common/clock.h"

#include <time.h>

static uint64_t clock_sys_now_ms(void *ctx)
{
    struct timespec ts;

    (void)ctx;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int64_t clock_sys_wall_ms(void *ctx)
{
    struct timespec ts;

    (void)ctx;
    (void)clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const struct clock clock_sys = {clock_sys_now_ms, clock_sys_wall_ms,
                                       NULL};

const struct clock *clock_system(void)
{
    return &clock_sys;
}

uint64_t clock_mono_us(void)
{
    struct timespec ts;

    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}
