/* test_requeue.c -- what gpupack does differently by Kubernetes version, against the fake
 * API server: the token bucket; the requeue nudges (which pods, once per trigger, the
 * patch sent, 403/422, nothing where not needed, time to bind); the binder's
 * preconditions where the Binding's uid is checked and where it is wiped. */
#include <check.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "fakeapi.h"
#include "kube/kube.h"
#include "lib/log.h"
#include "lib/tbucket.h"
#include "model/k8s_obs.h"
#include "act/binder.h"
#include "act/requeue.h"

/* -------------------------------------------------------- token bucket --- */

START_TEST(tbucket_rate_and_burst)
{
    gp_tbucket b;
    tbucket_init(&b, 10, 3, 100.0);
    for (int i = 0; i < 3; i++)
        ck_assert(tbucket_take(&b, 100.0) == 0);        /* the burst */
    double wait = tbucket_take(&b, 100.0);
    ck_assert(wait > 0.099 && wait < 0.101);            /* one token per 0.1 s */
    ck_assert(tbucket_take(&b, 100.05) > 0.049);        /* half a token: not yet */
    ck_assert(tbucket_take(&b, 100.1) == 0);
    ck_assert(tbucket_take(&b, 1000.0) == 0);           /* a long pause refills only the burst */
    ck_assert(tbucket_take(&b, 1000.0) == 0);
    ck_assert(tbucket_take(&b, 1000.0) == 0);
    ck_assert(tbucket_take(&b, 1000.0) > 0);
    ck_assert(tbucket_take(&b, 999.0) > 0);             /* a clock going back refills nothing */
    /* over 10 simulated seconds at most burst + rate * 10 tokens are handed out */
    tbucket_init(&b, 10, 3, 0);
    int got = 0;
    for (double t = 0; t <= 10.0; t += 0.001)
        got += tbucket_take(&b, t) == 0;
    ck_assert_int_ge(got, 100);
    ck_assert_int_le(got, 103);
    tbucket_init(&b, -1, 0, 0);                         /* nonsense: the smallest sane bucket */
    ck_assert(tbucket_take(&b, 0) == 0);
    ck_assert(tbucket_take(&b, 0) > 0);
}
END_TEST

/* ----------------------------------------------------------- k8s_obs --- */

START_TEST(obs_reads_the_scheduled_condition)
{
    static const struct {
        const char *status;   /* status object JSON */
        const char *node;     /* spec.nodeName or NULL */
        bool parked, sched_error;
    } cases[] = {
        {"{\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\",\"reason\":\"SchedulerError\"}]}",
         NULL, true, true},
        {"{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"},{\"type\":\"PodScheduled\","
         "\"status\":\"False\",\"reason\":\"Unschedulable\"}]}", NULL, true, false},
        {"{\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"True\"}]}", NULL, false, false},
        {"{}", NULL, false, false},
        {"{\"conditions\":\"garbage\"}", NULL, false, false},
        {"{\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\",\"reason\":\"SchedulerError\"}]}",
         "n1", false, false},   /* bound: not pending */
    };
    for (size_t i = 0; i < GP_ARRAY_LEN(cases); i++) {
        json_t *pod = json_pack("{s:{s:s,s:s,s:s},s:{},s:o}", "metadata", "name", "p", "namespace",
                                "ns", "uid", "u-1", "spec", "status",
                                json_loads(cases[i].status, 0, NULL));
        if (cases[i].node)
            json_object_set_new(json_object_get(pod, "spec"), "nodeName", json_string(cases[i].node));
        /* the LIST path trims first: the condition must survive it */
        json_t *t = k8s_obs_trim_pod(pod);
        const json_t *objs[] = {pod, t};
        for (size_t k = 0; k < 2; k++) {
            gp_pod_view *v = xmalloc(sizeof *v);
            gp_err err;
            ck_assert_int_eq(k8s_obs_pod(objs[k], false, 1024, v, &err), 0);
            ck_assert_msg(v->parked == cases[i].parked && v->sched_error == cases[i].sched_error,
                          "case %zu (%s): parked %d sched_error %d", i, k ? "trimmed" : "full",
                          v->parked, v->sched_error);
            free(v);
        }
        json_decref(t);
        json_decref(pod);
    }
}
END_TEST

/* ------------------------------------------------------------ requeue --- */

typedef struct rq_env {
    gp_fakeapi *f;
    gp_kube *k;
    gp_requeue *rq;
    atomic_bool serving;
    atomic_int needed;
    atomic_int asked;
} rq_env;

