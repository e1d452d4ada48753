/* SPDX-License-Identifier: Apache-2.0 */
/* Metadata records: the entries of the controller's metadata log. Applying
 * them in order to an empty meta_image rebuilds the cluster metadata, so
 * every fact the controller decides is one of these. A record never owns
 * memory: its strings borrow from whoever made it (the decoder's input, or
 * the ctl_actions that produced it). Locality: any thread; no state. */
#ifndef CONTROLLER_META_META_RECORD_H
#define CONTROLLER_META_META_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/acl.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/scram.h"

#define META_MAX_REPLICAS     16 /* replicas (and ISR members) per partition */
#define META_MAX_PARTITIONS   10000 /* partitions per topic */
#define META_MAX_HOST_BYTES   255
#define META_MAX_RACK_BYTES   64
#define META_MAX_KEY_BYTES    255  /* topic config key */
#define META_MAX_VALUE_BYTES  4096 /* topic config value */
#define META_MAX_DIR_ID_BYTES 64   /* broker directory id */
/* Record versions. Every type has version 0. PARTITION and
 * PARTITION_CHANGE have a version 1 that adds the ELR, REGISTER_BROKER one
 * that adds the directory id. A record is always written at the lowest
 * version that holds it (version 0 when the ELR is empty or the directory
 * id unknown), so encodings stay canonical and a reader that knows only
 * version 0 reads every record that does not use the new fields. */
#define META_RECORD_VERSION    0
#define META_RECORD_VERSION_V1 1
#define META_RECORD_HEAD_BYTES                                                 \
    6 /* u8 type | u8 version | u32be body length                              \
       */

/* PARTITION and PARTITION_CHANGE flags. */
#define META_PART_UNCLEAN   0x01 /* leader elected from outside the ISR */
#define META_PART_FLAGS_ALL META_PART_UNCLEAN

/* Wire values: never renumber. */
enum meta_record_type {
    META_RECORD_REGISTER_BROKER = 1,
    META_RECORD_FENCE_BROKER = 2,
    META_RECORD_UNFENCE_BROKER = 3,
    META_RECORD_CREATE_TOPIC = 4,
    META_RECORD_TOPIC_CONFIG = 5,
    META_RECORD_REMOVE_TOPIC = 6,
    META_RECORD_PARTITION = 7,
    META_RECORD_PARTITION_CHANGE = 8,
    META_RECORD_PRODUCER_IDS = 9,
    META_RECORD_BROKER_TLS = 10,
    META_RECORD_USER_SCRAM = 11,
    META_RECORD_REMOVE_USER_SCRAM = 12,
    META_RECORD_ACL = 13,
    META_RECORD_REMOVE_ACL = 14,
    META_RECORD_TOPIC_TOMBSTONE = 15,
    META_RECORD_REPLICAS_EMPTY = 19,
};

/* Borrowed bytes of a string; not NUL-terminated. */
struct meta_str {
    const char *ptr;
    size_t len;
};

struct meta_bytes { /* borrowed; u16be length + bytes, like a string */
    const uint8_t *ptr;
    size_t len;
};

/* Broker ids of a replica list, an ISR or an ELR, in replica order. */
struct meta_ids {
    uint32_t n;
    int32_t ids[META_MAX_REPLICAS];
};

struct meta_register_broker {
    int32_t id;           /* >= 0 */
    int64_t epoch;        /* the offset of this record when first written */
    struct meta_str host; /* advertised address, 1..255 printable bytes */
    uint16_t port;        /* 1..65535 */
    struct meta_str rack; /* 0..64 printable bytes; empty = no rack */
    /* made when the broker's data dir was first used, 0..64 printable
     * bytes without spaces; empty = unknown (version 0) */
    struct meta_str directory_id;
};

/* BROKER_TLS: the TLS listener a registered broker also serves clients
 * on, for the registration of that epoch (written right after its
 * REGISTER_BROKER; a new registration without one has none). */
