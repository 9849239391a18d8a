/* test_consolidate.c -- the consolidation planner (pack/consolidate): tables of
 * nodes, movable pods and a waiting pod with the moves each must get. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "pack/consolidate.h"
#include "pack/moveledger.h"
#include "pack/placement.h"
#include "testutil.h"

#define G 24576   /* one GPU of the tables: 24 GiB */
#define MAXN 4
#define MAXP 12

/* A pod on a node of a case. */
typedef struct cpod {
    const char *name;
    int node;
    int gpus[4];
    int ngpu;
    int64_t mem;          /* per GPU */
    int32_t prio;
    bool movable;         /* else it stays (no controller, protected, cooled down) */
    bool pdb;             /* evicting it breaks a PodDisruptionBudget */
    int group;            /* budget group, -1 none */
} cpod;

typedef struct ccase {
    const char *what;
    int nnodes;
    int ngpus;                    /* per node */
    const char *model1;           /* model of node 1's GPUs; NULL: A100 */
    cpod pods[MAXP];
    int npods;
    /* the waiting pod: one container */
    int count;
    int64_t mem;
    const char *models_req;
    int max_moves;
    int group_left[2];            /* {-1,..}: no groups */
    int want;                     /* consolidate_plan's answer */
    const char *moved;            /* names, sorted by table order, space-separated */
    int target;                   /* node of the waiting pod (when want) */
} ccase;

#define NOGROUP {-1, -1}

