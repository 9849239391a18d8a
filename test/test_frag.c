/* test_frag.c -- the fragmentation measure, typical shapes, FGD strategies. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pack/frag.h"
#include "pack/frag_la.h"
#include "sim/trace.h"

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
        v.model[i] = gp_model_intern("G2");
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
    trace_shapes(p, 6, 1.0, true, false, &s);
    ck_assert_int_eq(s.n, 4);
    ck_assert_int_eq(s.s[0].core, 500);
    ck_assert_double_eq_tol(s.s[0].weight, 0.5, 1e-9);
    ck_assert_int_eq(s.s[0].cpu_milli, 1000);
    /* by GPU demand, the 8-GPU pod counts 8 times and comes first */
    trace_shapes(p, 6, 1.0, true, true, &s);
    ck_assert_int_eq(s.s[0].count, 8);
    ck_assert_double_eq_tol(s.s[0].weight, 8.0 / 13.0, 1e-9);
    /* coverage cuts the tail; weights renormalised */
    trace_shapes(p, 6, 0.5, false, false, &s);
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
        n->gpus[i].info.model = gp_model_intern("G2");
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
    r.ctrs[0].mem_ppm = 400000;
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
    r.ctrs[0].mem_ppm = 300000;
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

/* ---- reference look-ahead: the definition, written the straightforward way
 * (what src/pack/frag_la.c computed before it was optimised). The optimised code
 * must agree bit for bit: same decisions, same ties. ---- */

/* The view after a pod of shape m: a one-GPU shape on GPU `gpu`, a multi-GPU
 * shape on the first allowed GPUs that fit; false when m does not fit. */
static bool ref_place(const frag_view *v, const gp_shape *m, int gpu, frag_view *out)
{
    if (v->cpu_free >= 0 && m->cpu_milli > v->cpu_free)
        return false;
    *out = *v;
    if (out->cpu_free >= 0)
        out->cpu_free -= m->cpu_milli;
    if (m->count <= 0)
        return true;
    int need = m->core > 0 ? m->core : 1;
    int got = 0;
    for (int i = 0; i < out->n && got < m->count; i++) {
        if (m->count == 1 && i != gpu)
            continue;
        if (out->free[i] >= need && (!m->models[0] || gp_model_allowed(m->models, gp_model_name(out->model[i])))) {
            out->free[i] -= need;
            got++;
        }
    }
    return got == m->count;
}

static double ref_lookahead(const frag_view *v, const gp_shapes *shapes)
{
    double now = frag_amount(v, shapes);
    double sum = 0.0;
    for (int k = 0; k < shapes->n; k++) {
        const gp_shape *m = &shapes->s[k];
        if (m->weight <= 0)
            continue;
        double best = now;
        frag_view nx;
        if (m->count == 1) {   /* the best GPU, if better than the node as is */
            for (int g = 0; g < v->n; g++) {
                if (!ref_place(v, m, g, &nx))
                    continue;
                double f = frag_amount(&nx, shapes);
                if (f < best)
                    best = f;
            }
        } else if (ref_place(v, m, 0, &nx)) {   /* where it goes, whatever it leaves */
            best = frag_amount(&nx, shapes);
        }
        sum += m->weight * best;
    }
    return sum;
}

static double ref_score(const gp_node *node, const gp_pod_req *req, const gp_assignment *a,
                        const gp_place_opts *opts)
{
    frag_view before, after;
    frag_view_of_node(node, opts, &before);
    frag_view_after(node, req, a, opts, &after);
    double d = frag_amount(&before, opts->shapes) - frag_amount(&after, opts->shapes);
    double d2 = ref_lookahead(&before, opts->shapes) - ref_lookahead(&after, opts->shapes);
    double q = floor((d + 5.0 * d2) / 10.0 + 0.5) * 10.0;
    double left = after.n > 0 ? (double)frag_idle(&after) / after.n : 0.0;
    return q - left / (GP_CORE_FULL + 1.0);
}

