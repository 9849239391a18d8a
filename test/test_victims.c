/* test_victims.c -- choosing preemption victims on one node (pack/victims): a
 * table of nodes, pods and preemptors with the victims each must get. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "pack/placement.h"
#include "pack/victims.h"
#include "testutil.h"

#define G 16384   /* one GPU of the tables: 16 GiB */

/* One pod on the node of a case. */
typedef struct tpod {
    const char *name;
    int gpus[4];          /* device indices it holds (ngpu of them) */
    int ngpu;
    int64_t mem;          /* per GPU, MiB */
    int core;             /* per GPU, per-mille */
    int32_t prio;
    int64_t start;        /* seconds; later = less running time lost */
    bool pdb;             /* evicting it violates a budget */
    bool same_ns;
    int64_t cpu;          /* host millicores */
} tpod;

typedef struct vcase {
    const char *what;
    int ngpus;
    const char *models[4];        /* NULL: A100 */
    int64_t cpu_alloc;            /* 0 = unknown */
    tpod pods[10];
    int npods;
    /* the preemptor */
    int32_t prio;
    int count;                    /* GPUs of its one container */
    int64_t mem;
    int core;
    int64_t init_mem;             /* > 0: also an init container of this size on one GPU */
    int64_t cpu;
    const char *models_req;       /* gpupack.io/gpu-model */
    /* policy */
    int max_pods;
    int64_t reserve;
    double ns_cap;
    /* the answer */
    gp_victims_result want;
    const char *victims;          /* names, space-separated, in table order */
} vcase;

