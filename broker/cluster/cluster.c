/* SPDX-License-Identifier: Apache-2.0 */
/* Broker control plane: registration (retried with backoff), heartbeats
 * carrying the applied metadata offset, the metadata long poll, fencing,
 * controlled shutdown and AlterIsr. The controller decides; this file only
 * keeps the broker talking to it and applies what it says. */
#include "broker/cluster/cluster_int.h"

#include <event2/event.h>
#include <stdio.h>
#include <string.h>

#include "broker/broker.h"
#include "common/mem.h"
#include "common/net/addr.h"
#include "common/trace.h"
#include "controller/meta/meta_chain.h"

#define CLUSTER_FETCH_WAIT_MS         5000
#define CLUSTER_FETCH_BYTES           (1024u * 1024)
#define CLUSTER_CALL_MS               5000
#define CLUSTER_HEARTBEAT_CALL_MIN_MS 1000
#define CLUSTER_BACKOFF_MIN_MS        100
#define CLUSTER_BACKOFF_MAX_MS        2000
#define CLUSTER_RETRY_MIN_MS          10 /* a failed call to a member just moved to */
#define CLUSTER_SESSION_DEFAULT_MS                                             \
    3000 /* the controller's default, until it says otherwise */

static void cluster_arm(struct event *ev, uint64_t ms)
{
    struct timeval tv = {(time_t)(ms / 1000),
                         (suseconds_t)((ms % 1000) * 1000)};

    (void)event_add(ev, &tv);
}

static uint64_t cluster_backoff(struct cluster *c)
{
    uint64_t ms = c->backoff_ms;

    c->backoff_ms =
        ms * 2 > CLUSTER_BACKOFF_MAX_MS ? CLUSTER_BACKOFF_MAX_MS : ms * 2;
    return ms;
}

/* When to call again after a call failed with err. A network failure, a
 * timeout or NOT_CONTROLLER was reported to the finder first (cconn
 * reports before it answers), which moved to the next member and knows
 * when it may be called: then, not a backoff of our own on top (a broker
 * finds a new active controller as soon as the finder allows, which the
 * controller's first-contact timeout counts on). Anything else (a refused
 * or unusable answer) backs off here. */
static uint64_t cluster_retry_ms(struct cluster *c, int err)
{
    uint64_t now = clock_now_ms(c->b->clock);
    uint64_t nb = cluster_finder_not_before(&c->finder);

    if (err == WEIR_ENETWORK || err == WEIR_ENOT_CONTROLLER ||
        err == WEIR_EREQUEST_TIMED_OUT) {
        return nb > now ? nb - now + 1 : CLUSTER_RETRY_MIN_MS;
    }
    return cluster_backoff(c);
}

/* Controlled shutdown is over (or timed out): let the broker stop. */
static void cluster_stop_broker(struct cluster *c, const char *how)
{
    struct broker *b = c->b;

    if (b->stopping) {
        return;
    }
    trace_info("cluster", "event=controlled_shutdown_done broker=%d how=%s",
               (int)c->id, how);
    b->stopping = true;
    (void)event_base_loopexit(b->base, NULL);
}

static void cluster_register(struct cluster *c);

