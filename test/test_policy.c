/* test_policy.c -- policy files: validation (one fixture per error kind, with
 * line and column), matching and selection, time windows with an injected
 * clock, time zones, and the shipped examples. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "policy/policy.h"
#include "policy/policy_tz.h"
#include "policy/policy_yaml.h"

#define BAD "test/fixtures/policy/bad/"
#define GOOD "test/fixtures/policy/good/"
#define HDR "apiVersion: gpupack.io/v1alpha1\nkind: PackingPolicy\n"

/* ============================================================ helpers */

/* A set from YAML text; on failure the test fails with every error. */
static gp_policy_set *set_from(const char *yaml)
{
    gp_policy **pols = NULL;
    int n = 0;
    policy_diag diag = {0};
    int rc = policy_yaml_parse("t.yaml", yaml, strlen(yaml), &pols, &n, &diag);
    gp_policy_set *s = NULL;
    if (policy_set_build(pols, n, &diag, &s) < 0)
        rc = -1;
    if (rc != 0) {
        gp_err err;
        policy_diag_summary(&diag, &err);
        policy_set_unref(s);
        policy_diag_free(&diag);
        ck_abort_msg("unexpected policy errors: %s", err.msg);
    }
    policy_diag_free(&diag);
    return s;
}

/* The errors of YAML text that must not load (count returned, first in err). */
static int errors_of(const char *yaml, policy_diag *diag)
{
    gp_policy **pols = NULL;
    int n = 0;
    int parsed = policy_yaml_parse("t.yaml", yaml, strlen(yaml), &pols, &n, diag);
    (void)parsed;   /* the count below covers it */
    gp_policy_set *s = NULL;
    int rc = policy_set_build(pols, n, diag, &s);
    policy_set_unref(s);
    ck_assert(rc == 0 || policy_diag_count(diag) > 0);
    return policy_diag_count(diag);
}

static time_t utc(int y, int mo, int d, int h, int mi)
{
    struct tm tm = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h,
                    .tm_min = mi};
    return timegm(&tm);
}

static const char *chosen(const gp_policy_set *s, const char *ns, const json_t *labels, time_t now)
{
    static gp_policy_view view;
    gp_err err;
    ck_assert_msg(policy_select(s, ns, labels, NULL, now, &view, &err) == 0, "%s", err.msg);
    return view.name;
}

static bool have_zone(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "/usr/share/zoneinfo/%s", name);
    return access(path, R_OK) == 0;
}

/* ============================================================ validation */

/* One fixture per error kind: where the error must be reported and a piece
 * of the message. */
static const struct bad_case {
    const char *file;
    int line, col;
    const char *what;
} bad_cases[] = {
    {"unknown_key.yaml", 6, 3, "spec: unknown key \"colour\""},
    {"quoted_int.yaml", 5, 13, "expected an integer, got the quoted string \"10\""},
    {"wrong_type.yaml", 5, 13, "spec.priority: expected an integer, got a list"},
    {"spec_not_mapping.yaml", 4, 7, "spec: expected a mapping, got a list"},
    {"bad_bool.yaml", 5, 17, "expected true or false, got \"yes\""},
    {"out_of_range.yaml", 5, 13, "99999999 is out of range (-1000000..1000000)"},
    {"negative.yaml", 6, 20, "maxPodsPerGPU: -1 is out of range (0..1000)"},
    {"share_zero.yaml", 6, 24, "maxNamespaceShare: 0 is out of range"},
    {"weights_zero.yaml", 5, 12, "weights are both 0"},
    {"bad_operator.yaml", 8, 33, "unknown operator \"Like\""},
    {"in_without_values.yaml", 8, 11, "operator In needs a non-empty \"values\" list"},
    {"exists_with_values.yaml", 8, 11, "operator Exists takes no \"values\""},
    {"bad_label_key.yaml", 6, 17, "bad label key \"bad key!\""},
    {"bad_label_value.yaml", 6, 23, "bad label value \"-x-\""},
    {"never_matches.yaml", 3, 18, "label selector can never match"},
    {"bad_namespace.yaml", 6, 18, "bad namespace name \"Serving\""},
    {"empty_namespaces.yaml", 6, 17, "empty namespace list"},
    {"unknown_node_strategy.yaml", 5, 20, "unknown node strategy \"tetris\" (expected one of: "},
    {"unknown_gpu_strategy.yaml", 5, 19, "unknown GPU strategy \"tetris\" (expected one of: "},
    {"bad_node_decision.yaml", 5, 17, "unknown nodeDecision \"choose\""},
    {"duplicate_name.yaml", 9, 18, "policy \"a\" is defined twice (first at " BAD
                                   "duplicate_name.yaml:3:18)"},
    {"same_priority_overlap.yaml", 12, 13, "have the same priority 5"},
    {"missing_name.yaml", 3, 11, "metadata: missing required key \"name\""},
    {"bad_api_version.yaml", 1, 13, "unsupported apiVersion \"gpupack.io/v1\""},
    {"bad_kind.yaml", 2, 7, "unsupported kind \"Policy\""},
    {"duplicate_key.yaml", 6, 3, "duplicate key \"priority\""},
    {"bad_time.yaml", 6, 13, "bad time \"25:00\""},
    {"bad_day.yaml", 6, 19, "bad day \"Funday\""},
    {"empty_window.yaml", 6, 7, "from and to are equal"},
    {"bad_time_zone.yaml", 5, 13, "unknown time zone \"Mars/Olympus_Mons\""},
    {"syntax_error.yaml", 6, 1, "YAML syntax error: "},
    {"default_with_match.yaml", 5, 10, "the \"default\" policy applies to every pod"},
    {"bad_resource_name.yaml", 5, 23, "bad resource name \"gpu-mem\""},
    {"resource_reused.yaml", 5, 14, "\"gpupack.io/gpu-mem\" is used for two purposes"},
    {"bad_memory_unit.yaml", 5, 27, "unknown memory unit \"KiB\""},
    {"bad_gpu_model.yaml", 5, 24, "bad GPU model \"T4|A10\""},
    {"bad_shape_weight.yaml", 6, 35, "weight: 0 is out of range"},
    {"cpu_shape_without_cpu.yaml", 6, 7, "a shape with gpus: 0 (a CPU-only task) needs cpuMilli"},
    {"bad_policy_name.yaml", 3, 18, "bad policy name \"Bad_Name\""},
    {"unknown_format.yaml", 5, 30, "formats[1]: unknown request format \"runai\" (expected one "
                                   "of: aliyun, kai, hami, volcano, tke)"},
    {"format_twice.yaml", 5, 36, "formats[2]: request format \"hami\" is listed twice"},
    {"formats_not_list.yaml", 5, 24, "spec.resources.formats: expected a list, got a scalar"},
    {"formats_aliyun_native.yaml", 7, 14, "formats lists aliyun, but profile: native disables"},
    {"bad_nvidia_gpu.yaml", 5, 26, "unknown owner of nvidia.com/gpu \"kubelet\" (expected one of: "
                                   "device-plugin, gpupack)"},
    {"nvidia_gpu_without_hami.yaml", 7, 16, "nvidiaGPU: gpupack reads nvidia.com/gpu as HAMi does; "
                                            "list hami in formats"},
    {"resource_of_format.yaml", 5, 14, "resource name \"nvidia.com/gpumem\" is hami's"},
    {"preempt_bad_bool.yaml", 6, 17, "preemption.mayPreempt: expected true or false, got \"sometimes\""},
    {"preempt_min_range.yaml", 6, 18, "preemption.minPriority: 3000000000 is out of range "
                                      "(-2147483648..2147483647)"},
    {"preempt_min_without.yaml", 6, 18, "minPriority has no effect with mayPreempt: false"},
    {"preempt_unknown_key.yaml", 6, 5, "preemption: unknown key \"protect\" (expected one of: "
                                       "mayPreempt, minPriority, protected)"},
    {"preempt_not_mapping.yaml", 5, 15, "spec.preemption: expected a mapping, got a list"},
    {"consol_moves_range.yaml", 6, 21, "consolidation.maxMovesPerPod: 17 is out of range (1..16)"},
    {"consol_hold_range.yaml", 6, 18, "consolidation.holdSeconds: 5 is out of range (10..3600)"},
    {"consol_unknown_key.yaml", 6, 5, "consolidation: unknown key \"budget\" (expected one of: "
                                      "enabled, maxMovesPerPod, maxMovesPerHour, cooldownSeconds, "
                                      "holdSeconds, movable)"},
    {"consol_bad_bool.yaml", 6, 14, "consolidation.enabled: expected true or false, got \"maybe\""},
    {"consol_not_mapping.yaml", 5, 18, "spec.consolidation: expected a mapping, got a list"},
    {"dra_not_default.yaml", 5, 8, "only the policy named \"default\" may set dra"},
    {"dra_missing_memory.yaml", 7, 9, "missing required key \"memoryCapacity\""},
    {"dra_attribute_without_value.yaml", 7, 9, "gpuAttribute and gpuValue go together"},
    {"dra_driver_twice.yaml", 8, 9, "driver \"gpu.example.com\" is listed twice"},
    {"dra_compute_without_full.yaml", 7, 9, "computeCapacity and computeFull go together"},
    {"dra_bad_name.yaml", 7, 18, "\"gpu example\" is not a driver, attribute or capacity name"},
};

