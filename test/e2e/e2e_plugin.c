/* e2e_plugin.c -- scripts/kubectl-gpupack with a real kubectl (e2e_kubectl(): the kit's
 * v1.36.3) against real API servers v1.36 and v1.26: kubectl finds the plugin on PATH and
 * hands it --help; every command reaches gpupack's Service through the API server's
 * service proxy, on the scheme, Service and port name the manifests ship.
 *
 * There is no kubelet, and the API server refuses to proxy to loopback addresses, so no
 * gpupack answers here: the Service's endpoint is a Pod whose status carries this
 * machine's own non-loopback address and port 1, where nothing listens. A command that
 * resolved all the way gets "dial tcp ADDRESS:1: connect: connection refused" from the API
 * server; that it would then show gpupack's answer is test/test_plugin.c's part (a
 * stand-in kubectl against a real gpupack). Nothing listens on that address. */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

/* This machine's first non-loopback IPv4 address, "" when it has none. */
static void host_address(char *buf, size_t n)
{
    buf[0] = '\0';
    struct ifaddrs *ifs;
    if (getifaddrs(&ifs) < 0)
        return;
    for (struct ifaddrs *i = ifs; i && !buf[0]; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || (i->ifa_flags & IFF_LOOPBACK))
            continue;
        inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr, buf,
                  (socklen_t)n);
    }
    freeifaddrs(ifs);
}

/* A PATH with the plugin and kubectl in it, as `make install` puts them. Owned "PATH=...". */
static char *plugin_path(void)
{
    char *bin = xasprintf("%s/plugin-bin", e2e_env.run_dir);
    char *cmd = xasprintf("mkdir -p '%s' && cp '%s/scripts/kubectl-gpupack' '%s/' && "
                          "chmod 755 '%s/kubectl-gpupack' && ln -sf '%s' '%s/kubectl'",
                          bin, e2e_env.repo, bin, bin, e2e_kubectl(), bin);
    const char *argv[] = {"sh", "-c", cmd, NULL};
    ck_assert_msg(e2e_run(argv, NULL, NULL, 30) == 0, "%s", cmd);
    const char *path = getenv("PATH");
    char *env = xasprintf("PATH=%s:%s", bin, path ? path : "/usr/bin:/bin");
    free(cmd);
    free(bin);
    return env;
}

