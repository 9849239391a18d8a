/* test_placement.c -- fitting pods onto a node's GPUs: strategies, reasons, accounting. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "pack/placement.h"
#include "testutil.h"

/* ------------------------------------------------- GPU choice, a table -- */

typedef struct choice_case {
    const char *strategy;
    int64_t mem[4], used[4];
    int used_core[4];
    int64_t req_mem;
    int req_core;
    int want_index;            /* GPU chosen, or -1 = no fit */
} choice_case;

static const choice_case choices[] = {
    /* best-fit: the GPU left tightest */
    {"best-fit", {16384, 16384, 16384, 16384}, {0, 8192, 12288, 0}, {0, 0, 0, 0}, 4096, 0, 2},
    {"best-fit", {16384, 16384, 16384, 16384}, {0, 8192, 14336, 0}, {0, 0, 0, 0}, 4096, 0, 1},
    /* compute counts too: GPU 2 has the memory but not the compute */
    {"best-fit", {16384, 16384, 16384, 16384}, {0, 8192, 12288, 0}, {0, 0, 900, 0}, 4096, 200, 1},
    /* binpack: the most used GPU that fits */
    {"binpack", {16384, 16384, 16384, 16384}, {4096, 8192, 0, 0}, {0, 0, 0, 0}, 4096, 0, 1},
    /* spread: the least used */
    {"spread", {16384, 16384, 16384, 16384}, {4096, 8192, 1024, 2048}, {0, 0, 0, 0}, 4096, 0, 2},
    /* first-fit: lowest index that fits */
    {"first-fit", {16384, 16384, 16384, 16384}, {16000, 8192, 0, 0}, {0, 0, 0, 0}, 4096, 0, 1},
    /* heterogeneous: best-fit prefers the small GPU that fits exactly */
    {"best-fit", {81920, 24576, 81920, 16384}, {0, 0, 0, 0}, {0, 0, 0, 0}, 16384, 0, 3},
    /* nothing fits */
    {"best-fit", {16384, 16384, 16384, 16384}, {16000, 16000, 16000, 16000}, {0, 0, 0, 0}, 4096, 0,
     -1},
};

START_TEST(gpu_choice)
{
    const choice_case *c = &choices[_i];
    gp_node *n = tu_node("n", 4, c->mem, c->used, c->used_core);
    gp_pod_req r;
    tu_req(&r, "u1", 1, c->req_mem, c->req_core);
    gp_place_opts o;
    placement_default_opts(&o);
    o.gpu = placement_gpu_strategy(c->strategy);
    ck_assert_ptr_nonnull(o.gpu);
    gp_assignment a;
    gp_fit_fail why;
    int rc = placement_fit(n, &r, &o, &a, &why);
    if (c->want_index < 0) {
        ck_assert_int_eq(rc, -1);
        ck_assert_msg(!why.unresolvable, "a full node is resolvable");
    } else {
        ck_assert_int_eq(rc, 0);
        ck_assert_int_eq(a.nctrs, 1);
        ck_assert_int_eq(a.ctrs[0].ngpus, 1);
        ck_assert_int_eq(a.ctrs[0].gpus[0].index, c->want_index);
        ck_assert_int_eq(a.ctrs[0].gpus[0].mem_mib, c->req_mem);
        ck_assert_int_eq(a.ctrs[0].gpus[0].core, c->req_core);
        ck_assert_str_eq(a.node, "n");
    }
    free(n);
}
END_TEST

/* ---------------------------------------------- failure reasons, a table -- */

typedef struct reason_case {
    int64_t mem[2], used[2];
    int used_core[2];
    bool healthy1;
    const char *models;         /* pod's gpu-model constraint */
    int count;
    int64_t req_mem;
    int req_core;
    bool unresolvable;
    const char *fragment;       /* must appear in the reason */
} reason_case;

