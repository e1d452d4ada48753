/* SPDX-License-Identifier: Apache-2.0 */
/* Key -> latest offset map for the cleaner (open addressing, linear
 * probing). */
#include "broker/storage/plog_compact_map.h"

#include <string.h>

#include "common/crc32c.h"
#include "common/mem.h"

void plog_compact_map_init(struct plog_compact_map *m)
{
    memset(m, 0, sizeof(*m));
}

void plog_compact_map_fini(struct plog_compact_map *m)
{
    uint32_t i;

    for (i = 0; i < m->cap; i++) {
        mem_free(m->slots[i].key);
    }
    mem_free(m->slots);
    plog_compact_map_init(m);
}

static uint32_t plog_compact_map_find(const struct plog_compact_map_slot *slots,
                                      uint32_t cap,
                                      const void *key,
                                      size_t key_len,
                                      uint32_t hash)
{
    uint32_t i = hash & (cap - 1);

    while (slots[i].key != NULL &&
           !(slots[i].hash == hash && slots[i].key_len == key_len &&
             memcmp(slots[i].key, key, key_len) == 0)) {
        i = (i + 1) & (cap - 1);
    }
    return i;
}

static int plog_compact_map_grow(struct plog_compact_map *m)
{
    uint32_t ncap = m->cap == 0 ? 64 : m->cap * 2;
    struct plog_compact_map_slot *ns;
    uint32_t i;

    if (ncap < m->cap) {
        return WEIR_ENOMEM;
    }
    ns = mem_calloc(ncap, sizeof(*ns));
    if (ns == NULL) {
        return WEIR_ENOMEM;
    }
    for (i = 0; i < m->cap; i++) {
        const struct plog_compact_map_slot *o = &m->slots[i];
        if (o->key != NULL) {
            ns[plog_compact_map_find(ns, ncap, o->key, o->key_len, o->hash)] =
                *o;
        }
    }
    mem_free(m->slots);
    m->slots = ns;
    m->cap = ncap;
    return 0;
}

int plog_compact_map_put(struct plog_compact_map *m,
                         const void *key,
                         size_t key_len,
                         int64_t offset)
{
    uint32_t hash = crc32c(key, key_len);
    struct plog_compact_map_slot *s;
    int rv;

    if ((m->n + 1) * 2 > m->cap) {
        rv = plog_compact_map_grow(m);
        if (rv != 0) {
            return rv;
        }
    }
    s = &m->slots[plog_compact_map_find(m->slots, m->cap, key, key_len, hash)];
    if (s->key == NULL) {
        s->key = mem_malloc(key_len == 0 ? 1 : key_len);
        if (s->key == NULL) {
            return WEIR_ENOMEM;
        }
        if (key_len > 0) {
            memcpy(s->key, key, key_len);
        }
        s->key_len = key_len;
        s->hash = hash;
        m->n++;
        m->key_bytes += key_len;
    }
    s->offset = offset;
    return 0;
}

int64_t plog_compact_map_get(const struct plog_compact_map *m,
                             const void *key,
                             size_t key_len)
{
    const struct plog_compact_map_slot *s;

    if (m->cap == 0) {
        return -1;
    }
    s = &m->slots[plog_compact_map_find(m->slots, m->cap, key, key_len,
                                        crc32c(key, key_len))];
    return s->key == NULL ? -1 : s->offset;
}
