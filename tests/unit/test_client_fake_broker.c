/* SPDX-License-Identifier: Apache-2.0 */
/* Fake broker for client tests; see the header. Built with
 * -DFAKE_BROKER_MAIN it is also a standalone program
 * (weir-fake-broker PORT) for trying the CLI without a real broker. */
#include "test_client_fake_broker.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/batch.h"
#include "common/buf.h"
#include "common/frame.h"
#include "common/rpc.h"
#include "test_client_auth_fake.h"
#include "test_client_cgrp_fake.h"

#define FB_MAX_TOPICS 64
#define FB_MAX_CONNS  64

#define FB_MAX_PRODUCERS 16
#define FB_IDEM_WINDOW   5

/* One idempotent producer as a partition knows it: the broker's rules,
 * kept small (broker/idem/idem_core.c is the real thing). */
struct fb_prod {
    int64_t id;
    int16_t epoch;
    int n;                          /* batches remembered, oldest first */
    int32_t seq[FB_IDEM_WINDOW][2]; /* first and last sequence */
    int64_t base[FB_IDEM_WINDOW];
};

struct fb_part {
    struct weir_buf log; /* batches back to back, offsets assigned */
    int64_t end;         /* next offset */
    struct fb_prod prods[FB_MAX_PRODUCERS];
    int n_prods;
};

struct fb_topic {
    char name[256];
    int32_t n;
    struct fb_part *parts;
};

struct fb_conn {
    int fd;
    struct weir_buf in;
    Weir__Request *parked; /* a fetch waiting for data or its deadline,
                              or a JoinGroup / SyncGroup the coordinator
                              answers later */
    uint64_t parked_until;
    bool group_answered; /* the coordinator answered the request at hand */
    bool resume;         /* its parked request was answered: serve on */
};

struct fake_broker {
    pthread_t thread;
    pthread_mutex_t mu;
    int lfd;
    int wake[2];
    uint16_t port;
    bool stop;
    struct fb_topic topics[FB_MAX_TOPICS];
    size_t n_topics;
    struct fb_conn conns[FB_MAX_CONNS];
    int fail_code;
    int fail_count;
    int fail_batch_code; /* for the batch (epoch, seq) of any producer */
    int fail_batch_count;
    int16_t fail_batch_epoch;
    int32_t fail_batch_seq;
    size_t truncate;
    uint64_t produce_requests;
    int drop_replies; /* produce requests to apply, then hang up */
    bool refuse_ids;  /* answer InitProducerId UNSUPPORTED_API */
    int64_t next_producer_id;
    uint64_t id_requests;
    struct fbg *groups; /* the group coordinator */
    struct fba *auth;   /* SASL login, users, ACLs */
};

