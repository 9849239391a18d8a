/* test_extender.c -- the three verbs on real kube-scheduler request bodies, bad input, binders. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pack/clusterfile.h"
#include "sched/extender.h"
#include "act/bindpipe.h"
#include "testutil.h"
#include "lib/yamljson.h"

/* The real nodes the samples were captured against: node-gpupack (4 x A100 40 GB,
 * one unhealthy), node-aliyun (2 x 16 GiB), node-nfd (4 x T4 16 GiB, GFD labels). */
static gp_cluster *real_cluster(void)
{
    gp_cluster *c = cluster_new();
    json_t *list = tu_load_json(tu_captured("wire/nodes/list.trimmed.json"));
    json_t *docs = json_pack("[O]", list);
    gp_err err;
    ck_assert_msg(clusterfile_apply(c, docs, 1024, NULL, &err) == 0, "%s", err.msg);
    json_decref(docs);
    json_decref(list);
    return c;
}

/* The body of a captured request file, as the scheduler sent it. */
static char *sample_body(const char *rel)
{
    json_t *j = tu_load_json(tu_captured(rel));
    char *s = json_dumps(json_object_get(j, "body"), JSON_COMPACT);
    json_decref(j);
    return s;
}

typedef int (*verb_fn)(gp_extender *, const char *, size_t, char **);

/* Calls a verb and parses its answer: the text must always be valid JSON. */
static int call(verb_fn verb, gp_extender *e, const char *body, json_t **out)
{
    char *text = NULL;
    int status = verb(e, body, strlen(body), &text);
    ck_assert_ptr_nonnull(text);
    json_error_t je;
    *out = json_loads(text, 0, &je);
    ck_assert_msg(*out != NULL, "answer is not JSON (%s): %s", je.text, text);
    free(text);
    return status;
}

static int64_t total_used(gp_cluster *c)
{
    gp_cluster_stats st;
    cluster_stats(c, &st);
    return st.mem_used;
}

/* ----------------------------------------------------- the real samples -- */

START_TEST(filter_prioritize_bind_real_sample)
{
    gp_cluster *c = real_cluster();
    gp_extender *e = extender_new(c, NULL);
    char *body = sample_body("wire/extender/cache-true/001-filter.json");
    json_t *out;
    ck_assert_int_eq(call(extender_filter, e, body, &out), 200);
    json_t *names = json_object_get(out, "NodeNames");
    ck_assert_uint_eq(json_array_size(names), 3);   /* 4096 MiB fits everywhere */
    ck_assert_str_eq(json_string_value(json_object_get(out, "Error")), "");
    ck_assert(json_is_null(json_object_get(out, "Nodes")));
    json_decref(out);

    char *pbody = sample_body("wire/extender/cache-true/002-prioritize.json");
    ck_assert_int_eq(call(extender_prioritize, e, pbody, &out), 200);
    ck_assert_uint_eq(json_array_size(out), 3);
    int best = -1;
    for (size_t i = 0; i < 3; i++) {
        json_t *h = json_array_get(out, i);
        int sc = (int)json_integer_value(json_object_get(h, "Score"));
        ck_assert(sc >= 0 && sc <= 10);
        ck_assert_ptr_nonnull(json_string_value(json_object_get(h, "Host")));
        if (sc > best)
            best = sc;
    }
    ck_assert_int_eq(best, 10);
    json_decref(out);

    char *bbody = sample_body("wire/extender/cache-true/003-bind.json");
    ck_assert_int_eq(call(extender_bind, e, bbody, &out), 200);
    ck_assert_str_eq(json_string_value(json_object_get(out, "Error")), "");
    json_decref(out);
    ck_assert_int_eq(total_used(c), 4096);
    /* kube-scheduler may retry a bind: idempotent */
    ck_assert_int_eq(call(extender_bind, e, bbody, &out), 200);
    ck_assert_str_eq(json_string_value(json_object_get(out, "Error")), "");
    json_decref(out);
    ck_assert_int_eq(total_used(c), 4096);
    free(body);
    free(pbody);
    free(bbody);
    extender_free(e);
    cluster_free(c);
}
END_TEST

/* Embedded mode (no Binding is posted): a bind of a pod that asks no GPUs
 * records its host resources and answers; its job, with the empty annotation
 * set a plain Binding would carry, is freed (LeakSanitizer and valgrind
 * reported it lost before; found by fuzz_h2). */
START_TEST(embedded_bind_of_cpu_only_pod)
{
    gp_cluster *c = real_cluster();
    gp_extender *e = extender_new(c, NULL);
    json_t *filter = tu_load_json(tu_captured("wire/extender/cache-true/001-filter.json"));
    json_t *body = json_object_get(filter, "body");
    json_t *pod = json_object_get(body, "Pod");
    json_t *ctrs = json_object_get(json_object_get(pod, "spec"), "containers");
    size_t i;
    json_t *ctr;
    json_array_foreach(ctrs, i, ctr)
        json_object_del(ctr, "resources");   /* no GPU asked */
    json_object_set_new(json_object_get(pod, "metadata"), "uid", json_string("cpu-only-1"));
    char *fb = json_dumps(body, JSON_COMPACT);
    json_t *out;
    ck_assert_int_eq(call(extender_filter, e, fb, &out), 200);
    const char *node = json_string_value(json_array_get(json_object_get(out, "NodeNames"), 0));
    ck_assert_ptr_nonnull(node);
    const char *name = json_string_value(json_object_get(json_object_get(pod, "metadata"), "name"));
    const char *ns = json_string_value(json_object_get(json_object_get(pod, "metadata"), "namespace"));
    char *bb = xasprintf("{\"PodName\":\"%s\",\"PodNamespace\":\"%s\",\"PodUID\":\"cpu-only-1\","
                         "\"Node\":\"%s\"}", name, ns ? ns : "default", node);
    json_decref(out);
    ck_assert_int_eq(call(extender_bind, e, bb, &out), 200);
    ck_assert_str_eq(json_string_value(json_object_get(out, "Error")), "");
    json_decref(out);
    ck_assert_int_eq(total_used(c), 0);   /* no GPU memory held */
    free(bb);
    free(fb);
    json_decref(filter);
    extender_free(e);
    cluster_free(c);
}
END_TEST

START_TEST(multi_container_init_pod_sample)
{
    gp_cluster *c = real_cluster();
    gp_extender *e = extender_new(c, NULL);
    char *body = sample_body("wire/extender/cache-true/004-filter.json");
    json_t *out;
    ck_assert_int_eq(call(extender_filter, e, body, &out), 200);
    ck_assert_uint_eq(json_array_size(json_object_get(out, "NodeNames")), 3);
    json_decref(out);
    char *bbody = sample_body("wire/extender/cache-true/006-bind.json");
    ck_assert_int_eq(call(extender_bind, e, bbody, &out), 200);
    ck_assert_str_eq(json_string_value(json_object_get(out, "Error")), "");
    json_decref(out);
    json_t *args = json_loads(bbody, 0, NULL);
    const char *node = json_string_value(json_object_get(args, "Node"));
    gp_assignment a;
    gp_pod_state st;
    ck_assert_int_eq(cluster_pod_get(c, json_string_value(json_object_get(args, "PodUID")), &a, &st), 0);
    ck_assert_str_eq(a.node, node);
    /* trainer (2 GPUs x 2048), sidecar (core only), init-weights (1024) */
    ck_assert_int_eq(a.nctrs, 3);
    int init = 0, gpus = 0;
    for (int i = 0; i < a.nctrs; i++) {
        init += a.ctrs[i].init;
        gpus += a.ctrs[i].ngpus;
    }
    ck_assert_int_eq(init, 1);
    ck_assert_int_eq(gpus, 4);
    /* the init container's 1024 MiB runs before the trainer's 2048: not added */
    ck_assert_int_eq(total_used(c), 2 * 2048);
    json_decref(args);
    free(body);
    free(bbody);
    extender_free(e);
    cluster_free(c);
}
END_TEST

