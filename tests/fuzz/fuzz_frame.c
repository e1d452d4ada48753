/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: frame prefix decode, walking the input as a connection's
 * byte stream would be walked. Input: one byte choosing the limits, then
 * frames. Oracles: errors are the documented codes; accepted prefixes obey
 * the limits, add up, and re-encode to the same 8 bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct frame_limits fuzz_frame_lims[] = {
    {FRAME_DEFAULT_MAX_BYTES, FRAME_DEFAULT_MAX_HEADER_BYTES},
    {64, 16},
    {UINT32_MAX, UINT32_MAX},
    {4, 0},
};

#define FUZZ_FRAME_N_LIMS (sizeof(fuzz_frame_lims) / sizeof(fuzz_frame_lims[0]))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct frame_limits *lim;
    struct frame_info fi;
    struct err_detail ed;
    uint8_t again[FRAME_PREFIX_BYTES];
    uint64_t pos = 1;
    int rv;

    if (size < 1) {
        return 0;
    }
    lim = &fuzz_frame_lims[data[0] % FUZZ_FRAME_N_LIMS];
    while (size - pos >= FRAME_PREFIX_BYTES) {
        rv = frame_decode_prefix(data + pos, lim, &fi, &ed);
        if (rv != 0) {
            if ((rv != WEIR_EFRAME_TOO_LARGE && rv != WEIR_EMALFORMED) ||
                ed.code != rv) {
                abort();
            }
            break;
        }
        if (fi.frame_len > lim->max_frame_bytes ||
            fi.header_len > lim->max_header_bytes ||
            (uint64_t)4 + fi.header_len + fi.payload_len != fi.frame_len) {
            abort();
        }
        frame_encode_prefix(again, fi.header_len, fi.payload_len);
        if (memcmp(again, data + pos, FRAME_PREFIX_BYTES) != 0) {
            abort();
        }
        /* the length field itself, then frame_len bytes */
        pos += (uint64_t)4 + fi.frame_len;
        if (pos > size) {
            break;
        }
    }
    return 0;
}
