/* SPDX-License-Identifier: Apache-2.0 */
/* meta.properties parser, writer and id generator. The parser is a
 * decoder of bytes from disk (fuzzed by tests/fuzz/fuzz_metaprops.c): it
 * reads through explicit lengths only and never trusts a line. */
#include "common/metaprops.h"

#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>

#include "common/datadir.h"
#include "common/mem.h"

#define METAPROPS_LINE_MAX 256

void metaprops_init(struct metaprops *p)
{
    memset(p, 0, sizeof(*p));
    p->node_id = -1;
}

bool metaprops_id_valid(const char *s, size_t len)
{
    size_t i;

    if (len == 0 || len > METAPROPS_ID_MAX) {
        return false;
    }
    for (i = 0; i < len; i++) {
        char ch = s[i];
        if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
              (ch >= '0' && ch <= '9') || ch == '_' || ch == '-')) {
            return false;
        }
    }
    return true;
}

/* A decimal int64 in [0, INT64_MAX], nothing else. */
static bool metaprops_uint(const char *s, size_t len, int64_t *out)
{
    int64_t v = 0;
    size_t i;

    if (len == 0 || len > 19) {
        return false;
    }
    for (i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9' || v > (INT64_MAX - (s[i] - '0')) / 10) {
            return false;
        }
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

enum metaprops_key {
    METAPROPS_KEY_VERSION,
    METAPROPS_KEY_CLUSTER_ID,
    METAPROPS_KEY_NODE_ID,
    METAPROPS_KEY_DIRECTORY_ID,
    METAPROPS_KEY_OTHER,
};

static enum metaprops_key metaprops_key(const char *k, size_t len)
{
    static const char *const names[] = {"version", "cluster.id", "node.id",
                                        "directory.id"};
    size_t i;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strlen(names[i]) == len && memcmp(names[i], k, len) == 0) {
            return (enum metaprops_key)i;
        }
    }
    return METAPROPS_KEY_OTHER;
}

/* One key=value line; seen has a bit per known key. */
static int metaprops_line(const char *line,
                          size_t len,
                          unsigned line_no,
                          unsigned *seen,
                          struct metaprops *out,
                          struct err_detail *ed)
{
    const char *eq = memchr(line, '=', len);
    const char *v;
    size_t klen;
    size_t vlen;
    int64_t n;
    enum metaprops_key key;

    if (eq == NULL || eq == line) {
        return err_set(ed, WEIR_ECORRUPT, "line %u: not key=value", line_no);
    }
    klen = (size_t)(eq - line);
    v = eq + 1;
    vlen = len - klen - 1;
    key = metaprops_key(line, klen);
    if (key == METAPROPS_KEY_OTHER) {
        return 0;
    }
    if (*seen & (1u << key)) {
        return err_set(ed, WEIR_ECORRUPT, "line %u: %.*s given twice", line_no,
                       (int)klen, line);
    }
    *seen |= 1u << key;
    switch (key) {
    case METAPROPS_KEY_VERSION:
        if (!metaprops_uint(v, vlen, &n) || n != METAPROPS_VERSION) {
            return err_set(ed, WEIR_ECORRUPT,
                           "line %u: version %.*s, this build reads %d",
                           line_no, (int)vlen, v, METAPROPS_VERSION);
        }
        return 0;
    case METAPROPS_KEY_NODE_ID:
        if (!metaprops_uint(v, vlen, &n) || n > INT32_MAX) {
            return err_set(ed, WEIR_ECORRUPT, "line %u: bad node.id %.*s",
                           line_no, (int)vlen, v);
        }
        out->node_id = n;
        return 0;
    case METAPROPS_KEY_CLUSTER_ID:
    case METAPROPS_KEY_DIRECTORY_ID:
        if (vlen > 0 && !metaprops_id_valid(v, vlen)) {
            return err_set(ed, WEIR_ECORRUPT,
                           "line %u: bad id '%.*s' (1..%d of A-Z a-z 0-9 _ -)",
                           line_no, (int)(vlen > 80 ? 80 : vlen), v,
                           METAPROPS_ID_MAX);
        }
        memcpy(key == METAPROPS_KEY_CLUSTER_ID ? out->cluster_id
                                               : out->directory_id,
               v, vlen);
        return 0;
    case METAPROPS_KEY_OTHER:
        break;
    }
    return 0;
}

