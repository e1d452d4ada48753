/* SPDX-License-Identifier: Apache-2.0 */
/* Group coordinator adapter: the registry of groups, loading and dropping
 * __consumer_offsets partitions as leadership comes and goes, writes to
 * them and their completion. Request handlers are in group_io_api.c. */
#include <event2/event.h>
#include <stdio.h>
#include <string.h>

#include "broker/cluster/cluster.h"
#include "broker/group/group_io_int.h"
#include "broker/group/group_records.h"
#include "broker/replica/repl_io.h"
#include "broker/storage/logmgr.h"
#include "common/mem.h"
#include "common/rpc.h"
#include "common/trace.h"

#define GIO_SCAN_MS         200
#define GIO_LOAD_CHUNK      (1024u * 1024)
#define GIO_CREATE_RETRY_MS 1000

uint64_t gio_now_ms(const struct group_io *io)
{
    return clock_now_ms(io->b->clock);
}

int64_t gio_wall_ms(const struct group_io *io)
{
    return clock_wall_ms(io->b->clock);
}

/* ---- offsets cache ------------------------------------------------------ */

struct gio_offset *
gio_offset_find(struct gio_group *g, const char *topic, int32_t partition)
{
    uint32_t i;

    for (i = 0; i < g->n_offs; i++) {
        if (g->offs[i].partition == partition &&
            strcmp(g->offs[i].topic, topic) == 0) {
            return &g->offs[i];
        }
    }
    return NULL;
}

int gio_offset_set(struct gio_group *g,
                   const char *topic,
                   int32_t partition,
                   int64_t offset,
                   int32_t leader_epoch,
                   const char *metadata,
                   int64_t commit_ts)
{
    struct gio_offset *o = gio_offset_find(g, topic, partition);
    char *md = mem_strdup(metadata != NULL ? metadata : "");

    if (md == NULL) {
        return WEIR_ENOMEM;
    }
    if (o == NULL) {
        if (mem_grow((void **)&g->offs, &g->cap_offs, g->n_offs + 1,
                     sizeof(*g->offs)) != 0) {
            mem_free(md);
            return WEIR_ENOMEM;
        }
        o = &g->offs[g->n_offs];
        memset(o, 0, sizeof(*o));
        o->topic = mem_strdup(topic);
        if (o->topic == NULL) {
            mem_free(md);
            return WEIR_ENOMEM;
        }
        o->partition = partition;
        g->n_offs++;
    }
    mem_free(o->metadata);
    o->metadata = md;
    o->offset = offset;
    o->leader_epoch = leader_epoch;
    o->commit_ts = commit_ts;
    return 0;
}

static void
gio_offset_remove(struct gio_group *g, const char *topic, int32_t partition)
{
    struct gio_offset *o = gio_offset_find(g, topic, partition);

    if (o == NULL) {
        return;
    }
    mem_free(o->topic);
    mem_free(o->metadata);
    *o = g->offs[--g->n_offs];
}

/* ---- groups ------------------------------------------------------------- */

struct gio_group *gio_group_find(struct group_io *io, const char *id)
{
    struct gio_group *g;

    for (g = io->groups; g != NULL; g = g->next) {
        if (strcmp(g->id, id) == 0) {
            return g;
        }
    }
    return NULL;
}

static void gio_timer_cb(evutil_socket_t fd, short what, void *arg);

static struct gio_group *
gio_group_new(struct group_io *io, const char *id, int32_t partition)
{
    struct gio_group *g = mem_calloc(1, sizeof(*g));

    if (g == NULL) {
        return NULL;
    }
    g->io = io;
    g->partition = partition;
    g->instance = ++io->next_group_instance;
    g->id = mem_strdup(id);
    g->timer = evtimer_new(io->b->base, gio_timer_cb, g);
    g->persist_ev = event_new(io->b->base, -1, 0, gio_persist_cb, g);
    if (g->id == NULL || g->timer == NULL || g->persist_ev == NULL ||
        group_core_new(&io->gcfg, id, &g->core) != 0) {
        if (g->timer != NULL) {
            event_free(g->timer);
        }
        if (g->persist_ev != NULL) {
            event_free(g->persist_ev);
        }
        mem_free(g->id);
        mem_free(g);
        return NULL;
    }
    g->next = io->groups;
    io->groups = g;
    return g;
}

