/* SPDX-License-Identifier: Apache-2.0 */
/* Internals shared by group_io.c (registry, loading, writes) and
 * group_io_api.c (request handlers).
 * Locality: broker loop thread only. */
#ifndef BROKER_GROUP_GROUP_IO_INT_H
#define BROKER_GROUP_GROUP_IO_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/group/group_core.h"
#include "broker/group/group_io.h"
#include "proto/weir.pb-c.h"

#include <event2/util.h>

struct event;
struct plog;

/* A committed offset, as OffsetFetch answers it. */
struct gio_offset {
    char *topic;
    int32_t partition;
    int64_t offset;
    int32_t leader_epoch;
    char *metadata;
    int64_t commit_ts;
};

/* A JoinGroup or SyncGroup waiting for the core's answer. */
struct gio_park {
    struct gio_park *next;
    uint64_t id;
    enum group_event_type type; /* GROUP_EV_JOIN or GROUP_EV_SYNC */
    struct srv_req *req;
    uint32_t correlation_id;
};

struct gio_group {
    struct gio_group *next;
    struct group_io *io;
    char *id;
    int32_t partition; /* of __consumer_offsets */
    struct group_core *core;
    struct event *timer;
    struct gio_offset *offs;
    uint32_t n_offs;
    uint32_t cap_offs;
    struct gio_park *parked;
    Weir__GroupRecordValue *loaded_meta; /* while loading: last record */
    uint64_t instance;         /* unique per gio_group_new in this broker */
    struct event *persist_ev;  /* tells the core what became of records */
    uint64_t persist_ok_seq;   /* newest record committed */
    uint64_t persist_fail_seq; /* newest record that failed */
    int persist_fail_err;      /* and why (what clients are answered) */
    uint64_t persist_told_seq; /* the core knows up to here */
};

enum gio_part_state {
    GIO_UNLOADED,
    GIO_LOADING,
    GIO_LOADED,
};

/* One partition of __consumer_offsets, as this broker holds it. */
struct gio_part {
    enum gio_part_state state;
    int32_t leader_epoch; /* loaded (or loading) for this epoch */
    int64_t load_next;    /* next offset to read */
    int64_t load_end;     /* the log end when the load began */
    uint64_t load_started_ms;
    uint64_t records;
};

enum gio_write_kind {
    GIO_WRITE_COMMIT, /* answer an OffsetCommit, then apply it */
    GIO_WRITE_DELETE, /* answer a DeleteGroups entry */
    GIO_WRITE_GROUP,  /* group metadata: its core waits (PERSISTED) */
};

/* A write to an offsets partition waiting to be committed. */
struct gio_write {
    struct gio_write *next;
    enum gio_write_kind kind;
    struct plog *log;
    int64_t need; /* committed once the HW (or durable end) reaches it */
    bool repl;    /* wait for the high watermark, not the durable end */
    struct srv_req *req;
    Weir__Request *r; /* owned: the OffsetCommit */
    uint32_t correlation_id;
    char *group;
    int32_t partition;
    int32_t leader_epoch;
    uint64_t persist_seq;    /* GROUP: the core's seq for this record */
    uint64_t group_instance; /* GROUP: the gio_group that asked */
};

struct group_io {
    struct broker *b;
    struct group_config gcfg;
    int32_t n_parts; /* of __consumer_offsets, 0 while unknown */
    struct gio_part *parts;
    struct gio_group *groups;
    struct gio_write *writes; /* oldest first */
    struct gio_write **writes_tail;
    struct event *scan_timer; /* load, unload, create the topic */
    struct event *load_ev;    /* next chunk of a load */
    uint64_t next_request_id;
    uint64_t next_group_instance;
    uint64_t member_seq;
    uint64_t last_create_ms;
    bool create_asked;
    char create_refused[200]; /* why the controller last refused to make
                                 __consumer_offsets ("" = it did not):
                                 told to clients, never a reason to stop
                                 asking */
};

/* Route a request for `group`: 0 with *out (NULL when the group does not
 * exist and !create) when this broker coordinates it and has loaded it;
 * else NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
 * COORDINATOR_LOAD_IN_PROGRESS, INVALID_GROUP_ID or ENOMEM with msg. */
int gio_route(struct group_io *io,
              const char *group,
              bool create,
              struct gio_group **out,
              char *msg,
              size_t msg_cap);

/* Step the group's core and carry out the actions: answer parked requests,
 * persist the group record, re-arm the timer. */
int gio_step(struct gio_group *g,
             struct group_event *ev,
             struct group_actions *out);

/* Write records to the group's partition and wait for them to be
 * committed; bb holds the records. On success the write is queued. */
int gio_write(struct group_io *io,
              struct gio_group *g,
              struct batch_builder *bb,
              struct gio_write *w,
              char *msg,
              size_t msg_cap);

/* Write the group's record (as group_core_describe has it now) for the
 * core's persist_seq; its fate reaches the core as a PERSISTED event from
 * g->persist_ev, also when the write is refused at once. */
void gio_persist(struct gio_group *g, uint64_t seq);
/* A GROUP write is done (err 0: committed): note it for its group. */
void gio_persist_done(struct group_io *io, const struct gio_write *w, int err);
/* g->persist_ev: step the core with what became of its records. */
void gio_persist_cb(evutil_socket_t fd, short what, void *arg);

struct gio_offset *
gio_offset_find(struct gio_group *g, const char *topic, int32_t partition);
int gio_offset_set(struct gio_group *g,
                   const char *topic,
                   int32_t partition,
                   int64_t offset,
                   int32_t leader_epoch,
                   const char *metadata,
                   int64_t commit_ts);
struct gio_group *gio_group_find(struct group_io *io, const char *id);
/* Drop a group (parked requests answered NOT_COORDINATOR). */
void gio_group_drop(struct group_io *io, struct gio_group *g);

/* Answer a parked JOIN/SYNC or an immediate refusal. */
void gio_answer_join(struct srv_req *req,
                     uint32_t correlation_id,
                     const struct group_answer *a,
                     int err,
                     const char *msg);
void gio_answer_sync(struct srv_req *req,
                     uint32_t correlation_id,
                     const struct group_answer *a,
                     int err,
                     const char *msg);
void gio_answer_commit(struct gio_write *w, int err, const char *msg);

uint64_t gio_now_ms(const struct group_io *io);
int64_t gio_wall_ms(const struct group_io *io);

#endif /* BROKER_GROUP_GROUP_IO_INT_H */
