/* SPDX-License-Identifier: Apache-2.0 */
#include "common/rpc.h"

#include "common/frame.h"
#include "common/mem.h"

static void *rpc_alloc(void *ctx, size_t n)
{
    (void)ctx;
    return mem_malloc(n);
}

static void rpc_free_fn(void *ctx, void *p)
{
    (void)ctx;
    mem_free(p);
}

ProtobufCAllocator rpc_allocator = {rpc_alloc, rpc_free_fn, NULL};

/* Decoders unpack through this one: it remembers a failed allocation, so
 * out of memory (retriable) is not reported as a malformed message.
 * Memory from it is freed through rpc_allocator (same functions). */
static void *rpc_alloc_noting(void *ctx, size_t n)
{
    void *p = mem_malloc(n);

    if (p == NULL) {
        *(bool *)ctx = true;
    }
    return p;
}

/* Nesting bound for rpc_has_field_zero: weir.proto has no message that
 * contains itself, so real depth is small; this guards a future one. */
#define RPC_MAX_DEPTH 16

/* protobuf-c rejects a tag whose first byte has field number 0 but not an
 * over-long one (0x80 0x00), which it keeps as an unknown field with tag 0;
 * repacked, that message is bytes protobuf-c itself refuses. Field number
 * 0 is invalid in every protobuf message, so the decoders refuse it. */
static bool rpc_has_field_zero(const ProtobufCMessage *m, unsigned depth)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    const char *base = (const char *)m;
    const ProtobufCFieldDescriptor *f;
    ProtobufCMessage *const *subs;
    size_t n;
    size_t k;
    unsigned i;

    if (depth > RPC_MAX_DEPTH) {
        return true;
    }
    for (i = 0; i < m->n_unknown_fields; i++) {
        if (m->unknown_fields[i].tag == 0) {
            return true;
        }
    }
    for (i = 0; i < d->n_fields; i++) {
        f = &d->fields[i];
        if (f->type != PROTOBUF_C_TYPE_MESSAGE) {
            continue;
        }
        if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) != 0 &&
            *(const uint32_t *)(const void *)(base + f->quantifier_offset) !=
                f->id) {
            continue; /* another member of the oneof is set */
        }
        /* a repeated field is (count, array); a single one, one pointer */
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            n = *(const size_t *)(const void *)(base + f->quantifier_offset);
            subs = *(ProtobufCMessage *const *const *)(const void *)(base +
                                                                     f->offset);
        } else {
            n = 1;
            subs = (ProtobufCMessage *const *)(const void *)(base + f->offset);
        }
        for (k = 0; k < n; k++) {
            /* NOLINTNEXTLINE(misc-no-recursion): bounded by depth */
            if (subs[k] != NULL && rpc_has_field_zero(subs[k], depth + 1)) {
                return true;
            }
        }
    }
    return false;
}

