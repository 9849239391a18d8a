/* test_frag.c -- the fragmentation measure, typical shapes, FGD strategies. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frag.h"
#include "frag_la.h"

static gp_shapes one_shape(int count, int core, int64_t cpu)
{
    gp_shapes s;
    memset(&s, 0, sizeof s);
    s.n = 1;
    s.s[0].count = count;
    s.s[0].core = core;
    s.s[0].cpu_milli = cpu;
    s.s[0].weight = 1.0;
    return s;
}

static frag_view view(int n, const int *free, int64_t cpu)
{
    frag_view v;
    memset(&v, 0, sizeof v);
    v.n = n;
    for (int i = 0; i < n; i++) {
        v.free[i] = free[i];
        v.model[i] = "G2";
    }
    v.cpu_free = cpu;
    return v;
}

START_TEST(measure_follows_the_definition)
{
    const int f[] = {1000, 600, 300, 0};
    frag_view v = view(4, f, 10000);
    ck_assert_int_eq(frag_idle(&v), 1900);
    /* hostable 1 x 500: only the GPU below 500 (300) is fragment */
    gp_shapes s = one_shape(1, 500, 0);
    ck_assert_double_eq_tol(frag_amount(&v, &s), 300, 1e-9);
    /* 2 x 1000 cannot be hosted: all idle share is fragment */
    s = one_shape(2, 1000, 0);
    ck_assert_double_eq_tol(frag_amount(&v, &s), 1900, 1e-9);
    /* CPU short: cannot host at all */
    s = one_shape(1, 100, 20000);
    ck_assert_double_eq_tol(frag_amount(&v, &s), 1900, 1e-9);
    /* CPU-only shape that fits: no GPU fragment */
    s = one_shape(0, 0, 5000);
    ck_assert_double_eq_tol(frag_amount(&v, &s), 0, 1e-9);
    /* model not allowed: everything is fragment */
    s = one_shape(1, 100, 0);
    gp_strlcpy(s.s[0].models, "T4", sizeof s.s[0].models);
    ck_assert_double_eq_tol(frag_amount(&v, &s), 1900, 1e-9);
    /* weights mix shapes */
    s.n = 2;
    s.s[0] = one_shape(1, 500, 0).s[0];
    s.s[1] = one_shape(2, 1000, 0).s[0];
    s.s[0].weight = 0.75;
    s.s[1].weight = 0.25;
    ck_assert_double_eq_tol(frag_amount(&v, &s), 0.75 * 300 + 0.25 * 1900, 1e-9);
}
END_TEST

START_TEST(free_share_takes_the_tighter_dimension)
{
    gp_gpu g;
    memset(&g, 0, sizeof g);
    g.info.mem_total = 20000;
    g.info.core_total = GP_CORE_FULL;
    g.info.healthy = true;
    ck_assert_int_eq(frag_gpu_free_share(&g, 20000, 1000, NULL), 1000);
    ck_assert_int_eq(frag_gpu_free_share(&g, 5000, 800, NULL), 250);
    ck_assert_int_eq(frag_gpu_free_share(&g, 20000, 300, NULL), 300);
}
END_TEST

START_TEST(typical_shapes_by_popularity)
{
    trace_pod p[6];
    memset(p, 0, sizeof p);
    for (int i = 0; i < 3; i++) {
        p[i].num_gpu = 1;
        p[i].gpu_milli = 500;
        p[i].cpu_milli = 1000;
    }
    p[3].num_gpu = 8;
    p[3].gpu_milli = 1000;
    p[4].cpu_milli = 2000;   /* CPU-only */
    p[5].num_gpu = 1;
    p[5].gpu_milli = 1000;
    gp_shapes s;
    frag_shapes_from_trace(p, 6, 1.0, true, false, &s);
    ck_assert_int_eq(s.n, 4);
    ck_assert_int_eq(s.s[0].core, 500);
    ck_assert_double_eq_tol(s.s[0].weight, 0.5, 1e-9);
    ck_assert_int_eq(s.s[0].cpu_milli, 1000);
    /* by GPU demand, the 8-GPU pod counts 8 times and comes first */
    frag_shapes_from_trace(p, 6, 1.0, true, true, &s);
    ck_assert_int_eq(s.s[0].count, 8);
    ck_assert_double_eq_tol(s.s[0].weight, 8.0 / 13.0, 1e-9);
    /* coverage cuts the tail; weights renormalised */
    frag_shapes_from_trace(p, 6, 0.5, false, false, &s);
    ck_assert_int_eq(s.n, 1);
    ck_assert_double_eq_tol(s.s[0].weight, 1.0, 1e-9);
    ck_assert(frag_default_shapes()->n > 0);
}
END_TEST

static void g2_node(gp_node *n, int ngpus)
{
    memset(n, 0, sizeof *n);
    gp_strlcpy(n->name, "n", sizeof n->name);
    n->ngpus = ngpus;
    for (int i = 0; i < ngpus; i++) {
        n->gpus[i].info.index = i;
        gp_strlcpy(n->gpus[i].info.model, "G2", sizeof n->gpus[i].info.model);
        n->gpus[i].info.mem_total = 20000;
        n->gpus[i].info.core_total = GP_CORE_FULL;
        n->gpus[i].info.healthy = true;
    }
}

