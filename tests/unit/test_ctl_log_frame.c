/* SPDX-License-Identifier: Apache-2.0 */
/* The pure codecs under the controller's Raft log: metadata.log frames
 * (controller/ctl_log_frame.c: both versions, every entry type, strict
 * refusals), the snapshot file's Raft head, and the hard state
 * (controller/ctl_hardstate.c: codec, and the raft-state file in a
 * temporary directory: missing is zeros, round trip, damage refused). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/crc32c.h"
#include "controller/ctl_hardstate.h"
#include "controller/ctl_log_frame.h"

/* A batch body of two records (opaque bytes: the frame codec does not
 * decode records), first offset 5. */
static void tf_batch(struct weir_buf *b)
{
    buf_put_u64be(b, 5);
    buf_put_u32be(b, 2);
    buf_put_u32be(b, 3);
    buf_put(b, "abc", 3);
    buf_put_u32be(b, 1);
    buf_put(b, "d", 1);
}

static void tf_round_trip(const struct raft_entry *e)
{
    struct ctl_log_frame f;
    struct err_detail ed;
    struct weir_buf b;

    buf_init(&b);
    assert_int_equal(ctl_log_frame_put_entry(&b, e, &ed), 0);
    assert_int_equal(ctl_log_frame_decode(b.data, b.len, &f, &ed),
                     CTL_LOG_FRAME_OK);
    assert_int_equal(f.version, 1);
    assert_int_equal(f.frame_bytes, b.len);
    assert_int_equal(f.index, e->index);
    assert_int_equal(f.term, e->term);
    assert_int_equal(f.type, e->type);
    assert_int_equal(f.data.len, e->len);
    if (e->len > 0) {
        assert_memory_equal(f.data.p, e->data, e->len);
    }
    /* every shorter prefix is short, never OK */
    assert_int_equal(ctl_log_frame_decode(b.data, b.len - 1, &f, &ed),
                     CTL_LOG_FRAME_SHORT);
    buf_fini(&b);
}

static void test_entries_round_trip(void **state)
{
    uint8_t readmit[CTL_LOG_READMIT_BYTES];
    struct raft_entry e;
    struct weir_buf batch;

    (void)state;
    buf_init(&batch);
    tf_batch(&batch);
    e.index = 7;
    e.term = 3;
    e.type = RAFT_ENTRY_NORMAL;
    e.data = batch.data;
    e.len = (uint32_t)batch.len;
    tf_round_trip(&e);
    e.type = RAFT_ENTRY_NOOP;
    e.data = NULL;
    e.len = 0;
    tf_round_trip(&e);
    wire_put_u32be(readmit, 2);
    wire_put_u64be(readmit + 4, 0xfeedfacecafeull);
    e.type = RAFT_ENTRY_READMIT;
    e.data = readmit;
    e.len = sizeof(readmit);
    tf_round_trip(&e);
    buf_fini(&batch);
}

/* A version-0 frame (a single controller's batch) decodes as a term-0
 * NORMAL entry with no index of its own. */
static void test_version_0_is_a_term_0_entry(void **state)
{
    struct ctl_log_frame f;
    struct err_detail ed;
    struct weir_buf batch;
    struct weir_buf b;

    (void)state;
    buf_init(&batch);
    buf_init(&b);
    tf_batch(&batch);
    buf_put_u32be(&b, (uint32_t)batch.len);
    buf_put_u32be(&b, crc32c(batch.data, batch.len));
    buf_put(&b, batch.data, batch.len);
    assert_int_equal(ctl_log_frame_decode(b.data, b.len, &f, &ed),
                     CTL_LOG_FRAME_OK);
    assert_int_equal(f.version, 0);
    assert_int_equal(f.index, 0);
    assert_int_equal(f.term, 0);
    assert_int_equal(f.type, RAFT_ENTRY_NORMAL);
    assert_int_equal(f.first, 5);
    assert_int_equal(f.count, 2);
    assert_int_equal(f.data.len, batch.len);
    buf_fini(&batch);
    buf_fini(&b);
}

/* Frame b's body byte `at` set to v, the CRC made to hold again. */
static void tf_poke(struct weir_buf *b, size_t at, uint8_t v)
{
    b->data[CTL_LOG_FRAME_HEAD + at] = v;
    wire_put_u32be(b->data + 4, crc32c(b->data + CTL_LOG_FRAME_HEAD,
                                       b->len - CTL_LOG_FRAME_HEAD));
}

/* CRC-valid frames with a field out of range are refused (BAD_BODY, with
 * a message), not taken for torn ones; a broken CRC or length is told
 * apart. */
