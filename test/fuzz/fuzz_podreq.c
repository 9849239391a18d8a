/* fuzz_podreq.c -- libFuzzer harness for pod requests: a Pod (JSON) through
 * podreq_decode under the default names and under renamed units, and what
 * decodes through the consumers (per-GPU memory, model matching). */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/gpu.h"
#include "model/podreq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void decode(const json_t *pod, const gp_resource_names *names)
{
    gp_pod_req req;
    gp_err err = {0};
    if (podreq_decode(pod, names, &req, &err) < 0) {
        if (!err.msg[0])
            abort();
        return;
    }
    if (req.nctrs < 0 || req.nctrs > GP_MAX_CTRS)
        abort();
    for (int i = 0; i < req.nctrs; i++)
        (void)gp_ctr_mem_on(&req.ctrs[i], 40960);
    (void)gp_model_allowed(req.models, "A100-SXM4-40GB");
    gp_pod p;
    if (pod_decode(pod, &p, &err) == 0 && (strcmp(p.uid, req.uid) != 0 || strcmp(p.ns, req.ns) != 0))
        abort();   /* the request is built from the one pod decode */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *pod = json_loadb((const char *)data, size, 0, NULL);
    if (!pod)
        return 0;
    gp_resource_names names;
    podreq_default_names(&names);
    decode(pod, &names);
    names.mem_unit_mib = 1024;
    names.aliyun_unit_mib = 1;
    decode(pod, &names);
    json_decref(pod);
    return 0;
}
