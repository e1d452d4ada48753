/* SPDX-License-Identifier: Apache-2.0 */
/* A partition log over mem_storage plus the model of what it should hold,
 * shared by the storage tests. Helpers return 0 or an error and print
 * what went wrong, so any test framework can assert on them.
 * Locality: one test thread. */
#ifndef TESTS_LIB_PLOG_FIXTURE_H
#define TESTS_LIB_PLOG_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "broker/storage/plog.h"
#include "common/err.h"
#include "tests/lib/log_model.h"
#include "tests/lib/mem_storage.h"

#define PLOG_FIXTURE_DIR "/data/t-0"

struct plog_fixture {
    struct mem_storage *ms;
    const struct storage_ops *ops;
    struct plog_config cfg; /* small segments: 4 KiB, index every 256 B */
    struct plog *log;       /* NULL until opened */
    struct log_model model; /* what log must hold */
    uint32_t next_id;       /* batch_gen id of the next batch */
    struct err_detail ed;   /* detail of the last failing call */
};

/* Fresh memory file system with a durable, empty /data. */
void plog_fixture_init(struct plog_fixture *f);
/* Free the log (without clean close), the file system and the model. */
void plog_fixture_fini(struct plog_fixture *f);
/* plog_open of PLOG_FIXTURE_DIR with f->cfg. */
int plog_fixture_open(struct plog_fixture *f, int64_t wall_ms);
/* Clean close, or drop without one (as a killed process would). */
void plog_fixture_close(struct plog_fixture *f);
void plog_fixture_kill(struct plog_fixture *f);
/* Append one batch_gen batch of n records (timestamps ts0 + i * step) and
 * record it in the model when it succeeds; -1 if base/last disagree with
 * the model. */
int plog_fixture_append(struct plog_fixture *f,
                        int32_t n,
                        int64_t ts0,
                        int64_t step,
                        size_t value_len,
                        int64_t wall_ms);
/* plog_check_invariants, then the whole log read back against the model
 * (from the log's start, max_bytes per read). */
int plog_fixture_check(struct plog_fixture *f, uint32_t max_bytes);
/* Path of a file in the partition directory. */
const char *plog_fixture_path(const char *name);
/* Segment file name for a base offset and extension (".log"). */
const char *plog_fixture_seg(int64_t base, const char *ext);

#endif /* TESTS_LIB_PLOG_FIXTURE_H */