static const ccase cases[] = {
    {"the issue's scene: 8 GPUs each holding 12 GiB; one move frees a GPU", 1, 8, NULL,
     {{"p0", 0, {0}, 1, G / 2, 0, true, false, -1}, {"p1", 0, {1}, 1, G / 2, 0, true, false, -1},
      {"p2", 0, {2}, 1, G / 2, 0, true, false, -1}, {"p3", 0, {3}, 1, G / 2, 0, true, false, -1},
      {"p4", 0, {4}, 1, G / 2, 0, true, false, -1}, {"p5", 0, {5}, 1, G / 2, 0, true, false, -1},
      {"p6", 0, {6}, 1, G / 2, 0, true, false, -1}, {"p7", 0, {7}, 1, G / 2, 0, true, false, -1}},
     8, 1, G, NULL, 4, NOGROUP, 1, "p0", 0},
    {"across nodes: each node's one GPU holds a half; a move to the other node frees one", 2, 1,
     NULL,
     {{"a", 0, {0}, 1, G / 2, 0, true, false, -1}, {"b", 1, {0}, 1, G / 2, 0, true, false, -1}},
     2, 1, G, NULL, 4, NOGROUP, 1, "a", 0},
    {"fewest moves: the GPU with one pod, not the GPU with two smaller ones", 1, 3, NULL,
     {{"s1", 0, {0}, 1, G / 4, 0, true, false, -1}, {"s2", 0, {0}, 1, G / 4, 0, true, false, -1},
      {"big", 0, {1}, 1, G / 2, 0, true, false, -1}, {"half", 0, {2}, 1, G / 4, 0, false, false, -1}},
     4, 1, G, NULL, 4, NOGROUP, 1, "big", 0},
    {"every moved pod must fit again: no room anywhere, no plan", 1, 2, NULL,
     {{"a", 0, {0}, 1, 3 * G / 4, 0, true, false, -1}, {"b", 0, {1}, 1, 3 * G / 4, 0, true, false, -1}},
     2, 1, G, NULL, 4, NOGROUP, 0, "", 0},
    {"a pod that may not move (no controller, protected) is not moved", 1, 2, NULL,
     {{"fixed", 0, {0}, 1, G / 2, 0, false, false, -1}, {"m", 0, {1}, 1, G / 2, 0, true, false, -1}},
     2, 1, G, NULL, 4, NOGROUP, 1, "m", 0},
    {"nothing movable: no plan", 1, 2, NULL,
     {{"x", 0, {0}, 1, G / 2, 0, false, false, -1}, {"y", 0, {1}, 1, G / 2, 0, false, false, -1}},
     2, 1, G, NULL, 4, NOGROUP, 0, "", 0},
    {"PDBs counted first: the unguarded pod moves though it is larger", 1, 3, NULL,
     {{"guarded", 0, {0}, 1, G / 4, 0, true, true, -1}, {"free", 0, {1}, 1, G / 2, 0, true, false, -1},
      {"room", 0, {2}, 1, G / 4, 0, false, false, -1}},
     3, 1, G, NULL, 4, NOGROUP, 1, "free", 0},
    {"a guarded pod moves when nothing else does (the Eviction API has the last word)", 1, 2, NULL,
     {{"guarded", 0, {0}, 1, G / 2, 0, true, true, -1}, {"room", 0, {1}, 1, G / 2, 0, false, false, -1}},
     2, 1, G, NULL, 4, NOGROUP, 1, "guarded", 0},
    {"the moves per pod bound: two moves needed, one allowed", 1, 3, NULL,
     {{"q1", 0, {0}, 1, G / 4, 0, true, false, -1}, {"q2", 0, {0}, 1, G / 4, 0, true, false, -1},
      {"r1", 0, {1}, 1, G / 2, 0, false, false, -1}, {"r2", 0, {2}, 1, G / 2, 0, false, false, -1}},
     4, 1, G, NULL, 1, NOGROUP, 0, "", 0},
    {"... and with two allowed, both go", 1, 3, NULL,
     {{"q1", 0, {0}, 1, G / 4, 0, true, false, -1}, {"q2", 0, {0}, 1, G / 4, 0, true, false, -1},
      {"r1", 0, {1}, 1, G / 2, 0, false, false, -1}, {"r2", 0, {2}, 1, G / 2, 0, false, false, -1}},
     4, 1, G, NULL, 2, NOGROUP, 1, "q1 q2", 0},
    {"the group budget: a group with no moves left is not moved", 1, 3, NULL,
     {{"spent", 0, {0}, 1, G / 2, 0, true, false, 0}, {"left", 0, {1}, 1, G / 2, 0, true, false, 1},
      {"room", 0, {2}, 1, G / 2, 0, false, false, -1}},
     3, 1, G, NULL, 4, {0, 1}, 1, "left", 0},
    {"a 2-GPU waiting pod: two GPUs freed with one move each", 1, 4, NULL,
     {{"a", 0, {0}, 1, G / 2, 0, true, false, -1}, {"b", 0, {1}, 1, G / 2, 0, true, false, -1},
      {"c", 0, {2}, 1, G / 2, 0, true, false, -1}, {"d", 0, {3}, 1, G / 2, 0, true, false, -1}},
     4, 2, G, NULL, 4, NOGROUP, 1, "a b", 0},
    {"a 2-GPU mover re-fits only where two GPUs have room", 2, 2, NULL,
     {{"wide", 0, {0, 1}, 2, G / 2, 0, true, false, -1},
      {"o1", 1, {0}, 1, G / 2, 0, false, false, -1}, {"o2", 1, {1}, 1, G / 2, 0, false, false, -1}},
     3, 1, G, NULL, 4, NOGROUP, 1, "wide", 0},
    {"a moved pod stays on its GPU model: the only room is on another model", 2, 1, "T4",
     {{"a", 0, {0}, 1, G / 2, 0, true, false, -1}},
     1, 1, G, "A100", 4, NOGROUP, 0, "", 0},
    {"the waiting pod's model decides the target node", 2, 2, "T4",
     {{"a", 0, {0}, 1, G / 2, 0, true, false, -1}, {"b", 0, {1}, 1, G / 2, 0, true, false, -1},
      {"c", 1, {0}, 1, G / 2, 0, true, false, -1}, {"d", 1, {1}, 1, G / 2, 0, true, false, -1}},
     4, 1, G, "T4", 4, NOGROUP, 1, "c", 1},
};

typedef struct world {
    gp_node *nodes[MAXN];
    gp_hold holds[MAXP][4];
    gp_pod_req reqs[MAXP];
    gp_mover movers[MAXP];
    int mover_pod[MAXP];
    int nm;
} world;

static void build(const ccase *c, world *w)
{
    memset(w, 0, sizeof *w);
    int64_t mem[8] = {G, G, G, G, G, G, G, G};
    for (int i = 0; i < c->nnodes; i++) {
        char name[16];
        snprintf(name, sizeof name, "n%d", i);
        w->nodes[i] = tu_node(name, c->ngpus, mem, NULL, NULL);
        for (int g = 0; g < c->ngpus; g++)
            w->nodes[i]->gpus[g].info.model = gp_model_intern(i == 1 && c->model1 ? c->model1 : "A100");
    }
    for (int p = 0; p < c->npods; p++) {
        const cpod *t = &c->pods[p];
        gp_node *n = w->nodes[t->node];
        for (int k = 0; k < t->ngpu; k++) {
            w->holds[p][k] = (gp_hold){t->gpus[k], t->mem, 0, false};
            placement_hold(n, t->gpus[k], &w->holds[p][k], 1);
        }
        if (!t->movable)
            continue;
        consolidate_req_from_holds(n, w->holds[p], t->ngpu, &w->reqs[p]);
        w->movers[w->nm] = (gp_mover){t->node, t->prio, t->pdb, t->group, t->ngpu, w->holds[p],
                                      0, 0, &w->reqs[p], NULL};
        w->mover_pod[w->nm++] = p;
    }
    for (int i = 0; i < c->nnodes; i++)
        w->nodes[i]->state_hash = 0;
}