static void cluster_register_reply(void *arg,
                                   int err,
                                   const Weir__Response *resp,
                                   const uint8_t *payload,
                                   uint32_t len,
                                   const struct err_detail *ed)
{
    struct cluster *c = arg;

    (void)payload;
    (void)len;
    c->registering = false;
    if (err == WEIR_EINCONSISTENT_CLUSTER_ID) {
        /* not retried from here: the metadata poll keeps asking, and its
         * first accepted answer registers again */
        cluster_ident_refused(c, ed->msg);
        return;
    }
    if (err != 0 || resp->body_case != WEIR__RESPONSE__BODY_REGISTER_BROKER) {
        uint64_t ms = cluster_backoff(c);
        trace_warn("cluster",
                   "event=register_failed broker=%d error=%s msg=\"%s\" "
                   "retry_ms=%llu",
                   (int)c->id, weir_err_name(err != 0 ? err : WEIR_EMALFORMED),
                   ed->msg, (unsigned long long)ms);
        cluster_arm(c->register_timer, ms);
        return;
    }
    if (!cluster_ident_accept_register(c, resp->register_broker)) {
        return;
    }
    c->backoff_ms = CLUSTER_BACKOFF_MIN_MS;
    c->broker_epoch = resp->register_broker->broker_epoch;
    c->fenced = true;
    c->session_timeout_ms = resp->register_broker->session_timeout_ms > 0
                                ? resp->register_broker->session_timeout_ms
                                : CLUSTER_SESSION_DEFAULT_MS;
    cluster_watch_init(&c->watch, clock_now_ms(c->b->clock));
    trace_info("cluster",
               "event=registered broker=%d epoch=%lld controller=%s "
               "cluster_id=%s directory_id=%s previous_epoch=%lld",
               (int)c->id, (long long)c->broker_epoch, cluster_controller(c),
               c->b->ident.props.cluster_id, c->b->ident.props.directory_id,
               (long long)c->sent_previous_epoch);
    c->registered_once = true;
    /* the image may hold the registration already (the metadata poll
     * can be answered first): leaderships may apply now */
    cluster_resync(c);
}

static void cluster_register(struct cluster *c)
{
    const struct broker *b = c->b;
    Weir__Request req = WEIR__REQUEST__INIT;
    Weir__RegisterBrokerRequest m = WEIR__REGISTER_BROKER_REQUEST__INIT;
    struct cluster_offline off;
    int rv;

    /* only with a controller whose metadata was accepted: registering
     * writes to its log */
    if (c->registering || c->shutting_down || !c->accepted_once ||
        c->refusal != CLUSTER_REFUSAL_NONE) {
        return;
    }
    m.broker_id = c->id;
    m.cluster_id = (char *)b->ident.props.cluster_id;
    m.directory_id = (char *)b->ident.props.directory_id;
    /* the epoch of the last clean stop for this process's first
     * registration (retries of it included: the controller judges a
     * retry by the epoch it judged the first attempt with); a running
     * broker registering again never stopped, so it sends the epoch it
     * holds, which the controller takes for a clean stop */
    m.previous_broker_epoch =
        c->registered_once ? c->broker_epoch : b->ident.previous_epoch;
    c->sent_previous_epoch = m.previous_broker_epoch;
    m.default_flush_policy =
        (char *)broker_flush_policy_name(b->log_defaults.flush_policy);
    m.host = (char *)b->adv_host;
    m.port = b->adv_port;
    m.rack = b->cfg.rack != NULL ? b->cfg.rack : "";
    if (b->srv_tls != NULL) {
        m.tls_host = (char *)b->tls_adv_host;
        m.tls_port = b->tls_adv_port;
    }
    req.client_id = "weir-broker";
    req.body_case = WEIR__REQUEST__BODY_REGISTER_BROKER;
    req.register_broker = &m;
    /* a re-registration keeps the current epoch (and what it leads)
     * until the controller answers: a controller that is refused, or
     * unreachable, must not make this broker drop what it serves */
    cluster_offline_collect(c, &off);
    m.offline_replicas = off.ptrs;
    m.n_offline_replicas = off.n;
    rv = cconn_call(c->rpc, &req, CLUSTER_CALL_MS, cluster_register_reply, c);
    cluster_offline_fini(&off);
    if (rv != 0) {
        cluster_arm(c->register_timer, cluster_backoff(c));
        return;
    }
    c->registering = true;
}

static void cluster_register_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    cluster_register(arg);
}

static void cluster_fetch(struct cluster *c);

/* A controller that does not know this broker's epoch may be one whose
 * history is not ours (a member formatted by mistake, an older copy of
 * the log): registering would write to it before the metadata poll has
 * shown that. So the next poll goes now and without waiting for news, and
 * only an answer that passes the identity and history checks registers
 * (cluster_fetch_reply); a refused one registers nothing. */
