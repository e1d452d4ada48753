/* SPDX-License-Identifier: Apache-2.0 */
/* What a partition log should hold, offset by offset, for tests that
 * append batch_gen batches and read them back through plog_read.
 * Locality: one test thread. */
#ifndef TESTS_LIB_LOG_MODEL_H
#define TESTS_LIB_LOG_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "broker/storage/plog.h"

struct log_model_rec {
    uint32_t id; /* batch_gen id of its batch */
    int32_t rec; /* index in that batch */
    int64_t ts;
};

struct log_model {
    struct log_model_rec *v; /* v[i] is offset start + i */
    size_t n;
    size_t cap;
    int64_t start;
};

void log_model_init(struct log_model *m, int64_t start);
void log_model_fini(struct log_model *m);
/* Records of a batch_gen_make(id, n, ts0, ts_step) batch. */
void log_model_add(
    struct log_model *m, uint32_t id, int32_t n, int64_t ts0, int64_t ts_step);
/* Keep offsets below end / from start on. */
void log_model_truncate(struct log_model *m, int64_t end);
void log_model_drop_front(struct log_model *m, int64_t start);
int64_t log_model_end(const struct log_model *m);

/* Read [from, end of model) through plog_read + plog_read_copy in steps of
 * max_bytes and compare every record (value identity and timestamp) and
 * offset; the log must end where the model does. Returns 0, or -1 after
 * printing the first difference. */
int log_model_verify(const struct log_model *m,
                     struct plog *log,
                     int64_t from,
                     uint32_t max_bytes);

#endif /* TESTS_LIB_LOG_MODEL_H */