void gio_group_drop(struct group_io *io, struct gio_group *g)
{
    struct gio_group **pp = &io->groups;
    struct gio_park *k;
    uint32_t i;

    while (*pp != NULL && *pp != g) {
        pp = &(*pp)->next;
    }
    if (*pp == g) {
        *pp = g->next;
    }
    while ((k = g->parked) != NULL) {
        g->parked = k->next;
        if (k->type == GROUP_EV_JOIN) {
            gio_answer_join(k->req, k->correlation_id, NULL,
                            WEIR_ENOT_COORDINATOR, "the coordinator moved");
        } else {
            gio_answer_sync(k->req, k->correlation_id, NULL,
                            WEIR_ENOT_COORDINATOR, "the coordinator moved");
        }
        mem_free(k);
    }
    for (i = 0; i < g->n_offs; i++) {
        mem_free(g->offs[i].topic);
        mem_free(g->offs[i].metadata);
    }
    mem_free(g->offs);
    if (g->loaded_meta != NULL) {
        weir__group_record_value__free_unpacked(g->loaded_meta, NULL);
    }
    event_free(g->timer);
    event_free(g->persist_ev);
    group_core_free(g->core);
    mem_free(g->id);
    mem_free(g);
}

static void gio_arm(struct gio_group *g, uint64_t next_ms)
{
    uint64_t now = gio_now_ms(g->io);
    uint64_t d;
    struct timeval tv;

    (void)event_del(g->timer);
    if (next_ms == UINT64_MAX) {
        return;
    }
    d = next_ms > now ? next_ms - now : 0;
    tv.tv_sec = (time_t)(d / 1000);
    tv.tv_usec = (suseconds_t)((d % 1000) * 1000);
    (void)evtimer_add(g->timer, &tv);
}

int gio_step(struct gio_group *g,
             struct group_event *ev,
             struct group_actions *out)
{
    size_t i;
    int rv;

    struct group_view before;
    struct group_view after;

    group_core_describe(g->core, &before);
    ev->now_ms = gio_now_ms(g->io);
    rv = group_core_step(g->core, ev, out);
    if (rv != 0) {
        return rv;
    }
    group_core_describe(g->core, &after);
    if (after.generation_id != before.generation_id ||
        after.state != before.state) {
        trace_info("group",
                   "event=group_state group=%s state=%s generation=%d "
                   "members=%zu protocol=%s leader=%s",
                   g->id, group_state_name(after.state),
                   (int)after.generation_id, after.n_members,
                   after.protocol[0] != '\0' ? after.protocol : "-",
                   after.leader_id[0] != '\0' ? after.leader_id : "-");
    }
    for (i = 0; i < out->n_answers; i++) {
        const struct group_answer *a = &out->answers[i];
        struct gio_park **pp = &g->parked;
        struct gio_park *k;
        while (*pp != NULL && (*pp)->id != a->request_id) {
            pp = &(*pp)->next;
        }
        if ((k = *pp) == NULL) {
            continue;
        }
        *pp = k->next;
        if (a->type == GROUP_EV_JOIN) {
            gio_answer_join(k->req, k->correlation_id, a, a->error, "");
        } else {
            gio_answer_sync(k->req, k->correlation_id, a, a->error, "");
        }
        mem_free(k);
    }
    if (out->persist) {
        gio_persist(g, out->persist_seq);
    }
    gio_arm(g, out->next_tick_ms);
    return 0;
}

static void gio_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct gio_group *g = arg;
    struct group_actions out;
    struct group_event ev;

    (void)fd;
    (void)what;
    memset(&ev, 0, sizeof(ev));
    ev.type = GROUP_EV_TICK;
    group_actions_init(&out);
    if (gio_step(g, &ev, &out) != 0) {
        /* out of memory: try again shortly */
        struct timeval tv = {0, 100000};
        (void)evtimer_add(g->timer, &tv);
    }
    group_actions_fini(&out);
}

/* ---- the offsets topic and its partitions ------------------------------ */

static int32_t gio_topic_partitions(const struct group_io *io)
{
    struct logmgr_topic lt;
    const struct meta_topic *t;

    if (io->b->cluster != NULL) {
        t = meta_image_topic_by_name(cluster_image(io->b->cluster),
                                     GROUP_OFFSETS_TOPIC,
                                     strlen(GROUP_OFFSETS_TOPIC));
        return t != NULL ? (int32_t)t->n_partitions : 0;
    }
    return logmgr_topic(io->b->logs, GROUP_OFFSETS_TOPIC, &lt) ? lt.partitions
                                                               : 0;
}

