/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: RPC envelope decoders (rpc_request_decode and
 * rpc_response_decode) over the same bytes. Input: u32be payload_len, then
 * the protobuf header (shorter inputs: payload_len 0, all header).
 * Oracles: results are the documented codes with the documented *out
 * ownership, and whatever decodes cleanly re-encodes into a frame that
 * decodes cleanly to the same packed bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/frame.h"
#include "common/mem.h"
#include "common/rpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The header of a frame in b, checked against its own prefix. */
static struct weir_slice fuzz_env_header(const struct weir_buf *b,
                                         uint32_t payload_len)
{
    const struct frame_limits lim = {UINT32_MAX, UINT32_MAX};
    struct frame_info fi;
    struct weir_slice s;

    if (frame_decode_prefix(b->data, &lim, &fi, NULL) != 0 ||
        fi.payload_len != payload_len ||
        b->len != FRAME_PREFIX_BYTES + (size_t)fi.header_len) {
        abort();
    }
    s.p = b->data + FRAME_PREFIX_BYTES;
    s.len = fi.header_len;
    return s;
}

static void fuzz_env_request(struct weir_slice hdr, uint32_t payload_len)
{
    Weir__Request *r;
    Weir__Request *r2;
    struct weir_buf b1;
    struct weir_buf b2;
    struct err_detail ed;
    int rv = rpc_request_decode(hdr, payload_len, &r, &ed);

    if (r == NULL) {
        if (rv != WEIR_EMALFORMED && rv != WEIR_ENOMEM) {
            abort();
        }
        return;
    }
    if (rv != 0 && rv != WEIR_EUNSUPPORTED_API && rv != WEIR_EINVALID_REQUEST) {
        abort();
    }
    (void)rpc_api_name(r->body_case);
    if (rv == 0) {
        buf_init(&b1);
        buf_init(&b2);
        if (rpc_encode_request(r, payload_len, &b1) == 0) {
            if (rpc_request_decode(fuzz_env_header(&b1, payload_len),
                                   payload_len, &r2, &ed) != 0 ||
                r2->correlation_id != r->correlation_id ||
                r2->body_case != r->body_case ||
                rpc_encode_request(r2, payload_len, &b2) != 0 ||
                b1.len != b2.len || memcmp(b1.data, b2.data, b1.len) != 0) {
                abort();
            }
            rpc_request_free(r2);
        }
        buf_fini(&b1);
        buf_fini(&b2);
    }
    rpc_request_free(r);
}

static void fuzz_env_response(struct weir_slice hdr, uint32_t payload_len)
{
    Weir__Response *r;
    Weir__Response *r2;
    struct weir_buf b1;
    struct weir_buf b2;
    struct err_detail ed;
    int rv = rpc_response_decode(hdr, payload_len, &r, &ed);

    if (r == NULL) {
        if (rv != WEIR_EMALFORMED && rv != WEIR_ENOMEM) {
            abort();
        }
        return;
    }
    if (rv != 0 && rv != WEIR_EMALFORMED) {
        abort();
    }
    if (rv == 0) {
        buf_init(&b1);
        buf_init(&b2);
        if (rpc_encode_response(r, payload_len, &b1) == 0) {
            if (rpc_response_decode(fuzz_env_header(&b1, payload_len),
                                    payload_len, &r2, &ed) != 0 ||
                r2->correlation_id != r->correlation_id ||
                r2->body_case != r->body_case ||
                rpc_encode_response(r2, payload_len, &b2) != 0 ||
                b1.len != b2.len || memcmp(b1.data, b2.data, b1.len) != 0) {
                abort();
            }
            rpc_response_free(r2);
        }
        buf_fini(&b1);
        buf_fini(&b2);
    }
    rpc_response_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct weir_slice hdr = {data, size};
    uint32_t payload_len = 0;

    if (size >= 4) {
        payload_len = wire_get_u32be(data);
        hdr.p = data + 4;
        hdr.len = size - 4;
    }
    fuzz_env_request(hdr, payload_len);
    fuzz_env_response(hdr, payload_len);
    return 0;
}