static void cluster_register_after_check(struct cluster *c)
{
    if (c->register_after_check) {
        return; /* a check is under way */
    }
    c->register_after_check = true;
    trace_info("cluster", "event=register_after_check broker=%d controller=%s",
               (int)c->id, cluster_controller(c));
    if (cconn_pending(c->fetch) > 0) {
        cconn_reset(c->fetch); /* its answer retries at once */
    } else {
        cluster_arm(c->fetch_timer, 0);
    }
}

static void cluster_heartbeat_reply(void *arg,
                                    int err,
                                    const Weir__Response *resp,
                                    const uint8_t *payload,
                                    uint32_t len,
                                    const struct err_detail *ed)
{
    struct cluster *c = arg;
    const Weir__BrokerHeartbeatResponse *h;

    (void)payload;
    (void)len;
    c->hb_inflight = false;
    if (err == WEIR_ENOT_FOUND) {
        /* the controller no longer knows this incarnation */
        trace_warn("cluster", "event=registration_lost broker=%d msg=\"%s\"",
                   (int)c->id, ed->msg);
        if (c->shutting_down) {
            cluster_stop_broker(c, "unregistered");
            return;
        }
        cluster_register_after_check(c);
        return;
    }
    if (err != 0 || resp->body_case != WEIR__RESPONSE__BODY_BROKER_HEARTBEAT) {
        trace_debug("cluster", "event=heartbeat_failed msg=\"%s\"", ed->msg);
        cluster_follow_quorum(c, NULL); /* no longer a live view */
        return;
    }
    h = resp->broker_heartbeat;
    if (cluster_watch_contact(&c->watch, clock_now_ms(c->b->clock)) ==
        CLUSTER_WATCH_RESTORED) {
        trace_info("cluster",
                   "event=controller_contact_restored broker=%d controller=%s "
                   "leading=%u",
                   (int)c->id, cluster_controller(c), cluster_leading_count(c));
    }
    if (h->fenced != c->fenced) {
        trace_info("cluster", "event=%s broker=%d epoch=%lld",
                   h->fenced ? "fenced" : "unfenced", (int)c->id,
                   (long long)c->broker_epoch);
    }
    c->fenced = h->fenced;
    cluster_follow_quorum(c, h->quorum);
    if (c->shutting_down && h->shutdown_ok && !c->shutdown_ok) {
        c->shutdown_ok = true;
        trace_info("cluster", "event=shutdown_ok broker=%d", (int)c->id);
        cluster_applied(c);
    }
}

/* How long a heartbeat may go unanswered before the member counts as
 * gone (the finder then asks the next one): three heartbeat intervals, at
 * least 1 s. A controller that dies without closing anything (a host or
 * container gone, a cut network) is noticed this soon, not after the 5 s
 * of other calls: its successor is elected an election timeout or two
 * after the loss and fences brokers it has not heard from within its
 * first-contact timeout. An answer held for a commit takes milliseconds;
 * a false timeout costs one round of the members. */
static uint32_t cluster_heartbeat_call_ms(const struct cluster *c)
{
    uint64_t ms = 3 * (uint64_t)c->b->cfg.heartbeat_interval_ms;

    if (ms < CLUSTER_HEARTBEAT_CALL_MIN_MS) {
        ms = CLUSTER_HEARTBEAT_CALL_MIN_MS;
    }
    return ms < CLUSTER_CALL_MS ? (uint32_t)ms : CLUSTER_CALL_MS;
}

