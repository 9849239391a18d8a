/* main.c -- runs the end-to-end scenarios (test/e2e/e2e_*.c) against a real control plane.
 *   build/out/e2e-tests            every scenario
 *   build/out/e2e-tests NAME...    only those (file e2e_NAME.c)
 * Environment: GPUPACK_K8S (a kit: kube-up, kube-down, kube-ctl and their binaries),
 * KUBEBUILDER_ASSETS (binaries for the repository's own scripts in test/k8s), GPUPACK_BIN
 * (default bin/gpupack), CI=true (no control plane is a failure, not a skip). */
#include <check.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "lib/util.h"

#define E2E(n) Suite *e2e_suite_##n(void);
#include "e2e_suites.h"
#undef E2E

e2e_env_t e2e_env;

static const struct entry {
    const char *name;
    Suite *(*make)(void);
} all[] = {
#define E2E(n) {#n, e2e_suite_##n},
#include "e2e_suites.h"
#undef E2E
};

static bool wanted(const char *name, int argc, char **argv)
{
    if (argc < 2)
        return true;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return true;
    return false;
}

static int abs_path(const char *in, char *out, size_t n)
{
    char buf[PATH_MAX];
    if (!realpath(in, buf) || strlen(buf) >= n)
        return -1;
    gp_strlcpy(out, buf, n);
    return 0;
}

static void on_signal(int sig)
{
    /* the runner is interrupted: take everything down before dying */
    e2e_cleanup_all();
    signal(sig, SIG_DFL);
    raise(sig);
}

static bool executable(const char *dir, const char *name)
{
    char *p = xasprintf("%s/%s", dir, name);
    bool ok = access(p, X_OK) == 0;
    free(p);
    return ok;
}

static bool on_path(const char *name)
{
    char *cmd = xasprintf("command -v '%s' >/dev/null 2>&1", name);
    bool ok = system(cmd) == 0;
    free(cmd);
    return ok;
}

/* Where the control plane comes from, first found: GPUPACK_K8S (a kit), ../shared/k8s
 * (the kit beside the repository on the project's machines), KUBEBUILDER_ASSETS with the
 * repository's own scripts (test/k8s). NULL, with *why set, when there is none. */
static const char *find_kit(const char **why)
{
    const char *kit = getenv("GPUPACK_K8S");
    if (kit && *kit) {
        *why = "GPUPACK_K8S names no kit (kube-up missing)";
        return executable(kit, "kube-up") ? kit : NULL;
    }
    if (executable("../shared/k8s", "kube-up"))
        return "../shared/k8s";
    const char *assets = getenv("KUBEBUILDER_ASSETS");
    if (!assets || !*assets) {
        *why = "neither GPUPACK_K8S nor KUBEBUILDER_ASSETS is set";
        return NULL;
    }
    if (!executable(assets, "kube-apiserver") || !executable(assets, "kube-scheduler")) {
        *why = "KUBEBUILDER_ASSETS lacks kube-apiserver or kube-scheduler";
        return NULL;
    }
    if (!executable(assets, "etcd") && !on_path("etcd")) {
        *why = "no etcd in KUBEBUILDER_ASSETS nor on PATH";
        return NULL;
    }
    return "test/k8s";
}

static int no_kit(const char *why)
{
    const char *ci = getenv("CI");
    bool strict = ci && strcmp(ci, "true") == 0;
    fprintf(stderr,
            "e2e: no control plane: %s.\n"
            "     The end-to-end suite runs gpupack against a real etcd + kube-apiserver +\n"
            "     kube-scheduler (1.26 or 1.36 tested). Either point KUBEBUILDER_ASSETS at a directory\n"
            "     holding kube-apiserver, kube-scheduler and kubectl (etcd there or on PATH), e.g.\n"
            "       mkdir -p ~/k8s-1.26 && cd ~/k8s-1.26 && for b in kube-apiserver kube-scheduler kubectl; do\n"
            "         curl -fLO https://dl.k8s.io/release/v1.26.0/bin/linux/amd64/$b; done && chmod +x *\n"
            "       apt-get install etcd-server        # as root, or add an etcd binary there\n"
            "       make e2e KUBEBUILDER_ASSETS=$HOME/k8s-1.26\n"
            "     or set GPUPACK_K8S to a kit that has the binaries (test/k8s/README.md).\n"
            "%s",
            why, strict ? "e2e: CI=true: failing\n" : "e2e: skipped\n");
    return strict ? EXIT_FAILURE : EXIT_SUCCESS;
}

int main(int argc, char **argv)
{
    const char *why = "";
    const char *kit = find_kit(&why);
    if (!kit)
        return no_kit(why);
    if (abs_path(kit, e2e_env.kit, sizeof e2e_env.kit) < 0)
        return no_kit("the kit's path is too long");
    const char *bin = getenv("GPUPACK_BIN");
    if (abs_path(bin && *bin ? bin : "bin/gpupack", e2e_env.gpupack_bin, sizeof e2e_env.gpupack_bin) < 0) {
        fprintf(stderr, "e2e: gpupack binary %s not found (make build)\n", bin ? bin : "bin/gpupack");
        return EXIT_FAILURE;
    }
    if (abs_path(".", e2e_env.repo, sizeof e2e_env.repo) < 0)
        return EXIT_FAILURE;
    snprintf(e2e_env.policies, sizeof e2e_env.policies, "%s/policies", e2e_env.repo);
    char tmpl[] = "/tmp/gpupack-e2e-XXXXXX";
    if (!mkdtemp(tmpl)) {
        perror("mkdtemp");
        return EXIT_FAILURE;
    }
    gp_strlcpy(e2e_env.run_dir, tmpl, sizeof e2e_env.run_dir);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);

    SRunner *sr = NULL;
    for (size_t i = 0; i < GP_ARRAY_LEN(all); i++) {
        if (!wanted(all[i].name, argc, argv))
            continue;
        if (!sr)
            sr = srunner_create(all[i].make());
        else
            srunner_add_suite(sr, all[i].make());
    }
    if (!sr) {
        fprintf(stderr, "e2e: no such scenario file (test/e2e/e2e_NAME.c)\n");
        return 2;
    }
    fprintf(stderr, "e2e: kit %s, gpupack %s, files in %s\n", e2e_env.kit, e2e_env.gpupack_bin,
            e2e_env.run_dir);
    double t = gp_mono_s();
    srunner_run_all(sr, CK_VERBOSE);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    e2e_cleanup_all();
    fprintf(stderr, "e2e: %s in %.0f s\n", failed ? "FAILED" : "passed", gp_mono_s() - t);
    const char *keep = getenv("E2E_KEEP");
    if (failed || (keep && *keep && strcmp(keep, "0") != 0)) {
        fprintf(stderr, "e2e: logs kept in %s\n", e2e_env.run_dir);
    } else {
        char *cmd = xasprintf("rm -rf '%s'", e2e_env.run_dir);
        if (system(cmd) != 0)
            fprintf(stderr, "e2e: could not remove %s\n", e2e_env.run_dir);
        free(cmd);
    }
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
