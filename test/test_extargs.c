/* test_extargs.c -- the fast ExtenderArgs scanner: agrees with jansson, declines the rest. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "lib/extargs.h"
#include "lib/jsonscan.h"
#include "model/formats.h"
#include "model/k8s_obs.h"
#include "model/podreq.h"
#include "testutil.h"

/* The reduction extargs promises, done with jansson: the reference (the
 * trimmer that reads the same table). */
static json_t *reduce_ref(const json_t *pod)
{
    return jsonkeep_trim(pod, k8s_obs_pod_keep);
}

static char *sample_body(const char *rel)
{
    json_t *j = tu_load_json(tu_captured(rel));
    char *s = json_dumps(json_object_get(j, "body"), JSON_COMPACT);
    json_decref(j);
    return s;
}

static const char *const samples[] = {
    "filter-1.json",
    "prioritize-1.json",
    "wire/extender/cache-true/001-filter.json",
    "wire/extender/cache-true/004-filter.json",
    "wire/extender/cache-false/001-filter.json",
    "wire/extender/cache-false/004-filter.json",
};

/* The scanner's view equals jansson's for the real kube-scheduler bodies. */
START_TEST(agrees_with_jansson_on_samples)
{
    char *body = sample_body(samples[_i]);
    json_t *full = json_loads(body, 0, NULL);
    ck_assert_ptr_nonnull(full);
    gp_extargs a;
    ck_assert_int_eq(extargs_scan(body, strlen(body), 100000, k8s_obs_pod_keep, &a), 0);
    json_t *ref = reduce_ref(json_object_get(full, "Pod"));
    ck_assert_msg(json_equal(a.pod, ref), "reduced pod differs: %s", json_dumps(a.pod, 0));
    json_decref(ref);
    /* and the request read from it is the same as from the whole pod */
    gp_resource_names names_cfg;
    podreq_default_names(&names_cfg);
    gp_pod_req r1, r2;
    gp_err e1, e2;
    int rc1 = podreq_decode(a.pod, &names_cfg, &r1, &e1);
    int rc2 = podreq_decode(json_object_get(full, "Pod"), &names_cfg, &r2, &e2);
    ck_assert_int_eq(rc1, rc2);
    ck_assert_int_eq(r1.nctrs, r2.nctrs);
    ck_assert_int_gt(r1.nctrs, 0);
    for (int i = 0; i < r1.nctrs; i++) {
        ck_assert_str_eq(r1.ctrs[i].name, r2.ctrs[i].name);
        ck_assert_int_eq(r1.ctrs[i].mem_mib, r2.ctrs[i].mem_mib);
        ck_assert_int_eq(r1.ctrs[i].core, r2.ctrs[i].core);
        ck_assert_int_eq(r1.ctrs[i].count, r2.ctrs[i].count);
    }
    ck_assert_str_eq(r1.uid, r2.uid);
    ck_assert_str_eq(r1.ns, r2.ns);
    json_t *names = json_object_get(full, "NodeNames");
    if (json_is_array(names)) {
        ck_assert(a.has_names);
        ck_assert_uint_eq(a.nnames, json_array_size(names));
        for (size_t i = 0; i < a.nnames; i++)
            ck_assert_str_eq(a.names[i], json_string_value(json_array_get(names, i)));
    } else {
        ck_assert(!a.has_names);
        ck_assert(json_equal(a.nodes, json_object_get(full, "Nodes")));
    }
    extargs_free(&a);
    json_decref(full);
    free(body);
}
END_TEST

/* Pods written for other systems: what the scanner keeps decodes exactly as
 * the whole pod does (annotations the decoders read survive; the rest, like
 * kubectl's last-applied copy, is dropped). */