static void gio_create_reply(void *arg, int err, const char *msg)
{
    struct group_io *io = arg;

    io->create_asked = false;
    io->create_refused[0] = '\0';
    if (err == 0 || err == WEIR_ETOPIC_EXISTS) {
        return;
    }
    /* NOT_ENOUGH_REPLICAS: fewer brokers in service than its replication
     * factor. Asked again on a later group request, never made smaller. */
    (void)snprintf(io->create_refused, sizeof(io->create_refused), "%s: %s",
                   weir_err_name(err), msg != NULL ? msg : "");
    if (weir_err_retriable(err)) {
        trace_info("group",
                   "event=offsets_topic_not_created_yet error=%s msg=\"%s\"",
                   weir_err_name(err), msg);
    } else {
        trace_warn("group",
                   "event=offsets_topic_not_created error=%s msg=\"%s\"",
                   weir_err_name(err), msg);
    }
}

/* Ask for __consumer_offsets (compacted; replication factor and min ISR
 * from the controller's defaults: 3 and 2, capped at the brokers
 * registered; refused, retriably, while fewer are in service). */
static void gio_create_topic(struct group_io *io)
{
    char seg[32];
    const struct logmgr_kv kv[] = {{"cleanup.policy", "compact"},
                                   {"segment.bytes", seg}};
    int32_t n = (int32_t)io->b->cfg.offsets_topic_num_partitions;
    uint64_t now = gio_now_ms(io);
    struct err_detail ed;
    int rv;

    if (io->create_asked || (io->last_create_ms != 0 &&
                             now < io->last_create_ms + GIO_CREATE_RETRY_MS)) {
        return;
    }
    io->last_create_ms = now;
    (void)snprintf(seg, sizeof(seg), "%lld",
                   (long long)io->b->cfg.offsets_topic_segment_bytes);
    trace_info("group", "event=offsets_topic_create partitions=%d", (int)n);
    if (io->b->cluster != NULL) {
        io->create_asked =
            cluster_create_topic(io->b->cluster, GROUP_OFFSETS_TOPIC, n, kv, 2,
                                 gio_create_reply, io) == 0;
        return;
    }
    err_detail_clear(&ed);
    rv = logmgr_create_topic(io->b->logs, GROUP_OFFSETS_TOPIC, n, 1, kv, 2,
                             false, gio_wall_ms(io), &ed);
    if (rv != 0 && rv != WEIR_ETOPIC_EXISTS) {
        trace_warn("group",
                   "event=offsets_topic_not_created error=%s msg=\"%s\"",
                   weir_err_name(rv), ed.msg);
    }
}

/* Does this broker lead partition p? Its log and leader epoch if so. */
static bool
gio_leads(const struct group_io *io, int32_t p, struct plog **log, int32_t *e)
{
    char msg[256];

    if (broker_route(io->b, GROUP_OFFSETS_TOPIC, p, msg, sizeof(msg)) != 0) {
        return false;
    }
    *log = logmgr_partition(io->b->logs, GROUP_OFFSETS_TOPIC, p);
    *e = repl_io_leader_epoch(io->b->repl, GROUP_OFFSETS_TOPIC, p);
    return *log != NULL;
}

static void gio_unload(struct group_io *io, int32_t p)
{
    struct gio_group *g = io->groups;
    struct gio_group *next;
    uint32_t n = 0;

    while (g != NULL) {
        next = g->next;
        if (g->partition == p) {
            gio_group_drop(io, g);
            n++;
        }
        g = next;
    }
    if (io->parts[p].state != GIO_UNLOADED) {
        trace_info("group",
                   "event=offsets_partition_unloaded partition=%d epoch=%d "
                   "groups=%u",
                   (int)p, (int)io->parts[p].leader_epoch, n);
    }
    io->parts[p].state = GIO_UNLOADED;
}

static void
gio_load_begin(struct group_io *io, int32_t p, struct plog *log, int32_t epoch)
{
    struct gio_part *gp = &io->parts[p];

    gio_unload(io, p);
    gp->state = GIO_LOADING;
    gp->leader_epoch = epoch;
    gp->load_next = plog_start_offset(log);
    gp->load_end = plog_end_offset(log);
    gp->load_started_ms = gio_now_ms(io);
    gp->records = 0;
    event_active(io->load_ev, EV_TIMEOUT, 0);
}

