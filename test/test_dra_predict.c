/* test_dra_predict.c -- placement's prediction of Kubernetes' DRA allocator for
 * pods whose GPUs come from ResourceClaims (gp_pod_req.dra): device order,
 * consumable capacity and its request policy, exclusive devices, compute
 * capacity, and the real-capacity check against gpupack's own pods. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "pack/placement.h"
#include "testutil.h"

#define G 24576

/* One row: up to 4 GPUs as DRA publishes them, what claims (dra_used) and
 * gpupack's own pods (own) hold, and one claim request. */
typedef struct pcase {
    const char *what;
    int order[4];              /* 1-based allocator order, 0 = not published */
    bool multi[4];
    int64_t dra_used[4];       /* MiB claims consume */
    int claims[4];
    int64_t own[4];            /* MiB gpupack's pods hold */
    int64_t step, min, def;    /* request policy of every device */
    int64_t ask;               /* MiB; 0 = no amount (whole, or the policy default) */
    int count;
    int want[2];               /* device indexes chosen; want[0] -1 = does not fit */
    int64_t want_mem;          /* MiB granted on each */
    bool unresolvable;
    const char *reason;        /* substring of the failure */
} pcase;

static const pcase cases[] = {
    {"first fit in published order", {1, 2, 3, 4}, {1, 1, 1, 1}, {20480, 0, 0, 0}, {1, 0, 0, 0},
     {0}, 0, 0, 0, 8192, 1, {1, -1}, 8192, false, NULL},
    {"order is the slice's, not the index", {3, 1, 2, 4}, {1, 1, 1, 1}, {0}, {0}, {0}, 0, 0, 0,
     8192, 1, {1, -1}, 8192, false, NULL},
    {"the fullest that fits is not preferred", {1, 2, 3, 4}, {1, 1, 1, 1}, {4096, 16384, 0, 0},
     {1, 1, 0, 0}, {0}, 0, 0, 0, 8192, 1, {0, -1}, 8192, false, NULL},
    {"an exclusive device a claim holds is skipped", {1, 2, 3, 4}, {0, 0, 0, 0}, {G, 0, 0, 0},
     {1, 0, 0, 0}, {0}, 0, 0, 0, 0, 1, {1, -1}, G, false, NULL},
    {"two devices, distinct", {1, 2, 3, 4}, {1, 1, 1, 1}, {20480, 0, 0, 0}, {1, 0, 0, 0}, {0}, 0,
     0, 0, 8192, 2, {1, 2}, 8192, false, NULL},
    {"rounded up to the policy's step", {1, 2, 3, 4}, {1, 1, 1, 1}, {0}, {0}, {0}, 1024, 2048, 0,
     3000, 1, {0, -1}, 3072, false, NULL},
    {"raised to the policy's minimum", {1, 2, 3, 4}, {1, 1, 1, 1}, {0}, {0}, {0}, 0, 4096, 0, 1000,
     1, {0, -1}, 4096, false, NULL},
    {"no amount: the policy's default", {1, 2, 3, 4}, {1, 1, 1, 1}, {0}, {0}, {0}, 0, 0, 6144, 0,
     1, {0, -1}, 6144, false, NULL},
    {"no amount, no default: the whole device", {1, 2, 3, 4}, {1, 1, 1, 1}, {1024, 0, 0, 0},
     {1, 0, 0, 0}, {0}, 0, 0, 0, 0, 1, {1, -1}, G, false, NULL},
    {"the allocator's choice would over-commit gpupack's pods", {1, 2, 3, 4}, {1, 1, 1, 1}, {0},
     {0}, {10240, 0, 0, 0}, 0, 0, 0, 20480, 1, {-1, -1}, 0, false, "over-commit"},
    {"gpupack's pods leave room: fine", {1, 2, 3, 4}, {1, 1, 1, 1}, {0}, {0}, {4096, 0, 0, 0}, 0, 0,
     0, 20480, 1, {0, -1}, 20480, false, NULL},
    {"an exclusive device with gpupack's pods on it", {1, 2, 3, 4}, {0, 0, 0, 0}, {0}, {0},
     {1024, 0, 0, 0}, 0, 0, 0, 0, 1, {-1, -1}, 0, false, "over-commit"},
    {"full of claims: resolvable", {1, 2, 3, 4}, {1, 1, 1, 1}, {20480, 20480, 20480, 20480},
     {1, 1, 1, 1}, {0}, 0, 0, 0, 8192, 1, {-1, -1}, 0, false, "left by the allocated claims"},
    {"larger than any device: unresolvable", {1, 2, 3, 4}, {1, 1, 1, 1}, {0}, {0}, {0}, 0, 0, 0,
     30000, 1, {-1, -1}, 0, true, "even with all GPUs free"},
    {"GPUs not published through DRA are not offered", {0, 0, 2, 0}, {1, 1, 1, 1}, {0, 0, 20480, 0},
     {0, 0, 1, 0}, {0}, 0, 0, 0, 8192, 1, {-1, -1}, 0, false, NULL},
    {"no DRA GPU at all", {0, 0, 0, 0}, {0}, {0}, {0}, {0}, 0, 0, 0, 8192, 1, {-1, -1}, 0, true,
     "published through DRA"},
};

