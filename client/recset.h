/* SPDX-License-Identifier: Apache-2.0 */
/* Record set: the record batches a fetch returned for one partition.
 * Pure. The first batch may start before the fetch offset (a broker sends
 * whole batches), so records below a position are skipped; the last batch
 * may be cut short by the size limit, and a partial trailing batch ends
 * the walk like a clean end. Control batches are skipped; compressed ones
 * are an error (no codec in this build).
 * Locality: any thread; a recset borrows its bytes. */
#ifndef CLIENT_RECSET_H
#define CLIENT_RECSET_H

#include <stdbool.h>
#include <stdint.h>

#include "common/batch.h"
#include "common/buf.h"
#include "common/err.h"

struct recset {
    struct weir_slice data; /* borrowed */
    size_t pos;             /* start of the next batch */
    bool in_batch;          /* it holds the current batch */
    struct batch_iter it;
    int64_t skip_below; /* records below this offset are skipped */
};

/* What a scan found: batches are validated (CRC and records). */
struct recset_scan {
    size_t whole_bytes;  /* bytes of whole batches at the front */
    size_t n_whole;      /* whole batches */
    int64_t next_offset; /* after the last whole batch, else unchanged */
    bool partial_tail;   /* bytes follow the whole batches */
};

void recset_init(struct recset *rs, struct weir_slice data, int64_t skip_below);

/* Next record at or above skip_below: 0 with *got set, or an error with
 * *got false. Errors: WEIR_ECORRUPT_MESSAGE, WEIR_EUNSUPPORTED_COMPRESSION,
 * WEIR_EUNSUPPORTED_VERSION. */
WEIR_MUST_CHECK int recset_next(struct recset *rs,
                                struct batch_record *rec,
                                bool *got,
                                struct err_detail *ed);

/* Validate the batches of data and find where the next fetch starts:
 * out->next_offset = last whole batch's last offset + 1, or fetch_offset
 * if that is larger or no batch is whole. Errors: as recset_next. */
WEIR_MUST_CHECK int recset_scan(struct weir_slice data,
                                int64_t fetch_offset,
                                struct recset_scan *out,
                                struct err_detail *ed);

#endif /* CLIENT_RECSET_H */
