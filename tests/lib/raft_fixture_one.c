/* SPDX-License-Identifier: Apache-2.0 */
/* Raft fixture helpers for scenario tests that drive one core by hand:
 * build it from a list of terms, and run one ready loop turn keeping a
 * copy of what the ready held.
 * Locality: the test's thread. */
#include <string.h>

#include "common/mem.h"
#include "tests/lib/raft_fixture.h"

int raft_fixture_one(uint32_t id,
                     uint32_t n,
                     const struct raft_hard_state *hs,
                     const uint64_t *terms,
                     uint32_t n_entries,
                     struct raft **out)
{
    struct raft_entry es[64];
    struct raft_config cfg;
    struct raft_start st;

    if (n_entries > 64) {
        return WEIR_EINVALID_ARGUMENT;
    }
    memset(&cfg, 0, sizeof(cfg));
    cfg.id = id;
    cfg.n_voters = n;
    for (uint32_t k = 0; k < n && k < RAFT_MAX_VOTERS; k++) {
        cfg.voters[k] = k + 1;
    }
    cfg.election_timeout_ms = 1000;
    cfg.heartbeat_interval_ms = 100;
    cfg.seed = 1;
    memset(&st, 0, sizeof(st));
    if (hs != NULL) {
        st.hs = *hs;
    }
    memset(es, 0, sizeof(es));
    for (uint32_t k = 0; k < n_entries; k++) {
        es[k].index = k + 1;
        es[k].term = terms[k];
        es[k].type = RAFT_ENTRY_NORMAL;
    }
    st.n_entries = n_entries;
    st.entries = es;
    return raft_new(&cfg, &st, 0, out);
}

int raft_fixture_one_ready(struct raft *r, struct raft_fixture_rd *out)
{
    struct raft_ready rd;
    int rv;

    memset(out, 0, sizeof(*out));
    rv = raft_ready(r, &rd);
    if (rv != 0) {
        return rv;
    }
    out->hs_changed = rd.hard_state_changed;
    out->hs = rd.hs;
    out->has_snapshot = rd.has_snapshot;
    out->truncate_from = rd.truncate_from;
    out->n_entries = rd.n_entries;
    out->first_index = rd.n_entries > 0 ? rd.entries[0].index : 0;
    out->n_committed = rd.n_committed;
    for (uint32_t k = 0; k < rd.n_msgs && k < 16; k++) {
        out->msgs[k] = rd.msgs[k];
        out->msgs[k].entries = NULL;
        out->msgs[k].data = NULL;
        out->n_msgs++;
    }
    raft_advance(r, &rd);
    return 0;
}

const struct raft_msg *raft_fixture_rd_msg(const struct raft_fixture_rd *rd,
                                           enum raft_msg_type t,
                                           uint32_t to)
{
    for (uint32_t k = 0; k < rd->n_msgs; k++) {
        if (rd->msgs[k].type == t && rd->msgs[k].to == to) {
            return &rd->msgs[k];
        }
    }
    return NULL;
}
