/* SPDX-License-Identifier: Apache-2.0 */
/* Diagnostics ("trace"; "log" means the data log). One line per event on
 * stderr in logfmt: ts=<RFC 3339 UTC> level=<lvl> sub=<subsystem> <text>.
 * Callers write the rest as key=value pairs, e.g.
 *   trace_info("storage", "event=segment_roll topic=%s partition=%d", ...)
 * Locality: any thread; each line is written with a single write(2). */
#ifndef COMMON_TRACE_H
#define COMMON_TRACE_H

#include "common/err.h"

enum trace_level {
    TRACE_DEBUG = 0,
    TRACE_INFO = 1,
    TRACE_WARN = 2,
    TRACE_ERROR = 3,
};

void trace_set_level(enum trace_level lvl);
/* Parse "debug" / "info" / "warn" / "error". Errors: WEIR_ECONFIG. */
WEIR_MUST_CHECK int trace_level_parse(const char *s, enum trace_level *out);
/* Redirect output (default 2 = stderr); for tests. */
void trace_set_fd(int fd);
int trace_enabled(enum trace_level lvl);

void trace_emit(enum trace_level lvl, const char *sub, const char *fmt, ...)
    WEIR_PRINTF(3, 4);

#define trace_debug(sub, ...)                                                  \
    do {                                                                       \
        if (trace_enabled(TRACE_DEBUG)) {                                      \
            trace_emit(TRACE_DEBUG, sub, __VA_ARGS__);                         \
        }                                                                      \
    } while (0)
#define trace_info(sub, ...)  trace_emit(TRACE_INFO, sub, __VA_ARGS__)
#define trace_warn(sub, ...)  trace_emit(TRACE_WARN, sub, __VA_ARGS__)
#define trace_error(sub, ...) trace_emit(TRACE_ERROR, sub, __VA_ARGS__)

#endif /* COMMON_TRACE_H */
