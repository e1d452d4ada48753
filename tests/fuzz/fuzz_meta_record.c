/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: metadata records and snapshots, the controller's bytes on
 * disk. Byte 0 picks the mode:
 *   bit 0 clear: the rest is a stream of records, decoded one by one and
 *     applied to an image;
 *   bit 0 set: the rest is a snapshot; with bit 1 set too, its CRC is
 *     computed and appended first, so mutations reach the records inside.
 * Oracles: errors are WEIR_ECORRUPT and say so in the detail; a decoded
 * record re-encodes to exactly the bytes it came from; apply refuses with
 * WEIR_ECORRUPT or leaves an image that passes meta_image_check; an image
 * survives a snapshot round trip unchanged.
 * Seeds in corpus/meta_record/ come from the writer at the end of this
 * file (a controller core's metadata log and snapshots, and damaged copies;
 * the scenario removes a topic, so snapshots from this writer hold a
 * TOPIC_TOMBSTONE: seed-snapshot-tombstone*), plus seed-type-tombstone (a
 * bare TOPIC_TOMBSTONE record, which apply refuses outside a snapshot),
 * seed-type-replicas-empty* (bare REPLICAS_EMPTY records, likewise; the
 * second lists a broker twice);
 * the *-elr and *-dir seeds hold version 1 records: ELRs, directory ids.
 * From the top of the tree, with a build in build/:
 *   cc -std=c11 -D_DEFAULT_SOURCE -I. -DFUZZ_META_RECORD_WRITE_SEEDS \
 *      tests/fuzz/fuzz_meta_record.c \
 *      build/controller/libweir_controller_core.a \
 *      build/common/libweir_common.a \
 *      $(pkg-config --libs libisal inih libprotobuf-c) -o /tmp/seeds
 *   /tmp/seeds tests/fuzz/corpus/meta_record */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc32c.h"
#include "controller/meta/meta_image.h"
#include "controller/meta/meta_snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_meta_expect_corrupt(int rv, const struct err_detail *ed)
{
    if (rv != WEIR_ECORRUPT || ed->code != rv || ed->msg[0] == '\0') {
        abort();
    }
}

/* The image goes through a snapshot and must come back the same. */
static void fuzz_meta_round_trip(const struct meta_image *img)
{
    struct meta_image *back = NULL;
    struct err_detail ed;
    struct weir_buf b;

    buf_init(&b);
    if (meta_snapshot_encode(img, &b, &ed) != 0 ||
        meta_snapshot_decode(b.data, b.len, &back, &ed) != 0 ||
        !meta_image_equal(img, back) || meta_image_check(back, &ed) != 0) {
        abort();
    }
    meta_image_free(back);
    buf_fini(&b);
}

static void fuzz_meta_records(const uint8_t *p, size_t len)
{
    struct meta_image *img;
    struct meta_record rec;
    struct weir_cursor c;
    struct err_detail ed;
    struct weir_buf again;
    size_t start;
    int rv;

    if (meta_image_new(&img) != 0) {
        abort();
    }
    buf_init(&again);
    cur_init(&c, p, len);
    while (cur_remaining(&c) > 0) {
        start = c.pos;
        rv = meta_record_decode(&c, &rec, &ed);
        if (rv != 0) {
            fuzz_meta_expect_corrupt(rv, &ed);
            break;
        }
        buf_reset(&again);
        if (meta_record_encode(&rec, &again, &ed) != 0 ||
            again.len != c.pos - start ||
            memcmp(again.data, p + start, again.len) != 0) {
            abort();
        }
        rv = meta_image_apply(img, &rec, &ed);
        if (rv != 0) {
            fuzz_meta_expect_corrupt(rv, &ed);
        } else if (meta_image_check(img, &ed) != 0) {
            abort();
        }
    }
    fuzz_meta_round_trip(img);
    buf_fini(&again);
    meta_image_free(img);
}

