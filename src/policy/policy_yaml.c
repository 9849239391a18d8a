/* policy_yaml.c -- PackingPolicy YAML -> validated gp_policy, every error of a
 * file reported with its libyaml mark.
 *
 * Each mapping of the schema is a table of declared keys (type + handler);
 * walk_map() does unknown/duplicate/missing-key and type checks once for all
 * of them, handlers only judge values. Work and memory are bounded by the
 * file size: YAML aliases are rejected (no fan-out), nesting depth, list and
 * map sizes are capped, and a node budget per document backs that up. */
#include "policy/policy_yaml.h"

#include "model/formats.h"
#include "pack/consolidate.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#define API_VERSION "gpupack.io/v1alpha1"
#define KIND "PackingPolicy"
#define DEPTH_MAX 32          /* nesting depth of any document */
#define EVENTS_MAX 200000     /* parser events per file */
#define NODE_BUDGET 20000     /* nodes visited per document (defence in depth) */
#define REQS_MAX 64           /* label requirements per policy */
#define VALUES_MAX 64         /* values per requirement */
#define WINDOWS_MAX 32        /* schedule entries per policy */
#define MIB_MAX (1024 * 1024) /* reserveMemoryMiB upper bound: 1 TiB */
#define PODS_MAX 1000
#define PRIORITY_MAX 1000000
#define WEIGHT_MAX 1000.0
#define CPU_MILLI_MAX 10000000L   /* 10000 cores */
#define CONSOL_HOUR_MAX 100000    /* maxMovesPerHour */

/* ============================================================ diagnostics */

void policy_diag_add(policy_diag *d, const char *file, int line, int col, const char *fmt, ...)
{
    if (d->n >= POLICY_DIAG_MAX) {
        d->dropped++;
        return;
    }
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (d->n == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 8;
        d->msgs = xrealloc(d->msgs, (size_t)d->cap * sizeof *d->msgs);
    }
    d->msgs[d->n++] = xasprintf("%s:%d:%d: %s", file, line, col, msg);
}

int policy_diag_count(const policy_diag *d)
{
    return d->n + d->dropped;
}

void policy_diag_summary(const policy_diag *d, gp_err *err)
{
    int total = policy_diag_count(d);
    if (total == 0)
        gp_fail(err, "no error");
    else if (total == 1)
        gp_fail(err, "%s", d->msgs[0]);
    else
        gp_fail(err, "%s (and %d more error%s)", d->msgs[0], total - 1, total > 2 ? "s" : "");
}

void policy_diag_free(policy_diag *d)
{
    for (int i = 0; i < d->n; i++)
        free(d->msgs[i]);
    free(d->msgs);
    memset(d, 0, sizeof *d);
}

/* ============================================================ the policy */

gp_policy *policy_yaml_new(const char *name, const char *file)
{
    gp_policy *p = xcalloc(1, sizeof *p);
    gp_strlcpy(p->name, name, sizeof p->name);
    p->file = xstrdup(file ? file : "(built-in)");
    p->is_default = strcmp(name, "default") == 0;
    p->allow_request = p->is_default;
    placement_default_opts(&p->place);
    podreq_default_names(&p->names);
    p->preempt.may_preempt = true;
    p->consol = (gp_consol_rules)GP_CONSOL_DEFAULTS;
    dra_default_drivers(&p->dra);
    return p;
}

static void free_strv(char **v, int n)
{
    for (int i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static void free_req(policy_req *r)
{
    free(r->key);
    free_strv(r->values, r->nvalues);
}

void policy_yaml_free(gp_policy *p)
{
    if (!p)
        return;
    free(p->file);
    free_strv(p->ns, p->nns);
    for (int i = 0; i < p->nreqs; i++)
        free_req(&p->reqs[i]);
    free(p->reqs);
    free(p->win);
    policy_tz_free(p->tz);
    free(p);
}

/* ============================================================ walking */

typedef struct pctx {
    const char *file;
    yaml_document_t *doc;
    policy_diag *diag;
    gp_policy *pol;
    int errors;
    int budget;
    char path[256];
    size_t plen;
    bool allow_seen;
    bool native_only;
    bool formats_given;                    /* spec.resources.formats was written */
    unsigned formats;                      /* ... and what it lists (GP_FORMAT_BIT) */
    const yaml_node_t *k_formats, *k_nvgpu;
    const yaml_node_t *k_match, *k_schedule, *k_priority;   /* for check_default */
    const yaml_node_t *k_min_priority;                     /* spec.preemption.minPriority */
    double w_mem, w_core;
} pctx;

typedef void (*key_fn)(pctx *c, yaml_node_t *v, void *obj);

/* One declared key of a mapping: its value's node type (0 = any) and handler. */
typedef struct key_def {
    const char *key;
    yaml_node_type_t type;
    key_fn fn;
    bool required;
} key_def;

static void fail_at(pctx *c, const yaml_node_t *n, const char *fmt, ...) GP_PRINTF(3, 4);

static void fail_at(pctx *c, const yaml_node_t *n, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    c->errors++;
    int line = n ? (int)n->start_mark.line + 1 : 1;
    int col = n ? (int)n->start_mark.column + 1 : 1;
    if (c->plen)
        policy_diag_add(c->diag, c->file, line, col, "%s: %s", c->path, msg);
    else
        policy_diag_add(c->diag, c->file, line, col, "%s", msg);
}

/* A user string made safe and short for a message. */
typedef struct shown {
    char s[72];
} shown;

static shown show(const char *s)
{
    shown out;
    size_t i = 0;
    for (; i < 60 && s[i]; i++)
        out.s[i] = isprint((unsigned char)s[i]) ? s[i] : '?';
    out.s[i] = '\0';
    if (i == 60 && s[i])
        memcpy(out.s + i, "...", 4);
    return out;
}

static size_t path_push(pctx *c, const char *fmt, ...) GP_PRINTF(2, 3);

static size_t path_push(pctx *c, const char *fmt, ...)
{
    size_t old = c->plen;
    if (c->plen < sizeof c->path - 1) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(c->path + c->plen, sizeof c->path - c->plen, fmt, ap);
        va_end(ap);
        if (n > 0)
            c->plen = strnlen(c->path, sizeof c->path - 1);
    }
    return old;
}

static void path_pop(pctx *c, size_t old)
{
    c->plen = old;
    c->path[old] = '\0';
}

static yaml_node_t *node_at(pctx *c, int idx)
{
    return yaml_document_get_node(c->doc, idx);
}

/* Counts one visited node; false (with one error) once the budget is spent. */
static bool spend(pctx *c, const yaml_node_t *n)
{
    if (c->budget > 0 && --c->budget == 0)
        fail_at(c, n, "document too large or too repetitive (more than %d nodes visited)",
                NODE_BUDGET);
    return c->budget > 0;
}

static bool is_null(const yaml_node_t *n)
{
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *v = (const char *)n->data.scalar.value;
    return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") ||
           !strcmp(v, "NULL");
}

static const char *type_name(const yaml_node_t *n)
{
    if (is_null(n))
        return "nothing (null)";
    switch (n->type) {
    case YAML_SCALAR_NODE:
        return "a scalar";
    case YAML_SEQUENCE_NODE:
        return "a list";
    case YAML_MAPPING_NODE:
        return "a mapping";
    default:
        return "nothing";
    }
}

static const char *want_name(yaml_node_type_t t)
{
    return t == YAML_SEQUENCE_NODE ? "a list" : t == YAML_MAPPING_NODE ? "a mapping" : "a scalar";
}

/* The scalar text, or NULL (with an error) for non-scalars, nulls, embedded
 * NULs and strings longer than max. */
static const char *get_str(pctx *c, const yaml_node_t *n, size_t max)
{
    if (n->type != YAML_SCALAR_NODE || is_null(n)) {
        fail_at(c, n, "expected a string, got %s", type_name(n));
        return NULL;
    }
    const char *v = (const char *)n->data.scalar.value;
    if (strlen(v) != n->data.scalar.length) {
        fail_at(c, n, "string contains a NUL character");
        return NULL;
    }
    if (n->data.scalar.length > max) {
        fail_at(c, n, "string is %zu characters long, at most %zu allowed",
                n->data.scalar.length, max);
        return NULL;
    }
    return v;
}

/* Numbers and booleans must be plain (unquoted) scalars: "10" is a string. */
static const char *get_plain(pctx *c, const yaml_node_t *n, const char *what)
{
    if (n->type != YAML_SCALAR_NODE || is_null(n)) {
        fail_at(c, n, "expected %s, got %s", what, type_name(n));
        return NULL;
    }
    const char *v = (const char *)n->data.scalar.value;
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) {
        fail_at(c, n, "expected %s, got the quoted string \"%s\"", what, show(v).s);
        return NULL;
    }
    return v;
}

