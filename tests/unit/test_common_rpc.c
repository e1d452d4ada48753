/* SPDX-License-Identifier: Apache-2.0 */
/* RPC envelopes: each call encodes into a frame and decodes back with its
 * fields intact; semantic checks (payload sizes, acks, counts) and unknown
 * calls give the documented codes, with the message still readable where
 * the caller needs the correlation id to answer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/frame.h"
#include "common/mem.h"
#include "common/rpc.h"

static const struct frame_limits rt_lim = {FRAME_DEFAULT_MAX_BYTES,
                                           FRAME_DEFAULT_MAX_HEADER_BYTES};

/* Encode r, check the prefix, decode the header back. */
static int rt_request(const Weir__Request *r,
                      uint32_t payload_len,
                      Weir__Request **out,
                      struct err_detail *ed)
{
    struct weir_buf b;
    struct frame_info fi;
    struct weir_slice hdr;
    int rv;

    buf_init(&b);
    assert_int_equal(rpc_encode_request(r, payload_len, &b), 0);
    assert_int_equal(frame_decode_prefix(b.data, &rt_lim, &fi, NULL), 0);
    assert_int_equal(fi.payload_len, payload_len);
    assert_int_equal(b.len, FRAME_PREFIX_BYTES + fi.header_len);
    hdr.p = b.data + FRAME_PREFIX_BYTES;
    hdr.len = fi.header_len;
    rv = rpc_request_decode(hdr, payload_len, out, ed);
    buf_fini(&b);
    return rv;
}

static int rt_response(const Weir__Response *r,
                       uint32_t payload_len,
                       Weir__Response **out,
                       struct err_detail *ed)
{
    struct weir_buf b;
    struct frame_info fi;
    struct weir_slice hdr;
    int rv;

    buf_init(&b);
    assert_int_equal(rpc_encode_response(r, payload_len, &b), 0);
    assert_int_equal(frame_decode_prefix(b.data, &rt_lim, &fi, NULL), 0);
    assert_int_equal(fi.payload_len, payload_len);
    hdr.p = b.data + FRAME_PREFIX_BYTES;
    hdr.len = fi.header_len;
    rv = rpc_response_decode(hdr, payload_len, out, ed);
    buf_fini(&b);
    return rv;
}

static void test_metadata_request_round_trip(void **state)
{
    Weir__Request r = WEIR__REQUEST__INIT;
    Weir__MetadataRequest m = WEIR__METADATA_REQUEST__INIT;
    char *topics[] = {"orders", "payments"};
    Weir__Request *d;

    (void)state;
    m.n_topics = 2;
    m.topics = topics;
    m.include_configs = true;
    r.correlation_id = 7;
    r.client_id = "cli-1";
    r.body_case = WEIR__REQUEST__BODY_METADATA;
    r.metadata = &m;
    assert_int_equal(rt_request(&r, 0, &d, NULL), 0);
    assert_int_equal(d->correlation_id, 7);
    assert_string_equal(d->client_id, "cli-1");
    assert_int_equal(d->body_case, WEIR__REQUEST__BODY_METADATA);
    assert_int_equal(d->metadata->n_topics, 2);
    assert_string_equal(d->metadata->topics[1], "payments");
    assert_true(d->metadata->include_configs);
    assert_false(d->metadata->all_topics);
    assert_string_equal(rpc_api_name(d->body_case), "metadata");
    rpc_request_free(d);
}

static void test_topic_admin_requests_round_trip(void **state)
{
    Weir__Request r = WEIR__REQUEST__INIT;
    Weir__CreateTopicsRequest c = WEIR__CREATE_TOPICS_REQUEST__INIT;
    Weir__CreateTopic t = WEIR__CREATE_TOPIC__INIT;
    Weir__CreateTopic *tp = &t;
    Weir__ConfigEntry ce = WEIR__CONFIG_ENTRY__INIT;
    Weir__ConfigEntry *cep = &ce;
    Weir__DeleteTopicsRequest del = WEIR__DELETE_TOPICS_REQUEST__INIT;
    char *names[] = {"old"};
    Weir__Request *d;

    (void)state;
    ce.key = "cleanup.policy";
    ce.value = "compact";
    t.name = "events";
    t.partitions = 6;
    t.replication_factor = 3;
    t.n_configs = 1;
    t.configs = &cep;
    c.n_topics = 1;
    c.topics = &tp;
    c.validate_only = true;
    r.correlation_id = 8;
    r.body_case = WEIR__REQUEST__BODY_CREATE_TOPICS;
    r.create_topics = &c;
    assert_int_equal(rt_request(&r, 0, &d, NULL), 0);
    assert_int_equal(d->create_topics->n_topics, 1);
    assert_string_equal(d->create_topics->topics[0]->name, "events");
    assert_int_equal(d->create_topics->topics[0]->partitions, 6);
    assert_int_equal(d->create_topics->topics[0]->replication_factor, 3);
    assert_string_equal(d->create_topics->topics[0]->configs[0]->value,
                        "compact");
    assert_true(d->create_topics->validate_only);
    assert_string_equal(rpc_api_name(d->body_case), "create_topics");
    rpc_request_free(d);

    del.n_names = 1;
    del.names = names;
    r.body_case = WEIR__REQUEST__BODY_DELETE_TOPICS;
    r.delete_topics = &del;
    assert_int_equal(rt_request(&r, 0, &d, NULL), 0);
    assert_int_equal(d->body_case, WEIR__REQUEST__BODY_DELETE_TOPICS);
    assert_string_equal(d->delete_topics->names[0], "old");
    assert_string_equal(rpc_api_name(d->body_case), "delete_topics");
    rpc_request_free(d);
}

