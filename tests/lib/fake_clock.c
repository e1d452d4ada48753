/* SPDX-License-Identifier: Apache-2.0 */
#include "tests/lib/fake_clock.h"

static uint64_t fake_clock_now(void *ctx)
{
    return ((const struct fake_clock *)ctx)->now_ms;
}

static int64_t fake_clock_wall(void *ctx)
{
    return ((const struct fake_clock *)ctx)->wall_ms;
}

void fake_clock_init(struct fake_clock *fc, uint64_t now_ms, int64_t wall_ms)
{
    fc->clock.now_ms = fake_clock_now;
    fc->clock.wall_ms = fake_clock_wall;
    fc->clock.ctx = fc;
    fc->now_ms = now_ms;
    fc->wall_ms = wall_ms;
}

void fake_clock_advance(struct fake_clock *fc, uint64_t ms)
{
    fc->now_ms += ms;
    fc->wall_ms += (int64_t)ms;
}
