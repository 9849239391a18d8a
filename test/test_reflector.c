/* test_reflector.c -- LIST/WATCH against the fake API server: paging, events, 410, cuts, faults. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fakeapi.h"
#include "kube/kube.h"
#include "livetest.h"
#include "lib/log.h"
#include "kube/reflector.h"

/* What the reflector told us: the current view (name -> resourceVersion) and counters. */
typedef struct rec {
    pthread_mutex_t mu;
    json_t *view, *mark;
    int begins, ends, added, modified, deleted, listed;
    json_t *applied;     /* per name: how many watch events */
    bool kept;           /* the ops have a keep table: objects arrive reduced to it */
    int reduced;         /* objects that arrived without the members keep leaves out */
} rec;

static void rec_begin(void *ud)
{
    rec *r = ud;
    pthread_mutex_lock(&r->mu);
    r->begins++;
    json_object_clear(r->mark);
    pthread_mutex_unlock(&r->mu);
}

static void rec_end(void *ud)
{
    rec *r = ud;
    pthread_mutex_lock(&r->mu);
    r->ends++;
    json_t *keep = json_object();
    const char *k;
    json_t *v;
    json_object_foreach(r->view, k, v) {
        if (json_object_get(r->mark, k))
            json_object_set(keep, k, v);
    }
    json_decref(r->view);
    r->view = keep;
    pthread_mutex_unlock(&r->mu);
}

static void rec_apply(void *ud, gp_watch_type type, bool listed, const json_t *obj)
{
    rec *r = ud;
    const json_t *md = json_object_get(obj, "metadata");
    const char *name = json_string_value(json_object_get(md, "name"));
    const char *rv = json_string_value(json_object_get(md, "resourceVersion"));
    ck_assert_ptr_nonnull(name);
    pthread_mutex_lock(&r->mu);
    if (r->kept && !json_object_get(md, "managedFields") && !json_object_get(md, "namespace") &&
        !json_object_get(obj, "status") && json_object_get(obj, "spec"))
        r->reduced++;
    if (listed) {
        r->listed++;
        json_object_set_new(r->mark, name, json_true());
        ck_assert_ptr_null(json_object_get(md, "managedFields"));   /* trimmed */
    } else {
        json_int_t n = json_integer_value(json_object_get(r->applied, name));
        json_object_set_new(r->applied, name, json_integer(n + 1));
    }
    if (type == GP_WATCH_DELETED) {
        r->deleted++;
        json_object_del(r->view, name);
    } else {
        if (type == GP_WATCH_ADDED && !listed)
            r->added++;
        if (type == GP_WATCH_MODIFIED)
            r->modified++;
        json_object_set_new(r->view, name, json_string(rv ? rv : ""));
    }
    pthread_mutex_unlock(&r->mu);
}

static json_t *trim_keep_name_rv(const json_t *obj)
{
    const json_t *md = json_object_get(obj, "metadata");
    return json_pack("{s:{s:O,s:O}}", "metadata", "name", json_object_get(md, "name"),
                     "resourceVersion", json_object_get(md, "resourceVersion"));
}

static const gp_reflector_ops rec_ops = {rec_begin, rec_end, rec_apply, trim_keep_name_rv, NULL};
static const gp_keep meta_name_rv[] = {{.key = "name"}, {.key = "resourceVersion"}, {0}};
static const gp_keep name_rv_spec[] = {{.key = "metadata", .sub = meta_name_rv}, {.key = "spec"}, {0}};
/* no trim: only the keep table reduces what apply sees */
static const gp_reflector_ops keep_ops = {rec_begin, rec_end, rec_apply, NULL, name_rv_spec};

static json_t *pod(const char *name)
{
    return json_pack("{s:{s:s,s:s,s:[{s:s}]},s:{s:[{s:s,s:{s:{s:s}}}]},s:{s:s}}", "metadata", "name",
                     name, "namespace", "default", "managedFields", "manager", "test", "spec",
                     "containers", "name", "c", "resources", "limits", "gpupack.io/gpu-mem", "1024",
                     "status", "phase", "Pending");
}

typedef struct fixture {
    gp_fakeapi *f;
    gp_kube *k;
    rec r;
    gp_reflector *refl;
} fixture;

static void setup_ops(fixture *x, int page_limit, int watch_timeout, double stall,
                      const gp_reflector_ops *ops);

static void setup(fixture *x, int page_limit, int watch_timeout, double stall)
{
    setup_ops(x, page_limit, watch_timeout, stall, &rec_ops);
}

