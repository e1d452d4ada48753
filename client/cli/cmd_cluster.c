/* SPDX-License-Identifier: Apache-2.0 */
/* weir cluster: the controller, the controller quorum (each voter's
 * state, log end and lag behind the leader, and the term: only with a
 * quorum), the brokers (alive or fenced) and every partition's leader,
 * leader epoch, replicas, ISR and (when not empty) ELR, flagging
 * under-replicated (ISR smaller than the replica list) and under-min-ISR
 * (ISR smaller than min.insync.replicas) partitions. One line per item,
 * words and key=value pairs, so scripts can read it too. */
#include <stdio.h>
#include <string.h>

#include "client/cli/cli.h"

#define CLUSTER_USAGE "cluster [--bootstrap HOST:PORT]"

static const struct args_spec cluster_specs[] = {
    CLI_COMMON_SPECS,
};

#define CLUSTER_NSPECS (sizeof(cluster_specs) / sizeof(cluster_specs[0]))

static void cluster_print_ids(const int32_t *ids, size_t n)
{
    size_t i;

    if (n == 0) {
        (void)fputs("-", stdout);
    }
    for (i = 0; i < n; i++) {
        (void)printf("%s%d", i ? "," : "", (int)ids[i]);
    }
}

static const char *cluster_quorum_state_name(enum weir_quorum_state st)
{
    switch (st) {
    case WEIR_QUORUM_STATE_LEADER:
        return "leader";
    case WEIR_QUORUM_STATE_FOLLOWER:
        return "follower";
    case WEIR_QUORUM_STATE_UNREACHABLE:
        return "unreachable";
    case WEIR_QUORUM_STATE_UNKNOWN:
        break;
    }
    return "unknown";
}

/* Omitted when the answer has no quorum (a single controller). */
static void cluster_print_quorum(const struct weir_cluster_desc *d)
{
    size_t unreachable = 0;
    size_t i;

    if (d->n_voters == 0) {
        return;
    }
    for (i = 0; i < d->n_voters; i++) {
        unreachable += d->voters[i].state == WEIR_QUORUM_STATE_UNREACHABLE;
    }
    (void)printf("quorum: %zu voters (%zu reachable, %zu unreachable) "
                 "term=%llu leader=%u\n",
                 d->n_voters, d->n_voters - unreachable, unreachable,
                 (unsigned long long)d->quorum_term,
                 (unsigned)d->quorum_leader);
    for (i = 0; i < d->n_voters; i++) {
        const struct weir_quorum_voter *v = &d->voters[i];
        (void)printf("  voter %u %s %s log_end=%llu lag=%llu\n",
                     (unsigned)v->id, v->address[0] ? v->address : "-",
                     cluster_quorum_state_name(v->state),
                     (unsigned long long)v->log_end,
                     (unsigned long long)v->lag);
    }
}

static void cluster_print_brokers(const struct weir_cluster_desc *d)
{
    size_t alive = 0;
    size_t i;

    for (i = 0; i < d->n_brokers; i++) {
        alive += !d->brokers[i].fenced;
    }
    (void)printf("brokers: %zu (%zu alive, %zu fenced)\n", d->n_brokers, alive,
                 d->n_brokers - alive);
    for (i = 0; i < d->n_brokers; i++) {
        const struct weir_broker_desc *b = &d->brokers[i];
        (void)printf("  broker %d %s:%u rack=%s %s\n", (int)b->id, b->host,
                     (unsigned)b->port, b->rack[0] ? b->rack : "-",
                     b->fenced ? "fenced" : "alive");
    }
}

static void cluster_print_partitions(const struct weir_cluster_desc *d)
{
    size_t under = 0;
    size_t under_min = 0;
    size_t i;

    for (i = 0; i < d->n_partitions; i++) {
        const struct weir_cluster_partition *p = &d->partitions[i];
        under += p->n_isr < p->n_replicas;
        under_min += p->min_insync_replicas > 0 &&
                     p->n_isr < (size_t)p->min_insync_replicas;
    }
    (void)printf("partitions: %zu (%zu under-replicated, %zu under-min-isr)\n",
                 d->n_partitions, under, under_min);
    for (i = 0; i < d->n_partitions; i++) {
        const struct weir_cluster_partition *p = &d->partitions[i];
        (void)printf("  %s %d leader=%d epoch=%d replicas=", p->topic,
                     (int)p->partition, (int)p->leader, (int)p->leader_epoch);
        cluster_print_ids(p->replicas, p->n_replicas);
        (void)fputs(" isr=", stdout);
        cluster_print_ids(p->isr, p->n_isr);
        if (p->n_elr > 0) {
            (void)fputs(" elr=", stdout);
            cluster_print_ids(p->elr, p->n_elr);
        }
        if (p->min_insync_replicas > 0) {
            (void)printf(" min_isr=%d", (int)p->min_insync_replicas);
        }
        if (p->leader < 0) {
            (void)fputs(" NO-LEADER", stdout);
        }
        if (p->n_isr < p->n_replicas) {
            (void)fputs(" UNDER-REPLICATED", stdout);
        }
        if (p->min_insync_replicas > 0 &&
            p->n_isr < (size_t)p->min_insync_replicas) {
            (void)fputs(" UNDER-MIN-ISR", stdout);
        }
        (void)fputc('\n', stdout);
    }
}

int cmd_cluster(int argc, char **argv, const char *global_bs)
{
    struct weir_cluster_desc *d = NULL;
    struct weir_client *c;
    struct err_detail ed;
    struct args a;
    bool done;
    int rv;

    rv = cli_parse("cluster", CLUSTER_USAGE, cluster_specs, CLUSTER_NSPECS,
                   argc, argv, &a, &done);
    if (done) {
        return rv;
    }
    if (a.n_pos > 0) {
        return cli_usage("cluster", "unexpected argument '%s'", a.pos[0]);
    }
    rv = cli_client_open(cli_bootstrap(&a, global_bs), &c);
    if (rv != 0) {
        return rv;
    }
    err_detail_clear(&ed);
    if (weir_admin_describe_cluster(c, &d, &ed) != 0) {
        weir_client_free(c);
        return cli_fail(&ed);
    }
    (void)printf("controller: %s\n",
                 d->controller[0] ? d->controller : "none (single broker)");
    cluster_print_quorum(d);
    cluster_print_brokers(d);
    cluster_print_partitions(d);
    weir_cluster_desc_free(d);
    weir_client_free(c);
    return CLI_EXIT_OK;
}
