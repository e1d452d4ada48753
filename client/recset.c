/* SPDX-License-Identifier: Apache-2.0 */
#include "client/recset.h"

void recset_init(struct recset *rs, struct weir_slice data, int64_t skip_below)
{
    rs->data = data;
    rs->pos = 0;
    rs->in_batch = false;
    rs->skip_below = skip_below;
}

/* Enter the next batch that holds a record we want; false at the end. */
static int recset_enter(struct recset *rs, bool *entered, struct err_detail *ed)
{
    struct batch_header h;
    struct weir_slice b;
    int rv;

    *entered = false;
    for (;;) {
        rv = batch_next(rs->data, &rs->pos, UINT32_MAX, true, &h, &b, ed);
        if (rv != 0 || b.len == 0) {
            return rv;
        }
        if ((h.attributes & BATCH_ATTR_CONTROL) != 0 ||
            batch_last_offset(&h) < rs->skip_below) {
            continue;
        }
        rv = batch_iter_init(&rs->it, b, ed);
        if (rv != 0) {
            return rv;
        }
        rs->in_batch = true;
        *entered = true;
        return 0;
    }
}

int recset_next(struct recset *rs,
                struct batch_record *rec,
                bool *got,
                struct err_detail *ed)
{
    bool entered;
    int rv;

    *got = false;
    for (;;) {
        if (!rs->in_batch) {
            rv = recset_enter(rs, &entered, ed);
            if (rv != 0 || !entered) {
                return rv;
            }
        }
        rv = batch_iter_next(&rs->it, rec);
        if (rv < 0) {
            rs->in_batch = false;
            return err_set(ed, WEIR_ECORRUPT_MESSAGE,
                           "malformed record in the batch at offset %lld",
                           (long long)rs->it.h.base_offset);
        }
        if (rv == 0) {
            rs->in_batch = false;
            continue;
        }
        if (rec->offset >= rs->skip_below) {
            *got = true;
            return 0;
        }
    }
}

int recset_scan(struct weir_slice data,
                int64_t fetch_offset,
                struct recset_scan *out,
                struct err_detail *ed)
{
    struct batch_header h;
    struct weir_slice b;
    size_t pos = 0;
    int rv;

    out->whole_bytes = 0;
    out->n_whole = 0;
    out->next_offset = fetch_offset;
    out->partial_tail = false;
    for (;;) {
        rv = batch_next(data, &pos, UINT32_MAX, true, &h, &b, ed);
        if (rv != 0) {
            return rv;
        }
        if (b.len == 0) {
            break;
        }
        out->n_whole++;
        out->whole_bytes = pos;
        if (batch_last_offset(&h) + 1 > out->next_offset) {
            out->next_offset = batch_last_offset(&h) + 1;
        }
    }
    out->partial_tail = out->whole_bytes < data.len;
    return 0;
}
