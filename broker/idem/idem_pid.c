/* SPDX-License-Identifier: Apache-2.0 */
/* Producer id blocks. The file is advanced before the block is used, so a
 * crash between the two only skips ids; nothing here ever moves it back. */
#include "broker/idem/idem_pid.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/mem.h"

void idem_pid_init(struct idem_pid *a, const struct idem_pid_source *src)
{
    a->src = *src;
    a->next = 0;
    a->end = 0;
}

int idem_pid_next(struct idem_pid *a, int64_t *id, struct err_detail *ed)
{
    int64_t first;
    int rv;

    if (a->next == a->end) {
        rv = a->src.allocate(a->src.ctx, IDEM_PID_BLOCK_SIZE, &first, ed);
        if (rv != 0) {
            return rv;
        }
        a->next = first;
        a->end = first + IDEM_PID_BLOCK_SIZE;
    }
    *id = a->next++;
    return 0;
}

bool idem_pid_take(struct idem_pid *a, int64_t *id)
{
    if (a->next >= a->end) {
        return false;
    }
    *id = a->next++;
    return true;
}

void idem_pid_give(struct idem_pid *a, int64_t first, int64_t count)
{
    a->next = first;
    a->end = first + count;
}

/* "next=<id>\n", nothing else. */
static int idem_pid_parse(const char *text, int64_t *out)
{
    const char *p = text;
    char *end;
    long long v;

    if (strncmp(p, "next=", 5) != 0) {
        return WEIR_ECORRUPT;
    }
    p += 5;
    if (*p < '0' || *p > '9') {
        return WEIR_ECORRUPT;
    }
    errno = 0;
    v = strtoll(p, &end, 10);
    if (errno != 0 || strcmp(end, "\n") != 0 || v < 0) {
        return WEIR_ECORRUPT;
    }
    *out = v;
    return 0;
}

int64_t idem_pid_first_for_broker(int64_t broker_id)
{
    return (broker_id & ((1LL << 23) - 1)) << 40;
}

int idem_pid_file_open(struct idem_pid_file *f,
                       const struct storage_ops *ops,
                       const char *data_dir,
                       int64_t first_id,
                       struct err_detail *ed)
{
    char *text;
    size_t len;
    int rv;

    memset(f, 0, sizeof(*f));
    f->ops = ops;
    if (snprintf(f->dir, sizeof(f->dir), "%s", data_dir) >=
        (int)sizeof(f->dir)) {
        return err_set(ed, WEIR_EINVALID_ARGUMENT, "data dir path too long");
    }
    rv = storage_join(f->path, sizeof(f->path), data_dir, IDEM_PID_FILE, ed);
    if (rv != 0) {
        return rv;
    }
    f->next_block = first_id;
    rv = storage_read_small(ops, f->path, 64, &text, &len, ed);
    if (rv == WEIR_ENOT_FOUND) {
        return 0;
    }
    if (rv != 0) {
        return rv;
    }
    if (strlen(text) != len || idem_pid_parse(text, &f->next_block) != 0) {
        rv = err_set(ed, WEIR_ECORRUPT,
                     "%s does not hold 'next=<id>': refusing to hand out "
                     "producer ids that may have been used",
                     f->path);
    }
    mem_free(text);
    return rv;
}

static int idem_pid_file_allocate(void *ctx,
                                  int64_t count,
                                  int64_t *first,
                                  struct err_detail *ed)
{
    struct idem_pid_file *f = ctx;
    char text[64];
    int n;
    int rv;

    if (f->next_block > INT64_MAX - count) {
        return err_set(ed, WEIR_ESTORAGE, "producer ids exhausted");
    }
    n = snprintf(text, sizeof(text), "next=%" PRId64 "\n",
                 f->next_block + count);
    rv = storage_write_atomic(f->ops, f->dir, f->path, text, (size_t)n, ed);
    if (rv != 0) {
        err_wrap(ed, "saving the producer id block");
        return rv;
    }
    *first = f->next_block;
    f->next_block += count;
    return 0;
}

void idem_pid_file_source(struct idem_pid_file *f, struct idem_pid_source *out)
{
    out->allocate = idem_pid_file_allocate;
    out->ctx = f;
}
