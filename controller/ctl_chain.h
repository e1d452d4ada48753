/* SPDX-License-Identifier: Apache-2.0 */
/* The chain values the controller holds (controller/meta/meta_chain.h):
 * one for every offset from `base` to the log's end, so a broker's
 * history point (offset, chain value) can be checked. The log keeps the
 * values of the records it holds in memory and, across a snapshot, a tail
 * of CTL_CHAIN_KEEP older ones, which the snapshot file carries in front
 * of the image:
 *   u32be magic 0x574d4353 ("WMCS") | u8 version (0) | i64be base |
 *   u32be n | n x i64be value (offsets base .. base + n - 1; the last is
 *   the value at the snapshot's end offset) | u32be CRC-32C of the above |
 *   the meta_snapshot bytes (meta_snapshot.h)
 * A snapshot file that starts with the meta_snapshot magic instead was
 * written before chains existed: its end value is
 * meta_chain_of_legacy_snapshot of the file, and nothing before it is
 * known. Locality: the controller loop thread. */
#ifndef CONTROLLER_CTL_CHAIN_H
#define CONTROLLER_CTL_CHAIN_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"

/* Values kept before a snapshot's end offset: 8 bytes each, so at most
 * 1 MiB in the snapshot file and in memory. A broker whose history point
 * is older than that (it was down while that many records were written)
 * cannot be checked. */
#define CTL_CHAIN_KEEP       131072u
#define CTL_CHAIN_MAGIC      0x574d4353u
#define CTL_CHAIN_HEAD_BYTES 17 /* magic, version, base, n */

struct ctl_chain {
    int64_t base;    /* offset of values[0] */
    int64_t *values; /* values[i]: the chain value at offset base + i */
    uint32_t n;      /* >= 1 once set: values[n - 1] is at the log's end */
    uint32_t cap;
};

void ctl_chain_init(struct ctl_chain *c);
void ctl_chain_fini(struct ctl_chain *c);

/* Start over: only the value at offset is known. Errors: WEIR_ENOMEM. */
WEIR_MUST_CHECK int
ctl_chain_reset(struct ctl_chain *c, int64_t offset, int64_t value);

/* One more record (its encoding, without a length prefix) at the end.
 * Errors: WEIR_ENOMEM (nothing changed). */
WEIR_MUST_CHECK int
ctl_chain_push(struct ctl_chain *c, const uint8_t *rec, size_t len);

/* Forget the last n values (a batch that was not kept). */
void ctl_chain_drop_last(struct ctl_chain *c, uint32_t n);

/* Keep only the values from offset end - CTL_CHAIN_KEEP on (end: the
 * offset of the last value). */
void ctl_chain_trim(struct ctl_chain *c);

/* The value at offset, or META_CHAIN_UNKNOWN outside [base, end]. */
int64_t ctl_chain_at(const struct ctl_chain *c, int64_t offset);
/* The lowest offset with a value (base). */
int64_t ctl_chain_first(const struct ctl_chain *c);

/* Append the snapshot-file head for the values up to and including
 * end_offset (the last CTL_CHAIN_KEEP + 1 of them at most).
 * Errors: WEIR_EINVALID_ARGUMENT (end_offset is not the last value's),
 * WEIR_ENOMEM. */
WEIR_MUST_CHECK int ctl_chain_encode(const struct ctl_chain *c,
                                     int64_t end_offset,
                                     struct weir_buf *b);

/* Read a snapshot-file head from p (untrusted, len bytes) into c; *used
 * gets its size (where the meta_snapshot starts); *end_offset the offset
 * of its last value. Errors: WEIR_ECORRUPT, WEIR_ENOMEM. */
WEIR_MUST_CHECK int ctl_chain_decode(struct ctl_chain *c,
                                     const uint8_t *p,
                                     size_t len,
                                     size_t *used,
                                     int64_t *end_offset,
                                     struct err_detail *ed);

#endif /* CONTROLLER_CTL_CHAIN_H */
