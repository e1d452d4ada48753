/* SPDX-License-Identifier: Apache-2.0 */
/* Consumer: a manual assignment of partitions with start positions, and a
 * poll that hands out fetched records one at a time, in offset order per
 * partition. Fetched data is kept as chunks (one per partition and fetch)
 * until the application has seen every record in it; a partition with a
 * chunk waiting is not fetched again, which bounds memory and keeps the
 * per-partition order trivially. */
#include <stdio.h>
#include <string.h>

#include "client/consumer_int.h"
#include "common/mem.h"

void weir_consumer_config_init(struct weir_consumer_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->fetch_max_wait_ms = 500;
    cfg->fetch_min_bytes = 1;
    cfg->fetch_max_bytes = 16u * 1024 * 1024;
    cfg->partition_max_bytes = 4u * 1024 * 1024;
    cfg->reset = WEIR_START_EARLIEST;
    cfg->retry_backoff_ms = 100;
    cfg->error_timeout_ms = 30000;
    cfg->session_timeout_ms = 10000;
    cfg->heartbeat_interval_ms = 3000;
    cfg->rebalance_timeout_ms = 30000;
    cfg->strategies = "range,roundrobin,sticky";
    cfg->auto_commit = true;
    cfg->auto_commit_interval_ms = 5000;
}

int weir_consumer_new(struct weir_client *c,
                      const struct weir_consumer_config *cfg,
                      struct weir_consumer **out,
                      struct err_detail *ed)
{
    struct weir_consumer *k;

    *out = NULL;
    if (cfg->fetch_max_bytes == 0 || cfg->partition_max_bytes == 0 ||
        cfg->fetch_max_bytes + (uint64_t)65536 > c->cfg.max_frame_bytes) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "fetch sizes must be positive and below the client's "
                       "frame limit (%u bytes)",
                       c->cfg.max_frame_bytes);
    }
    if (cfg->reset == WEIR_START_TIMESTAMP) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "the reset policy is earliest, latest or none");
    }
    k = mem_calloc(1, sizeof(*k));
    if (k == NULL) {
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    k->c = c;
    k->cfg = *cfg;
    k->wake_ms = UINT64_MAX;
    if (consumer_group_init(k, cfg, ed) != 0) {
        mem_free(k);
        return ed != NULL ? ed->code : WEIR_EINVALID_ARGUMENT;
    }
    *out = k;
    return 0;
}

static void consumer_drop_head(struct weir_consumer *k)
{
    struct cons_chunk *ch = k->head;

    k->head = ch->next;
    if (k->head == NULL) {
        k->tail = NULL;
    }
    if (ch->epoch == ch->part->epoch) {
        ch->part->buffered = false;
    }
    mem_free(ch->data);
    mem_free(ch);
}

void weir_consumer_free(struct weir_consumer *k)
{
    struct cons_req *r;
    size_t i;

    if (k == NULL) {
        return;
    }
    if (weir_consumer_close(k, NULL) != 0) {
        /* freeing anyway: the final commit's error has nobody to go to */
    }
    consumer_group_fini(k);
    /* In-flight requests free themselves when their replies come. */
    for (r = k->reqs; r != NULL; r = r->next) {
        r->k = NULL;
    }
    while (k->head != NULL) {
        consumer_drop_head(k);
    }
    for (i = 0; i < k->n_parts; i++) {
        mem_free(k->parts[i]->topic);
        mem_free(k->parts[i]);
    }
    mem_free(k->parts);
    mem_free(k);
}

void consumer_add_chunk(struct weir_consumer *k,
                        struct cons_part *cp,
                        uint8_t *data,
                        size_t len,
                        int64_t skip_below,
                        int64_t next_offset)
{
    struct cons_chunk *ch = mem_calloc(1, sizeof(*ch));

    if (ch == NULL) {
        mem_free(data);
        consumer_part_error(k, cp, WEIR_ENOMEM, "out of memory",
                            client_now_ms(k->c));
        return;
    }
    ch->part = cp;
    ch->epoch = cp->epoch;
    ch->data = data;
    ch->next_offset = next_offset;
    recset_init(&ch->rs, (struct weir_slice){data, len}, skip_below);
    cp->buffered = true;
    if (k->tail != NULL) {
        k->tail->next = ch;
    } else {
        k->head = ch;
    }
    k->tail = ch;
}

