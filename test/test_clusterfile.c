/* test_clusterfile.c -- the embedded cluster file (kubectl get nodes,pods -o yaml) into the store: example, captured NodeList, edge cases, errors. */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "pack/cluster.h"
#include "livetest.h"
#include "pack/clusterfile.h"
#include "lib/util.h"
#include "lib/yamljson.h"

#define FIX "test/fixtures/decode/"

typedef struct {
    const char *node;
    const char *source;
    int ngpus;
    int64_t mem0;          /* memory of the first GPU */
    int pos;               /* a GPU position to check usage on */
    int64_t used_mem;
    int used_core;
} node_want;

typedef struct {
    const char *file;
    int nodes, gpus, pods;
    node_want want[5];
} load_case;

static const load_case load_cases[] = {
    {"examples/cluster.yaml", 5, 12, 1,
     {{"node-a100", "gpupack", 4, 81920, 0, 20480, 300},
      {"node-hami", "hami", 2, 32768, 1, 0, 0},
      {"node-t4", "gfd", 4, 15360, 3, 0, 0},
      {"node-aliyun", "aliyun", 2, 16384, 0, 0, 0},
      {"node-cpu", "", 0, 0, 0, 0, 0}}},
    /* the NodeList the API server returned, as JSON */
    {FIX "nodes-list.json", 3, 10, 0,
     {{"node-gpupack", "gpupack", 4, 40960, 3, 0, 0},
      {"node-nfd", "gfd", 4, 16384, 0, 0, 0},
      {"node-aliyun", "aliyun", 2, 16384, 1, 0, 0}}},
    /* malformed inventory -> no GPUs; aliyun pod on GPU 1 (4 GiB); terminal,
     * broken and GPU-less pods hold nothing; a pod without uid still counts */
    {FIX "cluster-mixed.yaml", 2, 2, 2,
     {{"node-bad", "", 0, 0, 0, 0, 0},
      {"node-ali", "aliyun", 2, 8192, 1, 4096, 0},
      {"node-ali", "aliyun", 2, 8192, 0, 2048, 500}}},
};

START_TEST(loads)
{
    const load_case *c = &load_cases[_i];
    gp_cluster *cl = cluster_new();
    gp_clusterfile_stats st = {-1, -1, -1};
    gp_err err = {{0}};
    ck_assert_msg(clusterfile_load(cl, c->file, 1024, &st, &err) == 0, "%s: %s", c->file, err.msg);
    ck_assert_int_eq(st.nodes, c->nodes);
    ck_assert_int_eq(st.gpus, c->gpus);
    ck_assert_int_eq(st.pods, c->pods);
    cluster_rdlock(cl);
    ck_assert_uint_eq(cluster_rd_node_count(cl), (size_t)c->nodes);
    for (size_t i = 0; i < GP_ARRAY_LEN(c->want) && c->want[i].node; i++) {
        const node_want *w = &c->want[i];
        const gp_node *n = cluster_rd_node(cl, w->node);
        ck_assert_msg(n != NULL, "%s: no node %s", c->file, w->node);
        ck_assert_int_eq(n->ngpus, w->ngpus);
        if (w->ngpus) {
            ck_assert_str_eq(n->source, w->source);
            ck_assert_int_eq(n->gpus[0].info.mem_total, w->mem0);
            ck_assert_msg(n->gpus[w->pos].mem_used == w->used_mem &&
                              n->gpus[w->pos].core_used == w->used_core,
                          "%s/%d: used %lld MiB %d, want %lld %d", w->node, w->pos,
                          (long long)n->gpus[w->pos].mem_used, n->gpus[w->pos].core_used,
                          (long long)w->used_mem, w->used_core);
        }
    }
    cluster_unlock(cl);
    cluster_free(cl);
}
END_TEST

/* The pods of cluster-mixed.yaml as the store records them. */
START_TEST(pod_records)
{
    gp_cluster *cl = cluster_new();
    gp_clusterfile_stats st;
    gp_err err = {{0}};
    ck_assert_msg(clusterfile_load(cl, FIX "cluster-mixed.yaml", 1024, &st, &err) == 0, "%s",
                  err.msg);
    gp_assignment a;
    gp_pod_state state;
    ck_assert_int_eq(cluster_pod_get(cl, "11111111-0000-4000-8000-000000000001", &a, &state), 0);
    ck_assert_int_eq(state, GP_POD_BOUND);
    ck_assert_str_eq(a.node, "node-ali");
    ck_assert_int_eq(a.ctrs[0].gpus[0].index, 1);
    ck_assert_int_eq(a.ctrs[0].gpus[0].mem_mib, 4096);
    /* hand-written pods without a uid are keyed namespace/name */
    ck_assert_int_eq(cluster_pod_get(cl, "default/solo", &a, &state), 0);
    ck_assert_int_eq(a.ctrs[0].gpus[0].core, 500);
    ck_assert_int_eq(cluster_pod_get(cl, "11111111-0000-4000-8000-000000000002", &a, &state), -1);
    ck_assert_int_eq(cluster_pod_get(cl, "11111111-0000-4000-8000-000000000003", &a, &state), -1);
    ck_assert_int_eq(cluster_pod_get(cl, "11111111-0000-4000-8000-000000000004", &a, &state), -1);
    cluster_free(cl);
}
END_TEST

