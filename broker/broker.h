/* SPDX-License-Identifier: Apache-2.0 */
/* The broker process: configuration, the data directory (logmgr), the RPC
 * server, group commit and parked long-poll fetches. Request handlers live
 * in api/, one file per call; this header is what they share.
 * Locality: everything here runs on the one event loop thread. */
#ifndef BROKER_BROKER_H
#define BROKER_BROKER_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/broker_ident.h"
#include "broker/idem/idem_io.h"
#include "broker/idem/idem_pid.h"
#include "broker/storage/logmgr.h"
#include "common/authz.h"
#include "common/cfg.h"
#include "common/clock.h"
#include "common/net/sasl_srv.h"
#include "common/net/srv.h"
#include "proto/weir.pb-c.h"

struct event_base;
struct evbuffer;
struct quota;
struct broker_held;

struct broker_config {
    char *listen;
    char *advertise;
    char *data_dir;
    int64_t id;
    char *log_level;
    int64_t max_frame_bytes;
    int64_t max_connections;
    int64_t max_connections_per_ip;
    int64_t max_inflight_per_connection;
    int64_t max_queued_response_bytes;
    int64_t quota_produce_bytes_per_sec;
    int64_t quota_fetch_bytes_per_sec;
    int64_t idle_timeout_ms;
    int64_t frame_timeout_ms;
    int64_t segment_bytes;
    int64_t segment_ms;
    int64_t retention_ms;
    int64_t retention_bytes;
    int64_t retention_check_interval_ms;
    int64_t log_offline_retry_ms; /* how often offline logs try to return */
    int64_t log_min_free_bytes;   /* ... once this much space is free */
    int64_t scrub_bytes_per_sec;  /* CRC scrub of unchecked bytes; 0 off */
    int64_t index_interval_bytes;
    int64_t max_message_bytes;
    char *flush_policy;
    int64_t flush_interval_ms;
    int64_t flush_messages;
    int64_t fetch_max_wait_ms;
    int64_t default_partitions;
    int64_t producer_id_expiry_ms;
    char *controller; /* cluster mode: controller HOST:PORT; NULL = alone */
    char *rack;
    bool tls;
    char *tls_listen;
    char *tls_advertise;
    char *tls_cert;
    char *tls_key;
    char *tls_ca;
    char *tls_client_auth;
    char *sasl_mechanisms; /* clients must log in with one of these */
    char *sasl_mechanism;  /* this broker's own logins */
    char *sasl_username;
    char *sasl_password;
    bool authorizer;
    char *super_users;
    int64_t heartbeat_interval_ms;
    int64_t controlled_shutdown_timeout_ms;
    int64_t replica_lag_time_max_ms;
    int64_t offsets_topic_num_partitions;
    int64_t offsets_topic_segment_bytes;
    int64_t group_min_session_timeout_ms;
    int64_t group_max_session_timeout_ms;
    int64_t group_initial_rebalance_delay_ms;
};

extern const struct cfg_option broker_options[];
extern const size_t broker_options_count;

/* Parse a flush policy name ("ack", "interval", "never"). */
WEIR_MUST_CHECK int broker_parse_flush_policy(const char *s,
                                              enum plog_flush_policy *out);
const char *broker_flush_policy_name(enum plog_flush_policy p);

struct produce_wait; /* api/produce.c */
struct fetch_wait;   /* api/fetch.c */
struct pid_wait;     /* api/producer_id.c */
struct cluster;      /* cluster/cluster.h */
struct repl_io;      /* replica/repl_io.h */
struct group_io;     /* group/group_io.h */
struct log_health;   /* log_health.h */

struct broker {
    struct broker_config cfg;
    struct plog_config log_defaults;
    struct broker_ident ident; /* the data dir's identity files */
    const struct clock *clock;
    struct event_base *base;
    struct logmgr *logs;
    struct srv *srv;
    struct srv *srv_tls; /* tls-listen beside srv, or NULL */
    char tls_adv_host[256];
    uint16_t tls_adv_port;
    struct ssl_ctx_st *tls_server; /* NULL without tls or tls-listen */
    struct quota *produce_quota;   /* NULL: no quota */
    struct quota *fetch_quota;
    struct broker_held *held;      /* answers held for a quota */
    struct ssl_ctx_st *tls_client; /* to the controller and other brokers */
    struct sasl_srv sasl;          /* mechs 0: no SASL */
    struct authz authz;
    char adv_host[256];
    uint16_t adv_port;

    /* group commit: logs appended to since the last flush, fsynced once
     * per loop pass for every request that arrived meanwhile */
    struct plog **dirty;
    uint32_t n_dirty;
    uint32_t cap_dirty;
    struct event *flush_ev;
    struct produce_wait *produce_waits; /* acks waiting for an fsync */

    struct fetch_wait *fetch_waits; /* parked long polls */

    struct idem_io *idem;          /* idempotent producer state */
    struct idem_pid_file pid_file; /* where producer id blocks come from */
    struct idem_pid pids;          /* InitProducerId allocator */
    struct pid_wait *pid_waits;    /* cluster: waiting for a block */
    bool pid_asking;               /* cluster: AllocateProducerIds sent */

    struct cluster *cluster; /* cluster mode only (broker/cluster/) */
    struct repl_io *repl;    /* cluster mode only (broker/replica/repl_io) */
    struct group_io *group;  /* consumer group coordinator (broker/group) */

    struct event *flush_timer;     /* flush-policy=interval */
    struct event *housekeep_timer; /* retention and age rolls */
    struct log_health *health;     /* offline logs, scrub (log_health.h) */
    struct event *sig_term;
    struct event *sig_int;
    bool stopping;
};

/* End of what consumers may read: the durable end with flush-policy=ack,
 * else the log end (records become visible once written). */
int64_t broker_high_watermark(const struct broker *b, const struct plog *log);

/* Encode resp (+ payload moved from `payload`, may be NULL) and answer. */
void broker_respond(struct srv_req *req,
                    Weir__Response *resp,
                    struct evbuffer *payload,
                    bool close_after);
/* As broker_respond, held delay_ms first (a byte-rate quota; 0 = now).
 * Answers still held at shutdown go at once (broker_release_held). */
void broker_respond_after(struct broker *b,
                          struct srv_req *req,
                          Weir__Response *resp,
                          struct evbuffer *payload,
                          uint32_t delay_ms);
void broker_release_held(struct broker *b);
/* Whom a request's quota is charged to: its TLS principal, else its
 * client id. */
const char *broker_quota_key(const struct srv_req *req, const Weir__Request *r);
/* Answer a request with a request-level error. */
void broker_respond_error(struct srv_req *req,
                          uint32_t correlation_id,
                          int code,
                          const char *msg,
                          bool close_after);

/* Note an append that needs an fsync before acknowledging. */
void broker_mark_dirty(struct broker *b, struct plog *log);
/* Flush every dirty log now and complete whatever waited for it. */
void broker_flush_dirty(struct broker *b);
/* Records became readable somewhere: retry parked fetches. */
void broker_readable(struct broker *b);

#endif /* BROKER_BROKER_H */