/* spec.dra of the default policy replaces the built-in driver table; without
 * it, the set has the built-in one (NVIDIA's and HAMi's). */
START_TEST(dra_drivers)
{
    gp_policy_set *s = NULL;
    gp_err err;
    ck_assert_msg(policy_set_load_file(GOOD "dra_drivers.yaml", &s, &err) == 0, "%s", err.msg);
    gp_dra_drivers t;
    policy_set_dra_drivers(s, &t);
    ck_assert_int_eq(t.n, 2);
    const gp_dra_driver *d = dra_driver_find(&t, "gpu.example.com");
    ck_assert_ptr_nonnull(d);
    ck_assert_str_eq(d->type_attr, "kind");
    ck_assert_str_eq(d->type_value, "accelerator");
    ck_assert_str_eq(d->uuid_attr, "serial");
    ck_assert_str_eq(d->mem_capacity, "vram");
    ck_assert_str_eq(d->core_capacity, "sm");
    ck_assert_int_eq(d->core_full, 132);
    ck_assert_ptr_null(dra_driver_find(&t, "hami-core-gpu.project-hami.io"));
    policy_set_unref(s);
    gp_dra_drivers builtin;
    dra_default_drivers(&builtin);
    policy_set_dra_drivers(NULL, &t);
    ck_assert_int_eq(memcmp(&t, &builtin, sizeof t), 0);
    s = policy_set_default();
    policy_set_dra_drivers(s, &t);
    ck_assert_int_eq(memcmp(&t, &builtin, sizeof t), 0);
    policy_set_unref(s);
}
END_TEST

START_TEST(bad_fixture)
{
    const struct bad_case *bc = &bad_cases[_i];
    char path[256], prefix[320];
    snprintf(path, sizeof path, BAD "%s", bc->file);
    snprintf(prefix, sizeof prefix, "%s:%d:%d: ", path, bc->line, bc->col);
    const char *paths[] = {path};
    gp_policy_set *s = NULL;
    policy_diag diag = {0};
    ck_assert_int_eq(policy_set_load_files(paths, 1, &s, &diag), -1);
    ck_assert_ptr_null(s);
    ck_assert_msg(diag.n == 1, "%s: expected one error, got %d (first: %s)", bc->file, diag.n,
                  diag.n ? diag.msgs[0] : "-");
    ck_assert_msg(strncmp(diag.msgs[0], prefix, strlen(prefix)) == 0, "want %s..., got %s",
                  prefix, diag.msgs[0]);
    ck_assert_msg(strstr(diag.msgs[0], bc->what) != NULL, "want \"%s\" in %s", bc->what,
                  diag.msgs[0]);
    /* The single-file entry point reports the same first error. */
    gp_err err;
    ck_assert_int_eq(policy_set_load_file(path, &s, &err), -1);
    ck_assert_str_eq(err.msg, diag.msgs[0]);
    policy_diag_free(&diag);
}
END_TEST

