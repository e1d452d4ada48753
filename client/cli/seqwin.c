/* SPDX-License-Identifier: Apache-2.0 */
#include "client/cli/seqwin.h"

#include <string.h>

#include "common/err.h"
#include "common/mem.h"

void seqwin_init(struct seqwin *w)
{
    memset(w, 0, sizeof(*w));
}

void seqwin_fini(struct seqwin *w)
{
    mem_free(w->slots);
    memset(w, 0, sizeof(*w));
}

static int seqwin_grow(struct seqwin *w)
{
    size_t cap = w->cap == 0 ? 1024 : w->cap * 2;
    struct seqwin_slot *s = mem_calloc(cap, sizeof(*s));
    uint64_t i;

    if (s == NULL) {
        return WEIR_ENOMEM;
    }
    for (i = w->head; i < w->next; i++) {
        s[i & (cap - 1)] = w->slots[i & (w->cap - 1)];
    }
    mem_free(w->slots);
    w->slots = s;
    w->cap = cap;
    return 0;
}

int seqwin_push(struct seqwin *w, uint64_t stamp, uint64_t *seq)
{
    struct seqwin_slot *s;

    if (w->next - w->head == w->cap && seqwin_grow(w) != 0) {
        return WEIR_ENOMEM;
    }
    s = &w->slots[w->next & (w->cap - 1)];
    memset(s, 0, sizeof(*s));
    s->stamp = stamp;
    *seq = w->next++;
    return 0;
}

struct seqwin_slot *seqwin_at(struct seqwin *w, uint64_t seq)
{
    if (seq < w->head || seq >= w->next) {
        return NULL;
    }
    return &w->slots[seq & (w->cap - 1)];
}

void seqwin_complete(
    struct seqwin *w, uint64_t seq, int32_t partition, int64_t offset, int err)
{
    struct seqwin_slot *s = seqwin_at(w, seq);

    if (s == NULL) {
        return;
    }
    s->done = true;
    s->partition = partition;
    s->offset = offset;
    s->err = err;
}

bool seqwin_pop(struct seqwin *w, struct seqwin_slot *out)
{
    struct seqwin_slot *s;

    if (w->head == w->next) {
        return false;
    }
    s = &w->slots[w->head & (w->cap - 1)];
    if (!s->done) {
        return false;
    }
    *out = *s;
    w->head++;
    return true;
}

size_t seqwin_pending(const struct seqwin *w)
{
    return (size_t)(w->next - w->head);
}
