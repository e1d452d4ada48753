/* SPDX-License-Identifier: Apache-2.0 */
#include "broker/group/group_records.h"

#include <string.h>

#include "common/mem.h"

int32_t grec_partition_for(const char *group, int32_t n)
{
    uint32_t h = 2166136261u;
    const unsigned char *p = (const unsigned char *)group;

    while (*p != '\0') {
        h ^= *p++;
        h *= 16777619u;
    }
    return (int32_t)(h % (uint32_t)n);
}

/* Pack a protobuf message into a fresh allocation. */
static int grec_pack(const ProtobufCMessage *m, uint8_t **out, size_t *len)
{
    *len = protobuf_c_message_get_packed_size(m);
    *out = mem_malloc(*len + 1);
    if (*out == NULL) {
        return WEIR_ENOMEM;
    }
    (void)protobuf_c_message_pack(m, *out);
    return 0;
}

static int grec_add(struct batch_builder *bb,
                    int64_t ts,
                    const ProtobufCMessage *key,
                    const ProtobufCMessage *value)
{
    uint8_t *k = NULL;
    uint8_t *v = NULL;
    size_t kl = 0;
    size_t vl = 0;
    int rv = grec_pack(key, &k, &kl);

    if (rv == 0 && value != NULL) {
        rv = grec_pack(value, &v, &vl);
    }
    if (rv == 0) {
        rv = batch_builder_add(bb, ts, k, (int32_t)kl, v,
                               value != NULL ? (int32_t)vl : -1, NULL, 0);
    }
    mem_free(k);
    mem_free(v);
    return rv;
}

int grec_add_offset(struct batch_builder *bb,
                    int64_t ts,
                    const char *group,
                    const char *topic,
                    int32_t partition,
                    const struct grec_offset *v)
{
    Weir__GroupRecordKeyEnvelope env = WEIR__GROUP_RECORD_KEY_ENVELOPE__INIT;
    Weir__OffsetRecordKey key = WEIR__OFFSET_RECORD_KEY__INIT;
    Weir__OffsetRecordValue val = WEIR__OFFSET_RECORD_VALUE__INIT;

    key.group = (char *)group;
    key.topic = (char *)topic;
    key.partition = partition;
    env.key_case = WEIR__GROUP_RECORD_KEY_ENVELOPE__KEY_OFFSET;
    env.offset = &key;
    if (v != NULL) {
        val.offset = v->offset;
        val.leader_epoch = v->leader_epoch;
        val.metadata = (char *)(v->metadata != NULL ? v->metadata : "");
        val.commit_timestamp = v->commit_timestamp;
    }
    return grec_add(bb, ts, &env.base, v != NULL ? &val.base : NULL);
}

int grec_add_group(struct batch_builder *bb,
                   int64_t ts,
                   const char *group,
                   const struct group_view *v)
{
    Weir__GroupRecordKeyEnvelope env = WEIR__GROUP_RECORD_KEY_ENVELOPE__INIT;
    Weir__GroupRecordKey key = WEIR__GROUP_RECORD_KEY__INIT;
    Weir__GroupRecordValue val = WEIR__GROUP_RECORD_VALUE__INIT;
    Weir__GroupRecordMember *ms = NULL;
    Weir__GroupRecordMember **mp = NULL;
    size_t i;
    int rv;

    key.group = (char *)group;
    env.key_case = WEIR__GROUP_RECORD_KEY_ENVELOPE__KEY_GROUP;
    env.group = &key;
    if (v == NULL) {
        return grec_add(bb, ts, &env.base, NULL);
    }
    if (v->n_members > 0) {
        ms = mem_calloc(v->n_members, sizeof(*ms));
        mp = mem_calloc(v->n_members, sizeof(*mp));
        if (ms == NULL || mp == NULL) {
            mem_free(ms);
            mem_free(mp);
            return WEIR_ENOMEM;
        }
    }
    for (i = 0; i < v->n_members; i++) {
        const struct group_member_view *m = &v->members[i];
        weir__group_record_member__init(&ms[i]);
        ms[i].member_id = (char *)m->member_id;
        ms[i].client_id = (char *)m->client_id;
        ms[i].client_host = (char *)m->client_host;
        ms[i].session_timeout_ms = m->session_timeout_ms;
        ms[i].rebalance_timeout_ms = m->rebalance_timeout_ms;
        ms[i].subscription.data = (uint8_t *)m->metadata.p;
        ms[i].subscription.len = m->metadata.len;
        ms[i].assignment.data = (uint8_t *)m->assignment.p;
        ms[i].assignment.len = m->assignment.len;
        mp[i] = &ms[i];
    }
    val.protocol_type = (char *)v->protocol_type;
    val.generation_id = v->generation_id;
    val.protocol = (char *)v->protocol;
    val.leader_id = (char *)v->leader_id;
    val.state_timestamp = ts;
    val.members = mp;
    val.n_members = v->n_members;
    val.assignment_pending = v->assignment_pending && v->n_members > 0;
    rv = grec_add(bb, ts, &env.base, &val.base);
    mem_free(ms);
    mem_free(mp);
    return rv;
}

