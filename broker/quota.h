/* SPDX-License-Identifier: Apache-2.0 */
/* Byte-rate quotas per client: a token bucket per key (the TLS principal,
 * else the client id) refilled at `rate` bytes a second and holding at
 * most one second of it. A request that takes the bucket below zero is
 * answered late by the time the bucket needs to come back to zero: the
 * client is slowed to the rate, and is told by how much (throttle_time_ms
 * in the response). Pure: time comes in as an argument.
 * Locality: the broker loop thread. */
#ifndef BROKER_QUOTA_H
#define BROKER_QUOTA_H

#include <stdint.h>

#include "common/err.h"

#define QUOTA_MAX_THROTTLE_MS 30000u /* one answer is never held longer */
#define QUOTA_MAX_KEYS        10000u /* then idle buckets are dropped */

struct quota;

/* rate: bytes a second, > 0. Errors: WEIR_ENOMEM. */
WEIR_MUST_CHECK int quota_new(uint64_t rate, struct quota **out);
void quota_free(struct quota *q);

/* Charge `bytes` to `key` at `now_ms`; returns how long to hold the
 * answer (0: not throttled), at most QUOTA_MAX_THROTTLE_MS. A key that
 * cannot be tracked (out of memory) is not throttled. */
uint32_t
quota_charge(struct quota *q, const char *key, uint64_t bytes, uint64_t now_ms);

/* Keys tracked now (for tests and logs). */
uint32_t quota_keys(const struct quota *q);

#endif /* BROKER_QUOTA_H */