START_TEST(every_error_of_a_file)
{
    static const char *want[] = {
        BAD "many_errors.yaml:5:13: spec.priority: expected an integer, got \"high\"",
        BAD "many_errors.yaml:6:3: spec: unknown key \"colour\"",
        BAD "many_errors.yaml:7:20: spec.node.strategy: unknown node strategy \"tetris\"",
        BAD "many_errors.yaml:9:20: spec.limits.maxPodsPerGPU: expected an integer, got \"1.5\"",
        BAD "many_errors.yaml:11:15: spec.schedule[0].days[0]: bad day \"Xyz\"",
        BAD "many_errors.yaml:11:27: spec.schedule[0].from: bad time \"8\"",
    };
    const char *paths[] = {BAD "many_errors.yaml"};
    gp_policy_set *s = NULL;
    policy_diag diag = {0};
    ck_assert_int_eq(policy_set_load_files(paths, 1, &s, &diag), -1);
    ck_assert_int_eq(diag.n, (int)GP_ARRAY_LEN(want));
    for (size_t i = 0; i < GP_ARRAY_LEN(want); i++)
        ck_assert_msg(strncmp(diag.msgs[i], want[i], strlen(want[i])) == 0, "want %s, got %s",
                      want[i], diag.msgs[i]);
    gp_err err;
    policy_diag_summary(&diag, &err);
    ck_assert(strstr(err.msg, "(and 5 more errors)") != NULL);
    policy_diag_free(&diag);
}
END_TEST

/* Errors in several files and across them are all reported in one load. */
START_TEST(errors_across_files)
{
    const char *paths[] = {BAD "unknown_key.yaml", GOOD "conflict_a.yaml", GOOD "conflict_b.yaml",
                           BAD "no_such_file.yaml"};
    gp_policy_set *s = NULL;
    policy_diag diag = {0};
    ck_assert_int_eq(policy_set_load_files(paths, 4, &s, &diag), -1);
    ck_assert_int_eq(diag.n, 3);
    ck_assert(strstr(diag.msgs[0], "unknown_key.yaml:6:3: ") != NULL);
    ck_assert(strstr(diag.msgs[1], BAD "no_such_file.yaml:1:1: cannot open") != NULL);
    ck_assert_msg(strstr(diag.msgs[2], GOOD "conflict_b.yaml:6:13: policies \"team-a\" (" GOOD
                                       "conflict_a.yaml:4:9) and \"team-b\"") != NULL,
                  "%s", diag.msgs[2]);
    policy_diag_free(&diag);
}
END_TEST

START_TEST(bounds)
{
    policy_diag diag = {0};
    /* nesting */
    char deep[400] = HDR "metadata: {name: a}\nspec: {x: ";
    for (int i = 0; i < 40; i++)
        strcat(deep, "[");
    ck_assert_int_ge(errors_of(deep, &diag), 1);
    ck_assert(strstr(diag.msgs[0], "nested deeper than") != NULL);
    policy_diag_free(&diag);
    /* aliases could fan out far beyond the file size */
    size_t cap = 1 << 16, len = 0;
    char *big = xmalloc(cap);
    len += (size_t)snprintf(big + len, cap - len,
                            HDR "metadata: {name: a}\nspec:\n  match:\n    podSelector:\n"
                                "      matchExpressions:\n");
    len += (size_t)snprintf(big + len, cap - len,
                            "      - {key: k0, operator: In, values: &v [");
    for (int i = 0; i < 64; i++)
        len += (size_t)snprintf(big + len, cap - len, "%sv%d", i ? "," : "", i);
    len += (size_t)snprintf(big + len, cap - len, "]}\n");
    for (int i = 1; i < 64; i++)
        len += (size_t)snprintf(big + len, cap - len,
                                "      - {key: k%d, operator: NotIn, values: *v}\n", i);
    ck_assert_int_eq(errors_of(big, &diag), 63);   /* aliases: rejected, each reported */
    ck_assert_msg(strstr(diag.msgs[0], "t.yaml:9:44: YAML aliases (*name) are not supported") !=
                  NULL, "%s", diag.msgs[0]);
    policy_diag_free(&diag);
    free(big);
    /* too many list items */
    char many[8192] = HDR "metadata: {name: a}\nspec:\n  limits:\n    gpuModels: [";
    for (int i = 0; i < 300; i++)
        strcat(many, i ? ",x" : "x");
    strcat(many, "]\n");
    ck_assert_int_eq(errors_of(many, &diag), 1);
    ck_assert(strstr(diag.msgs[0], "300 items, at most 256 allowed") != NULL);
    policy_diag_free(&diag);
    /* a NUL inside a string */
    ck_assert_int_eq(errors_of(HDR "metadata: {name: \"a\\0b\"}\n", &diag), 1);
    ck_assert(strstr(diag.msgs[0], "NUL") != NULL);
    policy_diag_free(&diag);
    /* non-scalar keys, empty and null documents */
    ck_assert_int_eq(errors_of(HDR "metadata: {name: a}\nspec: {[1]: 2}\n", &diag), 1);
    policy_diag_free(&diag);
    ck_assert_int_eq(errors_of("---\n---\n# nothing\n", &diag), 0);
    ck_assert_int_eq(errors_of("", &diag), 0);
    ck_assert_int_eq(errors_of("[1, 2]\n", &diag), 1);
    policy_diag_free(&diag);
}
END_TEST

/* ============================================================ what a policy sets */

START_TEST(request_formats)
{
    gp_policy_set *s = set_from(HDR "metadata: {name: some}\n"
                                    "spec:\n"
                                    "  match: {namespaces: [ml]}\n"
                                    "  resources:\n"
                                    "    formats: [kai, hami]\n"
                                    "    nvidiaGPU: gpupack\n"
                                    "---\n" HDR "metadata: {name: none}\n"
                                    "spec:\n"
                                    "  match: {namespaces: [web]}\n"
                                    "  resources: {formats: []}\n");
    gp_policy_view v;
    gp_err err;
    ck_assert_int_eq(policy_select(s, "ml", NULL, NULL, 0, &v, &err), 0);
    ck_assert_uint_eq(v.names.formats,
                      GP_FORMAT_BIT(GP_PROFILE_KAI) | GP_FORMAT_BIT(GP_PROFILE_HAMI));
    ck_assert(v.names.nvidia_gpu);
    ck_assert_str_eq(v.names.aliyun_mem, "");   /* aliyun not listed */
    ck_assert_int_eq(policy_select(s, "web", NULL, NULL, 0, &v, &err), 0);
    ck_assert_uint_eq(v.names.formats, 0);
    ck_assert(!v.names.nvidia_gpu);
    ck_assert_str_eq(v.names.aliyun_mem, "");
    /* without the key: every format, nvidia.com/gpu left to the device plugin */
    ck_assert_int_eq(policy_select(s, "other", NULL, NULL, 0, &v, &err), 0);
    ck_assert_str_eq(v.name, "default");
    ck_assert_uint_eq(v.names.formats, GP_FORMATS_OTHER);
    ck_assert(!v.names.nvidia_gpu);
    ck_assert_str_eq(v.names.aliyun_mem, "aliyun.com/gpu-mem");
    policy_set_unref(s);
}
END_TEST

