/* SPDX-License-Identifier: Apache-2.0 */
/* A fake broker for client tests: one thread, loopback TCP, the real
 * frame and envelope codecs, topics held in memory. It serves Metadata,
 * CreateTopics, DeleteTopics, Produce (offsets assigned by patching batch
 * bases; idempotent batches deduplicated), InitProducerId, Fetch (whole batches
 * from the one holding fetch_offset, long poll up to max_wait_ms) and
 * ListOffsets, and the group calls through a small in-memory coordinator
 * (test_client_cgrp_fake.h; FindCoordinator names this broker). Knobs
 * inject faults. Locality: its own thread; the knob
 * functions lock. */
#ifndef TESTS_UNIT_TEST_CLIENT_FAKE_BROKER_H
#define TESTS_UNIT_TEST_CLIENT_FAKE_BROKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fake_broker;

/* Listen on 127.0.0.1:port (0 = any free port) and start serving.
 * Returns 0 or -1. */
int fake_broker_start(uint16_t port, struct fake_broker **out);
uint16_t fake_broker_port(const struct fake_broker *fb);
/* Stop the thread, close everything, free. */
void fake_broker_stop(struct fake_broker *fb);

/* Create a topic directly (no request). Returns 0 or -1. */
int fake_broker_create_topic(struct fake_broker *fb,
                             const char *name,
                             int32_t partitions);
/* The next `count` produce partition results fail with `code`. */
void fake_broker_fail_produce(struct fake_broker *fb, int code, int count);
/* Add up to this many bytes of the following batch to every non-empty
 * fetch payload, as a size limit would cut it: a partial trailing batch
 * (0 = off). */
void fake_broker_truncate_fetch(struct fake_broker *fb, size_t bytes);
/* Records stored in a partition (its end offset). */
int64_t fake_broker_end_offset(struct fake_broker *fb,
                               const char *topic,
                               int32_t partition);
/* Produce requests received so far. */
uint64_t fake_broker_produce_requests(struct fake_broker *fb);

/* Idempotent producers: InitProducerId gives 0, 1, 2, ... with epoch 0,
 * and produce checks sequences as the broker does (duplicates of the last
 * five batches per producer answered DUPLICATE_SEQUENCE with the original
 * offset, gaps OUT_OF_ORDER_SEQUENCE, unknown producers not at 0
 * UNKNOWN_PRODUCER_ID, old epochs INVALID_PRODUCER_EPOCH). */
/* The next `count` produce requests are applied, then the connection is
 * closed instead of answering (a reply lost on the way). */
void fake_broker_drop_produce_replies(struct fake_broker *fb, int count);
/* Answer InitProducerId with UNSUPPORTED_API from now on. */
void fake_broker_refuse_producer_ids(struct fake_broker *fb);
/* Forget every producer's sequences (as expiry would). */
void fake_broker_forget_producers(struct fake_broker *fb);
/* The next `count` produce results whose payload holds the batch (epoch,
 * base_sequence) of an idempotent producer fail with `code`, the whole
 * payload (count 0: off). */
void fake_broker_fail_batch(struct fake_broker *fb,
                            int code,
                            int16_t epoch,
                            int32_t base_sequence,
                            int count);
/* The epoch a partition knows for a producer id, -1 when unknown. */
int fake_broker_producer_epoch(struct fake_broker *fb,
                               const char *topic,
                               int32_t partition,
                               int64_t producer_id);
/* InitProducerId requests received so far. */
uint64_t fake_broker_producer_id_requests(struct fake_broker *fb);

/* Group coordinator: a group's committed offset (-1 none) and its
 * generation (-1 when the group does not exist). */
int64_t fake_broker_committed(struct fake_broker *fb,
                              const char *group,
                              const char *topic,
                              int32_t partition);
int32_t fake_broker_group_generation(struct fake_broker *fb, const char *group);

/* SASL/SCRAM (test_client_auth_fake.h): require a login on new
 * connections; add a user's credential (0 or -1); logins that succeeded;
 * ACL rules held (AlterUsers, DescribeUsers and the ACL calls are served
 * from the same store). */
void fake_broker_require_sasl(struct fake_broker *fb, bool on);
int fake_broker_add_user(struct fake_broker *fb,
                         const char *mechanism,
                         const char *user,
                         const char *password);
uint64_t fake_broker_logins(struct fake_broker *fb);
size_t fake_broker_acl_count(struct fake_broker *fb);

#endif /* TESTS_UNIT_TEST_CLIENT_FAKE_BROKER_H */
