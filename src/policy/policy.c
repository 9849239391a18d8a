/* policy.c -- policy sets: building them from parsed policies (cross-policy
 * checks), choosing the policy that governs a pod, reference counting. */
#include "policy/policy.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy_yaml.h"

struct gp_policy_set {
    atomic_int refs;
    int n;                /* selection order: priority desc, name asc; the default last */
    gp_policy **pols;
};

#define WEEK_MIN (7 * 1440)
#define WEEK_WORDS ((WEEK_MIN + 63) / 64)

/* ============================================================ sets */

static gp_policy_set *set_new(gp_policy **pols, int n)
{
    gp_policy_set *s = xcalloc(1, sizeof *s);
    atomic_init(&s->refs, 1);
    s->n = n;
    s->pols = pols;
    return s;
}

gp_policy_set *policy_set_default(void)
{
    gp_policy **pols = xmalloc(sizeof *pols);
    pols[0] = policy_yaml_new("default", NULL);
    return set_new(pols, 1);
}

void policy_set_ref(gp_policy_set *s)
{
    atomic_fetch_add(&s->refs, 1);
}

void policy_set_unref(gp_policy_set *s)
{
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    for (int i = 0; i < s->n; i++)
        policy_yaml_free(s->pols[i]);
    free(s->pols);
    free(s);
}

int policy_set_count(const gp_policy_set *s)
{
    return s ? s->n : 1;
}

const char *policy_set_name_at(const gp_policy_set *s, int i)
{
    if (!s)
        return i == 0 ? "default" : NULL;
    return i >= 0 && i < s->n ? s->pols[i]->name : NULL;
}

const gp_policy *policy_set_find(const gp_policy_set *s, const char *name)
{
    for (int i = 0; s && name && i < s->n; i++)
        if (!strcmp(s->pols[i]->name, name))
            return s->pols[i];
    return NULL;
}

/* ============================================================ matching */

static const char *label_of(const json_t *labels, const char *key)
{
    const json_t *v = json_is_object(labels) ? json_object_get(labels, key) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static bool in_values(const policy_req *r, const char *v)
{
    for (int i = 0; i < r->nvalues; i++)
        if (!strcmp(r->values[i], v))
            return true;
    return false;
}

static bool req_holds(const policy_req *r, const json_t *labels)
{
    const char *v = label_of(labels, r->key);
    switch (r->op) {
    case POLICY_OP_IN:
        return v && in_values(r, v);
    case POLICY_OP_NOT_IN:
        return !v || !in_values(r, v);
    case POLICY_OP_EXISTS:
        return v != NULL;
    case POLICY_OP_DOES_NOT_EXIST:
        return v == NULL;
    }
    return false;
}

static bool ns_matches(const gp_policy *p, const char *ns)
{
    if (p->nns == 0)
        return true;
    for (int i = 0; ns && i < p->nns; i++)
        if (!strcmp(p->ns[i], ns))
            return true;
    return false;
}

static bool window_covers(const policy_window *w, int wday, int minute)
{
    bool today = w->days & (1u << wday);
    if (w->from_min < w->to_min)
        return today && minute >= w->from_min && minute < w->to_min;
    /* crosses midnight: the evening part of a listed day, or the morning after it */
    bool yesterday = w->days & (1u << ((wday + 6) % 7));
    return (today && minute >= w->from_min) || (yesterday && minute < w->to_min);
}

/* True when the policy's schedule (in its time zone) covers `now`; always
 * true without a schedule. Pure. */
static bool policy_active_at(const gp_policy *p, time_t now)
{
    if (p->nwin == 0)
        return true;
    int wday, minute;
    policy_tz_local(p->tz, (int64_t)now, &wday, &minute);
    for (int i = 0; i < p->nwin; i++)
        if (window_covers(&p->win[i], wday, minute))
            return true;
    return false;
}

static bool policy_matches(const gp_policy *p, const char *ns, const json_t *labels, time_t now)
{
    if (!ns_matches(p, ns))
        return false;
    for (int i = 0; i < p->nreqs; i++)
        if (!req_holds(&p->reqs[i], labels))
            return false;
    return policy_active_at(p, now);
}

static void fill_view(const gp_policy *p, gp_policy_view *out)
{
    gp_strlcpy(out->name, p->name, sizeof out->name);
    out->place = p->place;
    out->names = p->names;
    out->decide_in_filter = p->decide_in_filter;
    out->ns_share_cap = p->ns_share_cap;
    out->preempt = p->preempt;
    out->consol = p->consol;
}

static void known_names(const gp_policy_set *s, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < s->n && len < size - 1; i++)
        if (s->pols[i]->allow_request)
            len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? ", " : "",
                                    s->pols[i]->name);
    if (!len)
        gp_strlcpy(buf, "none", size);
}

