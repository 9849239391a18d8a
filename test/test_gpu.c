/* test_gpu.c -- holds (max(init) vs sum(regular) per GPU), model-list matching, memory share rounding. */
#include <check.h>
#include <string.h>

#include "model/gpu.h"
#include "lib/util.h"

/* ------------------------------------------------------------- holds -- */

typedef struct {
    const char *name;
    bool init;
    int ngpus;
    gp_gpu_grant gpus[3];   /* {index, mem_mib, core} */
} ctr_spec;

typedef struct {
    const char *what;
    int nctrs;
    ctr_spec ctrs[4];
    int nholds;
    gp_gpu_grant want[4];   /* the holds {index, mem_mib, core}, any order */
} holds_case;

static const holds_case holds_cases[] = {
    {"empty assignment", 0, {{0}}, 0, {{0}}},
    {"one container, one GPU", 1, {{"c", false, 1, {{2, 4096, 300}}}}, 1, {{2, 4096, 300}}},
    {"regular containers on one GPU add up", 2,
     {{"a", false, 1, {{0, 1000, 100}}}, {"b", false, 1, {{0, 2000, 200}}}},
     1, {{0, 3000, 300}}},
    {"a two-GPU container holds both", 1, {{"t", false, 2, {{0, 2048, 0}, {1, 2048, 0}}}},
     2, {{0, 2048, 0}, {1, 2048, 0}}},
    {"init larger than the regular sum wins, per dimension", 3,
     {{"r", false, 1, {{0, 1000, 100}}},
      {"i1", true, 1, {{0, 5000, 50}}},
      {"i2", true, 1, {{0, 3000, 500}}}},
     1, {{0, 5000, 500}}},
    {"init containers are a max, not a sum", 2,
     {{"i1", true, 1, {{1, 3000, 200}}}, {"i2", true, 1, {{1, 3000, 200}}}},
     1, {{1, 3000, 200}}},
    {"regular sum larger than init wins", 3,
     {{"a", false, 1, {{0, 3000, 300}}}, {"b", false, 1, {{0, 3000, 300}}},
      {"i", true, 1, {{0, 4000, 100}}}},
     1, {{0, 6000, 600}}},
    {"init on a GPU no regular container uses", 2,
     {{"r", false, 1, {{0, 1000, 0}}}, {"i", true, 1, {{3, 7000, 1000}}}},
     2, {{0, 1000, 0}, {3, 7000, 1000}}},
    /* the captured gpu-pod-multi after placement: trainer x2, core-only sidecar, init-weights */
    {"gpu-pod-multi shape", 3,
     {{"trainer", false, 2, {{0, 2048, 0}, {1, 2048, 0}}},
      {"sidecar", false, 1, {{1, 0, 300}}},
      {"init-weights", true, 1, {{2, 1024, 0}}}},
     3, {{0, 2048, 0}, {1, 2048, 300}, {2, 1024, 0}}},
};

START_TEST(holds_table)
{
    const holds_case *c = &holds_cases[_i];
    gp_assignment a;
    memset(&a, 0, sizeof a);
    gp_strlcpy(a.node, "n1", sizeof a.node);
    a.nctrs = c->nctrs;
    for (int i = 0; i < c->nctrs; i++) {
        gp_strlcpy(a.ctrs[i].name, c->ctrs[i].name, sizeof a.ctrs[i].name);
        a.ctrs[i].init = c->ctrs[i].init;
        a.ctrs[i].ngpus = c->ctrs[i].ngpus;
        memcpy(a.ctrs[i].gpus, c->ctrs[i].gpus, sizeof c->ctrs[i].gpus);
    }
    gp_hold holds[GP_MAX_GPUS_PER_NODE];
    memset(holds, 0xee, sizeof holds);
    int n = gp_assignment_holds(&a, holds);
    ck_assert_msg(n == c->nholds, "%s: %d holds, want %d", c->what, n, c->nholds);
    for (int w = 0; w < c->nholds; w++) {
        int found = 0;
        for (int k = 0; k < n; k++) {
            if (holds[k].index != c->want[w].index)
                continue;
            found++;
            ck_assert_msg(holds[k].mem_mib == c->want[w].mem_mib && holds[k].core == c->want[w].core,
                          "%s: GPU %d holds %lld MiB/%d, want %lld/%d", c->what, holds[k].index,
                          (long long)holds[k].mem_mib, holds[k].core,
                          (long long)c->want[w].mem_mib, c->want[w].core);
        }
        ck_assert_msg(found == 1, "%s: GPU %d listed %d times", c->what, c->want[w].index, found);
    }
}
END_TEST