static void setup_ops(fixture *x, int page_limit, int watch_timeout, double stall,
                      const gp_reflector_ops *ops)
{
    memset(x, 0, sizeof *x);
    gp_log_set_level(GP_LOG_ERROR);
    x->f = fakeapi_start();
    ck_assert_ptr_nonnull(x->f);
    gp_kube_auth a = {.server = (char *)fakeapi_url(x->f)};
    gp_err err;
    x->k = kube_new(&a, &err);
    ck_assert_msg(x->k != NULL, "%s", err.msg);
    pthread_mutex_init(&x->r.mu, NULL);
    x->r.view = json_object();
    x->r.mark = json_object();
    x->r.applied = json_object();
    gp_reflector_config cfg = {.resource = "pods", .path = "/api/v1/pods", .page_limit = page_limit,
                               .watch_timeout_s = watch_timeout, .stall_s = stall,
                               .backoff_min_s = 0.02, .backoff_max_s = 0.2};
    x->r.kept = ops->keep != NULL;
    x->refl = reflector_new(x->k, &cfg, ops, &x->r);
}

static void start(fixture *x)
{
    gp_err err;
    ck_assert(reflector_start(x->refl, &err) == 0);
}

static void teardown(fixture *x)
{
    reflector_free(x->refl);
    kube_free(x->k);
    fakeapi_stop(x->f);
    json_decref(x->r.view);
    json_decref(x->r.mark);
    json_decref(x->r.applied);
    pthread_mutex_destroy(&x->r.mu);
}

/* Polls until the view equals the fake's pods (by name and resourceVersion). */
static bool converged(fixture *x, double timeout_s)
{
    double end = gp_mono_s() + timeout_s;
    do {
        bool same = true;
        json_t *want = json_object();
        /* the fake's truth: a LIST straight from it */
        gp_kube_resp resp;
        gp_err err;
        if (kube_request(x->k, "GET", "/api/v1/pods", NULL, NULL, 5, NULL, &resp, &err) == 0) {
            json_t *l = json_loadb(resp.body.data, resp.body.len, 0, NULL);
            size_t i;
            json_t *it;
            json_array_foreach(json_object_get(l, "items"), i, it) {
                const json_t *md = json_object_get(it, "metadata");
                json_object_set(want, json_string_value(json_object_get(md, "name")),
                                json_object_get(md, "resourceVersion"));
            }
            json_decref(l);
        }
        kube_resp_free(&resp);
        pthread_mutex_lock(&x->r.mu);
        same = json_equal(want, x->r.view);
        pthread_mutex_unlock(&x->r.mu);
        json_decref(want);
        if (same)
            return true;
        usleep(10000);
    } while (gp_mono_s() < end);
    return false;
}

static bool wait_synced(gp_reflector *r, double timeout_s)
{
    double end = gp_mono_s() + timeout_s;
    while (!reflector_synced(r) && gp_mono_s() < end)
        usleep(5000);
    return reflector_synced(r);
}

/* ------------------------------------------------------------------ */

START_TEST(paged_list_then_watch)
{
    fixture x;
    setup(&x, 2, 60, 0);
    char name[32];
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "p%d", i);
        fakeapi_put_pod(x.f, pod(name));
    }
    long list_rv = fakeapi_rv(x.f);
    start(&x);
    ck_assert(wait_synced(x.refl, 5));
    ck_assert(converged(&x, 5));
    ck_assert_int_eq(x.r.begins, 1);
    ck_assert_int_eq(x.r.listed, 5);
    /* three pages: limit=2, then two continues */
    ck_assert_int_eq(fakeapi_count(x.f, "GET", "/api/v1/pods?limit=2"), 3);
    ck_assert_int_eq(fakeapi_count(x.f, "GET", "&continue=fake-continue-"), 2);
    ck_assert_int_ge(fakeapi_wait_watches(x.f, "pods", 1, 5), 1);
    char want[160];
    snprintf(want, sizeof want,
             "/api/v1/pods?watch=1&resourceVersion=%ld&allowWatchBookmarks=true&timeoutSeconds=60", list_rv);
    ck_assert_int_eq(fakeapi_count(x.f, "GET", want), 1);

    fakeapi_put_pod(x.f, pod("new"));
    fakeapi_set_pod_phase(x.f, "default", "p1", "Running");
    fakeapi_delete_pod(x.f, "default", "p2");
    ck_assert(converged(&x, 5));
    ck_assert_int_eq(x.r.added, 1);
    ck_assert_int_eq(x.r.modified, 1);
    ck_assert_int_eq(x.r.deleted, 1);
    char why[256];
    ck_assert(reflector_healthy(x.refl, why, sizeof why));

    /* a bookmark moves the resourceVersion without applying anything, and
     * the next watch starts from it */
    int applied = x.r.added + x.r.modified + x.r.deleted;
    long brv = fakeapi_rv(x.f) + 1;
    char line[256];
    snprintf(line, sizeof line,
             "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":"
             "{\"resourceVersion\":\"%ld\",\"creationTimestamp\":null},\"spec\":{\"containers\":null},"
             "\"status\":{}}}\n", brv);
    fakeapi_inject_raw(x.f, true, line);
    gp_reflector_stats st;
    double end = gp_mono_s() + 5;
    do {
        reflector_stats(x.refl, &st);
        if (st.bookmarks == 0)
            usleep(2000);
    } while (st.bookmarks == 0 && gp_mono_s() < end);
    ck_assert_uint_eq(st.bookmarks, 1);
    ck_assert_int_eq(atol(st.rv), brv);
    ck_assert_int_eq(x.r.added + x.r.modified + x.r.deleted, applied);
    fakeapi_end_watches(x.f);
    snprintf(want, sizeof want, "watch=1&resourceVersion=%ld&", brv);
    ck_assert_int_eq(fakeapi_wait_count(x.f, "GET", want, 1, 5), 1);
    teardown(&x);
}
END_TEST