static void fuzz_meta_snapshot(const uint8_t *p, size_t len, bool fix_crc)
{
    struct meta_image *img = NULL;
    struct err_detail ed;
    uint8_t *copy;
    int rv;

    /* exactly the bytes decoded, so ASan sees any read past them */
    copy = malloc(len + 4);
    if (copy == NULL) {
        abort();
    }
    memcpy(copy, p, len);
    if (fix_crc) {
        wire_put_u32be(copy + len, crc32c(copy, len));
        len += 4;
    }
    rv = meta_snapshot_decode(copy, len, &img, &ed);
    if (rv != 0) {
        fuzz_meta_expect_corrupt(rv, &ed);
        if (img != NULL) {
            abort();
        }
    } else {
        if (meta_image_check(img, &ed) != 0) {
            abort();
        }
        fuzz_meta_round_trip(img);
        meta_image_free(img);
    }
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    if ((data[0] & 1) == 0) {
        fuzz_meta_records(data + 1, size - 1);
    } else {
        fuzz_meta_snapshot(data + 1, size - 1, (data[0] & 2) != 0);
    }
    return 0;
}

#ifdef FUZZ_META_RECORD_WRITE_SEEDS
/* Seed writer: a controller core runs a short scenario and its metadata
 * log, snapshots of the result, and damaged copies become the seeds. */
#include "controller/elect/ctl_core.h"

static struct weir_buf fuzz_seed_log;
static size_t fuzz_seed_offsets[256]; /* where each record starts */
static size_t fuzz_seed_n;

