/* SPDX-License-Identifier: Apache-2.0 */
/* Record output format for `weir consume --format`: %p partition, %o
 * offset, %t timestamp (ms), %k key, %v value, %% a percent sign; escapes
 * \n \t \r \\. A newline follows each record unless the format already
 * ends with \n. Null keys and values print as nothing. Pure.
 * Locality: any thread. */
#ifndef CLIENT_CLI_FMT_H
#define CLIENT_CLI_FMT_H

#include <stddef.h>

#include "client/weir.h"
#include "common/buf.h"

/* Check a format. Returns 0, or -1 with a message in err. */
int fmt_check(const char *fmt, char *err, size_t err_len);

/* Append one record rendered with a checked format. */
void fmt_render(const char *fmt,
                const struct weir_record *r,
                struct weir_buf *out);

#endif /* CLIENT_CLI_FMT_H */
