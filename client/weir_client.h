/* SPDX-License-Identifier: Apache-2.0 */
/* libweir client: bootstrap list, metadata cache, broker connections
 * (part of the public API; include client/weir.h). Connects lazily.
 * Locality: one thread per client (and its producers and consumers). */
#ifndef CLIENT_WEIR_CLIENT_H
#define CLIENT_WEIR_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/clock.h"
#include "common/err.h"

struct weir_client;   /* opaque: client.c */
struct weir_producer; /* opaque: producer.c */
struct weir_consumer; /* opaque: consumer.c */

#define WEIR_DEFAULT_BOOTSTRAP "127.0.0.1:9092"
#define WEIR_PARTITION_ANY     (-1) /* let the partitioner choose */
#define WEIR_OFFSET_LATEST     (-1) /* ListOffsets: the next offset to write */
#define WEIR_OFFSET_EARLIEST   (-2) /* ListOffsets: the log start offset */

/* "0.1.0" */
const char *weir_version(void);

/* ---- client ---- */

struct weir_client_config {
    const char *bootstrap;       /* "host:port[,host:port]"; copied */
    const char *client_id;       /* sent with every request; copied */
    uint32_t connect_timeout_ms; /* per connection attempt */
    uint32_t request_timeout_ms; /* per request (fetch adds max_wait) */
    uint32_t max_frame_bytes;    /* larger responses close the connection */
    const struct clock *clock;   /* NULL = clock_system(); borrowed */
    /* TLS to every broker (TLS 1.2 at least; the broker's certificate
     * must match the address's host name or IP and chain to tls_ca, else
     * the system's CAs); tls_cert and tls_key, if set, are presented for
     * mutual TLS. Files are read by weir_client_new. */
    bool tls;
    const char *tls_ca;
    const char *tls_cert;
    const char *tls_key;
    /* SASL/SCRAM login on every connection, before any request:
     * sasl_user set = log in as that user with sasl_password, using
     * sasl_mechanism ("SCRAM-SHA-256", the default when NULL, or
     * "SCRAM-SHA-512"). The password never crosses the wire (SCRAM
     * proves it). All three are copied by weir_client_new. A failed
     * login fails calls with WEIR_ESASL_AUTHENTICATION_FAILED (or
     * WEIR_EUNSUPPORTED_SASL_MECHANISM), whose message names the user,
     * the broker and its reason. */
    const char *sasl_mechanism;
    const char *sasl_user;
    const char *sasl_password;
};

/* Defaults: WEIR_DEFAULT_BOOTSTRAP, "weir", 5 s, 30 s, 64 MiB, no TLS,
 * no SASL. */
void weir_client_config_init(struct weir_client_config *cfg);

/* Parse the bootstrap list but connect to nothing yet (the first call that
 * needs a broker does). Errors: WEIR_EINVALID_ARGUMENT (bad list, unknown
 * SASL mechanism, a SASL user without a password), WEIR_ENOMEM. */
WEIR_MUST_CHECK int weir_client_new(const struct weir_client_config *cfg,
                                    struct weir_client **out,
                                    struct err_detail *ed);
/* Close connections, free everything. Producers and consumers must be
 * freed first. NULL is a no-op. */
void weir_client_free(struct weir_client *c);

/* Partition count of a topic, from fresh metadata. Errors:
 * WEIR_EUNKNOWN_TOPIC_OR_PARTITION, WEIR_ENETWORK (no broker reachable),
 * WEIR_EREQUEST_TIMED_OUT. */
WEIR_MUST_CHECK int weir_client_partition_count(struct weir_client *c,
                                                const char *topic,
                                                int32_t *count,
                                                struct err_detail *ed);

#endif /* CLIENT_WEIR_CLIENT_H */
