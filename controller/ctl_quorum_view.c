/* SPDX-License-Identifier: Apache-2.0 */
/* The quorum's rows for `weir cluster` (ctl_quorum_view.h): pure. */
#include "controller/ctl_quorum_view.h"

#include <stddef.h>

static const struct raft_peer_status *
ctl_quorum_view_peer(const struct ctl_quorum_view_in *in, uint32_t id)
{
    for (uint32_t i = 0; i < in->n_peers; i++) {
        if (in->peers[i].id == id) {
            return &in->peers[i];
        }
    }
    return NULL;
}

static const struct raft_net_peer_stats *
ctl_quorum_view_link(const struct ctl_quorum_view_in *in, uint32_t id)
{
    for (uint32_t i = 0; i < in->n_links; i++) {
        if (in->links[i].id == id) {
            return &in->links[i];
        }
    }
    return NULL;
}

/* Another voter is reachable when the transport holds a connection to it
 * and the core heard from it within the election timeout (the window
 * check-quorum uses). */
static bool ctl_quorum_view_reachable(const struct ctl_quorum_view_in *in,
                                      const struct raft_peer_status *p,
                                      const struct raft_net_peer_stats *l)
{
    if (p == NULL || l == NULL || !l->connected) {
        return false;
    }
    if (p->last_contact_ms > in->now_ms) {
        return true; /* heard from it "after" now: a clock step, be kind */
    }
    return in->now_ms - p->last_contact_ms <= in->election_timeout_ms;
}

uint32_t ctl_quorum_view_rows(const struct ctl_quorum_view_in *in,
                              struct ctl_quorum_voter *rows,
                              uint32_t cap)
{
    const struct raft_peer_status *me = ctl_quorum_view_peer(in, in->self);
    uint64_t end = me != NULL ? me->match : 0;
    uint32_t n = 0;

    for (uint32_t i = 0; i < in->voters->n && n < cap; i++) {
        const struct raft_voter *v = &in->voters->v[i];
        const struct raft_peer_status *p = ctl_quorum_view_peer(in, v->id);
        struct ctl_quorum_voter *row = &rows[n++];

        row->id = v->id;
        row->address = v->address;
        row->log_end = p != NULL ? p->match : 0;
        if (v->id == in->self) {
            row->state = CTL_QUORUM_STATE_LEADER;
        } else if (ctl_quorum_view_reachable(in, p,
                                             ctl_quorum_view_link(in, v->id))) {
            row->state = CTL_QUORUM_STATE_FOLLOWER;
        } else {
            row->state = CTL_QUORUM_STATE_UNREACHABLE;
        }
        row->lag = end > row->log_end ? end - row->log_end : 0;
    }
    return n;
}

Weir__QuorumStatus *
ctl_quorum_view_pb(struct ctl_quorum_pb *st, uint64_t term, uint32_t leader)
{
    uint32_t n = st->n_rows < RAFT_MAX_VOTERS ? st->n_rows : RAFT_MAX_VOTERS;

    weir__quorum_status__init(&st->status);
    st->status.term = term;
    st->status.leader_id = leader;
    for (uint32_t i = 0; i < n; i++) {
        const struct ctl_quorum_voter *r = &st->rows[i];
        Weir__QuorumVoter *v = &st->voters[i];

        weir__quorum_voter__init(v);
        v->id = r->id;
        v->address = (char *)r->address;
        v->state = (uint32_t)r->state;
        v->log_end = r->log_end;
        v->lag = r->lag;
        st->ptrs[i] = v;
    }
    st->status.n_voters = n;
    st->status.voters = st->ptrs;
    return &st->status;
}
