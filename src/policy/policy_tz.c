/* policy_tz.c -- TZif (RFC 8536) and POSIX TZ rule reader for policy time
 * windows: per-zone immutable tables, so no thread ever calls tzset(). */
#include "policy/policy_tz.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TZ_FILE_MAX (512 * 1024)   /* the largest real TZif files are ~ 100 KiB */
#define TZ_NAME_MAX 128
#define TZ_MAX_TYPES 256
#define TZ_MAX_OFFSET (26 * 3600)  /* sanity bound on any UTC offset */
#define TZ_DEFAULT_DIR "/usr/share/zoneinfo"

/* One date of a POSIX rule: Jn (1..365, no Feb 29), n (0..365) or Mm.w.d. */
typedef struct tz_date {
    char kind;          /* 'J', 'N' or 'M' */
    int n, m, w, d;
    int32_t secs;       /* local time of day of the change */
} tz_date;

struct policy_tz {
    int32_t fixed;      /* used when ntypes == 0 and !has_rule */
    int ntrans;
    int64_t *trans;     /* ascending transition times, UTC */
    uint8_t *idx;       /* type index per transition */
    int ntypes;
    int32_t *offs;      /* utoff per type */
    bool has_rule;      /* the POSIX footer, for times after the table */
    bool has_dst;
    int32_t std_off, dst_off;
    tz_date start, end;
};

/* ---------------------------------------------------------------- dates */

static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static bool is_leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int month_days(int64_t y, int m)
{
    static const int dim[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : dim[m - 1];
}

static int weekday_of(int64_t days)
{
    return (int)(((days % 7) + 7 + 4) % 7);   /* 1970-01-01 was a Thursday */
}

/* Days since the epoch of a rule date in year y. */
static int64_t rule_day(const tz_date *r, int64_t y)
{
    int64_t jan1 = days_from_civil(y, 1, 1);
    if (r->kind == 'J')
        return jan1 + r->n - 1 + (is_leap(y) && r->n >= 60);
    if (r->kind == 'N')
        return jan1 + r->n;
    int64_t first = days_from_civil(y, r->m, 1);
    int day = 1 + (r->d - weekday_of(first) + 7) % 7 + 7 * (r->w - 1);
    while (day > month_days(y, r->m))
        day -= 7;
    return first + day - 1;
}

static int64_t year_of(int64_t t)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&tt, &tm))
        return 1970;
    return (int64_t)tm.tm_year + 1900;
}

/* ---------------------------------------------------------- POSIX rules */

static bool parse_num(const char **pp, int lo, int hi, int *out)
{
    const char *p = *pp;
    int v = 0, digits = 0;
    while (isdigit((unsigned char)*p) && digits < 4) {
        v = v * 10 + (*p++ - '0');
        digits++;
    }
    if (!digits || v < lo || v > hi)
        return false;
    *pp = p;
    *out = v;
    return true;
}

/* [+-]h[h][:mm[:ss]] with hours up to max_h; returns signed seconds. */
static bool parse_hms(const char **pp, int max_h, int32_t *out)
{
    const char *p = *pp;
    int sign = 1, h = 0, m = 0, s = 0;
    if (*p == '+' || *p == '-')
        sign = *p++ == '-' ? -1 : 1;
    if (!parse_num(&p, 0, max_h, &h))
        return false;
    if (*p == ':') {
        p++;
        if (!parse_num(&p, 0, 59, &m))
            return false;
        if (*p == ':') {
            p++;
            if (!parse_num(&p, 0, 59, &s))
                return false;
        }
    }
    *pp = p;
    *out = sign * (h * 3600 + m * 60 + s);
    return true;
}

static bool parse_abbr(const char **pp)
{
    const char *p = *pp;
    int n = 0;
    if (*p == '<') {
        p++;
        while (*p && *p != '>') {
            p++;
            n++;
        }
        if (*p != '>')
            return false;
        p++;
    } else {
        while (isalpha((unsigned char)*p)) {
            p++;
            n++;
        }
    }
    if (n < 3)
        return false;
    *pp = p;
    return true;
}

static bool parse_date(const char **pp, tz_date *r)
{
    const char *p = *pp;
    memset(r, 0, sizeof *r);
    if (*p == 'J') {
        p++;
        r->kind = 'J';
        if (!parse_num(&p, 1, 365, &r->n))
            return false;
    } else if (*p == 'M') {
        p++;
        r->kind = 'M';
        if (!parse_num(&p, 1, 12, &r->m) || *p++ != '.' || !parse_num(&p, 1, 5, &r->w) ||
            *p++ != '.' || !parse_num(&p, 0, 6, &r->d))
            return false;
    } else {
        r->kind = 'N';
        if (!parse_num(&p, 0, 365, &r->n))
            return false;
    }
    r->secs = 2 * 3600;
    if (*p == '/') {
        p++;
        if (!parse_hms(&p, 167, &r->secs))
            return false;
    }
    *pp = p;
    return true;
}

