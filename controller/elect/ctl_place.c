/* SPDX-License-Identifier: Apache-2.0 */
/* Replica placement; see ctl_place.h for the rules. */
#include "controller/elect/ctl_place.h"

#include <string.h>

#include "common/mem.h"

uint32_t ctl_place_live_count(const struct meta_image *img)
{
    uint32_t n = 0;
    uint32_t i;

    for (i = 0; i < meta_image_broker_count(img); i++) {
        n += !meta_image_broker_at(img, i)->fenced;
    }
    return n;
}

static bool ctl_place_before(const struct meta_broker *a,
                             const struct meta_broker *b)
{
    int cmp = strcmp(a->rack, b->rack);

    return cmp < 0 || (cmp == 0 && a->id < b->id);
}

/* Live brokers sorted by (rack, id): an insertion sort, as rings are
 * small and this runs once per topic creation. */
static uint32_t ctl_place_sorted(const struct meta_image *img,
                                 const struct meta_broker **out)
{
    uint32_t n = 0;
    uint32_t i;

    for (i = 0; i < meta_image_broker_count(img); i++) {
        const struct meta_broker *b = meta_image_broker_at(img, i);
        uint32_t j = n;
        if (b->fenced) {
            continue;
        }
        while (j > 0 && ctl_place_before(b, out[j - 1])) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = b;
        n++;
    }
    return n;
}

/* Round k takes the k-th broker of every rack, racks in name order. With
 * no racks at all there is one group and the ring is in id order. */
static void ctl_place_alternate(struct ctl_place *pl,
                                const struct meta_broker **sorted,
                                uint32_t *group_start)
{
    uint32_t g;
    uint32_t k;
    uint32_t n = 0;

    pl->n_racks = 0;
    for (k = 0; k < pl->n; k++) {
        if (k == 0 || strcmp(sorted[k]->rack, sorted[k - 1]->rack) != 0) {
            group_start[pl->n_racks++] = k;
        }
    }
    group_start[pl->n_racks] = pl->n;
    for (k = 0; n < pl->n; k++) {
        for (g = 0; g < pl->n_racks; g++) {
            if (group_start[g] + k < group_start[g + 1]) {
                pl->ring[n] = sorted[group_start[g] + k]->id;
                pl->rack_of[n] = g;
                n++;
            }
        }
    }
}

int ctl_place_init(struct ctl_place *pl,
                   const struct meta_image *img,
                   int64_t topic_id,
                   int32_t rf)
{
    uint32_t nb = meta_image_broker_count(img);
    const struct meta_broker **sorted;
    uint32_t *group_start;

    memset(pl, 0, sizeof(*pl));
    sorted = mem_calloc(nb + 1, sizeof(sorted[0]));
    group_start = mem_calloc(nb + 1, sizeof(group_start[0]));
    pl->ring = mem_calloc(nb + 1, sizeof(pl->ring[0]));
    pl->rack_of = mem_calloc(nb + 1, sizeof(pl->rack_of[0]));
    if (sorted == NULL || group_start == NULL || pl->ring == NULL ||
        pl->rack_of == NULL) {
        mem_free(sorted);
        mem_free(group_start);
        ctl_place_fini(pl);
        return WEIR_ENOMEM;
    }
    pl->n = ctl_place_sorted(img, sorted);
    pl->rf = rf;
    ctl_place_alternate(pl, sorted, group_start);
    pl->start = pl->n > 0 ? (uint32_t)((uint64_t)topic_id % pl->n) : 0;
    mem_free(sorted);
    mem_free(group_start);
    return 0;
}

void ctl_place_fini(struct ctl_place *pl)
{
    mem_free(pl->ring);
    mem_free(pl->rack_of);
    memset(pl, 0, sizeof(*pl));
}

static bool ctl_place_rack_used(const struct ctl_place *pl,
                                const uint32_t *pos,
                                uint32_t n,
                                uint32_t rack)
{
    uint32_t i;

    for (i = 0; i < n; i++) {
        if (pl->rack_of[pos[i]] == rack) {
            return true;
        }
    }
    return false;
}

static bool ctl_place_taken(const uint32_t *pos, uint32_t n, uint32_t at)
{
    uint32_t i;

    for (i = 0; i < n; i++) {
        if (pos[i] == at) {
            return true;
        }
    }
    return false;
}

/* Next ring position after `from` not yet taken; while racks remain
 * unused, also on an unused rack. */
static uint32_t ctl_place_next(const struct ctl_place *pl,
                               const uint32_t *pos,
                               uint32_t n,
                               uint32_t racks_used)
{
    uint32_t j;
    uint32_t at;
    bool want_rack = racks_used < pl->n_racks;

    for (j = 1; j <= pl->n; j++) {
        at = (pos[0] + j) % pl->n;
        if (ctl_place_taken(pos, n, at) ||
            (want_rack && ctl_place_rack_used(pl, pos, n, pl->rack_of[at]))) {
            continue;
        }
        return at;
    }
    return UINT32_MAX; /* unreachable while rf <= ring size */
}

void ctl_place_partition(const struct ctl_place *pl,
                         int32_t p,
                         struct meta_ids *out)
{
    uint32_t pos[META_MAX_REPLICAS];
    uint32_t racks_used = 1;
    uint32_t n = 1;
    uint32_t at;

    pos[0] = (uint32_t)(((uint64_t)pl->start + (uint64_t)p) % pl->n);
    while (n < (uint32_t)pl->rf) {
        at = ctl_place_next(pl, pos, n, racks_used);
        if (at == UINT32_MAX) {
            break;
        }
        racks_used += !ctl_place_rack_used(pl, pos, n, pl->rack_of[at]);
        pos[n++] = at;
    }
    out->n = n;
    for (at = 0; at < n; at++) {
        out->ids[at] = pl->ring[pos[at]];
    }
}
