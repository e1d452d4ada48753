/* SPDX-License-Identifier: Apache-2.0 */
/* Controller core test fixture; see test_ctl_fixture.h. */
#include "tests/unit/test_ctl_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/mem.h"
#include "controller/meta/meta_snapshot.h"

void fx_init(struct ctl_fixture *f, const struct ctl_config *cfg)
{
    int i;

    memset(f, 0, sizeof(*f));
    fake_clock_init(&f->clock, 1000, 1700000000000);
    if (cfg != NULL) {
        f->cfg = *cfg;
    } else {
        ctl_config_init(&f->cfg);
        f->cfg.rebalance_interval_ms = 0;
    }
    assert_int_equal(ctl_core_new(&f->cfg, NULL, &f->core), 0);
    ctl_actions_init(&f->out);
    buf_init(&f->snapshot);
    buf_init(&f->log);
    for (i = 0; i < FX_MAX_BROKER_ID; i++) {
        f->epoch[i] = -1;
    }
}

void fx_fini(struct ctl_fixture *f)
{
    ctl_core_free(f->core);
    ctl_actions_fini(&f->out);
    buf_fini(&f->snapshot);
    buf_fini(&f->log);
}

int fx_setup(void **state)
{
    struct ctl_fixture *f = test_malloc(sizeof(*f));

    fx_init(f, NULL);
    *state = f;
    return 0;
}

int fx_teardown(void **state)
{
    struct ctl_fixture *f = *state;

    fx_fini(f);
    test_free(f);
    return 0;
}

int fx_step(struct ctl_fixture *f, struct ctl_event *ev)
{
    struct err_detail ed;
    uint32_t i;
    int rv;

    ev->now_ms = clock_now_ms(&f->clock.clock);
    rv = ctl_core_step(f->core, ev, &f->out);
    if (rv != 0) {
        fail_msg("step failed: %s: %s", weir_err_name(rv), f->out.detail.msg);
    }
    assert_int_equal(f->out.end_offset - f->out.first_offset, f->out.n_records);
    for (i = 0; i < f->out.n_records; i++) {
        assert_int_equal(meta_record_encode(&f->out.records[i], &f->log, &ed),
                         0);
    }
    if (meta_image_check(fx_image(f), &ed) != 0) {
        fail_msg("image invariant: %s", ed.msg);
    }
    return f->out.result;
}

int fx_advance(struct ctl_fixture *f, uint64_t ms)
{
    struct ctl_event ev = {.type = CTL_EV_TICK};

    fake_clock_advance(&f->clock, ms);
    return fx_step(f, &ev);
}

int64_t fx_register(struct ctl_fixture *f, int32_t id, const char *rack)
{
    struct ctl_event ev = {.type = CTL_EV_BROKER_REGISTER};
    char host[32];

    assert_true(id >= 0 && id < FX_MAX_BROKER_ID);
    (void)snprintf(host, sizeof(host), "b%d", (int)id);
    ev.u.reg.broker_id = id;
    ev.u.reg.host = host;
    ev.u.reg.port = (uint16_t)(9000 + id);
    ev.u.reg.rack = rack;
    assert_int_equal(fx_step(f, &ev), 0);
    assert_true(f->out.broker_fenced);
    f->epoch[id] = f->out.broker_epoch;
    return f->out.broker_epoch;
}

int64_t fx_register_dir(struct ctl_fixture *f,
                        int32_t id,
                        const char *dir,
                        int64_t previous_epoch,
                        const char *flush_policy)
{
    struct ctl_event ev = {.type = CTL_EV_BROKER_REGISTER};
    char host[32];

    assert_true(id >= 0 && id < FX_MAX_BROKER_ID);
    (void)snprintf(host, sizeof(host), "b%d", (int)id);
    ev.u.reg.broker_id = id;
    ev.u.reg.host = host;
    ev.u.reg.port = (uint16_t)(9000 + id);
    ev.u.reg.directory_id = dir;
    ev.u.reg.previous_broker_epoch = previous_epoch;
    ev.u.reg.default_flush_policy = flush_policy;
    assert_int_equal(fx_step(f, &ev), 0);
    assert_true(f->out.broker_fenced);
    f->epoch[id] = f->out.broker_epoch;
    return f->out.broker_epoch;
}

int64_t fx_join(struct ctl_fixture *f, int32_t id, const char *rack)
{
    int64_t epoch = fx_register(f, id, rack);

    assert_int_equal(fx_heartbeat(f, id), 0);
    assert_false(f->out.broker_fenced);
    return epoch;
}

int fx_heartbeat(struct ctl_fixture *f, int32_t id)
{
    struct ctl_event ev = {.type = CTL_EV_BROKER_HEARTBEAT};

    ev.u.heartbeat.broker_id = id;
    ev.u.heartbeat.broker_epoch = f->epoch[id];
    ev.u.heartbeat.applied_offset = meta_image_end_offset(fx_image(f)) - 1;
    return fx_step(f, &ev);
}

void fx_heartbeat_all(struct ctl_fixture *f, const int32_t *ids, uint32_t n)
{
    uint32_t i;

    for (i = 0; i < n; i++) {
        assert_int_equal(fx_heartbeat(f, ids[i]), 0);
    }
}

int fx_shutdown(struct ctl_fixture *f, int32_t id)
{
    struct ctl_event ev = {.type = CTL_EV_CONTROLLED_SHUTDOWN};

    ev.u.broker.broker_id = id;
    ev.u.broker.broker_epoch = f->epoch[id];
    return fx_step(f, &ev);
}