static const vcase cases[] = {
    {"the issue's case: one pod freeing a GPU beats two sharing the other, even when the "
     "whole-GPU pod started first (kube-scheduler's greedy pass would take the two)",
     2, {0}, 0,
     {{"whole", {0}, 1, G, 0, 0, 1, false, false, 0},
      {"half-a", {1}, 1, G / 2, 0, 0, 2, false, false, 0},
      {"half-b", {1}, 1, G / 2, 0, 0, 3, false, false, 0}}, 3,
     1000, 1, G, 0, 0, 0, NULL, 0, 0, 0, GP_VICTIMS_FOUND, "whole"},
    {"the same with the whole-GPU pod started last", 2, {0}, 0,
     {{"half-a", {1}, 1, G / 2, 0, 0, 1, false, false, 0},
      {"half-b", {1}, 1, G / 2, 0, 0, 2, false, false, 0},
      {"whole", {0}, 1, G, 0, 0, 3, false, false, 0}}, 3,
     1000, 1, G, 0, 0, 0, NULL, 0, 0, 0, GP_VICTIMS_FOUND, "whole"},
    {"equal priority is never a victim", 2, {0}, 0,
     {{"whole", {0}, 1, G, 0, 1000, 1, false, false, 0},
      {"half-a", {1}, 1, G / 2, 0, 1000, 2, false, false, 0},
      {"half-b", {1}, 1, G / 2, 0, 1000, 3, false, false, 0}}, 3,
     1000, 1, G, 0, 0, 0, NULL, 0, 0, 0, GP_VICTIMS_NONE, ""},
    {"only strictly lower priority: the equal one stays, the lower one goes", 2, {0}, 0,
     {{"equal", {0}, 1, G, 0, 1000, 1, false, false, 0},
      {"lower", {1}, 1, G, 0, 999, 2, false, false, 0}}, 2,
     1000, 1, G, 0, 0, 0, NULL, 0, 0, 0, GP_VICTIMS_FOUND, "lower"},
    {"a PDB-protected pod is avoided when another GPU can be freed", 2, {0}, 0,
     {{"guarded", {0}, 1, G, 0, 0, 5, true, false, 0},
      {"free", {1}, 1, G, 0, 0, 1, false, false, 0}}, 2,
     1000, 1, G, 0, 0, 0, NULL, 0, 0, 0, GP_VICTIMS_FOUND, "free"},
    {"fewest PDB violations first: two unguarded pods beat one guarded", 2, {0}, 0,
     {{"guarded", {0}, 1, G, 0, 0, 5, true, false, 0},
      {"half-a", {1}, 1, G / 2, 0, 0, 1, false, false, 0},
      {"half-b", {1}, 1, G / 2, 0, 0, 2, false, false, 0}}, 3,
     1000, 1, G, 0, 0, 0, NULL, 0, 0, 0, GP_VICTIMS_FOUND, "half-a half-b"},
    {"a guarded pod is taken when nothing else helps", 1, {0}, 0,
     {{"guarded", {0}, 1, G, 0, 0, 5, true, false, 0}}, 1,
     1000, 1, G, 0, 0, 0, NULL, 0, 0, 0, GP_VICTIMS_FOUND, "guarded"},
    {"lowest highest-priority victim before fewest victims (kube-scheduler's order)", 2, {0}, 0,
     {{"prio10", {0}, 1, G, 0, 10, 1, false, false, 0},
      {"prio5-a", {1}, 1, G / 2, 0, 5, 2, false, false, 0},
      {"prio5-b", {1}, 1, G / 2, 0, 5, 3, false, false, 0}}, 3,
     1000, 1, G, 0, 0, 0, NULL, 0, 0, 0, GP_VICTIMS_FOUND, "prio5-a prio5-b"},
    {"least running time lost: of two equal GPUs the one whose pod started later", 2, {0}, 0,
     {{"old", {0}, 1, G, 0, 0, 100, false, false, 0},
      {"young", {1}, 1, G, 0, 0, 900, false, false, 0}}, 2,
     1000, 1, G, 0, 0, 0, NULL, 0, 0, 0, GP_VICTIMS_FOUND, "young"},
    {"2-GPU preemptor: two GPUs with one victim each, the two latest started", 4, {0}, 0,
     {{"a", {0}, 1, G, 0, 0, 1, false, false, 0},
      {"b1", {1}, 1, G / 2, 0, 0, 2, false, false, 0},
      {"b2", {1}, 1, G / 2, 0, 0, 3, false, false, 0},
      {"d", {2}, 1, G, 0, 0, 4, false, false, 0},
      {"e", {3}, 1, G / 4, 0, 0, 5, false, false, 0}}, 5,
     1000, 2, G, 0, 0, 0, NULL, 0, 0, 0, GP_VICTIMS_FOUND, "d e"},
    {"a 2-GPU victim frees two GPUs at once", 3, {0}, 0,
     {{"wide", {0, 1}, 2, G, 0, 0, 1, false, false, 0},
      {"x", {2}, 1, G / 2, 0, 0, 2, false, false, 0},
      {"y", {2}, 1, G / 4, 0, 0, 3, false, false, 0}}, 3,
     1000, 2, G, 0, 0, 0, NULL, 0, 0, 0, GP_VICTIMS_FOUND, "wide"},
    {"GPU model: only the A10 may be freed, though the T4's pod is cheaper", 2, {"T4", "A10"}, 0,
     {{"on-t4", {0}, 1, G, 0, -5, 9, false, false, 0},
      {"on-a10", {1}, 1, G, 0, 0, 1, false, false, 0}}, 2,
     1000, 1, G, 0, 0, 0, "A10", 0, 0, 0, GP_VICTIMS_FOUND, "on-a10"},
    {"GPU model: nothing of an allowed model to free", 1, {"T4"}, 0,
     {{"on-t4", {0}, 1, G, 0, 0, 1, false, false, 0}}, 1,
     1000, 1, G, 0, 0, 0, "A10", 0, 0, 0, GP_VICTIMS_NONE, ""},
    {"compute share counts: memory is free, compute is not", 1, {0}, 0,
     {{"busy", {0}, 1, 1024, 800, 0, 1, false, false, 0}}, 1,
     1000, 1, 1024, 500, 0, 0, NULL, 0, 0, 0, GP_VICTIMS_FOUND, "busy"},
    {"an init container's larger need decides what must be freed", 1, {0}, 0,
     {{"a", {0}, 1, G / 2, 0, 0, 1, false, false, 0},
      {"b", {0}, 1, G / 4, 0, 0, 2, false, false, 0}}, 2,
     1000, 1, G / 4, 0, 3 * G / 4, 0, NULL, 0, 0, 0, GP_VICTIMS_FOUND, "a"},
    {"maxPodsPerGPU: memory is plenty, the pod count is not", 1, {0}, 0,
     {{"a", {0}, 1, 1024, 0, 0, 1, false, false, 0},
      {"b", {0}, 1, 1024, 0, 0, 2, false, false, 0}}, 2,
     1000, 1, 1024, 0, 0, 0, NULL, 2, 0, 0, GP_VICTIMS_FOUND, "b"},
    {"reserveMemoryMiB is never handed out, also not after preemption", 1, {0}, 0,
     {{"a", {0}, 1, G / 2, 0, 0, 1, false, false, 0}}, 1,
     1000, 1, G / 2, 0, 0, 0, NULL, 0, 1024, 0, GP_VICTIMS_FOUND, "a"},
    {"host CPU: a CPU-only pod is evicted when the node's CPU is short", 1, {0}, 4000,
     {{"gpu-pod", {0}, 1, G / 4, 0, 0, 1, false, false, 500},
      {"cpu-only", {0}, 0, 0, 0, 0, 2, false, false, 3000}}, 2,
     1000, 1, G / 4, 0, 0, 1200, NULL, 0, 0, 0, GP_VICTIMS_FOUND, "cpu-only"},
    {"maxNamespaceShare: the namespace's own low-priority pod makes room", 2, {0}, 0,
     {{"mine", {0}, 1, 1024, 0, 0, 1, false, true, 0}}, 1,
     1000, 1, 1024, 0, 0, 0, NULL, 0, 0, 0.5, GP_VICTIMS_FOUND, "mine"},
    {"it fits as the node stands", 2, {0}, 0,
     {{"a", {0}, 1, G, 0, 0, 1, false, false, 0}}, 1,
     1000, 1, G, 0, 0, 0, NULL, 0, 0, 0, GP_VICTIMS_FITS, ""},
    {"larger than any GPU: no victim set helps", 2, {0}, 0,
     {{"a", {0}, 1, G, 0, 0, 1, false, false, 0}}, 1,
     1000, 1, 2 * G, 0, 0, 0, NULL, 0, 0, 0, GP_VICTIMS_NONE, ""},
};

