/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: SCRAM messages. The input, split at its first newline,
 * is a client's first and final message to a server that knows one user
 * (RFC 7677's), and a server's first and final message to a client.
 * Oracles: only the documented codes; a server never reports success
 * without the exchange's nonce and the right proof (the fuzzer cannot
 * forge one: success there is a bug); outputs are NUL-terminated within
 * their buffers. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/scram.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct scram_cred fuzz_cred;
static bool fuzz_cred_ready;

static bool fuzz_lookup(void *arg,
                        enum scram_mech mech,
                        const char *user,
                        struct scram_cred *out)
{
    (void)arg;
    if (strcmp(user, "user") != 0 || mech != SCRAM_SHA_256) {
        return false;
    }
    *out = fuzz_cred;
    return true;
}

static void fuzz_check(int rv, int a, int b)
{
    if (rv != 0 && rv != a && rv != b) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint8_t salt[16] = {1, 2, 3, 4, 5, 6, 7, 8};
    const char *p = (const char *)data;
    const char *nl = memchr(p, '\n', size);
    size_t l1 = nl != NULL ? (size_t)(nl - p) : size;
    const char *m2 = nl != NULL ? nl + 1 : p + size;
    size_t l2 = nl != NULL ? size - l1 - 1 : 0;
    struct scram_server s;
    struct scram_client c;
    struct err_detail ed;
    char out[SCRAM_MAX_MESSAGE];
    int rv;

    if (!fuzz_cred_ready) {
        if (scram_cred_make(SCRAM_SHA_256, "pencil", salt, sizeof(salt), 4096,
                            &fuzz_cred, &ed) != 0) {
            abort();
        }
        fuzz_cred_ready = true;
    }
    scram_server_init(&s, SCRAM_SHA_256);
    rv =
        scram_server_first(&s, p, l1, fuzz_lookup, NULL, out, sizeof(out), &ed);
    fuzz_check(rv, WEIR_EMALFORMED, WEIR_EMALFORMED);
    if (rv == 0) {
        if (strlen(out) >= sizeof(out)) {
            abort();
        }
        rv = scram_server_final(&s, m2, l2, out, sizeof(out), &ed);
        fuzz_check(rv, WEIR_EMALFORMED, WEIR_EINVALID_ARGUMENT);
        if (rv == 0) {
            abort(); /* a proof the fuzzer could not have computed */
        }
    }
    /* the client side, answering the same bytes as a server's */
    if (scram_client_first(&c, SCRAM_SHA_256, "user", "fuzznonce", out,
                           sizeof(out), &ed) != 0) {
        abort();
    }
    rv = scram_client_final(&c, "pencil", p, l1 < 512 ? l1 : 512, out,
                            sizeof(out), &ed);
    fuzz_check(rv, WEIR_EMALFORMED, WEIR_EINVALID_ARGUMENT);
    if (rv == 0) {
        rv = scram_client_verify(&c, m2, l2, &ed);
        fuzz_check(rv, WEIR_EMALFORMED, WEIR_EINVALID_ARGUMENT);
    }
    return 0;
}
