/* SPDX-License-Identifier: Apache-2.0 */
/* Sequence window: completions that arrive out of order (acks from
 * different partitions) handed back in submission order. A growable ring
 * holding only the span from the oldest unreported item to the newest, so
 * memory follows the number of records in flight, not the input size.
 * Locality: one thread. */
#ifndef CLIENT_CLI_SEQWIN_H
#define CLIENT_CLI_SEQWIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct seqwin_slot {
    bool done;
    int32_t partition;
    int64_t offset;
    int err;
    uint64_t stamp; /* caller's, e.g. the send time */
};

struct seqwin {
    struct seqwin_slot *slots;
    size_t cap;    /* power of two */
    uint64_t head; /* oldest not yet popped */
    uint64_t next; /* next sequence number */
};

void seqwin_init(struct seqwin *w);
void seqwin_fini(struct seqwin *w);
/* A new pending item; its number in *seq. Returns 0 or WEIR_ENOMEM. */
int seqwin_push(struct seqwin *w, uint64_t stamp, uint64_t *seq);
/* The slot of a pending item, or NULL if seq is not in the window. */
struct seqwin_slot *seqwin_at(struct seqwin *w, uint64_t seq);
/* Mark an item done. */
void seqwin_complete(
    struct seqwin *w, uint64_t seq, int32_t partition, int64_t offset, int err);
/* Pop the oldest item if it is done: true with *out filled. */
bool seqwin_pop(struct seqwin *w, struct seqwin_slot *out);
/* Items pushed and not yet popped. */
size_t seqwin_pending(const struct seqwin *w);

#endif /* CLIENT_CLI_SEQWIN_H */
