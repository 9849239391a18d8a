/* testutil.c -- builders for nodes and requests, fixture loading (tests only). */
#include "testutil.h"

#include "lib/yamljson.h"
#include "pack/clusterfile.h"

#include <check.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

gp_node *tu_node(const char *name, int n, const int64_t *mem, const int64_t *used_mem,
                 const int *used_core)
{
    gp_node *node = xcalloc(1, gp_node_size(n));
    gp_strlcpy(node->name, name, sizeof node->name);
    node->ngpus = n;
    for (int i = 0; i < n; i++) {
        gp_gpu *g = &node->gpus[i];
        g->info.index = i;
        g->info.mem_total = mem[i];
        g->info.core_total = GP_CORE_FULL;
        g->info.healthy = true;
        g->info.model = gp_model_intern("A100-SXM4-80GB");
        snprintf(g->info.uuid, sizeof g->info.uuid, "GPU-%s-%d", name, i);
        g->mem_used = used_mem ? used_mem[i] : 0;
        g->core_used = used_core ? used_core[i] : 0;
        g->pods = (g->mem_used || g->core_used) ? 1 : 0;
    }
    return node;
}

void tu_inventory(gp_inventory *inv, int n, int64_t mem, const char *model)
{
    memset(inv, 0, sizeof *inv);
    gp_strlcpy(inv->source, "gpupack", sizeof inv->source);
    inv->n = n;
    for (int i = 0; i < n; i++) {
        inv->gpus[i].index = i;
        inv->gpus[i].mem_total = mem;
        inv->gpus[i].core_total = GP_CORE_FULL;
        inv->gpus[i].healthy = true;
        inv->gpus[i].model = gp_model_intern(model);
        snprintf(inv->gpus[i].uuid, sizeof inv->gpus[i].uuid, "GPU-%d", i);
    }
}

void tu_add_ctr(gp_pod_req *r, const char *name, bool init, int count, int64_t mem, int core)
{
    gp_ctr_req *c = &r->ctrs[r->nctrs++];
    memset(c, 0, sizeof *c);
    gp_strlcpy(c->name, name, sizeof c->name);
    c->init = init;
    c->count = count;
    c->mem_mib = mem;
    c->core = core;
}

void tu_req(gp_pod_req *r, const char *uid, int count, int64_t mem, int core_permille)
{
    memset(r, 0, sizeof *r);
    gp_strlcpy(r->uid, uid, sizeof r->uid);
    gp_strlcpy(r->ns, "default", sizeof r->ns);
    snprintf(r->name, sizeof r->name, "pod-%s", uid);
    tu_add_ctr(r, "main", false, count, mem, core_permille);
}

json_t *tu_load_json(const char *path)
{
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    ck_assert_msg(j != NULL, "cannot load %s: %s", path, je.text);
    return j;
}

const char *tu_captured(const char *rel)
{
    static char buf[1024];
    snprintf(buf, sizeof buf, "test/fixtures/captured/%s", rel);
    return buf;
}

static size_t tu_on_body(char *p, size_t sz, size_t n, void *ud)
{
    return gp_buf_append(ud, p, sz * n) ? 0 : sz * n;
}

char *tu_http(const char *method, const char *url, const char *body, long *status)
{
    gp_buf b;
    gp_buf_init(&b, 256u << 20);
    CURL *h = curl_easy_init();
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, tu_on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 60L);
    if (body)
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    CURLcode rc = curl_easy_perform(h);
    ck_assert_msg(rc == CURLE_OK, "%s %s: %s", method, url, curl_easy_strerror(rc));
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    curl_easy_cleanup(h);
    return b.data ? b.data : xstrdup("");
}

char *tu_read_text(const char *path)
{
    gp_err err;
    char *s = gp_read_file(path, 64u << 20, NULL, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    return s;
}

void tu_kubeconfig(const char *url, char *path, size_t len)
{
    ck_assert_uint_ge(len, 32);
    snprintf(path, len, "/tmp/gpupack-kc-XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f,
            "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
            "clusters: [{name: f, cluster: {server: \"%s\"}}]\n"
            "users: [{name: u, user: {token: t}}]\n"
            "contexts: [{name: c, context: {cluster: f, user: u}}]\n",
            url);
    fclose(f);
}

pid_t tu_spawn(const char *const *argv, int out_fd, int err_fd)
{
    posix_spawn_file_actions_t fa;
    ck_assert_int_eq(posix_spawn_file_actions_init(&fa), 0);
    if (out_fd >= 0)
        ck_assert_int_eq(posix_spawn_file_actions_adddup2(&fa, out_fd, STDOUT_FILENO), 0);
    if (err_fd >= 0)
        ck_assert_int_eq(posix_spawn_file_actions_adddup2(&fa, err_fd, STDERR_FILENO), 0);
    pid_t pid = -1;
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    ck_assert_msg(rc == 0, "cannot start %s: %s", argv[0], strerror(rc));
    return pid;
}

/* One line of /proc/PID/<what> (or of a task's), newline cut; "?" if unreadable. */
static void proc_line(const char *dir, const char *what, char *out, size_t len)
{
    char path[160];
    snprintf(path, sizeof path, "%s/%s", dir, what);
    FILE *f = fopen(path, "r");
    if (!f || !fgets(out, (int)len, f))
        snprintf(out, len, "?");
    if (f)
        fclose(f);
    out[strcspn(out, "\n")] = '\0';
}

void tu_describe_process(pid_t pid)
{
    char dir[64], exe[512] = "?", line[512];
    snprintf(dir, sizeof dir, "/proc/%d", (int)pid);
    char path[96];
    snprintf(path, sizeof path, "%s/exe", dir);
    ssize_t n = readlink(path, exe, sizeof exe - 1);
    exe[n > 0 ? n : 1] = '\0';
    fprintf(stderr, "process %d: executable %s\n", (int)pid, exe);
    snprintf(path, sizeof path, "%s/task", dir);
    DIR *d = opendir(path);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char task[128], comm[64], wchan[128], sys[128];
        snprintf(task, sizeof task, "%s/task/%.20s", dir, e->d_name);
        proc_line(task, "comm", comm, sizeof comm);
        proc_line(task, "wchan", wchan, sizeof wchan);
        proc_line(task, "syscall", sys, sizeof sys);
        proc_line(task, "stat", line, sizeof line);
        const char *st = strrchr(line, ')');   /* "pid (comm) S ..." */
        fprintf(stderr, "  thread %s %-16s state %c wchan %s syscall %.40s\n", e->d_name, comm,
                st && st[1] && st[2] ? st[2] : '?', wchan, sys);
    }
    closedir(d);
}

