/* verify.c -- the one checker: the allocation rebuilt from the API server, against itself and /inspect. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/annotations.h"
#include "harness.h"
#include "model/k8s_obs.h"
#include "model/podreq.h"
#include "pack/placement.h"
#include "lib/strmap.h"
#include "lib/util.h"

#define ALIYUN_UNIT_MIB 1024   /* gpupack's default, as the harness starts it */

typedef struct vgpu {
    int64_t mem;                    /* MiB held */
    int core;                       /* per-mille held */
    int pods;
    gp_buf uids;                    /* ",uid,ns/name,..." of the pods holding it */
} vgpu;

typedef struct vnode {
    char name[GP_NAME_MAX];
    gp_inventory inv;
    vgpu use[GP_MAX_GPUS_PER_NODE];   /* by position in inv.gpus */
} vnode;

GP_PRINTF(2, 3) static void problem(e2e_verdict *v, const char *fmt, ...)
{
    v->problems++;
    size_t len = strlen(v->report);
    if (len + 200 > sizeof v->report)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->report + len, sizeof v->report - len - 1, fmt, ap);
    va_end(ap);
    len = strlen(v->report);
    v->report[len] = '\n';
    v->report[len + 1] = '\0';
}

static int inv_pos(const gp_inventory *inv, int index)
{
    for (int i = 0; i < inv->n; i++)
        if (inv->gpus[i].index == index)
            return i;
    return -1;
}

static const gp_ctr_assign *assign_ctr(const gp_assignment *a, const char *name, bool init)
{
    for (int i = 0; i < a->nctrs; i++)
        if (strcmp(a->ctrs[i].name, name) == 0 && a->ctrs[i].init == init)
            return &a->ctrs[i];
    return NULL;
}

/* The assignment must give each container what it asked, on allowed GPUs. */
static void check_request(e2e_verdict *v, const json_t *pod, const gp_pod_view *pv, const vnode *n)
{
    gp_resource_names names;
    podreq_default_names(&names);
    gp_pod_req req;
    gp_err err;
    if (podreq_decode(pod, &names, &req, &err) < 0) {
        problem(v, "pod %s/%s is bound but its request is malformed: %s", pv->ns, pv->name, err.msg);
        return;
    }
    if (req.nctrs != pv->assign.nctrs)
        problem(v, "pod %s/%s: %d GPU containers asked, %d assigned", pv->ns, pv->name, req.nctrs,
                pv->assign.nctrs);
    for (int c = 0; c < req.nctrs; c++) {
        const gp_ctr_req *cr = &req.ctrs[c];
        const gp_ctr_assign *ca = assign_ctr(&pv->assign, cr->name, cr->init);
        if (!ca) {
            problem(v, "pod %s/%s: container %s has no assignment", pv->ns, pv->name, cr->name);
            continue;
        }
        if (ca->ngpus != cr->count)
            problem(v, "pod %s/%s: container %s asked %d GPUs, got %d", pv->ns, pv->name, cr->name,
                    cr->count, ca->ngpus);
        for (int g = 0; g < ca->ngpus; g++) {
            int pos = inv_pos(&n->inv, ca->gpus[g].index);
            if (pos < 0)
                continue;   /* reported by the caller */
            const gp_gpu_info *gi = &n->inv.gpus[pos];
            int64_t want = gp_ctr_mem_on(cr, gi->mem_total);
            if (ca->gpus[g].mem_mib != want)
                problem(v, "pod %s/%s: container %s holds %lld MiB of GPU %d, asked %lld", pv->ns,
                        pv->name, cr->name, (long long)ca->gpus[g].mem_mib, gi->index, (long long)want);
            if (cr->core > 0 && ca->gpus[g].core != cr->core)
                problem(v, "pod %s/%s: container %s holds %d per-mille of GPU %d, asked %d", pv->ns,
                        pv->name, cr->name, ca->gpus[g].core, gi->index, cr->core);
            if (!gp_req_model_ok(&req, gp_model_name(gi->model)))
                problem(v, "pod %s/%s: GPU %d of %s is a %s, pod allows %s", pv->ns, pv->name,
                        gi->index, n->name, gp_model_name(gi->model), req.models);
        }
    }
}

/* A bound pod that asks GPUs of gpupack under the default policy (a malformed
 * request counts: gpupack must not have bound it either). Names that merely
 * mention "gpu" are not enough: nvidia.com/gpu alone is the device plugin's. */
static bool asks_gpus(const json_t *pod, const gp_pod_view *pv)
{
    if (!pv->wants_gpu)
        return false;
    gp_resource_names names;
    podreq_default_names(&names);
    gp_pod_req req;
    gp_err err;
    return podreq_decode(pod, &names, &req, &err) < 0 || req.nctrs > 0;
}

