/* SPDX-License-Identifier: Apache-2.0 */
#include "tests/lib/batch_gen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/batch.h"

static uint8_t batch_gen_pad(uint32_t id, int32_t rec, size_t i)
{
    return (uint8_t)('a' + (id * 7u + (uint32_t)rec * 13u + i) % 26u);
}

static size_t batch_gen_value(
    uint8_t *v, size_t cap, uint32_t id, int32_t rec, size_t value_len)
{
    int n = snprintf((char *)v, cap, "id=%u rec=%d;", id, rec);
    size_t len = (size_t)n;
    size_t i;

    for (i = len; i < value_len && i < cap; i++) {
        v[i] = batch_gen_pad(id, rec, i);
    }
    return i > len ? i : len;
}

int batch_gen_make(struct weir_buf *out,
                   uint32_t id,
                   int32_t n,
                   int64_t ts0,
                   int64_t ts_step,
                   size_t value_len)
{
    struct batch_builder bb;
    struct weir_slice b;
    uint8_t *value = malloc(value_len + 64);
    char key[32];
    int32_t i;
    int rv = 0;

    if (value == NULL) {
        return WEIR_ENOMEM;
    }
    batch_builder_init(&bb);
    for (i = 0; i < n && rv == 0; i++) {
        size_t vlen = batch_gen_value(value, value_len + 64, id, i, value_len);
        int klen = snprintf(key, sizeof(key), "k%d", i);
        rv = batch_builder_add(&bb, ts0 + i * ts_step, key, klen, value,
                               (int32_t)vlen, NULL, 0);
    }
    if (rv == 0) {
        rv = batch_builder_finish(&bb, &b);
    }
    if (rv == 0) {
        buf_put(out, b.p, b.len);
        rv = buf_ok(out) ? 0 : WEIR_ENOMEM;
    }
    batch_builder_fini(&bb);
    free(value);
    return rv;
}

bool batch_gen_parse(struct weir_slice value, uint32_t *id, int32_t *rec)
{
    char head[64];
    size_t hl = value.len < sizeof(head) - 1 ? value.len : sizeof(head) - 1;
    const char *semi;
    size_t i;
    int used = 0;

    memcpy(head, value.p, hl);
    head[hl] = '\0';
    semi = strchr(head, ';');
    if (semi == NULL || sscanf(head, "id=%u rec=%d;%n", id, rec, &used) < 2 ||
        used != (int)(semi - head + 1)) {
        return false;
    }
    for (i = (size_t)used; i < value.len; i++) {
        if (value.p[i] != batch_gen_pad(*id, *rec, i)) {
            return false;
        }
    }
    return true;
}