/* 64 distinct GPUs fill the holds array exactly; nothing is written past it. */
START_TEST(holds_capacity)
{
    gp_assignment a;
    memset(&a, 0, sizeof a);
    a.nctrs = 5;
    for (int c = 0; c < 5; c++) {
        a.ctrs[c].ngpus = GP_MAX_GPUS_PER_CTR;
        a.ctrs[c].init = c == 4;
        for (int g = 0; g < GP_MAX_GPUS_PER_CTR; g++)
            a.ctrs[c].gpus[g] = (gp_gpu_grant){c * GP_MAX_GPUS_PER_CTR + g, 1, 1};
    }
    gp_hold holds[GP_MAX_GPUS_PER_NODE + 1];
    holds[GP_MAX_GPUS_PER_NODE].index = -7;
    int n = gp_assignment_holds(&a, holds);
    ck_assert_int_eq(n, GP_MAX_GPUS_PER_NODE);
    ck_assert_int_eq(holds[GP_MAX_GPUS_PER_NODE].index, -7);
}
END_TEST

START_TEST(node_gpu_pos)
{
    static gp_node node;
    memset(&node, 0, sizeof node);
    node.ngpus = 3;
    node.gpus[0].info.index = 0;
    node.gpus[1].info.index = 2;
    node.gpus[2].info.index = 7;
    ck_assert_int_eq(gp_node_gpu_pos(&node, 0), 0);
    ck_assert_int_eq(gp_node_gpu_pos(&node, 2), 1);
    ck_assert_int_eq(gp_node_gpu_pos(&node, 7), 2);
    ck_assert_int_eq(gp_node_gpu_pos(&node, 1), -1);
    ck_assert_int_eq(gp_node_gpu_pos(&node, -1), -1);
    node.ngpus = 2;   /* positions past ngpus are not looked at */
    ck_assert_int_eq(gp_node_gpu_pos(&node, 7), -1);
}
END_TEST

/* ------------------------------------------------------------ memory -- */

typedef struct {
    int64_t mem_mib;
    int32_t ppm;
    gp_ask ask;
    int64_t alloc;
    int64_t want;
} mem_case;

#define SH GP_ASK_SHARE
#define FR GP_ASK_FRACTION
#define PC GP_ASK_PERCENT
static const mem_case mem_cases[] = {
    {4096, 0, SH, 40960, 4096},           /* MiB requests ignore the GPU */
    {4096, 500000, SH, 40960, 4096},      /* MiB wins over a share */
    {0, 1000000, SH, 40960, 40960},       /* whole GPU */
    {0, 1000000, GP_ASK_WHOLE, 15360, 15360},
    {0, 500000, SH, 40960, 20480},
    {0, 500000, SH, 15, 8},               /* trace shares: 7.5 rounds up */
    {0, 333000, SH, 1000, 333},
    {0, 333000, SH, 1001, 334},           /* 333.333 rounds up */
    {0, 1000, SH, 1, 1},                  /* 0.001 MiB still needs 1 */
    {0, 0, SH, 40960, 0},                 /* no memory asked */
    {0, 500000, SH, 0, 1},                /* nothing to share: never fits an empty GPU */
    {0, 500000, SH, -5, 1},
    /* fractions and percentages round down, as KAI and HAMi compute them */
    {0, 500000, FR, 81920, 40960},        /* gpu-fraction 0.5 of an 80 GiB GPU */
    {0, 500000, FR, 16384, 8192},         /* ... and of a 16 GiB one */
    {0, 500000, FR, 15, 7},
    {0, 333000, FR, 1001, 333},
    {0, 333333, FR, 15360, 5119},         /* 0.333333 x 15360 = 5119.99 */
    {0, 300000, FR, 15109, 4532},         /* 0.3 + 0.3 + 0.4 of a T4 fit together: */
    {0, 400000, FR, 15109, 6043},         /* 4532 + 4532 + 6043 <= 15109 */
    {0, 62500, FR, 81920, 5120},          /* 1/16 exactly: finer than per-mille */
    {0, 330000, PC, 15360, 5068},         /* HAMi: 15360 * 33 / 100 */
    {0, 1, FR, 100, 1},                   /* never less than 1 MiB */
    {0, 1000000, FR, 9223372036854775807LL, 9223372036854775807LL},   /* saturates */
};

