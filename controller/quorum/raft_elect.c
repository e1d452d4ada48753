/* SPDX-License-Identifier: Apache-2.0 */
/* Raft elections: the election timer, pre-vote then vote, roles, leader
 * stickiness (no vote for anyone while a live leader is heard) and
 * check-quorum (a leader cut off from a majority steps down), and the
 * readmission gate on votes after a disk loss.
 * Locality: one thread (the controller loop). */
#include <string.h>

#include "common/mem.h"
#include "controller/quorum/raft_int.h"

void raft_reset_election(struct raft *r)
{
    uint64_t t = r->cfg.election_timeout_ms;

    r->election_due_ms = r->now_ms + t + raft_rand(r) % t;
}

void raft_become_follower(struct raft *r, uint64_t term, uint32_t leader)
{
    if (term > r->hs.term) {
        r->hs.term = term;
        r->hs.vote = 0;
        r->hs_dirty = true;
    }
    r->role = RAFT_ROLE_FOLLOWER;
    r->leader = leader;
    r->votes = 0;
    r->noop_index = 0;
    raft_reset_election(r);
}

bool raft_in_lease(const struct raft *r)
{
    if (r->role == RAFT_ROLE_LEADER) {
        return true;
    }
    return r->leader != 0 && r->heard_leader &&
           r->now_ms - r->leader_contact_ms < r->cfg.election_timeout_ms;
}

/* May we vote (or pre-vote) in `term` at all? A member that lost its disk
 * (hs.nonce != 0) may have voted in any term up to the one it had reached
 * before the loss, and does not know which. It votes only once a committed
 * READMIT(self, nonce) was applied (entry term T_L), and only in terms
 * above T_L. Why that is enough: suppose C won term T > T_L with the vote
 * X cast before the loss, and B won T with a vote of the readmitted X.
 * READMIT was committed by a majority M1 that does not count X, and C's
 * voters M2 contain X and a majority-minus-one of the others, so some Z
 * != X is in both. Had Z voted for C (term T) before accepting the term
 * T_L entry, it would have refused that entry (T > T_L). So Z accepted
 * READMIT at (T_L, i) first and then voted for C, whose request described
 * a log at least as up to date as Z's: its last entry has a term above T_L
 * or is at (T_L, >= i). C campaigned before the loss, before READMIT
 * existed, so neither can be: an entry (T_L, >= i) would contain READMIT
 * by log matching, and a leader of a term in (T_L, T) would have to hold
 * the committed READMIT (leader completeness, by induction on terms)
 * before it was written. A snapshot that admits us only tells the
 * snapshot's term, which is >= T_L, so it is used instead (stricter). */
static bool raft_may_vote_in(const struct raft *r, uint64_t term)
{
    return raft_is_admitted(r) && term > r->hs.readmit_term;
}

static bool raft_log_ok(const struct raft *r, const struct raft_msg *m)
{
    uint64_t lt = raft_log_last_term(&r->log);

    return m->log_term > lt ||
           (m->log_term == lt && m->index >= raft_log_last(&r->log));
}

static int raft_campaign(struct raft *r, bool pre)
{
    uint64_t term = r->hs.term + 1;
    struct raft_msg m;
    int rv;

    /* Room for the no-op first, so winning at once cannot fail halfway. */
    rv = raft_log_reserve(&r->log, 1);
    if (rv != 0) {
        return rv;
    }
    r->votes = 1u << r->self;
    r->leader = 0;
    if (pre) {
        r->role = RAFT_ROLE_PRE_CANDIDATE;
    } else {
        r->role = RAFT_ROLE_CANDIDATE;
        r->hs.term = term;
        r->hs.vote = r->cfg.id;
        r->hs_dirty = true;
    }
    raft_reset_election(r);
    if (raft_quorum(r) == 1) {
        return pre ? raft_campaign(r, false) : raft_become_leader(r);
    }
    memset(&m, 0, sizeof(m));
    m.type = RAFT_MSG_VOTE;
    m.term = term;
    m.pre_vote = pre;
    m.nonce = r->hs.nonce;
    m.index = raft_log_last(&r->log);
    m.log_term = raft_log_last_term(&r->log);
    for (uint32_t i = 0; i < r->cfg.n_voters; i++) {
        if (i != r->self) {
            m.to = r->cfg.voters[i];
            raft_send(r, &m);
        }
    }
    return 0;
}

/* Why only the followed leader, and why a delay: a member that lost the
 * leader's connection no longer counts as hearing it, so it grants
 * pre-votes (stickiness is about a leader it can hear) and campaigns
 * after a short delay instead of a whole election timeout. The others
 * decide for themselves: one that still hears the leader refuses, so a
 * connection lost while the leader lives deposes nobody. Why ranked: the
 * survivors all see the process die at the same moment; with delays drawn
 * from one short window, two of them sometimes pre-vote for each other
 * before either asks for real votes, then split the vote and wait a whole
 * election timeout (seen: 1.4 s instead of 0.1 s). Ordered by their place
 * in the voter list (the lost leader skipped), the second asks
 * RAFT_LOST_RANK_MS after the first, which has won by then unless its log
 * is behind or it is gone too; then the second wins. */
