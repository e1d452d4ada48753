/* SPDX-License-Identifier: Apache-2.0 */
/* The controller's options. Every one is a flag, a config-file key and a
 * WEIR_<NAME> environment variable (common/cfg.h). */
#include <stddef.h>
#include <string.h>

#include "controller/ctl_io.h"

#define OPT_STR(n, def, help, field)                                           \
    {                                                                          \
        n, CFG_STR, def, help, offsetof(struct ctl_server_config, field), 0, 0 \
    }
#define OPT_INT(n, def, help, field, lo, hi)                                   \
    {                                                                          \
        n, CFG_INT, def, help, offsetof(struct ctl_server_config, field), lo,  \
            hi                                                                 \
    }
#define OPT_BOOL(n, def, help, field)                                          \
    {                                                                          \
        n, CFG_BOOL, def, help, offsetof(struct ctl_server_config, field), 0,  \
            1                                                                  \
    }

const struct cfg_option ctl_options[] = {
    OPT_STR(
        "listen", "127.0.0.1:9090", "address brokers and clients use", listen),
    OPT_STR("advertise",
            NULL,
            "controller address given out in metadata (default: listen)",
            advertise),
    OPT_STR("data-dir",
            "./data/controller",
            "directory holding the metadata log and snapshot",
            data_dir),
    OPT_BOOL("auto-format",
             "false",
             "on an empty data dir (no meta.properties, no metadata log), "
             "create a new cluster instead of refusing to start (the "
             "explicit way: weir-controller --format)",
             auto_format),
    OPT_STR("cluster-id",
            NULL,
            "id of the cluster --format or auto-format creates (default: "
            "random); on a formatted data dir it must match",
            cluster_id),
    OPT_STR("standby-of",
            NULL,
            "testing only, until the controller quorum decides it: run as "
            "a member that is not the active controller and answer every "
            "broker and admin call NOT_CONTROLLER naming this host:port",
            standby_of),
    OPT_STR("log-level",
            "info",
            "trace level: debug, info, warn, error",
            log_level),
    OPT_INT("session-timeout-ms",
            "3000",
            "fence a broker not heard from for longer than this",
            session_timeout_ms,
            1,
            (int64_t)CTL_MAX_INTERVAL_MS),
    OPT_INT("disconnect-timeout-ms",
            "1000",
            "fence a broker this long after its heartbeat connection closed "
            "from its side, unless it heartbeats again first (0 = only the "
            "session timeout fences)",
            disconnect_timeout_ms,
            0,
            (int64_t)CTL_MAX_INTERVAL_MS),
    OPT_INT("first-contact-timeout-ms",
            "1500",
            "after this controller starts or becomes the active one, fence a "
            "broker not heard from within this (a live broker finds it in a "
            "few hundred ms; one killed with the old active controller never "
            "does); 0 or at least session-timeout-ms = the session timeout",
            first_contact_timeout_ms,
            0,
            (int64_t)CTL_MAX_INTERVAL_MS),
    OPT_INT("heartbeat-interval-ms",
            "500",
            "how often brokers are expected to heartbeat (documentation: "
            "brokers set their own; keep it well below the session timeout)",
            heartbeat_interval_ms,
            1,
            (int64_t)CTL_MAX_INTERVAL_MS),
    OPT_INT("default-partitions",
            "1",
            "partitions of a topic created without a count",
            default_partitions,
            1,
            META_MAX_PARTITIONS),
    OPT_INT("default-replication-factor",
            "3",
            "replicas of a topic created without a factor (capped at the "
            "brokers registered; creation waits for enough in service)",
            default_replication_factor,
            1,
            META_MAX_REPLICAS),
    OPT_INT("default-min-insync-replicas",
            "2",
            "min.insync.replicas written for topics that do not set it "
            "(capped at the replication factor)",
            default_min_insync_replicas,
            1,
            META_MAX_REPLICAS),
    OPT_INT("rebalance-interval-ms",
            "300000",
            "preferred-leader rebalance period; 0 = off",
            rebalance_interval_ms,
            0,
            (int64_t)CTL_MAX_INTERVAL_MS),
    OPT_BOOL("tls",
             "false",
             "speak TLS on the listener; in a quorum (voters) members "
             "also talk to each other with mutual TLS (tls-cert presented, "
             "peers verified against tls-ca, which is then required)",
             tls),
    OPT_STR("tls-listen",
            NULL,
            "a TLS listener beside the plain one (HOST:PORT)",
            tls_listen),
    OPT_STR("tls-cert", NULL, "TLS: certificate chain (PEM)", tls_cert),
    OPT_STR("tls-key", NULL, "TLS: private key of tls-cert (PEM)", tls_key),
    OPT_STR("tls-ca",
            NULL,
            "TLS: CAs (PEM) that sign client certificates, for "
            "tls-client-auth",
            tls_ca),
    OPT_STR("tls-client-auth",
            "none",
            "TLS: none, or required (mutual TLS: brokers and clients "
            "present a certificate signed by tls-ca); a TLS quorum member "
            "asks every client for one even with none (a certificate "
            "given must verify; raft messages need one)",
            tls_client_auth),
    OPT_STR("sasl-mechanisms",
            NULL,
            "brokers and clients must log in with one of these SASL "
            "mechanisms (SCRAM-SHA-256,SCRAM-SHA-512) or a TLS client "
            "certificate (unset: no authentication)",
            sasl_mechanisms),
    OPT_BOOL("authorizer",
             "false",
             "enforce ACLs: nothing is allowed without a rule, except for "
             "super-users",
             authorizer),
    OPT_STR("super-users",
            NULL,
            "principals allowed everything, separated by ';' (e.g. "
            "User:admin;CN=broker-1,O=weir)",
            super_users),
    OPT_STR("bootstrap-users-file",
            NULL,
            "at start, create the users of this file that do not exist yet: "
            "lines of NAME PASSWORD, for every mechanism of sasl-mechanisms "
            "(the file must not be readable by group or others)",
            bootstrap_users_file),
    OPT_BOOL("unclean-leader-election",
             "false",
             "elect a leader from outside the ISR when no ISR member is "
             "in service (loses committed records)",
             unclean_leader_election),
    OPT_INT("snapshot-every-records",
            "10000",
            "write a snapshot and start a new log after this many records",
            snapshot_every_records,
            1,
            100000000),
    OPT_INT("max-frame-bytes",
            "8388608",
            "largest request frame accepted",
            max_frame_bytes,
            1024,
            1073741824),
    OPT_INT("id",
            "0",
            "this controller's voter id in the quorum (one of voters); 0 = "
            "no quorum",
            id,
            0,
            RAFT_MAX_ID),
    OPT_STR("voters",
            NULL,
            "the controller quorum: ID@HOST:PORT,... (1 to 7 members, each "
            "a controller's listen address; unset: a single controller, as "
            "before)",
            voters),
    OPT_INT("election-timeout-ms",
            "1000",
            "quorum: a member that hears no leader for this long (randomised "
            "up to twice it) starts an election",
            election_timeout_ms,
            10,
            600000),
    OPT_INT("raft-heartbeat-interval-ms",
            "100",
            "quorum: how often the leader heartbeats (at most half of "
            "election-timeout-ms)",
            raft_heartbeat_interval_ms,
            1,
            300000),
    OPT_INT("metadata-max-wait-ms",
            "30000",
            "longest a FetchMetadata long poll is held",
            metadata_max_wait_ms,
            0,
            600000),
};

