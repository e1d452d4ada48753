/* SPDX-License-Identifier: Apache-2.0 */
/* Every scalar of struct raft_msg travels whatever the type, so the codec
 * does not have to know which fields each type uses (raft.h decides); only
 * what takes payload bytes (entries, the snapshot chunk) and the
 * readmission table are refused on a type that does not carry them. */
#include "controller/quorum/raft_codec.h"

#include <string.h>

#include "common/frame.h"
#include "common/mem.h"
#include "common/rpc.h"

static bool raft_codec_type_ok(uint32_t t)
{
    return t >= RAFT_MSG_VOTE && t <= RAFT_MSG_SNAPSHOT_RESP;
}

static bool raft_codec_entry_type_ok(uint32_t t)
{
    return t >= RAFT_ENTRY_NORMAL && t <= RAFT_ENTRY_READMIT;
}

const char *raft_codec_type_name(enum raft_msg_type t)
{
    switch (t) {
    case RAFT_MSG_VOTE:
        return "vote";
    case RAFT_MSG_VOTE_RESP:
        return "vote_resp";
    case RAFT_MSG_APPEND:
        return "append";
    case RAFT_MSG_APPEND_RESP:
        return "append_resp";
    case RAFT_MSG_SNAPSHOT:
        return "snapshot";
    case RAFT_MSG_SNAPSHOT_RESP:
        return "snapshot_resp";
    default:
        return "unknown";
    }
}

static int raft_codec_check_scalars(const struct raft_msg *m,
                                    struct err_detail *ed)
{
    static const char *const names[] = {"term",  "index", "log_term", "commit",
                                        "match", "hint",  "offset"};
    uint64_t v[7];
    unsigned i;

    v[0] = m->term;
    v[1] = m->index;
    v[2] = m->log_term;
    v[3] = m->commit;
    v[4] = m->match;
    v[5] = m->hint;
    v[6] = m->offset;
    for (i = 0; i < 7; i++) {
        if (v[i] >= RAFT_LIMIT) {
            return err_set(ed, WEIR_EMALFORMED,
                           "raft %s: %s %llu is not below 2^62",
                           raft_codec_type_name(m->type), names[i],
                           (unsigned long long)v[i]);
        }
    }
    return 0;
}

static int raft_codec_check_entries(const struct raft_msg *m,
                                    struct err_detail *ed)
{
    const struct raft_entry *e;
    uint32_t i;

    if (m->n_entries > RAFT_MAX_BATCH) {
        return err_set(ed, WEIR_EMALFORMED,
                       "raft append: %u entries, at most %u in one message",
                       m->n_entries, (unsigned)RAFT_MAX_BATCH);
    }
    if (m->n_entries != 0 && m->type != RAFT_MSG_APPEND) {
        return err_set(ed, WEIR_EMALFORMED, "raft %s carries %u entries",
                       raft_codec_type_name(m->type), m->n_entries);
    }
    for (i = 0; i < m->n_entries; i++) {
        e = &m->entries[i];
        if (!raft_codec_entry_type_ok(e->type)) {
            return err_set(ed, WEIR_EMALFORMED,
                           "raft append: entry %u has type %u", i,
                           (unsigned)e->type);
        }
        if (e->len > RAFT_MAX_ENTRY_BYTES) {
            return err_set(ed, WEIR_EMALFORMED,
                           "raft append: entry %u is %u bytes, at most %u", i,
                           e->len, (unsigned)RAFT_MAX_ENTRY_BYTES);
        }
        if (e->term >= RAFT_LIMIT || e->index >= RAFT_LIMIT) {
            return err_set(ed, WEIR_EMALFORMED,
                           "raft append: entry %u's index or term is not "
                           "below 2^62",
                           i);
        }
        /* entries follow the one named by index, densely (raft.h) */
        if (e->index != m->index + 1 + i) {
            return err_set(ed, WEIR_EMALFORMED,
                           "raft append: entry %u has index %llu, expected "
                           "%llu",
                           i, (unsigned long long)e->index,
                           (unsigned long long)(m->index + 1 + i));
        }
    }
    return 0;
}