int policy_select(const gp_policy_set *s, const char *ns, const json_t *labels,
                  const char *requested, time_t now, gp_policy_view *out, gp_err *err)
{
    memset(out, 0, sizeof *out);
    if (!s) {   /* no set: the built-in default, which pods may also name */
        if (requested && *requested && strcmp(requested, "default") != 0)
            return gp_fail(err, "pod asks for policy \"%.64s\" (annotation gpupack.io/policy), "
                                "which does not exist; policies that pods may ask for: default",
                           requested);
        gp_strlcpy(out->name, "default", sizeof out->name);
        placement_default_opts(&out->place);
        podreq_default_names(&out->names);
        return 0;
    }
    if (requested && *requested) {
        const gp_policy *p = policy_set_find(s, requested);
        char names[256];
        known_names(s, names, sizeof names);
        if (!p)
            return gp_fail(err, "pod asks for policy \"%.64s\" (annotation gpupack.io/policy), "
                                "which does not exist; policies that pods may ask for: %s",
                           requested, names);
        if (!p->allow_request)
            return gp_fail(err, "pod asks for policy \"%s\" (annotation gpupack.io/policy), "
                                "which does not allow being asked for (spec.allowRequest is "
                                "false); policies that pods may ask for: %s", p->name, names);
        fill_view(p, out);
        return 0;
    }
    /* The default sorts last and matches everything, so the loop always ends in a match. */
    for (int i = 0; i < s->n; i++) {
        if (i == s->n - 1 || policy_matches(s->pols[i], ns, labels, now)) {
            fill_view(s->pols[i], out);
            break;
        }
    }
    return 0;
}

int policy_view_by_name(const gp_policy_set *s, const char *name, gp_policy_view *out,
                        gp_err *err)
{
    memset(out, 0, sizeof *out);
    const gp_policy *p = s ? policy_set_find(s, name) : NULL;
    if (!p)
        return gp_fail(err, "no policy named \"%.64s\"", name);
    fill_view(p, out);
    return 0;
}

/* ============================================================ conflicts */

/* Can one label set satisfy every requirement in r[0..n)? Per key: In lists
 * intersect minus NotIn values must leave a value, and existence must not be
 * both required and forbidden. */
static bool reqs_satisfiable(const policy_req *const *r, int n)
{
    for (int i = 0; i < n; i++) {
        bool first = true;
        for (int j = 0; j < i; j++)
            if (!strcmp(r[j]->key, r[i]->key))
                first = false;
        if (!first)
            continue;
        bool need = false, forbid = false;
        const policy_req *in = NULL;
        for (int j = i; j < n; j++) {
            if (strcmp(r[j]->key, r[i]->key) != 0)
                continue;
            need |= r[j]->op == POLICY_OP_IN || r[j]->op == POLICY_OP_EXISTS;
            forbid |= r[j]->op == POLICY_OP_DOES_NOT_EXIST;
            if (r[j]->op == POLICY_OP_IN && !in)
                in = r[j];
        }
        if (need && forbid)
            return false;
        if (!in)
            continue;
        bool some = false;
        for (int v = 0; v < in->nvalues && !some; v++) {
            bool ok = true;
            for (int j = i; j < n && ok; j++) {
                if (strcmp(r[j]->key, r[i]->key) != 0)
                    continue;
                if (r[j]->op == POLICY_OP_IN)
                    ok = in_values(r[j], in->values[v]);
                else if (r[j]->op == POLICY_OP_NOT_IN)
                    ok = !in_values(r[j], in->values[v]);
            }
            some = ok;
        }
        if (!some)
            return false;
    }
    return true;
}

static bool selectors_compatible(const gp_policy *a, const gp_policy *b)
{
    int n = a->nreqs + (b ? b->nreqs : 0);
    const policy_req **r = xcalloc((size_t)n + 1, sizeof *r);
    for (int i = 0; i < a->nreqs; i++)
        r[i] = &a->reqs[i];
    for (int i = 0; b && i < b->nreqs; i++)
        r[a->nreqs + i] = &b->reqs[i];
    bool ok = reqs_satisfiable(r, n);
    free(r);
    return ok;
}

static bool namespaces_overlap(const gp_policy *a, const gp_policy *b)
{
    if (a->nns == 0 || b->nns == 0)
        return true;
    for (int i = 0; i < a->nns; i++)
        if (ns_matches(b, a->ns[i]))
            return true;
    return false;
}

static void week_bits(const gp_policy *p, uint64_t *bits)
{
    memset(bits, 0, WEEK_WORDS * sizeof *bits);
    for (int i = 0; i < p->nwin; i++) {
        const policy_window *w = &p->win[i];
        for (int d = 0; d < 7; d++) {
            if (!(w->days & (1u << d)))
                continue;
            int start = d * 1440 + w->from_min;
            int end = d * 1440 + w->to_min + (w->to_min <= w->from_min ? 1440 : 0);
            for (int m = start; m < end; m++)
                bits[(m % WEEK_MIN) / 64] |= UINT64_C(1) << (m % WEEK_MIN % 64);
        }
    }
}

static const char *zone_of(const gp_policy *p)
{
    return p->tz_name[0] ? p->tz_name : "UTC";
}

/* Windows in different zones are assumed to overlap (offsets move with DST). */
static bool schedules_overlap(const gp_policy *a, const gp_policy *b)
{
    if (a->nwin == 0 || b->nwin == 0 || strcmp(zone_of(a), zone_of(b)) != 0)
        return true;
    uint64_t wa[WEEK_WORDS], wb[WEEK_WORDS];
    week_bits(a, wa);
    week_bits(b, wb);
    for (int i = 0; i < WEEK_WORDS; i++)
        if (wa[i] & wb[i])
            return true;
    return false;
}

