/* e2e_manifests.c -- manifests/ installs the way the ecosystem installs, on both kit
 * versions (v1.36 and v1.26):
 *   - every overlay of manifests/overlays/ renders with `kubectl kustomize` (kubectl v1.36,
 *     the kit's) and passes `kubectl apply -k --dry-run=server`, every object of it;
 *   - on an API server before 1.30 the overlays that register the webhook with
 *     matchConditions are refused for exactly that field (strict field validation), and
 *     everything else in them passes;
 *   - applied for real, the RBAC lets gpupack and the second scheduler do their work, and
 *     not more than listed;
 *   - applied for real, the webhook registration sends GPU pods to gpupack and no other pod
 *     (from 1.30: matchConditions + failurePolicy Fail; before: every pod, Ignore).
 * cert-manager's Issuer and Certificate are stood in for by test/fixtures/manifests/
 * cert-manager-crds.yaml (the fields the manifests use, typed). The certificates of
 * components/script-certs are made with scripts/gen-certs.sh and scripts/webhook-certs.sh
 * in a copy of manifests/. kubectl: e2e_kubectl() (the kit's v1.36.3 unless told otherwise).
 * About 45 s. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "lib/yamljson.h"

#define NS "e2e-manifests"
#define MAX_OVERLAYS 16


typedef struct overlay {
    char name[64];
    char dir[1200];
    char rendered[1200];
    size_t objects;
    bool match_conditions;   /* registers the webhook with matchConditions (needs 1.30) */
    bool requeue;            /* grants pods patch cluster-wide (components/requeue-rbac) */
} overlay;

#define KC(cp, out, ...) e2e_kubectl_run((cp), NULL, (out), (const char *const[]){__VA_ARGS__, NULL})

static int sh(const char *cmd)
{
    const char *argv[] = {"sh", "-c", cmd, NULL};
    char *log = xasprintf("%s/manifests-sh.log", e2e_env.run_dir);
    int rc = e2e_run(argv, NULL, log, 60);
    free(log);
    return rc;
}

static int count_lines_with(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(((const overlay *)a)->name, ((const overlay *)b)->name);
}

