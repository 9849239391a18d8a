/* test_apiversion.c -- /version answers as served by real and vendor API servers, every
 * rejection, and the version ranges of each fact gpupack acts on. */
#include <check.h>
#include <string.h>

#include "kube/apiversion.h"

typedef struct {
    const char *body;
    int major, minor, patch;
    const char *git;
} parse_case;

static const parse_case parse_ok[] = {
    /* the kit's two servers, verbatim fields */
    {"{\"major\":\"1\",\"minor\":\"26\",\"gitVersion\":\"v1.26.0\",\"gitCommit\":\"d15ef31\","
     "\"gitTreeState\":\"clean\",\"platform\":\"linux/amd64\"}", 1, 26, 0, "v1.26.0"},
    {"{\"major\":\"1\",\"minor\":\"36\",\"emulationMajor\":\"1\",\"emulationMinor\":\"36\","
     "\"minCompatibilityMajor\":\"1\",\"minCompatibilityMinor\":\"35\",\"gitVersion\":\"v1.36.3\"}",
     1, 36, 3, "v1.36.3"},
    /* vendor builds: suffixes after the patch, '+' on minor */
    {"{\"major\":\"1\",\"minor\":\"26+\",\"gitVersion\":\"v1.26.4+k3s1\"}", 1, 26, 4, "v1.26.4+k3s1"},
    {"{\"major\":\"1\",\"minor\":\"27+\",\"gitVersion\":\"v1.27.3-gke.100\"}", 1, 27, 3, "v1.27.3-gke.100"},
    {"{\"major\":\"1\",\"minor\":\"28+\",\"gitVersion\":\"v1.28.5-eks-5e0fdde\"}", 1, 28, 5, "v1.28.5-eks-5e0fdde"},
    {"{\"gitVersion\":\"1.30.1\"}", 1, 30, 1, "1.30.1"},   /* no leading v */
    /* no usable gitVersion: major/minor, patch taken as 0 */
    {"{\"major\":\"1\",\"minor\":\"29+\",\"gitVersion\":\"v1.29\"}", 1, 29, 0, ""},
    {"{\"major\":\"1\",\"minor\":\"25\"}", 1, 25, 0, ""},
};

START_TEST(parse_accepts)
{
    const parse_case *c = &parse_ok[_i];
    gp_apiversion v;
    gp_err err = {{0}};
    ck_assert_msg(apiversion_parse(c->body, strlen(c->body), &v, &err) == 0, "%s: %s", c->body,
                  err.msg);
    ck_assert(v.known);
    ck_assert_int_eq(v.major, c->major);
    ck_assert_int_eq(v.minor, c->minor);
    ck_assert_int_eq(v.patch, c->patch);
    ck_assert_str_eq(v.git, c->git);
}
END_TEST

typedef struct {
    const char *body;
    const char *needle;   /* the message names what is wrong */
} reject_case;

static const reject_case parse_bad[] = {
    {"", "not a JSON object"},
    {"[1,2]", "not a JSON object"},
    {"\"v1.26.0\"", "not a JSON object"},
    {"{}", "no gitVersion"},
    {"{\"gitVersion\":\"main\"}", "gitVersion \"main\""},
    {"{\"gitVersion\":\"v1.26.0x\",\"major\":\"one\"}", "gitVersion \"v1.26.0x\""},
    {"{\"gitVersion\":\"v1.99999.0\"}", "gitVersion \"v1.99999.0\""},
    {"{\"major\":\"1\",\"minor\":\"26-\"}", "minor \"26-\""},
    {"{\"major\":\"\",\"minor\":\"26\"}", "major \"\""},
    {"{\"major\":1,\"minor\":26}", "(absent)"},        /* numbers, not strings */
    {"{\"gitVersion\":\"v1.\\u0001.0\"}", "gitVersion \"v1.?.0\""},   /* sanitised */
};

START_TEST(parse_rejects)
{
    const reject_case *c = &parse_bad[_i];
    gp_apiversion v;
    memset(&v, 0x5a, sizeof v);
    gp_err err = {{0}};
    ck_assert_int_eq(apiversion_parse(c->body, strlen(c->body), &v, &err), -1);
    ck_assert(!v.known);
    ck_assert_msg(strstr(err.msg, c->needle), "%s: message \"%s\" lacks \"%s\"", c->body, err.msg,
                  c->needle);
}
END_TEST

