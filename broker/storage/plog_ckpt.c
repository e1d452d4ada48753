/* SPDX-License-Identifier: Apache-2.0 */
/* Checkpoint files of a partition log (see plog_ckpt.h). One cursor walks
 * the text; each step either consumes exactly what the format says or
 * fails naming the byte, so a refusal always points at the first byte
 * that is not what a writer would have put there. */
#include <stdio.h>

#include "broker/storage/plog_ckpt.h"
#include "common/decimal.h"

struct plog_ckpt_cursor {
    const char *text;
    size_t len;
    size_t pos;
    const char *path;
    struct err_detail *ed;
};

static int plog_ckpt_bad(struct plog_ckpt_cursor *c, size_t at, const char *why)
{
    return err_set(c->ed, WEIR_ECORRUPT, "checkpoint %s byte %zu: %s", c->path,
                   at, why);
}

/* The next byte must be ch. */
static int plog_ckpt_expect(struct plog_ckpt_cursor *c, char ch)
{
    if (c->pos >= c->len) {
        return plog_ckpt_bad(
            c, c->pos, ch == '\n' ? "missing newline" : "missing separator");
    }
    if (c->text[c->pos] != ch) {
        return plog_ckpt_bad(
            c, c->pos, ch == '\n' ? "expected a newline" : "expected a space");
    }
    c->pos++;
    return 0;
}

/* A number followed by the byte term. */
static int plog_ckpt_number(struct plog_ckpt_cursor *c,
                            enum decimal_sign sign,
                            char term,
                            int64_t *out)
{
    struct decimal_error de;
    size_t used;

    if (decimal_scan_i64(c->text + c->pos, c->len - c->pos, sign, out, &used,
                         &de) != 0) {
        return plog_ckpt_bad(c, c->pos + de.at, de.why);
    }
    c->pos += used;
    return plog_ckpt_expect(c, term);
}

static int plog_ckpt_version(struct plog_ckpt_cursor *c)
{
    int64_t v;
    size_t at = c->pos;
    int rv = plog_ckpt_number(c, DECIMAL_UNSIGNED, '\n', &v);

    if (rv == 0 && v != 0) {
        rv = plog_ckpt_bad(c, at, "unknown format version");
    }
    return rv;
}

static int plog_ckpt_end(struct plog_ckpt_cursor *c)
{
    return c->pos == c->len
               ? 0
               : plog_ckpt_bad(c, c->pos, "bytes after the last line");
}

int plog_ckpt_parse_offset(const char *text,
                           size_t len,
                           const char *path,
                           int64_t *out,
                           struct err_detail *ed)
{
    struct plog_ckpt_cursor c = {text, len, 0, path, ed};
    int64_t v;
    int rv;

    if (len == 0) {
        return plog_ckpt_bad(&c, 0, "empty file");
    }
    rv = plog_ckpt_version(&c);
    if (rv == 0) {
        rv = plog_ckpt_number(&c, DECIMAL_UNSIGNED, '\n', &v);
    }
    if (rv == 0) {
        rv = plog_ckpt_end(&c);
    }
    if (rv == 0) {
        *out = v;
    }
    return rv;
}

int plog_ckpt_format_offset(int64_t offset, char *buf, size_t cap, size_t *len)
{
    int n;

    if (offset < 0) {
        return WEIR_EINVALID_ARGUMENT;
    }
    n = snprintf(buf, cap, "0\n%lld\n", (long long)offset);
    if (n < 0 || (size_t)n >= cap) {
        return WEIR_EINVALID_ARGUMENT;
    }
    *len = (size_t)n;
    return 0;
}

static int plog_ckpt_mark(struct plog_ckpt_cursor *c,
                          struct plog_ckpt_cleaner *out,
                          uint32_t i)
{
    struct plog_clean_mark *m = &out->marks[i];
    size_t at = c->pos;
    int rv = plog_ckpt_number(c, DECIMAL_UNSIGNED, ' ', &m->offset);

    if (rv == 0) {
        rv = plog_ckpt_number(c, DECIMAL_SIGNED, '\n', &m->wall_ms);
    }
    if (rv == 0 && i > 0 && m->offset <= out->marks[i - 1].offset) {
        rv = plog_ckpt_bad(c, at, "mark offsets not ascending");
    }
    return rv;
}

int plog_ckpt_parse_cleaner(const char *text,
                            size_t len,
                            const char *path,
                            struct plog_ckpt_cleaner *out,
                            struct err_detail *ed)
{
    struct plog_ckpt_cursor c = {text, len, 0, path, ed};
    int64_t n;
    size_t at;
    uint32_t i;
    int rv;

    if (len == 0) {
        return plog_ckpt_bad(&c, 0, "empty file");
    }
    rv = plog_ckpt_version(&c);
    if (rv == 0) {
        rv = plog_ckpt_number(&c, DECIMAL_UNSIGNED, '\n', &out->clean_offset);
    }
    at = c.pos;
    if (rv == 0) {
        rv = plog_ckpt_number(&c, DECIMAL_UNSIGNED, '\n', &n);
    }
    if (rv == 0 && n > PLOG_CLEAN_MARKS_MAX) {
        rv = plog_ckpt_bad(&c, at, "too many marks");
    }
    for (i = 0; rv == 0 && i < (uint32_t)n; i++) {
        rv = plog_ckpt_mark(&c, out, i);
    }
    if (rv == 0) {
        rv = plog_ckpt_end(&c);
    }
    if (rv == 0) {
        out->n_marks = (uint32_t)n;
    }
    return rv;
}

int plog_ckpt_format_cleaner(const struct plog_ckpt_cleaner *c,
                             char *buf,
                             size_t cap,
                             size_t *len)
{
    size_t n;
    int w;
    uint32_t i;

    if (c->clean_offset < 0 || c->n_marks > PLOG_CLEAN_MARKS_MAX) {
        return WEIR_EINVALID_ARGUMENT;
    }
    w = snprintf(buf, cap, "0\n%lld\n%u\n", (long long)c->clean_offset,
                 c->n_marks);
    if (w < 0 || (size_t)w >= cap) {
        return WEIR_EINVALID_ARGUMENT;
    }
    n = (size_t)w;
    for (i = 0; i < c->n_marks; i++) {
        const struct plog_clean_mark *m = &c->marks[i];

        if (m->offset < 0 || (i > 0 && m->offset <= c->marks[i - 1].offset)) {
            return WEIR_EINVALID_ARGUMENT;
        }
        w = snprintf(buf + n, cap - n, "%lld %lld\n", (long long)m->offset,
                     (long long)m->wall_ms);
        if (w < 0 || (size_t)w >= cap - n) {
            return WEIR_EINVALID_ARGUMENT;
        }
        n += (size_t)w;
    }
    *len = n;
    return 0;
}
