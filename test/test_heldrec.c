/* test_heldrec.c -- the record of a consolidation's held places on the waiting pod. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/heldrec.h"
#include "testutil.h"

static gp_held_rec two_places(void)
{
    gp_held_rec r = {.at_ns = 1764200000123456789LL, .n = 2};
    r.p = xcalloc(2, sizeof *r.p);
    gp_strlcpy(r.p[0].owner, "rs-uid-1", sizeof r.p[0].owner);
    gp_strlcpy(r.p[0].ns, "ml", sizeof r.p[0].ns);
    gp_strlcpy(r.p[0].pod, "serve-7d9f-abcde", sizeof r.p[0].pod);
    gp_strlcpy(r.p[0].node, "gpu-node-3", sizeof r.p[0].node);
    r.p[0].nholds = 1;
    r.p[0].holds[0] = (gp_hold){.index = 1, .mem_mib = 12288, .core = 250};
    r.p[0].cpu_milli = 500;
    r.p[0].mem_mib = 1024;
    r.p[0].expires_ns = r.at_ns + 150 * 1000000000LL;
    r.p[1] = r.p[0];
    gp_strlcpy(r.p[1].pod, "serve \"quoted\"\n", sizeof r.p[1].pod);
    r.p[1].nholds = 2;
    r.p[1].holds[0] = (gp_hold){.index = 0, .mem_mib = 81920, .core = 1000};
    r.p[1].holds[1] = (gp_hold){.index = 7, .mem_mib = 81920, .core = 1000};
    return r;
}

START_TEST(round_trip)
{
    gp_held_rec r = two_places(), back;
    char *text = heldrec_encode(&r);
    gp_err err;
    ck_assert_msg(heldrec_decode(text, &back, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(back.at_ns, r.at_ns);
    ck_assert_int_eq(back.n, 2);
    for (int i = 0; i < 2; i++) {
        ck_assert_str_eq(back.p[i].owner, r.p[i].owner);
        ck_assert_str_eq(back.p[i].ns, r.p[i].ns);
        ck_assert_str_eq(back.p[i].pod, r.p[i].pod);
        ck_assert_str_eq(back.p[i].node, r.p[i].node);
        ck_assert_int_eq(back.p[i].nholds, r.p[i].nholds);
        for (int h = 0; h < r.p[i].nholds; h++) {
            ck_assert_int_eq(back.p[i].holds[h].index, r.p[i].holds[h].index);
            ck_assert_int_eq(back.p[i].holds[h].mem_mib, r.p[i].holds[h].mem_mib);
            ck_assert_int_eq(back.p[i].holds[h].core, r.p[i].holds[h].core);
        }
        ck_assert_int_eq(back.p[i].cpu_milli, 500);
        ck_assert_int_eq(back.p[i].mem_mib, 1024);
        ck_assert_int_eq(back.p[i].expires_ns, r.p[i].expires_ns);
    }
    /* the claim's assignment holds what the place holds */
    gp_assignment a;
    heldrec_assignment(&back.p[1], &a);
    ck_assert_str_eq(a.node, "gpu-node-3");
    gp_hold holds[GP_MAX_GPUS_PER_NODE];
    ck_assert_int_eq(gp_assignment_holds(&a, holds), 2);
    ck_assert_int_eq(holds[0].index + holds[1].index, 7);
    ck_assert_int_eq(holds[0].mem_mib, 81920);
    free(text);
    heldrec_clear(&r);
    heldrec_clear(&back);
}
END_TEST

/* A place on more GPUs than one container entry takes is split over several. */
START_TEST(assignment_of_many_gpus)
{
    gp_held_place pl;
    memset(&pl, 0, sizeof pl);
    gp_strlcpy(pl.node, "big", sizeof pl.node);
    pl.nholds = GP_MAX_GPUS_PER_NODE;
    for (int i = 0; i < pl.nholds; i++)
        pl.holds[i] = (gp_hold){.index = i, .mem_mib = 100 + i, .core = 10};
    gp_assignment a;
    heldrec_assignment(&pl, &a);
    ck_assert_int_eq(a.nctrs, (GP_MAX_GPUS_PER_NODE + GP_MAX_GPUS_PER_CTR - 1) / GP_MAX_GPUS_PER_CTR);
    gp_hold holds[GP_MAX_GPUS_PER_NODE];
    ck_assert_int_eq(gp_assignment_holds(&a, holds), GP_MAX_GPUS_PER_NODE);
    int64_t sum = 0;
    for (int i = 0; i < GP_MAX_GPUS_PER_NODE; i++)
        sum += holds[i].mem_mib;
    ck_assert_int_eq(sum, 100 * GP_MAX_GPUS_PER_NODE + GP_MAX_GPUS_PER_NODE * (GP_MAX_GPUS_PER_NODE - 1) / 2);
}
END_TEST

