/* SPDX-License-Identifier: Apache-2.0 */
/* CRC-32C (Castagnoli), as used by Kafka's record batch v2. Backed by
 * ISA-L's crc32_iscsi, which picks the SSE4.2/PCLMUL path at run time. */
#ifndef COMMON_CRC32C_H
#define COMMON_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32C of n bytes. crc32c("123456789", 9) == 0xE3069283. */
uint32_t crc32c(const void *p, size_t n);
/* Continue a running CRC: crc32c_extend(crc32c(a), b) == crc32c(a || b). */
uint32_t crc32c_extend(uint32_t crc, const void *p, size_t n);

#endif /* COMMON_CRC32C_H */