/* With a keep table, LIST items and watch events reach apply reduced to it
 * (no managedFields, namespace or status here), and the view converges as
 * without one; a page whose text the scanner declines (an escaped key) is
 * applied whole. */
START_TEST(keep_table_reduces_lists_and_events)
{
    fixture x;
    setup_ops(&x, 2, 60, 0, &keep_ops);
    char name[32];
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "p%d", i);
        fakeapi_put_pod(x.f, pod(name));
    }
    start(&x);
    ck_assert(wait_synced(x.refl, 5));
    ck_assert(converged(&x, 5));
    ck_assert_int_eq(x.r.listed, 5);
    ck_assert_int_ge(fakeapi_wait_watches(x.f, "pods", 1, 5), 1);
    fakeapi_put_pod(x.f, pod("new"));
    fakeapi_set_pod_phase(x.f, "default", "p1", "Running");
    fakeapi_delete_pod(x.f, "default", "p2");
    ck_assert(converged(&x, 5));
    ck_assert_int_eq(x.r.added + x.r.modified + x.r.deleted, 3);
    pthread_mutex_lock(&x.r.mu);
    ck_assert_int_eq(x.r.reduced, 5 + 3);   /* every object, listed or watched */
    pthread_mutex_unlock(&x.r.mu);
    /* a pod the scanner declines (an escaped key): applied whole, by the same rules */
    json_t *odd = pod("odd");
    json_object_set_new(json_object_get(odd, "metadata"), "l\\u0061bels", json_object());
    fakeapi_put_pod(x.f, odd);
    ck_assert(converged(&x, 5));
    reflector_relist(x.refl);
    ck_assert(converged(&x, 5));
    teardown(&x);
}
END_TEST

START_TEST(expired_rv_relists)
{
    fixture x;
    setup(&x, 100, 60, 0);
    fakeapi_put_pod(x.f, pod("a"));
    fakeapi_put_pod(x.f, pod("b"));
    start(&x);
    ck_assert(wait_synced(x.refl, 5));
    ck_assert_int_ge(fakeapi_wait_watches(x.f, "pods", 1, 5), 1);
    /* an apiserver restart: connections drop, the cache window moves on,
     * and the cluster changes meanwhile */
    ck_assert(reflector_current(x.refl, NULL, 0));
    fakeapi_fail(x.f, "GET", "watch=1", 503, 2);
    fakeapi_delay(x.f, "GET", "/api/v1/pods?limit=100", 300, 1);   /* the relist's LIST */
    fakeapi_cut_watches(x.f, false);
    fakeapi_delete_pod(x.f, "default", "a");
    fakeapi_put_pod(x.f, pod("c"));
    fakeapi_expire(x.f);
    /* from the 410 until the relist is applied the view is not current */
    double end = gp_mono_s() + 5;
    while (fakeapi_delaying(x.f) < 1 && gp_mono_s() < end)
        usleep(2000);
    ck_assert_int_eq(fakeapi_delaying(x.f), 1);
    char why[200] = "";
    ck_assert(!reflector_current(x.refl, why, sizeof why));
    ck_assert_str_eq(why, "pods: listing again (the watch lost events), not applied yet");
    ck_assert(converged(&x, 5));
    ck_assert(reflector_current(x.refl, NULL, 0));
    ck_assert_int_ge(x.r.begins, 2);               /* relisted */
    ck_assert_int_eq(x.r.begins, x.r.ends);
    gp_reflector_stats st;
    reflector_stats(x.refl, &st);
    ck_assert_uint_ge(st.expired, 1);
    ck_assert_uint_ge(st.watch_failures, 2);
    /* the ERROR event came on an HTTP 200 watch; the relist and the new watch followed */
    ck_assert_int_ge(fakeapi_count(x.f, "GET", "/api/v1/pods?limit=100"), 2);
    teardown(&x);
}
END_TEST