static bool t_serving(void *ud)
{
    rq_env *x = ud;
    return atomic_load(&x->serving);
}

static int t_needed(void *ud)
{
    rq_env *x = ud;
    atomic_fetch_add(&x->asked, 1);
    return atomic_load(&x->needed);
}

static json_t *pending_pod(const char *name, const char *reason)
{
    return json_pack("{s:{s:s,s:s},s:{s:[{s:s,s:s}]},s:{s:s,s:[{s:s,s:s,s:s}]}}", "metadata",
                     "name", name, "namespace", "team", "spec", "containers", "name", "c", "image",
                     "x", "status", "phase", "Pending", "conditions", "type", "PodScheduled",
                     "status", "False", "reason", reason);
}

/* Puts a pod into the fake and reports it to the requeue as the watch would. */
static char *add_pod(rq_env *x, const char *name, const char *reason, gp_requeue_seen seen, bool gpu)
{
    fakeapi_put_pod(x->f, pending_pod(name, reason));
    json_t *p = fakeapi_get_pod(x->f, "team", name);
    char *uid = xstrdup(json_string_value(json_object_get(json_object_get(p, "metadata"), "uid")));
    json_decref(p);
    requeue_observe(x->rq, uid, "team", name, seen, gpu);
    return uid;
}

static void rq_setup_renudge(rq_env *x, unsigned needed, double renudge_s)
{
    memset(x, 0, sizeof *x);
    gp_log_set_level(GP_LOG_ERROR);
    x->f = fakeapi_start();
    ck_assert_ptr_nonnull(x->f);
    gp_kube_auth auth = {.server = (char *)fakeapi_url(x->f)};
    gp_err err;
    x->k = kube_new(&auth, &err);
    ck_assert_ptr_nonnull(x->k);
    atomic_init(&x->needed, (int)needed);
    gp_requeue_config cfg = {.rate = 1000, .burst = 1000, .window_s = 30, .nodes_window_s = 30,
                             .renudge_s = renudge_s, .poll_s = 0.01, .serving = t_serving,
                             .needed = t_needed, .ud = x};
    x->rq = requeue_new(x->k, &cfg);
    ck_assert_int_eq(requeue_start(x->rq, &err), 0);
}

static void rq_setup(rq_env *x, unsigned needed)
{
    rq_setup_renudge(x, needed, 0);   /* the default: 10 s, longer than any test here */
}

static void rq_teardown(rq_env *x)
{
    requeue_free(x->rq);
    kube_free(x->k);
    fakeapi_stop(x->f);
}

static void wait_stats(rq_env *x, gp_requeue_stats *s, unsigned long sent_plus_gone)
{
    for (int i = 0; i < 500; i++) {
        requeue_stats(x->rq, s);
        if (s->sent + s->gone + s->forbidden + s->failed >= sent_plus_gone)
            return;
        usleep(10000);
    }
}

/* The pods whose annotation a PATCH set since request `from` (names, space-separated). */
static void patched(rq_env *x, size_t from, char *out, size_t len)
{
    out[0] = '\0';
    for (size_t i = from; i < fakeapi_request_count(x->f); i++) {
        gp_fake_req r;
        ck_assert_int_eq(fakeapi_request(x->f, i, &r), 0);
        if (strcmp(r.method, "PATCH") == 0) {
            ck_assert_str_eq(r.content_type, "application/merge-patch+json");
            json_t *b = json_loads(r.body, 0, NULL);
            json_t *md = json_object_get(b, "metadata");
            ck_assert_ptr_nonnull(json_string_value(json_object_get(md, "uid")));
            ck_assert_ptr_nonnull(json_string_value(json_object_get(json_object_get(md, "annotations"),
                                                                    GP_REQUEUE_ANNOTATION)));
            ck_assert_int_eq(json_object_size(b), 1);
            json_decref(b);
            const char *name = strrchr(r.url, '/') + 1;
            size_t l = strlen(out);
            snprintf(out + l, len - l, "%s%s", l ? " " : "", name);
        }
        fakeapi_req_clear(&r);
    }
}