/* Produce to two partitions carrying 100 and 50 payload bytes. */
static void rt_produce_init(Weir__ProduceRequest *p,
                            Weir__ProducePartition *pp,
                            Weir__ProducePartition **ptrs,
                            int32_t acks)
{
    Weir__ProduceRequest pinit = WEIR__PRODUCE_REQUEST__INIT;
    Weir__ProducePartition ppinit = WEIR__PRODUCE_PARTITION__INIT;

    *p = pinit;
    pp[0] = ppinit;
    pp[1] = ppinit;
    pp[0].topic = "t";
    pp[0].partition = 0;
    pp[0].payload_bytes = 100;
    pp[1].topic = "t";
    pp[1].partition = 1;
    pp[1].payload_bytes = 50;
    ptrs[0] = &pp[0];
    ptrs[1] = &pp[1];
    p->acks = acks;
    p->timeout_ms = 3000;
    p->n_partitions = 2;
    p->partitions = ptrs;
}

static void test_produce_request_round_trip(void **state)
{
    Weir__Request r = WEIR__REQUEST__INIT;
    Weir__ProduceRequest p;
    Weir__ProducePartition pp[2];
    Weir__ProducePartition *ptrs[2];
    Weir__Request *d;
    static const int32_t acks[] = {0, 1, -1};
    size_t i;

    (void)state;
    for (i = 0; i < 3; i++) {
        rt_produce_init(&p, pp, ptrs, acks[i]);
        r.correlation_id = 9;
        r.body_case = WEIR__REQUEST__BODY_PRODUCE;
        r.produce = &p;
        assert_int_equal(rt_request(&r, 150, &d, NULL), 0);
        assert_int_equal(d->produce->acks, acks[i]);
        assert_int_equal(d->produce->timeout_ms, 3000);
        assert_int_equal(d->produce->n_partitions, 2);
        assert_int_equal(d->produce->partitions[0]->payload_bytes, 100);
        assert_int_equal(d->produce->partitions[1]->partition, 1);
        rpc_request_free(d);
    }
}

static void test_fetch_and_list_offsets_round_trip(void **state)
{
    Weir__Request r = WEIR__REQUEST__INIT;
    Weir__FetchRequest f = WEIR__FETCH_REQUEST__INIT;
    Weir__FetchPartition fp = WEIR__FETCH_PARTITION__INIT;
    Weir__FetchPartition *fpp = &fp;
    Weir__ListOffsetsRequest lo = WEIR__LIST_OFFSETS_REQUEST__INIT;
    Weir__ListOffsetsPartition lop = WEIR__LIST_OFFSETS_PARTITION__INIT;
    Weir__ListOffsetsPartition *lopp = &lop;
    Weir__Request *d;

    (void)state;
    fp.topic = "t";
    fp.partition = 2;
    fp.fetch_offset = INT64_MAX;
    fp.partition_max_bytes = 1 << 20;
    fp.current_leader_epoch = -1;
    f.max_wait_ms = 500;
    f.min_bytes = 1;
    f.max_bytes = 1 << 22;
    f.n_partitions = 1;
    f.partitions = &fpp;
    f.replica_id = -1;
    r.correlation_id = UINT32_MAX;
    r.body_case = WEIR__REQUEST__BODY_FETCH;
    r.fetch = &f;
    assert_int_equal(rt_request(&r, 0, &d, NULL), 0);
    assert_int_equal(d->correlation_id, UINT32_MAX);
    assert_true(d->fetch->partitions[0]->fetch_offset == INT64_MAX);
    assert_int_equal(d->fetch->partitions[0]->current_leader_epoch, -1);
    assert_int_equal(d->fetch->replica_id, -1);
    assert_int_equal(d->fetch->max_wait_ms, 500);
    assert_string_equal(rpc_api_name(d->body_case), "fetch");
    rpc_request_free(d);

    lop.topic = "t";
    lop.partition = 0;
    lop.timestamp = -2;
    lo.n_partitions = 1;
    lo.partitions = &lopp;
    r.body_case = WEIR__REQUEST__BODY_LIST_OFFSETS;
    r.list_offsets = &lo;
    assert_int_equal(rt_request(&r, 0, &d, NULL), 0);
    assert_int_equal(d->list_offsets->partitions[0]->timestamp, -2);
    assert_string_equal(rpc_api_name(d->body_case), "list_offsets");
    rpc_request_free(d);
}