const char *rpc_api_name(Weir__Request__BodyCase c)
{
    switch (c) {
    case WEIR__REQUEST__BODY_METADATA:
        return "metadata";
    case WEIR__REQUEST__BODY_CREATE_TOPICS:
        return "create_topics";
    case WEIR__REQUEST__BODY_DELETE_TOPICS:
        return "delete_topics";
    case WEIR__REQUEST__BODY_PRODUCE:
        return "produce";
    case WEIR__REQUEST__BODY_FETCH:
        return "fetch";
    case WEIR__REQUEST__BODY_LIST_OFFSETS:
        return "list_offsets";
    case WEIR__REQUEST__BODY_INIT_PRODUCER_ID:
        return "init_producer_id";
    case WEIR__REQUEST__BODY_REGISTER_BROKER:
        return "register_broker";
    case WEIR__REQUEST__BODY_BROKER_HEARTBEAT:
        return "broker_heartbeat";
    case WEIR__REQUEST__BODY_FETCH_METADATA:
        return "fetch_metadata";
    case WEIR__REQUEST__BODY_ALTER_ISR:
        return "alter_isr";
    case WEIR__REQUEST__BODY_ALLOCATE_PRODUCER_IDS:
        return "allocate_producer_ids";
    case WEIR__REQUEST__BODY_FIND_COORDINATOR:
        return "find_coordinator";
    case WEIR__REQUEST__BODY_JOIN_GROUP:
        return "join_group";
    case WEIR__REQUEST__BODY_SYNC_GROUP:
        return "sync_group";
    case WEIR__REQUEST__BODY_HEARTBEAT:
        return "heartbeat";
    case WEIR__REQUEST__BODY_LEAVE_GROUP:
        return "leave_group";
    case WEIR__REQUEST__BODY_OFFSET_COMMIT:
        return "offset_commit";
    case WEIR__REQUEST__BODY_OFFSET_FETCH:
        return "offset_fetch";
    case WEIR__REQUEST__BODY_LIST_GROUPS:
        return "list_groups";
    case WEIR__REQUEST__BODY_DESCRIBE_GROUPS:
        return "describe_groups";
    case WEIR__REQUEST__BODY_DELETE_GROUPS:
        return "delete_groups";
    case WEIR__REQUEST__BODY_SASL_HANDSHAKE:
        return "sasl_handshake";
    case WEIR__REQUEST__BODY_SASL_AUTHENTICATE:
        return "sasl_authenticate";
    case WEIR__REQUEST__BODY_ALTER_USERS:
        return "alter_users";
    case WEIR__REQUEST__BODY_DESCRIBE_USERS:
        return "describe_users";
    case WEIR__REQUEST__BODY_CREATE_ACLS:
        return "create_acls";
    case WEIR__REQUEST__BODY_DELETE_ACLS:
        return "delete_acls";
    case WEIR__REQUEST__BODY_DESCRIBE_ACLS:
        return "describe_acls";
    case WEIR__REQUEST__BODY_RAFT:
        return "raft";
    default:
        return "unknown";
    }
}

static int rpc_check_produce(const Weir__ProduceRequest *p,
                             uint32_t payload_len,
                             struct err_detail *ed)
{
    uint64_t sum = 0;
    size_t i;

    if (p->acks != 0 && p->acks != 1 && p->acks != -1) {
        return err_set(ed, WEIR_EINVALID_REQUEST,
                       "acks must be 0, 1 or -1 (all), not %d", p->acks);
    }
    if (p->n_partitions > RPC_MAX_PARTITIONS) {
        return err_set(ed, WEIR_EINVALID_REQUEST, "too many partitions");
    }
    for (i = 0; i < p->n_partitions; i++) {
        sum += p->partitions[i]->payload_bytes;
    }
    if (sum != payload_len) {
        return err_set(ed, WEIR_EINVALID_REQUEST,
                       "partition payload sizes add up to %llu bytes, the "
                       "frame carries %u",
                       (unsigned long long)sum, payload_len);
    }
    return 0;
}

/* Topics plus partitions named, saturating at RPC_MAX_PARTITIONS + 1. */
static size_t rpc_offset_fetch_count(const Weir__OffsetFetchRequest *f)
{
    size_t n = f->n_topics;
    size_t i;

    for (i = 0; i < f->n_topics && n <= RPC_MAX_PARTITIONS; i++) {
        n += f->topics[i]->n_partitions;
    }
    return n;
}

static int rpc_check_request(const Weir__Request *r,
                             uint32_t payload_len,
                             struct err_detail *ed)
{
    size_t n = 0;