START_TEST(nudges_errors_and_gpu_pods_once_per_regain)
{
    rq_env x;
    rq_setup(&x, GP_REQUEUE_ERRORS | GP_REQUEUE_NODES);
    char *u_err = add_pod(&x, "err", "SchedulerError", GP_REQUEUE_PARKED_ERROR, false);
    char *u_gpu = add_pod(&x, "gpu", "Unschedulable", GP_REQUEUE_PARKED, true);
    char *u_cpu = add_pod(&x, "cpu", "Unschedulable", GP_REQUEUE_PARKED, false);   /* not ours */
    char *u_ok = add_pod(&x, "fine", "Unschedulable", GP_REQUEUE_PENDING, true);
    usleep(100000);
    ck_assert_int_eq(fakeapi_count(x.f, "PATCH", NULL), 0);   /* not serving: nothing */
    size_t from = fakeapi_request_count(x.f);
    atomic_store(&x.serving, true);
    gp_requeue_stats s;
    wait_stats(&x, &s, 2);
    usleep(100000);   /* nothing more comes */
    char names[256];
    patched(&x, from, names, sizeof names);
    ck_assert_msg(strcmp(names, "err gpu") == 0 || strcmp(names, "gpu err") == 0, "patched: %s", names);
    json_t *p = fakeapi_get_pod(x.f, "team", "err");
    ck_assert_ptr_nonnull(json_object_get(json_object_get(json_object_get(p, "metadata"),
                                                          "annotations"), GP_REQUEUE_ANNOTATION));
    json_decref(p);
    requeue_stats(x.rq, &s);
    ck_assert_int_eq(s.sent, 2);
    ck_assert_int_eq(s.passes[0], 1);
    ck_assert_int_eq(s.regained, 1);
    /* a pod reported parked during the window is nudged too */
    char *u_late = add_pod(&x, "late", "SchedulerError", GP_REQUEUE_PARKED_ERROR, true);
    wait_stats(&x, &s, 3);
    ck_assert_int_eq(s.sent, 3);
    /* bound after the nudge: time to bind measured */
    requeue_observe(x.rq, u_err, "team", "err", GP_REQUEUE_BOUND, false);
    requeue_observe(x.rq, u_gpu, "team", "gpu", GP_REQUEUE_PENDING, true);   /* retried, waiting */
    requeue_observe(x.rq, u_gpu, "team", "gpu", GP_REQUEUE_BOUND, true);
    requeue_stats(x.rq, &s);
    ck_assert_int_eq(s.bound[0], 2);
    gp_buf m;
    gp_buf_init(&m, 1 << 20);
    requeue_metrics(x.rq, &m);
    ck_assert_ptr_nonnull(strstr(m.data, "gpupack_requeue_nudges_total{result=\"sent\"} 3\n"));
    ck_assert_ptr_nonnull(strstr(m.data, "gpupack_requeue_bind_seconds_count{trigger=\"regained\"} 2\n"));
    ck_assert_ptr_nonnull(strstr(m.data, "gpupack_requeue_triggers_total{trigger=\"regained\"} 1\n"));
    gp_buf_free(&m);
    /* losing and regaining service: the pods still parked get one more nudge each */
    atomic_store(&x.serving, false);
    usleep(50000);
    atomic_store(&x.serving, true);
    wait_stats(&x, &s, 4);
    usleep(100000);
    requeue_stats(x.rq, &s);
    ck_assert_int_eq(s.sent, 4);   /* "late" only: err and gpu are bound, cpu and fine not ours */
    ck_assert_int_eq(s.regained, 2);
    free(u_err);
    free(u_gpu);
    free(u_cpu);
    free(u_ok);
    free(u_late);
    rq_teardown(&x);
}
END_TEST

/* PATCHes of pod `name` since request `from`. */
static int patches_of(rq_env *x, size_t from, const char *name)
{
    char names[4096], *save = NULL;
    patched(x, from, names, sizeof names);
    int n = 0;
    for (char *t = strtok_r(names, " ", &save); t; t = strtok_r(NULL, " ", &save))
        n += strcmp(t, name) == 0;
    return n;
}

/* A pod nudged after an error whose retry fails the same way changes nothing
 * the watch would show; seen in e2e_ha: filter calls refused while the
 * Service's endpoints moved to the new leader, right after its nudges. It is
 * nudged again while the trigger's window is open, a bounded number of times;
 * a bound pod and a pod parked for want of room are not. */
