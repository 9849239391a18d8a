/* test_policy_store.c -- policy directory loading, hot reload (explicit and
 * by the polling thread, while other threads keep selecting policies),
 * reload status, and `gpupack policy check`. */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/log.h"
#include "policy/policy_store.h"

#define HDR "apiVersion: gpupack.io/v1alpha1\nkind: PackingPolicy\n"

/* ============================================================ helpers */

typedef struct tmpdir {
    char path[64];
} tmpdir;

static void tmp_make(tmpdir *d)
{
    gp_log_set_level((gp_log_level)(GP_LOG_ERROR + 1));   /* rejected reloads are expected here */
    snprintf(d->path, sizeof d->path, "/tmp/gpupack-policy-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(d->path));
}

static void tmp_write(const tmpdir *d, const char *name, const char *text)
{
    char path[256], tmp[272];
    snprintf(path, sizeof path, "%s/%s", d->path, name);
    snprintf(tmp, sizeof tmp, "%s/.%s.tmp", d->path, name);
    FILE *f = fopen(tmp, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(rename(tmp, path), 0);   /* atomic, as editors and ConfigMaps do */
}

/* In place, truncating first: a reader may see a partial file. */
static void tmp_write_in_place(const tmpdir *d, const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", d->path, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    size_t half = strlen(text) / 2;
    fwrite(text, 1, half, f);
    fflush(f);
    fputs(text + half, f);
    ck_assert_int_eq(fclose(f), 0);
}

static void tmp_remove(const tmpdir *d, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", d->path, name);
    unlink(path);
}

static void tmp_clean(const tmpdir *d)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d->path);
    ck_assert_int_eq(system(cmd), 0);
}

static char *policy_doc(const char *name, int priority, const char *ns)
{
    return xasprintf(HDR "metadata: {name: %s}\nspec:\n  priority: %d\n  match: {namespaces: [%s]}\n"
                         "  gpu: {strategy: spread}\n",
                     name, priority, ns);
}

static bool has_policy(policy_store *ps, const char *name)
{
    gp_policy_set *s = policy_store_current(ps);
    bool found = false;
    for (int i = 0; i < policy_set_count(s); i++)
        found |= !strcmp(policy_set_name_at(s, i), name);
    policy_set_unref(s);
    return found;
}

/* Polls (bounded) until the store serves `name` (or no longer does). */
static bool wait_policy(policy_store *ps, const char *name, bool present)
{
    for (int i = 0; i < 500; i++) {   /* up to 10 s */
        if (has_policy(ps, name) == present)
            return true;
        usleep(20 * 1000);
    }
    return false;
}

/* ============================================================ loading */

