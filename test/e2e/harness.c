/* harness.c -- processes of an end-to-end test: registry, control planes, gpupack children. */
#include "harness.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kube/kubeconfig.h"
#include "schedrw.h"
#include "lib/yamljson.h"
#include "lib/util.h"

/* ------------------------------------------------------------ logging --- */

static double t0_mono;

void e2e_log(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "  [e2e %6.1fs] %s\n", gp_mono_s() - t0_mono, line);
}

void e2e_sleep(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

/* ----------------------------------------------------------- registry --- */
/* Lines "gp PID LOG" and "cp DIR" in RUN/registry. Written by tests (forked
 * children), read by the runner after every test: whatever is still alive
 * then was left behind by a failure, abort or timeout. */

static void registry_add(const char *kind, const char *what)
{
    char *path = xasprintf("%s/registry", e2e_env.run_dir);
    FILE *f = fopen(path, "a");
    if (f) {
        fprintf(f, "%s %s\n", kind, what);
        fclose(f);
    }
    free(path);
}

/* Runs argv (envp additions "K=V" or NULL), output appended to out (or
 * inherited when NULL). Returns the exit status, or -1. Kills it after
 * timeout_s (0 = none). */
static int run(const char *const *argv, const char *const *env_add, const char *out,
               double timeout_s)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (out) {
            int fd = open(out, O_WRONLY | O_CREAT | O_APPEND, 0644);
            if (fd >= 0) {
                dup2(fd, 1);
                dup2(fd, 2);
                close(fd);
            }
        }
        for (size_t i = 0; env_add && env_add[i]; i++)
            putenv((char *)env_add[i]);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    double end = gp_mono_s() + timeout_s;
    for (;;) {
        int st;
        pid_t r = waitpid(pid, &st, timeout_s > 0 ? WNOHANG : 0);
        if (r == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        if (r < 0 && errno != EINTR)
            return -1;
        if (timeout_s > 0 && gp_mono_s() > end) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            return -1;
        }
        if (r == 0)
            e2e_sleep(0.05);
    }
}

int e2e_run(const char *const *argv, const char *const *env_add, const char *out,
            double timeout_s)
{
    return run(argv, env_add, out, timeout_s);
}

static void print_file_tail(const char *path, int lines, const char *title)
{
    char *cmd = xasprintf("tail -n %d '%s' 2>/dev/null", lines, path);
    fprintf(stderr, "---- %s (last %d lines of %s) ----\n", title, lines, path);
    fflush(stderr);
    if (system(cmd) != 0) {
        /* nothing to show */
    }
    fprintf(stderr, "---- end ----\n");
    free(cmd);
}

static bool pid_is_gpupack(pid_t pid)
{
    char path[64], cmd[4096];
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(cmd, 1, sizeof cmd - 1, f);
    fclose(f);
    cmd[n] = '\0';
    /* argv[0] is the binary the harness started; argv[1] "serve" */
    return n > 0 && strcmp(cmd, e2e_env.gpupack_bin) == 0 && strcmp(cmd + strlen(cmd) + 1, "serve") == 0;
}

static void kube_down(const char *dir)
{
    char *down = xasprintf("%s/kube-down", e2e_env.kit);
    const char *argv[] = {down, dir, NULL};
    char *out = xasprintf("%s/kube-down.log", e2e_env.run_dir);
    if (run(argv, NULL, out, 120) != 0)
        fprintf(stderr, "e2e: kube-down %s failed (see %s)\n", dir, out);
    free(out);
    free(down);
}

void e2e_cleanup_all(void)
{
    char *path = xasprintf("%s/registry", e2e_env.run_dir);
    FILE *f = fopen(path, "r");
    char line[1200];
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        int pid;
        char log[1100];
        if (sscanf(line, "gp %d %1099s", &pid, log) == 2) {
            if (pid > 0 && pid_is_gpupack(pid)) {
                print_file_tail(log, 40, "gpupack left running by the test");
                kill(pid, SIGKILL);
            }
        } else if (strncmp(line, "cp ", 3) == 0) {
            struct stat st;
            char *env = xasprintf("%s/env", line + 3);
            if (stat(env, &st) == 0) {
                char *slog = xasprintf("%s/logs/kube-scheduler.log", line + 3);
                print_file_tail(slog, 15, "kube-scheduler of a control plane left up by the test");
                free(slog);
                /* keep the control plane's logs next to gpupack's for the post-mortem */
                char *keep = xasprintf("cp -r '%s/logs' '%s.logs' 2>/dev/null", line + 3, line + 3);
                if (system(keep) != 0)
                    fprintf(stderr, "e2e: could not keep the logs of %s\n", line + 3);
                free(keep);
                kube_down(line + 3);
            }
            free(env);
        }
    }
    if (f)
        fclose(f);
    f = fopen(path, "w");   /* handled: start the next test afresh */
    if (f)
        fclose(f);
    free(path);
}

