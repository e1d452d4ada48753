/* SPDX-License-Identifier: Apache-2.0 */
/* The adapter of cluster_finder: both controller connections report what
 * they learn (a good answer, NOT_CONTROLLER with or without the active
 * controller's address, a failure, a timeout); when the finder moves, both
 * connections go to the new member together. Nothing else changes on a
 * move: the broker keeps its epoch, image and roles, exactly as when its
 * one controller restarts. Its calls that were pending fail and are
 * retried by their owners; the heartbeat names the same broker epoch (a
 * controller that no longer knows it answers NOT_FOUND and the broker
 * registers again, cluster.c), and every FetchMetadata answer of the new
 * member passes the cluster id and history checks (cluster_ident.c). */
#include <stdio.h>

#include "broker/broker.h"
#include "broker/cluster/cluster_int.h"
#include "common/mem.h"
#include "common/rpc.h"
#include "common/trace.h"

#define CLUSTER_FOLLOW_BACKOFF_MIN_MS 100
/* a controller election takes 0.1 s to two election timeouts, and the new
 * active controller fences brokers it has not heard from within its
 * first-contact timeout (1.5 s by default): rounds of the members at most
 * this far apart find it well within that. Asking a member costs it one
 * small answer. */
#define CLUSTER_FOLLOW_BACKOFF_MAX_MS 500

int cluster_follow_init(struct cluster *c, struct err_detail *ed)
{
    /* the seed only spreads brokers' retries apart */
    uint64_t seed = (uint64_t)clock_wall_ms(c->b->clock) ^
                    ((uint64_t)(uint32_t)c->id << 32) ^ 0x5bd1e995ULL;

    return cluster_finder_init(&c->finder, c->b->cfg.controller,
                               CLUSTER_FOLLOW_BACKOFF_MIN_MS,
                               CLUSTER_FOLLOW_BACKOFF_MAX_MS, seed, ed);
}

void cluster_follow_quorum(struct cluster *c, const Weir__QuorumStatus *qs)
{
    uint8_t *packed;
    size_t len;

    if (c->quorum != NULL) {
        weir__quorum_status__free_unpacked(c->quorum, &rpc_allocator);
        c->quorum = NULL;
    }
    if (qs == NULL) {
        return;
    }
    /* a deep copy: the answer is freed after the callback */
    len = weir__quorum_status__get_packed_size(qs);
    packed = mem_malloc(len > 0 ? len : 1);
    if (packed == NULL) {
        return;
    }
    (void)weir__quorum_status__pack(qs, packed);
    c->quorum = weir__quorum_status__unpack(&rpc_allocator, len, packed);
    mem_free(packed);
}

static void cluster_follow_move(struct cluster *c,
                                const struct cluster_finder_move *mv,
                                const Weir__ActiveController *hint)
{
    const char *to = cluster_finder_current(&c->finder);
    uint64_t nb = 0;

    trace_info("cluster",
               "event=controller_moved broker=%d from=%s to=%s reason=%s "
               "active_id=%d delay_ms=%llu",
               (int)c->id, mv->from, to, cluster_finder_reason_name(mv->reason),
               hint != NULL && mv->reason == CLUSTER_FINDER_HINT ? (int)hint->id
                                                                 : -1,
               (unsigned long long)mv->delay_ms);
    if (mv->delay_ms > 0) {
        /* the connections keep the system clock */
        nb = clock_now_ms(clock_system()) + mv->delay_ms;
    }
    /* the old member's view of the quorum is not the new one's */
    cluster_follow_quorum(c, NULL);
    if (cconn_set_address(c->rpc, to, nb) != 0 ||
        cconn_set_address(c->fetch, to, nb) != 0) {
        trace_error("cluster",
                    "event=controller_move_failed broker=%d to=%s "
                    "error=NOMEM",
                    (int)c->id, to);
    }
    cluster_contact_soon(c, mv->delay_ms);
}

void cluster_follow_outcome(void *arg,
                            const char *addr,
                            int err,
                            const Weir__ActiveController *hint)
{
    struct cluster *c = arg;
    struct cluster_finder_move mv;
    uint64_t now = clock_now_ms(c->b->clock);

    switch (err) {
    case 0:
        cluster_finder_on_success(&c->finder, addr);
        return;
    case WEIR_ENOT_CONTROLLER:
        cluster_finder_on_not_controller(
            &c->finder, addr, hint != NULL ? hint->address : NULL, now, &mv);
        break;
    default:
        cluster_finder_on_failure(&c->finder, addr,
                                  err == WEIR_EREQUEST_TIMED_OUT, now, &mv);
        break;
    }
    if (mv.moved) {
        cluster_follow_move(c, &mv, hint);
    } else if (err == WEIR_ENOT_CONTROLLER) {
        trace_debug("cluster",
                    "event=controller_not_active broker=%d controller=%s",
                    (int)c->id, addr);
    }
}