/* GiB vs MiB for aliyun capacities and annotations. */
START_TEST(aliyun_unit)
{
    gp_cluster *cl = cluster_new();
    gp_clusterfile_stats st;
    gp_err err = {{0}};
    ck_assert(clusterfile_load(cl, FIX "cluster-mixed.yaml", 1, &st, &err) == 0);
    cluster_rdlock(cl);
    const gp_node *n = cluster_rd_node(cl, "node-ali");
    ck_assert_int_eq(n->gpus[1].info.mem_total, 8);
    ck_assert_int_eq(n->gpus[1].mem_used, 4);
    cluster_unlock(cl);
    cluster_free(cl);
}
END_TEST

typedef struct {
    const char *yaml;
    const char *msg;
} bad_case;

static const bad_case bad_cases[] = {
    {"hello\n", "document 1: not a Kubernetes object"},
    {"- kind: Node\n", "document 1: not a Kubernetes object"},
    {"apiVersion: v1\nmetadata: {name: x}\n", "document 1: object without a kind"},
    {"kind: 7\n", "document 1: object without a kind"},
    {"---\nkind: ConfigMap\n---\nkind: List\n", "document 2: List without an items array"},
    {"kind: NodeList\nitems: {}\n", "document 1: NodeList without an items array"},
    {"kind: List\nitems: [{kind: Node, metadata: {name: a}}, 5]\n", "document 1.items[1]: not a Kubernetes object"},
    {"kind: Node\nmetadata: {}\n", "document 1: Node without a valid metadata.name"},
    {"kind: Node\nmetadata: {name: \"\"}\n", "Node without a valid metadata.name"},
    {"kind: Node\nmetadata: {name: 5}\n", "Node without a valid metadata.name"},
    {"kind: PodList\nitems: [{kind: Pod, metadata: {namespace: x}}]\n", "document 1.items[0]: Pod without metadata.name"},
    {"kind: List\nitems: [{kind: List, items: [{kind: List, items: [{kind: List, items: []}]}]}]\n",
     "List without an items array"},
};

START_TEST(rejects)
{
    const bad_case *c = &bad_cases[_i];
    gp_err err = {{0}};
    json_t *docs = yamljson_parse(c->yaml, strlen(c->yaml), &err);
    ck_assert_msg(docs != NULL, "case %d: %s", _i, err.msg);
    gp_cluster *cl = cluster_new();
    gp_clusterfile_stats st = {-1, -1, -1};
    ck_assert_msg(clusterfile_apply(cl, docs, 1024, &st, &err) == -1, "case %d accepted", _i);
    ck_assert_msg(strstr(err.msg, c->msg) != NULL, "case %d: message \"%s\" lacks \"%s\"", _i,
                  err.msg, c->msg);
    ck_assert_int_eq(st.nodes, -1);   /* stats are left alone on failure */
    cluster_free(cl);
    json_decref(docs);
}
END_TEST

/* Load errors carry the path: missing file, YAML error, bad document. */
START_TEST(load_errors)
{
    static const struct {
        const char *yaml;   /* NULL: the file does not exist */
        const char *msg;
    } cases[] = {
        {NULL, ": No such file"},
        {"a: [1\n", ":2:1:"},
        {"kind: List\n", ": document 1: List without an items array"},
    };
    char *dir = livetest_tmpdir();
    ck_assert_ptr_nonnull(dir);
    for (size_t i = 0; i < GP_ARRAY_LEN(cases); i++) {
        char *path = xasprintf("%s/c%zu.yaml", dir, i);
        if (cases[i].yaml)
            ck_assert(livetest_write(path, cases[i].yaml, strlen(cases[i].yaml)) == 0);
        gp_cluster *cl = cluster_new();
        gp_err err = {{0}};
        ck_assert_int_eq(clusterfile_load(cl, path, 1024, NULL, &err), -1);
        ck_assert_msg(strncmp(err.msg, path, strlen(path)) == 0, "%s", err.msg);
        ck_assert_msg(strstr(err.msg, cases[i].msg) != NULL, "%zu: %s", i, err.msg);
        cluster_free(cl);
        free(path);
    }
    livetest_rmtree(dir);
    free(dir);
}
END_TEST

Suite *suite_clusterfile(void);
Suite *suite_clusterfile(void)
{
    Suite *s = suite_create("clusterfile");
    TCase *t = tcase_create("load");
    tcase_add_loop_test(t, loads, 0, (int)GP_ARRAY_LEN(load_cases));
    tcase_add_test(t, pod_records);
    tcase_add_test(t, aliyun_unit);
    tcase_add_loop_test(t, rejects, 0, (int)GP_ARRAY_LEN(bad_cases));
    tcase_add_test(t, load_errors);
    suite_add_tcase(s, t);
    return s;
}
