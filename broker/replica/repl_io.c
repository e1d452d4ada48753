/* SPDX-License-Identifier: Apache-2.0 */
/* Role and leader-epoch bookkeeping per hosted partition; see repl_io.h. */
#include "broker/replica/repl_io.h"

#include <stdbool.h>
#include <string.h>

#include "broker/broker.h"
#include "broker/idem/idem_io.h"
#include "broker/replica/fetcher.h"
#include "broker/replica/repl_epochs.h"
#include "broker/replica/repl_io_int.h"
#include "broker/storage/logmgr.h"
#include "broker/storage/plog.h"
#include "broker/storage/storage_ops.h"
#include "common/mem.h"
#include "common/trace.h"

#define REPL_IO_CHECKPOINT     "leader-epoch-checkpoint"
#define REPL_IO_CHECKPOINT_MAX (1u << 20)

int repl_io_new(struct broker *b, struct repl_io **out)
{
    struct repl_io *io = mem_calloc(1, sizeof(*io));

    if (io == NULL) {
        return WEIR_ENOMEM;
    }
    io->b = b;
    *out = io;
    return 0;
}

static void repl_io_part_fini(struct repl_io_part *p)
{
    mem_free(p->topic);
    repl_epochs_fini(&p->epochs);
}

void repl_io_free(struct repl_io *io)
{
    uint32_t i;

    if (io == NULL) {
        return;
    }
    for (i = 0; i < io->n_fetchers; i++) {
        fetcher_free(io->fetchers[i]);
    }
    mem_free(io->fetchers);
    for (i = 0; i < io->n; i++) {
        repl_io_part_fini(&io->parts[i]);
    }
    mem_free(io->parts);
    mem_free(io);
}

static struct repl_io_part *
repl_io_find(const struct repl_io *io, const char *topic, int32_t partition)
{
    uint32_t i;

    if (io == NULL) {
        return NULL;
    }
    for (i = 0; i < io->n; i++) {
        if (io->parts[i].partition == partition &&
            strcmp(io->parts[i].topic, topic) == 0) {
            return &io->parts[i];
        }
    }
    return NULL;
}

static struct repl_io_part *
repl_io_add(struct repl_io *io, const char *topic, int32_t partition)
{
    struct repl_io_part *p;
    uint32_t cap;

    if (io->n == io->cap) {
        cap = io->cap == 0 ? 8 : io->cap * 2;
        p = mem_realloc(io->parts, (size_t)cap * sizeof(*p));
        if (p == NULL) {
            return NULL;
        }
        io->parts = p;
        io->cap = cap;
    }
    p = &io->parts[io->n];
    memset(p, 0, sizeof(*p));
    p->topic = mem_strdup(topic);
    if (p->topic == NULL) {
        return NULL;
    }
    p->partition = partition;
    p->leader_epoch = 0;
    repl_epochs_init(&p->epochs);
    io->n++;
    return p;
}

static void repl_io_remove(struct repl_io *io, struct repl_io_part *p)
{
    uint32_t i = (uint32_t)(p - io->parts);

    repl_io_part_fini(p);
    io->parts[i] = io->parts[io->n - 1];
    io->n--;
}

/* Read <dir>/leader-epoch-checkpoint into p->epochs; a missing file is an
 * empty cache. A corrupt one is traced and ignored (the cache is derived
 * data a leader rebuilds from here on). */
void repl_io_part_load(struct repl_io_part *p, const struct plog *log)
{
    const char *dir = plog_dir(log);
    char path[STORAGE_PATH_MAX];
    struct err_detail ed;
    char *text = NULL;
    size_t len = 0;
    int rv;

    if (p->loaded) {
        return;
    }
    err_detail_clear(&ed);
    rv = storage_join(path, sizeof(path), dir, REPL_IO_CHECKPOINT, &ed);
    if (rv == 0) {
        rv = storage_read_small(storage_posix(), path, REPL_IO_CHECKPOINT_MAX,
                                &text, &len, &ed);
    }
    if (rv == 0) {
        rv = repl_epochs_decode(&p->epochs, (const uint8_t *)text, len, &ed);
    }
    mem_free(text);
    if (rv != 0 && rv != WEIR_ENOT_FOUND) {
        trace_warn("replica",
                   "event=epoch_checkpoint_unreadable topic=%s partition=%d "
                   "error=%s msg=\"%s\"",
                   p->topic, (int)p->partition, weir_err_name(rv), ed.msg);
    }
    p->loaded = true;
}

static int repl_io_store(const struct repl_io_part *p,
                         const char *dir,
                         struct err_detail *ed)
{
    char path[STORAGE_PATH_MAX];
    struct weir_buf text;
    int rv;

    buf_init(&text);
    rv = repl_epochs_encode(&p->epochs, &text);
    if (rv != 0) {
        buf_fini(&text);
        return err_set(ed, rv, "out of memory");
    }
    rv = storage_join(path, sizeof(path), dir, REPL_IO_CHECKPOINT, ed);
    if (rv == 0) {
        rv = storage_write_atomic(storage_posix(), dir, path, text.data,
                                  text.len, ed);
    }
    buf_fini(&text);
    return rv;
}

void repl_io_part_store(const struct repl_io_part *p, const struct plog *log)
{
    struct err_detail ed;
    int rv;

    err_detail_clear(&ed);
    rv = repl_io_store(p, plog_dir(log), &ed);
    if (rv != 0) {
        trace_warn("replica",
                   "event=epoch_checkpoint_failed topic=%s partition=%d "
                   "error=%s msg=\"%s\"",
                   p->topic, (int)p->partition, weir_err_name(rv), ed.msg);
    }
}

/* The fetcher for `leader`, created on first use (NULL: out of memory). */
static struct fetcher *repl_io_fetcher(struct repl_io *io, int32_t leader)
{
    struct fetcher **fs;
    uint32_t i;