static void add_holds(e2e_verdict *v, const gp_pod_view *pv, vnode *n)
{
    gp_hold holds[GP_MAX_GPUS_PER_NODE];
    int nh = gp_assignment_holds(&pv->assign, holds);
    for (int h = 0; h < nh; h++) {
        int pos = inv_pos(&n->inv, holds[h].index);
        if (pos < 0) {
            problem(v, "pod %s/%s: assignment names GPU %d, which node %s does not have", pv->ns,
                    pv->name, holds[h].index, n->name);
            continue;
        }
        if (!n->inv.gpus[pos].healthy)
            problem(v, "pod %s/%s: on unhealthy GPU %d of %s", pv->ns, pv->name, holds[h].index, n->name);
        vgpu *u = &n->use[pos];
        u->mem += holds[h].mem_mib;
        u->core += holds[h].core;
        u->pods++;
        /* by uid, and by namespace/name: /inspect leaves uids out unless --show-pod-uids */
        if (gp_buf_printf(&u->uids, "%s%s,%s/%s,", u->uids.len ? "" : ",", pv->uid, pv->ns, pv->name) < 0)
            problem(v, "%s GPU %d: too many pods to list", n->name, holds[h].index);
    }
}

/* The rebuild from the API server alone. Bound GPU pods without annotations go
 * into *bypassed (uid -> non-NULL) when v->allow_bypass. */
static strmap *rebuild(e2e_cp *cp, int flags, e2e_verdict *v, strmap *bypassed)
{
    strmap *nodes = strmap_new();
    json_t *l = e2e_api_ok(cp, "GET", "/api/v1/nodes", NULL, NULL);
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(l, "items"), i, o) {
        vnode *n = xcalloc(1, sizeof *n);
        for (size_t g = 0; g < GP_ARRAY_LEN(n->use); g++)
            gp_buf_init(&n->use[g].uids, 1u << 20);
        gp_err err;
        if (k8s_obs_node(o, ALIYUN_UNIT_MIB, n->name, &n->inv, &err) != 0)
            problem(v, "node %s: inventory unusable: %s", n->name, err.msg);
        strmap_put(nodes, n->name, n);
        v->nodes++;
    }
    json_decref(l);
    json_t *pods = e2e_pods(cp, "");
    gp_pod_view *pv = xmalloc(sizeof *pv);
    json_array_foreach(pods, i, o) {
        gp_err err;
        if (k8s_obs_pod(o, false, ALIYUN_UNIT_MIB, pv, &err) < 0) {
            problem(v, "pod without name/uid: %s", err.msg);
            continue;
        }
        if (pv->obs.terminal || !pv->node[0])
            continue;
        if (pv->assign_err[0]) {
            problem(v, "pod %s/%s: malformed assignment: %s", pv->ns, pv->name, pv->assign_err);
            continue;
        }
        if (!pv->obs.assign) {
            if (asks_gpus(o, pv) && (flags & E2E_ALLOW_BYPASS)) {
                char nsname[2 * GP_NAME_MAX + 2];   /* /inspect may list a pod without its uid */
                snprintf(nsname, sizeof nsname, "%s/%s", pv->ns, pv->name);
                strmap_put(bypassed, pv->uid, bypassed);
                strmap_put(bypassed, nsname, bypassed);
                v->bypassed++;
            } else if (asks_gpus(o, pv)) {
                problem(v, "pod %s/%s is bound to %s without a GPU assignment", pv->ns, pv->name, pv->node);
            }
            continue;
        }
        v->gpu_pods_bound++;
        if (strcmp(pv->assign.node, pv->node) != 0) {
            problem(v, "pod %s/%s is bound to %s but its assignment names %s", pv->ns, pv->name,
                    pv->node, pv->assign.node);
            continue;
        }
        vnode *n = strmap_get(nodes, pv->node);
        if (!n) {
            problem(v, "pod %s/%s is bound to unknown node %s", pv->ns, pv->name, pv->node);
            continue;
        }
        check_request(v, o, pv, n);
        add_holds(v, pv, n);
    }
    free(pv);
    json_decref(pods);
    /* per GPU: sum <= capacity */
    size_t it = 0;
    vnode *n;
    while ((n = strmap_next(nodes, &it, NULL))) {
        for (int g = 0; g < n->inv.n; g++) {
            const gp_gpu_info *gi = &n->inv.gpus[g];
            const vgpu *u = &n->use[g];
            if (u->pods)
                v->gpus_used++;
            if (u->mem > gi->mem_total || u->core > gi->core_total)
                v->gpus_over++;
            if (u->mem > gi->mem_total)
                problem(v, "OVER-COMMIT: %s GPU %d holds %lld MiB of %lld", n->name, gi->index,
                        (long long)u->mem, (long long)gi->mem_total);
            if (u->core > gi->core_total)
                problem(v, "OVER-COMMIT: %s GPU %d holds %.1f%% compute of %.1f%%", n->name, gi->index,
                        u->core / 10.0, gi->core_total / 10.0);
        }
    }
    return nodes;
}

