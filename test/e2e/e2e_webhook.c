/* e2e_webhook.c -- the admission webhook against the real API server: kube-apiserver calls it
 * over TLS when a pod is created, the stored pod carries the injected env, and after
 * kube-scheduler binds it through gpupack the annotations that env points at name the GPUs
 * gpupack assigned. A GPU pod admitted while the webhook is unreachable is refused at bind. */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "model/annotations.h"
#include "harness.h"
#include "sched/webhook.h"
#include "lib/yamljson.h"

#define NS "e2e-webhook"

/* A loopback port nobody listens on right now. */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof a;
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &l), 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* The MutatingWebhookConfiguration of test/e2e/webhook-config.json aimed at url. */
static json_t *webhook_config(const char *url, const char *ca_file)
{
    char *path = xasprintf("%s/test/e2e/webhook-config.json", e2e_env.repo);
    gp_err err;
    json_error_t je;
    json_t *cfg = json_load_file(path, 0, &je);
    ck_assert_msg(cfg != NULL, "%s: %s", path, je.text);
    free(path);
    size_t len = 0;
    char *ca = gp_read_file(ca_file, 1 << 16, &len, &err);
    ck_assert_msg(ca != NULL, "%s", err.msg);
    char *b64 = webhook_base64(ca, len);
    json_t *cc = json_object_get(json_array_get(json_object_get(cfg, "webhooks"), 0), "clientConfig");
    json_object_set_new(cc, "url", json_string(url));
    json_object_set_new(cc, "caBundle", json_string(b64));
    free(b64);
    free(ca);
    return cfg;
}

static const json_t *ctr_named(const json_t *pod, const char *list, const char *name)
{
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(json_object_get(pod, "spec"), list), i, c)
        if (strcmp(json_string_value(json_object_get(c, "name")), name) == 0)
            return c;
    return NULL;
}

static const char *env_field_path(const json_t *ctr, const char *var)
{
    size_t i;
    const json_t *e;
    json_array_foreach(json_object_get(ctr, "env"), i, e)
        if (strcmp(json_string_value(json_object_get(e, "name")), var) == 0) {
            const json_t *p = json_object_get(
                json_object_get(json_object_get(e, "valueFrom"), "fieldRef"), "fieldPath");
            return p ? json_string_value(p) : json_string_value(json_object_get(e, "value"));
        }
    return NULL;
}

/* The annotation key inside "metadata.annotations['KEY']". */
static void key_of(const char *fp, char *key, size_t len)
{
    const char *a = strstr(fp, "['"), *b = strstr(fp, "']");
    ck_assert_msg(a && b && b > a, "fieldPath %s", fp);
    snprintf(key, len, "%.*s", (int)(b - a - 2), a + 2);
}

static json_t *gpu_pod(const char *name)
{
    json_t *p = e2e_pod(NS, name);
    e2e_pod_ctr(p, "fetch", true, "gpupack.io/gpu-mem", "1024", NULL);
    e2e_pod_ctr(p, "side", false, NULL);
    e2e_pod_ctr(p, "main", false, "gpupack.io/gpu-mem", "4096", "gpupack.io/gpu-core", "30", NULL);
    /* CUDA base images say NVIDIA_VISIBLE_DEVICES=all; a pod may say it too */
    json_t *main = json_array_get(json_object_get(json_object_get(p, "spec"), "containers"), 1);
    json_object_set_new(main, "env",
                        json_pack("[{s:s,s:s},{s:s,s:s}]", "name", "NVIDIA_VISIBLE_DEVICES", "value",
                                  "all", "name", "A", "value", "b"));
    return p;
}