int metaprops_parse(const char *text,
                    size_t len,
                    struct metaprops *out,
                    struct err_detail *ed)
{
    unsigned seen = 0;
    unsigned line_no = 0;
    size_t at = 0;
    int rv;

    metaprops_init(out);
    while (at < len) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl != NULL ? (size_t)(nl - text) : len;
        size_t n = end - at;
        line_no++;
        if (n > 0 && text[end - 1] == '\r') {
            n--;
        }
        if (n > METAPROPS_LINE_MAX) {
            return err_set(ed, WEIR_ECORRUPT, "line %u: longer than %d bytes",
                           line_no, METAPROPS_LINE_MAX);
        }
        if (memchr(text + at, '\0', n) != NULL) {
            return err_set(ed, WEIR_ECORRUPT, "line %u: a NUL byte", line_no);
        }
        if (n > 0 && text[at] != '#') {
            rv = metaprops_line(text + at, n, line_no, &seen, out, ed);
            if (rv != 0) {
                return rv;
            }
        }
        at = end + 1;
    }
    if (!(seen & (1u << METAPROPS_KEY_VERSION))) {
        return err_set(ed, WEIR_ECORRUPT, "no version line");
    }
    return 0;
}

int metaprops_format(const struct metaprops *p, struct weir_buf *b)
{
    char line[METAPROPS_LINE_MAX];
    int n;

    n = snprintf(line, sizeof(line),
                 "# Weir data directory identity: written once, do not "
                 "edit\nversion=%d\ncluster.id=%s\n",
                 METAPROPS_VERSION, p->cluster_id);
    buf_put(b, line, (size_t)n);
    if (p->node_id >= 0) {
        n = snprintf(line, sizeof(line), "node.id=%lld\n",
                     (long long)p->node_id);
        buf_put(b, line, (size_t)n);
    }
    if (p->directory_id[0] != '\0') {
        n = snprintf(line, sizeof(line), "directory.id=%s\n", p->directory_id);
        buf_put(b, line, (size_t)n);
    }
    return buf_ok(b) ? 0 : WEIR_ENOMEM;
}

/* "key=<n>" (len bytes, no newline) into *value. */
static bool metaprops_stamp_line(const char *line,
                                 size_t len,
                                 const char *key,
                                 int64_t *value)
{
    size_t klen = strlen(key);

    return len > klen + 1 && memcmp(line, key, klen) == 0 &&
           line[klen] == '=' &&
           metaprops_uint(line + klen + 1, len - klen - 1, value);
}

int metaprops_parse_stamp2(const char *text,
                           size_t len,
                           const char *key,
                           const char *key2,
                           char cluster[METAPROPS_ID_MAX + 1],
                           int64_t *value,
                           int64_t *value2,
                           struct err_detail *ed)
{
    static const char cid[] = "cluster.id=";
    const size_t cid_len = sizeof(cid) - 1;
    const char *nl = memchr(text, '\n', len);
    size_t clen;

    *value2 = -1;
    if (nl == NULL || (size_t)(nl - text) < cid_len ||
        memcmp(text, cid, cid_len) != 0) {
        return err_set(ed, WEIR_ECORRUPT, "the first line is not cluster.id=");
    }
    clen = (size_t)(nl - text) - cid_len;
    if (!metaprops_id_valid(text + cid_len, clen)) {
        return err_set(ed, WEIR_ECORRUPT, "bad cluster id");
    }
    memcpy(cluster, text + cid_len, clen);
    cluster[clen] = '\0';
    len -= (size_t)(nl + 1 - text);
    text = nl + 1;
    if (len > 0 && text[len - 1] == '\n') {
        len--;
    }
    nl = key2 != NULL ? memchr(text, '\n', len) : NULL;
    if (!metaprops_stamp_line(text, nl != NULL ? (size_t)(nl - text) : len, key,
                              value)) {
        return err_set(ed, WEIR_ECORRUPT, "the second line is not %s=<n>", key);
    }
    if (nl != NULL &&
        !metaprops_stamp_line(nl + 1, len - (size_t)(nl + 1 - text), key2,
                              value2)) {
        return err_set(ed, WEIR_ECORRUPT, "the third line is not %s=<n>", key2);
    }
    return 0;
}

