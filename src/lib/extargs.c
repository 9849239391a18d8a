/* extargs.c -- fast decoding of kube-scheduler's ExtenderArgs. */
#include "lib/extargs.h"

#include <stdlib.h>
#include <string.h>

#include <stdbool.h>

#include "lib/jsonscan.h"
#include "lib/util.h"

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

/* The Pod's value [b, e): null, or reduced to what `keep` keeps, then parsed. */
static int load_pod(const char *b, const char *e, const gp_keep *keep, json_t **out)
{
    *out = NULL;
    if (e - b == 4 && memcmp(b, "null", 4) == 0)
        return 0;
    return jscan_load_reduced(b, e, keep, 0, out);
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

/* One pass: the names are copied as they are read into an arena as large as
 * the rest of the body (their text cannot take more), the pointers into a
 * table that doubles. */
static int scan_names(gp_jscan *s, size_t max, gp_extargs *a)
{
    jscan_ws(s);
    if (s->end - s->p >= 4 && memcmp(s->p, "null", 4) == 0) {
        s->p += 4;
        return 0;
    }
    if (s->p >= s->end || *s->p != '[')
        return -1;
    s->p++;
    a->has_names = true;
    jscan_ws(s);
    if (s->p < s->end && *s->p == ']') {
        s->p++;
        return 0;
    }
    a->arena = xmalloc((size_t)(s->end - s->p));
    size_t n = 0, cap = 0, off = 0;
    for (;;) {
        jscan_ws(s);
        const char *str;
        size_t len;
        if (jscan_plain_string(s, &str, &len) || n >= max)
            return -1;
        if (n == cap) {
            cap = cap ? 2 * cap : 1024;
            if (cap > max)
                cap = max;
            a->names = xrealloc(a->names, cap * sizeof *a->names);
        }
        memcpy(a->arena + off, str, len);   /* len + 1 <= the bytes "str", took */
        a->arena[off + len] = '\0';
        a->names[n++] = a->arena + off;
        off += len + 1;
        int more = jscan_next(s, ']');
        if (more < 0)
            return -1;
        if (more == 0) {
            a->nnames = n;
            return 0;
        }
    }
}

int extargs_scan(const char *body, size_t len, size_t max_names, const gp_keep *pod_keep,
                 gp_extargs *out)
{
    memset(out, 0, sizeof *out);
    gp_jscan s = {body, body + len};
    bool seen_pod = false, seen_nodes = false, seen_names = false;
    jscan_ws(&s);
    if (s.p >= s.end || *s.p != '{')
        return -1;
    s.p++;
    jscan_ws(&s);
    if (s.p < s.end && *s.p == '}') {
        s.p++;
        goto tail;
    }
    for (;;) {
        jscan_ws(&s);
        const char *key;
        size_t klen;
        if (jscan_plain_string(&s, &key, &klen))
            goto decline;
        jscan_ws(&s);
        if (s.p >= s.end || *s.p != ':')
            goto decline;
        s.p++;
        jscan_ws(&s);
        if (klen == 9 && memcmp(key, "NodeNames", 9) == 0 && !seen_names) {
            seen_names = true;
            if (scan_names(&s, max_names, out))
                goto decline;
        } else if ((klen == 3 && memcmp(key, "Pod", 3) == 0 && !seen_pod) ||
                   (klen == 5 && memcmp(key, "Nodes", 5) == 0 && !seen_nodes)) {
            bool pod = klen == 3;
            const char *b = s.p;
            if (jscan_skip_value(&s, 0) ||
                (pod ? load_pod(b, s.p, pod_keep, &out->pod) : load_part(b, s.p, &out->nodes)))
                goto decline;
            if (pod)
                seen_pod = true;
            else
                seen_nodes = true;
        } else {
            goto decline;   /* unknown or repeated key: jansson's rules apply */
        }
        int more = jscan_next(&s, '}');
        if (more < 0)
            goto decline;
        if (more == 0)
            break;
    }
tail:
    jscan_ws(&s);
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
