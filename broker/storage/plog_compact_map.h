/* SPDX-License-Identifier: Apache-2.0 */
/* The cleaner's offset map: record key -> offset of its latest record in
 * the part of the log being cleaned. Open addressing over copied keys
 * (CRC-32C as the hash), grown at 50% load. Empty keys and null keys are
 * different things; null keys are never stored (they are always kept).
 * Locality: the thread running the compaction. */
#ifndef BROKER_STORAGE_PLOG_COMPACT_MAP_H
#define BROKER_STORAGE_PLOG_COMPACT_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

struct plog_compact_map_slot {
    uint8_t *key; /* owned; NULL = free slot (empty keys get 1 byte) */
    size_t key_len;
    uint32_t hash;
    int64_t offset;
};

struct plog_compact_map {
    struct plog_compact_map_slot *slots; /* owned; cap is a power of two */
    uint32_t cap;
    uint32_t n;
    uint64_t key_bytes; /* memory held by keys */
};

void plog_compact_map_init(struct plog_compact_map *m);
void plog_compact_map_fini(struct plog_compact_map *m);
/* Record that key's latest record is at offset (offsets arrive in
 * increasing order, so the last put wins). Errors: WEIR_ENOMEM. */
WEIR_MUST_CHECK int plog_compact_map_put(struct plog_compact_map *m,
                                         const void *key,
                                         size_t key_len,
                                         int64_t offset);
/* Offset of key's latest record, or -1 when the key is unknown. */
int64_t plog_compact_map_get(const struct plog_compact_map *m,
                             const void *key,
                             size_t key_len);

#endif /* BROKER_STORAGE_PLOG_COMPACT_MAP_H */