static bool get_int(pctx *c, const yaml_node_t *n, long lo, long hi, long *out)
{
    const char *v = get_plain(c, n, "an integer");
    if (!v)
        return false;
    const char *p = v + (*v == '+' || *v == '-');
    bool digits = *p != '\0';
    for (; *p; p++)
        digits = digits && isdigit((unsigned char)*p);
    if (!digits) {
        fail_at(c, n, "expected an integer, got \"%s\"", show(v).s);
        return false;
    }
    errno = 0;
    long x = strtol(v, NULL, 10);
    if (errno == ERANGE || x < lo || x > hi) {
        fail_at(c, n, "%s is out of range (%ld..%ld)", show(v).s, lo, hi);
        return false;
    }
    *out = x;
    return true;
}

/* A finite decimal number in [lo, hi], or (lo, hi] when lo_open. */
static bool get_num(pctx *c, const yaml_node_t *n, double lo, double hi, bool lo_open,
                    double *out)
{
    const char *v = get_plain(c, n, "a number");
    if (!v)
        return false;
    bool ok = *v != '\0' && strspn(v, "0123456789+-.eE") == strlen(v);
    char *end = NULL;
    double x = ok ? strtod(v, &end) : 0;
    if (!ok || *end || !isfinite(x)) {
        fail_at(c, n, "expected a number, got \"%s\"", show(v).s);
        return false;
    }
    if (x < lo || x > hi || (lo_open && x <= lo)) {
        if (lo_open)
            fail_at(c, n, "%s is out of range (must be above %g and at most %g)", show(v).s, lo, hi);
        else
            fail_at(c, n, "%s is out of range (%g..%g)", show(v).s, lo, hi);
        return false;
    }
    *out = x;
    return true;
}

static bool get_bool(pctx *c, const yaml_node_t *n, bool *out)
{
    const char *v = get_plain(c, n, "true or false");
    if (!v)
        return false;
    if (!strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "TRUE"))
        *out = true;
    else if (!strcmp(v, "false") || !strcmp(v, "False") || !strcmp(v, "FALSE"))
        *out = false;
    else {
        fail_at(c, n, "expected true or false, got \"%s\"", show(v).s);
        return false;
    }
    return true;
}

/* Index of the scalar in a NULL-terminated name list, or -1 with an error. */
static int get_enum(pctx *c, const yaml_node_t *n, const char *const *names, const char *what)
{
    const char *v = get_str(c, n, POLICY_STR_MAX);
    if (!v)
        return -1;
    for (int i = 0; names[i]; i++)
        if (!strcmp(v, names[i]))
            return i;
    char list[512] = "";
    size_t len = 0;
    for (int i = 0; names[i] && len < sizeof list - 1; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", names[i]);
    fail_at(c, n, "unknown %s \"%s\" (expected one of: %s)", what, show(v).s, list);
    return -1;
}

static void walk_map(pctx *c, yaml_node_t *n, const key_def *keys, size_t nkeys, void *obj)
{
    if (n->type != YAML_MAPPING_NODE) {
        fail_at(c, n, "expected a mapping, got %s", type_name(n));
        return;
    }
    uint64_t seen = 0;
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top;
         pr++) {
        yaml_node_t *k = node_at(c, pr->key), *v = node_at(c, pr->value);
        if (!k || !v || !spend(c, k))
            return;
        if (k->type != YAML_SCALAR_NODE) {
            fail_at(c, k, "keys must be strings, got %s", type_name(k));
            continue;
        }
        const char *key = (const char *)k->data.scalar.value;
        size_t i = 0;
        while (i < nkeys && strcmp(keys[i].key, key) != 0)
            i++;
        if (i == nkeys) {
            char list[512] = "";
            size_t len = 0;
            for (size_t j = 0; j < nkeys && len < sizeof list - 1; j++)
                len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", j ? ", " : "",
                                        keys[j].key);
            fail_at(c, k, "unknown key \"%s\" (expected one of: %s)", show(key).s, list);
            continue;
        }
        if (seen & (UINT64_C(1) << i)) {
            fail_at(c, k, "duplicate key \"%s\"", key);
            continue;
        }
        seen |= UINT64_C(1) << i;
        size_t mark = path_push(c, "%s%s", c->plen ? "." : "", key);
        /* Scalars are type-checked by their handlers, which know "an integer" from "a string". */
        if (keys[i].type != YAML_SCALAR_NODE && (v->type != keys[i].type || is_null(v)))
            fail_at(c, v, "expected %s, got %s", want_name(keys[i].type), type_name(v));
        else if (spend(c, v))
            keys[i].fn(c, v, obj);
        path_pop(c, mark);
    }
    for (size_t i = 0; i < nkeys; i++)
        if (keys[i].required && !(seen & (UINT64_C(1) << i)))
            fail_at(c, n, "missing required key \"%s\"", keys[i].key);
}

typedef void (*item_fn)(pctx *c, yaml_node_t *item, void *obj);

static void walk_seq(pctx *c, yaml_node_t *n, int max, item_fn fn, void *obj)
{
    long count = n->data.sequence.items.top - n->data.sequence.items.start;
    if (count > max) {
        fail_at(c, n, "%ld items, at most %d allowed", count, max);
        return;
    }
    for (long i = 0; i < count; i++) {
        yaml_node_t *it = node_at(c, n->data.sequence.items.start[i]);
        if (!it || !spend(c, it))
            return;
        size_t mark = path_push(c, "[%ld]", i);
        fn(c, it, obj);
        path_pop(c, mark);
    }
}

/* Free-form string maps (labels): duplicate keys are errors too. */
static bool dup_key(pctx *c, yaml_node_t *map, yaml_node_pair_t *upto, const char *key)
{
    for (yaml_node_pair_t *pr = map->data.mapping.pairs.start; pr < upto; pr++) {
        yaml_node_t *k = node_at(c, pr->key);
        if (k && k->type == YAML_SCALAR_NODE && !strcmp((const char *)k->data.scalar.value, key))
            return true;
    }
    return false;
}

/* ============================================================ name syntax */

static bool alnum_lower(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
}

/* RFC 1123 label: lowercase alphanumerics and '-', alphanumeric at both ends. */
static bool dns_label(const char *s, size_t len)
{
    if (len == 0 || len > 63 || !alnum_lower(s[0]) || !alnum_lower(s[len - 1]))
        return false;
    for (size_t i = 0; i < len; i++)
        if (!alnum_lower(s[i]) && s[i] != '-')
            return false;
    return true;
}

static bool dns_subdomain(const char *s, size_t len)
{
    if (len == 0 || len > 253)
        return false;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || s[i] == '.') {
            if (!dns_label(s + start, i - start))
                return false;
            start = i + 1;
        }
    }
    return true;
}