static uint64_t fb_now_ms(void)
{
    struct timespec ts;

    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static struct fb_topic *fb_topic(struct fake_broker *fb, const char *name)
{
    size_t i;

    for (i = 0; i < fb->n_topics; i++) {
        if (strcmp(fb->topics[i].name, name) == 0) {
            return &fb->topics[i];
        }
    }
    return NULL;
}

static int fb_create_locked(struct fake_broker *fb, const char *name, int32_t n)
{
    struct fb_topic *t;
    int32_t i;

    if (fb_topic(fb, name) != NULL) {
        return WEIR_ETOPIC_EXISTS;
    }
    if (n <= 0 || n > 1000) {
        return WEIR_EINVALID_PARTITIONS;
    }
    if (fb->n_topics == FB_MAX_TOPICS) {
        return WEIR_EPOLICY_VIOLATION;
    }
    t = &fb->topics[fb->n_topics++];
    (void)snprintf(t->name, sizeof(t->name), "%s", name);
    t->n = n;
    t->parts = calloc((size_t)n, sizeof(*t->parts));
    for (i = 0; i < n; i++) {
        buf_init(&t->parts[i].log);
    }
    return 0;
}

static void fb_topic_free(struct fb_topic *t)
{
    int32_t i;

    for (i = 0; i < t->n; i++) {
        buf_fini(&t->parts[i].log);
    }
    free(t->parts);
}

static int fb_delete_locked(struct fake_broker *fb, const char *name)
{
    struct fb_topic *t = fb_topic(fb, name);

    if (t == NULL) {
        return WEIR_EUNKNOWN_TOPIC_OR_PARTITION;
    }
    fb_topic_free(t);
    *t = fb->topics[--fb->n_topics];
    return 0;
}

static struct fb_part *
fb_part(struct fake_broker *fb, const char *topic, int32_t p)
{
    struct fb_topic *t = fb_topic(fb, topic);

    return t != NULL && p >= 0 && p < t->n ? &t->parts[p] : NULL;
}

static void
fb_send(int fd, const Weir__Response *r, const void *payload, size_t plen)
{
    struct weir_buf out;
    size_t off = 0;
    ssize_t n;

    buf_init(&out);
    if (rpc_encode_response(r, (uint32_t)plen, &out) == 0) {
        buf_put(&out, payload, plen);
    }
    while (off < out.len) {
        n = send(fd, out.data + off, out.len - off, MSG_NOSIGNAL);
        if (n <= 0) {
            break;
        }
        off += (size_t)n;
    }
    buf_fini(&out);
}

/* ---- metadata, topics ---- */

static Weir__TopicInfo *fb_topic_info(struct fake_broker *fb, const char *name)
{
    struct fb_topic *t = fb_topic(fb, name);
    Weir__TopicInfo *ti = calloc(1, sizeof(*ti));
    int32_t i;

    weir__topic_info__init(ti);
    ti->name = (char *)name;
    if (t == NULL) {
        ti->error_code = WEIR_EUNKNOWN_TOPIC_OR_PARTITION;
        return ti;
    }
    ti->n_partitions = (size_t)t->n;
    ti->partitions = calloc((size_t)t->n, sizeof(*ti->partitions));
    for (i = 0; i < t->n; i++) {
        Weir__PartitionInfo *pi = calloc(1, sizeof(*pi));
        weir__partition_info__init(pi);
        pi->partition = i;
        pi->leader = 1;
        pi->n_replicas = 1;
        pi->replicas = calloc(1, sizeof(int32_t));
        pi->replicas[0] = 1;
        pi->n_isr = 1;
        pi->isr = calloc(1, sizeof(int32_t));
        pi->isr[0] = 1;
        pi->high_watermark = t->parts[i].end;
        ti->partitions[i] = pi;
    }
    return ti;
}

static void fb_topic_info_free(Weir__TopicInfo *ti)
{
    size_t i;

    for (i = 0; i < ti->n_partitions; i++) {
        free(ti->partitions[i]->replicas);
        free(ti->partitions[i]->isr);
        free(ti->partitions[i]);
    }
    free(ti->partitions);
    free(ti);
}

static void fb_metadata(struct fake_broker *fb, int fd, const Weir__Request *q)
{
    const Weir__MetadataRequest *m = q->metadata;
    Weir__Response r;
    Weir__MetadataResponse mr;
    Weir__BrokerInfo bi;
    Weir__BrokerInfo *pbi = &bi;
    Weir__TopicInfo *tis[FB_MAX_TOPICS + 64];
    size_t n = 0;
    size_t i;

    weir__broker_info__init(&bi);
    bi.id = 1;
    bi.host = "127.0.0.1";
    bi.port = fb->port;
    if (m->all_topics || m->n_topics == 0) {
        for (i = 0; i < fb->n_topics; i++) {
            tis[n++] = fb_topic_info(fb, fb->topics[i].name);
        }
    } else {
        for (i = 0; i < m->n_topics && n < sizeof(tis) / sizeof(tis[0]); i++) {
            tis[n++] = fb_topic_info(fb, m->topics[i]);
        }
    }
    weir__metadata_response__init(&mr);
    mr.controller_id = 1;
    mr.n_brokers = 1;
    mr.brokers = &pbi;
    mr.n_topics = n;
    mr.topics = tis;
    weir__response__init(&r);
    r.correlation_id = q->correlation_id;
    r.body_case = WEIR__RESPONSE__BODY_METADATA;
    r.metadata = &mr;
    fb_send(fd, &r, NULL, 0);
    for (i = 0; i < n; i++) {
        fb_topic_info_free(tis[i]);
    }
}

static void fb_topics(struct fake_broker *fb, int fd, const Weir__Request *q)
{
    Weir__Response r;
    Weir__CreateTopicsResponse cr;
    Weir__DeleteTopicsResponse dr;
    Weir__TopicResult res;
    Weir__TopicResult *pres = &res;

    weir__topic_result__init(&res);
    weir__response__init(&r);
    r.correlation_id = q->correlation_id;
    if (q->body_case == WEIR__REQUEST__BODY_CREATE_TOPICS) {
        const Weir__CreateTopic *ct = q->create_topics->topics[0];
        res.name = ct->name;
        res.error_code = fb_create_locked(fb, ct->name, ct->partitions);
        weir__create_topics_response__init(&cr);
        cr.n_topics = 1;
        cr.topics = &pres;
        r.body_case = WEIR__RESPONSE__BODY_CREATE_TOPICS;
        r.create_topics = &cr;
    } else {
        res.name = q->delete_topics->names[0];
        res.error_code = fb_delete_locked(fb, res.name);
        weir__delete_topics_response__init(&dr);
        dr.n_topics = 1;
        dr.topics = &pres;
        r.body_case = WEIR__RESPONSE__BODY_DELETE_TOPICS;
        r.delete_topics = &dr;
    }
    fb_send(fd, &r, NULL, 0);
}

/* ---- produce ---- */

static int32_t fb_seq_add(int32_t seq, int32_t n)
{
    return seq > INT32_MAX - n ? n - (INT32_MAX - seq) - 1 : seq + n;
}

static struct fb_prod *fb_prod(struct fb_part *p, int64_t id)
{
    int i;

    for (i = 0; i < p->n_prods; i++) {
        if (p->prods[i].id == id) {
            return &p->prods[i];
        }
    }
    return NULL;
}

/* The broker's sequence rules, for payloads of one producer whose
 * retries come one batch at a time (as libweir sends them): 0 to append,
 * DUPLICATE_SEQUENCE with *dup_base, or the refusal. */
static int fb_idem_check(struct fb_part *p,
                         const uint8_t *data,
                         size_t len,
                         int64_t *dup_base)
{
    struct weir_slice all = {data, len};
    struct weir_slice b;
    struct batch_header h;
    struct err_detail ed;
    const struct fb_prod *pr;
    int32_t next = -1; /* expected sequence after the first batch */
    size_t pos = 0;
    int i;

    while (batch_next(all, &pos, 16u << 20, false, &h, &b, &ed) == 0 &&
           b.len > 0) {
        int32_t last = fb_seq_add(h.base_sequence, h.last_offset_delta);
        if (h.producer_id < 0) {
            continue;
        }
        if (next >= 0 && h.base_sequence != next) {
            return WEIR_EOUT_OF_ORDER_SEQUENCE;
        }
        pr = next < 0 ? fb_prod(p, h.producer_id) : NULL;
        if (pr == NULL || h.producer_epoch > pr->epoch) {
            if (next < 0 && h.base_sequence != 0) {
                return pr == NULL ? WEIR_EUNKNOWN_PRODUCER_ID
                                  : WEIR_EOUT_OF_ORDER_SEQUENCE;
            }
        } else if (h.producer_epoch < pr->epoch) {
            return WEIR_EINVALID_PRODUCER_EPOCH;
        } else {
            for (i = 0; i < pr->n; i++) {
                if (pr->seq[i][0] == h.base_sequence && pr->seq[i][1] == last) {
                    *dup_base = pr->base[i];
                    return WEIR_EDUPLICATE_SEQUENCE;
                }
            }
            if (h.base_sequence != fb_seq_add(pr->seq[pr->n - 1][1], 1)) {
                return WEIR_EOUT_OF_ORDER_SEQUENCE;
            }
        }
        next = fb_seq_add(last, 1);
    }
    return 0;
}

static void fb_idem_record(struct fb_part *p, const struct batch_header *h)
{
    struct fb_prod *pr = fb_prod(p, h->producer_id);

    if (pr == NULL && p->n_prods < FB_MAX_PRODUCERS) {
        pr = &p->prods[p->n_prods++];
        memset(pr, 0, sizeof(*pr));
        pr->id = h->producer_id;
        pr->epoch = h->producer_epoch;
    }
    if (pr == NULL) {
        return;
    }
    if (h->producer_epoch > pr->epoch) {
        pr->epoch = h->producer_epoch;
        pr->n = 0;
    }
    if (pr->n == FB_IDEM_WINDOW) {
        memmove(pr->seq, pr->seq + 1, sizeof(pr->seq) - sizeof(pr->seq[0]));
        memmove(pr->base, pr->base + 1, sizeof(pr->base) - sizeof(pr->base[0]));
        pr->n--;
    }
    pr->seq[pr->n][0] = h->base_sequence;
    pr->seq[pr->n][1] = fb_seq_add(h->base_sequence, h->last_offset_delta);
    pr->base[pr->n++] = h->base_offset;
}

/* Append every batch of one partition's payload; first offset in *base. */
static int
fb_append(struct fb_part *p, const uint8_t *data, size_t len, int64_t *base)
{
    struct batch_header h;
    struct weir_slice all = {data, len};
    struct weir_slice b;
    struct err_detail ed;
    size_t pos = 0;
    size_t mark = p->log.len;
    int rv;

    rv = fb_idem_check(p, data, len, base);
    if (rv != 0) {
        return rv;
    }
    *base = p->end;
    for (;;) {
        rv = batch_next(all, &pos, 16u << 20, false, &h, &b, &ed);
        if (rv != 0) {
            p->log.len = mark;
            return rv;
        }
        if (b.len == 0) {
            break;
        }
        buf_put(&p->log, b.p, b.len);
        batch_set_base(p->log.data + p->log.len - b.len, p->end, 0);
        p->end += h.record_count;
    }
    /* recorded once the whole payload is in */
    for (pos = mark; pos < p->log.len; pos += batch_size(&h)) {
        if (batch_header_decode(p->log.data + pos, p->log.len - pos, UINT32_MAX,
                                &h, &ed) != 0) {
            break;
        }
        if (h.producer_id >= 0) {
            fb_idem_record(p, &h);
        }
    }
    return 0;
}

/* The payload holds the idempotent batch the fail_batch knob names, and
 * the knob has failures left: count one (the whole payload fails, as a
 * failed write of it would). */
static bool
fb_fail_batch(struct fake_broker *fb, const uint8_t *data, size_t len)
{
    struct weir_slice all = {data, len};
    struct weir_slice b;
    struct batch_header h;
    struct err_detail ed;
    size_t pos = 0;

    if (fb->fail_batch_count <= 0) {
        return false;
    }
    while (batch_next(all, &pos, 16u << 20, false, &h, &b, &ed) == 0 &&
           b.len > 0) {
        if (h.producer_id >= 0 && h.producer_epoch == fb->fail_batch_epoch &&
            h.base_sequence == fb->fail_batch_seq) {
            fb->fail_batch_count--;
            return true;
        }
    }
    return false;
}

/* Returns false when the reply is to be lost: the caller hangs up. */
static bool fb_produce(struct fake_broker *fb,
                       int fd,
                       const Weir__Request *q,
                       const uint8_t *payload)
{
    const Weir__ProduceRequest *pr = q->produce;
    Weir__ProducePartitionResult *res;
    Weir__ProducePartitionResult **pres;
    Weir__ProduceResponse presp;
    Weir__Response r;
    size_t off = 0;
    size_t i;

    fb->produce_requests++;
    res = calloc(pr->n_partitions + 1, sizeof(*res));
    pres = calloc(pr->n_partitions + 1, sizeof(*pres));
    for (i = 0; i < pr->n_partitions; i++) {
        const Weir__ProducePartition *pp = pr->partitions[i];
        struct fb_part *part = fb_part(fb, pp->topic, pp->partition);
        weir__produce_partition_result__init(&res[i]);
        res[i].topic = pp->topic;
        res[i].partition = pp->partition;
        res[i].base_offset = -1;
        if (fb->fail_count > 0) {
            fb->fail_count--;
            res[i].error_code = fb->fail_code;
        } else if (fb_fail_batch(fb, payload + off, pp->payload_bytes)) {
            res[i].error_code = fb->fail_batch_code;
        } else if (part == NULL) {
            res[i].error_code = WEIR_EUNKNOWN_TOPIC_OR_PARTITION;
        } else {
            res[i].error_code = fb_append(
                part, payload + off, pp->payload_bytes, &res[i].base_offset);
        }
        off += pp->payload_bytes;
        pres[i] = &res[i];
    }
    if (fb->drop_replies > 0) {
        fb->drop_replies--;
        free(res);
        free(pres);
        return false;
    }
    if (pr->acks != 0) {
        weir__produce_response__init(&presp);
        presp.n_partitions = pr->n_partitions;
        presp.partitions = pres;
        weir__response__init(&r);
        r.correlation_id = q->correlation_id;
        r.body_case = WEIR__RESPONSE__BODY_PRODUCE;
        r.produce = &presp;
        fb_send(fd, &r, NULL, 0);
    }
    free(res);
    free(pres);
    return true;
}

static void
fb_init_producer_id(struct fake_broker *fb, int fd, const Weir__Request *q)
{
    Weir__InitProducerIdResponse ir;
    Weir__Response r;

    fb->id_requests++;
    weir__response__init(&r);
    r.correlation_id = q->correlation_id;
    if (fb->refuse_ids) {
        r.error_code = WEIR_EUNSUPPORTED_API;
        r.error_message = "unknown call";
    } else {
        weir__init_producer_id_response__init(&ir);
        ir.producer_id = fb->next_producer_id++;
        r.body_case = WEIR__RESPONSE__BODY_INIT_PRODUCER_ID;
        r.init_producer_id = &ir;
    }
    fb_send(fd, &r, NULL, 0);
}

/* ---- fetch ---- */

/* Whole batches from the one holding `from`, at most max bytes (but at
 * least one batch). */
static struct weir_slice
fb_read(const struct fb_part *p, int64_t from, uint32_t max)
{
    struct weir_slice s = {NULL, 0};
    struct batch_header h;
    struct err_detail ed;
    size_t pos = 0;
    size_t start = SIZE_MAX;

    while (pos < p->log.len) {
        if (batch_header_decode(p->log.data + pos, p->log.len - pos, UINT32_MAX,
                                &h, &ed) != 0) {
            break;
        }
        if (start == SIZE_MAX && batch_last_offset(&h) >= from) {
            start = pos;
        }
        if (start != SIZE_MAX && pos > start &&
            pos + batch_size(&h) - start > max) {
            break;
        }
        pos += batch_size(&h);
    }
    if (start != SIZE_MAX) {
        s.p = p->log.data + start;
        s.len = pos - start;
    }
    return s;
}

static bool fb_has_data(struct fake_broker *fb, const Weir__FetchRequest *f)
{
    size_t i;

    for (i = 0; i < f->n_partitions; i++) {
        struct fb_part *p =
            fb_part(fb, f->partitions[i]->topic, f->partitions[i]->partition);
        if (p == NULL || f->partitions[i]->fetch_offset != p->end) {
            return true; /* data or an error to report */
        }
    }
    return false;
}

static void fb_fetch(struct fake_broker *fb, int fd, const Weir__Request *q)
{
    const Weir__FetchRequest *f = q->fetch;
    Weir__FetchPartitionResult *res = calloc(f->n_partitions + 1, sizeof(*res));
    Weir__FetchPartitionResult **pres =
        calloc(f->n_partitions + 1, sizeof(*pres));
    Weir__FetchResponse fr;
    Weir__Response r;
    struct weir_buf payload;
    size_t i;

    buf_init(&payload);
    for (i = 0; i < f->n_partitions; i++) {
        const Weir__FetchPartition *fp = f->partitions[i];
        struct fb_part *p = fb_part(fb, fp->topic, fp->partition);
        struct weir_slice s = {NULL, 0};
        weir__fetch_partition_result__init(&res[i]);
        res[i].topic = fp->topic;
        res[i].partition = fp->partition;
        pres[i] = &res[i];
        if (p == NULL) {
            res[i].error_code = WEIR_EUNKNOWN_TOPIC_OR_PARTITION;
            continue;
        }
        res[i].high_watermark = p->end;
        if (fp->fetch_offset < 0 || fp->fetch_offset > p->end) {
            res[i].error_code = WEIR_EOFFSET_OUT_OF_RANGE;
            continue;
        }
        s = fb_read(p, fp->fetch_offset, fp->partition_max_bytes);
        if (fb->truncate > 0 && s.p != NULL) {
            /* a size limit that cut the following batch short */
            size_t after = p->log.len - (size_t)(s.p + s.len - p->log.data);
            s.len += after > fb->truncate ? fb->truncate : after / 2;
        }
        buf_put(&payload, s.p, s.len);
        res[i].payload_bytes = (uint32_t)s.len;
    }
    weir__fetch_response__init(&fr);
    fr.n_partitions = f->n_partitions;
    fr.partitions = pres;
    weir__response__init(&r);
    r.correlation_id = q->correlation_id;
    r.body_case = WEIR__RESPONSE__BODY_FETCH;
    r.fetch = &fr;
    fb_send(fd, &r, payload.data, payload.len);
    buf_fini(&payload);
    free(res);
    free(pres);
}

/* ---- list offsets ---- */

static int64_t fb_offset_for_time(const struct fb_part *p, int64_t ts)
{
    struct weir_slice all = {p->log.data, p->log.len};
    struct batch_header h;
    struct weir_slice b;
    struct batch_iter it;
    struct batch_record rec;
    struct err_detail ed;
    size_t pos = 0;

    while (batch_next(all, &pos, UINT32_MAX, false, &h, &b, &ed) == 0 &&
           b.len > 0) {
        if (h.max_timestamp < ts || batch_iter_init(&it, b, &ed) != 0) {
            continue;
        }
        while (batch_iter_next(&it, &rec) == 1) {
            if (rec.timestamp >= ts) {
                return rec.offset;
            }
        }
    }
    return -1;
}

static void
fb_list_offsets(struct fake_broker *fb, int fd, const Weir__Request *q)
{
    const Weir__ListOffsetsRequest *l = q->list_offsets;
    Weir__ListOffsetsPartitionResult *res =
        calloc(l->n_partitions + 1, sizeof(*res));
    Weir__ListOffsetsPartitionResult **pres =
        calloc(l->n_partitions + 1, sizeof(*pres));
    Weir__ListOffsetsResponse lr;
    Weir__Response r;
    size_t i;

    for (i = 0; i < l->n_partitions; i++) {
        const Weir__ListOffsetsPartition *lp = l->partitions[i];
        struct fb_part *p = fb_part(fb, lp->topic, lp->partition);
        weir__list_offsets_partition_result__init(&res[i]);
        res[i].topic = lp->topic;
        res[i].partition = lp->partition;
        res[i].timestamp = -1;
        pres[i] = &res[i];
        if (p == NULL) {
            res[i].error_code = WEIR_EUNKNOWN_TOPIC_OR_PARTITION;
        } else if (lp->timestamp == -1) {
            res[i].offset = p->end;
        } else if (lp->timestamp == -2) {
            res[i].offset = 0;
        } else {
            res[i].offset = fb_offset_for_time(p, lp->timestamp);
        }
    }
    weir__list_offsets_response__init(&lr);
    lr.n_partitions = l->n_partitions;
    lr.partitions = pres;
    weir__response__init(&r);
    r.correlation_id = q->correlation_id;
    r.body_case = WEIR__RESPONSE__BODY_LIST_OFFSETS;
    r.list_offsets = &lr;
    fb_send(fd, &r, NULL, 0);
    free(res);
    free(pres);
}

/* ---- connections ---- */

static void fb_close(struct fb_conn *c);

static void
fb_group_send(void *ctx, int ci, const Weir__Response *r, bool parked)
{
    struct fake_broker *fb = ctx;
    struct fb_conn *c = &fb->conns[ci];

    if (c->fd < 0) {
        return;
    }
    fb_send(c->fd, r, NULL, 0);
    if (!parked) {
        return;
    }
    if (c->parked != NULL) {
        rpc_request_free(c->parked);
        c->parked = NULL;
        c->resume = true;
    } else {
        c->group_answered = true;
    }
}

static void fb_auth_send(void *ctx, int ci, const Weir__Response *r)
{
    struct fake_broker *fb = ctx;

    if (fb->conns[ci].fd >= 0) {
        fb_send(fb->conns[ci].fd, r, NULL, 0);
    }
}

/* Handle one request; a fetch with nothing to return is parked. Returns
 * false when the connection was closed. */
static bool fb_dispatch(struct fake_broker *fb,
                        struct fb_conn *c,
                        Weir__Request *q,
                        const uint8_t *payload)
{
    switch (fba_handle(fb->auth, (int)(c - fb->conns), q, fb_auth_send, fb)) {
    case FBA_DONE:
        rpc_request_free(q);
        return true;
    case FBA_CLOSE:
        rpc_request_free(q);
        fb_close(c);
        return false;
    default:
        break;
    }
    switch (q->body_case) {
    case WEIR__REQUEST__BODY_METADATA:
        fb_metadata(fb, c->fd, q);
        break;
    case WEIR__REQUEST__BODY_CREATE_TOPICS:
    case WEIR__REQUEST__BODY_DELETE_TOPICS:
        fb_topics(fb, c->fd, q);
        break;
    case WEIR__REQUEST__BODY_PRODUCE:
        if (!fb_produce(fb, c->fd, q, payload)) {
            rpc_request_free(q);
            fb_close(c);
            return false;
        }
        break;
    case WEIR__REQUEST__BODY_INIT_PRODUCER_ID:
        fb_init_producer_id(fb, c->fd, q);
        break;
    case WEIR__REQUEST__BODY_FETCH:
        if (!fb_has_data(fb, q->fetch) && q->fetch->max_wait_ms > 0) {
            c->parked = q;
            c->parked_until = fb_now_ms() + q->fetch->max_wait_ms;
            return true;
        }
        fb_fetch(fb, c->fd, q);
        break;
    case WEIR__REQUEST__BODY_LIST_OFFSETS:
        fb_list_offsets(fb, c->fd, q);
        break;
    case WEIR__REQUEST__BODY_FIND_COORDINATOR:
    case WEIR__REQUEST__BODY_JOIN_GROUP:
    case WEIR__REQUEST__BODY_SYNC_GROUP:
    case WEIR__REQUEST__BODY_HEARTBEAT:
    case WEIR__REQUEST__BODY_LEAVE_GROUP:
    case WEIR__REQUEST__BODY_OFFSET_COMMIT:
    case WEIR__REQUEST__BODY_OFFSET_FETCH:
    case WEIR__REQUEST__BODY_LIST_GROUPS:
    case WEIR__REQUEST__BODY_DESCRIBE_GROUPS:
    case WEIR__REQUEST__BODY_DELETE_GROUPS:
        c->group_answered = false;
        if (!fbg_handle(fb->groups, (int)(c - fb->conns), q, fb_now_ms(),
                        fb_group_send, fb) &&
            !c->group_answered) {
            c->parked = q;
            c->parked_until = UINT64_MAX;
            return true;
        }
        break;
    default:
        break;
    }
    rpc_request_free(q);
    return true;
}

static void fb_close(struct fb_conn *c)
{
    c->resume = false;
    (void)close(c->fd);
    c->fd = -1;
    buf_fini(&c->in);
    rpc_request_free(c->parked);
    c->parked = NULL;
}

/* Serve complete frames while no fetch is parked (replies stay ordered). */
static void fb_serve(struct fake_broker *fb, struct fb_conn *c)
{
    struct frame_limits lim = {64u << 20, FRAME_DEFAULT_MAX_HEADER_BYTES};
    struct frame_info fi;
    struct err_detail ed;
    struct weir_slice h;
    Weir__Request *q;
    size_t pos = 0;

    while (c->parked == NULL && c->in.len - pos >= FRAME_PREFIX_BYTES) {
        if (frame_decode_prefix(c->in.data + pos, &lim, &fi, &ed) != 0) {
            fb_close(c);
            return;
        }
        if (c->in.len - pos < 4 + (size_t)fi.frame_len) {
            break;
        }
        h.p = c->in.data + pos + FRAME_PREFIX_BYTES;
        h.len = fi.header_len;
        if (rpc_request_decode(h, fi.payload_len, &q, &ed) != 0) {
            rpc_request_free(q);
            fb_close(c);
            return;
        }
        if (!fb_dispatch(fb, c, q, h.p + h.len)) {
            return;
        }
        pos += 4 + (size_t)fi.frame_len;
    }
    memmove(c->in.data, c->in.data + pos, c->in.len - pos);
    c->in.len -= pos;
}

static void fb_accept(struct fake_broker *fb)
{
    int fd = accept(fb->lfd, NULL, NULL);
    size_t i;

    if (fd < 0) {
        return;
    }
    for (i = 0; i < FB_MAX_CONNS; i++) {
        if (fb->conns[i].fd < 0) {
            fbg_conn_closed(fb->groups, (int)i); /* a new conn: none parked */
            fba_conn_closed(fb->auth, (int)i);
            fb->conns[i].fd = fd;
            buf_init(&fb->conns[i].in);
            return;
        }
    }
    (void)close(fd);
}

static void fb_read_conn(struct fake_broker *fb, struct fb_conn *c)
{
    ssize_t n;

    if (buf_reserve(&c->in, 1u << 20) != 0) {
        fb_close(c);
        return;
    }
    n = read(c->fd, c->in.data + c->in.len, c->in.cap - c->in.len);
    if (n <= 0) {
        fb_close(c);
        return;
    }
    c->in.len += (size_t)n;
    fb_serve(fb, c);
}

static void fb_unpark(struct fake_broker *fb, struct fb_conn *c)
{
    Weir__Request *q = c->parked;

    if (c->resume) {
        c->resume = false;
        fb_serve(fb, c);
        return;
    }
    if (q == NULL || q->body_case != WEIR__REQUEST__BODY_FETCH ||
        (!fb_has_data(fb, q->fetch) && fb_now_ms() < c->parked_until)) {
        return;
    }
    c->parked = NULL;
    fb_fetch(fb, c->fd, q);
    rpc_request_free(q);
    fb_serve(fb, c);
}

static void *fb_main(void *arg)
{
    struct fake_broker *fb = arg;
    struct pollfd pfd[FB_MAX_CONNS + 2];
    size_t map[FB_MAX_CONNS];
    size_t n;
    size_t i;

    for (;;) {
        pfd[0].fd = fb->lfd;
        pfd[0].events = POLLIN;
        pfd[1].fd = fb->wake[0];
        pfd[1].events = POLLIN;
        n = 2;
        for (i = 0; i < FB_MAX_CONNS; i++) {
            if (fb->conns[i].fd >= 0) {
                pfd[n].fd = fb->conns[i].fd;
                /* a parked conn is not read until its fetch is answered */
                pfd[n].events = fb->conns[i].parked == NULL ? POLLIN : 0;
                map[n - 2] = i;
                n++;
            }
        }
        (void)poll(pfd, (nfds_t)n, 5);
        pthread_mutex_lock(&fb->mu);
        if (fb->stop) {
            pthread_mutex_unlock(&fb->mu);
            return NULL;
        }
        if (pfd[0].revents & POLLIN) {
            fb_accept(fb);
        }
        for (i = 2; i < n; i++) {
            struct fb_conn *c = &fb->conns[map[i - 2]];
            if (c->fd >= 0 && c->parked == NULL &&
                (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))) {
                fb_read_conn(fb, c);
            }
        }
        fbg_tick(fb->groups, fb_now_ms(), fb_group_send, fb);
        for (i = 0; i < FB_MAX_CONNS; i++) {
            if (fb->conns[i].fd >= 0) {
                fb_unpark(fb, &fb->conns[i]);
            }
        }
        pthread_mutex_unlock(&fb->mu);
    }
}

