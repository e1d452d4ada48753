/* SPDX-License-Identifier: Apache-2.0 */
/* The weir-controller process: options, the adapter that drives ctl_core
 * (stamps events with the clock, persists each step's batch before anyone
 * sees it, arms the TICK timer, rebuilds the core from the log when it ran
 * ahead), the RPC server and the long-polling metadata fetchers.
 * Locality: everything runs on the one event loop thread. */
#ifndef CONTROLLER_CTL_IO_H
#define CONTROLLER_CTL_IO_H

#include <stdbool.h>
#include <stdint.h>

#include "common/authz.h"
#include "common/cfg.h"
#include "common/clock.h"
#include "common/net/sasl_srv.h"
#include "common/net/srv.h"
#include "controller/ctl_log.h"
#include "controller/elect/ctl_core.h"
#include "controller/quorum/raft_voters.h"
#include "proto/weir.pb-c.h"

struct event_base;
struct event;
struct evbuffer;

struct ctl_server_config {
    char *listen;
    char *advertise;
    char *data_dir;
    char *log_level;
    int64_t session_timeout_ms;
    int64_t disconnect_timeout_ms;
    int64_t first_contact_timeout_ms;
    int64_t heartbeat_interval_ms;
    int64_t default_partitions;
    int64_t default_replication_factor;
    int64_t default_min_insync_replicas;
    int64_t rebalance_interval_ms;
    bool unclean_leader_election;
    int64_t snapshot_every_records;
    int64_t max_frame_bytes;
    int64_t metadata_max_wait_ms;
    bool tls;
    char *tls_listen;
    char *tls_cert;
    char *tls_key;
    char *tls_ca;
    char *tls_client_auth;
    char *sasl_mechanisms;
    bool authorizer;
    char *super_users;
    char *bootstrap_users_file;
    bool auto_format;
    char *cluster_id;
    /* controller quorum (controller/quorum/): 0 and NULL without one */
    int64_t id;
    char *voters;
    int64_t election_timeout_ms;
    int64_t raft_heartbeat_interval_ms;
    char *standby_of; /* testing: start as a member that is not active */
};

extern const struct cfg_option ctl_options[];
extern const size_t ctl_options_count;

struct ctl_wait;   /* a parked FetchMetadata (ctl_rpc.c) */
struct ctl_quorum; /* the quorum adapter (ctl_quorum.h) */

/* Where RaftMessage requests go (raft_net_on_request): it must finish req
 * (one-way, no answer). r is freed after the call. */
typedef void (*ctl_raft_fn)(void *arg,
                            struct srv_req *req,
                            const Weir__Request *r);

#define CTL_CLUSTER_ID_CAP 65 /* METAPROPS_ID_MAX + 1 */

struct ctl_server {
    struct ctl_server_config cfg;
    struct ctl_config core_cfg;
    const struct clock *clock;
    struct event_base *base;
    struct srv *srv;
    struct srv *srv_tls;    /* tls-listen beside srv, or NULL */
    struct ssl_ctx_st *tls; /* NULL without tls or tls-listen */
    struct sasl_srv sasl;   /* mechs 0: no SASL */
    struct authz authz;
    struct ctl_log *log;
    struct ctl_core *core;  /* NULL only when a rebuild failed */
    struct ctl_actions act; /* of the latest step */
    struct ctl_wait *waits;
    struct event *tick_ev;
    struct event *sig_term;
    struct event *sig_int;
    char address[300]; /* host:port given to clients as the controller */
    char cluster_id[CTL_CLUSTER_ID_CAP]; /* from meta.properties */
    struct raft_voters voters;           /* --voters; n == 0: no quorum */
    ctl_raft_fn raft_hook;     /* NULL: RaftMessage is UNSUPPORTED_API */
    struct ctl_quorum *quorum; /* ctl_quorum.h; NULL: a single controller */
    void *raft_hook_arg;
    /* quorum membership (ctl_member.c): only the active member serves
     * brokers and admins; the others answer NOT_CONTROLLER naming it */
    bool active;           /* true until the quorum code says otherwise */
    int32_t active_id;     /* the active member's node id; -1: unknown */
    char active_addr[300]; /* its advertised host:port; "": unknown */
    int exit_code;
    bool stopping;
};

/* Map the options onto the core's settings. Errors: WEIR_ECONFIG. */
WEIR_MUST_CHECK int ctl_server_core_config(const struct ctl_server_config *c,
                                           struct ctl_config *out,
                                           struct err_detail *ed);

