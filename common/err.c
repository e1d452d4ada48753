/* SPDX-License-Identifier: Apache-2.0 */
#include "common/err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

struct err_row {
    int code;
    bool retriable;
    bool definite;
    const char *name;
    const char *desc;
};

static const struct err_row err_rows[] = {
#define WEIR_ERR_ROW(name, code, retr, def, desc)                              \
    {code, retr, def, #name, desc},
    WEIR_ERR_TABLE(WEIR_ERR_ROW)
#undef WEIR_ERR_ROW
};

static const struct err_row *err_row_find(int code)
{
    size_t i;

    for (i = 0; i < sizeof(err_rows) / sizeof(err_rows[0]); i++) {
        if (err_rows[i].code == code) {
            return &err_rows[i];
        }
    }
    return NULL;
}

const char *weir_err_name(int code)
{
    const struct err_row *r = err_row_find(code);
    return r != NULL ? r->name : "UNKNOWN_CODE";
}

const char *weir_err_str(int code)
{
    const struct err_row *r = err_row_find(code);
    return r != NULL ? r->desc : "unknown error code";
}

bool weir_err_retriable(int code)
{
    const struct err_row *r = err_row_find(code);
    return r != NULL && r->retriable;
}

bool weir_err_definite(int code)
{
    const struct err_row *r = err_row_find(code);
    /* an unknown code may come from a newer peer: assume the worst */
    return r != NULL && r->definite;
}

int weir_err_from_name(const char *name)
{
    size_t i;

    for (i = 0; i < sizeof(err_rows) / sizeof(err_rows[0]); i++) {
        if (strcasecmp(err_rows[i].name, name) == 0) {
            return err_rows[i].code;
        }
    }
    return -1;
}

void err_detail_clear(struct err_detail *ed)
{
    if (ed != NULL) {
        ed->code = 0;
        ed->sys_errno = 0;
        ed->msg[0] = '\0';
    }
}

int err_set(struct err_detail *ed, int code, const char *fmt, ...)
{
    va_list ap;

    if (ed == NULL) {
        return code;
    }
    ed->code = code;
    ed->sys_errno = 0;
    va_start(ap, fmt);
    (void)vsnprintf(ed->msg, sizeof(ed->msg), fmt, ap);
    va_end(ap);
    return code;
}

int err_sys(struct err_detail *ed,
            int code,
            int errno_value,
            const char *call,
            const char *fmt,
            ...)
{
    va_list ap;
    size_t n;
    char ebuf[128];

    if (ed == NULL) {
        return code;
    }
    ed->code = code;
    ed->sys_errno = errno_value;
    va_start(ap, fmt);
    (void)vsnprintf(ed->msg, sizeof(ed->msg), fmt, ap);
    va_end(ap);
    n = strlen(ed->msg);
    /* strerror_r (XSI) is thread-safe, unlike strerror. */
    if (strerror_r(errno_value, ebuf, sizeof(ebuf)) != 0) {
        (void)snprintf(ebuf, sizeof(ebuf), "errno %d", errno_value);
    }
    (void)snprintf(ed->msg + n, sizeof(ed->msg) - n, ": %s: %s", call, ebuf);
    return code;
}

void err_wrap(struct err_detail *ed, const char *fmt, ...)
{
    char prefix[200];
    char old[sizeof(ed->msg)];
    size_t n;
    va_list ap;

    if (ed == NULL) {
        return;
    }
    va_start(ap, fmt);
    (void)vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    memcpy(old, ed->msg, sizeof(old));
    n = strlen(prefix);
    memcpy(ed->msg, prefix, n);
    ed->msg[n] = ':';
    ed->msg[n + 1] = ' ';
    /* keep the end of the old message only as far as it fits */
    (void)snprintf(ed->msg + n + 2, sizeof(ed->msg) - n - 2, "%.*s",
                   (int)(sizeof(ed->msg) - n - 3), old);
}

int err_from_errno(int errno_value)
{
    switch (errno_value) {
    case ENOMEM:
        return WEIR_ENOMEM;
    case ENOENT:
        return WEIR_ENOT_FOUND;
    case ENOSPC:
    case EDQUOT:
    case EROFS:
        return WEIR_ESTORAGE;
    case ECONNREFUSED:
    case ECONNRESET:
    case EPIPE:
    case ETIMEDOUT:
    case EHOSTUNREACH:
    case ENETUNREACH:
        return WEIR_ENETWORK;
    default:
        return WEIR_EIO;
    }
}
