/* SPDX-License-Identifier: Apache-2.0 */
/* The Raft hard state of a quorum member (controller/quorum/raft.h,
 * struct raft_hard_state) in the file `raft-state` of the data dir:
 *   u32be magic 0x574d4853 ("WMHS") | u8 version (0) | u64be term |
 *   u32be vote | u64be nonce | u64be readmit_term |
 *   u32be CRC-32C of the above
 * 37 bytes, replaced atomically (common/datadir.h: temp file, fsync,
 * rename, directory fsync). No file: all zeros (a member that never voted,
 * or a single controller). The codec is pure and fuzzed
 * (tests/fuzz/fuzz_ctl_hardstate.c). Locality: the controller loop
 * thread. */
#ifndef CONTROLLER_CTL_HARDSTATE_H
#define CONTROLLER_CTL_HARDSTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "controller/quorum/raft.h"

#define CTL_HARDSTATE_FILE  "raft-state"
#define CTL_HARDSTATE_MAGIC 0x574d4853u
#define CTL_HARDSTATE_BYTES 37

void ctl_hardstate_encode(const struct raft_hard_state *hs,
                          uint8_t out[CTL_HARDSTATE_BYTES]);

/* Decode exactly CTL_HARDSTATE_BYTES bytes (untrusted): magic, version,
 * CRC, term below RAFT_LIMIT, vote <= RAFT_MAX_ID, no vote at term 0, a
 * readmit term no later than the term and only with a nonce.
 * Errors: WEIR_ECORRUPT (ed says which field). */
WEIR_MUST_CHECK int ctl_hardstate_decode(const uint8_t *p,
                                         size_t len,
                                         struct raft_hard_state *hs,
                                         struct err_detail *ed);

/* Read dir/raft-state; missing: zeros and *found false.
 * Errors: WEIR_EIO, WEIR_ECORRUPT (naming the file), WEIR_ENOMEM. */
WEIR_MUST_CHECK int ctl_hardstate_load(const char *dir,
                                       struct raft_hard_state *hs,
                                       bool *found,
                                       struct err_detail *ed);

/* Replace dir/raft-state atomically. Errors: WEIR_EINVALID_ARGUMENT (a
 * state the decoder would refuse), WEIR_EIO. */
WEIR_MUST_CHECK int ctl_hardstate_save(const char *dir,
                                       const struct raft_hard_state *hs,
                                       struct err_detail *ed);

#endif /* CONTROLLER_CTL_HARDSTATE_H */
