/* SPDX-License-Identifier: Apache-2.0 */
/* How a controller starts, decided from what its data dir holds and how
 * it was started: pure (the adapter looks at the files and, for REJOIN,
 * draws the nonce from /dev/urandom). The table, for a single controller
 * (no --voters):
 *   raft-state present                      REFUSE (a quorum member's dir)
 *   formatted, or a metadata log            RESTART (today's start; a log
 *                                           from before cluster ids is
 *                                           adopted by ctl_ident)
 *   empty, auto-format                      NEW (format)
 *   empty                                   REFUSE (not formatted)
 * and for a quorum member (--voters):
 *   raft-state, formatted                   RESTART
 *   raft-state, not formatted               REFUSE (damaged dir)
 *   formatted, a log, no raft-state         UPGRADE (seal the term-0
 *                                           history at term 1)
 *   a log, not formatted, no raft-state     REFUSE (start once without
 *                                           --voters to adopt it)
 *   formatted, nothing else                 NEW (formatted by --format)
 *   empty, auto-format                      NEW (format)
 *   empty                                   REJOIN (lost its disk: start
 *                                           with a nonce != 0)
 * An empty dir with auto-format is taken for a new cluster: a member that
 * lost its disk must be started without auto-format to rejoin safely.
 * Locality: any thread (no state). */
#ifndef CONTROLLER_CTL_START_DECIDE_H
#define CONTROLLER_CTL_START_DECIDE_H

#include <stdbool.h>

struct ctl_start_facts {
    bool formatted;     /* meta.properties is there */
    bool has_log;       /* a snapshot, or a metadata.log with a byte */
    bool has_hardstate; /* raft-state is there */
    bool has_voters;    /* started with --voters */
    bool auto_format;   /* may format an empty dir */
};

enum ctl_start_kind {
    CTL_START_NEW,     /* empty: format if `format`, start at term 0 */
    CTL_START_RESTART, /* go on from what is there */
    CTL_START_UPGRADE, /* single-controller history: seal, then quorum */
    CTL_START_REJOIN,  /* a quorum member that lost its disk */
    CTL_START_REFUSE,  /* do not start: `reason` says why */
};

struct ctl_start_decision {
    enum ctl_start_kind kind;
    bool format;        /* write meta.properties first (NEW) */
    const char *reason; /* a static sentence, for the trace or the refusal */
};

void ctl_start_decide(const struct ctl_start_facts *f,
                      struct ctl_start_decision *out);

/* "new", "restart", "upgrade", "rejoin", "refuse". */
const char *ctl_start_kind_str(enum ctl_start_kind k);

#endif /* CONTROLLER_CTL_START_DECIDE_H */
