/* test_explain.c -- why a pod fits no node: the what-if per node, grouping
 * by reason, and the whole explain over the example cluster (in process and
 * through POST /explain). */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pack/clusterfile.h"
#include "sched/explain.h"
#include "cli/explain_cli.h"
#include "fakeapi.h"
#include "policy/policy_store.h"
#include "http/server.h"
#include "testutil.h"
#include "lib/yamljson.h"

/* ------------------------------------------------------------ what-if -- */

typedef struct hint_case {
    const char *what;
    int ngpus;
    int64_t mem;                     /* every GPU */
    explain_hold holds[4];
    int nholds;
    int count;                       /* the pod: GPUs x MiB */
    int64_t need;
    const char *want[3];             /* substrings the hint must have */
    const char *not_want[2];         /* and must not */
} hint_case;

static const hint_case hint_cases[] = {
    {"one pod in the way", 2, 81920, {{"ns/a", 0, 20480, 300, false}}, 1, 2, 70000,
     {"fits if this pod left the node: ns/a (20480 MiB, 30 %)"}, {"never"}},
    {"largest first, but only what is needed", 2, 81920,
     {{"ns/a", 0, 50000, 0, false}, {"ns/c", 0, 25000, 0, false}, {"ns/b", 1, 45000, 0, false}}, 3, 1, 70000,
     {"this pod", "ns/b (45000 MiB"}, {"ns/a", "ns/c"}},
    {"two pods on one GPU", 1, 81920, {{"ns/a", 0, 40000, 0, false}, {"ns/b", 0, 30000, 0, false}}, 2, 1, 75000,
     {"these pods", "ns/a (40000 MiB", "ns/b (30000 MiB"}, {"never"}},
    {"a pod on two GPUs counts once", 2, 81920, {{"ns/x", 0, 40000, 0, false}, {"ns/x", 1, 40000, 0, false}}, 2,
     2, 60000, {"ns/x (80000 MiB, 0 %)"}, {"these pods"}},
    {"too big for any GPU", 2, 32768, {{"ns/a", 0, 1000, 0, false}}, 1, 1, 40000,
     {"never, even with every GPU free (2 healthy GPUs, largest 32768 MiB)"}, {"ns/a"}},
    {"no GPUs", 0, 0, {{"", 0, 0, 0, false}}, 0, 1, 1000, {"no healthy GPU", "inventory"}, {"fits if"}},
};

START_TEST(hint_table)
{
    const hint_case *hc = &hint_cases[_i];
    int64_t mem[4] = {hc->mem, hc->mem, hc->mem, hc->mem};
    int64_t used[4] = {0};
    int core[4] = {0};
    for (int i = 0; i < hc->nholds; i++) {
        used[hc->holds[i].index] += hc->holds[i].mem_mib;
        core[hc->holds[i].index] += hc->holds[i].core;
    }
    gp_node *n = tu_node("n", hc->ngpus, mem, used, core);
    for (int i = 0; i < hc->nholds; i++)
        n->gpus[hc->holds[i].index].pods++;
    gp_pod_req req;
    tu_req(&req, "p", hc->count, hc->need, 0);
    gp_place_opts opts;
    placement_default_opts(&opts);
    gp_assignment a;
    ck_assert_msg(placement_fit(n, &req, &opts, &a, NULL) != 0, "%s: the pod must not fit now",
                  hc->what);
    char hint[1024];
    explain_hint(n, hc->holds, hc->nholds, &req, &opts, hint, sizeof hint);
    for (int k = 0; k < 3 && hc->want[k]; k++)
        ck_assert_msg(strstr(hint, hc->want[k]), "%s: hint \"%s\" lacks \"%s\"", hc->what, hint,
                      hc->want[k]);
    for (int k = 0; k < 2 && hc->not_want[k]; k++)
        ck_assert_msg(!strstr(hint, hc->not_want[k]), "%s: hint \"%s\" has \"%s\"", hc->what, hint,
                      hc->not_want[k]);
    free(n);
}
END_TEST