/* One record of the partition being loaded. */
static int
gio_load_record(struct group_io *io, int32_t p, const struct batch_record *rec)
{
    struct gio_group *g;
    struct grec gr;
    const char *gid;
    int rv = grec_decode(rec, &gr);

    if (rv != 0) {
        trace_warn("group",
                   "event=offsets_record_skipped partition=%d offset=%lld "
                   "error=%s",
                   (int)p, (long long)rec->offset, weir_err_name(rv));
        return rv == WEIR_ENOMEM ? rv : 0;
    }
    gid = gr.key->key_case == WEIR__GROUP_RECORD_KEY_ENVELOPE__KEY_OFFSET
              ? gr.key->offset->group
              : gr.key->group->group;
    g = gio_group_find(io, gid);
    if (g == NULL && (g = gio_group_new(io, gid, p)) == NULL) {
        grec_fini(&gr);
        return WEIR_ENOMEM;
    }
    if (gr.key->key_case == WEIR__GROUP_RECORD_KEY_ENVELOPE__KEY_OFFSET) {
        if (gr.offset != NULL) {
            rv = gio_offset_set(g, gr.key->offset->topic,
                                gr.key->offset->partition, gr.offset->offset,
                                gr.offset->leader_epoch, gr.offset->metadata,
                                gr.offset->commit_timestamp);
        } else {
            gio_offset_remove(g, gr.key->offset->topic,
                              gr.key->offset->partition);
        }
    } else {
        if (g->loaded_meta != NULL) {
            weir__group_record_value__free_unpacked(g->loaded_meta, NULL);
        }
        g->loaded_meta = gr.group; /* NULL for a tombstone */
        gr.group = NULL;
    }
    grec_fini(&gr);
    return rv;
}

/* Read up to a chunk of partition p; true when the load is complete. */
static int gio_load_chunk(struct group_io *io, int32_t p, bool *done)
{
    struct gio_part *gp = &io->parts[p];
    struct plog *log = logmgr_partition(io->b->logs, GROUP_OFFSETS_TOPIC, p);
    struct plog_read_result rr;
    struct weir_buf buf;
    struct err_detail ed;
    struct batch_header h;
    struct weir_slice whole;
    struct batch_iter it;
    struct batch_record rec;
    size_t pos = 0;
    int rv;

    *done = false;
    if (log == NULL) {
        return WEIR_EUNKNOWN_TOPIC_OR_PARTITION;
    }
    if (gp->load_next < plog_start_offset(log)) {
        gp->load_next = plog_start_offset(log); /* retention moved on */
    }
    if (gp->load_next >= gp->load_end) {
        *done = true;
        return 0;
    }
    err_detail_clear(&ed);
    buf_init(&buf);
    rv = plog_read(log, gp->load_next, gp->load_end, GIO_LOAD_CHUNK, &rr, &ed);
    if (rv == 0) {
        rv = plog_read_copy(log, &rr, &buf, &ed);
    }
    while (rv == 0) {
        rv = batch_next(buf_slice(&buf), &pos, UINT32_MAX, true, &h, &whole,
                        &ed);
        if (rv != 0 || whole.len == 0) {
            break;
        }
        rv = batch_iter_init(&it, whole, &ed);
        while (rv == 0) {
            int r = batch_iter_next(&it, &rec);
            if (r <= 0) {
                rv = r < 0 ? -r : 0;
                break;
            }
            gp->records++;
            rv = gio_load_record(io, p, &rec);
        }
        if (rv == WEIR_EUNSUPPORTED_COMPRESSION) {
            rv = 0; /* not ours: skip the batch */
        }
        gp->load_next = batch_last_offset(&h) + 1;
    }
    buf_fini(&buf);
    if (rv != 0) {
        trace_error("group",
                    "event=offsets_load_failed partition=%d offset=%lld "
                    "error=%s msg=\"%s\"",
                    (int)p, (long long)gp->load_next, weir_err_name(rv),
                    ed.msg);
        return rv;
    }
    *done = gp->load_next >= gp->load_end;
    return 0;
}

