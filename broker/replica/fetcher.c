/* SPDX-License-Identifier: Apache-2.0 */
/* Replica fetcher; see fetcher.h. It only moves bytes: each partition's
 * follower core (repl_io_follow.c) says what to ask for and what to do
 * with the answer. */
#include "broker/replica/fetcher.h"

#include <event2/event.h>
#include <stdio.h>
#include <string.h>

#include "broker/broker.h"
#include "broker/cluster/cluster_conn.h"
#include "broker/replica/repl_io_int.h"
#include "broker/storage/logmgr.h"
#include "common/mem.h"
#include "common/trace.h"
#include "controller/meta/meta_image.h"

#define FETCHER_MAX_WAIT_MS 500
#define FETCHER_CALL_MS     (FETCHER_MAX_WAIT_MS + 5000)
#define FETCHER_PART_MAX    (1u << 20)
#define FETCHER_MAX_PARTS   1024

struct fetcher {
    struct repl_io *io;
    int32_t leader;
    char addr[300];
    struct cconn *conn;
    struct event *timer; /* next fetch (now or after a backoff) */
    bool in_flight;
    uint32_t next_part; /* index in io->parts where the next plan starts:
                           past the last one a full request carried */
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
    return p->role == CLUSTER_ROLE_FOLLOWER && p->leader == f->leader &&
           !p->failed;
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

/* One partition's answer, handed to its follower core. */
static void fetcher_one(struct fetcher *f,
                        const Weir__FetchPartitionResult *res,
                        const uint8_t *data)
{
    struct repl_io_part *p = fetcher_part(f, res->topic, res->partition);
    struct repl_io_answer a;
    struct plog *log;

    if (p == NULL || (res->topic_id != 0 && res->topic_id != p->topic_id)) {
        return; /* no longer followed from this leader, or an answer about
                   a topic deleted since (same name, old id) */
    }
    log = logmgr_partition(f->io->b->logs, p->topic, p->partition);
    if (log == NULL) {
        return;
    }
    memset(&a, 0, sizeof(a));
    a.err = res->error_code;
    a.err_msg = res->error_message != NULL ? res->error_message : "";
    a.leader_epoch = res->leader_epoch;
    a.log_start_offset = res->log_start_offset;
    a.high_watermark = res->high_watermark;
    a.diverging_epoch = res->diverging_epoch;
    a.diverging_end_offset = res->diverging_end_offset;
    a.data = data;
    a.len = res->payload_bytes;
    repl_io_follow_answer(f->io, p, log, &a);
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
        fetcher_arm(f, REPL_IO_FETCH_BACKOFF_MS);
        return;
    }
    fr = resp->fetch;
    for (i = 0; i < fr->n_partitions; i++) {
        const Weir__FetchPartitionResult *res = fr->partitions[i];

        if (pos + res->payload_bytes > payload_len) {
            trace_warn("replica",
                       "event=fetch_answer_malformed leader=%d addr=%s "
                       "reason=\"payload shorter than its partitions say\"",
                       (int)f->leader, f->addr);
            fetcher_arm(f, REPL_IO_FETCH_BACKOFF_MS);
            return;
        }
        fetcher_one(f, res, payload + pos);
        pos += res->payload_bytes;
    }
    fetcher_arm(f, 0); /* the send decides what may go now */
}

/* Fill fps with the fetches the partitions' cores allow now; *next_ms is
 * when the next one may go if none does. Returns their number. When more
 * partitions may go than a request carries (cap), the next plan starts
 * after the last one taken, so every partition gets its turn: starting
 * from the first each time, the ones past the cap were never fetched. */
static uint32_t fetcher_plan(struct fetcher *f,
                             Weir__FetchPartition *fps,
                             Weir__FetchPartition **ptrs,
                             uint32_t cap,
                             uint64_t *next_ms)
{
    uint64_t now = clock_now_ms(f->io->b->clock);
    uint32_t total = f->io->n;
    uint32_t start = total > 0 ? f->next_part % total : 0;
    struct repl_fetch_params fp;
    uint32_t n = 0;
    uint32_t k;

    *next_ms = REPL_TICK_NEVER;
    for (k = 0; k < total && n < cap; k++) {
        uint32_t i = (start + k) % total;
        struct repl_io_part *p = f->io->parts[i];
        struct plog *log;

        if (!fetcher_follows(f, p)) {
            continue;
        }
        log = logmgr_partition(f->io->b->logs, p->topic, p->partition);
        if (log == NULL || plog_is_offline(log) ||
            !repl_io_follow_params(f->io, p, log, now, &fp, next_ms)) {
            continue; /* an offline log copies nothing until it is back */
        }
        weir__fetch_partition__init(&fps[n]);
        fps[n].topic = p->topic;
        fps[n].partition = p->partition;
        fps[n].fetch_offset = fp.fetch_offset;
        fps[n].partition_max_bytes = FETCHER_PART_MAX;
        fps[n].current_leader_epoch = fp.current_leader_epoch;
        fps[n].topic_id = p->topic_id;
        fps[n].last_fetched_epoch = fp.last_fetched_epoch;
        ptrs[n] = &fps[n];
        n++;
        if (n == cap) {
            f->next_part = (i + 1) % total;
        }
    }
    if (*next_ms != REPL_TICK_NEVER) {
        *next_ms = *next_ms > now ? *next_ms - now : 0;
    }
    return n;
}

static void fetcher_send(struct fetcher *f)
{
    Weir__Request req = WEIR__REQUEST__INIT;
    Weir__FetchRequest fr = WEIR__FETCH_REQUEST__INIT;
    Weir__FetchPartition *fps = NULL;
    Weir__FetchPartition **ptrs = NULL;
    struct broker *b = f->io->b;
    uint64_t wait_ms;
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
    fps = mem_calloc(n, sizeof(*fps));
    ptrs = mem_calloc(n, sizeof(*ptrs));
    if (fps == NULL || ptrs == NULL) {
        mem_free(fps);
        mem_free(ptrs);
        fetcher_arm(f, REPL_IO_FETCH_BACKOFF_MS);
        return;
    }
    n = fetcher_plan(f, fps, ptrs, n, &wait_ms);
    rv = n > 0 ? fetcher_connect(f) : 0;
    if (n == 0 || rv != 0) {
        mem_free(fps);
        mem_free(ptrs);
        /* nothing may go yet (backoff, or stopped until new metadata,
           which kicks), or no address for the leader */
        if (rv != 0) {
            fetcher_arm(f, REPL_IO_FETCH_BACKOFF_MS);
        } else if (wait_ms != REPL_TICK_NEVER) {
            fetcher_arm(f,
                        wait_ms > UINT32_MAX ? UINT32_MAX : (uint32_t)wait_ms);
        }
        return;
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
    rv = cconn_call(f->conn, &req, FETCHER_CALL_MS, fetcher_reply, f);
    mem_free(fps);
    mem_free(ptrs);
    if (rv != 0) {
        fetcher_arm(f, REPL_IO_FETCH_BACKOFF_MS);
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
