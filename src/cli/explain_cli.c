/* explain_cli.c -- `gpupack explain NAMESPACE/POD`: why a pending pod fits no
 * node, from a running gpupack (POST /explain) or in embedded mode. */
#include "cli/explain_cli.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_http.h"
#include "pack/clusterfile.h"
#include "sched/explain.h"
#include "kube/kube.h"
#include "kube/kubeconfig.h"
#include "policy/policy_store.h"
#include "lib/flags.h"
#include "lib/yamljson.h"

#define EXPLAIN_MAX_ANSWER (64u << 20)

typedef struct explain_opts {
    const char *server, *cacert, *cluster, *policies, *pod_file, *kubeconfig;
    bool json;
} explain_opts;

#define O(field) offsetof(explain_opts, field)
static const gp_flag explain_flags[] = {
    GP_FLAG("--server", FLAG_STR, O(server), "URL",
     "ask this running gpupack (POST /explain; default http://127.0.0.1:8765)"),
    GP_FLAG("--cacert", FLAG_STR, O(cacert), "FILE",
     "an https --server's certificate is checked against this CA (PEM; default: the system's)"),
    GP_FLAG("--cluster", FLAG_STR, O(cluster), "FILE",
     "embedded mode: evaluate against this cluster file, in process"),
    GP_FLAG("--policies", FLAG_STR, O(policies), "DIR", "with --cluster: the policy files to use"),
    GP_FLAG("--pod", FLAG_STR, O(pod_file), "FILE|-", "the pod, YAML or JSON (- = stdin)"),
    GP_FLAG("--kubeconfig", FLAG_STR, O(kubeconfig), "FILE",
     "read the pod from the API server (default $KUBECONFIG)"),
    GP_FLAG("--json", FLAG_BOOL, O(json), NULL, "print the answer as JSON"),
};
#undef O

static const gp_command explain_cmd = {
    "gpupack explain", "NAMESPACE/POD [flags]",
    "Says why a pending pod fits no node, and what would make it fit. The pod comes from\n"
    "--pod, else from --cluster FILE, else from the API server (--kubeconfig or $KUBECONFIG).",
    explain_flags, GP_ARRAY_LEN(explain_flags), NULL, 1};

static bool is_pod(const json_t *o, const char *ns, const char *name)
{
    const json_t *md = json_object_get(o, "metadata");
    const char *k = json_string_value(json_object_get(o, "kind"));
    const char *n = json_string_value(json_object_get(md, "name"));
    const char *s = json_string_value(json_object_get(md, "namespace"));
    return k && strcmp(k, "Pod") == 0 && n && strcmp(n, name) == 0 &&
           strcmp(s ? s : "default", ns) == 0;
}

const json_t *explain_find_pod(const json_t *docs, const char *ns, const char *name)
{
    size_t i, k;
    const json_t *d, *it;
    json_array_foreach(docs, i, d) {
        if (is_pod(d, ns, name))
            return d;
        json_array_foreach(json_object_get(d, "items"), k, it) if (is_pod(it, ns, name)) return it;
    }
    return NULL;
}

/* The pod from the API server named by a kubeconfig. Returns owned or NULL. */
static json_t *pod_from_api(const char *kubeconfig, const char *ns, const char *name, gp_err *err)
{
    gp_kube_auth auth = {0};
    json_t *pod = NULL;
    gp_kube *k = NULL;
    gp_kube_resp r = {0};
    if (kubeconfig_load(kubeconfig, NULL, &auth, err))
        goto out;
    k = kube_new(&auth, err);
    if (!k)
        goto out;
    char *path = kube_pod_path(ns, name, NULL);
    char what[600];
    snprintf(what, sizeof what, "GET pod %s/%s", ns, name);
    long st = kube_call(k, "GET", path, NULL, NULL, 30, NULL, what, &r, err);
    free(path);
    if (st / 100 != 2)
        goto out;
    pod = json_loadb(r.body.data, r.body.len, 0, NULL);
    if (!pod)
        gp_fail(err, "GET pod %s/%s: the answer is not JSON", ns, name);
out:
    kube_resp_free(&r);
    kube_free(k);
    kube_auth_clear(&auth);
    return pod;
}