/* The line "... listening on ... (port N)" in what the server wrote so far,
 * once it is complete; 0 until then. */
int tu_port_in(const char *text)
{
    for (const char *l = text; *l;) {
        const char *end = strchr(l, '\n');
        if (!end)
            return 0;
        const char *on = strstr(l, "listening on");
        const char *p = strstr(l, "(port ");
        if (on && p && on < end && p < end)
            return atoi(p + 6);
        l = end + 1;
    }
    return 0;
}

bool tu_read_log(int fd, bool (*done)(const char *text), char *text, size_t cap, double wait_s,
                 bool *eof)
{
    /* read, not fgets: a server that hangs must not hang the test */
    size_t len = 0;
    text[0] = '\0';
    double end = gp_mono_s() + wait_s;
    *eof = false;
    while (!done(text) && !*eof) {
        double left = end - gp_mono_s();
        if (left <= 0)
            return false;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (poll(&pfd, 1, (int)(left * 1000) + 1) <= 0)
            continue;
        if (len == cap - 1) {   /* keep the newer half */
            memmove(text, text + len / 2, len - len / 2);
            len -= len / 2;
        }
        ssize_t r = read(fd, text + len, cap - 1 - len);
        if (r < 0 && errno == EINTR)
            continue;
        *eof = r <= 0;
        len += r > 0 ? (size_t)r : 0;
        text[len] = '\0';
    }
    return done(text);
}

static bool listens(const char *text)
{
    return tu_port_in(text) > 0;
}

pid_t tu_serve(const char *const *args, int *port, FILE **log)
{
    const char *bin = getenv("GPUPACK_BIN");
    ck_assert_msg(bin && *bin, "GPUPACK_BIN is not set (make test sets it)");
    const char *argv[16] = {bin, "serve"};
    int n = 2;
    for (int i = 0; args && args[i]; i++) {
        ck_assert_int_lt(n, 15);
        argv[n++] = args[i];
    }
    argv[n] = NULL;
    int fds[2];
    ck_assert_int_eq(pipe2(fds, O_CLOEXEC), 0);
    pid_t pid = tu_spawn(argv, -1, fds[1]);
    close(fds[1]);
    char text[16384];
    bool eof = false;
    double end = gp_mono_s() + TU_SERVE_WAIT_S;
    bool found = tu_read_log(fds[0], listens, text, sizeof text, TU_SERVE_WAIT_S, &eof);
    *port = found ? tu_port_in(text) : 0;
    if (*port <= 0) {
        fprintf(stderr, "tu_serve: %s %s after %.0f s; it wrote:\n%s\n", bin,
                eof ? "ended before it said where it listens" : "said nothing about where it listens",
                TU_SERVE_WAIT_S - (end - gp_mono_s()), text);
        if (!eof)
            tu_describe_process(pid);
        kill(pid, SIGKILL);
        int st;
        waitpid(pid, &st, 0);
        close(fds[0]);
        ck_abort_msg("the server never said where it listens (its log and threads are above)");
    }
    *log = fdopen(fds[0], "r");
    ck_assert_ptr_nonnull(*log);
    return pid;
}

static void *drain(void *arg)
{
    char l[1024];
    while (fgets(l, sizeof l, (FILE *)arg))
        ;
    return NULL;
}

void tu_server_start(tu_server *s, const char *const *args)
{
    s->pid = tu_serve(args, &s->port, &s->log);
    ck_assert_int_eq(pthread_create(&s->reader, NULL, drain, s->log), 0);
}

void tu_server_stop(tu_server *s)
{
    kill(s->pid, SIGTERM);
    waitpid(s->pid, NULL, 0);
    pthread_join(s->reader, NULL);   /* the log ends with the server */
    fclose(s->log);
}

void tu_listener_start(tu_listener *l, const gp_server_config *cfg, const gp_server_hooks *hooks)
{
    memset(l, 0, sizeof *l);
    l->c = cluster_new();
    gp_err err;
    ck_assert_msg(clusterfile_load(l->c, "examples/cluster.yaml", 1024, NULL, &err) == 0, "%s",
                  err.msg);
    l->e = extender_new(l->c, NULL);
    l->s = server_start(cfg, l->e, l->c, hooks, &err);
    ck_assert_msg(l->s != NULL, "%s", err.msg);
    ck_assert_int_gt(server_port(l->s), 0);
    snprintf(l->base, sizeof l->base, "%s://127.0.0.1:%d", cfg->tls_cert ? "https" : "http",
             server_port(l->s));
}

void tu_listener_stop(tu_listener *l)
{
    server_stop(l->s);
    extender_free(l->e);
    cluster_free(l->c);
}

double tu_metric_in(const char *text, const char *series)
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
