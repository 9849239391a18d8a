/* live.h -- live mode: the API server feeds the store (LIST+WATCH) and bind
 * writes annotations and the Binding through it. */
#ifndef GP_LIVE_H
#define GP_LIVE_H

#include <stdbool.h>
#include <stddef.h>

#include "pack/cluster.h"
#include "sched/extender.h"
#include "kube/kube.h"
#include "kube/reflector.h"
#include "lib/util.h"

typedef struct gp_live_config {
    const char *kubeconfig;        /* NULL: in-cluster service account */
    double assume_ttl_s;           /* a bind that never reported is released after this (default 120) */
    double watch_stall_s;          /* a watch silent this long is restarted (default 90);
                                    * watches ask timeoutSeconds = 2/3 of it, so a healthy
                                    * server always ends them first */
    int64_t aliyun_unit_mib;       /* for restoring aliyun annotations (default 1024) */
} gp_live_config;

typedef struct gp_live gp_live;

/* Reads credentials and prepares the client; no network yet. Borrows c. */
gp_live *live_new(const gp_live_config *cfg, gp_cluster *c, gp_err *err);
/* The binder the extender calls in live mode (ud = the gp_live). */
gp_binder_fn live_binder(void);
/* Decides whether a bind may start now (leader election's fencing rule) and
 * sets *budget_s to the time the whole bind may take. Called from request
 * threads: must be thread-safe. */
typedef struct gp_live_gate {
    bool (*fn)(void *ud, double *budget_s);
    void *ud;
} gp_live_gate;
/* Every bind asks gate first; a refused bind fails without API calls (the
 * store rolls back). Set before the server starts; borrows gate.ud. */
void live_set_bind_gate(gp_live *l, gp_live_gate gate);
/* The API client (borrowed; lives as long as l). */
gp_kube *live_kube(gp_live *l);
/* Starts the node and pod reflectors (threads). Borrows e for note_pod. */
int live_start(gp_live *l, gp_extender *e, gp_err *err) GP_WUR;
/* True once the first full LIST of nodes and of pods has been applied. */
bool live_ready(gp_live *l);
/* True while the data may be stale (watch down); why gets a reason. */
bool live_stale(gp_live *l, char *why, size_t whylen);
/* Stops threads and frees; accepts NULL. Call before freeing the extender
 * and the cluster (the reflectors use both until they stop). */
void live_free(gp_live *l);

/* Counters for /metrics (thread-safe snapshot). */
typedef struct gp_live_stats {
    gp_reflector_stats nodes, pods;
    unsigned long binds;                /* Bindings posted */
    unsigned long bound, refused, unknown;   /* their outcomes */
    unsigned long settled_bound, settled_released;   /* UNKNOWN outcomes a GET settled */
    unsigned long assumed_expired;      /* in-flight binds released by the TTL */
    unsigned long bypassed;             /* pods found bound without gpupack's bind, accounted */
    unsigned long binds_refused;        /* binds the gate refused (not the leader) */
} gp_live_stats;
void live_stats(gp_live *l, gp_live_stats *out);
/* metrics_fn (live: a gp_live *, or NULL in embedded mode, which reports
 * ready 1, stale 0 and nothing else): gpupack_cluster_ready/_stale, the
 * reflectors' watch/list counters, the Binding outcomes and the bind API
 * histogram. Thread-safe. */
void live_metrics(void *live, gp_buf *out);
/* metrics_fn (live: a gp_live *): gpupack_binds_refused_total, the binds the
 * leader gate refused; listed only when leader election is on. */
void live_gate_metrics(void *live, gp_buf *out);

#endif
