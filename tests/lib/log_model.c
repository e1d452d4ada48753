/* SPDX-License-Identifier: Apache-2.0 */
#include "tests/lib/log_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/batch.h"
#include "tests/lib/batch_gen.h"

void log_model_init(struct log_model *m, int64_t start)
{
    memset(m, 0, sizeof(*m));
    m->start = start;
}

void log_model_fini(struct log_model *m)
{
    free(m->v);
    memset(m, 0, sizeof(*m));
}

void log_model_add(
    struct log_model *m, uint32_t id, int32_t n, int64_t ts0, int64_t ts_step)
{
    int32_t i;

    for (i = 0; i < n; i++) {
        if (m->n == m->cap) {
            m->cap = m->cap == 0 ? 64 : m->cap * 2;
            m->v = realloc(m->v, m->cap * sizeof(*m->v));
            if (m->v == NULL) {
                abort();
            }
        }
        m->v[m->n].id = id;
        m->v[m->n].rec = i;
        m->v[m->n].ts = ts0 + i * ts_step;
        m->n++;
    }
}

void log_model_truncate(struct log_model *m, int64_t end)
{
    if (end < m->start) {
        end = m->start;
    }
    if ((size_t)(end - m->start) < m->n) {
        m->n = (size_t)(end - m->start);
    }
}

void log_model_drop_front(struct log_model *m, int64_t start)
{
    size_t k;

    if (start <= m->start) {
        return;
    }
    k = (size_t)(start - m->start);
    if (k > m->n) {
        k = m->n;
    }
    if (m->n > k) {
        memmove(m->v, m->v + k, (m->n - k) * sizeof(*m->v));
    }
    m->n -= k;
    m->start = start;
}

int64_t log_model_end(const struct log_model *m)
{
    return m->start + (int64_t)m->n;
}

/* Check the records of one fetched chunk; advances *off. */
static int log_model_check_chunk(const struct log_model *m,
                                 struct weir_buf *b,
                                 int64_t *off)
{
    struct weir_slice all = buf_slice(b);
    struct weir_slice whole;
    struct batch_header h;
    struct batch_iter it;
    struct batch_record rec;
    struct err_detail ed;
    size_t pos = 0;
    uint32_t id;
    int32_t ri;
    int n;

    for (;;) {
        if (batch_next(all, &pos, UINT32_MAX, false, &h, &whole, &ed) != 0) {
            printf("log_model: bad batch near offset %lld: %s\n",
                   (long long)*off, ed.msg);
            return -1;
        }
        if (whole.len == 0) {
            return 0;
        }
        if (batch_iter_init(&it, whole, &ed) != 0) {
            printf("log_model: %s\n", ed.msg);
            return -1;
        }
        while ((n = batch_iter_next(&it, &rec)) == 1) {
            const struct log_model_rec *want;
            if (rec.offset < *off) {
                continue; /* the fetch started mid-batch */
            }
            if (rec.offset != *off || *off >= log_model_end(m)) {
                printf("log_model: offset %lld where %lld was expected "
                       "(model end %lld)\n",
                       (long long)rec.offset, (long long)*off,
                       (long long)log_model_end(m));
                return -1;
            }
            want = &m->v[*off - m->start];
            if (!batch_gen_parse(rec.value, &id, &ri) || id != want->id ||
                ri != want->rec || rec.timestamp != want->ts) {
                printf("log_model: offset %lld holds id %u rec %d ts %lld, "
                       "expected id %u rec %d ts %lld\n",
                       (long long)*off, id, ri, (long long)rec.timestamp,
                       want->id, want->rec, (long long)want->ts);
                return -1;
            }
            (*off)++;
        }
        if (n < 0) {
            printf("log_model: malformed record at %lld\n", (long long)*off);
            return -1;
        }
    }
}

int log_model_verify(const struct log_model *m,
                     struct plog *log,
                     int64_t from,
                     uint32_t max_bytes)
{
    struct plog_read_result r;
    struct err_detail ed;
    struct weir_buf b;
    int64_t off = from;
    int rv = 0;

    if (plog_end_offset(log) != log_model_end(m)) {
        printf("log_model: log ends at %lld, model at %lld\n",
               (long long)plog_end_offset(log), (long long)log_model_end(m));
        return -1;
    }
    buf_init(&b);
    while (rv == 0 && off < log_model_end(m)) {
        buf_reset(&b);
        if (plog_read(log, off, INT64_MAX, max_bytes, &r, &ed) != 0 ||
            plog_read_copy(log, &r, &b, &ed) != 0) {
            printf("log_model: read at %lld: %s\n", (long long)off, ed.msg);
            rv = -1;
        } else if (r.bytes == 0 || r.first_offset > off) {
            printf("log_model: read at %lld gave %u bytes from %lld\n",
                   (long long)off, r.bytes, (long long)r.first_offset);
            rv = -1;
        } else {
            rv = log_model_check_chunk(m, &b, &off);
        }
    }
    buf_fini(&b);
    return rv;
}
