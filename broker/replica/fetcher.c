/* SPDX-License-Identifier: Apache-2.0 */
/* Replica fetcher; see fetcher.h. */
#include "broker/replica/fetcher.h"

#include <event2/event.h>
#include <stdio.h>
#include <string.h>

#include "broker/broker.h"
#include "broker/cluster/cluster_conn.h"
#include "broker/idem/idem_io.h"
#include "broker/replica/repl_io_int.h"
#include "broker/storage/logmgr.h"
#include "broker/storage/plog.h"
#include "common/batch.h"
#include "common/mem.h"
#include "common/trace.h"
#include "controller/meta/meta_image.h"

#define FETCHER_MAX_WAIT_MS 500
#define FETCHER_CALL_MS     (FETCHER_MAX_WAIT_MS + 5000)
#define FETCHER_BACKOFF_MS  200
#define FETCHER_PART_MAX    (1u << 20)
#define FETCHER_MAX_PARTS   1024

struct fetcher {
    struct repl_io *io;
    int32_t leader;
    char addr[300];
    struct cconn *conn;
    struct event *timer; /* next fetch (now or after a backoff) */
    bool in_flight;
};

static void fetcher_timer_cb(evutil_socket_t fd, short what, void *arg);

int fetcher_new(struct repl_io *io, int32_t leader, struct fetcher **out)
{
    struct fetcher *f = mem_calloc(1, sizeof(*f));

    if (f == NULL) {
        return WEIR_ENOMEM;
    }
    f->io = io;
    f->leader = leader;
    f->timer = evtimer_new(io->b->base, fetcher_timer_cb, f);
    if (f->timer == NULL) {
        mem_free(f);
        return WEIR_ENOMEM;
    }
    *out = f;
    return 0;
}

void fetcher_free(struct fetcher *f)
{
    if (f == NULL) {
        return;
    }
    cconn_free(f->conn); /* pending reply forgotten without a callback */
    event_free(f->timer);
    mem_free(f);
}

int32_t fetcher_leader(const struct fetcher *f)
{
    return f->leader;
}

static void fetcher_arm(struct fetcher *f, uint32_t ms)
{
    struct timeval tv = {.tv_sec = ms / 1000,
                         .tv_usec = (suseconds_t)(ms % 1000) * 1000};

    (void)evtimer_add(f->timer, &tv);
}

void fetcher_kick(struct fetcher *f)
{
    if (!f->in_flight && !evtimer_pending(f->timer, NULL)) {
        fetcher_arm(f, 0);
    }
}

static bool fetcher_follows(const struct fetcher *f,
                            const struct repl_io_part *p)
{
    return p->role == CLUSTER_ROLE_FOLLOWER && p->leader == f->leader;
}

/* The leader's current address; recreate the connection when it moved. */
static int fetcher_connect(struct fetcher *f)
{
    const struct meta_image *img = cluster_image(f->io->b->cluster);
    const struct meta_broker *mb =
        img != NULL ? meta_image_broker(img, f->leader) : NULL;
    char addr[sizeof(f->addr)];

    if (mb == NULL || mb->host == NULL) {
        return WEIR_ELEADER_NOT_AVAILABLE;
    }
    (void)snprintf(addr, sizeof(addr), "%s:%u", mb->host, (unsigned)mb->port);
    if (f->conn != NULL && strcmp(addr, f->addr) == 0) {
        return 0;
    }
    cconn_free(f->conn);
    f->conn = NULL;
    (void)snprintf(f->addr, sizeof(f->addr), "%s", addr);
    if (cconn_new(f->io->b->base, f->addr, &f->conn) != 0) {
        return WEIR_ENOMEM;
    }
    if (f->io->b->tls_client != NULL) {
        cconn_use_tls(f->conn, f->io->b->tls_client);
    }
    cconn_use_sasl(f->conn, f->io->b->cfg.sasl_mechanism,
                   f->io->b->cfg.sasl_username, f->io->b->cfg.sasl_password);
    return 0;
}