START_TEST(renudges_a_pod_still_parked_after_an_error)
{
    rq_env x;
    rq_setup_renudge(&x, GP_REQUEUE_ERRORS | GP_REQUEUE_NODES, 0.1);
    size_t from = fakeapi_request_count(x.f);
    char *u_again = add_pod(&x, "again", "SchedulerError", GP_REQUEUE_PARKED_ERROR, true);
    char *u_stuck = add_pod(&x, "stuck", "SchedulerError", GP_REQUEUE_PARKED_ERROR, true);
    char *u_full = add_pod(&x, "full", "Unschedulable", GP_REQUEUE_PARKED, true);
    atomic_store(&x.serving, true);
    gp_requeue_stats s;
    wait_stats(&x, &s, 3);
    /* "again" is re-nudged once, then shows bound */
    for (int i = 0; i < 300 && patches_of(&x, from, "again") < 2; i++)
        usleep(10000);
    ck_assert_int_eq(patches_of(&x, from, "again"), 2);
    requeue_observe(x.rq, u_again, "team", "again", GP_REQUEUE_BOUND, true);
    /* "stuck" never leaves: 1 + GP_REQUEUE_RENUDGE_MAX nudges, then none */
    for (int i = 0; i < 300 && patches_of(&x, from, "stuck") < 1 + GP_REQUEUE_RENUDGE_MAX; i++)
        usleep(10000);
    usleep(500000);
    ck_assert_int_eq(patches_of(&x, from, "stuck"), 1 + GP_REQUEUE_RENUDGE_MAX);
    ck_assert_int_le(patches_of(&x, from, "again"), 3);   /* one may have been on its way */
    ck_assert_int_eq(patches_of(&x, from, "full"), 1);     /* unschedulable: once per trigger */
    requeue_stats(x.rq, &s);
    ck_assert_int_eq(s.bound[0], 1);
    /* a new trigger opens a new allowance */
    atomic_store(&x.serving, false);
    usleep(50000);
    from = fakeapi_request_count(x.f);
    atomic_store(&x.serving, true);
    for (int i = 0; i < 300 && patches_of(&x, from, "stuck") < 2; i++)
        usleep(10000);
    ck_assert_int_ge(patches_of(&x, from, "stuck"), 2);
    free(u_again);
    free(u_stuck);
    free(u_full);
    rq_teardown(&x);
}
END_TEST

START_TEST(capacity_growth_nudges_gpu_pods_only)
{
    rq_env x;
    rq_setup(&x, GP_REQUEUE_ERRORS | GP_REQUEUE_NODES);
    atomic_store(&x.serving, true);
    while (atomic_load(&x.asked) == 0)
        usleep(5000);
    usleep(50000);
    size_t from = fakeapi_request_count(x.f);
    /* parked after the regained window would have covered them? window is 30 s: so
     * first let them be nudged by that pass, then check growth re-nudges GPU ones */
    char *u_gpu = add_pod(&x, "gpu", "Unschedulable", GP_REQUEUE_PARKED, true);
    char *u_cpu = add_pod(&x, "cpu", "Unschedulable", GP_REQUEUE_PARKED, false);
    gp_requeue_stats s;
    wait_stats(&x, &s, 1);
    ck_assert_int_eq(s.sent, 1);
    requeue_capacity_grew(x.rq);
    wait_stats(&x, &s, 2);
    usleep(100000);
    requeue_stats(x.rq, &s);
    ck_assert_int_eq(s.sent, 2);
    ck_assert_int_eq(s.passes[1], 1);
    char names[256];
    patched(&x, from, names, sizeof names);
    ck_assert_str_eq(names, "gpu gpu");
    free(u_gpu);
    free(u_cpu);
    rq_teardown(&x);
}
END_TEST

/* A relist that no longer shows a parked pod: it was deleted while no watch
 * ran and no DELETED will come; it is forgotten at the LIST's end, and the
 * pods the LIST showed are kept. Nothing is served here: no nudge is sent. */
START_TEST(relist_forgets_the_unlisted)
{
    rq_env x;
    rq_setup(&x, GP_REQUEUE_ERRORS | GP_REQUEUE_NODES);
    requeue_observe(x.rq, "u-a", "team", "a", GP_REQUEUE_PARKED, true);
    requeue_observe(x.rq, "u-b", "team", "b", GP_REQUEUE_PARKED_ERROR, true);
    requeue_observe(x.rq, "u-c", "team", "c", GP_REQUEUE_PARKED, true);
    gp_requeue_stats s;
    requeue_stats(x.rq, &s);
    ck_assert_int_eq(s.parked, 3);
    requeue_listing(x.rq, false);
    requeue_observe(x.rq, "u-a", "team", "a", GP_REQUEUE_PARKED, true);
    requeue_observe(x.rq, "u-c", "team", "c", GP_REQUEUE_PARKED, true);
    requeue_listing(x.rq, true);
    requeue_stats(x.rq, &s);
    ck_assert_int_eq(s.parked, 2);
    requeue_listing(x.rq, false);   /* an empty LIST: every pod is gone */
    requeue_listing(x.rq, true);
    requeue_stats(x.rq, &s);
    ck_assert_int_eq(s.parked, 0);
    ck_assert_int_eq(fakeapi_count(x.f, "PATCH", NULL), 0);
    rq_teardown(&x);
}
END_TEST