#define PLACE(extra)                                                                                 \
    "{\"v\":1,\"at\":1000,\"places\":[{\"owner\":\"o\",\"ns\":\"ml\",\"pod\":\"p\",\"node\":\"n\"," \
    "\"gpus\":[[0,100,0]],\"cpu\":0,\"mem\":0,\"expires\":2000" extra "}]}"

static const struct {
    const char *text, *why;
} bad[] = {
    {"", "is not JSON"},
    {"[]", "\"v\" must be 1"},
    {"{\"v\":2,\"at\":1,\"places\":[]}", "\"v\" must be 1"},
    {"{\"v\":1,\"at\":0,\"places\":[]}", "\"at\" must be a positive"},
    {"{\"v\":1,\"at\":5,\"places\":[]}", "1 to 64 places"},
    {"{\"v\":1,\"at\":5,\"places\":{}}", "1 to 64 places"},
    {"{\"v\":1,\"v\":1,\"at\":5,\"places\":[]}", "is not JSON"},   /* duplicate keys */
    {"{\"v\":1,\"at\":1000,\"places\":[7]}", "place 0 is not an object"},
    {"{\"v\":1,\"at\":1000,\"places\":[{\"ns\":\"ml\",\"pod\":\"p\",\"node\":\"n\",\"gpus\":[[0,1,0]],"
     "\"cpu\":0,\"mem\":0,\"expires\":2000}]}",
     "\"owner\" missing"},
    {"{\"v\":1,\"at\":1000,\"places\":[{\"owner\":\"\",\"ns\":\"ml\",\"pod\":\"p\",\"node\":\"n\","
     "\"gpus\":[[0,1,0]],\"cpu\":0,\"mem\":0,\"expires\":2000}]}",
     "\"owner\" missing"},
    {"{\"v\":1,\"at\":3000,\"places\":[{\"owner\":\"o\",\"ns\":\"ml\",\"pod\":\"p\",\"node\":\"n\","
     "\"gpus\":[[0,1,0]],\"cpu\":0,\"mem\":0,\"expires\":2000}]}",
     "\"expires\" 2000 out of range"},
    {"{\"v\":1,\"at\":1000,\"places\":[{\"owner\":\"o\",\"ns\":\"ml\",\"pod\":\"p\",\"node\":\"n\","
     "\"gpus\":[[0,1,0]],\"cpu\":-1,\"mem\":0,\"expires\":2000}]}",
     "\"cpu\" -1 out of range"},
    {"{\"v\":1,\"at\":1000,\"places\":[{\"owner\":\"o\",\"ns\":\"ml\",\"pod\":\"p\",\"node\":\"n\","
     "\"gpus\":[],\"cpu\":0,\"mem\":0,\"expires\":2000}]}",
     "must list 1 to 64 GPUs"},
    {"{\"v\":1,\"at\":1000,\"places\":[{\"owner\":\"o\",\"ns\":\"ml\",\"pod\":\"p\",\"node\":\"n\","
     "\"gpus\":[[0,1]],\"cpu\":0,\"mem\":0,\"expires\":2000}]}",
     "GPU 0 is not [index, MiB, per-mille]"},
    {"{\"v\":1,\"at\":1000,\"places\":[{\"owner\":\"o\",\"ns\":\"ml\",\"pod\":\"p\",\"node\":\"n\","
     "\"gpus\":[[0,1,1001]],\"cpu\":0,\"mem\":0,\"expires\":2000}]}",
     "GPU 0 out of range"},
    {"{\"v\":1,\"at\":1000,\"places\":[{\"owner\":\"o\",\"ns\":\"ml\",\"pod\":\"p\",\"node\":\"n\","
     "\"gpus\":[[0,0,0]],\"cpu\":0,\"mem\":0,\"expires\":2000}]}",
     "GPU 0 out of range"},
    {"{\"v\":1,\"at\":1000,\"places\":[{\"owner\":\"o\",\"ns\":\"ml\",\"pod\":\"p\",\"node\":\"n\","
     "\"gpus\":[[3,1,0],[3,1,0]],\"cpu\":0,\"mem\":0,\"expires\":2000}]}",
     "GPU 3 listed twice"},
    {"{\"v\":1,\"at\":1000,\"places\":[{\"owner\":\"o\",\"ns\":\"ml\",\"pod\":\"p\",\"node\":\"n\","
     "\"gpus\":[[70000,1,0]],\"cpu\":0,\"mem\":0,\"expires\":2000}]}",
     "GPU 0 out of range"},
};

