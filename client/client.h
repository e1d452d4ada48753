/* SPDX-License-Identifier: Apache-2.0 */
/* The client object shared by the producer, consumer and admin files:
 * configuration, the connection pool and the metadata cache. Internal;
 * applications see struct weir_client as opaque.
 * Locality: the client's thread. */
#ifndef CLIENT_CLIENT_H
#define CLIENT_CLIENT_H

#include "client/conn.h"
#include "client/metadata.h"
#include "client/pool.h"
#include "client/weir.h"

struct weir_client {
    char *bootstrap;               /* owned copy */
    char *client_id;               /* owned copy */
    struct weir_client_config cfg; /* strings point at the copies above */
    struct conn_opts conn_opts;    /* borrowed by the pool */
    const struct clock *clock;
    struct pool *pool;      /* owned; freed before md */
    struct metadata *md;    /* owned */
    struct ssl_ctx_st *tls; /* owned; NULL without TLS */
    char *sasl_mechanism;   /* owned copies; NULL without SASL */
    char *sasl_user;
    char *sasl_password; /* wiped before it is freed */
};

static inline uint64_t client_now_ms(const struct weir_client *c)
{
    return clock_now_ms(c->clock);
}

/* The topic's entry with fresh metadata if it has none yet. Errors:
 * WEIR_EUNKNOWN_TOPIC_OR_PARTITION ("topic 'x' does not exist"), the
 * topic's error, transport errors, WEIR_ENOMEM. */
WEIR_MUST_CHECK int client_topic(struct weir_client *c,
                                 const char *topic,
                                 bool refresh,
                                 struct md_topic **out,
                                 struct err_detail *ed);

#endif /* CLIENT_CLIENT_H */