static struct cons_part *consumer_find(const struct weir_consumer *k,
                                       const char *topic,
                                       int32_t partition)
{
    size_t i;

    for (i = 0; i < k->n_parts; i++) {
        if (k->parts[i]->partition == partition &&
            strcmp(k->parts[i]->topic, topic) == 0) {
            return k->parts[i];
        }
    }
    return NULL;
}

struct cons_part *
consumer_part_get(struct weir_consumer *k, const char *topic, int32_t partition)
{
    struct cons_part *cp = consumer_find(k, topic, partition);
    struct cons_part **v;

    if (cp != NULL) {
        return cp;
    }
    if (k->n_parts == k->cap_parts) {
        size_t cap = k->cap_parts == 0 ? 8 : k->cap_parts * 2;
        v = mem_realloc(k->parts, cap * sizeof(*v));
        if (v == NULL) {
            return NULL;
        }
        k->parts = v;
        k->cap_parts = cap;
    }
    cp = mem_calloc(1, sizeof(*cp));
    if (cp == NULL) {
        return NULL;
    }
    cp->topic = mem_strdup(topic);
    if (cp->topic == NULL) {
        mem_free(cp);
        return NULL;
    }
    cp->partition = partition;
    k->parts[k->n_parts++] = cp;
    return cp;
}

void consumer_part_start(struct weir_consumer *k,
                         struct cons_part *cp,
                         const struct weir_assignment *a)
{
    cp->assigned = true;
    cp->epoch++;
    cp->start = a->start;
    cp->start_value = a->value;
    cp->buffered = false;
    cp->err = 0;
    cp->err_reported = false;
    cp->failing_since_ms = 0;
    cp->backoff_until_ms = 0;
    cp->max_bytes = k->cfg.partition_max_bytes;
    if (a->start == WEIR_START_OFFSET) {
        cp->position = a->value;
        cp->fetch_offset = a->value;
        cp->state = CONS_FETCHABLE;
    } else {
        cp->position = -1;
        cp->fetch_offset = -1;
        cp->state = CONS_NEED_OFFSET;
    }
}

static int consumer_check(struct weir_consumer *k,
                          const struct weir_assignment *a,
                          size_t n,
                          struct err_detail *ed)
{
    struct md_topic *t;
    size_t i;
    int rv;

    for (i = 0; i < n; i++) {
        rv = client_topic(k->c, a[i].topic, i == 0, &t, ed);
        if (rv != 0) {
            return rv;
        }
        if (a[i].partition < 0 || a[i].partition >= t->n_partitions) {
            return err_set(ed, WEIR_EUNKNOWN_TOPIC_OR_PARTITION,
                           "topic '%s' has no partition %d (it has %d)",
                           a[i].topic, a[i].partition, t->n_partitions);
        }
        if (a[i].start == WEIR_START_OFFSET && a[i].value < 0) {
            return err_set(ed, WEIR_EINVALID_ARGUMENT,
                           "start offset %lld is negative",
                           (long long)a[i].value);
        }
    }
    return 0;
}

/* The first unresolved or failed partition, for assign's wait. */
static struct cons_part *consumer_unresolved(struct weir_consumer *k,
                                             bool *failed)
{
    size_t i;

    *failed = false;
    for (i = 0; i < k->n_parts; i++) {
        struct cons_part *cp = k->parts[i];
        if (!cp->assigned) {
            continue;
        }
        if (cp->state == CONS_FAILED) {
            *failed = true;
            return cp;
        }
        if (cp->state == CONS_NEED_OFFSET || cp->state == CONS_OFFSET_WAIT) {
            return cp;
        }
    }
    return NULL;
}

static int consumer_part_err(const struct cons_part *cp, struct err_detail *ed)
{
    return err_set(ed, cp->err != 0 ? cp->err : WEIR_EREQUEST_TIMED_OUT,
                   "%s/%d: %s", cp->topic, cp->partition,
                   cp->err != 0 ? cp->err_msg : "no start offset in time");
}