static void test_produce_payload_sizes_must_add_up(void **state)
{
    Weir__Request r = WEIR__REQUEST__INIT;
    Weir__ProduceRequest p;
    Weir__ProducePartition pp[2];
    Weir__ProducePartition *ptrs[2];
    Weir__Request *d;
    struct err_detail ed;

    (void)state;
    rt_produce_init(&p, pp, ptrs, 1);
    r.correlation_id = 31;
    r.body_case = WEIR__REQUEST__BODY_PRODUCE;
    r.produce = &p;
    assert_int_equal(rt_request(&r, 149, &d, &ed), WEIR_EINVALID_REQUEST);
    assert_non_null(d); /* still answerable */
    assert_int_equal(d->correlation_id, 31);
    assert_non_null(strstr(ed.msg, "150"));
    rpc_request_free(d);
    assert_int_equal(rt_request(&r, 151, &d, &ed), WEIR_EINVALID_REQUEST);
    rpc_request_free(d);
    assert_int_equal(rt_request(&r, 0, &d, &ed), WEIR_EINVALID_REQUEST);
    rpc_request_free(d);
    /* sizes that would overflow 32 bits must not wrap to a match */
    pp[0].payload_bytes = UINT32_MAX;
    pp[1].payload_bytes = 1;
    assert_int_equal(rt_request(&r, 0, &d, &ed), WEIR_EINVALID_REQUEST);
    rpc_request_free(d);
    /* no partitions, but a payload */
    p.n_partitions = 0;
    assert_int_equal(rt_request(&r, 1, &d, &ed), WEIR_EINVALID_REQUEST);
    rpc_request_free(d);
}

static void test_produce_acks_out_of_range(void **state)
{
    static const int32_t bad[] = {2, -2, 100, INT32_MIN, INT32_MAX};
    Weir__Request r = WEIR__REQUEST__INIT;
    Weir__ProduceRequest p;
    Weir__ProducePartition pp[2];
    Weir__ProducePartition *ptrs[2];
    Weir__Request *d;
    struct err_detail ed;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        rt_produce_init(&p, pp, ptrs, bad[i]);
        r.correlation_id = 5;
        r.body_case = WEIR__REQUEST__BODY_PRODUCE;
        r.produce = &p;
        assert_int_equal(rt_request(&r, 150, &d, &ed), WEIR_EINVALID_REQUEST);
        assert_non_null(strstr(ed.msg, "acks"));
        assert_int_equal(d->correlation_id, 5);
        rpc_request_free(d);
    }
}

static void test_payload_on_a_call_without_one(void **state)
{
    Weir__Request r = WEIR__REQUEST__INIT;
    Weir__MetadataRequest m = WEIR__METADATA_REQUEST__INIT;
    Weir__Request *d;

    (void)state;
    r.body_case = WEIR__REQUEST__BODY_METADATA;
    r.metadata = &m;
    assert_int_equal(rt_request(&r, 1, &d, NULL), WEIR_EINVALID_REQUEST);
    assert_non_null(d);
    rpc_request_free(d);
}