static void tc_setup(void)
{
    t0_mono = gp_mono_s();
}

static void tc_teardown(void)
{
    e2e_cleanup_all();
}

TCase *e2e_tcase(Suite *s, const char *name, const TTest *test, double timeout_s)
{
    TCase *tc = tcase_create(name);
    tcase_add_unchecked_fixture(tc, tc_setup, tc_teardown);
    tcase_set_timeout(tc, timeout_s);
    tcase_add_test(tc, test);
    suite_add_tcase(s, tc);
    return tc;
}

/* ------------------------------------------------------------ kubectl --- */

static bool runs(const char *kubectl)
{
    const char *argv[] = {kubectl, "version", "--client", NULL};
    return run(argv, NULL, "/dev/null", 30) == 0;
}

const char *e2e_kubectl(void)
{
    static char path[1200];
    if (path[0])
        return path;
    const char *env = getenv("GPUPACK_KUBECTL");
    const char *assets = getenv("KUBEBUILDER_ASSETS");
    char *unpacked = xasprintf("%s/kubectl", e2e_env.run_dir);
    char *xz = xasprintf("%s/bin/v1.36.3/kubectl.xz", e2e_env.kit);
    if (env && *env) {
        gp_strlcpy(path, env, sizeof path);
    } else if (assets && *assets) {
        snprintf(path, sizeof path, "%s/kubectl", assets);
    } else if (access(unpacked, X_OK) == 0) {
        gp_strlcpy(path, unpacked, sizeof path);
    } else if (access(xz, R_OK) == 0) {
        char *cmd = xasprintf("xz -dc '%s' > '%s.tmp' && chmod 755 '%s.tmp' && mv '%s.tmp' '%s'",
                              xz, unpacked, unpacked, unpacked, unpacked);
        const char *argv[] = {"sh", "-c", cmd, NULL};
        if (run(argv, NULL, NULL, 120) == 0)
            gp_strlcpy(path, unpacked, sizeof path);
        free(cmd);
    }
    if (!path[0] || !runs(path))
        gp_strlcpy(path, "kubectl", sizeof path);
    free(xz);
    free(unpacked);
    if (!runs(path)) {
        path[0] = '\0';
        ck_abort_msg("no kubectl: set GPUPACK_KUBECTL, or put one in KUBEBUILDER_ASSETS");
    }
    return path;
}