static const reason_case reasons[] = {
    {{16384, 16384}, {14336, 12288}, {0, 0}, true, "", 1, 8192, 0, false,
     "largest free GPU has 4096 MiB, container main needs 8192 MiB per GPU"},
    {{16384, 16384}, {0, 0}, {0, 0}, true, "", 1, 20480, 0, true, "even with all GPUs free"},
    {{16384, 16384}, {0, 0}, {800, 900}, true, "", 1, 1024, 300, false,
     "most free compute on a GPU with enough memory is 20.0%, container main needs 30.0%"},
    {{16384, 16384}, {0, 0}, {0, 0}, true, "", 4, 1024, 0, true, "needs 4 GPUs, node has 2"},
    {{16384, 16384}, {0, 0}, {0, 0}, true, "T4|A10", 1, 1024, 0, true, "no healthy GPU of model T4|A10"},
    {{16384, 16384}, {16000, 0}, {0, 0}, false, "", 1, 1024, 0, false, "largest free GPU has 384 MiB"},
};

START_TEST(fail_reasons)
{
    const reason_case *c = &reasons[_i];
    gp_node *n = tu_node("n", 2, c->mem, c->used, c->used_core);
    n->gpus[1].info.healthy = c->healthy1;
    gp_pod_req r;
    tu_req(&r, "u1", c->count, c->req_mem, c->req_core);
    gp_strlcpy(r.models, c->models, sizeof r.models);
    gp_place_opts o;
    placement_default_opts(&o);
    gp_assignment a;
    gp_fit_fail why;
    ck_assert_int_eq(placement_fit(n, &r, &o, &a, &why), -1);
    ck_assert_msg(strstr(why.reason, c->fragment), "reason \"%s\" lacks \"%s\"", why.reason,
                  c->fragment);
    ck_assert_int_eq(why.unresolvable, c->unresolvable);
    free(n);
}
END_TEST

START_TEST(no_gpus_is_unresolvable)
{
    gp_node *n = tu_node("cpu", 0, NULL, NULL, NULL);
    gp_pod_req r;
    tu_req(&r, "u", 1, 1, 0);
    gp_place_opts o;
    placement_default_opts(&o);
    gp_assignment a;
    gp_fit_fail why;
    ck_assert_int_eq(placement_fit(n, &r, &o, &a, &why), -1);
    ck_assert(why.unresolvable);
    ck_assert_str_eq(why.reason, "node has no GPUs known to gpupack");
    free(n);
}
END_TEST

/* -------------------------------------------------- multi-GPU, multi-ctr -- */

START_TEST(multi_gpu_container_uses_distinct_gpus)
{
    int64_t mem[4] = {16384, 16384, 16384, 16384}, used[4] = {0, 12288, 0, 0};
    gp_node *n = tu_node("n", 4, mem, used, NULL);
    gp_pod_req r;
    tu_req(&r, "u", 3, 8192, 0);
    gp_place_opts o;
    placement_default_opts(&o);
    gp_assignment a;
    ck_assert_int_eq(placement_fit(n, &r, &o, &a, NULL), 0);
    ck_assert_int_eq(a.ctrs[0].ngpus, 3);
    bool seen[4] = {false};
    for (int i = 0; i < 3; i++) {
        int idx = a.ctrs[0].gpus[i].index;
        ck_assert_int_ne(idx, 1);   /* GPU 1 has only 4096 free */
        ck_assert(!seen[idx]);
        seen[idx] = true;
    }
    free(n);
}
END_TEST

START_TEST(containers_of_a_pod_add_up_on_a_gpu)
{
    int64_t mem[1] = {16384};
    gp_node *n = tu_node("n", 1, mem, NULL, NULL);
    gp_pod_req r;
    tu_req(&r, "u", 1, 8192, 400);
    tu_add_ctr(&r, "side", false, 1, 8192, 600);
    gp_place_opts o;
    placement_default_opts(&o);
    gp_assignment a;
    ck_assert_int_eq(placement_fit(n, &r, &o, &a, NULL), 0);
    /* one more MiB and the two containers no longer fit together */
    r.ctrs[1].mem_mib = 8193;
    gp_fit_fail why;
    ck_assert_int_eq(placement_fit(n, &r, &o, &a, &why), -1);
    ck_assert(why.unresolvable);
    r.ctrs[1].mem_mib = 8192;
    r.ctrs[1].core = 601;
    ck_assert_int_eq(placement_fit(n, &r, &o, &a, &why), -1);
    free(n);
}
END_TEST