/* ------------------------------------------------------------ grouping -- */

START_TEST(reason_keys)
{
    static const char *const cases[][2] = {
        {"largest free GPU has 2048 MiB, container main needs 4096 MiB per GPU",
         "largest free GPU has # MiB, container main needs # MiB per GPU"},
        {"most free compute on a GPU with enough memory is 20.0%, container main needs 30.0%",
         "most free compute on a GPU with enough memory is #%, container main needs #%"},
        {"", ""},
        {"no digits", "no digits"},
        /* one of something groups with several of it */
        {"1 GPU has 70000 MiB free, container train needs 2 of them",
         "# GPUs have # MiB free, container train needs # of them"},
        {"3 GPUs have 70000 MiB free, container train needs 2 of them",
         "# GPUs have # MiB free, container train needs # of them"},
        {"container c needs 1 GPU, node has 0 usable", "container c needs # GPUs, node has # usable"},
        {"all 1 GPU of the node is unhealthy", "all # GPUs of the node are unhealthy"},
        {"GPUs with room already host the policy's maximum of 1 pod",
         "GPUs with room already host the policy's maximum of # pods"},
        {"maximum of 4 pods", "maximum of # pods"},
        {"1 GPUx", "# GPUx"},
    };
    for (size_t i = 0; i < GP_ARRAY_LEN(cases); i++) {
        char key[256];
        explain_reason_key(cases[i][0], key, sizeof key);
        ck_assert_str_eq(key, cases[i][1]);
    }
    char tiny[4];
    explain_reason_key("abcdef", tiny, sizeof tiny);
    ck_assert_str_eq(tiny, "abc");
}
END_TEST

START_TEST(groups_by_kind_of_reason)
{
    json_t *ans = json_pack(
        "{s:[s],s:{s:s,s:s,s:s},s:{s:s}}", "NodeNames", "ok-1", "FailedNodes", "a",
        "largest free GPU has 2048 MiB, container main needs 4096 MiB per GPU", "b",
        "largest free GPU has 1024 MiB, container main needs 4096 MiB per GPU", "c",
        "most free compute on a GPU with enough memory is 20.0%, container main needs 30.0%",
        "FailedAndUnresolvableNodes", "cpu", "node has no GPUs known to gpupack");
    json_t *g = explain_group(ans);
    ck_assert_uint_eq(json_array_size(json_object_get(g, "fits")), 1);
    json_t *groups = json_object_get(g, "groups");
    ck_assert_uint_eq(json_array_size(groups), 3);
    json_t *first = json_array_get(groups, 0);   /* the largest group first */
    ck_assert_uint_eq(json_array_size(json_object_get(first, "nodes")), 2);
    ck_assert(json_is_false(json_object_get(first, "unresolvable")));
    bool unres = false;
    for (size_t i = 0; i < 3; i++) {
        json_t *x = json_array_get(groups, i);
        if (strcmp(json_string_value(json_object_get(x, "key")),
                   "node has no GPUs known to gpupack") == 0)
            unres = json_is_true(json_object_get(x, "unresolvable"));
    }
    ck_assert(unres);
    json_decref(g);
    json_decref(ans);
}
END_TEST

/* ------------------------------------------------- over the example cluster -- */

typedef struct fixture {
    gp_cluster *c;
    policy_store *ps;
    gp_extender *e;
} fixture;

static void fx_start(fixture *f)
{
    gp_err err;
    f->c = cluster_new();
    ck_assert_msg(clusterfile_load(f->c, "examples/cluster.yaml", 1024, NULL, &err) == 0, "%s",
                  err.msg);
    ck_assert_msg(policy_store_open("policies", &f->ps, &err) == 0, "%s", err.msg);
    gp_extender_config cfg = {.policies = policy_store_current, .policies_ud = f->ps};
    f->e = extender_new(f->c, &cfg);
}

static void fx_stop(fixture *f)
{
    extender_free(f->e);
    policy_store_free(f->ps);
    cluster_free(f->c);
}