START_TEST(webhook_injects_and_bind_fills)
{
    char listen[32];
    char *dir = xasprintf("%s/webhook-pki-%d", e2e_env.run_dir, (int)getpid());
    char *cmd = xasprintf("'%s/scripts/webhook-certs.sh' '%s' 127.0.0.1 >/dev/null", e2e_env.repo, dir);
    ck_assert_int_eq(system(cmd), 0);
    char *crt = xasprintf("%s/tls.crt", dir), *key = xasprintf("%s/tls.key", dir);
    char *ca = xasprintf("%s/ca.crt", dir);
    int port = free_port();
    snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
    const char *const flags[] = {"--webhook-listen", listen, "--webhook-cert", crt,
                                 "--webhook-key",    key,    NULL};
    e2e_world_opts o = {.gpupack_args = flags};
    e2e_world *w = e2e_world_up(&o);
    e2e_ns_create(w->cp, NS);
    e2e_node_create(w->cp, e2e_node_gpupack("n1", 2, 40960, "A100-SXM4-40GB"));

    char url[64];
    snprintf(url, sizeof url, "https://%s/mutate", listen);
    json_t *cfg = webhook_config(url, ca);
    json_decref(e2e_api_ok(w->cp, "POST",
                           "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
                           NULL, cfg));
    json_decref(cfg);

    /* the API server picks the configuration up asynchronously: dry-run until it is called */
    json_t *probe = gpu_pod("probe");
    bool called = false;
    for (int i = 0; i < 100 && !called; i++) {
        json_t *got = e2e_api_ok(w->cp, "POST", "/api/v1/namespaces/" NS "/pods?dryRun=All", NULL,
                                 probe);
        const char *fp = env_field_path(ctr_named(got, "containers", "main"), "NVIDIA_VISIBLE_DEVICES");
        called = fp && strstr(fp, "metadata.annotations") != NULL;
        json_decref(got);
        if (!called)
            e2e_sleep(0.2);
    }
    json_decref(probe);
    ck_assert_msg(called, "kube-apiserver never called the webhook");

    /* the stored pod has the env */
    json_t *pod = gpu_pod("train");
    json_t *stored = e2e_api_ok(w->cp, "POST", "/api/v1/namespaces/" NS "/pods", NULL, pod);
    json_decref(pod);
    const json_t *main = ctr_named(stored, "containers", "main");
    const json_t *side = ctr_named(stored, "containers", "side");
    const json_t *fetch = ctr_named(stored, "initContainers", "fetch");
    ck_assert_ptr_null(json_object_get(side, "env"));   /* asks nothing: untouched */
    ck_assert_str_eq(env_field_path(main, "A"), "b");
    for (int v = 0; v < GP_CTR_NVARS; v++) {
        char k[GP_CTR_KEY_MAX], want[GP_CTR_KEY_MAX + 32];
        annotations_ctr_key(k, false, 1, (gp_ctr_var)v);
        snprintf(want, sizeof want, "metadata.annotations['%s']", k);
        ck_assert_str_eq(env_field_path(main, annotations_ctr_vars[v].env), want);
        annotations_ctr_key(k, true, 0, (gp_ctr_var)v);
        snprintf(want, sizeof want, "metadata.annotations['%s']", k);
        ck_assert_str_eq(env_field_path(fetch, annotations_ctr_vars[v].env), want);
    }
    /* the env points at annotations bind writes: read the keys from the stored env */
    char vis_key[GP_CTR_KEY_MAX], mem_key[GP_CTR_KEY_MAX], mps_key[GP_CTR_KEY_MAX];
    char sm_key[GP_CTR_KEY_MAX], init_vis_key[GP_CTR_KEY_MAX];
    key_of(env_field_path(main, "NVIDIA_VISIBLE_DEVICES"), vis_key, sizeof vis_key);
    key_of(env_field_path(main, "CUDA_DEVICE_MEMORY_LIMIT"), mem_key, sizeof mem_key);
    key_of(env_field_path(main, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), mps_key, sizeof mps_key);
    key_of(env_field_path(main, "CUDA_DEVICE_SM_LIMIT"), sm_key, sizeof sm_key);
    key_of(env_field_path(fetch, "NVIDIA_VISIBLE_DEVICES"), init_vis_key, sizeof init_vis_key);
    json_decref(stored);
    e2e_log("stored pod carries the injected env");

    ck_assert_int_eq(e2e_wait_bound(w->cp, NS, 1, 60), 1);
    json_t *bound = e2e_pod_get(w->cp, NS, "train");
    const json_t *ann = json_object_get(json_object_get(bound, "metadata"), "annotations");
    gp_assignment a;
    gp_err err;
    ck_assert_int_eq(annotations_decode(ann, "n1", 1024, &a, &err), 1);
    /* the UUIDs gpupack assigned to main and to fetch, from the source-of-truth annotation */
    json_t *as = json_loads(json_string_value(json_object_get(ann, GP_ANN_ASSIGNMENT)), 0, NULL);
    const char *uuid_main = NULL, *uuid_fetch = NULL;
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(as, "containers"), i, c) {
        const char *u = json_string_value(json_object_get(json_array_get(json_object_get(c, "gpus"), 0), "uuid"));
        if (strcmp(json_string_value(json_object_get(c, "name")), "main") == 0)
            uuid_main = u;
        else
            uuid_fetch = u;
    }
    ck_assert_ptr_nonnull(uuid_main);
    ck_assert_ptr_nonnull(uuid_fetch);
    ck_assert_str_eq(json_string_value(json_object_get(ann, vis_key)), uuid_main);
    ck_assert_str_eq(json_string_value(json_object_get(ann, init_vis_key)), uuid_fetch);
    ck_assert_str_eq(json_string_value(json_object_get(ann, mem_key)), "4096m");
    ck_assert_str_eq(json_string_value(json_object_get(ann, mps_key)), "0=4096M");
    ck_assert_str_eq(json_string_value(json_object_get(ann, sm_key)), "30");
    e2e_log("bound pod's annotations name its GPUs (main %s, fetch %s)", uuid_main, uuid_fetch);
    json_decref(as);
    json_decref(bound);
    e2e_verdict v;
    e2e_assert_consistent(w->cp, w->gp, 10, &v);

    /* webhook unreachable: failurePolicy Ignore admits the pod untouched; bind refuses it */
    char patch[200];
    snprintf(patch, sizeof patch,
             "[{\"op\":\"replace\",\"path\":\"/webhooks/0/clientConfig/url\","
             "\"value\":\"https://127.0.0.1:%d/mutate\"}]",
             free_port());
    json_t *pj = json_loads(patch, 0, NULL);
    json_decref(e2e_api_ok(w->cp, "PATCH",
                           "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/gpupack",
                           "application/json-patch+json", pj));
    json_decref(pj);
    bool dead = false;
    for (int k = 0; k < 100 && !dead; k++) {
        json_t *probe2 = gpu_pod("probe2");
        json_t *got = e2e_api_ok(w->cp, "POST", "/api/v1/namespaces/" NS "/pods?dryRun=All", NULL,
                                 probe2);
        dead = strcmp(env_field_path(ctr_named(got, "containers", "main"), "NVIDIA_VISIBLE_DEVICES"),
                      "all") == 0;
        json_decref(got);
        json_decref(probe2);
        if (!dead)
            e2e_sleep(0.2);
    }
    ck_assert_msg(dead, "the API server kept calling the old webhook URL");
    json_t *late = e2e_pod(NS, "late");
    e2e_pod_ctr(late, "c", false, "gpupack.io/gpu-mem", "1024", NULL);
    e2e_pod_create(w->cp, late);
    char *ev = e2e_wait_pod_event(w->cp, NS, "late", "FailedScheduling",
                                  "lacks the NVIDIA_VISIBLE_DEVICES", 60);
    ck_assert_msg(ev != NULL, "no FailedScheduling event naming the missing env");
    free(ev);
    json_t *lp = e2e_pod_get(w->cp, NS, "late");
    ck_assert_ptr_null(json_object_get(json_object_get(lp, "spec"), "nodeName"));
    json_decref(lp);
    e2e_world_down(w);
    free(ca);
    free(key);
    free(crt);
    free(cmd);
    free(dir);
}
END_TEST

E2E_SUITE(webhook)
{
    Suite *s = suite_create("e2e webhook");
    E2E_TEST(s, webhook_injects_and_bind_fills, 180);
    return s;
}