/* "CET-1CEST,M3.5.0,M10.5.0/3" and friends (POSIX offsets are west-positive). */
static bool parse_posix(const char *s, policy_tz *tz)
{
    const char *p = s;
    int32_t off;
    if (!parse_abbr(&p) || !parse_hms(&p, 24, &off))
        return false;
    tz->std_off = -off;
    tz->dst_off = tz->std_off;
    tz->has_dst = false;
    if (*p == '\0')
        return true;
    if (!parse_abbr(&p))
        return false;
    tz->has_dst = true;
    tz->dst_off = tz->std_off + 3600;
    if (*p && *p != ',') {
        if (!parse_hms(&p, 24, &off))
            return false;
        tz->dst_off = -off;
    }
    if (*p == '\0') {   /* no rule given: the historical US default */
        tz->start = (tz_date){'M', 0, 3, 2, 0, 7200};
        tz->end = (tz_date){'M', 0, 11, 1, 0, 7200};
        return true;
    }
    if (*p++ != ',' || !parse_date(&p, &tz->start) || *p++ != ',' || !parse_date(&p, &tz->end))
        return false;
    return *p == '\0';
}

static int32_t rule_offset(const policy_tz *tz, int64_t t)
{
    if (!tz->has_dst)
        return tz->std_off;
    int64_t y = year_of(t + tz->std_off);
    int64_t start = rule_day(&tz->start, y) * 86400 + tz->start.secs - tz->std_off;
    int64_t end = rule_day(&tz->end, y) * 86400 + tz->end.secs - tz->dst_off;
    bool dst = start < end ? (t >= start && t < end) : !(t >= end && t < start);
    return dst ? tz->dst_off : tz->std_off;
}