int e2e_kubectl_run(e2e_cp *cp, const char *const *env, char **out, const char *const *args)
{
    static int seq;
    const char *argv[32] = {e2e_kubectl()};
    int n = 1;
    for (int i = 0; args[i] && n < 31; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    char *log = xasprintf("%s/kubectl-%d-%d.log", e2e_env.run_dir, (int)getpid(), ++seq);
    char *kc = cp ? xasprintf("KUBECONFIG=%s", cp->kubeconfig) : NULL;
    const char *envv[16] = {kc};
    int m = kc ? 1 : 0;
    for (int i = 0; env && env[i] && m < 15; i++)
        envv[m++] = env[i];
    envv[m] = NULL;
    int rc = run(argv, envv, log, 120);
    if (out) {
        size_t len;
        gp_err err;
        *out = gp_read_file(log, 1u << 20, &len, &err);
        if (!*out)
            *out = xstrdup("");
    }
    free(kc);
    free(log);
    return rc;
}

/* ------------------------------------------------------ control plane --- */

static void cp_learn_version(e2e_cp *cp);

e2e_cp *e2e_cp_up(const e2e_cp_opts *o)
{
    static int seq;
    e2e_cp *cp = xcalloc(1, sizeof *cp);
    if (o)
        cp->opts = *o;
    snprintf(cp->dir, sizeof cp->dir, "%s/cp-%d-%d", e2e_env.run_dir, (int)getpid(), ++seq);
    registry_add("cp", cp->dir);
    char *up = xasprintf("%s/kube-up", e2e_env.kit);
    char *out = xasprintf("%s.kube-up.log", cp->dir);
    const char *argv[5] = {up, cp->dir, NULL, NULL, NULL};
    int ai = 2;
    if (cp->opts.no_watch_cache)
        argv[ai++] = "--no-watch-cache";
    if (cp->opts.controller_manager)
        argv[ai++] = "--controller-manager";
    char *ea = xasprintf("K8S_APISERVER_ARGS=%s", cp->opts.apiserver_args ? cp->opts.apiserver_args : "");
    char *es = xasprintf("K8S_SCHEDULER_ARGS=%s", cp->opts.scheduler_args ? cp->opts.scheduler_args : "");
    char *ev = cp->opts.version ? xasprintf("K8S_VERSION=%s", cp->opts.version) : NULL;
    const char *env[] = {ea, es, ev, NULL};
    double t = gp_mono_s();
    int rc = run(argv, env, out, 180);
    if (rc != 0) {
        print_file_tail(out, 30, "kube-up");
        ck_abort_msg("kube-up %s failed (exit %d)", cp->dir, rc);
    }
    e2e_log("control plane up in %.1f s: %s", gp_mono_s() - t, cp->dir);
    snprintf(cp->kubeconfig, sizeof cp->kubeconfig, "%s/kubeconfig", cp->dir);
    gp_kube_auth auth;
    gp_err err;
    if (kubeconfig_load(cp->kubeconfig, NULL, &auth, &err) < 0)
        ck_abort_msg("%s", err.msg);
    cp->kube = kube_new(&auth, &err);
    kube_auth_clear(&auth);
    if (!cp->kube)
        ck_abort_msg("kube client: %s", err.msg);
    cp_learn_version(cp);
    free(ea);
    free(es);
    free(ev);
    free(out);
    free(up);
    return cp;
}

/* The version the control plane runs: its /version, which must agree with the
 * K8S_VERSION kube-up recorded in DIR/env (1.26, 1.36, ...). */
static void cp_learn_version(e2e_cp *cp)
{
    gp_err err;
    if (apiversion_fetch(cp->kube, 10, &cp->ver, &err) < 0)
        ck_abort_msg("control plane %s: %s", cp->dir, err.msg);
    char *want = e2e_cp_env(cp, "K8S_VERSION");   /* "v1.26.0" (or "1.26" from older kits) */
    const char *w = want && want[0] == 'v' ? want + 1 : want;
    char mm[16], mmp[24];
    snprintf(mm, sizeof mm, "%d.%d", cp->ver.major, cp->ver.minor);
    snprintf(mmp, sizeof mmp, "%d.%d.%d", cp->ver.major, cp->ver.minor, cp->ver.patch);
    if (w && *w && strcmp(w, mm) != 0 && strcmp(w, mmp) != 0)
        ck_abort_msg("control plane %s: DIR/env says K8S_VERSION=%s, /version says %s", cp->dir,
                     want, cp->ver.git);
    e2e_log("control plane runs Kubernetes %s", cp->ver.git);
    free(want);
}

bool e2e_k8s_at_least(const e2e_cp *cp, int major, int minor, int patch)
{
    const int at[3] = {cp->ver.major, cp->ver.minor, cp->ver.patch}, want[3] = {major, minor, patch};
    for (int i = 0; i < 3; i++)
        if (at[i] != want[i])
            return at[i] > want[i];
    return true;
}

const char *e2e_k8s_version(const e2e_cp *cp)
{
    return cp->ver.git;
}

void e2e_cp_scheduler(e2e_cp *cp, const json_t *config)
{
    static int seq;
    char *cfg = xasprintf("%s.sched-%d.json", cp->dir, ++seq);
    if (json_dump_file(config, cfg, JSON_INDENT(2)) < 0)
        ck_abort_msg("cannot write %s", cfg);
    char *up = xasprintf("%s/kube-up", e2e_env.kit);
    char *out = xasprintf("%s.kube-up.log", cp->dir);
    const char *argv[] = {up, cp->dir, "--scheduler-config", cfg, NULL};
    char *es = xasprintf("K8S_SCHEDULER_ARGS=%s", cp->opts.scheduler_args ? cp->opts.scheduler_args : "");
    const char *env[] = {es, NULL};
    int rc = run(argv, env, out, 120);
    if (rc != 0) {
        print_file_tail(out, 30, "kube-up --scheduler-config");
        ck_abort_msg("kube-scheduler did not start with %s (exit %d)", cfg, rc);
    }
    e2e_log("kube-scheduler started with %s", cfg);
    free(es);
    free(out);
    free(up);
    free(cfg);
}

void e2e_cp_ctl(e2e_cp *cp, const char *action, const char *env)
{
    char *ctl = xasprintf("%s/kube-ctl", e2e_env.kit);
    char *out = xasprintf("%s.kube-ctl.log", cp->dir);
    const char *argv[] = {ctl, cp->dir, action, NULL};
    const char *envv[] = {env, NULL};
    double t = gp_mono_s();
    int rc = run(argv, envv, out, 180);
    if (rc != 0) {
        print_file_tail(out, 20, "kube-ctl");
        ck_abort_msg("kube-ctl %s failed (exit %d)", action, rc);
    }
    e2e_log("kube-ctl %s: %.1f s", action, gp_mono_s() - t);
    free(out);
    free(ctl);
}

char *e2e_cp_env(e2e_cp *cp, const char *var)
{
    char *path = xasprintf("%s/env", cp->dir);
    FILE *f = fopen(path, "r");
    free(path);
    char line[2048], *val = NULL;
    size_t vl = strlen(var);
    while (f && !val && fgets(line, sizeof line, f)) {
        char *p = line;
        if (strncmp(p, "export ", 7) == 0)
            p += 7;
        if (strncmp(p, var, vl) != 0 || p[vl] != '=')
            continue;
        p += vl + 1;
        p[strcspn(p, "\n")] = '\0';
        size_t n = strlen(p);
        if (n >= 2 && (p[0] == '\'' || p[0] == '"') && p[n - 1] == p[0]) {
            p[n - 1] = '\0';
            p++;
        }
        val = xstrdup(p);
    }
    if (f)
        fclose(f);
    return val;
}

void e2e_etcd_delete_pod(e2e_cp *cp, const char *ns, const char *name)
{
    char *url = e2e_cp_env(cp, "ETCD_URL");
    ck_assert_msg(url && *url, "no ETCD_URL in %s/env", cp->dir);
    char *ep = xasprintf("--endpoints=%s", url);
    char *key = xasprintf("/registry/pods/%s/%s", ns, name);
    char *out = xasprintf("%s.etcdctl.log", cp->dir);
    const char *argv[] = {"etcdctl", ep, "del", key, NULL};
    const char *env[] = {"ETCDCTL_API=3", NULL};
    int rc = run(argv, env, out, 30);
    if (rc != 0)
        print_file_tail(out, 10, "etcdctl");
    ck_assert_msg(rc == 0, "etcdctl del %s failed (exit %d)", key, rc);
    free(out);
    free(key);
    free(ep);
    free(url);
}

void e2e_cp_down(e2e_cp *cp)
{
    if (!cp)
        return;
    kube_free(cp->kube);
    const char *keep = getenv("E2E_KEEP");
    if (keep && *keep && strcmp(keep, "0") != 0) {
        /* the control plane's logs (kube-scheduler's above all) beside gpupack's */
        char *cmd = xasprintf("cp -r '%s/logs' '%s.logs' 2>/dev/null", cp->dir, cp->dir);
        if (system(cmd) != 0)
            fprintf(stderr, "e2e: could not keep the logs of %s\n", cp->dir);
        free(cmd);
    }
    kube_down(cp->dir);
    free(cp);
}

/* --------------------------------------------- scheduler configuration --- */

static json_t *shipped_sched(void)
{
    char *path = xasprintf("%s/manifests/base/scheduler-config.yaml", e2e_env.repo);
    gp_err err;
    json_t *cfg = schedrw_load(path, &err);
    if (!cfg)
        ck_abort_msg("%s", err.msg);
    free(path);
    return cfg;
}

const char *e2e_scheduler_name(void)
{
    static char name[128];
    if (!name[0]) {
        json_t *cfg = shipped_sched();
        const char *n = json_string_value(json_object_get(json_array_get(json_object_get(cfg, "profiles"), 0), "schedulerName"));
        gp_strlcpy(name, n ? n : "default-scheduler", sizeof name);
        json_decref(cfg);
    }
    return name;
}

/* The test certificates (scripts/gen-certs.sh; the server's covers 127.0.0.1). */
#define E2E_TLS_DIR "test/fixtures/tls/"

/* The shipped file as schedrw_rewrite() adapts it, plus the tlsConfig files of
 * an HTTPS stanza: the test CA and client certificate (the host is verified as
 * shipped). */
void e2e_sched_rewrite(json_t *cfg, int gpupack_port)
{
    schedrw_rewrite(cfg, gpupack_port);
    char *dir = xasprintf("%s/" E2E_TLS_DIR, e2e_env.repo);
    dir[strlen(dir) - 1] = '\0';   /* no trailing slash */
    schedrw_tls(cfg, dir);
    free(dir);
}

json_t *e2e_sched_config(int gpupack_port)
{
    json_t *cfg = shipped_sched();
    e2e_sched_rewrite(cfg, gpupack_port);
    return cfg;
}

/* ------------------------------------------------------------ gpupack --- */

static size_t discard(char *p, size_t sz, size_t n, void *ud)
{
    gp_buf *b = ud;
    if (b && gp_buf_append(b, p, sz * n) < 0)
        return 0;
    return sz * n;
}

char *e2e_gp_post(e2e_gp *g, const char *path, const char *body, long *status)
{
    CURL *h = curl_easy_init();
    gp_buf b;
    gp_buf_init(&b, 256u << 20);
    char *url = xasprintf("%s%s", g->url, path);
    char *ca = xasprintf("%s/" E2E_TLS_DIR "ca.crt", e2e_env.repo);
    char *crt = xasprintf("%s/" E2E_TLS_DIR "client.crt", e2e_env.repo);
    char *key = xasprintf("%s/" E2E_TLS_DIR "client.key", e2e_env.repo);
    struct curl_slist *hdr = NULL;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CAINFO, ca);   /* https: gpupack's test certificate */
    /* kube-scheduler's test client certificate: the verbs ask for it under mTLS */
    curl_easy_setopt(h, CURLOPT_SSLCERT, crt);
    curl_easy_setopt(h, CURLOPT_SSLKEY, key);
    if (body) {
        hdr = curl_slist_append(hdr, "Content-Type: application/json");
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    }
    curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 20L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    CURLcode rc = curl_easy_perform(h);
    *status = 0;
    if (rc == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    curl_easy_cleanup(h);
    curl_slist_free_all(hdr);
    free(url);
    free(ca);
    free(crt);
    free(key);
    if (rc != CURLE_OK) {
        gp_buf_free(&b);
        return NULL;
    }
    if (!b.data)
        return xstrdup("");
    return b.data;
}

char *e2e_gp_get(e2e_gp *g, const char *path, long *status)
{
    return e2e_gp_post(g, path, NULL, status);
}

double e2e_metric_in(const char *text, const char *series)
{
    size_t sl = strlen(series);
    for (const char *p = text; p && *p;) {
        const char *nl = strchr(p, '\n');
        if (strncmp(p, series, sl) == 0 && p[sl] == ' ')
            return strtod(p + sl + 1, NULL);
        p = nl ? nl + 1 : NULL;
    }
    return -1;
}

double e2e_gp_metric(e2e_gp *g, const char *series)
{
    long st;
    char *body = e2e_gp_get(g, "/metrics", &st);
    double v = e2e_metric_in(body, series);
    free(body);
    return v;
}

void e2e_gp_wait_metric(e2e_gp *g, const char *series, double want, double timeout_s)
{
    double end = gp_mono_s() + timeout_s, v = -1;
    while (gp_mono_s() < end) {
        v = e2e_gp_metric(g, series);
        if (v == want)
            return;
        e2e_sleep(0.1);
    }
    e2e_gp_log_tail(g, 20);
    ck_abort_msg("%s: %s is %g, want %g", g->url, series, v, want);
}

int e2e_gp_pod_gpus(e2e_gp *g, const char *ns, const char *name)
{
    long st;
    char *body = e2e_gp_get(g, "/inspect", &st);
    json_t *j = body && st == 200 ? json_loads(body, 0, NULL) : NULL;
    free(body);
    if (!j)
        return -1;
    int n = 0;
    size_t i, k, p;
    json_t *no, *go, *po;
    json_array_foreach(json_object_get(j, "nodes"), i, no) {
        json_array_foreach(json_object_get(no, "gpus"), k, go) {
            json_array_foreach(json_object_get(go, "pods"), p, po) {
                const char *pns = json_string_value(json_object_get(po, "namespace"));
                const char *pn = json_string_value(json_object_get(po, "name"));
                if (pns && pn && strcmp(pns, ns) == 0 && strcmp(pn, name) == 0)
                    n++;
            }
        }
    }
    json_decref(j);
    return n;
}

double e2e_gp_wait_pod_gpus(e2e_gp *g, const char *ns, const char *name, int want, double timeout_s)
{
    double t0 = gp_mono_s();
    for (;;) {
        if (e2e_gp_pod_gpus(g, ns, name) == want)
            return gp_mono_s() - t0;
        if (gp_mono_s() - t0 > timeout_s)
            return -1;
        e2e_sleep(0.02);
    }
}

int e2e_gp_log_count(e2e_gp *g, const char *needle)
{
    size_t len;
    gp_err err;
    char *text = gp_read_file(g->log, 256u << 20, &len, &err);
    int n = 0;
    for (char *p = text; p && (p = strstr(p, needle)); p += strlen(needle))
        n++;
    free(text);
    return n;
}

void e2e_gp_log_tail(e2e_gp *g, int lines)
{
    if (g)
        print_file_tail(g->log, lines, "gpupack log");
}

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : 0;
}