static json_t *fixture_pod(json_t **docs)
{
    gp_err err;
    *docs = yamljson_load_file("test/fixtures/explain-pod.yaml", &err);
    ck_assert_msg(*docs != NULL, "%s", err.msg);
    const json_t *pod = explain_find_pod(*docs, "research", "trainer");
    ck_assert_ptr_nonnull(pod);
    return (json_t *)pod;
}

static const json_t *node_in(const json_t *ex, const char *name, const json_t **group)
{
    size_t i, k;
    const json_t *g, *n;
    json_array_foreach(json_object_get(ex, "groups"), i, g) {
        json_array_foreach(json_object_get(g, "nodes"), k, n) {
            if (strcmp(json_string_value(json_object_get(n, "node")), name) == 0) {
                *group = g;
                return n;
            }
        }
    }
    return NULL;
}

START_TEST(explain_example_cluster)
{
    fixture f;
    fx_start(&f);
    json_t *docs;
    json_t *pod = fixture_pod(&docs);
    gp_err err;
    json_t *ex = explain_pod(f.e, f.c, pod, &err);
    ck_assert_msg(ex != NULL, "%s", err.msg);
    ck_assert_str_eq(json_string_value(json_object_get(ex, "pod")), "research/trainer");
    ck_assert_str_eq(json_string_value(json_object_get(ex, "policy")), "default");
    ck_assert_uint_eq(json_array_size(json_object_get(ex, "fits")), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(ex, "nodes")), 5);
    const json_t *g;
    const json_t *a100 = node_in(ex, "node-a100", &g);
    ck_assert_ptr_nonnull(a100);
    ck_assert(json_is_false(json_object_get(g, "unresolvable")));
    ck_assert_str_eq(json_string_value(json_object_get(a100, "hint")),
                     "fits if this pod left the node: research/notebook-alice (20480 MiB, 30 %)");
    const json_t *t4 = node_in(ex, "node-t4", &g);
    ck_assert(json_is_true(json_object_get(g, "unresolvable")));
    ck_assert_uint_eq(json_array_size(json_object_get(g, "nodes")), 3);   /* t4, hami, aliyun */
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(t4, "hint")), "never"));
    const json_t *cpu = node_in(ex, "node-cpu", &g);
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(cpu, "hint")), "inventory"));
    json_decref(ex);
    /* a pod that fits: listed under fits; one that is not gpupack's: managed false */
    json_t *fr = tu_load_json("examples/filter-request.json");
    ex = explain_pod(f.e, f.c, json_object_get(fr, "Pod"), &err);
    ck_assert_msg(ex != NULL, "%s", err.msg);
    ck_assert_uint_eq(json_array_size(json_object_get(ex, "fits")), 4);
    ck_assert_str_eq(json_string_value(json_object_get(ex, "policy")), "inference");
    json_decref(ex);
    json_decref(fr);
    json_t *plain = json_pack("{s:{s:s,s:s},s:{s:[{s:s}]}}", "metadata", "name", "web",
                              "namespace", "default", "spec", "containers", "name", "c");
    ex = explain_pod(f.e, f.c, plain, &err);
    ck_assert_msg(ex != NULL, "%s", err.msg);
    ck_assert(json_is_false(json_object_get(ex, "managed")));
    json_decref(ex);
    json_decref(plain);
    /* a malformed request: the error filter would give */
    json_t *bad = json_deep_copy(pod);
    json_object_set_new(json_object_get(json_object_get(json_array_get(json_object_get(
                            json_object_get(bad, "spec"), "containers"), 0), "resources"),
                                        "limits"),
                        "gpupack.io/gpu-mem", json_string("1.5"));
    ck_assert_ptr_null(explain_pod(f.e, f.c, bad, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "fractional"));
    json_decref(bad);
    json_decref(docs);
    fx_stop(&f);
}
END_TEST

