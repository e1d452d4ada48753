/* SPDX-License-Identifier: Apache-2.0 */
/* Group records: written when the core asks (actions.persist), and their
 * fate told back to the core as a PERSISTED event once they are committed
 * (below the high watermark, acks=all) or failed. The core answers the
 * joins of a completed rebalance, and the syncs of an assignment, only
 * then, so a generation is handed out only once a successor coordinator
 * is sure to load it (group_core.h, docs/groups.md).
 *
 * The report is delivered from a deferred event of the group, never from
 * inside the write: a write can be committed at once (no replication, no
 * fsync wait), and the core must not be stepped while it is stepping. */
#include <event2/event.h>
#include <stdio.h>
#include <string.h>

#include "broker/group/group_io_int.h"
#include "broker/group/group_records.h"
#include "common/mem.h"
#include "common/trace.h"

/* What a client should do when a record could not be written or
 * committed: find the coordinator again (it moved), or retry. */
static int gio_persist_error(int err)
{
    return err == WEIR_ENOT_COORDINATOR || err == WEIR_ENOT_LEADER
               ? WEIR_ENOT_COORDINATOR
               : WEIR_ECOORDINATOR_NOT_AVAILABLE;
}

/* Keep the outcome of record seq for the next delivery. Records of one
 * group are committed in order, so the newest committed seq says all. */
static void gio_persist_note(struct gio_group *g, uint64_t seq, int err)
{
    if (err == 0) {
        if (seq > g->persist_ok_seq) {
            g->persist_ok_seq = seq;
        }
    } else if (seq > g->persist_fail_seq) {
        g->persist_fail_seq = seq;
        g->persist_fail_err = gio_persist_error(err);
    }
    event_active(g->persist_ev, EV_TIMEOUT, 0);
}

void gio_persist(struct gio_group *g, uint64_t seq)
{
    struct batch_builder bb;
    struct gio_write *w = mem_calloc(1, sizeof(*w));
    struct group_view v;
    char msg[256];
    int rv = WEIR_ENOMEM;

    (void)snprintf(msg, sizeof(msg), "out of memory");
    group_core_describe(g->core, &v);
    batch_builder_init(&bb);
    if (w != NULL) {
        w->kind = GIO_WRITE_GROUP;
        w->group = mem_strdup(g->id);
        w->persist_seq = seq;
        w->group_instance = g->instance;
        rv = w->group == NULL
                 ? WEIR_ENOMEM
                 : grec_add_group(&bb, gio_wall_ms(g->io), g->id, &v);
    }
    if (rv == 0) {
        rv = gio_write(g->io, g, &bb, w, msg, sizeof(msg));
    }
    batch_builder_fini(&bb);
    if (rv != 0) {
        trace_warn("group",
                   "event=group_record_not_written group=%s generation=%d "
                   "error=%s msg=\"%s\"",
                   g->id, (int)v.generation_id, weir_err_name(rv), msg);
        if (w != NULL) {
            mem_free(w->group);
            mem_free(w);
        }
        gio_persist_note(g, seq, rv);
    }
}

void gio_persist_done(struct group_io *io, const struct gio_write *w, int err)
{
    struct gio_group *g = gio_group_find(io, w->group);

    /* the group of this write was dropped (and maybe loaded again): its
     * core is gone, and a new one asks for records of its own */
    if (g == NULL || g->instance != w->group_instance) {
        return;
    }
    if (err != 0) {
        trace_warn("group",
                   "event=group_record_failed group=%s partition=%d "
                   "error=%s",
                   g->id, (int)w->partition, weir_err_name(err));
    }
    gio_persist_note(g, w->persist_seq, err);
}

static bool gio_persist_tell(struct gio_group *g, uint64_t seq, int err)
{
    struct group_actions out;
    struct group_event ev;
    int rv;

    memset(&ev, 0, sizeof(ev));
    ev.type = GROUP_EV_PERSISTED;
    ev.u.persisted.seq = seq;
    ev.u.persisted.error = err;
    group_actions_init(&out);
    rv = gio_step(g, &ev, &out);
    group_actions_fini(&out);
    if (rv != 0) {
        /* out of memory: the core is unchanged; tell it again shortly */
        struct timeval tv = {0, 100000};
        (void)event_add(g->persist_ev, &tv);
        return false;
    }
    g->persist_told_seq = seq;
    return true;
}

/* Report what is new, oldest first: a failure of one record and the
 * commit of a later one (written after the failure) are both told. */
void gio_persist_cb(evutil_socket_t fd, short what, void *arg)
{
    struct gio_group *g = arg;
    uint64_t ok = g->persist_ok_seq;
    uint64_t failed = g->persist_fail_seq;
    int err = g->persist_fail_err;

    (void)fd;
    (void)what;
    if (failed > g->persist_told_seq && failed < ok &&
        !gio_persist_tell(g, failed, err)) {
        return;
    }
    if (ok > g->persist_told_seq && !gio_persist_tell(g, ok, 0)) {
        return;
    }
    if (failed > g->persist_told_seq) {
        (void)gio_persist_tell(g, failed, err);
    }
}
