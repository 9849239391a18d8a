/* fuzz_pdb.c -- libFuzzer harness for what preemption decodes from the API
 * server: the input is a JSON array [pdb, pod, pod, ...]; the budget and each
 * pod (priority, times, nomination, labels, a consolidation's record of held
 * places) must decode without crashing, a record that decodes must encode and
 * decode to itself, and the violation count must be computable over them. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/heldrec.h"
#include "model/pdb.h"
#include "model/podprio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *arr = json_loadb((const char *)data, size, 0, NULL);
    if (!json_is_array(arr) || json_array_size(arr) == 0 || json_array_size(arr) > 16) {
        json_decref(arr);
        return 0;
    }
    gp_err err = {0};
    gp_pdb *b = pdb_decode(json_array_get(arr, 0), &err);
    if (!b && !err.msg[0])
        abort();
    size_t n = json_array_size(arr) - 1;
    gp_pdb_pod pods[16];
    static char labels[16][GP_LABELS_MAX];
    char names[16][16];
    for (size_t i = 0; i < n; i++) {
        const json_t *pod = json_array_get(arr, i + 1);
        gp_pod_prio pp;
        podprio_decode(pod, &pp);
        if (strlen(pp.nominated) >= sizeof pp.nominated)
            abort();
        (void)podprio_labels(pod, labels[i], sizeof labels[i]);
        gp_held_rec r, back;
        if (heldrec_from_pod(pod, &r, &err) == 1) {
            char *text = heldrec_encode(&r);
            if (heldrec_decode(text, &back, &err) != 0 || back.n != r.n || back.at_ns != r.at_ns)
                abort();
            for (int k = 0; k < r.n; k++)
                if (memcmp(&back.p[k], &r.p[k], sizeof r.p[k]) != 0)
                    abort();
            free(text);
            heldrec_clear(&back);
            heldrec_clear(&r);
        }
        snprintf(names[i], sizeof names[i], "p%zu", i);
        pods[i] = (gp_pdb_pod){"ns", names[i], labels[i]};
    }
    bool violating[16];
    if (b) {
        gp_pdb *const list[] = {b};
        pdb_violations(list, 1, pods, n, violating);
        for (size_t i = 0; i < n; i++)
            (void)pdb_covered(list, 1, pods[i].ns, pods[i].labels);
    }
    pdb_free(b);
    json_decref(arr);
    return 0;
}
