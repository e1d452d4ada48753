/* SPDX-License-Identifier: Apache-2.0 */
#include "common/crc32c.h"

#include <isa-l/crc.h>
#include <limits.h>

/* crc32_iscsi() takes and returns the raw register (no final inversion) and
 * an int length, so the standard pre/post inversion is done here and large
 * buffers are fed in chunks. */
uint32_t crc32c_extend(uint32_t crc, const void *p, size_t n)
{
    unsigned char *b = (unsigned char *)(uintptr_t)p;
    uint32_t reg = ~crc;

    while (n > 0) {
        int chunk = n > (size_t)INT_MAX ? INT_MAX : (int)n;
        reg = crc32_iscsi(b, chunk, reg);
        b += chunk;
        n -= (size_t)chunk;
    }
    return ~reg;
}

uint32_t crc32c(const void *p, size_t n)
{
    return crc32c_extend(0, p, n);
}