static bool grec_key_ok(const Weir__GroupRecordKeyEnvelope *k)
{
    switch (k->key_case) {
    case WEIR__GROUP_RECORD_KEY_ENVELOPE__KEY_OFFSET:
        return k->offset->group[0] != '\0' && k->offset->topic[0] != '\0' &&
               k->offset->partition >= 0;
    case WEIR__GROUP_RECORD_KEY_ENVELOPE__KEY_GROUP:
        return k->group->group[0] != '\0';
    default:
        return false;
    }
}

int grec_decode(const struct batch_record *rec, struct grec *out)
{
    memset(out, 0, sizeof(*out));
    if (rec->key_null) {
        return WEIR_EMALFORMED;
    }
    out->key = weir__group_record_key_envelope__unpack(
        NULL, rec->key.len, (const uint8_t *)rec->key.p);
    if (out->key == NULL || !grec_key_ok(out->key)) {
        grec_fini(out);
        return WEIR_EMALFORMED;
    }
    if (rec->value_null) {
        return 0; /* tombstone */
    }
    if (out->key->key_case == WEIR__GROUP_RECORD_KEY_ENVELOPE__KEY_OFFSET) {
        out->offset = weir__offset_record_value__unpack(
            NULL, rec->value.len, (const uint8_t *)rec->value.p);
        if (out->offset == NULL || out->offset->offset < 0) {
            grec_fini(out);
            return WEIR_EMALFORMED;
        }
    } else {
        out->group = weir__group_record_value__unpack(
            NULL, rec->value.len, (const uint8_t *)rec->value.p);
        if (out->group == NULL || out->group->n_members > GROUP_MAX_MEMBERS) {
            grec_fini(out);
            return WEIR_EMALFORMED;
        }
    }
    return 0;
}

void grec_fini(struct grec *r)
{
    if (r->key != NULL) {
        weir__group_record_key_envelope__free_unpacked(r->key, NULL);
    }
    if (r->offset != NULL) {
        weir__offset_record_value__free_unpacked(r->offset, NULL);
    }
    if (r->group != NULL) {
        weir__group_record_value__free_unpacked(r->group, NULL);
    }
    memset(r, 0, sizeof(*r));
}

int grec_group_view(const Weir__GroupRecordValue *v,
                    struct group_view *out,
                    struct group_member_view **members)
{
    struct group_member_view *ms = NULL;
    size_t i;

    memset(out, 0, sizeof(*out));
    *members = NULL;
    if (v->n_members > 0) {
        ms = mem_calloc(v->n_members, sizeof(*ms));
        if (ms == NULL) {
            return WEIR_ENOMEM;
        }
    }
    for (i = 0; i < v->n_members; i++) {
        const Weir__GroupRecordMember *m = v->members[i];
        ms[i].member_id = m->member_id;
        ms[i].client_id = m->client_id;
        ms[i].client_host = m->client_host;
        ms[i].metadata.p = m->subscription.data;
        ms[i].metadata.len = m->subscription.len;
        ms[i].assignment.p = m->assignment.data;
        ms[i].assignment.len = m->assignment.len;
        ms[i].session_timeout_ms = m->session_timeout_ms;
        ms[i].rebalance_timeout_ms = m->rebalance_timeout_ms;
    }
    out->state = v->n_members == 0       ? GROUP_EMPTY
                 : v->assignment_pending ? GROUP_COMPLETING_REBALANCE
                                         : GROUP_STABLE;
    out->assignment_pending = v->assignment_pending && v->n_members > 0;
    out->protocol_type = v->protocol_type;
    out->protocol = v->protocol;
    out->generation_id = v->generation_id;
    out->leader_id = v->leader_id;
    out->members = ms;
    out->n_members = v->n_members;
    *members = ms;
    return 0;
}
