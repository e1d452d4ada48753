/* SPDX-License-Identifier: Apache-2.0 */
/* The start decision (table in ctl_start_decide.h): pure. */
#include "controller/ctl_start_decide.h"

#include <stddef.h>

static void ctl_start_set(struct ctl_start_decision *out,
                          enum ctl_start_kind kind,
                          bool format,
                          const char *reason)
{
    out->kind = kind;
    out->format = format;
    out->reason = reason;
}

static void ctl_start_single(const struct ctl_start_facts *f,
                             struct ctl_start_decision *out)
{
    if (f->has_hardstate) {
        ctl_start_set(out, CTL_START_REFUSE, false,
                      "the data dir holds raft-state: it belongs to a member "
                      "of a controller quorum; start it with --voters");
    } else if (f->formatted || f->has_log) {
        ctl_start_set(out, CTL_START_RESTART, false,
                      "a single controller going on from its data dir");
    } else if (f->auto_format) {
        ctl_start_set(out, CTL_START_NEW, true,
                      "an empty data dir, formatted (auto-format)");
    } else {
        ctl_start_set(out, CTL_START_REFUSE, false,
                      "the data dir is not formatted: run weir-controller "
                      "--format (or set auto-format) to create a cluster, "
                      "or point --data-dir at the cluster's metadata");
    }
}

static void ctl_start_quorum(const struct ctl_start_facts *f,
                             struct ctl_start_decision *out)
{
    if (f->has_hardstate && f->formatted) {
        ctl_start_set(out, CTL_START_RESTART, false,
                      "a quorum member going on from its data dir");
    } else if (f->has_hardstate) {
        ctl_start_set(out, CTL_START_REFUSE, false,
                      "the data dir holds raft-state but no meta.properties: "
                      "it is damaged or incomplete; restore it, or empty it "
                      "to rejoin as a member that lost its disk");
    } else if (f->has_log && f->formatted) {
        ctl_start_set(out, CTL_START_UPGRADE, false,
                      "a single controller's metadata log joining a quorum: "
                      "its history is sealed as a snapshot at term 1");
    } else if (f->has_log) {
        ctl_start_set(out, CTL_START_REFUSE, false,
                      "the metadata log has no cluster id (made before "
                      "cluster ids): start it once without --voters to give "
                      "it one, then with --voters");
    } else if (f->formatted) {
        ctl_start_set(out, CTL_START_NEW, false,
                      "a formatted, empty member of a new quorum");
    } else if (f->auto_format) {
        ctl_start_set(out, CTL_START_NEW, true,
                      "an empty data dir, formatted (auto-format) as a member "
                      "of a new quorum");
    } else {
        ctl_start_set(out, CTL_START_REJOIN, false,
                      "an empty data dir in a quorum: a member that lost its "
                      "disk, rejoining with a new nonce (it votes again once "
                      "a leader has readmitted it)");
    }
}

void ctl_start_decide(const struct ctl_start_facts *f,
                      struct ctl_start_decision *out)
{
    if (f->has_voters) {
        ctl_start_quorum(f, out);
    } else {
        ctl_start_single(f, out);
    }
}

const char *ctl_start_kind_str(enum ctl_start_kind k)
{
    switch (k) {
    case CTL_START_NEW:
        return "new";
    case CTL_START_RESTART:
        return "restart";
    case CTL_START_UPGRADE:
        return "upgrade";
    case CTL_START_REJOIN:
        return "rejoin";
    case CTL_START_REFUSE:
        return "refuse";
    }
    return "unknown";
}