START_TEST(init_containers_hold_the_max_not_the_sum)
{
    int64_t mem[1] = {16384};
    gp_node *n = tu_node("n", 1, mem, NULL, NULL);
    gp_pod_req r;
    memset(&r, 0, sizeof r);
    gp_strlcpy(r.uid, "u", sizeof r.uid);
    tu_add_ctr(&r, "init-weights", true, 1, 12288, 0);
    tu_add_ctr(&r, "trainer", false, 1, 8192, 500);
    gp_place_opts o;
    placement_default_opts(&o);
    gp_assignment a;
    /* 12288 (init) + 8192 (regular) > 16384, but they never run together */
    ck_assert_int_eq(placement_fit(n, &r, &o, &a, NULL), 0);
    gp_hold h[GP_MAX_GPUS_PER_NODE];
    ck_assert_int_eq(gp_assignment_holds(&a, h), 1);
    ck_assert_int_eq(h[0].mem_mib, 12288);
    ck_assert_int_eq(h[0].core, 500);
    /* regular containers are listed first in the assignment */
    ck_assert(!a.ctrs[0].init);
    ck_assert(a.ctrs[1].init);
    ck_assert_int_eq(placement_apply(n, &a, 1), 0);
    ck_assert_int_eq(n->gpus[0].mem_used, 12288);
    ck_assert_int_eq(n->gpus[0].pods, 1);
    ck_assert_int_eq(placement_apply(n, &a, -1), 0);
    ck_assert_int_eq(n->gpus[0].mem_used, 0);
    ck_assert_int_eq(n->gpus[0].pods, 0);
    free(n);
}
END_TEST

START_TEST(whole_gpu_and_reserve)
{
    int64_t mem[2] = {16384, 16384}, used[2] = {1, 0};
    gp_node *n = tu_node("n", 2, mem, used, NULL);
    gp_pod_req r;
    tu_req(&r, "u", 1, 0, GP_CORE_FULL);
    r.ctrs[0].mem_ppm = GP_PPM_FULL;
    gp_place_opts o;
    placement_default_opts(&o);
    o.reserve_mem_mib = 1024;
    gp_assignment a;
    ck_assert_int_eq(placement_fit(n, &r, &o, &a, NULL), 0);
    ck_assert_int_eq(a.ctrs[0].gpus[0].index, 1);           /* GPU 0 is not empty */
    ck_assert_int_eq(a.ctrs[0].gpus[0].mem_mib, 16384 - 1024);
    /* the reserve also shrinks what a MiB request can get */
    tu_req(&r, "u", 1, 16384 - 1023, 0);
    gp_fit_fail why;
    ck_assert_int_eq(placement_fit(n, &r, &o, &a, &why), -1);
    ck_assert(why.unresolvable);
    free(n);
}
END_TEST

START_TEST(max_pods_per_gpu)
{
    int64_t mem[1] = {16384}, used[1] = {1024};
    gp_node *n = tu_node("n", 1, mem, used, NULL);
    n->gpus[0].pods = 2;
    gp_pod_req r;
    tu_req(&r, "u", 1, 1024, 0);
    gp_place_opts o;
    placement_default_opts(&o);
    gp_assignment a;
    gp_fit_fail why;
    o.max_pods_per_gpu = 3;
    ck_assert_int_eq(placement_fit(n, &r, &o, &a, NULL), 0);
    o.max_pods_per_gpu = 2;
    ck_assert_int_eq(placement_fit(n, &r, &o, &a, &why), -1);
    ck_assert_msg(strstr(why.reason, "maximum of 2 pods"), "%s", why.reason);
    ck_assert(!why.unresolvable);
    free(n);
}
END_TEST

