/* SPDX-License-Identifier: Apache-2.0 */
#include "client/partitioner.h"

/* Transcribed from Kafka's Utils.murmur2 with unsigned arithmetic, which
 * wraps exactly as Java's int does; ">>>" is the unsigned shift. */
int32_t partitioner_murmur2(const void *key, size_t len)
{
    const uint8_t *d = key;
    const uint32_t m = 0x5bd1e995u;
    const int r = 24;
    uint32_t h = 0x9747b28cu ^ (uint32_t)len;
    size_t n4 = len / 4;
    size_t i;
    uint32_t k;
    size_t tail;

    for (i = 0; i < n4; i++) {
        k = (uint32_t)d[i * 4] | (uint32_t)d[i * 4 + 1] << 8 |
            (uint32_t)d[i * 4 + 2] << 16 | (uint32_t)d[i * 4 + 3] << 24;
        k *= m;
        k ^= k >> r;
        k *= m;
        h *= m;
        h ^= k;
    }
    /* the 1 to 3 bytes left, as murmur2's cascade of cases (written
     * without fall-through: the bytes land on disjoint bits) */
    tail = len & ~(size_t)3;
    switch (len % 4) {
    case 3:
        h ^= (uint32_t)d[tail + 2] << 16 | (uint32_t)d[tail + 1] << 8 |
             (uint32_t)d[tail];
        h *= m;
        break;
    case 2:
        h ^= (uint32_t)d[tail + 1] << 8 | (uint32_t)d[tail];
        h *= m;
        break;
    case 1:
        h ^= d[tail];
        h *= m;
        break;
    default:
        break;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return (int32_t)h;
}

int32_t partitioner_key(const void *key, size_t len, int32_t n)
{
    uint32_t h = (uint32_t)partitioner_murmur2(key, len) & 0x7fffffffu;

    return (int32_t)(h % (uint32_t)n);
}

void partitioner_sticky_init(struct partitioner_sticky *s,
                             uint32_t seed,
                             int32_t n)
{
    s->current = n > 0 ? (int32_t)(seed % (uint32_t)n) : 0;
}

int32_t partitioner_sticky_next(struct partitioner_sticky *s, int32_t n)
{
    if (s->current < 0 || s->current >= n) {
        s->current = 0;
    }
    return s->current;
}

void partitioner_sticky_batch_sent(struct partitioner_sticky *s,
                                   int32_t p,
                                   int32_t n)
{
    if (n > 0 && s->current == p) {
        s->current = (p + 1) % n;
    }
}
