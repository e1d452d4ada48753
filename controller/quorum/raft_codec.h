/* SPDX-License-Identifier: Apache-2.0 */
/* Raft messages on the wire: a struct raft_msg as one frame whose header is
 * a Request with body RaftMessage (proto/weir.proto) and whose raw payload
 * holds the entry bytes (APPEND) or the snapshot chunk (SNAPSHOT). Pure:
 * no socket, clock or file. Decoding is strict: every field is checked
 * against raft.h's limits, and a message that breaks one is
 * WEIR_EMALFORMED, never an assert. The encoder runs the same checks, so
 * it never sends what a peer would refuse.
 * Locality: any thread (no state). */
#ifndef CONTROLLER_QUORUM_RAFT_CODEC_H
#define CONTROLLER_QUORUM_RAFT_CODEC_H

#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"
#include "controller/quorum/raft.h"
#include "proto/weir.pb-c.h"

#define RAFT_CODEC_CLUSTER_ID_MAX 64 /* METAPROPS_ID_MAX */

/* A decoded message with the storage its pointers need. msg.entries points
 * into entries; msg.data and every entry's data borrow from the payload
 * given to the decoder (valid as long as it is). Large (about 10 KiB):
 * keep one per receiver, not on a small stack. */
struct raft_wire {
    struct raft_msg msg;
    char cluster_id[RAFT_CODEC_CLUSTER_ID_MAX + 1]; /* the sender's */
    struct raft_entry entries[RAFT_MAX_BATCH];
};

/* Check m against the limits a receiver enforces (the same checks the
 * decoder runs; payload sizes excepted). Errors: WEIR_EMALFORMED. */
WEIR_MUST_CHECK int raft_codec_check(const struct raft_msg *m,
                                     struct err_detail *ed);

/* Append one whole frame for m, sent by cluster_id (1..64 bytes), to out:
 * prefix, Request header, then the payload (copied). On failure out->len
 * is what it was. Errors: WEIR_EINVALID_ARGUMENT (m breaks a limit, or a
 * bad cluster id), WEIR_EFRAME_TOO_LARGE (payload past 4 GiB),
 * WEIR_ENOMEM. */
WEIR_MUST_CHECK int raft_codec_encode(const struct raft_msg *m,
                                      const char *cluster_id,
                                      struct weir_buf *out,
                                      struct err_detail *ed);

/* Check an unpacked RaftMessage and its frame's payload and fill out.
 * Errors: WEIR_EMALFORMED (ed says which field). */
WEIR_MUST_CHECK int raft_codec_decode_body(const Weir__RaftMessage *rm,
                                           const uint8_t *payload,
                                           uint32_t payload_len,
                                           struct raft_wire *out,
                                           struct err_detail *ed);

/* Decode a frame's header (a Request, as srv hands it) and payload.
 * Errors: WEIR_EMALFORMED (also for a Request of another call),
 * WEIR_ENOMEM. */
WEIR_MUST_CHECK int raft_codec_decode(struct weir_slice header,
                                      const uint8_t *payload,
                                      uint32_t payload_len,
                                      struct raft_wire *out,
                                      struct err_detail *ed);

/* "vote", "append_resp", ...; "unknown" outside the enum. */
const char *raft_codec_type_name(enum raft_msg_type t);

#endif /* CONTROLLER_QUORUM_RAFT_CODEC_H */