START_TEST(malformed)
{
    gp_held_rec r;
    gp_err err;
    ck_assert_int_eq(heldrec_decode(bad[_i].text, &r, &err), -1);
    ck_assert_msg(strstr(err.msg, bad[_i].why), "%s: got \"%s\", want \"%s\"", bad[_i].text, err.msg,
                  bad[_i].why);
    ck_assert_int_eq(r.n, 0);
    ck_assert_ptr_null(r.p);
    /* a valid one for contrast */
    ck_assert_msg(heldrec_decode(PLACE(""), &r, &err) == 0, "%s", err.msg);
    heldrec_clear(&r);
}
END_TEST

START_TEST(bounds)
{
    gp_held_rec r;
    gp_err err;
    ck_assert_int_eq(heldrec_decode(NULL, &r, &err), -1);
    /* longer than HELDREC_TEXT_MAX: refused before it is parsed */
    char *big = xmalloc(HELDREC_TEXT_MAX + 2);
    memset(big, ' ', HELDREC_TEXT_MAX + 1);
    big[HELDREC_TEXT_MAX + 1] = '\0';
    ck_assert_int_eq(heldrec_decode(big, &r, &err), -1);
    ck_assert(strstr(err.msg, "longer than"));
    free(big);
    /* a name longer than a Kubernetes name */
    char name[GP_NAME_MAX + 10];
    memset(name, 'x', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    char *text = xasprintf("{\"v\":1,\"at\":1000,\"places\":[{\"owner\":\"o\",\"ns\":\"ml\",\"pod\":\"%s\","
                           "\"node\":\"n\",\"gpus\":[[0,1,0]],\"cpu\":0,\"mem\":0,\"expires\":2000}]}",
                           name);
    ck_assert_int_eq(heldrec_decode(text, &r, &err), -1);
    ck_assert(strstr(err.msg, "\"pod\" longer than"));
    free(text);
    /* more places than HELDREC_PLACES_MAX */
    gp_buf b;
    gp_buf_init(&b, 1 << 20);
    gp_buf_printf(&b, "{\"v\":1,\"at\":1000,\"places\":[");
    for (int i = 0; i <= HELDREC_PLACES_MAX; i++)
        gp_buf_printf(&b, "%s{\"owner\":\"o\",\"ns\":\"ml\",\"pod\":\"p\",\"node\":\"n\",\"gpus\":[[0,1,0]],"
                          "\"cpu\":0,\"mem\":0,\"expires\":2000}", i ? "," : "");
    gp_buf_printf(&b, "]}");
    ck_assert(!gp_buf_failed(&b));
    ck_assert_int_eq(heldrec_decode(b.data, &r, &err), -1);
    ck_assert(strstr(err.msg, "places"));
    gp_buf_free(&b);
}
END_TEST

/* The record is read from the pod's condition, only when it is True. */
START_TEST(from_pod)
{
    gp_held_rec r;
    gp_err err;
    json_t *pod = json_pack("{s:{s:[{s:s,s:s},{s:s,s:s,s:s}]}}", "status", "conditions", "type",
                            "PodScheduled", "status", "False", "type", GP_HELD_PLACES_CONDITION,
                            "status", "True", "message", PLACE(""));
    ck_assert_int_eq(heldrec_from_pod(pod, &r, &err), 1);
    ck_assert_int_eq(r.n, 1);
    ck_assert_str_eq(r.p[0].node, "n");
    heldrec_clear(&r);
    json_object_set_new(json_array_get(json_object_get(json_object_get(pod, "status"), "conditions"), 1),
                        "status", json_string("False"));
    ck_assert_int_eq(heldrec_from_pod(pod, &r, &err), 0);
    json_object_set_new(json_array_get(json_object_get(json_object_get(pod, "status"), "conditions"), 1),
                        "status", json_string("True"));
    json_object_set_new(json_array_get(json_object_get(json_object_get(pod, "status"), "conditions"), 1),
                        "message", json_string("not json"));
    ck_assert_int_eq(heldrec_from_pod(pod, &r, &err), -1);
    json_decref(pod);
    pod = json_pack("{s:{}}", "status");
    ck_assert_int_eq(heldrec_from_pod(pod, &r, &err), 0);
    json_decref(pod);
}
END_TEST

Suite *suite_heldrec(void);
Suite *suite_heldrec(void)
{
    Suite *s = suite_create("heldrec");
    TCase *t = tcase_create("heldrec");
    tcase_add_test(t, round_trip);
    tcase_add_test(t, assignment_of_many_gpus);
    tcase_add_loop_test(t, malformed, 0, (int)GP_ARRAY_LEN(bad));
    tcase_add_test(t, bounds);
    tcase_add_test(t, from_pod);
    suite_add_tcase(s, t);
    return s;
}
