/* fuzz_policy.c -- libFuzzer harness for the policy parser and set builder.
 *
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude \
 *     test/fuzz/fuzz_policy.c src/policy/policy.c src/policy/policy_yaml.c src/policy/policy_tz.c \
 *     src/pack/placement.c src/model/podreq.c src/pack/frag.c src/model/gpu.c src/model/quantity.c src/lib/util.c src/lib/log.c \
 *     $(pkg-config --libs yaml-0.1 jansson) -lm -o build/fuzz_policy
 *   build/fuzz_policy -max_total_time=300 test/fixtures/policy/bad test/fixtures/policy/good
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "policy/policy.h"
#include "policy/policy_yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gp_policy **pols = NULL;
    int n = 0;
    policy_diag diag = {0};
    (void)policy_yaml_parse("fuzz.yaml", (const char *)data, size, &pols, &n, &diag);
    gp_policy_set *set = NULL;
    if (policy_set_build(pols, n, &diag, &set) == 0) {
        gp_policy_view view;
        gp_err err;
        json_t *labels = json_pack("{s:s,s:s}", "tier", "inference", "app", "x");
        for (int i = 0; i < policy_set_count(set); i++)
            (void)policy_select(set, "serving", labels, policy_set_name_at(set, i),
                                (time_t)size * 7919, &view, &err);
        (void)policy_select(set, "serving", labels, NULL, (time_t)size * 7919, &view, &err);
        json_decref(labels);
    }
    policy_set_unref(set);
    policy_diag_free(&diag);
    return 0;
}