/* The port from "listening on ... (port N)" written after offset `from`. */
static int port_from_log(const char *log, long from)
{
    size_t len;
    gp_err err;
    char *text = gp_read_file(log, 64u << 20, &len, &err);
    int port = 0;
    if (text && (size_t)from <= len) {
        const char *p = strstr(text + from, "(port ");
        if (p)
            port = atoi(p + 6);
    }
    free(text);
    return port;
}

static void gp_spawn(e2e_gp *g)
{
    long from = file_size(g->log);
    pid_t pid = fork();
    ck_assert_msg(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);   /* a crashed test takes gpupack with it */
        int fd = open(g->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execv(g->argv[0], g->argv);
        _exit(127);
    }
    g->pid = pid;
    char *what = xasprintf("%d %s", (int)pid, g->log);
    registry_add("gp", what);
    free(what);
    double end = gp_mono_s() + 60;
    while (g->port == 0) {
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            g->pid = 0;
            e2e_gp_log_tail(g, 30);
            ck_abort_msg("gpupack exited at start (status %d)", st);
        }
        g->port = port_from_log(g->log, from);
        if (gp_mono_s() > end) {
            e2e_gp_log_tail(g, 30);
            ck_abort_msg("gpupack did not say which port it listens on within 60 s");
        }
        if (!g->port)
            e2e_sleep(0.05);
    }
    bool tls = false;
    for (size_t i = 0; g->argv[i]; i++)
        tls = tls || strcmp(g->argv[i], "--tls-cert") == 0;
    snprintf(g->url, sizeof g->url, "%s://127.0.0.1:%d", tls ? "https" : "http", g->port);
    long status = 0;
    while (status != 200) {
        free(e2e_gp_get(g, "/readyz", &status));
        if (status == 200)
            break;
        if (gp_mono_s() > end) {
            e2e_gp_log_tail(g, 30);
            ck_abort_msg("gpupack not ready within 60 s (/readyz %ld)", status);
        }
        e2e_sleep(0.05);
    }
}