static int raft_codec_check_snapshot(const struct raft_msg *m,
                                     struct err_detail *ed)
{
    unsigned i;

    if (m->type != RAFT_MSG_SNAPSHOT) {
        if (m->len != 0) {
            return err_set(ed, WEIR_EMALFORMED,
                           "raft %s carries %u bytes of snapshot",
                           raft_codec_type_name(m->type), m->len);
        }
        for (i = 0; i < RAFT_MAX_VOTERS; i++) {
            if (m->admitted[i] != 0) {
                return err_set(ed, WEIR_EMALFORMED,
                               "raft %s carries a readmission table",
                               raft_codec_type_name(m->type));
            }
        }
        return 0;
    }
    if (m->len > RAFT_SNAPSHOT_CHUNK) {
        return err_set(ed, WEIR_EMALFORMED,
                       "raft snapshot: chunk of %u bytes, at most %u", m->len,
                       (unsigned)RAFT_SNAPSHOT_CHUNK);
    }
    if (m->offset + m->len >= RAFT_LIMIT) {
        return err_set(ed, WEIR_EMALFORMED,
                       "raft snapshot: chunk ends past 2^62");
    }
    return 0;
}

int raft_codec_check(const struct raft_msg *m, struct err_detail *ed)
{
    int rv;

    if (!raft_codec_type_ok((uint32_t)m->type)) {
        return err_set(ed, WEIR_EMALFORMED, "raft message of type %u",
                       (unsigned)m->type);
    }
    if (m->from == 0 || m->from > RAFT_MAX_ID || m->to == 0 ||
        m->to > RAFT_MAX_ID || m->from == m->to) {
        return err_set(ed, WEIR_EMALFORMED,
                       "raft %s from voter %u to voter %u: ids are "
                       "1..2^31-1 and differ",
                       raft_codec_type_name(m->type), m->from, m->to);
    }
    rv = raft_codec_check_scalars(m, ed);
    if (rv == 0) {
        rv = raft_codec_check_entries(m, ed);
    }
    if (rv == 0) {
        rv = raft_codec_check_snapshot(m, ed);
    }
    return rv;
}

static bool raft_codec_cluster_ok(const char *id)
{
    size_t n = id != NULL ? strlen(id) : 0;

    return n >= 1 && n <= RAFT_CODEC_CLUSTER_ID_MAX;
}

/* Payload bytes m carries. */
static uint64_t raft_codec_payload_len(const struct raft_msg *m)
{
    uint64_t sum = m->len;
    uint32_t i;

    for (i = 0; i < m->n_entries; i++) {
        sum += m->entries[i].len;
    }
    return sum;
}

static void raft_codec_fill(const struct raft_msg *m,
                            char *cluster_id,
                            Weir__RaftMessage *rm)
{
    rm->cluster_id = cluster_id;
    rm->voter_id = m->from;
    rm->to = m->to;
    rm->type = (uint32_t)m->type;
    rm->term = m->term;
    rm->pre_vote = m->pre_vote;
    rm->granted = m->granted;
    rm->nonce = m->nonce;
    rm->readmitted = m->readmitted;
    rm->index = m->index;
    rm->log_term = m->log_term;
    rm->commit = m->commit;
    rm->success = m->success;
    rm->match = m->match;
    rm->hint = m->hint;
    rm->offset = m->offset;
    rm->done = m->done;
    rm->chunk_len = m->len;
    /* trailing zeros are left out: the decoder pads with them */
    rm->n_admitted = RAFT_MAX_VOTERS;
    while (rm->n_admitted > 0 && m->admitted[rm->n_admitted - 1] == 0) {
        rm->n_admitted--;
    }
    rm->admitted = (uint64_t *)m->admitted;
}