static void test_too_many_entries(void **state)
{
    Weir__Request r = WEIR__REQUEST__INIT;
    Weir__FetchRequest f = WEIR__FETCH_REQUEST__INIT;
    Weir__FetchPartition fp = WEIR__FETCH_PARTITION__INIT;
    Weir__FetchPartition **many;
    Weir__Request *d;
    size_t i;
    size_t n = RPC_MAX_PARTITIONS + 1;

    (void)state;
    many = mem_malloc(n * sizeof(*many));
    assert_non_null(many);
    for (i = 0; i < n; i++) {
        many[i] = &fp;
    }
    f.n_partitions = n;
    f.partitions = many;
    r.body_case = WEIR__REQUEST__BODY_FETCH;
    r.fetch = &f;
    assert_int_equal(rt_request(&r, 0, &d, NULL), WEIR_EINVALID_REQUEST);
    rpc_request_free(d);
    f.n_partitions = RPC_MAX_PARTITIONS;
    assert_int_equal(rt_request(&r, 0, &d, NULL), 0);
    rpc_request_free(d);
    mem_free(many);
}

static void test_unknown_call_is_unsupported_with_correlation_id(void **state)
{
    /* correlation_id = 42, then field 99 (a newer client's call) as an
     * empty length-delimited message: tag (99 << 3 | 2) = 0x9a 0x06 */
    static const uint8_t newer[] = {0x08, 0x2a, 0x9a, 0x06, 0x00};
    struct weir_slice s = {newer, sizeof(newer)};
    struct weir_slice empty = {newer, 0};
    Weir__Request *d;
    struct err_detail ed;

    (void)state;
    assert_int_equal(rpc_request_decode(s, 0, &d, &ed), WEIR_EUNSUPPORTED_API);
    assert_int_equal(ed.code, WEIR_EUNSUPPORTED_API);
    assert_non_null(d);
    assert_int_equal(d->correlation_id, 42);
    assert_int_equal(d->body_case, WEIR__REQUEST__BODY__NOT_SET);
    assert_string_equal(rpc_api_name(d->body_case), "unknown");
    rpc_request_free(d);
    /* no body at all: same answer */
    assert_int_equal(rpc_request_decode(empty, 0, &d, &ed),
                     WEIR_EUNSUPPORTED_API);
    assert_non_null(d);
    assert_int_equal(d->correlation_id, 0);
    rpc_request_free(d);
}

static void test_garbage_header_is_malformed(void **state)
{
    static const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    /* client_id claims 5 bytes, 1 follows */
    static const uint8_t cut[] = {0x08, 0x01, 0x12, 0x05, 'a'};
    /* correlation_id (varint field) sent as length-delimited */
    static const uint8_t wiretype[] = {0x0a, 0x01, 0x00};
    /* a varint that never ends */
    static const uint8_t varint[] = {0x08, 0x80, 0x80, 0x80, 0x80, 0x80,
                                     0x80, 0x80, 0x80, 0x80, 0x80, 0x80};
    /* produce body whose inner length runs past the header */
    static const uint8_t inner[] = {0x6a, 0x03, 0x08, 0x01};
    /* field number 0 in an over-long tag (0x80 0x00), which protobuf-c
     * alone would keep as an unknown field; at top level and nested in a
     * ProducePartition (found by fuzz_envelope) */
    static const uint8_t zero_tag[] = {0x08, 0x07, 0x80, 0x00, 0x00};
    static const uint8_t zero_nested_rq[] = {0x08, 0x01, 0x6a, 0x05, 0x1a,
                                             0x03, 0x80, 0x00, 0x00};
    static const uint8_t zero_nested_rs[] = {0x08, 0x01, 0x6a, 0x05, 0x0a,
                                             0x03, 0x80, 0x00, 0x00};
    struct weir_slice nested_rq = {zero_nested_rq, sizeof(zero_nested_rq)};
    struct weir_slice nested_rs = {zero_nested_rs, sizeof(zero_nested_rs)};
    const struct {
        const uint8_t *p;
        size_t n;
    } cases[] = {{junk, sizeof(junk)},         {cut, sizeof(cut)},
                 {wiretype, sizeof(wiretype)}, {varint, sizeof(varint)},
                 {inner, sizeof(inner)},       {zero_tag, sizeof(zero_tag)}};
    struct err_detail ed;
    Weir__Request *rq;
    Weir__Response *rs;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct weir_slice s = {cases[i].p, cases[i].n};
        rq = (Weir__Request *)&ed; /* must be overwritten with NULL */
        assert_int_equal(rpc_request_decode(s, 0, &rq, &ed), WEIR_EMALFORMED);
        assert_null(rq);
        rs = (Weir__Response *)&ed;
        assert_int_equal(rpc_response_decode(s, 0, &rs, &ed), WEIR_EMALFORMED);
        assert_null(rs);
    }
    assert_int_equal(rpc_request_decode(nested_rq, 0, &rq, &ed),
                     WEIR_EMALFORMED);
    assert_null(rq);
    assert_int_equal(rpc_response_decode(nested_rs, 0, &rs, &ed),
                     WEIR_EMALFORMED);
    assert_null(rs);
}

