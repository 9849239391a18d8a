/* test_ui.c -- cluster figures (clusterview), the /ui page and its data, and
 * the page itself rendered by headless Chromium when it is installed. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pack/clusterfile.h"
#include "pack/clusterview.h"
#include "pack/frag.h"
#include "policy/policy_store.h"
#include "http/server.h"
#include "testutil.h"
#include "http/ui_page.h"
#include "lib/yamljson.h"

/* ------------------------------------------------------ clusterview -- */

START_TEST(figures_of_nodes)
{
    int64_t mem[4] = {81920, 81920, 81920, 81920};
    int64_t used[4] = {0, 40960, 81920, 0};
    int core[4] = {0, 500, 1000, 0};
    gp_node *a = tu_node("a", 4, mem, used, core);
    gp_node *b = tu_node("b", 2, mem, NULL, NULL);
    b->gpus[1].info.healthy = false;
    b->gpus[0].info.model = gp_model_intern("T4");
    clusterview v;
    clusterview_init(&v);
    clusterview_add_node(&v, a, NULL);
    clusterview_add_node(&v, b, NULL);
    ck_assert_uint_eq(v.nodes, 2);
    ck_assert_uint_eq(v.gpus, 6);
    ck_assert_uint_eq(v.gpus_healthy, 5);
    ck_assert_uint_eq(v.gpus_idle, 3);          /* a0, a3, b0 */
    ck_assert_uint_eq(v.gpus_full, 1);          /* a2 */
    ck_assert_int_eq(v.mem_total, 5 * 81920);
    ck_assert_int_eq(v.mem_used, 40960 + 81920);
    ck_assert_int_eq(v.core_used, 1500);
    ck_assert_int_eq(v.nmodels, 2);
    /* the simulator's measure, node by node */
    double frag = 0, idle = 0;
    const gp_node *nodes[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        frag_view fv;
        frag_view_of_node(nodes[i], NULL, &fv);
        if (frag_idle(&fv) > 0) {
            idle += (double)frag_idle(&fv);
            frag += frag_amount(&fv, frag_default_shapes());
        }
    }
    ck_assert(idle > 0);
    ck_assert_double_eq_tol(clusterview_frag_ratio(&v), frag / idle, 1e-12);
    json_t *j = clusterview_json(&v);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "gpusIdle")), 3);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "memoryMiB"), "used")),
                     122880);
    ck_assert_uint_eq(json_array_size(json_object_get(j, "models")), 2);
    json_decref(j);
    gp_buf out;
    gp_buf_init(&out, 1 << 20);
    clusterview_metrics(&v, &out);
    ck_assert_ptr_nonnull(strstr(out.data, "gpupack_gpus_idle 3\n"));
    ck_assert_ptr_nonnull(strstr(out.data, "gpupack_model_gpu_memory_mib{model=\"T4\",kind=\"total\"} 81920\n"));
    gp_buf_free(&out);
    free(a);
    free(b);
}
END_TEST

START_TEST(fragmentation_zero_when_typical_pods_fit)
{
    int64_t mem[8] = {81920, 81920, 81920, 81920, 81920, 81920, 81920, 81920};
    gp_node *n = tu_node("empty", 8, mem, NULL, NULL);
    clusterview v;
    clusterview_init(&v);
    clusterview_add_node(&v, n, NULL);
    ck_assert_double_eq_tol(clusterview_frag_ratio(&v), 0.0, 1e-12);
    /* nothing idle: ratio 0, not a division by zero */
    clusterview_init(&v);
    ck_assert_double_eq(clusterview_frag_ratio(&v), 0.0);
    free(n);
}
END_TEST

START_TEST(many_models_fold_into_other)
{
    clusterview v;
    clusterview_init(&v);
    int64_t mem[1] = {1024};
    for (int i = 0; i < CLUSTERVIEW_MAX_MODELS + 5; i++) {
        gp_node *n = tu_node("n", 1, mem, NULL, NULL);
        char name[16];
        snprintf(name, sizeof name, "M%d", i);
        n->gpus[0].info.model = gp_model_intern(name);
        clusterview_add_node(&v, n, NULL);
        free(n);
    }
    ck_assert_int_eq(v.nmodels, CLUSTERVIEW_MAX_MODELS);
    ck_assert_str_eq(v.models[CLUSTERVIEW_MAX_MODELS - 1].model, "other");
    ck_assert_int_eq(v.models[CLUSTERVIEW_MAX_MODELS - 1].gpus, 6);
}
END_TEST

/* ------------------------------------------------------------- page -- */

