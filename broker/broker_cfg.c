/* SPDX-License-Identifier: Apache-2.0 */
/* The broker's options. Every one is a flag, a config-file key and a
 * WEIR_<NAME> environment variable (common/cfg.h). Defaults run a local
 * broker with no configuration at all. */
#include <stddef.h>
#include <string.h>

#include "broker/broker.h"

#define OPT_STR(n, def, help, field)                                           \
    {                                                                          \
        n, CFG_STR, def, help, offsetof(struct broker_config, field), 0, 0     \
    }
#define OPT_INT(n, def, help, field, lo, hi)                                   \
    {                                                                          \
        n, CFG_INT, def, help, offsetof(struct broker_config, field), lo, hi   \
    }

const struct cfg_option broker_options[] = {
    OPT_STR(
        "listen", "127.0.0.1:9092", "address for client connections", listen),
    OPT_STR("advertise",
            NULL,
            "address given to clients in metadata (default: listen)",
            advertise),
    OPT_STR(
        "data-dir", "./data", "directory holding the partition logs", data_dir),
    OPT_INT("id", "1", "broker id", id, 0, INT32_MAX),
    OPT_STR("log-level",
            "info",
            "trace level: debug, info, warn, error",
            log_level),
    OPT_INT("max-frame-bytes",
            "8388608",
            "largest request frame accepted from a client",
            max_frame_bytes,
            1024,
            1073741824),
    OPT_INT("max-connections",
            "10000",
            "client connections in total",
            max_connections,
            1,
            1000000),
    OPT_INT("max-connections-per-ip",
            "1000",
            "client connections from one address",
            max_connections_per_ip,
            1,
            1000000),
    OPT_INT("max-inflight-per-connection",
            "64",
            "requests read ahead on one connection before reading pauses",
            max_inflight_per_connection,
            1,
            100000),
    OPT_INT("max-queued-response-bytes",
            "134217728",
            "answers queued on all connections together: past this, a "
            "connection whose answers are unread is not read (0 = no limit)",
            max_queued_response_bytes,
            0,
            INT64_MAX),
    OPT_INT("quota-produce-bytes-per-sec",
            "0",
            "byte rate each client (TLS principal, else client id) may "
            "produce; faster ones get their answers late (0 = no quota)",
            quota_produce_bytes_per_sec,
            0,
            INT64_MAX),
    OPT_INT("quota-fetch-bytes-per-sec",
            "0",
            "byte rate each client may fetch (followers are exempt; 0 = no "
            "quota)",
            quota_fetch_bytes_per_sec,
            0,
            INT64_MAX),
    OPT_INT("idle-timeout-ms",
            "600000",
            "close a connection silent for this long",
            idle_timeout_ms,
            100,
            INT32_MAX),
    OPT_INT("frame-timeout-ms",
            "30000",
            "close a connection whose started frame does not complete in "
            "time",
            frame_timeout_ms,
            10,
            INT32_MAX),
    OPT_INT("segment-bytes",
            "1073741824",
            "roll a segment past this size",
            segment_bytes,
            4096,
            INT32_MAX),
    OPT_INT("segment-ms",
            "604800000",
            "roll a segment older than this",
            segment_ms,
            1,
            INT64_MAX),
    OPT_INT("retention-ms",
            "604800000",
            "delete closed segments whose newest record is older (-1: "
            "never)",
            retention_ms,
            -1,
            INT64_MAX),
    OPT_INT("retention-bytes",
            "-1",
            "per partition, delete oldest closed segments beyond this size "
            "(-1: no limit)",
            retention_bytes,
            -1,
            INT64_MAX),
    OPT_INT("retention-check-interval-ms",
            "60000",
            "how often retention and age-based rolls run",
            retention_check_interval_ms,
            10,
            INT32_MAX),
    OPT_INT("log-offline-retry-ms",
            "5000",
            "how often a partition log taken offline by a storage failure "
            "or corruption tries to come back",
            log_offline_retry_ms,
            100,
            INT32_MAX),
    OPT_INT("log-min-free-bytes",
            "16777216",
            "free space the data directory's file system needs before an "
            "offline log comes back",
            log_min_free_bytes,
            0,
            INT64_MAX),
    OPT_INT("scrub-bytes-per-sec",
            "16777216",
            "rate at which segments not yet checked since the start are "
            "read to verify their CRCs (0 = no scrub; reads still check)",
            scrub_bytes_per_sec,
            0,
            INT64_MAX),
    OPT_INT("index-interval-bytes",
            "4096",
            "log bytes between offset index entries",
            index_interval_bytes,
            64,
            1048576),
    OPT_INT("max-message-bytes",
            "1048588",
            "largest record batch accepted",
            max_message_bytes,
            64,
            1073741824),
    OPT_STR("flush-policy",
            "ack",
            "ack: fsync before acknowledging (group commit); interval: "
            "fsync every flush-interval-ms or flush-messages; never: leave "
            "it to the OS",
            flush_policy),
    OPT_INT("flush-interval-ms",
            "1000",
            "with flush-policy=interval, fsync at least this often",
            flush_interval_ms,
            1,
            INT32_MAX),
    OPT_INT("flush-messages",
            "10000",
            "with flush-policy=interval, fsync after this many records",
            flush_messages,
            1,
            INT64_MAX),
    OPT_INT("fetch-max-wait-ms",
            "30000",
            "cap on how long a fetch may wait for data",
            fetch_max_wait_ms,
            0,
            600000),
    OPT_INT("default-partitions",
            "1",
            "partitions of a topic created without a count",
            default_partitions,
            1,
            LOGMGR_MAX_PARTITIONS),
    OPT_INT("producer-id-expiry-ms",
            "86400000",
            "forget an idempotent producer's sequence state after this "
            "long without a batch from it (by batch timestamp)",
            producer_id_expiry_ms,
            1,
            INT64_MAX),
    OPT_STR("controller",
            NULL,
            "controller HOST:PORT, or a comma-separated list of the "
            "controller quorum's members: join that cluster, following "
            "the active controller (unset: run alone with a local topic "
            "manifest)",
            controller),
    OPT_STR("rack", NULL, "rack of this broker, for replica placement", rack),
    {"tls", CFG_BOOL, "false",
     "speak TLS on the listener and to the controller and other brokers",
     offsetof(struct broker_config, tls), 0, 0},
    OPT_STR("tls-listen",
            NULL,
            "a TLS listener for clients beside the plain one (HOST:PORT)",
            tls_listen),
    OPT_STR("tls-advertise",
            NULL,
            "address of tls-listen given to clients (default: tls-listen)",
            tls_advertise),
    OPT_STR("tls-cert", NULL, "TLS: certificate chain (PEM)", tls_cert),
    OPT_STR("tls-key", NULL, "TLS: private key of tls-cert (PEM)", tls_key),
    OPT_STR("tls-ca",
            NULL,
            "TLS: CAs (PEM) to verify the controller, other brokers and, "
            "with tls-client-auth, clients (default: the system's)",
            tls_ca),
    OPT_STR("tls-client-auth",
            "none",
            "TLS: none, or required (mutual TLS: clients present a "
            "certificate signed by tls-ca)",
            tls_client_auth),
    OPT_STR("sasl-mechanisms",
            NULL,
            "clients must log in with one of these SASL mechanisms "
            "(SCRAM-SHA-256,SCRAM-SHA-512) or a TLS client certificate "
            "(cluster mode; unset: no authentication)",
            sasl_mechanisms),
    OPT_STR("sasl-mechanism",
            "SCRAM-SHA-256",
            "mechanism of this broker's own logins to the controller and "
            "other brokers",
            sasl_mechanism),
    OPT_STR("sasl-username",
            NULL,
            "user this broker logs in as to the controller and other "
            "brokers (unset: no SASL login; a TLS certificate may do)",
            sasl_username),
    OPT_STR("sasl-password",
            NULL,
            "password of sasl-username (prefer WEIR_SASL_PASSWORD)",
            sasl_password),
    {"authorizer", CFG_BOOL, "false",
     "enforce ACLs: nothing is allowed without a rule, except for "
     "super-users (cluster mode)",
     offsetof(struct broker_config, authorizer), 0, 0},
    OPT_STR("super-users",
            NULL,
            "principals allowed everything, separated by ';' (e.g. "
            "User:admin;CN=broker-1,O=weir)",
            super_users),
    OPT_INT("heartbeat-interval-ms",
            "500",
            "cluster mode: heartbeat to the controller this often",
            heartbeat_interval_ms,
            10,
            60000),
    OPT_INT("controlled-shutdown-timeout-ms",
            "5000",
            "cluster mode: on SIGTERM, wait this long at most for the "
            "controller to move leaderships away",
            controlled_shutdown_timeout_ms,
            0,
            600000),
    OPT_INT("replica-lag-time-max-ms",
            "30000",
            "cluster mode: a follower not caught up for this long leaves "
            "the ISR",
            replica_lag_time_max_ms,
            1,
            INT64_MAX),
    OPT_INT("offsets-topic-num-partitions",
            "12",
            "partitions of __consumer_offsets when it is first created (a "
            "group's coordinator is the leader of one of them)",
            offsets_topic_num_partitions,
            1,
            1000),
    OPT_INT("offsets-topic-segment-bytes",
            "104857600",
            "segment size of __consumer_offsets when it is first created "
            "(compaction cleans closed segments only)",
            offsets_topic_segment_bytes,
            4096,
            INT32_MAX),
    OPT_INT("group-min-session-timeout-ms",
            "1000",
            "shortest consumer session timeout a group member may ask for",
            group_min_session_timeout_ms,
            1,
            INT32_MAX),
    OPT_INT("group-max-session-timeout-ms",
            "300000",
            "longest consumer session timeout a group member may ask for",
            group_max_session_timeout_ms,
            1,
            INT32_MAX),
    OPT_INT("group-initial-rebalance-delay-ms",
            "0",
            "an empty group's first rebalance waits this long for more "
            "members to join",
            group_initial_rebalance_delay_ms,
            0,
            INT32_MAX),
};

const size_t broker_options_count =
    sizeof(broker_options) / sizeof(broker_options[0]);

int broker_parse_flush_policy(const char *s, enum plog_flush_policy *out)
{
    if (strcmp(s, "ack") == 0) {
        *out = PLOG_FLUSH_ACK;
    } else if (strcmp(s, "interval") == 0) {
        *out = PLOG_FLUSH_INTERVAL;
    } else if (strcmp(s, "never") == 0) {
        *out = PLOG_FLUSH_NEVER;
    } else {
        return WEIR_ECONFIG;
    }
    return 0;
}

const char *broker_flush_policy_name(enum plog_flush_policy p)
{
    switch (p) {
    case PLOG_FLUSH_ACK:
        return "ack";
    case PLOG_FLUSH_INTERVAL:
        return "interval";
    case PLOG_FLUSH_NEVER:
        return "never";
    }
    return "?";
}