START_TEST(view_fields)
{
    gp_policy_set *s = set_from(HDR "metadata: {name: full}\n"
                                    "spec:\n"
                                    "  priority: 7\n"
                                    "  match: {namespaces: [ml]}\n"
                                    "  node: {strategy: spread}\n"
                                    "  gpu: {strategy: first-fit}\n"
                                    "  nodeDecision: filter\n"
                                    "  weights: {memory: 2, core: 0.5}\n"
                                    "  limits:\n"
                                    "    reserveMemoryMiB: 256\n"
                                    "    maxPodsPerGPU: 4\n"
                                    "    gpuModels: [T4, A10]\n"
                                    "    maxNamespaceShare: 0.5\n"
                                    "  resources:\n"
                                    "    memory: example.com/vram\n"
                                    "    memoryUnit: GiB\n"
                                    "    count: example.com/gpus\n"
                                    "    core: example.com/sm\n"
                                    "    profile: native\n"
                                    "  shapes:\n"
                                    "    - {gpus: 1, core: 50, weight: 3, cpuMilli: 4000, gpuModels: [A100, H100]}\n"
                                    "    - {core: 100, weight: 1}\n"
                                    "    - {gpus: 0, core: 0, weight: 4, cpuMilli: 8000}\n"
                                    "  consolidation:\n"
                                    "    enabled: false\n"
                                    "    maxMovesPerPod: 2\n"
                                    "    maxMovesPerHour: 7\n"
                                    "    cooldownSeconds: 30\n"
                                    "    holdSeconds: 45\n"
                                    "    movable: false\n");
    gp_policy_view v;
    gp_err err;
    ck_assert_int_eq(policy_select(s, "ml", NULL, NULL, 0, &v, &err), 0);
    ck_assert_str_eq(v.name, "full");
    ck_assert_str_eq(v.place.node->name, "spread");
    ck_assert_str_eq(v.place.gpu->name, "first-fit");
    ck_assert(v.decide_in_filter);
    ck_assert(v.place.w_mem == 2 && v.place.w_core == 0.5);
    ck_assert_int_eq(v.place.reserve_mem_mib, 256);
    ck_assert_int_eq(v.place.max_pods_per_gpu, 4);
    ck_assert_str_eq(v.place.models, "T4|A10");
    ck_assert(v.ns_share_cap == 0.5);
    ck_assert_str_eq(v.names.mem, "example.com/vram");
    ck_assert_int_eq(v.names.mem_unit_mib, 1024);
    ck_assert_str_eq(v.names.count, "example.com/gpus");
    ck_assert_str_eq(v.names.core, "example.com/sm");
    ck_assert_str_eq(v.names.aliyun_mem, "");
    ck_assert_ptr_nonnull(v.place.shapes);
    ck_assert_int_eq(v.place.shapes->n, 3);
    ck_assert_int_eq(v.place.shapes->s[2].count, 0);   /* a CPU-only task */
    ck_assert_int_eq(v.place.shapes->s[2].cpu_milli, 8000);
    ck_assert_int_eq(v.place.shapes->s[0].core, 500);
    ck_assert_int_eq(v.place.shapes->s[0].cpu_milli, 4000);
    ck_assert_str_eq(v.place.shapes->s[0].models, "A100|H100");
    ck_assert(!v.consol.enabled && !v.consol.movable);
    ck_assert_int_eq(v.consol.max_moves, 2);
    ck_assert_int_eq(v.consol.max_per_hour, 7);
    ck_assert_int_eq(v.consol.cooldown_s, 30);
    ck_assert_int_eq(v.consol.hold_s, 45);
    ck_assert_str_eq(v.place.shapes->s[1].models, "");
    ck_assert_int_eq(v.place.shapes->s[1].count, 1);
    ck_assert_int_eq(v.place.shapes->s[1].core, 1000);
    ck_assert(v.place.shapes->s[0].weight == 0.375 && v.place.shapes->s[1].weight == 0.125 &&
              v.place.shapes->s[2].weight == 0.5);

    /* Another namespace gets the built-in default: placement and podreq defaults. */
    gp_place_opts dp;
    gp_resource_names dn;
    placement_default_opts(&dp);
    podreq_default_names(&dn);
    ck_assert_int_eq(policy_select(s, "web", NULL, NULL, 0, &v, &err), 0);
    ck_assert_str_eq(v.name, "default");
    ck_assert(memcmp(&v.place, &dp, sizeof dp) == 0);
    ck_assert(memcmp(&v.names, &dn, sizeof dn) == 0);
    ck_assert(!v.decide_in_filter && v.ns_share_cap == 0);
    ck_assert(v.consol.enabled && v.consol.movable);   /* consolidation's defaults */
    ck_assert_int_eq(v.consol.max_moves, 4);
    ck_assert_int_eq(v.consol.max_per_hour, 20);
    ck_assert_int_eq(v.consol.cooldown_s, 600);
    ck_assert_int_eq(v.consol.hold_s, 120);
    policy_set_unref(s);
}
END_TEST