const size_t ctl_options_count = sizeof(ctl_options) / sizeof(ctl_options[0]);

int ctl_server_core_config(const struct ctl_server_config *c,
                           struct ctl_config *out,
                           struct err_detail *ed)
{
    ctl_config_init(out);
    out->session_timeout_ms = (uint64_t)c->session_timeout_ms;
    out->disconnect_timeout_ms = (uint64_t)c->disconnect_timeout_ms;
    out->first_contact_timeout_ms = (uint64_t)c->first_contact_timeout_ms;
    out->rebalance_interval_ms = (uint64_t)c->rebalance_interval_ms;
    out->default_partitions = (int32_t)c->default_partitions;
    out->default_replication_factor = (int32_t)c->default_replication_factor;
    out->default_min_insync_replicas = (int32_t)c->default_min_insync_replicas;
    out->unclean_leader_election = c->unclean_leader_election;
    if (c->heartbeat_interval_ms >= c->session_timeout_ms) {
        return err_set(ed, WEIR_ECONFIG,
                       "heartbeat-interval-ms (%lld) must be below "
                       "session-timeout-ms (%lld)",
                       (long long)c->heartbeat_interval_ms,
                       (long long)c->session_timeout_ms);
    }
    return 0;
}

int ctl_server_quorum_config(const struct ctl_server_config *c,
                             struct raft_voters *voters,
                             struct err_detail *ed)
{
    int rv;

    memset(voters, 0, sizeof(*voters));
    /* one lost heartbeat must not start an election */
    if (c->raft_heartbeat_interval_ms * 2 > c->election_timeout_ms) {
        return err_set(ed, WEIR_ECONFIG,
                       "raft-heartbeat-interval-ms (%lld) must be at most "
                       "half of election-timeout-ms (%lld)",
                       (long long)c->raft_heartbeat_interval_ms,
                       (long long)c->election_timeout_ms);
    }
    if (c->voters == NULL || c->voters[0] == '\0') {
        return 0;
    }
    rv = raft_voters_parse(c->voters, voters, ed);
    if (rv != 0) {
        return rv;
    }
    if (c->id == 0) {
        memset(voters, 0, sizeof(*voters));
        return err_set(ed, WEIR_ECONFIG,
                       "voters is set but id is not: give this controller's "
                       "id among the voters (--id, WEIR_ID)");
    }
    if (raft_voters_find(voters, (uint32_t)c->id) == NULL) {
        memset(voters, 0, sizeof(*voters));
        return err_set(ed, WEIR_ECONFIG,
                       "id %lld is not one of the voters (%s)",
                       (long long)c->id, c->voters);
    }
    /* members verify each other's certificates: against what, if not
     * tls-ca? (the system's CAs would let any public certificate in) */
    if (c->tls && (c->tls_ca == NULL || c->tls_ca[0] == '\0')) {
        memset(voters, 0, sizeof(*voters));
        return err_set(ed, WEIR_ECONFIG,
                       "tls is on in a quorum (voters): members verify each "
                       "other with tls-ca; set it to the CA that signs the "
                       "members' certificates");
    }
    return 0;
}
