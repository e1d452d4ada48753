/* SPDX-License-Identifier: Apache-2.0 */
/* Starting a quorum member: what the data dir holds decides the kind of
 * start (ctl_start_decide.h); then the log as a Raft log, the hard state,
 * the core and the transport. Closing answers what still waits. */
#include "controller/ctl_quorum_int.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/mem.h"
#include "common/metaprops.h"
#include "common/tls.h"
#include "common/trace.h"
#include "controller/ctl_hardstate.h"
#include "controller/ctl_log_raft.h"
#include "controller/ctl_start_decide.h"

/* 8 random bytes; never 0 (a nonce of 0 means "never lost its disk") */
static int ctl_quorum_random(uint64_t *out, struct err_detail *ed)
{
    ssize_t got;
    int fd;

    fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return err_set(ed, WEIR_EIO, "open /dev/urandom: %s", strerror(errno));
    }
    got = read(fd, out, sizeof(*out));
    (void)close(fd);
    if (got != (ssize_t)sizeof(*out)) {
        return err_set(ed, WEIR_EIO, "read /dev/urandom: short read");
    }
    if (*out == 0) {
        *out = 1;
    }
    return 0;
}

static bool ctl_quorum_file_has_bytes(const char *dir, const char *name)
{
    char path[4096];
    struct stat st;

    (void)snprintf(path, sizeof(path), "%s/%s", dir, name);
    return stat(path, &st) == 0 && st.st_size > 0;
}

static int ctl_quorum_facts(const struct ctl_server *s,
                            struct ctl_start_facts *f,
                            struct err_detail *ed)
{
    struct raft_hard_state hs;
    struct metaprops p;
    int rv;

    memset(f, 0, sizeof(*f));
    rv = metaprops_read(s->cfg.data_dir, &p, &f->formatted, ed);
    if (rv == 0) {
        rv = ctl_hardstate_load(s->cfg.data_dir, &hs, &f->has_hardstate, ed);
    }
    f->has_log =
        ctl_quorum_file_has_bytes(s->cfg.data_dir, CTL_SNAPSHOT_FILE) ||
        ctl_quorum_file_has_bytes(s->cfg.data_dir, CTL_LOG_FILE);
    f->has_voters = true;
    f->auto_format = s->cfg.auto_format;
    return rv;
}

/* Format the dir with the cluster's id: a member never makes one up, as
 * the members must agree on it (each refuses the others' messages
 * otherwise). */
static int ctl_quorum_format(struct ctl_server *s, struct err_detail *ed)
{
    char id[CTL_CLUSTER_ID_CAP];

    if (s->cfg.cluster_id == NULL || s->cfg.cluster_id[0] == '\0') {
        return err_set(ed, WEIR_ECONFIG,
                       "data dir %s is empty: a quorum member formats it with "
                       "the cluster's id, the same on every member (give "
                       "--cluster-id, or run --format --cluster-id ID first)",
                       s->cfg.data_dir);
    }
    return ctl_ident_format(s->cfg.data_dir, s->cfg.cluster_id, id, ed);
}

static int ctl_quorum_prepare(struct ctl_server *s,
                              enum ctl_start_kind *kind,
                              struct err_detail *ed)
{
    struct ctl_start_decision d;
    struct ctl_start_facts f;
    struct raft_hard_state hs;
    int rv;

    rv = ctl_quorum_facts(s, &f, ed);
    if (rv != 0) {
        return rv;
    }
    ctl_start_decide(&f, &d);
    *kind = d.kind;
    trace_info("controller",
               "event=quorum_start kind=%s id=%lld voters=%u "
               "reason=\"%s\"",
               ctl_start_kind_str(d.kind), (long long)s->cfg.id, s->voters.n,
               d.reason);
    if (d.kind == CTL_START_REFUSE) {
        return err_set(ed, WEIR_ECONFIG, "data dir %s: %s", s->cfg.data_dir,
                       d.reason);
    }
    if (d.format || d.kind == CTL_START_REJOIN) {
        rv = ctl_quorum_format(s, ed);
        if (rv != 0) {
            return rv;
        }
    }
    if (d.kind == CTL_START_REJOIN) {
        /* it may have voted or acknowledged entries before the loss: the
         * nonce keeps it from voting or counting until it is readmitted,
         * and it is on disk before any message is sent */
        memset(&hs, 0, sizeof(hs));
        rv = ctl_quorum_random(&hs.nonce, ed);
        if (rv == 0) {
            rv = ctl_hardstate_save(s->cfg.data_dir, &hs, ed);
        }
        if (rv != 0) {
            return rv;
        }
        trace_warn("controller",
                   "event=quorum_rejoin nonce=%016llx msg=\"empty data dir: "
                   "this member lost its disk; it catches up and votes again "
                   "once the quorum has readmitted it\"",
                   (unsigned long long)hs.nonce);
    }
    return ctl_ident_load(s, ed);
}

