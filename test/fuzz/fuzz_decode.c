/* fuzz_decode.c -- libFuzzer harness for the pure decoders: pods, nodes, annotations, YAML.
 *
 * Not a Check suite (no test_ prefix). Build and run by hand from the repo root:
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -std=c11 \
 *     -D_GNU_SOURCE -Iinclude test/fuzz/fuzz_decode.c src/podreq.c src/quantity.c \
 *     src/inventory.c src/annotations.c src/gpu.c src/yamljson.c src/strmap.c src/util.c \
 *     -ljansson -lyaml -lm -o build/dec/fuzz_decode
 *   mkdir -p build/dec/corpus && build/dec/fuzz_decode -max_len=4096 -rss_limit_mb=2048 \
 *     -max_total_time=180 build/dec/corpus test/fuzz/seeds
 *
 * The first byte picks the target; the rest is its input. Every decoder must
 * return 0/1/-1 (never crash, leak or overflow); what decodes is pushed on
 * through the consumers (holds, annotation round trip) so that values the
 * decoders let through are exercised too. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "annotations.h"
#include "gpu.h"
#include "inventory.h"
#include "podreq.h"
#include "quantity.h"
#include "yamljson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void use_assignment(const gp_assignment *a)
{
    gp_hold holds[GP_MAX_GPUS_PER_NODE];
    int n = gp_assignment_holds(a, holds);
    if (n < 0 || n > GP_MAX_GPUS_PER_NODE)
        abort();
    /* round trip: what decodes must rebuild and decode to the same thing */
    json_t *ann = annotations_build(a, NULL, GP_PROFILE_NATIVE, 1024, "p", 1);
    gp_assignment b;
    gp_err err;
    if (annotations_decode(ann, a->node, 1024, &b, &err) != 1)
        abort();
    if (b.nctrs != a->nctrs)
        abort();
    json_decref(ann);
}

static void on_json(const json_t *v)
{
    gp_err err;
    gp_resource_names names;
    podreq_default_names(&names);
    gp_pod_req req;
    if (podreq_decode(v, &names, &req, &err) == 0) {
        for (int i = 0; i < req.nctrs; i++)
            (void)gp_ctr_mem_on(&req.ctrs[i], 40960);
        (void)gp_model_allowed(req.models, "A100-SXM4-40GB");
    }
    names.mem_unit_mib = 1024;
    names.aliyun_unit_mib = 1;
    if (podreq_decode(v, &names, &req, &err) < 0 && !err.msg[0])
        abort();
    gp_inventory inv;
    if (inventory_decode(v, 1024, &inv, &err) < 0 && !err.msg[0])
        abort();
    gp_assignment a;
    const json_t *ann = json_object_get(json_object_get(v, "metadata"), "annotations");
    if (!ann)
        ann = v;
    int rc = annotations_decode(ann, "node-x", 1024, &a, &err);
    if (rc == 1)
        use_assignment(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int mode = data[0] % 4;
    char *text = malloc(size);
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    gp_err err;
    switch (mode) {
    case 0: {   /* JSON object: pod, node, annotations */
        json_error_t je;
        json_t *v = json_loadb(text, size - 1, 0, &je);
        if (v)
            on_json(v);
        json_decref(v);
        break;
    }
    case 1: {   /* YAML stream; every document through the JSON decoders */
        json_t *docs = yamljson_parse(text, size - 1, &err);
        if (!docs && !err.msg[0])
            abort();
        size_t i;
        json_t *d;
        json_array_foreach(docs, i, d) on_json(d);
        json_decref(docs);
        break;
    }
    case 2: {   /* the assignment annotation's text itself */
        json_t *ann = json_pack("{ss}", GP_ANN_ASSIGNMENT, text);
        if (ann) {
            gp_assignment a;
            if (annotations_decode(ann, "n", 1024, &a, &err) == 1)
                use_assignment(&a);
        }
        json_decref(ann);
        break;
    }
    default: {  /* quantities, and the aliyun annotation pair */
        int64_t v;
        (void)quantity_parse_milli(text, &v, &err);
        (void)quantity_parse_int(text, &v, &err);
        json_t *ann = json_pack("{ssss}", GP_ANN_ALIYUN_IDX, text, GP_ANN_ALIYUN_POD, text);
        if (ann) {
            gp_assignment a;
            if (annotations_decode(ann, "n", 1024, &a, &err) == 1)
                use_assignment(&a);
        }
        json_decref(ann);
        break;
    }
    }
    free(text);
    return 0;
}
