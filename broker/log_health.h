/* SPDX-License-Identifier: Apache-2.0 */
/* Partition logs that fail (the broker side of docs/storage.md, Offline
 * logs): when a log goes offline the writes waiting on it fail with an
 * indefinite error and cluster heartbeats list it (broker/cluster); a
 * timer brings offline logs back once the disk has room and, in a
 * cluster, once this broker does not lead them (a corrupt one also only
 * once it is out of the ISR and another broker leads it, since the records
 * it cuts must come from there); another timer runs the CRC scrub.
 * Locality: broker loop thread. */
#ifndef BROKER_LOG_HEALTH_H
#define BROKER_LOG_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

struct broker;
struct plog;

/* Timers and the offline hook of every log of b->logs; b->health.
 * Errors: WEIR_ENOMEM. */
WEIR_MUST_CHECK int log_health_open(struct broker *b, struct err_detail *ed);
/* NULL-safe. */
void log_health_close(struct broker *b);

/* May the offline log of topic/partition, offline for offline_ms, come
 * back now? False with the reason in why (e.g. "leads it: waiting for the
 * controller to move the leadership"). */
bool log_health_may_recover(const struct broker *b,
                            const char *topic,
                            int32_t partition,
                            const struct plog *log,
                            uint64_t free_bytes,
                            uint64_t offline_ms,
                            char *why,
                            size_t why_cap);

#endif /* BROKER_LOG_HEALTH_H */