static const char *const format_pods[] = {
    /* KAI: annotations, a named container after a sidecar */
    "{'metadata':{'name':'k','namespace':'ml','uid':'u1','annotations':{"
    "'kubectl.kubernetes.io/last-applied-configuration':'{\\'big\\':1}','gpu-fraction':'0.25',"
    "'gpu-fraction-num-devices':'2','gpu-fraction-container-name':'w','other':'x'}},"
    "'spec':{'schedulerName':'kai-scheduler','containers':[{'name':'s','image':'i'},"
    "{'name':'w','image':'i'}]},'status':{'phase':'Pending'}}",
    "{'metadata':{'name':'k2','annotations':{'gpu-memory':'2000'}},'spec':{'containers':"
    "[{'name':'w'}]}}",
    /* HAMi with type annotations */
    "{'metadata':{'name':'h','annotations':{'nvidia.com/use-gputype':'A100,V100',"
    "'nvidia.com/nouse-gputype':'1080','hami.io/vgpu-node':'n'}},'spec':{'containers':[{'name':"
    "'c','resources':{'limits':{'nvidia.com/gpu':2,'nvidia.com/gpumem-percentage':50,"
    "'nvidia.com/gpucores':30}}}]}}",
    /* Volcano, TKE */
    "{'metadata':{'name':'v','annotations':{'volcano.sh/vgpu-mode':'hami-core'}},'spec':{"
    "'containers':[{'name':'c','resources':{'limits':{'volcano.sh/vgpu-number':1,"
    "'volcano.sh/vgpu-memory':3000,'volcano.sh/vgpu-cores':50}}}]}}",
    "{'metadata':{'name':'t','annotations':{'tencent.com/vcuda-core-limit':'50'}},'spec':{"
    "'containers':[{'name':'c','resources':{'requests':{'tencent.com/vcuda-core':50,"
    "'tencent.com/vcuda-memory':30},'limits':{'tencent.com/vcuda-core':50,"
    "'tencent.com/vcuda-memory':30}}}]}}",
    /* refused the same way: mixing, a fraction out of range */
    "{'metadata':{'name':'m','annotations':{'gpu-fraction':'0.5'}},'spec':{'containers':[{'name':"
    "'c','resources':{'limits':{'nvidia.com/gpumem':1}}}]}}",
    "{'metadata':{'name':'f','annotations':{'gpu-fraction':'1.5'}},'spec':{'containers':[{'name':"
    "'c'}]}}",
};

START_TEST(formats_survive_the_scanner)
{
    char *pod = xstrdup(format_pods[_i]);
    for (char *p = pod; *p; p++)
        if (*p == '\'')
            *p = '"';
    char *body = xasprintf("{\"Pod\":%s,\"NodeNames\":[\"n1\",\"n2\"]}", pod);
    json_error_t je;
    json_t *full = json_loads(body, 0, &je);
    ck_assert_msg(full != NULL, "%s: %s", body, je.text);
    gp_extargs a;
    ck_assert_int_eq(extargs_scan(body, strlen(body), 100, k8s_obs_pod_keep, &a), 0);
    json_t *ref = reduce_ref(json_object_get(full, "Pod"));
    ck_assert_msg(json_equal(a.pod, ref), "reduced pod differs");
    json_decref(ref);
    gp_resource_names n;
    podreq_default_names(&n);
    gp_pod_req r1, r2;
    gp_err e1 = {{0}}, e2 = {{0}};
    int rc1 = podreq_decode(a.pod, &n, &r1, &e1);
    int rc2 = podreq_decode(json_object_get(full, "Pod"), &n, &r2, &e2);
    ck_assert_int_eq(rc1, rc2);
    if (rc1 == 0) {
        ck_assert_int_gt(r1.nctrs, 0);
        ck_assert(memcmp(&r1, &r2, sizeof r1) == 0);   /* both start from a cleared struct */
    } else {
        ck_assert_str_eq(e1.msg, e2.msg);
    }
    extargs_free(&a);
    json_decref(full);
    free(body);
    free(pod);
}
END_TEST