/* Poll until every start position is known, or fail. */
static int consumer_resolve(struct weir_consumer *k, struct err_detail *ed)
{
    uint64_t deadline = client_now_ms(k->c) + k->c->cfg.request_timeout_ms;
    struct cons_part *cp;
    bool failed;
    int rv;

    for (;;) {
        consumer_pump(k);
        cp = consumer_unresolved(k, &failed);
        if (cp == NULL) {
            return 0;
        }
        if (failed || client_now_ms(k->c) >= deadline ||
            (cp->err != 0 && !weir_err_retriable(cp->err)) ||
            cp->err == WEIR_ENETWORK) {
            cp->err_reported = true;
            return consumer_part_err(cp, ed);
        }
        rv = pool_poll(k->c->pool, NULL, 0, 50);
        if (rv != 0) {
            return err_set(ed, rv, "assign called from inside a callback");
        }
        if (pool_interrupted(k->c->pool)) {
            return err_set(ed, WEIR_EREQUEST_TIMED_OUT,
                           "interrupted by a signal");
        }
    }
}

int weir_consumer_assign(struct weir_consumer *k,
                         const struct weir_assignment *a,
                         size_t n,
                         struct err_detail *ed)
{
    struct cons_part *cp;
    size_t i;
    int rv;

    if (pool_in_poll(k->c->pool)) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "assign called from inside a callback");
    }
    if (k->grp.n_topics > 0) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "the consumer is subscribed to a group; it cannot "
                       "also assign partitions by hand");
    }
    k->manual = true;
    rv = consumer_check(k, a, n, ed);
    if (rv != 0) {
        return rv;
    }
    for (i = 0; i < k->n_parts; i++) {
        k->parts[i]->assigned = false;
        k->parts[i]->epoch++;
    }
    for (i = 0; i < n; i++) {
        cp = consumer_part_get(k, a[i].topic, a[i].partition);
        if (cp == NULL) {
            return err_set(ed, WEIR_ENOMEM, "out of memory");
        }
        consumer_part_start(k, cp, &a[i]);
    }
    return consumer_resolve(k, ed);
}

/* The next record from the queued chunks, or NULL. */
static int consumer_next(struct weir_consumer *k,
                         const struct weir_record **rec,
                         struct err_detail *ed)
{
    struct batch_record br;
    struct cons_chunk *ch;
    struct cons_part *cp;
    bool got;
    int rv;

    while ((ch = k->head) != NULL) {
        cp = ch->part;
        if (ch->epoch != cp->epoch || !cp->assigned) {
            consumer_drop_head(k);
            continue;
        }
        rv = recset_next(&ch->rs, &br, &got, ed);
        if (rv != 0) {
            err_wrap(ed, "%s/%d", cp->topic, cp->partition);
            cp->state = CONS_FAILED;
            cp->err = rv;
            cp->err_reported = true;
            consumer_drop_head(k);
            return rv;
        }
        if (!got) {
            if (ch->next_offset > cp->position) {
                cp->position = ch->next_offset;
            }
            consumer_drop_head(k);
            continue;
        }
        if (br.offset < cp->position) {
            continue;
        }
        cp->position = br.offset + 1;
        k->rec.topic = cp->topic;
        k->rec.partition = cp->partition;
        k->rec.offset = br.offset;
        k->rec.timestamp = br.timestamp;
        k->rec.key_null = br.key_null;
        k->rec.key = br.key.p;
        k->rec.key_len = br.key.len;
        k->rec.value_null = br.value_null;
        k->rec.value = br.value.p;
        k->rec.value_len = br.value.len;
        *rec = &k->rec;
        return 0;
    }
    return 0;
}

/* A failed partition not yet reported, or one failing retriably for
 * longer than error_timeout_ms (reported again after as long). */
