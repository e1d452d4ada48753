/* SPDX-License-Identifier: Apache-2.0 */
/* Strict decimal integers for the text files Weir writes itself
 * (checkpoints, manifests): ASCII digits only, a '-' only where the caller
 * allows one, no '+', no spaces, no overflow (an error, never a clamp).
 * strtoll accepts all of those and stops at a NUL, which is why it is not
 * used on these files. Pure: no allocation, no errno.
 * Locality: any thread. */
#ifndef COMMON_DECIMAL_H
#define COMMON_DECIMAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

enum decimal_sign {
    DECIMAL_UNSIGNED, /* digits only */
    DECIMAL_SIGNED,   /* an optional leading '-', then digits */
};

/* Why a read failed: for messages that name the byte. */
struct decimal_error {
    size_t at;       /* offset of the offending byte from s */
    const char *why; /* static text: "no digits", "overflow", ... */
};

/* Exactly s[0..len) as one decimal integer. Leading zeros are accepted;
 * "-0" is 0. Errors: WEIR_EMALFORMED (empty, a byte that is not a digit,
 * a '-' not allowed, a value outside int64); then *out is untouched and
 * *de (may be NULL) tells where and why. */
WEIR_MUST_CHECK int decimal_parse_i64(const char *s,
                                      size_t len,
                                      enum decimal_sign sign,
                                      int64_t *out,
                                      struct decimal_error *de);

/* The longest run of digits at the start of s[0..len) (after a '-' if
 * allowed), as decimal_parse_i64; *used gets the bytes read, so the caller
 * checks what follows (a separator). At least one digit is required.
 * Errors: WEIR_EMALFORMED as above. */
WEIR_MUST_CHECK int decimal_scan_i64(const char *s,
                                     size_t len,
                                     enum decimal_sign sign,
                                     int64_t *out,
                                     size_t *used,
                                     struct decimal_error *de);

/* A NUL-terminated string that must be one decimal integer. */
WEIR_MUST_CHECK int decimal_parse_cstr(const char *s,
                                       enum decimal_sign sign,
                                       int64_t *out,
                                       struct decimal_error *de);

#endif /* COMMON_DECIMAL_H */