/* Truncate a diverging log to end (never above its end) with its cache. */
static void fetcher_truncate(struct fetcher *f,
                             struct repl_io_part *p,
                             struct plog *log,
                             int64_t end)
{
    struct err_detail ed;
    int64_t leo = plog_end_offset(log);
    int rv;

    if (end >= leo) {
        return;
    }
    if (end < plog_start_offset(log)) {
        end = plog_start_offset(log);
    }
    if (end < p->follower_hw) {
        /* committed records are never cut in a clean election: only an
         * unclean one (or a bug) gets here; say so loudly */
        trace_error("replica",
                    "event=truncate_below_high_watermark topic=%s "
                    "partition=%d to=%lld high_watermark=%lld leader=%d",
                    p->topic, (int)p->partition, (long long)end,
                    (long long)p->follower_hw, (int)f->leader);
        p->follower_hw = end;
    }
    err_detail_clear(&ed);
    rv = plog_truncate_to(log, end, &ed);
    if (rv == 0) {
        rv = plog_flush(log, &ed);
    }
    if (rv != 0) {
        trace_error("replica",
                    "event=truncate_failed topic=%s partition=%d to=%lld "
                    "error=%s msg=\"%s\"",
                    p->topic, (int)p->partition, (long long)end,
                    weir_err_name(rv), ed.msg);
        return;
    }
    (void)repl_epochs_truncate_from_end(&p->epochs, end);
    repl_io_part_store(p, log);
    idem_io_invalidate(f->io->b->idem, p->topic, p->partition);
    trace_info("replica",
               "event=truncated topic=%s partition=%d from=%lld to=%lld "
               "leader=%d",
               p->topic, (int)p->partition, (long long)leo, (long long)end,
               (int)f->leader);
}

/* Append fetched batches (skipping any this log already holds); records
 * each new epoch in the cache. Returns 0 or an error (traced). */
static int fetcher_append(struct repl_io_part *p,
                          struct plog *log,
                          const uint8_t *data,
                          size_t len,
                          int64_t wall_ms,
                          bool *epochs_changed)
{
    struct weir_slice all = {data, len};
    struct weir_slice whole;
    struct batch_header h;
    struct err_detail ed;
    size_t pos = 0;
    size_t start;
    int64_t last;
    int rv;

    err_detail_clear(&ed);
    /* the first batch may start before the fetch offset */
    for (;;) {
        start = pos;
        rv = batch_next(all, &pos, UINT32_MAX, true, &h, &whole, &ed);
        if (rv != 0 || whole.len == 0) {
            return rv; /* 0: nothing new */
        }
        if (h.base_offset + h.last_offset_delta >= plog_end_offset(log)) {
            break;
        }
    }
    /* whole batches from start on (a cut tail is left for the next fetch) */
    pos = start;
    while (pos < len) {
        size_t at = pos;

        if (batch_next(all, &pos, UINT32_MAX, true, &h, &whole, &ed) != 0 ||
            whole.len == 0) {
            pos = at;
            break;
        }
    }
    if (pos == start) {
        return 0;
    }
    rv = plog_append_replica(log, data + start, pos - start, wall_ms, &last,
                             &ed);
    if (rv != 0) {
        trace_warn("replica",
                   "event=replica_append_failed topic=%s partition=%d "
                   "error=%s msg=\"%s\"",
                   p->topic, (int)p->partition, weir_err_name(rv), ed.msg);
        return rv;
    }
    for (len = pos, pos = start; pos < len;) {
        if (batch_next(all, &pos, UINT32_MAX, true, &h, &whole, &ed) != 0 ||
            whole.len == 0) {
            break;
        }
        if (h.leader_epoch > repl_epochs_latest_epoch(&p->epochs) &&
            repl_epochs_assign(&p->epochs, h.leader_epoch, h.base_offset) ==
                0) {
            *epochs_changed = true;
        }
    }
    return 0;
}