START_TEST(parse_bounds_the_body)
{
    static char big[GP_APIVERSION_BODY_MAX + 2];
    memset(big, ' ', sizeof big - 1);
    gp_apiversion v;
    gp_err err;
    ck_assert_int_eq(apiversion_parse(big, sizeof big - 1, &v, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "more than"));
}
END_TEST

typedef struct {
    int major, minor, patch;
    bool binding_uid, requeue_nudges, node_precheck;
} fact_case;

/* The boundaries of each range (docs/kubernetes-versions.md has the sources). */
static const fact_case facts[] = {
    {1, 24, 17, true, true, true},
    {1, 25, 0, false, true, true},    /* the uid wipe begins */
    {1, 25, 16, false, true, true},
    {1, 26, 0, false, true, true},    /* the kit's v1.26 */
    {1, 26, 3, false, true, true},
    {1, 26, 4, true, true, true},     /* the fix backported */
    {1, 27, 0, true, true, true},
    {1, 28, 15, true, true, true},
    {1, 29, 0, true, true, true},     /* kube-scheduler retries errors, but one may run 1.28 */
    {1, 29, 14, true, true, true},
    {1, 30, 0, true, false, true},
    {1, 31, 9, true, false, true},
    {1, 32, 0, true, false, true},    /* queueing hints on, but one may run 1.31 */
    {1, 33, 0, true, false, false},
    {1, 36, 3, true, false, false},   /* the kit's v1.36 */
    {2, 0, 0, true, false, false},
};

START_TEST(facts_by_version)
{
    const fact_case *c = &facts[_i];
    gp_apiversion v = {.known = true, .major = c->major, .minor = c->minor, .patch = c->patch};
    ck_assert_msg(apiversion_has(&v, GP_FACT_BINDING_UID) == c->binding_uid, "%d.%d.%d binding_uid",
                  c->major, c->minor, c->patch);
    ck_assert_msg(apiversion_has(&v, GP_FACT_REQUEUE_NUDGES) == c->requeue_nudges,
                  "%d.%d.%d requeue_nudges", c->major, c->minor, c->patch);
    ck_assert_msg(apiversion_has(&v, GP_FACT_NODE_PRECHECK) == c->node_precheck,
                  "%d.%d.%d node_precheck", c->major, c->minor, c->patch);
}
END_TEST

START_TEST(facts_unknown_take_the_safe_side)
{
    gp_apiversion v = {.known = false, .major = 1, .minor = 36, .patch = 3};
    /* unknown: bind does not rely on the uid, and no pod is patched */
    ck_assert(!apiversion_has(&v, GP_FACT_BINDING_UID));
    ck_assert(!apiversion_has(&v, GP_FACT_REQUEUE_NUDGES));
    ck_assert(!apiversion_has(&v, GP_FACT_NODE_PRECHECK));
    ck_assert(!apiversion_has(NULL, GP_FACT_BINDING_UID));
    ck_assert(!apiversion_has(&v, GP_FACT_COUNT));
    ck_assert_str_eq(apiversion_fact_name(GP_FACT_BINDING_UID), "binding_uid");
    ck_assert_str_eq(apiversion_fact_name(GP_FACT_REQUEUE_NUDGES), "requeue_nudges");
    ck_assert_str_eq(apiversion_fact_name(GP_FACT_NODE_PRECHECK), "node_precheck");
    char d[64];
    apiversion_describe(&v, d, sizeof d);
    ck_assert_str_eq(d, "unknown");
    gp_apiversion k = {.known = true, .major = 1, .minor = 29};
    apiversion_describe(&k, d, sizeof d);
    ck_assert_str_eq(d, "v1.29 (no gitVersion)");
}
END_TEST

Suite *suite_apiversion(void);
Suite *suite_apiversion(void)
{
    Suite *s = suite_create("apiversion");
    TCase *tc = tcase_create("parse");
    tcase_add_loop_test(tc, parse_accepts, 0, (int)(sizeof parse_ok / sizeof parse_ok[0]));
    tcase_add_loop_test(tc, parse_rejects, 0, (int)(sizeof parse_bad / sizeof parse_bad[0]));
    tcase_add_test(tc, parse_bounds_the_body);
    suite_add_tcase(s, tc);
    tc = tcase_create("facts");
    tcase_add_loop_test(tc, facts_by_version, 0, (int)(sizeof facts / sizeof facts[0]));
    tcase_add_test(tc, facts_unknown_take_the_safe_side);
    suite_add_tcase(s, tc);
    return s;
}
