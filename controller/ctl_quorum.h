/* SPDX-License-Identifier: Apache-2.0 */
/* The controller quorum's adapter: joins the pure Raft core
 * (quorum/raft.h), the metadata log as a Raft log (ctl_log_raft.h) and the
 * wire (quorum/raft_net.h) on the controller's event loop, and makes this
 * member the active controller while it leads (docs/quorum.md).
 *
 * Only the active member steps ctl_core. Each step's records become one
 * proposed entry; answers built after a proposal wait until it is applied
 * (committed on a majority and applied to the image here), so nobody sees
 * a decision a majority has not stored. Brokers are served only applied
 * records. A member that stops leading drops ctl_core and answers what
 * waits with NOT_CONTROLLER.
 * Locality: the controller loop thread. */
#ifndef CONTROLLER_CTL_QUORUM_H
#define CONTROLLER_CTL_QUORUM_H

#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/net/srv.h"
#include "controller/ctl_quorum_view.h"
#include "controller/meta/meta_image.h"
#include "controller/meta/meta_record.h"

struct ctl_server;
struct ctl_quorum; /* opaque */

/* Start this member: decide how from the data dir (ctl_start_decide.h),
 * open the log as a Raft log into s->log, start the core and the
 * transport. The member starts inactive. Errors: WEIR_ECONFIG (refused:
 * ed says why), WEIR_EIO, WEIR_ECORRUPT, WEIR_ENETWORK, WEIR_ENOMEM. */
WEIR_MUST_CHECK int ctl_quorum_open(struct ctl_server *s,
                                    struct err_detail *ed);
/* Stop: answers still waiting get NOT_CONTROLLER. NULL is a no-op. */
void ctl_quorum_close(struct ctl_quorum *q);

/* Propose the records of one ctl_core step (the first at first_offset) as
 * one entry. Errors: WEIR_ENOT_CONTROLLER (no longer leading),
 * WEIR_EINVALID_ARGUMENT, WEIR_ENOMEM. After an error the core's image ran
 * ahead: call ctl_quorum_core_lost. */
WEIR_MUST_CHECK int ctl_quorum_propose(struct ctl_quorum *q,
                                       const struct meta_record *recs,
                                       uint32_t n,
                                       int64_t first_offset,
                                       struct err_detail *ed);

/* ctl_core's image no longer matches the log (a failed step or proposal):
 * drop it; it is built again from the applied image once every entry of
 * this member's log is applied. */
void ctl_quorum_core_lost(struct ctl_quorum *q);

/* Called with an encoded answer: true when it must wait for proposals made
 * before it (the frame is copied and sent once they are applied, or
 * replaced by NOT_CONTROLLER if this member stops leading first). */
bool ctl_quorum_park(struct ctl_quorum *q,
                     struct srv_req *req,
                     uint32_t corr,
                     const struct weir_buf *frame,
                     bool close_after);

/* The applied image (what brokers are served). */
const struct meta_image *ctl_quorum_image(const struct ctl_quorum *q);
/* The leader (0: unknown) and the term, for traces and `weir cluster`. */
uint32_t ctl_quorum_leader(const struct ctl_quorum *q);
uint64_t ctl_quorum_term(const struct ctl_quorum *q);

/* While this member leads: one row per voter, in voter order (its own
 * row says leader; another voter is unreachable when the transport has
 * no connection to it or the core heard nothing from it within the
 * election timeout). Returns the count: 0 when q is NULL or this member
 * does not lead (only the leader knows the followers' log ends). */
uint32_t ctl_quorum_voters(const struct ctl_quorum *q,
                           struct ctl_quorum_voter *rows,
                           uint32_t cap);
/* The same as a QuorumStatus message in st, or NULL (no rows). */
Weir__QuorumStatus *ctl_quorum_status(const struct ctl_quorum *q,
                                      struct ctl_quorum_pb *st);

#endif /* CONTROLLER_CTL_QUORUM_H */
