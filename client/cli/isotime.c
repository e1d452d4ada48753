/* SPDX-License-Identifier: Apache-2.0 */
#include "client/cli/isotime.h"

#include <ctype.h>
#include <stdbool.h>

/* Howard Hinnant's days_from_civil: eras of 400 years, March-based years
 * so the leap day falls at the end. */
int64_t isotime_days_from_civil(int64_t y, unsigned m, unsigned d)
{
    int64_t era;
    unsigned yoe;
    unsigned doy;
    unsigned doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = (unsigned)(y - era * 400);
    doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

/* Exactly n digits at *p, advancing it. */
static bool isotime_digits(const char **p, int n, int *out)
{
    int v = 0;
    int i;

    for (i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*p)[i])) {
            return false;
        }
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *out = v;
    return true;
}

static bool isotime_leap(int y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static bool isotime_date(const char **p, int64_t *days)
{
    static const int mdays[12] = {31, 28, 31, 30, 31, 30,
                                  31, 31, 30, 31, 30, 31};
    int y;
    int m;
    int d;

    if (!isotime_digits(p, 4, &y) || *(*p)++ != '-' ||
        !isotime_digits(p, 2, &m) || *(*p)++ != '-' ||
        !isotime_digits(p, 2, &d) || m < 1 || m > 12 || d < 1 ||
        d > mdays[m - 1] + (m == 2 && isotime_leap(y))) {
        return false;
    }
    *days = isotime_days_from_civil(y, (unsigned)m, (unsigned)d);
    return true;
}

/* HH:MM[:SS[.fff]] into ms of the day. */
static bool isotime_clock(const char **p, int64_t *ms)
{
    int h;
    int mi;
    int s = 0;
    int frac = 0;
    int scale = 100;

    if (!isotime_digits(p, 2, &h) || *(*p)++ != ':' ||
        !isotime_digits(p, 2, &mi) || h > 23 || mi > 59) {
        return false;
    }
    if (**p == ':') {
        (*p)++;
        if (!isotime_digits(p, 2, &s) || s > 60) {
            return false;
        }
        if (**p == '.' || **p == ',') {
            (*p)++;
            if (!isdigit((unsigned char)**p)) {
                return false;
            }
            while (isdigit((unsigned char)**p)) {
                frac += (**p - '0') * scale;
                scale /= 10;
                (*p)++;
            }
        }
    }
    *ms = ((int64_t)h * 3600 + mi * 60 + s) * 1000 + frac;
    return true;
}

/* Z, +HH[:MM], -HH[:MM] or nothing, into ms east of UTC. */
static bool isotime_zone(const char **p, int64_t *off_ms)
{
    int sign;
    int h;
    int m = 0;

    *off_ms = 0;
    if (**p == '\0') {
        return true;
    }
    if (**p == 'Z' || **p == 'z') {
        (*p)++;
        return true;
    }
    if (**p != '+' && **p != '-') {
        return false;
    }
    sign = **p == '-' ? -1 : 1;
    (*p)++;
    if (!isotime_digits(p, 2, &h) || h > 23) {
        return false;
    }
    if (**p == ':') {
        (*p)++;
    }
    if (isdigit((unsigned char)**p) && (!isotime_digits(p, 2, &m) || m > 59)) {
        return false;
    }
    *off_ms = sign * ((int64_t)h * 3600 + m * 60) * 1000;
    return true;
}

int isotime_parse(const char *s, int64_t *ms)
{
    const char *p = s;
    int64_t days;
    int64_t tod = 0;
    int64_t off;

    if (!isotime_date(&p, &days)) {
        return -1;
    }
    if (*p == 'T' || *p == 't' || *p == ' ') {
        p++;
        if (!isotime_clock(&p, &tod)) {
            return -1;
        }
    }
    if (!isotime_zone(&p, &off) || *p != '\0') {
        return -1;
    }
    *ms = days * 86400000 + tod - off;
    return 0;
}
