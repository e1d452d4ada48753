/* SPDX-License-Identifier: Apache-2.0 */
/* A struct clock that moves only when a test moves it.
 * Locality: one test thread. */
#ifndef TESTS_LIB_FAKE_CLOCK_H
#define TESTS_LIB_FAKE_CLOCK_H

#include <stdint.h>

#include "common/clock.h"

struct fake_clock {
    struct clock clock; /* hand &fc->clock to the code under test */
    uint64_t now_ms;    /* monotonic */
    int64_t wall_ms;    /* ms since the epoch */
};

void fake_clock_init(struct fake_clock *fc, uint64_t now_ms, int64_t wall_ms);
/* Move both clocks forward by ms. */
void fake_clock_advance(struct fake_clock *fc, uint64_t ms);

#endif /* TESTS_LIB_FAKE_CLOCK_H */
