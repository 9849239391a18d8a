/* harness.h -- end-to-end tests against a real control plane (the kit: main.c finds it):
 * control planes, gpupack as a child process, API helpers, the one checker.
 *
 * Every function here that can fail stops the current test with a Check
 * failure that says what went wrong (and prints the tail of gpupack's log),
 * so scenarios read as straight-line code. Everything a test starts (control
 * planes, gpupack processes) is recorded in the run's registry and torn down
 * by the runner even when the test fails, aborts or times out.
 *
 * Ownership: e2e_*_up / _start return objects the test frees with the
 * matching _down / _stop. json_t results are owned by the caller unless said
 * otherwise; builders that take a json_t argument steal it. */
#ifndef GP_E2E_HARNESS_H
#define GP_E2E_HARNESS_H

#include <check.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "kube/apiversion.h"
#include "kube/kube.h"
#include "lib/util.h"

/* The profile name of the shipped manifests/base/scheduler-config.yaml; pods that
 * set it go through gpupack. Read from the file, so it follows edits. */
const char *e2e_scheduler_name(void);

/* --- runner ------------------------------------------------------------ */

/* Where things are, set once by the runner (absolute paths). */
typedef struct e2e_env_t {
    char kit[1024];                 /* GPUPACK_K8S: kube-up, kube-down, kube-ctl */
    char gpupack_bin[1024];         /* GPUPACK_BIN, default bin/gpupack */
    char repo[1024];                /* the repository (manifests/, policies/) */
    char policies[1100];            /* REPO/policies */
    char run_dir[256];              /* this run's temporary files; kept when a test failed */
} e2e_env_t;
extern e2e_env_t e2e_env;

/* Each scenario file test/e2e/e2e_TOPIC.c defines its suite with E2E_SUITE(TOPIC) { ... }.
 * e2e_tcase adds one test in its own TCase with the runner's cleanup fixture
 * and a timeout in seconds (scaled by CK_TIMEOUT_MULTIPLIER as usual). */
#define E2E_SUITE(topic) \
    Suite *e2e_suite_##topic(void); \
    Suite *e2e_suite_##topic(void)
TCase *e2e_tcase(Suite *s, const char *name, const TTest *test, double timeout_s);
#define E2E_TEST(suite, fn, timeout_s) e2e_tcase((suite), #fn, fn, (timeout_s))

/* Kills every gpupack child and kube-downs every control plane recorded in
 * the registry (the runner calls it after each test and on exit). */
void e2e_cleanup_all(void);

/* Runs argv (execvp; env_add: extra "K=V" entries or NULL), stdout and stderr appended
 * to the file out (inherited when NULL). Returns the exit status, -1 when it could not
 * run, was killed by a signal or outlived timeout_s (0 = no limit; then SIGKILLed). */
int e2e_run(const char *const *argv, const char *const *env_add, const char *out,
            double timeout_s);

/* Prints a progress line on stderr with the elapsed time of the test. */
void e2e_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* --- control plane ----------------------------------------------------- */

typedef struct e2e_cp_opts {
    bool no_watch_cache;            /* kube-up --no-watch-cache: 410 after compaction */
    const char *apiserver_args;     /* extra kube-apiserver flags (K8S_APISERVER_ARGS) */
    const char *scheduler_args;     /* extra kube-scheduler flags (K8S_SCHEDULER_ARGS) */
    const char *version;            /* K8S_VERSION for this one ("1.26", "1.36"); NULL:
                                     * the environment's (the kit's default: 1.26) */
    bool controller_manager;        /* kube-up --controller-manager: ReplicaSets, garbage
                                     * collection, PDB status, DRA claims from templates */
} e2e_cp_opts;

typedef struct e2e_cp {
    char dir[512];                  /* kube-up's DIR */
    char kubeconfig[600];           /* admin kubeconfig */
    gp_kube *kube;                  /* admin client for the test's own calls */
    e2e_cp_opts opts;
    gp_apiversion ver;              /* what the started kube-apiserver's /version says;
                                     * checked against DIR/env's K8S_VERSION */
} e2e_cp;

/* kube-up without a scheduler (o may be NULL). */
e2e_cp *e2e_cp_up(const e2e_cp_opts *o);
/* (Re)starts kube-scheduler with a KubeSchedulerConfiguration (JSON is YAML). */
void e2e_cp_scheduler(e2e_cp *cp, const json_t *config);
/* kube-ctl DIR ACTION [ARG]: stop-apiserver, start-apiserver, restart-apiserver,
 * stop-scheduler, start-scheduler, compact-etcd. env: extra "K=V" or NULL. */