int fake_broker_start(uint16_t port, struct fake_broker **out)
{
    struct fake_broker *fb = calloc(1, sizeof(*fb));
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    int one = 1;
    size_t i;

    *out = NULL;
    if (fb == NULL || pipe(fb->wake) != 0) {
        free(fb);
        return -1;
    }
    for (i = 0; i < FB_MAX_CONNS; i++) {
        fb->conns[i].fd = -1;
    }
    fb->lfd = socket(AF_INET, SOCK_STREAM, 0);
    (void)setsockopt(fb->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons(port);
    if (bind(fb->lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        listen(fb->lfd, 16) != 0 ||
        getsockname(fb->lfd, (struct sockaddr *)&sa, &len) != 0) {
        (void)close(fb->lfd);
        (void)close(fb->wake[0]);
        (void)close(fb->wake[1]);
        free(fb);
        return -1;
    }
    fb->port = ntohs(sa.sin_port);
    fb->groups = fbg_new("127.0.0.1", fb->port);
    fb->auth = fba_new();
    pthread_mutex_init(&fb->mu, NULL);
    if (pthread_create(&fb->thread, NULL, fb_main, fb) != 0) {
        return -1;
    }
    *out = fb;
    return 0;
}

uint16_t fake_broker_port(const struct fake_broker *fb)
{
    return fb->port;
}

void fake_broker_stop(struct fake_broker *fb)
{
    size_t i;

    if (fb == NULL) {
        return;
    }
    pthread_mutex_lock(&fb->mu);
    fb->stop = true;
    pthread_mutex_unlock(&fb->mu);
    (void)write(fb->wake[1], "x", 1);
    pthread_join(fb->thread, NULL);
    for (i = 0; i < FB_MAX_CONNS; i++) {
        if (fb->conns[i].fd >= 0) {
            fb_close(&fb->conns[i]);
        }
    }
    for (i = 0; i < fb->n_topics; i++) {
        fb_topic_free(&fb->topics[i]);
    }
    fbg_free(fb->groups);
    fba_free(fb->auth);
    (void)close(fb->lfd);
    (void)close(fb->wake[0]);
    (void)close(fb->wake[1]);
    pthread_mutex_destroy(&fb->mu);
    free(fb);
}

int fake_broker_create_topic(struct fake_broker *fb,
                             const char *name,
                             int32_t partitions)
{
    int rv;

    pthread_mutex_lock(&fb->mu);
    rv = fb_create_locked(fb, name, partitions);
    pthread_mutex_unlock(&fb->mu);
    return rv == 0 ? 0 : -1;
}

void fake_broker_require_sasl(struct fake_broker *fb, bool on)
{
    pthread_mutex_lock(&fb->mu);
    fba_require(fb->auth, on);
    pthread_mutex_unlock(&fb->mu);
}

int fake_broker_add_user(struct fake_broker *fb,
                         const char *mechanism,
                         const char *user,
                         const char *password)
{
    int rv;

    pthread_mutex_lock(&fb->mu);
    rv = fba_add_user(fb->auth, mechanism, user, password);
    pthread_mutex_unlock(&fb->mu);
    return rv;
}

uint64_t fake_broker_logins(struct fake_broker *fb)
{
    uint64_t n;

    pthread_mutex_lock(&fb->mu);
    n = fba_logins(fb->auth);
    pthread_mutex_unlock(&fb->mu);
    return n;
}

size_t fake_broker_acl_count(struct fake_broker *fb)
{
    size_t n;

    pthread_mutex_lock(&fb->mu);
    n = fba_acl_count(fb->auth);
    pthread_mutex_unlock(&fb->mu);
    return n;
}

void fake_broker_fail_produce(struct fake_broker *fb, int code, int count)
{
    pthread_mutex_lock(&fb->mu);
    fb->fail_code = code;
    fb->fail_count = count;
    pthread_mutex_unlock(&fb->mu);
}

void fake_broker_fail_batch(struct fake_broker *fb,
                            int code,
                            int16_t epoch,
                            int32_t base_sequence,
                            int count)
{
    pthread_mutex_lock(&fb->mu);
    fb->fail_batch_code = code;
    fb->fail_batch_epoch = epoch;
    fb->fail_batch_seq = base_sequence;
    fb->fail_batch_count = count;
    pthread_mutex_unlock(&fb->mu);
}

int fake_broker_producer_epoch(struct fake_broker *fb,
                               const char *topic,
                               int32_t partition,
                               int64_t producer_id)
{
    struct fb_part *p;
    const struct fb_prod *pr;
    int epoch = -1;

    pthread_mutex_lock(&fb->mu);
    p = fb_part(fb, topic, partition);
    pr = p != NULL ? fb_prod(p, producer_id) : NULL;
    if (pr != NULL) {
        epoch = pr->epoch;
    }
    pthread_mutex_unlock(&fb->mu);
    return epoch;
}

void fake_broker_truncate_fetch(struct fake_broker *fb, size_t bytes)
{
    pthread_mutex_lock(&fb->mu);
    fb->truncate = bytes;
    pthread_mutex_unlock(&fb->mu);
}

int64_t fake_broker_end_offset(struct fake_broker *fb,
                               const char *topic,
                               int32_t partition)
{
    struct fb_part *p;
    int64_t end;

    pthread_mutex_lock(&fb->mu);
    p = fb_part(fb, topic, partition);
    end = p != NULL ? p->end : -1;
    pthread_mutex_unlock(&fb->mu);
    return end;
}

void fake_broker_drop_produce_replies(struct fake_broker *fb, int count)
{
    pthread_mutex_lock(&fb->mu);
    fb->drop_replies = count;
    pthread_mutex_unlock(&fb->mu);
}

void fake_broker_refuse_producer_ids(struct fake_broker *fb)
{
    pthread_mutex_lock(&fb->mu);
    fb->refuse_ids = true;
    pthread_mutex_unlock(&fb->mu);
}

void fake_broker_forget_producers(struct fake_broker *fb)
{
    size_t i;
    int32_t k;

    pthread_mutex_lock(&fb->mu);
    for (i = 0; i < fb->n_topics; i++) {
        for (k = 0; k < fb->topics[i].n; k++) {
            fb->topics[i].parts[k].n_prods = 0;
        }
    }
    pthread_mutex_unlock(&fb->mu);
}

uint64_t fake_broker_producer_id_requests(struct fake_broker *fb)
{
    uint64_t n;

    pthread_mutex_lock(&fb->mu);
    n = fb->id_requests;
    pthread_mutex_unlock(&fb->mu);
    return n;
}

uint64_t fake_broker_produce_requests(struct fake_broker *fb)
{
    uint64_t n;

    pthread_mutex_lock(&fb->mu);
    n = fb->produce_requests;
    pthread_mutex_unlock(&fb->mu);
    return n;
}

int64_t fake_broker_committed(struct fake_broker *fb,
                              const char *group,
                              const char *topic,
                              int32_t partition)
{
    int64_t off;

    pthread_mutex_lock(&fb->mu);
    off = fbg_committed(fb->groups, group, topic, partition);
    pthread_mutex_unlock(&fb->mu);
    return off;
}

int32_t fake_broker_group_generation(struct fake_broker *fb, const char *group)
{
    int32_t gen;

    pthread_mutex_lock(&fb->mu);
    gen = fbg_generation(fb->groups, group);
    pthread_mutex_unlock(&fb->mu);
    return gen;
}

#ifdef FAKE_BROKER_MAIN
int main(int argc, char **argv)
{
    struct fake_broker *fb;

    if (fake_broker_start(argc > 1 ? (uint16_t)atoi(argv[1]) : 19092, &fb) !=
        0) {
        (void)fprintf(stderr, "cannot listen\n");
        return 1;
    }
    (void)printf("fake broker on 127.0.0.1:%u\n", fake_broker_port(fb));
    (void)fflush(stdout);
    for (;;) {
        (void)pause();
    }
}
#endif