/* Label name / value: at most 63 of [A-Za-z0-9-_.], alphanumeric at both ends. */
static bool label_name(const char *s, size_t len)
{
    if (len == 0 || len > 63 || !isalnum((unsigned char)s[0]) ||
        !isalnum((unsigned char)s[len - 1]))
        return false;
    for (size_t i = 0; i < len; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("-_.", s[i]))
            return false;
    return true;
}

/* Label key: [dns-subdomain "/"] label-name. require_prefix for resource names. */
static bool qualified_name(const char *s, bool require_prefix)
{
    const char *slash = strchr(s, '/');
    if (!slash)
        return !require_prefix && label_name(s, strlen(s));
    return dns_subdomain(s, (size_t)(slash - s)) && label_name(slash + 1, strlen(slash + 1));
}

/* ============================================================ handlers */

static void h_api_version(pctx *c, yaml_node_t *v, void *obj)
{
    const char *s = get_str(c, v, POLICY_STR_MAX);
    if (s && strcmp(s, API_VERSION) != 0)
        fail_at(c, v, "unsupported apiVersion \"%s\" (expected %s)", show(s).s, API_VERSION);
}

static void h_kind(pctx *c, yaml_node_t *v, void *obj)
{
    const char *s = get_str(c, v, POLICY_STR_MAX);
    if (s && strcmp(s, KIND) != 0)
        fail_at(c, v, "unsupported kind \"%s\" (expected %s)", show(s).s, KIND);
}

static void h_name(pctx *c, yaml_node_t *v, void *obj)
{
    gp_policy *p = obj;
    const char *s = get_str(c, v, POLICY_STR_MAX);
    if (!s)
        return;
    if (!dns_subdomain(s, strlen(s))) {
        fail_at(c, v, "bad policy name \"%s\" (lowercase letters, digits, '-' and '.', "
                      "starting and ending with a letter or digit)", show(s).s);
        return;
    }
    gp_strlcpy(p->name, s, sizeof p->name);
    p->at = (policy_mark){(int)v->start_mark.line + 1, (int)v->start_mark.column + 1};
    p->is_default = strcmp(s, "default") == 0;
}

/* metadata.labels / metadata.annotations: string maps, kept for tools, unused. */
static bool map_size_ok(pctx *c, yaml_node_t *v)
{
    long count = v->data.mapping.pairs.top - v->data.mapping.pairs.start;
    if (count <= POLICY_LIST_MAX)
        return true;
    fail_at(c, v, "%ld entries, at most %d allowed", count, POLICY_LIST_MAX);
    return false;
}

static void h_string_map(pctx *c, yaml_node_t *v, void *obj)
{
    if (!map_size_ok(c, v))
        return;
    for (yaml_node_pair_t *pr = v->data.mapping.pairs.start; pr < v->data.mapping.pairs.top;
         pr++) {
        yaml_node_t *k = node_at(c, pr->key), *val = node_at(c, pr->value);
        if (!k || !val || !spend(c, k))
            return;
        const char *key = get_str(c, k, POLICY_STR_MAX);
        if (key && dup_key(c, v, pr, key))
            fail_at(c, k, "duplicate key \"%s\"", show(key).s);
        else if (key && val->type != YAML_SCALAR_NODE)
            fail_at(c, val, "expected a string, got %s", type_name(val));
    }
}

static const key_def metadata_keys[] = {
    {"name", YAML_SCALAR_NODE, h_name, true},
    {"labels", YAML_MAPPING_NODE, h_string_map, false},
    {"annotations", YAML_MAPPING_NODE, h_string_map, false},
};

static void h_metadata(pctx *c, yaml_node_t *v, void *obj)
{
    walk_map(c, v, metadata_keys, GP_ARRAY_LEN(metadata_keys), obj);
}

/* ------------------------------------------------------------ spec.* scalars */

static void h_priority(pctx *c, yaml_node_t *v, void *obj)
{
    gp_policy *p = obj;
    c->k_priority = v;
    p->prio_at = (policy_mark){(int)v->start_mark.line + 1, (int)v->start_mark.column + 1};
    long x;
    if (get_int(c, v, -PRIORITY_MAX, PRIORITY_MAX, &x))
        p->priority = x;
}

static void h_allow_request(pctx *c, yaml_node_t *v, void *obj)
{
    gp_policy *p = obj;
    c->allow_seen = true;
    (void)get_bool(c, v, &p->allow_request);
}

static void h_time_zone(pctx *c, yaml_node_t *v, void *obj)
{
    gp_policy *p = obj;
    const char *s = get_str(c, v, POLICY_STR_MAX);
    if (!s)
        return;
    gp_err err;
    policy_tz *tz = NULL;
    if (policy_tz_load(s, &tz, &err) < 0) {
        fail_at(c, v, "%s", err.msg);
        return;
    }
    policy_tz_free(p->tz);
    p->tz = tz;
    gp_strlcpy(p->tz_name, s, sizeof p->tz_name);
}

static const char *const decision_names[] = {"prioritize", "filter", NULL};

static void h_node_decision(pctx *c, yaml_node_t *v, void *obj)
{
    gp_policy *p = obj;
    int i = get_enum(c, v, decision_names, "nodeDecision");
    if (i >= 0)
        p->decide_in_filter = i == 1;
}

/* ------------------------------------------------------------ spec.node / spec.gpu */

static void h_node_strategy(pctx *c, yaml_node_t *v, void *obj)
{
    gp_policy *p = obj;
    int i = get_enum(c, v, placement_node_strategy_names(), "node strategy");
    if (i >= 0)
        p->place.node = placement_node_strategy(placement_node_strategy_names()[i]);
}

static void h_gpu_strategy(pctx *c, yaml_node_t *v, void *obj)
{
    gp_policy *p = obj;
    int i = get_enum(c, v, placement_gpu_strategy_names(), "GPU strategy");
    if (i >= 0)
        p->place.gpu = placement_gpu_strategy(placement_gpu_strategy_names()[i]);
}

static const key_def node_keys[] = {{"strategy", YAML_SCALAR_NODE, h_node_strategy, true}};
static const key_def gpu_keys[] = {{"strategy", YAML_SCALAR_NODE, h_gpu_strategy, true}};

static void h_node(pctx *c, yaml_node_t *v, void *obj)
{
    walk_map(c, v, node_keys, GP_ARRAY_LEN(node_keys), obj);
}

static void h_gpu(pctx *c, yaml_node_t *v, void *obj)
{
    walk_map(c, v, gpu_keys, GP_ARRAY_LEN(gpu_keys), obj);
}

/* ------------------------------------------------------------ spec.weights */

static void h_w_memory(pctx *c, yaml_node_t *v, void *obj)
{
    (void)get_num(c, v, 0, WEIGHT_MAX, false, &c->w_mem);
}

static void h_w_core(pctx *c, yaml_node_t *v, void *obj)
{
    (void)get_num(c, v, 0, WEIGHT_MAX, false, &c->w_core);
}

static const key_def weight_keys[] = {
    {"memory", YAML_SCALAR_NODE, h_w_memory, false},
    {"core", YAML_SCALAR_NODE, h_w_core, false},
};

static void h_weights(pctx *c, yaml_node_t *v, void *obj)
{
    gp_policy *p = obj;
    c->w_mem = c->w_core = 1;
    int before = c->errors;
    walk_map(c, v, weight_keys, GP_ARRAY_LEN(weight_keys), obj);
    if (c->errors != before)
        return;
    if (c->w_mem == 0 && c->w_core == 0)
        fail_at(c, v, "memory and core weights are both 0; at least one must be positive");
    p->place.w_mem = c->w_mem;
    p->place.w_core = c->w_core;
}

/* ------------------------------------------------------------ spec.limits */

static void h_reserve(pctx *c, yaml_node_t *v, void *obj)
{
    gp_policy *p = obj;
    long x;
    if (get_int(c, v, 0, MIB_MAX, &x))
        p->place.reserve_mem_mib = x;
}