static void test_every_field_is_checked(void **state)
{
    static const struct {
        size_t at;
        uint8_t v;
    } pokes[] = {
        {0, 0x80},  /* unknown version */
        {1, 0},     /* type 0 */
        {1, 4},     /* type 4 */
        {9, 0},     /* index 0 */
        {2, 0x40},  /* index at RAFT_LIMIT */
        {10, 0x40}, /* term at RAFT_LIMIT */
    };
    struct ctl_log_frame f;
    struct err_detail ed;
    struct raft_entry e;
    struct weir_buf b;
    size_t i;

    (void)state;
    memset(&e, 0, sizeof(e));
    e.index = 1;
    e.term = 1;
    e.type = RAFT_ENTRY_NOOP;
    for (i = 0; i < sizeof(pokes) / sizeof(pokes[0]); i++) {
        buf_init(&b);
        assert_int_equal(ctl_log_frame_put_entry(&b, &e, &ed), 0);
        tf_poke(&b, pokes[i].at, pokes[i].v);
        err_detail_clear(&ed);
        assert_int_equal(ctl_log_frame_decode(b.data, b.len, &f, &ed),
                         CTL_LOG_FRAME_BAD_BODY);
        assert_int_equal(ed.code, WEIR_ECORRUPT);
        assert_true(ed.msg[0] != '\0');
        buf_fini(&b);
    }
    buf_init(&b);
    assert_int_equal(ctl_log_frame_put_entry(&b, &e, &ed), 0);
    b.data[b.len - 1] ^= 1;
    assert_int_equal(ctl_log_frame_decode(b.data, b.len, &f, &ed),
                     CTL_LOG_FRAME_BAD_CRC);
    wire_put_u32be(b.data, 3);
    assert_int_equal(ctl_log_frame_decode(b.data, b.len, &f, &ed),
                     CTL_LOG_FRAME_BAD_LENGTH);
    buf_fini(&b);
}

/* The encoder refuses what the decoder would: no frame on disk is one
 * that a restart would refuse. */
static void test_encoder_refuses_bad_entries(void **state)
{
    uint8_t readmit[CTL_LOG_READMIT_BYTES] = {0};
    struct err_detail ed;
    struct raft_entry e;
    struct weir_buf b;

    (void)state;
    buf_init(&b);
    memset(&e, 0, sizeof(e));
    e.index = 0;
    e.term = 1;
    e.type = RAFT_ENTRY_NOOP;
    assert_int_equal(ctl_log_frame_put_entry(&b, &e, &ed),
                     WEIR_EINVALID_ARGUMENT);
    e.index = 1;
    e.type = RAFT_ENTRY_NORMAL; /* no batch */
    assert_int_equal(ctl_log_frame_put_entry(&b, &e, &ed),
                     WEIR_EINVALID_ARGUMENT);
    e.type = RAFT_ENTRY_READMIT; /* id 0, nonce 0 */
    e.data = readmit;
    e.len = sizeof(readmit);
    assert_int_equal(ctl_log_frame_put_entry(&b, &e, &ed),
                     WEIR_EINVALID_ARGUMENT);
    e.type = (enum raft_entry_type)9;
    e.len = 0;
    assert_int_equal(ctl_log_frame_put_entry(&b, &e, &ed),
                     WEIR_EINVALID_ARGUMENT);
    assert_int_equal(b.len, 0);
    buf_fini(&b);
}

static void test_snapshot_head_round_trip(void **state)
{
    struct ctl_log_snap_head h;
    struct ctl_log_snap_head back;
    struct err_detail ed;
    struct weir_buf b;
    size_t used = 1;

    (void)state;
    memset(&h, 0, sizeof(h));
    h.index = 42;
    h.term = 3;
    h.admitted[1] = 99;
    buf_init(&b);
    ctl_log_snap_head_put(&b, &h);
    buf_put(&b, "WMSN", 4); /* what follows it */
    assert_int_equal(ctl_log_snap_head_decode(b.data, b.len, &back, &used, &ed),
                     0);
    assert_int_equal(used, b.len - 4);
    assert_memory_equal(&back, &h, sizeof(h));
    /* a file from before Raft: no head, index and term 0 */
    assert_int_equal(
        ctl_log_snap_head_decode(b.data + used, 4, &back, &used, &ed), 0);
    assert_int_equal(used, 0);
    assert_int_equal(back.index, 0);
    /* damage */
    b.data[10] ^= 1;
    assert_int_equal(ctl_log_snap_head_decode(b.data, b.len, &back, &used, &ed),
                     WEIR_ECORRUPT);
    assert_int_equal(ctl_log_snap_head_decode(b.data, 20, &back, &used, &ed),
                     WEIR_ECORRUPT);
    buf_fini(&b);
}