START_TEST(full_nodes_mode_echoes_filtered_nodes)
{
    gp_cluster *c = real_cluster();
    gp_extender *e = extender_new(c, NULL);
    /* make node-aliyun too small for the pod: fill its two GPUs */
    gp_pod_req r;
    gp_place_opts o;
    placement_default_opts(&o);
    gp_assignment a;
    gp_err err;
    tu_req(&r, "filler", 2, 16384 - 1024, 0);
    ck_assert_int_eq(cluster_place_and_assume(c, "node-aliyun", &r, &o, 0, "p", GP_POD_BOUND, &a, &err), 0);
    char *body = sample_body("wire/extender/cache-false/001-filter.json");
    json_t *out;
    ck_assert_int_eq(call(extender_filter, e, body, &out), 200);
    json_t *items = json_object_get(json_object_get(out, "Nodes"), "items");
    ck_assert_uint_eq(json_array_size(items), 2);
    for (size_t i = 0; i < 2; i++) {
        json_t *n = json_array_get(items, i);
        const char *name = json_string_value(json_object_get(json_object_get(n, "metadata"), "name"));
        ck_assert_str_ne(name, "node-aliyun");
        ck_assert_ptr_nonnull(json_object_get(n, "status"));   /* whole object echoed */
    }
    const char *why = json_string_value(json_object_get(json_object_get(out, "FailedNodes"), "node-aliyun"));
    ck_assert_ptr_nonnull(why);
    ck_assert_msg(strstr(why, "largest free GPU has 1024 MiB"), "%s", why);
    json_decref(out);
    free(body);
    extender_free(e);
    cluster_free(c);
}
END_TEST

START_TEST(aliyun_profile_sample)
{
    /* test/fixtures/captured/filter-1.json: aliyun.com/gpu-mem "4" (GiB) on gpu-node-1..3 */
    gp_cluster *c = cluster_new();
    gp_inventory inv;
    tu_inventory(&inv, 2, 8192, "T4");
    cluster_upsert_node(c, "gpu-node-1", &inv);
    tu_inventory(&inv, 1, 3072, "T4");
    cluster_upsert_node(c, "gpu-node-2", &inv);
    gp_extender *e = extender_new(c, NULL);
    char *body = sample_body("filter-1.json");
    json_t *out;
    ck_assert_int_eq(call(extender_filter, e, body, &out), 200);
    json_t *names = json_object_get(out, "NodeNames");
    ck_assert_uint_eq(json_array_size(names), 1);
    ck_assert_str_eq(json_string_value(json_array_get(names, 0)), "gpu-node-1");
    json_t *unres = json_object_get(out, "FailedAndUnresolvableNodes");
    ck_assert_ptr_nonnull(json_object_get(unres, "gpu-node-2"));   /* 3 GiB < 4 GiB */
    ck_assert_ptr_nonnull(json_object_get(unres, "gpu-node-3"));   /* unknown node */
    json_decref(out);
    char *bbody = sample_body("bind-1.json");
    ck_assert_int_eq(call(extender_bind, e, bbody, &out), 200);
    /* the sample binds to gpu-node-3, which has no GPUs: a clear error, no state */
    ck_assert_msg(strstr(json_string_value(json_object_get(out, "Error")), "gpu-node-3"), "%s",
                  json_string_value(json_object_get(out, "Error")));
    json_decref(out);
    ck_assert_int_eq(total_used(c), 0);
    free(body);
    free(bbody);
    extender_free(e);
    cluster_free(c);
}
END_TEST

/* ----------------------------------------------------------- bad input -- */

typedef struct bad_case {
    int verb;                /* 0 filter, 1 prioritize, 2 bind */
    const char *body;
    const char *fragment;    /* must be in the Error */
} bad_case;

static const bad_case bad[] = {
    {0, "", "not valid JSON"},
    {0, "{\"Pod\":", "not valid JSON"},
    {0, "[1,2]", "must be a JSON object"},
    {0, "{\"NodeNames\":[\"n0\"]}", "Pod must be a Pod object"},
    {0, "{\"Pod\":5,\"NodeNames\":[\"n0\"]}", "Pod must be a Pod object"},
    {0, "{\"Pod\":{},\"NodeNames\":\"n0\"}", "NodeNames must be an array"},
    {0, "{\"Pod\":{},\"NodeNames\":[1]}", "NodeNames[0] is not a node name"},
    {0, "{\"Pod\":{},\"NodeNames\":null,\"Nodes\":null}", "neither NodeNames nor Nodes"},
    {0, "{\"Pod\":{},\"Nodes\":{\"items\":[{\"metadata\":{}}]}}", "Nodes.items[0] is not a node name"},
    {1, "{\"Pod\":{},\"Nodes\":7}", "Nodes must be a NodeList"},
    {1, "nul", "not valid JSON"},
    /* jansson's message quotes the bytes near the fault: the answer is JSON still */
    {0, "{\"Pod\":\"\\\xd8\x92\"}", "invalid escape"},
    {1, "{\"Pod\":\xc3\xa9\xe2}", "not valid JSON"},
    {2, "{}", "bind needs PodName"},
    {2, "{\"PodName\":\"p\",\"PodNamespace\":\"d\",\"PodUID\":\"u\",\"Node\":3}", "bind needs PodName"},
    {2, "{\"PodName\":\"\",\"PodNamespace\":\"d\",\"PodUID\":\"u\",\"Node\":\"n0\"}", "bind needs PodName"},
};

START_TEST(bad_requests_are_400_and_change_nothing)
{
    const bad_case *b = &bad[_i];
    gp_cluster *c = cluster_new();
    gp_inventory inv;
    tu_inventory(&inv, 1, 16384, "A100");
    cluster_upsert_node(c, "n0", &inv);
    gp_extender *e = extender_new(c, NULL);
    verb_fn verbs[] = {extender_filter, extender_prioritize, extender_bind};
    json_t *out = NULL;
    ck_assert_int_eq(call(verbs[b->verb], e, b->body, &out), 400);
    const char *msg = json_string_value(json_object_get(out, "Error"));
    ck_assert_ptr_nonnull(msg);
    ck_assert_msg(strstr(msg, b->fragment), "error \"%s\" lacks \"%s\"", msg, b->fragment);
    json_decref(out);
    ck_assert_int_eq(total_used(c), 0);
    gp_extender_stats st;
    extender_stats(e, &st);
    ck_assert_uint_eq(st.bad_requests, 1);
    extender_free(e);
    cluster_free(c);
}
END_TEST