static void h_max_pods(pctx *c, yaml_node_t *v, void *obj)
{
    gp_policy *p = obj;
    long x;
    if (get_int(c, v, 0, PODS_MAX, &x))
        p->place.max_pods_per_gpu = (int)x;
}

/* Appends one list item to a '|'-separated model list (GP_MODELS_MAX bytes). */
static void model_item(pctx *c, yaml_node_t *it, void *obj)
{
    char *models = obj;
    const char *s = get_str(c, it, GP_MODEL_MAX - 1);
    if (!s)
        return;
    if (!*s || strchr(s, '|')) {
        fail_at(c, it, "bad GPU model \"%s\" (one non-empty model per item, no '|')", show(s).s);
        return;
    }
    size_t len = strlen(models);
    if (len + 1 + strlen(s) >= GP_MODELS_MAX) {
        fail_at(c, it, "the GPU model list is longer than %d characters", GP_MODELS_MAX - 1);
        return;
    }
    if (len)
        models[len++] = '|';
    memcpy(models + len, s, strlen(s) + 1);
}

static void h_models(pctx *c, yaml_node_t *v, void *obj)
{
    gp_policy *p = obj;
    walk_seq(c, v, POLICY_LIST_MAX, model_item, p->place.models);
}

static void h_ns_share(pctx *c, yaml_node_t *v, void *obj)
{
    gp_policy *p = obj;
    (void)get_num(c, v, 0, 1, true, &p->ns_share_cap);
}

static const key_def limit_keys[] = {
    {"reserveMemoryMiB", YAML_SCALAR_NODE, h_reserve, false},
    {"maxPodsPerGPU", YAML_SCALAR_NODE, h_max_pods, false},
    {"gpuModels", YAML_SEQUENCE_NODE, h_models, false},
    {"maxNamespaceShare", YAML_SCALAR_NODE, h_ns_share, false},
};

static void h_limits(pctx *c, yaml_node_t *v, void *obj)
{
    walk_map(c, v, limit_keys, GP_ARRAY_LEN(limit_keys), obj);
}

/* ------------------------------------------------------------ spec.resources */

static void set_resource(pctx *c, yaml_node_t *v, char *dst, size_t dstsize, bool allow_empty)
{
    const char *s = get_str(c, v, dstsize - 1);
    if (!s)
        return;
    if (!(allow_empty && !*s) && !qualified_name(s, true)) {
        fail_at(c, v, "bad resource name \"%s\" (expected domain/name, e.g. gpupack.io/gpu-mem)%s",
                show(s).s, allow_empty ? " or \"\" to disable" : "");
        return;
    }
    gp_strlcpy(dst, s, dstsize);
}

static void h_r_memory(pctx *c, yaml_node_t *v, void *obj)
{
    gp_policy *p = obj;
    set_resource(c, v, p->names.mem, sizeof p->names.mem, false);
}

static void h_r_count(pctx *c, yaml_node_t *v, void *obj)
{
    gp_policy *p = obj;
    set_resource(c, v, p->names.count, sizeof p->names.count, false);
}

static void h_r_core(pctx *c, yaml_node_t *v, void *obj)
{
    gp_policy *p = obj;
    set_resource(c, v, p->names.core, sizeof p->names.core, false);
}

static void h_r_aliyun(pctx *c, yaml_node_t *v, void *obj)
{
    gp_policy *p = obj;
    set_resource(c, v, p->names.aliyun_mem, sizeof p->names.aliyun_mem, true);
}

static const char *const unit_names[] = {"MiB", "GiB", NULL};
static const int64_t unit_mib[] = {1, 1024};

static void h_r_mem_unit(pctx *c, yaml_node_t *v, void *obj)
{
    gp_policy *p = obj;
    int i = get_enum(c, v, unit_names, "memory unit");
    if (i >= 0)
        p->names.mem_unit_mib = unit_mib[i];
}

static void h_r_aliyun_unit(pctx *c, yaml_node_t *v, void *obj)
{
    gp_policy *p = obj;
    int i = get_enum(c, v, unit_names, "memory unit");
    if (i >= 0)
        p->names.aliyun_unit_mib = unit_mib[i];
}

/* profile: auto serves native and aliyun requests; native ignores aliyun ones. */
static const char *const profile_names[] = {"auto", "native", NULL};

static void h_r_profile(pctx *c, yaml_node_t *v, void *obj)
{
    c->native_only = get_enum(c, v, profile_names, "resource profile") == 1;
}

/* formats: the other systems' request formats the policy accepts (model/formats.h). */
static const char *const format_names[] = {"aliyun", "kai", "hami", "volcano", "tke", NULL};

static void format_item(pctx *c, yaml_node_t *it, void *obj)
{
    int i = get_enum(c, it, format_names, "request format");
    if (i < 0)
        return;
    unsigned bit = GP_FORMAT_BIT(formats_by_name(format_names[i]));
    if (c->formats & bit)
        fail_at(c, it, "request format \"%s\" is listed twice", format_names[i]);
    c->formats |= bit;
}

static void h_r_formats(pctx *c, yaml_node_t *v, void *obj)
{
    c->formats_given = true;
    c->formats = 0;
    c->k_formats = v;
    walk_seq(c, v, POLICY_LIST_MAX, format_item, obj);
}

/* nvidiaGPU: who owns nvidia.com/gpu on its own: the NVIDIA device plugin
 * (gpupack leaves those pods alone) or gpupack (whole GPUs, as HAMi reads it). */
static const char *const nvgpu_names[] = {"device-plugin", "gpupack", NULL};

static void h_r_nvgpu(pctx *c, yaml_node_t *v, void *obj)
{
    gp_policy *p = obj;
    int i = get_enum(c, v, nvgpu_names, "owner of nvidia.com/gpu");
    c->k_nvgpu = v;
    if (i >= 0)
        p->names.nvidia_gpu = i == 1;
}

static const key_def resource_keys[] = {
    {"memory", YAML_SCALAR_NODE, h_r_memory, false},
    {"memoryUnit", YAML_SCALAR_NODE, h_r_mem_unit, false},
    {"count", YAML_SCALAR_NODE, h_r_count, false},
    {"core", YAML_SCALAR_NODE, h_r_core, false},
    {"aliyunMemory", YAML_SCALAR_NODE, h_r_aliyun, false},
    {"aliyunMemoryUnit", YAML_SCALAR_NODE, h_r_aliyun_unit, false},
    {"profile", YAML_SCALAR_NODE, h_r_profile, false},
    {"formats", YAML_SEQUENCE_NODE, h_r_formats, false},
    {"nvidiaGPU", YAML_SCALAR_NODE, h_r_nvgpu, false},
};

static void h_resources(pctx *c, yaml_node_t *v, void *obj)
{
    gp_policy *p = obj;
    int before = c->errors;
    walk_map(c, v, resource_keys, GP_ARRAY_LEN(resource_keys), obj);
    if (c->errors != before)
        return;
    unsigned aliyun = GP_FORMAT_BIT(GP_PROFILE_ALIYUN);
    if (c->formats_given) {
        if ((c->formats & aliyun) && (c->native_only || !p->names.aliyun_mem[0]))
            fail_at(c, c->k_formats, "formats lists aliyun, but %s disables the aliyun profile",
                    c->native_only ? "profile: native" : "aliyunMemory: \"\"");
        if (!(c->formats & aliyun))
            p->names.aliyun_mem[0] = '\0';
        p->names.formats = c->formats & GP_FORMATS_OTHER;
    }
    if (p->names.nvidia_gpu && !(p->names.formats & GP_FORMAT_BIT(GP_PROFILE_HAMI)))
        fail_at(c, c->k_nvgpu, "nvidiaGPU: gpupack reads nvidia.com/gpu as HAMi does; list hami "
                "in formats");
    if (c->native_only)   /* wherever aliyunMemory was written */
        p->names.aliyun_mem[0] = '\0';
    const char *names[] = {p->names.mem, p->names.count, p->names.core, p->names.aliyun_mem};
    for (size_t i = 0; i < GP_ARRAY_LEN(names); i++) {
        for (size_t j = i + 1; j < GP_ARRAY_LEN(names); j++)
            if (*names[i] && !strcmp(names[i], names[j]))
                fail_at(c, v, "resource name \"%s\" is used for two purposes", show(names[i]).s);
        const char *owner = formats_resource_owner(names[i], p->names.formats);
        if (*names[i] && owner)
            fail_at(c, v, "resource name \"%s\" is %s's, which this policy also accepts (drop "
                    "%s from formats, or name another resource)", show(names[i]).s, owner, owner);
    }
}

