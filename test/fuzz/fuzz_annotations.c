/* fuzz_annotations.c -- libFuzzer harness for pod annotations: the first byte
 * picks the form (a whole annotations object as JSON, the gpupack.io/assignment
 * text, or the ALIYUN_COM_GPU_MEM_IDX/_POD pair); whatever decodes must
 * convert to holds within bounds and survive a rebuild-and-decode round trip. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/annotations.h"
#include "model/gpu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void use_assignment(const gp_assignment *a)
{
    gp_hold holds[GP_MAX_GPUS_PER_NODE];
    int n = gp_assignment_holds(a, holds);
    if (n < 0 || n > GP_MAX_GPUS_PER_NODE)
        abort();
    json_t *ann = annotations_build(a, NULL, GP_PROFILE_NATIVE, 1024, "p", 1);
    gp_assignment b;
    gp_err err = {0};
    if (annotations_decode(ann, a->node, 1024, &b, &err) != 1 || b.nctrs != a->nctrs)
        abort();
    json_decref(ann);
}

static void decode(const json_t *ann)
{
    gp_assignment a;
    gp_err err = {0};
    int rc = annotations_decode(ann, "node-x", 1024, &a, &err);
    if (rc == 1)
        use_assignment(&a);
    else if (rc < 0 && !err.msg[0])
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    char *text = malloc(size);
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    json_t *ann = NULL;
    switch (data[0] % 3) {
    case 0:
        ann = json_loadb(text, size - 1, 0, NULL);
        break;
    case 1:
        ann = json_pack("{ss}", GP_ANN_ASSIGNMENT, text);
        break;
    default:
        ann = json_pack("{ssss}", GP_ANN_ALIYUN_IDX, text, GP_ANN_ALIYUN_POD, text);
        break;
    }
    if (ann)
        decode(ann);
    json_decref(ann);
    free(text);
    return 0;
}
