/* SPDX-License-Identifier: Apache-2.0 */
/* The quorum's wire formats: every message type survives a round trip with
 * its bytes borrowed from the frame, each limit of raft.h is refused as
 * WEIR_EMALFORMED (and refused by the encoder too), and --voters is parsed
 * strictly with messages that name the bad element. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/frame.h"
#include "common/rpc.h"
#include "controller/quorum/raft_codec.h"
#include "controller/quorum/raft_voters.h"

static struct raft_wire codec_wire;

/* Encode m and decode the frame again into codec_wire. */
static int codec_round_trip(const struct raft_msg *m, struct weir_buf *b)
{
    const struct frame_limits lim = {FRAME_DEFAULT_MAX_BYTES,
                                     FRAME_DEFAULT_MAX_HEADER_BYTES};
    struct frame_info fi;
    struct err_detail ed;
    struct weir_slice h;

    buf_init(b);
    assert_int_equal(raft_codec_encode(m, "cluster-1", b, &ed), 0);
    assert_int_equal(frame_decode_prefix(b->data, &lim, &fi, &ed), 0);
    assert_int_equal(b->len, 4 + (size_t)fi.frame_len);
    h.p = b->data + FRAME_PREFIX_BYTES;
    h.len = fi.header_len;
    return raft_codec_decode(h, h.p + h.len, fi.payload_len, &codec_wire, &ed);
}

static void test_vote_round_trip(void **state)
{
    struct raft_msg m = {0};
    struct weir_buf b;

    (void)state;
    m.type = RAFT_MSG_VOTE;
    m.from = 1;
    m.to = 3;
    m.term = 7;
    m.pre_vote = true;
    m.nonce = UINT64_MAX;
    m.index = 42;
    m.log_term = 6;
    assert_int_equal(codec_round_trip(&m, &b), 0);
    assert_int_equal(codec_wire.msg.type, RAFT_MSG_VOTE);
    assert_int_equal(codec_wire.msg.from, 1);
    assert_int_equal(codec_wire.msg.to, 3);
    assert_int_equal(codec_wire.msg.term, 7);
    assert_true(codec_wire.msg.pre_vote);
    assert_true(codec_wire.msg.nonce == UINT64_MAX);
    assert_int_equal(codec_wire.msg.index, 42);
    assert_int_equal(codec_wire.msg.log_term, 6);
    assert_int_equal(codec_wire.msg.n_entries, 0);
    assert_string_equal(codec_wire.cluster_id, "cluster-1");
    buf_fini(&b);
}

static void test_append_entries_borrow_the_payload(void **state)
{
    static const uint8_t d1[] = "first";
    static const uint8_t d3[] = {0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 9};
    struct raft_entry e[3] = {
        {11, 4, RAFT_ENTRY_NORMAL, d1, 5},
        {12, 4, RAFT_ENTRY_NOOP, NULL, 0},
        {13, 5, RAFT_ENTRY_READMIT, d3, sizeof(d3)},
    };
    struct raft_msg m = {0};
    const struct raft_msg *g = &codec_wire.msg;
    struct weir_buf b;

    (void)state;
    m.type = RAFT_MSG_APPEND;
    m.from = 2;
    m.to = 1;
    m.term = 5;
    m.index = 10;
    m.log_term = 4;
    m.commit = 9;
    m.n_entries = 3;
    m.entries = e;
    assert_int_equal(codec_round_trip(&m, &b), 0);
    assert_int_equal(g->n_entries, 3);
    assert_int_equal(g->commit, 9);
    assert_int_equal(g->entries[0].len, 5);
    assert_memory_equal(g->entries[0].data, "first", 5);
    assert_int_equal(g->entries[1].type, RAFT_ENTRY_NOOP);
    assert_int_equal(g->entries[1].len, 0);
    assert_int_equal(g->entries[2].index, 13);
    assert_int_equal(g->entries[2].term, 5);
    assert_memory_equal(g->entries[2].data, d3, sizeof(d3));
    /* borrowed: the bytes are the frame's, at its end */
    assert_ptr_equal(g->entries[2].data + sizeof(d3), b.data + b.len);
    buf_fini(&b);
}