static void cluster_heartbeat(struct cluster *c)
{
    Weir__Request req = WEIR__REQUEST__INIT;
    Weir__BrokerHeartbeatRequest m = WEIR__BROKER_HEARTBEAT_REQUEST__INIT;
    struct cluster_offline off;

    if (c->broker_epoch < 0 || c->hb_inflight ||
        c->refusal != CLUSTER_REFUSAL_NONE) {
        return;
    }
    m.broker_id = c->id;
    m.broker_epoch = c->broker_epoch;
    m.cluster_id = (char *)c->b->ident.props.cluster_id;
    m.applied_offset = meta_image_end_offset(c->img) - 1;
    m.want_shutdown = c->shutting_down;
    cluster_offline_collect(c, &off); /* the whole set, every time */
    m.offline_replicas = off.ptrs;
    m.n_offline_replicas = off.n;
    req.client_id = "weir-broker";
    req.body_case = WEIR__REQUEST__BODY_BROKER_HEARTBEAT;
    req.broker_heartbeat = &m;
    if (cconn_call(c->rpc, &req, cluster_heartbeat_call_ms(c),
                   cluster_heartbeat_reply, c) == 0) {
        c->hb_inflight = true;
    }
    cluster_offline_fini(&off);
}

/* A leader that cannot reach the controller may have been replaced
 * already: say so while it lasts (cluster_watch.h). */
static void cluster_watch_check(struct cluster *c)
{
    uint64_t now = clock_now_ms(c->b->clock);
    uint32_t led = cluster_leading_count(c);

    if (cluster_watch_tick(&c->watch, now, c->session_timeout_ms, led) ==
        CLUSTER_WATCH_WARN) {
        trace_warn("cluster",
                   "event=controller_unreachable_while_leading broker=%d "
                   "controller=%s silent_ms=%llu session_timeout_ms=%llu "
                   "leading=%u msg=\"no heartbeat answered for longer than "
                   "the session timeout: the controller may have fenced "
                   "this broker and elected other leaders\"",
                   (int)c->id, cluster_controller(c),
                   (unsigned long long)cluster_watch_silent_ms(&c->watch, now),
                   (unsigned long long)c->session_timeout_ms, led);
    }
}

static void cluster_heartbeat_cb(evutil_socket_t fd, short what, void *arg)
{
    struct cluster *c = arg;

    (void)fd;
    (void)what;
    cluster_watch_check(c);
    cluster_ident_save_cluster(c);
    cluster_ident_save_applied(c, false);
    if (c->broker_epoch < 0) {
        cluster_register(c);
    } else {
        cluster_heartbeat(c);
    }
}

static void cluster_fetch_reply(void *arg,
                                int err,
                                const Weir__Response *resp,
                                const uint8_t *payload,
                                uint32_t len,
                                const struct err_detail *ed)
{
    struct cluster *c = arg;
    struct err_detail aed;
    int rv;

    if (err != 0 || resp->body_case != WEIR__RESPONSE__BODY_FETCH_METADATA) {
        if (!cluster_ident_refuse_fetch(c, err, ed->msg)) {
            trace_debug("cluster", "event=metadata_fetch_failed msg=\"%s\"",
                        ed->msg);
        }
        cluster_arm(c->fetch_timer, cluster_retry_ms(c, err));
        return;
    }
    if (!cluster_ident_accept_fetch(c, resp->fetch_metadata)) {
        cluster_arm(c->fetch_timer, cluster_backoff(c));
        return;
    }
    err_detail_clear(&aed);
    rv = cluster_apply(c, resp->fetch_metadata, payload, len, &aed);
    if (rv == WEIR_EMETADATA_DIVERGED) {
        (void)cluster_ident_refuse_fetch(c, rv, aed.msg);
        cluster_arm(c->fetch_timer, cluster_backoff(c));
        return;
    }
    if (rv != 0) {
        trace_error("cluster",
                    "event=metadata_apply_failed error=%s msg=\"%s\"",
                    weir_err_name(rv), aed.msg);
        cluster_arm(c->fetch_timer, cluster_backoff(c));
        return;
    }
    c->backoff_ms = CLUSTER_BACKOFF_MIN_MS;
    cluster_applied(c);
    if (c->broker_epoch < 0 || c->register_after_check) {
        /* the first accepted answer, healed, or this controller did not
         * know our epoch and its history checked out */
        c->register_after_check = false;
        cluster_register(c);
    }
    cluster_fetch(c);
}

