/* fuzz_formats.c -- libFuzzer harness for the other systems' request formats
 * (model/formats.h) through their entry point podreq_decode: a Pod (JSON) under the
 * default policy names, with nvidia.com/gpu given to gpupack, and with every other
 * format refused; what decodes must hold the invariants placement relies on, fit a
 * heterogeneous node only with what each GPU has, say its failure in bounded text,
 * and turn into node-side annotations and webhook patches without trouble.
 *   make fuzz && build/fuzz/fuzz_formats test/fuzz/corpus/formats */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/annotations.h"
#include "model/formats.h"
#include "model/gpu.h"
#include "model/podreq.h"
#include "pack/placement.h"
#include "sched/webhook.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static gp_node node;

static void node_init(void)
{
    static const int64_t mem[4] = {81920, 16384, 15360, 1};
    static const char *const model[4] = {"A100-SXM4-80GB", "V100-16GB", "Tesla-T4", "tiny"};
    memset(&node, 0, sizeof node);
    strcpy(node.name, "n");
    node.ngpus = 4;
    for (int i = 0; i < 4; i++) {
        node.gpus[i].info = (gp_gpu_info){.mem_total = mem[i], .core_total = GP_CORE_FULL,
                                          .index = i, .healthy = true};
        node.gpus[i].info.model = gp_model_intern(model[i]);
        strcpy(node.gpus[i].info.uuid, "GPU-x");
        node.gpus[i].info.uuid[4] = (char)('0' + i);
    }
    node.gpus[2].mem_used = 4096;   /* something already there */
    node.gpus[2].core_used = 300;
    node.gpus[2].pods = 1;
}

static void check_req(const gp_pod_req *r)
{
    if (r->nctrs < 0 || r->nctrs > GP_MAX_CTRS || r->profile >= GP_PROFILE_COUNT)
        abort();
    for (int i = 0; i < r->nctrs; i++) {
        const gp_ctr_req *c = &r->ctrs[i];
        if (c->count < 1 || c->count > GP_MAX_GPUS_PER_CTR || c->mem_ppm < 0 ||
            c->mem_ppm > GP_PPM_FULL || c->mem_mib < 0 || c->ask > GP_ASK_SHARE)
            abort();
        if (r->profile >= GP_PROFILE_KAI && (c->core < 0 || c->core > GP_CORE_FULL))
            abort();
        if (r->profile >= GP_PROFILE_KAI && c->mem_mib == 0 && c->mem_ppm == 0)
            abort();   /* another system's request always asks memory */
        for (int g = 0; g < node.ngpus; g++) {
            int64_t need = gp_ctr_mem_on(c, node.gpus[g].info.mem_total);
            if (c->mem_ppm && (need < 1 || need > node.gpus[g].info.mem_total))
                abort();
        }
        char text[96];
        formats_describe(r->profile, c, gp_model_name(node.gpus[i % 4].info.model), 12345, text, sizeof text);
        if (strlen(text) >= sizeof text)
            abort();
    }
}

/* A fit gives each container what it asks on every GPU it got, within free room. */
static void check_fit(const json_t *pod, const gp_pod_req *r, const gp_resource_names *names)
{
    gp_place_opts o;
    placement_default_opts(&o);
    gp_assignment a;
    gp_fit_fail why;
    if (placement_fit(&node, r, &o, &a, &why) < 0) {
        if (strlen(why.reason) >= sizeof why.reason)
            abort();
        return;
    }
    /* placement answers regular containers first, then init ones, each in request order */
    const gp_ctr_req *order[GP_MAX_CTRS];
    int no = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < r->nctrs; k++)
            if (r->ctrs[k].init == (pass == 1))
                order[no++] = &r->ctrs[k];
    if (a.nctrs != no)
        abort();
    for (int c = 0; c < a.nctrs; c++) {
        const gp_ctr_req *cr = order[c];
        if (strcmp(cr->name, a.ctrs[c].name) != 0 || a.ctrs[c].ngpus != cr->count)
            abort();
        for (int g = 0; g < a.ctrs[c].ngpus; g++) {
            const gp_gpu *gpu = &node.gpus[gp_node_gpu_pos(&node, a.ctrs[c].gpus[g].index)];
            if (a.ctrs[c].gpus[g].mem_mib != gp_ctr_mem_on(cr, gpu->info.mem_total) ||
                a.ctrs[c].gpus[g].mem_mib > gpu->info.mem_total - gpu->mem_used)
                abort();
        }
    }
    json_t *ann = annotations_build(&a, &node, r->profile, 1024, "p", 1);
    annotations_add_containers(ann, pod, &a, &node, names);
    formats_plugin_annotations(ann, pod, r->profile, &a, &node, 1700000000000000000LL);
    json_decref(ann);
}

static void run(const json_t *pod, const gp_resource_names *names)
{
    gp_pod_req r;
    gp_err err = {{0}};
    if (podreq_decode(pod, names, &r, &err) < 0) {
        if (!err.msg[0])
            abort();
        return;
    }
    check_req(&r);
    /* the per-container view agrees with the pod's: every container it says
     * asks is one of the request's (the aliyun profile merges them into one) */
    static const char *const lists[] = {"containers", "initContainers"};
    for (int l = 0; l < 2; l++) {
        size_t n = json_array_size(json_object_get(json_object_get(pod, "spec"), lists[l]));
        for (size_t i = 0; i < n && i < 64; i++) {
            gp_ctr_req one;
            gp_profile f;
            if (podreq_container(pod, l == 1, i, names, &one, &f, &err) != 1 ||
                r.profile == GP_PROFILE_ALIYUN)
                continue;
            bool found = false;
            for (int k = 0; k < r.nctrs; k++)
                found |= strcmp(r.ctrs[k].name, one.name) == 0;
            if (!found || f != r.profile)
                abort();
        }
    }
    check_fit(pod, &r, names);
    json_t *warnings = json_array();
    json_decref(webhook_patch(pod, names, warnings));
    json_decref(warnings);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    if (!ready) {
        node_init();
        ready = 1;
    }
    json_t *pod = json_loadb((const char *)data, size, 0, NULL);
    if (!pod)
        return 0;
    gp_resource_names names;
    podreq_default_names(&names);
    run(pod, &names);
    names.nvidia_gpu = true;
    run(pod, &names);
    names.formats = 0;
    names.nvidia_gpu = false;
    run(pod, &names);
    json_decref(pod);
    return 0;
}
