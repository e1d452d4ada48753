/* SPDX-License-Identifier: Apache-2.0 */
/* What a broker's data dir says about itself, beside the partition logs:
 *   meta.properties       node.id (the --id that made it), cluster.id
 *                         (empty until the first successful registration)
 *                         and directory.id (made once, kept forever: a new
 *                         one tells the controller this broker's data is
 *                         new)
 *   clean-shutdown-epoch  the broker epoch of the last clean exit; read
 *                         and durably removed at start, so a crash after
 *                         that start leaves none (previous_broker_epoch -1)
 *   metadata-offset       the end offset of the cluster metadata applied
 *                         here so far, and the history's chain value
 *                         there (controller/meta/meta_chain.h): a
 *                         controller whose history ends before it, or
 *                         differs at it, is refused (restored from an old
 *                         copy)
 * The last two name the cluster id they belong to and count for nothing
 * in another cluster. Each file is written atomically (common/datadir.h).
 * Locality: the broker loop thread. */
#ifndef BROKER_BROKER_IDENT_H
#define BROKER_BROKER_IDENT_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "common/metaprops.h"

#define BROKER_IDENT_CLEAN_FILE   "clean-shutdown-epoch"
#define BROKER_IDENT_APPLIED_FILE "metadata-offset"

struct broker_ident {
    const char *dir;        /* borrowed: the broker's data dir */
    struct metaprops props; /* as on disk */
    int64_t previous_epoch; /* from clean-shutdown-epoch; -1 none */
    int64_t applied_end;    /* as on disk; 0 none */
    int64_t applied_chain;  /* chain value at applied_end; -1 unknown */
};

/* At start, before the logs are opened: read (or create) meta.properties,
 * refuse a node.id other than node_id, take and remove the
 * clean-shutdown-epoch marker, read metadata-offset. dir is borrowed for
 * the ident's life.
 * Errors: WEIR_ECONFIG (node.id differs), WEIR_ECORRUPT (a file that does
 * not parse: the message names it), WEIR_EIO, WEIR_ENOMEM. */
WEIR_MUST_CHECK int broker_ident_open(struct broker_ident *id,
                                      const char *dir,
                                      int64_t node_id,
                                      struct err_detail *ed);

/* Store the cluster id (first successful registration).
 * Errors: WEIR_EIO, WEIR_ENOMEM. */
WEIR_MUST_CHECK int broker_ident_set_cluster(struct broker_ident *id,
                                             const char *cluster_id,
                                             struct err_detail *ed);

/* Store the metadata end offset applied here and the chain value there
 * (-1: unknown, not stored), when the offset is above the stored one (or
 * the same, with a chain value the stored one lacked). Errors: WEIR_EIO. */
WEIR_MUST_CHECK int broker_ident_set_applied(struct broker_ident *id,
                                             int64_t end_offset,
                                             int64_t chain,
                                             struct err_detail *ed);

/* Clean exit: leave the broker epoch for the next start. Errors: WEIR_EIO. */
WEIR_MUST_CHECK int broker_ident_mark_clean(const struct broker_ident *id,
                                            int64_t broker_epoch,
                                            struct err_detail *ed);

#endif /* BROKER_BROKER_IDENT_H */