/* /inspect must be the same map. */
static void compare_inspect(e2e_gp *gp, strmap *nodes, const strmap *bypassed, e2e_verdict *v)
{
    long st;
    char *body = e2e_gp_get(gp, "/inspect", &st);
    json_t *j = body ? json_loads(body, 0, NULL) : NULL;
    free(body);
    if (st != 200 || !j) {
        problem(v, "gpupack /inspect: HTTP %ld", st);
        json_decref(j);
        return;
    }
    size_t i, seen = 0;
    json_t *no;
    json_array_foreach(json_object_get(j, "nodes"), i, no) {
        const char *name = json_string_value(json_object_get(no, "name"));
        vnode *n = name ? strmap_get(nodes, name) : NULL;
        if (!n) {
            problem(v, "/inspect has node %s, the API server does not", name ? name : "?");
            continue;
        }
        seen++;
        json_t *gpus = json_object_get(no, "gpus");
        if ((int)json_array_size(gpus) != n->inv.n)
            problem(v, "/inspect: node %s has %zu GPUs, inventory %d", name, json_array_size(gpus), n->inv.n);
        size_t k;
        json_t *go;
        json_array_foreach(gpus, k, go) {
            int index = (int)json_integer_value(json_object_get(go, "index"));
            int pos = inv_pos(&n->inv, index);
            if (pos < 0) {
                problem(v, "/inspect: node %s GPU %d unknown to the inventory", name, index);
                continue;
            }
            const vgpu *u = &n->use[pos];
            json_int_t mem = json_integer_value(json_object_get(json_object_get(go, "memoryMiB"), "used"));
            double core = json_number_value(json_object_get(json_object_get(go, "corePercent"), "used"));
            size_t p;
            json_t *po;
            int npods = 0, nbyp = 0;
            int64_t byp_mem = 0;
            int byp_core = 0;
            int before = v->problems;
            json_array_foreach(json_object_get(go, "pods"), p, po) {
                const char *uid = json_string_value(json_object_get(po, "uid"));
                const char *pname = json_string_value(json_object_get(po, "name"));
                const char *state = json_string_value(json_object_get(po, "state"));
                char pkey[2 * GP_NAME_MAX + 2];
                snprintf(pkey, sizeof pkey, "%s/%s", json_string_value(json_object_get(po, "namespace")), pname);
                if ((uid && strmap_get(bypassed, uid)) || (!uid && strmap_get(bypassed, pkey))) {
                    /* gpupack chose its GPUs; the API server has no record to compare with */
                    byp_mem += json_integer_value(json_object_get(po, "memMiB"));
                    byp_core += (int)(json_number_value(json_object_get(po, "corePercent")) * 10 + 0.5);
                    nbyp++;
                    continue;
                }
                char key[2 * GP_NAME_MAX + 4];
                if (uid)
                    snprintf(key, sizeof key, ",%s,", uid);
                else
                    snprintf(key, sizeof key, ",%s/%s,", json_string_value(json_object_get(po, "namespace")),
                             json_string_value(json_object_get(po, "name")));
                if (!u->uids.data || !strstr(u->uids.data, key))
                    problem(v, "/inspect: %s GPU %d lists pod %s/%s, whose annotations do not name it", name,
                            index, json_string_value(json_object_get(po, "namespace")), pname);
                if (state && strcmp(state, "bound") != 0)
                    problem(v, "/inspect: pod %s on %s GPU %d is still %s", pname, name, index, state);
                npods++;
            }
            if (mem != u->mem + byp_mem || (int)(core * 10 + 0.5) != u->core + byp_core)
                problem(v, "/inspect: %s GPU %d uses %lld MiB / %.1f%%, the API server says %lld MiB / %.1f%%%s",
                        name, index, (long long)mem, core, (long long)(u->mem + byp_mem),
                        (u->core + byp_core) / 10.0, nbyp ? " (with pods bound bypassing gpupack)" : "");
            if (npods != u->pods)
                problem(v, "/inspect: %s GPU %d lists %d pods, the API server %d", name, index, npods, u->pods);
            if (v->problems > before)
                v->inspect_gpus_differ++;
        }
    }
    /* nodes with GPUs gpupack does not show */
    size_t it = 0;
    vnode *n;
    size_t total = 0;
    while ((n = strmap_next(nodes, &it, NULL)))
        total++;
    if (seen != total)
        problem(v, "/inspect shows %zu of the API server's %zu nodes", seen, total);
    json_decref(j);
}