e2e_gp *e2e_gp_start(e2e_cp *cp, const char *const *extra)
{
    static int seq;
    e2e_gp *g = xcalloc(1, sizeof *g);
    g->cp = cp;
    snprintf(g->log, sizeof g->log, "%s/gpupack-%d-%d.log", e2e_env.run_dir, (int)getpid(), ++seq);
    const char *base[] = {e2e_env.gpupack_bin, "serve", "--kubeconfig", cp->kubeconfig, "--listen",
                          "127.0.0.1:0", "--policies", e2e_env.policies};
    size_t n = 0;
    for (size_t i = 0; i < GP_ARRAY_LEN(base); i++)
        g->argv[n++] = xstrdup(base[i]);
    for (size_t i = 0; extra && extra[i]; i++) {
        ck_assert_msg(n + 1 < GP_ARRAY_LEN(g->argv), "too many gpupack flags");
        g->argv[n++] = xstrdup(extra[i]);
    }
    g->argv[n] = NULL;
    gp_spawn(g);
    /* a restart must come back on the same port: kube-scheduler's config names it */
    for (size_t i = 0; g->argv[i]; i++)
        if (strcmp(g->argv[i], "127.0.0.1:0") == 0) {
            free(g->argv[i]);
            g->argv[i] = xasprintf("127.0.0.1:%d", g->port);
        }
    e2e_log("gpupack pid %d on %s, log %s", (int)g->pid, g->url, g->log);
    return g;
}

