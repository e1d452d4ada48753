/* SPDX-License-Identifier: Apache-2.0 */
#include "common/frame.h"

#include "common/buf.h"

int frame_decode_prefix(const uint8_t *p,
                        const struct frame_limits *lim,
                        struct frame_info *out,
                        struct err_detail *ed)
{
    uint32_t frame_len = wire_get_u32be(p);
    uint32_t header_len = wire_get_u32be(p + 4);

    if (frame_len > lim->max_frame_bytes) {
        return err_set(ed, WEIR_EFRAME_TOO_LARGE,
                       "frame of %u bytes exceeds the limit of %u", frame_len,
                       lim->max_frame_bytes);
    }
    if (frame_len < 4 || header_len > frame_len - 4) {
        return err_set(ed, WEIR_EMALFORMED,
                       "frame of %u bytes cannot hold a header of %u bytes",
                       frame_len, header_len);
    }
    if (header_len > lim->max_header_bytes) {
        return err_set(ed, WEIR_EFRAME_TOO_LARGE,
                       "header of %u bytes exceeds the limit of %u", header_len,
                       lim->max_header_bytes);
    }
    out->frame_len = frame_len;
    out->header_len = header_len;
    out->payload_len = frame_len - 4 - header_len;
    return 0;
}

void frame_encode_prefix(uint8_t *out,
                         uint32_t header_len,
                         uint32_t payload_len)
{
    wire_put_u32be(out, 4 + header_len + payload_len);
    wire_put_u32be(out + 4, header_len);
}
