/* fuzz_verbs.c -- libFuzzer harness for the extender verbs as kube-scheduler
 * (or anyone who reaches the port) calls them: request bodies straight into
 * extender_filter / _filter_readonly / _prioritize / _preempt / _bind, in
 * embedded mode (a bind records the pod as bound), over the nodes the
 * captured samples were taken against, and into the admission webhook.
 *
 * The input is a sequence of calls separated by a blank line ("\n\n"); the
 * first byte of each picks the verb (f filter, r read-only filter,
 * p prioritize, e preempt, b bind, w webhook; anything else: filter) and the rest is the
 * body, raw. Calls share one map, so a filter, then a bind, then another
 * filter reach the states that binds leave. What must hold:
 * - every call answers a body that is JSON (kube-scheduler decodes it),
 *   with an HTTP status the server knows;
 * - no GPU is ever over its capacity: whatever the bodies say, the verbs
 *   alone never over-commit a GPU (only annotations written elsewhere can).
 *
 *   make fuzz-short FUZZ_ONLY=verbs   (or build/fuzz/fuzz_verbs -max_total_time=60 test/fuzz/corpus/verbs)
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "model/podreq.h"
#include "pack/clusterfile.h"
#include "sched/extender.h"
#include "sched/webhook.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_CALLS 8
#define NODES "test/fixtures/captured/wire/nodes/list.trimmed.json"

static json_t *nodes;
static gp_resource_names names;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    gp_log_set_level(GP_LOG_ERROR);
    podreq_default_names(&names);
    json_error_t je;
    nodes = json_load_file(NODES, 0, &je);
    if (!nodes)
        fprintf(stderr, "fuzz_verbs: %s: %s; the cluster stays empty\n", NODES, je.text);
    return 0;
}

static gp_cluster *cluster_up(void)
{
    gp_cluster *c = cluster_new();
    if (nodes) {
        json_t *docs = json_pack("[O]", nodes);
        gp_err err;
        if (clusterfile_apply(c, docs, 1024, NULL, &err) != 0)
            abort();   /* the fixture loads in the unit tests */
        json_decref(docs);
    }
    return c;
}

static void call(gp_extender *e, gp_cluster *c, char verb, const char *body, size_t len)
{
    char *out = NULL;
    int status;
    switch (verb) {
    case 'r': status = extender_filter_readonly(e, body, len, &out); break;
    case 'p': status = extender_prioritize(e, body, len, &out); break;
    case 'e': status = extender_preempt(e, body, len, &out); break;
    case 'b': status = extender_bind(e, body, len, &out); break;
    case 'w': status = webhook_review(body, len, &names, &out); break;
    default: status = extender_filter(e, body, len, &out); break;
    }
    if (!out || (status != 200 && status != 400 && status != 413 && status != 503))
        abort();
    json_t *j = json_loads(out, 0, NULL);
    if (!j)
        abort();
    json_decref(j);
    free(out);
    gp_cluster_stats st;
    cluster_stats(c, &st);
    if (st.gpus_over)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gp_cluster *c = cluster_up();
    gp_extender *e = extender_new(c, NULL);
    /* a NUL-terminated copy to cut: bodies are passed with their length */
    char *buf = malloc(size + 1);
    if (!buf)
        abort();
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *p = buf, *end = buf + size;
    for (int n = 0; n < MAX_CALLS && p < end; n++) {
        char *sep = memmem(p, (size_t)(end - p), "\n\n", 2);
        char *stop = sep ? sep : end;
        if (stop > p)
            call(e, c, *p, p + 1, (size_t)(stop - p - 1));
        p = sep ? sep + 2 : end;
    }
    free(buf);
    extender_free(e);
    cluster_free(c);
    return 0;
}