struct meta_broker_tls {
    int32_t id;
    int64_t epoch;        /* the REGISTER_BROKER's */
    struct meta_str host; /* advertised, 1..255 printable bytes */
    uint16_t port;        /* 1..65535 */
};

/* FENCE_BROKER and UNFENCE_BROKER. */
struct meta_broker_ref {
    int32_t id;
    int64_t epoch; /* must be the broker's current epoch */
};

struct meta_create_topic {
    int64_t topic_id;     /* the offset of this record when first written */
    struct meta_str name; /* passes names_topic_check */
};

/* TOPIC_TOMBSTONE: a topic REMOVE_TOPIC took out, as a snapshot keeps it
 * (only snapshots hold these records): brokers delete a topic's logs only
 * for an explicit removal, and a broker that missed the REMOVE_TOPIC learns
 * of it from here. Same fields as CREATE_TOPIC. */
struct meta_topic_tombstone {
    int64_t topic_id;     /* the removed topic's id */
    struct meta_str name; /* and its name (passes names_topic_check) */
};

/* REPLICAS_EMPTY: replicas of a partition whose broker registered with a
 * new directory id (its data is gone) and that have not been back in the
 * ISR since, as a snapshot keeps them (only snapshots hold these records;
 * a log implies them: see meta_image_apply). Unclean election never picks
 * them. */
struct meta_replicas_empty {
    int64_t topic_id;
    int32_t partition;
    struct meta_ids ids; /* 1..16 distinct broker ids */
};

struct meta_topic_config {
    int64_t topic_id;
    struct meta_str key;   /* 1..255 printable bytes, no spaces */
    struct meta_str value; /* 0..4096 printable bytes */
};

/* Full state of a new partition (creation and snapshots). */
struct meta_partition_rec {
    int64_t topic_id;
    int32_t partition;        /* 0..META_MAX_PARTITIONS-1, dense per topic */
    struct meta_ids replicas; /* 1..16 distinct broker ids */
    struct meta_ids isr;      /* subset of replicas (maybe empty), in
                                 replica order */
    int32_t leader;           /* an ISR member, or -1 */
    int32_t leader_epoch;     /* >= 0 */
    int32_t partition_epoch;  /* >= 0 */
    uint8_t flags;            /* META_PART_* */
    struct meta_ids elr;      /* eligible leader replicas (KIP-966):
                                 replicas outside the ISR that hold every
                                 committed record; disjoint from the ISR,
                                 replica order; empty = version 0 */
};

/* New ISR, ELR, leader and epochs of an existing partition.
 * partition_epoch is the old one + 1; leader_epoch the old one + 1 exactly
 * when the leader changes. The replica list never changes. A version 0
 * record (no ELR field) leaves the ELR empty. */
struct meta_partition_change {
    int64_t topic_id;
    int32_t partition;
    struct meta_ids isr;
    int32_t leader;
    int32_t leader_epoch;
    int32_t partition_epoch;
    uint8_t flags; /* META_PART_UNCLEAN: this change is an unclean election */
    struct meta_ids elr; /* as in meta_partition_rec */
};

/* USER_SCRAM: set one user's credential for one mechanism (never the
 * password). The name has no ',' or '=', which SCRAM would escape. */
struct meta_user_scram {
    struct meta_str name;         /* 1..SCRAM_MAX_USER bytes of 0x21..0x7e */
    uint8_t mechanism;            /* enum scram_mech */
    uint32_t iterations;          /* SCRAM_MIN_ITER..SCRAM_MAX_ITER */
    struct meta_bytes salt;       /* 1..SCRAM_MAX_SALT bytes */
    struct meta_bytes stored_key; /* 32 bytes (SHA-256) or 64 (SHA-512) */
    struct meta_bytes server_key; /* as long as stored_key */
};