static void test_snapshot_chunk_and_admitted_table(void **state)
{
    static const uint8_t chunk[] = "image-bytes";
    struct raft_msg m = {0};
    struct weir_buf b;

    (void)state;
    m.type = RAFT_MSG_SNAPSHOT;
    m.from = 1;
    m.to = 2;
    m.term = 9;
    m.index = 1000;
    m.log_term = 8;
    m.offset = 4096;
    m.done = true;
    m.data = chunk;
    m.len = sizeof(chunk);
    m.admitted[1] = 77;
    m.admitted[RAFT_MAX_VOTERS - 1] = 5;
    assert_int_equal(codec_round_trip(&m, &b), 0);
    assert_int_equal(codec_wire.msg.len, sizeof(chunk));
    assert_memory_equal(codec_wire.msg.data, chunk, sizeof(chunk));
    assert_true(codec_wire.msg.done);
    assert_int_equal(codec_wire.msg.offset, 4096);
    assert_memory_equal(codec_wire.msg.admitted, m.admitted,
                        sizeof(m.admitted));
    buf_fini(&b);
}

static void test_responses_round_trip(void **state)
{
    struct raft_msg m = {0};
    struct weir_buf b;

    (void)state;
    m.type = RAFT_MSG_APPEND_RESP;
    m.from = 3;
    m.to = 1;
    m.term = 2;
    m.success = true;
    m.match = 99;
    m.hint = 98;
    m.nonce = 12345;
    m.readmitted = true;
    assert_int_equal(codec_round_trip(&m, &b), 0);
    assert_true(codec_wire.msg.success);
    assert_true(codec_wire.msg.readmitted);
    assert_int_equal(codec_wire.msg.match, 99);
    assert_int_equal(codec_wire.msg.hint, 98);
    assert_int_equal(codec_wire.msg.nonce, 12345);
    buf_fini(&b);
    m.type = RAFT_MSG_VOTE_RESP;
    m.granted = true;
    assert_int_equal(codec_round_trip(&m, &b), 0);
    assert_true(codec_wire.msg.granted);
    buf_fini(&b);
    m.type = RAFT_MSG_SNAPSHOT_RESP;
    assert_int_equal(codec_round_trip(&m, &b), 0);
    assert_int_equal(codec_wire.msg.type, RAFT_MSG_SNAPSHOT_RESP);
    buf_fini(&b);
}

/* The encoder refuses what a receiver would: nothing leaves a member that
 * its peers must drop. */
static void test_encoder_refuses_out_of_limit_messages(void **state)
{
    struct raft_entry e = {11, 1, RAFT_ENTRY_NORMAL, NULL, 0};
    struct raft_msg m = {0};
    struct raft_msg bad;
    struct err_detail ed;
    struct weir_buf b;

    (void)state;
    m.type = RAFT_MSG_APPEND;
    m.from = 1;
    m.to = 2;
    m.term = 1;
    m.index = 10;
    buf_init(&b);
    bad = m;
    bad.term = RAFT_LIMIT;
    assert_int_equal(raft_codec_encode(&bad, "c", &b, &ed),
                     WEIR_EINVALID_ARGUMENT);
    bad = m;
    bad.n_entries = RAFT_MAX_BATCH + 1;
    bad.entries = &e;
    assert_int_equal(raft_codec_encode(&bad, "c", &b, &ed),
                     WEIR_EINVALID_ARGUMENT);
    bad = m;
    bad.n_entries = 1;
    bad.entries = &e;
    e.index = 12; /* not the entry after index 10 */
    assert_int_equal(raft_codec_encode(&bad, "c", &b, &ed),
                     WEIR_EINVALID_ARGUMENT);
    bad = m;
    bad.type = RAFT_MSG_VOTE;
    bad.len = 1; /* a chunk on a vote */
    assert_int_equal(raft_codec_encode(&bad, "c", &b, &ed),
                     WEIR_EINVALID_ARGUMENT);
    bad = m;
    bad.to = bad.from;
    assert_int_equal(raft_codec_encode(&bad, "c", &b, &ed),
                     WEIR_EINVALID_ARGUMENT);
    assert_int_equal(raft_codec_encode(&m, "", &b, &ed),
                     WEIR_EINVALID_ARGUMENT);
    assert_int_equal(b.len, 0);
    buf_fini(&b);
}

