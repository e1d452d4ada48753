/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: the chain values at the head of the controller's snapshot
 * file (controller/ctl_chain.c), bytes read from disk. Oracles: a refusal
 * is WEIR_ECORRUPT with a message; an accepted head holds 1 ..
 * CTL_CHAIN_KEEP + 1 values in range, ends where it says, and encodes back
 * to exactly the bytes it was read from.
 * Seeds in corpus/ctl_chain/: a head of three values and one of a single
 * value (tests/fuzz/make_corpus.py writes them), and damaged copies. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "controller/ctl_chain.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ctl_chain c;
    struct err_detail ed;
    struct weir_buf b;
    uint8_t *copy = malloc(size > 0 ? size : 1);
    int64_t end = -1;
    size_t used = 0;
    uint32_t i;
    int rv;

    if (copy == NULL) {
        abort();
    }
    memcpy(copy, data, size); /* exactly these bytes: ASan sees overreads */
    ctl_chain_init(&c);
    err_detail_clear(&ed);
    rv = ctl_chain_decode(&c, copy, size, &used, &end, &ed);
    if (rv != 0) {
        if ((rv != WEIR_ECORRUPT && rv != WEIR_ENOMEM) || ed.code != rv ||
            ed.msg[0] == '\0') {
            abort();
        }
    } else {
        if (c.n == 0 || c.n > CTL_CHAIN_KEEP + 1 || used > size ||
            end != c.base + (int64_t)c.n - 1 || ctl_chain_first(&c) != c.base) {
            abort();
        }
        for (i = 0; i < c.n; i++) {
            if (c.values[i] < 0 ||
                ctl_chain_at(&c, c.base + i) != c.values[i]) {
                abort();
            }
        }
        buf_init(&b);
        if (ctl_chain_encode(&c, end, &b) != 0 || b.len != used ||
            memcmp(b.data, copy, used) != 0) {
            abort();
        }
        buf_fini(&b);
    }
    ctl_chain_fini(&c);
    free(copy);
    return 0;
}
