/* SPDX-License-Identifier: Apache-2.0 */
/* Producer ids for InitProducerId. Ids are handed out from blocks; where
 * a block comes from is a source behind a function pointer. Today's source
 * is the broker's data directory: <data-dir>/producer-id-block holds the
 * first id of the next block ("next=<id>\n"), rewritten atomically (temp
 * file, fsync, rename) before any id of the new block is given out, so an
 * id is never given twice, even across a crash; the unused rest of a block
 * is skipped after a restart. With a controller, blocks come from its
 * AllocateProducerIds call instead (idem_pid_take / idem_pid_give): the
 * controller logs each block before answering, so ids are unique across
 * the cluster and across controller restarts.
 * Locality: broker loop thread only. */
#ifndef BROKER_IDEM_IDEM_PID_H
#define BROKER_IDEM_IDEM_PID_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/storage/storage_ops.h"
#include "common/err.h"

#define IDEM_PID_FILE       "producer-id-block"
#define IDEM_PID_BLOCK_SIZE 1000

/* Where blocks come from: on success [*first, *first + count) are this
 * broker's to give out and will never be given to anyone else. */
struct idem_pid_source {
    int (*allocate)(void *ctx,
                    int64_t count,
                    int64_t *first,
                    struct err_detail *ed);
    void *ctx;
};

struct idem_pid {
    struct idem_pid_source src; /* copied */
    int64_t next;               /* next id to give; == end: need a block */
    int64_t end;
};

void idem_pid_init(struct idem_pid *a, const struct idem_pid_source *src);
/* Errors: the source's (WEIR_EIO, WEIR_ESTORAGE, ...). */
WEIR_MUST_CHECK int
idem_pid_next(struct idem_pid *a, int64_t *id, struct err_detail *ed);

/* Asynchronous sources (the controller's AllocateProducerIds): take an id
 * from the block in hand (false when it is used up), and hand over a block
 * when the answer comes. */
bool idem_pid_take(struct idem_pid *a, int64_t *id);
void idem_pid_give(struct idem_pid *a, int64_t first, int64_t count);

/* The data-directory source. Embedded by the caller; fini-free. */
struct idem_pid_file {
    const struct storage_ops *ops; /* borrowed */
    char dir[STORAGE_PATH_MAX];
    char path[STORAGE_PATH_MAX];
    int64_t next_block; /* as on disk */
};

/* Read the file; when it is missing, ids start at first_id.
 * Errors: WEIR_ECORRUPT (the file does not hold "next=<id>"), WEIR_EIO,
 * WEIR_EINVALID_ARGUMENT (path too long). */
WEIR_MUST_CHECK int idem_pid_file_open(struct idem_pid_file *f,
                                       const struct storage_ops *ops,
                                       const char *data_dir,
                                       int64_t first_id,
                                       struct err_detail *ed);
/* Where a broker's ids start until the controller hands them out: its
 * broker id times 2^40, so brokers of one cluster do not give the same id
 * (ids above 2^23 share the space of id mod 2^23). */
int64_t idem_pid_first_for_broker(int64_t broker_id);
/* The source reading and advancing f. */
void idem_pid_file_source(struct idem_pid_file *f, struct idem_pid_source *out);

#endif /* BROKER_IDEM_IDEM_PID_H */