START_TEST(nothing_where_kube_scheduler_retries_itself)
{
    rq_env x;
    rq_setup(&x, 0);
    char *u = add_pod(&x, "err", "SchedulerError", GP_REQUEUE_PARKED_ERROR, true);
    atomic_store(&x.serving, true);
    while (atomic_load(&x.asked) == 0)
        usleep(5000);
    usleep(100000);
    requeue_capacity_grew(x.rq);
    requeue_observe(x.rq, "u-2", "team", "other", GP_REQUEUE_PARKED_ERROR, true);
    usleep(100000);
    gp_requeue_stats s;
    requeue_stats(x.rq, &s);
    ck_assert_int_eq(fakeapi_count(x.f, "PATCH", NULL), 0);
    ck_assert_int_eq(s.sent + s.gone + s.failed + s.forbidden, 0);
    ck_assert_int_eq(s.parked, 0);     /* nothing tracked either */
    ck_assert_int_eq(s.passes[0] + s.passes[1], 0);
    ck_assert_int_eq(s.needed, 0);
    free(u);
    rq_teardown(&x);
}
END_TEST

/* PATCHes sent since request `from` whose path ends in `suffix` (NULL: any). */
static int patches_since(rq_env *x, size_t from, const char *suffix, char *ctype, size_t clen)
{
    int n = 0;
    for (size_t i = from; i < fakeapi_request_count(x->f); i++) {
        gp_fake_req r;
        ck_assert_int_eq(fakeapi_request(x->f, i, &r), 0);
        size_t ul = strlen(r.url), sl = suffix ? strlen(suffix) : 0;
        if (strcmp(r.method, "PATCH") == 0 && (!suffix || (ul >= sl && !strcmp(r.url + ul - sl, suffix)))) {
            n++;
            if (ctype)
                gp_strlcpy(ctype, r.content_type ? r.content_type : "", clen);
        }
        fakeapi_req_clear(&r);
    }
    return n;
}

static void wait_patches(rq_env *x, size_t from, int want)
{
    for (int i = 0; i < 500 && patches_since(x, from, NULL, NULL, 0) < want; i++)
        usleep(10000);
}

/* The race of two watches (requeue.h RACE), on every version: a GPU pod
 * refused just before gpupack saw a GPU share freed is nudged once the release
 * settled with no event that moves parked pods; a pod refused after the release
 * is not, nor one nudged less than 30 s ago, nor anything when another event
 * came. From 1.32 the nudge is a status condition, before it the annotation. */