START_TEST(default_set)
{
    gp_policy_set *s = policy_set_default();
    ck_assert_int_eq(policy_set_count(s), 1);
    ck_assert_str_eq(policy_set_name_at(s, 0), "default");
    ck_assert_ptr_null(policy_set_name_at(s, 1));
    gp_policy_view v;
    gp_err err;
    ck_assert_int_eq(policy_select(s, "x", NULL, "default", 0, &v, &err), 0);
    ck_assert_int_eq(policy_select(s, "x", NULL, "other", 0, &v, &err), -1);
    policy_set_ref(s);
    policy_set_unref(s);
    policy_set_unref(s);
    policy_set_unref(NULL);
    /* No set at all behaves as the built-in default. */
    ck_assert_int_eq(policy_select(NULL, "x", NULL, NULL, 0, &v, &err), 0);
    ck_assert_str_eq(v.name, "default");
    ck_assert_int_eq(policy_select(NULL, "x", NULL, "other", 0, &v, &err), -1);
}
END_TEST

START_TEST(file_default_replaces_builtin)
{
    gp_policy_set *s = set_from(HDR "metadata: {name: default}\n"
                                    "spec: {node: {strategy: spread}, allowRequest: false}\n"
                                    "---\n" HDR "metadata: {name: a}\n"
                                    "spec: {match: {namespaces: [a]}}\n");
    ck_assert_int_eq(policy_set_count(s), 2);
    ck_assert_str_eq(policy_set_name_at(s, 1), "default");
    gp_policy_view v;
    gp_err err;
    ck_assert_int_eq(policy_select(s, "zzz", NULL, NULL, 0, &v, &err), 0);
    ck_assert_str_eq(v.name, "default");
    ck_assert_str_eq(v.place.node->name, "spread");
    ck_assert_int_eq(policy_select(s, "zzz", NULL, "default", 0, &v, &err), -1);
    policy_set_unref(s);
}
END_TEST

/* ============================================================ matching */

START_TEST(label_operators)
{
    gp_policy_set *s = set_from(
        HDR "metadata: {name: sel}\n"
            "spec:\n"
            "  priority: 1\n"
            "  match:\n"
            "    namespaces: [a, b]\n"
            "    podLabels: {app: web}\n"
            "    podSelector:\n"
            "      matchLabels: {example.com/team: ml}\n"
            "      matchExpressions:\n"
            "        - {key: tier, operator: In, values: [gold, silver]}\n"
            "        - {key: env, operator: NotIn, values: [dev]}\n"
            "        - {key: owner, operator: Exists}\n"
            "        - {key: legacy, operator: DoesNotExist}\n");
    static const struct {
        const char *ns, *labels;
        bool match;
    } cases[] = {
        {"a", "{\"app\":\"web\",\"example.com/team\":\"ml\",\"tier\":\"gold\",\"owner\":\"x\"}", true},
        {"b", "{\"app\":\"web\",\"example.com/team\":\"ml\",\"tier\":\"silver\",\"owner\":\"\","
              "\"env\":\"prod\"}", true},
        {"c", "{\"app\":\"web\",\"example.com/team\":\"ml\",\"tier\":\"gold\",\"owner\":\"x\"}", false},
        {"a", "{\"app\":\"api\",\"example.com/team\":\"ml\",\"tier\":\"gold\",\"owner\":\"x\"}", false},
        {"a", "{\"app\":\"web\",\"tier\":\"gold\",\"owner\":\"x\"}", false},
        {"a", "{\"app\":\"web\",\"example.com/team\":\"ml\",\"tier\":\"bronze\",\"owner\":\"x\"}", false},
        {"a", "{\"app\":\"web\",\"example.com/team\":\"ml\",\"owner\":\"x\"}", false},
        {"a", "{\"app\":\"web\",\"example.com/team\":\"ml\",\"tier\":\"gold\",\"owner\":\"x\","
              "\"env\":\"dev\"}", false},
        {"a", "{\"app\":\"web\",\"example.com/team\":\"ml\",\"tier\":\"gold\"}", false},
        {"a", "{\"app\":\"web\",\"example.com/team\":\"ml\",\"tier\":\"gold\",\"owner\":\"x\","
              "\"legacy\":\"\"}", false},
        {"a", "{\"app\":7,\"example.com/team\":\"ml\",\"tier\":\"gold\",\"owner\":\"x\"}", false},
        {"a", NULL, false},
        {NULL, "{\"app\":\"web\",\"example.com/team\":\"ml\",\"tier\":\"gold\",\"owner\":\"x\"}", false},
    };
    for (size_t i = 0; i < GP_ARRAY_LEN(cases); i++) {
        json_t *labels = cases[i].labels ? json_loads(cases[i].labels, 0, NULL) : NULL;
        const char *got = chosen(s, cases[i].ns, labels, 0);
        ck_assert_msg(!strcmp(got, cases[i].match ? "sel" : "default"), "case %zu: got %s", i, got);
        json_decref(labels);
    }
    policy_set_unref(s);
}
END_TEST

START_TEST(priority_order)
{
    gp_policy_set *s = set_from(HDR "metadata: {name: broad}\nspec: {priority: 1}\n"
                                "---\n" HDR "metadata: {name: narrow}\n"
                                "spec: {priority: 5, match: {namespaces: [ml]}}\n"
                                "---\n" HDR "metadata: {name: low}\n"
                                "spec: {priority: -3, match: {namespaces: [ml]}}\n"
                                "---\n" HDR "metadata: {name: b-side}\n"
                                "spec: {priority: 5, match: {namespaces: [ops]}}\n");
    /* selection order: priority descending, then name */
    static const char *order[] = {"b-side", "narrow", "broad", "low", "default"};
    ck_assert_int_eq(policy_set_count(s), 5);
    for (int i = 0; i < 5; i++)
        ck_assert_str_eq(policy_set_name_at(s, i), order[i]);
    ck_assert_str_eq(chosen(s, "ml", NULL, 0), "narrow");
    ck_assert_str_eq(chosen(s, "ops", NULL, 0), "b-side");
    ck_assert_str_eq(chosen(s, "web", NULL, 0), "broad");
    ck_assert_ptr_nonnull(policy_set_find(s, "low"));
    ck_assert_ptr_null(policy_set_find(s, "nope"));
    policy_set_unref(s);
}
END_TEST

