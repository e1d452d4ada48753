/* SPDX-License-Identifier: Apache-2.0 */
/* The chain value of a metadata history: each record's encoding is folded
 * into the value before it, so the value at offset N names the whole
 * history of records 0..N-1, not just its length. Two controllers (or a
 * controller and a broker) that agree on the value at N applied the same
 * records up to N. The controller keeps the value of every record it
 * holds (and a tail of older ones), brokers keep the value at the end of
 * what they applied, and FetchMetadata compares them
 * (docs/controller.md, "Metadata history check").
 * Values are in [0, INT64_MAX] (they travel as int64 and are stored as
 * decimals); -1 means unknown. Locality: any thread; pure. */
#ifndef CONTROLLER_META_META_CHAIN_H
#define CONTROLLER_META_META_CHAIN_H

#include <stddef.h>
#include <stdint.h>

#define META_CHAIN_UNKNOWN (-1)
#define META_CHAIN_ZERO    0 /* the value at offset 0: no record yet */

/* The value after one more record: prev (the value before it, >= 0) and
 * the record's encoding (meta_record_encode: type, version, length, body;
 * not the u32be length a log or FetchMetadata puts before it). First 63
 * bits of SHA-256(prev as u64be | SHA-256(record)). */
int64_t meta_chain_fold(int64_t prev, const uint8_t *rec, size_t len);

/* The value of a snapshot whose chain is unknown (written before chains
 * existed): the bytes of the whole snapshot file folded into ZERO, so two
 * such snapshots agree only when they hold the same image at the same
 * offset. */
int64_t meta_chain_of_legacy_snapshot(const uint8_t *p, size_t len);

#endif /* CONTROLLER_META_META_CHAIN_H */
