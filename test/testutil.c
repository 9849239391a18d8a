/* testutil.c -- builders for nodes and requests, fixture loading (tests only). */
#include "testutil.h"

#include "lib/yamljson.h"
#include "pack/clusterfile.h"

#include <check.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

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
        gp_strlcpy(g->info.model, "A100-SXM4-80GB", sizeof g->info.model);
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
        gp_strlcpy(inv->gpus[i].model, model, sizeof inv->gpus[i].model);
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
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    char line[1024];
    *port = 0;
    while (!*port && fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "(port ");
        if (strstr(line, "listening on") && p)
            *port = atoi(p + 6);
    }
    ck_assert_msg(*port > 0, "the server never said where it listens");
    *log = f;
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