START_TEST(requested_policy)
{
    gp_policy_set *s = set_from(HDR "metadata: {name: open}\n"
                                "spec: {priority: 1, allowRequest: true, match: {namespaces: [x]}}\n"
                                "---\n" HDR "metadata: {name: closed}\n"
                                "spec: {priority: 2}\n");
    gp_policy_view v;
    gp_err err;
    /* an allowed request wins over match and priority */
    ck_assert_int_eq(policy_select(s, "web", NULL, "open", 0, &v, &err), 0);
    ck_assert_str_eq(v.name, "open");
    ck_assert_int_eq(policy_select(s, "web", NULL, "", 0, &v, &err), 0);
    ck_assert_str_eq(v.name, "closed");
    ck_assert_int_eq(policy_select(s, "web", NULL, "closed", 0, &v, &err), -1);
    ck_assert_msg(strstr(err.msg, "does not allow being asked for") &&
                  strstr(err.msg, "may ask for: open, default"), "%s", err.msg);
    ck_assert_int_eq(policy_select(s, "web", NULL, "ghost", 0, &v, &err), -1);
    ck_assert_msg(strstr(err.msg, "\"ghost\"") && strstr(err.msg, "does not exist"), "%s",
                  err.msg);
    policy_set_unref(s);
}
END_TEST

/* Same priority is fine when the policies can never both match. */
START_TEST(conflicts)
{
    static const struct {
        const char *a, *b;
        bool conflict;
    } cases[] = {
        {"match: {namespaces: [x]}", "match: {namespaces: [y]}", false},
        {"match: {namespaces: [x, y]}", "match: {namespaces: [y]}", true},
        {"match: {namespaces: [x]}", "", true},
        {"match: {podLabels: {tier: a}}", "match: {podLabels: {tier: b}}", false},
        {"match: {podLabels: {tier: a}}", "match: {podLabels: {app: b}}", true},
        {"match: {podLabels: {tier: a}}",
         "match: {podSelector: {matchExpressions: [{key: tier, operator: NotIn, values: [a]}]}}",
         false},
        {"match: {podSelector: {matchExpressions: [{key: t, operator: In, values: [a, b]}]}}",
         "match: {podSelector: {matchExpressions: [{key: t, operator: NotIn, values: [a]}]}}",
         true},
        {"match: {podSelector: {matchExpressions: [{key: t, operator: Exists}]}}",
         "match: {podSelector: {matchExpressions: [{key: t, operator: DoesNotExist}]}}", false},
        {"match: {podSelector: {matchExpressions: [{key: t, operator: NotIn, values: [a]}]}}",
         "match: {podSelector: {matchExpressions: [{key: t, operator: DoesNotExist}]}}", true},
        {"schedule: [{from: \"08:00\", to: \"20:00\"}]", "schedule: [{from: \"20:00\", to: \"08:00\"}]",
         false},
        {"schedule: [{from: \"08:00\", to: \"20:00\"}]", "schedule: [{from: \"19:00\", to: \"08:00\"}]",
         true},
        {"schedule: [{days: [Sat-Sun]}]", "schedule: [{days: [Mon-Fri]}]", false},
        {"schedule: [{days: [Fri], from: \"22:00\", to: \"02:00\"}]",
         "schedule: [{days: [Sat], from: \"01:00\", to: \"03:00\"}]", true},
        {"schedule: [{days: [Sat], from: \"22:00\", to: \"02:00\"}]",
         "schedule: [{days: [Mon], from: \"02:00\", to: \"03:00\"}]", false},
        {"schedule: [{days: [Sat], from: \"22:00\", to: \"02:00\"}]",
         "schedule: [{days: [Sun], from: \"01:59\", to: \"03:00\"}]", true},
        /* windows in different zones are assumed to overlap */
        {"schedule: [{days: [Sat]}]", "timeZone: \"UTC+01:00\", schedule: [{days: [Mon]}]", true},
        {"schedule: [{days: [Sat]}]", "timeZone: UTC, schedule: [{days: [Mon]}]", false},
    };
    for (size_t i = 0; i < GP_ARRAY_LEN(cases); i++) {
        char yaml[2048];
        snprintf(yaml, sizeof yaml,
                 HDR "metadata: {name: a}\nspec: {priority: 3%s%s}\n---\n" HDR
                     "metadata: {name: b}\nspec: {priority: 3%s%s}\n",
                 *cases[i].a ? ", " : "", cases[i].a, *cases[i].b ? ", " : "", cases[i].b);
        policy_diag diag = {0};
        int n = errors_of(yaml, &diag);
        ck_assert_msg((n > 0) == cases[i].conflict, "case %zu: %d errors (%s)\n%s", i, n,
                      n ? diag.msgs[0] : "", yaml);
        if (n)
            ck_assert(strstr(diag.msgs[0], "have the same priority 3") != NULL);
        policy_diag_free(&diag);
    }
}
END_TEST

/* ============================================================ time windows */

START_TEST(window_same_day)
{
    gp_policy_set *s = set_from(HDR "metadata: {name: office}\n"
                                    "spec:\n"
                                    "  priority: 1\n"
                                    "  schedule: [{days: [Mon-Fri], from: \"08:00\", to: \"20:00\"}]\n");
    /* 2026-11-23 is a Monday */
    ck_assert_str_eq(chosen(s, "x", NULL, utc(2026, 11, 23, 8, 0)), "office");
    ck_assert_str_eq(chosen(s, "x", NULL, utc(2026, 11, 23, 19, 59)), "office");
    ck_assert_str_eq(chosen(s, "x", NULL, utc(2026, 11, 23, 20, 0)), "default");
    ck_assert_str_eq(chosen(s, "x", NULL, utc(2026, 11, 23, 7, 59)), "default");
    ck_assert_str_eq(chosen(s, "x", NULL, utc(2026, 11, 27, 12, 0)), "office");   /* Fri */
    ck_assert_str_eq(chosen(s, "x", NULL, utc(2026, 11, 28, 12, 0)), "default");  /* Sat */
    ck_assert_str_eq(chosen(s, "x", NULL, utc(2026, 11, 29, 12, 0)), "default");  /* Sun */
    policy_set_unref(s);
}
END_TEST