int metaprops_parse_stamp(const char *text,
                          size_t len,
                          const char *key,
                          char cluster[METAPROPS_ID_MAX + 1],
                          int64_t *value,
                          struct err_detail *ed)
{
    int64_t unused;

    return metaprops_parse_stamp2(text, len, key, NULL, cluster, value, &unused,
                                  ed);
}

int metaprops_format_stamp2(const char *cluster,
                            const char *key,
                            int64_t value,
                            const char *key2,
                            int64_t value2,
                            struct weir_buf *b)
{
    char text[METAPROPS_LINE_MAX * 3];
    int n;

    if (!metaprops_id_valid(cluster, strlen(cluster)) || value < 0) {
        return WEIR_EINVALID_ARGUMENT;
    }
    if (key2 != NULL && value2 >= 0) {
        n = snprintf(text, sizeof(text), "cluster.id=%s\n%s=%lld\n%s=%lld\n",
                     cluster, key, (long long)value, key2, (long long)value2);
    } else {
        n = snprintf(text, sizeof(text), "cluster.id=%s\n%s=%lld\n", cluster,
                     key, (long long)value);
    }
    if (n < 0 || (size_t)n >= sizeof(text)) {
        return WEIR_EINVALID_ARGUMENT;
    }
    buf_put(b, text, (size_t)n);
    return buf_ok(b) ? 0 : WEIR_ENOMEM;
}

int metaprops_format_stamp(const char *cluster,
                           const char *key,
                           int64_t value,
                           struct weir_buf *b)
{
    return metaprops_format_stamp2(cluster, key, value, NULL, -1, b);
}

int metaprops_new_id(char out[METAPROPS_NEW_ID + 1], struct err_detail *ed)
{
    static const char b64url[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    uint8_t r[17] = {0}; /* 16 random bytes, one zero pad byte */
    uint32_t acc = 0;
    int bits = 0;
    size_t i;
    size_t o = 0;

    if (RAND_bytes(r, 16) != 1) {
        return err_set(ed, WEIR_EUNKNOWN, "RAND_bytes failed: no randomness");
    }
    /* 128 bits = 21 full sextets + 2 bits, as Kafka's base64 uuids */
    for (i = 0; i < sizeof(r) && o < METAPROPS_NEW_ID; i++) {
        acc = (acc << 8) | r[i];
        bits += 8;
        while (bits >= 6 && o < METAPROPS_NEW_ID) {
            bits -= 6;
            out[o++] = b64url[(acc >> bits) & 0x3f];
        }
    }
    out[o] = '\0';
    return 0;
}

int metaprops_read(const char *dir,
                   struct metaprops *out,
                   bool *found,
                   struct err_detail *ed)
{
    char *text = NULL;
    size_t len = 0;
    int rv;

    metaprops_init(out);
    rv = datadir_read(dir, METAPROPS_FILE, &text, &len, found, ed);
    if (rv == 0 && *found) {
        rv = metaprops_parse(text, len, out, ed);
        if (rv != 0) {
            err_wrap(ed, "%s/%s", dir, METAPROPS_FILE);
        }
    }
    mem_free(text);
    return rv;
}

int metaprops_write(const char *dir,
                    const struct metaprops *p,
                    struct err_detail *ed)
{
    struct weir_buf b;
    int rv;

    buf_init(&b);
    rv = metaprops_format(p, &b);
    if (rv != 0) {
        rv = err_set(ed, WEIR_ENOMEM, "writing %s/%s", dir, METAPROPS_FILE);
    } else {
        rv = datadir_write(dir, METAPROPS_FILE, b.data, b.len, ed);
    }
    buf_fini(&b);
    return rv;
}