/* POST the pod to URL/explain; returns the answer or NULL. */
static json_t *explain_remote(const char *server, const char *cacert, const json_t *pod,
                             gp_err *err)
{
    char *url = xasprintf("%s/explain", server);
    char *body = json_dumps(pod, JSON_COMPACT);
    json_t *j = cli_http_json(url, body ? body : "{}", cacert, 60, EXPLAIN_MAX_ANSWER, err);
    free(body);
    free(url);
    return j;
}

/* Embedded: the cluster file and policies in this process. */
static json_t *explain_local(const char *cluster, const char *policies, const json_t *pod,
                             gp_err *err)
{
    json_t *out = NULL;
    policy_store *ps = NULL;
    gp_extender *e = NULL;
    gp_cluster *c = cluster_new();
    if (clusterfile_load(c, cluster, 1024, NULL, err))
        goto done;
    gp_extender_config cfg = {0};
    if (policies) {
        if (policy_store_open(policies, &ps, err))
            goto done;
        cfg.policies = policy_store_current;
        cfg.policies_ud = ps;
    }
    e = extender_new(c, &cfg);
    out = explain_pod(e, c, pod, err);
done:
    extender_free(e);
    policy_store_free(ps);
    cluster_free(c);
    return out;
}

int explain_main(int argc, char **argv)
{
    explain_opts o = {.kubeconfig = getenv("KUBECONFIG")};
    const char *args[1];
    int nargs = 0;
    int prc = flags_parse(&explain_cmd, argc, argv, &o, args, &nargs);
    if (prc != FLAGS_OK)
        return prc == FLAGS_HELP ? 0 : 2;
    const char *server = o.server, *cluster = o.cluster, *policies = o.policies;
    const char *pod_file = o.pod_file, *kubeconfig = o.kubeconfig;
    bool as_json = o.json;
    const char *target = nargs ? args[0] : NULL;
    if (!target)
        return flags_error(&explain_cmd, "which pod? give NAMESPACE/POD");
    const char *slash = strchr(target, '/');
    if (!slash || slash == target || !slash[1] || strlen(target) >= 2 * GP_NAME_MAX)
        return flags_error(&explain_cmd, "%.300s is not NAMESPACE/POD", target);
    if (server && cluster)
        return flags_error(&explain_cmd, "--server and --cluster exclude each other");
    if (o.cacert && cluster)
        return flags_error(&explain_cmd, "--cacert is for --server, not --cluster");
    char ns[GP_NAME_MAX], name[GP_NAME_MAX];
    snprintf(ns, sizeof ns, "%.*s", (int)(slash - target), target);
    gp_strlcpy(name, slash + 1, sizeof name);

    int rc = 1;
    gp_err err;
    json_t *docs = NULL, *own = NULL, *ex = NULL;
    const json_t *pod = NULL;
    if (pod_file || cluster) {
        const char *path = pod_file ? pod_file : cluster;
        docs = yamljson_load_file(strcmp(path, "-") == 0 ? "/dev/stdin" : path, &err);
        if (!docs) {
            fprintf(stderr, "gpupack explain: %s\n", err.msg);
            goto out;
        }
        pod = explain_find_pod(docs, ns, name);
        if (!pod && pod_file && json_array_size(docs) == 1)
            pod = json_array_get(docs, 0);   /* --pod with one object: take it as it is */
    }
    if (!pod && !cluster) {
        if (!kubeconfig) {
            fprintf(stderr, "gpupack explain: pod %s/%s: give --pod FILE, --cluster FILE or "
                            "--kubeconfig FILE\n", ns, name);
            goto out;
        }
        own = pod_from_api(kubeconfig, ns, name, &err);
        if (!own) {
            fprintf(stderr, "gpupack explain: %s\n", err.msg);
            goto out;
        }
        pod = own;
    }
    if (!pod) {
        fprintf(stderr, "gpupack explain: no pod %s/%s in %s\n", ns, name, pod_file ? pod_file : cluster);
        goto out;
    }
    if (cluster)
        ex = explain_local(cluster, policies, pod, &err);
    else
        ex = explain_remote(server ? server : "http://127.0.0.1:8765", o.cacert, pod, &err);
    if (!ex) {
        fprintf(stderr, "gpupack explain: %s\n", err.msg);
        goto out;
    }
    if (as_json) {
        json_dumpf(ex, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        putchar('\n');
    } else {
        explain_print(stdout, ex);
    }
    rc = 0;
out:
    json_decref(ex);
    json_decref(own);
    json_decref(docs);
    return rc;
}
