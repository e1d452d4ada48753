/* SPDX-License-Identifier: Apache-2.0 */
/* The Raft core's in-memory log: the entries after the snapshot point, each
 * with its own copy of the data bytes, so nothing the caller hands in is
 * kept. Indexes are dense: e[i].index == snap_index + 1 + i.
 * Locality: one thread (the controller loop). */
#include <string.h>

#include "common/mem.h"
#include "controller/quorum/raft_int.h"

void raft_log_init(struct raft_log *l, uint64_t snap_index, uint64_t term)
{
    memset(l, 0, sizeof(*l));
    l->snap_index = snap_index;
    l->snap_term = term;
}

static void raft_log_free_range(struct raft_log *l, uint32_t from)
{
    for (uint32_t i = from; i < l->n; i++) {
        mem_free((void *)l->e[i].data);
        l->e[i].data = NULL;
    }
}

void raft_log_fini(struct raft_log *l)
{
    raft_log_free_range(l, 0);
    mem_free(l->e);
    memset(l, 0, sizeof(*l));
}

uint64_t raft_log_last(const struct raft_log *l)
{
    return l->snap_index + l->n;
}

uint64_t raft_log_last_term(const struct raft_log *l)
{
    return l->n == 0 ? l->snap_term : l->e[l->n - 1].term;
}

uint64_t raft_log_term(const struct raft_log *l, uint64_t index)
{
    if (index == l->snap_index) {
        return l->snap_term;
    }
    if (index < l->snap_index || index > raft_log_last(l)) {
        return 0;
    }
    return l->e[index - l->snap_index - 1].term;
}

const struct raft_entry *raft_log_at(const struct raft_log *l, uint64_t i)
{
    if (i <= l->snap_index || i > raft_log_last(l)) {
        return NULL;
    }
    return &l->e[i - l->snap_index - 1];
}

int raft_log_reserve(struct raft_log *l, uint32_t more)
{
    if (more > UINT32_MAX - l->n) {
        return WEIR_ENOMEM;
    }
    if (l->n + more <= l->cap) {
        return 0;
    }
    return mem_grow((void **)&l->e, &l->cap, l->n + more, sizeof(*l->e));
}

int raft_log_copy_data(const struct raft_entry *e, uint8_t **out)
{
    *out = NULL;
    if (e->len == 0) {
        return 0;
    }
    *out = mem_malloc(e->len);
    if (*out == NULL) {
        return WEIR_ENOMEM;
    }
    memcpy(*out, e->data, e->len);
    return 0;
}

void raft_log_append_take(struct raft_log *l,
                          const struct raft_entry *e,
                          uint8_t *data)
{
    struct raft_entry *d = &l->e[l->n++];

    d->index = raft_log_last(l);
    d->term = e->term;
    d->type = e->type;
    d->data = data;
    d->len = e->len;
}

void raft_log_truncate(struct raft_log *l, uint64_t from)
{
    uint32_t keep;

    if (from > raft_log_last(l)) {
        return;
    }
    keep = from <= l->snap_index ? 0 : (uint32_t)(from - l->snap_index - 1);
    raft_log_free_range(l, keep);
    l->n = keep;
}

void raft_log_compact(struct raft_log *l, uint64_t index, uint64_t term)
{
    uint32_t drop;

    if (index <= l->snap_index) {
        return;
    }
    if (index >= raft_log_last(l) || raft_log_term(l, index) != term) {
        /* Nothing after the snapshot point can be trusted to follow it. */
        raft_log_free_range(l, 0);
        l->n = 0;
    } else {
        drop = (uint32_t)(index - l->snap_index);
        for (uint32_t i = 0; i < drop; i++) {
            mem_free((void *)l->e[i].data);
        }
        memmove(l->e, l->e + drop, (l->n - drop) * sizeof(*l->e));
        l->n -= drop;
    }
    l->snap_index = index;
    l->snap_term = term;
}