/* A mixed bag of shapes: whole and shared GPUs, multi-GPU, CPU-only, CPU
 * requests that exclude some shapes, model lists, a zero weight, and several
 * shapes with the same GPU dimensions but different CPU. */
static gp_shapes mixed_shapes(void)
{
    static const struct {
        int count, core;
        int64_t cpu;
        double w;
        const char *models;
    } t[] = {
        {1, 1000, 8000, 0.20, ""},   {1, 1000, 32000, 0.10, ""}, {1, 1000, 4000, 0.05, ""},
        {1, 810, 6000, 0.12, ""},    {1, 810, 88000, 0.03, ""},  {1, 470, 4000, 0.08, ""},
        {1, 320, 12000, 0.05, ""},   {1, 230, 0, 0.04, ""},      {1, 500, 16000, 0.04, "T4"},
        {1, 600, 2000, 0.03, "G2|V100M16"}, {2, 1000, 16000, 0.06, ""}, {4, 1000, 32000, 0.04, ""},
        {8, 1000, 64000, 0.05, ""},  {2, 500, 8000, 0.02, "G2"}, {0, 0, 4000, 0.04, ""},
        {0, 0, 64000, 0.05, ""},     {1, 160, 2000, 0.0, ""},    {1, 0, 1000, 0.04, ""},
    };
    gp_shapes s;
    memset(&s, 0, sizeof s);
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        gp_shape *m = &s.s[s.n++];
        m->count = t[i].count;
        m->core = t[i].core;
        m->cpu_milli = t[i].cpu;
        m->weight = t[i].w;
        gp_strlcpy(m->models, t[i].models, sizeof m->models);
    }
    return s;
}

static uint32_t test_rng(uint64_t *st)
{
    *st = *st * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
    return (uint32_t)(*st >> 33);
}

START_TEST(lookahead_matches_reference)
{
    gp_shapes s = mixed_shapes();
    const gp_shapes *def = frag_default_shapes();
    /* hand-made views */
    static const int hand[][8] = {
        {1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000}, {0, 0, 0, 0, 0, 0, 0, 0},
        {190, 190, 1000, 530, 0, 1000, 680, 190},         {1000, 1000, 0, 0, 1000, 1000, 0, 0},
        {840, 1000, 1000, 1000, 1000, 1000, 1000, 770},   {10, 0, 0, 0, 0, 0, 0, 1},
    };
    static const int64_t cpus[] = {-1, 96000, 30000, 7000, 0};
    for (size_t h = 0; h < sizeof hand / sizeof hand[0]; h++) {
        for (size_t c = 0; c < sizeof cpus / sizeof cpus[0]; c++) {
            for (int n = 1; n <= 8; n *= 2) {
                frag_view v = view(n, hand[h], cpus[c]);
                ck_assert(frag_lookahead_amount(&v, &s) == ref_lookahead(&v, &s));
                ck_assert(frag_lookahead_amount(&v, def) == ref_lookahead(&v, def));
                ck_assert(frag_lookahead_amount(&v, NULL) == ref_lookahead(&v, def));
                v.model[n - 1] = gp_model_intern("T4");   /* a node with two models */
                ck_assert(frag_lookahead_amount(&v, &s) == ref_lookahead(&v, &s));
            }
        }
    }
    /* pseudo-random views: shares from a small set (so that GPUs repeat) */
    static const int shares[] = {0, 0, 1000, 1000, 190, 530, 680, 500, 320, 1};
    static const char *models[] = {"G2", "G2", "T4", "V100M16"};
    uint64_t st = 7;
    for (int r = 0; r < 400; r++) {
        frag_view v;
        memset(&v, 0, sizeof v);
        v.n = 1 + (int)(test_rng(&st) % 8);
        bool mixed = r % 3 == 0;
        for (int i = 0; i < v.n; i++) {
            v.free[i] = shares[test_rng(&st) % 10];
            v.model[i] = gp_model_intern(mixed ? models[test_rng(&st) % 4] : "G2");
        }
        v.cpu_free = r % 5 == 0 ? -1 : (int64_t)(test_rng(&st) % 100) * 1000;
        ck_assert(frag_lookahead_amount(&v, &s) == ref_lookahead(&v, &s));
    }
}
END_TEST

