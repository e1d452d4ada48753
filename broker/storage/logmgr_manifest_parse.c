/* SPDX-License-Identifier: Apache-2.0 */
/* Decoding the topic manifest (format in logmgr_manifest.c). Read strictly:
 * every name is re-validated, every config re-parsed and every number is a
 * plain decimal (common/decimal.h: no sign, no spaces, no overflow), and
 * anything off refuses the open with the file name, line and byte offset,
 * since guessing could lose topics. Pure: works on a copy of the text. */
#include <string.h>

#include "broker/storage/logmgr_int.h"
#include "common/decimal.h"
#include "common/mem.h"
#include "common/names.h"

#define LOGMGR_MAX_TOKENS 6

struct logmgr_parser {
    char *base; /* the copy of the text, split in place */
    char *p;    /* next unread byte */
    char *end;
    char *line; /* start of the current line */
    unsigned line_no;
    char *tok[LOGMGR_MAX_TOKENS];
    int n_tok;
    const char *path;
    struct err_detail *ed;
};

/* Next line split on single spaces; false at the end of the text. */
static bool logmgr_next_line(struct logmgr_parser *ps)
{
    char *nl;
    char *q;

    if (ps->p >= ps->end) {
        return false;
    }
    nl = memchr(ps->p, '\n', (size_t)(ps->end - ps->p));
    if (nl == NULL) {
        nl = ps->end; /* a last line without newline is still a line */
    }
    *nl = '\0';
    ps->line = ps->p;
    ps->line_no++;
    ps->n_tok = 0;
    q = ps->p;
    while (ps->n_tok < LOGMGR_MAX_TOKENS) {
        ps->tok[ps->n_tok++] = q;
        q = strchr(q, ' ');
        if (q == NULL) {
            break;
        }
        *q++ = '\0';
    }
    if (q != NULL) {
        ps->n_tok = LOGMGR_MAX_TOKENS + 1; /* too many: always rejected */
    }
    ps->p = nl + 1;
    return true;
}

/* A refusal pointing at byte `at` of the current line (a token's start). */
static int
logmgr_bad_at(struct logmgr_parser *ps, const char *at, const char *why)
{
    return err_set(ps->ed, WEIR_ECORRUPT,
                   "topic manifest %s line %u byte %zu: %s; refusing to guess "
                   "(fix or restore the file)",
                   ps->path, ps->line_no, (size_t)(at - ps->base), why);
}

static int logmgr_bad(struct logmgr_parser *ps, const char *why)
{
    return logmgr_bad_at(ps, ps->line, why);
}

static bool
logmgr_int_token(const char *s, int64_t min, int64_t max, int64_t *out)
{
    int64_t v;

    if (decimal_parse_cstr(s, DECIMAL_UNSIGNED, &v, NULL) != 0 || v < min ||
        v > max) {
        return false;
    }
    *out = v;
    return true;
}

/* The numbers of a "topic" line. */
static int logmgr_topic_numbers(struct logmgr_parser *ps,
                                int64_t *parts,
                                int64_t *rf,
                                int64_t *n,
                                int64_t *topic_id)
{
    if (!logmgr_int_token(ps->tok[2], 1, LOGMGR_MAX_PARTITIONS, parts)) {
        return logmgr_bad_at(ps, ps->tok[2], "bad partition count");
    }
    if (!logmgr_int_token(ps->tok[3], 0, INT16_MAX, rf)) {
        return logmgr_bad_at(ps, ps->tok[3], "bad replication factor");
    }
    if (!logmgr_int_token(ps->tok[4], 0, 32, n)) {
        return logmgr_bad_at(ps, ps->tok[4], "bad config count");
    }
    if (ps->n_tok == 6 &&
        (strncmp(ps->tok[5], "id=", 3) != 0 ||
         !logmgr_int_token(ps->tok[5] + 3, 0, INT64_MAX, topic_id))) {
        return logmgr_bad_at(ps, ps->tok[5], "bad topic id");
    }
    return 0;
}