void e2e_cp_ctl(e2e_cp *cp, const char *action, const char *env);
void e2e_cp_down(e2e_cp *cp);       /* accepts NULL */
/* Whether the control plane is at least MAJOR.MINOR.PATCH (from its /version).
 * Scenarios assert each version's behaviour with it where the API server or
 * kube-scheduler differ (never to skip a check). */
bool e2e_k8s_at_least(const e2e_cp *cp, int major, int minor, int patch);
/* "v1.26.0": the control plane's gitVersion (borrowed). */
const char *e2e_k8s_version(const e2e_cp *cp);
/* A variable of DIR/env (ETCD_URL, K8S_APISERVER, ...); owned, NULL when absent. */
char *e2e_cp_env(e2e_cp *cp, const char *var);
/* Deletes a pod behind the API server's back (etcdctl del /registry/pods/NS/NAME):
 * works while kube-apiserver is stopped; no watch event reaches anyone. */
void e2e_etcd_delete_pod(e2e_cp *cp, const char *ns, const char *name);

/* --- kubectl ------------------------------------------------------------ */

/* A kubectl for the tests that need one (manifests, plugin): GPUPACK_KUBECTL, else
 * KUBEBUILDER_ASSETS/kubectl, else the kit's v1.36.3 kubectl (bin/v1.36.3/kubectl.xz,
 * unpacked into the run directory once), else kubectl on PATH. Fails the test when none
 * runs. The path stays valid for the whole run. */
const char *e2e_kubectl(void);
/* kubectl ARGS... (NULL-terminated) with KUBECONFIG of cp (NULL: none) and extra
 * environment entries env ("K=V", NULL-terminated, may be NULL). *out (when out is not
 * NULL) gets stdout and stderr, owned. Returns the exit status. */
int e2e_kubectl_run(e2e_cp *cp, const char *const *env, char **out, const char *const *args);

/* --- scheduler configuration ------------------------------------------ */

/* The shipped manifests/base/scheduler-config.yaml, rewritten for a test: every
 * extender's urlPrefix points at http(s)://127.0.0.1:PORT (keeping its path;
 * https when the stanza says enableHTTPS),
 * clientConnection.kubeconfig is @KUBECONFIG@ (kube-up fills it) and leader
 * election is off. Extend e2e_sched_rewrite when the shipped file gains
 * something that needs test paths (TLS files, ...). */
json_t *e2e_sched_config(int gpupack_port);
/* The same, applied to a parsed configuration (modified in place). */
void e2e_sched_rewrite(json_t *cfg, int gpupack_port);

/* --- gpupack ----------------------------------------------------------- */

typedef struct e2e_gp {
    pid_t pid;
    int port;                       /* chosen by the kernel at the first start, kept on restart */
    char url[64];                   /* http://127.0.0.1:PORT */
    char log[600];                  /* stderr of every start, appended */
    char *argv[48];                 /* owned; NULL-terminated */
    e2e_cp *cp;                     /* borrowed */
} e2e_gp;

/* Starts `gpupack serve --kubeconfig CP --listen 127.0.0.1:0 --policies policies
 * EXTRA...` (extra: NULL-terminated flags, may be NULL) and waits until
 * /readyz answers 200. */
e2e_gp *e2e_gp_start(e2e_cp *cp, const char *const *extra);
/* Sends sig and reaps the process (SIGKILL: a crash). */
void e2e_gp_kill(e2e_gp *g, int sig);
/* Starts it again with the same flags and port; waits for /readyz. */
void e2e_gp_restart(e2e_gp *g);
void e2e_gp_stop(e2e_gp *g);        /* SIGTERM, reap, free; accepts NULL */
/* GET path from gpupack: the status and the body (owned string, NULL on transport error). */
char *e2e_gp_get(e2e_gp *g, const char *path, long *status);
/* POSTs body (JSON; NULL = a GET) to gpupack's path with kube-scheduler's test
 * client certificate, as the shipped mutual-TLS stanza has it; as e2e_gp_get. */
char *e2e_gp_post(e2e_gp *g, const char *path, const char *body, long *status);
/* The flags gpupack needs to serve as the shipped stanza expects it (its
 * urlPrefix path; TLS + client CA when the stanza is HTTPS), NULL-terminated;
 * e2e_world_up passes them, scenarios that start gpupack themselves add them. */
const char *const *e2e_shipped_gp_args(void);
/* A sample of /metrics: the line starting with `series` (name plus labels,
 * e.g. "gpupack_pods{state=\"bound\"}"); -1 when absent. */
