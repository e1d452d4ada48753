/* SPDX-License-Identifier: Apache-2.0 */
/* Drives one group core on a fake time line for the group unit tests:
 * builds events, keeps the last step's actions and copies of what the
 * tests look at again after the next step. */
#ifndef TESTS_UNIT_TEST_GROUP_FIXTURE_H
#define TESTS_UNIT_TEST_GROUP_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/group/group_core.h"

struct gfx {
    struct group_core *g;
    struct group_config cfg;
    struct group_actions out;
    uint64_t now_ms;
    uint64_t next_request;
    uint64_t last_request; /* of the last JOIN or SYNC */
    uint64_t persist_seq;  /* the last record the core asked for */
    int tokens;            /* for new member ids */
};

/* A copy of a group record (a view) that outlives the core, to restore a
 * successor coordinator from. */
struct gfx_record {
    bool valid;
    struct group_view v; /* points into this struct */
    struct group_member_view m[16];
    char strs[16][4][96]; /* id, client, host, assignment */
    uint8_t meta[16][16];
    char protocol_type[16];
    char protocol[16];
    char leader[64];
};

/* The record the core would write now (group_core_describe). */
void gfx_record_take(const struct group_core *g, struct gfx_record *r);
void gfx_record_copy(struct gfx_record *dst, const struct gfx_record *src);

/* New core with cfg (NULL: defaults); time 0. */
void gfx_init(struct gfx *f, const struct group_config *cfg);
void gfx_fini(struct gfx *f);

/* A join: id "" for a new member (id becomes client "-" tN). protos is a
 * comma list of names; each metadata is "<client>:<name>". */
int gfx_join_full(struct gfx *f,
                  const char *member_id,
                  const char *client,
                  const char *protocol_type,
                  const char *protos,
                  uint32_t session_ms,
                  uint32_t rebalance_ms);
int gfx_join(struct gfx *f, const char *member_id, const char *client);
/* The leader's assignments: "<member>=<bytes>" pairs, comma separated. */
int gfx_sync(struct gfx *f,
             const char *member_id,
             int32_t generation,
             const char *assign);
int gfx_heartbeat(struct gfx *f, const char *member_id, int32_t generation);
int gfx_leave(struct gfx *f, const char *member_id);
int gfx_commit(struct gfx *f, const char *member_id, int32_t generation);
int gfx_tick(struct gfx *f);
/* Move time forward, then tick. */
int gfx_advance(struct gfx *f, uint64_t ms);
/* The adapter's report: the last record asked for is committed (error 0)
 * or failed. Asserts one was asked for. */
int gfx_persisted(struct gfx *f);
int gfx_persist_failed(struct gfx *f, int error);

/* The answer to request_id in the last step, or NULL. */
const struct group_answer *gfx_answer(const struct gfx *f, uint64_t request_id);
enum group_state gfx_state(const struct gfx *f);
int32_t gfx_generation(const struct gfx *f);
/* Copy of s into a ring of buffers that survive a few steps. */
const char *gfx_keep(const char *s);
/* A slice's bytes as a string (a ring buffer too). */
const char *gfx_str(struct weir_slice s);

/* Join "" as client, deliver every answer; returns the new member id
 * (gfx_keep'd). Asserts the join was parked or answered. */
const char *gfx_new_member(struct gfx *f, const char *client);
/* A STABLE group with members c1..cn (every record committed); ids go to
 * ids[]. */
void gfx_stable_group(struct gfx *f, int n, const char **ids);

#endif /* TESTS_UNIT_TEST_GROUP_FIXTURE_H */