struct meta_user_ref { /* REMOVE_USER_SCRAM: USER_SCRAM's rules */
    struct meta_str name;
    uint8_t mechanism;
};

struct meta_acl {              /* ACL, REMOVE_ACL: one rule of common/acl.h */
    struct meta_str principal; /* 1..255 of 0x20..0x7e: "User:a", "*" */
    uint8_t resource;          /* enum acl_resource */
    uint8_t pattern;           /* enum acl_pattern; cluster: literal */
    struct meta_str name;      /* 1..255 of 0x20..0x7e; cluster: "" */
    uint8_t op;                /* enum acl_op, ACL_ALL included */
    uint8_t perm;              /* enum acl_perm */
};

struct meta_record {
    enum meta_record_type type;
    union {
        struct meta_register_broker reg;     /* REGISTER_BROKER */
        struct meta_broker_ref fence;        /* FENCE_BROKER, UNFENCE_BROKER */
        struct meta_create_topic topic;      /* CREATE_TOPIC */
        struct meta_topic_config config;     /* TOPIC_CONFIG */
        int64_t remove_topic_id;             /* REMOVE_TOPIC */
        struct meta_partition_rec part;      /* PARTITION */
        struct meta_partition_change change; /* PARTITION_CHANGE */
        int64_t next_producer_id;      /* PRODUCER_IDS: ids below are taken */
        struct meta_broker_tls tls;    /* BROKER_TLS */
        struct meta_user_scram user;   /* USER_SCRAM */
        struct meta_user_ref user_ref; /* REMOVE_USER_SCRAM */
        struct meta_acl acl;           /* ACL, REMOVE_ACL */
        struct meta_topic_tombstone tomb; /* TOPIC_TOMBSTONE */
        struct meta_replicas_empty empty; /* REPLICAS_EMPTY */
    } u;
};

/* Upper-case name of a record type ("PARTITION_CHANGE"), "UNKNOWN" else. */
const char *meta_record_type_name(int type);

/* Check a record against the rules the decoder enforces (ranges, string
 * lengths and characters, distinct ids, ISR and ELR disjoint and within
 * the replicas for PARTITION).
 * Rules that need the image are meta_image_apply's.
 * Errors: WEIR_ECORRUPT with a message naming the field. */
WEIR_MUST_CHECK int meta_record_check(const struct meta_record *rec,
                                      struct err_detail *ed);

/* The version rec is written at: META_RECORD_VERSION_V1 when it has an
 * ELR or a directory id, else META_RECORD_VERSION. */
uint8_t meta_record_version(const struct meta_record *rec);

/* Append the encoding of rec to b:
 *   u8 type | u8 version | u32be body length | body
 * Fields are big-endian; strings and bytes are u16be length + bytes; id
 * lists are u8 count + i32be ids. Nothing is written unless meta_record_check
 * passes. Errors: WEIR_EINVALID_ARGUMENT (check failed), WEIR_ENOMEM. */
WEIR_MUST_CHECK int meta_record_encode(const struct meta_record *rec,
                                       struct weir_buf *b,
                                       struct err_detail *ed);

/* Decode one record at the cursor (untrusted bytes) and move past it.
 * out's strings point into the cursor's memory. On error out and the
 * cursor position are unspecified.
 * Errors: WEIR_ECORRUPT (truncated, unknown type or version, a version 1
 * record whose new field is empty (not canonical), body length that
 * disagrees with the fields, any meta_record_check failure). */
WEIR_MUST_CHECK int meta_record_decode(struct weir_cursor *c,
                                       struct meta_record *out,
                                       struct err_detail *ed);

/* True if the two records are field-for-field equal (strings by content). */
bool meta_record_equal(const struct meta_record *a,
                       const struct meta_record *b);

/* True if id is one of ids. */
bool meta_ids_has(const struct meta_ids *ids, int32_t id);

#endif /* CONTROLLER_META_META_RECORD_H */
