/* SPDX-License-Identifier: Apache-2.0 */
/* ISO 8601 date-times for --from-time and --time: YYYY-MM-DD, optionally
 * followed by T (or a space) and HH:MM[:SS[.fff]], optionally followed by
 * Z or an offset +HH[:MM] / -HH[:MM]. Without an offset the time is UTC.
 * Pure (no time zone database, no libc time calls).
 * Locality: any thread. */
#ifndef CLIENT_CLI_ISOTIME_H
#define CLIENT_CLI_ISOTIME_H

#include <stdint.h>

/* ms since 1970-01-01T00:00:00Z. Returns 0, or -1 if malformed. */
int isotime_parse(const char *s, int64_t *ms);

/* Days since 1970-01-01 of a proleptic Gregorian date. */
int64_t isotime_days_from_civil(int64_t y, unsigned m, unsigned d);

#endif /* CLIENT_CLI_ISOTIME_H */
