/* test_manifests.c -- what manifests/ ships agrees with the files it is made from: the
 * policies ConfigMap with policies/, the simulator's default scheduler configuration with
 * the one the base ships, the webhook's matchConditions with the resource names gpupack
 * reads, the benchmarks' allocator setting with the image's. (Rendering and applying the
 * kustomize overlays needs kubectl and an API server: test/e2e/e2e_manifests.c.) */
#include <check.h>
#include <glob.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "lib/yamljson.h"
#include "model/podreq.h"
#include "sim/sim.h"
#include "testutil.h"

#define CONFIGMAP "manifests/base/policies-configmap.yaml"
#define SCHED_CONFIG "manifests/base/scheduler-config.yaml"
#define WEBHOOK "manifests/components/webhook/webhook.yaml"

static json_t *load_one(const char *path)
{
    gp_err err;
    json_t *docs = yamljson_load_file(path, &err);
    ck_assert_msg(docs != NULL, "%s", err.msg);
    ck_assert_int_eq(json_array_size(docs), 1);
    json_t *doc = json_incref(json_array_get(docs, 0));
    json_decref(docs);
    return doc;
}

START_TEST(policies_configmap_is_policies_dir)
{
    json_t *cm = load_one(CONFIGMAP);
    json_t *data = json_object_get(cm, "data");
    ck_assert_ptr_nonnull(data);
    glob_t g;
    ck_assert_int_eq(glob("policies/*.yaml", 0, NULL, &g), 0);
    ck_assert_uint_gt(g.gl_pathc, 0);
    for (size_t i = 0; i < g.gl_pathc; i++) {
        const char *key = strrchr(g.gl_pathv[i], '/') + 1;
        const char *text = json_string_value(json_object_get(data, key));
        ck_assert_msg(text != NULL, "%s lacks %s: run scripts/policies-configmap.sh", CONFIGMAP,
                      key);
        char *want = tu_read_text(g.gl_pathv[i]);
        ck_assert_msg(strcmp(text, want) == 0,
                      "%s: %s differs from %s: run scripts/policies-configmap.sh", CONFIGMAP, key,
                      g.gl_pathv[i]);
        free(want);
    }
    ck_assert_msg(json_object_size(data) == g.gl_pathc,
                  "%s has %zu policies, policies/ has %zu: run scripts/policies-configmap.sh",
                  CONFIGMAP, json_object_size(data), g.gl_pathc);
    globfree(&g);
    json_decref(cm);
}
END_TEST

/* `gpupack simulate` plays its default file (and falls back to ideal mode, with a note,
 * when it is missing), so the file it reads must be the one the base ships. */
START_TEST(simulate_default_is_the_shipped_config)
{
    char a[PATH_MAX], b[PATH_MAX];
    ck_assert_msg(realpath(SIM_SCHEDULER_CONFIG, a) != NULL, "%s is missing", SIM_SCHEDULER_CONFIG);
    ck_assert_ptr_nonnull(realpath(SCHED_CONFIG, b));
    ck_assert_str_eq(a, b);
}
END_TEST

/* The matchConditions expression must select every resource a pod can ask gpupack with
 * (the default names; a policy that renames them needs its own expression). */
START_TEST(webhook_match_conditions_name_the_resources)
{
    json_t *wh = load_one(WEBHOOK);
    json_t *conds = json_object_get(json_array_get(json_object_get(wh, "webhooks"), 0),
                                    "matchConditions");
    ck_assert_uint_ge(json_array_size(conds), 1);
    const char *expr = json_string_value(json_object_get(json_array_get(conds, 0), "expression"));
    ck_assert_ptr_nonnull(expr);
    gp_resource_names n;
    podreq_default_names(&n);
    const char *prefix = "gpupack.io/";
    ck_assert_ptr_nonnull(strstr(expr, "'gpupack.io/'"));
    ck_assert_int_eq(strncmp(n.mem, prefix, strlen(prefix)), 0);
    ck_assert_int_eq(strncmp(n.count, prefix, strlen(prefix)), 0);
    ck_assert_int_eq(strncmp(n.core, prefix, strlen(prefix)), 0);
    char quoted[GP_NAME_MAX + 2];
    snprintf(quoted, sizeof quoted, "'%s'", n.aliyun_mem);
    ck_assert_msg(strstr(expr, quoted) != NULL, "%s: matchConditions lack %s", WEBHOOK, quoted);
    /* init containers too: they get the variables as well */
    ck_assert_ptr_nonnull(strstr(expr, "initContainers"));
    ck_assert_str_eq(json_string_value(json_object_get(
                         json_array_get(json_object_get(wh, "webhooks"), 0), "failurePolicy")),
                     "Fail");
    json_decref(wh);
}
END_TEST

/* The image turns the allocator's per-thread caches off (Dockerfile ENV); the soak and
 * the scale benchmark must run gpupack the same way, or they measure an allocator users
 * do not run. */
START_TEST(benches_run_the_images_allocator_setting)
{
    char *df = tu_read_text("Dockerfile");
    const char *env = strstr(df, "\nENV GLIBC_TUNABLES=");
    ck_assert_msg(env != NULL, "Dockerfile sets no GLIBC_TUNABLES");
    env += strlen("\nENV GLIBC_TUNABLES=");
    char want[128];
    size_t n = strcspn(env, " \n");
    ck_assert_uint_lt(n, sizeof want);
    memcpy(want, env, n);
    want[n] = '\0';
    ck_assert_ptr_nonnull(strstr(want, "tcache_count=0"));
    static const char *const benches[][2] = {{"bench/soak.sh", "SOAK"}, {"bench/scale.sh", "SCALE"}};
    for (size_t i = 0; i < GP_ARRAY_LEN(benches); i++) {
        char *text = tu_read_text(benches[i][0]);
        char line[192];
        snprintf(line, sizeof line, "%s_GLIBC_TUNABLES=${%s_GLIBC_TUNABLES-%s}\n", benches[i][1],
                 benches[i][1], want);
        ck_assert_msg(strstr(text, line) != NULL, "%s lacks %s", benches[i][0], line);
        free(text);
    }
    free(df);
}
END_TEST

Suite *suite_manifests(void);
Suite *suite_manifests(void)
{
    Suite *s = suite_create("manifests");
    TCase *t = tcase_create("files");
    tcase_add_test(t, policies_configmap_is_policies_dir);
    tcase_add_test(t, simulate_default_is_the_shipped_config);
    tcase_add_test(t, webhook_match_conditions_name_the_resources);
    tcase_add_test(t, benches_run_the_images_allocator_setting);
    suite_add_tcase(s, t);
    return s;
}
