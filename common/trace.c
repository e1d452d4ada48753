/* SPDX-License-Identifier: Apache-2.0 */
#include "common/trace.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static enum trace_level trace_min = TRACE_INFO;
static int trace_fd = 2;

static const char *const trace_names[] = {"debug", "info", "warn", "error"};

void trace_set_level(enum trace_level lvl)
{
    trace_min = lvl;
}

int trace_level_parse(const char *s, enum trace_level *out)
{
    int i;

    for (i = 0; i < 4; i++) {
        if (strcmp(s, trace_names[i]) == 0) {
            *out = (enum trace_level)i;
            return 0;
        }
    }
    return WEIR_ECONFIG;
}

void trace_set_fd(int fd)
{
    trace_fd = fd;
}

int trace_enabled(enum trace_level lvl)
{
    return lvl >= trace_min;
}

void trace_emit(enum trace_level lvl, const char *sub, const char *fmt, ...)
{
    char line[2048];
    struct timespec ts;
    struct tm tm;
    size_t n;
    int k;
    va_list ap;

    if (!trace_enabled(lvl)) {
        return;
    }
    (void)clock_gettime(CLOCK_REALTIME, &ts);
    (void)gmtime_r(&ts.tv_sec, &tm);
    n = strftime(line, sizeof(line), "ts=%Y-%m-%dT%H:%M:%S", &tm);
    k = snprintf(line + n, sizeof(line) - n, ".%03ldZ level=%s sub=%s ",
                 ts.tv_nsec / 1000000, trace_names[lvl], sub);
    /* snprintf returns the length it wanted: a long subsystem name must
     * not move n past the buffer */
    if (k > 0) {
        n +=
            (size_t)k < sizeof(line) - n - 1 ? (size_t)k : sizeof(line) - n - 2;
    }
    va_start(ap, fmt);
    k = vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
    va_end(ap);
    if (k > 0) {
        n +=
            (size_t)k < sizeof(line) - n - 1 ? (size_t)k : sizeof(line) - n - 2;
    }
    line[n++] = '\n';
    /* one write per line keeps lines whole when processes share stderr */
    if (write(trace_fd, line, n) < 0) {
        return;
    }
}
