/* test_sim_churn.c -- the simulator's churn mode and consolidation on tiny traces.
 *
 * consol_*.csv: n0, n1 = 1 x G2 each (capacity 2000 milli). Pods in file
 * order (no shuffle): a 1 x 500, b 1 x 500, c 1 x 1000. With the spread
 * strategy a goes to n0 and b to n1, so c fits nowhere: half of each GPU is
 * free, no whole GPU. Consolidation moves one of them next to the other and
 * c runs: 2000 of 2000 allocated, one move for three placements.
 * Load 1.0 offers exactly a, b, c (2000 milli); the next arrival (a again,
 * 500) would pass the target. Lifetime 0: pods never leave. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"

#define FIX "test/fixtures/sim/"

static trace_node *nodes;
static trace_pod *pods;
static size_t nn, np;
static gp_shapes shapes;

static void load(const char *n, const char *p)
{
    gp_err err;
    ck_assert_msg(trace_load_nodes(n, &nodes, &nn, &err) == 0, "%s", err.msg);
    ck_assert_msg(trace_load_pods(p, &pods, &np, &err) == 0, "%s", err.msg);
    trace_shapes(pods, np, 1.0, true, true, &shapes);
}

static void setup(void)
{
    load(FIX "consol_nodes.csv", FIX "consol_pods.csv");
}

static void teardown(void)
{
    free(nodes);
    free(pods);
    nodes = NULL;
    pods = NULL;
}

static sim_config churn_config(const char *strategy, double load_, double lifetime)
{
    sim_config c;
    memset(&c, 0, sizeof c);
    c.nodes = nodes;
    c.nnodes = nn;
    c.pods = pods;
    c.npods = np;
    placement_default_opts(&c.place);
    c.place.node = placement_node_strategy(strategy);
    c.place.gpu = placement_gpu_strategy(strategy);
    c.place.shapes = &shapes;
    c.shapes = &shapes;
    c.mode = SIM_MODE_FILTER;
    c.weight = 1;
    c.cache = true;
    c.churn = true;
    c.churn_load = load_;
    c.churn_lifetime = lifetime;
    c.churn_horizon = 1;
    c.churn_warmup = 0;
    c.consol_max_moves = 4;
    return c;
}

START_TEST(fragmented_without_consolidation)
{
    sim_config c = churn_config("spread", 1.0, 0);
    sim_result r;
    gp_err err;
    ck_assert_msg(sim_run(&c, 42, &r, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(r.pods, 3);
    ck_assert_double_eq_tol(r.end.alloc, 0.5, 1e-9);
    ck_assert_double_eq_tol(r.churn.alloc_mean, 0.5, 1e-9);
    ck_assert_int_eq(r.churn.placements, 2);
    ck_assert_int_eq(r.churn.moves, 0);
    ck_assert_int_eq(r.churn.whole_arrived, 1);
    ck_assert_int_eq(r.churn.whole_waiting_end, 1);
    ck_assert_int_eq(r.failed[TRACE_KIND_GPU1], 1);
}
END_TEST

START_TEST(consolidation_makes_room)
{
    sim_config c = churn_config("spread", 1.0, 0);
    c.consol_budget = 50;   /* 50 % of the 2 pods placed when c arrives: one move */
    sim_result r;
    gp_err err;
    ck_assert_msg(sim_run(&c, 42, &r, &err) == 0, "%s", err.msg);
    ck_assert_double_eq_tol(r.end.alloc, 1.0, 1e-9);
    ck_assert_int_eq(r.churn.placements, 3);
    ck_assert_int_eq(r.churn.moves, 1);
    ck_assert_int_eq(r.churn.plans, 1);
    ck_assert_int_eq(r.churn.whole_waiting_end, 0);
    ck_assert_int_eq(r.churn.waiting_end, 0);
    ck_assert_int_eq(r.failed_total, 0);
    /* the frag metric sees no idle share left */
    ck_assert_double_eq_tol(r.end.frag, 0.0, 1e-9);
}
END_TEST

