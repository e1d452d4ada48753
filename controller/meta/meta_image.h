/* SPDX-License-Identifier: Apache-2.0 */
/* Metadata image: the cluster metadata that the records of the metadata log
 * describe, held in memory. It changes only through meta_image_apply, which
 * is deterministic (same records, same image) and atomic per record (a
 * record it refuses changes nothing), so an image rebuilt from a snapshot
 * and the log that follows equals the one that wrote them.
 * Invariants kept by apply (meta_image_check verifies them): brokers sorted
 * by id; topics sorted by id with unique names; partitions of a topic dense
 * from 0; replicas distinct registered brokers; the ISR and the ELR
 * disjoint subsets of the replicas in replica order (the ISR may be empty);
 * the leader -1 or an unfenced ISR member;
 * n_led counts exactly the partitions a broker leads; users sorted by
 * (name, mechanism), unique, each a valid credential; ACL rules valid and
 * distinct, at most ACL_MAX_RULES.
 * Locality: one thread (the controller loop, or one broker's metadata
 * follower). */
#ifndef CONTROLLER_META_META_IMAGE_H
#define CONTROLLER_META_META_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/acl.h"
#include "common/err.h"
#include "common/scram.h"
#include "controller/meta/meta_record.h"

#define META_MAX_BROKERS 4096
#define META_MAX_TOPICS  100000
#define META_MAX_CONFIGS 64     /* per topic */
#define META_MAX_USERS   100000 /* (user, mechanism) credentials */
#define META_MAX_TOMBSTONES                                                    \
    10000 /* removed topics remembered (the oldest are forgotten) */

struct meta_image; /* opaque: layout lives in meta_image_int.h */

/* Read-only views. Pointers returned by the lookups below, and the strings
 * and arrays inside them, belong to the image and stay valid until the next
 * meta_image_apply on it (or its free). */
struct meta_broker {
    int32_t id;
    int64_t epoch; /* offset of its latest REGISTER_BROKER record */
    char *host;    /* NUL-terminated */
    uint16_t port;
    char *rack;     /* "" when none */
    char *tls_host; /* TLS listener (BROKER_TLS), NULL when none */
    uint16_t tls_port;
    char *directory_id; /* of its latest registration; "" when unknown */
    bool fenced;        /* registered brokers start fenced */
    uint32_t n_led;     /* partitions whose leader it is */
};

struct meta_partition {
    struct meta_ids replicas; /* replicas.ids[0] is the preferred leader */
    struct meta_ids isr;      /* in replica order; empty when no member is
                                 left that may lead (see elr) */
    struct meta_ids elr;      /* eligible leader replicas (KIP-966): out of
                                 the ISR but holding every committed record,
                                 because they left it while it was (or by
                                 leaving made it) smaller than
                                 min.insync.replicas; replica order */
    int32_t leader;           /* -1: none */
    int32_t leader_epoch;
    int32_t partition_epoch; /* bumped by every change */
    uint8_t flags;           /* META_PART_UNCLEAN: set by an unclean
                                election, cleared by the next change */
    /* bit i: replicas.ids[i] is known empty. Its broker registered with a
     * new directory id (the data dir was lost or wiped) and it has not
     * been in the ISR since; never in the ISR or ELR. Unclean election
     * does not pick it. */
    uint16_t empty;
};

struct meta_config {
    char *key;
    char *value;
};

struct meta_topic {
    int64_t id; /* offset of its CREATE_TOPIC record */
    char *name;
    uint32_t n_partitions;
    struct meta_partition *partitions; /* index = partition number */
    uint32_t n_configs;
    struct meta_config *configs; /* sorted by key; only keys set explicitly */
};

/* A removed topic, remembered so that brokers delete its logs even when
 * they learn of the removal from a snapshot (META_MAX_TOMBSTONES, oldest
 * forgotten first: a broker away for longer than that many removals keeps
 * the logs of the forgotten ones as strays, never deletes them). */
struct meta_tombstone {
    int64_t topic_id;
    char *name; /* NUL-terminated */
};

/* One SCRAM credential: a user holds at most one per mechanism. */
struct meta_user {
    char *name;             /* NUL-terminated */
    struct scram_cred cred; /* mech, salt, iterations, stored/server keys */
};

/* An empty image (end offset 0). Errors: WEIR_ENOMEM. */
WEIR_MUST_CHECK int meta_image_new(struct meta_image **out);
/* NULL is a no-op. */
void meta_image_free(struct meta_image *img);