/* Bodies outside the plain form are declined (callers then use jansson). */
static const char *const declined[] = {
    "",
    "[]",
    "{\"Pod\":{}",
    "{\"Pod\":{}} x",
    "{\"Pod\":{},\"Pod\":{}}",                          /* repeated key */
    "{\"Pod\":{},\"Extra\":1}",                         /* unknown key */
    "{\"Pod\":{},\"NodeNames\":[\"a\\\"b\"]}",          /* escape in a name */
    "{\"Pod\":{},\"NodeNames\":[\"\xc3\xa9\"]}",        /* non-ASCII name */
    "{\"Pod\":{},\"NodeNames\":[1]}",
    "{\"Pod\": {\"Pod\":6E7777\n      }}",                /* a real jansson refuses (fuzz) */
    "{\"Pod\":{\"x\":1e5}}",                           /* any exponent: jansson judges */
    "{\"Pod\":{},\"NodeNames\":\"a\"}",
    "{\"Pod\":{},\"NodeNames\":[\"a\",]}",
    "{\"Pod\":{},\"NodeNames\":[\"a\" \"b\"]}",
    "{\"Pod\" {}}",
    "{\"Pod\":{\"a\":}}",                                /* jansson refuses the part */
    "{\"Pod\":{\"a\":tru}}",
    "{\"Pod\":{\"a\":[1,]}}",                          /* errors inside skipped members too */
    "{\"Pod\":{\"a\":01}}",
    "{\"Pod\":{\"a\":\"\\x\"}}",
    "{\"Pod\":{\"a\":\"\xff\"}}",                       /* invalid UTF-8 */
    "{\"Pod\":{\"a\":\"\xc3\"}}",
    "{\"Pod\":{\"a\":\"\\ud800\"}}",                   /* surrogate escape: declined */
    "{\"Pod\":{\"a\":12345678901234567890}}",          /* past jansson's integers */
    "{\"Pod\":{\"metadata\":{\"name\":nul}}}",
    "{\"P\\u006fd\":{}}",                                /* escaped key */
    "{\"Pod\":{},\"NodeNames\":[\"a\x01\"]}",
    "{\"Pod\":\"unterminated}",
};

START_TEST(declines_the_rest)
{
    const char *b = declined[_i];
    gp_extargs a;
    ck_assert_msg(extargs_scan(b, strlen(b), 100000, k8s_obs_pod_keep, &a) == -1, "accepted: %s", b);
    ck_assert_ptr_null(a.pod);
    ck_assert_ptr_null(a.names);
}
END_TEST

START_TEST(bounds)
{
    /* too many names: declined, so jansson's path reports the limit */
    const char *b = "{\"Pod\":{},\"NodeNames\":[\"a\",\"b\",\"c\"]}";
    gp_extargs a;
    ck_assert_int_eq(extargs_scan(b, strlen(b), 2, k8s_obs_pod_keep, &a), -1);
    ck_assert_int_eq(extargs_scan(b, strlen(b), 3, k8s_obs_pod_keep, &a), 0);
    ck_assert_uint_eq(a.nnames, 3);
    extargs_free(&a);
    /* nesting far past any Pod: declined, never a stack overflow */
    size_t depth = 100000;
    char *deep = xmalloc(2 * depth + 32);
    size_t n = (size_t)sprintf(deep, "{\"Pod\":");
    memset(deep + n, '[', depth);
    n += depth;
    memset(deep + n, ']', depth);
    n += depth;
    deep[n++] = '}';
    ck_assert_int_eq(extargs_scan(deep, n, 10, k8s_obs_pod_keep, &a), -1);
    free(deep);
    /* empty and null forms */
    const char *e = "{\"Pod\":{\"x\":1},\"NodeNames\":[],\"Nodes\":null}";
    ck_assert_int_eq(extargs_scan(e, strlen(e), 10, k8s_obs_pod_keep, &a), 0);
    ck_assert(a.has_names);
    ck_assert_uint_eq(a.nnames, 0);
    ck_assert_ptr_null(a.nodes);
    extargs_free(&a);
}
END_TEST

/* Every prefix of a real body is declined (only the whole body is accepted),
 * and nothing reads past the given length (ASan watches). */
