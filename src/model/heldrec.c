/* heldrec.c -- a consolidation plan's held places as a pod condition's message. */
#include "model/heldrec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonpath.h"

#define HELDREC_VERSION 1
#define INDEX_MAX 65535           /* a GPU's device index */
#define CPU_MAX (INT64_C(1) << 40)   /* millicores */

void heldrec_clear(gp_held_rec *r)
{
    free(r->p);
    memset(r, 0, sizeof *r);
}

char *heldrec_encode(const gp_held_rec *r)
{
    json_t *places = json_array();
    for (int i = 0; i < r->n; i++) {
        const gp_held_place *pl = &r->p[i];
        json_t *gpus = json_array();
        for (int h = 0; h < pl->nholds; h++)
            json_array_append_new(gpus, json_pack("[I,I,i]", (json_int_t)pl->holds[h].index,
                                                  (json_int_t)pl->holds[h].mem_mib, pl->holds[h].core));
        json_array_append_new(places, json_pack("{s:s,s:s,s:s,s:s,s:o,s:I,s:I,s:I}", "owner", pl->owner,
                                                "ns", pl->ns, "pod", pl->pod, "node", pl->node, "gpus",
                                                gpus, "cpu", (json_int_t)pl->cpu_milli, "mem",
                                                (json_int_t)pl->mem_mib, "expires",
                                                (json_int_t)pl->expires_ns));
    }
    json_t *o = json_pack("{s:i,s:I,s:o}", "v", HELDREC_VERSION, "at", (json_int_t)r->at_ns, "places",
                          places);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (!text)
        abort();   /* strings gpupack holds: only out of memory */
    json_decref(o);
    return text;
}

/* A string member of at most max - 1 bytes, not empty, into out. */
static int str_field(const json_t *o, const char *key, char *out, size_t max, int i, gp_err *err)
{
    const char *s = gp_json_str_at(o, key, NULL);
    if (!s || !*s)
        return gp_fail(err, "place %d: \"%s\" missing or not a string", i, key);
    if (strlen(s) >= max)
        return gp_fail(err, "place %d: \"%s\" longer than %zu bytes", i, key, max - 1);
    gp_strlcpy(out, s, max);
    return 0;
}

/* An integer member within [lo, hi]. */
static int int_field(const json_t *o, const char *key, int64_t lo, int64_t hi, int64_t *out, int i,
                     gp_err *err)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_integer(v))
        return gp_fail(err, "place %d: \"%s\" missing or not an integer", i, key);
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return gp_fail(err, "place %d: \"%s\" %lld out of range", i, key, (long long)x);
    *out = x;
    return 0;
}

static int place_decode(const json_t *o, int64_t at_ns, gp_held_place *pl, int i, gp_err *err)
{
    if (!json_is_object(o))
        return gp_fail(err, "place %d is not an object", i);
    if (str_field(o, "owner", pl->owner, sizeof pl->owner, i, err) ||
        str_field(o, "ns", pl->ns, sizeof pl->ns, i, err) ||
        str_field(o, "pod", pl->pod, sizeof pl->pod, i, err) ||
        str_field(o, "node", pl->node, sizeof pl->node, i, err) ||
        int_field(o, "cpu", 0, CPU_MAX, &pl->cpu_milli, i, err) ||
        int_field(o, "mem", 0, HELDREC_MEM_MAX, &pl->mem_mib, i, err) ||
        int_field(o, "expires", at_ns + 1, INT64_MAX, &pl->expires_ns, i, err))
        return -1;
    const json_t *gpus = json_object_get(o, "gpus");
    size_t n = json_array_size(gpus);
    if (!json_is_array(gpus) || n == 0 || n > GP_MAX_GPUS_PER_NODE)
        return gp_fail(err, "place %d: \"gpus\" must list 1 to %d GPUs", i, GP_MAX_GPUS_PER_NODE);
    for (size_t g = 0; g < n; g++) {
        const json_t *t = json_array_get(gpus, g);
        const json_t *ix = json_array_get(t, 0), *mem = json_array_get(t, 1), *core = json_array_get(t, 2);
        if (json_array_size(t) != 3 || !json_is_integer(ix) || !json_is_integer(mem) ||
            !json_is_integer(core))
            return gp_fail(err, "place %d: GPU %zu is not [index, MiB, per-mille]", i, g);
        json_int_t x = json_integer_value(ix), m = json_integer_value(mem), c = json_integer_value(core);
        if (x < 0 || x > INDEX_MAX || m < 0 || m > HELDREC_MEM_MAX || c < 0 || c > 1000 ||
            (m == 0 && c == 0))
            return gp_fail(err, "place %d: GPU %zu out of range", i, g);
        for (size_t k = 0; k < g; k++)
            if (pl->holds[k].index == (int)x)
                return gp_fail(err, "place %d: GPU %lld listed twice", i, (long long)x);
        pl->holds[g] = (gp_hold){.index = (int)x, .mem_mib = m, .core = (int)c};
    }
    pl->nholds = (int)n;
    return 0;
}

