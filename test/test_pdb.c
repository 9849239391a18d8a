/* test_pdb.c -- PodDisruptionBudgets and pod priorities as preemption reads them
 * (model/pdb, model/podprio). */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "model/pdb.h"
#include "model/podprio.h"

static gp_pdb *pdb_of(const char *text)
{
    json_t *j = json_loads(text, 0, NULL);
    ck_assert_ptr_nonnull(j);
    gp_err err;
    gp_pdb *b = pdb_decode(j, &err);
    json_decref(j);
    return b;
}

static void labels_of(const char *pod_text, char *out, size_t len)
{
    json_t *p = json_loads(pod_text, 0, NULL);
    ck_assert_ptr_nonnull(p);
    ck_assert(podprio_labels(p, out, len));
    json_decref(p);
}

typedef struct sel_case {
    const char *selector;     /* spec.selector JSON */
    const char *labels;       /* metadata.labels JSON */
    const char *ns;
    bool want;
} sel_case;

static const sel_case sels[] = {
    {"{\"matchLabels\":{\"app\":\"web\"}}", "{\"app\":\"web\",\"x\":\"y\"}", "prod", true},
    {"{\"matchLabels\":{\"app\":\"web\"}}", "{\"app\":\"db\"}", "prod", false},
    {"{\"matchLabels\":{\"app\":\"web\"}}", "{\"app\":\"web\"}", "other", false},   /* namespace */
    {"{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"In\",\"values\":[\"a\",\"b\"]}]}",
     "{\"tier\":\"b\"}", "prod", true},
    {"{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"NotIn\",\"values\":[\"a\"]}]}",
     "{\"app\":\"x\"}", "prod", true},
    {"{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"Exists\"}]}", "{\"app\":\"x\"}", "prod",
     false},
    {"{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"DoesNotExist\"}]}", "{\"app\":\"x\"}",
     "prod", true},
    /* kube-scheduler: an empty selector matches nothing, and so does one it cannot read */
    {"{}", "{\"app\":\"web\"}", "prod", false},
    {"{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"Near\",\"values\":[\"a\"]}]}",
     "{\"tier\":\"a\"}", "prod", false},
    {"{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"In\"}]}", "{\"tier\":\"a\"}", "prod",
     false},
    /* a pod without labels matches no budget */
    {"{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"DoesNotExist\"}]}", "{}", "prod", false},
};

START_TEST(selector_table)
{
    const sel_case *c = &sels[_i];
    char text[1024], pod[512], labels[GP_LABELS_MAX];
    snprintf(text, sizeof text,
             "{\"metadata\":{\"name\":\"b\",\"namespace\":\"prod\"},\"spec\":{\"selector\":%s}}",
             c->selector);
    snprintf(pod, sizeof pod, "{\"metadata\":{\"labels\":%s}}", c->labels);
    gp_pdb *b = pdb_of(text);
    ck_assert_ptr_nonnull(b);
    labels_of(pod, labels, sizeof labels);
    ck_assert_msg(pdb_matches(b, c->ns, labels) == c->want, "selector %s, labels %s in %s",
                  c->selector, c->labels, c->ns);
    pdb_free(b);
}
END_TEST

/* kube-scheduler's count: budgets lose one disruption per matching pod, most
 * important first; pods listed as disrupted do not count again. */
START_TEST(violation_count)
{
    gp_pdb *b = pdb_of("{\"metadata\":{\"name\":\"b\",\"namespace\":\"prod\"},"
                       "\"spec\":{\"selector\":{\"matchLabels\":{\"app\":\"web\"}}},"
                       "\"status\":{\"disruptionsAllowed\":1,\"disruptedPods\":{\"w0\":\"2024-01-01T00:00:00Z\"}}}");
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(b->allowed, 1);
    char web[GP_LABELS_MAX], other[GP_LABELS_MAX];
    labels_of("{\"metadata\":{\"labels\":{\"app\":\"web\"}}}", web, sizeof web);
    labels_of("{\"metadata\":{\"labels\":{\"app\":\"db\"}}}", other, sizeof other);
    gp_pdb_pod pods[] = {{"prod", "w0", web}, {"prod", "w1", web}, {"prod", "d1", other},
                         {"prod", "w2", web}, {"dev", "w3", web}};
    bool v[5];
    gp_pdb *const list[] = {b};
    pdb_violations(list, 1, pods, 5, v);
    ck_assert(!v[0]);   /* already disrupted: not counted */
    ck_assert(!v[1]);   /* uses the one allowed disruption */
    ck_assert(!v[2]);   /* not selected */
    ck_assert(v[3]);    /* the budget is spent */
    ck_assert(!v[4]);   /* another namespace */
    ck_assert(pdb_covered(list, 1, "prod", web));
    ck_assert(!pdb_covered(list, 1, "prod", other));
    pdb_free(b);
    /* no status at all (no disruption controller): nothing may be disrupted */
    b = pdb_of("{\"metadata\":{\"name\":\"b\",\"namespace\":\"prod\"},"
               "\"spec\":{\"selector\":{\"matchLabels\":{\"app\":\"web\"}}}}");
    gp_pdb *const l2[] = {b};
    pdb_violations(l2, 1, pods + 1, 1, v);
    ck_assert(v[0]);
    pdb_free(b);
    gp_err err;
    json_t *bad = json_loads("{\"metadata\":{\"name\":\"x\"}}", 0, NULL);
    ck_assert_ptr_null(pdb_decode(bad, &err));
    json_decref(bad);
}
END_TEST

