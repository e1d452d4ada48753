/* SPDX-License-Identifier: Apache-2.0 */
/* Replica fetcher: one connection per leader broker (cluster_conn RPC over
 * a bufferevent). It long-polls Fetch with replica_id = this broker's id
 * for every partition this broker follows from that leader whose follower
 * core allows a fetch now (repl_follower_next_fetch: not in backoff, not
 * stopped, everything below the fetch offset durable), and hands each
 * partition's answer to that core (repl_io_follow_answer), which appends,
 * flushes, truncates or restarts the log. It makes no decision itself.
 * Locality: broker loop thread only. */
#ifndef BROKER_REPLICA_FETCHER_H
#define BROKER_REPLICA_FETCHER_H

#include <stdint.h>

#include "common/err.h"

struct repl_io;
struct fetcher;

/* Errors: WEIR_ENOMEM. */
WEIR_MUST_CHECK int
fetcher_new(struct repl_io *io, int32_t leader, struct fetcher **out);
/* Drops the connection; a reply in flight is forgotten. NULL: no-op. */
void fetcher_free(struct fetcher *f);
int32_t fetcher_leader(const struct fetcher *f);
/* The set of partitions or the leader's address may have changed: fetch
 * soon (no-op while a fetch is in flight; the next one sees the change). */
void fetcher_kick(struct fetcher *f);

#endif /* BROKER_REPLICA_FETCHER_H */