static void cluster_fetch(struct cluster *c)
{
    Weir__Request req = WEIR__REQUEST__INIT;
    Weir__FetchMetadataRequest m = WEIR__FETCH_METADATA_REQUEST__INIT;
    int rv;

    m.broker_id = c->id;
    m.broker_epoch = c->broker_epoch;
    m.cluster_id = (char *)c->b->ident.props.cluster_id;
    cluster_ident_history_point(c, &m.history_offset, &m.history_chain);
    m.from_offset = meta_image_end_offset(c->img);
    m.max_wait_ms =
        c->caught_up && !c->register_after_check ? CLUSTER_FETCH_WAIT_MS : 0;
    m.max_bytes = CLUSTER_FETCH_BYTES;
    req.client_id = "weir-broker";
    req.body_case = WEIR__REQUEST__BODY_FETCH_METADATA;
    req.fetch_metadata = &m;
    rv = cconn_call(c->fetch, &req, CLUSTER_FETCH_WAIT_MS + CLUSTER_CALL_MS,
                    cluster_fetch_reply, c);
    if (rv != 0) {
        cluster_arm(c->fetch_timer, cluster_retry_ms(c, rv));
    }
}

static void cluster_fetch_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    cluster_fetch(arg);
}

void cluster_contact_soon(struct cluster *c, uint64_t delay_ms)
{
    /* the heartbeat (or registration) and the metadata poll go to the new
     * member as soon as it may be called, not at the next heartbeat tick
     * or fetch backoff: the new active controller fences brokers it has
     * not heard from within its first-contact timeout */
    cluster_arm(c->contact_timer, delay_ms + 1);
    if (cconn_pending(c->fetch) == 0) {
        cluster_arm(c->fetch_timer, delay_ms + 1);
    }
}

void cluster_applied(struct cluster *c)
{
    const struct meta_broker *self = meta_image_broker(c->img, c->id);

    cluster_api_wake(c, false);
    /* exit once the move of our leaderships is applied here too, so this
     * broker's last metadata answers already name the new leaders */
    if (c->shutdown_ok && (self == NULL || self->fenced || self->n_led == 0)) {
        cluster_stop_broker(c, "leaderships_moved");
    }
}

static void
cluster_shutdown_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
    struct cluster *c = arg;

    (void)fd;
    (void)what;
    trace_warn("cluster", "event=controlled_shutdown_timeout broker=%d",
               (int)c->id);
    cluster_stop_broker(c, "timeout");
}

bool cluster_shutdown_begin(struct cluster *c)
{
    if (c->shutting_down) {
        return true;
    }
    /* a refused controller is not asked for anything */
    if (c->broker_epoch < 0 || c->b->cfg.controlled_shutdown_timeout_ms == 0 ||
        c->refusal != CLUSTER_REFUSAL_NONE) {
        return false;
    }
    c->shutting_down = true;
    trace_info("cluster",
               "event=controlled_shutdown_begin broker=%d epoch=%lld",
               (int)c->id, (long long)c->broker_epoch);
    cluster_arm(c->shutdown_timer,
                (uint64_t)c->b->cfg.controlled_shutdown_timeout_ms);
    c->hb_inflight = false; /* do not wait for a plain heartbeat's answer */
    cluster_heartbeat(c);
    return true;
}

