/* SPDX-License-Identifier: Apache-2.0 */
/* Chain values held by the controller (ctl_chain.h). The array only grows
 * at its end and is trimmed at its start after a snapshot, so a lookup is
 * an index. */
#include "controller/ctl_chain.h"

#include <string.h>

#include "common/crc32c.h"
#include "common/mem.h"
#include "controller/meta/meta_chain.h"

void ctl_chain_init(struct ctl_chain *c)
{
    memset(c, 0, sizeof(*c));
}

void ctl_chain_fini(struct ctl_chain *c)
{
    mem_free(c->values);
    ctl_chain_init(c);
}

static int ctl_chain_room(struct ctl_chain *c, uint32_t n)
{
    if (n <= c->cap) {
        return 0;
    }
    return mem_grow((void **)&c->values, &c->cap, n, sizeof(c->values[0]));
}

int ctl_chain_reset(struct ctl_chain *c, int64_t offset, int64_t value)
{
    if (ctl_chain_room(c, 1) != 0) {
        return WEIR_ENOMEM;
    }
    c->base = offset;
    c->values[0] = value;
    c->n = 1;
    return 0;
}

int ctl_chain_push(struct ctl_chain *c, const uint8_t *rec, size_t len)
{
    if (c->n == 0 || c->n == UINT32_MAX || ctl_chain_room(c, c->n + 1) != 0) {
        return WEIR_ENOMEM;
    }
    c->values[c->n] = meta_chain_fold(c->values[c->n - 1], rec, len);
    c->n++;
    return 0;
}

void ctl_chain_drop_last(struct ctl_chain *c, uint32_t n)
{
    c->n = n < c->n ? c->n - n : (c->n > 0 ? 1 : 0);
}

void ctl_chain_trim(struct ctl_chain *c)
{
    uint32_t drop;

    if (c->n <= CTL_CHAIN_KEEP + 1) {
        return;
    }
    drop = c->n - (CTL_CHAIN_KEEP + 1);
    memmove(c->values, c->values + drop,
            (size_t)(c->n - drop) * sizeof(c->values[0]));
    c->n -= drop;
    c->base += drop;
}

int64_t ctl_chain_at(const struct ctl_chain *c, int64_t offset)
{
    if (c->n == 0 || offset < c->base || offset - c->base >= (int64_t)c->n) {
        return META_CHAIN_UNKNOWN;
    }
    return c->values[offset - c->base];
}

int64_t ctl_chain_first(const struct ctl_chain *c)
{
    return c->base;
}

int ctl_chain_encode(const struct ctl_chain *c,
                     int64_t end_offset,
                     struct weir_buf *b)
{
    size_t start = b->len;
    uint32_t n;
    uint32_t i;
    int64_t first;

    if (c->n == 0 || end_offset != c->base + (int64_t)c->n - 1) {
        return WEIR_EINVALID_ARGUMENT;
    }
    n = c->n > CTL_CHAIN_KEEP + 1 ? CTL_CHAIN_KEEP + 1 : c->n;
    first = end_offset - (int64_t)n + 1;
    buf_put_u32be(b, CTL_CHAIN_MAGIC);
    buf_put_u8(b, 0);
    buf_put_u64be(b, (uint64_t)first);
    buf_put_u32be(b, n);
    for (i = c->n - n; i < c->n; i++) {
        buf_put_u64be(b, (uint64_t)c->values[i]);
    }
    if (buf_ok(b)) {
        buf_put_u32be(b, crc32c(b->data + start, b->len - start));
    }
    return buf_ok(b) ? 0 : WEIR_ENOMEM;
}

int ctl_chain_decode(struct ctl_chain *c,
                     const uint8_t *p,
                     size_t len,
                     size_t *used,
                     int64_t *end_offset,
                     struct err_detail *ed)
{
    struct weir_cursor cur;
    uint32_t magic;
    uint8_t version;
    uint64_t base;
    uint32_t n;
    uint32_t i;
    size_t body;

    cur_init(&cur, p, len);
    if (!cur_u32be(&cur, &magic) || !cur_u8(&cur, &version) ||
        !cur_u64be(&cur, &base) || !cur_u32be(&cur, &n)) {
        return err_set(ed, WEIR_ECORRUPT, "chain head truncated");
    }
    if (magic != CTL_CHAIN_MAGIC || version != 0 || n == 0 ||
        n > CTL_CHAIN_KEEP + 1 || base > (uint64_t)(INT64_MAX - n) ||
        cur_remaining(&cur) < (size_t)n * 8 + 4) {
        return err_set(ed, WEIR_ECORRUPT,
                       "chain head impossible (magic %08x version %u, %u "
                       "values from offset %llu)",
                       magic, version, n, (unsigned long long)base);
    }
    body = CTL_CHAIN_HEAD_BYTES + (size_t)n * 8;
    if (crc32c(p, body) != wire_get_u32be(p + body)) {
        return err_set(ed, WEIR_ECORRUPT, "chain values fail their CRC");
    }
    if (ctl_chain_room(c, n) != 0) {
        return err_set(ed, WEIR_ENOMEM, "loading chain values");
    }
    for (i = 0; i < n; i++) {
        uint64_t v = wire_get_u64be(p + CTL_CHAIN_HEAD_BYTES + (size_t)i * 8);
        if (v > (uint64_t)INT64_MAX) {
            return err_set(ed, WEIR_ECORRUPT, "chain value %u out of range", i);
        }
        c->values[i] = (int64_t)v;
    }
    c->base = (int64_t)base;
    c->n = n;
    *used = body + 4;
    *end_offset = (int64_t)base + n - 1;
    return 0;
}
