/* SPDX-License-Identifier: Apache-2.0 */
/* Growable byte buffer (writer) and bounds-checked read cursor. All
 * untrusted bytes are read through a cursor: every call checks the bytes
 * that remain and returns false instead of reading past the end.
 * Big-endian fixed-width integers; zigzag varints as in Kafka's record
 * format (at most 5 bytes for 32-bit, 10 bytes for 64-bit values). */
#ifndef COMMON_BUF_H
#define COMMON_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* Read-only view of bytes owned by someone else. */
struct weir_slice {
    const uint8_t *p;
    size_t len;
};

/* Owned, growable buffer. Embed and init; fini frees. */
struct weir_buf {
    uint8_t *data;
    size_t len; /* bytes written */
    size_t cap; /* bytes allocated */
    bool oom;   /* an append failed for lack of memory; later appends no-op */
};

void buf_init(struct weir_buf *b);
void buf_fini(struct weir_buf *b);
/* Drop contents, keep the allocation. Clears oom. */
void buf_reset(struct weir_buf *b);
/* Make room for `extra` more bytes. Errors: WEIR_ENOMEM (and sets oom). */
WEIR_MUST_CHECK int buf_reserve(struct weir_buf *b, size_t extra);
/* Appends. On failure they set b->oom and do nothing else, so a sequence of
 * appends can be checked once at the end with buf_ok(). */
void buf_put(struct weir_buf *b, const void *p, size_t n);
void buf_put_u8(struct weir_buf *b, uint8_t v);
void buf_put_u16be(struct weir_buf *b, uint16_t v);
void buf_put_u32be(struct weir_buf *b, uint32_t v);
void buf_put_u64be(struct weir_buf *b, uint64_t v);
void buf_put_varint(struct weir_buf *b, int32_t v);  /* zigzag */
void buf_put_varlong(struct weir_buf *b, int64_t v); /* zigzag */
/* Reserve n zero bytes and return their offset (for lengths and CRCs filled
 * in later). Returns SIZE_MAX on failure. */
size_t buf_skip(struct weir_buf *b, size_t n);
static inline bool buf_ok(const struct weir_buf *b)
{
    return !b->oom;
}
static inline struct weir_slice buf_slice(const struct weir_buf *b)
{
    struct weir_slice s = {b->data, b->len};
    return s;
}
/* Hand the allocation to the caller (free with mem_free); b becomes empty. */
uint8_t *buf_take(struct weir_buf *b, size_t *len);

/* Raw encoders into caller memory. */
void wire_put_u16be(uint8_t *p, uint16_t v);
void wire_put_u32be(uint8_t *p, uint32_t v);
void wire_put_u64be(uint8_t *p, uint64_t v);
uint16_t wire_get_u16be(const uint8_t *p);
uint32_t wire_get_u32be(const uint8_t *p);
uint64_t wire_get_u64be(const uint8_t *p);
/* Encode a zigzag varlong into out (10 bytes room); returns bytes used. */
size_t varint_encode(int64_t v, uint8_t *out);
/* Bytes the zigzag encoding of v takes. */
size_t varint_size(int64_t v);

/* Read cursor over untrusted bytes. */
struct weir_cursor {
    const uint8_t *p;
    size_t len;
    size_t pos;
};

void cur_init(struct weir_cursor *c, const void *p, size_t len);
static inline size_t cur_remaining(const struct weir_cursor *c)
{
    return c->len - c->pos;
}
bool cur_u8(struct weir_cursor *c, uint8_t *v);
bool cur_u16be(struct weir_cursor *c, uint16_t *v);
bool cur_u32be(struct weir_cursor *c, uint32_t *v);
bool cur_u64be(struct weir_cursor *c, uint64_t *v);
/* Zigzag varints; false on truncation or over-long encoding (more than 5
 * bytes, or a value outside int32, for varint; more than 10 for varlong). */
bool cur_varint(struct weir_cursor *c, int32_t *v);
bool cur_varlong(struct weir_cursor *c, int64_t *v);
/* Take n bytes as a slice into the cursor's memory. */
bool cur_bytes(struct weir_cursor *c, size_t n, struct weir_slice *out);
bool cur_skip(struct weir_cursor *c, size_t n);

#endif /* COMMON_BUF_H */