static int raft_codec_put(const struct raft_msg *m,
                          Weir__Request *req,
                          uint32_t plen,
                          struct weir_buf *out)
{
    uint32_t i;
    int rv;

    rv = rpc_encode_request(req, plen, out);
    if (rv != 0) {
        return rv;
    }
    for (i = 0; i < m->n_entries; i++) {
        buf_put(out, m->entries[i].data, m->entries[i].len);
    }
    buf_put(out, m->data, m->len);
    return buf_ok(out) ? 0 : WEIR_ENOMEM;
}

int raft_codec_encode(const struct raft_msg *m,
                      const char *cluster_id,
                      struct weir_buf *out,
                      struct err_detail *ed)
{
    Weir__Request req = WEIR__REQUEST__INIT;
    Weir__RaftMessage rm = WEIR__RAFT_MESSAGE__INIT;
    Weir__RaftEntryHeader *hdrs = NULL;
    Weir__RaftEntryHeader **ptrs = NULL;
    size_t start = out->len;
    uint64_t plen;
    uint32_t i;
    int rv;

    if (raft_codec_check(m, ed) != 0) {
        if (ed != NULL) {
            ed->code = WEIR_EINVALID_ARGUMENT;
        }
        return WEIR_EINVALID_ARGUMENT;
    }
    if (!raft_codec_cluster_ok(cluster_id)) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "raft: a cluster id is 1..64 bytes");
    }
    plen = raft_codec_payload_len(m);
    if (plen > UINT32_MAX - FRAME_DEFAULT_MAX_HEADER_BYTES) {
        return err_set(ed, WEIR_EFRAME_TOO_LARGE,
                       "raft %s: %llu bytes of payload do not fit a frame",
                       raft_codec_type_name(m->type), (unsigned long long)plen);
    }
    if (m->n_entries > 0) {
        hdrs = mem_calloc(m->n_entries, sizeof(*hdrs));
        ptrs = mem_calloc(m->n_entries, sizeof(*ptrs));
        if (hdrs == NULL || ptrs == NULL) {
            rv = err_set(ed, WEIR_ENOMEM, "out of memory encoding raft");
            goto out;
        }
    }
    raft_codec_fill(m, (char *)cluster_id, &rm);
    for (i = 0; i < m->n_entries; i++) {
        weir__raft_entry_header__init(&hdrs[i]);
        hdrs[i].index = m->entries[i].index;
        hdrs[i].term = m->entries[i].term;
        hdrs[i].type = (uint32_t)m->entries[i].type;
        hdrs[i].len = m->entries[i].len;
        ptrs[i] = &hdrs[i];
    }
    rm.n_entries = m->n_entries;
    rm.entries = ptrs;
    req.body_case = WEIR__REQUEST__BODY_RAFT;
    req.raft = &rm;
    rv = raft_codec_put(m, &req, (uint32_t)plen, out);
    if (rv != 0) {
        out->len = start;
        (void)err_set(ed, rv, "raft %s: cannot encode (%s)",
                      raft_codec_type_name(m->type), weir_err_name(rv));
    }
out:
    mem_free(ptrs);
    mem_free(hdrs);
    return rv;
}

/* Entries from the header, their bytes from the payload (sizes checked
 * before any pointer is formed). */
static int raft_codec_take_entries(const Weir__RaftMessage *rm,
                                   const uint8_t *payload,
                                   uint32_t payload_len,
                                   struct raft_wire *out,
                                   struct err_detail *ed)
{
    const Weir__RaftEntryHeader *h;
    uint64_t sum = rm->chunk_len;
    uint64_t at = 0;
    size_t i;