START_TEST(unschedulable_pod_reasons)
{
    gp_cluster *c = cluster_new();
    gp_inventory inv;
    tu_inventory(&inv, 1, 16384, "A100");
    cluster_upsert_node(c, "n0", &inv);
    gp_extender *e = extender_new(c, NULL);
    json_t *out;
    /* a fractional GPU memory request: every node unresolvable, with the field named */
    const char *frac = "{\"Pod\":{\"metadata\":{\"name\":\"p\",\"uid\":\"u\"},\"spec\":{\"containers\":"
                       "[{\"name\":\"c\",\"resources\":{\"limits\":{\"gpupack.io/gpu-mem\":\"1.5\"}}}]}},"
                       "\"NodeNames\":[\"n0\"]}";
    ck_assert_int_eq(call(extender_filter, e, frac, &out), 200);
    const char *why = json_string_value(json_object_get(json_object_get(out, "FailedAndUnresolvableNodes"), "n0"));
    ck_assert_ptr_nonnull(why);
    ck_assert_msg(strstr(why, "gpupack.io/gpu-mem") && strstr(why, "fractional"), "%s", why);
    ck_assert_uint_eq(json_array_size(json_object_get(out, "NodeNames")), 0);
    json_decref(out);
    /* a pod without gpupack resources passes through untouched */
    const char *cpu = "{\"Pod\":{\"metadata\":{\"name\":\"p\",\"uid\":\"u2\"},\"spec\":{\"containers\":"
                      "[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}},"
                      "\"NodeNames\":[\"n0\",\"other\"]}";
    ck_assert_int_eq(call(extender_filter, e, cpu, &out), 200);
    ck_assert_uint_eq(json_array_size(json_object_get(out, "NodeNames")), 2);
    json_decref(out);
    /* bind for a pod never filtered */
    const char *bind = "{\"PodName\":\"x\",\"PodNamespace\":\"d\",\"PodUID\":\"never\",\"Node\":\"n0\"}";
    ck_assert_int_eq(call(extender_bind, e, bind, &out), 200);
    ck_assert_msg(strstr(json_string_value(json_object_get(out, "Error")), "has not seen pod"), "%s",
                  json_string_value(json_object_get(out, "Error")));
    json_decref(out);
    extender_free(e);
    cluster_free(c);
}
END_TEST

/* The watch shows pod `uid` (namespace d) pending, asking 1 GiB of GPU memory. */
static void note_uid(gp_extender *e, const char *uid)
{
    json_t *pod = json_pack("{s:{s:s,s:s,s:s},s:{s:[{s:s,s:{s:{s:s}}}]}}", "metadata", "name", uid,
                            "namespace", "d", "uid", uid, "spec", "containers", "name", "c",
                            "resources", "limits", "gpupack.io/gpu-mem", "1024");
    extender_note_pod(e, pod);
    json_decref(pod);
}

/* Binds pod uid to n0: true when gpupack knew it, false when it had not
 * seen it (any other error fails the test). */
static bool bind_known(gp_extender *e, const char *uid)
{
    char bind[160];
    json_t *out;
    snprintf(bind, sizeof bind, "{\"PodName\":\"%s\",\"PodNamespace\":\"d\",\"PodUID\":\"%s\",\"Node\":\"n0\"}",
             uid, uid);
    ck_assert_int_eq(call(extender_bind, e, bind, &out), 200);
    const char *err = json_string_value(json_object_get(out, "Error"));
    bool ok = *err == '\0';
    if (!ok)
        ck_assert_msg(strstr(err, "has not seen pod"), "%s: %s", uid, err);
    json_decref(out);
    return ok;
}

/* Pods the watch showed pending are remembered for bind up to pending_max;
 * a full map drops its oldest quarter at once, and bind still finds the
 * pods remembered since, request intact. */
START_TEST(pending_pods_past_the_limit)
{
    gp_cluster *c = cluster_new();
    gp_inventory inv;
    tu_inventory(&inv, 8, 16384, "A100");
    cluster_upsert_node(c, "n0", &inv);
    gp_extender_config cfg = {.pending_max = 8};
    gp_extender *e = extender_new(c, &cfg);
    for (int i = 0; i < 20; i++) {
        char uid[16];
        snprintf(uid, sizeof uid, "u%02d", i);
        note_uid(e, uid);
    }
    int known = 0;
    for (int i = 0; i < 20; i++) {
        char uid[16];
        snprintf(uid, sizeof uid, "u%02d", i);
        if (bind_known(e, uid))
            known++;
        else
            ck_assert_msg(i < 14, "%s forgotten", uid);
    }
    /* at most 8 kept, the latest among them; every one bound with its 1024 MiB */
    ck_assert_int_ge(known, 6);
    ck_assert_int_le(known, 8);
    ck_assert_int_eq(total_used(c), (int64_t)known * 1024);
    extender_free(e);
    cluster_free(c);
}
END_TEST

/* Filtered pods are remembered for bind as their filter decoded them; once
 * PENDING_TREES (64) newer ones came, as trimmed text. Either way each binds
 * with its own request: 300 filters of pods asking 100 + i MiB, then their
 * binds in filter order (the first ones from text, the last from trees). */
START_TEST(filtered_pods_bind_with_their_own_request)
{
    enum { N = 300 };
    gp_cluster *c = cluster_new();
    gp_inventory inv;
    tu_inventory(&inv, 8, 81920, "A100");
    cluster_upsert_node(c, "n0", &inv);
    gp_extender_config cfg = {0};
    gp_extender *e = extender_new(c, &cfg);
    for (int i = 0; i < N; i++) {
        char body[400];
        snprintf(body, sizeof body,
                 "{\"Pod\":{\"metadata\":{\"name\":\"f%03d\",\"namespace\":\"d\",\"uid\":\"f%03d\"},"
                 "\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"
                 "{\"gpupack.io/gpu-mem\":\"%d\"}}}]}},\"NodeNames\":[\"n0\"]}",
                 i, i, 100 + i);
        json_t *out;
        ck_assert_int_eq(call(extender_filter, e, body, &out), 200);
        ck_assert_uint_eq(json_array_size(json_object_get(out, "NodeNames")), 1);
        json_decref(out);
    }
    int64_t want = 0;
    for (int i = 0; i < N; i++) {
        char uid[16];
        snprintf(uid, sizeof uid, "f%03d", i);
        int64_t before = total_used(c);
        ck_assert_msg(bind_known(e, uid), "%s forgotten", uid);
        ck_assert_int_eq(total_used(c) - before, 100 + i);
        want += 100 + i;
    }
    ck_assert_int_eq(total_used(c), want);
    extender_free(e);
    cluster_free(c);
}
END_TEST

/* A full pod LIST notes every pending pod again; what was remembered before
 * it asked its first page and not since was deleted or bound while no watch
 * ran, and is forgotten at its end: bind no longer knows it. A pod noted
 * after that (newer than the LIST) is kept. */
START_TEST(relist_forgets_pending_pods_gone)
{
    gp_cluster *c = cluster_new();
    gp_inventory inv;
    tu_inventory(&inv, 8, 16384, "A100");
    cluster_upsert_node(c, "n0", &inv);
    gp_extender_config cfg = {0};
    gp_extender *e = extender_new(c, &cfg);
    note_uid(e, "gone");
    note_uid(e, "kept");
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
    double since = gp_mono_s();   /* the LIST asks its first page */
    nanosleep(&ts, NULL);
    note_uid(e, "late");   /* filtered meanwhile: created after the LIST's snapshot */
    extender_pods_listing(e, false, since);
    note_uid(e, "kept");
    note_uid(e, "new");
    extender_pods_listing(e, true, 0);
    ck_assert(!bind_known(e, "gone"));
    ck_assert(bind_known(e, "kept"));
    ck_assert(bind_known(e, "new"));
    ck_assert(bind_known(e, "late"));
    extender_free(e);
    cluster_free(c);
}
END_TEST

/* A pending pod the watch showed deleted: its request stays for the grace
 * (a bind already decided still reaches the Binding's uid precondition),
 * then goes; so does one nothing refreshed for the TTL. */
