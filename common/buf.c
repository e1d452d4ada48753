/* SPDX-License-Identifier: Apache-2.0 */
#include "common/buf.h"

#include <string.h>

#include "common/mem.h"

void buf_init(struct weir_buf *b)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->oom = false;
}

void buf_fini(struct weir_buf *b)
{
    mem_free(b->data);
    buf_init(b);
}

void buf_reset(struct weir_buf *b)
{
    b->len = 0;
    b->oom = false;
}

int buf_reserve(struct weir_buf *b, size_t extra)
{
    size_t need;
    size_t cap;
    uint8_t *p;

    if (b->oom) {
        return WEIR_ENOMEM;
    }
    if (extra > SIZE_MAX - b->len) {
        b->oom = true;
        return WEIR_ENOMEM;
    }
    need = b->len + extra;
    if (need <= b->cap) {
        return 0;
    }
    cap = b->cap < 64 ? 64 : b->cap;
    while (cap < need) {
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    }
    p = mem_realloc(b->data, cap);
    if (p == NULL) {
        b->oom = true;
        return WEIR_ENOMEM;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

void buf_put(struct weir_buf *b, const void *p, size_t n)
{
    if (n == 0 || buf_reserve(b, n) != 0) {
        return;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

void buf_put_u8(struct weir_buf *b, uint8_t v)
{
    buf_put(b, &v, 1);
}

void buf_put_u16be(struct weir_buf *b, uint16_t v)
{
    uint8_t t[2];
    wire_put_u16be(t, v);
    buf_put(b, t, sizeof(t));
}

void buf_put_u32be(struct weir_buf *b, uint32_t v)
{
    uint8_t t[4];
    wire_put_u32be(t, v);
    buf_put(b, t, sizeof(t));
}

void buf_put_u64be(struct weir_buf *b, uint64_t v)
{
    uint8_t t[8];
    wire_put_u64be(t, v);
    buf_put(b, t, sizeof(t));
}

void buf_put_varint(struct weir_buf *b, int32_t v)
{
    buf_put_varlong(b, v);
}

void buf_put_varlong(struct weir_buf *b, int64_t v)
{
    uint8_t t[10];
    size_t n = varint_encode(v, t);
    buf_put(b, t, n);
}

size_t buf_skip(struct weir_buf *b, size_t n)
{
    size_t at;

    if (buf_reserve(b, n) != 0) {
        return SIZE_MAX;
    }
    at = b->len;
    if (n > 0) { /* data is still NULL if nothing was ever reserved */
        memset(b->data + at, 0, n);
    }
    b->len += n;
    return at;
}

uint8_t *buf_take(struct weir_buf *b, size_t *len)
{
    uint8_t *p = b->data;

    *len = b->len;
    buf_init(b);
    return p;
}

void wire_put_u16be(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

void wire_put_u32be(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

void wire_put_u64be(uint8_t *p, uint64_t v)
{
    wire_put_u32be(p, (uint32_t)(v >> 32));
    wire_put_u32be(p + 4, (uint32_t)v);
}

uint16_t wire_get_u16be(const uint8_t *p)
{
    return (uint16_t)((uint16_t)p[0] << 8 | p[1]);
}

uint32_t wire_get_u32be(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           (uint32_t)p[3];
}

uint64_t wire_get_u64be(const uint8_t *p)
{
    return (uint64_t)wire_get_u32be(p) << 32 | wire_get_u32be(p + 4);
}

size_t varint_encode(int64_t v, uint8_t *out)
{
    /* zigzag: small magnitudes of either sign get short encodings */
    uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    size_t n = 0;

    while (u >= 0x80) {
        out[n++] = (uint8_t)(u | 0x80);
        u >>= 7;
    }
    out[n++] = (uint8_t)u;
    return n;
}

size_t varint_size(int64_t v)
{
    uint8_t t[10];
    return varint_encode(v, t);
}

void cur_init(struct weir_cursor *c, const void *p, size_t len)
{
    c->p = p;
    c->len = len;
    c->pos = 0;
}

bool cur_u8(struct weir_cursor *c, uint8_t *v)
{
    if (cur_remaining(c) < 1) {
        return false;
    }
    *v = c->p[c->pos++];
    return true;
}

bool cur_u16be(struct weir_cursor *c, uint16_t *v)
{
    if (cur_remaining(c) < 2) {
        return false;
    }
    *v = wire_get_u16be(c->p + c->pos);
    c->pos += 2;
    return true;
}

bool cur_u32be(struct weir_cursor *c, uint32_t *v)
{
    if (cur_remaining(c) < 4) {
        return false;
    }
    *v = wire_get_u32be(c->p + c->pos);
    c->pos += 4;
    return true;
}

bool cur_u64be(struct weir_cursor *c, uint64_t *v)
{
    if (cur_remaining(c) < 8) {
        return false;
    }
    *v = wire_get_u64be(c->p + c->pos);
    c->pos += 8;
    return true;
}

static bool cur_uvarint(struct weir_cursor *c, size_t max_bytes, uint64_t *v)
{
    uint64_t u = 0;
    size_t i;
    uint8_t b;

    for (i = 0; i < max_bytes; i++) {
        if (!cur_u8(c, &b)) {
            return false;
        }
        /* the tenth byte of a 64-bit value may carry only one bit */
        if (i == 9 && b > 1) {
            return false;
        }
        u |= (uint64_t)(b & 0x7f) << (7 * i);
        if ((b & 0x80) == 0) {
            *v = u;
            return true;
        }
    }
    return false; /* over-long */
}

bool cur_varlong(struct weir_cursor *c, int64_t *v)
{
    uint64_t u;

    if (!cur_uvarint(c, 10, &u)) {
        return false;
    }
    *v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
    return true;
}

bool cur_varint(struct weir_cursor *c, int32_t *v)
{
    uint64_t u;
    int64_t s;

    if (!cur_uvarint(c, 5, &u) || u > UINT32_MAX) {
        return false;
    }
    s = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
    *v = (int32_t)s;
    return true;
}

bool cur_bytes(struct weir_cursor *c, size_t n, struct weir_slice *out)
{
    if (cur_remaining(c) < n) {
        return false;
    }
    out->p = c->p + c->pos;
    out->len = n;
    c->pos += n;
    return true;
}

bool cur_skip(struct weir_cursor *c, size_t n)
{
    if (cur_remaining(c) < n) {
        return false;
    }
    c->pos += n;
    return true;
}