/* A decoded RaftMessage body with one field broken at a time. */
static void test_decoder_refuses_each_limit(void **state)
{
    Weir__RaftMessage rm = WEIR__RAFT_MESSAGE__INIT;
    Weir__RaftMessage r2;
    Weir__RaftEntryHeader eh = WEIR__RAFT_ENTRY_HEADER__INIT;
    Weir__RaftEntryHeader *ehp = &eh;
    uint64_t adm[RAFT_MAX_VOTERS + 1] = {0};
    uint8_t payload[4] = {1, 2, 3, 4};
    struct err_detail ed;

    (void)state;
    rm.cluster_id = "c";
    rm.voter_id = 1;
    rm.to = 2;
    rm.type = RAFT_MSG_APPEND;
    rm.term = 3;
    rm.index = 5;
    eh.index = 6;
    eh.term = 3;
    eh.type = RAFT_ENTRY_NORMAL;
    eh.len = 4;
    rm.n_entries = 1;
    rm.entries = &ehp;
    assert_int_equal(raft_codec_decode_body(&rm, payload, 4, &codec_wire, &ed),
                     0);
    assert_ptr_equal(codec_wire.msg.entries[0].data, payload);
    /* sizes must add up exactly */
    assert_int_equal(raft_codec_decode_body(&rm, payload, 3, &codec_wire, &ed),
                     WEIR_EMALFORMED);
    assert_non_null(strstr(ed.msg, "add up"));
    r2 = rm;
    r2.type = 9;
    assert_int_equal(raft_codec_decode_body(&r2, payload, 4, &codec_wire, &ed),
                     WEIR_EMALFORMED);
    r2 = rm;
    r2.commit = RAFT_LIMIT;
    assert_int_equal(raft_codec_decode_body(&r2, payload, 4, &codec_wire, &ed),
                     WEIR_EMALFORMED);
    assert_non_null(strstr(ed.msg, "commit"));
    r2 = rm;
    r2.voter_id = 0;
    assert_int_equal(raft_codec_decode_body(&r2, payload, 4, &codec_wire, &ed),
                     WEIR_EMALFORMED);
    r2 = rm;
    r2.cluster_id = "";
    assert_int_equal(raft_codec_decode_body(&r2, payload, 4, &codec_wire, &ed),
                     WEIR_EMALFORMED);
    r2 = rm;
    r2.n_admitted = RAFT_MAX_VOTERS + 1;
    r2.admitted = adm;
    assert_int_equal(raft_codec_decode_body(&r2, payload, 4, &codec_wire, &ed),
                     WEIR_EMALFORMED);
    r2 = rm;
    r2.n_entries = RAFT_MAX_BATCH + 1;
    assert_int_equal(raft_codec_decode_body(&r2, payload, 4, &codec_wire, &ed),
                     WEIR_EMALFORMED);
    eh.len = RAFT_MAX_ENTRY_BYTES + 1;
    assert_int_equal(raft_codec_decode_body(&rm, payload, 4, &codec_wire, &ed),
                     WEIR_EMALFORMED);
    eh.len = 4;
    eh.type = 0;
    assert_int_equal(raft_codec_decode_body(&rm, payload, 4, &codec_wire, &ed),
                     WEIR_EMALFORMED);
    eh.type = RAFT_ENTRY_NORMAL;
    rm.type = RAFT_MSG_SNAPSHOT;
    rm.n_entries = 0;
    rm.chunk_len = RAFT_SNAPSHOT_CHUNK + 1;
    assert_int_equal(raft_codec_decode_body(&rm, NULL, 0, &codec_wire, &ed),
                     WEIR_EMALFORMED);
    rm.chunk_len = 4;
    assert_int_equal(raft_codec_decode_body(&rm, payload, 4, &codec_wire, &ed),
                     0);
    rm.type = RAFT_MSG_VOTE;
    assert_int_equal(raft_codec_decode_body(&rm, payload, 4, &codec_wire, &ed),
                     WEIR_EMALFORMED);
}