    switch (r->body_case) {
    case WEIR__REQUEST__BODY_PRODUCE:
        return rpc_check_produce(r->produce, payload_len, ed);
    case WEIR__REQUEST__BODY_RAFT:
        /* entries and chunks in the payload: controller/quorum/raft_codec.c
         * checks them against the Raft limits (common knows none) */
        return 0;
    case WEIR__REQUEST__BODY_METADATA:
        n = r->metadata->n_topics;
        break;
    case WEIR__REQUEST__BODY_CREATE_TOPICS:
        n = r->create_topics->n_topics;
        break;
    case WEIR__REQUEST__BODY_DELETE_TOPICS:
        n = r->delete_topics->n_names;
        break;
    case WEIR__REQUEST__BODY_FETCH:
        n = r->fetch->n_partitions;
        break;
    case WEIR__REQUEST__BODY_LIST_OFFSETS:
        n = r->list_offsets->n_partitions;
        break;
    case WEIR__REQUEST__BODY_ALTER_ISR:
        n = r->alter_isr->n_isr;
        break;
    case WEIR__REQUEST__BODY_JOIN_GROUP:
        n = r->join_group->n_protocols;
        break;
    case WEIR__REQUEST__BODY_SYNC_GROUP:
        n = r->sync_group->n_assignments;
        break;
    case WEIR__REQUEST__BODY_OFFSET_COMMIT:
        n = r->offset_commit->n_partitions;
        break;
    case WEIR__REQUEST__BODY_OFFSET_FETCH:
        n = rpc_offset_fetch_count(r->offset_fetch);
        break;
    case WEIR__REQUEST__BODY_DESCRIBE_GROUPS:
        n = r->describe_groups->n_groups;
        break;
    case WEIR__REQUEST__BODY_DELETE_GROUPS:
        n = r->delete_groups->n_groups;
        break;
    case WEIR__REQUEST__BODY_ALTER_USERS:
        n = r->alter_users->n_upsertions + r->alter_users->n_deletions;
        break;
    case WEIR__REQUEST__BODY_CREATE_ACLS:
        n = r->create_acls->n_acls;
        break;
    case WEIR__REQUEST__BODY_DELETE_ACLS:
        n = r->delete_acls->n_acls;
        break;
    case WEIR__REQUEST__BODY_SASL_HANDSHAKE:
    case WEIR__REQUEST__BODY_SASL_AUTHENTICATE:
    case WEIR__REQUEST__BODY_DESCRIBE_USERS:
    case WEIR__REQUEST__BODY_DESCRIBE_ACLS:
    case WEIR__REQUEST__BODY_FIND_COORDINATOR:
    case WEIR__REQUEST__BODY_HEARTBEAT:
    case WEIR__REQUEST__BODY_LEAVE_GROUP:
    case WEIR__REQUEST__BODY_LIST_GROUPS:
    case WEIR__REQUEST__BODY_INIT_PRODUCER_ID:
    case WEIR__REQUEST__BODY_REGISTER_BROKER:
    case WEIR__REQUEST__BODY_BROKER_HEARTBEAT:
    case WEIR__REQUEST__BODY_FETCH_METADATA:
    case WEIR__REQUEST__BODY_ALLOCATE_PRODUCER_IDS:
        break;
    default:
        return err_set(ed, WEIR_EUNSUPPORTED_API,
                       "request names no call this broker knows");
    }
    if (n > RPC_MAX_PARTITIONS) {
        return err_set(ed, WEIR_EINVALID_REQUEST, "too many entries: %zu", n);
    }
    if (payload_len != 0) {
        return err_set(ed, WEIR_EINVALID_REQUEST,
                       "%s carries no payload, got %u bytes",
                       rpc_api_name(r->body_case), payload_len);
    }
    return 0;
}

int rpc_request_decode(struct weir_slice header,
                       uint32_t payload_len,
                       Weir__Request **out,
                       struct err_detail *ed)
{
    bool oom = false;
    ProtobufCAllocator a = {rpc_alloc_noting, rpc_free_fn, &oom};
    Weir__Request *r;
    int rv;

