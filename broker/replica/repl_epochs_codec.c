/* SPDX-License-Identifier: Apache-2.0 */
/* Leader-epoch checkpoint text. The decoder reads untrusted bytes (a file
 * that a crash, a disk or an operator may have damaged) through a bounds-
 * checked cursor, never asserts on them, and accepts exactly one spelling
 * of each cache, so anything odd is reported rather than guessed at. */
#include <inttypes.h>
#include <stdio.h>

#include "broker/replica/repl_epochs.h"

/* Shortest entry line, "0 0\n": bounds the count before we allocate. */
#define REPL_EPOCHS_MIN_LINE_BYTES 4
/* Longest line "<int32> <int64>\n" plus the terminating NUL. */
#define REPL_EPOCHS_LINE_BYTES 40

int repl_epochs_encode(const struct repl_epochs *c, struct weir_buf *out)
{
    char line[REPL_EPOCHS_LINE_BYTES];
    uint32_t i;
    int n;

    n = snprintf(line, sizeof(line), "%d\n%" PRIu32 "\n",
                 REPL_EPOCHS_FORMAT_VERSION, c->n);
    if (n < 0 || (size_t)n >= sizeof(line)) {
        return WEIR_EUNKNOWN;
    }
    buf_put(out, line, (size_t)n);
    for (i = 0; i < c->n; i++) {
        n = snprintf(line, sizeof(line), "%" PRId32 " %" PRId64 "\n",
                     c->entries[i].epoch, c->entries[i].start_offset);
        if (n < 0 || (size_t)n >= sizeof(line)) {
            return WEIR_EUNKNOWN;
        }
        buf_put(out, line, (size_t)n);
    }
    return buf_ok(out) ? 0 : WEIR_ENOMEM;
}

static bool repl_epochs_peek(const struct weir_cursor *cur, uint8_t *ch)
{
    if (cur_remaining(cur) == 0) {
        return false;
    }
    *ch = cur->p[cur->pos];
    return true;
}

/* One non-negative decimal number <= max, canonical spelling: no sign, no
 * leading zeros ("0" itself is fine). Stops before the first non-digit. */
static bool
repl_epochs_read_number(struct weir_cursor *cur, int64_t max, int64_t *out)
{
    int64_t v = 0;
    size_t digits = 0;
    uint8_t ch;

    while (repl_epochs_peek(cur, &ch) && ch >= '0' && ch <= '9') {
        if (digits == 1 && v == 0) {
            return false; /* leading zero */
        }
        if (v > (max - (ch - '0')) / 10) {
            return false; /* would exceed max: checked before multiplying */
        }
        v = v * 10 + (ch - '0');
        digits++;
        cur->pos++;
    }
    if (digits == 0) {
        return false;
    }
    *out = v;
    return true;
}

static bool repl_epochs_expect(struct weir_cursor *cur, uint8_t want)
{
    uint8_t ch;

    return cur_u8(cur, &ch) && ch == want;
}

/* "<number>\n" */
static bool
repl_epochs_read_line_number(struct weir_cursor *cur, int64_t max, int64_t *out)
{
    return repl_epochs_read_number(cur, max, out) &&
           repl_epochs_expect(cur, '\n');
}

/* Entry lines into tmp, checking the cache invariant as they come. */
static int repl_epochs_decode_entries(struct repl_epochs *tmp,
                                      struct weir_cursor *cur,
                                      uint32_t count,
                                      struct err_detail *ed)
{
    int64_t epoch;
    int64_t offset;
    uint32_t i;

    for (i = 0; i < count; i++) {
        if (!repl_epochs_read_number(cur, INT32_MAX, &epoch) ||
            !repl_epochs_expect(cur, ' ') ||
            !repl_epochs_read_line_number(cur, INT64_MAX, &offset)) {
            return err_set(ed, WEIR_ECORRUPT,
                           "leader-epoch checkpoint: entry %" PRIu32
                           ": not \"<epoch> <offset>\" near byte %zu",
                           i, cur->pos);
        }
        if (i > 0 && (epoch <= tmp->entries[i - 1].epoch ||
                      offset <= tmp->entries[i - 1].start_offset)) {
            return err_set(ed, WEIR_ECORRUPT,
                           "leader-epoch checkpoint: entry %" PRIu32
                           " (%" PRId64 " %" PRId64
                           ") does not follow the previous one",
                           i, epoch, offset);
        }
        /* capacity was reserved for `count` entries by the caller */
        tmp->entries[i].epoch = (int32_t)epoch;
        tmp->entries[i].start_offset = offset;
        tmp->n = i + 1;
    }
    return 0;
}

int repl_epochs_decode(struct repl_epochs *c,
                       const uint8_t *p,
                       size_t len,
                       struct err_detail *ed)
{
    struct repl_epochs tmp;
    struct weir_cursor cur;
    int64_t version;
    int64_t count;
    int rv;

    cur_init(&cur, p, len);
    if (!repl_epochs_read_line_number(&cur, INT32_MAX, &version)) {
        return err_set(ed, WEIR_ECORRUPT,
                       "leader-epoch checkpoint: bad version line");
    }
    if (version != REPL_EPOCHS_FORMAT_VERSION) {
        return err_set(ed, WEIR_ECORRUPT,
                       "leader-epoch checkpoint: unknown version %" PRId64,
                       version);
    }
    if (!repl_epochs_read_line_number(&cur, UINT32_MAX, &count)) {
        return err_set(ed, WEIR_ECORRUPT,
                       "leader-epoch checkpoint: bad entry count line");
    }
    /* Every entry needs REPL_EPOCHS_MIN_LINE_BYTES, so a count the bytes
     * cannot hold is rejected before it sizes an allocation. */
    if ((uint64_t)count > cur_remaining(&cur) / REPL_EPOCHS_MIN_LINE_BYTES) {
        return err_set(ed, WEIR_ECORRUPT,
                       "leader-epoch checkpoint: %" PRId64
                       " entries cannot fit in %zu bytes",
                       count, cur_remaining(&cur));
    }
    repl_epochs_init(&tmp);
    rv = repl_epochs_reserve(&tmp, (uint32_t)count);
    if (rv != 0) {
        repl_epochs_fini(&tmp);
        return err_set(ed, rv, "leader-epoch checkpoint: out of memory");
    }
    rv = repl_epochs_decode_entries(&tmp, &cur, (uint32_t)count, ed);
    if (rv == 0 && cur_remaining(&cur) != 0) {
        rv = err_set(ed, WEIR_ECORRUPT,
                     "leader-epoch checkpoint: %zu bytes after the last entry",
                     cur_remaining(&cur));
    }
    if (rv != 0) {
        repl_epochs_fini(&tmp);
        return rv;
    }
    repl_epochs_fini(c);
    *c = tmp;
    return 0;
}