static void test_responses_round_trip(void **state)
{
    Weir__Response r = WEIR__RESPONSE__INIT;
    Weir__FetchResponse f = WEIR__FETCH_RESPONSE__INIT;
    Weir__FetchPartitionResult fr[2] = {WEIR__FETCH_PARTITION_RESULT__INIT,
                                        WEIR__FETCH_PARTITION_RESULT__INIT};
    Weir__FetchPartitionResult *frp[2] = {&fr[0], &fr[1]};
    Weir__Response *d;
    struct err_detail ed;

    (void)state;
    /* request-level error, no body */
    r.correlation_id = 11;
    r.error_code = WEIR_EUNSUPPORTED_API;
    r.error_message = "unknown call";
    assert_int_equal(rt_response(&r, 0, &d, NULL), 0);
    assert_int_equal(d->correlation_id, 11);
    assert_int_equal(d->error_code, WEIR_EUNSUPPORTED_API);
    assert_string_equal(d->error_message, "unknown call");
    rpc_response_free(d);

    fr[0].topic = "t";
    fr[0].payload_bytes = 700;
    fr[0].high_watermark = 12;
    fr[1].topic = "t";
    fr[1].partition = 1;
    fr[1].error_code = WEIR_ENOT_LEADER;
    f.n_partitions = 2;
    f.partitions = frp;
    r.error_code = 0;
    r.body_case = WEIR__RESPONSE__BODY_FETCH;
    r.fetch = &f;
    assert_int_equal(rt_response(&r, 700, &d, NULL), 0);
    assert_int_equal(d->fetch->partitions[0]->payload_bytes, 700);
    assert_int_equal(d->fetch->partitions[0]->high_watermark, 12);
    assert_int_equal(d->fetch->partitions[1]->error_code, WEIR_ENOT_LEADER);
    rpc_response_free(d);
    /* the payload the frame carries must match */
    assert_int_equal(rt_response(&r, 699, &d, &ed), WEIR_EMALFORMED);
    assert_non_null(d);
    assert_int_equal(d->correlation_id, 11);
    rpc_response_free(d);
    /* a body without payload fields carries no payload */
    r.body_case = WEIR__RESPONSE__BODY__NOT_SET;
    assert_int_equal(rt_response(&r, 1, &d, &ed), WEIR_EMALFORMED);
    rpc_response_free(d);
}

static void test_encode_refuses_frames_beyond_32_bits(void **state)
{
    Weir__Request r = WEIR__REQUEST__INIT;
    Weir__MetadataRequest m = WEIR__METADATA_REQUEST__INIT;
    struct weir_buf b;
    size_t hlen;

    (void)state;
    r.correlation_id = 1;
    r.body_case = WEIR__REQUEST__BODY_METADATA;
    r.metadata = &m;
    hlen = weir__request__get_packed_size(&r);
    buf_init(&b);
    /* frame_len = 4 + hlen + payload must fit in a u32 */
    assert_int_equal(rpc_encode_request(&r, UINT32_MAX, &b),
                     WEIR_EFRAME_TOO_LARGE);
    assert_int_equal(rpc_encode_request(&r, UINT32_MAX - 3, &b),
                     WEIR_EFRAME_TOO_LARGE);
    assert_int_equal(
        rpc_encode_request(&r, UINT32_MAX - 4 - (uint32_t)hlen + 1, &b),
        WEIR_EFRAME_TOO_LARGE);
    assert_int_equal(b.len, 0);
    assert_int_equal(
        rpc_encode_request(&r, UINT32_MAX - 4 - (uint32_t)hlen, &b), 0);
    assert_int_equal(wire_get_u32be(b.data), UINT32_MAX);
    buf_fini(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metadata_request_round_trip),
        cmocka_unit_test(test_topic_admin_requests_round_trip),
        cmocka_unit_test(test_produce_request_round_trip),
        cmocka_unit_test(test_fetch_and_list_offsets_round_trip),
        cmocka_unit_test(test_produce_payload_sizes_must_add_up),
        cmocka_unit_test(test_produce_acks_out_of_range),
        cmocka_unit_test(test_payload_on_a_call_without_one),
        cmocka_unit_test(test_too_many_entries),
        cmocka_unit_test(test_unknown_call_is_unsupported_with_correlation_id),
        cmocka_unit_test(test_garbage_header_is_malformed),
        cmocka_unit_test(test_responses_round_trip),
        cmocka_unit_test(test_encode_refuses_frames_beyond_32_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