    *out = NULL;
    r = weir__request__unpack(&a, header.len, header.p);
    if (r == NULL && oom) {
        return err_set(ed, WEIR_ENOMEM, "out of memory unpacking a request");
    }
    if (r != NULL && rpc_has_field_zero(&r->base, 0)) {
        rpc_request_free(r);
        r = NULL;
    }
    if (r == NULL) {
        return err_set(ed, WEIR_EMALFORMED,
                       "request header (%zu bytes) is not a valid protobuf "
                       "Request",
                       header.len);
    }
    *out = r;
    rv = rpc_check_request(r, payload_len, ed);
    return rv;
}

void rpc_request_free(Weir__Request *r)
{
    if (r != NULL) {
        weir__request__free_unpacked(r, &rpc_allocator);
    }
}

static int rpc_check_response(const Weir__Response *r,
                              uint32_t payload_len,
                              struct err_detail *ed)
{
    uint64_t sum = 0;
    size_t i;

    if (r->body_case == WEIR__RESPONSE__BODY_FETCH) {
        if (r->fetch->n_partitions > RPC_MAX_PARTITIONS) {
            return err_set(ed, WEIR_EMALFORMED, "too many partitions");
        }
        for (i = 0; i < r->fetch->n_partitions; i++) {
            sum += r->fetch->partitions[i]->payload_bytes;
        }
    }
    if (r->body_case == WEIR__RESPONSE__BODY_FETCH_METADATA) {
        /* metadata records, each length-prefixed: checked by their
         * decoder */
        return 0;
    }
    if (sum != payload_len) {
        return err_set(ed, WEIR_EMALFORMED,
                       "response payload sizes add up to %llu, frame has %u",
                       (unsigned long long)sum, payload_len);
    }
    return 0;
}

int rpc_response_decode(struct weir_slice header,
                        uint32_t payload_len,
                        Weir__Response **out,
                        struct err_detail *ed)
{
    bool oom = false;
    ProtobufCAllocator a = {rpc_alloc_noting, rpc_free_fn, &oom};
    Weir__Response *r;

    *out = NULL;
    r = weir__response__unpack(&a, header.len, header.p);
    if (r == NULL && oom) {
        return err_set(ed, WEIR_ENOMEM, "out of memory unpacking a response");
    }
    if (r != NULL && rpc_has_field_zero(&r->base, 0)) {
        rpc_response_free(r);
        r = NULL;
    }
    if (r == NULL) {
        return err_set(ed, WEIR_EMALFORMED,
                       "response header (%zu bytes) is not a valid protobuf "
                       "Response",
                       header.len);
    }
    *out = r;
    return rpc_check_response(r, payload_len, ed);
}

void rpc_response_free(Weir__Response *r)
{
    if (r != NULL) {
        weir__response__free_unpacked(r, &rpc_allocator);
    }
}

static int rpc_encode(const ProtobufCMessage *m,
                      uint32_t payload_len,
                      struct weir_buf *out)
{
    size_t hlen = protobuf_c_message_get_packed_size(m);
    size_t at;

    /* in 64 bits: UINT32_MAX - 4 - payload_len would wrap for payloads
     * within 4 bytes of the limit */
    if ((uint64_t)hlen + 4 + payload_len > UINT32_MAX) {
        return WEIR_EFRAME_TOO_LARGE;
    }
    at = buf_skip(out, FRAME_PREFIX_BYTES + hlen);
    if (at == SIZE_MAX) {
        return WEIR_ENOMEM;
    }
    frame_encode_prefix(out->data + at, (uint32_t)hlen, payload_len);
    (void)protobuf_c_message_pack(m, out->data + at + FRAME_PREFIX_BYTES);
    return 0;
}

int rpc_encode_request(const Weir__Request *r,
                       uint32_t payload_len,
                       struct weir_buf *out)
{
    return rpc_encode(&r->base, payload_len, out);
}

int rpc_encode_response(const Weir__Response *r,
                        uint32_t payload_len,
                        struct weir_buf *out)
{
    return rpc_encode(&r->base, payload_len, out);
}
