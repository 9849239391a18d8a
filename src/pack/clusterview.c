/* clusterview.c -- cluster-wide figures for operators (summary, per model). */
#include "pack/clusterview.h"

#include <stdio.h>
#include <string.h>

#include "pack/frag.h"
#include "lib/metrics.h"

void clusterview_init(clusterview *v)
{
    memset(v, 0, sizeof *v);
}

static clusterview_model *model_slot(clusterview *v, const char *model)
{
    const char *name = model[0] ? model : "unknown";
    for (int i = 0; i < v->nmodels; i++)
        if (strcmp(v->models[i].model, name) == 0)
            return &v->models[i];
    if (v->nmodels == CLUSTERVIEW_MAX_MODELS) {
        /* the last slot becomes "other" and takes every further model */
        clusterview_model *o = &v->models[CLUSTERVIEW_MAX_MODELS - 1];
        gp_strlcpy(o->model, "other", sizeof o->model);
        return o;
    }
    clusterview_model *m = &v->models[v->nmodels++];
    gp_strlcpy(m->model, name, sizeof m->model);
    return m;
}

void clusterview_add_node(clusterview *v, const gp_node *n, const gp_shapes *shapes)
{
    v->nodes++;
    for (int i = 0; i < n->ngpus; i++) {
        const gp_gpu *g = &n->gpus[i];
        v->gpus++;
        if (!g->info.healthy)
            continue;
        clusterview_model *m = model_slot(v, gp_model_name(g->info.model));
        bool idle = g->mem_used == 0 && g->core_used == 0 && g->pods == 0;
        bool full = g->mem_used >= g->info.mem_total || g->core_used >= g->info.core_total;
        v->gpus_healthy++;
        v->gpus_idle += idle;
        v->gpus_full += full;
        v->mem_total += g->info.mem_total;
        v->mem_used += g->mem_used;
        v->core_total += g->info.core_total;
        v->core_used += g->core_used;
        m->gpus++;
        m->gpus_idle += idle;
        m->mem_total += g->info.mem_total;
        m->mem_used += g->mem_used;
    }
    /* the simulator's measure: nodes without idle share add nothing */
    frag_view fv;
    frag_view_of_node(n, NULL, &fv);
    int64_t idle = frag_idle(&fv);
    if (idle > 0) {
        v->idle += (double)idle;
        v->frag += frag_amount(&fv, shapes ? shapes : frag_default_shapes());
    }
}

void clusterview_of_cluster(gp_cluster *c, const gp_shapes *shapes, clusterview *v)
{
    clusterview_init(v);
    cluster_rdlock(c);
    size_t it = 0;
    const gp_node *n;
    while ((n = cluster_rd_node_at(c, &it)))
        clusterview_add_node(v, n, shapes);
    cluster_unlock(c);
}

double clusterview_frag_ratio(const clusterview *v)
{
    return v->idle > 0 ? v->frag / v->idle : 0.0;
}

static json_t *used_total(int64_t used, int64_t total)
{
    return json_pack("{s:I,s:I}", "used", (json_int_t)used, "total", (json_int_t)total);
}

json_t *clusterview_json(const clusterview *v)
{
    json_t *models = json_array();
    for (int i = 0; i < v->nmodels; i++) {
        const clusterview_model *m = &v->models[i];
        json_array_append_new(models, json_pack("{s:s,s:i,s:i,s:o}", "model", m->model, "gpus",
                                                m->gpus, "gpusIdle", m->gpus_idle, "memoryMiB",
                                                used_total(m->mem_used, m->mem_total)));
    }
    return json_pack("{s:I,s:I,s:I,s:I,s:I,s:o,s:{s:f,s:f},s:{s:f,s:f},s:o}", "nodes",
                     (json_int_t)v->nodes, "gpus", (json_int_t)v->gpus, "gpusHealthy",
                     (json_int_t)v->gpus_healthy, "gpusIdle", (json_int_t)v->gpus_idle, "gpusFull",
                     (json_int_t)v->gpus_full, "memoryMiB", used_total(v->mem_used, v->mem_total),
                     "corePercent", "used", (double)v->core_used / 10.0, "total",
                     (double)v->core_total / 10.0, "fragmentation", "ratio",
                     clusterview_frag_ratio(v), "gpus", v->frag / GP_CORE_FULL, "models", models);
}

/* Model names come from node inventories: keep label values printable and
 * free of the characters the text format escapes. */
