/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: a frame of the controller's metadata.log and the Raft head
 * of its snapshot file (controller/ctl_log_frame.c), bytes read from disk.
 * Oracles: a frame refused for its body says why (WEIR_ECORRUPT with a
 * message); an accepted frame lies within the input, its fields are in
 * range, and a version-1 frame encodes back to exactly its bytes; an
 * accepted snapshot head does too.
 * Seeds in corpus/ctl_log_frame/ (tests/fuzz/make_corpus.py writes them):
 * version-0 batches, version-1 NORMAL, NOOP and READMIT entries, snapshot
 * heads, and damaged copies. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "controller/ctl_log_frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_frame(const uint8_t *p, size_t size)
{
    struct ctl_log_frame f;
    struct err_detail ed;
    struct raft_entry e;
    struct weir_buf b;
    enum ctl_log_frame_status st;

    err_detail_clear(&ed);
    st = ctl_log_frame_decode(p, size, &f, &ed);
    if (st == CTL_LOG_FRAME_BAD_BODY &&
        (ed.code != WEIR_ECORRUPT || ed.msg[0] == '\0')) {
        abort();
    }
    if (st != CTL_LOG_FRAME_OK) {
        return;
    }
    if (f.frame_bytes > size || f.version > 1 ||
        f.data.p < p + CTL_LOG_FRAME_HEAD ||
        f.data.p + f.data.len != p + f.frame_bytes) {
        abort();
    }
    if (f.type == RAFT_ENTRY_NORMAL && (f.count == 0 || f.first < 0)) {
        abort();
    }
    if (f.version == 0) {
        if (f.index != 0 || f.term != 0 || f.type != RAFT_ENTRY_NORMAL) {
            abort();
        }
        return;
    }
    e.index = f.index;
    e.term = f.term;
    e.type = f.type;
    e.data = f.data.p;
    e.len = (uint32_t)f.data.len;
    buf_init(&b);
    if (ctl_log_frame_put_entry(&b, &e, &ed) != 0 || b.len != f.frame_bytes ||
        memcmp(b.data, p, b.len) != 0) {
        abort();
    }
    buf_fini(&b);
}

static void fuzz_snap_head(const uint8_t *p, size_t size)
{
    struct ctl_log_snap_head h;
    struct err_detail ed;
    struct weir_buf b;
    size_t used = 0;
    int rv;

    err_detail_clear(&ed);
    rv = ctl_log_snap_head_decode(p, size, &h, &used, &ed);
    if (rv != 0) {
        if (rv != WEIR_ECORRUPT || ed.msg[0] == '\0') {
            abort();
        }
        return;
    }
    if (used == 0) {
        return; /* no head: a snapshot from before Raft */
    }
    if (used > size || h.index >= RAFT_LIMIT || h.term >= RAFT_LIMIT) {
        abort();
    }
    buf_init(&b);
    ctl_log_snap_head_put(&b, &h);
    /* a head with fewer than RAFT_MAX_VOTERS nonces encodes longer */
    if (!buf_ok(&b) || (used == b.len && memcmp(b.data, p, used) != 0)) {
        abort();
    }
    buf_fini(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size > 0 ? size : 1);

    if (copy == NULL) {
        abort();
    }
    memcpy(copy, data, size); /* exactly these bytes: ASan sees overreads */
    fuzz_frame(copy, size);
    fuzz_snap_head(copy, size);
    free(copy);
    return 0;
}