/* Groups of a loaded partition come back with their members. */
static void gio_load_finish(struct group_io *io, int32_t p)
{
    struct gio_group *g = io->groups;
    struct gio_group *next;
    struct group_actions out;
    struct group_event ev;
    uint32_t n = 0;

    group_actions_init(&out);
    while (g != NULL) {
        next = g->next;
        if (g->partition == p) {
            struct group_view v;
            struct group_member_view *ms = NULL;
            if (g->loaded_meta != NULL &&
                (grec_group_view(g->loaded_meta, &v, &ms) != 0 ||
                 group_core_restore(g->core, &v, gio_now_ms(io)) != 0)) {
                trace_warn("group", "event=group_not_restored group=%s", g->id);
            }
            mem_free(ms);
            if (g->loaded_meta != NULL) {
                weir__group_record_value__free_unpacked(g->loaded_meta, NULL);
                g->loaded_meta = NULL;
            }
            memset(&ev, 0, sizeof(ev));
            ev.type = GROUP_EV_TICK;
            (void)gio_step(g, &ev, &out); /* arms its session timers */
            n++;
        }
        g = next;
    }
    group_actions_fini(&out);
    io->parts[p].state = GIO_LOADED;
    trace_info(
        "group",
        "event=offsets_partition_loaded partition=%d epoch=%d "
        "groups=%u records=%llu ms=%llu",
        (int)p, (int)io->parts[p].leader_epoch, n,
        (unsigned long long)io->parts[p].records,
        (unsigned long long)(gio_now_ms(io) - io->parts[p].load_started_ms));
}

static void gio_load_cb(evutil_socket_t fd, short what, void *arg)
{
    struct group_io *io = arg;
    bool more = false;
    bool done;
    int32_t p;

    (void)fd;
    (void)what;
    for (p = 0; p < io->n_parts; p++) {
        if (io->parts[p].state != GIO_LOADING) {
            continue;
        }
        if (gio_load_chunk(io, p, &done) != 0) {
            gio_unload(io, p); /* the scan tries again */
            continue;
        }
        if (done) {
            gio_load_finish(io, p);
        } else {
            more = true;
        }
    }
    if (more) {
        event_active(io->load_ev, EV_TIMEOUT, 0);
    }
}

/* Load the partitions led here, drop those no longer led. */
static void gio_scan(struct group_io *io)
{
    int32_t n = gio_topic_partitions(io);
    struct plog *log;
    int32_t epoch;
    int32_t p;

    if (n > 0 && io->n_parts == 0) {
        io->parts = mem_calloc((size_t)n, sizeof(*io->parts));
        if (io->parts == NULL) {
            return;
        }
        io->n_parts = n;
    }
    for (p = 0; p < io->n_parts; p++) {
        struct gio_part *gp = &io->parts[p];
        if (gio_leads(io, p, &log, &epoch)) {
            if (gp->state == GIO_UNLOADED || gp->leader_epoch != epoch) {
                gio_load_begin(io, p, log, epoch);
            }
        } else if (gp->state != GIO_UNLOADED) {
            gio_unload(io, p);
        }
    }
}

static void gio_scan_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    gio_scan(arg);
}

static bool gio_group_id_ok(const char *group)
{
    size_t n = strlen(group);
    size_t i;

    if (n == 0 || n > GROUP_MAX_ID_BYTES) {
        return false;
    }
    for (i = 0; i < n; i++) {
        if ((unsigned char)group[i] < 0x20 || group[i] == 0x7f) {
            return false;
        }
    }
    return true;
}

