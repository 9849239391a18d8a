/* quantity.c -- Kubernetes resource quantities ("4096", "4Ki", "2k", "250m", "1.5Gi"). */
#include "model/quantity.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdbool.h>
#include <string.h>

__extension__ typedef __int128 i128;

#define QTY_MAX_LEN 64

typedef struct suffix {
    const char *text;
    int64_t mul;      /* multiplier of the unit */
    int div_pow10;    /* then divided by 10^this (m, u, n) */
} suffix;

static const suffix suffixes[] = {
    {"Ki", 1LL << 10, 0}, {"Mi", 1LL << 20, 0}, {"Gi", 1LL << 30, 0},
    {"Ti", 1LL << 40, 0}, {"Pi", 1LL << 50, 0}, {"Ei", 1LL << 60, 0},
    {"n", 1, 9},          {"u", 1, 6},          {"m", 1, 3},
    {"k", 1000LL, 0},     {"M", 1000000LL, 0},  {"G", 1000000000LL, 0},
    {"T", 1000000000000LL, 0}, {"P", 1000000000000000LL, 0},
    {"E", 1000000000000000000LL, 0}, {"", 1, 0},
};

static const i128 LIMIT = (i128)INT64_MAX;

/* The one parser: the value in units of 10^-exp10 (3: thousandths, 0: whole
 * units), its magnitude rounded up. saturate: a magnitude past INT64_MAX
 * becomes INT64_MAX instead of an error, and integer digits past what int64
 * holds are dropped into the exponent instead of refused. */
static int parse_scaled(const char *s, int exp10, bool saturate, int64_t *out, gp_err *err)
{
    size_t len = strnlen(s, QTY_MAX_LEN + 1);
    if (len == 0)
        return gp_fail(err, "empty quantity");
    if (len > QTY_MAX_LEN)
        return gp_fail(err, "quantity longer than %d characters", QTY_MAX_LEN);
    const char *p = s;
    int neg = 0;
    if (*p == '+' || *p == '-')
        neg = *p++ == '-';
    i128 digits = 0;     /* all digits, integer and fraction, as one number */
    int frac = 0;        /* how many of them are fraction digits (negative: integer
                          * digits dropped, saturate only) */
    int any = 0;
    bool dropped_nonzero = false;
    while (isdigit((unsigned char)*p)) {
        if (digits > LIMIT) {
            if (!saturate)
                return gp_fail(err, "quantity \"%s\" is too large", s);
            dropped_nonzero |= *p++ != '0';
            frac--;
            any = 1;
            continue;
        }
        digits = digits * 10 + (*p++ - '0');
        any = 1;
    }
    if (*p == '.') {
        p++;
        while (isdigit((unsigned char)*p)) {
            /* keep 19 significant digits at most; the rest only rounds up */
            if (digits < (i128)1000000000000000000LL) {
                digits = digits * 10 + (*p - '0');
                frac++;
            } else if (*p != '0') {
                dropped_nonzero = true;
            }
            p++;
            any = 1;
        }
    }
    if (dropped_nonzero)
        digits += 1;
    if (!any)
        return gp_fail(err, "quantity \"%s\" has no digits", s);
    i128 mul = 1;
    if ((*p == 'e' || *p == 'E') && p[1] && (isdigit((unsigned char)p[1]) || p[1] == '-' || p[1] == '+')) {
        p++;
        int eneg = 0;
        if (*p == '+' || *p == '-')
            eneg = *p++ == '-';
        int e = 0;
        if (!isdigit((unsigned char)*p))
            return gp_fail(err, "quantity \"%s\" has a bad exponent", s);
        while (isdigit((unsigned char)*p)) {
            e = e * 10 + (*p++ - '0');
            if (e > 40)
                return gp_fail(err, "quantity \"%s\" is out of range", s);
        }
        exp10 += eneg ? -e : e;
    } else {
        const suffix *sf = NULL;
        for (size_t i = 0; i < GP_ARRAY_LEN(suffixes); i++) {
            if (strcmp(p, suffixes[i].text) == 0) {
                sf = &suffixes[i];
                break;
            }
        }
        if (!sf)
            return gp_fail(err, "quantity \"%s\" has an unknown suffix \"%s\"", s, p);
        mul = sf->mul;
        exp10 -= sf->div_pow10;
        p += strlen(sf->text);
    }
    if (*p)
        return gp_fail(err, "quantity \"%s\" has trailing characters", s);
    /* value = digits * mul * 10^(exp10 - frac), rounded up. digits < ~1e20 and
     * mul <= 2^60, so the product fits in 128 bits; range is checked at the end. */
    i128 v = digits * mul;
    int shift = exp10 - frac;
    while (shift > 0 && v <= LIMIT) {
        v *= 10;
        shift--;
    }
    if (shift > 0)
        v = LIMIT + 1;   /* past int64 whatever remains */
    if (shift < -37) {
        v = v > 0 ? 1 : 0;
    } else if (shift < 0) {
        i128 d = 1;
        for (; shift < 0; shift++)
            d *= 10;
        v = (v + d - 1) / d;
    }
    if (v > LIMIT) {
        if (!saturate)
            return gp_fail(err, "quantity \"%s\" is too large", s);
        v = LIMIT;
    }
    *out = neg ? -(int64_t)v : (int64_t)v;
    return 0;
}

int quantity_parse_milli(const char *s, int64_t *out, gp_err *err)
{
    return parse_scaled(s, 3, false, out, err);
}

int quantity_parse_units(const char *s, int64_t *out, gp_err *err)
{
    return parse_scaled(s, 0, true, out, err);
}

int quantity_parse_int(const char *s, int64_t *out, gp_err *err)
{
    int64_t m;
    if (quantity_parse_milli(s, &m, err))
        return -1;
    if (m < 0)
        return gp_fail(err, "quantity \"%s\" is negative", s);
    if (m % 1000)
        return gp_fail(err, "quantity \"%s\" is fractional; this resource takes whole numbers", s);
    *out = m / 1000;
    return 0;
}

/* ------------------------------------------------ container resources -- */

/* A resource value: quantity string or JSON number. 1 found, 0 absent, -1 bad. */
static int resource_int(const json_t *list, const char *name, const char *where, int64_t *out,
                        gp_err *err)
{
    const json_t *v = json_object_get(list, name);
    if (!v || json_is_null(v))
        return 0;
    gp_err e;
    if (json_is_string(v)) {
        if (quantity_parse_int(json_string_value(v), out, &e))
            return gp_fail(err, "%s[\"%s\"]: %s", where, name, e.msg);
        return 1;
    }
    if (json_is_integer(v)) {
        if (json_integer_value(v) < 0)
            return gp_fail(err, "%s[\"%s\"]: %lld is negative", where, name,
                           (long long)json_integer_value(v));
        *out = json_integer_value(v);
        return 1;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d < 0 || d != floor(d) || d > 9e15)
            return gp_fail(err, "%s[\"%s\"]: %g is not a whole non-negative number", where, name,
                           d);
        *out = (int64_t)d;
        return 1;
    }
    return gp_fail(err, "%s[\"%s\"]: must be a quantity string or a number", where, name);
}

int quantity_resource(const json_t *res, const char *name, const char *where, int64_t *out,
                      gp_err *err)
{
    char w[160];
    snprintf(w, sizeof w, "%s.resources.limits", where);
    int rc = resource_int(json_object_get(res, "limits"), name, w, out, err);
    if (rc)
        return rc;
    snprintf(w, sizeof w, "%s.resources.requests", where);
    return resource_int(json_object_get(res, "requests"), name, w, out, err);
}

