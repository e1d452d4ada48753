/* SPDX-License-Identifier: Apache-2.0 */
/* Idempotent producer state of every partition a broker holds, joined to
 * the partition logs: built by scanning the tail of each log when the
 * broker starts (or on first use), checked and recorded around each
 * produce append, and swept for idle producers.
 * The rebuild reads the batch headers of the segments that may hold a
 * batch newer than the producer-id expiry (by segment max timestamp; at
 * least the active segment): a producer seen only before that would be
 * expired anyway.
 * Locality: broker loop thread only. */
#ifndef BROKER_IDEM_IDEM_IO_H
#define BROKER_IDEM_IDEM_IO_H

#include <stdint.h>

#include "broker/idem/idem_core.h"
#include "broker/storage/logmgr.h"
#include "broker/storage/plog.h"

/* Kafka's producer.id.expiration.ms: one day. */
#define IDEM_IO_DEFAULT_EXPIRY_MS (24LL * 3600 * 1000)

struct idem_io; /* opaque */

/* Errors: WEIR_ENOMEM. */
WEIR_MUST_CHECK int idem_io_new(int64_t expiry_ms, struct idem_io **out);
void idem_io_free(struct idem_io *r);

/* Build the state of every partition of m (broker start). A partition
 * whose log cannot be scanned is traced and left to be built on first
 * use, which then reports the error. Returns producers found. */
uint64_t idem_io_load_all(struct idem_io *r, struct logmgr *m, int64_t wall_ms);

/* Forget the state of every partition of topic (deleted). */
void idem_io_drop_topic(struct idem_io *r, const char *topic);
/* Forget one partition's state, so the next use rebuilds it from the
 * log (after the log was truncated). */
void idem_io_invalidate(struct idem_io *r,
                        const char *topic,
                        int32_t partition);
/* Forget idle producers everywhere; returns how many. */
uint64_t idem_io_expire(struct idem_io *r, int64_t wall_ms);

/* One partition's payload between check and append. Embedded by the
 * caller; idem_io_payload_fini after. */
struct idem_io_payload {
    struct idem *state; /* borrowed; NULL when no batch is idempotent */
    struct batch_header *hs;
    size_t n;
    struct batch_header inline_hs[8];
    struct idem_check_result res;
};

/* Check the payload of a produce to (topic, partition) with log `log`,
 * building the partition's state if needed. A payload whose headers do
 * not decode is passed (res.verdict APPEND, state NULL): the append
 * refuses it with the precise reason. Returns 0 with p->res telling
 * what to do (ed explains refusals), or WEIR_ENOMEM / the rebuild's
 * error (WEIR_EIO, WEIR_ECORRUPT). */
WEIR_MUST_CHECK int idem_io_check(struct idem_io *r,
                                  const char *topic,
                                  int32_t partition,
                                  struct plog *log,
                                  int64_t wall_ms,
                                  const uint8_t *data,
                                  size_t len,
                                  struct idem_io_payload *p,
                                  struct err_detail *ed);
/* The append succeeded with its first batch at base_offset. */
void idem_io_appended(struct idem_io_payload *p, int64_t base_offset);
/* The append failed after the log had reached end_before: whatever part of
 * it did reach the log is replayed into the state (or, if that fails, the
 * state is dropped to be rebuilt). */
void idem_io_append_failed(struct idem_io *r,
                           struct idem_io_payload *p,
                           const char *topic,
                           int32_t partition,
                           struct plog *log,
                           int64_t end_before);
void idem_io_payload_fini(struct idem_io_payload *p);

#endif /* BROKER_IDEM_IDEM_IO_H */