static int ctl_quorum_open_log(struct ctl_quorum *q,
                               enum ctl_start_kind kind,
                               struct raft_hard_state *hs,
                               struct err_detail *ed)
{
    struct ctl_server *s = q->s;
    uint32_t ids[RAFT_MAX_VOTERS];
    struct ctl_log_stats st;
    bool found;
    uint32_t i;
    int rv;

    for (i = 0; i < s->voters.n; i++) {
        ids[i] = s->voters.v[i].id;
    }
    rv = ctl_log_raft_open(s->cfg.data_dir, ids, s->voters.n, &s->log, &q->img,
                           &st, ed);
    if (rv == 0) {
        rv = ctl_hardstate_load(s->cfg.data_dir, hs, &found, ed);
    }
    if (rv == 0 && kind == CTL_START_UPGRADE) {
        /* a single controller's history becomes a snapshot at term 1 */
        rv = ctl_log_raft_seal(s->log, q->img, ed);
        if (rv == 0 && hs->term < 1) {
            hs->term = 1;
            hs->vote = 0;
            rv = ctl_log_raft_save_hard_state(s->log, hs, ed);
        }
        if (rv == 0) {
            trace_warn("controller",
                       "event=quorum_upgrade index=%llu end_offset=%lld "
                       "msg=\"a single controller's metadata history is "
                       "sealed as the quorum's first snapshot\"",
                       (unsigned long long)ctl_log_raft_snapshot_index(s->log),
                       (long long)ctl_log_end_offset(s->log));
        }
    }
    if (rv == 0) {
        trace_info("controller",
                   "event=log_loaded snapshot_index=%llu last_index=%llu "
                   "term=%llu end_offset=%lld cut_bytes=%llu",
                   (unsigned long long)ctl_log_raft_snapshot_index(s->log),
                   (unsigned long long)ctl_log_raft_last_index(s->log),
                   (unsigned long long)hs->term,
                   (long long)ctl_log_end_offset(s->log),
                   (unsigned long long)st.cut_bytes);
    }
    return rv;
}

static int ctl_quorum_start_core(struct ctl_quorum *q,
                                 const struct raft_hard_state *hs,
                                 struct err_detail *ed)
{
    struct ctl_server *s = q->s;
    struct raft_entry *ents = NULL;
    struct raft_snapshot snap;
    struct raft_config cfg;
    struct raft_start start;
    uint32_t i;
    int rv;

    memset(&cfg, 0, sizeof(cfg));
    cfg.id = (uint32_t)s->cfg.id;
    cfg.n_voters = s->voters.n;
    for (i = 0; i < s->voters.n; i++) {
        cfg.voters[i] = s->voters.v[i].id;
    }
    cfg.election_timeout_ms = (uint64_t)s->cfg.election_timeout_ms;
    cfg.heartbeat_interval_ms = (uint64_t)s->cfg.raft_heartbeat_interval_ms;
    rv = ctl_quorum_random(&cfg.seed, ed);
    if (rv != 0) {
        return rv;
    }
    memset(&start, 0, sizeof(start));
    rv = ctl_log_raft_start(s->log, &start, &ents);
    if (rv != 0) {
        return err_set(ed, rv, "listing the log's entries");
    }
    start.hs = *hs;
    if (start.snapshot.index > 0) {
        rv = ctl_log_raft_snapshot_read(s->log, &q->snap_buf, &snap, ed);
        if (rv == 0) {
            start.snapshot.data = snap.data;
            start.snapshot.len = snap.len;
        }
    }
    if (rv == 0) {
        rv = raft_new(&cfg, &start, clock_now_ms(s->clock), &q->raft);
        if (rv != 0) {
            rv = err_set(ed, rv,
                         "the Raft core refused the log and hard state "
                         "(term %llu, snapshot %llu, %u entries)",
                         (unsigned long long)hs->term,
                         (unsigned long long)start.snapshot.index,
                         start.n_entries);
        }
    }
    mem_free(ents);
    return rv;
}

/* With tls on, the voters' addresses are TLS listeners: members dial them
 * with TLS, presenting tls-cert and verifying the peer against tls-ca
 * (ctl_server_quorum_config has checked that it is set). */
static int ctl_quorum_open_tls(struct ctl_quorum *q, struct err_detail *ed)
{
    const struct ctl_server_config *c = &q->s->cfg;
    struct tls_files f = {c->tls_cert, c->tls_key, c->tls_ca, false};

    if (!c->tls) {
        if (c->tls_listen != NULL) {
            trace_warn("controller",
                       "event=quorum_plain msg=\"raft traffic between members "
                       "is plain TCP: the voters name the plain listeners "
                       "(tls-listen does not carry it); set tls on every "
                       "member for mutual TLS between them\"");
        }
        return 0;
    }
    if (f.cert == NULL) {
        return err_set(ed, WEIR_ECONFIG,
                       "TLS: a quorum member needs a certificate and a key "
                       "(tls-cert, tls-key)");
    }
    return tls_client_ctx(&f, &q->tls, ed);
}

