/* SPDX-License-Identifier: Apache-2.0 */
/* The metadata log as a Raft log (controller/ctl_log_raft.h), in a
 * temporary directory: entries are durable on append but reach the image
 * only when applied; a reopen holds them unapplied; a follower's cut; a
 * single controller's frames load as term-0 entries and are sealed at term
 * 1; a snapshot installed from a leader replaces snapshot and log, also
 * across a crash between the two; READMIT entries fill the readmission
 * table, which snapshots keep; damage in a version-1 log is refused.
 * Batches come from a real ctl_core. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/mem.h"
#include "controller/ctl_hardstate.h"
#include "controller/ctl_log.h"
#include "controller/ctl_log_frame.h"
#include "controller/ctl_log_raft.h"
#include "controller/elect/ctl_core.h"

static const uint32_t rfx_voters[3] = {1, 2, 3};

struct rfx {
    char dir[64];
    char path[128];
    struct ctl_core *core;
    struct ctl_actions out;
    struct ctl_log *log;
    struct meta_image *img; /* the log's image */
    uint64_t now_ms;
    struct weir_buf batch[8]; /* entry data, kept for the entries */
    uint32_t n_batch;
};

static int rfx_setup(void **state)
{
    struct rfx *f = calloc(1, sizeof(*f));
    struct ctl_config cfg;
    struct ctl_log_stats st;
    struct err_detail ed;

    assert_non_null(f);
    (void)snprintf(f->dir, sizeof(f->dir), "/tmp/weir-ctl-raft-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    (void)snprintf(f->path, sizeof(f->path), "%s/%s", f->dir, CTL_LOG_FILE);
    ctl_config_init(&cfg);
    cfg.rebalance_interval_ms = 0;
    assert_int_equal(ctl_core_new(&cfg, NULL, &f->core), 0);
    ctl_actions_init(&f->out);
    assert_int_equal(
        ctl_log_raft_open(f->dir, rfx_voters, 3, &f->log, &f->img, &st, &ed),
        0);
    *state = f;
    return 0;
}

static int rfx_teardown(void **state)
{
    struct rfx *f = *state;
    char cmd[128];
    uint32_t i;

    ctl_log_close(f->log);
    meta_image_free(f->img);
    ctl_actions_fini(&f->out);
    ctl_core_free(f->core);
    for (i = 0; i < f->n_batch; i++) {
        buf_fini(&f->batch[i]);
    }
    (void)snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
    assert_int_equal(system(cmd), 0);
    free(f);
    return 0;
}

/* Step the core; its batch (as a NORMAL entry's data) is the result. */
static struct weir_buf *rfx_step(struct rfx *f, struct ctl_event *ev)
{
    struct weir_buf *out = &f->batch[f->n_batch++];
    struct err_detail ed;
    struct weir_buf b;

    assert_true(f->n_batch <= 8);
    ev->now_ms = f->now_ms += 10;
    assert_int_equal(ctl_core_step(f->core, ev, &f->out), 0);
    assert_int_equal(f->out.result, 0);
    buf_init(&b);
    buf_init(out);
    assert_int_equal(ctl_log_frame_put_batch(&b, f->out.records,
                                             f->out.n_records,
                                             f->out.first_offset, &ed),
                     0);
    buf_put(out, b.data + CTL_LOG_FRAME_HEAD, b.len - CTL_LOG_FRAME_HEAD);
    buf_fini(&b);
    return out;
}

static struct weir_buf *rfx_join(struct rfx *f, int32_t id)
{
    struct ctl_event ev;

    memset(&ev, 0, sizeof(ev));
    ev.type = CTL_EV_BROKER_REGISTER;
    ev.u.reg.broker_id = id;
    ev.u.reg.host = "127.0.0.1";
    ev.u.reg.port = (uint16_t)(9000 + id);
    return rfx_step(f, &ev);
}

static struct raft_entry
rfx_normal(uint64_t index, uint64_t term, const struct weir_buf *b)
{
    struct raft_entry e = {index, term, RAFT_ENTRY_NORMAL, b->data,
                           (uint32_t)b->len};
    return e;
}

static struct raft_entry rfx_noop(uint64_t index, uint64_t term)
{
    struct raft_entry e = {index, term, RAFT_ENTRY_NOOP, NULL, 0};
    return e;
}

/* Close and open again (Raft mode): *st is what the open found. */
static void rfx_reopen(struct rfx *f, struct ctl_log_stats *st)
{
    struct err_detail ed;
    struct ctl_log_stats ignored;

    ctl_log_close(f->log);
    meta_image_free(f->img);
    assert_int_equal(ctl_log_raft_open(f->dir, rfx_voters, 3, &f->log, &f->img,
                                       st != NULL ? st : &ignored, &ed),
                     0);
}

static uint32_t rfx_records_served(const struct rfx *f)
{
    struct weir_buf b;
    uint32_t count = 0;

    buf_init(&b);
    assert_int_equal(ctl_log_read(f->log, ctl_log_start_offset(f->log),
                                  1u << 30, &b, &count),
                     0);
    buf_fini(&b);
    return count;
}

/* Durable is not applied: appended entries survive a reopen but reach
 * the image (and brokers' fetches) only through apply, in order. */
static void test_apply_only_when_committed(void **state)
{
    struct rfx *f = *state;
    struct raft_entry e[3];
    struct raft_entry got[4];
    struct err_detail ed;
    uint32_t n = 0;

    e[0] = rfx_noop(1, 1);
    e[1] = rfx_normal(2, 1, rfx_join(f, 1));
    e[2] = rfx_normal(3, 1, rfx_join(f, 2));
    assert_int_equal(ctl_log_raft_append(f->log, e, 3, &ed), 0);
    assert_int_equal(ctl_log_raft_last_index(f->log), 3);
    assert_int_equal(ctl_log_raft_applied(f->log), 0);
    assert_int_equal(ctl_log_end_offset(f->log), 0);
    assert_int_equal(rfx_records_served(f), 0);
    rfx_reopen(f, NULL);
    assert_int_equal(ctl_log_raft_last_index(f->log), 3);
    assert_int_equal(ctl_log_raft_last_term(f->log), 1);
    assert_int_equal(meta_image_end_offset(f->img), 0);
    assert_int_equal(ctl_log_raft_entries(f->log, 2, got, 4, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(got[0].type, RAFT_ENTRY_NORMAL);
    assert_int_equal(got[0].len, e[1].len);
    assert_memory_equal(got[0].data, e[1].data, e[1].len);
    assert_int_equal(ctl_log_raft_apply(f->log, 2, f->img, &ed), 0);
    assert_int_equal(ctl_log_raft_applied(f->log), 2);
    assert_int_equal(rfx_records_served(f),
                     (uint32_t)meta_image_end_offset(f->img));
    assert_false(meta_image_equal(f->img, ctl_core_image(f->core)));
    assert_int_equal(ctl_log_raft_apply(f->log, 3, f->img, &ed), 0);
    assert_true(meta_image_equal(f->img, ctl_core_image(f->core)));
    assert_int_equal(ctl_log_raft_apply(f->log, 4, f->img, &ed),
                     WEIR_EINVALID_ARGUMENT);
    /* gaps and terms going down are refused */
    e[0] = rfx_noop(5, 1);
    assert_int_equal(ctl_log_raft_append(f->log, e, 1, &ed),
                     WEIR_EINVALID_ARGUMENT);
    e[0] = rfx_noop(4, 0);
    assert_int_equal(ctl_log_raft_append(f->log, e, 1, &ed),
                     WEIR_EINVALID_ARGUMENT);
    assert_int_equal(ctl_log_raft_last_index(f->log), 3);
}

/* A follower's conflict: entries from an index on are cut, durably, and
 * the log goes on from there in a later term; applied entries cannot be
 * cut. */
static void test_truncate(void **state)
{
    struct rfx *f = *state;
    struct raft_entry e[4];
    struct err_detail ed;
    bool found;

    e[0] = rfx_noop(1, 1);
    e[1] = rfx_normal(2, 1, rfx_join(f, 1));
    e[2] = rfx_noop(3, 1);
    e[3] = rfx_noop(4, 1);
    assert_int_equal(ctl_log_raft_append(f->log, e, 4, &ed), 0);
    assert_int_equal(ctl_log_raft_apply(f->log, 1, f->img, &ed), 0);
    assert_int_equal(ctl_log_raft_truncate(f->log, 1, &ed),
                     WEIR_EINVALID_ARGUMENT);
    assert_int_equal(ctl_log_raft_truncate(f->log, 6, &ed),
                     WEIR_EINVALID_ARGUMENT);
    assert_int_equal(ctl_log_raft_truncate(f->log, 3, &ed), 0);
    assert_int_equal(ctl_log_raft_last_index(f->log), 2);
    e[0] = rfx_noop(3, 2);
    assert_int_equal(ctl_log_raft_append(f->log, e, 1, &ed), 0);
    rfx_reopen(f, NULL);
    assert_int_equal(ctl_log_raft_last_index(f->log), 3);
    assert_int_equal(ctl_log_raft_term_at(f->log, 3, &found), 2);
    assert_true(found);
    assert_int_equal(ctl_log_raft_term_at(f->log, 2, &found), 1);
    (void)ctl_log_raft_term_at(f->log, 4, &found);
    assert_false(found);
    assert_int_equal(ctl_log_raft_apply(f->log, 3, f->img, &ed), 0);
    assert_true(meta_image_equal(f->img, ctl_core_image(f->core)));
}

/* A single controller's log (version-0 frames, a snapshot without a Raft
 * head) loads as term-0 entries, one index per frame after the snapshot,
 * unapplied; sealing applies them and snapshots at term 1, after which a
 * single controller refuses the dir. */
static void test_old_frames_load_and_seal(void **state)
{
    struct rfx *f = *state;
    struct weir_buf *b[3];
    struct raft_entry got[4];
    struct ctl_log *single = NULL;
    struct meta_image *img = NULL;
    struct ctl_log_stats st;
    struct err_detail ed;
    uint32_t n = 0;
    int i;

    ctl_log_close(f->log);
    meta_image_free(f->img);
    f->log = NULL;
    f->img = NULL;
    assert_int_equal(ctl_log_open(f->dir, &single, &img, &st, &ed), 0);
    for (i = 0; i < 3; i++) {
        int64_t first = ctl_log_end_offset(single);
        b[i] = rfx_join(f, i + 1);
        assert_int_equal(ctl_log_append(single, f->out.records,
                                        f->out.n_records, first, &ed),
                         0);
        if (i == 0) { /* a snapshot after the first batch */
            assert_int_equal(
                ctl_log_snapshot(single, ctl_core_image(f->core), &ed), 0);
        }
    }
    ctl_log_close(single);
    meta_image_free(img);
    rfx_reopen(f, NULL);
    assert_int_equal(ctl_log_raft_snapshot_index(f->log), 0);
    assert_int_equal(ctl_log_raft_last_index(f->log), 2);
    assert_int_equal(ctl_log_raft_last_term(f->log), 0);
    assert_int_equal(ctl_log_raft_entries(f->log, 1, got, 4, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(got[1].len, b[2]->len);
    assert_memory_equal(got[1].data, b[2]->data, b[2]->len);
    assert_false(meta_image_equal(f->img, ctl_core_image(f->core)));
    assert_int_equal(ctl_log_raft_seal(f->log, f->img, &ed), 0);
    assert_true(meta_image_equal(f->img, ctl_core_image(f->core)));
    assert_int_equal(ctl_log_raft_seal(f->log, f->img, &ed),
                     WEIR_EINVALID_ARGUMENT);
    rfx_reopen(f, NULL);
    assert_int_equal(ctl_log_raft_snapshot_index(f->log), 2);
    assert_int_equal(ctl_log_raft_last_term(f->log), 1);
    assert_int_equal(ctl_log_raft_applied(f->log), 2);
    assert_true(meta_image_equal(f->img, ctl_core_image(f->core)));
    assert_int_equal(ctl_log_open(f->dir, &single, &img, &st, &ed),
                     WEIR_ECONFIG);
    assert_non_null(strstr(ed.msg, "--voters"));
}

/* Copy file a to b (the test's stand-in for a crash between two steps). */
static void rfx_copy(const char *a, const char *b)
{
    char cmd[400];

    (void)snprintf(cmd, sizeof(cmd), "cp %s %s", a, b);
    assert_int_equal(system(cmd), 0);
}

/* A snapshot from a "leader" (a second log, compacted) replaces this
 * log's snapshot and entries; it is what ctl_log_raft_snapshot_read
 * sends; a crash between the snapshot and the log's replacement leaves
 * stale entries, which the next open cuts. */
static void test_install_snapshot(void **state)
{
    struct rfx *f = *state;
    struct raft_entry e[3];
    struct raft_snapshot snap;
    struct meta_image *other = NULL;
    struct meta_image *img = NULL;
    struct ctl_log_stats st;
    struct ctl_log *leader = NULL;
    struct err_detail ed;
    struct weir_buf body;
    char ldir[80];
    char saved[160];

    (void)snprintf(ldir, sizeof(ldir), "%s/leader", f->dir);
    assert_int_equal(
        ctl_log_raft_open(ldir, rfx_voters, 3, &leader, &img, &st, &ed), 0);
    e[0] = rfx_noop(1, 2);
    e[1] = rfx_normal(2, 2, rfx_join(f, 1));
    e[2] = rfx_normal(3, 2, rfx_join(f, 2));
    assert_int_equal(ctl_log_raft_append(leader, e, 3, &ed), 0);
    assert_int_equal(ctl_log_raft_apply(leader, 3, img, &ed), 0);
    assert_int_equal(ctl_log_snapshot(leader, img, &ed), 0);
    buf_init(&body);
    assert_int_equal(ctl_log_raft_snapshot_read(leader, &body, &snap, &ed), 0);
    assert_int_equal(snap.index, 3);
    assert_int_equal(snap.term, 2);
    snap.admitted[2] = 555;

    /* this member: a stale history of term 1 */
    e[0] = rfx_noop(1, 1);
    e[1] = rfx_noop(2, 1);
    e[2] = rfx_noop(3, 1);
    assert_int_equal(ctl_log_raft_append(f->log, e, 3, &ed), 0);
    e[0] = rfx_noop(4, 1);
    assert_int_equal(ctl_log_raft_append(f->log, e, 1, &ed), 0);
    (void)snprintf(saved, sizeof(saved), "%s/saved.log", f->dir);
    rfx_copy(f->path, saved);
    meta_image_free(f->img);
    f->img = NULL;
    assert_int_equal(ctl_log_raft_install(f->log, &snap, &f->img, &ed), 0);
    assert_true(meta_image_equal(f->img, ctl_core_image(f->core)));
    assert_int_equal(ctl_log_raft_last_index(f->log), 3);
    assert_int_equal(ctl_log_raft_applied(f->log), 3);
    assert_int_equal(ctl_log_raft_admitted(f->log)[2], 555);
    assert_int_equal(ctl_log_raft_install(f->log, &snap, &other, &ed),
                     WEIR_EINVALID_ARGUMENT); /* not past applied */
    rfx_reopen(f, NULL);
    assert_true(meta_image_equal(f->img, ctl_core_image(f->core)));
    assert_int_equal(ctl_log_raft_last_index(f->log), 3);
    assert_int_equal(ctl_log_raft_admitted(f->log)[2], 555);
    assert_int_equal(rfx_records_served(f), 0);

    /* the crash: the old log back beside the new snapshot */
    ctl_log_close(f->log);
    f->log = NULL;
    assert_int_equal(rename(saved, f->path), 0);
    rfx_reopen(f, &st);
    assert_int_equal(ctl_log_raft_last_index(f->log), 3); /* entry 4 cut */
    assert_true(st.cut_bytes > 0);
    assert_true(meta_image_equal(f->img, ctl_core_image(f->core)));
    e[0] = rfx_noop(4, 3);
    assert_int_equal(ctl_log_raft_append(f->log, e, 1, &ed), 0);

    /* bytes that do not decode change nothing */
    body.data[6] ^= 0x5a; /* in the chain values' head: CRC */
    snap.index = 9;
    assert_int_equal(ctl_log_raft_install(f->log, &snap, &other, &ed),
                     WEIR_ECORRUPT);
    assert_int_equal(ctl_log_raft_last_index(f->log), 4);
    buf_fini(&body);
    ctl_log_close(leader);
    assert_null(other);
    meta_image_free(img);
}

/* A crash between an installed snapshot and the log's replacement, when
 * the old log agrees with the snapshot at its index (same term): the
 * entries after it are kept, as Raft keeps a log that extends the
 * snapshot. */
static void test_install_crash_keeps_matching_entries(void **state)
{
    struct rfx *f = *state;
    struct raft_entry e[4];
    struct raft_snapshot snap;
    struct meta_image *img = NULL;
    struct ctl_log_stats st;
    struct ctl_log *leader = NULL;
    struct err_detail ed;
    struct weir_buf body;
    char ldir[80];
    char saved[160];

    (void)snprintf(ldir, sizeof(ldir), "%s/leader", f->dir);
    assert_int_equal(
        ctl_log_raft_open(ldir, rfx_voters, 3, &leader, &img, &st, &ed), 0);
    e[0] = rfx_noop(1, 2);
    e[1] = rfx_normal(2, 2, rfx_join(f, 1));
    e[2] = rfx_noop(3, 2);
    e[3] = rfx_noop(4, 2);
    assert_int_equal(ctl_log_raft_append(leader, e, 3, &ed), 0);
    assert_int_equal(ctl_log_raft_apply(leader, 3, img, &ed), 0);
    assert_int_equal(ctl_log_snapshot(leader, img, &ed), 0);
    buf_init(&body);
    assert_int_equal(ctl_log_raft_snapshot_read(leader, &body, &snap, &ed), 0);
    assert_int_equal(ctl_log_raft_append(f->log, e, 4, &ed), 0);
    (void)snprintf(saved, sizeof(saved), "%s/saved.log", f->dir);
    rfx_copy(f->path, saved);
    meta_image_free(f->img);
    f->img = NULL;
    assert_int_equal(ctl_log_raft_install(f->log, &snap, &f->img, &ed), 0);
    ctl_log_close(f->log);
    f->log = NULL;
    assert_int_equal(rename(saved, f->path), 0);
    rfx_reopen(f, &st);
    assert_int_equal(st.cut_bytes, 0);
    assert_int_equal(ctl_log_raft_snapshot_index(f->log), 3);
    assert_int_equal(ctl_log_raft_last_index(f->log), 4);
    assert_int_equal(ctl_log_raft_applied(f->log), 3);
    assert_true(meta_image_equal(f->img, ctl_core_image(f->core)));
    buf_fini(&body);
    ctl_log_close(leader);
    meta_image_free(img);
}

/* A committed READMIT sets the voter's nonce in the readmission table; a
 * snapshot keeps the table; a READMIT of a non-voter does not apply. */
static void test_readmit_and_compaction(void **state)
{
    struct rfx *f = *state;
    uint8_t d[CTL_LOG_READMIT_BYTES];
    struct raft_entry e[3];
    struct err_detail ed;

    wire_put_u32be(d, 2);
    wire_put_u64be(d + 4, 0xabcdefull);
    e[0] = rfx_noop(1, 1);
    e[1] = (struct raft_entry){2, 1, RAFT_ENTRY_READMIT, d, sizeof(d)};
    e[2] = rfx_normal(3, 1, rfx_join(f, 1));
    assert_int_equal(ctl_log_raft_append(f->log, e, 3, &ed), 0);
    assert_int_equal(ctl_log_raft_apply(f->log, 2, f->img, &ed), 0);
    assert_int_equal(ctl_log_raft_admitted(f->log)[1], 0xabcdefull);
    /* compaction at the applied index keeps the entry after it */
    assert_int_equal(ctl_log_snapshot(f->log, f->img, &ed), 0);
    rfx_reopen(f, NULL);
    assert_int_equal(ctl_log_raft_snapshot_index(f->log), 2);
    assert_int_equal(ctl_log_raft_last_index(f->log), 3);
    assert_int_equal(ctl_log_raft_admitted(f->log)[1], 0xabcdefull);
    assert_int_equal(ctl_log_raft_apply(f->log, 3, f->img, &ed), 0);
    assert_true(meta_image_equal(f->img, ctl_core_image(f->core)));
    wire_put_u32be(d, 9);
    e[0] = (struct raft_entry){4, 1, RAFT_ENTRY_READMIT, d, sizeof(d)};
    assert_int_equal(ctl_log_raft_append(f->log, e, 1, &ed), 0);
    assert_int_equal(ctl_log_raft_apply(f->log, 4, f->img, &ed), WEIR_ECORRUPT);
}

/* Damage in a version-1 log: a CRC-valid frame with a bad field, or a bad
 * CRC with a whole frame after it, refuses the open; a torn last frame is
 * cut. */
static void test_damage_is_refused_torn_tail_cut(void **state)
{
    struct rfx *f = *state;
    struct raft_entry e[3];
    struct meta_image *img = NULL;
    struct ctl_log_stats st;
    struct ctl_log *l = NULL;
    struct err_detail ed;
    struct stat sb;
    uint8_t byte;
    int fd;

    e[0] = rfx_noop(1, 1);
    e[1] = rfx_noop(2, 1);
    e[2] = rfx_noop(3, 1);
    assert_int_equal(ctl_log_raft_append(f->log, e, 3, &ed), 0);
    ctl_log_close(f->log);
    f->log = NULL;
    assert_int_equal(stat(f->path, &sb), 0);
    assert_int_equal(sb.st_size, 3 * 26);
    fd = open(f->path, O_RDWR);
    assert_true(fd >= 0);
    /* the middle frame's CRC breaks: a whole frame follows */
    assert_int_equal(pread(fd, &byte, 1, 26 + 4), 1);
    byte ^= 1;
    assert_int_equal(pwrite(fd, &byte, 1, 26 + 4), 1);
    assert_int_equal(
        ctl_log_raft_open(f->dir, rfx_voters, 3, &l, &img, &st, &ed),
        WEIR_ECORRUPT);
    assert_non_null(strstr(ed.msg, "damage in the middle"));
    byte ^= 1;
    assert_int_equal(pwrite(fd, &byte, 1, 26 + 4), 1);
    /* a torn last frame is cut */
    assert_int_equal(ftruncate(fd, 3 * 26 - 5), 0);
    (void)close(fd);
    rfx_reopen(f, &st);
    assert_int_equal(ctl_log_raft_last_index(f->log), 2);
    assert_int_equal(st.cut_bytes, 21);
    /* an entry whose index does not follow refuses the open */
    e[0] = rfx_noop(3, 1);
    assert_int_equal(ctl_log_raft_append(f->log, e, 1, &ed), 0);
    ctl_log_close(f->log);
    f->log = NULL;
    {
        struct weir_buf b;
        buf_init(&b);
        e[0] = rfx_noop(7, 1);
        assert_int_equal(ctl_log_frame_put_entry(&b, &e[0], &ed), 0);
        fd = open(f->path, O_WRONLY | O_APPEND);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, b.data, b.len), (ssize_t)b.len);
        (void)close(fd);
        buf_fini(&b);
    }
    assert_int_equal(
        ctl_log_raft_open(f->dir, rfx_voters, 3, &l, &img, &st, &ed),
        WEIR_ECORRUPT);
    /* and a single controller refuses a log of term 1 */
    assert_int_equal(ctl_log_open(f->dir, &l, &img, &st, &ed), WEIR_ECONFIG);
    assert_int_equal(truncate(f->path, 3 * 26), 0);
    rfx_reopen(f, NULL);
    assert_int_equal(ctl_log_raft_last_index(f->log), 3);
}

/* What the core starts from: the snapshot's metadata and every entry;
 * the hard state saved beside the log. */
static void test_raft_start(void **state)
{
    struct rfx *f = *state;
    struct raft_entry e[2];
    struct raft_entry *ents = NULL;
    struct raft_start start;
    struct err_detail ed;

    e[0] = rfx_noop(1, 4);
    e[1] = rfx_normal(2, 4, rfx_join(f, 1));
    assert_int_equal(ctl_log_raft_append(f->log, e, 2, &ed), 0);
    assert_int_equal(ctl_log_raft_start(f->log, &start, &ents), 0);
    assert_int_equal(start.snapshot.index, 0);
    assert_int_equal(start.n_entries, 2);
    assert_int_equal(start.entries[1].index, 2);
    assert_int_equal(start.entries[1].term, 4);
    assert_memory_equal(start.entries[1].data, e[1].data, e[1].len);
    mem_free(ents);
    {
        struct raft_hard_state hs = {.term = 4, .vote = 1, .nonce = 0};
        struct raft_hard_state back;
        bool found = false;
        assert_int_equal(ctl_log_raft_save_hard_state(f->log, &hs, &ed), 0);
        assert_int_equal(ctl_hardstate_load(f->dir, &back, &found, &ed), 0);
        assert_true(found);
        assert_int_equal(back.term, 4);
        assert_int_equal(back.vote, 1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_apply_only_when_committed,
                                        rfx_setup, rfx_teardown),
        cmocka_unit_test_setup_teardown(test_truncate, rfx_setup, rfx_teardown),
        cmocka_unit_test_setup_teardown(test_old_frames_load_and_seal,
                                        rfx_setup, rfx_teardown),
        cmocka_unit_test_setup_teardown(test_install_snapshot, rfx_setup,
                                        rfx_teardown),
        cmocka_unit_test_setup_teardown(
            test_install_crash_keeps_matching_entries, rfx_setup, rfx_teardown),
        cmocka_unit_test_setup_teardown(test_readmit_and_compaction, rfx_setup,
                                        rfx_teardown),
        cmocka_unit_test_setup_teardown(test_damage_is_refused_torn_tail_cut,
                                        rfx_setup, rfx_teardown),
        cmocka_unit_test_setup_teardown(test_raft_start, rfx_setup,
                                        rfx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
