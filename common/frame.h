/* SPDX-License-Identifier: Apache-2.0 */
/* Frame prefix codec: u32be frame_len | u32be header_len, then header_len
 * bytes of protobuf header and frame_len - 4 - header_len bytes of raw
 * payload. Pure functions; limits are checked before anyone allocates. */
#ifndef COMMON_FRAME_H
#define COMMON_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define FRAME_PREFIX_BYTES             8
#define FRAME_DEFAULT_MAX_BYTES        (8u * 1024 * 1024)
#define FRAME_DEFAULT_MAX_HEADER_BYTES (1u * 1024 * 1024)

struct frame_limits {
    uint32_t max_frame_bytes;  /* frame_len may not exceed this */
    uint32_t max_header_bytes; /* header_len may not exceed this */
};

struct frame_info {
    uint32_t frame_len;   /* bytes after the length field */
    uint32_t header_len;  /* protobuf header bytes */
    uint32_t payload_len; /* raw payload bytes */
};

/* Decode and check the 8-byte prefix at p (at least FRAME_PREFIX_BYTES).
 * Errors: WEIR_EFRAME_TOO_LARGE (frame or header beyond the limits),
 * WEIR_EMALFORMED (header_len larger than the frame). */
WEIR_MUST_CHECK int frame_decode_prefix(const uint8_t *p,
                                        const struct frame_limits *lim,
                                        struct frame_info *out,
                                        struct err_detail *ed);

/* Write the prefix for a header and payload of the given sizes. */
void frame_encode_prefix(uint8_t *out,
                         uint32_t header_len,
                         uint32_t payload_len);

#endif /* COMMON_FRAME_H */
