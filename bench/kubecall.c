/* kubecall.c -- the CPU gpupack's API client spends per request, against a real API server.
 *   bin/kubecall KUBECONFIG [REQUESTS] [THREADS] [PATH]
 * THREADS threads (default 16, as many as the bind threads) share one client and send
 * REQUESTS (default 5000) GETs of PATH (default /api/v1/namespaces/default: a small answer,
 * so that the API server's work and the bytes stay small beside the client's own cost). Prints
 * this process's CPU (user + system) per request and the wall time: the client's cost alone,
 * to compare two builds side by side on the same control plane. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "kube/kube.h"
#include "kube/kubeconfig.h"
#include "lib/util.h"

typedef struct run {
    gp_kube *k;
    const char *path;
    atomic_int left, failed;
} run;

static void *sender(void *arg)
{
    run *r = arg;
    while (atomic_fetch_sub(&r->left, 1) > 0) {
        gp_kube_resp resp;
        gp_err err;
        if (kube_request(r->k, "GET", r->path, NULL, NULL, 10, NULL, &resp, &err) < 0 || resp.status != 200)
            atomic_fetch_add(&r->failed, 1);
        kube_resp_free(&resp);
    }
    return NULL;
}

static double cpu_s(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6 + (double)u.ru_stime.tv_sec +
           (double)u.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: kubecall KUBECONFIG [REQUESTS] [THREADS] [PATH]\n");
        return 2;
    }
    int n = argc > 2 ? atoi(argv[2]) : 5000, threads = argc > 3 ? atoi(argv[3]) : 16;
    if (n < 1 || threads < 1 || threads > 256) {
        fprintf(stderr, "kubecall: REQUESTS must be >= 1 and THREADS 1..256\n");
        return 2;
    }
    gp_kube_auth auth;
    gp_err err;
    if (kubeconfig_load(argv[1], NULL, &auth, &err) < 0) {
        fprintf(stderr, "kubecall: %s\n", err.msg);
        return 1;
    }
    run r = {.k = kube_new(&auth, &err), .path = argc > 4 ? argv[4] : "/api/v1/namespaces/default"};
    kube_auth_clear(&auth);
    if (!r.k) {
        fprintf(stderr, "kubecall: %s\n", err.msg);
        return 1;
    }
    /* warm: the connections and the TLS sessions exist before the clock starts */
    atomic_init(&r.left, threads);
    atomic_init(&r.failed, 0);
    pthread_t th[256];
    for (int i = 0; i < threads; i++)
        pthread_create(&th[i], NULL, sender, &r);
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    atomic_store(&r.left, n);
    double c0 = cpu_s(), w0 = gp_mono_s();
    for (int i = 0; i < threads; i++)
        pthread_create(&th[i], NULL, sender, &r);
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    double cpu = cpu_s() - c0, wall = gp_mono_s() - w0;
    printf("%d requests, %d threads, %d failed: %.1f us CPU per request, %.2f s wall, %.0f requests/s\n", n,
           threads, atomic_load(&r.failed), 1e6 * cpu / n, wall, n / wall);
    kube_free(r.k);
    return atomic_load(&r.failed) ? 1 : 0;
}