static int ctl_quorum_open_net(struct ctl_quorum *q, struct err_detail *ed)
{
    struct ctl_server *s = q->s;
    struct raft_net_config nc;
    int rv;

    rv = ctl_quorum_open_tls(q, ed);
    if (rv != 0) {
        return rv;
    }
    memset(&nc, 0, sizeof(nc));
    nc.tls = q->tls;
    nc.id = (uint32_t)s->cfg.id;
    nc.voters = &s->voters;
    nc.cluster_id = s->cluster_id;
    nc.clock = s->clock;
    nc.max_frame_bytes = (uint32_t)s->cfg.max_frame_bytes;
    nc.lost = ctl_quorum_peer_lost;
    rv = ctl_quorum_random(&nc.seed, ed);
    if (rv == 0) {
        rv = raft_net_open(s->base, &nc, ctl_quorum_recv, q, &q->net, ed);
    }
    if (rv != 0) {
        return rv;
    }
    s->raft_hook = raft_net_on_request;
    s->raft_hook_arg = q->net;
    return 0;
}

int ctl_quorum_open(struct ctl_server *s, struct err_detail *ed)
{
    enum ctl_start_kind kind = CTL_START_REFUSE;
    struct raft_hard_state hs;
    struct ctl_quorum *q;
    int rv;

    rv = ctl_quorum_prepare(s, &kind, ed);
    if (rv != 0) {
        return rv;
    }
    q = mem_calloc(1, sizeof(*q));
    if (q == NULL) {
        return err_set(ed, WEIR_ENOMEM, "the quorum adapter");
    }
    q->s = s;
    q->replies_tail = &q->replies;
    buf_init(&q->scratch);
    buf_init(&q->snap_buf);
    s->quorum = q;
    s->active = false;
    rv = ctl_quorum_open_log(q, kind, &hs, ed);
    if (rv == 0) {
        rv = ctl_quorum_start_core(q, &hs, ed);
    }
    if (rv == 0) {
        rv = ctl_quorum_open_net(q, ed);
    }
    if (rv != 0) {
        return rv;
    }
    q->tick_ev = evtimer_new(s->base, ctl_quorum_tick_cb, q);
    q->ready_ev = event_new(s->base, -1, 0, ctl_quorum_ready_cb, q);
    if (q->tick_ev == NULL || q->ready_ev == NULL) {
        return err_set(ed, WEIR_ENOMEM, "the quorum's timers");
    }
    ctl_quorum_schedule(q);
    return 0;
}

void ctl_quorum_close(struct ctl_quorum *q)
{
    struct ctl_quorum_reply *r;

    if (q == NULL) {
        return;
    }
    while ((r = q->replies) != NULL) {
        q->replies = r->next;
        ctl_member_refuse(q->s, r->req, r->corr);
        buf_fini(&r->frame);
        mem_free(r);
    }
    if (q->tick_ev != NULL) {
        event_free(q->tick_ev);
    }
    if (q->ready_ev != NULL) {
        event_free(q->ready_ev);
    }
    q->s->raft_hook = NULL;
    raft_net_close(q->net);
    tls_ctx_free(q->tls);
    raft_free(q->raft);
    meta_image_free(q->img);
    buf_fini(&q->scratch);
    buf_fini(&q->snap_buf);
    mem_free(q);
}

const struct meta_image *ctl_quorum_image(const struct ctl_quorum *q)
{
    return q->img;
}

uint32_t ctl_quorum_leader(const struct ctl_quorum *q)
{
    return raft_leader(q->raft);
}

uint64_t ctl_quorum_term(const struct ctl_quorum *q)
{
    return raft_term(q->raft);
}

uint32_t ctl_quorum_voters(const struct ctl_quorum *q,
                           struct ctl_quorum_voter *rows,
                           uint32_t cap)
{
    struct raft_peer_status peers[RAFT_MAX_VOTERS];
    struct raft_net_peer_stats links[RAFT_MAX_VOTERS];
    struct ctl_quorum_view_in in;

    if (q == NULL || raft_role(q->raft) != RAFT_ROLE_LEADER) {
        return 0;
    }
    in.self = (uint32_t)q->s->cfg.id;
    in.now_ms = clock_now_ms(q->s->clock);
    in.election_timeout_ms = (uint64_t)q->s->cfg.election_timeout_ms;
    in.voters = &q->s->voters;
    in.peers = peers;
    in.n_peers = raft_peer_status(q->raft, peers, RAFT_MAX_VOTERS);
    in.links = links;
    in.n_links = raft_net_stats(q->net, links, RAFT_MAX_VOTERS);
    return ctl_quorum_view_rows(&in, rows, cap);
}

Weir__QuorumStatus *ctl_quorum_status(const struct ctl_quorum *q,
                                      struct ctl_quorum_pb *st)
{
    st->n_rows = ctl_quorum_voters(q, st->rows, RAFT_MAX_VOTERS);
    if (st->n_rows == 0) {
        return NULL;
    }
    return ctl_quorum_view_pb(st, raft_term(q->raft), raft_leader(q->raft));
}
