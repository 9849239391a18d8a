/* jsonscan.c -- a strict JSON text scanner for the fast paths (jsonscan.h). */
#include "lib/jsonscan.h"

#include <string.h>

#include "lib/util.h"

#define MAX_SCAN_DEPTH 128




/* A skipped string: escapes and UTF-8 are validated as strictly as jansson
 * would (anything doubtful declines: \u0000, surrogate escapes). */
static int skip_string(gp_jscan *s)
{
    s->p++;   /* the opening quote */
    while (s->p < s->end) {
        unsigned char c = (unsigned char)*s->p;
        if (c == '"') {
            s->p++;
            return 0;
        }
        if (c < 0x20)
            return -1;
        if (c == '\\') {
            if (++s->p >= s->end)
                return -1;
            char e = *s->p++;
            if (e == 'u') {
                if (s->end - s->p < 4)
                    return -1;
                unsigned v = 0;
                for (int i = 0; i < 4; i++) {
                    char h = *s->p++;
                    int d = h >= '0' && h <= '9'   ? h - '0'
                            : h >= 'a' && h <= 'f' ? h - 'a' + 10
                            : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                                   : -1;
                    if (d < 0)
                        return -1;
                    v = v * 16 + (unsigned)d;
                }
                if (v == 0 || (v >= 0xD800 && v <= 0xDFFF))
                    return -1;
            } else if (!strchr("\"\\/bfnrt", e) || e == '\0') {
                return -1;
            }
            continue;
        }
        if (c < 0x80) {
            s->p++;
            continue;
        }
        /* UTF-8: the length from the lead byte, continuation bytes, no
         * overlong forms, no surrogates, at most U+10FFFF */
        int n = gp_utf8_seq(s->p, s->end);
        if (n < 0)
            return -1;
        s->p += n;
    }
    return -1;
}

/* A number per the JSON grammar without an exponent; long ones and those
 * with one decline (jansson refuses integers past its range and reals past a
 * double's, and we do not want to second-guess where that is). */
static int skip_number(gp_jscan *s)
{
    const char *b = s->p;
    if (s->p < s->end && *s->p == '-')
        s->p++;
    if (s->p >= s->end || *s->p < '0' || *s->p > '9')
        return -1;
    if (*s->p == '0')
        s->p++;
    else
        while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
            s->p++;
    if (s->p < s->end && *s->p == '.') {
        s->p++;
        if (s->p >= s->end || *s->p < '0' || *s->p > '9')
            return -1;
        while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
            s->p++;
    }
    /* an exponent declines: jansson refuses a real that overflows a double
     * (6E7777), and where that starts is its business (found by fuzz_extargs) */
    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E'))
        return -1;
    return s->p - b <= 15 ? 0 : -1;
}

static int skip_literal(gp_jscan *s, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
        return -1;
    s->p += n;
    return 0;
}

/* Skips one value, validating it as strictly as jansson would parse it. */
int jscan_skip_value(gp_jscan *s, int depth)
{
    if (depth > MAX_SCAN_DEPTH)
        return -1;
    jscan_ws(s);
    if (s->p >= s->end)
        return -1;
    char c = *s->p;
    if (c == '"')
        return skip_string(s);
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        s->p++;
        jscan_ws(s);
        if (s->p < s->end && *s->p == close) {
            s->p++;
            return 0;
        }
        for (;;) {
            if (c == '{') {
                jscan_ws(s);
                if (s->p >= s->end || *s->p != '"' || skip_string(s))
                    return -1;
                jscan_ws(s);
                if (s->p >= s->end || *s->p != ':')
                    return -1;
                s->p++;
            }
            if (jscan_skip_value(s, depth + 1))
                return -1;
            jscan_ws(s);
            if (s->p >= s->end)
                return -1;
            if (*s->p == ',') {
                s->p++;
                continue;
            }
            if (*s->p == close) {
                s->p++;
                return 0;
            }
            return -1;
        }
    }
    if (c == 't')
        return skip_literal(s, "true");
    if (c == 'f')
        return skip_literal(s, "false");
    if (c == 'n')
        return skip_literal(s, "null");
    return skip_number(s);
}