/* --------------------------------------------------------------- TZif */

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const unsigned char *p)
{
    return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

typedef struct tzif_counts {
    uint32_t isut, isstd, leap, time, type, chars;
} tzif_counts;

static bool read_counts(const unsigned char *d, size_t len, size_t at, tzif_counts *c)
{
    if (at > len || len - at < 44 || memcmp(d + at, "TZif", 4) != 0)
        return false;
    const unsigned char *h = d + at + 20;
    *c = (tzif_counts){be32(h), be32(h + 4), be32(h + 8), be32(h + 12), be32(h + 16),
                       be32(h + 20)};
    /* Bounded by the file size check that follows; these keep the products small. */
    return c->time <= TZ_FILE_MAX && c->type >= 1 && c->type <= TZ_MAX_TYPES &&
           c->chars <= TZ_FILE_MAX && c->leap <= TZ_FILE_MAX && c->isut <= TZ_MAX_TYPES &&
           c->isstd <= TZ_MAX_TYPES;
}

static size_t block_size(const tzif_counts *c, size_t tsize)
{
    return (size_t)c->time * (tsize + 1) + (size_t)c->type * 6 + c->chars +
           (size_t)c->leap * (tsize + 4) + c->isstd + c->isut;
}

static int parse_tzif(const unsigned char *d, size_t len, policy_tz *tz, gp_err *err)
{
    tzif_counts c;
    if (!read_counts(d, len, 0, &c))
        return gp_fail(err, "not a TZif file");
    size_t at = 44, tsize = 4;
    if (d[4] >= '2') {
        at += block_size(&c, 4);
        if (!read_counts(d, len, at, &c))
            return gp_fail(err, "truncated TZif file");
        at += 44;
        tsize = 8;
    }
    if (block_size(&c, tsize) > len - at)
        return gp_fail(err, "truncated TZif file");
    const unsigned char *p = d + at;
    tz->ntrans = (int)c.time;
    tz->trans = xcalloc(c.time ? c.time : 1, sizeof *tz->trans);
    tz->idx = xcalloc(c.time ? c.time : 1, 1);
    tz->ntypes = (int)c.type;
    tz->offs = xcalloc(c.type, sizeof *tz->offs);
    for (uint32_t i = 0; i < c.time; i++, p += tsize) {
        tz->trans[i] = tsize == 8 ? be64(p) : (int64_t)(int32_t)be32(p);
        if (i && tz->trans[i] <= tz->trans[i - 1])
            return gp_fail(err, "TZif transitions out of order");
    }
    for (uint32_t i = 0; i < c.time; i++, p++) {
        if (*p >= c.type)
            return gp_fail(err, "TZif transition names a missing type");
        tz->idx[i] = *p;
    }
    for (uint32_t i = 0; i < c.type; i++, p += 6) {
        int32_t off = (int32_t)be32(p);
        if (off < -TZ_MAX_OFFSET || off > TZ_MAX_OFFSET)
            return gp_fail(err, "TZif offset out of range");
        tz->offs[i] = off;
    }
    p += c.chars + (size_t)c.leap * (tsize + 4) + c.isstd + c.isut;
    /* Footer (v2+): "\n<POSIX TZ>\n"; an empty or unreadable one means "no rule". */
    if (tsize == 8 && p < d + len && *p == '\n') {
        const unsigned char *e = memchr(p + 1, '\n', (size_t)(d + len - p - 1));
        if (e && e > p + 1 && e - p < 256) {
            char rule[256];
            memcpy(rule, p + 1, (size_t)(e - p - 1));
            rule[e - p - 1] = '\0';
            policy_tz probe = *tz;
            if (parse_posix(rule, &probe)) {
                *tz = probe;
                tz->has_rule = true;
            }
        }
    }
    return 0;
}

/* ------------------------------------------------------------ loading */

/* "UTC", "UTC+02:00", "UTC-5", "UTC+05:30". Returns false when not of that form. */
static bool parse_fixed(const char *name, int32_t *off, bool *ok)
{
    if (strncmp(name, "UTC", 3) != 0 || (name[3] && name[3] != '+' && name[3] != '-'))
        return false;
    *off = 0;
    *ok = true;
    const char *p = name + 3;
    if (*p == '\0')
        return true;
    int sign = *p++ == '-' ? -1 : 1, h, m = 0;
    *ok = false;
    if (!parse_num(&p, 0, 14, &h))
        return true;
    if (*p == ':') {
        p++;
        const char *mstart = p;
        if (!parse_num(&p, 0, 59, &m) || p - mstart != 2)
            return true;
    }
    if (*p != '\0' || h * 60 + m > 14 * 60)
        return true;
    *off = sign * (h * 3600 + m * 60);
    *ok = true;
    return true;
}

static bool iana_name_ok(const char *name)
{
    size_t len = strlen(name);
    if (len == 0 || len >= TZ_NAME_MAX || name[0] == '/' || name[0] == '.')
        return false;
    for (const char *p = name; *p; p++) {
        if (!isalnum((unsigned char)*p) && !strchr("/_+-.", *p))
            return false;
        if (*p == '.' && p[1] == '.')
            return false;
        if (*p == '/' && (p[1] == '.' || p[1] == '/' || p[1] == '\0'))
            return false;
    }
    return true;
}

int policy_tz_load(const char *name, policy_tz **out, gp_err *err)
{
    int rc = -1;
    unsigned char *data = NULL;
    char *path = NULL;
    policy_tz *tz = xcalloc(1, sizeof *tz);
    int32_t off;
    bool ok;

    *out = NULL;
    if (parse_fixed(name, &off, &ok)) {
        if (!ok) {
            gp_fail(err, "bad UTC offset \"%s\" (expected UTC, UTC+HH:MM or UTC-HH:MM, at most 14 hours)",
                    name);
            goto done;
        }
        tz->fixed = off;
        rc = 0;
        goto done;
    }
    if (!iana_name_ok(name)) {
        gp_fail(err, "bad time zone name \"%s\" (expected an IANA name like Europe/Berlin, or UTC+HH:MM)",
                name);
        goto done;
    }
    const char *dir = getenv("TZDIR");
    path = xasprintf("%s/%s", dir && *dir ? dir : TZ_DEFAULT_DIR, name);
    size_t len = 0;
    gp_err rerr;
    data = (unsigned char *)gp_read_file(path, TZ_FILE_MAX, &len, &rerr);
    if (!data) {
        gp_fail(err, "unknown time zone \"%s\" (no readable zone file %s)", name, path);
        goto done;
    }
    gp_err perr;
    if (parse_tzif(data, len, tz, &perr) < 0) {
        gp_fail(err, "time zone \"%s\": %s: %s", name, path, perr.msg);
        goto done;
    }
    rc = 0;
done:
    free(path);
    free(data);
    if (rc == 0)
        *out = tz;
    else
        policy_tz_free(tz);
    return rc;
}

void policy_tz_free(policy_tz *tz)
{
    if (!tz)
        return;
    free(tz->trans);
    free(tz->idx);
    free(tz->offs);
    free(tz);
}

int32_t policy_tz_offset(const policy_tz *tz, int64_t t)
{
    if (!tz)
        return 0;
    if (tz->ntypes == 0)
        return tz->has_rule ? rule_offset(tz, t) : tz->fixed;
    if (tz->ntrans == 0 || t < tz->trans[0])
        return tz->ntrans == 0 && tz->has_rule ? rule_offset(tz, t) : tz->offs[0];
    if (t >= tz->trans[tz->ntrans - 1] && tz->has_rule)
        return rule_offset(tz, t);
    int lo = 0, hi = tz->ntrans - 1;   /* last transition <= t */
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        if (tz->trans[mid] <= t)
            lo = mid;
        else
            hi = mid - 1;
    }
    return tz->offs[tz->idx[lo]];
}

void policy_tz_local(const policy_tz *tz, int64_t t, int *wday, int *minute)
{
    int64_t local = t + policy_tz_offset(tz, t);
    int64_t days = local >= 0 ? local / 86400 : -((-local + 86399) / 86400);
    int64_t secs = local - days * 86400;
    *wday = weekday_of(days);
    *minute = (int)(secs / 60);
}