static struct repl_io_part *
fetcher_part(struct fetcher *f, const char *topic, int32_t partition)
{
    uint32_t i;

    for (i = 0; i < f->io->n; i++) {
        struct repl_io_part *p = f->io->parts[i];

        if (p->partition == partition && strcmp(p->topic, topic) == 0) {
            return fetcher_follows(f, p) ? p : NULL;
        }
    }
    return NULL;
}

/* One partition's answer. Returns true when the fetcher should back off. */
static bool fetcher_one(struct fetcher *f,
                        const Weir__FetchPartitionResult *res,
                        const uint8_t *data,
                        struct plog **flush,
                        bool *changed)
{
    struct repl_io_part *p = fetcher_part(f, res->topic, res->partition);
    struct plog *log;

    *flush = NULL;
    *changed = false;
    if (p == NULL || (res->topic_id != 0 && res->topic_id != p->topic_id)) {
        return false; /* no longer followed from this leader, or an answer
                         about a topic deleted since (same name, old id) */
    }
    log = logmgr_partition(f->io->b->logs, p->topic, p->partition);
    if (log == NULL) {
        return true;
    }
    if (res->error_code != 0) {
        trace_debug("replica",
                    "event=fetch_refused topic=%s partition=%d leader=%d "
                    "error=%s msg=\"%s\"",
                    p->topic, (int)p->partition, (int)f->leader,
                    weir_err_name(res->error_code),
                    res->error_message != NULL ? res->error_message : "");
        return true; /* FENCED / UNKNOWN epoch / NOT_LEADER: wait */
    }
    if (res->diverging_end_offset >= 0) {
        if (res->leader_epoch != p->leader_epoch || res->diverging_epoch < 0) {
            trace_warn("replica",
                       "event=divergence_ignored topic=%s partition=%d "
                       "leader=%d answer_epoch=%d our_epoch=%d "
                       "diverging_epoch=%d end_offset=%lld",
                       p->topic, (int)p->partition, (int)f->leader,
                       (int)res->leader_epoch, (int)p->leader_epoch,
                       (int)res->diverging_epoch,
                       (long long)res->diverging_end_offset);
            return true;
        }
        fetcher_truncate(f, p, log, res->diverging_end_offset);
        return false;
    }
    if (res->high_watermark > p->follower_hw) {
        p->follower_hw = res->high_watermark;
    }
    if (res->payload_bytes == 0) {
        return false;
    }
    if (fetcher_append(p, log, data, res->payload_bytes,
                       clock_wall_ms(f->io->b->clock), changed) != 0) {
        return true;
    }
    *flush = log;
    return false;
}

static void fetcher_reply(void *arg,
                          int err,
                          const Weir__Response *resp,
                          const uint8_t *payload,
                          uint32_t payload_len,
                          const struct err_detail *ed)
{
    struct fetcher *f = arg;
    const Weir__FetchResponse *fr;
    struct err_detail fed;
    bool backoff = false;
    uint64_t pos = 0;
    size_t i;

    f->in_flight = false;
    if (err != 0 || resp == NULL ||
        resp->body_case != WEIR__RESPONSE__BODY_FETCH) {
        trace_debug("replica",
                    "event=fetch_failed leader=%d addr=%s error=%s msg=\"%s\"",
                    (int)f->leader, f->addr,
                    weir_err_name(err != 0 ? err : WEIR_ENETWORK),
                    ed != NULL ? ed->msg : "");
        fetcher_arm(f, FETCHER_BACKOFF_MS);
        return;
    }
    fr = resp->fetch;
    for (i = 0; i < fr->n_partitions; i++) {
        const Weir__FetchPartitionResult *res = fr->partitions[i];
        struct repl_io_part *p;
        struct plog *log = NULL;
        bool changed = false;

        if (pos + res->payload_bytes > payload_len) {
            backoff = true;
            break;
        }
        backoff |= fetcher_one(f, res, payload + pos, &log, &changed);
        pos += res->payload_bytes;
        if (log == NULL) {
            continue;
        }
        /* durable before the next fetch tells the leader we have it */
        err_detail_clear(&fed);
        if (plog_flush(log, &fed) != 0) {
            trace_error("replica",
                        "event=replica_flush_failed topic=%s partition=%d "
                        "msg=\"%s\"",
                        res->topic, (int)res->partition, fed.msg);
            backoff = true;
            continue;
        }
        p = fetcher_part(f, res->topic, res->partition);
        if (changed && p != NULL) {
            repl_io_part_store(p, log);
        }
    }
    fetcher_arm(f, backoff ? FETCHER_BACKOFF_MS : 0);
}

