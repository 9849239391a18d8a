/* fuzz_observe.c -- libFuzzer harness for what the watches do to the map: the
 * input is a JSON array of watch events ({"type":"ADDED|MODIFIED|DELETED",
 * "object":{...}}, an object of kind Node going to the node path, any other
 * to the pod path) and of pod relists ({"type":"RELIST"}: every pod the
 * harness has seen and not deleted, observed again between
 * cluster_pods_resync_begin and _end), applied to a cluster store as
 * act/live.c applies them (k8s_obs_pod / k8s_obs_node, then
 * cluster_pod_observed / cluster_upsert_node / cluster_remove_node).
 *
 * What must hold, whatever the objects say:
 * - a pod or node decodes the same whole and trimmed to what gpupack keeps
 *   (k8s_obs_trim_pod / _node: the LIST buffer and the extender's pod cache);
 * - a relist of the pods already observed changes nothing in the map
 *   (/inspect before and after are equal);
 * - once every pod seen is deleted, nothing is held: no memory, compute,
 *   CPU or host memory in use on any node, no pod counted (an assignment that
 *   outlived its pod would show here).
 *
 *   make fuzz-short FUZZ_ONLY=observe   (or build/fuzz/fuzz_observe -max_total_time=60 test/fuzz/corpus/observe)
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "model/k8s_obs.h"
#include "pack/cluster.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_EVENTS 64

static void drain_notices(gp_cluster *c)
{
    gp_over_notice n[16];
    while (cluster_take_over_notices(c, n, 16) == 16)
        ;
}

/* Whole and trimmed decode to the same view of the pod. */
static void same_pod(const gp_pod_view *a, const gp_pod_view *b)
{
    if (strcmp(a->uid, b->uid) || strcmp(a->ns, b->ns) || strcmp(a->name, b->name) ||
        strcmp(a->node, b->node) || strcmp(a->policy, b->policy) || strcmp(a->assign_err, b->assign_err) ||
        a->pending != b->pending || a->wants_gpu != b->wants_gpu || a->sched_error != b->sched_error ||
        a->parked != b->parked || a->obs.terminal != b->obs.terminal ||
        a->obs.cpu_milli != b->obs.cpu_milli || a->obs.mem_mib != b->obs.mem_mib ||
        a->obs.nrefs != b->obs.nrefs || !a->obs.assign != !b->obs.assign)
        abort();
    if (a->obs.assign && !gp_assignment_equal(a->obs.assign, b->obs.assign))
        abort();
}

static void same_node(int ra, const char *na, const gp_inventory *a, int rb, const char *nb,
                      const gp_inventory *b)
{
    if (ra != rb || (ra >= 0 && strcmp(na, nb)))
        abort();
    if (ra < 0)
        return;
    if (a->n != b->n || strcmp(a->source, b->source) || a->cpu_alloc_milli != b->cpu_alloc_milli ||
        a->mem_alloc_mib != b->mem_alloc_mib)
        abort();
    for (int g = 0; g < a->n; g++) {
        const gp_gpu_info *x = &a->gpus[g], *y = &b->gpus[g];
        if (x->mem_total != y->mem_total || x->core_total != y->core_total || x->index != y->index ||
            x->healthy != y->healthy || x->model != y->model || strcmp(x->uuid, y->uuid))
            abort();
    }
}

/* Decodes a pod whole and trimmed (they must agree) and applies it. Returns
 * whether it decoded (a pod the store could know). */
static bool observe_pod(gp_cluster *c, const json_t *obj, bool deleted)
{
    gp_pod_view *v = malloc(sizeof *v), *t = malloc(sizeof *t);
    if (!v || !t)
        abort();
    gp_err err = {0}, terr = {0};
    int rv = k8s_obs_pod(obj, deleted, 1024, v, &err);
    json_t *trim = k8s_obs_trim_pod(obj);
    int rt = trim ? k8s_obs_pod(trim, deleted, 1024, t, &terr) : -2;
    if ((rv < 0 && !err.msg[0]) || rv != rt)
        abort();
    if (rv == 0) {
        same_pod(v, t);
        cluster_pod_observed(c, &v->obs);
        drain_notices(c);
    }
    json_decref(trim);
    free(v);
    free(t);
    return rv == 0;
}

