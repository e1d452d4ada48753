/* SPDX-License-Identifier: Apache-2.0 */
/* Snapshot of a metadata image: the records that rebuild it, applied in
 * order to an empty image, plus the log offset the image had reached. A
 * controller writes one so it can drop the log before that offset; a
 * restart loads the snapshot and replays the log after it. Format:
 *   u32be magic 0x574d534e ("WMSN") | u8 version (0) | i64be end_offset |
 *   u32be record count | records (meta_record_encode) |
 *   u32be CRC-32C of every byte before it
 * Locality: any thread; pure. */
#ifndef CONTROLLER_META_META_SNAPSHOT_H
#define CONTROLLER_META_META_SNAPSHOT_H

#include <stddef.h>

#include "common/buf.h"
#include "common/err.h"
#include "controller/meta/meta_image.h"

#define META_SNAPSHOT_MAGIC      0x574d534eu
#define META_SNAPSHOT_VERSION    0
#define META_SNAPSHOT_HEAD_BYTES 17 /* magic, version, end offset, count */

/* Called once per record; a non-zero return stops the walk and is
 * returned by it. rec and its strings are valid during the call only. */
typedef int (*meta_snapshot_record_fn)(void *ctx,
                                       const struct meta_record *rec);

/* The records that rebuild img, in an order apply accepts: every broker
 * (REGISTER_BROKER, then UNFENCE_BROKER when unfenced), then every topic
 * (CREATE_TOPIC, its TOPIC_CONFIGs, its PARTITIONs), then a
 * TOPIC_TOMBSTONE per removed topic remembered, then PRODUCER_IDS when
 * any id was handed out, then a USER_SCRAM per credential and an ACL per
 * rule (in the image's order). Also what a broker too far behind the log is
 * sent instead of the records it missed. */
int meta_snapshot_walk(const struct meta_image *img,
                       meta_snapshot_record_fn fn,
                       void *ctx);

/* Append the snapshot of img to b. Errors: WEIR_ENOMEM. */
WEIR_MUST_CHECK int meta_snapshot_encode(const struct meta_image *img,
                                         struct weir_buf *b,
                                         struct err_detail *ed);

/* Build a new image from snapshot bytes (untrusted). Success: *out owns
 * the image, whose end offset is the snapshot's. Failure: *out is NULL.
 * Errors: WEIR_ECORRUPT (CRC, magic, version, counts, a record that does
 * not decode or apply, an epoch or topic id at or past the end offset,
 * trailing bytes), WEIR_ENOMEM. */
WEIR_MUST_CHECK int meta_snapshot_decode(const void *p,
                                         size_t len,
                                         struct meta_image **out,
                                         struct err_detail *ed);

#endif /* CONTROLLER_META_META_SNAPSHOT_H */