START_TEST(deleted_pending_pod_forgotten_after_grace)
{
    gp_cluster *c = cluster_new();
    gp_inventory inv;
    tu_inventory(&inv, 8, 16384, "A100");
    cluster_upsert_node(c, "n0", &inv);
    /* sleeps only lengthen under load (valgrind): each check holds however
     * long the calls between them take */
    gp_extender_config cfg = {.pending_gone_s = 1.0, .pending_ttl_s = 2.0};
    gp_extender *e = extender_new(c, &cfg);
    gp_extender_stats st;
    note_uid(e, "gone");
    note_uid(e, "gone-bound");
    note_uid(e, "kept");
    extender_pod_gone(e, "gone");
    extender_pod_gone(e, "gone-bound");
    extender_pod_gone(e, "never-seen");   /* nothing to forget */
    ck_assert(bind_known(e, "gone-bound"));   /* within the grace: the bind still runs */
    note_uid(e, "gone");                  /* a late filter: it stays gone */
    struct timespec ts = {1, 100000000};  /* past the grace */
    nanosleep(&ts, NULL);
    note_uid(e, "new");
    extender_stats(e, &st);
    ck_assert_uint_eq(st.remembered, 2);  /* kept, new */
    ck_assert(!bind_known(e, "gone"));
    ts.tv_sec = 2;                        /* past the TTL of both */
    nanosleep(&ts, NULL);
    note_uid(e, "kept");                  /* refreshed (after the sweep) */
    extender_stats(e, &st);
    ck_assert_uint_eq(st.remembered, 1);
    ck_assert(!bind_known(e, "new"));
    ck_assert(bind_known(e, "kept"));
    extender_free(e);
    cluster_free(c);
}
END_TEST

/* -------------------------------------------------------------- binder -- */

typedef struct fake_binder {
    int calls;
    bool fail;
    char last_ann[4096];
    bool had_a;
    gp_assignment last_a;   /* what the Binding step was handed, whole */
} fake_binder;

/* The bind pipe's Binding step (act/bindpipe.h): the pipe around it does the
 * store's claim and outcome as in live mode. */
static gp_bind_outcome binder(void *ud, const gp_bind_call *call, double timeout_s, gp_err *err)
{
    fake_binder *b = ud;
    b->calls++;
    char *s = json_dumps(call->annotations, JSON_COMPACT | JSON_SORT_KEYS);
    gp_strlcpy(b->last_ann, s, sizeof b->last_ann);
    free(s);
    b->had_a = call->assign != NULL;
    if (call->assign)
        b->last_a = *call->assign;
    if (b->fail) {
        gp_fail(err, "POST binding of pod ns/%s: HTTP 409: Conflict", call->name);
        return GP_BIND_REFUSED;
    }
    return GP_BIND_BOUND;
}

static gp_bindpipe *fake_pipe(gp_cluster *c, fake_binder *fb)
{
    gp_bindpipe_config bc = {.c = c, .post = binder, .post_ud = fb};
    return bindpipe_new(&bc);
}

/* One node "n0" (ngpus A100 GPUs of 16 GiB; cpu_milli allocatable when > 0)
 * and an extender whose binds go through the bind pipe to fb. */
typedef struct bind_fx {
    gp_cluster *c;
    fake_binder fb;
    gp_bindpipe *pipe;
    gp_extender *e;
} bind_fx;

static void bind_fx_start(bind_fx *x, int ngpus, int64_t cpu_milli,
                          const gp_resource_names *webhook_names)
{
    memset(x, 0, sizeof *x);
    x->c = cluster_new();
    gp_inventory inv;
    tu_inventory(&inv, ngpus, 16384, "A100");
    if (cpu_milli > 0)
        inv.cpu_alloc_milli = cpu_milli;
    cluster_upsert_node(x->c, "n0", &inv);
    x->pipe = fake_pipe(x->c, &x->fb);
    gp_extender_config cfg = {.binder = bindpipe_binder(), .binder_ud = x->pipe,
                              .webhook_names = webhook_names};
    x->e = extender_new(x->c, &cfg);
}

static void bind_fx_stop(bind_fx *x)
{
    extender_free(x->e);
    bindpipe_free(x->pipe);
    cluster_free(x->c);
}

static const char *gpu_pod_filter =
    "{\"Pod\":{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"uid\":\"u1\"},\"spec\":{\"containers\":"
    "[{\"name\":\"c\",\"resources\":{\"limits\":{\"gpupack.io/gpu-mem\":\"4096\",\"gpupack.io/gpu-core\":\"25\"}}}]}},"
    "\"NodeNames\":[\"n0\"]}";
static const char *gpu_pod_bind = "{\"PodName\":\"p\",\"PodNamespace\":\"ns\",\"PodUID\":\"u1\",\"Node\":\"n0\"}";

START_TEST(binder_failure_rolls_back)
{
    bind_fx x;
    bind_fx_start(&x, 1, 0, NULL);
    x.fb.fail = true;
    gp_cluster *c = x.c;
    gp_extender *e = x.e;
    json_t *out;
    ck_assert_int_eq(call(extender_filter, e, gpu_pod_filter, &out), 200);
    json_decref(out);
    ck_assert_int_eq(call(extender_bind, e, gpu_pod_bind, &out), 200);
    const char *msg = json_string_value(json_object_get(out, "Error"));
    ck_assert_msg(strstr(msg, "refused: POST binding of pod ns/p: HTTP 409: Conflict"), "%s", msg);
    json_decref(out);
    ck_assert_int_eq(x.fb.calls, 1);
    ck_assert_int_eq(total_used(c), 0);   /* rolled back */
    /* the annotations handed to the binder are docs/requests.md's ("What bind writes") */
    ck_assert_msg(strstr(x.fb.last_ann, "\"gpupack.io/assignment\": \"{\\\"node\\\":\\\"n0\\\"") ||
                  strstr(x.fb.last_ann, "\"gpupack.io/assignment\":\"{\\\"node\\\":\\\"n0\\\""), "%s", x.fb.last_ann);
    ck_assert_msg(strstr(x.fb.last_ann, "\"gpupack.io/visible-devices\":\"GPU-0\""), "%s", x.fb.last_ann);
    ck_assert_msg(strstr(x.fb.last_ann, "gpupack.io/assume-time"), "%s", x.fb.last_ann);
    /* success now: assumed, awaiting the watch */
    x.fb.fail = false;
    ck_assert_int_eq(call(extender_bind, e, gpu_pod_bind, &out), 200);
    ck_assert_str_eq(json_string_value(json_object_get(out, "Error")), "");
    json_decref(out);
    gp_assignment a;
    gp_pod_state st;
    ck_assert_int_eq(cluster_pod_get(c, "u1", &a, &st), 0);
    ck_assert_int_eq(st, GP_POD_ASSUMED);
    ck_assert_int_eq(a.ctrs[0].gpus[0].core, 250);
    ck_assert_int_eq(total_used(c), 4096);
    bind_fx_stop(&x);
}
END_TEST

/* A queued bind keeps only its pod's containers of the assignment (binds wait
 * by the hundreds when the API server is slow); the Binding step gets the
 * whole assignment back: every container, its name and its grants. */
