/* extargs.c -- fast decoding of kube-scheduler's ExtenderArgs. */
#include "lib/extargs.h"

#include <stdlib.h>
#include <string.h>

#include <stdbool.h>

#include "lib/util.h"

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

/* A skipped string: escapes and UTF-8 are validated as strictly as jansson
 * would (anything doubtful declines: \u0000, surrogate escapes). */
static int skip_string(scan *s)
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

/* A number per the JSON grammar; long ones decline (jansson refuses integers
 * past its range, and we do not want to second-guess where that is). */
static int skip_number(scan *s)
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
    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
        s->p++;
        if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
            s->p++;
        if (s->p >= s->end || *s->p < '0' || *s->p > '9')
            return -1;
        while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
            s->p++;
    }
    return s->p - b <= 15 ? 0 : -1;
}

static int skip_literal(scan *s, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
        return -1;
    s->p += n;
    return 0;
}

/* Skips one value, validating it as strictly as jansson would parse it. */
static int skip_value(scan *s, int depth)
{
    if (depth > MAX_SCAN_DEPTH)
        return -1;
    ws(s);
    if (s->p >= s->end)
        return -1;
    char c = *s->p;
    if (c == '"')
        return skip_string(s);
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
                if (s->p >= s->end || *s->p != '"' || skip_string(s))
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
    if (c == 't')
        return skip_literal(s, "true");
    if (c == 'f')
        return skip_literal(s, "false");
    if (c == 'n')
        return skip_literal(s, "null");
    return skip_number(s);
}

/* ------------------------------------------------------- pod reduction -- */

const char *const extargs_annotation_prefixes[] = {
    "gpupack.io/",              /* gpu-model, policy, assignment ... */
    "ALIYUN_COM_GPU_MEM_",      /* aliyun assignments */
    "gpu-fraction",             /* KAI: also gpu-fraction-num-devices, -container-name */
    "gpu-memory",               /* KAI */
    "nvidia.com/use-gputype",   /* HAMi, Volcano */
    "nvidia.com/nouse-gputype",
    NULL,
};

static int copy_value(scan *s, gp_buf *out, const gp_keep *k, int depth);

/* Copies the members of an object that `rules` (or `prefixes`) keep. */
static int copy_object(scan *s, gp_buf *out, const gp_keep *rules, const char *const *prefixes,
                       int depth)
{
    ws(s);
    if (depth > MAX_SCAN_DEPTH || s->p >= s->end || *s->p != '{')
        return -1;
    s->p++;
    if (gp_buf_append(out, "{", 1))
        return -1;
    bool first = true;
    ws(s);
    if (s->p < s->end && *s->p == '}') {
        s->p++;
        return gp_buf_append(out, "}", 1);
    }
    for (;;) {
        ws(s);
        const char *key;
        size_t klen;
        if (plain_string(s, &key, &klen))
            return -1;
        ws(s);
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
        } else if (skip_value(s, depth + 1)) {
            return -1;
        }
        ws(s);
        if (s->p < s->end && *s->p == ',') {
            s->p++;
            continue;
        }
        if (s->p < s->end && *s->p == '}') {
            s->p++;
            return gp_buf_append(out, "}", 1);
        }
        return -1;
    }
}

/* Copies a value: whole, or reduced as k says. */
static int copy_value(scan *s, gp_buf *out, const gp_keep *k, int depth)
{
    ws(s);
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
        ws(s);
        if (s->p < s->end && *s->p == ']') {
            s->p++;
            return gp_buf_append(out, "]", 1);
        }
        for (bool first = true;; first = false) {
            if ((!first && gp_buf_append(out, ",", 1)) || copy_object(s, out, k->sub, NULL, depth + 1))
                return -1;
            ws(s);
            if (s->p < s->end && *s->p == ',') {
                s->p++;
                continue;
            }
            if (s->p < s->end && *s->p == ']') {
                s->p++;
                return gp_buf_append(out, "]", 1);
            }
            return -1;
        }
    }
    if (reduced)
        return copy_object(s, out, k->sub, k->prefixes, depth);
    const char *b = s->p;
    if (skip_value(s, depth))
        return -1;
    return gp_buf_append(out, b, (size_t)(s->p - b));
}

/* The Pod's value [b, e) reduced to what `keep` keeps, then parsed. */
static int load_pod(const char *b, const char *e, const gp_keep *keep, json_t **out)
{
    *out = NULL;
    if (e - b == 4 && memcmp(b, "null", 4) == 0)
        return 0;
    scan s = {b, e};
    gp_buf text;
    gp_buf_init(&text, (size_t)(e - b) + 16);
    json_t *v = NULL;
    if (copy_object(&s, &text, keep, NULL, 0) == 0) {
        ws(&s);
        if (s.p == s.end)
            v = json_loadb(text.data, text.len, 0, NULL);
    }
    gp_buf_free(&text);
    if (!v)
        return -1;
    *out = v;
    return 0;
}

/* Parses [b, e) with jansson: the value of "Nodes". */
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

int extargs_scan(const char *body, size_t len, size_t max_names, const gp_keep *pod_keep,
                 gp_extargs *out)
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
            if (skip_value(&s, 0) ||
                (pod ? load_pod(b, s.p, pod_keep, &out->pod) : load_part(b, s.p, &out->nodes)))
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