int gio_route(struct group_io *io,
              const char *group,
              bool create,
              struct gio_group **out,
              char *msg,
              size_t msg_cap)
{
    struct gio_part *gp;
    struct plog *log;
    int32_t epoch;
    int32_t p;

    *out = NULL;
    if (!gio_group_id_ok(group)) {
        (void)snprintf(msg, msg_cap, "group id must be 1..%d printable bytes",
                       GROUP_MAX_ID_BYTES);
        return WEIR_EINVALID_GROUP_ID;
    }
    if (io->n_parts == 0) {
        gio_scan(io);
    }
    if (io->n_parts == 0) {
        gio_create_topic(io);
        if (io->create_refused[0] != '\0') {
            (void)snprintf(msg, msg_cap, "%s not created yet (%s)",
                           GROUP_OFFSETS_TOPIC, io->create_refused);
        } else {
            (void)snprintf(msg, msg_cap, "%s is being created",
                           GROUP_OFFSETS_TOPIC);
        }
        return WEIR_ECOORDINATOR_NOT_AVAILABLE;
    }
    p = grec_partition_for(group, io->n_parts);
    gp = &io->parts[p];
    if (!gio_leads(io, p, &log, &epoch)) {
        (void)snprintf(msg, msg_cap,
                       "group %s is coordinated by the leader of %s/%d", group,
                       GROUP_OFFSETS_TOPIC, (int)p);
        return WEIR_ENOT_COORDINATOR;
    }
    if (gp->state == GIO_UNLOADED || gp->leader_epoch != epoch) {
        gio_load_begin(io, p, log, epoch);
    }
    if (gp->state != GIO_LOADED) {
        (void)snprintf(msg, msg_cap, "loading %s/%d", GROUP_OFFSETS_TOPIC,
                       (int)p);
        return WEIR_ECOORDINATOR_LOAD_IN_PROGRESS;
    }
    *out = gio_group_find(io, group);
    if (*out == NULL && create &&
        (*out = gio_group_new(io, group, p)) == NULL) {
        (void)snprintf(msg, msg_cap, "out of memory");
        return WEIR_ENOMEM;
    }
    return 0;
}

/* ---- writes ---------------------------------------------------------------
 */

static bool gio_committed(const struct group_io *io, const struct gio_write *w)
{
    if (w->repl) {
        return broker_high_watermark(io->b, w->log) >= w->need;
    }
    return plog_config(w->log)->flush_policy != PLOG_FLUSH_ACK ||
           plog_durable_offset(w->log) >= w->need;
}

int gio_write(struct group_io *io,
              struct gio_group *g,
              struct batch_builder *bb,
              struct gio_write *w,
              char *msg,
              size_t msg_cap)
{
    struct gio_part *gp = &io->parts[g->partition];
    struct weir_slice s;
    struct err_detail ed;
    struct plog *log;
    int64_t base;
    int64_t last;
    int32_t epoch;
    int rv;

    if (!gio_leads(io, g->partition, &log, &epoch) || gp->state != GIO_LOADED ||
        gp->leader_epoch != epoch) {
        (void)snprintf(msg, msg_cap, "no longer the coordinator");
        return WEIR_ENOT_COORDINATOR;
    }
    rv = repl_io_acks_all(io->b->repl, GROUP_OFFSETS_TOPIC, g->partition,
                          &w->repl);
    if (rv != 0) {
        (void)snprintf(msg, msg_cap,
                       "%s/%d has fewer in-sync replicas than "
                       "min.insync.replicas",
                       GROUP_OFFSETS_TOPIC, (int)g->partition);
        return WEIR_ECOORDINATOR_NOT_AVAILABLE;
    }
    rv = batch_builder_finish(bb, &s);
    if (rv != 0) {
        (void)snprintf(msg, msg_cap, "%s", weir_err_str(rv));
        return rv;
    }
    err_detail_clear(&ed);
    rv = plog_append(log, (uint8_t *)s.p, s.len, epoch, gio_wall_ms(io), &base,
                     &last, &ed);
    if (rv != 0) {
        (void)snprintf(msg, msg_cap, "%s", ed.msg);
        trace_warn("group",
                   "event=offsets_write_failed partition=%d error=%s "
                   "msg=\"%s\"",
                   (int)g->partition, weir_err_name(rv), ed.msg);
        return rv;
    }
    repl_io_log_moved(io->b->repl, log);
    broker_readable(io->b);
    if (plog_config(log)->flush_policy == PLOG_FLUSH_ACK &&
        plog_durable_offset(log) <= last) {
        broker_mark_dirty(io->b, log);
    }
    w->log = log;
    w->need = last + 1;
    w->partition = g->partition;
    w->leader_epoch = epoch;
    w->next = NULL;
    *io->writes_tail = w;
    io->writes_tail = &w->next;
    group_io_complete_waits(io);
    return 0;
}