START_TEST(budget_and_limits_are_kept)
{
    sim_config c = churn_config("spread", 1.0, 0);
    c.consol_budget = 49;   /* 0.98 moves allowed: none */
    sim_result r;
    gp_err err;
    ck_assert_msg(sim_run(&c, 42, &r, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(r.churn.moves, 0);
    ck_assert_int_eq(r.churn.budget_refusals, 1);
    ck_assert_double_eq_tol(r.end.alloc, 0.5, 1e-9);
    /* bad limits and combinations are refused, not run */
    c.consol_budget = 50;
    c.consol_max_moves = 0;
    ck_assert_int_eq(sim_run(&c, 42, &r, &err), -1);
    c.consol_max_moves = 4;
    c.churn = false;
    ck_assert_int_eq(sim_run(&c, 42, &r, &err), -1);
    ck_assert_msg(strstr(err.msg, "churn") != NULL, "%s", err.msg);
    c.churn = true;
    c.departures = true;
    ck_assert_int_eq(sim_run(&c, 42, &r, &err), -1);
}
END_TEST

/* Background defragmentation: at load 0.5 only a and b arrive (c would pass
 * the target); spread leaves half of each GPU free and no GPU entirely free.
 * Asked to keep one GPU free, one move puts a and b together before any pod
 * asks for a whole GPU. */
START_TEST(defragmentation_frees_a_gpu_ahead_of_demand)
{
    sim_config c = churn_config("spread", 0.5, 0);
    c.consol_budget = 50;
    sim_result off, on;
    gp_err err;
    ck_assert_msg(sim_run(&c, 42, &off, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(off.churn.placements, 2);
    ck_assert_int_eq(off.churn.moves, 0);
    ck_assert_msg(off.end.frag > 0, "half-free GPUs are fragments for c: %f", off.end.frag);
    c.defrag_free = 1;
    ck_assert_msg(sim_run(&c, 42, &on, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(on.churn.placements, 2);
    ck_assert_int_eq(on.churn.moves, 1);
    ck_assert_int_eq(on.churn.defrag_plans, 1);
    ck_assert_int_eq(on.churn.plans, 0);   /* no pod waited */
    ck_assert_double_eq_tol(on.end.alloc, 0.5, 1e-9);
    ck_assert_double_eq_tol(on.end.frag, 0.0, 1e-9);
}
END_TEST

START_TEST(defragmentation_keeps_its_limits)
{
    sim_result r;
    gp_err err;
    /* one GPU already free (best fit packs a and b): nothing moves */
    sim_config c = churn_config("best-fit", 0.5, 0);
    c.consol_budget = 50;
    c.defrag_free = 1;
    ck_assert_msg(sim_run(&c, 42, &r, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(r.churn.moves, 0);
    ck_assert_int_eq(r.churn.defrag_plans, 0);
    /* two free GPUs asked of two: freeing the second (a and b leave it)
     * would fill the first, a plan that is refused, not carried out */
    c.consol_budget = 100;
    c.defrag_free = 2;
    ck_assert_msg(sim_run(&c, 42, &r, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(r.churn.moves, 0);
    ck_assert_int_eq(r.churn.defrag_plans, 0);
    ck_assert_int_eq(r.churn.defrag_failures, 1);
    c = churn_config("spread", 0.5, 0);
    /* the budget counts its moves: 49 % of 2 placements is no move */
    c.consol_budget = 49;
    c.defrag_free = 1;
    ck_assert_msg(sim_run(&c, 42, &r, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(r.churn.moves, 0);
    ck_assert_msg(r.end.frag > 0, "%f", r.end.frag);
    /* without a budget it is refused, not run */
    c.consol_budget = 0;
    ck_assert_int_eq(sim_run(&c, 42, &r, &err), -1);
    ck_assert_msg(strstr(err.msg, "budget") != NULL, "%s", err.msg);
}
END_TEST

/* --whole-first holds free GPUs only for a waiting pod that could use them.
 * wholefirst_pods.csv has w (two whole GPUs: neither one-GPU node can ever
 * hold it, so it waits for ever) then s (half a GPU). Load 1.25 lets both
 * arrive (2,500 of 2,000). s starts on an entirely free GPU with the rule
 * too: holding that GPU back could never serve w. */
START_TEST(whole_first_ignores_pods_no_node_holds)
{
    teardown();
    load(FIX "consol_nodes.csv", FIX "wholefirst_pods.csv");
    sim_config c = churn_config("best-fit", 1.25, 0);
    sim_result r;
    gp_err err;
    ck_assert_msg(sim_run(&c, 42, &r, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(r.pods, 2);
    ck_assert_int_eq(r.churn.placements, 1);
    ck_assert_double_eq_tol(r.end.alloc, 0.25, 1e-9);
    ck_assert_int_eq(r.churn.held_back, 0);
    c.whole_first = true;
    c.whole_first_near = GP_MAX_GPUS_PER_NODE;
    ck_assert_msg(sim_run(&c, 42, &r, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(r.churn.placements, 1);
    ck_assert_int_eq(r.churn.held_back, 0);
    ck_assert_double_eq_tol(r.end.alloc, 0.25, 1e-9);
    c.churn = false;
    ck_assert_int_eq(sim_run(&c, 42, &r, &err), -1);
    ck_assert_msg(strstr(err.msg, "churn") != NULL, "%s", err.msg);
}
END_TEST

/* wholefirst_near_pods.csv on one node of two GPUs (load 1.8: x, w, s
 * arrive, 3,500 of 3,600; pods never leave): x takes a GPU for ever, w (two
 * GPUs) waits one GPU short, s arrives while the other GPU is entirely free.
 * With --whole-first-near 1 that GPU is held for w and s waits; with 0 (w
 * lacks one GPU, more than 0) s takes it, as it does without the rule. */
START_TEST(whole_first_holds_free_gpus_of_near_nodes)
{
    teardown();
    load(FIX "wholefirst_nodes.csv", FIX "wholefirst_near_pods.csv");
    sim_config c = churn_config("best-fit", 1.8, 0);
    sim_result r;
    gp_err err;
    ck_assert_msg(sim_run(&c, 42, &r, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(r.pods, 3);
    ck_assert_int_eq(r.churn.placements, 2);
    ck_assert_double_eq_tol(r.end.alloc, 0.75, 1e-9);
    c.whole_first = true;
    c.whole_first_near = 1;
    ck_assert_msg(sim_run(&c, 42, &r, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(r.churn.placements, 1);
    ck_assert_int_ge(r.churn.held_back, 1);
    ck_assert_int_eq(r.churn.waiting_end, 2);
    ck_assert_double_eq_tol(r.end.alloc, 0.5, 1e-9);
    c.whole_first_near = 0;
    ck_assert_msg(sim_run(&c, 42, &r, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(r.churn.placements, 2);
    ck_assert_int_eq(r.churn.held_back, 0);
    ck_assert_double_eq_tol(r.end.alloc, 0.75, 1e-9);
}
END_TEST

/* The order in which waiting pods start (--serve) on one GPU: x (whole) runs,
 * a (810) and b (whole) wait behind it, and after every departure the pods
 * that arrived meanwhile wait too (load 2.81: x, a, b). Oldest first, a
 * starts when x leaves and b waits for a; largest first (and fill, where a
 * whole GPU leaves nothing to fill) b starts at once: whole-GPU pods wait
 * less. The pods never leave in the same order, so only their waits are
 * compared, on one seed. */
START_TEST(serve_order_starts_whole_gpu_pods_first)
{
    teardown();
    load(FIX "serve_nodes.csv", FIX "serve_pods.csv");
    sim_config c = churn_config("best-fit", 2.81, 100);
    c.churn_horizon = 20;
    sim_result r;
    gp_err err;
    ck_assert_msg(sim_run(&c, 42, &r, &err) == 0, "%s", err.msg);
    double fifo = r.churn.whole_wait_mean;
    ck_assert_int_ge(r.churn.whole_arrived, 10);
    c.serve = SIM_SERVE_LARGEST;
    ck_assert_msg(sim_run(&c, 42, &r, &err) == 0, "%s", err.msg);
    ck_assert_msg(r.churn.whole_wait_mean < 0.75 * fifo, "largest first %.1f s, oldest first %.1f s",
                  r.churn.whole_wait_mean, fifo);
    c.serve = SIM_SERVE_FILL;
    ck_assert_msg(sim_run(&c, 42, &r, &err) == 0, "%s", err.msg);
    ck_assert_msg(r.churn.whole_wait_mean < 0.75 * fifo, "fill %.1f s, oldest first %.1f s",
                  r.churn.whole_wait_mean, fifo);
    c.churn = false;
    ck_assert_int_eq(sim_run(&c, 42, &r, &err), -1);
    ck_assert_msg(strstr(err.msg, "churn") != NULL, "%s", err.msg);
}
END_TEST

/* serve_fill_pods.csv: x (whole) runs; a (810), c and d (500 each) wait.
 * When x leaves, oldest first and largest first start a, which the GPU
 * never drops below while a runs; fill starts c (after which d fills the
 * GPU) and d: allocation falls to 0.5 when one of them leaves, which only
 * happens if the half-GPU pods were started instead of a. */
START_TEST(serve_fill_starts_the_pods_that_fill_the_gpu)
{
    teardown();
    load(FIX "serve_nodes.csv", FIX "serve_fill_pods.csv");
    sim_config c = churn_config("best-fit", 2.81, 100);
    c.churn_horizon = 0.5;
    sim_result r;
    gp_err err;
    sim_serve orders[] = {SIM_SERVE_ARRIVAL, SIM_SERVE_LARGEST, SIM_SERVE_FILL};
    for (size_t i = 0; i < sizeof orders / sizeof *orders; i++) {
        c.serve = orders[i];
        ck_assert_msg(sim_run(&c, 42, &r, &err) == 0, "%s", err.msg);
        ck_assert_int_ge(r.churn.placements, 3);
        if (orders[i] == SIM_SERVE_FILL)
            ck_assert_double_eq_tol(r.churn.alloc_min, 0.5, 1e-9);
        else
            ck_assert_double_eq_tol(r.churn.alloc_min, 0.81, 1e-9);
    }
}
END_TEST

/* Best fit packs a and b onto one GPU: nothing to consolidate, and the plan
 * search is not even needed (c fits n1 at once). */
START_TEST(packing_needs_no_moves)
{
    sim_config c = churn_config("best-fit", 1.0, 0);
    c.consol_budget = 50;
    sim_result r;
    gp_err err;
    ck_assert_msg(sim_run(&c, 42, &r, &err) == 0, "%s", err.msg);
    ck_assert_double_eq_tol(r.end.alloc, 1.0, 1e-9);
    ck_assert_int_eq(r.churn.moves, 0);
    ck_assert_int_eq(r.churn.plan_failures, 0);
}
END_TEST

/* Departures: load 2.0 offers twice the capacity, so pods wait for the room
 * departures leave and are retried when it appears. Checked: the same seed
 * gives the same run; dozens of pods come and go; whole-GPU pods wait and
 * their waits are ordered; allocation never exceeds capacity; a sample every
 * quarter lifetime. */
START_TEST(churn_replays_and_retries)
{
    sim_config c = churn_config("best-fit", 2.0, 100);
    c.churn_horizon = 50;
    c.churn_warmup = 5;
    sim_result a, b;
    gp_err err;
    ck_assert_msg(sim_run(&c, 7, &a, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(sim_run(&c, 7, &b, &err), 0);
    ck_assert_int_eq(a.churn.placements, b.churn.placements);
    ck_assert_double_eq_tol(a.churn.alloc_mean, b.churn.alloc_mean, 1e-12);
    ck_assert_double_eq_tol(a.churn.whole_wait_mean, b.churn.whole_wait_mean, 1e-9);
    /* 2 GPUs, lifetimes of mean 100 s, 5000 s: ~100 departures */
    ck_assert_msg(a.churn.placements > 50, "%ld placements", a.churn.placements);
    ck_assert(a.churn.whole_arrived > 10);
    ck_assert(a.churn.whole_waited > 0);
    ck_assert(a.churn.whole_wait_mean > 0);
    ck_assert(a.churn.whole_wait_p95 >= a.churn.whole_wait_p50);
    ck_assert(a.churn.alloc_mean > 0.5 && a.churn.alloc_mean <= 1.0 + 1e-9);
    ck_assert(a.churn.alloc_min <= a.churn.alloc_mean + 1e-9);
    /* a sample every quarter lifetime, from 0 to the horizon */
    ck_assert_int_eq(a.nsteps, SIM_MAX_STEPS < 201 ? SIM_MAX_STEPS : 201);
    ck_assert_double_eq_tol(a.step[4].arrived, 1.0, 1e-9);
    for (int k = 0; k < a.nsteps; k++)
        ck_assert(a.step[k].alloc <= 1.0 + 1e-9);
    /* waiting pods are offered load: more pods than GPUs' worth arrive */
    ck_assert(a.pods > a.churn.placements);
}
END_TEST

/* With pods that never leave and a load equal to what the hand-computed
 * trace of test_sim.c offers (4000 of 3000 milli), churn mode places exactly
 * what the reference protocol places: 2000 of 3000, the 2-GPU pod waiting
 * instead of failing. */
START_TEST(arrivals_only_match_the_reference_protocol)
{
    teardown();
    load(FIX "nodes.csv", FIX "pods.csv");
    sim_config c = churn_config("best-fit", 4000.0 / 3000.0, 0);
    sim_result r;
    gp_err err;
    ck_assert_msg(sim_run(&c, 42, &r, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(r.pods, 5);
    ck_assert_double_eq_tol(r.end.alloc, 2.0 / 3.0, 1e-9);
    ck_assert_double_eq_tol(r.end.arrived, 4.0 / 3.0, 1e-9);
    ck_assert_int_eq(r.churn.waiting_end, 1);
    ck_assert_int_eq(r.failed[TRACE_KIND_GPU2], 1);
    ck_assert_int_eq(r.churn.whole_waiting_end, 1);
}
END_TEST

Suite *suite_sim_churn(void);
Suite *suite_sim_churn(void)
{
    Suite *s = suite_create("sim_churn");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, fragmented_without_consolidation);
    tcase_add_test(tc, consolidation_makes_room);
    tcase_add_test(tc, budget_and_limits_are_kept);
    tcase_add_test(tc, packing_needs_no_moves);
    tcase_add_test(tc, churn_replays_and_retries);
    tcase_add_test(tc, arrivals_only_match_the_reference_protocol);
    tcase_add_test(tc, defragmentation_frees_a_gpu_ahead_of_demand);
    tcase_add_test(tc, defragmentation_keeps_its_limits);
    tcase_add_test(tc, whole_first_ignores_pods_no_node_holds);
    tcase_add_test(tc, whole_first_holds_free_gpus_of_near_nodes);
    tcase_add_test(tc, serve_order_starts_whole_gpu_pods_first);
    tcase_add_test(tc, serve_fill_starts_the_pods_that_fill_the_gpu);
    suite_add_tcase(s, tc);
    return s;
}
