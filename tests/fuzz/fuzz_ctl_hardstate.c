/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: the controller's raft-state file
 * (controller/ctl_hardstate.c), bytes read from disk. Oracles: a refusal
 * is WEIR_ECORRUPT with a message and leaves zeros; an accepted state is
 * in range and encodes back to exactly the bytes it was read from.
 * Seeds in corpus/ctl_hardstate/ (tests/fuzz/make_corpus.py writes them):
 * valid states and damaged copies. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "controller/ctl_hardstate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t back[CTL_HARDSTATE_BYTES];
    struct raft_hard_state hs;
    struct err_detail ed;
    uint8_t *copy = malloc(size > 0 ? size : 1);
    int rv;

    if (copy == NULL) {
        abort();
    }
    memcpy(copy, data, size); /* exactly these bytes: ASan sees overreads */
    err_detail_clear(&ed);
    rv = ctl_hardstate_decode(copy, size, &hs, &ed);
    if (rv != 0) {
        if (rv != WEIR_ECORRUPT || ed.code != rv || ed.msg[0] == '\0' ||
            hs.term != 0 || hs.vote != 0 || hs.nonce != 0) {
            abort();
        }
    } else {
        if (size != CTL_HARDSTATE_BYTES || hs.term >= RAFT_LIMIT ||
            hs.vote > RAFT_MAX_ID || (hs.term == 0 && hs.vote != 0)) {
            abort();
        }
        ctl_hardstate_encode(&hs, back);
        if (memcmp(back, copy, size) != 0) {
            abort();
        }
    }
    free(copy);
    return 0;
}
