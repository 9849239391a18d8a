/* extargs.c -- fast decoding of kube-scheduler's ExtenderArgs. */
#include "extargs.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

#define MAX_SCAN_DEPTH 128

typedef struct scan {
    const char *p, *end;
} scan;

static void ws(scan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

/* A string with no escapes and only printable ASCII; sets [*start, *len). */
static int plain_string(scan *s, const char **start, size_t *len)
{
    if (s->p >= s->end || *s->p != '"')
        return -1;
    const char *b = ++s->p;
    while (s->p < s->end) {
        unsigned char c = (unsigned char)*s->p;
        if (c == '"') {
            *start = b;
            *len = (size_t)(s->p - b);
            s->p++;
            return 0;
        }
        if (c == '\\' || c < 0x20 || c >= 0x80)
            return -1;   /* escapes and non-ASCII: let jansson judge */
        s->p++;
    }
    return -1;
}

/* Skips any well-formed value (strings may hold escapes and UTF-8 here, since
 * jansson will parse and validate the skipped value itself). */
static int skip_value(scan *s, int depth)
{
    if (depth > MAX_SCAN_DEPTH)
        return -1;
    ws(s);
    if (s->p >= s->end)
        return -1;
    char c = *s->p;
    if (c == '"') {
        s->p++;
        while (s->p < s->end && *s->p != '"') {
            if (*s->p == '\\')
                s->p++;
            else if ((unsigned char)*s->p < 0x20)
                return -1;
            s->p++;
        }
        if (s->p >= s->end)
            return -1;
        s->p++;
        return 0;
    }
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        s->p++;
        ws(s);
        if (s->p < s->end && *s->p == close) {
            s->p++;
            return 0;
        }
        for (;;) {
            if (c == '{') {
                ws(s);
                if (s->p >= s->end || *s->p != '"' || skip_value(s, depth + 1))
                    return -1;
                ws(s);
                if (s->p >= s->end || *s->p != ':')
                    return -1;
                s->p++;
            }
            if (skip_value(s, depth + 1))
                return -1;
            ws(s);
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
    /* numbers and literals: a run of their characters; jansson checks them */
    const char *b = s->p;
    while (s->p < s->end && strchr("0123456789+-.eEtruefalsn", *s->p))
        s->p++;
    return s->p > b ? 0 : -1;
}

/* Parses [b, e) with jansson: the value of "Pod" or "Nodes". */
static int load_part(const char *b, const char *e, json_t **out)
{
    *out = NULL;
    if (e - b == 4 && memcmp(b, "null", 4) == 0)
        return 0;
    json_t *v = json_loadb(b, (size_t)(e - b), 0, NULL);
    if (!v)
        return -1;
    *out = v;
    return 0;
}

static int scan_names(scan *s, size_t max, gp_extargs *a)
{
    ws(s);
    if (s->end - s->p >= 4 && memcmp(s->p, "null", 4) == 0) {
        s->p += 4;
        return 0;
    }
    if (s->p >= s->end || *s->p != '[')
        return -1;
    s->p++;
    /* first pass: count and measure, second: copy */
    const char *start = s->p;
    size_t n = 0, bytes = 0;
    for (int pass = 0; pass < 2; pass++) {
        s->p = start;
        size_t k = 0, off = 0;
        ws(s);
        if (s->p < s->end && *s->p == ']') {
            s->p++;
        } else {
            for (;;) {
                ws(s);
                const char *str;
                size_t len;
                if (plain_string(s, &str, &len))
                    return -1;
                if (pass == 0) {
                    if (++n > max)
                        return -1;
                    bytes += len + 1;
                } else {
                    memcpy(a->arena + off, str, len);
                    a->arena[off + len] = '\0';
                    a->names[k++] = a->arena + off;
                    off += len + 1;
                }
                ws(s);
                if (s->p < s->end && *s->p == ',') {
                    s->p++;
                    continue;
                }
                if (s->p < s->end && *s->p == ']') {
                    s->p++;
                    break;
                }
                return -1;
            }
        }
        if (pass == 0) {
            a->arena = xmalloc(bytes ? bytes : 1);
            a->names = xmalloc((n ? n : 1) * sizeof *a->names);
        }
    }
    a->nnames = n;
    a->has_names = true;
    return 0;
}

int extargs_scan(const char *body, size_t len, size_t max_names, gp_extargs *out)
{
    memset(out, 0, sizeof *out);
    scan s = {body, body + len};
    bool seen_pod = false, seen_nodes = false, seen_names = false;
    ws(&s);
    if (s.p >= s.end || *s.p != '{')
        return -1;
    s.p++;
    ws(&s);
    if (s.p < s.end && *s.p == '}') {
        s.p++;
        goto tail;
    }
    for (;;) {
        ws(&s);
        const char *key;
        size_t klen;
        if (plain_string(&s, &key, &klen))
            goto decline;
        ws(&s);
        if (s.p >= s.end || *s.p != ':')
            goto decline;
        s.p++;
        ws(&s);
        if (klen == 9 && memcmp(key, "NodeNames", 9) == 0 && !seen_names) {
            seen_names = true;
            if (scan_names(&s, max_names, out))
                goto decline;
        } else if ((klen == 3 && memcmp(key, "Pod", 3) == 0 && !seen_pod) ||
                   (klen == 5 && memcmp(key, "Nodes", 5) == 0 && !seen_nodes)) {
            bool pod = klen == 3;
            const char *b = s.p;
            if (skip_value(&s, 0) || load_part(b, s.p, pod ? &out->pod : &out->nodes))
                goto decline;
            if (pod)
                seen_pod = true;
            else
                seen_nodes = true;
        } else {
            goto decline;   /* unknown or repeated key: jansson's rules apply */
        }
        ws(&s);
        if (s.p < s.end && *s.p == ',') {
            s.p++;
            continue;
        }
        if (s.p < s.end && *s.p == '}') {
            s.p++;
            break;
        }
        goto decline;
    }
tail:
    ws(&s);
    if (s.p != s.end)
        goto decline;
    return 0;
decline:
    extargs_free(out);
    return -1;
}

void extargs_free(gp_extargs *a)
{
    json_decref(a->pod);
    json_decref(a->nodes);
    free(a->names);
    free(a->arena);
    memset(a, 0, sizeof *a);
}