START_TEST(ctr_mem_on)
{
    const mem_case *c = &mem_cases[_i];
    gp_ctr_req r;
    memset(&r, 0, sizeof r);
    r.count = 1;
    r.mem_mib = c->mem_mib;
    r.mem_ppm = c->ppm;
    r.ask = (unsigned char)c->ask;
    int64_t got = gp_ctr_mem_on(&r, c->alloc);
    ck_assert_msg(got == c->want, "mem %lld ppm %d ask %d on %lld: got %lld, want %lld",
                  (long long)c->mem_mib, c->ppm, c->ask, (long long)c->alloc, (long long)got,
                  (long long)c->want);
}
END_TEST

/* ------------------------------------------------------------ models -- */

typedef struct {
    const char *list;
    const char *model;
    bool want;
} model_case;

static const model_case model_cases[] = {
    {NULL, "A100-SXM4-40GB", true},
    {"", "A100-SXM4-40GB", true},
    {"", "", true},
    {"A100", "A100-SXM4-40GB", true},
    {"T4", "Tesla-T4", true},
    {"A10", "A100-SXM4-40GB", false},
    {"A10", "A100", false},
    {"A10", "A10", true},
    {"A10", "NVIDIA-A10", true},
    {"A10", "A10G", false},
    {"A100", "A10", false},
    {"a100", "A100-SXM4-80GB", true},
    {"TESLA-t4", "Tesla-T4", true},
    {"T4|A10", "A10", true},
    {"T4|A10", "Tesla-T4", true},
    {"T4|A10", "A100-SXM4-80GB", false},
    {" T4 | A10 ", "Tesla-T4", true},
    {"V100", "NVIDIA-Tesla V100-PCIE-32GB", true},
    {"Tesla V100", "NVIDIA-Tesla V100-PCIE-32GB", true},
    {"A100-SXM4", "A100-SXM4-40GB", true},
    {"SXM4-40GB", "A100-SXM4-40GB", true},
    {"40GB", "A100-SXM4-40GB", true},
    {"GB", "A100-SXM4-40GB", false},
    {"100", "A100-SXM4-40GB", false},
    {"A100", "NVIDIA_A100", true},
    {"T4", "RTX-T40", false},
    {"T4", "", false},
    {"||", "Tesla-T4", false},
    {"|T4", "Tesla-T4", true},
    {"A100-SXM4-40GB-X", "A100-SXM4-40GB", false},
};

START_TEST(model_allowed)
{
    const model_case *c = &model_cases[_i];
    ck_assert_msg(gp_model_allowed(c->list, c->model) == c->want, "list \"%s\" model \"%s\": want %s",
                  c->list ? c->list : "(null)", c->model, c->want ? "allowed" : "refused");
}
END_TEST

Suite *suite_gpu(void);
Suite *suite_gpu(void)
{
    Suite *s = suite_create("gpu");
    TCase *t = tcase_create("model");
    tcase_add_loop_test(t, holds_table, 0, (int)GP_ARRAY_LEN(holds_cases));
    tcase_add_test(t, holds_capacity);
    tcase_add_test(t, node_gpu_pos);
    tcase_add_loop_test(t, ctr_mem_on, 0, (int)GP_ARRAY_LEN(mem_cases));
    tcase_add_loop_test(t, model_allowed, 0, (int)GP_ARRAY_LEN(model_cases));
    suite_add_tcase(s, t);
    return s;
}