START_TEST(queued_bind_hands_the_whole_assignment_on)
{
    bind_fx x;
    bind_fx_start(&x, 2, 0, NULL);
    gp_cluster *c = x.c;
    gp_extender *e = x.e;
    static const char *filter =
        "{\"Pod\":{\"metadata\":{\"name\":\"two\",\"namespace\":\"ns\",\"uid\":\"u2\"},\"spec\":"
        "{\"containers\":[{\"name\":\"first\",\"resources\":{\"limits\":{\"gpupack.io/gpu-mem\":\"4096\","
        "\"gpupack.io/gpu-core\":\"25\"}}},{\"name\":\"second\",\"resources\":{\"limits\":"
        "{\"gpupack.io/gpu-mem\":\"2048\",\"gpupack.io/gpu-core\":\"10\"}}}]}},\"NodeNames\":[\"n0\"]}";
    json_t *out;
    ck_assert_int_eq(call(extender_filter, e, filter, &out), 200);
    json_decref(out);
    ck_assert_int_eq(call(extender_bind, e,
                          "{\"PodName\":\"two\",\"PodNamespace\":\"ns\",\"PodUID\":\"u2\",\"Node\":\"n0\"}",
                          &out),
                     200);
    ck_assert_str_eq(json_string_value(json_object_get(out, "Error")), "");
    json_decref(out);
    ck_assert_int_eq(x.fb.calls, 1);
    ck_assert(x.fb.had_a);
    const gp_assignment *a = &x.fb.last_a;
    ck_assert_str_eq(a->node, "n0");
    ck_assert_int_eq(a->nctrs, 2);
    ck_assert_str_eq(a->ctrs[0].name, "first");
    ck_assert_str_eq(a->ctrs[1].name, "second");
    ck_assert_int_eq(a->ctrs[0].ngpus, 1);
    ck_assert_int_eq(a->ctrs[1].ngpus, 1);
    ck_assert_int_eq(a->ctrs[0].gpus[0].mem_mib, 4096);
    ck_assert_int_eq(a->ctrs[0].gpus[0].core, 250);
    ck_assert_int_eq(a->ctrs[1].gpus[0].mem_mib, 2048);
    ck_assert_int_eq(a->ctrs[1].gpus[0].core, 100);
    /* the store holds the same */
    gp_assignment held;
    gp_pod_state st;
    ck_assert_int_eq(cluster_pod_get(c, "u2", &held, &st), 0);
    ck_assert_int_eq(held.nctrs, 2);
    ck_assert_int_eq(held.ctrs[1].gpus[0].index, a->ctrs[1].gpus[0].index);
    ck_assert_int_eq(total_used(c), 6144);
    bind_fx_stop(&x);
}
END_TEST

/* A pod without GPU containers reaches gpupack when kube-scheduler has no
 * managedResources: filter passes it (nodes unknown to gpupack included),
 * bind records its CPU on the node and hands the binder no annotations (a
 * plain Binding). It used to fail: "asks for no gpupack resources". */
START_TEST(cpu_only_pod_is_placed_and_bound)
{
    bind_fx x;
    bind_fx_start(&x, 1, 8000, NULL);
    gp_cluster *c = x.c;
    gp_extender *e = x.e;
    static const char *filter =
        "{\"Pod\":{\"metadata\":{\"name\":\"c\",\"namespace\":\"ns\",\"uid\":\"u9\"},\"spec\":"
        "{\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1500m\"}}}]}},"
        "\"NodeNames\":[\"n0\",\"elsewhere\"]}";
    json_t *out;
    ck_assert_int_eq(call(extender_filter, e, filter, &out), 200);
    ck_assert_int_eq(json_array_size(json_object_get(out, "NodeNames")), 2);
    json_decref(out);
    ck_assert_int_eq(call(extender_prioritize, e, filter, &out), 200);
    ck_assert_int_eq(json_array_size(out), 2);
    json_decref(out);
    static const char *bind =
        "{\"PodName\":\"c\",\"PodNamespace\":\"ns\",\"PodUID\":\"u9\",\"Node\":\"n0\"}";
    ck_assert_int_eq(call(extender_bind, e, bind, &out), 200);
    ck_assert_str_eq(json_string_value(json_object_get(out, "Error")), "");
    json_decref(out);
    ck_assert_int_eq(x.fb.calls, 1);
    ck_assert_str_eq(x.fb.last_ann, "{}");
    cluster_rdlock(c);
    ck_assert_int_eq(cluster_rd_node(c, "n0")->cpu_used_milli, 1500);
    cluster_unlock(c);
    ck_assert_int_eq(total_used(c), 0);
    /* a failed Binding rolls the CPU back */
    static const char *filter2 =
        "{\"Pod\":{\"metadata\":{\"name\":\"d\",\"namespace\":\"ns\",\"uid\":\"u10\"},\"spec\":"
        "{\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}},"
        "\"NodeNames\":[\"n0\"]}";
    ck_assert_int_eq(call(extender_filter, e, filter2, &out), 200);
    json_decref(out);
    x.fb.fail = true;
    ck_assert_int_eq(
        call(extender_bind, e,
             "{\"PodName\":\"d\",\"PodNamespace\":\"ns\",\"PodUID\":\"u10\",\"Node\":\"n0\"}", &out),
        200);
    ck_assert(strstr(json_string_value(json_object_get(out, "Error")), "HTTP 409: Conflict"));
    json_decref(out);
    cluster_rdlock(c);
    ck_assert_int_eq(cluster_rd_node(c, "n0")->cpu_used_milli, 1500);
    cluster_unlock(c);
    /* a node gpupack does not know: still a plain Binding */
    x.fb.fail = false;
    ck_assert_int_eq(
        call(extender_bind, e,
             "{\"PodName\":\"d\",\"PodNamespace\":\"ns\",\"PodUID\":\"u10\",\"Node\":\"elsewhere\"}",
             &out),
        200);
    ck_assert_str_eq(json_string_value(json_object_get(out, "Error")), "");
    json_decref(out);
    ck_assert_int_eq(x.fb.calls, 3);
    bind_fx_stop(&x);
}
END_TEST

/* A native sidecar (an init container with restartPolicy: Always) runs for the
 * pod's life: a 10000 MiB main container plus a 10000 MiB sidecar need 20000
 * MiB, on two GPUs of 15360 MiB here, never on one. Through every way the
 * extender learns a pod: filter's fast scanner, the pod remembered for bind,
 * a pod known only from the watch (note_pod), and /inspect after bind. */
static const char *sidecar_pod =
    "{\"metadata\":{\"name\":\"sc\",\"namespace\":\"ns\",\"uid\":\"u-sc\"},\"spec\":{"
    "\"initContainers\":[{\"name\":\"proxy\",\"image\":\"x\",\"restartPolicy\":\"Always\","
    "\"resources\":{\"limits\":{\"gpupack.io/gpu-mem\":\"10000\"}}}],"
    "\"containers\":[{\"name\":\"main\",\"image\":\"x\","
    "\"resources\":{\"limits\":{\"gpupack.io/gpu-mem\":\"10000\"}}}]}}";

static gp_extender *sidecar_world(gp_cluster **cp)
{
    gp_cluster *c = cluster_new();
    gp_inventory inv;
    tu_inventory(&inv, 1, 15360, "A10");
    cluster_upsert_node(c, "one", &inv);
    tu_inventory(&inv, 2, 15360, "A10");
    cluster_upsert_node(c, "two", &inv);
    *cp = c;
    return extender_new(c, NULL);
}