START_TEST(open_and_reload)
{
    tmpdir d;
    tmp_make(&d);
    char *a = policy_doc("alpha", 1, "a");
    tmp_write(&d, "a.yaml", a);
    tmp_write(&d, "notes.txt", "not a policy");
    tmp_write(&d, ".hidden.yaml", "garbage: [");
    policy_store *ps = NULL;
    gp_err err;
    ck_assert_msg(policy_store_open(d.path, &ps, &err) == 0, "%s", err.msg);
    ck_assert(has_policy(ps, "alpha") && has_policy(ps, "default"));
    policy_store_status st;
    policy_store_get_status(ps, &st);
    ck_assert_uint_eq(st.loads_ok, 1);
    ck_assert_uint_eq(st.loads_failed, 0);
    ck_assert(st.last_ok);
    ck_assert_int_eq(st.nfiles, 1);
    ck_assert_int_eq(st.npolicies, 2);

    /* unchanged files: nothing to do */
    ck_assert_int_eq(policy_store_reload(ps, &err), 0);
    policy_store_get_status(ps, &st);
    ck_assert_uint_eq(st.loads_ok, 1);

    /* an invalid change is rejected as a whole; the last good set keeps serving */
    char *b = policy_doc("beta", 2, "b");
    tmp_write(&d, "b.yaml", b);
    tmp_write(&d, "c.yaml", HDR "metadata: {name: gamma}\nspec: {priority: high}\n");
    ck_assert_int_eq(policy_store_reload(ps, &err), -1);
    ck_assert_msg(strstr(err.msg, "/c.yaml:4:18: spec.priority: expected an integer") != NULL,
                  "%s", err.msg);
    ck_assert(has_policy(ps, "alpha") && !has_policy(ps, "beta"));
    policy_store_get_status(ps, &st);
    ck_assert_uint_eq(st.loads_failed, 1);
    ck_assert(!st.last_ok);
    ck_assert(strstr(st.last_error, "c.yaml:4:18") != NULL);

    json_t *j = policy_store_inspect(ps);
    ck_assert(json_is_false(json_object_get(j, "lastOk")));
    ck_assert_int_eq(json_array_size(json_object_get(j, "lastErrors")), 1);
    ck_assert_int_eq(json_array_size(json_object_get(j, "active")), 2);
    json_decref(j);

    /* undoing the broken edit: the files match the active set again */
    tmp_remove(&d, "b.yaml");
    tmp_remove(&d, "c.yaml");
    ck_assert_int_eq(policy_store_reload(ps, &err), 0);
    policy_store_get_status(ps, &st);
    ck_assert(st.last_ok && st.last_error[0] == '\0');
    ck_assert_uint_eq(st.loads_ok, 1);
    tmp_write(&d, "b.yaml", b);

    /* fixing it applies everything */
    tmp_remove(&d, "c.yaml");
    ck_assert_msg(policy_store_reload(ps, &err) == 0, "%s", err.msg);
    ck_assert(has_policy(ps, "alpha") && has_policy(ps, "beta"));
    policy_store_get_status(ps, &st);
    ck_assert_uint_eq(st.loads_ok, 2);
    ck_assert(st.last_ok && st.last_error[0] == '\0');
    ck_assert_int_eq(st.nfiles, 2);

    gp_buf m;
    gp_buf_init(&m, 1 << 16);
    policy_store_metrics(ps, &m);
    ck_assert(!gp_buf_failed(&m));
    ck_assert(strstr(m.data, "gpupack_policy_loads_total{result=\"ok\"} 2\n") != NULL);
    ck_assert(strstr(m.data, "gpupack_policy_loads_total{result=\"failed\"} 1\n") != NULL);
    ck_assert(strstr(m.data, "gpupack_policy_last_load_ok 1\n") != NULL);
    ck_assert(strstr(m.data, "gpupack_policy_active{policy=\"beta\",rank=\"0\"} 1\n") != NULL);
    gp_buf_free(&m);

    /* removing a file removes its policy */
    tmp_remove(&d, "a.yaml");
    ck_assert_int_eq(policy_store_reload(ps, &err), 0);
    ck_assert(!has_policy(ps, "alpha") && has_policy(ps, "beta"));

    /* a set taken before a reload stays usable after it and after the store is gone */
    gp_policy_set *held = policy_store_current(ps);
    tmp_remove(&d, "b.yaml");
    ck_assert_int_eq(policy_store_reload(ps, &err), 0);
    ck_assert(!has_policy(ps, "beta"));
    policy_store_free(ps);
    gp_policy_view v;
    ck_assert_int_eq(policy_select(held, "b", NULL, NULL, 0, &v, &err), 0);
    ck_assert_str_eq(v.name, "beta");
    ck_assert_str_eq(v.place.gpu->name, "spread");
    policy_set_unref(held);

    free(a);
    free(b);
    tmp_clean(&d);
}
END_TEST