START_TEST(http_410_on_watch_relists)
{
    fixture x;
    setup(&x, 100, 60, 0);
    fakeapi_put_pod(x.f, pod("a"));
    start(&x);
    ck_assert(wait_synced(x.refl, 5));
    ck_assert_int_ge(fakeapi_wait_watches(x.f, "pods", 1, 5), 1);
    fakeapi_fail(x.f, "GET", "watch=1", 410, 1);
    fakeapi_end_watches(x.f);
    ck_assert_int_ge(fakeapi_wait_count(x.f, "GET", "/api/v1/pods?limit=100", 2, 5), 2);
    fakeapi_put_pod(x.f, pod("z"));
    ck_assert(converged(&x, 5));
    teardown(&x);
}
END_TEST

START_TEST(cut_mid_event_redelivers_once)
{
    fixture x;
    setup(&x, 100, 60, 0);
    fakeapi_put_pod(x.f, pod("a"));
    start(&x);
    ck_assert(wait_synced(x.refl, 5));
    ck_assert_int_ge(fakeapi_wait_watches(x.f, "pods", 1, 5), 1);
    /* the next event goes out half, then the connection drops */
    fakeapi_cut_watches(x.f, true);
    fakeapi_put_pod(x.f, pod("half"));
    ck_assert(converged(&x, 5));
    pthread_mutex_lock(&x.r.mu);
    ck_assert_int_eq(json_integer_value(json_object_get(x.r.applied, "half")), 1);
    ck_assert_int_eq(x.r.begins, 1);                /* no relist needed */
    pthread_mutex_unlock(&x.r.mu);
    gp_reflector_stats st;
    reflector_stats(x.refl, &st);
    ck_assert_uint_ge(st.watch_failures, 1);
    ck_assert_uint_eq(st.bad_events, 0);
    teardown(&x);
}
END_TEST

START_TEST(server_errors_mark_stale_then_recover)
{
    fixture x;
    setup(&x, 100, 60, 0);
    fakeapi_put_pod(x.f, pod("a"));
    /* the first LIST fails twice: not synced, not healthy */
    fakeapi_fail(x.f, "GET", "limit=100", 500, 2);
    fakeapi_delay(x.f, "GET", "limit=100", 300, 1);
    start(&x);
    char why[256] = "";
    double end = gp_mono_s() + 5;
    while (reflector_healthy(x.refl, why, sizeof why) && gp_mono_s() < end)
        usleep(2000);
    ck_assert(!reflector_synced(x.refl));
    ck_assert(wait_synced(x.refl, 5));
    double synced_at = gp_mono_s();
    ck_assert(converged(&x, 5));
    ck_assert_int_eq(fakeapi_count(x.f, "GET", "limit=100"), 3);
    ck_assert_int_ge(fakeapi_wait_watches(x.f, "pods", 1, 5), 1);
    /* the watch now fails with 500s: stale with a reason, then back */
    fakeapi_fail(x.f, "GET", "watch=1", 500, 3);
    fakeapi_delay(x.f, "GET", "watch=1", 300, 1);
    fakeapi_cut_watches(x.f, false);
    end = gp_mono_s() + 5;
    while (reflector_healthy(x.refl, why, sizeof why) && gp_mono_s() < end)
        usleep(2000);
    ck_assert_msg(strstr(why, "pods:") == why, "%s", why);
    fakeapi_put_pod(x.f, pod("b"));
    ck_assert(converged(&x, 5));
    end = gp_mono_s() + 5;
    while (!reflector_healthy(x.refl, why, sizeof why) && gp_mono_s() < end)
        usleep(2000);
    ck_assert(reflector_healthy(x.refl, NULL, 0));
    ck_assert_int_eq(x.r.begins, 1);     /* watch errors alone never relist */
    ck_assert(reflector_current(x.refl, NULL, 0));   /* ... and the view stays current */
    /* the healthy streak began after the failure, not at the LIST */
    double up = reflector_healthy_for(x.refl);
    ck_assert_msg(up >= 0 && up < gp_mono_s() - synced_at, "healthy for %.3f s", up);
    teardown(&x);
}
END_TEST

