/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: the controller quorum's RaftMessage decoder
 * (controller/quorum/raft_codec.c). Input: one whole frame (8-byte prefix,
 * Request header, payload), as a peer would send it; the prefix is checked
 * as the server checks it (default limits). Oracles: a refusal is
 * WEIR_EMALFORMED or WEIR_ENOMEM with a message; an accepted message
 * passes raft_codec_check, its entry and chunk pointers lie inside the
 * payload and cover it exactly, and it re-encodes into a frame that
 * decodes to the same message.
 * Seeds in corpus/raft_codec/ (tests/fuzz/make_corpus.py writes them):
 * one message of each type, and ones aimed at each limit. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/frame.h"
#include "controller/quorum/raft_codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_raft_same(const struct raft_wire *a, const struct raft_wire *b)
{
    const struct raft_msg *x = &a->msg;
    const struct raft_msg *y = &b->msg;
    uint32_t i;

    if (x->type != y->type || x->from != y->from || x->to != y->to ||
        x->term != y->term || x->pre_vote != y->pre_vote ||
        x->granted != y->granted || x->nonce != y->nonce ||
        x->index != y->index || x->log_term != y->log_term ||
        x->commit != y->commit || x->success != y->success ||
        x->match != y->match || x->hint != y->hint ||
        x->n_entries != y->n_entries || x->offset != y->offset ||
        x->done != y->done || x->len != y->len ||
        memcmp(x->admitted, y->admitted, sizeof(x->admitted)) != 0 ||
        strcmp(a->cluster_id, b->cluster_id) != 0) {
        abort();
    }
    if (x->len > 0 && memcmp(x->data, y->data, x->len) != 0) {
        abort();
    }
    for (i = 0; i < x->n_entries; i++) {
        if (x->entries[i].index != y->entries[i].index ||
            x->entries[i].term != y->entries[i].term ||
            x->entries[i].type != y->entries[i].type ||
            x->entries[i].len != y->entries[i].len ||
            (x->entries[i].len > 0 &&
             memcmp(x->entries[i].data, y->entries[i].data,
                    x->entries[i].len) != 0)) {
            abort();
        }
    }
}

/* Pointers inside [p, p + n), covering it exactly, in order. */
static void
fuzz_raft_inside(const struct raft_msg *m, const uint8_t *p, uint32_t n)
{
    const uint8_t *at = p;
    uint32_t i;

    for (i = 0; i < m->n_entries; i++) {
        if (m->entries[i].len > 0 && m->entries[i].data != at) {
            abort();
        }
        at += m->entries[i].len;
    }
    if (m->len > 0 && m->data != at) {
        abort();
    }
    if ((size_t)(at + m->len - p) != n) {
        abort();
    }
}

static void fuzz_raft_roundtrip(const struct raft_wire *w)
{
    const struct frame_limits lim = {UINT32_MAX, UINT32_MAX};
    struct raft_wire *w2 = malloc(sizeof(*w2));
    struct frame_info fi;
    struct err_detail ed;
    struct weir_buf b;
    struct weir_slice h;

    if (w2 == NULL) {
        abort();
    }
    buf_init(&b);
    if (raft_codec_encode(&w->msg, w->cluster_id, &b, &ed) == 0) {
        if (frame_decode_prefix(b.data, &lim, &fi, &ed) != 0 ||
            b.len != 4 + (size_t)fi.frame_len) {
            abort();
        }
        h.p = b.data + FRAME_PREFIX_BYTES;
        h.len = fi.header_len;
        if (raft_codec_decode(h, h.p + h.len, fi.payload_len, w2, &ed) != 0) {
            abort();
        }
        fuzz_raft_same(w, w2);
    } else if (ed.code != WEIR_ENOMEM) {
        abort(); /* what decodes must encode */
    }
    buf_fini(&b);
    free(w2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct frame_limits lim = {FRAME_DEFAULT_MAX_BYTES,
                                     FRAME_DEFAULT_MAX_HEADER_BYTES};
    struct raft_wire *w;
    struct frame_info fi;
    struct err_detail ed;
    struct weir_slice h;
    uint8_t *copy;
    int rv;

    if (size < FRAME_PREFIX_BYTES ||
        frame_decode_prefix(data, &lim, &fi, NULL) != 0 ||
        size - 4 < fi.frame_len) {
        return 0; /* the server never hands such a frame on */
    }
    /* exactly the frame's bytes, so ASan sees any read past them */
    copy = malloc(fi.frame_len + 4);
    w = malloc(sizeof(*w));
    if (copy == NULL || w == NULL) {
        abort();
    }
    memcpy(copy, data, fi.frame_len + 4);
    h.p = copy + FRAME_PREFIX_BYTES;
    h.len = fi.header_len;
    err_detail_clear(&ed);
    rv = raft_codec_decode(h, h.p + h.len, fi.payload_len, w, &ed);
    if (rv != 0) {
        if ((rv != WEIR_EMALFORMED && rv != WEIR_ENOMEM) || ed.code != rv ||
            ed.msg[0] == '\0') {
            abort();
        }
    } else {
        if (raft_codec_check(&w->msg, &ed) != 0) {
            abort();
        }
        fuzz_raft_inside(&w->msg, h.p + h.len, fi.payload_len);
        fuzz_raft_roundtrip(w);
    }
    free(w);
    free(copy);
    return 0;
}