START_TEST(race_nudges_pods_refused_before_a_release)
{
    rq_env x;
    rq_setup(&x, 0);   /* 1.33+: nothing else is tracked or sent */
    char *ua = add_pod(&x, "a", "Unschedulable", GP_REQUEUE_PARKED, true);
    char *ub = add_pod(&x, "b", "Unschedulable", GP_REQUEUE_PARKED, true);
    char *uc = add_pod(&x, "c", "Unschedulable", GP_REQUEUE_PARKED, true);
    atomic_store(&x.serving, true);
    while (atomic_load(&x.asked) == 0)
        usleep(5000);
    size_t from = fakeapi_request_count(x.f);
    requeue_refused(x.rq, ua, "team", "a");
    requeue_released(x.rq);
    requeue_refused(x.rq, ub, "team", "b");   /* after the release: refused from the new state */
    wait_patches(&x, from, 1);
    usleep(GP_REQUEUE_RACE_SETTLE_S * 1e6 / 2);   /* nothing more comes */
    char ctype[128] = "";
    ck_assert_int_eq(patches_since(&x, from, "/pods/a/status", ctype, sizeof ctype), 1);
    ck_assert_str_eq(ctype, "application/strategic-merge-patch+json");
    ck_assert_int_eq(patches_since(&x, from, NULL, NULL, 0), 1);
    json_t *pod = fakeapi_get_pod(x.f, "team", "a");
    json_t *conds = json_object_get(json_object_get(pod, "status"), "conditions"), *c;
    size_t i;
    bool found = false;
    json_array_foreach(conds, i, c)
        found |= !strcmp(json_string_value(json_object_get(c, "type")), GP_REQUEUE_CONDITION) &&
                 !strcmp(json_string_value(json_object_get(c, "reason")), "GPUShareFreed");
    json_decref(pod);
    ck_assert_msg(found, "no %s condition on pod a", GP_REQUEUE_CONDITION);
    gp_requeue_stats s;
    requeue_stats(x.rq, &s);
    ck_assert_int_eq(s.race_passes, 1);
    ck_assert_int_eq(s.sent, 1);
    /* refused and released again at once: nudged less than 30 s ago, not again */
    from = fakeapi_request_count(x.f);
    requeue_refused(x.rq, ua, "team", "a");
    requeue_released(x.rq);
    usleep(GP_REQUEUE_RACE_SETTLE_S * 1e6 * 1.6);
    ck_assert_int_eq(patches_since(&x, from, "/pods/a/status", NULL, 0), 0);
    /* (b, refused after the first release, may be nudged for this one: within
     * the window or not, as the machine's speed has it) */
    /* another event before the release settled: kube-scheduler moved the pods itself */
    requeue_refused(x.rq, uc, "team", "c");
    requeue_released(x.rq);
    requeue_moving_event(x.rq);
    usleep(GP_REQUEUE_RACE_SETTLE_S * 1e6 * 1.6);
    ck_assert_int_eq(patches_since(&x, from, "/pods/a/status", NULL, 0), 0);
    ck_assert_int_eq(patches_since(&x, from, "/pods/c/status", NULL, 0), 0);
    requeue_stats(x.rq, &s);
    ck_assert_int_eq(s.race_quiet_skips, 1);
    gp_buf m;
    gp_buf_init(&m, 1 << 20);
    requeue_metrics(x.rq, &m);
    ck_assert_msg(strstr(m.data, "gpupack_requeue_triggers_total{trigger=\"released\"} ") &&
                      strstr(m.data, "gpupack_requeue_race_skips_total 1"), "%s", m.data);
    gp_buf_free(&m);
    free(ua);
    free(ub);
    free(uc);
    rq_teardown(&x);

    /* before 1.32 (kube-scheduler wakes on metadata only): the annotation */
    rq_setup(&x, GP_REQUEUE_NODES);
    char *ud = add_pod(&x, "d", "Unschedulable", GP_REQUEUE_PENDING, true);
    atomic_store(&x.serving, true);
    while (atomic_load(&x.asked) == 0)
        usleep(5000);
    usleep(100000);   /* the regained pass has nothing to nudge: d is not parked */
    from = fakeapi_request_count(x.f);
    requeue_refused(x.rq, ud, "team", "d");
    requeue_released(x.rq);
    wait_patches(&x, from, 1);
    ck_assert_int_eq(patches_since(&x, from, "/pods/d", ctype, sizeof ctype), 1);
    ck_assert_str_eq(ctype, "application/merge-patch+json");
    free(ud);
    rq_teardown(&x);
}
END_TEST

START_TEST(unknown_version_waits)
{
    rq_env x;
    rq_setup(&x, 0);
    atomic_store(&x.needed, -1);
    char *u = add_pod(&x, "err", "SchedulerError", GP_REQUEUE_PARKED_ERROR, true);
    atomic_store(&x.serving, true);
    while (atomic_load(&x.asked) < 3)   /* asked again and again meanwhile */
        usleep(5000);
    ck_assert_int_eq(fakeapi_count(x.f, "PATCH", NULL), 0);
    atomic_store(&x.needed, GP_REQUEUE_ERRORS);
    gp_requeue_stats s;
    wait_stats(&x, &s, 1);
    ck_assert_int_eq(s.sent, 1);
    free(u);
    rq_teardown(&x);
}
END_TEST

