/* SPDX-License-Identifier: Apache-2.0 */
#include "broker/quota.h"

#include <string.h>

#include "common/mem.h"

struct quota_bucket {
    char *key;
    double tokens; /* bytes; negative = owed */
    uint64_t last_ms;
};

struct quota {
    uint64_t rate;
    struct quota_bucket *b; /* unsorted; few keys per broker in practice */
    uint32_t n;
    uint32_t cap;
};

int quota_new(uint64_t rate, struct quota **out)
{
    struct quota *q = mem_calloc(1, sizeof(*q));

    *out = NULL;
    if (q == NULL || rate == 0) {
        mem_free(q);
        return rate == 0 ? WEIR_EINVALID_ARGUMENT : WEIR_ENOMEM;
    }
    q->rate = rate;
    *out = q;
    return 0;
}

void quota_free(struct quota *q)
{
    uint32_t i;

    if (q == NULL) {
        return;
    }
    for (i = 0; i < q->n; i++) {
        mem_free(q->b[i].key);
    }
    mem_free(q->b);
    mem_free(q);
}

/* Refill to now: one second of rate at most. */
static void
quota_refill(const struct quota *q, struct quota_bucket *b, uint64_t now_ms)
{
    if (now_ms > b->last_ms) {
        b->tokens += (double)q->rate * (double)(now_ms - b->last_ms) / 1000.0;
        b->last_ms = now_ms;
    }
    if (b->tokens > (double)q->rate) {
        b->tokens = (double)q->rate;
    }
}

/* Drop buckets that are full again (idle long enough to owe nothing):
 * forgetting them changes no answer. */
static void quota_sweep(struct quota *q, uint64_t now_ms)
{
    uint32_t i = 0;

    while (i < q->n) {
        quota_refill(q, &q->b[i], now_ms);
        if (q->b[i].tokens >= (double)q->rate) {
            mem_free(q->b[i].key);
            q->b[i] = q->b[--q->n];
        } else {
            i++;
        }
    }
}

static struct quota_bucket *
quota_find(struct quota *q, const char *key, uint64_t now_ms)
{
    struct quota_bucket *nb;
    uint32_t i;

    for (i = 0; i < q->n; i++) {
        if (strcmp(q->b[i].key, key) == 0) {
            return &q->b[i];
        }
    }
    if (q->n >= QUOTA_MAX_KEYS) {
        quota_sweep(q, now_ms);
        if (q->n >= QUOTA_MAX_KEYS) {
            return NULL;
        }
    }
    if (q->n == q->cap) {
        uint32_t cap = q->cap == 0 ? 8 : q->cap * 2;
        nb = mem_realloc(q->b, (size_t)cap * sizeof(*nb));
        if (nb == NULL) {
            return NULL;
        }
        q->b = nb;
        q->cap = cap;
    }
    nb = &q->b[q->n];
    nb->key = mem_strdup(key);
    if (nb->key == NULL) {
        return NULL;
    }
    nb->tokens = (double)q->rate;
    nb->last_ms = now_ms;
    q->n++;
    return nb;
}

uint32_t
quota_charge(struct quota *q, const char *key, uint64_t bytes, uint64_t now_ms)
{
    struct quota_bucket *b = quota_find(q, key, now_ms);
    double owed_ms;

    if (b == NULL) {
        return 0;
    }
    quota_refill(q, b, now_ms);
    b->tokens -= (double)bytes;
    if (b->tokens >= 0) {
        return 0;
    }
    owed_ms = -b->tokens * 1000.0 / (double)q->rate;
    if (owed_ms >= (double)QUOTA_MAX_THROTTLE_MS) {
        return QUOTA_MAX_THROTTLE_MS;
    }
    return (uint32_t)owed_ms + 1;
}

uint32_t quota_keys(const struct quota *q)
{
    return q->n;
}