/* One "topic" line and its "config" lines. */
static int logmgr_parse_topic(struct logmgr *m, struct logmgr_parser *ps)
{
    struct logmgr_kv kv[32];
    struct plog_config cfg;
    struct logmgr_rec *r;
    struct err_detail ced;
    int64_t parts = 0;
    int64_t rf = 0;
    int64_t topic_id = -1;
    int64_t n = 0;
    int64_t i;
    uint32_t at;
    const char *name;
    int rv;

    if ((ps->n_tok != 5 && ps->n_tok != 6) ||
        strcmp(ps->tok[0], "topic") != 0) {
        return logmgr_bad(ps, "expected 'topic <name> <partitions> <rf> <n> "
                              "[id=<n>]'");
    }
    name = ps->tok[1];
    if (names_topic_check(name, strlen(name), &ced) != 0) {
        return logmgr_bad_at(ps, ps->tok[1], ced.msg);
    }
    rv = logmgr_topic_numbers(ps, &parts, &rf, &n, &topic_id);
    if (rv != 0) {
        return rv;
    }
    if (logmgr_find(m, name, &at) >= 0) {
        return logmgr_bad_at(ps, ps->tok[1], "topic listed twice");
    }
    for (i = 0; i < n; i++) {
        if (!logmgr_next_line(ps) || ps->n_tok != 3 ||
            strcmp(ps->tok[0], "config") != 0) {
            return logmgr_bad(ps, "expected 'config <key> <value>'");
        }
        kv[i].key = ps->tok[1];
        kv[i].value = ps->tok[2];
    }
    if (logmgr_parse_topic_config(&m->defaults, kv, (uint32_t)n, &cfg, &ced) !=
        0) {
        return logmgr_bad(ps, ced.msg);
    }
    rv = logmgr_rec_new(name, (int32_t)parts, (int32_t)rf, kv, (uint32_t)n,
                        &cfg, &r);
    if (rv == 0) {
        r->topic_id = topic_id;
        rv = logmgr_insert(m, r);
        if (rv != 0) {
            logmgr_rec_free(r);
        }
    }
    if (rv != 0) {
        return err_set(ps->ed, rv, "reading %s: out of memory", ps->path);
    }
    return 0;
}

static int logmgr_parse(struct logmgr *m, struct logmgr_parser *ps)
{
    int64_t count;
    int rv;

    if (!logmgr_next_line(ps) || ps->n_tok != 2 ||
        strcmp(ps->tok[0], "weir-topics") != 0) {
        return logmgr_bad(ps, "not a topic manifest");
    }
    if (strcmp(ps->tok[1], "1") != 0) {
        return logmgr_bad_at(ps, ps->tok[1], "unsupported manifest version");
    }
    for (;;) {
        if (!logmgr_next_line(ps)) {
            ps->line = ps->end;
            return logmgr_bad(ps, "truncated: no 'end' line");
        }
        if (ps->n_tok == 2 && strcmp(ps->tok[0], "end") == 0) {
            break;
        }
        rv = logmgr_parse_topic(m, ps);
        if (rv != 0) {
            return rv;
        }
    }
    if (!logmgr_int_token(ps->tok[1], 0, UINT32_MAX, &count) ||
        count != m->n_topics) {
        return logmgr_bad_at(ps, ps->tok[1], "topic count does not match");
    }
    if (ps->p < ps->end) {
        ps->line_no++;
        ps->line = ps->p;
        return logmgr_bad(ps, "text after the 'end' line");
    }
    return 0;
}

/* Back to no topics after a refusal. */
static void logmgr_drop_topics(struct logmgr *m)
{
    while (m->n_topics > 0) {
        logmgr_rec_free(logmgr_remove_at(m, m->n_topics - 1));
    }
}

int logmgr_manifest_parse(struct logmgr *m,
                          const char *text,
                          size_t len,
                          const char *path,
                          struct err_detail *ed)
{
    struct logmgr_parser ps;
    const char *nul = memchr(text, '\0', len);
    int rv;

    if (nul != NULL) {
        return err_set(ed, WEIR_ECORRUPT,
                       "topic manifest %s byte %zu: a NUL byte; refusing to "
                       "guess",
                       path, (size_t)(nul - text));
    }
    memset(&ps, 0, sizeof(ps));
    ps.base = mem_malloc(len + 1);
    if (ps.base == NULL) {
        return err_set(ed, WEIR_ENOMEM, "reading %s: out of memory", path);
    }
    memcpy(ps.base, text, len);
    ps.base[len] = '\0';
    ps.p = ps.base;
    ps.line = ps.base;
    ps.end = ps.base + len;
    ps.path = path;
    ps.ed = ed;
    rv = logmgr_parse(m, &ps);
    mem_free(ps.base);
    if (rv != 0) {
        logmgr_drop_topics(m);
    }
    return rv;
}