START_TEST(list_failing_midway_changes_nothing)
{
    fixture x;
    setup(&x, 1, 60, 0);
    fakeapi_put_pod(x.f, pod("a"));
    fakeapi_put_pod(x.f, pod("b"));
    fakeapi_put_pod(x.f, pod("c"));
    fakeapi_fail(x.f, "GET", "continue=fake-continue-1-2", 500, 1);
    start(&x);
    ck_assert(wait_synced(x.refl, 5));
    ck_assert(converged(&x, 5));
    ck_assert_int_eq(x.r.begins, 1);     /* only the complete LIST was applied */
    ck_assert_int_eq(x.r.listed, 3);
    teardown(&x);
}
END_TEST

START_TEST(expired_continue_token_restarts_list)
{
    fixture x;
    setup(&x, 1, 60, 0);
    fakeapi_put_pod(x.f, pod("a"));
    fakeapi_put_pod(x.f, pod("b"));
    /* the second page is slow; meanwhile every snapshot expires */
    fakeapi_delay(x.f, "GET", "continue=fake-continue-1-1", 200, 1);
    start(&x);
    ck_assert_int_ge(fakeapi_wait_count(x.f, "GET", "limit=1", 1, 5), 1);
    fakeapi_expire(x.f);
    ck_assert(wait_synced(x.refl, 5));
    ck_assert(converged(&x, 5));
    ck_assert_int_eq(x.r.begins, 1);
    teardown(&x);
}
END_TEST

/* A malformed line may be an event lost in transit: the watch restarts from
 * the last good resourceVersion, and relists when the same spot fails again. */
START_TEST(bad_lines_restart_the_watch)
{
    fixture x;
    setup(&x, 100, 60, 0);
    start(&x);
    ck_assert(wait_synced(x.refl, 5));
    ck_assert_int_ge(fakeapi_wait_watches(x.f, "pods", 1, 5), 1);
    fakeapi_inject_raw(x.f, true, "{\"type\":\"ADDED\",\"object\":{\"metadata\":\n");
    fakeapi_inject_raw(x.f, true, "not json at all\n");
    fakeapi_inject_raw(x.f, true, "{\"type\":\"SURPRISE\",\"object\":{}}\n");
    fakeapi_put_pod(x.f, pod("after"));
    ck_assert(converged(&x, 5));
    gp_reflector_stats st;
    reflector_stats(x.refl, &st);
    ck_assert_uint_ge(st.bad_events, 1);
    ck_assert_uint_ge(st.watches, 2);
    ck_assert_int_ge(x.r.begins, 2);   /* replayed at the same spot: relisted */
    teardown(&x);
}
END_TEST

/* A DELETED that arrives malformed must not leave the pod behind. */
START_TEST(lost_deleted_leaves_no_ghost)
{
    fixture x;
    setup(&x, 100, 60, 0);
    fakeapi_put_pod(x.f, pod("ghost"));
    fakeapi_put_pod(x.f, pod("keep"));
    start(&x);
    ck_assert(wait_synced(x.refl, 5));
    ck_assert_int_ge(fakeapi_wait_watches(x.f, "pods", 1, 5), 1);
    fakeapi_corrupt_next(x.f, true);
    ck_assert_int_eq(fakeapi_delete_pod(x.f, "default", "ghost"), 0);
    fakeapi_put_pod(x.f, pod("after"));
    ck_assert(converged(&x, 5));
    pthread_mutex_lock(&x.r.mu);
    ck_assert_ptr_null(json_object_get(x.r.view, "ghost"));
    pthread_mutex_unlock(&x.r.mu);
    gp_reflector_stats st;
    reflector_stats(x.refl, &st);
    ck_assert_uint_ge(st.bad_events, 1);
    teardown(&x);
}
END_TEST

/* Replaces the fixture's reflector with one built from cfg. */
static void reconfigure(fixture *x, const gp_reflector_config *cfg)
{
    reflector_free(x->refl);
    x->refl = reflector_new(x->k, cfg, &rec_ops, &x->r);
}

/* A watch that fails at once after every LIST must not reset the backoff:
 * LISTs slow down instead of storming the API server. */
