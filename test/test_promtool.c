/* test_promtool.c -- /metrics passes `promtool check metrics` (Prometheus's
 * own linter: names, units, _total on counters, HELP/TYPE), in embedded mode
 * and in live mode against the fake API server; the Grafana dashboard's
 * queries parse and use only served metric names. Skipped with a message when
 * promtool is not installed (Debian package prometheus; .ci/run installs it). */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fakeapi.h"
#include "testutil.h"

static bool have_promtool(void)
{
    if (system("command -v promtool >/dev/null 2>&1") == 0)
        return true;
    printf("SKIP promtool checks: promtool not on PATH (apt-get install prometheus; .ci/run "
           "installs it)\n");
    return false;
}

/* Starts `gpupack serve ARGS --listen 127.0.0.1:0 --log-level info`. */
static void serve(tu_server *s, const char *const *args)
{
    const char *argv[15] = {"--listen", "127.0.0.1:0", "--log-level", "info"};
    int n = 4;
    for (int i = 0; args[i] && n < 13; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    tu_server_start(s, argv);
}

/* Runs a shell command; returns its exit status, output in out. */
static int run(const char *cmd, char *out, size_t len)
{
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    return pclose(p);
}

/* Every panel query of manifests/grafana-dashboard.json: valid PromQL
 * (promtool check rules, one recording rule per query) over metric names
 * that `metrics` has (kube-scheduler's excepted). */
static void check_dashboard(const char *metrics)
{
    json_t *d = tu_load_json("manifests/grafana-dashboard.json");
    char path[] = "/tmp/gpupack-dash-rules-XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "groups:\n- name: dashboard\n  rules:\n");
    size_t i, k;
    json_t *panel, *target;
    int n = 0;
    json_array_foreach(json_object_get(d, "panels"), i, panel) {
        json_array_foreach(json_object_get(panel, "targets"), k, target) {
            const char *expr = json_string_value(json_object_get(target, "expr"));
            ck_assert_ptr_nonnull(expr);
            json_t *e = json_string(expr);
            char *quoted = json_dumps(e, JSON_ENCODE_ANY);   /* a YAML double-quoted string */
            json_decref(e);
            char *lit = xstrdup(quoted);
            char *v = strstr(lit, "$scheduler_job");
            if (v)
                memcpy(v, "kubesched_job_", 14);   /* the template variable, as a value */
            fprintf(f, "  - record: dashboard:q%d\n    expr: %s\n", n++, lit);
            free(lit);
            free(quoted);
            /* metric names the query uses must be served */
            for (const char *p = strstr(expr, "gpupack_"); p; p = strstr(p + 1, "gpupack_")) {
                char name[96];
                size_t l = strspn(p, "abcdefghijklmnopqrstuvwxyz_");
                if (l > 7 && strncmp(p + l - 7, "_bucket", 7) == 0)
                    l -= 7;   /* a histogram's series; its family is declared by base name */
                snprintf(name, sizeof name, "# TYPE %.*s ", (int)l, p);
                ck_assert_msg(strstr(metrics, name), "the dashboard queries %.*s, /metrics lacks it",
                              (int)l, p);
            }
        }
    }
    fclose(f);
    ck_assert_int_gt(n, 10);
    char *cmd = xasprintf("promtool check rules %s 2>&1", path);
    char out[4096];
    ck_assert_msg(run(cmd, out, sizeof out) == 0, "promtool check rules: %s", out);
    free(cmd);
    unlink(path);
    json_decref(d);
}

/* GET /metrics and lint it; fails with promtool's words. */
static char *check_metrics(int port, const char *must_have)
{
    char url[96];
    long st;
    snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", port);
    char *m = tu_http("GET", url, NULL, &st);
    ck_assert_int_eq(st, 200);
    ck_assert_msg(strstr(m, must_have), "/metrics lacks %s", must_have);
    char path[] = "/tmp/gpupack-metrics-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, m, strlen(m)), (ssize_t)strlen(m));
    close(fd);
    char *cmd = xasprintf("promtool check metrics < %s 2>&1", path);
    char out[4096];
    int rc = run(cmd, out, sizeof out);
    ck_assert_msg(rc == 0 && !out[0], "promtool check metrics: %s", out);
    unlink(path);
    free(cmd);
    return m;
}

START_TEST(embedded_metrics_pass_promtool)
{
    if (!have_promtool())
        return;
    const char *args[] = {"--cluster", "examples/cluster.yaml", "--policies", "policies", NULL};
    tu_server s;
    serve(&s, args);
    char url[96];
    long st;
    snprintf(url, sizeof url, "http://127.0.0.1:%d/filter", s.port);
    char *body = tu_read_text("examples/filter-request.json");
    free(tu_http("POST", url, body, &st));
    free(body);
    free(check_metrics(s.port, "gpupack_policy_loads_total"));
    tu_server_stop(&s);
}
END_TEST

START_TEST(live_metrics_pass_promtool)
{
    if (!have_promtool())
        return;
    gp_fakeapi *f = fakeapi_start();
    char kc[64];
    tu_kubeconfig(fakeapi_url(f), kc, sizeof kc);
    const char *args[] = {"--kubeconfig", kc, "--policies", "policies", NULL};
    tu_server s;
    serve(&s, args);
    char *m = check_metrics(s.port, "gpupack_events_total");
    check_dashboard(m);
    free(m);
    tu_server_stop(&s);
    unlink(kc);
    fakeapi_stop(f);
}
END_TEST

Suite *suite_promtool(void);
Suite *suite_promtool(void)
{
    Suite *s = suite_create("promtool");
    TCase *t = tcase_create("promtool");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, embedded_metrics_pass_promtool);
    tcase_add_test(t, live_metrics_pass_promtool);
    suite_add_tcase(s, t);
    return s;
}