/* The quorum options: --voters parsed into *voters (n 0 without it),
 * --id one of them, the Raft timeouts consistent. Without --voters, --id
 * is not used (WEIR_ID is also the broker's id variable).
 * Errors: WEIR_ECONFIG. */
WEIR_MUST_CHECK int ctl_server_quorum_config(const struct ctl_server_config *c,
                                             struct raft_voters *voters,
                                             struct err_detail *ed);

/* ctl_ident.c: the data dir's identity (meta.properties).
 * Format dir as a new cluster (cluster_id, or a random one when NULL or
 * empty) and put the id in out. Refuses a dir that is formatted already or
 * holds a metadata log. Errors: WEIR_ECONFIG (refused, bad id), WEIR_EIO,
 * WEIR_ECORRUPT, WEIR_ENOMEM. */
WEIR_MUST_CHECK int ctl_ident_format(const char *dir,
                                     const char *cluster_id,
                                     char out[CTL_CLUSTER_ID_CAP],
                                     struct err_detail *ed);
/* At start: s->cluster_id from meta.properties; a dir without one is
 * adopted (it holds a metadata log from before cluster ids) or formatted
 * (auto-format, empty dir), else refused.
 * Errors: WEIR_ECONFIG (not formatted, cluster-id mismatch), WEIR_EIO,
 * WEIR_ECORRUPT. */
WEIR_MUST_CHECK int ctl_ident_load(struct ctl_server *s, struct err_detail *ed);

/* Load the identity and the log, build the core, listen, arm timers and
 * signals. Errors: WEIR_ECONFIG (data dir not formatted), WEIR_EIO,
 * WEIR_ECORRUPT, WEIR_ENETWORK, WEIR_ENOMEM. */
WEIR_MUST_CHECK int ctl_server_open(struct ctl_server *s,
                                    struct err_detail *ed);
/* Run until SIGTERM/SIGINT (or a fatal error). Returns the exit code. */
int ctl_server_run(struct ctl_server *s);
void ctl_server_close(struct ctl_server *s);

/* Stamp ev with the time, step the core and persist the batch (append +
 * fsync). 0: s->act holds the answer (act.result may still be a refusal)
 * and the batch is durable, so it may be replied to. Else the step failed
 * and nothing was persisted: reply with the returned code (s->act.detail
 * says why). */
int ctl_server_step(struct ctl_server *s, struct ctl_event *ev);

/* ctl_member.c. The quorum adapter says whether this member is the
 * active controller and, when not, which one is (active_addr "host:port",
 * NULL or "" when unknown; copied). Going inactive answers every parked
 * FetchMetadata NOT_CONTROLLER at once; while inactive ctl_server_step
 * refuses every event (WEIR_ENOT_CONTROLLER) and the TICK timer stops;
 * going active fires a TICK. The core is not rebuilt here: a member
 * becoming active must first bring its core up to the committed log
 * (fresh broker sessions, as after a restart). ctl_server_set_active_id
 * sets the id sent beside the address (-1: unknown; call it first). */
void ctl_server_set_active(struct ctl_server *s,
                           bool active,
                           const char *active_addr);
void ctl_server_set_active_id(struct ctl_server *s, int32_t id);
/* Answer req (correlation id corr) NOT_CONTROLLER with the hint. */
void ctl_member_refuse(struct ctl_server *s,
                       struct srv_req *req,
                       uint32_t corr);
/* Does this call need the active controller (every broker and admin call;
 * SASL and unknown calls do not)? */
bool ctl_member_needs_active(const Weir__Request *r);

/* The image brokers are served and logins are checked against: in a
 * quorum the applied one (ctl_core's runs ahead of the commit while it
 * leads), else ctl_core's. NULL while neither exists. */
const struct meta_image *ctl_server_image(const struct ctl_server *s);

/* ctl_rpc.c: request dispatch (the srv handler) and the long polls. */
void ctl_rpc_dispatch(void *arg, struct srv_req *req);
/* The log grew (or final: the server stops): answer parked fetches. */
void ctl_rpc_wake(struct ctl_server *s, bool final);
void ctl_rpc_respond(struct srv_req *req,
                     Weir__Response *resp,
                     struct evbuffer *payload);

#endif /* CONTROLLER_CTL_IO_H */
