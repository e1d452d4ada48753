/* SPDX-License-Identifier: Apache-2.0 */
/* Chain values (meta_chain.h). A cryptographic hash, not a CRC: a CRC is
 * linear, so two different histories could be made to agree, and a
 * 32-bit check would collide once in four billion comparisons; 63 bits of
 * SHA-256 make an accidental match out of reach. */
#include "controller/meta/meta_chain.h"

#include <openssl/sha.h>

#include "common/buf.h"

static int64_t meta_chain_take(const uint8_t *digest)
{
    return (int64_t)(wire_get_u64be(digest) & (uint64_t)INT64_MAX);
}

int64_t meta_chain_fold(int64_t prev, const uint8_t *rec, size_t len)
{
    uint8_t in[8 + SHA256_DIGEST_LENGTH];
    uint8_t out[SHA256_DIGEST_LENGTH];

    wire_put_u64be(in, (uint64_t)prev);
    (void)SHA256(rec, len, in + 8);
    (void)SHA256(in, sizeof(in), out);
    return meta_chain_take(out);
}

int64_t meta_chain_of_legacy_snapshot(const uint8_t *p, size_t len)
{
    return meta_chain_fold(META_CHAIN_ZERO, p, len);
}