static void observe_node(gp_cluster *c, const json_t *obj, bool deleted)
{
    static gp_inventory inv, tinv;
    char name[GP_NAME_MAX], tname[GP_NAME_MAX];
    gp_err err = {0}, terr = {0};
    int rc = k8s_obs_node(obj, 1024, name, &inv, &err);
    json_t *trim = k8s_obs_trim_node(obj);
    int rt = trim ? k8s_obs_node(trim, 1024, tname, &tinv, &terr) : -2;
    json_decref(trim);
    if (rc != 0 && !err.msg[0])
        abort();
    same_node(rc, name, &inv, rt, tname, &tinv);
    if (rc < 0)
        return;
    if (deleted)
        cluster_remove_node(c, name);
    else
        cluster_upsert_node(c, name, &inv);
    drain_notices(c);
}

static const char *uid_of(const json_t *obj)
{
    return json_string_value(json_object_get(json_object_get(obj, "metadata"), "uid"));
}

/* The pods seen: the last object of each uid, and whether it was deleted. */
typedef struct seen {
    const json_t *obj[MAX_EVENTS];
    bool gone[MAX_EVENTS];
    int n;
} seen;

static void remember(seen *s, const json_t *obj, bool deleted)
{
    const char *uid = uid_of(obj);
    for (int i = 0; i < s->n; i++)
        if (strcmp(uid_of(s->obj[i]), uid) == 0) {
            s->obj[i] = obj;
            s->gone[i] = deleted;
            return;
        }
    s->obj[s->n] = obj;
    s->gone[s->n++] = deleted;
}

static void relist(gp_cluster *c, const seen *s)
{
    json_t *before = cluster_inspect(c, NULL);
    cluster_pods_resync_begin(c);
    for (int i = 0; i < s->n; i++)
        if (!s->gone[i])
            (void)observe_pod(c, s->obj[i], false);
    cluster_pods_resync_end(c);
    drain_notices(c);
    json_t *after = cluster_inspect(c, NULL);
    if (!json_equal(before, after))
        abort();
    json_decref(before);
    json_decref(after);
}

/* Nothing may stay held once every pod is gone. */
static void all_released(gp_cluster *c)
{
    gp_cluster_stats st;
    cluster_stats(c, &st);
    if (st.mem_used || st.core_used || st.pods_bound || st.pods_assumed || st.pods_gpu_missing)
        abort();
    cluster_rdlock(c);
    size_t it = 0;
    const gp_node *n;
    while ((n = cluster_rd_node_at(c, &it))) {
        if (n->cpu_used_milli || n->host_mem_used_mib)
            abort();
        for (int g = 0; g < n->ngpus; g++)
            if (n->gpus[g].mem_used || n->gpus[g].core_used || n->gpus[g].pods)
                abort();
    }
    cluster_unlock(c);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    gp_log_set_level(GP_LOG_ERROR);   /* over-capacity warnings are expected here */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *events = json_loadb((const char *)data, size, 0, NULL);
    if (!json_is_array(events) || json_array_size(events) > MAX_EVENTS) {
        json_decref(events);
        return 0;
    }
    gp_cluster *c = cluster_new();
    seen s = {.n = 0};
    size_t i;
    json_t *ev;
    json_array_foreach(events, i, ev) {
        const char *type = json_string_value(json_object_get(ev, "type"));
        if (!type)
            continue;
        if (strcmp(type, "RELIST") == 0) {
            relist(c, &s);
            continue;
        }
        json_t *obj = json_object_get(ev, "object");
        if (!json_is_object(obj))
            continue;
        bool deleted = strcmp(type, "DELETED") == 0;
        const char *kind = json_string_value(json_object_get(obj, "kind"));
        if (kind && strcmp(kind, "Node") == 0)
            observe_node(c, obj, deleted);
        else if (observe_pod(c, obj, deleted))
            remember(&s, obj, deleted);
    }
    for (int k = 0; k < s.n; k++)
        if (!s.gone[k])
            (void)observe_pod(c, s.obj[k], true);
    all_released(c);
    cluster_free(c);
    json_decref(events);
    return 0;
}