START_TEST(every_truncation)
{
    char *body = sample_body("wire/extender/cache-true/004-filter.json");
    size_t len = strlen(body);
    for (size_t cut = 0; cut < len; cut++) {
        char *part = xmalloc(cut ? cut : 1);
        memcpy(part, body, cut);
        gp_extargs a;
        int rc = extargs_scan(part, cut, 100000, k8s_obs_pod_keep, &a);
        ck_assert_msg(rc == -1, "prefix of %zu bytes accepted", cut);
        free(part);
    }
    gp_extargs a;
    ck_assert_int_eq(extargs_scan(body, len, 100000, k8s_obs_pod_keep, &a), 0);
    extargs_free(&a);
    free(body);
}
END_TEST

/* The eight-bytes-at-a-time run stops where a byte-by-byte one does: at the
 * first quote, backslash, control or non-ASCII byte, wherever it sits in its
 * word, and never reads past the end (ASan watches the exact-size copy). */
START_TEST(plain_run_stops_where_bytes_do)
{
    static const unsigned char stops[] = {'"', '\\', 0x00, 0x1f, 0x80, 0xff, 0xc3};
    static const unsigned char plain[] = {' ', '!', '#', '[', ']', '~', 0x7f, 'a', 0x21, 0x5d, 0x5b};
    unsigned seed = 7;
    for (int round = 0; round < 20000; round++) {
        unsigned char text[40];
        seed = seed * 1103515245u + 12345u;
        size_t n = (seed >> 16) % sizeof text;
        for (size_t k = 0; k < n; k++) {
            seed = seed * 1103515245u + 12345u;
            text[k] = plain[(seed >> 16) % sizeof plain];
        }
        size_t want = n;
        seed = seed * 1103515245u + 12345u;
        if (n && (seed >> 16) % 4) {   /* most texts get a stopping byte somewhere */
            size_t at = (seed >> 8) % n;
            text[at] = stops[(seed >> 20) % sizeof stops];
            want = at;
        }
        char *copy = xmalloc(n ? n : 1);
        memcpy(copy, text, n);
        ck_assert_uint_eq((size_t)(jscan_plain_run(copy, copy + n) - copy), want);
        free(copy);
    }
}
END_TEST

/* Thousands of names (the table of pointers grows while the arena holds
 * them): every one comes back, in order. */
START_TEST(many_names_round_trip)
{
    gp_buf b;
    gp_buf_init(&b, (size_t)1 << 24);
    gp_buf_printf(&b, "{\"Pod\":{},\"NodeNames\":[");
    for (int i = 0; i < 5000; i++)
        gp_buf_printf(&b, "%s \"node-%d\"", i ? "," : "", i);
    gp_buf_printf(&b, "]}");
    gp_extargs a;
    ck_assert_int_eq(extargs_scan(b.data, b.len, 5000, k8s_obs_pod_keep, &a), 0);
    ck_assert_uint_eq(a.nnames, 5000);
    for (int i = 0; i < 5000; i++) {
        char want[32];
        snprintf(want, sizeof want, "node-%d", i);
        ck_assert_str_eq(a.names[i], want);
    }
    extargs_free(&a);
    ck_assert_int_eq(extargs_scan(b.data, b.len, 4999, k8s_obs_pod_keep, &a), -1);
    gp_buf_free(&b);
}
END_TEST

Suite *suite_extargs(void);
Suite *suite_extargs(void)
{
    Suite *s = suite_create("extargs");
    TCase *t = tcase_create("scan");
    tcase_set_timeout(t, 60);
    tcase_add_loop_test(t, agrees_with_jansson_on_samples, 0, (int)GP_ARRAY_LEN(samples));
    tcase_add_loop_test(t, formats_survive_the_scanner, 0, (int)GP_ARRAY_LEN(format_pods));
    tcase_add_loop_test(t, declines_the_rest, 0, (int)GP_ARRAY_LEN(declined));
    tcase_add_test(t, bounds);
    tcase_add_test(t, every_truncation);
    tcase_add_test(t, plain_run_stops_where_bytes_do);
    tcase_add_test(t, many_names_round_trip);
    suite_add_tcase(s, t);
    return s;
}