int cluster_new(struct broker *b, struct cluster **out, struct err_detail *ed)
{
    struct cluster *c;
    int rv;

    *out = NULL;
    c = mem_calloc(1, sizeof(*c));
    if (c == NULL) {
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    c->b = b;
    rv = cluster_follow_init(c, ed);
    if (rv != 0) {
        mem_free(c);
        return rv;
    }
    c->id = (int32_t)b->cfg.id;
    c->broker_epoch = -1;
    c->chain = META_CHAIN_ZERO; /* of the empty image */
    c->backoff_ms = CLUSTER_BACKOFF_MIN_MS;
    c->session_timeout_ms = CLUSTER_SESSION_DEFAULT_MS;
    c->hook = cluster_role_trace;
    c->hook_arg = c;
    c->register_timer = evtimer_new(b->base, cluster_register_cb, c);
    c->heartbeat_timer =
        event_new(b->base, -1, EV_PERSIST, cluster_heartbeat_cb, c);
    c->fetch_timer = evtimer_new(b->base, cluster_fetch_cb, c);
    c->contact_timer = evtimer_new(b->base, cluster_heartbeat_cb, c);
    c->shutdown_timer = evtimer_new(b->base, cluster_shutdown_timeout_cb, c);
    if (c->register_timer == NULL || c->heartbeat_timer == NULL ||
        c->fetch_timer == NULL || c->contact_timer == NULL ||
        c->shutdown_timer == NULL || meta_image_new(&c->img) != 0 ||
        cconn_new(b->base, cluster_controller(c), &c->rpc) != 0 ||
        cconn_new(b->base, cluster_controller(c), &c->fetch) != 0) {
        cluster_free(c);
        return err_set(ed, WEIR_ENOMEM, "out of memory");
    }
    cconn_on_outcome(c->rpc, cluster_follow_outcome, c);
    cconn_on_outcome(c->fetch, cluster_follow_outcome, c);
    if (b->tls_client != NULL) {
        cconn_use_tls(c->rpc, b->tls_client);
        cconn_use_tls(c->fetch, b->tls_client);
    }
    cconn_use_sasl(c->rpc, b->cfg.sasl_mechanism, b->cfg.sasl_username,
                   b->cfg.sasl_password);
    cconn_use_sasl(c->fetch, b->cfg.sasl_mechanism, b->cfg.sasl_username,
                   b->cfg.sasl_password);
    cluster_arm(c->heartbeat_timer, (uint64_t)b->cfg.heartbeat_interval_ms);
    /* metadata first: registration waits for an accepted answer */
    cluster_fetch(c);
    *out = c;
    return 0;
}

static void cluster_free_event(struct event *ev)
{
    if (ev != NULL) {
        event_free(ev);
    }
}

void cluster_free(struct cluster *c)
{
    if (c == NULL) {
        return;
    }
    cluster_api_wake(c, true);
    cconn_free(c->rpc);
    cconn_free(c->fetch);
    cluster_free_event(c->register_timer);
    cluster_free_event(c->heartbeat_timer);
    cluster_free_event(c->fetch_timer);
    cluster_free_event(c->contact_timer);
    cluster_free_event(c->shutdown_timer);
    meta_image_free(c->img);
    cluster_follow_quorum(c, NULL);
    mem_free(c->roles);
    while (c->n_strays > 0) {
        mem_free(c->strays[--c->n_strays]);
    }
    mem_free(c->strays);
    mem_free(c);
}

void cluster_set_partition_hook(struct cluster *c,
                                cluster_partition_fn fn,
                                void *arg)
{
    c->hook = fn;
    c->hook_arg = arg;
}

void cluster_save_applied(struct cluster *c)
{
    cluster_ident_save_applied(c, true);
}

const struct meta_image *cluster_image(const struct cluster *c)
{
    return c->img;
}

const char *cluster_controller(const struct cluster *c)
{
    return cluster_finder_current(&c->finder);
}

int64_t cluster_broker_epoch(const struct cluster *c)
{
    return c->broker_epoch;
}

bool cluster_fenced(const struct cluster *c)
{
    return c->fenced;
}

/* A call of this broker's to the controller, waiting for its answer:
 * whose callback to run with it. */
struct cluster_call {
    union {
        cluster_alter_isr_fn isr;
        cluster_pids_fn pids;
        cluster_done_fn done;
    } fn;
    void *arg;
};

/* A context for a call, or NULL with *rv set (not registered, the
 * controller refused, or out of memory); the caller sets the callback.
 * A refused controller is asked for nothing: an older copy could hand out
 * producer ids below ids already given out in the true history (two
 * producers with one id: a batch taken for a duplicate and acknowledged
 * unwritten), or accept ISR changes and topics of its own history. */
static struct cluster_call *
cluster_call_new(const struct cluster *c, void *arg, int *rv)
{
    struct cluster_call *call;

    if (c->refusal != CLUSTER_REFUSAL_NONE) {
        *rv = WEIR_ECONTROLLER_REFUSED;
        return NULL;
    }
    if (c->broker_epoch < 0) {
        *rv = WEIR_ENOT_FOUND;
        return NULL;
    }
    call = mem_calloc(1, sizeof(*call));
    *rv = call == NULL ? WEIR_ENOMEM : 0;
    if (call != NULL) {
        call->arg = arg;
    }
    return call;
}

/* Send req; reply gets call, which is freed here when nothing was sent. */
static int cluster_call_send(struct cluster *c,
                             Weir__Request *req,
                             cconn_reply_fn reply,
                             struct cluster_call *call)
{
    int rv;

    req->client_id = "weir-broker";
    rv = cconn_call(c->rpc, req, CLUSTER_CALL_MS, reply, call);
    if (rv != 0) {
        mem_free(call);
    }
    return rv;
}

static void cluster_alter_isr_reply(void *arg,
                                    int err,
                                    const Weir__Response *resp,
                                    const uint8_t *payload,
                                    uint32_t len,
                                    const struct err_detail *ed)
{
    struct cluster_call *call = arg;
    struct meta_ids isr;
    int32_t le = -1;
    int32_t pe = -1;
    size_t i;

    (void)payload;
    (void)len;
    (void)ed;
    memset(&isr, 0, sizeof(isr));
    if (resp != NULL && resp->body_case == WEIR__RESPONSE__BODY_ALTER_ISR) {
        const Weir__AlterIsrResponse *a = resp->alter_isr;
        le = a->leader_epoch;
        pe = a->partition_epoch;
        for (i = 0; i < a->n_isr && i < META_MAX_REPLICAS; i++) {
            isr.ids[isr.n++] = a->isr[i];
        }
    }
    call->fn.isr(call->arg, err, le, pe, &isr);
    mem_free(call);
}

int cluster_alter_isr(struct cluster *c,
                      int64_t topic_id,
                      int32_t partition,
                      int32_t leader_epoch,
                      int32_t partition_epoch,
                      const struct meta_ids *isr,
                      cluster_alter_isr_fn fn,
                      void *arg)
{
    Weir__Request req = WEIR__REQUEST__INIT;
    Weir__AlterIsrRequest m = WEIR__ALTER_ISR_REQUEST__INIT;
    struct cluster_call *call;
    int32_t ids[META_MAX_REPLICAS];
    int rv;

    if ((call = cluster_call_new(c, arg, &rv)) == NULL) {
        return rv;
    }
    call->fn.isr = fn;
    memcpy(ids, isr->ids, sizeof(ids));
    m.broker_id = c->id;
    m.broker_epoch = c->broker_epoch;
    m.cluster_id = (char *)c->b->ident.props.cluster_id;
    m.topic_id = topic_id;
    m.partition = partition;
    m.leader_epoch = leader_epoch;
    m.partition_epoch = partition_epoch;
    m.isr = ids;
    m.n_isr = isr->n;
    req.body_case = WEIR__REQUEST__BODY_ALTER_ISR;
    req.alter_isr = &m;
    return cluster_call_send(c, &req, cluster_alter_isr_reply, call);
}

static void cluster_pids_reply(void *arg,
                               int err,
                               const Weir__Response *resp,
                               const uint8_t *payload,
                               uint32_t len,
                               const struct err_detail *ed)
{
    struct cluster_call *call = arg;
    const Weir__AllocateProducerIdsResponse *a = NULL;

    (void)payload;
    (void)len;
    if (err == 0 && resp != NULL &&
        resp->body_case == WEIR__RESPONSE__BODY_ALLOCATE_PRODUCER_IDS) {
        a = resp->allocate_producer_ids;
    }
    if (a != NULL && a->first_producer_id >= 0 && a->count > 0 &&
        a->first_producer_id <= INT64_MAX - a->count) {
        call->fn.pids(call->arg, 0, "", a->first_producer_id, a->count);
    } else {
        call->fn.pids(call->arg, err != 0 ? err : WEIR_EUNKNOWN,
                      ed != NULL && ed->msg[0] != '\0'
                          ? ed->msg
                          : "the controller gave no producer ids",
                      -1, 0);
    }
    mem_free(call);
}

int cluster_allocate_producer_ids(struct cluster *c,
                                  int64_t count,
                                  cluster_pids_fn fn,
                                  void *arg)
{
    Weir__Request req = WEIR__REQUEST__INIT;
    Weir__AllocateProducerIdsRequest m =
        WEIR__ALLOCATE_PRODUCER_IDS_REQUEST__INIT;
    struct cluster_call *call;
    int rv;

    if ((call = cluster_call_new(c, arg, &rv)) == NULL) {
        return rv;
    }
    call->fn.pids = fn;
    m.broker_id = c->id;
    m.broker_epoch = c->broker_epoch;
    m.cluster_id = (char *)c->b->ident.props.cluster_id;
    m.count = count;
    req.body_case = WEIR__REQUEST__BODY_ALLOCATE_PRODUCER_IDS;
    req.allocate_producer_ids = &m;
    return cluster_call_send(c, &req, cluster_pids_reply, call);
}

static void cluster_create_reply(void *arg,
                                 int err,
                                 const Weir__Response *resp,
                                 const uint8_t *payload,
                                 uint32_t len,
                                 const struct err_detail *ed)
{
    struct cluster_call *call = arg;
    const char *msg = ed != NULL ? ed->msg : "";

    (void)payload;
    (void)len;
    if (err == 0 && resp != NULL &&
        resp->body_case == WEIR__RESPONSE__BODY_CREATE_TOPICS &&
        resp->create_topics->n_topics == 1) {
        err = resp->create_topics->topics[0]->error_code;
        msg = resp->create_topics->topics[0]->error_message;
    } else if (err == 0) {
        err = WEIR_EUNKNOWN;
        msg = "the controller's answer names no topic";
    }
    call->fn.done(call->arg, err, msg != NULL ? msg : "");
    mem_free(call);
}

int cluster_create_topic(struct cluster *c,
                         const char *name,
                         int32_t partitions,
                         const struct logmgr_kv *configs,
                         uint32_t n_configs,
                         cluster_done_fn fn,
                         void *arg)
{
    Weir__Request req = WEIR__REQUEST__INIT;
    Weir__CreateTopicsRequest m = WEIR__CREATE_TOPICS_REQUEST__INIT;
    Weir__CreateTopic t = WEIR__CREATE_TOPIC__INIT;
    Weir__CreateTopic *tp = &t;
    Weir__ConfigEntry ce[8];
    Weir__ConfigEntry *cp[8];
    struct cluster_call *call;
    uint32_t i;
    int rv;

    if (n_configs > 8) {
        return WEIR_EINVALID_ARGUMENT;
    }
    if ((call = cluster_call_new(c, arg, &rv)) == NULL) {
        return rv;
    }
    call->fn.done = fn;
    for (i = 0; i < n_configs; i++) {
        weir__config_entry__init(&ce[i]);
        ce[i].key = (char *)configs[i].key;
        ce[i].value = (char *)configs[i].value;
        cp[i] = &ce[i];
    }
    t.name = (char *)name;
    t.partitions = partitions;
    t.configs = cp;
    t.n_configs = n_configs;
    m.topics = &tp;
    m.n_topics = 1;
    m.cluster_id = (char *)c->b->ident.props.cluster_id;
    req.body_case = WEIR__REQUEST__BODY_CREATE_TOPICS;
    req.create_topics = &m;
    return cluster_call_send(c, &req, cluster_create_reply, call);
}