static void gio_write_done(struct group_io *io,
                           struct gio_write *w,
                           int err,
                           const char *msg)
{
    struct gio_group *g;
    size_t i;

    if (w->kind == GIO_WRITE_COMMIT) {
        g = err == 0 ? gio_group_find(io, w->group) : NULL;
        if (g != NULL && io->parts[w->partition].state == GIO_LOADED &&
            io->parts[w->partition].leader_epoch == w->leader_epoch) {
            const Weir__OffsetCommitRequest *c = w->r->offset_commit;
            for (i = 0; i < c->n_partitions; i++) {
                const Weir__OffsetCommitPartition *cp = c->partitions[i];
                if (gio_offset_set(g, cp->topic, cp->partition, cp->offset,
                                   cp->leader_epoch, cp->metadata,
                                   gio_wall_ms(io)) != 0) {
                    err = WEIR_ENOMEM;
                    msg = "out of memory";
                }
            }
        }
        gio_answer_commit(w, err, msg);
    } else if (w->kind == GIO_WRITE_GROUP) {
        gio_persist_done(io, w, err);
    }
    rpc_request_free(w->r);
    mem_free(w->group);
    mem_free(w);
}

void group_io_complete_waits(struct group_io *io)
{
    struct gio_write **pp;
    struct gio_write *w;

    if (io == NULL) {
        return;
    }
    /* in list order: the high watermark only grows, so of two writes to
     * one log the earlier is committed first and applied first */
    pp = &io->writes;
    while ((w = *pp) != NULL) {
        if (!gio_committed(io, w)) {
            pp = &w->next;
            continue;
        }
        *pp = w->next;
        gio_write_done(io, w, 0, "");
    }
    io->writes_tail = pp;
}

/* Every write waiting in the list was appended to the offsets log, so
 * its answer is indefinite: the record may be on followers and take
 * effect under the next coordinator. */
static int gio_after_append_code(int code)
{
    switch (code) {
    case WEIR_ENOT_LEADER:
    case WEIR_ENOT_LEADER_AFTER_APPEND:
    case WEIR_ENOT_COORDINATOR:
        return WEIR_ENOT_COORDINATOR_AFTER_APPEND;
    default:
        return weir_err_definite(code) ? WEIR_EIO : code;
    }
}

void group_io_fail_log(struct group_io *io,
                       const struct plog *log,
                       int code,
                       const char *msg)
{
    struct gio_write **pp;
    struct gio_write *w;

    if (io == NULL) {
        return;
    }
    pp = &io->writes;
    while ((w = *pp) != NULL) {
        if (w->log != log) {
            pp = &w->next;
            continue;
        }
        *pp = w->next;
        gio_write_done(io, w, gio_after_append_code(code), msg);
    }
    io->writes_tail = &io->writes;
    while (*io->writes_tail != NULL) {
        io->writes_tail = &(*io->writes_tail)->next;
    }
}

/* ---- life cycle -----------------------------------------------------------
 */

int group_io_new(struct broker *b, struct group_io **out)
{
    struct group_io *io = mem_calloc(1, sizeof(*io));
    struct timeval tv = {GIO_SCAN_MS / 1000, (GIO_SCAN_MS % 1000) * 1000};

    *out = NULL;
    if (io == NULL) {
        return WEIR_ENOMEM;
    }
    io->b = b;
    group_config_init(&io->gcfg);
    io->gcfg.min_session_timeout_ms =
        (uint32_t)b->cfg.group_min_session_timeout_ms;
    io->gcfg.max_session_timeout_ms =
        (uint32_t)b->cfg.group_max_session_timeout_ms;
    io->gcfg.initial_rebalance_delay_ms =
        (uint32_t)b->cfg.group_initial_rebalance_delay_ms;
    io->writes_tail = &io->writes;
    io->scan_timer = event_new(b->base, -1, EV_PERSIST, gio_scan_cb, io);
    io->load_ev = event_new(b->base, -1, 0, gio_load_cb, io);
    if (io->scan_timer == NULL || io->load_ev == NULL) {
        group_io_free(io);
        return WEIR_ENOMEM;
    }
    (void)event_add(io->scan_timer, &tv);
    *out = io;
    return 0;
}

void group_io_free(struct group_io *io)
{
    struct gio_write *w;

    if (io == NULL) {
        return;
    }
    while ((w = io->writes) != NULL) {
        io->writes = w->next;
        gio_write_done(io, w, gio_after_append_code(WEIR_ENOT_COORDINATOR),
                       "the broker is stopping");
    }
    while (io->groups != NULL) {
        gio_group_drop(io, io->groups);
    }
    if (io->scan_timer != NULL) {
        event_free(io->scan_timer);
    }
    if (io->load_ev != NULL) {
        event_free(io->load_ev);
    }
    mem_free(io->parts);
    mem_free(io);
}