START_TEST(failing_watch_does_not_storm_lists)
{
    fixture x;
    setup(&x, 100, 60, 0);
    gp_reflector_config cfg = {.resource = "pods", .path = "/api/v1/pods", .page_limit = 100,
                               .backoff_min_s = 0.02, .backoff_max_s = 5};
    reconfigure(&x, &cfg);
    fakeapi_put_pod(x.f, pod("a"));
    fakeapi_fail(x.f, "GET", "watch=1", 410, 100000);
    start(&x);
    ck_assert(wait_synced(x.refl, 5));
    int before = fakeapi_count(x.f, "GET", "/api/v1/pods?limit=100");
    usleep(2000000);
    int lists = fakeapi_count(x.f, "GET", "/api/v1/pods?limit=100") - before;
    /* 0.02 s doubling: at most about 7 waits fit in 2 s; a reset per LIST allows ~100 */
    ck_assert_msg(lists <= 9, "%d LISTs in 2 s", lists);
    teardown(&x);
}
END_TEST

/* A pod reflector whose backoff (0.05 s doubling to 3.2 s, reset after
 * reset_s) has climbed to its cap through six failed watches in a row;
 * returns the watch requests made so far (the seventh try succeeded). */
static int climb_backoff(fixture *x, double reset_s)
{
    setup(x, 100, 60, 0);
    gp_reflector_config cfg = {.resource = "pods", .path = "/api/v1/pods", .page_limit = 100,
                               .backoff_min_s = 0.05, .backoff_max_s = 3.2,
                               .backoff_reset_s = reset_s};
    reconfigure(x, &cfg);
    start(x);
    ck_assert(wait_synced(x->refl, 5));
    ck_assert_int_eq(fakeapi_wait_watches(x->f, "pods", 1, 5), 1);
    /* the next wait would be 3.2 s (2.56 s at least, jittered) */
    int n = fakeapi_count(x->f, "GET", "watch=1");
    fakeapi_fail(x->f, "GET", "watch=1", 500, 6);
    fakeapi_cut_watches(x->f, false);
    n += 7;
    ck_assert_int_eq(fakeapi_wait_count(x->f, "GET", "watch=1", n, 10), n);
    return n;
}

/* The backoff resets after a calm spread over many watches, each shorter than
 * the reset time (live mode's server ends each watch after 60 s; the reset
 * rule once asked one watch to hold 120 s, so the backoff never came down and
 * every outage after a few cost 30 s of blindness). */
START_TEST(backoff_resets_after_calm_across_watches)
{
    fixture x;
    int n = climb_backoff(&x, 0.6);
    /* four healthy watches of ~0.25 s each, one event apiece */
    for (int i = 0; i < 4; i++) {
        char name[32];
        snprintf(name, sizeof name, "calm-%d", i);
        ck_assert_int_eq(fakeapi_wait_watches(x.f, "pods", 1, 5), 1);
        fakeapi_put_pod(x.f, pod(name));
        usleep(250000);
        fakeapi_end_watches(x.f);
        n++;
        ck_assert_int_eq(fakeapi_wait_count(x.f, "GET", "watch=1", n, 5), n);
    }
    /* a new outage after ~1 s of calm: retried after the minimum wait */
    ck_assert_int_eq(fakeapi_wait_watches(x.f, "pods", 1, 5), 1);
    fakeapi_cut_watches(x.f, false);
    n++;
    ck_assert_msg(fakeapi_wait_count(x.f, "GET", "watch=1", n, 1.5) == n,
                  "no re-watch within 1.5 s of a cut after a calm: the backoff did not reset");
    teardown(&x);
}
END_TEST

/* The first watch after an outage, cut by the next one before it ended by
 * itself, counts as calm: API servers restarted one after another are met
 * again soon, however short each one's watch. */
START_TEST(backoff_decays_over_the_watch_that_failed)
{
    fixture x;
    int n = climb_backoff(&x, 1.2);
    ck_assert_int_eq(fakeapi_wait_watches(x.f, "pods", 1, 5), 1);
    /* that watch streams ~0.9 s (four sixths of the reset time: 3.2 s -> 0.2 s), then is cut */
    fakeapi_put_pod(x.f, pod("calm"));
    usleep(900000);
    fakeapi_cut_watches(x.f, false);
    n++;
    ck_assert_msg(fakeapi_wait_count(x.f, "GET", "watch=1", n, 1.5) == n,
                  "no re-watch within 1.5 s: the watch's own calm did not count");
    teardown(&x);
}
END_TEST

