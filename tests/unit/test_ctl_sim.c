/* SPDX-License-Identifier: Apache-2.0 */
/* Seeded random simulation of the controller core (raft's test/fuzzy):
 * brokers register, heartbeat, stall, die, come back and shut down; leaders
 * propose ISR changes, some from stale views; topics come and go; the
 * controller restarts. After every step the invariants are checked: the
 * image's own (leader an unfenced ISR member, ISR and ELR disjoint subsets
 * of the replicas, ...), one leader per partition and leader epoch, leader
 * and partition epochs never decrease, no fenced broker and no offline
 * replica in an ISR, producer ids and broker epochs only grow.
 * A data model checks the elections themselves: each partition remembers
 * which replicas hold every committed record (all at creation; after any
 * step where the partition has a leader and min ISR, only the ISR, as a
 * record may have been committed there; a replica the leader adds back
 * caught up; a broker that registers with a new data dir has nothing),
 * and the leader, the ISR and the ELR must always be among them, unless
 * an unclean election (when enabled) gave up on them.
 * At the end the log (and snapshot) replays to the same image.
 * WEIR_CTL_SIM_SEEDS=n runs n seeds (default 1000); WEIR_CTL_SIM_SEED=s
 * runs only seed s. A failure names its seed and step. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/mem.h"
#include "controller/elect/ctl_core.h"
#include "controller/meta/meta_snapshot.h"

#define SIM_BROKERS     6
#define SIM_STEPS       300
#define SIM_MAX_EPOCHS  4096 /* leader epochs remembered per partition */
#define SIM_MAX_PARTS   128
#define SIM_MAX_OFFLINE 4

struct sim_broker {
    int64_t epoch; /* current registration, -1 none */
    bool alive;    /* process up: heartbeats */
    bool stalled;  /* up but silent (kill -STOP) */
    const char *rack;
    bool sends_dir; /* sends a directory id (else an older broker) */
    int dir_gen;    /* its data dir: "d<id>-<gen>"; a new gen = wiped */
    struct ctl_replica offline[SIM_MAX_OFFLINE]; /* it reports these */
    uint32_t n_offline;
};

/* What the simulation remembers about a partition across steps. */
struct sim_part {
    int64_t topic_id; /* -1: slot free */
    int32_t partition;
    int32_t leader_epoch;
    int32_t partition_epoch;
    int32_t seen[SIM_MAX_EPOCHS]; /* leader + 2 for each leader epoch seen */
    bool modelled;                /* the data model below has seen it */
    uint32_t complete; /* bit per broker: holds every committed record */
    uint32_t isr_mask; /* the ISR when last modelled */
    int32_t model_le;  /* the leader epoch when last modelled */
};

struct sim {
    uint64_t rng;
    uint32_t seed;
    int step;
    char why[256];
    struct ctl_config cfg;
    struct ctl_core *core;
    struct ctl_actions out;
    struct weir_buf snapshot;
    struct weir_buf log;
    uint64_t now_ms;
    int n_brokers;
    struct sim_broker b[SIM_BROKERS];
    struct sim_part parts[SIM_MAX_PARTS];
    int64_t last_pid;
    int64_t last_topic_id;
    int topics_made;
    uint64_t *stats; /* records per type, then answers per code */
};

#define SIM_STAT_ANSWER 16 /* stats[16 + code]: refusals by weir_err */
#define SIM_STATS       64