static void tf_hs_equal(const struct raft_hard_state *a,
                        const struct raft_hard_state *b)
{
    assert_int_equal(a->term, b->term);
    assert_int_equal(a->vote, b->vote);
    assert_int_equal(a->nonce, b->nonce);
    assert_int_equal(a->readmit_term, b->readmit_term);
}

static void test_hardstate_codec(void **state)
{
    uint8_t p[CTL_HARDSTATE_BYTES];
    struct raft_hard_state hs = {
        .term = 9, .vote = 3, .nonce = 1234, .readmit_term = 8};
    struct raft_hard_state back;
    struct err_detail ed;
    size_t i;

    (void)state;
    ctl_hardstate_encode(&hs, p);
    assert_int_equal(ctl_hardstate_decode(p, sizeof(p), &back, &ed), 0);
    tf_hs_equal(&back, &hs);
    assert_int_equal(ctl_hardstate_decode(p, sizeof(p) - 1, &back, &ed),
                     WEIR_ECORRUPT);
    for (i = 0; i < sizeof(p); i++) { /* any flipped bit is refused */
        p[i] ^= 0x10;
        assert_int_equal(ctl_hardstate_decode(p, sizeof(p), &back, &ed),
                         WEIR_ECORRUPT);
        assert_int_equal(back.term, 0);
        p[i] ^= 0x10;
    }
    hs.readmit_term = 10; /* readmitted in a term not seen yet */
    ctl_hardstate_encode(&hs, p);
    assert_int_equal(ctl_hardstate_decode(p, sizeof(p), &back, &ed),
                     WEIR_ECORRUPT);
    hs.readmit_term = 8; /* readmitted without a loss */
    hs.nonce = 0;
    ctl_hardstate_encode(&hs, p);
    assert_int_equal(ctl_hardstate_decode(p, sizeof(p), &back, &ed),
                     WEIR_ECORRUPT);
    hs.readmit_term = 0;
    hs.term = 0; /* a vote needs a term */
    ctl_hardstate_encode(&hs, p);
    assert_int_equal(ctl_hardstate_decode(p, sizeof(p), &back, &ed),
                     WEIR_ECORRUPT);
}

static void test_hardstate_file(void **state)
{
    struct raft_hard_state hs = {.term = 4, .vote = 2, .nonce = 77};
    struct raft_hard_state back;
    struct err_detail ed;
    char dir[64];
    char path[128];
    char cmd[128];
    bool found = true;
    FILE *fp;

    (void)state;
    (void)snprintf(dir, sizeof(dir), "/tmp/weir-hs-XXXXXX");
    assert_non_null(mkdtemp(dir));
    (void)snprintf(path, sizeof(path), "%s/%s", dir, CTL_HARDSTATE_FILE);
    assert_int_equal(ctl_hardstate_load(dir, &back, &found, &ed), 0);
    assert_false(found);
    assert_int_equal(back.term + back.vote + back.nonce, 0);
    assert_int_equal(ctl_hardstate_save(dir, &hs, &ed), 0);
    assert_int_equal(ctl_hardstate_load(dir, &back, &found, &ed), 0);
    assert_true(found);
    tf_hs_equal(&back, &hs);
    hs.term = 5;
    hs.vote = 0;
    assert_int_equal(ctl_hardstate_save(dir, &hs, &ed), 0);
    assert_int_equal(ctl_hardstate_load(dir, &back, &found, &ed), 0);
    tf_hs_equal(&back, &hs);
    /* a state the decoder would refuse is never written */
    hs.term = 0;
    hs.vote = 1;
    assert_int_equal(ctl_hardstate_save(dir, &hs, &ed), WEIR_EINVALID_ARGUMENT);
    /* damage: refused, naming the file */
    fp = fopen(path, "r+b");
    assert_non_null(fp);
    assert_int_equal(fseek(fp, 7, SEEK_SET), 0);
    assert_int_equal(fputc(0x55, fp), 0x55);
    assert_int_equal(fclose(fp), 0);
    assert_int_equal(ctl_hardstate_load(dir, &back, &found, &ed),
                     WEIR_ECORRUPT);
    assert_non_null(strstr(ed.msg, CTL_HARDSTATE_FILE));
    assert_int_equal(truncate(path, 3), 0);
    assert_int_equal(ctl_hardstate_load(dir, &back, &found, &ed),
                     WEIR_ECORRUPT);
    (void)snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_entries_round_trip),
        cmocka_unit_test(test_version_0_is_a_term_0_entry),
        cmocka_unit_test(test_every_field_is_checked),
        cmocka_unit_test(test_encoder_refuses_bad_entries),
        cmocka_unit_test(test_snapshot_head_round_trip),
        cmocka_unit_test(test_hardstate_codec),
        cmocka_unit_test(test_hardstate_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