START_TEST(window_crosses_midnight)
{
    gp_policy_set *s = set_from(HDR "metadata: {name: night}\n"
                                    "spec:\n"
                                    "  priority: 1\n"
                                    "  schedule: [{days: [Fri], from: \"20:00\", to: \"08:00\"}]\n");
    /* 2026-11-27 is a Friday: the window runs Fri 20:00 .. Sat 08:00 */
    ck_assert_str_eq(chosen(s, "x", NULL, utc(2026, 11, 27, 20, 0)), "night");
    ck_assert_str_eq(chosen(s, "x", NULL, utc(2026, 11, 27, 23, 59)), "night");
    ck_assert_str_eq(chosen(s, "x", NULL, utc(2026, 11, 28, 0, 0)), "night");
    ck_assert_str_eq(chosen(s, "x", NULL, utc(2026, 11, 28, 7, 59)), "night");
    ck_assert_str_eq(chosen(s, "x", NULL, utc(2026, 11, 28, 8, 0)), "default");
    ck_assert_str_eq(chosen(s, "x", NULL, utc(2026, 11, 27, 19, 59)), "default");
    ck_assert_str_eq(chosen(s, "x", NULL, utc(2026, 11, 27, 3, 0)), "default");   /* Thu night */
    ck_assert_str_eq(chosen(s, "x", NULL, utc(2026, 11, 28, 21, 0)), "default");  /* Sat eve */
    policy_set_unref(s);
}
END_TEST

START_TEST(window_days_wrap_and_defaults)
{
    gp_policy_set *s = set_from(HDR "metadata: {name: w}\n"
                                    "spec:\n"
                                    "  priority: 1\n"
                                    "  schedule:\n"
                                    "    - days: [Fri-Mon]\n"        /* wraps over the weekend */
                                    "    - {days: [wednesday], to: \"06:00\"}\n");
    ck_assert_str_eq(chosen(s, "x", NULL, utc(2026, 11, 27, 0, 0)), "w");   /* Fri */
    ck_assert_str_eq(chosen(s, "x", NULL, utc(2026, 11, 29, 23, 59)), "w"); /* Sun */
    ck_assert_str_eq(chosen(s, "x", NULL, utc(2026, 11, 30, 12, 0)), "w");  /* Mon */
    ck_assert_str_eq(chosen(s, "x", NULL, utc(2026, 12, 1, 12, 0)), "default"); /* Tue */
    ck_assert_str_eq(chosen(s, "x", NULL, utc(2026, 12, 2, 5, 59)), "w");   /* Wed early */
    ck_assert_str_eq(chosen(s, "x", NULL, utc(2026, 12, 2, 6, 0)), "default");
    policy_set_unref(s);
}
END_TEST

START_TEST(window_fixed_offset)
{
    gp_policy_set *s = set_from(HDR "metadata: {name: ist}\n"
                                    "spec:\n"
                                    "  priority: 1\n"
                                    "  timeZone: \"UTC+05:30\"\n"
                                    "  schedule: [{days: [Mon], from: \"09:00\", to: \"10:00\"}]\n");
    /* Mon 09:00 at +05:30 is Mon 03:30 UTC */
    ck_assert_str_eq(chosen(s, "x", NULL, utc(2026, 11, 23, 3, 29)), "default");
    ck_assert_str_eq(chosen(s, "x", NULL, utc(2026, 11, 23, 3, 30)), "ist");
    ck_assert_str_eq(chosen(s, "x", NULL, utc(2026, 11, 23, 4, 29)), "ist");
    ck_assert_str_eq(chosen(s, "x", NULL, utc(2026, 11, 23, 4, 30)), "default");
    policy_set_unref(s);
}
END_TEST

START_TEST(window_iana_zone_follows_dst)
{
    if (!have_zone("Europe/Berlin"))
        return;   /* tzdata not installed: nothing to test against */
    gp_policy_set *s = set_from(HDR "metadata: {name: berlin-day}\n"
                                    "spec:\n"
                                    "  priority: 1\n"
                                    "  timeZone: Europe/Berlin\n"
                                    "  schedule: [{from: \"08:00\", to: \"20:00\"}]\n");
    /* summer (CEST, +2): 08:00 local = 06:00 UTC */
    ck_assert_str_eq(chosen(s, "x", NULL, utc(2026, 7, 1, 6, 0)), "berlin-day");
    ck_assert_str_eq(chosen(s, "x", NULL, utc(2026, 7, 1, 5, 59)), "default");
    ck_assert_str_eq(chosen(s, "x", NULL, utc(2026, 7, 1, 17, 59)), "berlin-day");
    ck_assert_str_eq(chosen(s, "x", NULL, utc(2026, 7, 1, 18, 0)), "default");
    /* winter (CET, +1): 08:00 local = 07:00 UTC */
    ck_assert_str_eq(chosen(s, "x", NULL, utc(2026, 1, 15, 6, 30)), "default");
    ck_assert_str_eq(chosen(s, "x", NULL, utc(2026, 1, 15, 7, 0)), "berlin-day");
    /* far beyond the zone file's table: the POSIX rule applies */
    ck_assert_str_eq(chosen(s, "x", NULL, utc(2101, 7, 1, 6, 0)), "berlin-day");
    ck_assert_str_eq(chosen(s, "x", NULL, utc(2101, 1, 1, 6, 30)), "default");
    policy_set_unref(s);
}
END_TEST

