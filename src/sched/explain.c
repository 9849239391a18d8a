/* explain.c -- why a pending pod fits no node, and what would make it fit. */
#include "sched/explain.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonw.h"
#include "policy/policy.h"

#define EXPLAIN_MAX_PODS 256   /* pods considered per node in the what-if */
#define EXPLAIN_BODY_MAX (256u << 20)   /* the filter body: the pod and every node's name */

/* ------------------------------------------------------------ what-if -- */

typedef struct pod_use {
    const char *pod;       /* borrowed from the holds */
    int64_t mem;           /* over all its GPUs on the node */
    int core;
} pod_use;

static int cmp_use(const void *a, const void *b)
{
    const pod_use *x = a, *y = b;
    if (x->mem != y->mem)
        return x->mem < y->mem ? 1 : -1;
    if (x->core != y->core)
        return x->core < y->core ? 1 : -1;
    return strcmp(x->pod, y->pod);
}

/* Adds (sign +1) or removes (-1) every hold of `pod` on w. */
static void move_pod(gp_node *w, const explain_hold *holds, int nholds, const char *pod, int sign)
{
    for (int i = 0; i < nholds; i++) {
        if (strcmp(holds[i].pod, pod) != 0)
            continue;
        int pos = gp_node_gpu_pos(w, holds[i].index);
        if (pos < 0)
            continue;
        gp_hold h = {holds[i].index, holds[i].mem_mib, holds[i].core, holds[i].dra};
        placement_hold(w, pos, &h, sign);
    }
    w->state_hash = 0;
}

static bool fits(const gp_node *w, const gp_pod_req *req, const gp_place_opts *opts,
                 gp_fit_fail *why)
{
    gp_assignment a;
    return placement_fit(w, req, opts, &a, why) == 0;
}

void explain_hint(const gp_node *node, const explain_hold *holds, int nholds,
                  const gp_pod_req *req, const gp_place_opts *opts, char *hint, size_t len)
{
    gp_node *w = xmalloc(sizeof *w);
    pod_use *use = xcalloc(EXPLAIN_MAX_PODS, sizeof *use);
    bool *gone = xcalloc(EXPLAIN_MAX_PODS, sizeof *gone);
    memcpy(w, node, gp_node_size(node->ngpus));
    gp_fit_fail why;
    /* with every GPU of the node free */
    for (int i = 0; i < w->ngpus; i++) {
        w->gpus[i].mem_used = 0;
        w->gpus[i].core_used = 0;
        w->gpus[i].pods = 0;
    }
    w->state_hash = 0;
    if (!fits(w, req, opts, &why)) {
        int64_t big = 0;
        int healthy = 0;
        for (int i = 0; i < node->ngpus; i++)
            if (node->gpus[i].info.healthy) {
                healthy++;
                if (node->gpus[i].info.mem_total > big)
                    big = node->gpus[i].info.mem_total;
            }
        if (healthy == 0)
            snprintf(hint, len, "never: the node has no healthy GPU; give it a GPU inventory "
                                "(annotation gpupack.io/gpus, HAMi, GPU feature discovery, aliyun)");
        else
            snprintf(hint, len, "never, even with every GPU free (%d healthy GPU%s, largest %lld "
                                "MiB): ask for less, or for GPUs that nodes like this have",
                     healthy, healthy == 1 ? "" : "s", (long long)big);
        goto out;
    }
    memcpy(w, node, gp_node_size(node->ngpus));
    int np = 0;
    for (int i = 0; i < nholds; i++) {
        int k = 0;
        while (k < np && strcmp(use[k].pod, holds[i].pod) != 0)
            k++;
        if (k == np) {
            if (np == EXPLAIN_MAX_PODS)
                continue;
            use[np++] = (pod_use){holds[i].pod, 0, 0};
        }
        use[k].mem += holds[i].mem_mib;
        use[k].core += holds[i].core;
    }
    qsort(use, (size_t)np, sizeof *use, cmp_use);
    /* largest first until it fits, then put back whatever is not needed */
    int last = -1;
    for (int k = 0; k < np; k++) {
        move_pod(w, holds, nholds, use[k].pod, -1);
        gone[k] = true;
        if (fits(w, req, opts, &why)) {
            last = k;
            break;
        }
    }
    if (last < 0) {
        snprintf(hint, len, "fits only on an empty node like this one (pods not listed hold its GPUs)");
        goto out;
    }
    for (int k = last - 1; k >= 0; k--) {
        move_pod(w, holds, nholds, use[k].pod, +1);
        if (fits(w, req, opts, &why))
            gone[k] = false;
        else
            move_pod(w, holds, nholds, use[k].pod, -1);
    }
    int n = 0;
    for (int k = 0; k <= last; k++)
        n += gone[k];
    size_t off = (size_t)snprintf(hint, len, "fits if %s left the node: ",
                                  n == 1 ? "this pod" : "these pods");
    bool first = true;
    for (int k = 0; k <= last && off < len; k++) {
        if (!gone[k])
            continue;
        off += (size_t)snprintf(hint + off, len - off, "%s%s (%lld MiB, %d %%)", first ? "" : ", ",
                                use[k].pod, (long long)use[k].mem, use[k].core / 10);
        first = false;
    }
out:
    free(gone);
    free(use);
    free(w);
}