START_TEST(open_failures)
{
    gp_log_set_level((gp_log_level)(GP_LOG_ERROR + 1));
    policy_store *ps = (policy_store *)1;
    gp_err err;
    ck_assert_int_eq(policy_store_open("/nonexistent/gpupack-policies", &ps, &err), -1);
    ck_assert_ptr_null(ps);
    ck_assert(strstr(err.msg, "/nonexistent/gpupack-policies:1:1: cannot open directory") != NULL);

    tmpdir d;
    tmp_make(&d);
    tmp_write(&d, "x.yaml", HDR "metadata: {name: x}\nspec: {bogus: 1}\n");
    ck_assert_int_eq(policy_store_open(d.path, &ps, &err), -1);
    ck_assert(strstr(err.msg, "x.yaml:4:8: spec: unknown key \"bogus\"") != NULL);
    /* an empty directory is fine: the default alone */
    tmp_remove(&d, "x.yaml");
    ck_assert_int_eq(policy_store_open(d.path, &ps, &err), 0);
    gp_policy_set *only = policy_store_current(ps);
    ck_assert_int_eq(policy_set_count(only), 1);
    policy_set_unref(only);
    policy_store_stop(ps);                        /* never started: harmless */
    policy_store_free(ps);
    policy_store_free(NULL);
    tmp_clean(&d);
}
END_TEST

/* ============================================================ the reload thread */

/* A store over a new directory that holds policy alpha (a.yaml), its poll
 * thread started with period poll_s. */
static policy_store *store_polling_alpha(tmpdir *d, double poll_s, char **alpha)
{
    tmp_make(d);
    *alpha = policy_doc("alpha", 1, "a");
    tmp_write(d, "a.yaml", *alpha);
    policy_store *ps = NULL;
    gp_err err;
    ck_assert_int_eq(policy_store_open(d->path, &ps, &err), 0);
    ck_assert_int_eq(policy_store_start(ps, poll_s, &err), 0);
    return ps;
}

START_TEST(thread_picks_up_changes)
{
    tmpdir d;
    char *a;
    policy_store *ps = store_polling_alpha(&d, 0.05, &a);

    char *b = policy_doc("beta", 2, "b");
    tmp_write(&d, "b.yaml", b);                       /* added */
    ck_assert(wait_policy(ps, "beta", true));
    tmp_write_in_place(&d, "b.yaml", HDR "metadata: {name: beta}\nspec: {prio: 1}\n");  /* broken */
    char *a2 = policy_doc("alpha2", 1, "a");
    tmp_write(&d, "a.yaml", a2);                      /* edited, but b.yaml is still broken */
    policy_store_status st;
    for (int i = 0; i < 500; i++) {
        policy_store_get_status(ps, &st);
        if (st.loads_failed > 0 && strstr(st.last_error, "a.yaml") == NULL)
            break;
        usleep(20 * 1000);
    }
    ck_assert_uint_ge(st.loads_failed, 1);
    ck_assert(has_policy(ps, "alpha") && has_policy(ps, "beta") && !has_policy(ps, "alpha2"));
    tmp_remove(&d, "b.yaml");                         /* removed: now all is valid */
    ck_assert(wait_policy(ps, "alpha2", true));
    ck_assert(!has_policy(ps, "beta") && !has_policy(ps, "alpha"));

    policy_store_stop(ps);
    policy_store_stop(ps);
    policy_store_free(ps);
    free(a);
    free(a2);
    free(b);
    tmp_clean(&d);
}
END_TEST

static policy_store_status status_after_polls(policy_store *ps, unsigned long polls)
{
    policy_store_status st;
    for (int i = 0; i < 1000; i++) {   /* up to 20 s */
        policy_store_get_status(ps, &st);
        if (st.polls >= polls)
            break;
        usleep(20 * 1000);
    }
    return st;
}

/* The poll reads the files only when stat shows a change, and every
 * POLICY_STORE_READ_EVERY polls whatever stat says; an edit in place that
 * keeps the size still applies (its times change). */