START_TEST(page_is_self_contained)
{
    size_t len;
    const char *page = ui_page_html(&len);
    ck_assert_uint_gt(len, 4000);
    ck_assert_uint_eq(strlen(page), len);
    ck_assert_ptr_nonnull(strstr(page, "<canvas"));
    /* works offline: nothing loaded from elsewhere */
    ck_assert_ptr_null(strstr(page, "src=\"http"));
    ck_assert_ptr_null(strstr(page, "href=\"http"));
    ck_assert_ptr_null(strstr(page, "@import"));
}
END_TEST

typedef struct fixture {
    policy_store *ps;
    gp_cluster *c;
    gp_extender *e;
    gp_server *s;
    char base[64];
} fixture;

/* The example cluster and policies of `make run`, with the example pod filtered and bound. */
static void fx_start(fixture *f)
{
    memset(f, 0, sizeof *f);
    f->c = cluster_new();
    gp_err err;
    ck_assert_msg(clusterfile_load(f->c, "examples/cluster.yaml", 1024, NULL, &err) == 0, "%s",
                  err.msg);
    ck_assert_msg(policy_store_open("policies", &f->ps, &err) == 0, "%s", err.msg);
    gp_extender_config ecfg = {.policies = policy_store_current, .policies_ud = f->ps};
    f->e = extender_new(f->c, &ecfg);
    gp_server_config cfg = {.listen = "127.0.0.1:0"};
    f->s = server_start(&cfg, f->e, f->c, NULL, &err);
    ck_assert_msg(f->s != NULL, "%s", err.msg);
    snprintf(f->base, sizeof f->base, "http://127.0.0.1:%d", server_port(f->s));
    const char *steps[2][2] = {{"filter", "examples/filter-request.json"},
                               {"bind", "examples/bind-request.json"}};
    for (int i = 0; i < 2; i++) {
        char url[128];
        snprintf(url, sizeof url, "%s/%s", f->base, steps[i][0]);
        char *body = tu_read_text(steps[i][1]);
        long st;
        free(tu_http("POST", url, body, &st));
        ck_assert_int_eq(st, 200);
        free(body);
    }
}

static void fx_stop(fixture *f)
{
    server_stop(f->s);
    extender_free(f->e);
    policy_store_free(f->ps);
    cluster_free(f->c);
}

START_TEST(ui_route_and_summary)
{
    fixture f;
    fx_start(&f);
    char url[160];
    long st;
    snprintf(url, sizeof url, "%s/ui", f.base);
    char *page = tu_http("GET", url, NULL, &st);
    ck_assert_int_eq(st, 200);
    ck_assert_ptr_nonnull(strstr(page, "gpupack"));
    free(page);
    snprintf(url, sizeof url, "%s/inspect?compact=1", f.base);
    char *body = tu_http("GET", url, NULL, &st);
    ck_assert_int_eq(st, 200);
    ck_assert_ptr_null(strchr(body, '\n'));   /* compact */
    json_t *j = json_loads(body, 0, NULL);
    ck_assert_ptr_nonnull(j);
    json_t *s = json_object_get(j, "summary");
    ck_assert_int_eq(json_integer_value(json_object_get(s, "nodes")), 5);
    ck_assert_int_eq(json_integer_value(json_object_get(s, "gpus")), 12);
    ck_assert_int_eq(json_integer_value(json_object_get(s, "gpusHealthy")), 11);
    ck_assert_int_eq(json_integer_value(json_object_get(s, "gpusIdle")), 9);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(s, "memoryMiB"), "used")),
                     20480 + 8192);
    double ratio = json_real_value(json_object_get(json_object_get(s, "fragmentation"), "ratio"));
    ck_assert(ratio > 0 && ratio < 1);
    json_decref(j);
    free(body);
    snprintf(url, sizeof url, "%s/metrics", f.base);
    body = tu_http("GET", url, NULL, &st);
    ck_assert_ptr_nonnull(strstr(body, "gpupack_gpus_idle 9\n"));
    ck_assert_ptr_nonnull(strstr(body, "gpupack_gpu_fragmentation_ratio 0."));
    ck_assert_ptr_nonnull(strstr(body, "gpupack_node_gpu_memory_mib{node=\"node-a100\",kind=\"used\"} 20480\n"));
    ck_assert_ptr_nonnull(strstr(body, "gpupack_node_gpu_memory_mib{node=\"node-t4\",kind=\"used\"} 8192\n"));
    ck_assert_ptr_nonnull(strstr(body, "gpupack_model_gpu_memory_mib{model=\"A100-SXM4-80GB\",kind=\"used\"} 20480\n"));
    ck_assert_ptr_nonnull(strstr(body, "gpupack_model_gpu_memory_mib{model=\"Tesla-T4\",kind=\"used\"} 8192\n"));
    free(body);
    fx_stop(&f);
}
END_TEST