/* ------------------------------------------------------------ spec.preemption */

static void h_p_may(pctx *c, yaml_node_t *v, void *obj)
{
    gp_policy *p = obj;
    (void)get_bool(c, v, &p->preempt.may_preempt);
}

static void h_p_min(pctx *c, yaml_node_t *v, void *obj)
{
    gp_policy *p = obj;
    long x;
    c->k_min_priority = v;
    if (get_int(c, v, INT32_MIN, INT32_MAX, &x)) {
        p->preempt.has_min = true;
        p->preempt.min_priority = (int32_t)x;
    }
}

static void h_p_protect(pctx *c, yaml_node_t *v, void *obj)
{
    gp_policy *p = obj;
    (void)get_bool(c, v, &p->preempt.protect);
}

static const key_def preemption_keys[] = {
    {"mayPreempt", YAML_SCALAR_NODE, h_p_may, false},
    {"minPriority", YAML_SCALAR_NODE, h_p_min, false},
    {"protected", YAML_SCALAR_NODE, h_p_protect, false},
};

static void h_preemption(pctx *c, yaml_node_t *v, void *obj)
{
    gp_policy *p = obj;
    int before = c->errors;
    c->k_min_priority = NULL;
    walk_map(c, v, preemption_keys, GP_ARRAY_LEN(preemption_keys), obj);
    if (c->errors == before && c->k_min_priority && !p->preempt.may_preempt)
        fail_at(c, c->k_min_priority, "minPriority has no effect with mayPreempt: false (pods "
                                      "this policy governs never preempt); remove one of them");
}

/* ------------------------------------------------------------ spec.consolidation */

static void h_c_enabled(pctx *c, yaml_node_t *v, void *obj)
{
    (void)get_bool(c, v, &((gp_policy *)obj)->consol.enabled);
}

static void h_c_movable(pctx *c, yaml_node_t *v, void *obj)
{
    (void)get_bool(c, v, &((gp_policy *)obj)->consol.movable);
}

static void h_c_moves(pctx *c, yaml_node_t *v, void *obj)
{
    long x;
    if (get_int(c, v, 1, GP_CONSOL_MOVES_MAX, &x))
        ((gp_policy *)obj)->consol.max_moves = (int)x;
}

static void h_c_hour(pctx *c, yaml_node_t *v, void *obj)
{
    long x;
    if (get_int(c, v, 0, CONSOL_HOUR_MAX, &x))
        ((gp_policy *)obj)->consol.max_per_hour = (int)x;
}

static void h_c_cooldown(pctx *c, yaml_node_t *v, void *obj)
{
    long x;
    if (get_int(c, v, 0, 7 * 86400, &x))
        ((gp_policy *)obj)->consol.cooldown_s = (int)x;
}

static void h_c_hold(pctx *c, yaml_node_t *v, void *obj)
{
    long x;
    if (get_int(c, v, 10, 3600, &x))
        ((gp_policy *)obj)->consol.hold_s = (int)x;
}

static const key_def consolidation_keys[] = {
    {"enabled", YAML_SCALAR_NODE, h_c_enabled, false},
    {"maxMovesPerPod", YAML_SCALAR_NODE, h_c_moves, false},
    {"maxMovesPerHour", YAML_SCALAR_NODE, h_c_hour, false},
    {"cooldownSeconds", YAML_SCALAR_NODE, h_c_cooldown, false},
    {"holdSeconds", YAML_SCALAR_NODE, h_c_hold, false},
    {"movable", YAML_SCALAR_NODE, h_c_movable, false},
};

static void h_consolidation(pctx *c, yaml_node_t *v, void *obj)
{
    walk_map(c, v, consolidation_keys, GP_ARRAY_LEN(consolidation_keys), obj);
}

/* ------------------------------------------------------------ spec.match */

static void add_req(gp_policy *p, const char *key, policy_op op, char **values, int nvalues)
{
    p->reqs = xrealloc(p->reqs, (size_t)(p->nreqs + 1) * sizeof *p->reqs);
    p->reqs[p->nreqs++] = (policy_req){xstrdup(key), op, nvalues, values};
}

static bool label_key_ok(pctx *c, const yaml_node_t *n, const char *key)
{
    if (qualified_name(key, false))
        return true;
    fail_at(c, n, "bad label key \"%s\" (optional DNS prefix and '/', then at most 63 of "
                  "letters, digits, '-', '_', '.')", show(key).s);
    return false;
}

static bool label_value_ok(pctx *c, const yaml_node_t *n, const char *val)
{
    if (!*val || label_name(val, strlen(val)))
        return true;
    fail_at(c, n, "bad label value \"%s\" (at most 63 of letters, digits, '-', '_', '.', "
                  "starting and ending with a letter or digit)", show(val).s);
    return false;
}

static void h_match_labels(pctx *c, yaml_node_t *v, void *obj)
{
    gp_policy *p = obj;
    if (!map_size_ok(c, v))
        return;
    for (yaml_node_pair_t *pr = v->data.mapping.pairs.start; pr < v->data.mapping.pairs.top;
         pr++) {
        yaml_node_t *k = node_at(c, pr->key), *val = node_at(c, pr->value);
        if (!k || !val || !spend(c, k))
            return;
        const char *key = get_str(c, k, POLICY_STR_MAX);
        if (!key || !label_key_ok(c, k, key))
            continue;
        if (dup_key(c, v, pr, key)) {
            fail_at(c, k, "duplicate key \"%s\"", show(key).s);
            continue;
        }
        size_t mark = path_push(c, ".%s", key);
        const char *s = get_str(c, val, 63);
        if (s && label_value_ok(c, val, s)) {
            if (p->nreqs >= REQS_MAX)
                fail_at(c, k, "more than %d label requirements", REQS_MAX);
            else {
                char **vals = xmalloc(sizeof *vals);
                vals[0] = xstrdup(s);
                add_req(p, key, POLICY_OP_IN, vals, 1);
            }
        }
        path_pop(c, mark);
    }
}

/* A matchExpressions item while it is being read. */
typedef struct expr_tmp {
    gp_policy *pol;
    char *key;
    int op;               /* -1 = missing or bad */
    bool has_values;
    int nvalues;
    char **values;
} expr_tmp;

static void h_e_key(pctx *c, yaml_node_t *v, void *obj)
{
    expr_tmp *e = obj;
    const char *s = get_str(c, v, POLICY_STR_MAX);
    if (s && label_key_ok(c, v, s))
        e->key = xstrdup(s);
}

static const char *const op_names[] = {"In", "NotIn", "Exists", "DoesNotExist", NULL};

static void h_e_operator(pctx *c, yaml_node_t *v, void *obj)
{
    expr_tmp *e = obj;
    e->op = get_enum(c, v, op_names, "operator");
}

static void value_item(pctx *c, yaml_node_t *it, void *obj)
{
    expr_tmp *e = obj;
    const char *s = get_str(c, it, 63);
    if (!s || !label_value_ok(c, it, s))
        return;
    e->values = xrealloc(e->values, (size_t)(e->nvalues + 1) * sizeof *e->values);
    e->values[e->nvalues++] = xstrdup(s);
}