    if (rm->n_entries > RAFT_MAX_BATCH) {
        return err_set(ed, WEIR_EMALFORMED,
                       "raft append: %zu entries, at most %u in one message",
                       rm->n_entries, (unsigned)RAFT_MAX_BATCH);
    }
    for (i = 0; i < rm->n_entries; i++) {
        sum += rm->entries[i]->len;
    }
    if (sum != payload_len) {
        return err_set(ed, WEIR_EMALFORMED,
                       "raft message: entry and chunk sizes add up to %llu "
                       "bytes, the frame carries %u",
                       (unsigned long long)sum, payload_len);
    }
    for (i = 0; i < rm->n_entries; i++) {
        h = rm->entries[i];
        out->entries[i].index = h->index;
        out->entries[i].term = h->term;
        out->entries[i].type = (enum raft_entry_type)h->type;
        out->entries[i].len = h->len;
        out->entries[i].data = payload != NULL ? payload + at : NULL;
        at += h->len;
    }
    out->msg.n_entries = (uint32_t)rm->n_entries;
    out->msg.entries = rm->n_entries > 0 ? out->entries : NULL;
    out->msg.len = rm->chunk_len;
    out->msg.data = payload != NULL ? payload + at : NULL;
    return 0;
}

int raft_codec_decode_body(const Weir__RaftMessage *rm,
                           const uint8_t *payload,
                           uint32_t payload_len,
                           struct raft_wire *out,
                           struct err_detail *ed)
{
    struct raft_msg *m = &out->msg;
    int rv;

    memset(m, 0, sizeof(*m));
    out->cluster_id[0] = '\0';
    if (!raft_codec_cluster_ok(rm->cluster_id)) {
        return err_set(ed, WEIR_EMALFORMED,
                       "raft message: cluster id missing or longer than 64");
    }
    if (rm->n_admitted > RAFT_MAX_VOTERS) {
        return err_set(ed, WEIR_EMALFORMED,
                       "raft message: readmission table of %zu voters, at "
                       "most %u",
                       rm->n_admitted, (unsigned)RAFT_MAX_VOTERS);
    }
    if (!raft_codec_type_ok(rm->type)) {
        return err_set(ed, WEIR_EMALFORMED, "raft message of type %u",
                       rm->type);
    }
    m->type = (enum raft_msg_type)rm->type;
    m->from = rm->voter_id;
    m->to = rm->to;
    m->term = rm->term;
    m->pre_vote = rm->pre_vote;
    m->granted = rm->granted;
    m->nonce = rm->nonce;
    m->readmitted = rm->readmitted;
    m->index = rm->index;
    m->log_term = rm->log_term;
    m->commit = rm->commit;
    m->success = rm->success;
    m->match = rm->match;
    m->hint = rm->hint;
    m->offset = rm->offset;
    m->done = rm->done;
    if (rm->n_admitted > 0) {
        memcpy(m->admitted, rm->admitted, rm->n_admitted * sizeof(uint64_t));
    }
    rv = raft_codec_take_entries(rm, payload, payload_len, out, ed);
    if (rv == 0) {
        rv = raft_codec_check(m, ed);
    }
    if (rv != 0) {
        memset(m, 0, sizeof(*m));
        return rv;
    }
    memcpy(out->cluster_id, rm->cluster_id, strlen(rm->cluster_id) + 1);
    return 0;
}

int raft_codec_decode(struct weir_slice header,
                      const uint8_t *payload,
                      uint32_t payload_len,
                      struct raft_wire *out,
                      struct err_detail *ed)
{
    Weir__Request *r = NULL;
    int rv;

    memset(&out->msg, 0, sizeof(out->msg));
    rv = rpc_request_decode(header, payload_len, &r, ed);
    if (rv == 0 && r->body_case != WEIR__REQUEST__BODY_RAFT) {
        rv = err_set(ed, WEIR_EMALFORMED, "a %s request, not a raft message",
                     rpc_api_name(r->body_case));
    }
    if (rv == 0) {
        rv = raft_codec_decode_body(r->raft, payload, payload_len, out, ed);
    } else if (rv != WEIR_ENOMEM) {
        rv = WEIR_EMALFORMED;
        if (ed != NULL) {
            ed->code = rv;
        }
    }
    rpc_request_free(r);
    return rv;
}