int heldrec_decode(const char *text, gp_held_rec *r, gp_err *err)
{
    memset(r, 0, sizeof *r);
    if (!text)
        return gp_fail(err, "no record");
    size_t len = strnlen(text, HELDREC_TEXT_MAX + 1);
    if (len > HELDREC_TEXT_MAX)
        return gp_fail(err, "record longer than %d bytes", HELDREC_TEXT_MAX);
    json_error_t je;
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!o)
        return gp_fail(err, "record is not JSON: %s", je.text);
    int rc = -1;
    const json_t *v = json_object_get(o, "v"), *at = json_object_get(o, "at");
    const json_t *places = json_object_get(o, "places");
    size_t n = json_array_size(places);
    if (!json_is_object(o) || !json_is_integer(v) || json_integer_value(v) != HELDREC_VERSION) {
        gp_fail(err, "record: \"v\" must be %d", HELDREC_VERSION);
    } else if (!json_is_integer(at) || json_integer_value(at) <= 0) {
        gp_fail(err, "record: \"at\" must be a positive integer (Unix ns)");
    } else if (!json_is_array(places) || n == 0 || n > HELDREC_PLACES_MAX) {
        gp_fail(err, "record: \"places\" must list 1 to %d places", HELDREC_PLACES_MAX);
    } else {
        r->at_ns = json_integer_value(at);
        r->p = xcalloc(n, sizeof *r->p);
        rc = 0;
        for (size_t i = 0; i < n && rc == 0; i++)
            rc = place_decode(json_array_get(places, i), r->at_ns, &r->p[i], (int)i, err);
        r->n = (int)n;
    }
    json_decref(o);
    if (rc)
        heldrec_clear(r);
    return rc;
}

int heldrec_from_pod(const json_t *pod, gp_held_rec *r, gp_err *err)
{
    memset(r, 0, sizeof *r);
    size_t i;
    const json_t *c;
    json_array_foreach(gp_json_at(pod, "status", "conditions"), i, c) {
        const char *type = gp_json_str_at(c, "type", NULL);
        if (!type || strcmp(type, GP_HELD_PLACES_CONDITION) != 0)
            continue;
        const char *st = gp_json_str_at(c, "status", NULL);
        if (!st || strcmp(st, "True") != 0)
            return 0;
        return heldrec_decode(gp_json_str_at(c, "message", NULL), r, err) ? -1 : 1;
    }
    return 0;
}

void heldrec_assignment(const gp_held_place *pl, gp_assignment *a)
{
    memset(a, 0, sizeof *a);
    gp_strlcpy(a->node, pl->node, sizeof a->node);
    /* GP_MAX_CTRS x GP_MAX_GPUS_PER_CTR entries: more than a node has GPUs */
    for (int h = 0; h < pl->nholds && h < GP_MAX_CTRS * GP_MAX_GPUS_PER_CTR; h++) {
        if (h % GP_MAX_GPUS_PER_CTR == 0) {
            snprintf(a->ctrs[a->nctrs].name, sizeof a->ctrs[a->nctrs].name, "held-%d", a->nctrs);
            a->nctrs++;
        }
        gp_ctr_assign *ca = &a->ctrs[a->nctrs - 1];
        ca->gpus[ca->ngpus++] = (gp_gpu_grant){pl->holds[h].index, pl->holds[h].mem_mib, pl->holds[h].core};
    }
}