START_TEST(sidecar_counts_through_filter_bind_inspect)
{
    gp_cluster *c;
    gp_extender *e = sidecar_world(&c);
    char *filter = xasprintf("{\"Pod\":%s,\"NodeNames\":[\"one\",\"two\"]}", sidecar_pod);
    json_t *out;
    ck_assert_int_eq(call(extender_filter, e, filter, &out), 200);
    json_t *names = json_object_get(out, "NodeNames");
    ck_assert_msg(json_array_size(names) == 1 && strcmp(json_string_value(json_array_get(names, 0)), "two") == 0,
                  "filter passed %s", json_dumps(names, JSON_COMPACT));
    /* it could never fit there, even with the GPU free */
    const char *why = json_string_value(
        json_object_get(json_object_get(out, "FailedAndUnresolvableNodes"), "one"));
    ck_assert_msg(why && strstr(why, "10000"), "%s", why ? why : "(no reason for node one)");
    json_decref(out);
    /* bind where filter did not send it: refused, nothing held */
    static const char *bind_one = "{\"PodName\":\"sc\",\"PodNamespace\":\"ns\",\"PodUID\":\"u-sc\",\"Node\":\"one\"}";
    ck_assert_int_eq(call(extender_bind, e, bind_one, &out), 200);
    ck_assert_str_ne(json_string_value(json_object_get(out, "Error")), "");
    json_decref(out);
    ck_assert_int_eq(total_used(c), 0);
    static const char *bind_two = "{\"PodName\":\"sc\",\"PodNamespace\":\"ns\",\"PodUID\":\"u-sc\",\"Node\":\"two\"}";
    ck_assert_int_eq(call(extender_bind, e, bind_two, &out), 200);
    ck_assert_str_eq(json_string_value(json_object_get(out, "Error")), "");
    json_decref(out);
    ck_assert_int_eq(total_used(c), 20000);
    json_t *ins = cluster_inspect(c, "two");
    json_t *gpus = json_object_get(json_object_get(ins, "node"), "gpus");
    for (size_t g = 0; g < 2; g++) {
        json_t *gpu = json_array_get(gpus, g);
        ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(gpu, "memoryMiB"), "used")), 10000);
        ck_assert_int_eq(json_array_size(json_object_get(gpu, "pods")), 1);
    }
    json_decref(ins);
    free(filter);
    extender_free(e);
    cluster_free(c);
}
END_TEST

/* The same pod known only from the watch (no filter call): bind decodes the
 * copy the extender kept of it. */
START_TEST(sidecar_counts_when_known_from_the_watch)
{
    gp_cluster *c;
    gp_extender *e = sidecar_world(&c);
    json_t *pod = json_loads(sidecar_pod, 0, NULL);
    extender_note_pod(e, pod);
    json_decref(pod);
    static const char *bind_one = "{\"PodName\":\"sc\",\"PodNamespace\":\"ns\",\"PodUID\":\"u-sc\",\"Node\":\"one\"}";
    json_t *out;
    ck_assert_int_eq(call(extender_bind, e, bind_one, &out), 200);
    const char *err = json_string_value(json_object_get(out, "Error"));
    ck_assert_msg(err && strstr(err, "no longer fits"), "bind on one 15360 MiB GPU: \"%s\"", err ? err : "");
    json_decref(out);
    ck_assert_int_eq(total_used(c), 0);
    extender_free(e);
    cluster_free(c);
}
END_TEST

/* With the webhook on, bind refuses a GPU pod whose containers lack the
 * injected env (created while the webhook was down), and for a mutated pod
 * hands the binder the per-container annotations the env points at. The pod
 * comes through filter, so this also proves the request reader keeps env. */
START_TEST(webhook_env_required_and_filled)
{
    gp_resource_names names;
    podreq_default_names(&names);
    bind_fx x;
    bind_fx_start(&x, 1, 0, &names);
    gp_cluster *c = x.c;
    gp_extender *e = x.e;
    json_t *out;
    ck_assert_int_eq(call(extender_filter, e, gpu_pod_filter, &out), 200);
    json_decref(out);
    ck_assert_int_eq(call(extender_bind, e, gpu_pod_bind, &out), 200);
    const char *msg = json_string_value(json_object_get(out, "Error"));
    ck_assert_msg(strstr(msg, "containers[0] (c) lacks the NVIDIA_VISIBLE_DEVICES"), "%s", msg);
    json_decref(out);
    ck_assert_int_eq(x.fb.calls, 0);
    ck_assert_int_eq(total_used(c), 0);
    static const char *mutated =
        "{\"Pod\":{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"uid\":\"u1\"},\"spec\":{\"containers\":"
        "[{\"name\":\"c\",\"image\":\"x\",\"env\":[{\"name\":\"X\",\"value\":\"1\"},{\"name\":\"NVIDIA_VISIBLE_DEVICES\","
        "\"valueFrom\":{\"fieldRef\":{\"apiVersion\":\"v1\",\"fieldPath\":"
        "\"metadata.annotations['gpupack.io/ctr-0-visible-devices']\"}}}],"
        "\"resources\":{\"limits\":{\"gpupack.io/gpu-mem\":\"4096\",\"gpupack.io/gpu-core\":\"25\"}}}]}},"
        "\"NodeNames\":[\"n0\"]}";
    ck_assert_int_eq(call(extender_filter, e, mutated, &out), 200);
    json_decref(out);
    ck_assert_int_eq(call(extender_bind, e, gpu_pod_bind, &out), 200);
    ck_assert_str_eq(json_string_value(json_object_get(out, "Error")), "");
    json_decref(out);
    ck_assert_int_eq(x.fb.calls, 1);
    ck_assert_msg(strstr(x.fb.last_ann, "\"gpupack.io/ctr-0-visible-devices\":\"GPU-0\""), "%s", x.fb.last_ann);
    ck_assert_msg(strstr(x.fb.last_ann, "\"gpupack.io/ctr-0-mem-limit\":\"4096m\""), "%s", x.fb.last_ann);
    ck_assert_msg(strstr(x.fb.last_ann, "\"gpupack.io/ctr-0-sm-limit\":\"25\""), "%s", x.fb.last_ann);
    bind_fx_stop(&x);
}
END_TEST

/* ------------------------------------------------ concurrent HTTP-free -- */

#define THREADS 8
#define PODS_PER_THREAD 60

typedef struct worker {
    gp_extender *e;
    int id;
    int ok;
} worker;

static void *bind_worker(void *arg)
{
    worker *w = arg;
    for (int i = 0; i < PODS_PER_THREAD; i++) {
        char uid[32], f[512], b[256];
        snprintf(uid, sizeof uid, "w%d-%d", w->id, i);
        snprintf(f, sizeof f,
                 "{\"Pod\":{\"metadata\":{\"name\":\"%s\",\"uid\":\"%s\"},\"spec\":{\"containers\":"
                 "[{\"name\":\"c\",\"resources\":{\"limits\":{\"gpupack.io/gpu-mem\":\"%d\"}}}]}},"
                 "\"NodeNames\":[\"n0\",\"n1\"]}",
                 uid, uid, 1000 + 250 * (i % 9));
        snprintf(b, sizeof b, "{\"PodName\":\"%s\",\"PodNamespace\":\"default\",\"PodUID\":\"%s\",\"Node\":\"n%d\"}",
                 uid, uid, i % 2);
        char *out;
        if (extender_filter(w->e, f, strlen(f), &out) == 200)
            free(out);
        if (extender_bind(w->e, b, strlen(b), &out) == 200) {
            if (strcmp(out, "{\"Error\":\"\"}") == 0)
                w->ok++;
            free(out);
        }
    }
    return NULL;
}