int64_t fx_create(struct ctl_fixture *f,
                  const char *name,
                  int32_t partitions,
                  int32_t rf)
{
    struct ctl_event ev = {.type = CTL_EV_CREATE_TOPIC};

    ev.u.create.name = name;
    ev.u.create.partitions = partitions;
    ev.u.create.replication_factor = rf;
    if (fx_step(f, &ev) != 0) {
        return -1;
    }
    return f->out.topic_id;
}

int64_t fx_create_min_isr(struct ctl_fixture *f,
                          const char *name,
                          int32_t partitions,
                          int32_t rf,
                          int32_t min_isr)
{
    struct ctl_event ev = {.type = CTL_EV_CREATE_TOPIC};
    struct ctl_kv kv = {"min.insync.replicas", NULL};
    char text[16];

    (void)snprintf(text, sizeof(text), "%d", (int)min_isr);
    kv.value = text;
    ev.u.create.name = name;
    ev.u.create.partitions = partitions;
    ev.u.create.replication_factor = rf;
    ev.u.create.n_configs = 1;
    ev.u.create.configs = &kv;
    if (fx_step(f, &ev) != 0) {
        return -1;
    }
    return f->out.topic_id;
}

int fx_alter(struct ctl_fixture *f,
             int32_t by,
             int64_t topic_id,
             int32_t partition,
             int32_t leader_epoch,
             int32_t partition_epoch,
             const int32_t *isr,
             uint32_t n)
{
    struct ctl_event ev = {.type = CTL_EV_ALTER_ISR};

    assert_true(n <= META_MAX_REPLICAS);
    ev.u.alter_isr.broker_id = by;
    ev.u.alter_isr.broker_epoch =
        by >= 0 && by < FX_MAX_BROKER_ID ? f->epoch[by] : -1;
    ev.u.alter_isr.topic_id = topic_id;
    ev.u.alter_isr.partition = partition;
    ev.u.alter_isr.leader_epoch = leader_epoch;
    ev.u.alter_isr.partition_epoch = partition_epoch;
    ev.u.alter_isr.isr.n = n;
    memcpy(ev.u.alter_isr.isr.ids, isr, n * sizeof(isr[0]));
    return fx_step(f, &ev);
}

const struct meta_image *fx_image(const struct ctl_fixture *f)
{
    return ctl_core_image(f->core);
}

const struct meta_partition *
fx_part(const struct ctl_fixture *f, int64_t topic_id, int32_t partition)
{
    const struct meta_partition *p =
        meta_image_partition(fx_image(f), topic_id, partition);

    assert_non_null(p);
    return p;
}

bool fx_fenced(const struct ctl_fixture *f, int32_t id)
{
    const struct meta_broker *b = meta_image_broker(fx_image(f), id);

    assert_non_null(b);
    return b->fenced;
}

uint32_t fx_count(const struct ctl_fixture *f, enum meta_record_type type)
{
    uint32_t n = 0;
    uint32_t i;

    for (i = 0; i < f->out.n_records; i++) {
        n += f->out.records[i].type == type;
    }
    return n;
}

bool fx_ids_are(const struct meta_ids *ids, const int32_t *want, uint32_t n)
{
    /* want may be NULL for n == 0 */
    return ids->n == n &&
           (n == 0 || memcmp(ids->ids, want, n * sizeof(want[0])) == 0);
}

static struct meta_image *fx_replay(const struct ctl_fixture *f)
{
    struct meta_image *img;
    struct meta_record rec;
    struct weir_cursor c;
    struct err_detail ed;

    if (f->snapshot.len > 0) {
        assert_int_equal(
            meta_snapshot_decode(f->snapshot.data, f->snapshot.len, &img, &ed),
            0);
    } else {
        assert_int_equal(meta_image_new(&img), 0);
    }
    cur_init(&c, f->log.data, f->log.len);
    while (cur_remaining(&c) > 0) {
        assert_int_equal(meta_record_decode(&c, &rec, &ed), 0);
        if (meta_image_apply(img, &rec, &ed) != 0) {
            fail_msg("replay: %s", ed.msg);
        }
    }
    return img;
}

void fx_assert_replay_equal(const struct ctl_fixture *f)
{
    struct meta_image *img = fx_replay(f);

    assert_true(meta_image_equal(img, fx_image(f)));
    meta_image_free(img);
}

void fx_restart(struct ctl_fixture *f)
{
    struct meta_image *img;
    struct err_detail ed;

    buf_reset(&f->snapshot);
    assert_int_equal(meta_snapshot_encode(fx_image(f), &f->snapshot, &ed), 0);
    buf_reset(&f->log);
    assert_int_equal(
        meta_snapshot_decode(f->snapshot.data, f->snapshot.len, &img, &ed), 0);
    assert_true(meta_image_equal(img, fx_image(f)));
    ctl_core_free(f->core);
    assert_int_equal(ctl_core_new(&f->cfg, img, &f->core), 0);
}

void fx_restart_from_log(struct ctl_fixture *f)
{
    struct meta_image *img = fx_replay(f);

    /* a failed core's image ran ahead of the log: that is why it goes */
    if (!ctl_core_failed(f->core)) {
        assert_true(meta_image_equal(img, fx_image(f)));
    }
    ctl_core_free(f->core);
    assert_int_equal(ctl_core_new(&f->cfg, img, &f->core), 0);
}
