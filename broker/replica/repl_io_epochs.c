/* SPDX-License-Identifier: Apache-2.0 */
/* The epoch cache of a hosted partition on disk:
 * <partition dir>/leader-epoch-checkpoint, read once per partition and
 * reconciled with the log's batch headers (the checkpoint may lag the log,
 * or be gone), written atomically. See repl_io_int.h. */
#include <string.h>

#include "broker/replica/repl_io_int.h"
#include "broker/storage/plog.h"
#include "broker/storage/storage_ops.h"
#include "common/mem.h"
#include "common/trace.h"

#define REPL_IO_CHECKPOINT     "leader-epoch-checkpoint"
#define REPL_IO_CHECKPOINT_MAX (1u << 20)

static int repl_io_last_epoch_cb(void *arg, const struct batch_header *h)
{
    *(int32_t *)arg = h->leader_epoch; /* the last call is the last batch */
    return 0;
}

static int repl_io_assign_cb(void *arg, const struct batch_header *h)
{
    if (h->leader_epoch < 0) {
        return 0; /* not stamped by any leader: nothing to record */
    }
    /* older or equal epochs are ignored; a newer one starts here */
    return repl_epochs_assign(arg, h->leader_epoch, h->base_offset);
}

/* Make the cache describe the log: read the last batch's header (one
 * header in the usual case, where the checkpoint agrees) and, when the
 * checkpoint lags (a crash between flushing a new epoch's records and the
 * checkpoint write, or a missing or emptied file), the headers from its
 * latest entry on. A failed read keeps what was rebuilt so far, a correct
 * prefix of the history, and is returned: the next load goes on from
 * there. */
static int repl_io_part_reconcile(struct repl_io_part *p, struct plog *log)
{
    int64_t start = plog_start_offset(log);
    int64_t end = plog_end_offset(log);
    int32_t last = REPL_EPOCH_NONE;
    struct err_detail ed;
    int64_t from;
    int rv = 0;

    err_detail_clear(&ed);
    if (end > start) {
        rv = plog_scan(log, end - 1, repl_io_last_epoch_cb, &last, &ed);
    }
    if (rv == 0) {
        from = repl_epochs_reconcile(&p->epochs, start, end, last);
        if (from == REPL_OFFSET_NONE) {
            return 0;
        }
        rv = plog_scan(log, from, repl_io_assign_cb, &p->epochs, &ed);
        trace_info("replica",
                   "event=epoch_cache_rebuilt topic=%s partition=%d "
                   "from=%lld end=%lld entries=%u latest=%d",
                   p->topic, (int)p->partition, (long long)from, (long long)end,
                   repl_epochs_count(&p->epochs),
                   (int)repl_epochs_latest_epoch(&p->epochs));
    }
    if (rv != 0) {
        trace_warn("replica",
                   "event=epoch_cache_rebuild_failed topic=%s partition=%d "
                   "error=%s msg=\"%s\" action=retry_on_next_load",
                   p->topic, (int)p->partition, weir_err_name(rv), ed.msg);
    }
    return rv;
}

int repl_io_part_load(struct repl_io_part *p, struct plog *log)
{
    const char *dir = plog_dir(log);
    char path[STORAGE_PATH_MAX];
    struct err_detail ed;
    char *text = NULL;
    size_t len = 0;
    int rv;

    if (p->loaded) {
        return 0;
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
        /* derived data: rebuilt from the log below */
        trace_warn("replica",
                   "event=epoch_checkpoint_unreadable topic=%s partition=%d "
                   "error=%s msg=\"%s\"",
                   p->topic, (int)p->partition, weir_err_name(rv), ed.msg);
    }
    /* loaded only once the cache describes the whole log: a cache short
     * of the latest epochs would let this replica lead an epoch older
     * than records it holds, or answer divergence from a partial view */
    rv = repl_io_part_reconcile(p, log);
    p->loaded = rv == 0;
    return rv;
}

int repl_io_part_store(const struct repl_io_part *p,
                       const struct plog *log,
                       struct err_detail *ed)
{
    const char *dir = plog_dir(log);
    char path[STORAGE_PATH_MAX];
    struct weir_buf text;
    int rv;

    buf_init(&text);
    rv = repl_epochs_encode(&p->epochs, &text);
    if (rv != 0) {
        buf_fini(&text);
        return err_set(ed, rv, "encoding the epoch checkpoint: out of memory");
    }
    rv = storage_join(path, sizeof(path), dir, REPL_IO_CHECKPOINT, ed);
    if (rv == 0) {
        rv = storage_write_atomic(storage_posix(), dir, path, text.data,
                                  text.len, ed);
    }
    buf_fini(&text);
    return rv;
}