START_TEST(policy_models_and_unhealthy)
{
    int64_t mem[2] = {16384, 16384};
    gp_node *n = tu_node("n", 2, mem, NULL, NULL);
    n->gpus[1].info.model = gp_model_intern("Tesla-T4");
    gp_pod_req r;
    tu_req(&r, "u", 1, 1024, 0);
    gp_place_opts o;
    placement_default_opts(&o);
    gp_strlcpy(o.models, "T4", sizeof o.models);
    gp_assignment a;
    ck_assert_int_eq(placement_fit(n, &r, &o, &a, NULL), 0);
    ck_assert_int_eq(a.ctrs[0].gpus[0].index, 1);
    n->gpus[1].info.healthy = false;
    gp_fit_fail why;
    ck_assert_int_eq(placement_fit(n, &r, &o, &a, &why), -1);
    ck_assert(why.unresolvable);
    free(n);
}
END_TEST

/* --------------------------------------------------------- node scores -- */

START_TEST(node_scores_order)
{
    int64_t mem[2] = {16384, 16384}, busy[2] = {8192, 8192};
    gp_node *empty = tu_node("empty", 2, mem, NULL, NULL);
    gp_node *full = tu_node("busy", 2, mem, busy, NULL);
    gp_pod_req r;
    tu_req(&r, "u", 1, 4096, 0);
    gp_place_opts o;
    placement_default_opts(&o);
    gp_assignment ae, ab;
    ck_assert_int_eq(placement_fit(empty, &r, &o, &ae, NULL), 0);
    ck_assert_int_eq(placement_fit(full, &r, &o, &ab, NULL), 0);
    o.node = placement_node_strategy("binpack");
    ck_assert(placement_node_score(full, &r, &ab, &o) > placement_node_score(empty, &r, &ae, &o));
    o.node = placement_node_strategy("spread");
    ck_assert(placement_node_score(full, &r, &ab, &o) < placement_node_score(empty, &r, &ae, &o));
    free(empty);
    free(full);
}
END_TEST

START_TEST(normalize)
{
    double raw[4] = {0.2, 0.6, 0.4, 0.6};
    int s[4];
    placement_normalize(raw, 4, s);
    ck_assert_int_eq(s[0], 0);
    ck_assert_int_eq(s[1], 10);
    ck_assert_int_eq(s[2], 5);
    ck_assert_int_eq(s[3], 10);
    double same[2] = {0.3, 0.3};
    placement_normalize(same, 2, s);
    ck_assert_int_eq(s[0], 10);
    ck_assert_int_eq(s[1], 10);
}
END_TEST

START_TEST(strategy_tables)
{
    const char *const *g = placement_gpu_strategy_names();
    int n = 0;
    for (; g[n]; n++)
        ck_assert_ptr_eq(placement_gpu_strategy(g[n])->name, g[n]);
    ck_assert_int_ge(n, 4);
    ck_assert_ptr_null(placement_gpu_strategy("worst-fit"));
    ck_assert_ptr_nonnull(placement_node_strategy("binpack"));
    ck_assert_ptr_nonnull(placement_node_strategy("spread"));
    ck_assert_ptr_null(placement_node_strategy(""));
}
END_TEST

START_TEST(apply_rejects_unknown_gpu)
{
    int64_t mem[1] = {16384};
    gp_node *n = tu_node("n", 1, mem, NULL, NULL);
    gp_assignment a = {.nctrs = 1};
    a.ctrs[0].ngpus = 2;
    a.ctrs[0].gpus[0] = (gp_gpu_grant){0, 100, 0};
    a.ctrs[0].gpus[1] = (gp_gpu_grant){7, 100, 0};
    ck_assert_int_eq(placement_apply(n, &a, 1), -1);
    ck_assert_int_eq(n->gpus[0].mem_used, 0);   /* all or nothing */
    free(n);
}
END_TEST

/* GPUs in the same state are costed once per container (placement.c,
 * same_gpu_state): the choice must be the one every GPU costed would give.
 * The reference is the same strategy flagged per_node, which costs each GPU.
 * Nodes whose GPUs repeat a few states, pods of one to three containers (one
 * an init container, some of several GPUs). */