static void fetcher_send(struct fetcher *f)
{
    Weir__Request req = WEIR__REQUEST__INIT;
    Weir__FetchRequest fr = WEIR__FETCH_REQUEST__INIT;
    Weir__FetchPartition *fps = NULL;
    Weir__FetchPartition **ptrs = NULL;
    struct broker *b = f->io->b;
    uint32_t n = 0;
    uint32_t i;
    int rv;

    for (i = 0; i < f->io->n; i++) {
        n += fetcher_follows(f, f->io->parts[i]) ? 1 : 0;
    }
    if (n == 0) {
        return; /* idle until kicked */
    }
    if (n > FETCHER_MAX_PARTS) {
        n = FETCHER_MAX_PARTS;
    }
    rv = fetcher_connect(f);
    fps = mem_calloc(n, sizeof(*fps));
    ptrs = mem_calloc(n, sizeof(*ptrs));
    if (rv != 0 || fps == NULL || ptrs == NULL) {
        mem_free(fps);
        mem_free(ptrs);
        fetcher_arm(f, FETCHER_BACKOFF_MS);
        return;
    }
    n = 0;
    for (i = 0; i < f->io->n && n < FETCHER_MAX_PARTS; i++) {
        struct repl_io_part *p = f->io->parts[i];
        struct plog *log;

        if (!fetcher_follows(f, p)) {
            continue;
        }
        log = logmgr_partition(b->logs, p->topic, p->partition);
        if (log == NULL || plog_is_offline(log)) {
            continue; /* an offline log copies nothing until it is back */
        }
        repl_io_part_load(p, log);
        weir__fetch_partition__init(&fps[n]);
        fps[n].topic = p->topic;
        fps[n].partition = p->partition;
        fps[n].fetch_offset = plog_end_offset(log);
        fps[n].partition_max_bytes = FETCHER_PART_MAX;
        fps[n].current_leader_epoch = p->leader_epoch;
        fps[n].topic_id = p->topic_id;
        fps[n].last_fetched_epoch = repl_epochs_latest_epoch(&p->epochs);
        ptrs[n] = &fps[n];
        n++;
    }
    fr.max_wait_ms = FETCHER_MAX_WAIT_MS;
    fr.min_bytes = 1;
    fr.max_bytes = 0;
    fr.partitions = ptrs;
    fr.n_partitions = n;
    fr.replica_id = (int32_t)b->cfg.id;
    fr.broker_epoch = cluster_broker_epoch(b->cluster);
    req.client_id = "weir-replica-fetcher";
    req.body_case = WEIR__REQUEST__BODY_FETCH;
    req.fetch = &fr;
    rv = n > 0 ? cconn_call(f->conn, &req, FETCHER_CALL_MS, fetcher_reply, f)
               : WEIR_ENOT_FOUND;
    mem_free(fps);
    mem_free(ptrs);
    if (rv != 0) {
        fetcher_arm(f, FETCHER_BACKOFF_MS);
        return;
    }
    f->in_flight = true;
}

static void fetcher_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct fetcher *f = arg;

    (void)fd;
    (void)what;
    if (!f->in_flight) {
        fetcher_send(f);
    }
}