START_TEST(forbidden_and_recreated)
{
    rq_env x;
    rq_setup(&x, GP_REQUEUE_ERRORS);
    char *u1 = add_pod(&x, "a", "SchedulerError", GP_REQUEUE_PARKED_ERROR, false);
    char *u2 = add_pod(&x, "b", "SchedulerError", GP_REQUEUE_PARKED_ERROR, false);
    /* no RBAC grant: the first 403 ends the pass, said once */
    fakeapi_fail(x.f, "PATCH", "/pods/", 403, 1);
    atomic_store(&x.serving, true);
    gp_requeue_stats s;
    wait_stats(&x, &s, 1);
    usleep(150000);
    requeue_stats(x.rq, &s);
    ck_assert_int_eq(s.forbidden, 1);
    ck_assert_int_eq(s.sent, 0);
    ck_assert_int_eq(fakeapi_count(x.f, "PATCH", NULL), 1);
    /* the next time service is regained it tries again; "a" was deleted and re-created
     * meanwhile (another uid): the patch carries the old uid, nothing is written */
    fakeapi_delete_pod(x.f, "team", "a");
    fakeapi_put_pod(x.f, pending_pod("a", "SchedulerError"));
    atomic_store(&x.serving, false);
    usleep(50000);
    atomic_store(&x.serving, true);
    wait_stats(&x, &s, 3);
    requeue_stats(x.rq, &s);
    ck_assert_int_eq(s.gone, 1);
    ck_assert_int_eq(s.sent, 1);
    json_t *a = fakeapi_get_pod(x.f, "team", "a");
    ck_assert_ptr_null(json_object_get(json_object_get(json_object_get(a, "metadata"), "annotations"),
                                       GP_REQUEUE_ANNOTATION));
    json_decref(a);
    free(u1);
    free(u2);
    rq_teardown(&x);
}
END_TEST

START_TEST(patch_body)
{
    char *b = requeue_patch_body("u-\"1", 1234567890123LL);
    ck_assert_str_eq(b, "{\"metadata\":{\"uid\":\"u-\\\"1\",\"annotations\":{\"gpupack.io/requeue\":"
                        "\"1234567890123\"}}}");
    free(b);
}
END_TEST

/* ------------------------------------------------------------- binder --- */

static gp_kube *fake_client(gp_fakeapi *f)
{
    gp_kube_auth auth = {.server = (char *)fakeapi_url(f)};
    gp_err err;
    gp_kube *k = kube_new(&auth, &err);
    ck_assert_ptr_nonnull(k);
    return k;
}

static char *put_unbound(gp_fakeapi *f, const char *name)
{
    fakeapi_put_pod(f, json_pack("{s:{s:s,s:s},s:{s:[{s:s,s:s}]}}", "metadata", "name", name,
                                 "namespace", "team", "spec", "containers", "name", "c", "image", "x"));
    json_t *p = fakeapi_get_pod(f, "team", name);
    char *uid = xstrdup(json_string_value(json_object_get(json_object_get(p, "metadata"), "uid")));
    json_decref(p);
    return uid;
}

static const char *node_of(gp_fakeapi *f, const char *name)
{
    static char node[64];
    json_t *p = fakeapi_get_pod(f, "team", name);
    const char *n = json_string_value(json_object_get(json_object_get(p, "spec"), "nodeName"));
    gp_strlcpy(node, n ? n : "", sizeof node);
    json_decref(p);
    return node;
}

/* The Binding bodies posted since request `from`. */
static int bindings_since(gp_fakeapi *f, size_t from, json_t **last)
{
    int n = 0;
    for (size_t i = from; i < fakeapi_request_count(f); i++) {
        gp_fake_req r;
        ck_assert_int_eq(fakeapi_request(f, i, &r), 0);
        if (strcmp(r.method, "POST") == 0 && strstr(r.url, "/binding")) {
            n++;
            if (last) {
                json_decref(*last);
                *last = json_loads(r.body, 0, NULL);
            }
        }
        fakeapi_req_clear(&r);
    }
    return n;
}

