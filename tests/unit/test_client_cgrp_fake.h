/* SPDX-License-Identifier: Apache-2.0 */
/* The fake broker's group coordinator: one process, groups in memory,
 * the proto contract kept small (first join round waits for every known
 * member or the rebalance timeout; the leader's SyncGroup completes it;
 * heartbeats answer REBALANCE_IN_PROGRESS meanwhile; silent members are
 * evicted after their session timeout). Requests that must wait (JoinGroup,
 * SyncGroup) are parked by the broker; the coordinator answers them later
 * through the send function, naming the connection.
 * Locality: the fake broker's thread (under its lock). */
#ifndef TESTS_UNIT_TEST_CLIENT_CGRP_FAKE_H
#define TESTS_UNIT_TEST_CLIENT_CGRP_FAKE_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/weir.pb-c.h"

struct fbg;

/* Send r on connection ci; parked: it answers that connection's parked
 * request (the broker resumes reading it). */
typedef void
fbg_send_fn(void *ctx, int ci, const Weir__Response *r, bool parked);

struct fbg *fbg_new(const char *host, uint16_t port);
void fbg_free(struct fbg *g);

/* A group request from connection ci. Returns false when it is parked
 * (answered later through fn). */
bool fbg_handle(struct fbg *g,
                int ci,
                const Weir__Request *q,
                uint64_t now,
                fbg_send_fn *fn,
                void *ctx);
/* Timers: rebalance deadlines and session expiry. */
void fbg_tick(struct fbg *g, uint64_t now, fbg_send_fn *fn, void *ctx);
/* Connection ci closed: forget requests parked on it. */
void fbg_conn_closed(struct fbg *g, int ci);

/* For tests: the committed offset, -1 when none; generation, -1 when
 * the group does not exist. */
int64_t fbg_committed(struct fbg *g,
                      const char *group,
                      const char *topic,
                      int32_t partition);
int32_t fbg_generation(struct fbg *g, const char *group);

#endif /* TESTS_UNIT_TEST_CLIENT_CGRP_FAKE_H */
