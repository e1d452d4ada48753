/* SPDX-License-Identifier: Apache-2.0 */
/* Request/response envelopes: protobuf-c headers inside frames. Every
 * unpack sits in a wrapper that also checks meaning (a body is set, counts
 * and ranges are sane, per-partition payload sizes add up), so handlers
 * never see an unchecked message. Unknown calls (a body this build does not
 * know) are reported as WEIR_EUNSUPPORTED_API. */
#ifndef COMMON_RPC_H
#define COMMON_RPC_H

#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"
#include "proto/weir.pb-c.h"

/* Bounds on decoded counts (beyond these a request is malformed). */
#define RPC_MAX_PARTITIONS 100000
#define RPC_MAX_TOPICS     10000
#define RPC_MAX_CONFIGS    1000

/* protobuf-c allocator over common/mem.h. */
extern ProtobufCAllocator rpc_allocator;

/* Unpack and check a request header. payload_len is the frame's payload
 * size: per-partition payload_bytes must add up to it exactly.
 * Success: *out owned by the caller (rpc_request_free). On failure *out is
 * NULL, except for WEIR_EUNSUPPORTED_API and semantic errors after a
 * successful unpack, where *out is set so the caller can still answer with
 * the correlation id (and must free it).
 * Errors: WEIR_EMALFORMED, WEIR_EUNSUPPORTED_API, WEIR_EINVALID_REQUEST,
 * WEIR_ENOMEM (retriable; *out is NULL). */
WEIR_MUST_CHECK int rpc_request_decode(struct weir_slice header,
                                       uint32_t payload_len,
                                       Weir__Request **out,
                                       struct err_detail *ed);
void rpc_request_free(Weir__Request *r);

/* Unpack and check a response header (client side). Same ownership. */
WEIR_MUST_CHECK int rpc_response_decode(struct weir_slice header,
                                        uint32_t payload_len,
                                        Weir__Response **out,
                                        struct err_detail *ed);
void rpc_response_free(Weir__Response *r);

/* Append prefix + packed header to out; the caller appends payload_len bytes
 * of payload after it (or sends them separately, e.g. from a file).
 * Errors: WEIR_ENOMEM, WEIR_EFRAME_TOO_LARGE. */
WEIR_MUST_CHECK int rpc_encode_request(const Weir__Request *r,
                                       uint32_t payload_len,
                                       struct weir_buf *out);
WEIR_MUST_CHECK int rpc_encode_response(const Weir__Response *r,
                                        uint32_t payload_len,
                                        struct weir_buf *out);

/* Name of a request's call ("produce"), for traces. */
const char *rpc_api_name(Weir__Request__BodyCase c);

#endif /* COMMON_RPC_H */
