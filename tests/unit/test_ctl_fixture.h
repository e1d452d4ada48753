/* SPDX-License-Identifier: Apache-2.0 */
/* Test fixture for the controller core: a core on a fake clock, the
 * metadata log its batches would form (encoded records, to replay), and
 * helpers that build events. Every step is followed by meta_image_check
 * and a replay check is one call away. Locality: one test thread. */
#ifndef TESTS_UNIT_TEST_CTL_FIXTURE_H
#define TESTS_UNIT_TEST_CTL_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"
#include "controller/elect/ctl_core.h"
#include "controller/meta/meta_image.h"
#include "tests/lib/fake_clock.h"

#define FX_MAX_BROKER_ID 64

struct ctl_fixture {
    struct fake_clock clock;
    struct ctl_config cfg;
    struct ctl_core *core;
    struct ctl_actions out;   /* of the last step */
    struct weir_buf snapshot; /* last fx_restart's snapshot, else empty */
    struct weir_buf log;      /* records written since, encoded */
    int64_t epoch[FX_MAX_BROKER_ID]; /* last epoch per broker id, -1 none */
};

/* cfg NULL: defaults, but rebalance off (tests that want it set it). */
void fx_init(struct ctl_fixture *f, const struct ctl_config *cfg);
void fx_fini(struct ctl_fixture *f);
/* cmocka setup/teardown around fx_init(NULL)/fx_fini. */
int fx_setup(void **state);
int fx_teardown(void **state);

/* Stamp ev with the fake clock, step, append the batch to the log, check
 * the image. Fails the test if the step itself fails. Returns out.result. */
int fx_step(struct ctl_fixture *f, struct ctl_event *ev);
/* Advance the clock by ms, then TICK. */
int fx_advance(struct ctl_fixture *f, uint64_t ms);

/* Register broker id (host "b<id>", port 9000 + id, rack or NULL); returns
 * the epoch. fx_join also reports it caught up, so it is unfenced. */
int64_t fx_register(struct ctl_fixture *f, int32_t id, const char *rack);
int64_t fx_join(struct ctl_fixture *f, int32_t id, const char *rack);
/* Register id with a directory id (NULL: none sent), the previous epoch
 * it reports and its default flush policy (NULL: not said); returns the
 * new epoch. */
int64_t fx_register_dir(struct ctl_fixture *f,
                        int32_t id,
                        const char *dir,
                        int64_t previous_epoch,
                        const char *flush_policy);
/* Heartbeat with the broker's last epoch, caught up to the log end. */
int fx_heartbeat(struct ctl_fixture *f, int32_t id);
/* Heartbeat every broker in ids (n of them). */
void fx_heartbeat_all(struct ctl_fixture *f, const int32_t *ids, uint32_t n);
int fx_shutdown(struct ctl_fixture *f, int32_t id);

/* Create a topic; returns its id, or -1 after asserting nothing. */
int64_t fx_create(struct ctl_fixture *f,
                  const char *name,
                  int32_t partitions,
                  int32_t rf);
/* The same with min.insync.replicas set to min_isr. */
int64_t fx_create_min_isr(struct ctl_fixture *f,
                          const char *name,
                          int32_t partitions,
                          int32_t rf,
                          int32_t min_isr);
/* Propose isr (n ids) for topic/partition as broker `by` with the given
 * epochs. Returns out.result. */
int fx_alter(struct ctl_fixture *f,
             int32_t by,
             int64_t topic_id,
             int32_t partition,
             int32_t leader_epoch,
             int32_t partition_epoch,
             const int32_t *isr,
             uint32_t n);

const struct meta_image *fx_image(const struct ctl_fixture *f);
const struct meta_partition *
fx_part(const struct ctl_fixture *f, int64_t topic_id, int32_t partition);
bool fx_fenced(const struct ctl_fixture *f, int32_t id);
/* Records of this type in the last batch. */
uint32_t fx_count(const struct ctl_fixture *f, enum meta_record_type type);
/* ids == {want...}: compare an id list to n expected ids. */
bool fx_ids_are(const struct meta_ids *ids, const int32_t *want, uint32_t n);

/* Replay the log into a fresh image and compare it with the core's. */
void fx_assert_replay_equal(const struct ctl_fixture *f);
/* Restart the controller: snapshot the image, decode it, build a new core
 * over it (soft state lost); the log restarts after the snapshot. */
void fx_restart(struct ctl_fixture *f);

/* Restart from the log instead: replay snapshot and log into an image and
 * build a new core over it; the log goes on. Also what an adapter does
 * with a failed core. */
void fx_restart_from_log(struct ctl_fixture *f);

#endif /* TESTS_UNIT_TEST_CTL_FIXTURE_H */
