/* fuzz_extargs.c -- differential fuzzing of the fast ExtenderArgs scanner
 * against jansson: whenever the scanner accepts a body, jansson must accept
 * it too and agree on Pod, NodeNames and Nodes.
 *
 * The scanner hands back a reduced Pod (extargs.h): it must equal what the
 * jansson trimmer keeps by the same table (k8s_obs_pod_keep); that the
 * reduced pod decodes like the whole one is test/test_podmeaning.c.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -std=c11 -D_GNU_SOURCE -Iinclude \
 *     test/fuzz/fuzz_extargs.c src/lib/extargs.c src/lib/jsonkeep.c src/model/k8s_obs.c ... -ljansson
 *   /tmp/fuzz_extargs -max_total_time=180 -max_len=4096 /tmp/extargs-corpus
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/extargs.h"
#include "model/k8s_obs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gp_extargs a;
    if (extargs_scan((const char *)data, size, 1000, k8s_obs_pod_keep, &a) != 0)
        return 0;
    json_t *full = json_loadb((const char *)data, size, 0, NULL);
    if (!full || !json_is_object(full))
        abort();   /* the scanner accepted what jansson refuses */
    const json_t *pod = json_object_get(full, "Pod");
    if (json_is_null(pod))
        pod = NULL;
    if ((pod == NULL) != (a.pod == NULL))
        abort();
    if (pod) {
        /* the scanner keeps exactly what the jansson trimmer keeps by the same table */
        json_t *ref = jsonkeep_trim(pod, k8s_obs_pod_keep);
        bool same = json_equal(ref, a.pod);
        json_decref(ref);
        if (!same)
            abort();
    }
    const json_t *nodes = json_object_get(full, "Nodes");
    if (json_is_null(nodes))
        nodes = NULL;
    if ((nodes == NULL) != (a.nodes == NULL) || (nodes && !json_equal(nodes, a.nodes)))
        abort();
    const json_t *names = json_object_get(full, "NodeNames");
    if (json_is_array(names) != a.has_names)
        abort();
    if (a.has_names) {
        if (json_array_size(names) != a.nnames)
            abort();
        for (size_t i = 0; i < a.nnames; i++)
            if (!json_is_string(json_array_get(names, i)) ||
                strcmp(json_string_value(json_array_get(names, i)), a.names[i]) != 0)
                abort();
    }
    json_decref(full);
    extargs_free(&a);
    return 0;
}