    for (i = 0; i < io->n_fetchers; i++) {
        if (fetcher_leader(io->fetchers[i]) == leader) {
            return io->fetchers[i];
        }
    }
    fs = mem_realloc(io->fetchers, (io->n_fetchers + 1) * sizeof(*fs));
    if (fs == NULL) {
        return NULL;
    }
    io->fetchers = fs;
    if (fetcher_new(io, leader, &fs[io->n_fetchers]) != 0) {
        return NULL;
    }
    return fs[io->n_fetchers++];
}

/* This broker now leads p in st->leader_epoch: that epoch starts at the log
 * end offset. */
static void repl_io_become_leader(struct repl_io *io,
                                  struct repl_io_part *p,
                                  const struct cluster_partition_state *st)
{
    struct plog *log = logmgr_partition(io->b->logs, st->topic, st->partition);
    struct err_detail ed;
    int rv;

    if (log == NULL) {
        trace_warn("replica",
                   "event=leader_without_log topic=%s partition=%d epoch=%d",
                   st->topic, (int)st->partition, (int)st->leader_epoch);
        return;
    }
    repl_io_part_load(p, log);
    /* the log grew under other leaders: rebuild producer state from it */
    idem_io_invalidate(io->b->idem, st->topic, st->partition);
    err_detail_clear(&ed);
    if (st->leader_epoch <= repl_epochs_latest_epoch(&p->epochs)) {
        return; /* already recorded (or stale) */
    }
    rv = repl_epochs_assign(&p->epochs, st->leader_epoch, plog_end_offset(log));
    if (rv == 0) {
        rv = repl_io_store(p, plog_dir(log), &ed);
    } else {
        (void)err_set(&ed, rv, "recording epoch %d", (int)st->leader_epoch);
    }
    if (rv != 0) {
        trace_warn("replica",
                   "event=epoch_checkpoint_failed topic=%s partition=%d "
                   "epoch=%d error=%s msg=\"%s\"",
                   st->topic, (int)st->partition, (int)st->leader_epoch,
                   weir_err_name(rv), ed.msg);
        return;
    }
    trace_info("replica",
               "event=leader_epoch_start topic=%s partition=%d epoch=%d "
               "start_offset=%lld",
               st->topic, (int)st->partition, (int)st->leader_epoch,
               (long long)plog_end_offset(log));
}

void repl_io_on_partition(void *arg, const struct cluster_partition_state *st)
{
    struct repl_io *io = arg;
    struct repl_io_part *p = repl_io_find(io, st->topic, st->partition);

    cluster_role_trace(io->b->cluster, st);
    if (st->role == CLUSTER_ROLE_NONE) {
        if (p != NULL) {
            repl_io_remove(io, p);
        }
        return;
    }
    if (p == NULL) {
        p = repl_io_add(io, st->topic, st->partition);
        if (p == NULL) {
            trace_error("replica",
                        "event=partition_untracked topic=%s partition=%d "
                        "reason=\"out of memory\"",
                        st->topic, (int)st->partition);
            return;
        }
    }
    p->role = st->role;
    p->leader = st->leader;
    p->leader_epoch = st->leader_epoch;
    if (st->role == CLUSTER_ROLE_LEADER) {
        repl_io_become_leader(io, p, st);
    } else if (st->leader >= 0 && st->leader != (int32_t)io->b->cfg.id) {
        struct fetcher *f = repl_io_fetcher(io, st->leader);

        if (f == NULL) {
            trace_error("replica",
                        "event=fetcher_unavailable topic=%s partition=%d "
                        "leader=%d reason=\"out of memory\"",
                        st->topic, (int)st->partition, (int)st->leader);
            return;
        }
        fetcher_kick(f);
    }
}

bool repl_io_diverging(struct repl_io *io,
                       const char *topic,
                       int32_t partition,
                       const struct plog *log,
                       int32_t last_fetched_epoch,
                       int64_t fetch_offset,
                       int32_t *epoch,
                       int64_t *end_offset)
{
    struct repl_io_part *p = repl_io_find(io, topic, partition);
    int64_t leo = plog_end_offset(log);
    struct repl_epoch_end e;

    *epoch = REPL_EPOCH_NONE;
    *end_offset = REPL_OFFSET_NONE;
    if (p == NULL || p->role != CLUSTER_ROLE_LEADER) {
        return false;
    }
    repl_io_part_load(p, log);
    if (last_fetched_epoch >= 0 && repl_epochs_count(&p->epochs) > 0) {
        e = repl_epochs_end_offset_for(&p->epochs, last_fetched_epoch, leo);
        if (e.end_offset >= 0 &&
            (e.epoch != last_fetched_epoch || e.end_offset < fetch_offset)) {
            *epoch = e.epoch;
            *end_offset =
                e.end_offset < fetch_offset ? e.end_offset : fetch_offset;
            return true;
        }
    }
    if (fetch_offset > leo) {
        /* the follower holds more than this leader: cut it back */
        *epoch = repl_epochs_latest_epoch(&p->epochs);
        *end_offset = leo;
        return true;
    }
    return false;
}

int32_t repl_io_leader_epoch(const struct repl_io *io,
                             const char *topic,
                             int32_t partition)
{
    const struct repl_io_part *p = repl_io_find(io, topic, partition);

    if (p == NULL || p->role != CLUSTER_ROLE_LEADER || p->leader_epoch < 0) {
        return 0;
    }
    return p->leader_epoch;
}

const struct repl_epochs *
repl_io_epochs(const struct repl_io *io, const char *topic, int32_t partition)
{
    const struct repl_io_part *p = repl_io_find(io, topic, partition);

    return p != NULL ? &p->epochs : NULL;
}