START_TEST(poll_reads_only_on_change)
{
    tmpdir d;
    char *a;
    policy_store *ps = store_polling_alpha(&d, 0.005, &a);

    policy_store_status st = status_after_polls(ps, 3 * POLICY_STORE_READ_EVERY);
    ck_assert_uint_ge(st.polls, 3 * POLICY_STORE_READ_EVERY);
    /* the first poll reads, then one in POLICY_STORE_READ_EVERY */
    ck_assert_uint_ge(st.polls_read, st.polls / POLICY_STORE_READ_EVERY);
    ck_assert_uint_le(st.polls_read, st.polls / POLICY_STORE_READ_EVERY + 2);

    char *b = policy_doc("bravo", 1, "a");   /* the same length as alpha's */
    ck_assert_uint_eq(strlen(a), strlen(b));
    tmp_write_in_place(&d, "a.yaml", b);
    ck_assert(wait_policy(ps, "bravo", true));
    ck_assert(!has_policy(ps, "alpha"));
    policy_store_status after;
    policy_store_get_status(ps, &after);
    ck_assert_uint_eq(after.loads_ok, st.loads_ok + 1);

    policy_store_free(ps);
    free(a);
    free(b);
    tmp_clean(&d);
}
END_TEST

/* Stop must not wait for the poll period (the test times out if it does). */
START_TEST(stop_is_prompt)
{
    tmpdir d;
    tmp_make(&d);
    policy_store *ps = NULL;
    gp_err err;
    ck_assert_int_eq(policy_store_open(d.path, &ps, &err), 0);
    ck_assert_int_eq(policy_store_start(ps, 3600, &err), 0);
    usleep(10 * 1000);
    policy_store_free(ps);
    tmp_clean(&d);
}
END_TEST

/* ============================================================ reload under load */

typedef struct race {
    policy_store *ps;
    atomic_bool stop;
    atomic_long selects, failures;
    char bad_name[64];
} race;

static const char *const race_names[] = {"alpha", "beta", "final", "default"};

static void *reader(void *arg)
{
    race *r = arg;
    json_t *labels = json_pack("{s:s}", "tier", "gold");
    while (!atomic_load(&r->stop)) {
        gp_policy_set *s = policy_store_current(r->ps);
        gp_policy_view v;
        gp_err err;
        bool ok = policy_select(s, "ns", labels, NULL, time(NULL), &v, &err) == 0;
        bool known = false;
        for (size_t i = 0; ok && i < GP_ARRAY_LEN(race_names); i++)
            known |= !strcmp(v.name, race_names[i]);
        /* the view points into the set: read it while still referenced */
        ok = ok && known && v.place.gpu && v.place.gpu->name[0];
        if (!ok) {
            atomic_fetch_add(&r->failures, 1);
            gp_strlcpy(r->bad_name, v.name, sizeof r->bad_name);
        }
        policy_set_unref(s);
        atomic_fetch_add(&r->selects, 1);
    }
    json_decref(labels);
    return NULL;
}

START_TEST(reload_while_serving)
{
    tmpdir d;
    tmp_make(&d);
    char *alpha = policy_doc("alpha", 1, "ns"), *beta = policy_doc("beta", 1, "ns");
    char *final = policy_doc("final", 1, "ns"), *conflicting = policy_doc("other", 1, "ns");
    tmp_write(&d, "p.yaml", alpha);
    race r = {0};
    gp_err err;
    ck_assert_int_eq(policy_store_open(d.path, &r.ps, &err), 0);
    ck_assert_int_eq(policy_store_start(r.ps, 0.01, &err), 0);   /* the poller races too */
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, reader, &r), 0);

    for (int i = 0; i < 60; i++) {
        switch (i % 4) {
        case 0:
            tmp_write(&d, "p.yaml", beta);
            break;
        case 1:   /* a second file that conflicts with p.yaml: rejected */
            tmp_write(&d, "q.yaml", conflicting);
            ck_assert_int_eq(policy_store_reload(r.ps, &err), -1);
            tmp_remove(&d, "q.yaml");
            break;
        case 2:
            tmp_write_in_place(&d, "p.yaml", alpha);
            break;
        default:   /* invalid: rejected, the previous set keeps serving */
            tmp_write(&d, "p.yaml", HDR "metadata: {name: broken}\nspec: {priority: x}\n");
            break;
        }
        int rc = policy_store_reload(r.ps, &err);   /* every other change is invalid */
        (void)rc;
        usleep(2000);
    }
    tmp_write(&d, "p.yaml", final);
    ck_assert_msg(policy_store_reload(r.ps, &err) == 0, "%s", err.msg);
    ck_assert(wait_policy(r.ps, "final", true));
    usleep(50 * 1000);   /* readers see the final set for a while */

    atomic_store(&r.stop, true);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    ck_assert_msg(atomic_load(&r.failures) == 0, "%ld failed selects (e.g. %s)",
                  atomic_load(&r.failures), r.bad_name);
    ck_assert_int_gt(atomic_load(&r.selects), 0);
    ck_assert(has_policy(r.ps, "final") && !has_policy(r.ps, "alpha") &&
              !has_policy(r.ps, "beta"));
    policy_store_status st;
    policy_store_get_status(r.ps, &st);
    ck_assert_uint_ge(st.loads_ok, 2);
    ck_assert_uint_ge(st.loads_failed, 1);
    ck_assert(st.last_ok);
    policy_store_free(r.ps);
    free(alpha);
    free(beta);
    free(final);
    free(conflicting);
    tmp_clean(&d);
}
END_TEST

