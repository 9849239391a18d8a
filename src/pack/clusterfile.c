/* clusterfile.c -- the embedded cluster: a Kubernetes List of Nodes and Pods loaded into the store. */
#include "pack/clusterfile.h"

#include <string.h>

#include "model/annotations.h"
#include "model/inventory.h"
#include "lib/log.h"
#include "lib/yamljson.h"

static int apply_node(gp_cluster *c, const json_t *node, int64_t unit, gp_clusterfile_stats *st,
                      const char *where, gp_err *err)
{
    const char *name = inventory_node_name(node);
    if (!name || !*name || strlen(name) >= GP_NAME_MAX)
        return gp_fail(err, "%s: Node without a valid metadata.name", where);
    gp_inventory inv;
    gp_err e;
    if (inventory_decode(node, unit, &inv, &e))
        LOG_WARN("node %s: %s; it gets no GPUs", name, e.msg);
    cluster_upsert_node(c, name, &inv);
    st->nodes++;
    st->gpus += inv.n;
    return 0;
}

static int apply_pod(gp_cluster *c, const json_t *pod, int64_t unit, gp_clusterfile_stats *st,
                     const char *where, gp_err *err)
{
    const json_t *md = json_object_get(pod, "metadata");
    const char *uid = json_string_value(json_object_get(md, "uid"));
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    const char *name = json_string_value(json_object_get(md, "name"));
    const char *node = json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
    const char *phase = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
    if (!name)
        return gp_fail(err, "%s: Pod without metadata.name", where);
    char fake_uid[GP_UID_MAX];
    if (!uid) {
        /* hand-written files may omit uids: namespace/name is unique enough */
        snprintf(fake_uid, sizeof fake_uid, "%.30s/%.30s", ns ? ns : "default", name);
        uid = fake_uid;
    }
    gp_assignment a;
    gp_err e;
    const json_t *ann = json_object_get(md, "annotations");
    int rc = annotations_decode(ann, node, unit, &a, &e);
    if (rc < 0) {
        LOG_WARN("pod %s/%s: %s; ignored", ns ? ns : "default", name, e.msg);
        return 0;
    }
    if (rc == 0)
        return 0;
    bool terminal = phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0);
    gp_pod_obs obs = {
        .uid = uid,
        .ns = ns ? ns : "default",
        .name = name,
        .node_name = node ? node : a.node,
        .terminal = terminal,
        .assign = &a,
        .policy = json_string_value(json_object_get(ann, GP_ANN_POLICY_USED)),
    };
    cluster_pod_observed(c, &obs);
    if (!terminal)
        st->pods++;
    return 0;
}

/* item_kind: what items of a typed list are (API lists omit kind on items). */
static int apply_obj(gp_cluster *c, const json_t *o, int64_t unit, gp_clusterfile_stats *st,
                     const char *where, int depth, const char *item_kind, gp_err *err)
{
    if (!json_is_object(o))
        return gp_fail(err, "%s: not a Kubernetes object", where);
    const char *kind = json_string_value(json_object_get(o, "kind"));
    if (!kind)
        kind = item_kind;
    if (!kind)
        return gp_fail(err, "%s: object without a kind", where);
    if (strcmp(kind, "Node") == 0)
        return apply_node(c, o, unit, st, where, err);
    if (strcmp(kind, "Pod") == 0)
        return apply_pod(c, o, unit, st, where, err);
    if (strcmp(kind, "List") == 0 || strcmp(kind, "NodeList") == 0 ||
        strcmp(kind, "PodList") == 0) {
        const json_t *items = json_object_get(o, "items");
        if (depth > 2 || !json_is_array(items))
            return gp_fail(err, "%s: %s without an items array", where, kind);
        const char *ik = strcmp(kind, "NodeList") == 0 ? "Node"
                         : strcmp(kind, "PodList") == 0 ? "Pod" : NULL;
        size_t i;
        const json_t *it;
        json_array_foreach(items, i, it) {
            char w[128];
            snprintf(w, sizeof w, "%.80s.items[%zu]", where, i);
            if (apply_obj(c, it, unit, st, w, depth + 1, ik, err))
                return -1;
        }
        return 0;
    }
    LOG_INFO("%s: skipping a %s", where, kind);
    return 0;
}

int clusterfile_apply(gp_cluster *c, const json_t *docs, int64_t aliyun_unit_mib,
                      gp_clusterfile_stats *stats, gp_err *err)
{
    gp_clusterfile_stats st = {0};
    size_t i;
    const json_t *d;
    json_array_foreach(docs, i, d) {
        if (json_is_null(d))
            continue;
        char w[32];
        snprintf(w, sizeof w, "document %zu", i + 1);
        if (apply_obj(c, d, aliyun_unit_mib, &st, w, 0, NULL, err))
            return -1;
    }
    if (stats)
        *stats = st;
    return 0;
}

int clusterfile_load(gp_cluster *c, const char *path, int64_t aliyun_unit_mib,
                     gp_clusterfile_stats *stats, gp_err *err)
{
    json_t *docs = yamljson_load_file(path, err);
    if (!docs)
        return -1;
    gp_err e;
    int rc = clusterfile_apply(c, docs, aliyun_unit_mib, stats, &e);
    if (rc)
        gp_fail(err, "%s: %s", path, e.msg);
    json_decref(docs);
    return rc;
}