START_TEST(fgd_gpu_choice_packs_the_partial_gpu)
{
    gp_node n;
    g2_node(&n, 3);
    n.gpus[1].core_used = 500;   /* GPU 1 half used */
    n.gpus[1].mem_used = 10000;
    n.gpus[1].pods = 1;
    gp_pod_req r;
    memset(&r, 0, sizeof r);
    r.nctrs = 1;
    r.ctrs[0].count = 1;
    r.ctrs[0].core = 400;
    r.ctrs[0].mem_permille = 400;
    gp_shapes s = one_shape(1, 1000, 0);
    gp_place_opts o;
    placement_default_opts(&o);
    o.gpu = placement_gpu_strategy("fragmentation-aware");
    o.node = placement_node_strategy("fragmentation-aware");
    o.shapes = &s;
    ck_assert_ptr_nonnull(o.gpu);
    ck_assert_ptr_nonnull(o.node);
    gp_assignment a;
    ck_assert_int_eq(placement_fit(&n, &r, &o, &a, NULL), 0);
    ck_assert_int_eq(a.ctrs[0].gpus[0].index, 1);
    /* the 1000 shape lost 500 of fragment and gained 100: score +400 */
    ck_assert_double_eq_tol(placement_node_score(&n, &r, &a, &o), 400, 1e-9);
    ck_assert_ptr_nonnull(placement_node_strategy("fragmentation-aware-bestfit"));
    ck_assert_ptr_nonnull(placement_node_strategy("best-fit"));
    ck_assert_ptr_nonnull(placement_node_strategy("random"));
    ck_assert_ptr_nonnull(placement_gpu_strategy("random"));
}
END_TEST

/* Shapes A = 1 x 1000 and B = 1 x 300, weight 0.5 each. Node [1000, 300] free:
 * F = 0.5 x 300 (A leaves the 300 GPU) + 0.5 x 0 = 150. Look-ahead: A on GPU 0
 * leaves [0, 300], F 150 (no better than now: 150); B on GPU 1 leaves
 * [1000, 0], F 0 (on GPU 0: 500). L = 0.5 x 150 + 0.5 x 0 = 75. */
START_TEST(lookahead_hand_computed)
{
    gp_shapes s;
    memset(&s, 0, sizeof s);
    s.n = 2;
    s.s[0] = one_shape(1, 1000, 0).s[0];
    s.s[1] = one_shape(1, 300, 0).s[0];
    s.s[0].weight = s.s[1].weight = 0.5;
    const int f[] = {1000, 300};
    frag_view v = view(2, f, -1);
    ck_assert_double_eq_tol(frag_amount(&v, &s), 150, 1e-9);
    ck_assert_double_eq_tol(frag_lookahead_amount(&v, &s), 75, 1e-9);
    /* a pod that can only make the node worse is assumed to go elsewhere:
     * [1000, 1000] under 1 x 600 alone stays 0 (placing it would leave 400) */
    const int g[] = {1000, 1000};
    frag_view w = view(2, g, -1);
    gp_shapes s6 = one_shape(1, 600, 0);
    ck_assert_double_eq_tol(frag_lookahead_amount(&w, &s6), 0, 1e-9);

    /* the same node for real; a 1 x 300 pod goes on GPU 1 (FGD) and leaves
     * [1000, 0]: F 0, L 0. Score: round((150 + 5 x 75) / 10) x 10 = 530,
     * minus the free share per GPU left (500) / 1001 */
    gp_node n;
    g2_node(&n, 2);
    n.gpus[1].core_used = 700;
    n.gpus[1].mem_used = 14000;
    n.gpus[1].pods = 1;
    gp_pod_req r;
    memset(&r, 0, sizeof r);
    r.nctrs = 1;
    r.ctrs[0].count = 1;
    r.ctrs[0].core = 300;
    r.ctrs[0].mem_permille = 300;
    gp_place_opts o;
    placement_default_opts(&o);
    o.gpu = placement_gpu_strategy("fragmentation-aware");
    o.node = placement_node_strategy("fragmentation-aware-lookahead");
    o.shapes = &s;
    ck_assert_ptr_nonnull(o.node);
    gp_assignment a;
    ck_assert_int_eq(placement_fit(&n, &r, &o, &a, NULL), 0);
    ck_assert_int_eq(a.ctrs[0].gpus[0].index, 1);
    ck_assert_double_eq_tol(placement_node_score(&n, &r, &a, &o), 530 - 500.0 / 1001, 1e-9);
}
END_TEST

Suite *suite_frag(void);
Suite *suite_frag(void)
{
    Suite *s = suite_create("frag");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, measure_follows_the_definition);
    tcase_add_test(tc, free_share_takes_the_tighter_dimension);
    tcase_add_test(tc, typical_shapes_by_popularity);
    tcase_add_test(tc, fgd_gpu_choice_packs_the_partial_gpu);
    tcase_add_test(tc, lookahead_hand_computed);
    suite_add_tcase(s, tc);
    return s;
}