static void h_e_values(pctx *c, yaml_node_t *v, void *obj)
{
    expr_tmp *e = obj;
    e->has_values = true;
    walk_seq(c, v, VALUES_MAX, value_item, obj);
}

static const key_def expr_keys[] = {
    {"key", YAML_SCALAR_NODE, h_e_key, true},
    {"operator", YAML_SCALAR_NODE, h_e_operator, true},
    {"values", YAML_SEQUENCE_NODE, h_e_values, false},
};

static void expr_item(pctx *c, yaml_node_t *it, void *obj)
{
    expr_tmp e = {.pol = obj, .op = -1};
    int before = c->errors;
    walk_map(c, it, expr_keys, GP_ARRAY_LEN(expr_keys), &e);
    if (c->errors == before) {
        bool listy = e.op == POLICY_OP_IN || e.op == POLICY_OP_NOT_IN;
        if (listy && e.nvalues == 0)
            fail_at(c, it, "operator %s needs a non-empty \"values\" list", op_names[e.op]);
        else if (!listy && e.has_values)
            fail_at(c, it, "operator %s takes no \"values\"", op_names[e.op]);
        else if (e.pol->nreqs >= REQS_MAX)
            fail_at(c, it, "more than %d label requirements", REQS_MAX);
        else {
            add_req(e.pol, e.key, (policy_op)e.op, e.values, e.nvalues);
            e.values = NULL;
            e.nvalues = 0;
        }
    }
    free(e.key);
    free_strv(e.values, e.nvalues);
}

static void h_match_exprs(pctx *c, yaml_node_t *v, void *obj)
{
    walk_seq(c, v, REQS_MAX, expr_item, obj);
}

static const key_def selector_keys[] = {
    {"matchLabels", YAML_MAPPING_NODE, h_match_labels, false},
    {"matchExpressions", YAML_SEQUENCE_NODE, h_match_exprs, false},
};

static void h_pod_selector(pctx *c, yaml_node_t *v, void *obj)
{
    walk_map(c, v, selector_keys, GP_ARRAY_LEN(selector_keys), obj);
}

static void ns_item(pctx *c, yaml_node_t *it, void *obj)
{
    gp_policy *p = obj;
    const char *s = get_str(c, it, 63);
    if (!s)
        return;
    if (!dns_label(s, strlen(s))) {
        fail_at(c, it, "bad namespace name \"%s\" (lowercase letters, digits and '-', at most 63)",
                show(s).s);
        return;
    }
    for (int i = 0; i < p->nns; i++)
        if (!strcmp(p->ns[i], s)) {
            fail_at(c, it, "namespace \"%s\" is listed twice", s);
            return;
        }
    p->ns = xrealloc(p->ns, (size_t)(p->nns + 1) * sizeof *p->ns);
    p->ns[p->nns++] = xstrdup(s);
}

static void h_namespaces(pctx *c, yaml_node_t *v, void *obj)
{
    if (v->data.sequence.items.top == v->data.sequence.items.start)
        fail_at(c, v, "empty namespace list (leave \"namespaces\" out to match every namespace)");
    else
        walk_seq(c, v, POLICY_LIST_MAX, ns_item, obj);
}

static const key_def match_keys[] = {
    {"namespaces", YAML_SEQUENCE_NODE, h_namespaces, false},
    {"podLabels", YAML_MAPPING_NODE, h_match_labels, false},
    {"podSelector", YAML_MAPPING_NODE, h_pod_selector, false},
};

static void h_match(pctx *c, yaml_node_t *v, void *obj)
{
    c->k_match = v;
    walk_map(c, v, match_keys, GP_ARRAY_LEN(match_keys), obj);
}

/* ------------------------------------------------------------ spec.schedule */

typedef struct window_tmp {
    policy_window w;
    bool days_seen;
} window_tmp;

static const char *const day_names[] = {"sunday", "monday", "tuesday", "wednesday",
                                        "thursday", "friday", "saturday"};

/* "Mon", "monday", "MON": 0..6, or -1. */
static int day_index(const char *s, size_t len)
{
    for (int i = 0; i < 7; i++) {
        size_t full = strlen(day_names[i]);
        if ((len == 3 || len == full) && !strncasecmp(s, day_names[i], len))
            return i;
    }
    return -1;
}

static void day_item(pctx *c, yaml_node_t *it, void *obj)
{
    window_tmp *t = obj;
    const char *s = get_str(c, it, 32);
    if (!s)
        return;
    const char *dash = strchr(s, '-');
    int a = day_index(s, dash ? (size_t)(dash - s) : strlen(s));
    int b = dash ? day_index(dash + 1, strlen(dash + 1)) : a;
    if (a < 0 || b < 0) {
        fail_at(c, it, "bad day \"%s\" (expected Mon..Sun or a range like Mon-Fri)", show(s).s);
        return;
    }
    for (int d = a;; d = (d + 1) % 7) {   /* ranges may wrap: Fri-Mon */
        t->w.days |= 1u << d;
        if (d == b)
            break;
    }
}

static void h_w_days(pctx *c, yaml_node_t *v, void *obj)
{
    window_tmp *t = obj;
    t->days_seen = true;
    t->w.days = 0;
    if (v->data.sequence.items.top == v->data.sequence.items.start)
        fail_at(c, v, "empty day list (leave \"days\" out for every day)");
    else
        walk_seq(c, v, 7, day_item, obj);
}

/* "HH:MM" (or "H:MM"); "24:00" only when allow_24. */
static bool get_clock(pctx *c, yaml_node_t *v, bool allow_24, int *out)
{
    const char *s = get_str(c, v, 16);
    if (!s)
        return false;
    int h = 0, m = 0;
    size_t len = strlen(s);
    bool ok = (len == 4 || len == 5) && s[len - 3] == ':';
    for (size_t i = 0; ok && i < len; i++)
        ok = i == len - 3 || isdigit((unsigned char)s[i]);
    if (ok) {
        h = atoi(s);
        m = atoi(s + len - 2);
        ok = (h < 24 && m < 60) || (allow_24 && h == 24 && m == 0);
    }
    if (!ok) {
        fail_at(c, v, "bad time \"%s\" (expected HH:MM, 00:00..23:59%s)", show(s).s,
                allow_24 ? " or 24:00" : "");
        return false;
    }
    *out = h * 60 + m;
    return true;
}

static void h_w_from(pctx *c, yaml_node_t *v, void *obj)
{
    window_tmp *t = obj;
    (void)get_clock(c, v, false, &t->w.from_min);
}

static void h_w_to(pctx *c, yaml_node_t *v, void *obj)
{
    window_tmp *t = obj;
    (void)get_clock(c, v, true, &t->w.to_min);
}

static const key_def window_keys[] = {
    {"days", YAML_SEQUENCE_NODE, h_w_days, false},
    {"from", YAML_SCALAR_NODE, h_w_from, false},
    {"to", YAML_SCALAR_NODE, h_w_to, false},
};

static void window_item(pctx *c, yaml_node_t *it, void *obj)
{
    gp_policy *p = obj;
    window_tmp t = {.w = {0x7f, 0, 1440}};
    int before = c->errors;
    walk_map(c, it, window_keys, GP_ARRAY_LEN(window_keys), &t);
    if (c->errors != before)
        return;
    if (t.w.from_min == t.w.to_min % 1440 && t.w.to_min != 1440) {
        fail_at(c, it, "from and to are equal, the window would be empty (use from \"00:00\" "
                       "to \"24:00\" for a whole day)");
        return;
    }
    p->win = xrealloc(p->win, (size_t)(p->nwin + 1) * sizeof *p->win);
    p->win[p->nwin++] = t.w;
}