/* `kubectl gpupack ARGS...` through kubectl's plugin lookup; returns the exit status. */
static int gpupack(e2e_cp *cp, const char *path_env, char **out, const char *const *args)
{
    const char *argv[16] = {"gpupack"};
    int n = 1;
    for (int i = 0; args[i] && n < 15; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    const char *env[] = {path_env, NULL};
    return e2e_kubectl_run(cp, env, out, argv);
}

#define GPUPACK(cp, p, out, ...) gpupack((cp), (p), (out), (const char *const[]){__VA_ARGS__, NULL})

/* gpupack's Service as shipped, a Pod it selects at addr, and its endpoint on port 1. */
static void fake_gpupack(e2e_cp *cp, const char *addr)
{
    char *svc = xasprintf("%s/manifests/base/service.yaml", e2e_env.repo);
    char *out;
    int rc = e2e_kubectl_run(cp, NULL, &out, (const char *const[]){"apply", "-f", svc, NULL});
    ck_assert_msg(rc == 0, "%s", out);
    free(out);
    free(svc);
    json_t *pod = json_pack(
        "{s:s,s:s,s:{s:s,s:s,s:{s:s,s:s}},s:{s:[{s:s,s:s,s:[{s:s,s:i}]}]}}", "apiVersion", "v1",
        "kind", "Pod", "metadata", "name", "gpupack-0", "namespace", "gpupack-system", "labels",
        "app.kubernetes.io/name", "gpupack", "gpupack.io/leader", "true", "spec", "containers",
        "name", "gpupack", "image", "registry.invalid/gpupack:1", "ports", "name", "https",
        "containerPort", 8443);
    json_decref(e2e_api_ok(cp, "POST", "/api/v1/namespaces/gpupack-system/pods", NULL, pod));
    json_decref(pod);
    json_t *st = json_pack("{s:{s:s,s:[{s:s}]}}", "status", "podIP", addr, "podIPs", "ip", addr);
    json_decref(e2e_api_ok(cp, "PATCH", "/api/v1/namespaces/gpupack-system/pods/gpupack-0/status",
                           "application/merge-patch+json", st));
    json_decref(st);
    json_t *ep = json_pack(
        "{s:s,s:s,s:{s:s,s:s},s:[{s:[{s:s,s:{s:s,s:s,s:s}}],s:[{s:s,s:i}]}]}", "apiVersion", "v1",
        "kind", "Endpoints", "metadata", "name", "gpupack", "namespace", "gpupack-system",
        "subsets", "addresses", "ip", addr, "targetRef", "kind", "Pod", "name", "gpupack-0",
        "namespace", "gpupack-system", "ports", "name", "https", "port", 1);
    json_decref(e2e_api_ok(cp, "POST", "/api/v1/namespaces/gpupack-system/endpoints", NULL, ep));
    json_decref(ep);
}

static void one_version(const char *version)
{
    e2e_cp_opts opts = {.version = version};
    e2e_cp *cp = e2e_cp_up(&opts);
    json_t *v = e2e_api_ok(cp, "GET", "/version", NULL, NULL);
    char server[64];
    gp_strlcpy(server, json_string_value(json_object_get(v, "gitVersion")), sizeof server);
    json_decref(v);
    char *path = plugin_path();
    char *out;

    int rc = GPUPACK(cp, path, &out, "--help");
    ck_assert_msg(rc == 0 && strstr(out, "kubectl gpupack explain NAMESPACE/POD"),
                  "%s: kubectl gpupack --help: exit %d:\n%s", server, rc, out);
    free(out);
    const char *const list[] = {"plugin", "list", NULL};
    const char *const env[] = {path, NULL};
    rc = e2e_kubectl_run(cp, env, &out, list);
    ck_assert_msg(rc == 0 && strstr(out, "kubectl-gpupack"), "kubectl plugin list: %s", out);
    free(out);
    rc = GPUPACK(cp, path, &out, "explain");
    ck_assert_msg(rc == 2 && strstr(out, "explain needs NAMESPACE/POD"), "exit %d: %s", rc, out);
    free(out);

    char addr[64];
    host_address(addr, sizeof addr);
    if (!addr[0]) {
        e2e_log("plugin: %s: --help and usage errors as expected; no non-loopback address "
                "on this machine for the service-proxy part: skipped", server);
    } else {
        e2e_ns_create(cp, "gpupack-system");
        e2e_ns_create(cp, "research");
        fake_gpupack(cp, addr);
        json_t *p = e2e_pod("research", "trainer");
        e2e_pod_ctr(p, "train", false, "gpupack.io/gpu-mem", "70000", "gpupack.io/gpu-count", "2",
                    NULL);
        e2e_pod_create(cp, p);
        char *reached = xasprintf("dial tcp %s:1: connect: connection refused", addr);
        static const char *const cmds[][5] = {
            {"inspect", NULL},
            {"inspect", "node-a100", "-o", "json", NULL},
            {"metrics", NULL},
            {"explain", "research/trainer", NULL},
        };
        for (size_t i = 0; i < GP_ARRAY_LEN(cmds); i++) {
            rc = gpupack(cp, path, &out, cmds[i]);
            ck_assert_msg(rc != 0 && strstr(out, reached),
                          "%s: kubectl gpupack %s did not reach gpupack's endpoint (exit %d):\n%s",
                          server, cmds[i][0], rc, out);
            free(out);
        }
        rc = GPUPACK(cp, path, &out, "explain", "research/missing");
        ck_assert_msg(rc != 0 && strstr(out, "pods \"missing\" not found"), "%s", out);
        free(out);
        /* ui: kubectl resolves the Service to the Pod and its named port, then finds it
         * not running (no kubelet): nothing is forwarded or listened on */
        rc = GPUPACK(cp, path, &out, "ui", "18999");
        ck_assert_msg(rc != 0 && strstr(out, "https://127.0.0.1:18999/ui") &&
                          strstr(out, "not running"),
                      "%s: kubectl gpupack ui: exit %d:\n%s", server, rc, out);
        free(out);
        free(reached);
        e2e_log("plugin: %s: --help, plugin list, usage errors; inspect, inspect NODE -o json, "
                "metrics and explain reach gpupack's endpoint through the service proxy; "
                "explain of a missing pod and ui fail as they should", server);
    }
    free(path);
    e2e_cp_down(cp);
}

START_TEST(plugin_with_real_kubectl)
{
    one_version("1.36");
    one_version("1.26");
}
END_TEST

E2E_SUITE(plugin)
{
    Suite *s = suite_create("e2e plugin");
    E2E_TEST(s, plugin_with_real_kubectl, 240);
    return s;
}