static gp_node *dra_node(const pcase *c)
{
    int64_t mem[4] = {G, G, G, G}, used[4];
    int core[4] = {0};
    for (int i = 0; i < 4; i++)
        used[i] = c->dra_used[i] + c->own[i];
    gp_node *n = tu_node("n", 4, mem, used, core);
    for (int i = 0; i < 4; i++) {
        gp_gpu *g = &n->gpus[i];
        g->dra.order = (int16_t)c->order[i];
        if (!c->order[i])
            continue;
        g->dra.mem_total = G;
        g->dra.mem_used = c->dra_used[i];
        g->dra.claims = (uint16_t)c->claims[i];
        g->dra.multi = c->multi[i];
        g->dra.step_mib = c->step;
        g->dra.min_mib = c->min;
        g->dra.default_mib = c->def;
        g->pods = c->claims[i] + (c->own[i] > 0);
        if (!c->multi[i] && c->claims[i])
            g->core_used = GP_CORE_FULL;
    }
    n->state_hash = 0;
    return n;
}

static void dra_req(gp_pod_req *r, int64_t ask, int count)
{
    tu_req(r, "claim-pod", count, ask, 0);
    gp_strlcpy(r->ctrs[0].name, "gpu/gpu", sizeof r->ctrs[0].name);
    if (ask == 0) {
        r->ctrs[0].ask = GP_ASK_WHOLE;
        r->ctrs[0].mem_ppm = GP_PPM_FULL;
    }
    r->dra = true;
}

START_TEST(predicts_the_allocator)
{
    const pcase *c = &cases[_i];
    gp_node *n = dra_node(c);
    gp_pod_req r;
    dra_req(&r, c->ask, c->count);
    gp_place_opts o;
    placement_default_opts(&o);
    gp_assignment a;
    gp_fit_fail why;
    int rc = placement_fit(n, &r, &o, &a, &why);
    if (c->want[0] < 0) {
        ck_assert_msg(rc == -1, "%s: fits", c->what);
        ck_assert_msg(why.unresolvable == c->unresolvable, "%s: unresolvable %d (%s)", c->what,
                      why.unresolvable, why.reason);
        ck_assert_msg(!c->reason || strstr(why.reason, c->reason), "%s: reason \"%s\"", c->what,
                      why.reason);
    } else {
        ck_assert_msg(rc == 0, "%s: %s", c->what, why.reason);
        ck_assert_int_eq(a.ctrs[0].ngpus, c->count);
        for (int k = 0; k < c->count; k++) {
            ck_assert_msg(a.ctrs[0].gpus[k].index == c->want[k], "%s: device %d, want %d", c->what,
                          a.ctrs[0].gpus[k].index, c->want[k]);
            ck_assert_int_eq(a.ctrs[0].gpus[k].mem_mib, c->want_mem);
        }
    }
    free(n);
}
END_TEST

/* A shared device that publishes compute (HAMi's "cores"): a request without
 * a compute amount consumes the policy's default, all of it, so a second
 * share finds no room on that device though its memory would do. */