static void h_schedule(pctx *c, yaml_node_t *v, void *obj)
{
    c->k_schedule = v;
    if (v->data.sequence.items.top == v->data.sequence.items.start)
        fail_at(c, v, "empty schedule (leave \"schedule\" out to apply at all times)");
    else
        walk_seq(c, v, WINDOWS_MAX, window_item, obj);
}

/* ------------------------------------------------------------ spec.shapes */

typedef struct shape_tmp {
    gp_shape s;
} shape_tmp;

static void h_s_gpus(pctx *c, yaml_node_t *v, void *obj)
{
    shape_tmp *t = obj;
    long x;
    if (get_int(c, v, 0, GP_MAX_GPUS_PER_CTR, &x))   /* 0: a CPU-only task */
        t->s.count = (int)x;
}

static void h_s_core(pctx *c, yaml_node_t *v, void *obj)
{
    shape_tmp *t = obj;
    double x;
    if (get_num(c, v, 0, 100, false, &x))
        t->s.core = (int)lround(x * GP_CORE_FULL / 100.0);
}

static void h_s_weight(pctx *c, yaml_node_t *v, void *obj)
{
    shape_tmp *t = obj;
    (void)get_num(c, v, 0, 1e6, true, &t->s.weight);
}

static void h_s_cpu(pctx *c, yaml_node_t *v, void *obj)
{
    shape_tmp *t = obj;
    long x;
    if (get_int(c, v, 0, CPU_MILLI_MAX, &x))
        t->s.cpu_milli = x;
}

static void h_s_models(pctx *c, yaml_node_t *v, void *obj)
{
    shape_tmp *t = obj;
    walk_seq(c, v, POLICY_LIST_MAX, model_item, t->s.models);
}

static const key_def shape_keys[] = {
    {"gpus", YAML_SCALAR_NODE, h_s_gpus, false},
    {"core", YAML_SCALAR_NODE, h_s_core, true},
    {"weight", YAML_SCALAR_NODE, h_s_weight, true},
    {"cpuMilli", YAML_SCALAR_NODE, h_s_cpu, false},
    {"gpuModels", YAML_SEQUENCE_NODE, h_s_models, false},
};

static void shape_item(pctx *c, yaml_node_t *it, void *obj)
{
    gp_policy *p = obj;
    shape_tmp t = {.s = {.count = 1}};
    int before = c->errors;
    walk_map(c, it, shape_keys, GP_ARRAY_LEN(shape_keys), &t);
    if (c->errors == before && t.s.count == 0 && t.s.cpu_milli == 0)
        fail_at(c, it, "a shape with gpus: 0 (a CPU-only task) needs cpuMilli");
    if (c->errors == before)
        p->shapes.s[p->shapes.n++] = t.s;
}

static void h_shapes(pctx *c, yaml_node_t *v, void *obj)
{
    gp_policy *p = obj;
    if (v->data.sequence.items.top == v->data.sequence.items.start) {
        fail_at(c, v, "empty shape list (leave \"shapes\" out for the built-in distribution)");
        return;
    }
    int before = c->errors;
    p->shapes.n = 0;
    walk_seq(c, v, GP_MAX_SHAPES, shape_item, obj);
    if (c->errors != before || p->shapes.n == 0)
        return;
    double sum = 0;
    for (int i = 0; i < p->shapes.n; i++)
        sum += p->shapes.s[i].weight;
    for (int i = 0; i < p->shapes.n; i++)
        p->shapes.s[i].weight /= sum;   /* weights are relative; normalised to sum 1 */
    p->place.shapes = &p->shapes;
}

/* ------------------------------------------------------------ spec.dra */

/* A driver entry's names: what dra.h's gp_dra_driver holds. */
static void dra_name(pctx *c, yaml_node_t *v, char *out, size_t size)
{
    const char *s = get_str(c, v, size - 1);
    if (!s)
        return;
    if (!*s) {
        fail_at(c, v, "an empty name");
        return;
    }
    for (const char *q = s; *q; q++)
        if (!isalnum((unsigned char)*q) && !strchr("-._/", *q)) {
            fail_at(c, v, "\"%s\" is not a driver, attribute or capacity name (letters, digits, "
                          "'-', '.', '_', '/')", show(s).s);
            return;
        }
    gp_strlcpy(out, s, size);
}

#define DRA_NAME_FN(fn, field)                                                                   \
    static void fn(pctx *c, yaml_node_t *v, void *obj)                                           \
    {                                                                                            \
        gp_dra_driver *d = obj;                                                                  \
        dra_name(c, v, d->field, sizeof d->field);                                               \
    }
DRA_NAME_FN(h_dra_driver, driver)
DRA_NAME_FN(h_dra_gpu_attr, type_attr)
DRA_NAME_FN(h_dra_gpu_value, type_value)
DRA_NAME_FN(h_dra_uuid, uuid_attr)
DRA_NAME_FN(h_dra_model, model_attr)
DRA_NAME_FN(h_dra_mem, mem_capacity)
DRA_NAME_FN(h_dra_core, core_capacity)
#undef DRA_NAME_FN

static void h_dra_core_full(pctx *c, yaml_node_t *v, void *obj)
{
    gp_dra_driver *d = obj;
    long x;
    if (get_int(c, v, 1, 1000000, &x))
        d->core_full = x;
}

static const key_def dra_driver_keys[] = {
    {"driver", YAML_SCALAR_NODE, h_dra_driver, true},
    {"gpuAttribute", YAML_SCALAR_NODE, h_dra_gpu_attr, false},
    {"gpuValue", YAML_SCALAR_NODE, h_dra_gpu_value, false},
    {"uuidAttribute", YAML_SCALAR_NODE, h_dra_uuid, false},
    {"modelAttribute", YAML_SCALAR_NODE, h_dra_model, false},
    {"memoryCapacity", YAML_SCALAR_NODE, h_dra_mem, true},
    {"computeCapacity", YAML_SCALAR_NODE, h_dra_core, false},
    {"computeFull", YAML_SCALAR_NODE, h_dra_core_full, false},
};

static void dra_driver_item(pctx *c, yaml_node_t *it, void *obj)
{
    gp_policy *p = obj;
    gp_dra_driver d;
    memset(&d, 0, sizeof d);
    int before = c->errors;
    if (it->type != YAML_MAPPING_NODE) {
        fail_at(c, it, "expected a mapping, got %s", type_name(it));
        return;
    }
    walk_map(c, it, dra_driver_keys, GP_ARRAY_LEN(dra_driver_keys), &d);
    if (c->errors != before)
        return;
    if (!d.type_attr[0] != !d.type_value[0])
        fail_at(c, it, "gpuAttribute and gpuValue go together (a device is a GPU when its string "
                       "attribute gpuAttribute is gpuValue; leave both out for every device)");
    else if (!d.core_capacity[0] != !d.core_full)
        fail_at(c, it, "computeCapacity and computeFull go together (computeFull is what one "
                       "whole GPU publishes, e.g. 100 for HAMi's \"cores\")");
    else if (dra_driver_find(&p->dra, d.driver))
        fail_at(c, it, "driver \"%s\" is listed twice", show(d.driver).s);
    else
        p->dra.d[p->dra.n++] = d;
}

static void h_dra_drivers(pctx *c, yaml_node_t *v, void *obj)
{
    gp_policy *p = obj;
    p->dra.n = 0;
    walk_seq(c, v, GP_DRA_DRIVERS_MAX, dra_driver_item, obj);
}

static const key_def dra_keys[] = {
    {"drivers", YAML_SEQUENCE_NODE, h_dra_drivers, true},
};

static void h_dra(pctx *c, yaml_node_t *v, void *obj)
{
    gp_policy *p = obj;
    if (!p->is_default) {
        fail_at(c, v, "only the policy named \"default\" may set dra (which DRA devices are GPUs "
                      "is one table for the whole cluster)");
        return;
    }
    walk_map(c, v, dra_keys, GP_ARRAY_LEN(dra_keys), obj);
    p->has_dra = true;
}

