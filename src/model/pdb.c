/* pdb.c -- PodDisruptionBudgets: decoding, selectors, kube-scheduler's violation count. */
#include "model/pdb.h"

#include <stdlib.h>
#include <string.h>

#include "model/podprio.h"

static void req_free(gp_sel_req *r)
{
    free(r->key);
    for (int i = 0; i < r->nvalues; i++)
        free(r->values[i]);
    free(r->values);
}

void pdb_free(gp_pdb *b)
{
    if (!b)
        return;
    for (int i = 0; i < b->nreqs; i++)
        req_free(&b->reqs[i]);
    free(b->reqs);
    for (int i = 0; i < b->ndisrupted; i++)
        free(b->disrupted[i]);
    free(b->disrupted);
    free(b);
}

static gp_sel_req *add_req(gp_pdb *b, const char *key, gp_sel_op op)
{
    b->reqs = xrealloc(b->reqs, (size_t)(b->nreqs + 1) * sizeof *b->reqs);
    gp_sel_req *r = &b->reqs[b->nreqs++];
    *r = (gp_sel_req){xstrdup(key), op, 0, NULL};
    return r;
}

static void add_value(gp_sel_req *r, const char *v)
{
    r->values = xrealloc(r->values, (size_t)(r->nvalues + 1) * sizeof *r->values);
    r->values[r->nvalues++] = xstrdup(v);
}

static const struct {
    const char *name;
    gp_sel_op op;
    bool listy;
} ops[] = {
    {"In", GP_SEL_IN, true},
    {"NotIn", GP_SEL_NOT_IN, true},
    {"Exists", GP_SEL_EXISTS, false},
    {"DoesNotExist", GP_SEL_DOES_NOT_EXIST, false},
};

/* spec.selector -> requirements; false when it cannot be read (then it matches nothing). */
static bool decode_selector(gp_pdb *b, const json_t *sel)
{
    if (!json_is_object(sel))
        return false;
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)json_object_get(sel, "matchLabels"), k, v) {
        if (!json_is_string(v) || b->nreqs >= GP_PDB_REQS_MAX)
            return false;
        add_value(add_req(b, k, GP_SEL_IN), json_string_value(v));
    }
    size_t i;
    const json_t *e;
    json_array_foreach(json_object_get(sel, "matchExpressions"), i, e) {
        const char *key = json_string_value(json_object_get(e, "key"));
        const char *op = json_string_value(json_object_get(e, "operator"));
        const json_t *vals = json_object_get(e, "values");
        size_t o = 0;
        while (o < GP_ARRAY_LEN(ops) && (!op || strcmp(ops[o].name, op) != 0))
            o++;
        if (!key || o == GP_ARRAY_LEN(ops) || b->nreqs >= GP_PDB_REQS_MAX)
            return false;
        size_t nv = json_array_size(vals);
        if (ops[o].listy != (nv > 0) || nv > GP_PDB_VALUES_MAX)
            return false;   /* In/NotIn need values, Exists/DoesNotExist take none */
        gp_sel_req *r = add_req(b, key, ops[o].op);
        size_t j;
        const json_t *x;
        json_array_foreach(vals, j, x) {
            if (!json_is_string(x))
                return false;
            add_value(r, json_string_value(x));
        }
    }
    return b->nreqs > 0;   /* an empty selector matches nothing */
}

gp_pdb *pdb_decode(const json_t *obj, gp_err *err)
{
    const json_t *md = json_object_get(obj, "metadata");
    const char *name = json_string_value(json_object_get(md, "name"));
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    const char *uid = json_string_value(json_object_get(md, "uid"));
    if (!name || !*name || !ns || !*ns || strlen(name) >= GP_NAME_MAX || strlen(ns) >= GP_NAME_MAX) {
        gp_fail(err, "PodDisruptionBudget without a usable metadata.name/namespace");
        return NULL;
    }
    gp_pdb *b = xcalloc(1, sizeof *b);
    gp_strlcpy(b->ns, ns, sizeof b->ns);
    gp_strlcpy(b->name, name, sizeof b->name);
    gp_strlcpy(b->uid, uid && strlen(uid) < sizeof b->uid ? uid : "", sizeof b->uid);
    const json_t *st = json_object_get(obj, "status");
    json_int_t allowed = json_integer_value(json_object_get(st, "disruptionsAllowed"));
    b->allowed = allowed > INT32_MAX ? INT32_MAX : allowed < 0 ? 0 : (int32_t)allowed;
    if (!decode_selector(b, json_object_get(json_object_get(obj, "spec"), "selector"))) {
        for (int i = 0; i < b->nreqs; i++)
            req_free(&b->reqs[i]);
        free(b->reqs);
        b->reqs = NULL;
        b->nreqs = 0;
        b->matches_nothing = true;
    }
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)json_object_get(st, "disruptedPods"), k, v) {
        if (b->ndisrupted >= GP_PDB_DISRUPTED_MAX)
            break;
        b->disrupted = xrealloc(b->disrupted, (size_t)(b->ndisrupted + 1) * sizeof *b->disrupted);
        b->disrupted[b->ndisrupted++] = xstrdup(k);
    }
    return b;
}

static bool in_values(const gp_sel_req *r, const char *v)
{
    for (int i = 0; i < r->nvalues; i++)
        if (strcmp(r->values[i], v) == 0)
            return true;
    return false;
}

bool pdb_matches(const gp_pdb *b, const char *ns, const char *labels)
{
    if (b->matches_nothing || strcmp(b->ns, ns) != 0 || !labels || !*labels)
        return false;
    for (int i = 0; i < b->nreqs; i++) {
        const gp_sel_req *r = &b->reqs[i];
        const char *v = podprio_label(labels, r->key);
        bool ok = false;
        switch (r->op) {
        case GP_SEL_IN:
            ok = v && in_values(r, v);
            break;
        case GP_SEL_NOT_IN:
            ok = !v || !in_values(r, v);
            break;
        case GP_SEL_EXISTS:
            ok = v != NULL;
            break;
        case GP_SEL_DOES_NOT_EXIST:
            ok = v == NULL;
            break;
        }
        if (!ok)
            return false;
    }
    return true;
}

static bool disrupted(const gp_pdb *b, const char *name)
{
    for (int i = 0; i < b->ndisrupted; i++)
        if (strcmp(b->disrupted[i], name) == 0)
            return true;
    return false;
}

void pdb_violations(gp_pdb *const *pdbs, size_t npdbs, const gp_pdb_pod *pods, size_t npods,
                    bool *violating)
{
    int64_t *left = xmalloc((npdbs ? npdbs : 1) * sizeof *left);
    for (size_t i = 0; i < npdbs; i++)
        left[i] = pdbs[i]->allowed;
    for (size_t p = 0; p < npods; p++) {
        violating[p] = false;
        for (size_t i = 0; i < npdbs; i++) {
            if (!pdb_matches(pdbs[i], pods[p].ns, pods[p].labels) || disrupted(pdbs[i], pods[p].name))
                continue;
            if (--left[i] < 0)
                violating[p] = true;
        }
    }
    free(left);
}

bool pdb_covered(gp_pdb *const *pdbs, size_t npdbs, const char *ns, const char *labels)
{
    for (size_t i = 0; i < npdbs; i++)
        if (pdb_matches(pdbs[i], ns, labels))
            return true;
    return false;
}