static void fuzz_seed_write(const char *dir,
                            const char *name,
                            uint8_t mode,
                            const uint8_t *p,
                            size_t len)
{
    char path[4096];
    FILE *f;

    (void)snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "wb");
    if (f == NULL || fwrite(&mode, 1, 1, f) != 1 ||
        (len > 0 && fwrite(p, 1, len, f) != len) || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

static void fuzz_seed_step(struct ctl_core *core,
                           struct ctl_event *ev,
                           struct ctl_actions *out,
                           uint64_t now)
{
    uint32_t i;

    ev->now_ms = now;
    if (ctl_core_step(core, ev, out) != 0 || out->result != 0) {
        (void)fprintf(stderr, "seed scenario step failed\n");
        exit(1);
    }
    for (i = 0; i < out->n_records; i++) {
        fuzz_seed_offsets[fuzz_seed_n++] = fuzz_seed_log.len;
        if (meta_record_encode(&out->records[i], &fuzz_seed_log, NULL) != 0) {
            exit(1);
        }
    }
}

static void fuzz_seed_scenario(struct ctl_core *core)
{
    static const struct ctl_kv kv[] = {{"retention.ms", "60000"}};
    static const char *const racks[] = {"ra", "rb", "ra"};
    struct ctl_actions out;
    struct ctl_event ev;
    int64_t epoch[3];
    int32_t id;

    ctl_actions_init(&out);
    for (id = 0; id < 3; id++) {
        memset(&ev, 0, sizeof(ev));
        ev.type = CTL_EV_BROKER_REGISTER;
        ev.u.reg.broker_id = id;
        ev.u.reg.host = "127.0.0.1";
        ev.u.reg.port = (uint16_t)(9092 + id);
        ev.u.reg.rack = racks[id];
        fuzz_seed_step(core, &ev, &out, 1000);
        epoch[id] = out.broker_epoch;
        ev.type = CTL_EV_BROKER_CAUGHT_UP;
        ev.u.broker.broker_id = id;
        ev.u.broker.broker_epoch = epoch[id];
        fuzz_seed_step(core, &ev, &out, 1000);
    }
    memset(&ev, 0, sizeof(ev));
    ev.type = CTL_EV_CREATE_TOPIC;
    ev.u.create.name = "orders";
    ev.u.create.partitions = 3;
    ev.u.create.configs = kv;
    ev.u.create.n_configs = 1;
    fuzz_seed_step(core, &ev, &out, 1000);
    memset(&ev, 0, sizeof(ev));
    ev.type = CTL_EV_ALLOCATE_PRODUCER_IDS;
    ev.u.pids.broker_id = 0;
    ev.u.pids.broker_epoch = epoch[0];
    ev.u.pids.count = 1;
    fuzz_seed_step(core, &ev, &out, 1000);
    memset(&ev, 0, sizeof(ev));
    ev.type = CTL_EV_CREATE_TOPIC;
    ev.u.create.name = "gone";
    ev.u.create.replication_factor = 1;
    fuzz_seed_step(core, &ev, &out, 1000);
    ev.type = CTL_EV_DELETE_TOPIC;
    ev.u.del.name = "gone";
    fuzz_seed_step(core, &ev, &out, 1000);
    for (id = 0; id < 2; id++) { /* broker 2 goes silent */
        memset(&ev, 0, sizeof(ev));
        ev.type = CTL_EV_BROKER_HEARTBEAT;
        ev.u.heartbeat.broker_id = id;
        ev.u.heartbeat.broker_epoch = epoch[id];
        ev.u.heartbeat.applied_offset = 100;
        fuzz_seed_step(core, &ev, &out, 3000);
    }
    memset(&ev, 0, sizeof(ev));
    ev.type = CTL_EV_TICK;
    fuzz_seed_step(core, &ev, &out, 4500);
    ctl_actions_fini(&out);
}

static void fuzz_seed_records(const char *dir)
{
    static const char *const names[] = {"",
                                        "seed-type-register",
                                        "seed-type-fence",
                                        "seed-type-unfence",
                                        "seed-type-topic",
                                        "seed-type-config",
                                        "seed-type-remove",
                                        "seed-type-partition",
                                        "seed-type-change",
                                        "seed-type-pids"};
    const uint8_t *log = fuzz_seed_log.data;
    size_t len = fuzz_seed_log.len;
    uint8_t tmp[512];
    size_t i;

    fuzz_seed_write(dir, "seed-log", 0, log, len);
    fuzz_seed_write(dir, "seed-log-truncated", 0, log, len - 3);
    fuzz_seed_write(dir, "seed-log-without-head", 0, log + fuzz_seed_offsets[6],
                    len - fuzz_seed_offsets[6]);
    for (i = 0; i < fuzz_seed_n; i++) {
        size_t at = fuzz_seed_offsets[i];
        size_t end = i + 1 < fuzz_seed_n ? fuzz_seed_offsets[i + 1] : len;
        uint8_t type = log[at];
        if (type < 10 && names[type][0] != '\0' && end - at <= sizeof(tmp)) {
            memcpy(tmp, log + at, end - at);
            fuzz_seed_write(dir, names[type], 0, tmp, end - at);
            if (type == META_RECORD_PARTITION) {
                tmp[18] = META_MAX_REPLICAS + 1; /* replica count too big */
                fuzz_seed_write(dir, "seed-replicas-over-limit", 0, tmp,
                                end - at);
                tmp[18] = META_MAX_REPLICAS; /* more than remain */
                fuzz_seed_write(dir, "seed-replicas-past-end", 0, tmp,
                                end - at);
            }
            if (type == META_RECORD_REGISTER_BROKER) {
                tmp[1] = 1;
                fuzz_seed_write(dir, "seed-bad-version", 0, tmp, end - at);
                tmp[1] = 0;
                tmp[0] = 0x7f;
                fuzz_seed_write(dir, "seed-unknown-type", 0, tmp, end - at);
                tmp[0] = type;
                tmp[5] += 1; /* body one byte longer than the fields */
                tmp[end - at] = 0;
                fuzz_seed_write(dir, "seed-trailing-in-body", 0, tmp,
                                end - at + 1);
                tmp[5] = 0xff;
                fuzz_seed_write(dir, "seed-body-too-long", 0, tmp, end - at);
            }
        }
    }
}

/* Version 1 records: brokers with directory ids, then 2 and 1 silent, so
 * the ISR drops below min ISR and 1 joins the ELR; 1 comes back with a
 * new data dir and leaves it. */
static void fuzz_seed_elr(const char *dir)
{
    static const char *const dirs[] = {"dir-0", "dir-1", "dir-2"};
    struct ctl_config cfg;
    struct ctl_core *core;
    struct ctl_actions out;
    struct ctl_event ev;
    struct weir_buf b;
    int32_t id;
    size_t i;

    ctl_config_init(&cfg);
    if (ctl_core_new(&cfg, NULL, &core) != 0) {
        exit(1);
    }
    buf_reset(&fuzz_seed_log);
    fuzz_seed_n = 0;
    ctl_actions_init(&out);
    for (id = 0; id < 3; id++) {
        memset(&ev, 0, sizeof(ev));
        ev.type = CTL_EV_BROKER_REGISTER;
        ev.u.reg.broker_id = id;
        ev.u.reg.host = "127.0.0.1";
        ev.u.reg.port = (uint16_t)(9092 + id);
        ev.u.reg.directory_id = dirs[id];
        ev.u.reg.previous_broker_epoch = -1;
        fuzz_seed_step(core, &ev, &out, 1000);
        ev.type = CTL_EV_BROKER_CAUGHT_UP;
        ev.u.broker.broker_id = id;
        ev.u.broker.broker_epoch = out.broker_epoch;
        fuzz_seed_step(core, &ev, &out, 1000);
    }
    memset(&ev, 0, sizeof(ev));
    ev.type = CTL_EV_CREATE_TOPIC;
    ev.u.create.name = "elr";
    ev.u.create.partitions = 2;
    fuzz_seed_step(core, &ev, &out, 1000);
    memset(&ev, 0, sizeof(ev));
    ev.type = CTL_EV_BROKER_HEARTBEAT;
    ev.u.heartbeat.broker_id = 0;
    ev.u.heartbeat.broker_epoch = 0;
    ev.u.heartbeat.applied_offset = 100;
    fuzz_seed_step(core, &ev, &out, 3500);
    ev.type = CTL_EV_TICK;
    fuzz_seed_step(core, &ev, &out, 4500); /* 1 and 2 fenced: ELR */
    memset(&ev, 0, sizeof(ev));
    ev.type = CTL_EV_BROKER_REGISTER;
    ev.u.reg.broker_id = 1;
    ev.u.reg.host = "127.0.0.1";
    ev.u.reg.port = 9093;
    ev.u.reg.directory_id = "dir-1-new";
    ev.u.reg.previous_broker_epoch = -1;
    fuzz_seed_step(core, &ev, &out, 4600);
    ctl_actions_fini(&out);
    fuzz_seed_write(dir, "seed-log-elr", 0, fuzz_seed_log.data,
                    fuzz_seed_log.len);
    for (i = 0; i < fuzz_seed_n; i++) {
        size_t at = fuzz_seed_offsets[i];
        size_t end =
            i + 1 < fuzz_seed_n ? fuzz_seed_offsets[i + 1] : fuzz_seed_log.len;
        const uint8_t *r = fuzz_seed_log.data + at;
        if (r[1] == META_RECORD_VERSION_V1 &&
            r[0] == META_RECORD_PARTITION_CHANGE) {
            fuzz_seed_write(dir, "seed-change-elr", 0, r, end - at);
        }
        if (r[1] == META_RECORD_VERSION_V1 &&
            r[0] == META_RECORD_REGISTER_BROKER) {
            fuzz_seed_write(dir, "seed-register-dir", 0, r, end - at);
        }
    }
    buf_init(&b);
    if (meta_snapshot_encode(ctl_core_image(core), &b, NULL) != 0) {
        exit(1);
    }
    fuzz_seed_write(dir, "seed-snapshot-elr", 1, b.data, b.len);
    buf_fini(&b);
    ctl_core_free(core);
}

static void fuzz_seed_snapshots(const char *dir, const struct meta_image *img)
{
    struct meta_image *empty;
    struct weir_buf b;

    buf_init(&b);
    if (meta_snapshot_encode(img, &b, NULL) != 0) {
        exit(1);
    }
    fuzz_seed_write(dir, "seed-snapshot", 1, b.data, b.len);
    fuzz_seed_write(dir, "seed-snapshot-fix-crc", 3, b.data, b.len - 4);
    fuzz_seed_write(dir, "seed-snapshot-truncated", 3, b.data, b.len / 2);
    b.data[b.len / 2] ^= 0x40;
    fuzz_seed_write(dir, "seed-snapshot-bad-crc", 1, b.data, b.len);
    buf_reset(&b);
    if (meta_image_new(&empty) != 0 ||
        meta_snapshot_encode(empty, &b, NULL) != 0) {
        exit(1);
    }
    fuzz_seed_write(dir, "seed-snapshot-empty-image", 1, b.data, b.len);
    fuzz_seed_write(dir, "seed-mode-only", 0, NULL, 0);
    meta_image_free(empty);
    buf_fini(&b);
}

int main(int argc, char **argv)
{
    struct ctl_config cfg;
    struct ctl_core *core;

    if (argc != 2) {
        (void)fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
        return 2;
    }
    ctl_config_init(&cfg);
    buf_init(&fuzz_seed_log);
    if (ctl_core_new(&cfg, NULL, &core) != 0) {
        return 1;
    }
    fuzz_seed_scenario(core);
    fuzz_seed_records(argv[1]);
    fuzz_seed_snapshots(argv[1], ctl_core_image(core));
    ctl_core_free(core);
    fuzz_seed_elr(argv[1]);
    buf_fini(&fuzz_seed_log);
    return 0;
}
#endif /* FUZZ_META_RECORD_WRITE_SEEDS */