START_TEST(pod_priority)
{
    json_t *p = json_loads(
        "{\"metadata\":{\"creationTimestamp\":\"2024-05-01T10:00:00Z\","
        "\"deletionTimestamp\":\"2024-05-01T10:05:00Z\",\"deletionGracePeriodSeconds\":30},"
        "\"spec\":{\"priority\":1000,\"preemptionPolicy\":\"Never\",\"terminationGracePeriodSeconds\":60},"
        "\"status\":{\"startTime\":\"2024-05-01T10:00:02.5Z\",\"nominatedNodeName\":\"n1\"}}",
        0, NULL);
    gp_pod_prio pp;
    podprio_decode(p, &pp);
    ck_assert_int_eq(pp.priority, 1000);
    ck_assert(pp.never);
    ck_assert_int_eq(pp.start_ns, INT64_C(1714557602500000000));
    ck_assert_int_eq(pp.deletion_ns, INT64_C(1714557900000000000));
    ck_assert_int_eq(pp.grace_s, 30);
    ck_assert_str_eq(pp.nominated, "n1");
    json_decref(p);
    /* the defaults: priority 0, start from creation, not being deleted */
    p = json_loads("{\"metadata\":{\"creationTimestamp\":\"2024-05-01T10:00:00Z\"},"
                   "\"spec\":{\"priority\":\"high\"}}", 0, NULL);
    podprio_decode(p, &pp);
    ck_assert_int_eq(pp.priority, 0);
    ck_assert(!pp.never);
    ck_assert_int_eq(pp.start_ns, INT64_C(1714557600000000000));
    ck_assert_int_eq(pp.deletion_ns, 0);
    ck_assert_int_eq(pp.grace_s, -1);
    json_decref(p);
    /* times past what nanoseconds hold (found by fuzz_pdb: a signed overflow) are unknown */
    p = json_loads("{\"metadata\":{\"creationTimestamp\":\"9999-12-31T23:59:59Z\","
                   "\"deletionTimestamp\":\"1000-01-01T00:00:00Z\"}}", 0, NULL);
    podprio_decode(p, &pp);
    ck_assert_int_eq(pp.start_ns, 0);
    ck_assert_int_eq(pp.deletion_ns, 1);   /* present but unreadable: still being deleted */
    json_decref(p);
    /* kube-scheduler's MoreImportantPod */
    ck_assert_int_lt(podprio_importance_cmp(10, 5, 1, 1), 0);
    ck_assert_int_lt(podprio_importance_cmp(1, 1, 1, 5), 0);
    ck_assert_int_gt(podprio_importance_cmp(1, 0, 1, 5), 0);   /* unknown start = latest */
}
END_TEST

START_TEST(labels_bounded)
{
    json_t *p = json_object(), *md = json_object(), *l = json_object();
    char key[40];
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof key, "label-number-%03d", i);
        json_object_set_new(l, key, json_string("some-value"));
    }
    json_object_set_new(md, "labels", l);
    json_object_set_new(p, "metadata", md);
    char out[GP_LABELS_MAX];
    ck_assert(!podprio_labels(p, out, sizeof out));   /* too many: some left out, flagged */
    ck_assert_ptr_nonnull(podprio_label(out, "label-number-000"));
    ck_assert_ptr_null(podprio_label(out, "absent"));
    json_decref(p);
}
END_TEST

Suite *suite_pdb(void);
Suite *suite_pdb(void)
{
    Suite *s = suite_create("pdb");
    TCase *t = tcase_create("pdb");
    tcase_add_loop_test(t, selector_table, 0, (int)(sizeof sels / sizeof sels[0]));
    tcase_add_test(t, violation_count);
    tcase_add_test(t, pod_priority);
    tcase_add_test(t, labels_bounded);
    suite_add_tcase(s, t);
    return s;
}