/* ============================================================ policy check */

static int check(const char *a1, const char *a2, const char *a3)
{
    char *argv[] = {(char *)"check", (char *)a1, (char *)a2, (char *)a3, NULL};
    int argc = 1 + (a1 != NULL) + (a2 != NULL) + (a3 != NULL);
    /* Keep the test log readable: the command's output goes to /dev/null. */
    fflush(stdout);
    fflush(stderr);
    int out = dup(1), err = dup(2);
    FILE *null = fopen("/dev/null", "w");
    dup2(fileno(null), 1);
    dup2(fileno(null), 2);
    int rc = policy_check_main(argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(out, 1);
    dup2(err, 2);
    close(out);
    close(err);
    fclose(null);
    return rc;
}

START_TEST(check_command)
{
    ck_assert_int_eq(check("policies", NULL, NULL), 0);
    ck_assert_int_eq(check("policies/notebook.yaml", "policies/inference.yaml", NULL), 0);
    ck_assert_int_eq(check("test/fixtures/policy/bad/unknown_key.yaml", NULL, NULL), 1);
    ck_assert_int_eq(check("test/fixtures/policy/good/conflict_a.yaml", NULL, NULL), 0);
    ck_assert_int_eq(check("test/fixtures/policy/good/conflict_a.yaml",
                           "test/fixtures/policy/good/conflict_b.yaml", NULL), 1);
    ck_assert_int_eq(check("/nonexistent.yaml", NULL, NULL), 1);
    ck_assert_int_eq(check(NULL, NULL, NULL), 2);
    ck_assert_int_eq(check("--help", NULL, NULL), 0);
    char *argv[] = {(char *)"policy", (char *)"check", (char *)"policies", NULL};
    fflush(stdout);
    int out = dup(1);
    FILE *null = fopen("/dev/null", "w");
    dup2(fileno(null), 1);
    int rc = policy_check_main(3, argv);
    fflush(stdout);
    dup2(out, 1);
    close(out);
    fclose(null);
    ck_assert_int_eq(rc, 0);
    char *argv2[] = {(char *)"policy", (char *)"lint", NULL};
    fflush(stderr);
    int errfd = dup(2);
    null = fopen("/dev/null", "w");
    dup2(fileno(null), 2);
    rc = policy_check_main(2, argv2);
    dup2(errfd, 2);
    close(errfd);
    fclose(null);
    ck_assert_int_eq(rc, 2);
}
END_TEST

Suite *suite_policy_store(void);
Suite *suite_policy_store(void)
{
    Suite *s = suite_create("policy_store");
    TCase *tc = tcase_create("store");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, open_and_reload);
    tcase_add_test(tc, open_failures);
    tcase_add_test(tc, thread_picks_up_changes);
    tcase_add_test(tc, poll_reads_only_on_change);
    tcase_add_test(tc, stop_is_prompt);
    tcase_add_test(tc, reload_while_serving);
    tcase_add_test(tc, check_command);
    suite_add_tcase(s, tc);
    return s;
}