START_TEST(explain_over_http)
{
    fixture f;
    fx_start(&f);
    gp_err err;
    gp_server_config cfg = {.listen = "127.0.0.1:0"};
    gp_server *s = server_start(&cfg, f.e, f.c, NULL, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    json_t *docs;
    char *body = json_dumps(fixture_pod(&docs), JSON_COMPACT);
    char url[128];
    long st;
    snprintf(url, sizeof url, "http://127.0.0.1:%d/explain?format=text", server_port(s));
    char *text = tu_http("POST", url, body, &st);
    ck_assert_int_eq(st, 200);
    ck_assert_msg(strstr(text, "pod research/trainer (policy default): fits 0 of 5 nodes"), "%s", text);
    ck_assert_msg(strstr(text, "  node-a100: 1 GPU has 70000 MiB free"), "%s", text);
    ck_assert_msg(strstr(text, "-> fits if this pod left the node: research/notebook-alice"), "%s",
                  text);
    free(text);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/explain", server_port(s));
    char *j = tu_http("POST", url, "[1,2]", &st);
    ck_assert_int_eq(st, 400);
    free(j);
    j = tu_http("GET", url, NULL, &st);
    ck_assert_int_eq(st, 405);
    free(j);
    free(body);
    json_decref(docs);
    server_stop(s);
    fx_stop(&f);
}
END_TEST

/* `gpupack explain NS/POD --server URL --kubeconfig KC`: the pod from the API
 * server (the fake one), the verdict from a running gpupack. */
START_TEST(cli_pod_from_api_server)
{
    const char *bin = getenv("GPUPACK_BIN");
    ck_assert_msg(bin && *bin, "GPUPACK_BIN is not set (make test sets it)");
    fixture f;
    fx_start(&f);
    gp_err err;
    gp_server_config cfg = {.listen = "127.0.0.1:0"};
    gp_server *s = server_start(&cfg, f.e, f.c, NULL, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    gp_fakeapi *api = fakeapi_start();
    fakeapi_put_pod(api, tu_load_json("test/fixtures/explain-pod.json"));
    char kc[64];
    tu_kubeconfig(fakeapi_url(api), kc, sizeof kc);
    char *cmd = xasprintf("%s explain research/trainer --server http://127.0.0.1:%d --kubeconfig %s 2>&1",
                          bin, server_port(s), kc);
    FILE *p = popen(cmd, "r");
    static char out[1 << 16];
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int rc = pclose(p);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    ck_assert_msg(strstr(out, "pod research/trainer (policy default): fits 0 of 5 nodes"), "%s", out);
    ck_assert_msg(strstr(out, "-> fits if this pod left the node: research/notebook-alice"), "%s", out);
    ck_assert_int_eq(fakeapi_count(api, "GET", "/api/v1/namespaces/research/pods/trainer"), 1);
    /* a pod the API server does not have: a clear error, exit 1 */
    free(cmd);
    cmd = xasprintf("%s explain research/nobody --server http://127.0.0.1:%d --kubeconfig %s 2>&1",
                    bin, server_port(s), kc);
    p = popen(cmd, "r");
    n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    rc = pclose(p);
    ck_assert_int_eq(WEXITSTATUS(rc), 1);
    ck_assert_msg(strstr(out, "GET pod research/nobody: HTTP 404"), "%s", out);
    free(cmd);
    unlink(kc);
    fakeapi_stop(api);
    server_stop(s);
    fx_stop(&f);
}
END_TEST

Suite *suite_explain(void);
Suite *suite_explain(void)
{
    Suite *s = suite_create("explain");
    TCase *t = tcase_create("explain");
    tcase_add_loop_test(t, hint_table, 0, (int)GP_ARRAY_LEN(hint_cases));
    tcase_add_test(t, reason_keys);
    tcase_add_test(t, groups_by_kind_of_reason);
    tcase_add_test(t, explain_example_cluster);
    tcase_add_test(t, explain_over_http);
    tcase_add_test(t, cli_pod_from_api_server);
    suite_add_tcase(s, t);
    return s;
}