START_TEST(binder_without_rv_where_uid_is_wiped)
{
    gp_fakeapi *f = fakeapi_start();   /* v1.26.0: the Binding's uid is ignored */
    gp_kube *k = fake_client(f);
    char *old = put_unbound(f, "p");
    fakeapi_delete_pod(f, "team", "p");
    char *now = put_unbound(f, "p");   /* re-created: another uid */
    gp_bind_call call = {.ns = "team", .name = "p", .uid = old, .node = "n1"};
    gp_err err;
    /* where the server wipes the uid, a Binding without a resourceVersion is never sent */
    ck_assert_int_eq(binder_bind(k, &call, false, 5, &err), GP_BIND_REFUSED);
    ck_assert_msg(strstr(err.msg, "not sent") && strstr(err.msg, now), "%s", err.msg);
    ck_assert_int_eq(bindings_since(f, 0, NULL), 0);
    ck_assert_str_eq(node_of(f, "p"), "");
    /* what the old code did (uid alone): the re-created pod gets the Binding */
    ck_assert_int_eq(binder_bind(k, &call, true, 5, &err), GP_BIND_BOUND);
    ck_assert_str_eq(node_of(f, "p"), "n1");
    /* the right pod, still unbound: read first, then bound on its resourceVersion */
    char *q = put_unbound(f, "q");
    gp_bind_call cq = {.ns = "team", .name = "q", .uid = q, .node = "n2"};
    size_t from = fakeapi_request_count(f);
    ck_assert_int_eq(binder_bind(k, &cq, false, 5, &err), GP_BIND_BOUND);
    json_t *b = NULL;
    ck_assert_int_eq(bindings_since(f, from, &b), 1);
    ck_assert_int_eq(fakeapi_count(f, "GET", "/namespaces/team/pods/q"), 1);
    json_t *md = json_object_get(b, "metadata");
    ck_assert_str_eq(json_string_value(json_object_get(md, "uid")), q);
    ck_assert_ptr_nonnull(json_string_value(json_object_get(md, "resourceVersion")));
    json_decref(b);
    ck_assert_str_eq(node_of(f, "q"), "n2");
    free(old);
    free(now);
    free(q);
    kube_free(k);
    fakeapi_stop(f);
}
END_TEST

START_TEST(binder_uid_checked_needs_no_read)
{
    gp_fakeapi *f = fakeapi_start();
    fakeapi_set_version(f, "v1.36.3", true);
    gp_kube *k = fake_client(f);
    char *old = put_unbound(f, "p");
    fakeapi_delete_pod(f, "team", "p");
    char *now = put_unbound(f, "p");
    gp_bind_call call = {.ns = "team", .name = "p", .uid = old, .node = "n1"};
    gp_err err;
    size_t from = fakeapi_request_count(f);
    ck_assert_int_eq(binder_bind(k, &call, true, 5, &err), GP_BIND_REFUSED);
    ck_assert_msg(strstr(err.msg, "409") && strstr(err.msg, "UID"), "%s", err.msg);
    json_t *b = NULL;
    ck_assert_int_eq(bindings_since(f, from, &b), 1);   /* sent: the server checks the uid */
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(b, "metadata"), "uid")), old);
    ck_assert_ptr_null(json_object_get(json_object_get(b, "metadata"), "resourceVersion"));
    json_decref(b);
    ck_assert_str_eq(node_of(f, "p"), "");
    /* with a resourceVersion that passes, the uid still decides */
    json_t *p = fakeapi_get_pod(f, "team", "p");
    char rv[64];
    gp_strlcpy(rv, json_string_value(json_object_get(json_object_get(p, "metadata"), "resourceVersion")),
               sizeof rv);
    json_decref(p);
    call.rv = rv;
    ck_assert_int_eq(binder_bind(k, &call, true, 5, &err), GP_BIND_REFUSED);
    ck_assert_str_eq(node_of(f, "p"), "");
    call.uid = now;
    ck_assert_int_eq(binder_bind(k, &call, true, 5, &err), GP_BIND_BOUND);
    ck_assert_str_eq(node_of(f, "p"), "n1");
    free(old);
    free(now);
    kube_free(k);
    fakeapi_stop(f);
}
END_TEST

Suite *suite_requeue(void);
Suite *suite_requeue(void)
{
    Suite *s = suite_create("requeue");
    TCase *tc = tcase_create("pure");
    tcase_add_test(tc, tbucket_rate_and_burst);
    tcase_add_test(tc, obs_reads_the_scheduled_condition);
    tcase_add_test(tc, patch_body);
    suite_add_tcase(s, tc);
    tc = tcase_create("nudges");
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, nudges_errors_and_gpu_pods_once_per_regain);
    tcase_add_test(tc, renudges_a_pod_still_parked_after_an_error);
    tcase_add_test(tc, capacity_growth_nudges_gpu_pods_only);
    tcase_add_test(tc, nothing_where_kube_scheduler_retries_itself);
    tcase_add_test(tc, relist_forgets_the_unlisted);
    tcase_add_test(tc, race_nudges_pods_refused_before_a_release);
    tcase_add_test(tc, unknown_version_waits);
    tcase_add_test(tc, forbidden_and_recreated);
    suite_add_tcase(s, tc);
    tc = tcase_create("binder");
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, binder_without_rv_where_uid_is_wiped);
    tcase_add_test(tc, binder_uid_checked_needs_no_read);
    suite_add_tcase(s, tc);
    return s;
}