void clusterview_metrics(const clusterview *v, gp_buf *out)
{
    char labels[GP_MODEL_MAX + 32];
    metrics_header(out, "gpupack_gpus_idle", "gauge", "Healthy GPUs no pod holds any part of.");
    metrics_u(out, "gpupack_gpus_idle", NULL, v->gpus_idle);
    metrics_header(out, "gpupack_gpu_fragmentation_ratio", "gauge",
                   "Share of idle GPU capacity that typical pods cannot use (the simulator's "
                   "fragmentation measure).");
    metrics_f(out, "gpupack_gpu_fragmentation_ratio", NULL, 6, clusterview_frag_ratio(v));
    metrics_header(out, "gpupack_gpu_fragment_gpus", "gauge",
                   "Idle GPU capacity that typical pods cannot use, in whole GPUs.");
    metrics_f(out, "gpupack_gpu_fragment_gpus", NULL, 3, v->frag / GP_CORE_FULL);
    metrics_header(out, "gpupack_model_gpu_memory_mib", "gauge",
                   "GPU memory of healthy GPUs by model, total and allocated.");
    for (int i = 0; i < v->nmodels; i++) {
        char m[GP_MODEL_MAX];
        metrics_label_value(m, sizeof m, v->models[i].model);
        snprintf(labels, sizeof labels, "model=\"%s\",kind=\"total\"", m);
        metrics_i(out, "gpupack_model_gpu_memory_mib", labels, v->models[i].mem_total);
        snprintf(labels, sizeof labels, "model=\"%s\",kind=\"used\"", m);
        metrics_i(out, "gpupack_model_gpu_memory_mib", labels, v->models[i].mem_used);
    }
    metrics_header(out, "gpupack_model_gpus", "gauge", "Healthy GPUs by model, idle or in use.");
    for (int i = 0; i < v->nmodels; i++) {
        char m[GP_MODEL_MAX];
        metrics_label_value(m, sizeof m, v->models[i].model);
        snprintf(labels, sizeof labels, "model=\"%s\",state=\"idle\"", m);
        metrics_i(out, "gpupack_model_gpus", labels, v->models[i].gpus_idle);
        snprintf(labels, sizeof labels, "model=\"%s\",state=\"used\"", m);
        metrics_i(out, "gpupack_model_gpus", labels, v->models[i].gpus - v->models[i].gpus_idle);
    }
}

/* Appends gpupack_node_gpu_memory_mib{node,kind="total"|"used"} for every
 * node of the store (two series per node), under its read lock. */
static void clusterview_node_metrics(gp_cluster *c, gp_buf *out)
{
    metrics_header(out, "gpupack_node_gpu_memory_mib", "gauge",
                   "GPU memory of a node's healthy GPUs, total and allocated.");
    cluster_rdlock(c);
    size_t it = 0;
    const gp_node *n;
    while ((n = cluster_rd_node_at(c, &it))) {
        int64_t total = 0, used = 0;
        for (int i = 0; i < n->ngpus; i++)
            if (n->gpus[i].info.healthy) {
                total += n->gpus[i].info.mem_total;
                used += n->gpus[i].mem_used;
            }
        char name[GP_NAME_MAX], labels[GP_NAME_MAX + 32];
        metrics_label_value(name, sizeof name, n->name);
        snprintf(labels, sizeof labels, "node=\"%s\",kind=\"total\"", name);
        metrics_i(out, "gpupack_node_gpu_memory_mib", labels, total);
        snprintf(labels, sizeof labels, "node=\"%s\",kind=\"used\"", name);
        metrics_i(out, "gpupack_node_gpu_memory_mib", labels, used);
    }
    cluster_unlock(c);
}