/* ------------------------------------------------------------ spec and top */

static const key_def spec_keys[] = {
    {"priority", YAML_SCALAR_NODE, h_priority, false},
    {"allowRequest", YAML_SCALAR_NODE, h_allow_request, false},
    {"match", YAML_MAPPING_NODE, h_match, false},
    {"schedule", YAML_SEQUENCE_NODE, h_schedule, false},
    {"timeZone", YAML_SCALAR_NODE, h_time_zone, false},
    {"node", YAML_MAPPING_NODE, h_node, false},
    {"gpu", YAML_MAPPING_NODE, h_gpu, false},
    {"nodeDecision", YAML_SCALAR_NODE, h_node_decision, false},
    {"weights", YAML_MAPPING_NODE, h_weights, false},
    {"limits", YAML_MAPPING_NODE, h_limits, false},
    {"resources", YAML_MAPPING_NODE, h_resources, false},
    {"shapes", YAML_SEQUENCE_NODE, h_shapes, false},
    {"preemption", YAML_MAPPING_NODE, h_preemption, false},
    {"consolidation", YAML_MAPPING_NODE, h_consolidation, false},
    {"dra", YAML_MAPPING_NODE, h_dra, false},
};

static void h_spec(pctx *c, yaml_node_t *v, void *obj)
{
    gp_policy *p = obj;
    p->prio_at = (policy_mark){(int)v->start_mark.line + 1, (int)v->start_mark.column + 1};
    walk_map(c, v, spec_keys, GP_ARRAY_LEN(spec_keys), obj);
}

static const key_def top_keys[] = {
    {"apiVersion", YAML_SCALAR_NODE, h_api_version, true},
    {"kind", YAML_SCALAR_NODE, h_kind, true},
    {"metadata", YAML_MAPPING_NODE, h_metadata, true},
    {"spec", YAML_MAPPING_NODE, h_spec, false},
};

/* The fallback policy governs whatever nothing else matches, at any time. */
static void check_default(pctx *c)
{
    if (!c->pol->is_default)
        return;
    const struct {
        const yaml_node_t *n;
        const char *key;
    } bad[] = {{c->k_match, "match"}, {c->k_schedule, "schedule"}, {c->k_priority, "priority"}};
    for (size_t i = 0; i < GP_ARRAY_LEN(bad); i++)
        if (bad[i].n)
            fail_at(c, bad[i].n, "spec.%s: the \"default\" policy applies to every pod no other "
                                 "policy matches; it takes no %s", bad[i].key, bad[i].key);
}

/* ============================================================ files */

/* Event pre-pass: rejects aliases, nesting deeper than DEPTH_MAX and huge
 * event counts before the loader builds anything. Syntax errors are left to the
 * loader, so documents before them are still checked. */
static int prescan(const char *file, const char *text, size_t len, policy_diag *diag)
{
    yaml_parser_t parser;
    yaml_event_t ev;
    int rc = 0, depth = 0;
    long events = 0;
    if (!yaml_parser_initialize(&parser))
        abort();
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    for (;;) {
        if (!yaml_parser_parse(&parser, &ev))
            break;
        yaml_event_type_t t = ev.type;
        int line = (int)ev.start_mark.line + 1, col = (int)ev.start_mark.column + 1;
        yaml_event_delete(&ev);
        if (t == YAML_STREAM_END_EVENT)
            break;
        if (t == YAML_ALIAS_EVENT) {   /* every one is reported */
            policy_diag_add(diag, file, line, col,
                            "YAML aliases (*name) are not supported in policy files; write the "
                            "value out");
            rc = -1;
        }
        if (t == YAML_SEQUENCE_START_EVENT || t == YAML_MAPPING_START_EVENT)
            depth++;
        else if (t == YAML_SEQUENCE_END_EVENT || t == YAML_MAPPING_END_EVENT)
            depth--;
        if (depth > DEPTH_MAX) {
            policy_diag_add(diag, file, line, col, "nested deeper than %d levels", DEPTH_MAX);
            rc = -1;
            break;
        }
        if (++events > EVENTS_MAX) {
            policy_diag_add(diag, file, line, col, "too many YAML nodes (more than %d)",
                            EVENTS_MAX);
            rc = -1;
            break;
        }
    }
    yaml_parser_delete(&parser);
    return rc;
}

static void push_policy(gp_policy ***pols, int *npols, gp_policy *p)
{
    *pols = xrealloc(*pols, (size_t)(*npols + 1) * sizeof **pols);
    (*pols)[(*npols)++] = p;
}

int policy_yaml_parse(const char *file, const char *text, size_t len, gp_policy ***pols,
                      int *npols, policy_diag *diag)
{
    int before = policy_diag_count(diag);
    if (len > POLICY_FILE_MAX) {
        policy_diag_add(diag, file, 1, 1, "file is %zu bytes, at most %d allowed", len,
                        POLICY_FILE_MAX);
        return -1;
    }
    if (prescan(file, text, len, diag) < 0)
        return -1;
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        abort();
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    for (int ndocs = 0;; ndocs++) {
        yaml_document_t doc;
        if (!yaml_parser_load(&parser, &doc)) {
            const char *problem = parser.problem ? parser.problem : "unreadable YAML";
            yaml_mark_t m = parser.problem_mark;
            if (parser.context)
                policy_diag_add(diag, file, (int)m.line + 1, (int)m.column + 1,
                                "YAML syntax error: %s (%s)", problem, parser.context);
            else
                policy_diag_add(diag, file, (int)m.line + 1, (int)m.column + 1,
                                "YAML syntax error: %s", problem);
            break;
        }
        yaml_node_t *root = yaml_document_get_root_node(&doc);
        if (!root) {   /* end of stream */
            yaml_document_delete(&doc);
            break;
        }
        if (ndocs >= POLICY_DOCS_MAX) {
            policy_diag_add(diag, file, (int)root->start_mark.line + 1,
                            (int)root->start_mark.column + 1, "more than %d documents",
                            POLICY_DOCS_MAX);
            yaml_document_delete(&doc);
            break;
        }
        if (is_null(root)) {   /* an empty document ("---" alone) */
            yaml_document_delete(&doc);
            continue;
        }
        pctx c = {.file = file, .doc = &doc, .diag = diag, .budget = NODE_BUDGET};
        c.pol = policy_yaml_new("", file);
        c.pol->at = c.pol->prio_at =
            (policy_mark){(int)root->start_mark.line + 1, (int)root->start_mark.column + 1};
        walk_map(&c, root, top_keys, GP_ARRAY_LEN(top_keys), c.pol);
        check_default(&c);
        if (!c.allow_seen)
            c.pol->allow_request = c.pol->is_default;
        if (c.errors == 0 && c.pol->name[0])
            push_policy(pols, npols, c.pol);
        else
            policy_yaml_free(c.pol);
        yaml_document_delete(&doc);
    }
    yaml_parser_delete(&parser);
    return policy_diag_count(diag) == before ? 0 : -1;
}

int policy_yaml_parse_file(const char *path, gp_policy ***pols, int *npols, policy_diag *diag)
{
    gp_err e;
    size_t n;
    char *buf = gp_read_file(path, POLICY_FILE_MAX, &n, &e);
    if (!buf) {
        if (errno == EFBIG)
            policy_diag_add(diag, path, 1, 1, "larger than %d bytes", POLICY_FILE_MAX);
        else
            policy_diag_add(diag, path, 1, 1, "cannot %s: %s", errno == EIO ? "read" : "open",
                            strerror(errno));
        return -1;
    }
    int rc = policy_yaml_parse(path, buf, n, pols, npols, diag);
    free(buf);
    return rc;
}
