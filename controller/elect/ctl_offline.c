/* SPDX-License-Identifier: Apache-2.0 */
/* Offline replicas: a broker whose log of a partition failed (an I/O
 * error, a full disk, a failed checkpoint, a corrupt range) lists that
 * replica in every heartbeat, the whole set each time, and in its
 * registration. A listed replica may not lead, stay in or join the ISR:
 * the step that first sees it listed moves the leadership away and takes
 * it out of the ISR in one batch, as fencing does for a whole broker, and
 * the broker keeps serving its other partitions. Once no longer listed it
 * is an ordinary out-of-sync follower: its leader adds it back to the ISR
 * (AlterIsr) when it has caught up.
 * The set is soft state, like liveness: a restarted controller learns it
 * again from the next heartbeat (every 500 ms), and until then the ISR it
 * persisted already leaves the replica out. Persisting it would write a
 * record per disk hiccup for no gain in safety. */
#include <stdlib.h>
#include <string.h>

#include "common/mem.h"
#include "controller/elect/ctl_core_int.h"

static int ctl_offline_cmp(const void *a, const void *b)
{
    const struct ctl_replica *x = a;
    const struct ctl_replica *y = b;

    if (x->topic_id != y->topic_id) {
        return x->topic_id < y->topic_id ? -1 : 1;
    }
    return (x->partition > y->partition) - (x->partition < y->partition);
}

static bool
ctl_offline_has(const struct ctl_live *l, int64_t topic_id, int32_t partition)
{
    struct ctl_replica key = {topic_id, partition};

    return l->n_offline > 0 && bsearch(&key, l->offline, l->n_offline,
                                       sizeof(key), ctl_offline_cmp) != NULL;
}

bool ctl_core_replica_offline(const struct ctl_core *core,
                              int32_t id,
                              int64_t topic_id,
                              int32_t partition)
{
    /* the lookup does not change the core */
    const struct ctl_live *l = ctl_core_live((struct ctl_core *)core, id);

    return l != NULL && ctl_offline_has(l, topic_id, partition);
}

bool ctl_core_replica_ok(const struct ctl_core *core,
                         int32_t id,
                         int64_t topic_id,
                         int32_t partition,
                         const struct ctl_excl *ex)
{
    return ctl_core_can_serve(core, id, ex) &&
           !ctl_core_replica_offline(core, id, topic_id, partition);
}

/* Sorted, without duplicates. */
static uint32_t ctl_offline_normalise(struct ctl_replica *v, uint32_t n)
{
    uint32_t k = 0;
    uint32_t i;

    if (n > 0) {
        qsort(v, n, sizeof(v[0]), ctl_offline_cmp);
    }
    for (i = 0; i < n; i++) {
        if (k == 0 || ctl_offline_cmp(&v[k - 1], &v[i]) != 0) {
            v[k++] = v[i];
        }
    }
    return k;
}

/* Is some entry of a missing from b? Both sorted and distinct. */
static bool ctl_offline_missing(const struct ctl_replica *a,
                                uint32_t na,
                                const struct ctl_replica *b,
                                uint32_t nb)
{
    uint32_t i = 0;
    uint32_t j = 0;

    while (i < na) {
        int cmp = j < nb ? ctl_offline_cmp(&a[i], &b[j]) : -1;
        if (cmp < 0) {
            return true;
        }
        j++;
        i += cmp == 0;
    }
    return false;
}

int ctl_core_set_offline(struct ctl_core *core,
                         int32_t id,
                         const struct ctl_replica *list,
                         uint32_t n,
                         bool *added,
                         bool *removed)
{
    struct ctl_live *l = ctl_core_live(core, id);
    struct ctl_replica *next = NULL;
    uint32_t k;

    *added = *removed = false;
    if (l == NULL || (n == 0 && l->n_offline == 0)) {
        return 0;
    }
    if (n > 0) {
        next = mem_malloc((size_t)n * sizeof(next[0]));
        if (next == NULL) {
            return WEIR_ENOMEM;
        }
        memcpy(next, list, (size_t)n * sizeof(next[0]));
    }
    k = ctl_offline_normalise(next, n);
    *added = ctl_offline_missing(next, k, l->offline, l->n_offline);
    *removed = ctl_offline_missing(l->offline, l->n_offline, next, k);
    mem_free(l->offline);
    l->offline = next;
    l->n_offline = k;
    return 0;
}

int ctl_offline_update(struct ctl_core *core,
                       struct ctl_actions *out,
                       int32_t id,
                       const struct ctl_replica *list,
                       uint32_t n)
{
    const struct meta_broker *b = meta_image_broker(core->img, id);
    bool added;
    bool removed;
    int rv;

    if (n > CTL_MAX_OFFLINE) {
        ctl_core_refuse(out, WEIR_EINVALID_REQUEST,
                        "broker %d lists %u offline replicas, at most %d",
                        (int)id, n, CTL_MAX_OFFLINE);
        return 0;
    }
    rv = ctl_core_set_offline(core, id, list, n, &added, &removed);
    if (rv != 0) {
        return err_set(&out->detail, rv, "recording offline replicas");
    }
    out->offline_changed = added || removed;
    out->n_offline = ctl_core_live(core, id)->n_offline;
    /* a fenced broker leads nothing and is in no ISR: nothing to move,
     * and its unfence will elect where it can */
    if (b == NULL || b->fenced || !(added || removed)) {
        return 0;
    }
    /* one walk: newly listed replicas leave the ISR (and leadership),
     * unlisted ones may now lead a partition that has only them */
    return ctl_elect_leaderless(core, out);
}
