/* SPDX-License-Identifier: Apache-2.0 */
/* Test record batches whose records say who they are, so a test can check
 * that what it reads back is exactly what it wrote, in order.
 * Locality: any thread. */
#ifndef TESTS_LIB_BATCH_GEN_H
#define TESTS_LIB_BATCH_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

/* Append one uncompressed batch of n records to out: record i has
 * timestamp ts0 + i * ts_step, key "k<i>" and a value starting
 * "id=<id> rec=<i>;" padded to value_len bytes with bytes derived from id
 * and i. Errors: WEIR_ENOMEM. */
int batch_gen_make(struct weir_buf *out,
                   uint32_t id,
                   int32_t n,
                   int64_t ts0,
                   int64_t ts_step,
                   size_t value_len);
/* Decode a value made by batch_gen_make (padding checked too). */
bool batch_gen_parse(struct weir_slice value, uint32_t *id, int32_t *rec);

#endif /* TESTS_LIB_BATCH_GEN_H */
