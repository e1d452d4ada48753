/* SPDX-License-Identifier: Apache-2.0 */
/* The topic manifest, <data_dir>/topics.meta, a line-based text file:
 *
 *   weir-topics 1
 *   topic <name> <partitions> <replication factor> <config count> [id=<n>]
 *   config <key> <value>          (config count lines)
 *   ...
 *   end <topic count>
 *
 * Written atomically (temp, fsync, rename, directory fsync). Read strictly:
 * every name is re-validated and every config re-parsed, and anything off
 * refuses the open with the file name and line, since guessing could lose
 * topics. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/storage/logmgr_int.h"
#include "common/mem.h"
#include "common/names.h"

#define LOGMGR_MAX_TOKENS   6
#define LOGMGR_VERSION_LINE "weir-topics 1"

int logmgr_manifest_write(const struct logmgr *m, struct err_detail *ed)
{
    char path[STORAGE_PATH_MAX];
    char line[512];
    struct weir_buf b;
    uint32_t i;
    uint32_t j;
    int rv;

    rv = storage_join(path, sizeof(path), m->data_dir, LOGMGR_MANIFEST, ed);
    if (rv != 0) {
        return rv;
    }
    buf_init(&b);
    buf_put(&b, LOGMGR_VERSION_LINE "\n", strlen(LOGMGR_VERSION_LINE) + 1);
    for (i = 0; i < m->n_topics; i++) {
        const struct logmgr_rec *r = m->topics[i];
        int n =
            r->topic_id >= 0
                ? snprintf(line, sizeof(line), "topic %s %d %d %u id=%lld\n",
                           r->name, r->partitions, r->replication_factor,
                           r->n_configs, (long long)r->topic_id)
                : snprintf(line, sizeof(line), "topic %s %d %d %u\n", r->name,
                           r->partitions, r->replication_factor, r->n_configs);
        buf_put(&b, line, (size_t)n);
        for (j = 0; j < r->n_configs; j++) {
            buf_put(&b, "config ", 7);
            buf_put(&b, r->configs[j].key, strlen(r->configs[j].key));
            buf_put(&b, " ", 1);
            buf_put(&b, r->configs[j].value, strlen(r->configs[j].value));
            buf_put(&b, "\n", 1);
        }
    }
    (void)snprintf(line, sizeof(line), "end %u\n", m->n_topics);
    buf_put(&b, line, strlen(line));
    if (!buf_ok(&b)) {
        rv = err_set(ed, WEIR_ENOMEM, "writing %s: out of memory", path);
    } else {
        rv = storage_write_atomic(m->ops, m->data_dir, path, b.data, b.len, ed);
    }
    buf_fini(&b);
    return rv;
}

struct logmgr_parser {
    char *p; /* next unread byte (the text is split in place) */
    char *end;
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

static int logmgr_bad(struct logmgr_parser *ps, const char *why)
{
    return err_set(ps->ed, WEIR_ECORRUPT,
                   "topic manifest %s line %u: %s; refusing to guess (fix or "
                   "restore the file)",
                   ps->path, ps->line_no, why);
}

static bool
logmgr_int_token(const char *s, int64_t min, int64_t max, int64_t *out)
{
    char *end;
    long long v;

    if (*s < '0' || *s > '9') {
        return false;
    }
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max) {
        return false;
    }
    *out = v;
    return true;
}

/* One "topic" line and its "config" lines. */
static int logmgr_parse_topic(struct logmgr *m, struct logmgr_parser *ps)
{
    struct logmgr_kv kv[32];
    struct plog_config cfg;
    struct logmgr_rec *r;
    struct err_detail ced;
    int64_t parts;
    int64_t rf;
    int64_t topic_id = -1;
    int64_t n;
    int64_t i;
    uint32_t at;
    const char *name;
    int rv;

    if ((ps->n_tok != 5 && ps->n_tok != 6) ||
        strcmp(ps->tok[0], "topic") != 0) {
        return logmgr_bad(ps, "expected 'topic <name> <partitions> <rf> <n> "
                              "[id=<n>]'");
    }
    if (ps->n_tok == 6 &&
        (strncmp(ps->tok[5], "id=", 3) != 0 ||
         !logmgr_int_token(ps->tok[5] + 3, 0, INT64_MAX, &topic_id))) {
        return logmgr_bad(ps, "bad topic id");
    }
    name = ps->tok[1];
    if (names_topic_check(name, strlen(name), &ced) != 0) {
        return logmgr_bad(ps, ced.msg);
    }
    if (!logmgr_int_token(ps->tok[2], 1, LOGMGR_MAX_PARTITIONS, &parts) ||
        !logmgr_int_token(ps->tok[3], 0, INT16_MAX, &rf) ||
        !logmgr_int_token(ps->tok[4], 0, 32, &n)) {
        return logmgr_bad(ps, "bad partition, replication or config count");
    }
    if (logmgr_find(m, name, &at) >= 0) {
        return logmgr_bad(ps, "topic listed twice");
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
        return logmgr_bad(ps, "unsupported manifest version");
    }
    for (;;) {
        if (!logmgr_next_line(ps)) {
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
        return logmgr_bad(ps, "topic count does not match");
    }
    if (ps->p < ps->end) {
        ps->line_no++;
        return logmgr_bad(ps, "text after the 'end' line");
    }
    return 0;
}

int logmgr_manifest_read(struct logmgr *m, struct err_detail *ed)
{
    char path[STORAGE_PATH_MAX];
    struct logmgr_parser ps;
    char *text;
    size_t len;
    int rv;

    rv = storage_join(path, sizeof(path), m->data_dir, LOGMGR_MANIFEST, ed);
    if (rv != 0) {
        return rv;
    }
    rv = storage_read_small(m->ops, path, LOGMGR_MANIFEST_MAX, &text, &len, ed);
    if (rv == WEIR_ENOT_FOUND) {
        return 0; /* a new data directory */
    }
    if (rv != 0) {
        if (rv == WEIR_ECORRUPT) {
            err_wrap(ed, "topic manifest %s", path);
        }
        return rv;
    }
    if (memchr(text, '\0', len) != NULL) {
        mem_free(text);
        return err_set(ed, WEIR_ECORRUPT,
                       "topic manifest %s holds NUL bytes; refusing to guess",
                       path);
    }
    memset(&ps, 0, sizeof(ps));
    ps.p = text;
    ps.end = text + len;
    ps.path = path;
    ps.ed = ed;
    rv = logmgr_parse(m, &ps);
    mem_free(text);
    return rv;
}