/* --------------------------------------------------- headless Chromium -- */

static const char *chromium(void)
{
    static const char *const names[] = {"chromium", "chromium-browser", "google-chrome"};
    const char *env = getenv("GPUPACK_CHROMIUM");
    if (env && *env)
        return env;
    for (size_t i = 0; i < GP_ARRAY_LEN(names); i++) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", names[i]);
        if (system(cmd) == 0)
            return names[i];
    }
    return NULL;
}

/* Runs headless Chromium on url with one more flag (--dump-dom or
 * --screenshot=FILE); returns what it printed on stdout, owned. */
static char *run_chromium(const char *bin, const char *flag, const char *url)
{
    char dir[] = "/tmp/gpupack-chromium-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char *cmd = xasprintf("timeout 120 %s --headless --no-sandbox --disable-gpu --hide-scrollbars "
                          "--no-first-run --user-data-dir=%s --window-size=1280,800 "
                          "--virtual-time-budget=4000 %s '%s' 2>/dev/null; rm -rf %s",
                          bin, dir, flag, url, dir);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    gp_buf b;
    gp_buf_init(&b, 64u << 20);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, p)) > 0)
        ck_assert_int_eq(gp_buf_append(&b, chunk, n), 0);
    pclose(p);
    free(cmd);
    return b.data ? b.data : xstrdup("");
}

START_TEST(chromium_renders_example_cluster)
{
    const char *bin = chromium();
    if (!bin) {
        printf("SKIP chromium_renders_example_cluster: no chromium on PATH "
               "(apt-get install chromium; .ci/run installs it)\n");
        return;
    }
    fixture f;
    fx_start(&f);
    char url[200];
    snprintf(url, sizeof url, "%s/ui#gpu=node-t4/0", f.base);
    char *dom = run_chromium(bin, "--dump-dom", url);
    /* figures over the example cluster after one bind */
    const char *want[] = {
        "data-nodes=\"5\"",            /* every node in the list */
        "data-rows=\"5\"",
        "5 of 5 nodes shown",
        "9 of 11",                     /* GPUs fully idle */
        "8.3 %",                       /* GPU memory allocated: 28672 of 346612 MiB */
        "28.0 GiB of 338.5 GiB",
        "5 nodes",
        ">research</option>",          /* namespace filter */
        ">serving</option>",
        ">inference</option>",         /* policy filter */
        ">Tesla-T4</option>",          /* model filter */
        "node-t4 · GPU 0",             /* the pinned GPU's details */
        "serving/infer-1",
        "8192 MiB",                    /* its memory, and the pod's */
        "25 %",
    };
    for (size_t i = 0; i < GP_ARRAY_LEN(want); i++)
        ck_assert_msg(strstr(dom, want[i]) != NULL, "DOM lacks %s:\n%.4000s", want[i], dom);
    ck_assert_msg(strstr(dom, "<div id=\"err\"></div>") != NULL, "%.2000s", dom);   /* no load error */
    free(dom);
    /* a screenshot is a PNG of some size */
    char png[] = "/tmp/gpupack-ui-XXXXXX.png";
    int fd = mkstemps(png, 4);
    ck_assert_int_ge(fd, 0);
    close(fd);
    char flag[64];
    snprintf(flag, sizeof flag, "--screenshot=%s", png);
    free(run_chromium(bin, flag, url));
    size_t len = 0;
    gp_err err;
    char *img = gp_read_file(png, 16u << 20, &len, &err);
    ck_assert_msg(img != NULL, "%s", err.msg);
    ck_assert_uint_gt(len, 10000);
    ck_assert_int_eq(memcmp(img, "\x89PNG", 4), 0);
    free(img);
    unlink(png);
    fx_stop(&f);
}
END_TEST

Suite *suite_ui(void);
Suite *suite_ui(void)
{
    Suite *s = suite_create("ui");
    TCase *t = tcase_create("clusterview");
    tcase_add_test(t, figures_of_nodes);
    tcase_add_test(t, fragmentation_zero_when_typical_pods_fit);
    tcase_add_test(t, many_models_fold_into_other);
    suite_add_tcase(s, t);
    t = tcase_create("page");
    tcase_set_timeout(t, 300);
    tcase_add_test(t, page_is_self_contained);
    tcase_add_test(t, ui_route_and_summary);
    tcase_add_test(t, chromium_renders_example_cluster);
    suite_add_tcase(s, t);
    return s;
}