START_TEST(concurrent_binds_through_the_verbs)
{
    gp_cluster *c = cluster_new();
    gp_inventory inv;
    tu_inventory(&inv, 2, 16384, "A100");
    cluster_upsert_node(c, "n0", &inv);
    cluster_upsert_node(c, "n1", &inv);
    gp_extender *e = extender_new(c, NULL);
    pthread_t th[THREADS];
    worker ws[THREADS];
    for (int i = 0; i < THREADS; i++) {
        ws[i] = (worker){e, i, 0};
        pthread_create(&th[i], NULL, bind_worker, &ws[i]);
    }
    int ok = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        ok += ws[i].ok;
    }
    /* 480 binds of ~2 GiB onto 4 x 16 GiB: many must be refused, none over-commit */
    ck_assert_int_gt(ok, 10);
    ck_assert_int_lt(ok, THREADS * PODS_PER_THREAD);
    cluster_rdlock(c);
    size_t it = 0;
    const gp_node *n;
    int64_t used = 0;
    while ((n = cluster_rd_node_at(c, &it)))
        for (int g = 0; g < n->ngpus; g++) {
            ck_assert_int_le(n->gpus[g].mem_used, n->gpus[g].info.mem_total);
            used += n->gpus[g].mem_used;
        }
    cluster_unlock(c);
    gp_cluster_stats st;
    cluster_stats(c, &st);
    ck_assert_uint_eq(st.pods_bound, (size_t)ok);
    ck_assert_int_eq(st.mem_used, used);
    extender_free(e);
    cluster_free(c);
}
END_TEST

START_TEST(answers_escape_names_and_reasons)
{
    gp_cluster *c = cluster_new();
    gp_extender *e = extender_new(c, NULL);
    json_t *out;
    /* node names with quotes, backslashes and control characters come back intact */
    const char *body = "{\"Pod\":{\"metadata\":{\"name\":\"p\",\"uid\":\"u\"},\"spec\":{\"containers\":"
                       "[{\"name\":\"c\",\"resources\":{\"limits\":{\"gpupack.io/gpu-mem\":\"1\"}}}]}},"
                       "\"NodeNames\":[\"a\\\"b\",\"c\\\\d\",\"e\\u0001f\",\"\u00e9t\u00e9\"]}";
    ck_assert_int_eq(call(extender_filter, e, body, &out), 200);
    json_t *unres = json_object_get(out, "FailedAndUnresolvableNodes");
    ck_assert_uint_eq(json_object_size(unres), 4);
    ck_assert_ptr_nonnull(json_object_get(unres, "a\"b"));
    ck_assert_ptr_nonnull(json_object_get(unres, "c\\d"));
    ck_assert_ptr_nonnull(json_object_get(unres, "e\001f"));
    ck_assert_ptr_nonnull(json_object_get(unres, "\u00e9t\u00e9"));
    json_decref(out);
    ck_assert_int_eq(call(extender_prioritize, e, body, &out), 200);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(out, 0), "Host")), "a\"b");
    json_decref(out);
    extender_free(e);
    cluster_free(c);
}
END_TEST

/* Large lists are evaluated by several threads taking chunks of the list:
 * the merged answer must be exactly the sequential one (every node once, its
 * own reason), with one evaluating thread, two or four, and again and again
 * (the helpers of one request may still be finishing as the next begins). */
START_TEST(large_lists_split_across_threads)
{
    enum { N = 3000 };
    gp_cluster *c = cluster_new();
    gp_inventory inv;
    gp_place_opts o;
    placement_default_opts(&o);
    gp_err err;
    json_t *names = json_array();
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "n%04d", i);
        json_array_append_new(names, json_string(name));
        if (i % 5 == 4)
            continue;                          /* unknown node */
        tu_inventory(&inv, 2, 16384, "A100");
        cluster_upsert_node(c, name, &inv);
        if (i % 5 == 3) {                      /* full node */
            gp_pod_req r;
            char uid[32];
            snprintf(uid, sizeof uid, "fill-%d", i);
            tu_req(&r, uid, 2, 16000, 0);
            gp_assignment a;
            ck_assert_int_eq(cluster_place_and_assume(c, name, &r, &o, 0, "p", GP_POD_BOUND, &a, &err), 0);
        }
    }
    json_t *args = json_pack("{s:{s:{s:s,s:s},s:{s:[{s:s,s:{s:{s:s}}}]}},s:o}", "Pod", "metadata",
                             "name", "p", "uid", "big", "spec", "containers", "name", "c",
                             "resources", "limits", "gpupack.io/gpu-mem", "1024", "NodeNames", names);
    char *body = json_dumps(args, JSON_COMPACT);
    json_decref(args);
    json_t *alone = NULL;
    static const int threads[] = {1, 2, 4};
    for (size_t th = 0; th < sizeof threads / sizeof *threads; th++) {
        gp_extender_config cfg = {.eval_threads = threads[th]};
        gp_extender *e = extender_new(c, &cfg);
        json_t *out;
        for (int round = 0; round < 20; round++) {   /* the same answer every time */
            ck_assert_int_eq(call(extender_filter, e, body, &out), 200);
            if (!alone)
                alone = json_incref(out);
            ck_assert_msg(json_equal(out, alone), "%d threads, round %d: another answer", threads[th], round);
            if (round < 19)
                json_decref(out);
        }
        json_t *fit = json_object_get(out, "NodeNames");
        json_t *failed = json_object_get(out, "FailedNodes");
        json_t *unres = json_object_get(out, "FailedAndUnresolvableNodes");
        ck_assert_uint_eq(json_array_size(fit), N * 3 / 5);
        ck_assert_uint_eq(json_object_size(failed), N / 5);
        ck_assert_uint_eq(json_object_size(unres), N / 5);
        for (size_t i = 0; i < json_array_size(fit); i++) {
            int k = atoi(json_string_value(json_array_get(fit, i)) + 1);
            ck_assert_int_lt(k % 5, 3);
            if (i > 0)   /* input order is kept */
                ck_assert_int_gt(k, atoi(json_string_value(json_array_get(fit, i - 1)) + 1));
        }
        const char *k;
        json_t *v;
        json_object_foreach(failed, k, v) {
            ck_assert_int_eq(atoi(k + 1) % 5, 3);
            ck_assert_msg(strstr(json_string_value(v), "largest free GPU has 384 MiB"), "%s: %s", k,
                          json_string_value(v));
        }
        json_object_foreach(unres, k, v) {
            ck_assert_int_eq(atoi(k + 1) % 5, 4);
            ck_assert_msg(strstr(json_string_value(v), "not known to gpupack"), "%s", json_string_value(v));
        }
        json_decref(out);
        ck_assert_int_eq(call(extender_prioritize, e, body, &out), 200);
        ck_assert_uint_eq(json_array_size(out), N);
        for (size_t i = 0; i < N; i++) {
            int sc = (int)json_integer_value(json_object_get(json_array_get(out, i), "Score"));
            if (i % 5 >= 3)
                ck_assert_int_eq(sc, 0);
            else
                ck_assert_int_eq(sc, 10);   /* all fitting nodes are alike */
        }
        json_decref(out);
        extender_free(e);
    }
    json_decref(alone);
    free(body);
    cluster_free(c);
}
END_TEST

/* Nodes in the same state share a verdict inside one request: the answer
 * must equal evaluating every node on its own. */