static int by_selection_order(const void *x, const void *y)
{
    const gp_policy *a = *(const gp_policy *const *)x, *b = *(const gp_policy *const *)y;
    if (a->is_default != b->is_default)
        return a->is_default ? 1 : -1;
    if (a->priority != b->priority)
        return a->priority > b->priority ? -1 : 1;
    return strcmp(a->name, b->name);
}

int policy_set_build(gp_policy **pols, int n, policy_diag *diag, gp_policy_set **out)
{
    int before = policy_diag_count(diag);
    bool have_default = false;
    *out = NULL;
    for (int j = 0; j < n; j++) {
        const gp_policy *b = pols[j];
        bool dup = false;
        for (int i = 0; i < j && !dup; i++) {
            const gp_policy *a = pols[i];
            if (!strcmp(a->name, b->name)) {
                policy_diag_add(diag, b->file, b->at.line, b->at.col,
                                "policy \"%s\" is defined twice (first at %s:%d:%d)", b->name,
                                a->file, a->at.line, a->at.col);
                dup = true;
            }
        }
        have_default |= b->is_default;
        if (dup || b->is_default)
            continue;
        if (!selectors_compatible(b, NULL)) {
            policy_diag_add(diag, b->file, b->at.line, b->at.col,
                            "policy \"%s\": its label selector can never match a pod", b->name);
            continue;
        }
        for (int i = 0; i < j; i++) {
            const gp_policy *a = pols[i];
            if (a->is_default || a->priority != b->priority || !strcmp(a->name, b->name) ||
                !namespaces_overlap(a, b) || !selectors_compatible(a, b) ||
                !schedules_overlap(a, b))
                continue;
            policy_diag_add(diag, b->file, b->prio_at.line, b->prio_at.col,
                            "policies \"%s\" (%s:%d:%d) and \"%s\" have the same priority %ld "
                            "and can match the same pod at the same time; give them different "
                            "priorities or disjoint namespaces, labels or schedules",
                            a->name, a->file, a->at.line, a->at.col, b->name, b->priority);
        }
    }
    if (policy_diag_count(diag) != before) {
        for (int i = 0; i < n; i++)
            policy_yaml_free(pols[i]);
        free(pols);
        return -1;
    }
    if (!have_default) {
        pols = xrealloc(pols, (size_t)(n + 1) * sizeof *pols);
        pols[n++] = policy_yaml_new("default", NULL);
    }
    qsort(pols, (size_t)n, sizeof *pols, by_selection_order);
    *out = set_new(pols, n);
    return 0;
}

int policy_set_load_files(const char *const *paths, int n, gp_policy_set **out,
                          policy_diag *diag)
{
    gp_policy **pols = NULL;
    int npols = 0, bad = 0;
    *out = NULL;
    for (int i = 0; i < n; i++)
        bad |= policy_yaml_parse_file(paths[i], &pols, &npols, diag) != 0;
    /* Cross-policy checks run even after errors, so one pass reports everything. */
    gp_policy_set *s = NULL;
    if (policy_set_build(pols, npols, diag, &s) < 0 || bad) {
        policy_set_unref(s);
        return -1;
    }
    *out = s;
    return 0;
}

int policy_set_load_file(const char *path, gp_policy_set **out, gp_err *err)
{
    policy_diag diag = {0};
    int rc = policy_set_load_files(&path, 1, out, &diag);
    if (rc < 0)
        policy_diag_summary(&diag, err);
    policy_diag_free(&diag);
    return rc;
}

/* ============================================================ inspect */

json_t *policy_set_to_json(const gp_policy_set *s, time_t now)
{
    json_t *arr = json_array();
    gp_policy_set *builtin = s ? NULL : policy_set_default();
    if (builtin)
        s = builtin;
    for (int i = 0; i < s->n; i++) {
        const gp_policy *p = s->pols[i];
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(p->name));
        json_object_set_new(o, "file", json_string(p->file));
        json_object_set_new(o, "priority", json_integer(p->priority));
        json_object_set_new(o, "node", json_string(p->place.node ? p->place.node->name : "binpack"));
        json_object_set_new(o, "gpu", json_string(p->place.gpu ? p->place.gpu->name : "best-fit"));
        json_object_set_new(o, "nodeDecision",
                            json_string(p->decide_in_filter ? "filter" : "prioritize"));
        json_object_set_new(o, "allowRequest", json_boolean(p->allow_request));
        json_object_set_new(o, "activeNow", json_boolean(policy_active_at(p, now)));
        json_array_append_new(arr, o);
    }
    policy_set_unref(builtin);
    return arr;
}

void policy_set_dra_drivers(const gp_policy_set *s, gp_dra_drivers *out)
{
    for (int i = 0; s && i < s->n; i++)
        if (s->pols[i]->is_default) {
            *out = s->pols[i]->dra;
            return;
        }
    dra_default_drivers(out);
}