static void unbuild(const ccase *c, world *w)
{
    for (int i = 0; i < c->nnodes; i++)
        free(w->nodes[i]);
}

START_TEST(plan_table)
{
    const ccase *c = &cases[_i];
    world *w = malloc(sizeof *w);
    build(c, w);
    gp_pod_req req;
    tu_req(&req, "waiting", c->count, c->mem, 0);
    if (c->models_req)
        gp_strlcpy(req.models, c->models_req, sizeof req.models);
    gp_place_opts o;
    placement_default_opts(&o);
    gp_consol_query q = {.nodes = (const gp_node *const *)w->nodes, .nnodes = c->nnodes,
                         .req = &req, .opts = &o, .movers = w->movers, .nmovers = w->nm,
                         .max_moves = c->max_moves};
    if (c->group_left[0] >= 0) {
        q.group_left = c->group_left;
        q.ngroups = 2;
    }
    gp_consol_plan *plan = malloc(sizeof *plan);
    int got = consolidate_plan(&q, plan);
    ck_assert_msg(got == c->want, "%s: consolidate_plan answered %d", c->what, got);
    ck_assert_msg(plan->complete, "%s: the search ran out of budget", c->what);
    if (got == 1) {
        bool moved[MAXP] = {0};
        for (int i = 0; i < plan->nmoves; i++)
            moved[w->mover_pod[plan->moves[i].mover]] = true;
        char names[128] = "";
        size_t off = 0;
        for (int p = 0; p < c->npods; p++)
            if (moved[p])
                off += (size_t)snprintf(names + off, sizeof names - off, "%s%s", off ? " " : "",
                                        c->pods[p].name);
        ck_assert_msg(strcmp(names, c->moved) == 0, "%s: moved \"%s\", want \"%s\"", c->what,
                      names, c->moved);
        ck_assert_msg(plan->node == c->target, "%s: target node %d, want %d", c->what, plan->node,
                      c->target);
        /* the plan holds: apply it to copies, nothing over capacity, the waiting pod's place
         * and every replacement's are where the plan says */
        for (int i = 0; i < plan->nmoves; i++) {
            const gp_mover *m = &w->movers[plan->moves[i].mover];
            for (int h = 0; h < m->nholds; h++)
                placement_hold(w->nodes[m->node], m->holds[h].index, &m->holds[h], -1);
        }
        ck_assert_int_eq(placement_apply(w->nodes[plan->node], &plan->a, 1), 0);
        ck_assert_str_eq(plan->a.node, w->nodes[plan->node]->name);
        for (int i = 0; i < plan->nmoves; i++) {
            const gp_consol_move *mv = &plan->moves[i];
            ck_assert_str_eq(mv->a.node, w->nodes[mv->node]->name);
            ck_assert_int_eq(placement_apply(w->nodes[mv->node], &mv->a, 1), 0);
        }
        for (int n = 0; n < c->nnodes; n++)
            for (int g = 0; g < c->ngpus; g++)
                ck_assert_msg(w->nodes[n]->gpus[g].mem_used <= w->nodes[n]->gpus[g].info.mem_total,
                              "%s: node %d GPU %d over capacity after the plan", c->what, n, g);
    }
    free(plan);
    unbuild(c, w);
    free(w);
}
END_TEST

/* The request a replacement makes, from the holds. */
START_TEST(req_from_holds)
{
    int64_t mem[2] = {G, G};
    gp_node *n = tu_node("n", 2, mem, NULL, NULL);
    n->gpus[1].info.model = gp_model_intern("L4");
    gp_hold same[2] = {{0, 1000, 300, false}, {1, 1000, 300, false}};
    gp_pod_req r;
    consolidate_req_from_holds(n, same, 2, &r);
    ck_assert_int_eq(r.nctrs, 1);
    ck_assert_int_eq(r.ctrs[0].count, 2);
    ck_assert_int_eq(r.ctrs[0].mem_mib, 1000);
    ck_assert_int_eq(r.ctrs[0].core, 300);
    gp_hold differ[2] = {{1, 1000, 0, false}, {0, 2000, 0, false}};
    consolidate_req_from_holds(n, differ, 2, &r);
    ck_assert_int_eq(r.nctrs, 2);
    ck_assert_int_eq(r.ctrs[1].mem_mib, 2000);
    ck_assert_str_eq(r.models, "L4");   /* the model of the GPU of its first hold */
    consolidate_req_from_holds(n, differ, 0, &r);
    ck_assert_int_eq(r.nctrs, 0);
    free(n);
}
END_TEST