void e2e_gp_kill(e2e_gp *g, int sig)
{
    if (!g || g->pid <= 0)
        return;
    kill(g->pid, sig);
    int st;
    double end = gp_mono_s() + 20;
    while (waitpid(g->pid, &st, WNOHANG) == 0) {
        if (gp_mono_s() > end) {
            kill(g->pid, SIGKILL);
            waitpid(g->pid, &st, 0);
            break;
        }
        e2e_sleep(0.02);
    }
    g->pid = 0;
}

void e2e_gp_restart(e2e_gp *g)
{
    e2e_gp_kill(g, SIGKILL);
    int port = g->port;
    g->port = 0;
    gp_spawn(g);
    ck_assert_msg(g->port == port, "gpupack came back on port %d, not %d", g->port, port);
    e2e_log("gpupack restarted: pid %d", (int)g->pid);
}

void e2e_gp_stop(e2e_gp *g)
{
    if (!g)
        return;
    e2e_gp_kill(g, SIGTERM);
    for (size_t i = 0; g->argv[i]; i++)
        free(g->argv[i]);
    free(g);
}

/* -------------------------------------------------------------- world --- */

/* The path of the shipped extender urlPrefix ("" when the verbs are at the root). */
static char *shipped_url_path(void)
{
    json_t *cfg = shipped_sched();
    char *path = schedrw_url_path(json_string_value(json_object_get(json_array_get(json_object_get(cfg, "extenders"), 0), "urlPrefix")));
    json_decref(cfg);
    return path;
}