/* ------------------------------------------------------------ grouping -- */

/* After a count, the singular forms the reasons use ("1 GPU has") and the
 * plural ones they stand for in a key ("# GPUs have"): a reason with one of
 * something groups with the same reason with several. */
static const struct {
    const char *one, *many;
} after_count[] = {
    {" GPU has ", " GPUs have "}, {" GPU of the node is ", " GPUs of the node are "},
    {" GPU,", " GPUs,"},          {" GPU ", " GPUs "},  {" GPU", " GPUs"},
    {" pod", " pods"},
};

static size_t put(char *key, size_t k, size_t len, const char *s)
{
    for (; *s && k + 1 < len; s++)
        key[k++] = *s;
    return k;
}

void explain_reason_key(const char *reason, char *key, size_t len)
{
    size_t k = 0;
    for (const char *p = reason; *p && k + 1 < len; p++) {
        if (!isdigit((unsigned char)*p)) {
            key[k++] = *p;
            continue;
        }
        while (isdigit((unsigned char)p[1]) || (p[1] == '.' && isdigit((unsigned char)p[2])))
            p++;
        key[k++] = '#';
        for (size_t i = 0; i < GP_ARRAY_LEN(after_count); i++) {
            size_t n = strlen(after_count[i].one);
            if (strncmp(p + 1, after_count[i].one, n) != 0)
                continue;
            /* a whole word: the singular ends in a space or comma, or is
             * followed by one or by the end (p + 1 + n is within the string:
             * the n bytes before it matched) */
            char last = after_count[i].one[n - 1], next = p[1 + n];
            if (last == ' ' || last == ',' || next == '\0' || next == ' ' || next == ',') {
                k = put(key, k, len, after_count[i].many);
                p += n;
                break;
            }
        }
    }
    key[k] = '\0';
}

static int cmp_groups(const void *a, const void *b)
{
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    size_t nx = json_array_size(json_object_get(x, "nodes"));
    size_t ny = json_array_size(json_object_get(y, "nodes"));
    if (nx != ny)
        return nx < ny ? 1 : -1;
    return strcmp(json_string_value(json_object_get(x, "key")),
                  json_string_value(json_object_get(y, "key")));
}

json_t *explain_group(const json_t *answer)
{
    json_t *fit = json_array(), *by_key = json_object();
    size_t i;
    const json_t *v;
    json_array_foreach(json_object_get(answer, "NodeNames"), i, v)
        json_array_append(fit, (json_t *)v);
    static const char *const kinds[2] = {"FailedNodes", "FailedAndUnresolvableNodes"};
    for (int u = 0; u < 2; u++) {
        const char *node;
        json_t *reason;
        json_object_foreach(json_object_get(answer, kinds[u]), node, reason) {
            const char *r = json_string_value(reason);
            char key[600];
            explain_reason_key(r ? r : "", key, sizeof key);
            json_t *g = json_object_get(by_key, key);
            if (!g) {
                g = json_pack("{s:s,s:b,s:[]}", "key", key, "unresolvable", u == 1, "nodes");
                json_object_set_new(by_key, key, g);
            }
            json_array_append_new(json_object_get(g, "nodes"),
                                  json_pack("{s:s,s:s}", "node", node, "reason", r ? r : ""));
        }
    }
    size_t ng = json_object_size(by_key), k = 0;
    json_t **gs = xmalloc((ng ? ng : 1) * sizeof *gs);
    const char *key;
    json_t *g;
    json_object_foreach(by_key, key, g) gs[k++] = g;
    qsort(gs, ng, sizeof *gs, cmp_groups);
    json_t *groups = json_array();
    for (k = 0; k < ng; k++)
        json_array_append(groups, gs[k]);
    free(gs);
    json_decref(by_key);
    return json_pack("{s:o,s:o}", "fits", fit, "groups", groups);
}