/* Many nodes, many small pods: the search keeps to its budget and says so. */
START_TEST(budget_bounded)
{
    enum { NN = 4, NG = 8, PER = 4 };
    int64_t mem[NG];
    for (int i = 0; i < NG; i++)
        mem[i] = G;
    gp_node *nodes[NN];
    static gp_hold holds[NN * NG * PER];
    static gp_pod_req reqs[NN * NG * PER];
    static gp_mover movers[NN * NG * PER];
    int nm = 0;
    for (int i = 0; i < NN; i++) {
        nodes[i] = tu_node("n", NG, mem, NULL, NULL);
        for (int g = 0; g < NG; g++)
            for (int k = 0; k < PER; k++) {
                holds[nm] = (gp_hold){g, G / PER - 1, 0, false};
                placement_hold(nodes[i], g, &holds[nm], 1);
                consolidate_req_from_holds(nodes[i], &holds[nm], 1, &reqs[nm]);
                movers[nm] = (gp_mover){i, 0, false, -1, 1, &holds[nm], 0, 0, &reqs[nm], NULL};
                nm++;
            }
    }
    gp_pod_req req;
    tu_req(&req, "waiting", 1, G, 0);
    gp_place_opts o;
    placement_default_opts(&o);
    gp_consol_query q = {.nodes = (const gp_node *const *)nodes, .nnodes = NN, .req = &req,
                         .opts = &o, .movers = movers, .nmovers = nm, .max_moves = 4,
                         .budget = 500};
    gp_consol_plan *plan = malloc(sizeof *plan);
    /* every GPU is full but for a sliver: nothing re-fits, so no plan; the budget stops it */
    ck_assert_int_eq(consolidate_plan(&q, plan), 0);
    ck_assert_int_le(plan->checks, 500);
    ck_assert(!plan->complete);
    free(plan);
    for (int i = 0; i < NN; i++)
        free(nodes[i]);
}
END_TEST

/* The ledger: an hour's moves per namespace, a controller's cool-down, pruning. */
START_TEST(ledger)
{
    gp_ledger *l = ledger_new();
    ck_assert_int_eq(ledger_left(l, "ml", 2, 100), 2);
    ledger_record(l, "ml", "rs-1", 100);
    ledger_record(l, "ml", "rs-2", 200);
    ledger_record(l, "web", "", 300);
    ck_assert_int_eq(ledger_left(l, "ml", 2, 300), 0);
    ck_assert_int_eq(ledger_left(l, "ml", 1, 300), 0);   /* never below 0 */
    ck_assert_int_eq(ledger_left(l, "web", 5, 300), 4);
    ck_assert_uint_eq(ledger_last_hour(l, 300), 3);
    ck_assert(ledger_cooling(l, "rs-1", 600, 650));
    ck_assert(!ledger_cooling(l, "rs-1", 600, 700));
    ck_assert(!ledger_cooling(l, "rs-9", 600, 300));
    ck_assert(!ledger_cooling(l, "", 600, 300));
    ledger_record(l, NULL, "rs-3", 400);   /* a refused move: the cool-down only */
    ck_assert(ledger_cooling(l, "rs-3", 60, 410));
    ck_assert_uint_eq(ledger_last_hour(l, 400), 3);   /* not a move of a namespace */
    ck_assert_int_eq(ledger_left(l, "ml", 2, 100 + 3600), 1);   /* the first move left the hour */
    ledger_record(l, "recent", "rs-4", 99000);
    ledger_prune(l, 100000, 3600);
    ck_assert_uint_eq(ledger_last_hour(l, 100000), 1);   /* the recent move stays, alone */
    ck_assert(!ledger_cooling(l, "rs-1", 1e9, 100000));   /* forgotten */
    ck_assert(ledger_cooling(l, "rs-4", 3600, 100000));   /* kept */
    ck_assert_int_eq(ledger_left(l, "recent", 2, 100000), 1);
    ledger_free(l);
}
END_TEST

Suite *suite_consolidate(void);
Suite *suite_consolidate(void)
{
    Suite *s = suite_create("consolidate");
    TCase *t = tcase_create("plan");
    tcase_add_loop_test(t, plan_table, 0, (int)GP_ARRAY_LEN(cases));
    tcase_add_test(t, req_from_holds);
    tcase_add_test(t, budget_bounded);
    tcase_add_test(t, ledger);
    suite_add_tcase(s, t);
    return s;
}