/* Builds the node of a case with every pod's holds counted. */
static gp_node *case_node(const vcase *c, gp_hold holds[][4])
{
    int64_t mem[4] = {G, G, G, G};
    gp_node *n = tu_node("n1", c->ngpus, mem, NULL, NULL);
    for (int i = 0; i < c->ngpus; i++)
        if (c->models[i])
            n->gpus[i].info.model = gp_model_intern(c->models[i]);
    n->cpu_alloc_milli = c->cpu_alloc;
    for (int p = 0; p < c->npods; p++) {
        const tpod *t = &c->pods[p];
        for (int k = 0; k < t->ngpu; k++) {
            holds[p][k] = (gp_hold){t->gpus[k], t->mem, t->core, false};
            n->gpus[t->gpus[k]].mem_used += t->mem;
            n->gpus[t->gpus[k]].core_used += t->core;
            n->gpus[t->gpus[k]].pods++;
        }
        n->cpu_used_milli += t->cpu;
    }
    n->state_hash = 0;
    return n;
}

static void names_of(const vcase *c, const gp_victim_plan *plan, char *out, size_t len)
{
    out[0] = '\0';
    size_t off = 0;
    for (int i = 0; i < plan->nvictims; i++)
        off += (size_t)snprintf(out + off, len - off, "%s%s", i ? " " : "",
                                c->pods[plan->victims[i]].name);
}

START_TEST(select_table)
{
    const vcase *c = &cases[_i];
    gp_hold holds[10][4];
    gp_node *n = case_node(c, holds);
    gp_victim cands[10];
    int ns_pods[4] = {0};
    for (int p = 0; p < c->npods; p++) {
        const tpod *t = &c->pods[p];
        cands[p] = (gp_victim){t->prio, t->start * 1000000000LL, t->pdb, t->same_ns, t->ngpu,
                               holds[p], t->cpu, 0};
        for (int k = 0; t->same_ns && k < t->ngpu; k++)
            ns_pods[t->gpus[k]]++;
    }
    gp_pod_req req;
    tu_req(&req, "pre", c->count, c->mem, c->core);
    req.priority = c->prio;
    req.cpu_milli = c->cpu;
    if (c->init_mem)
        tu_add_ctr(&req, "setup", true, 1, c->init_mem, 0);
    if (c->models_req)
        gp_strlcpy(req.models, c->models_req, sizeof req.models);
    gp_place_opts o;
    placement_default_opts(&o);
    o.max_pods_per_gpu = c->max_pods;
    o.reserve_mem_mib = c->reserve;
    gp_victim_query q = {.node = n, .req = &req, .opts = &o, .cands = cands, .ncands = c->npods,
                         .ns_share_cap = c->ns_cap, .ns_gpu_pods = ns_pods};
    int buf[10];
    gp_victim_plan plan;
    gp_victims_result r = victims_select(&q, buf, &plan);
    char got[256];
    names_of(c, &plan, got, sizeof got);
    ck_assert_msg(r == c->want && strcmp(got, c->victims) == 0,
                  "%s: got result %d victims \"%s\", want %d \"%s\"", c->what, r, got, c->want,
                  c->victims);
    ck_assert_msg(plan.complete, "%s: the search ran out of budget", c->what);
    if (r != GP_VICTIMS_NONE) {
        /* the placement it reports fits the node once the victims are gone */
        for (int i = 0; i < plan.nvictims; i++) {
            const tpod *t = &c->pods[plan.victims[i]];
            for (int k = 0; k < t->ngpu; k++) {
                n->gpus[t->gpus[k]].mem_used -= t->mem;
                n->gpus[t->gpus[k]].core_used -= t->core;
                n->gpus[t->gpus[k]].pods--;
            }
        }
        gp_assignment again;
        ck_assert_int_eq(placement_fit(n, &req, &o, &again, NULL), 0);
        ck_assert_int_eq(plan.a.nctrs, again.nctrs);
        ck_assert_int_eq(plan.rank.count, plan.nvictims);
    }
    free(n);
}
END_TEST