/* The overlays of the copy, sorted. */
static size_t list_overlays(const char *root, overlay *ov)
{
    char *dir = xasprintf("%s/overlays", root);
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "no %s", dir);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < MAX_OVERLAYS) {
        if (e->d_name[0] == '.')
            continue;
        gp_strlcpy(ov[n].name, e->d_name, sizeof ov[n].name);
        snprintf(ov[n].dir, sizeof ov[n].dir, "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    free(dir);
    qsort(ov, n, sizeof *ov, cmp_name);
    return n;
}

/* Renders one overlay with kubectl kustomize and reads what it made. */
static void render(overlay *o)
{
    snprintf(o->rendered, sizeof o->rendered, "%s/render-%s.yaml", e2e_env.run_dir, o->name);
    char *out;
    int rc = KC(NULL, &out, "kustomize", o->dir, "-o", o->rendered);
    ck_assert_msg(rc == 0, "kubectl kustomize %s: exit %d: %s", o->dir, rc, out);
    free(out);
    gp_err err;
    json_t *docs = yamljson_load_file(o->rendered, &err);
    ck_assert_msg(docs != NULL, "%s", err.msg);
    size_t i;
    json_t *d;
    json_array_foreach(docs, i, d) {
        const char *kind = json_string_value(json_object_get(d, "kind"));
        const char *name = json_string_value(json_object_get(json_object_get(d, "metadata"), "name"));
        ck_assert_msg(kind && name && json_string_value(json_object_get(d, "apiVersion")),
                      "%s: object %zu lacks apiVersion, kind or metadata.name", o->rendered, i);
        if (strcmp(kind, "ClusterRoleBinding") == 0 && strcmp(name, "gpupack-requeue") == 0)
            o->requeue = true;
        if (strcmp(kind, "MutatingWebhookConfiguration") == 0) {
            json_t *hooks = json_object_get(d, "webhooks");
            size_t k;
            json_t *h;
            json_array_foreach(hooks, k, h)
                if (json_array_size(json_object_get(h, "matchConditions")) > 0)
                    o->match_conditions = true;
        }
    }
    o->objects = json_array_size(docs);
    json_decref(docs);
    e2e_log("manifests: %s renders %zu objects%s%s", o->name, o->objects,
            o->match_conditions ? " (webhook with matchConditions)" : "",
            o->requeue ? " (requeue RBAC)" : "");
}

/* The rendered objects whose kind passes keep(), as a JSON List in a file; owned path. */
static char *subset(const overlay *o, const char *what, bool (*keep)(const char *kind))
{
    gp_err err;
    json_t *docs = yamljson_load_file(o->rendered, &err);
    ck_assert_msg(docs != NULL, "%s", err.msg);
    json_t *items = json_array();
    size_t i;
    json_t *d;
    json_array_foreach(docs, i, d)
        if (keep(json_string_value(json_object_get(d, "kind"))))
            json_array_append(items, d);
    json_t *list = json_pack("{s:s,s:s,s:o}", "apiVersion", "v1", "kind", "List", "items", items);
    char *path = xasprintf("%s/%s-%s.json", e2e_env.run_dir, o->name, what);
    ck_assert(json_dump_file(list, path, JSON_INDENT(1)) == 0);
    json_decref(list);
    json_decref(docs);
    return path;
}

static bool not_webhook(const char *kind)
{
    return strcmp(kind, "MutatingWebhookConfiguration") != 0;
}

static bool is_rbac(const char *kind)
{
    return strcmp(kind, "ServiceAccount") == 0 || strcmp(kind, "Role") == 0 ||
           strcmp(kind, "RoleBinding") == 0 || strcmp(kind, "ClusterRole") == 0 ||
           strcmp(kind, "ClusterRoleBinding") == 0 || strcmp(kind, "Namespace") == 0;
}

static bool is_webhook(const char *kind)
{
    return !not_webhook(kind);
}

/* The server's minor version (26, 36, ...). */
static int server_minor(e2e_cp *cp)
{
    json_t *v = e2e_api_ok(cp, "GET", "/version", NULL, NULL);
    const char *minor = json_string_value(json_object_get(v, "minor"));
    int m = minor ? atoi(minor) : 0;
    e2e_log("manifests: API server %s", json_string_value(json_object_get(v, "gitVersion")));
    json_decref(v);
    ck_assert_int_gt(m, 0);
    return m;
}

static void dry_run_overlays(e2e_cp *cp, int minor, overlay *ov, size_t n)
{
    char *out;
    char *crds = xasprintf("%s/test/fixtures/manifests/cert-manager-crds.yaml", e2e_env.repo);
    int rc = KC(cp, &out, "apply", "-f", crds);
    free(crds);
    ck_assert_msg(rc == 0, "cert-manager stand-in CRDs: %s", out);
    free(out);
    rc = KC(cp, &out, "wait", "--for=condition=Established", "--timeout=60s",
            "crd/issuers.cert-manager.io", "crd/certificates.cert-manager.io");
    ck_assert_msg(rc == 0, "CRDs not established: %s", out);
    free(out);
    /* a dry run creates nothing, so the namespaced objects need the namespace for real */
    e2e_ns_create(cp, "gpupack-system");
    for (size_t i = 0; i < n; i++) {
        overlay *o = &ov[i];
        rc = KC(cp, &out, "apply", "-k", o->dir, "--dry-run=server");
        if (minor >= 30 || !o->match_conditions) {
            ck_assert_msg(rc == 0, "1.%d: kubectl apply -k %s --dry-run=server: exit %d:\n%s",
                          minor, o->name, rc, out);
            int ok = count_lines_with(out, "(server dry run)");
            ck_assert_msg(ok == (int)o->objects, "1.%d: %s: %d of %zu objects passed:\n%s", minor,
                          o->name, ok, o->objects, out);
            e2e_log("manifests: 1.%d: %s: all %zu objects pass a server-side dry run", minor,
                    o->name, o->objects);
        } else {
            ck_assert_msg(rc != 0 && strstr(out, "matchConditions"),
                          "1.%d: %s should be refused for matchConditions (exit %d):\n%s", minor,
                          o->name, rc, out);
            free(out);
            char *rest = subset(o, "without-webhook", not_webhook);
            rc = KC(cp, &out, "apply", "-f", rest, "--dry-run=server");
            ck_assert_msg(rc == 0, "1.%d: %s without the webhook: exit %d:\n%s", minor, o->name,
                          rc, out);
            int ok = count_lines_with(out, "(server dry run)");
            ck_assert_int_eq(ok, (int)o->objects - 1);
            e2e_log("manifests: 1.%d: %s: refused for webhooks[0].matchConditions (needs 1.30); "
                    "its other %d objects pass", minor, o->name, ok);
            free(rest);
        }
        free(out);
    }
}

/* kubectl auth can-i as a service account of gpupack-system; what is TYPE or TYPE/NAME,
 * or TYPE:SUBRESOURCE. */
static bool can(e2e_cp *cp, const char *sa, const char *verb, const char *what, const char *ns)
{
    char *as = xasprintf("--as=system:serviceaccount:gpupack-system:%s", sa);
    char *res = xstrdup(what);
    char *colon = strchr(res, ':');
    char *sub = xasprintf("--subresource=%s", colon ? colon + 1 : "");
    if (colon)
        *colon = '\0';
    const char *where = ns ? "-n" : "--all-namespaces";
    char *out;
    int rc = colon ? KC(cp, &out, "auth", "can-i", as, verb, res, sub, where, ns)
                   : KC(cp, &out, "auth", "can-i", as, verb, res, where, ns);
    free(sub);
    free(res);
    ck_assert_msg(rc == 0 || rc == 1, "kubectl auth can-i: exit %d: %s", rc, out);
    free(out);
    free(as);
    return rc == 0;
}

static const struct perm {
    const char *sa, *verb, *what, *ns;   /* ns NULL: all namespaces */
    bool allowed;
    bool requeue;                        /* allowed exactly when the overlay grants requeue */
    int min_minor;                       /* checked from this Kubernetes minor on (0: all) */
} perms[] = {
    {"gpupack", "list", "nodes", NULL, true, false, 0},
    {"gpupack", "watch", "nodes", NULL, true, false, 0},
    {"gpupack", "watch", "pods", NULL, true, false, 0},
    {"gpupack", "get", "pods", NULL, true, false, 0},
    {"gpupack", "create", "pods:binding", NULL, true, false, 0},
    {"gpupack", "create", "events", NULL, true, false, 0},
    {"gpupack", "patch", "events", NULL, true, false, 0},
    {"gpupack", "create", "leases", "gpupack-system", true, false, 0},
    {"gpupack", "update", "leases/gpupack", "gpupack-system", true, false, 0},
    {"gpupack", "patch", "pods", "gpupack-system", true, false, 0},
    {"gpupack", "patch", "pods", "default", false, true, 0},
    /* preemption (docs/priorities.md): the preemptor's nominated node, evictions (never a
     * plain delete), the budgets it ranks victims by */
    {"gpupack", "patch", "pods:status", NULL, true, false, 0},
    {"gpupack", "create", "pods:eviction", NULL, true, false, 0},
    {"gpupack", "list", "poddisruptionbudgets", NULL, true, false, 0},
    {"gpupack", "watch", "poddisruptionbudgets", NULL, true, false, 0},
    /* DRA (docs/dra.md): the devices, claims and classes Kubernetes allocates itself */
    {"gpupack", "list", "resourceslices.resource.k8s.io", NULL, true, false, 34},
    {"gpupack", "watch", "resourceclaims.resource.k8s.io", NULL, true, false, 34},
    {"gpupack", "get", "resourceclaims.resource.k8s.io", NULL, true, false, 34},
    {"gpupack", "watch", "deviceclasses.resource.k8s.io", NULL, true, false, 34},
    {"gpupack", "update", "resourceclaims.resource.k8s.io", NULL, false, false, 34},
    {"gpupack", "update", "pods", "default", false, false, 0},
    {"gpupack", "delete", "pods", NULL, false, false, 0},
    {"gpupack", "get", "secrets", NULL, false, false, 0},
    {"gpupack", "update", "leases/gpupack-scheduler", "gpupack-system", false, false, 0},
    {"gpupack-scheduler", "create", "leases", "gpupack-system", true, false, 0},
    {"gpupack-scheduler", "get", "leases/gpupack-scheduler", "gpupack-system", true, false, 0},
    {"gpupack-scheduler", "update", "leases/gpupack-scheduler", "gpupack-system", true, false, 0},
    {"gpupack-scheduler", "update", "leases/gpupack", "gpupack-system", false, false, 0},
    {"gpupack-scheduler", "watch", "pods", NULL, true, false, 0},
    {"gpupack-scheduler", "create", "pods:binding", NULL, true, false, 0},
    {"gpupack-scheduler", "get", "configmaps/extension-apiserver-authentication", "kube-system",
     true, false, 0},
};

static void check_rbac(e2e_cp *cp, int minor, const overlay *o)
{
    char *rbac = subset(o, "rbac", is_rbac);
    char *out;
    int rc = KC(cp, &out, "apply", "-f", rbac);
    ck_assert_msg(rc == 0, "applying the RBAC of %s: %s", o->name, out);
    free(out);
    for (size_t i = 0; i < GP_ARRAY_LEN(perms); i++) {
        const struct perm *p = &perms[i];
        if (minor < p->min_minor)
            continue;
        bool want = p->requeue ? o->requeue : p->allowed;
        bool got = can(cp, p->sa, p->verb, p->what, p->ns);
        ck_assert_msg(got == want, "1.%d: %s %s %s %s in %s, expected %s", minor, p->sa,
                      got ? "may" : "may not", p->verb, p->what, p->ns ? p->ns : "every namespace",
                      want ? "allowed" : "refused");
    }
    if (o->requeue) {   /* the next overlay's RBAC is checked on the same cluster */
        rc = KC(cp, &out, "delete", "clusterrolebinding,clusterrole", "gpupack-requeue");
        ck_assert_msg(rc == 0, "removing the requeue RBAC of %s: %s", o->name, out);
        free(out);
    }
    e2e_log("manifests: 1.%d: RBAC of %s: %zu permissions as listed", minor, o->name,
            GP_ARRAY_LEN(perms));
    free(rbac);
}

/* POSTs a pod; returns the HTTP status, *msg the Status message (owned) when refused. */
static long create_pod(e2e_cp *cp, json_t *pod, char **msg)
{
    char *path = xasprintf("/api/v1/namespaces/%s/pods", NS);
    long st;
    json_t *r = e2e_api(cp, "POST", path, pod, &st);
    const char *m = json_string_value(json_object_get(r, "message"));
    *msg = xstrdup(m ? m : "");
    json_decref(r);
    json_decref(pod);
    free(path);
    return st;
}

static json_t *pod_with(const char *name, bool init, const char *res, const char *val)
{
    json_t *p = e2e_pod(NS, name);
    json_t *spec = json_object_get(p, "spec");
    json_t *ctr = json_pack("{s:s,s:s,s:{}}", "name", "main", "image", "registry.invalid/e2e:1",
                            "resources");
    json_array_append_new(json_object_get(spec, "containers"), ctr);
    json_t *c = ctr;
    if (init) {
        c = json_pack("{s:s,s:s,s:{}}", "name", "setup", "image", "registry.invalid/e2e:1",
                      "resources");
        json_array_append_new(json_object_get(spec, "initContainers"), c);
    }
    if (res)
        json_object_set_new(json_object_get(c, "resources"), "limits", json_pack("{s:s}", res, val));
    return p;
}

/* The webhook's registration, applied for real, with no gpupack behind it (its Service
 * does not exist): a pod the API server sends to the webhook fails to be created when
 * failurePolicy is Fail, and is created when it is Ignore. */
static void check_webhook_selection(e2e_cp *cp, int minor, const overlay *o)
{
    char *wh = subset(o, "webhook", is_webhook);
    char *out;
    int rc = KC(cp, &out, "apply", "-f", wh);
    ck_assert_msg(rc == 0, "applying the webhook registration of %s: %s", o->name, out);
    free(out);
    e2e_ns_create(cp, NS);
    static const struct {
        const char *name;
        bool init;
        const char *res, *val;
        bool label_off;
        bool gpu;
    } pods[] = {
        {"cpu", false, "cpu", "1", false, false},
        {"no-resources", false, NULL, NULL, false, false},
        {"gpu-mem", false, "gpupack.io/gpu-mem", "4096", false, true},
        {"gpu-count", false, "gpupack.io/gpu-count", "1", false, true},
        {"init-aliyun", true, "aliyun.com/gpu-mem", "4", false, true},
        {"opted-out", false, "gpupack.io/gpu-mem", "4096", true, false},
    };
    bool fail = o->match_conditions;   /* components/webhook: Fail; before 1.30: Ignore */
    for (size_t i = 0; i < GP_ARRAY_LEN(pods); i++) {
        json_t *p = pod_with(pods[i].name, pods[i].init, pods[i].res, pods[i].val);
        if (pods[i].label_off)
            json_object_set_new(json_object_get(json_object_get(p, "metadata"), "labels"),
                                "gpupack.io/webhook", json_string("off"));
        char *msg;
        long st = create_pod(cp, p, &msg);
        bool refused = fail && pods[i].gpu;
        if (refused)
            ck_assert_msg(st / 100 != 2 && strstr(msg, "env.gpupack.io"),
                          "1.%d: pod %s should be sent to the webhook (and refused: no gpupack): "
                          "HTTP %ld %s", minor, pods[i].name, st, msg);
        else
            ck_assert_msg(st == 201, "1.%d: pod %s should be created: HTTP %ld %s", minor,
                          pods[i].name, st, msg);
        free(msg);
    }
    e2e_log("manifests: 1.%d: webhook of %s: %s", minor, o->name,
            fail ? "GPU pods (containers, init containers) go to it (refused while "
                   "gpupack is away), other and opted-out pods are created without it"
                 : "every pod is created while gpupack is away (failurePolicy Ignore)");
    free(wh);
}

static const overlay *find(const overlay *ov, size_t n, bool match_conditions, bool scheduler)
{
    for (size_t i = 0; i < n; i++) {
        if (ov[i].match_conditions != match_conditions)
            continue;
        char *cmd = xasprintf("grep -q 'name: gpupack-scheduler-leader-election' '%s'",
                              ov[i].rendered);
        bool has = sh(cmd) == 0;
        free(cmd);
        if (has == scheduler)
            return &ov[i];
    }
    return NULL;
}

static void log_kubectl(void)
{
    char *out;
    int rc = KC(NULL, &out, "version", "--client");
    ck_assert_int_eq(rc, 0);
    out[strcspn(out, "\n")] = '\0';
    e2e_log("manifests: kubectl %s: %s", e2e_kubectl(), out);
    free(out);
}

START_TEST(overlays_install_on_both_versions)
{
    double t0 = gp_mono_s();
    /* a copy of manifests/ with certificates for components/script-certs */
    char *root = xasprintf("%s/manifests", e2e_env.run_dir);
    const char *r = e2e_env.repo;
    char *cmd = xasprintf("rm -rf '%s' && cp -r '%s/manifests' '%s' && "
                          "rm -rf '%s/components/script-certs/mtls' '%s/components/script-certs/webhook' && "
                          "'%s/scripts/gen-certs.sh' '%s/components/script-certs/mtls' && "
                          "'%s/scripts/webhook-certs.sh' '%s/components/script-certs/webhook'",
                          root, r, root, root, root, r, root, r, root);
    ck_assert_msg(sh(cmd) == 0, "could not copy manifests/ and make certificates: %s", cmd);
    free(cmd);

    static const char *const versions[] = {"1.36", "1.26"};
    overlay ov[MAX_OVERLAYS];
    memset(ov, 0, sizeof ov);
    size_t n = 0;
    int done[2] = {0, 0};
    for (size_t v = 0; v < GP_ARRAY_LEN(versions); v++) {
        e2e_cp_opts opts = {.version = versions[v]};
        e2e_cp *cp = e2e_cp_up(&opts);
        int minor = server_minor(cp);
        if (v == 0) {
            log_kubectl();
            n = list_overlays(root, ov);
            ck_assert_msg(n >= 4, "%zu overlays in manifests/overlays", n);
            for (size_t i = 0; i < n; i++)
                render(&ov[i]);
        }
        if (v > 0 && minor == done[0]) {
            /* KUBEBUILDER_ASSETS: one set of binaries whatever K8S_VERSION says */
            e2e_log("manifests: K8S_VERSION=%s gave 1.%d again (one set of binaries): "
                    "not repeated", versions[v], minor);
            e2e_cp_down(cp);
            continue;
        }
        done[v] = minor;
        dry_run_overlays(cp, minor, ov, n);
        /* the second-scheduler setup for this version: its RBAC and webhook, for real */
        const overlay *o = find(ov, n, minor >= 30, true);
        ck_assert_msg(o != NULL, "no overlay with the second scheduler for 1.%d", minor);
        check_rbac(cp, minor, o);
        check_webhook_selection(cp, minor, o);
        e2e_cp_down(cp);
    }
    if (done[1])
        e2e_log("manifests: %zu overlays on 1.%d and 1.%d in %.0f s", n, done[0], done[1],
                gp_mono_s() - t0);
    else
        e2e_log("manifests: %zu overlays on 1.%d only in %.0f s", n, done[0], gp_mono_s() - t0);
    free(root);
}
END_TEST

E2E_SUITE(manifests)
{
    Suite *s = suite_create("e2e manifests");
    E2E_TEST(s, overlays_install_on_both_versions, 300);
    return s;
}