START_TEST(lookahead_score_matches_reference)
{
    gp_shapes s = mixed_shapes();
    gp_place_opts o;
    placement_default_opts(&o);
    o.gpu = placement_gpu_strategy("fragmentation-aware");
    o.node = placement_node_strategy("fragmentation-aware-lookahead");
    o.shapes = &s;
    /* node states: used compute per GPU (memory in proportion) and CPU */
    static const int used[][8] = {
        {0, 0, 0, 0, 0, 0, 0, 0},         {810, 810, 0, 470, 1000, 0, 320, 810},
        {1000, 1000, 1000, 1000, 0, 0, 0, 0}, {160, 0, 0, 0, 0, 0, 0, 230},
        {1000, 1000, 1000, 1000, 1000, 1000, 1000, 500},
    };
    static const int64_t cpu_used[] = {0, 40000, 90000};
    static const struct {
        int count, core;
        int64_t cpu;
    } reqs[] = {{1, 1000, 8000}, {1, 810, 6000}, {1, 470, 4000}, {2, 1000, 16000},
                {1, 190, 2000},  {4, 1000, 32000}, {1, 500, 0}};
    /* three passes: computed every time; then with the memory of node states
     * the extender gives (placement.h), first empty, then full: the same scores */
    gp_score_memo memo = {keycache_new(1024), 12345};
    int scored = 0;
    for (int pass = 0; pass < 3; pass++)
    for (size_t u = 0; u < sizeof used / sizeof used[0]; u++) {
        for (size_t c = 0; c < sizeof cpu_used / sizeof cpu_used[0]; c++) {
            gp_node n;
            g2_node(&n, 8);
            n.cpu_alloc_milli = 96000;
            n.cpu_used_milli = cpu_used[c];
            for (int i = 0; i < 8; i++) {
                n.gpus[i].core_used = used[u][i];
                n.gpus[i].mem_used = 20 * used[u][i];
                n.gpus[i].pods = used[u][i] > 0;
            }
            if (u == 1)
                n.gpus[5].info.healthy = false;
            n.state_hash = pass > 0 ? placement_state_hash(&n) : 0;
            o.memo = pass > 0 ? &memo : NULL;
            for (size_t q = 0; q < sizeof reqs / sizeof reqs[0]; q++) {
                gp_pod_req r;
                memset(&r, 0, sizeof r);
                r.nctrs = 1;
                r.ctrs[0].count = reqs[q].count;
                r.ctrs[0].core = reqs[q].core;
                r.ctrs[0].mem_ppm = reqs[q].core * 1000;
                r.cpu_milli = reqs[q].cpu;
                gp_assignment a;
                if (placement_fit(&n, &r, &o, &a, NULL) != 0)
                    continue;
                ck_assert_msg(placement_node_score(&n, &r, &a, &o) == ref_score(&n, &r, &a, &o),
                              "pass %d, state %zu, cpu %zu, request %zu", pass, u, c, q);
                scored++;
            }
        }
    }
    ck_assert_int_gt(scored, 120);
    unsigned long hits, misses;
    keycache_stats(memo.cache, &hits, &misses);
    ck_assert_uint_gt(hits, (unsigned long)scored / 2);   /* every state's score after its first */
    keycache_free(memo.cache);
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
    tcase_add_test(tc, lookahead_matches_reference);
    tcase_add_test(tc, lookahead_score_matches_reference);
    suite_add_tcase(s, tc);
    return s;
}