void clusterview_store_metrics(void *cluster, gp_buf *out)
{
    gp_cluster *c = cluster;
    gp_cluster_stats cs;
    cluster_stats(c, &cs);
    metrics_header(out, "gpupack_nodes", "gauge", "Nodes in the store.");
    metrics_u(out, "gpupack_nodes", NULL, cs.nodes);
    metrics_header(out, "gpupack_gpus", "gauge", "GPUs in the store.");
    metrics_u(out, "gpupack_gpus", NULL, cs.gpus);
    metrics_header(out, "gpupack_pods", "gauge", "Pods holding GPUs, by state.");
    metrics_u(out, "gpupack_pods", "state=\"bound\"", cs.pods_bound);
    metrics_u(out, "gpupack_pods", "state=\"assumed\"", cs.pods_assumed);
    metrics_header(out, "gpupack_pods_gpu_missing", "gauge",
                   "Pods whose assignment names a GPU their node no longer reports (see /inspect "
                   "missingGPUs).");
    metrics_u(out, "gpupack_pods_gpu_missing", NULL, cs.pods_gpu_missing);
    metrics_header(out, "gpupack_gpus_over_capacity", "gauge",
                   "GPUs whose pods' annotations hold more memory or compute than they have "
                   "(nothing is offered there; see /inspect overCapacity).");
    metrics_u(out, "gpupack_gpus_over_capacity", NULL, cs.gpus_over);
    metrics_header(out, "gpupack_gpu_over_capacity_total", "counter",
                   "Times a GPU went over capacity by the pods' annotations (each raises a "
                   "GPUOverCapacity Event).");
    metrics_u(out, "gpupack_gpu_over_capacity_total", NULL, cs.truth.over_capacity);
    metrics_header(out, "gpupack_dra_conflicts_total", "counter",
                   "Of those, GPUs that DRA's allocated ResourceClaims shared with gpupack's own "
                   "pods when they went over (a claim allocated on top of gpupack's pods).");
    metrics_u(out, "gpupack_dra_conflicts_total", NULL, cs.truth.dra_conflicts);
    metrics_header(out, "gpupack_dra_gpus", "gauge", "GPUs published through DRA ResourceSlices.");
    metrics_u(out, "gpupack_dra_gpus", NULL, cs.dra_gpus);
    metrics_header(out, "gpupack_dra_gpu_memory_mib", "gauge",
                   "Memory of the GPUs published through DRA: published, and held by allocated "
                   "ResourceClaims.");
    metrics_i(out, "gpupack_dra_gpu_memory_mib", "kind=\"total\"", cs.dra_mem_total);
    metrics_i(out, "gpupack_dra_gpu_memory_mib", "kind=\"claimed\"", cs.dra_mem_used);
    metrics_header(out, "gpupack_dra_gpu_claims", "gauge",
                   "Allocated ResourceClaim shares on GPUs (a claim on two GPUs counts twice).");
    metrics_u(out, "gpupack_dra_gpu_claims", NULL, cs.dra_claims);
    metrics_header(out, "gpupack_truth_conflicts_total", "counter",
                   "Assumptions that conflicted with pods the API server shows bound: a "
                   "filter-time reservation or a bind's assumption released before its Binding "
                   "was posted, or one kept because its Binding was already out.");
    metrics_u(out, "gpupack_truth_conflicts_total", "kind=\"reservation_released\"",
              cs.truth.released_reservations);
    metrics_u(out, "gpupack_truth_conflicts_total", "kind=\"assumption_released\"",
              cs.truth.released_assumptions);
    metrics_u(out, "gpupack_truth_conflicts_total", "kind=\"binding_out\"", cs.truth.kept_in_flight);
    metrics_header(out, "gpupack_gpu_memory_mib", "gauge", "GPU memory of healthy GPUs.");
    metrics_i(out, "gpupack_gpu_memory_mib", "kind=\"total\"", cs.mem_total);
    metrics_i(out, "gpupack_gpu_memory_mib", "kind=\"used\"", cs.mem_used);
    metrics_header(out, "gpupack_gpu_core_percent", "gauge",
                   "GPU compute of healthy GPUs, in percent of one GPU.");
    metrics_f(out, "gpupack_gpu_core_percent", "kind=\"total\"", 1, cs.core_total / 10.0);
    metrics_f(out, "gpupack_gpu_core_percent", "kind=\"used\"", 1, cs.core_used / 10.0);
    metrics_header(out, "gpupack_store_lock_waits_total", "counter",
                   "Store lock acquisitions that waited for another holder, by mode (read: filter, "
                   "prioritize; write: bind, reservations, the watch).");
    metrics_u(out, "gpupack_store_lock_waits_total", "mode=\"read\"", cs.lock_waits[0]);
    metrics_u(out, "gpupack_store_lock_waits_total", "mode=\"write\"", cs.lock_waits[1]);
    metrics_header(out, "gpupack_store_lock_wait_seconds_total", "counter",
                   "Time those acquisitions waited, by mode.");
    metrics_f(out, "gpupack_store_lock_wait_seconds_total", "mode=\"read\"", 6, cs.lock_wait_s[0]);
    metrics_f(out, "gpupack_store_lock_wait_seconds_total", "mode=\"write\"", 6, cs.lock_wait_s[1]);
    clusterview cv;
    clusterview_of_cluster(c, NULL, &cv);
    clusterview_metrics(&cv, out);
    clusterview_node_metrics(c, out);
}
