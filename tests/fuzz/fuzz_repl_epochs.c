/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: the leader-epoch checkpoint decoder, and the epoch cache's
 * mutators. The input is decoded as checkpoint text; then the same bytes
 * drive a script of 4-byte operations (assign, truncate from either end,
 * lookups) on a cache. Oracles: only the documented error codes; a failed
 * decode leaves the cache untouched; anything accepted is canonical
 * (re-encodes to the same bytes) and satisfies the cache invariant, which
 * also holds after every operation; lookups answer as documented. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "broker/replica/repl_epochs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_check(const struct repl_epochs *c)
{
    if (repl_epochs_check_invariants(c) != 0) {
        abort();
    }
}

/* end_offset_for against its contract, for one requested epoch. */
static void fuzz_lookup(const struct repl_epochs *c, int32_t asked, int64_t leo)
{
    struct repl_epoch_end r = repl_epochs_end_offset_for(c, asked, leo);
    uint32_t n = repl_epochs_count(c);
    const struct repl_epoch_entry *first;
    int64_t start;

    if (n == 0 || asked < 0) {
        if (r.epoch != REPL_EPOCH_NONE || r.end_offset != REPL_OFFSET_NONE) {
            abort();
        }
        return;
    }
    first = repl_epochs_entry(c, 0);
    if (asked < first->epoch) {
        if (r.epoch != asked || r.end_offset != first->start_offset) {
            abort();
        }
        return;
    }
    start = repl_epochs_start_offset(c, r.epoch);
    if (r.epoch > asked || start == REPL_OFFSET_NONE ||
        (r.epoch == repl_epochs_latest_epoch(c) ? r.end_offset != leo
                                                : r.end_offset <= start)) {
        abort();
    }
}

static void fuzz_lookups(const struct repl_epochs *c)
{
    uint32_t i;
    int64_t leo = 0;
    int32_t e;

    if (repl_epochs_count(c) > 0) {
        leo = repl_epochs_entry(c, repl_epochs_count(c) - 1)->start_offset;
    }
    fuzz_lookup(c, REPL_EPOCH_NONE, leo);
    fuzz_lookup(c, 0, leo);
    fuzz_lookup(c, INT32_MAX, leo);
    for (i = 0; i < repl_epochs_count(c) && i < 64; i++) {
        e = repl_epochs_entry(c, i)->epoch;
        fuzz_lookup(c, e, leo);
        if (e > 0) {
            fuzz_lookup(c, e - 1, leo);
        }
        if (e < INT32_MAX) {
            fuzz_lookup(c, e + 1, leo);
        }
    }
}

/* Checkpoint text: canonical or refused. */
static void fuzz_decode(const uint8_t *data, size_t size)
{
    struct repl_epochs c;
    struct err_detail ed;
    struct weir_buf b;
    int rv;

    repl_epochs_init(&c);
    if (repl_epochs_assign(&c, 3, 7) != 0) {
        goto out;
    }
    rv = repl_epochs_decode(&c, data, size, &ed);
    if (rv != 0) {
        if ((rv != WEIR_ECORRUPT && rv != WEIR_ENOMEM) || ed.code != rv ||
            repl_epochs_count(&c) != 1 ||
            repl_epochs_entry(&c, 0)->epoch != 3) {
            abort();
        }
        goto out;
    }
    fuzz_check(&c);
    buf_init(&b);
    if (repl_epochs_encode(&c, &b) == 0 &&
        (b.len != size || memcmp(b.data, data, size) != 0)) {
        abort();
    }
    buf_fini(&b);
    fuzz_lookups(&c);
out:
    repl_epochs_fini(&c);
}

/* One 4-byte operation: kind, then a small epoch and a 16-bit offset. */
static void fuzz_op(struct repl_epochs *c, const uint8_t *op)
{
    int32_t epoch = op[1] % 64;
    int64_t offset = (int64_t)op[2] << 8 | op[3];
    int32_t latest = repl_epochs_latest_epoch(c);
    int rv;

    switch (op[0] % 4) {
    case 0:
        rv = repl_epochs_assign(c, epoch, offset);
        if (rv == WEIR_ENOMEM) {
            break;
        }
        if (rv != 0) {
            abort();
        }
        /* a newer epoch is always recorded where it says it starts */
        if (epoch > latest && (repl_epochs_latest_epoch(c) != epoch ||
                               repl_epochs_start_offset(c, epoch) != offset)) {
            abort();
        }
        if (epoch <= latest && repl_epochs_latest_epoch(c) != latest) {
            abort();
        }
        break;
    case 1:
        (void)repl_epochs_truncate_from_end(c, offset);
        if (repl_epochs_count(c) > 0 &&
            repl_epochs_entry(c, repl_epochs_count(c) - 1)->start_offset >=
                offset) {
            abort();
        }
        break;
    case 2:
        (void)repl_epochs_truncate_from_start(c, offset);
        if (repl_epochs_count(c) > 0 &&
            repl_epochs_entry(c, 0)->start_offset < offset) {
            abort();
        }
        break;
    default:
        fuzz_lookup(c, epoch, offset);
        break;
    }
    fuzz_check(c);
}

/* The state after a script survives a checkpoint round trip. */
static void fuzz_round_trip(const struct repl_epochs *c)
{
    struct repl_epochs d;
    struct err_detail ed;
    struct weir_buf b;
    uint32_t i;

    repl_epochs_init(&d);
    buf_init(&b);
    if (repl_epochs_encode(c, &b) != 0) {
        goto out;
    }
    if (repl_epochs_decode(&d, b.data, b.len, &ed) != 0) {
        if (ed.code != WEIR_ENOMEM) {
            abort();
        }
        goto out;
    }
    if (repl_epochs_count(&d) != repl_epochs_count(c)) {
        abort();
    }
    for (i = 0; i < repl_epochs_count(c); i++) {
        if (repl_epochs_entry(&d, i)->epoch != repl_epochs_entry(c, i)->epoch ||
            repl_epochs_entry(&d, i)->start_offset !=
                repl_epochs_entry(c, i)->start_offset) {
            abort();
        }
    }
out:
    buf_fini(&b);
    repl_epochs_fini(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct repl_epochs c;
    size_t i;

    fuzz_decode(data, size);

    repl_epochs_init(&c);
    for (i = 0; i + 4 <= size; i += 4) {
        fuzz_op(&c, data + i);
    }
    fuzz_lookups(&c);
    fuzz_round_trip(&c);
    repl_epochs_fini(&c);
    return 0;
}