/* The wait after a calm: halved for every sixth of the reset time without a
 * failure, the minimum after all of it, never below the minimum. */
START_TEST(backoff_decays_with_calm)
{
    gp_reflector_config cfg = {.backoff_min_s = 0.2, .backoff_reset_s = 60};
    static const struct {
        double backoff, calm, want;
    } cases[] = {
        {12.8, 0, 12.8},   /* failed again at once: the wait stands (it doubles next) */
        {12.8, 9.9, 12.8}, {12.8, 10, 6.4}, {12.8, 30, 1.6},   {12.8, 59.9, 0.4},
        {30, 60, 0.2},     {30, 600, 0.2},  {0.4, 45, 0.2},   {0.2, 20, 0.2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double got = reflector_backoff_after_calm(&cfg, cases[i].backoff, cases[i].calm);
        ck_assert_msg(got > cases[i].want - 1e-9 && got < cases[i].want + 1e-9,
                      "backoff %.1f after %.1f s of calm: %.3f, want %.3f", cases[i].backoff,
                      cases[i].calm, got, cases[i].want);
    }
}
END_TEST

/* Pages too large for the response cap are asked again, smaller. */
START_TEST(too_large_pages_shrink)
{
    fixture x;
    setup(&x, 100, 60, 0);
    gp_reflector_config cfg = {.resource = "pods", .path = "/api/v1/pods", .page_limit = 100,
                               .page_bytes_max = 64 * 1024, .backoff_min_s = 0.02,
                               .backoff_max_s = 0.2};
    reconfigure(&x, &cfg);
    char *big = xmalloc(8001);
    memset(big, 'a', 8000);
    big[8000] = '\0';
    for (int i = 0; i < 40; i++) {
        char name[16];
        snprintf(name, sizeof name, "big-%02d", i);
        json_t *p = pod(name);
        json_object_set_new(json_object_get(p, "metadata"), "annotations",
                            json_pack("{s:s}", "note", big));
        fakeapi_put_pod(x.f, p);
    }
    free(big);
    start(&x);
    ck_assert(wait_synced(x.refl, 10));
    ck_assert(converged(&x, 5));
    ck_assert_int_ge(fakeapi_count(x.f, "GET", "limit=6"), 1);   /* 100 -> 50 -> 25 -> 12 -> 6 */
    gp_reflector_stats st;
    reflector_stats(x.refl, &st);
    ck_assert_uint_ge(st.page_shrinks, 4);
    teardown(&x);
}
END_TEST

START_TEST(oversized_line_reconnects)
{
    fixture x;
    memset(&x, 0, sizeof x);
    setup(&x, 100, 60, 0);
    reflector_free(x.refl);
    gp_reflector_config cfg = {.resource = "pods", .path = "/api/v1/pods", .line_max = 512,
                               .backoff_min_s = 0.02, .backoff_max_s = 0.1};
    x.refl = reflector_new(x.k, &cfg, &rec_ops, &x.r);
    start(&x);
    ck_assert(wait_synced(x.refl, 5));
    ck_assert_int_ge(fakeapi_wait_watches(x.f, "pods", 1, 5), 1);
    char *big = xmalloc(2048);
    memset(big, 'x', 2046);
    big[2046] = '\n';
    big[2047] = '\0';
    fakeapi_inject_raw(x.f, true, big);
    free(big);
    gp_reflector_stats st;
    double end = gp_mono_s() + 5;
    do {
        reflector_stats(x.refl, &st);
        usleep(5000);
    } while (st.watch_failures == 0 && gp_mono_s() < end);
    ck_assert_uint_ge(st.watch_failures, 1);
    /* the limit held: a relist, and things go on */
    fakeapi_put_pod(x.f, pod("fine"));
    ck_assert(converged(&x, 5));
    teardown(&x);
}
END_TEST

START_TEST(stuck_stream_detected)
{
    fixture x;
    setup(&x, 100, 60, 1.0);   /* a watch silent for 1 s is stuck */
    start(&x);
    ck_assert(wait_synced(x.refl, 5));
    ck_assert_int_ge(fakeapi_wait_count(x.f, "GET", "watch=1", 2, 8), 2);
    teardown(&x);
}
END_TEST

START_TEST(timeout_rewatches_from_last_rv)
{
    fixture x;
    setup(&x, 100, 1, 0);       /* timeoutSeconds=1: the fake ends each watch after 1 s */
    fakeapi_put_pod(x.f, pod("a"));
    start(&x);
    ck_assert(wait_synced(x.refl, 5));
    fakeapi_put_pod(x.f, pod("b"));
    ck_assert(converged(&x, 5));
    long rv = fakeapi_rv(x.f);
    char want[96];
    snprintf(want, sizeof want, "watch=1&resourceVersion=%ld&", rv);
    ck_assert_int_ge(fakeapi_wait_count(x.f, "GET", want, 1, 5), 1);
    ck_assert_int_eq(x.r.begins, 1);
    char why[128];
    ck_assert(reflector_healthy(x.refl, why, sizeof why));
    teardown(&x);
}
END_TEST

START_TEST(stop_is_prompt_and_token_rotates)
{
    char *dir = livetest_tmpdir();
    char *tokf = xasprintf("%s/token", dir);
    gp_log_set_level(GP_LOG_ERROR);
    ck_assert(livetest_write(tokf, "one\n", 4) == 0);
    gp_fakeapi *f = fakeapi_start();
    fakeapi_set_token(f, "one");
    gp_kube_auth a = {.server = (char *)fakeapi_url(f), .token_file = tokf};
    gp_err err;
    gp_kube *k = kube_new(&a, &err);
    ck_assert_msg(k != NULL, "%s", err.msg);
    gp_kube_resp resp;
    ck_assert(kube_request(k, "GET", "/api/v1/nodes", NULL, NULL, 5, NULL, &resp, &err) == 0);
    ck_assert_int_eq(resp.status, 200);
    kube_resp_free(&resp);
    /* rotation: a new file content (and size) is picked up on the next request */
    fakeapi_set_token(f, "second");
    ck_assert(livetest_write(tokf, "second\n", 7) == 0);
    ck_assert(kube_request(k, "GET", "/api/v1/nodes", NULL, NULL, 5, NULL, &resp, &err) == 0);
    ck_assert_int_eq(resp.status, 200);
    kube_resp_free(&resp);
    gp_fake_req rq;
    ck_assert(fakeapi_request(f, 1, &rq) == 0);
    ck_assert_str_eq(rq.auth, "Bearer second");
    fakeapi_req_clear(&rq);
    /* a watch blocked waiting for events stops at once when cancelled */
    rec r = {.view = json_object(), .mark = json_object(), .applied = json_object()};
    pthread_mutex_init(&r.mu, NULL);
    gp_reflector_config cfg = {.resource = "nodes", .path = "/api/v1/nodes"};
    gp_reflector *refl = reflector_new(k, &cfg, &rec_ops, &r);
    ck_assert(reflector_start(refl, &err) == 0);
    double end = gp_mono_s() + 5;
    while (fakeapi_open_watches(f, "nodes") < 1 && gp_mono_s() < end)
        usleep(5000);
    ck_assert_int_eq(fakeapi_open_watches(f, "nodes"), 1);
    reflector_free(refl);
    kube_free(k);
    fakeapi_stop(f);
    json_decref(r.view);
    json_decref(r.mark);
    json_decref(r.applied);
    pthread_mutex_destroy(&r.mu);
    free(tokf);
    livetest_rmtree(dir);
    free(dir);
}
END_TEST

Suite *suite_reflector(void);
Suite *suite_reflector(void)
{
    Suite *s = suite_create("reflector");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, paged_list_then_watch);
    tcase_add_test(tc, keep_table_reduces_lists_and_events);
    tcase_add_test(tc, expired_rv_relists);
    tcase_add_test(tc, http_410_on_watch_relists);
    tcase_add_test(tc, cut_mid_event_redelivers_once);
    tcase_add_test(tc, server_errors_mark_stale_then_recover);
    tcase_add_test(tc, list_failing_midway_changes_nothing);
    tcase_add_test(tc, expired_continue_token_restarts_list);
    tcase_add_test(tc, bad_lines_restart_the_watch);
    tcase_add_test(tc, lost_deleted_leaves_no_ghost);
    tcase_add_test(tc, failing_watch_does_not_storm_lists);
    tcase_add_test(tc, backoff_resets_after_calm_across_watches);
    tcase_add_test(tc, backoff_decays_with_calm);
    tcase_add_test(tc, backoff_decays_over_the_watch_that_failed);
    tcase_add_test(tc, too_large_pages_shrink);
    tcase_add_test(tc, oversized_line_reconnects);
    tcase_add_test(tc, stuck_stream_detected);
    tcase_add_test(tc, timeout_rewatches_from_last_rv);
    tcase_add_test(tc, stop_is_prompt_and_token_rotates);
    suite_add_tcase(s, tc);
    return s;
}