START_TEST(equal_gpus_costed_once_choose_as_each_costed)
{
    static const int64_t mems[] = {16384, 16384, 24576};
    static const int64_t useds[] = {0, 0, 4096, 8192, 16384};
    static const int cores[] = {0, 0, 300, 500, 1000};
    uint64_t st = 11;
    int placed = 0;
    for (const char *const *name = placement_gpu_strategy_names(); *name; name++) {
        gp_gpu_strategy ref = *placement_gpu_strategy(*name);
        if (ref.per_node)
            continue;
        ref.per_node = true;
        for (int round = 0; round < 300; round++) {
            int64_t mem[8], used[8];
            int core[8];
            for (int i = 0; i < 8; i++) {
                st = st * 6364136223846793005ull + 1442695040888963407ull;
                int u = (int)(st >> 33) % 5, v = (int)(st >> 40) % 5;   /* memory and compute apart */
                mem[i] = mems[(st >> 45) % 3];
                used[i] = useds[u] < mem[i] ? useds[u] : mem[i];
                core[i] = cores[v];
            }
            gp_node *n = tu_node("n", 8, mem, used, core);
            for (int i = 0; i < 8; i++)
                n->gpus[i].pods = used[i] > 0;
            gp_pod_req r;
            int count = 1 + (int)(st >> 50) % 3;
            tu_req(&r, "u", count, 2048 * (int64_t)(1 + (st >> 52) % 4), 100 * (int)((st >> 55) % 4));
            if (round % 3 == 0)
                tu_add_ctr(&r, "side", false, 1, 3072, 150);
            if (round % 4 == 1)
                tu_add_ctr(&r, "init", true, 2, 8192, 0);
            gp_place_opts o;
            placement_default_opts(&o);
            o.gpu = placement_gpu_strategy(*name);
            gp_place_opts o_ref = o;
            o_ref.gpu = &ref;
            gp_assignment a, b;
            int rc = placement_fit(n, &r, &o, &a, NULL), rc_ref = placement_fit(n, &r, &o_ref, &b, NULL);
            ck_assert_int_eq(rc, rc_ref);
            if (rc == 0) {
                ck_assert_int_eq(a.nctrs, b.nctrs);
                for (int c = 0; c < a.nctrs; c++) {
                    ck_assert_int_eq(a.ctrs[c].ngpus, b.ctrs[c].ngpus);
                    for (int g = 0; g < a.ctrs[c].ngpus; g++)
                        ck_assert_msg(a.ctrs[c].gpus[g].index == b.ctrs[c].gpus[g].index &&
                                          a.ctrs[c].gpus[g].mem_mib == b.ctrs[c].gpus[g].mem_mib,
                                      "%s, round %d, container %d: GPU %d, costed each: %d", *name,
                                      round, c, a.ctrs[c].gpus[g].index, b.ctrs[c].gpus[g].index);
                }
                placed++;
            }
            free(n);
        }
    }
    ck_assert_int_gt(placed, 500);
}
END_TEST

Suite *suite_placement(void);
Suite *suite_placement(void)
{
    Suite *s = suite_create("placement");
    TCase *t = tcase_create("core");
    tcase_add_loop_test(t, gpu_choice, 0, (int)(sizeof choices / sizeof choices[0]));
    tcase_add_loop_test(t, fail_reasons, 0, (int)(sizeof reasons / sizeof reasons[0]));
    tcase_add_test(t, no_gpus_is_unresolvable);
    tcase_add_test(t, multi_gpu_container_uses_distinct_gpus);
    tcase_add_test(t, containers_of_a_pod_add_up_on_a_gpu);
    tcase_add_test(t, init_containers_hold_the_max_not_the_sum);
    tcase_add_test(t, whole_gpu_and_reserve);
    tcase_add_test(t, max_pods_per_gpu);
    tcase_add_test(t, policy_models_and_unhealthy);
    tcase_add_test(t, node_scores_order);
    tcase_add_test(t, normalize);
    tcase_add_test(t, strategy_tables);
    tcase_add_test(t, apply_rejects_unknown_gpu);
    tcase_add_test(t, equal_gpus_costed_once_choose_as_each_costed);
    suite_add_tcase(s, t);
    return s;
}