static void free_nodes(strmap *nodes)
{
    size_t it = 0;
    vnode *n;
    while ((n = strmap_next(nodes, &it, NULL))) {
        for (size_t g = 0; g < GP_ARRAY_LEN(n->use); g++)
            gp_buf_free(&n->use[g].uids);
        free(n);
    }
    strmap_free(nodes);
}

void e2e_verify_with(e2e_cp *cp, e2e_gp *gp, int flags, e2e_verdict *v)
{
    memset(v, 0, sizeof *v);
    strmap *bypassed = strmap_new();
    strmap *nodes = rebuild(cp, flags, v, bypassed);
    if (gp)
        compare_inspect(gp, nodes, bypassed, v);
    strmap_free(bypassed);
    free_nodes(nodes);
}

int e2e_pending_that_fit(e2e_cp *cp, const char *ns, char *report, size_t len)
{
    e2e_verdict *v = xcalloc(1, sizeof *v);
    strmap *bypassed = strmap_new();
    strmap *nodes = rebuild(cp, E2E_ALLOW_BYPASS, v, bypassed);
    strmap_free(bypassed);
    free(v);
    gp_resource_names names;
    podreq_default_names(&names);
    gp_place_opts opts;
    placement_default_opts(&opts);
    gp_node *node = xmalloc(sizeof *node);
    gp_pod_view *pv = xmalloc(sizeof *pv);
    json_t *pods = e2e_pods(cp, ns);
    size_t i, off = 0;
    json_t *o;
    int fit = 0;
    if (len)
        report[0] = '\0';
    json_array_foreach(pods, i, o) {
        gp_err err;
        gp_pod_req req;
        if (k8s_obs_pod(o, false, ALIYUN_UNIT_MIB, pv, &err) < 0 || pv->obs.terminal || pv->node[0] ||
            podreq_decode(o, &names, &req, &err) < 0 || req.nctrs == 0)
            continue;
        size_t it = 0;
        vnode *n;
        const char *where = NULL;
        while (!where && (n = strmap_next(nodes, &it, NULL))) {
            memset(node, 0, sizeof *node);
            gp_strlcpy(node->name, n->name, sizeof node->name);
            node->ngpus = n->inv.n;
            for (int g = 0; g < n->inv.n; g++) {
                node->gpus[g].info = n->inv.gpus[g];
                node->gpus[g].mem_used = n->use[g].mem;
                node->gpus[g].core_used = n->use[g].core;
                node->gpus[g].pods = n->use[g].pods;
            }
            gp_assignment a;
            if (placement_fit(node, &req, &opts, &a, NULL) == 0)
                where = n->name;
        }
        if (!where)
            continue;
        fit++;
        if (off + 200 < len)
            off += (size_t)snprintf(report + off, len - off, "pod %s/%s is pending but fits %s\n",
                                    pv->ns, pv->name, where);
    }
    json_decref(pods);
    free(pv);
    free(node);
    free_nodes(nodes);
    return fit;
}

void e2e_verify(e2e_cp *cp, e2e_gp *gp, e2e_verdict *v)
{
    e2e_verify_with(cp, gp, 0, v);
}

void e2e_assert_consistent(e2e_cp *cp, e2e_gp *gp, double timeout_s, e2e_verdict *v)
{
    e2e_assert_consistent_with(cp, gp, timeout_s, 0, v);
}

void e2e_assert_consistent_with(e2e_cp *cp, e2e_gp *gp, double timeout_s, int flags,
                                e2e_verdict *v)
{
    double end = gp_mono_s() + timeout_s;
    for (;;) {
        e2e_verify_with(cp, gp, flags, v);
        if (v->problems == 0 || gp_mono_s() > end)
            break;
        e2e_sleep(0.5);
    }
    if (v->problems) {
        e2e_gp_log_tail(gp, 30);
        ck_abort_msg("%d problem(s) in the cluster's GPU accounting:\n%s", v->problems, v->report);
    }
    e2e_log("consistent: %d nodes, %d GPU pods bound, %d GPUs in use%s", v->nodes, v->gpu_pods_bound,
            v->gpus_used, gp ? ", /inspect equals the rebuild" : "");
}
