/* SPDX-License-Identifier: Apache-2.0 */
/* Strict decimal integers (see decimal.h). The value is accumulated as an
 * unsigned magnitude checked against its limit before each step, so no
 * intermediate ever overflows and INT64_MIN is representable. */
#include <string.h>

#include "common/decimal.h"

static int decimal_fail(struct decimal_error *de, size_t at, const char *why)
{
    if (de != NULL) {
        de->at = at;
        de->why = why;
    }
    return WEIR_EMALFORMED;
}

int decimal_scan_i64(const char *s,
                     size_t len,
                     enum decimal_sign sign,
                     int64_t *out,
                     size_t *used,
                     struct decimal_error *de)
{
    bool neg = false;
    uint64_t limit = (uint64_t)INT64_MAX;
    uint64_t v = 0;
    size_t i = 0;
    size_t first;

    if (len > 0 && s[0] == '-') {
        if (sign != DECIMAL_SIGNED) {
            return decimal_fail(de, 0, "a sign where none is allowed");
        }
        neg = true;
        limit = (uint64_t)INT64_MAX + 1;
        i = 1;
    }
    first = i;
    for (; i < len; i++) {
        unsigned d = (unsigned)((unsigned char)s[i] - '0');

        if (d > 9) {
            break;
        }
        if (v > (limit - d) / 10) {
            return decimal_fail(de, i, "number out of range");
        }
        v = v * 10 + d;
    }
    if (i == first) {
        return decimal_fail(de, i, i < len ? "not a digit" : "no digits");
    }
    if (!neg) {
        *out = (int64_t)v;
    } else if (v == (uint64_t)INT64_MAX + 1) {
        *out = INT64_MIN;
    } else {
        *out = -(int64_t)v;
    }
    *used = i;
    return 0;
}

int decimal_parse_i64(const char *s,
                      size_t len,
                      enum decimal_sign sign,
                      int64_t *out,
                      struct decimal_error *de)
{
    int64_t v;
    size_t used;
    int rv = decimal_scan_i64(s, len, sign, &v, &used, de);

    if (rv != 0) {
        return rv;
    }
    if (used != len) {
        return decimal_fail(de, used, "not a digit");
    }
    *out = v;
    return 0;
}

int decimal_parse_cstr(const char *s,
                       enum decimal_sign sign,
                       int64_t *out,
                       struct decimal_error *de)
{
    return decimal_parse_i64(s, strlen(s), sign, out, de);
}
