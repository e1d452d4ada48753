/* SPDX-License-Identifier: Apache-2.0 */
#include "client/cli/fmt.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int fmt_escape(char c)
{
    switch (c) {
    case 'n':
        return '\n';
    case 't':
        return '\t';
    case 'r':
        return '\r';
    case '\\':
        return '\\';
    default:
        return -1;
    }
}

int fmt_check(const char *fmt, char *err, size_t err_len)
{
    const char *p;

    for (p = fmt; *p != '\0'; p++) {
        if (*p == '%') {
            if (p[1] == '\0' || strchr("potkv%", p[1]) == NULL) {
                (void)snprintf(err, err_len,
                               "unknown format field '%%%s' (use %%p %%o %%t "
                               "%%k %%v or %%%%)",
                               p[1] != '\0' ? (char[]){p[1], '\0'} : "");
                return -1;
            }
            p++;
        } else if (*p == '\\') {
            if (p[1] == '\0' || fmt_escape(p[1]) < 0) {
                (void)snprintf(err, err_len,
                               "unknown escape '\\%s' (use \\n \\t \\r or "
                               "\\\\)",
                               p[1] != '\0' ? (char[]){p[1], '\0'} : "");
                return -1;
            }
            p++;
        }
    }
    return 0;
}

static void fmt_int(struct weir_buf *out, int64_t v)
{
    char tmp[24];
    int n = snprintf(tmp, sizeof(tmp), "%" PRId64, v);

    buf_put(out, tmp, (size_t)n);
}

void fmt_render(const char *fmt,
                const struct weir_record *r,
                struct weir_buf *out)
{
    const char *p;
    bool ends_nl = false; /* the last thing written was a \n escape */

    for (p = fmt; *p != '\0'; p++) {
        ends_nl = false;
        if (*p == '\\' && p[1] != '\0') {
            p++;
            ends_nl = *p == 'n';
            buf_put_u8(out, (uint8_t)fmt_escape(*p));
            continue;
        }
        if (*p != '%' || p[1] == '\0') {
            buf_put_u8(out, (uint8_t)*p);
            continue;
        }
        p++;
        switch (*p) {
        case 'p':
            fmt_int(out, r->partition);
            break;
        case 'o':
            fmt_int(out, r->offset);
            break;
        case 't':
            fmt_int(out, r->timestamp);
            break;
        case 'k':
            buf_put(out, r->key, r->key_null ? 0 : r->key_len);
            break;
        case 'v':
            buf_put(out, r->value, r->value_null ? 0 : r->value_len);
            break;
        default:
            buf_put_u8(out, (uint8_t)*p);
            break;
        }
    }
    if (!ends_nl) {
        buf_put_u8(out, '\n');
    }
}