double e2e_gp_metric(e2e_gp *g, const char *series);
/* Waits until the metric `series` equals want: what gpupack settles in a later
 * round of one of its threads (a held place released, leadership taken). Fails
 * the test, with gpupack's last log lines, when it does not within timeout_s. */
void e2e_gp_wait_metric(e2e_gp *g, const char *series, double want, double timeout_s);
/* One series' value in Prometheus text already read (several from one read), or -1. */
double e2e_metric_in(const char *text, const char *series);
/* GPUs /inspect shows pod ns/name on (0: gpupack holds nothing for it); -1 when
 * /inspect does not answer. */
int e2e_gp_pod_gpus(e2e_gp *g, const char *ns, const char *name);
/* Waits until e2e_gp_pod_gpus == want; returns the seconds it took, or -1 on timeout. */
double e2e_gp_wait_pod_gpus(e2e_gp *g, const char *ns, const char *name, int want, double timeout_s);
/* How many lines of gpupack's log contain `needle`. */
int e2e_gp_log_count(e2e_gp *g, const char *needle);
/* Prints the last lines of gpupack's log (the harness does this on failures). */
void e2e_gp_log_tail(e2e_gp *g, int lines);

/* --- a world: control plane + gpupack + scheduler with the shipped stanza --- */

typedef struct e2e_world_opts {
    e2e_cp_opts cp;
    const char *const *gpupack_args;   /* extra gpupack serve flags, NULL-terminated */
    /* Changes to the rewritten shipped scheduler configuration before kube-scheduler
     * starts (e.g. percentageOfNodesToScore, a second profile); may be NULL. */
    void (*edit_sched)(json_t *cfg, void *ud);
    void *ud;
    bool no_scheduler;                 /* leave kube-scheduler off (start it with e2e_cp_scheduler) */
} e2e_world_opts;

typedef struct e2e_world {
    e2e_cp *cp;
    e2e_gp *gp;
} e2e_world;

e2e_world *e2e_world_up(const e2e_world_opts *o);   /* o may be NULL */
void e2e_world_down(e2e_world *w);                   /* accepts NULL */

/* --- replicas behind a Service (front.c) ------------------------------- */

/* The shipped Service, modelled by a TCP forwarder on 127.0.0.1: every
 * connection goes to the replica whose Pod carries gpupack.io/leader=true at
 * the last poll (once a second; while the API server is down the last
 * answer stands). ready_gate: and only while that replica's /readyz says 200
 * (Ready endpoints); without it, verbs reach a replica whatever its state. */
typedef struct e2e_front e2e_front;
e2e_front *e2e_front_start(e2e_cp *cp, bool ready_gate);
int e2e_front_port(const e2e_front *f);
/* Slot 0 or 1: replica Pod `pod` listens on `port`. */
void e2e_front_backend(e2e_front *f, int slot, const char *pod, int port);
void e2e_front_stop(e2e_front *f);   /* accepts NULL */
/* A replica: Pod gpupack-system/POD (an API object bound to `node`, created
 * unless it exists), then gpupack with --leader-elect for that Pod under
 * `identity`, serving as the shipped stanza expects; waits for /readyz. */
e2e_gp *e2e_replica_start(e2e_cp *cp, const char *pod, const char *identity, const char *node);

/* --- API server -------------------------------------------------------- */

/* One request; body (borrowed) may be NULL. Returns the parsed answer
 * (owned; NULL when the body is not JSON) and the status. Transport errors
 * fail the test unless status is non-NULL (then *status = 0). */
json_t *e2e_api(e2e_cp *cp, const char *method, const char *path, const json_t *body,
                long *status);
/* Same, expecting a 2xx answer; content_type NULL = application/json. */
json_t *e2e_api_ok(e2e_cp *cp, const char *method, const char *path, const char *content_type,
                   const json_t *body);

void e2e_ns_create(e2e_cp *cp, const char *ns);

/* Nodes: Ready, cpu 64 / memory 512Gi / pods 250, plus one GPU inventory
 * source each. Returned unsent (owned); e2e_node_create steals and POSTs. */
json_t *e2e_node_gpupack(const char *name, int ngpus, long mem_mib, const char *model);
json_t *e2e_node_hami(const char *name, int ngpus, long mem_mib, const char *type);
json_t *e2e_node_gfd(const char *name, int ngpus, long mem_mib, const char *product);
json_t *e2e_node_aliyun(const char *name, int ngpus, long total_gib);   /* labelled gpushare=true */
json_t *e2e_node_plain(const char *name);   /* no GPUs */
void e2e_node_create(e2e_cp *cp, json_t *node);
/* Creates and deletes a pod bound to no real node: a cluster event that makes
 * kube-scheduler retry every pod it parked. Needed when gpupack's view changed
 * after kube-scheduler's last try (a release it saw later, an extender outage):
 * the scheduler retries only on cluster events or after 5 minutes. */