void raft_elect_peer_lost(struct raft *r, uint32_t id)
{
    uint64_t due;
    uint64_t rank = 0;

    if (r->role != RAFT_ROLE_FOLLOWER || r->leader != id || id == 0) {
        return;
    }
    r->heard_leader = false;
    for (uint32_t i = 0; i < r->self; i++) {
        rank += r->cfg.voters[i] != id;
    }
    due = r->now_ms + RAFT_LOST_DELAY_MS + rank * RAFT_LOST_RANK_MS +
          raft_rand(r) % RAFT_LOST_JITTER_MS;
    if (due < r->election_due_ms) {
        r->election_due_ms = due;
    }
}

int raft_elect_tick(struct raft *r)
{
    if (r->role == RAFT_ROLE_LEADER) {
        raft_check_quorum(r);
        if (r->role == RAFT_ROLE_LEADER && r->now_ms >= r->heartbeat_due_ms) {
            r->heartbeat_due_ms = r->now_ms + r->cfg.heartbeat_interval_ms;
            raft_broadcast(r, true);
        }
        return 0;
    }
    if (r->now_ms < r->election_due_ms) {
        return 0;
    }
    if (!raft_may_vote_in(r, r->hs.term + 1) ||
        raft_log_last(&r->log) + 1 >= RAFT_LIMIT ||
        r->hs.term + 1 >= RAFT_LIMIT) {
        raft_reset_election(r); /* not admitted: never campaigns */
        return 0;
    }
    return raft_campaign(r, true);
}

static void raft_reply_vote(struct raft *r,
                            const struct raft_msg *m,
                            uint64_t term,
                            bool granted)
{
    struct raft_msg resp;

    memset(&resp, 0, sizeof(resp));
    resp.type = RAFT_MSG_VOTE_RESP;
    resp.to = m->from;
    resp.term = term;
    resp.pre_vote = m->pre_vote;
    resp.granted = granted;
    resp.nonce = r->hs.nonce;
    raft_send(r, &resp);
}

int raft_step_vote(struct raft *r, const struct raft_msg *m)
{
    bool grant;

    if (m->term > r->hs.term && raft_in_lease(r)) {
        return 0; /* sticky: a live leader is heard; no term change */
    }
    if (m->pre_vote) {
        grant = m->term > r->hs.term && !raft_in_lease(r) &&
                raft_log_ok(r, m) && raft_may_vote_in(r, m->term);
        /* A refusal carries our term so a stale candidate catches up. */
        raft_reply_vote(r, m, grant ? m->term : r->hs.term, grant);
        return 0;
    }
    if (m->term < r->hs.term) {
        raft_reply_vote(r, m, r->hs.term, false);
        return 0;
    }
    if (m->term > r->hs.term) {
        raft_become_follower(r, m->term, 0);
    }
    grant = (r->hs.vote == m->from || (r->hs.vote == 0 && r->leader == 0)) &&
            raft_log_ok(r, m) && raft_may_vote_in(r, m->term);
    if (grant && r->hs.vote != m->from) {
        /* Persisted by the ready that carries the grant (steps 1, 4). */
        r->hs.vote = m->from;
        r->hs_dirty = true;
        raft_reset_election(r);
    }
    raft_reply_vote(r, m, r->hs.term, grant);
    return 0;
}

int raft_step_vote_resp(struct raft *r, const struct raft_msg *m)
{
    uint32_t pos = raft_voter_pos(r, m->from);
    uint32_t n = 0;

    if (m->granted && raft_log_reserve(&r->log, 1) != 0) {
        return WEIR_ENOMEM; /* the no-op's room, before any change */
    }
    if (m->pre_vote && m->granted) {
        if (r->role != RAFT_ROLE_PRE_CANDIDATE || m->term != r->hs.term + 1) {
            return 0;
        }
    } else if (m->term > r->hs.term) {
        raft_become_follower(r, m->term, 0);
        return 0;
    } else if (m->pre_vote || m->term != r->hs.term ||
               r->role != RAFT_ROLE_CANDIDATE || !m->granted) {
        return 0;
    }
    r->votes |= 1u << pos;
    for (uint32_t i = 0; i < r->cfg.n_voters; i++) {
        n += (r->votes >> i) & 1u;
    }
    if (n < raft_quorum(r)) {
        return 0;
    }
    if (r->role == RAFT_ROLE_PRE_CANDIDATE) {
        return raft_campaign(r, false);
    }
    return raft_become_leader(r);
}

/* Checked at every heartbeat, so a leader cut off from a majority steps
 * down within a heartbeat interval of one election timeout after it last
 * heard from one, about when the others can first elect another (they
 * wait at least an election timeout without hearing it): brokers still
 * talking to it are told NOT_CONTROLLER and look for the new one. (Safety
 * does not rest on this: a deposed leader commits nothing.) Contact times
 * start at the leader's election. */
void raft_check_quorum(struct raft *r)
{
    uint64_t window = r->cfg.election_timeout_ms;
    uint32_t heard = 1;

    for (uint32_t i = 0; i < r->cfg.n_voters; i++) {
        if (i != r->self && r->now_ms - r->prs[i].contact_ms < window) {
            heard++;
        }
    }
    if (heard < raft_quorum(r)) {
        raft_become_follower(r, r->hs.term, 0);
        r->heard_leader = false;
    }
}
