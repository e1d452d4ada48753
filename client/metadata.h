/* SPDX-License-Identifier: Apache-2.0 */
/* Metadata cache: the bootstrap list, brokers (id -> host:port) and, for
 * each topic the client uses, its partitions and their leaders. Refreshed
 * synchronously when a caller must know (first use of a topic, admin) and
 * asynchronously when a leader turns out stale (NOT_LEADER, lost
 * connection); asynchronous refreshes are rate-limited.
 * Topic entries are never freed before the cache, so md_topic pointers
 * stay valid; their contents change on refresh.
 * Locality: the client's thread. */
#ifndef CLIENT_METADATA_H
#define CLIENT_METADATA_H

#include <stdbool.h>
#include <stdint.h>

#include "client/pool.h"
#include "common/err.h"
#include "proto/weir.pb-c.h"

#define METADATA_REFRESH_BACKOFF_MS 100
/* A background refresh that takes longer is dropped and the next one goes
 * to another broker (the one asked may be paused). */
#define METADATA_ASYNC_TIMEOUT_MS 2000

struct md_addr {
    char *host;
    uint16_t port;
};

struct md_partition {
    int err;        /* enum weir_err from the broker */
    int32_t leader; /* broker id, -1 when none */
    int32_t leader_epoch;
};

struct md_topic {
    char *name;
    bool known; /* a broker answered for it at least once */
    int err;    /* topic error of the last answer */
    char err_msg[256];
    int32_t n_partitions;
    struct md_partition *parts; /* n_partitions */
};

struct metadata; /* opaque: metadata.c */

/* Parse "host:port[,host:port...]" ("[v6]:port" too; port defaults to
 * 9092). Errors: WEIR_EINVALID_ARGUMENT, WEIR_ENOMEM. */
WEIR_MUST_CHECK int metadata_parse_bootstrap(const char *list,
                                             struct md_addr **out,
                                             size_t *n,
                                             struct err_detail *ed);
void metadata_addrs_free(struct md_addr *a, size_t n);

/* pool is borrowed. Errors: as metadata_parse_bootstrap. */
WEIR_MUST_CHECK int metadata_new(const char *bootstrap,
                                 struct pool *pool,
                                 uint32_t request_timeout_ms,
                                 struct metadata **out,
                                 struct err_detail *ed);
void metadata_free(struct metadata *md);
/* The client speaks TLS: brokers advertising a TLS listener beside their
 * plain one are reached there. */
void metadata_use_tls(struct metadata *md);

/* The topic's entry, created (unknown) if new; NULL when out of memory.
 * Refreshes ask for every topic that has an entry. */
struct md_topic *metadata_want(struct metadata *md, const char *topic);
/* The entry or NULL. */
struct md_topic *metadata_topic(struct metadata *md, const char *topic);

/* Leader address of a partition; pointers valid until the next refresh.
 * Errors: WEIR_EUNKNOWN_TOPIC_OR_PARTITION, WEIR_ELEADER_NOT_AVAILABLE
 * (no leader, or the leader is not in the broker list). */
WEIR_MUST_CHECK int metadata_leader(struct metadata *md,
                                    const char *topic,
                                    int32_t partition,
                                    const char **host,
                                    uint16_t *port);

/* Leader broker id of a partition, -1 when none or unknown. */
int32_t
metadata_leader_id(struct metadata *md, const char *topic, int32_t partition);

/* Ask for fresh metadata in the background, unless one request is in
 * flight or the last began less than METADATA_REFRESH_BACKOFF_MS ago. */
void metadata_refresh_async(struct metadata *md);

/* Fetch metadata for every wanted topic now, trying each broker in turn.
 * Errors: transport (the message names the brokers tried). */
WEIR_MUST_CHECK int metadata_refresh_sync(struct metadata *md,
                                          struct err_detail *ed);

/* Send req to any broker that answers (known brokers, then the bootstrap
 * list) and wait. Success: *out owns the response.
 * Errors: as call_sync; transport errors name every broker tried. */
WEIR_MUST_CHECK int metadata_call_any(struct metadata *md,
                                      Weir__Request *req,
                                      uint32_t timeout_ms,
                                      Weir__Response **out,
                                      struct err_detail *ed);

/* Merge a Metadata response: replace the broker list, update the topics
 * that appear in it (and that have entries). Errors: WEIR_ENOMEM. */
WEIR_MUST_CHECK int metadata_apply(struct metadata *md,
                                   const Weir__MetadataResponse *r);

/* host:port of a broker id, or NULL. */
const struct md_addr *metadata_broker(const struct metadata *md, int32_t id);

/* Bumped by every successful refresh. */
uint64_t metadata_generation(const struct metadata *md);

#endif /* CLIENT_METADATA_H */
