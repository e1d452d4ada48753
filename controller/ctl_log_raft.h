/* SPDX-License-Identifier: Apache-2.0 */
/* The metadata log as a Raft log (controller/quorum/raft.h), for the
 * quorum adapter. Entries are durable when the append returns; the records
 * of NORMAL entries reach the image only through ctl_log_raft_apply, once
 * the core says they are committed ("durable" and "applied" are kept
 * apart: ctl_log_read serves brokers the applied records only). The
 * single-controller calls of ctl_log.h (append = append and apply) refuse
 * a log opened here. Indexes: see ctl_log.h. Hard state: ctl_hardstate.h.
 * Locality: the controller loop thread. */
#ifndef CONTROLLER_CTL_LOG_RAFT_H
#define CONTROLLER_CTL_LOG_RAFT_H

#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"
#include "controller/ctl_log.h"
#include "controller/quorum/raft.h"

/* Open as ctl_log_open does, but apply nothing: *img is the snapshot's
 * image, and every entry after it is held, unapplied. voters (n_voters <=
 * RAFT_MAX_VOTERS, in raft_config order) place READMIT entries in the
 * readmission table. Errors: as ctl_log_open. */
WEIR_MUST_CHECK int ctl_log_raft_open(const char *dir,
                                      const uint32_t *voters,
                                      uint32_t n_voters,
                                      struct ctl_log **out,
                                      struct meta_image **img,
                                      struct ctl_log_stats *stats,
                                      struct err_detail *ed);

/* Append n entries (dense, the first at last index + 1, terms not going
 * down and not below the last's; NORMAL data a batch as ctl_log.h frames
 * it, READMIT u32be id | u64be nonce, NOOP nothing) and fsync once. All
 * or none: after a failure the file is cut back. The data is copied.
 * Errors: WEIR_EINVALID_ARGUMENT (ed says which entry), WEIR_EIO,
 * WEIR_ENOMEM. */
WEIR_MUST_CHECK int ctl_log_raft_append(struct ctl_log *l,
                                        const struct raft_entry *ents,
                                        uint32_t n,
                                        struct err_detail *ed);

/* Drop the entries from index `from` on (a follower's conflict), fsynced.
 * from must be past the applied index and at most last index + 1.
 * Errors: WEIR_EINVALID_ARGUMENT, WEIR_EIO. */
WEIR_MUST_CHECK int
ctl_log_raft_truncate(struct ctl_log *l, uint64_t from, struct err_detail *ed);

/* Up to cap entries from index `from` (snapshot index < from <= last
 * index + 1) into out; *n gets the count. The data is borrowed: valid
 * until the next call that changes l. Errors: WEIR_EINVALID_ARGUMENT. */
WEIR_MUST_CHECK int ctl_log_raft_entries(const struct ctl_log *l,
                                         uint64_t from,
                                         struct raft_entry *out,
                                         uint32_t cap,
                                         uint32_t *n);

/* Apply the held entries up to index upto (applied < upto <= last index;
 * upto <= applied is a no-op) to img, in order: NORMAL records to the
 * image (and to what brokers are served), READMIT to the readmission
 * table. After an error the image is part-applied: reload it.
 * Errors: WEIR_EINVALID_ARGUMENT (upto past the last index),
 * WEIR_ECORRUPT (a batch that does not apply, a READMIT of a non-voter),
 * WEIR_ENOMEM. */
WEIR_MUST_CHECK int ctl_log_raft_apply(struct ctl_log *l,
                                       uint64_t upto,
                                       struct meta_image *img,
                                       struct err_detail *ed);

/* Install a snapshot a leader sent: snap->data is a snapshot body as this
 * log writes one (chain values, then meta_snapshot bytes; what
 * ctl_log_raft_snapshot_read returns), with its index (> applied), term
 * (>= 1) and readmission table. The snapshot file is replaced, then
 * metadata.log is emptied; *img (caller owns) is the new image, to use in
 * place of the old. Errors: WEIR_EINVALID_ARGUMENT, WEIR_ECORRUPT (the
 * bytes do not decode: nothing changed), WEIR_EIO, WEIR_ENOMEM. */
WEIR_MUST_CHECK int ctl_log_raft_install(struct ctl_log *l,
                                         const struct raft_snapshot *snap,
                                         struct meta_image **img,
                                         struct err_detail *ed);

/* The current snapshot to send: its body into out (reset first) and
 * snap's index, term, admitted, data (= out->data) and len. No snapshot:
 * index 0, len 0. Errors: WEIR_EIO, WEIR_ECORRUPT, WEIR_ENOMEM. */
WEIR_MUST_CHECK int ctl_log_raft_snapshot_read(const struct ctl_log *l,
                                               struct weir_buf *out,
                                               struct raft_snapshot *snap,
                                               struct err_detail *ed);

/* Seal a single controller's history for a quorum (start UPGRADE): apply
 * every held entry (all of term 0) to img, then snapshot it at the last
 * index (1 when there is none) with term 1 and empty the log. Errors:
 * WEIR_EINVALID_ARGUMENT (an entry of term > 0 or a snapshot of term > 0:
 * already sealed), and those of ctl_log_raft_apply and ctl_log_snapshot. */
WEIR_MUST_CHECK int ctl_log_raft_seal(struct ctl_log *l,
                                      struct meta_image *img,
                                      struct err_detail *ed);

/* What the core starts from (raft_start) but the hard state (hs left
 * zero): the snapshot's index, term and admitted (data NULL, len 0: read
 * them with ctl_log_raft_snapshot_read when needed) and every entry after
 * it, in *ents (caller mem_frees; data borrowed as in
 * ctl_log_raft_entries). Errors: WEIR_ENOMEM. */
WEIR_MUST_CHECK int ctl_log_raft_start(const struct ctl_log *l,
                                       struct raft_start *start,
                                       struct raft_entry **ents);

/* Replace the log directory's raft-state with hs (ctl_hardstate_save:
 * atomic, fsynced). Errors: as ctl_hardstate_save. */
WEIR_MUST_CHECK int
ctl_log_raft_save_hard_state(const struct ctl_log *l,
                             const struct raft_hard_state *hs,
                             struct err_detail *ed);

/* Queries. term_at: the term of the entry at index (the snapshot's term at
 * its index), 0 with *found false outside snapshot index .. last index. */
uint64_t ctl_log_raft_last_index(const struct ctl_log *l);
uint64_t ctl_log_raft_last_term(const struct ctl_log *l);
uint64_t ctl_log_raft_applied(const struct ctl_log *l);
uint64_t ctl_log_raft_snapshot_index(const struct ctl_log *l);
uint64_t
ctl_log_raft_term_at(const struct ctl_log *l, uint64_t index, bool *found);
/* The readmission table as of the applied index. */
const uint64_t *ctl_log_raft_admitted(const struct ctl_log *l);

#endif /* CONTROLLER_CTL_LOG_RAFT_H */