/* The node ranking, criterion by criterion. */
START_TEST(rank_order)
{
    gp_victim_rank base = {0, 0, 2 * (INT64_C(2147483648)), 2, 0.5, 100};
    gp_victim_rank x = base;
    ck_assert_int_eq(victims_rank_cmp(&base, &x), 0);
    x.pdb_violations = 1, x.max_priority = -100, x.count = 1;
    ck_assert_int_lt(victims_rank_cmp(&base, &x), 0);          /* PDBs first */
    x = base, x.max_priority = -1, x.count = 5;
    ck_assert_int_gt(victims_rank_cmp(&base, &x), 0);          /* then the highest priority */
    x = base, x.priority_sum -= 1;
    ck_assert_int_gt(victims_rank_cmp(&base, &x), 0);          /* then the sum */
    x = base, x.count = 1;
    ck_assert_int_gt(victims_rank_cmp(&base, &x), 0);          /* then the count */
    x = base, x.frag = 0.1, x.earliest_start = 1;
    ck_assert_int_gt(victims_rank_cmp(&base, &x), 0);          /* then fragmentation */
    x = base, x.earliest_start = 200;
    ck_assert_int_gt(victims_rank_cmp(&base, &x), 0);          /* then the later start */
}
END_TEST

/* Many small pods: the search stops at its budget and still returns a
 * feasible set no worse than kube-scheduler's greedy pass. */
START_TEST(budget_bounded)
{
    enum { NG = 8, PER = 8 };
    int64_t mem[NG];
    for (int i = 0; i < NG; i++)
        mem[i] = G;
    gp_node *n = tu_node("big", NG, mem, NULL, NULL);
    static gp_hold holds[NG * PER];
    gp_victim cands[NG * PER];
    for (int i = 0; i < NG * PER; i++) {
        holds[i] = (gp_hold){i / PER, G / PER, 0, false};
        n->gpus[i / PER].mem_used += G / PER;
        n->gpus[i / PER].pods++;
        cands[i] = (gp_victim){(int32_t)(i % 3), (int64_t)i, false, false, 1, &holds[i], 0, 0};
    }
    gp_pod_req req;
    tu_req(&req, "pre", 1, G, 0);
    req.priority = 100;
    gp_place_opts o;
    placement_default_opts(&o);
    gp_victim_query q = {.node = n, .req = &req, .opts = &o, .cands = cands, .ncands = NG * PER,
                         .budget = 300};
    int buf[NG * PER];
    gp_victim_plan plan;
    ck_assert_int_eq(victims_select(&q, buf, &plan), GP_VICTIMS_FOUND);
    ck_assert_int_eq(plan.nvictims, PER);   /* one whole GPU's pods */
    ck_assert_int_le(plan.checks, 300 + 2 * NG * PER);
    free(n);
}
END_TEST

Suite *suite_victims(void);
Suite *suite_victims(void)
{
    Suite *s = suite_create("victims");
    TCase *t = tcase_create("select");
    tcase_add_loop_test(t, select_table, 0, (int)GP_ARRAY_LEN(cases));
    tcase_add_test(t, rank_order);
    tcase_add_test(t, budget_bounded);
    suite_add_tcase(s, t);
    return s;
}