static int
consumer_report(struct weir_consumer *k, uint64_t now, struct err_detail *ed)
{
    size_t i;

    for (i = 0; i < k->n_parts; i++) {
        struct cons_part *cp = k->parts[i];
        if (!cp->assigned || cp->err == 0) {
            continue;
        }
        if (cp->state == CONS_FAILED && !cp->err_reported) {
            cp->err_reported = true;
            return consumer_part_err(cp, ed);
        }
        if (cp->state != CONS_FAILED && cp->failing_since_ms != 0 &&
            now >= cp->failing_since_ms + k->cfg.error_timeout_ms) {
            cp->failing_since_ms = now;
            return consumer_part_err(cp, ed);
        }
    }
    return 0;
}

int weir_consumer_poll(struct weir_consumer *k,
                       int timeout_ms,
                       const struct weir_record **rec,
                       struct err_detail *ed)
{
    uint64_t start = client_now_ms(k->c);
    uint64_t now;
    int wait;
    int rv;

    *rec = NULL;
    if (pool_in_poll(k->c->pool)) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT,
                       "weir_consumer_poll called from inside a callback");
    }
    for (;;) {
        rv = consumer_group_pump(k, ed);
        if (rv != 0) {
            return rv;
        }
        /* A group member hands out nothing while it rebalances: what it
         * handed out after its last commit would be read again by the
         * next owner. */
        rv = k->grp.group_id == NULL || k->grp.core.state == CGRP_STATE_STABLE
                 ? consumer_next(k, rec, ed)
                 : 0;
        if (rv != 0 || *rec != NULL) {
            return rv;
        }
        now = client_now_ms(k->c);
        rv = consumer_report(k, now, ed);
        if (rv != 0) {
            return rv;
        }
        consumer_pump(k);
        if (timeout_ms >= 0 && now >= start + (uint64_t)timeout_ms) {
            return 0;
        }
        wait = timeout_ms < 0 ? -1 : (int)(start + (uint64_t)timeout_ms - now);
        if (k->grp.wake_ms < k->wake_ms) {
            k->wake_ms = k->grp.wake_ms;
        }
        if (k->wake_ms != UINT64_MAX) {
            uint64_t left = k->wake_ms > now ? k->wake_ms - now : 0;
            if (wait < 0 || left < (uint64_t)wait) {
                wait = (int)left;
            }
        }
        (void)pool_poll(k->c->pool, NULL, 0, wait);
        if (pool_interrupted(k->c->pool)) {
            return consumer_next(k, rec, ed);
        }
    }
}

int64_t weir_consumer_position(const struct weir_consumer *k,
                               const char *topic,
                               int32_t partition)
{
    const struct cons_part *cp = consumer_find(k, topic, partition);

    return cp != NULL && cp->assigned ? cp->position : -1;
}

int weir_consumer_seek(struct weir_consumer *k,
                       const char *topic,
                       int32_t partition,
                       int64_t offset,
                       struct err_detail *ed)
{
    return weir_consumer_seek_to(k, topic, partition, WEIR_START_OFFSET, offset,
                                 ed);
}

int weir_consumer_seek_to(struct weir_consumer *k,
                          const char *topic,
                          int32_t partition,
                          enum weir_start start,
                          int64_t value,
                          struct err_detail *ed)
{
    struct cons_part *cp = consumer_find(k, topic, partition);
    struct weir_assignment a = {topic, partition, start, value};

    if (cp == NULL || !cp->assigned) {
        return err_set(ed, WEIR_ENOT_FOUND, "%s/%d is not assigned", topic,
                       partition);
    }
    if ((start == WEIR_START_OFFSET || start == WEIR_START_TIMESTAMP) &&
        value < 0) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT, "%s %lld is negative",
                       start == WEIR_START_OFFSET ? "offset" : "timestamp",
                       (long long)value);
    }
    consumer_part_start(k, cp, &a);
    return 0;
}

size_t weir_consumer_assignment(const struct weir_consumer *k,
                                struct weir_topic_partition *out,
                                size_t cap)
{
    size_t n = 0;
    size_t i;

    for (i = 0; i < k->n_parts; i++) {
        if (!k->parts[i]->assigned) {
            continue;
        }
        if (n < cap) {
            out[n].topic = k->parts[i]->topic;
            out[n].partition = k->parts[i]->partition;
        }
        n++;
    }
    return n;
}
