/* SPDX-License-Identifier: Apache-2.0 */
#include "tests/lib/plog_fixture.h"

#include <stdio.h>
#include <string.h>

#include "tests/lib/batch_gen.h"

void plog_fixture_init(struct plog_fixture *f)
{
    memset(f, 0, sizeof(*f));
    f->ms = mem_storage_new();
    f->ops = mem_storage_ops(f->ms);
    (void)f->ops->mkdir(f->ops->ctx, "/data", &f->ed);
    mem_storage_sync_all(f->ms);
    plog_config_defaults(&f->cfg);
    f->cfg.segment_bytes = 4096;
    f->cfg.index_interval_bytes = 256;
    log_model_init(&f->model, 0);
    f->next_id = 1;
}

void plog_fixture_fini(struct plog_fixture *f)
{
    plog_free(f->log);
    f->log = NULL;
    mem_storage_free(f->ms);
    log_model_fini(&f->model);
}

int plog_fixture_open(struct plog_fixture *f, int64_t wall_ms)
{
    int rv;

    err_detail_clear(&f->ed);
    rv = plog_open(f->ops, PLOG_FIXTURE_DIR, &f->cfg, wall_ms, &f->log, &f->ed);
    if (rv != 0) {
        printf("plog_open: %s (%s)\n", f->ed.msg, weir_err_name(rv));
    }
    return rv;
}

void plog_fixture_close(struct plog_fixture *f)
{
    plog_close(f->log);
    f->log = NULL;
}

void plog_fixture_kill(struct plog_fixture *f)
{
    plog_free(f->log);
    f->log = NULL;
}

int plog_fixture_append(struct plog_fixture *f,
                        int32_t n,
                        int64_t ts0,
                        int64_t step,
                        size_t value_len,
                        int64_t wall_ms)
{
    struct weir_buf b;
    int64_t base = -1;
    int64_t last = -1;
    int rv;

    buf_init(&b);
    rv = batch_gen_make(&b, f->next_id, n, ts0, step, value_len);
    if (rv == 0) {
        rv = plog_append(f->log, b.data, b.len, 7, wall_ms, &base, &last,
                         &f->ed);
    }
    buf_fini(&b);
    if (rv != 0) {
        return rv;
    }
    if (base != log_model_end(&f->model) || last != base + n - 1) {
        printf("append: got [%lld, %lld], model end %lld\n", (long long)base,
               (long long)last, (long long)log_model_end(&f->model));
        return -1;
    }
    log_model_add(&f->model, f->next_id, n, ts0, step);
    f->next_id++;
    return 0;
}

int plog_fixture_check(struct plog_fixture *f, uint32_t max_bytes)
{
    int rv = plog_check_invariants(f->log, &f->ed);

    if (rv != 0) {
        printf("invariants: %s\n", f->ed.msg);
        return rv;
    }
    if (plog_start_offset(f->log) != f->model.start) {
        printf("log starts at %lld, model at %lld\n",
               (long long)plog_start_offset(f->log), (long long)f->model.start);
        return -1;
    }
    return log_model_verify(&f->model, f->log, f->model.start, max_bytes);
}

const char *plog_fixture_path(const char *name)
{
    static char path[256];

    (void)snprintf(path, sizeof(path), "%s/%s", PLOG_FIXTURE_DIR, name);
    return path;
}

const char *plog_fixture_seg(int64_t base, const char *ext)
{
    static char name[64];

    (void)snprintf(name, sizeof(name), "%020lld%s", (long long)base, ext);
    return name;
}