static uint64_t sim_rand(struct sim *s)
{
    uint64_t z = (s->rng += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint32_t sim_below(struct sim *s, uint32_t n)
{
    return (uint32_t)(sim_rand(s) % n);
}

static bool sim_fail(struct sim *s, const char *fmt, ...) WEIR_PRINTF(2, 3);

static bool sim_fail(struct sim *s, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    (void)vsnprintf(s->why, sizeof(s->why), fmt, ap);
    va_end(ap);
    return false;
}

static const struct meta_image *sim_image(const struct sim *s)
{
    return ctl_core_image(s->core);
}

static struct sim_part *sim_part_slot(struct sim *s, int64_t tid, int32_t p);

static uint32_t sim_mask(const struct meta_ids *ids)
{
    uint32_t m = 0;
    uint32_t i;

    for (i = 0; i < ids->n; i++) {
        m |= 1u << ids->ids[i];
    }
    return m;
}

/* The data model after one step of ev (see the top of the file). */
static bool sim_model_part(struct sim *s,
                           const struct ctl_event *ev,
                           const struct meta_topic *t,
                           uint32_t pno)
{
    const struct meta_partition *p = &t->partitions[pno];
    struct sim_part *sp = sim_part_slot(s, t->id, (int32_t)pno);
    uint32_t isr = sim_mask(&p->isr);

    if (sp == NULL) {
        return sim_fail(s, "too many partitions for the simulation");
    }
    if (!sp->modelled) {
        sp->modelled = true;
        sp->complete = sim_mask(&p->replicas);
        sp->isr_mask = isr;
        sp->model_le = p->leader_epoch;
    }
    if (ev->type == CTL_EV_ALTER_ISR && ev->u.alter_isr.topic_id == t->id &&
        ev->u.alter_isr.partition == (int32_t)pno) {
        sp->complete |= isr & ~sp->isr_mask; /* added: caught up */
    }
    if ((p->flags & META_PART_UNCLEAN) && p->leader_epoch != sp->model_le) {
        sp->complete = 1u << p->leader; /* what it has is the log now */
    }
    if ((p->leader != -1 && !(sp->complete & (1u << p->leader))) ||
        (isr & ~sp->complete) != 0 ||
        (sim_mask(&p->elr) & ~sp->complete) != 0) {
        return sim_fail(s,
                        "%s/%u: leader %d, ISR 0x%x or ELR 0x%x outside the "
                        "replicas with every committed record 0x%x",
                        t->name, pno, p->leader, isr, sim_mask(&p->elr),
                        sp->complete);
    }
    if (p->leader != -1 && p->isr.n >= meta_topic_min_isr(t)) {
        sp->complete &= isr; /* a record may be committed now */
    }
    sp->isr_mask = isr;
    sp->model_le = p->leader_epoch;
    return true;
}

static bool sim_model(struct sim *s, const struct ctl_event *ev)
{
    const struct meta_image *img = sim_image(s);
    uint32_t i;
    uint32_t j;

    for (i = 0; i < meta_image_topic_count(img); i++) {
        const struct meta_topic *t = meta_image_topic_at(img, i);
        for (j = 0; j < t->n_partitions; j++) {
            if (!sim_model_part(s, ev, t, j)) {
                return false;
            }
        }
    }
    return true;
}

/* A broker registering with a new data dir holds nothing any more. */
static void sim_model_wipe(struct sim *s, int id)
{
    int i;

    for (i = 0; i < SIM_MAX_PARTS; i++) {
        s->parts[i].complete &= ~(1u << id);
    }
}

static bool sim_step(struct sim *s, struct ctl_event *ev)
{
    uint32_t i;
    int rv;

    ev->now_ms = s->now_ms;
    rv = ctl_core_step(s->core, ev, &s->out);
    if (rv != 0) {
        return sim_fail(s, "step failed: %s", s->out.detail.msg);
    }
    if (s->out.end_offset - s->out.first_offset != s->out.n_records) {
        return sim_fail(s, "batch offsets do not match its records");
    }
    if (s->out.n_unclean > 0 && !s->cfg.unclean_leader_election) {
        return sim_fail(s, "unclean election while disabled");
    }
    if (s->out.result > 0 && s->out.result < SIM_STATS - SIM_STAT_ANSWER) {
        s->stats[SIM_STAT_ANSWER + s->out.result]++;
    }
    for (i = 0; i < s->out.n_records; i++) {
        if (meta_record_encode(&s->out.records[i], &s->log, NULL) != 0) {
            return sim_fail(s, "record %u does not encode", i);
        }
        s->stats[s->out.records[i].type % SIM_STAT_ANSWER]++;
    }
    return sim_model(s, ev);
}

static struct sim_part *sim_part_slot(struct sim *s, int64_t tid, int32_t p)
{
    struct sim_part *free_slot = NULL;
    int i;

    for (i = 0; i < SIM_MAX_PARTS; i++) {
        if (s->parts[i].topic_id == tid && s->parts[i].partition == p) {
            return &s->parts[i];
        }
        if (s->parts[i].topic_id == -1 && free_slot == NULL) {
            free_slot = &s->parts[i];
        }
    }
    if (free_slot != NULL) {
        memset(free_slot, 0, sizeof(*free_slot));
        free_slot->topic_id = tid;
        free_slot->partition = p;
    }
    return free_slot;
}

/* No fenced broker and no replica the controller knows to be offline is
 * in an ISR (so neither leads). */
static bool sim_check_isr(struct sim *s,
                          const struct meta_topic *t,
                          uint32_t pno,
                          const struct meta_partition *p)
{
    uint32_t i;

    for (i = 0; i < p->isr.n; i++) {
        int32_t id = p->isr.ids[i];
        if (meta_image_broker(sim_image(s), id)->fenced) {
            return sim_fail(s, "%s/%u: fenced %d in the ISR", t->name, pno, id);
        }
        if (ctl_core_replica_offline(s->core, id, t->id, (int32_t)pno)) {
            return sim_fail(s, "%s/%u: offline replica on %d in the ISR",
                            t->name, pno, id);
        }
    }
    return true;
}

static bool sim_check_epochs(struct sim *s,
                             const struct meta_topic *t,
                             uint32_t pno,
                             const struct meta_partition *p)
{
    struct sim_part *sp = sim_part_slot(s, t->id, (int32_t)pno);

    if (sp == NULL) {
        return sim_fail(s, "too many partitions for the simulation");
    }
    if (p->leader_epoch < sp->leader_epoch ||
        p->partition_epoch < sp->partition_epoch) {
        return sim_fail(s, "%s/%u: epochs went back (%d/%d -> %d/%d)", t->name,
                        pno, sp->leader_epoch, sp->partition_epoch,
                        p->leader_epoch, p->partition_epoch);
    }
    if (p->leader_epoch >= SIM_MAX_EPOCHS) {
        return true;
    }
    if (sp->seen[p->leader_epoch] != 0 &&
        sp->seen[p->leader_epoch] != p->leader + 2) {
        return sim_fail(s, "%s/%u: two leaders (%d, %d) in leader epoch %d",
                        t->name, pno, sp->seen[p->leader_epoch] - 2, p->leader,
                        p->leader_epoch);
    }
    sp->seen[p->leader_epoch] = p->leader + 2;
    sp->leader_epoch = p->leader_epoch;
    sp->partition_epoch = p->partition_epoch;
    return true;
}

static bool sim_check(struct sim *s)
{
    struct err_detail ed;
    uint32_t i;
    uint32_t j;

    if (meta_image_check(sim_image(s), &ed) != 0) {
        return sim_fail(s, "image: %s", ed.msg);
    }
    for (i = 0; i < meta_image_topic_count(sim_image(s)); i++) {
        const struct meta_topic *t = meta_image_topic_at(sim_image(s), i);
        for (j = 0; j < t->n_partitions; j++) {
            if (!sim_check_isr(s, t, j, &t->partitions[j]) ||
                !sim_check_epochs(s, t, j, &t->partitions[j])) {
                return false;
            }
        }
    }
    return true;
}

/* A (re)start: an older broker sends no directory id (and the controller
 * cannot tell a wiped data dir from a kept one); others register after a
 * clean stop, after an unclean one, or with a new (wiped) data dir. */
static bool sim_register(struct sim *s, int id)
{
    struct ctl_event ev = {.type = CTL_EV_BROKER_REGISTER};
    static const char *const hosts[] = {"b0", "b1", "b2", "b3", "b4", "b5"};
    uint32_t how = s->b[id].sends_dir ? 1 + sim_below(s, 3) : 0;
    char dir[32];

    ev.u.reg.broker_id = id;
    ev.u.reg.host = hosts[id];
    ev.u.reg.port = 9092;
    ev.u.reg.rack = s->b[id].rack;
    ev.u.reg.offline = s->b[id].offline;
    ev.u.reg.n_offline = s->b[id].n_offline;
    if (how == 3) {
        s->b[id].dir_gen++;
        sim_model_wipe(s, id);
    }
    (void)snprintf(dir, sizeof(dir), "d%d-%d", id, s->b[id].dir_gen);
    ev.u.reg.directory_id = how > 0 ? dir : NULL;
    ev.u.reg.previous_broker_epoch = how == 1 ? s->b[id].epoch : -1;
    if (!sim_step(s, &ev)) {
        return false;
    }
    if (s->out.result != 0 || s->out.broker_epoch <= s->b[id].epoch) {
        return sim_fail(s, "registration of %d: result %d epoch %lld", id,
                        s->out.result, (long long)s->out.broker_epoch);
    }
    s->b[id].epoch = s->out.broker_epoch;
    s->b[id].alive = true;
    s->b[id].stalled = false;
    return true;
}

/* Alive brokers heartbeat; some lag behind the log for a while. */
static bool sim_heartbeats(struct sim *s)
{
    struct ctl_event ev = {.type = CTL_EV_BROKER_HEARTBEAT};
    int id;

    for (id = 0; id < s->n_brokers; id++) {
        if (!s->b[id].alive || s->b[id].stalled) {
            continue;
        }
        ev.u.heartbeat.broker_id = id;
        ev.u.heartbeat.broker_epoch = s->b[id].epoch;
        ev.u.heartbeat.applied_offset =
            meta_image_end_offset(sim_image(s)) - 1 - sim_below(s, 3);
        ev.u.heartbeat.offline = s->b[id].offline;
        ev.u.heartbeat.n_offline = s->b[id].n_offline;
        if (!sim_step(s, &ev)) {
            return false;
        }
        if (s->out.result != 0) {
            return sim_fail(s, "heartbeat of %d refused: %s", id,
                            s->out.detail.msg);
        }
    }
    return true;
}

static bool sim_shutdown(struct sim *s, int id)
{
    struct ctl_event ev = {.type = CTL_EV_CONTROLLED_SHUTDOWN};

    ev.u.broker.broker_id = id;
    ev.u.broker.broker_epoch = s->b[id].epoch;
    if (!sim_step(s, &ev)) {
        return false;
    }
    if (!s->out.shutdown_ok || meta_image_broker(sim_image(s), id)->n_led) {
        return sim_fail(s, "shutdown of %d not done", id);
    }
    s->b[id].alive = false;
    return true;
}

/* Pick a random partition; NULL when there is none. */
static const struct meta_partition *
sim_pick(struct sim *s, int64_t *tid, int32_t *pno)
{
    const struct meta_image *img = sim_image(s);
    const struct meta_topic *t;
    uint32_t n = meta_image_topic_count(img);

    if (n == 0) {
        return NULL;
    }
    t = meta_image_topic_at(img, sim_below(s, n));
    *tid = t->id;
    *pno = (int32_t)sim_below(s, t->n_partitions);
    return &t->partitions[*pno];
}

/* A proposal from the leader or from anyone, with the current epochs or
 * with ones that are (probably) stale, of a random ISR. */
static bool sim_alter_isr(struct sim *s)
{
    struct ctl_event ev = {.type = CTL_EV_ALTER_ISR};
    const struct meta_partition *p;
    struct meta_partition before;
    int64_t tid;
    int32_t pno;
    int32_t by;
    uint32_t i;

    p = sim_pick(s, &tid, &pno);
    if (p == NULL) {
        return true;
    }
    before = *p;
    by = sim_below(s, 5) > 0 && p->leader != -1
             ? p->leader
             : (int32_t)sim_below(s, (uint32_t)s->n_brokers);
    if (s->b[by].epoch < 0) {
        return true;
    }
    ev.u.alter_isr.broker_id = by;
    ev.u.alter_isr.broker_epoch = s->b[by].epoch;
    ev.u.alter_isr.topic_id = tid;
    ev.u.alter_isr.partition = pno;
    ev.u.alter_isr.leader_epoch = p->leader_epoch - (sim_below(s, 4) == 0);
    ev.u.alter_isr.partition_epoch =
        p->partition_epoch - (int32_t)sim_below(s, 3) * (sim_below(s, 3) == 0);
    ev.u.alter_isr.isr.ids[ev.u.alter_isr.isr.n++] = by;
    for (i = 0; i < p->replicas.n; i++) {
        if (p->replicas.ids[i] != by && sim_below(s, 2) == 0) {
            ev.u.alter_isr.isr.ids[ev.u.alter_isr.isr.n++] = p->replicas.ids[i];
        }
    }
    if (!sim_step(s, &ev)) {
        return false;
    }
    /* an accepted change came from the leader, with current epochs */
    if (s->out.result == 0 && s->out.n_records > 0 &&
        (by != before.leader ||
         ev.u.alter_isr.leader_epoch != before.leader_epoch ||
         ev.u.alter_isr.partition_epoch != before.partition_epoch)) {
        return sim_fail(s, "stale ISR change accepted from %d", by);
    }
    return true;
}

static bool sim_create(struct sim *s)
{
    struct ctl_event ev = {.type = CTL_EV_CREATE_TOPIC};
    char name[16];

    (void)snprintf(name, sizeof(name), "t%d", s->topics_made++);
    ev.u.create.name = name;
    ev.u.create.partitions = (int32_t)sim_below(s, 6);
    ev.u.create.replication_factor = (int32_t)sim_below(s, 4);
    if (!sim_step(s, &ev)) {
        return false;
    }
    if (s->out.result == 0) {
        if (s->out.topic_id <= s->last_topic_id) {
            return sim_fail(s, "topic id %lld not above %lld",
                            (long long)s->out.topic_id,
                            (long long)s->last_topic_id);
        }
        s->last_topic_id = s->out.topic_id;
    }
    return true;
}

static bool sim_delete(struct sim *s)
{
    struct ctl_event ev = {.type = CTL_EV_DELETE_TOPIC};
    const struct meta_image *img = sim_image(s);
    const struct meta_topic *t;
    int i;

    if (meta_image_topic_count(img) == 0) {
        return true;
    }
    t = meta_image_topic_at(img, sim_below(s, meta_image_topic_count(img)));
    for (i = 0; i < SIM_MAX_PARTS; i++) {
        if (s->parts[i].topic_id == t->id) {
            s->parts[i].topic_id = -1;
        }
    }
    ev.u.del.name = t->name;
    return sim_step(s, &ev);
}

static bool sim_pids(struct sim *s)
{
    struct ctl_event ev = {.type = CTL_EV_ALLOCATE_PRODUCER_IDS};
    int id = (int)sim_below(s, (uint32_t)s->n_brokers);

    if (s->b[id].epoch < 0) {
        return true;
    }
    ev.u.pids.broker_id = id;
    ev.u.pids.broker_epoch = s->b[id].epoch;
    ev.u.pids.count = 1 + sim_below(s, 1500);
    if (!sim_step(s, &ev)) {
        return false;
    }
    if (s->out.result == 0) {
        if (s->out.producer_id <= s->last_pid) {
            return sim_fail(s, "producer id %lld not above %lld",
                            (long long)s->out.producer_id,
                            (long long)s->last_pid);
        }
        s->last_pid = s->out.producer_id + s->out.producer_id_count - 1;
    }
    return true;
}

/* The controller process restarts from a snapshot of its image. */
static bool sim_restart(struct sim *s)
{
    struct meta_image *img;
    struct err_detail ed;

    buf_reset(&s->snapshot);
    if (meta_snapshot_encode(sim_image(s), &s->snapshot, &ed) != 0 ||
        meta_snapshot_decode(s->snapshot.data, s->snapshot.len, &img, &ed) !=
            0) {
        return sim_fail(s, "snapshot: %s", ed.msg);
    }
    if (!meta_image_equal(img, sim_image(s))) {
        meta_image_free(img);
        return sim_fail(s, "snapshot image differs");
    }
    buf_reset(&s->log);
    ctl_core_free(s->core);
    s->core = NULL;
    if (ctl_core_new(&s->cfg, img, &s->core) != 0) {
        return sim_fail(s, "restart failed");
    }
    return true;
}

/* A replica of a random partition goes offline on its broker (or comes
 * back if it was); the controller hears of it with the next heartbeat. */
static void sim_toggle_offline(struct sim *s, struct sim_broker *b)
{
    const struct meta_partition *p;
    int64_t tid;
    int32_t pno;
    uint32_t i;

    p = sim_pick(s, &tid, &pno);
    if (p == NULL) {
        return;
    }
    for (i = 0; i < b->n_offline; i++) {
        if (b->offline[i].topic_id == tid && b->offline[i].partition == pno) {
            b->offline[i] = b->offline[--b->n_offline];
            return;
        }
    }
    if (b->n_offline < SIM_MAX_OFFLINE) {
        b->offline[b->n_offline].topic_id = tid;
        b->offline[b->n_offline++].partition = pno;
    }
}

static bool sim_broker_event(struct sim *s, uint32_t roll)
{
    int id = (int)sim_below(s, (uint32_t)s->n_brokers);
    struct sim_broker *b = &s->b[id];

    if (roll >= 14) {
        sim_toggle_offline(s, b);
        return true;
    }
    if (roll < 4) { /* kill -9 */
        b->alive = false;
        return true;
    }
    if (roll < 8) { /* kill -STOP / -CONT */
        b->stalled = !b->stalled;
        return true;
    }
    if (roll < 12) { /* (re)start: a new incarnation */
        return sim_register(s, id);
    }
    if (b->alive && b->epoch >= 0) {
        return sim_shutdown(s, id);
    }
    return true;
}

static bool sim_one(struct sim *s)
{
    struct ctl_event tick = {.type = CTL_EV_TICK};
    uint32_t roll = sim_below(s, 100);

    if (roll < 30) {
        s->now_ms += sim_below(s, 1500);
        return sim_step(s, &tick);
    }
    if (roll < 55) {
        return sim_heartbeats(s);
    }
    if (roll < 69) {
        return sim_broker_event(s, sim_below(s, 16));
    }
    if (roll < 85) {
        return sim_alter_isr(s);
    }
    if (roll < 91) {
        return sim_create(s);
    }
    if (roll < 93) {
        return sim_delete(s);
    }
    if (roll < 98) {
        return sim_pids(s);
    }
    return sim_restart(s);
}

/* The log (after the last snapshot) replays to the core's image. */
static bool sim_replay_matches(struct sim *s)
{
    struct meta_image *img = NULL;
    struct meta_record rec;
    struct weir_cursor c;
    struct err_detail ed;
    bool ok = true;

    if (s->snapshot.len > 0) {
        ok = meta_snapshot_decode(s->snapshot.data, s->snapshot.len, &img,
                                  &ed) == 0;
    } else {
        ok = meta_image_new(&img) == 0;
    }
    cur_init(&c, s->log.data, s->log.len);
    while (ok && cur_remaining(&c) > 0) {
        ok = meta_record_decode(&c, &rec, &ed) == 0 &&
             meta_image_apply(img, &rec, &ed) == 0;
    }
    ok = ok && meta_image_equal(img, sim_image(s));
    meta_image_free(img);
    return ok ? true : sim_fail(s, "replay differs from the image");
}

static void sim_init(struct sim *s, uint32_t seed, uint64_t *stats)
{
    static const char *const racks[] = {NULL, "ra", "rb", "rc"};
    int i;

    memset(s, 0, sizeof(*s));
    s->stats = stats;
    s->seed = seed;
    s->rng = seed;
    s->now_ms = 1000;
    s->last_pid = -1;
    s->last_topic_id = -1;
    ctl_config_init(&s->cfg);
    s->cfg.unclean_leader_election = sim_below(s, 5) == 0;
    s->cfg.rebalance_interval_ms =
        sim_below(s, 2) ? 5000 + sim_below(s, 10000) : 0;
    s->n_brokers = 3 + (int)sim_below(s, SIM_BROKERS - 2);
    for (i = 0; i < s->n_brokers; i++) {
        s->b[i].epoch = -1;
        s->b[i].rack = sim_below(s, 2) ? racks[1 + sim_below(s, 3)] : NULL;
        s->b[i].sends_dir = sim_below(s, 4) > 0;
    }
    for (i = 0; i < SIM_MAX_PARTS; i++) {
        s->parts[i].topic_id = -1;
    }
    ctl_actions_init(&s->out);
    buf_init(&s->snapshot);
    buf_init(&s->log);
}

static void sim_fini(struct sim *s)
{
    ctl_core_free(s->core);
    ctl_actions_fini(&s->out);
    buf_fini(&s->snapshot);
    buf_fini(&s->log);
}

/* One seed; false (with s->why set) on the first broken invariant. */
static bool sim_run(struct sim *s)
{
    bool ok = ctl_core_new(&s->cfg, NULL, &s->core) == 0;

    for (s->step = 0; ok && s->step < SIM_STEPS; s->step++) {
        ok = sim_one(s) && sim_check(s);
    }
    return ok && sim_replay_matches(s);
}

static uint32_t sim_env(const char *name, uint32_t dflt)
{
    const char *v = getenv(name);

    return v != NULL && v[0] != '\0' ? (uint32_t)strtoul(v, NULL, 10) : dflt;
}

/* How much of each thing the seeds did, so a generator that stopped
 * reaching some path shows. */
static void sim_print_stats(const uint64_t *stats, uint32_t seeds)
{
    int i;

    (void)fprintf(stderr, "ctl sim: %u seeds; records:", seeds);
    for (i = 1; i < SIM_STAT_ANSWER; i++) {
        if (stats[i] > 0) {
            (void)fprintf(stderr, " %s %llu", meta_record_type_name(i),
                          (unsigned long long)stats[i]);
        }
    }
    (void)fprintf(stderr, "\nctl sim: refusals:");
    for (i = SIM_STAT_ANSWER; i < SIM_STATS; i++) {
        if (stats[i] > 0) {
            (void)fprintf(stderr, " %s %llu",
                          weir_err_name(i - SIM_STAT_ANSWER),
                          (unsigned long long)stats[i]);
        }
    }
    (void)fprintf(stderr, "\n");
}

static void test_random_histories_keep_invariants(void **state)
{
    uint64_t stats[SIM_STATS] = {0};
    uint32_t first = sim_env("WEIR_CTL_SIM_SEED", 1);
    uint32_t count = getenv("WEIR_CTL_SIM_SEED") != NULL
                         ? 1
                         : sim_env("WEIR_CTL_SIM_SEEDS", 1000);
    struct sim *s = test_malloc(sizeof(*s));
    uint32_t seed;
    bool ok = true;

    (void)state;
    for (seed = first; ok && seed < first + count; seed++) {
        sim_init(s, seed, stats);
        ok = sim_run(s);
        if (!ok) {
            (void)fprintf(stderr,
                          "ctl sim: seed %u failed at step %d: %s\n"
                          "  rerun: WEIR_CTL_SIM_SEED=%u %s\n",
                          seed, s->step, s->why, seed, "test_ctl_sim");
        }
        sim_fini(s);
    }
    test_free(s);
    sim_print_stats(stats, seed - first);
    if (!ok) {
        fail_msg("seed %u broke an invariant", seed - 1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_histories_keep_invariants),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