void e2e_nudge_scheduler(e2e_cp *cp);

/* Pods: schedulerName = the shipped profile, one image, no containers yet.
 * e2e_pod_ctr adds a container whose limits are the NULL-terminated
 * name/value pairs that follow (e.g. "gpupack.io/gpu-mem", "4096", NULL). */
json_t *e2e_pod(const char *ns, const char *name);
void e2e_pod_ctr(json_t *pod, const char *name, bool init, ...) __attribute__((sentinel));
void e2e_pod_annotate(json_t *pod, const char *key, const char *value);
void e2e_pod_select(json_t *pod, const char *label, const char *value);  /* spec.nodeSelector */
void e2e_pod_create(e2e_cp *cp, json_t *pod);       /* steals pod */
void e2e_pod_delete(e2e_cp *cp, const char *ns, const char *name);   /* grace period 0 */
/* Sets status.phase (Succeeded, Failed, Running) through the status subresource. */
void e2e_pod_set_phase(e2e_cp *cp, const char *ns, const char *name, const char *phase);
json_t *e2e_pod_get(e2e_cp *cp, const char *ns, const char *name);   /* NULL when absent */

/* Pods of a namespace ("" = all) as an owned array. */
json_t *e2e_pods(e2e_cp *cp, const char *ns);
/* Waits until `want` pods of ns are bound (spec.nodeName set); returns how
 * many are bound when it gave up or succeeded. */
int e2e_wait_bound(e2e_cp *cp, const char *ns, int want, double timeout_s);
/* Message of the newest Event of `reason` about pod ns/name; owned, NULL if none. */
char *e2e_pod_event(e2e_cp *cp, const char *ns, const char *name, const char *reason);
/* Waits for such an event whose message contains `needle`; returns it (owned) or NULL. */
char *e2e_wait_pod_event(e2e_cp *cp, const char *ns, const char *name, const char *reason,
                         const char *needle, double timeout_s);

/* --- the checker ------------------------------------------------------- */

typedef struct e2e_verdict {
    int bypassed;                           /* pods bound bypassing gpupack (E2E_ALLOW_BYPASS) */
    int nodes, gpu_pods_bound, gpus_used;   /* what the API server says */
    int gpus_over;                          /* GPUs whose annotations exceed memory or compute */
    int inspect_gpus_differ;                /* GPUs /inspect shows otherwise than the rebuild */
    int problems;                           /* 0 = all well */
    char report[8192];                      /* one line per problem (first ones) */
} e2e_verdict;

/* Rebuilds the allocation from the API server alone (node inventories + pod
 * annotations, decoded by libgpupack's k8s_obs / annotations / podreq) and
 * checks: every bound pod that asks gpupack resources carries a valid
 * assignment naming its node that matches its request, on healthy GPUs of
 * allowed models; per GPU, sum of memory <= capacity and sum of compute <= 100 %.
 * With gp != NULL, also that gpupack's /inspect equals the rebuild (nodes,
 * per-GPU use, pods) and that no pod is left `assumed`. A bound pod asking
 * GPU resources without annotations is a problem unless flags has
 * E2E_ALLOW_BYPASS (then /inspect's record of it counts in the compare). Never fails the
 * test itself: callers assert on problems (see e2e_assert_consistent). */
void e2e_verify(e2e_cp *cp, e2e_gp *gp, e2e_verdict *v);
#define E2E_ALLOW_BYPASS 1
void e2e_verify_with(e2e_cp *cp, e2e_gp *gp, int flags, e2e_verdict *v);
/* Retries e2e_verify until it finds no problem (gpupack's watch may lag) or
 * timeout_s passes, then fails the test with the report. */
void e2e_assert_consistent(e2e_cp *cp, e2e_gp *gp, double timeout_s, e2e_verdict *v);
void e2e_assert_consistent_with(e2e_cp *cp, e2e_gp *gp, double timeout_s, int flags,
                                e2e_verdict *v);

/* Pods of namespace ns that are neither bound nor terminal and would fit
 * some node in the state the annotations describe (the rebuild above, with
 * the default placement options): pods left undecided. Their names go to
 * report (one per line, the first ones). */
int e2e_pending_that_fit(e2e_cp *cp, const char *ns, char *report, size_t len);

/* Sleeps (seconds, fractional). */
void e2e_sleep(double s);

#endif