static int copy_value(gp_jscan *s, gp_buf *out, const gp_keep *k, int depth);

/* Copies the members of an object that `rules` (or `prefixes`) keep. */
int jscan_copy_object(gp_jscan *s, gp_buf *out, const gp_keep *rules, const char *const *prefixes,
                       int depth)
{
    jscan_ws(s);
    if (depth > MAX_SCAN_DEPTH || s->p >= s->end || *s->p != '{')
        return -1;
    s->p++;
    if (gp_buf_append(out, "{", 1))
        return -1;
    bool first = true;
    jscan_ws(s);
    if (s->p < s->end && *s->p == '}') {
        s->p++;
        return gp_buf_append(out, "}", 1);
    }
    for (;;) {
        jscan_ws(s);
        const char *key;
        size_t klen;
        if (jscan_plain_string(s, &key, &klen))
            return -1;
        jscan_ws(s);
        if (s->p >= s->end || *s->p != ':')
            return -1;
        s->p++;
        const gp_keep *k = prefixes ? NULL : jsonkeep_find(rules, key, klen);
        bool take = prefixes ? jsonkeep_prefixed(prefixes, key, klen) : k != NULL;
        if (take) {
            if ((!first && gp_buf_append(out, ",", 1)) || gp_buf_append(out, "\"", 1) ||
                gp_buf_append(out, key, klen) || gp_buf_append(out, "\":", 2) ||
                copy_value(s, out, k, depth + 1))
                return -1;
            first = false;
        } else if (jscan_skip_value(s, depth + 1)) {
            return -1;
        }
        int more = jscan_next(s, '}');
        if (more <= 0)
            return more < 0 ? -1 : gp_buf_append(out, "}", 1);
    }
}

/* Copies a value: whole, or reduced as k says. */
static int copy_value(gp_jscan *s, gp_buf *out, const gp_keep *k, int depth)
{
    jscan_ws(s);
    bool reduced = k && (k->sub || k->prefixes);
    if (reduced && s->end - s->p >= 4 && memcmp(s->p, "null", 4) == 0) {
        s->p += 4;
        return gp_buf_append(out, "null", 4);
    }
    if (k && k->each) {
        if (s->p >= s->end || *s->p != '[')
            return -1;
        s->p++;
        if (gp_buf_append(out, "[", 1))
            return -1;
        jscan_ws(s);
        if (s->p < s->end && *s->p == ']') {
            s->p++;
            return gp_buf_append(out, "]", 1);
        }
        for (bool first = true;; first = false) {
            if ((!first && gp_buf_append(out, ",", 1)) || jscan_copy_object(s, out, k->sub, NULL, depth + 1))
                return -1;
            int more = jscan_next(s, ']');
            if (more <= 0)
                return more < 0 ? -1 : gp_buf_append(out, "]", 1);
        }
    }
    if (reduced)
        return jscan_copy_object(s, out, k->sub, k->prefixes, depth);
    const char *b = s->p;
    if (jscan_skip_value(s, depth))
        return -1;
    return gp_buf_append(out, b, (size_t)(s->p - b));
}

/* Reduced to what `keep` keeps, then parsed. */
int jscan_load_reduced(const char *b, const char *e, const gp_keep *keep, size_t flags, json_t **out)
{
    *out = NULL;
    gp_jscan s = {b, e};
    gp_buf text;
    gp_buf_init(&text, (size_t)(e - b) + 16);
    json_t *v = NULL;
    if (jscan_copy_object(&s, &text, keep, NULL, 0) == 0) {
        jscan_ws(&s);
        if (s.p == s.end)
            v = json_loadb(text.data, text.len, flags, NULL);
    }
    gp_buf_free(&text);
    if (!v)
        return -1;
    *out = v;
    return 0;
}