/* -------------------------------------------------------- against a store -- */

/* The holds of every pod on a node, from its /inspect view; returns how many. */
static int holds_of(gp_cluster *c, const char *node, explain_hold **out)
{
    json_t *j = cluster_inspect(c, node);
    const json_t *gpus = json_object_get(json_object_get(j, "node"), "gpus");
    size_t n = 0, i, k;
    const json_t *g, *p;
    json_array_foreach(gpus, i, g) n += json_array_size(json_object_get(g, "pods")) +
                                        json_array_size(json_object_get(json_object_get(g, "dra"),
                                                                        "claims"));
    explain_hold *h = xcalloc(n ? n : 1, sizeof *h);
    int m = 0;
    json_array_foreach(gpus, i, g) {
        /* the allocated claims on it: they leave with the pod they are reserved for */
        json_array_foreach(json_object_get(json_object_get(g, "dra"), "claims"), k, p) {
            explain_hold *x = &h[m++];
            const char *ns = json_string_value(json_object_get(p, "namespace"));
            const char *pod = json_string_value(json_object_get(p, "pod"));
            if (pod && *pod)
                snprintf(x->pod, sizeof x->pod, "%s/%s", ns ? ns : "", pod);
            else
                snprintf(x->pod, sizeof x->pod, "claim %s/%s", ns ? ns : "",
                         json_string_value(json_object_get(p, "claim")));
            x->index = (int)json_integer_value(json_object_get(g, "index"));
            x->mem_mib = json_integer_value(json_object_get(p, "memMiB"));
            x->core = (int)(json_number_value(json_object_get(p, "corePercent")) * 10 + 0.5);
            x->dra = true;
        }
        json_array_foreach(json_object_get(g, "pods"), k, p) {
            explain_hold *x = &h[m++];
            snprintf(x->pod, sizeof x->pod, "%s/%s",
                     json_string_value(json_object_get(p, "namespace")),
                     json_string_value(json_object_get(p, "name")));
            x->index = (int)json_integer_value(json_object_get(g, "index"));
            x->mem_mib = json_integer_value(json_object_get(p, "memMiB"));
            x->core = (int)(json_number_value(json_object_get(p, "corePercent")) * 10 + 0.5);
        }
    }
    json_decref(j);
    *out = h;
    return m;
}

/* A hint for one failing node: from the what-if where capacity is the
 * matter, else from the reason's kind. */
static void hint_for(gp_cluster *c, const char *node, const char *reason, const gp_pod_req *req,
                     const gp_policy_view *view, char *hint, size_t len)
{
    if (strstr(reason, "prefers another node")) {
        snprintf(hint, len, "fits; policy %s (nodeDecision: filter) offers only its best node(s)",
                 view->name);
        return;
    }
    if (strstr(reason, "namespace ") && strstr(reason, " allows ")) {
        snprintf(hint, len, "fits by capacity; the namespace already holds as many of this node's "
                            "GPUs as policy %s allows (maxNamespaceShare)", view->name);
        return;
    }
    gp_node *copy = NULL;
    cluster_rdlock(c);
    const gp_node *n = cluster_rd_node(c, node);
    if (n) {
        copy = xmalloc(sizeof *copy);
        memcpy(copy, n, gp_node_size(n->ngpus));
    }
    cluster_unlock(c);
    if (!copy) {
        snprintf(hint, len, "give the node a GPU inventory (annotation gpupack.io/gpus, HAMi "
                            "registration, GPU feature discovery labels or aliyun capacity)");
        return;
    }
    explain_hold *holds;
    int nh = holds_of(c, node, &holds);
    explain_hint(copy, holds, nh, req, &view->place, hint, len);
    free(holds);
    free(copy);
}

