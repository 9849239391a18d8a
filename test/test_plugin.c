/* test_plugin.c -- scripts/kubectl-gpupack against a gpupack serving the
 * example cluster, with a stand-in kubectl that maps the service proxy path
 * to the server (test/fixtures/fake-kubectl). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pack/clusterfile.h"
#include "policy/policy_store.h"
#include "http/server.h"
#include "testutil.h"
#include "lib/yamljson.h"

typedef struct plugin_case {
    const char *args;
    const char *want;          /* in the output */
    const char *kubectl_call;  /* in the stand-in's log */
} plugin_case;

static const plugin_case cases[] = {
    {"inspect", "node-a100                0    A100-SXM4-80GB",
     "get --raw /api/v1/namespaces/gpupack-system/services/https:gpupack:https/proxy/inspect?format=text"},
    {"inspect node-t4 -o json", "\"name\": \"node-t4\"",
     "get --raw /api/v1/namespaces/gpupack-system/services/https:gpupack:https/proxy/inspect/node-t4"},
    {"explain research/trainer", "-> fits if this pod left the node: research/notebook-alice",
     "create --raw /api/v1/namespaces/gpupack-system/services/https:gpupack:https/proxy/explain?format=text -f"},
    {"metrics", "gpupack_gpus_idle", "proxy/metrics"},
    {"ui 9999", "https://127.0.0.1:9999/ui", "port-forward -n gpupack-system service/gpupack 9999:8443"},
};

START_TEST(plugin_commands)
{
    const plugin_case *pc = &cases[_i];
    gp_err err;
    gp_cluster *c = cluster_new();
    ck_assert_msg(clusterfile_load(c, "examples/cluster.yaml", 1024, NULL, &err) == 0, "%s", err.msg);
    policy_store *ps;
    ck_assert_msg(policy_store_open("policies", &ps, &err) == 0, "%s", err.msg);
    gp_extender_config ecfg = {.policies = policy_store_current, .policies_ud = ps};
    gp_extender *e = extender_new(c, &ecfg);
    gp_server_config cfg = {.listen = "127.0.0.1:0"};
    gp_server *s = server_start(&cfg, e, c, NULL, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    char log[] = "/tmp/gpupack-kubectl-log-XXXXXX";
    close(mkstemp(log));
    char *cmd = xasprintf("KUBECTL=test/fixtures/fake-kubectl FAKE_GPUPACK_URL=http://127.0.0.1:%d "
                          "FAKE_POD_FILE=test/fixtures/explain-pod.json FAKE_KUBECTL_LOG=%s "
                          "sh scripts/kubectl-gpupack %s 2>&1",
                          server_port(s), log, pc->args);
    FILE *p = popen(cmd, "r");
    static char out[1 << 16];
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    pclose(p);
    ck_assert_msg(strstr(out, pc->want), "kubectl gpupack %s: output lacks \"%s\":\n%s", pc->args,
                  pc->want, out);
    char *calls = gp_read_file(log, 1 << 20, NULL, &err);
    ck_assert_msg(calls && strstr(calls, pc->kubectl_call), "kubectl gpupack %s: no call \"%s\" in:\n%s",
                  pc->args, pc->kubectl_call, calls ? calls : err.msg);
    free(calls);
    unlink(log);
    free(cmd);
    server_stop(s);
    extender_free(e);
    policy_store_free(ps);
    cluster_free(c);
}
END_TEST

/* --help prints the usage and exits 0 (no comment characters of the script leak into it);
 * a usage error prints one line and a hint on stderr and exits 2. No kubectl is called. */
static const struct {
    const char *args;
    int rc;
    const char *want;
} usage_cases[] = {
    {"--help", 0, "kubectl gpupack explain NAMESPACE/POD"},
    {"-h", 0, "kubectl gpupack inspect [NODE] [-o json]"},
    {"inspect --help", 0, "kubectl gpupack metrics"},
    {"help", 0, "kubectl gpupack ui [LOCAL_PORT]"},
    {"", 2, "kubectl gpupack: a command is needed"},
    {"bogus", 2, "kubectl gpupack: unknown command \"bogus\""},
    {"explain", 2, "kubectl gpupack: explain needs NAMESPACE/POD"},
    {"explain trainer", 2, "not \"trainer\""},
};

START_TEST(plugin_help_and_usage_errors)
{
    char *cmd = xasprintf("KUBECTL=false sh scripts/kubectl-gpupack %s 2>&1", usage_cases[_i].args);
    FILE *p = popen(cmd, "r");
    static char out[1 << 14];
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == usage_cases[_i].rc,
                  "kubectl gpupack %s: exit %d, want %d:\n%s", usage_cases[_i].args,
                  WIFEXITED(st) ? WEXITSTATUS(st) : -1, usage_cases[_i].rc, out);
    ck_assert_msg(strstr(out, usage_cases[_i].want), "kubectl gpupack %s: output lacks \"%s\":\n%s",
                  usage_cases[_i].args, usage_cases[_i].want, out);
    ck_assert_msg(out[0] != '#' && !strstr(out, "\n#"), "kubectl gpupack %s: a stray '#':\n%s",
                  usage_cases[_i].args, out);
    if (usage_cases[_i].rc == 2)
        ck_assert_msg(strstr(out, "Run 'kubectl gpupack --help' for usage."), "no hint:\n%s", out);
    free(cmd);
}
END_TEST

Suite *suite_plugin(void);
Suite *suite_plugin(void)
{
    Suite *s = suite_create("plugin");
    TCase *t = tcase_create("kubectl-gpupack");
    tcase_set_timeout(t, 30);
    tcase_add_loop_test(t, plugin_commands, 0, (int)GP_ARRAY_LEN(cases));
    tcase_add_loop_test(t, plugin_help_and_usage_errors, 0, (int)GP_ARRAY_LEN(usage_cases));
    suite_add_tcase(s, t);
    return s;
}
