/* timefmt.c -- RFC 3339 times as the API server writes them <-> Unix nanoseconds. */
#include "lib/timefmt.h"

#include <stdio.h>
#include <time.h>

int gp_rfc3339_parse(const char *s, int64_t *ns)
{
    int y, mo, d, h, mi, se, n = 0;
    if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &se, &n) != 6 || n != 19)
        return -1;
    const char *p = s + n;
    int64_t frac = 0;
    if (*p == '.') {
        int digits = 0;
        for (p++; *p >= '0' && *p <= '9'; p++, digits++)
            if (digits < 9)
                frac = frac * 10 + (*p - '0');
        if (digits == 0)
            return -1;
        for (; digits < 9; digits++)
            frac *= 10;
    }
    int64_t off = 0;
    if (*p == 'Z') {
        p++;
    } else if ((*p == '+' || *p == '-') && p[1] && p[2] && p[3] == ':' && p[4] && p[5]) {
        int oh, om;
        if (sscanf(p + 1, "%2d:%2d", &oh, &om) != 2)
            return -1;
        off = (int64_t)(oh * 3600 + om * 60) * (*p == '+' ? 1 : -1);
        p += 6;
    } else {
        return -1;
    }
    if (*p || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60)
        return -1;
    struct tm tm = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d,
                    .tm_hour = h, .tm_min = mi, .tm_sec = se};
    int64_t sec = (int64_t)timegm(&tm) - off;
    /* nanoseconds since 1970 fit an int64_t from 1677 to 2262 only */
    if (sec >= INT64_MAX / 1000000000 || sec <= INT64_MIN / 1000000000)
        return -1;
    *ns = sec * 1000000000 + frac;
    return 0;
}

void gp_rfc3339_format(int64_t ns, char *out, size_t len)
{
    time_t t = (time_t)(ns / 1000000000);
    struct tm tm;
    if (!gmtime_r(&t, &tm) || strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0) {
        if (len)
            out[0] = '\0';
    }
}
