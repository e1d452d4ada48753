/* SPDX-License-Identifier: Apache-2.0 */
/* Layout of struct meta_image, shared by the meta_image*.c and
 * meta_snapshot.c files only. The image owns every array and string here. */
#ifndef CONTROLLER_META_META_IMAGE_INT_H
#define CONTROLLER_META_META_IMAGE_INT_H

#include "controller/meta/meta_image.h"

/* A topic and the capacities of its arrays. */
struct meta_topic_slot {
    struct meta_topic pub;
    uint32_t cap_partitions;
    uint32_t cap_configs;
};

struct meta_image {
    struct meta_broker *brokers; /* ascending id */
    uint32_t n_brokers;
    uint32_t cap_brokers;
    struct meta_topic_slot *topics; /* ascending id */
    uint32_t n_topics;
    uint32_t cap_topics;
    int64_t *names;          /* topic ids by name hash (meta_image.c) */
    uint32_t names_cap;      /* slots, a power of two (0 before first use) */
    uint32_t names_used;     /* slots holding an id or a tombstone */
    struct meta_user *users; /* ascending (name, mech) */
    uint32_t n_users;
    uint32_t cap_users;
    struct acl_set acls;          /* distinct rules (meta_image_auth.c) */
    struct meta_tombstone *tombs; /* oldest first (meta_image_tomb.c) */
    uint32_t n_tombs;
    uint32_t cap_tombs;
    int64_t end_offset;       /* offset of the next record */
    int64_t next_producer_id; /* ids below are handed out */
    bool loading; /* applying a snapshot: records are not at their offsets */
};

/* Index of the broker with this id, or of where it would go; *found says
 * which. */
uint32_t
meta_image_broker_pos(const struct meta_image *img, int32_t id, bool *found);
/* Mutable lookups for apply; NULL when absent. */
struct meta_broker *meta_image_broker_mut(struct meta_image *img, int32_t id);
struct meta_topic_slot *meta_image_topic_mut(struct meta_image *img,
                                             int64_t topic_id);

/* Topic name index (in meta_image.c). Reserve before an add, so the
 * add cannot fail; find returns NULL when the name is unknown. */
int meta_image_names_reserve(struct meta_image *img);
void meta_image_names_add(struct meta_image *img, const struct meta_topic *t);
void meta_image_names_remove(struct meta_image *img,
                             const struct meta_topic *t);
struct meta_topic_slot *meta_image_names_find(const struct meta_image *img,
                                              const char *name,
                                              size_t len);

/* PARTITION, PARTITION_CHANGE and REPLICAS_EMPTY (meta_image_part.c);
 * mark_empty: broker id's data is new, every replica of it is empty. */
void meta_image_mark_empty(struct meta_image *img, int32_t id);
int meta_image_apply_empty(struct meta_image *img,
                           const struct meta_replicas_empty *rec,
                           struct err_detail *ed);
int meta_image_apply_partition(struct meta_image *img,
                               const struct meta_partition_rec *rec,
                               struct err_detail *ed);
int meta_image_apply_change(struct meta_image *img,
                            const struct meta_partition_change *rec,
                            struct err_detail *ed);

/* Tombstones (meta_image_tomb.c). add: remember a removed topic,
 * forgetting the oldest past META_MAX_TOMBSTONES; on failure the image is
 * unchanged. */
int meta_image_tomb_add(struct meta_image *img,
                        int64_t topic_id,
                        struct meta_str name,
                        struct err_detail *ed);
int meta_image_apply_tomb(struct meta_image *img,
                          const struct meta_topic_tombstone *rec,
                          struct err_detail *ed);
void meta_image_free_tombs(struct meta_image *img);
bool meta_image_tombs_equal(const struct meta_image *a,
                            const struct meta_image *b);
int meta_image_check_tombs(const struct meta_image *img, struct err_detail *ed);

/* USER_SCRAM, REMOVE_USER_SCRAM, ACL, REMOVE_ACL (meta_image_auth.c). */
int meta_image_apply_user(struct meta_image *img,
                          const struct meta_user_scram *rec,
                          struct err_detail *ed);
int meta_image_apply_user_remove(struct meta_image *img,
                                 const struct meta_user_ref *rec,
                                 struct err_detail *ed);
int meta_image_apply_acl(struct meta_image *img,
                         const struct meta_acl *rec,
                         bool add,
                         struct err_detail *ed);
void meta_image_free_auth(struct meta_image *img);
bool meta_image_auth_equal(const struct meta_image *a,
                           const struct meta_image *b);
int meta_image_check_auth(const struct meta_image *img, struct err_detail *ed);
/* The record that rebuilds an image rule or user (strings borrow). */
void meta_image_acl_record(const struct acl_rule *r, struct meta_acl *out);
void meta_image_user_record(const struct meta_user *u,
                            struct meta_user_scram *out);

#endif /* CONTROLLER_META_META_IMAGE_INT_H */
