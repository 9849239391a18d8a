/* testutil.c -- builders for nodes and requests, fixture loading (tests only). */
#include "testutil.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

gp_node *tu_node(const char *name, int n, const int64_t *mem, const int64_t *used_mem,
                 const int *used_core)
{
    gp_node *node = xcalloc(1, gp_node_size(n));
    gp_strlcpy(node->name, name, sizeof node->name);
    node->ngpus = n;
    for (int i = 0; i < n; i++) {
        gp_gpu *g = &node->gpus[i];
        g->info.index = i;
        g->info.mem_total = mem[i];
        g->info.core_total = GP_CORE_FULL;
        g->info.healthy = true;
        gp_strlcpy(g->info.model, "A100-SXM4-80GB", sizeof g->info.model);
        snprintf(g->info.uuid, sizeof g->info.uuid, "GPU-%s-%d", name, i);
        g->mem_used = used_mem ? used_mem[i] : 0;
        g->core_used = used_core ? used_core[i] : 0;
        g->pods = (g->mem_used || g->core_used) ? 1 : 0;
    }
    return node;
}

void tu_inventory(gp_inventory *inv, int n, int64_t mem, const char *model)
{
    memset(inv, 0, sizeof *inv);
    gp_strlcpy(inv->source, "gpupack", sizeof inv->source);
    inv->n = n;
    for (int i = 0; i < n; i++) {
        inv->gpus[i].index = i;
        inv->gpus[i].mem_total = mem;
        inv->gpus[i].core_total = GP_CORE_FULL;
        inv->gpus[i].healthy = true;
        gp_strlcpy(inv->gpus[i].model, model, sizeof inv->gpus[i].model);
        snprintf(inv->gpus[i].uuid, sizeof inv->gpus[i].uuid, "GPU-%d", i);
    }
}

void tu_add_ctr(gp_pod_req *r, const char *name, bool init, int count, int64_t mem, int core)
{
    gp_ctr_req *c = &r->ctrs[r->nctrs++];
    memset(c, 0, sizeof *c);
    gp_strlcpy(c->name, name, sizeof c->name);
    c->init = init;
    c->count = count;
    c->mem_mib = mem;
    c->core = core;
}

void tu_req(gp_pod_req *r, const char *uid, int count, int64_t mem, int core_permille)
{
    memset(r, 0, sizeof *r);
    gp_strlcpy(r->uid, uid, sizeof r->uid);
    gp_strlcpy(r->ns, "default", sizeof r->ns);
    snprintf(r->name, sizeof r->name, "pod-%s", uid);
    tu_add_ctr(r, "main", false, count, mem, core_permille);
}

json_t *tu_load_json(const char *path)
{
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    ck_assert_msg(j != NULL, "cannot load %s: %s", path, je.text);
    return j;
}

const char *tu_shared(const char *rel)
{
    static char buf[1024];
    const char *root = getenv("GPUPACK_SHARED");
    snprintf(buf, sizeof buf, "%s/%s", root && *root ? root : "../shared", rel);
    return buf;
}