START_TEST(tz_offsets)
{
    static const struct {
        const char *zone;
        time_t t;
        int32_t off;
    } cases[] = {
        {"UTC", 0, 0},
        {"UTC+02:00", 0, 7200},
        {"UTC-05:30", 0, -19800},
        {"UTC+14", 0, 50400},
        {"America/New_York", 1772953199, -18000},   /* 2026-03-08 06:59:59Z, EST */
        {"America/New_York", 1772953200, -14400},   /* 2026-03-08 07:00:00Z, EDT */
        {"America/New_York", 1793512799, -14400},   /* 2026-11-01 05:59:59Z, EDT */
        {"America/New_York", 1793512800, -18000},   /* 2026-11-01 06:00:00Z, EST */
        {"Australia/Sydney", 1782864000, 36000},    /* 2026-07-01, winter AEST */
        {"Australia/Sydney", 1767225600, 39600},    /* 2026-01-01, summer AEDT */
        {"Australia/Sydney", 4133980800, 39600},    /* 2101-01-01, from the rule */
        {"Asia/Kolkata", 1767225600, 19800},
        {"Europe/Berlin", -1000000000, 3600},        /* 1938, before most rules */
    };
    for (size_t i = 0; i < GP_ARRAY_LEN(cases); i++) {
        if (strchr(cases[i].zone, '/') && !have_zone(cases[i].zone))
            continue;
        policy_tz *tz = NULL;
        gp_err err;
        ck_assert_msg(policy_tz_load(cases[i].zone, &tz, &err) == 0, "%s", err.msg);
        ck_assert_msg(policy_tz_offset(tz, cases[i].t) == cases[i].off, "%s at %lld: %d",
                      cases[i].zone, (long long)cases[i].t, policy_tz_offset(tz, cases[i].t));
        policy_tz_free(tz);
    }
    ck_assert_int_eq(policy_tz_offset(NULL, 12345), 0);
    int wday, minute;
    policy_tz_local(NULL, utc(2026, 11, 23, 13, 45), &wday, &minute);
    ck_assert_int_eq(wday, 1);
    ck_assert_int_eq(minute, 13 * 60 + 45);
    policy_tz_local(NULL, -1, &wday, &minute);   /* 1969-12-31 23:59:59, a Wednesday */
    ck_assert_int_eq(wday, 3);
    ck_assert_int_eq(minute, 23 * 60 + 59);

    static const char *bad[] = {"UTC+15", "UTC+2:3", "UTC+", "../etc/passwd", "/etc/localtime",
                                "Europe//Berlin", "Nope/Zone", "Europe", ""};
    for (size_t i = 0; i < GP_ARRAY_LEN(bad); i++) {
        policy_tz *tz = NULL;
        gp_err err;
        ck_assert_msg(policy_tz_load(bad[i], &tz, &err) == -1, "%s loaded", bad[i]);
        ck_assert_ptr_null(tz);
    }
    policy_tz_free(NULL);
}
END_TEST

/* ============================================================ shipped files */

START_TEST(shipped_policies)
{
    static const char *files[] = {"policies/default.yaml", "policies/inference.yaml",
                                  "policies/notebook.yaml", "policies/batch-day.yaml",
                                  "policies/batch-night.yaml"};
    gp_policy_set *s = NULL;
    policy_diag diag = {0};
    int rc = policy_set_load_files(files, (int)GP_ARRAY_LEN(files), &s, &diag);
    ck_assert_msg(rc == 0, "%s", diag.n ? diag.msgs[0] : "?");
    ck_assert_int_eq(policy_set_count(s), 5);

    json_t *nb = json_pack("{s:s}", "app.kubernetes.io/component", "notebook");
    json_t *batch = json_pack("{s:s}", "gpupack.io/workload", "batch");
    ck_assert_str_eq(chosen(s, "serving", NULL, 0), "inference");
    ck_assert_str_eq(chosen(s, "serving", batch, 0), "default");
    ck_assert_str_eq(chosen(s, "research", nb, 0), "notebook");
    /* The batch pair covers the whole week between them, by Berlin time. */
    if (have_zone("Europe/Berlin")) {
        ck_assert_str_eq(chosen(s, "batch", NULL, utc(2026, 11, 23, 10, 0)), "batch-day");
        ck_assert_str_eq(chosen(s, "batch", NULL, utc(2026, 11, 23, 19, 30)), "batch-night");
        ck_assert_str_eq(chosen(s, "batch", NULL, utc(2026, 11, 28, 10, 0)), "batch-night");
        ck_assert_str_eq(chosen(s, "batch", NULL, utc(2026, 11, 30, 6, 59)), "batch-night");
        ck_assert_str_eq(chosen(s, "batch", NULL, utc(2026, 11, 30, 7, 0)), "batch-day");
        for (time_t t = utc(2026, 3, 1, 0, 0); t < utc(2026, 4, 15, 0, 0); t += 600) {
            const char *got = chosen(s, "batch", NULL, t);
            ck_assert_msg(!strcmp(got, "batch-day") || !strcmp(got, "batch-night"), "%lld: %s",
                          (long long)t, got);
        }
    }
    gp_policy_view v;
    gp_err err;
    ck_assert_int_eq(policy_select(s, "batch", NULL, "inference", 0, &v, &err), 0);
    ck_assert_str_eq(v.place.gpu->name, "spread");
    ck_assert_int_eq(policy_select(s, "batch", NULL, "notebook", 0, &v, &err), -1);

    json_t *j = policy_set_to_json(s, 0);
    ck_assert_int_eq(json_array_size(j), 5);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(j, 0), "name")),
                     "inference");
    json_decref(j);
    json_decref(nb);
    json_decref(batch);
    policy_set_unref(s);
    policy_diag_free(&diag);

    gp_err e2;
    ck_assert_msg(policy_set_load_file("policies/notebook.yaml", &s, &e2) == 0, "%s", e2.msg);
    ck_assert_int_eq(policy_set_count(s), 2);
    policy_set_unref(s);
}
END_TEST

Suite *suite_policy(void);
Suite *suite_policy(void)
{
    Suite *s = suite_create("policy");
    TCase *tc = tcase_create("validation");
    tcase_add_loop_test(tc, bad_fixture, 0, (int)GP_ARRAY_LEN(bad_cases));
    tcase_add_test(tc, dra_drivers);
    tcase_add_test(tc, request_formats);
    tcase_add_test(tc, every_error_of_a_file);
    tcase_add_test(tc, errors_across_files);
    tcase_add_test(tc, bounds);
    suite_add_tcase(s, tc);
    tc = tcase_create("select");
    tcase_add_test(tc, view_fields);
    tcase_add_test(tc, default_set);
    tcase_add_test(tc, file_default_replaces_builtin);
    tcase_add_test(tc, label_operators);
    tcase_add_test(tc, priority_order);
    tcase_add_test(tc, requested_policy);
    tcase_add_test(tc, conflicts);
    suite_add_tcase(s, tc);
    tc = tcase_create("time");
    tcase_add_test(tc, window_same_day);
    tcase_add_test(tc, window_crosses_midnight);
    tcase_add_test(tc, window_days_wrap_and_defaults);
    tcase_add_test(tc, window_fixed_offset);
    tcase_add_test(tc, window_iana_zone_follows_dst);
    tcase_add_test(tc, tz_offsets);
    suite_add_tcase(s, tc);
    tc = tcase_create("shipped");
    tcase_add_test(tc, shipped_policies);
    suite_add_tcase(s, tc);
    return s;
}
