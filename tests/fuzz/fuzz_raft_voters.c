/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: the --voters option parser (controller/quorum/
 * raft_voters.c). Input: the option text (cut at the first NUL). Oracles:
 * a refusal is WEIR_ECONFIG with a message and an empty set; an accepted
 * set has 1..RAFT_MAX_VOTERS members with ids in range, distinct ids and
 * addresses, ports != 0, each findable by id, and the text formatted back
 * from the members parses to the same set.
 * Seeds in corpus/raft_voters/ (tests/fuzz/make_corpus.py). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "controller/quorum/raft_voters.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_voters_check(const struct raft_voters *vs)
{
    uint32_t i;
    uint32_t j;

    if (vs->n == 0 || vs->n > RAFT_MAX_VOTERS) {
        abort();
    }
    for (i = 0; i < vs->n; i++) {
        if (vs->v[i].id == 0 || vs->v[i].id > RAFT_MAX_ID ||
            vs->v[i].port == 0 || vs->v[i].host[0] == '\0' ||
            raft_voters_find(vs, vs->v[i].id) != &vs->v[i]) {
            abort();
        }
        for (j = 0; j < i; j++) {
            if (vs->v[j].id == vs->v[i].id ||
                (vs->v[j].port == vs->v[i].port &&
                 strcasecmp(vs->v[j].host, vs->v[i].host) == 0)) {
                abort();
            }
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    char *again;
    struct raft_voters *vs = malloc(sizeof(*vs));
    struct raft_voters *vs2 = malloc(sizeof(*vs2));
    struct err_detail ed;
    size_t at = 0;
    uint32_t i;
    int rv;

    again = malloc(RAFT_MAX_VOTERS * (RAFT_VOTERS_ADDR_CAP + 12));
    if (text == NULL || vs == NULL || vs2 == NULL || again == NULL) {
        abort();
    }
    memcpy(text, data, size);
    text[size] = '\0';
    err_detail_clear(&ed);
    rv = raft_voters_parse(text, vs, &ed);
    if (rv != 0) {
        if (rv != WEIR_ECONFIG || ed.code != rv || ed.msg[0] == '\0' ||
            vs->n != 0) {
            abort();
        }
    } else {
        fuzz_voters_check(vs);
        for (i = 0; i < vs->n; i++) {
            at += (size_t)sprintf(again + at, "%s%u@%s", i > 0 ? "," : "",
                                  vs->v[i].id, vs->v[i].address);
        }
        if (raft_voters_parse(again, vs2, &ed) != 0 || vs2->n != vs->n ||
            memcmp(vs, vs2, sizeof(*vs)) != 0) {
            abort();
        }
    }
    free(again);
    free(vs2);
    free(vs);
    free(text);
    return 0;
}