START_TEST(compute_capacity_is_consumed_too)
{
    pcase c = {"cores", {1, 2, 0, 0}, {1, 1, 0, 0}, {8192, 0, 0, 0}, {1, 0, 0, 0}, {0}, 0, 0, 0,
               4096, 1, {0}, 0, false, NULL};
    gp_node *n = dra_node(&c);
    n->gpus[0].dra.cores = n->gpus[1].dra.cores = true;
    n->gpus[0].dra.core_default = n->gpus[1].dra.core_default = GP_CORE_FULL;
    n->gpus[0].dra.core_used = GP_CORE_FULL;   /* the first claim took every core */
    gp_pod_req r;
    dra_req(&r, 4096, 1);
    gp_place_opts o;
    placement_default_opts(&o);
    gp_assignment a;
    ck_assert_int_eq(placement_fit(n, &r, &o, &a, NULL), 0);
    ck_assert_int_eq(a.ctrs[0].gpus[0].index, 1);
    ck_assert_int_eq(a.ctrs[0].gpus[0].core, GP_CORE_FULL);
    /* asking 30 % of the compute leaves room beside a 50 % claim */
    n->gpus[0].dra.core_used = 500;
    r.ctrs[0].core = 300;
    ck_assert_int_eq(placement_fit(n, &r, &o, &a, NULL), 0);
    ck_assert_int_eq(a.ctrs[0].gpus[0].index, 0);
    free(n);
}
END_TEST

/* gpupack's own pods are never placed on GPUs known from DRA alone. */
START_TEST(own_pods_not_on_dra_only_gpus)
{
    int64_t mem[2] = {G, G}, used[2] = {0, 0};
    int core[2] = {0, 0};
    gp_node *n = tu_node("n", 2, mem, used, core);
    n->gpus[0].dra = (gp_gpu_dra){.mem_total = G, .order = 1, .multi = true, .only = true};
    n->gpus[1].dra = (gp_gpu_dra){.mem_total = G, .order = 2, .multi = true};
    gp_pod_req r;
    tu_req(&r, "own", 1, 4096, 0);
    gp_place_opts o;
    placement_default_opts(&o);
    o.gpu = placement_gpu_strategy("first-fit");
    gp_assignment a;
    ck_assert_int_eq(placement_fit(n, &r, &o, &a, NULL), 0);
    ck_assert_int_eq(a.ctrs[0].gpus[0].index, 1);   /* known both ways: fine */
    n->gpus[1].dra.only = true;
    gp_fit_fail why;
    ck_assert_int_eq(placement_fit(n, &r, &o, &a, &why), -1);
    free(n);
}
END_TEST

/* Two nodes that differ only in what claims hold are not the same state. */
START_TEST(dra_use_is_part_of_the_state)
{
    pcase c = {"state", {1, 2, 3, 4}, {1, 1, 1, 1}, {0}, {0}, {0}, 0, 0, 0, 0, 1, {0}, 0, false, NULL};
    gp_node *x = dra_node(&c), *y = dra_node(&c);
    ck_assert(placement_same_state(x, y));
    ck_assert(placement_state_hash(x) == placement_state_hash(y));
    y->gpus[2].dra.mem_used = 1024;   /* the same total use, another split */
    y->gpus[2].mem_used = 1024;
    x->gpus[2].mem_used = 1024;
    ck_assert(!placement_same_state(x, y));
    ck_assert(placement_state_hash(x) != placement_state_hash(y));
    free(x);
    free(y);
}
END_TEST

Suite *suite_dra_predict(void);
Suite *suite_dra_predict(void)
{
    Suite *s = suite_create("dra_predict");
    TCase *t = tcase_create("core");
    tcase_add_loop_test(t, predicts_the_allocator, 0, (int)(sizeof cases / sizeof cases[0]));
    tcase_add_test(t, compute_capacity_is_consumed_too);
    tcase_add_test(t, own_pods_not_on_dra_only_gpus);
    tcase_add_test(t, dra_use_is_part_of_the_state);
    suite_add_tcase(s, t);
    return s;
}