/* Whether the shipped stanza asks kube-scheduler for HTTPS (then mutual TLS). */
static bool shipped_https(void)
{
    json_t *cfg = shipped_sched();
    bool https = json_is_true(json_object_get(json_array_get(json_object_get(cfg, "extenders"), 0), "enableHTTPS"));
    json_decref(cfg);
    return https;
}

const char *const *e2e_shipped_gp_args(void)
{
    /* computed once per test process; the strings live as long as it */
    static const char *args[8];
    static bool done;
    if (done)
        return args;
    size_t n = 0;
    char *path = shipped_url_path();
    if (*path) {
        args[n++] = "--url-prefix";
        args[n++] = path;
    } else {
        free(path);
    }
    if (shipped_https()) {   /* serve as the Deployment does: TLS + client CA */
        static const char *const flag[] = {"--tls-cert", "--tls-key", "--client-ca"};
        static const char *const file[] = {"server.crt", "server.key", "ca.crt"};
        for (size_t i = 0; i < 3; i++) {
            args[n++] = flag[i];
            args[n++] = xasprintf("%s/" E2E_TLS_DIR "%s", e2e_env.repo, file[i]);
        }
    }
    args[n] = NULL;
    done = true;
    return args;
}

e2e_world *e2e_world_up(const e2e_world_opts *o)
{
    e2e_world *w = xcalloc(1, sizeof *w);
    w->cp = e2e_cp_up(o ? &o->cp : NULL);
    const char *args[40];
    size_t n = 0;
    for (const char *const *a = e2e_shipped_gp_args(); *a; a++)
        args[n++] = *a;
    for (size_t i = 0; o && o->gpupack_args && o->gpupack_args[i] && n + 1 < GP_ARRAY_LEN(args); i++)
        args[n++] = o->gpupack_args[i];
    args[n] = NULL;
    w->gp = e2e_gp_start(w->cp, args);
    if (o && o->no_scheduler)
        return w;
    json_t *cfg = e2e_sched_config(w->gp->port);
    if (o && o->edit_sched)
        o->edit_sched(cfg, o->ud);
    e2e_cp_scheduler(w->cp, cfg);
    json_decref(cfg);
    return w;
}

void e2e_world_down(e2e_world *w)
{
    if (!w)
        return;
    e2e_gp_stop(w->gp);
    e2e_cp_down(w->cp);
    free(w);
}
