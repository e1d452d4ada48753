/* SPDX-License-Identifier: Apache-2.0 */
/* Replica id sets. Linear scans: a partition has a handful of replicas,
 * and order must be kept, so nothing fancier pays off. */
#include "broker/replica/repl_core.h"

bool repl_ids_contains(const struct repl_ids *s, int32_t id)
{
    uint32_t i;

    for (i = 0; i < s->n && i < REPL_MAX_REPLICAS; i++) {
        if (s->ids[i] == id) {
            return true;
        }
    }
    return false;
}

bool repl_ids_is_valid(const struct repl_ids *s)
{
    uint32_t i;
    uint32_t j;

    if (s->n > REPL_MAX_REPLICAS) {
        return false;
    }
    for (i = 0; i < s->n; i++) {
        if (s->ids[i] < 0) {
            return false;
        }
        for (j = 0; j < i; j++) {
            if (s->ids[j] == s->ids[i]) {
                return false;
            }
        }
    }
    return true;
}

bool repl_ids_is_subset(const struct repl_ids *sub, const struct repl_ids *set)
{
    uint32_t i;

    for (i = 0; i < sub->n && i < REPL_MAX_REPLICAS; i++) {
        if (!repl_ids_contains(set, sub->ids[i])) {
            return false;
        }
    }
    return true;
}

bool repl_ids_same_members(const struct repl_ids *a, const struct repl_ids *b)
{
    /* valid sets have no duplicates, so equal sizes plus inclusion suffice */
    return a->n == b->n && repl_ids_is_subset(a, b);
}

bool repl_ids_add(struct repl_ids *s, int32_t id)
{
    if (repl_ids_contains(s, id)) {
        return true;
    }
    if (s->n >= REPL_MAX_REPLICAS) {
        return false;
    }
    s->ids[s->n++] = id;
    return true;
}

void repl_ids_remove(struct repl_ids *s, int32_t id)
{
    uint32_t i;
    uint32_t j = 0;

    for (i = 0; i < s->n && i < REPL_MAX_REPLICAS; i++) {
        if (s->ids[i] != id) {
            s->ids[j++] = s->ids[i];
        }
    }
    s->n = j;
}