START_TEST(shared_verdicts_equal_per_node_evaluation)
{
    enum { N = 60 };
    gp_cluster *c = cluster_new();
    gp_place_opts o;
    placement_default_opts(&o);
    gp_err err;
    json_t *names = json_array();
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "m%02d", i);
        json_array_append_new(names, json_string(name));
        gp_inventory inv;
        tu_inventory(&inv, 4, 16384, i % 7 == 6 ? "T4" : "A100");   /* two models */
        cluster_upsert_node(c, name, &inv);
        int kind = i % 3;   /* 0: empty, 1: full alike, 2: each one different */
        if (kind == 0)
            continue;
        gp_pod_req r;
        char uid[32];
        snprintf(uid, sizeof uid, "fill-%d", i);
        tu_req(&r, uid, kind == 1 ? 4 : 1, kind == 1 ? 15000 : 100 + (283 * i) % 15000, 0);
        gp_assignment a;
        ck_assert_int_eq(cluster_place_and_assume(c, name, &r, &o, 0, "p", GP_POD_BOUND, &a, &err), 0);
    }
    json_t *args = json_pack("{s:{s:{s:s,s:s,s:{s:s}},s:{s:[{s:s,s:{s:{s:s,s:s}}}]}},s:o}", "Pod",
                             "metadata", "name", "p", "uid", "memo", "annotations",
                             "gpupack.io/gpu-model", "A100", "spec", "containers", "name", "main",
                             "resources", "limits", "gpupack.io/gpu-mem", "12000",
                             "gpupack.io/gpu-core", "30", "NodeNames", names);
    char *body = json_dumps(args, JSON_COMPACT);
    json_decref(args);
    gp_extender *e = extender_new(c, NULL);
    json_t *out;
    ck_assert_int_eq(call(extender_filter, e, body, &out), 200);
    gp_pod_req req;
    tu_req(&req, "memo", 1, 12000, 300);
    gp_strlcpy(req.models, "A100", sizeof req.models);
    int fits = 0;
    cluster_rdlock(c);
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "m%02d", i);
        gp_assignment a;
        gp_fit_fail why;
        bool ok = placement_fit(cluster_rd_node(c, name), &req, &o, &a, &why) == 0;
        json_t *failed = json_object_get(json_object_get(out, why.unresolvable ? "FailedAndUnresolvableNodes" : "FailedNodes"), name);
        if (ok) {
            fits++;
            ck_assert_msg(!json_object_get(json_object_get(out, "FailedNodes"), name) &&
                          !json_object_get(json_object_get(out, "FailedAndUnresolvableNodes"), name),
                          "%s fits on its own but was failed", name);
        } else {
            ck_assert_msg(failed, "%s fails on its own (%s) but not in the answer", name, why.reason);
            ck_assert_str_eq(json_string_value(failed), why.reason);
        }
    }
    cluster_unlock(c);
    ck_assert_uint_eq(json_array_size(json_object_get(out, "NodeNames")), (size_t)fits);
    ck_assert_int_gt(fits, 0);
    ck_assert_int_lt(fits, N);
    json_decref(out);
    free(body);
    extender_free(e);
    cluster_free(c);
}
END_TEST

/* The fingerprint that lets nodes share a verdict follows every change. */
START_TEST(shared_verdicts_follow_changes)
{
    gp_cluster *c = cluster_new();
    gp_inventory inv;
    tu_inventory(&inv, 1, 16384, "A100");
    json_t *names = json_array();
    for (int i = 0; i < 12; i++) {
        char name[16];
        snprintf(name, sizeof name, "s%02d", i);
        cluster_upsert_node(c, name, &inv);
        json_array_append_new(names, json_string(name));
    }
    json_t *args = json_pack("{s:{s:{s:s,s:s},s:{s:[{s:s,s:{s:{s:s}}}]}},s:o}", "Pod", "metadata",
                             "name", "p", "uid", "u1", "spec", "containers", "name", "c",
                             "resources", "limits", "gpupack.io/gpu-mem", "10000", "NodeNames", names);
    char *body = json_dumps(args, JSON_COMPACT);
    json_decref(args);
    gp_extender *e = extender_new(c, NULL);
    json_t *out;
    ck_assert_int_eq(call(extender_filter, e, body, &out), 200);
    ck_assert_uint_eq(json_array_size(json_object_get(out, "NodeNames")), 12);
    json_decref(out);
    const char *bind = "{\"PodName\":\"p\",\"PodNamespace\":\"default\",\"PodUID\":\"u1\",\"Node\":\"s05\"}";
    ck_assert_int_eq(call(extender_bind, e, bind, &out), 200);
    ck_assert_str_eq(json_string_value(json_object_get(out, "Error")), "");
    json_decref(out);
    /* same pod shape, another uid: s05 is now different from its eleven twins */
    char *body2 = xstrdup(body);
    char *u = strstr(body2, "\"u1\"");
    ck_assert_ptr_nonnull(u);
    u[2] = '2';
    ck_assert_int_eq(call(extender_filter, e, body2, &out), 200);
    ck_assert_uint_eq(json_array_size(json_object_get(out, "NodeNames")), 11);
    ck_assert_ptr_nonnull(json_object_get(json_object_get(out, "FailedNodes"), "s05"));
    json_decref(out);
    /* the pod goes away: s05 is a twin again */
    gp_assignment a;
    ck_assert_int_eq(cluster_pod_get(c, "u1", &a, NULL), 0);
    gp_pod_obs obs = {.uid = "u1", .ns = "default", .name = "p", .node_name = "s05", .terminal = true,
                      .assign = &a};
    cluster_pod_observed(c, &obs);
    ck_assert_int_eq(call(extender_filter, e, body2, &out), 200);
    ck_assert_uint_eq(json_array_size(json_object_get(out, "NodeNames")), 12);
    json_decref(out);
    free(body);
    free(body2);
    extender_free(e);
    cluster_free(c);
}
END_TEST

Suite *suite_extender(void);
Suite *suite_extender(void)
{
    Suite *s = suite_create("extender");
    TCase *t = tcase_create("verbs");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, filter_prioritize_bind_real_sample);
    tcase_add_test(t, embedded_bind_of_cpu_only_pod);
    tcase_add_test(t, pending_pods_past_the_limit);
    tcase_add_test(t, filtered_pods_bind_with_their_own_request);
    tcase_add_test(t, relist_forgets_pending_pods_gone);
    tcase_add_test(t, deleted_pending_pod_forgotten_after_grace);
    tcase_add_test(t, multi_container_init_pod_sample);
    tcase_add_test(t, full_nodes_mode_echoes_filtered_nodes);
    tcase_add_test(t, aliyun_profile_sample);
    tcase_add_loop_test(t, bad_requests_are_400_and_change_nothing, 0, (int)(sizeof bad / sizeof bad[0]));
    tcase_add_test(t, unschedulable_pod_reasons);
    tcase_add_test(t, binder_failure_rolls_back);
    tcase_add_test(t, queued_bind_hands_the_whole_assignment_on);
    tcase_add_test(t, cpu_only_pod_is_placed_and_bound);
    tcase_add_test(t, webhook_env_required_and_filled);
    tcase_add_test(t, sidecar_counts_through_filter_bind_inspect);
    tcase_add_test(t, sidecar_counts_when_known_from_the_watch);
    tcase_add_test(t, answers_escape_names_and_reasons);
    tcase_add_test(t, large_lists_split_across_threads);
    tcase_add_test(t, shared_verdicts_equal_per_node_evaluation);
    tcase_add_test(t, shared_verdicts_follow_changes);
    tcase_add_test(t, concurrent_binds_through_the_verbs);
    suite_add_tcase(s, t);
    return s;
}