/* Apply one record (the one at meta_image_end_offset) and advance the end
 * offset by one. Rules beyond meta_record_check:
 *   REGISTER_BROKER  epoch = this record's offset (so above the broker's
 *                    previous one); a registered broker that is
 *                    re-registered must lead nothing; the broker is fenced
 *                    afterwards. A directory id other than the one it was
 *                    registered with (both known) marks every replica of
 *                    it empty (meta_partition.empty).
 *   FENCE_BROKER     current epoch, unfenced, leads nothing.
 *   UNFENCE_BROKER   current epoch, fenced.
 *   CREATE_TOPIC     new name; id = this record's offset.
 *   TOPIC_CONFIG     known topic; sets or replaces the key.
 *   REMOVE_TOPIC     known topic; its partitions go with it, and its id
 *                    and name become a tombstone.
 *   TOPIC_TOMBSTONE  only while loading a snapshot: an id that is neither
 *                    a topic nor a tombstone yet, below the end offset;
 *                    at most META_MAX_TOMBSTONES.
 *   PARTITION        known topic, next partition number, registered
 *                    replicas, ISR and ELR in replica order, leader -1 or
 *                    unfenced.
 *   PARTITION_CHANGE known partition, ISR and ELR within its replicas in
 *                    replica order, leader -1 or unfenced, epochs as
 *                    documented in meta_record.h. ISR and ELR members are
 *                    no longer empty.
 *   REPLICAS_EMPTY   only while loading a snapshot: a known partition,
 *                    replicas of it outside its ISR and ELR.
 *   PRODUCER_IDS     above the current next producer id.
 *   USER_SCRAM       creates or replaces the (name, mechanism) credential;
 *                    at most META_MAX_USERS of them.
 *   REMOVE_USER_SCRAM an existing (name, mechanism).
 *   ACL              a rule not already present; at most ACL_MAX_RULES.
 *   REMOVE_ACL       a rule that is present.
 * (Records loaded from a snapshot are not at their first offsets; there
 * the epoch and id must only lie below the snapshot's end offset.)
 * Errors: WEIR_ECORRUPT (record breaks a rule; the image is unchanged),
 * WEIR_ENOMEM (image unchanged). */
WEIR_MUST_CHECK int meta_image_apply(struct meta_image *img,
                                     const struct meta_record *rec,
                                     struct err_detail *ed);

/* Offset the next record will have: records applied so far, plus the end
 * offset of the snapshot the image was loaded from. */
int64_t meta_image_end_offset(const struct meta_image *img);
/* First producer id not yet handed out by any PRODUCER_IDS record. */
int64_t meta_image_next_producer_id(const struct meta_image *img);

uint32_t meta_image_broker_count(const struct meta_image *img);
/* i < broker count; ascending id order. */
const struct meta_broker *meta_image_broker_at(const struct meta_image *img,
                                               uint32_t i);
/* NULL when the id is not registered. */
const struct meta_broker *meta_image_broker(const struct meta_image *img,
                                            int32_t id);

uint32_t meta_image_topic_count(const struct meta_image *img);
/* i < topic count; ascending id (creation) order. */
const struct meta_topic *meta_image_topic_at(const struct meta_image *img,
                                             uint32_t i);
/* NULL when unknown. */
const struct meta_topic *meta_image_topic(const struct meta_image *img,
                                          int64_t topic_id);
const struct meta_topic *meta_image_topic_by_name(const struct meta_image *img,
                                                  const char *name,
                                                  size_t len);
const struct meta_partition *meta_image_partition(const struct meta_image *img,
                                                  int64_t topic_id,
                                                  int32_t partition);
/* Is broker id's replica of p known empty (meta_partition.empty)? */
bool meta_partition_replica_empty(const struct meta_partition *p, int32_t id);
/* Value of an explicitly set key, NULL when unset. */
const char *meta_topic_config(const struct meta_topic *t, const char *key);
/* min.insync.replicas as brokers read it (repl_io): the leading decimal
 * of the value when it is 1..META_MAX_REPLICAS, else 1. Never more than
 * the brokers use: the ELR rests on "the high watermark does not move
 * while the ISR is smaller than this". */
uint32_t meta_topic_min_isr(const struct meta_topic *t);

/* Tombstones, oldest removal first. */
uint32_t meta_image_tombstone_count(const struct meta_image *img);
const struct meta_tombstone *
meta_image_tombstone_at(const struct meta_image *img, uint32_t i);
/* The tombstone of a removed topic id, NULL when the image has none (the
 * topic exists, never existed, or was forgotten). */
const struct meta_tombstone *meta_image_tombstone(const struct meta_image *img,
                                                  int64_t topic_id);

uint32_t meta_image_user_count(const struct meta_image *img);
/* i < user count; sorted by (name, mechanism). */
const struct meta_user *meta_image_user_at(const struct meta_image *img,
                                           uint32_t i);
/* NULL when the user has no credential for mech. */
const struct meta_user *meta_image_user(const struct meta_image *img,
                                        const char *name,
                                        enum scram_mech mech);
/* The ACL rules, in the order apply left them (read-only: decide with
 * acl_allowed). */
const struct acl_set *meta_image_acls(const struct meta_image *img);

/* True if brokers, topics, configs, partitions, tombstones, users, ACL
 * rules (in the
 * same order: apply and snapshots are deterministic, so a replay or a
 * reload gives that order back), next producer id and end offset are all
 * equal. */
bool meta_image_equal(const struct meta_image *a, const struct meta_image *b);

/* Verify every invariant listed at the top of this file.
 * Errors: WEIR_ECORRUPT naming the first broken one. */
WEIR_MUST_CHECK int meta_image_check(const struct meta_image *img,
                                     struct err_detail *ed);

#endif /* CONTROLLER_META_META_IMAGE_H */