static void test_decode_refuses_another_call(void **state)
{
    Weir__Request r = WEIR__REQUEST__INIT;
    Weir__MetadataRequest md = WEIR__METADATA_REQUEST__INIT;
    struct err_detail ed;
    struct weir_buf b;
    struct weir_slice h;

    (void)state;
    r.body_case = WEIR__REQUEST__BODY_METADATA;
    r.metadata = &md;
    buf_init(&b);
    assert_int_equal(rpc_encode_request(&r, 0, &b), 0);
    h.p = b.data + FRAME_PREFIX_BYTES;
    h.len = b.len - FRAME_PREFIX_BYTES;
    assert_int_equal(raft_codec_decode(h, NULL, 0, &codec_wire, &ed),
                     WEIR_EMALFORMED);
    assert_non_null(strstr(ed.msg, "metadata"));
    buf_fini(&b);
}

static void test_voters_parse(void **state)
{
    struct raft_voters vs;
    struct err_detail ed;

    (void)state;
    assert_int_equal(
        raft_voters_parse("1@10.0.0.1:9093,2@ctl-b.example:9094,3@[::1]:9095",
                          &vs, &ed),
        0);
    assert_int_equal(vs.n, 3);
    assert_int_equal(vs.v[0].id, 1);
    assert_string_equal(vs.v[0].address, "10.0.0.1:9093");
    assert_string_equal(vs.v[1].host, "ctl-b.example");
    assert_int_equal(vs.v[1].port, 9094);
    assert_string_equal(vs.v[2].host, "::1");
    assert_string_equal(vs.v[2].address, "[::1]:9095");
    assert_ptr_equal(raft_voters_find(&vs, 3), &vs.v[2]);
    assert_null(raft_voters_find(&vs, 4));
}

static void voters_refused(const char *text, const char *needle)
{
    struct raft_voters vs;
    struct err_detail ed;

    err_detail_clear(&ed);
    assert_int_equal(raft_voters_parse(text, &vs, &ed), WEIR_ECONFIG);
    assert_int_equal(vs.n, 0);
    if (strstr(ed.msg, needle) == NULL) {
        fail_msg("'%s': message '%s' lacks '%s'", text, ed.msg, needle);
    }
}

static void test_voters_refusals_name_the_element(void **state)
{
    (void)state;
    voters_refused("", "empty");
    voters_refused("1@a:1,2@b:0", "element 2 '2@b:0': port");
    voters_refused("1@a:1,2@b:65536", "port");
    voters_refused("1@a:1,1@b:2", "element 2 '1@b:2': id given twice");
    voters_refused("1@a:1,2@A:1", "address given twice");
    voters_refused("0@a:1", "id must be");
    voters_refused("2147483648@a:1", "id must be");
    voters_refused("01@a:1", "id must be");
    voters_refused("1@a:1,,2@b:1", "element 2 '': empty");
    voters_refused("1@a:1,", "element 2");
    voters_refused("1@a:1, 2@b:1", "element 2");
    voters_refused("1a:1", "ID@HOST:PORT");
    voters_refused("1@::1:9", "brackets");
    voters_refused("1@[::g]:9", "not an IPv6");
    voters_refused("1@256.1.1.1:9", "neither a name");
    voters_refused("1@a_b:9", "neither a name");
    voters_refused("1@h:1,2@h:2,3@h:3,4@h:4,5@h:5,6@h:6,7@h:7,8@h:8",
                   "element 8 '8@h:8': more than 7");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vote_round_trip),
        cmocka_unit_test(test_append_entries_borrow_the_payload),
        cmocka_unit_test(test_snapshot_chunk_and_admitted_table),
        cmocka_unit_test(test_responses_round_trip),
        cmocka_unit_test(test_encoder_refuses_out_of_limit_messages),
        cmocka_unit_test(test_decoder_refuses_each_limit),
        cmocka_unit_test(test_decode_refuses_another_call),
        cmocka_unit_test(test_voters_parse),
        cmocka_unit_test(test_voters_refusals_name_the_element),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