json_t *explain_pod(gp_extender *e, gp_cluster *c, const json_t *pod, gp_err *err)
{
    json_t *out = NULL;
    char *answer = NULL;
    gp_policy_set *set = extender_policies(e);
    gp_pod_req req;
    gp_policy_view view;
    if (!json_is_object(pod)) {
        gp_fail(err, "expected a Pod object");
        goto done;
    }
    gp_pod pd;
    if (pod_decode(pod, &pd, err) || extender_pod_request(e, &pd, set, &req, &view, err))
        goto done;
    /* filter over every node the store knows, as kube-scheduler would ask */
    gp_buf body;
    gp_buf_init(&body, EXPLAIN_BODY_MAX);
    jsonw_raw(&body, "{\"Pod\":");
    jsonw_value(&body, pod);
    jsonw_raw(&body, ",\"NodeNames\":[");
    cluster_rdlock(c);
    size_t it = 0, k = 0;
    const gp_node *n;
    while ((n = cluster_rd_node_at(c, &it))) {
        jsonw_raw(&body, k++ ? "," : "");
        jsonw_str(&body, n->name);
    }
    cluster_unlock(c);
    jsonw_raw(&body, "]}");
    /* extender_filter_readonly: explain never starts a preemption */
    int st = gp_buf_failed(&body) ? 500 : extender_filter_readonly(e, body.data, body.len, &answer);
    gp_buf_free(&body);
    json_t *ans = json_loads(answer ? answer : "", 0, NULL);
    if (st != 200 || !ans) {
        gp_fail(err, "filter answered %d: %.300s", st, answer ? answer : "");
        json_decref(ans);
        goto done;
    }
    out = explain_group(ans);
    json_decref(ans);
    size_t gi, ni;
    json_t *g, *nd;
    json_array_foreach(json_object_get(out, "groups"), gi, g) {
        json_array_foreach(json_object_get(g, "nodes"), ni, nd) {
            char hint[1024];
            if (req.nctrs == 0)
                snprintf(hint, sizeof hint, "-");
            else
                hint_for(c, json_string_value(json_object_get(nd, "node")),
                         json_string_value(json_object_get(nd, "reason")), &req, &view, hint,
                         sizeof hint);
            json_object_set_new(nd, "hint", json_string(hint));
        }
    }
    char id[2 * GP_NAME_MAX + 2];
    snprintf(id, sizeof id, "%s/%s", pd.ns, pd.name[0] ? pd.name : "?");
    json_object_set_new(out, "pod", json_string(id));
    json_object_set_new(out, "policy", json_string(view.name));
    json_object_set_new(out, "managed", json_boolean(req.nctrs > 0));
    json_object_set_new(out, "nodes", json_integer((json_int_t)k));
    json_t *pre = req.nctrs > 0 && json_array_size(json_object_get(out, "fits")) == 0
                      ? extender_preempt_status(e, pod)
                      : NULL;
    if (pre)
        json_object_set_new(out, "preemption", pre);
done:
    free(answer);
    policy_set_unref(set);
    return out;
}

void explain_print(FILE *f, const json_t *ex)
{
    const char *pod = json_string_value(json_object_get(ex, "pod"));
    const json_t *fitl = json_object_get(ex, "fits");
    const char *policy = json_string_value(json_object_get(ex, "policy"));
    fprintf(f, "pod %s (policy %s): ", pod ? pod : "?", policy ? policy : "?");
    if (!json_is_true(json_object_get(ex, "managed"))) {
        fprintf(f, "asks for no gpupack resources; gpupack lets it onto every node\n");
        return;
    }
    long long nnodes = (long long)json_integer_value(json_object_get(ex, "nodes"));
    fprintf(f, "fits %zu of %lld node%s", json_array_size(fitl), nnodes, gp_s(nnodes));
    size_t i;
    const json_t *v;
    json_array_foreach(fitl, i, v) {
        if (i == 8) {
            fprintf(f, ", ...");
            break;
        }
        fprintf(f, "%s%s", i ? ", " : ": ", json_string_value(v));
    }
    fprintf(f, "\n");
    const json_t *pre = json_object_get(ex, "preemption");
    if (pre)
        fprintf(f, "preemption: %s\n", json_string_value(json_object_get(pre, "message")));
    const json_t *g;
    json_array_foreach(json_object_get(ex, "groups"), i, g) {
        const json_t *nodes = json_object_get(g, "nodes");
        fprintf(f, "\n%zu node%s%s: %s\n", json_array_size(nodes),
                json_array_size(nodes) == 1 ? "" : "s",
                json_is_true(json_object_get(g, "unresolvable")) ? " (never, as built)" : "",
                json_string_value(json_object_get(g, "key")));
        size_t k;
        const json_t *nd;
        json_array_foreach(nodes, k, nd) {
            if (k == 20) {
                fprintf(f, "  ... %zu more\n", json_array_size(nodes) - 20);
                break;
            }
            fprintf(f, "  %s: %s\n    -> %s\n", json_string_value(json_object_get(nd, "node")),
                    json_string_value(json_object_get(nd, "reason")),
                    json_string_value(json_object_get(nd, "hint")));
        }
    }
}
