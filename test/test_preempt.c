/* test_preempt.c -- gpupack's preemption as filter drives it (sched/preempt): a
 * store, the extender in embedded mode with preemption's hooks, and fake API
 * calls -- no sockets. Each test reads as the story of one preemptor. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pack/cluster.h"
#include "pack/placement.h"
#include "sched/extender.h"
#include "lib/timefmt.h"
#include "model/heldrec.h"
#include "sched/preempt.h"
#include "testutil.h"

#define G 16384

/* ------------------------------------------------------------ fakes -- */

typedef struct fake_io {
    int nevict;
    char evicted[32][64];              /* names, in call order */
    char block[64];                    /* this victim's eviction gets 429 */
    bool api_down;                     /* every call: retry later */
    int nnominate;
    char nominated[64];
    char held[4096];                   /* the last nomination's record of held places */
    int nevents;
    char events[32][400];              /* "Reason pod: message" */
    int nnudge;
    bool nudge_first;                  /* the last nudge's words */
    char nudge_msg[400];
    int nudge_answer;                  /* what f_nudge answers (0 done, 2 not allowed) */
} fake_io;

static int f_nudge(void *ud, const char *ns, const char *name, const char *uid, const char *msg,
                   bool first, gp_err *err)
{
    fake_io *io = ud;
    if (io->api_down)
        return gp_fail(err, "connection refused");
    io->nnudge++;
    io->nudge_first = first;
    gp_strlcpy(io->nudge_msg, msg, sizeof io->nudge_msg);
    if (io->nudge_answer == 2)
        gp_fail(err, "pods is forbidden");
    return io->nudge_answer;
}

static gp_evict_outcome f_evict(void *ud, const char *ns, const char *name, const char *uid,
                                gp_err *err)
{
    fake_io *io = ud;
    if (io->api_down)
        return gp_fail(err, "connection refused"), GP_EVICT_RETRY;
    if (strcmp(io->block, name) == 0)
        return gp_fail(err, "Cannot evict pod as it would violate the pod's disruption budget."),
               GP_EVICT_BLOCKED;
    if (io->nevict < 32)
        gp_strlcpy(io->evicted[io->nevict++], name, 64);
    return GP_EVICT_DONE;
}

static int f_nominate(void *ud, const char *ns, const char *name, const char *uid,
                      const char *node, const char *held, gp_err *err)
{
    fake_io *io = ud;
    if (io->api_down)
        return gp_fail(err, "connection refused");
    io->nnominate++;
    gp_strlcpy(io->nominated, node, sizeof io->nominated);
    gp_strlcpy(io->held, held ? held : "", sizeof io->held);
    return 0;
}

static void f_event(void *ud, const char *ns, const char *name, const char *uid, bool warning,
                    const char *reason, const char *msg)
{
    fake_io *io = ud;
    if (io->nevents < 32)
        snprintf(io->events[io->nevents++], 400, "%s %s: %s", reason, name, msg);
}

/* ------------------------------------------------------------ world -- */

typedef struct world {
    gp_cluster *c;
    gp_preempt *p;
    gp_extender *e;
    fake_io io;
} world;

static double renudge_s;   /* the next world's (0: the default) */

static world *world_new(double wait_s)
{
    world *w = xcalloc(1, sizeof *w);
    w->c = cluster_new();
    gp_preempt_config pc = {.io = {&w->io, f_evict, f_nominate, f_event, f_nudge},
                            .wait_s = wait_s, .renudge_s = renudge_s};
    w->p = preempt_new(w->c, &pc);
    gp_extender_config ec = {.preempt = preempt_hooks(w->p)};
    w->e = extender_new(w->c, &ec);
    gp_err err;
    ck_assert(preempt_start(w->p, w->e, false, &err) == 0);
    return w;
}

static void world_free(world *w)
{
    preempt_free(w->p);
    extender_free(w->e);
    cluster_free(w->c);
    free(w);
}

static void add_node(world *w, const char *name, int ngpus, const char *model)
{
    gp_inventory inv;
    tu_inventory(&inv, ngpus, G, model);
    cluster_upsert_node(w->c, name, &inv);
}

/* A pod as the watch shows it. gpus: device indices (-1 ends), each with mem. */
static json_t *pod_json(const char *name, int prio, const char *node, int64_t mem, int count,
                        const char *labels, const char *extra_spec)
{
    char text[2048];
    snprintf(text, sizeof text,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\",\"uid\":\"uid-%s\","
             "\"creationTimestamp\":\"2025-01-01T00:00:00Z\",\"labels\":%s},"
             "\"spec\":{\"priority\":%d,%s%s%s\"containers\":[{\"name\":\"main\",\"resources\":"
             "{\"limits\":{\"gpupack.io/gpu-mem\":\"%lld\",\"gpupack.io/gpu-count\":\"%d\"}}}]},"
             "\"status\":{}}",
             name, name, labels ? labels : "{}", prio, node ? "\"nodeName\":\"" : "",
             node ? node : "", node ? "\"," : "", (long long)mem, count);
    json_t *j = json_loads(text, 0, NULL);
    ck_assert_ptr_nonnull(j);
    if (extra_spec) {
        json_t *x = json_loads(extra_spec, 0, NULL);
        ck_assert_ptr_nonnull(x);
        json_object_update(json_object_get(j, "spec"), x);
        json_decref(x);
    }
    return j;
}

/* The pod made by controller `owner` ("ReplicaSet/uid"), or by none. */
static void set_owner(json_t *pod, const char *owner)
{
    if (!owner)
        return;
    char kind[32], uid[64];
    ck_assert(sscanf(owner, "%31[^/]/%63s", kind, uid) == 2);
    json_object_set_new(json_object_get(pod, "metadata"), "ownerReferences",
                        json_pack("[{s:s,s:s,s:s,s:b}]", "kind", kind, "name", uid, "uid", uid,
                                  "controller", 1));
}

static void add_pod_owned(world *w, const char *name, int prio, const char *node, const int *gpus,
                          int64_t mem, int start_s, const char *labels, const char *owner);

/* A bound pod holding `mem` on each of gpus[] (ended by -1), started at start_s. */
static void add_pod(world *w, const char *name, int prio, const char *node, const int *gpus,
                    int64_t mem, int start_s, const char *labels)
{
    add_pod_owned(w, name, prio, node, gpus, mem, start_s, labels, NULL);
}

static void add_pod_owned(world *w, const char *name, int prio, const char *node, const int *gpus,
                          int64_t mem, int start_s, const char *labels, const char *owner)
{
    gp_assignment a;
    memset(&a, 0, sizeof a);
    gp_strlcpy(a.node, node, sizeof a.node);
    int n = 0;
    while (gpus[n] >= 0)
        n++;
    a.nctrs = n ? 1 : 0;   /* no GPU: a host-only pod */
    gp_strlcpy(a.ctrs[0].name, "main", sizeof a.ctrs[0].name);
    a.ctrs[0].ngpus = n;
    for (int i = 0; i < n; i++)
        a.ctrs[0].gpus[i] = (gp_gpu_grant){gpus[i], mem, 0};
    char uid[80];
    snprintf(uid, sizeof uid, "uid-%s", name);
    gp_pod_obs obs = {uid, "ml", name, node, false, &a, NULL, 0, "default", 0, 0};
    cluster_pod_observed(w->c, &obs);
    json_t *j = pod_json(name, prio, node, mem, n, labels, NULL);
    char ts[40];
    snprintf(ts, sizeof ts, "2025-01-01T00:%02d:%02dZ", start_s / 60, start_s % 60);
    json_object_set_new(json_object_get(j, "status"), "startTime", json_string(ts));
    set_owner(j, owner);
    preempt_pod_event(w->p, false, j);
    json_decref(j);
}

/* The victim's kubelet has stopped it: the watch shows it deleted. */
static void pod_gone(world *w, const char *name)
{
    char uid[80];
    snprintf(uid, sizeof uid, "uid-%s", name);
    gp_pod_obs obs = {uid, "ml", name, NULL, true, NULL, NULL, 0, NULL, 0, 0};
    cluster_pod_observed(w->c, &obs);
    json_t *j = pod_json(name, 0, NULL, 0, 1, NULL, NULL);
    preempt_pod_event(w->p, true, j);
    json_decref(j);
}

/* Filter for pod over nodes; returns the answer (owned). */
static json_t *filter(world *w, const json_t *pod, const char *const *nodes)
{
    json_t *args = json_pack("{s:O,s:[]}", "Pod", pod, "NodeNames");
    for (int i = 0; nodes[i]; i++)
        json_array_append_new(json_object_get(args, "NodeNames"), json_string(nodes[i]));
    char *body = json_dumps(args, JSON_COMPACT), *out = NULL;
    json_decref(args);
    ck_assert_int_eq(extender_filter(w->e, body, strlen(body), &out), 200);
    json_t *ans = json_loads(out, 0, NULL);
    ck_assert_ptr_nonnull(ans);
    free(body);
    free(out);
    return ans;
}

static bool fits(const json_t *ans, const char *node)
{
    size_t i;
    const json_t *v;
    json_array_foreach(json_object_get(ans, "NodeNames"), i, v)
        if (strcmp(json_string_value(v), node) == 0)
            return true;
    return false;
}

static const char *reason(const json_t *ans, const char *node)
{
    const char *r = json_string_value(json_object_get(json_object_get(ans, "FailedNodes"), node));
    return r ? r : "";
}

static bool has_claim(world *w, const char *name)
{
    char uid[80];
    snprintf(uid, sizeof uid, "uid-%s", name);
    gp_claim *cl = xmalloc(sizeof *cl);
    bool yes = cluster_claim_get(w->c, uid, cl) == 0;
    free(cl);
    return yes;
}

static int bind(world *w, const char *name, const char *node)
{
    char body[400], *out = NULL;
    snprintf(body, sizeof body,
             "{\"PodName\":\"%s\",\"PodNamespace\":\"ml\",\"PodUID\":\"uid-%s\",\"Node\":\"%s\"}",
             name, name, node);
    int st = extender_bind(w->e, body, strlen(body), &out);
    json_t *ans = json_loads(out, 0, NULL);
    int ok = st == 200 && ans && strcmp(json_string_value(json_object_get(ans, "Error")), "") == 0;
    json_decref(ans);
    free(out);
    return ok;
}

static const int GPU0[] = {0, -1}, GPU1[] = {1, -1}, GPU01[] = {0, 1, -1};

/* The issue's scene: one node, two 16 GiB GPUs, a whole-GPU pod on GPU 0 and
 * two 8 GiB pods on GPU 1, all priority 0. */
static world *issue_scene(double wait_s)
{
    world *w = world_new(wait_s);
    add_node(w, "n1", 2, "A100");
    add_pod(w, "whole", 0, "n1", GPU0, G, 1, NULL);
    add_pod(w, "half-a", 0, "n1", GPU1, G / 2, 2, NULL);
    add_pod(w, "half-b", 0, "n1", GPU1, G / 2, 3, NULL);
    return w;
}

static const char *const N1[] = {"n1", NULL};

/* ------------------------------------------------------------ stories -- */

START_TEST(one_victim_not_two)
{
    world *w = issue_scene(60);
    json_t *pre = pod_json("urgent", 1000, NULL, G, 1, NULL, NULL);
    json_t *ans = filter(w, pre, N1);
    ck_assert(!fits(ans, "n1"));
    ck_assert_msg(strstr(reason(ans, "n1"), "preempting 1 lower-priority pod to free GPU 0"),
                  "%s", reason(ans, "n1"));
    json_decref(ans);
    ck_assert(has_claim(w, "urgent"));
    preempt_tick(w->p);
    ck_assert_int_eq(w->io.nnominate, 1);
    ck_assert_str_eq(w->io.nominated, "n1");
    ck_assert_int_eq(w->io.nevict, 1);
    ck_assert_str_eq(w->io.evicted[0], "whole");
    /* Events: on the preemptor when it starts, on the victim when it is evicted */
    ck_assert_int_eq(w->io.nevents, 2);
    ck_assert_msg(strstr(w->io.events[0], "Preempting urgent: preempting 1 lower-priority pod on n1 "
                                          "to free GPU 0 (16384 MiB): ml/whole"), "%s", w->io.events[0]);
    ck_assert_msg(strstr(w->io.events[1], "Preempted whole: preempted by ml/urgent to free GPU 0 "
                                          "(16384 MiB) on n1"), "%s", w->io.events[1]);
    /* while the victim terminates it holds its GPU: the preemptor waits */
    ans = filter(w, pre, N1);
    ck_assert(!fits(ans, "n1"));
    ck_assert_msg(strstr(reason(ans, "n1"), "waiting for 1 pod to terminate"), "%s", reason(ans, "n1"));
    json_decref(ans);
    preempt_tick(w->p);
    ck_assert_int_eq(w->io.nevict, 1);   /* no second eviction */
    ck_assert_int_eq(w->io.nnudge, 0);   /* the victim is still there */
    pod_gone(w, "whole");
    preempt_tick(w->p);
    ck_assert_int_eq(w->io.nnudge, 1);   /* kube-scheduler is told to retry the pod, once */
    preempt_tick(w->p);
    ck_assert_int_eq(w->io.nnudge, 1);
    /* a lower-priority pod does not get the freed GPU */
    json_t *low = pod_json("late", 0, NULL, G / 2, 1, NULL, NULL);
    ans = filter(w, low, N1);
    ck_assert(!fits(ans, "n1"));
    json_decref(ans);
    /* the preemptor does, and binding it ends the reservation */
    ans = filter(w, pre, N1);
    ck_assert(fits(ans, "n1"));
    json_decref(ans);
    ck_assert(bind(w, "urgent", "n1"));
    ck_assert(!has_claim(w, "urgent"));
    preempt_tick(w->p);
    gp_preempt_stats st;
    preempt_stats(w->p, &st);
    ck_assert_int_eq(st.started, 1);
    ck_assert_int_eq(st.victims, 1);
    ck_assert_int_eq(st.bound, 1);
    ck_assert_int_eq(st.active, 0);
    json_decref(low);
    json_decref(pre);
    world_free(w);
}
END_TEST

/* Who may not preempt, and who may not be a victim: nothing is claimed or evicted. */
typedef struct noway_case {
    const char *what;
    int prio;
    const char *extra_spec;        /* merged into the preemptor's spec */
    const char *policy;            /* a policy file for the set, or NULL */
} noway_case;

static const noway_case noways[] = {
    {"equal priority never preempts", 0, NULL, NULL},
    {"lower priority never preempts", -5, NULL, NULL},
    {"preemptionPolicy: Never", 1000, "{\"preemptionPolicy\":\"Never\"}", NULL},
    {"a policy with mayPreempt: false", 1000, NULL,
     "apiVersion: gpupack.io/v1alpha1\nkind: PackingPolicy\nmetadata: {name: default}\n"
     "spec: {preemption: {mayPreempt: false}}\n"},
    {"a priority below the policy's minPriority", 1000, NULL,
     "apiVersion: gpupack.io/v1alpha1\nkind: PackingPolicy\nmetadata: {name: default}\n"
     "spec: {preemption: {minPriority: 2000}}\n"},
    {"victims placed under a protected policy", 1000, NULL,
     "apiVersion: gpupack.io/v1alpha1\nkind: PackingPolicy\nmetadata: {name: default}\n"
     "spec: {preemption: {protected: true}}\n"},
};

static gp_policy_set *test_set;
static gp_policy_set *set_source(void *ud)
{
    policy_set_ref(test_set);
    return test_set;
}

/* The same world with a policy set of its own (policy: a file's text). */
static void use_policy(world *w, const char *policy)
{
    extender_free(w->e);
    char path[] = "/tmp/gpupack-preempt-XXXXXX";
    int fd = mkstemp(path);
    ck_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs(policy, f);
    fclose(f);
    gp_err err;
    ck_assert_msg(policy_set_load_file(path, &test_set, &err) == 0, "%s", err.msg);
    unlink(path);
    gp_extender_config ec = {.preempt = preempt_hooks(w->p), .policies = set_source};
    w->e = extender_new(w->c, &ec);
    ck_assert(preempt_start(w->p, w->e, false, &err) == 0);
}

static void drop_policy(world *w)
{
    extender_free(w->e);
    w->e = extender_new(w->c, NULL);   /* world_free frees one */
    policy_set_unref(test_set);
    test_set = NULL;
}

START_TEST(no_preemption)
{
    const noway_case *k = &noways[_i];
    world *w = issue_scene(60);
    if (k->policy)
        use_policy(w, k->policy);
    json_t *pre = pod_json("urgent", k->prio, NULL, G, 1, NULL, k->extra_spec);
    json_t *ans = filter(w, pre, N1);
    ck_assert_msg(!fits(ans, "n1") && !strstr(reason(ans, "n1"), "preempt"), "%s: %s", k->what,
                  reason(ans, "n1"));
    json_decref(ans);
    preempt_tick(w->p);
    ck_assert_msg(w->io.nevict == 0 && !has_claim(w, "urgent"), "%s", k->what);
    /* explain says why */
    json_t *st = extender_preempt_status(w->e, pre);
    ck_assert_ptr_nonnull(st);
    const char *state = json_string_value(json_object_get(st, "state"));
    ck_assert_msg(strcmp(state, "not-eligible") == 0 || strcmp(state, "cannot") == 0, "%s: %s",
                  k->what, state);
    json_decref(st);
    json_decref(pre);
    if (k->policy)
        drop_policy(w);
    world_free(w);
}
END_TEST

/* A 2-GPU preemptor on two nodes: the node needing one (2-GPU) victim wins
 * over the one needing two. */
START_TEST(better_node_wins)
{
    world *w = world_new(60);
    add_node(w, "a", 2, "A100");
    add_node(w, "b", 2, "A100");
    add_pod(w, "a0", 0, "a", GPU0, G, 1, NULL);
    add_pod(w, "a1", 0, "a", GPU1, G, 2, NULL);
    add_pod(w, "wide", 0, "b", GPU01, G, 3, NULL);
    json_t *pre = pod_json("big", 1000, NULL, G, 2, NULL, NULL);
    static const char *const AB[] = {"a", "b", NULL};
    json_t *ans = filter(w, pre, AB);
    ck_assert_msg(strstr(reason(ans, "b"), "preempting 1 lower-priority pod to free GPUs 0 (16384 "
                                           "MiB), 1 (16384 MiB)"), "%s", reason(ans, "b"));
    ck_assert_msg(strstr(reason(ans, "a"), "GPUs have 16384 MiB free, container main needs 2") &&
                  !strstr(reason(ans, "a"), "preempt"), "%s", reason(ans, "a"));
    json_decref(ans);
    preempt_tick(w->p);
    ck_assert_int_eq(w->io.nevict, 1);
    ck_assert_str_eq(w->io.evicted[0], "wide");
    pod_gone(w, "wide");
    ans = filter(w, pre, AB);
    ck_assert(fits(ans, "b") && !fits(ans, "a"));
    json_decref(ans);
    json_decref(pre);
    world_free(w);
}
END_TEST

/* better_node_wins's nodes, with the 2-GPU pod on b bound by gpupack a
 * moment ago: the watch still shows it pending; its Binding is in flight or,
 * if `applied`, answered 201. */
static world *just_bound_scene(bool applied)
{
    world *w = world_new(60);
    add_node(w, "a", 2, "A100");
    add_node(w, "b", 2, "A100");
    add_pod(w, "a0", 0, "a", GPU0, G, 1, NULL);
    add_pod(w, "a1", 0, "a", GPU1, G, 2, NULL);
    json_t *wide = pod_json("wide", 0, NULL, G, 2, NULL, NULL);
    preempt_pod_event(w->p, false, wide);
    json_decref(wide);
    gp_pod_req r;
    tu_req(&r, "uid-wide", 2, G, 0);
    gp_strlcpy(r.ns, "ml", sizeof r.ns);
    gp_strlcpy(r.name, "wide", sizeof r.name);
    gp_place_opts o;
    placement_default_opts(&o);
    gp_assignment a;
    gp_err err;
    ck_assert_int_eq(cluster_place_and_assume(w->c, "b", &r, &o, 0, "default", GP_POD_ASSUMED, &a, &err), 0);
    if (applied)
        cluster_bind_outcome(w->c, "uid-wide", GP_BIND_BOUND);
    return w;
}

/* A pod whose Binding the API server applied is a victim like any other
 * before the watch shows it bound (kube-scheduler counts the pods it
 * assumed too): one victim on b, not two on a. One whose Binding is in
 * flight is not (it may yet be refused). */
START_TEST(just_bound_victim_counts)
{
    static const char *const AB[] = {"a", "b", NULL};
    json_t *pre = pod_json("big", 1000, NULL, G, 2, NULL, NULL);
    for (int applied = 0; applied <= 1; applied++) {
        world *w = just_bound_scene(applied);
        json_t *ans = filter(w, pre, AB);
        const char *b = reason(ans, "b");
        if (applied)
            ck_assert_msg(strstr(b, "preempting 1 lower-priority pod to free GPUs 0 (16384 MiB), 1 "
                                    "(16384 MiB)"), "%s", b);
        else
            ck_assert_msg(!strstr(b, "preempting") && strstr(reason(ans, "a"), "preempting 2"),
                          "a: %s b: %s", reason(ans, "a"), b);
        json_decref(ans);
        preempt_tick(w->p);
        ck_assert_int_eq(w->io.nevict, applied ? 1 : 2);
        ck_assert_str_eq(w->io.evicted[0], applied ? "wide" : "a0");
        world_free(w);
    }
    json_decref(pre);
}
END_TEST

/* A PodDisruptionBudget: the guarded pod is ranked last; when the API server
 * refuses its eviction anyway (429), the next plan is tried. */
START_TEST(pdb_and_429)
{
    world *w = world_new(60);
    add_node(w, "a", 1, "A100");
    add_node(w, "b", 1, "A100");
    add_pod(w, "guarded", 0, "a", GPU0, G, 9, "{\"app\":\"db\"}");
    add_pod(w, "plain", 0, "b", GPU0, G, 1, "{\"app\":\"batch\"}");
    json_t *pdb = json_loads("{\"metadata\":{\"name\":\"db\",\"namespace\":\"ml\"},\"spec\":"
                             "{\"selector\":{\"matchLabels\":{\"app\":\"db\"}}},"
                             "\"status\":{\"disruptionsAllowed\":0}}", 0, NULL);
    preempt_pdb_event(w->p, false, pdb);
    json_decref(pdb);
    json_t *pre = pod_json("urgent", 1000, NULL, G, 1, NULL, NULL);
    static const char *const AB[] = {"a", "b", NULL};
    json_t *ans = filter(w, pre, AB);
    ck_assert_msg(strstr(reason(ans, "b"), "preempting 1"), "%s", reason(ans, "b"));
    json_decref(ans);
    /* now the unguarded one's eviction is refused: the plan moves to the other node */
    gp_strlcpy(w->io.block, "plain", sizeof w->io.block);
    preempt_tick(w->p);
    ck_assert_int_eq(w->io.nevict, 0);
    preempt_tick(w->p);   /* the new plan: nominate and evict */
    ck_assert_int_eq(w->io.nevict, 1);
    ck_assert_str_eq(w->io.evicted[0], "guarded");
    gp_preempt_stats st;
    preempt_stats(w->p, &st);
    ck_assert_int_eq(st.evict_blocked, 1);
    ck_assert_int_eq(st.replanned, 1);
    ck_assert_int_eq(st.active, 1);
    json_decref(pre);
    world_free(w);
}
END_TEST

/* Nothing stays reserved: the preemptor deleted, or victims that never go. */
START_TEST(reservation_ends)
{
    world *w = issue_scene(60);
    json_t *pre = pod_json("urgent", 1000, NULL, G, 1, NULL, NULL);
    json_decref(filter(w, pre, N1));
    preempt_tick(w->p);
    ck_assert(has_claim(w, "urgent"));
    pod_gone(w, "urgent");   /* the preemptor is deleted */
    ck_assert(!has_claim(w, "urgent"));
    preempt_tick(w->p);
    gp_preempt_stats st;
    preempt_stats(w->p, &st);
    ck_assert_int_eq(st.active, 0);
    ck_assert_int_eq(st.deleted, 1);
    json_decref(pre);
    world_free(w);

    /* victims that never terminate: the claim lapses after their grace period + wait */
    w = issue_scene(0.05);
    json_t *g0 = pod_json("whole", 0, "n1", G, 1, NULL, "{\"terminationGracePeriodSeconds\":0}");
    preempt_pod_event(w->p, false, g0);
    json_decref(g0);
    pre = pod_json("urgent2", 1000, NULL, G, 1, NULL, NULL);
    json_decref(filter(w, pre, N1));
    preempt_tick(w->p);
    ck_assert(has_claim(w, "urgent2"));
    struct timespec ts = {0, 150 * 1000000};
    nanosleep(&ts, NULL);
    preempt_tick(w->p);
    ck_assert(!has_claim(w, "urgent2"));
    preempt_stats(w->p, &st);
    ck_assert_int_eq(st.expired, 1);
    ck_assert_msg(strstr(w->io.events[w->io.nevents - 1], "PreemptionTimedOut urgent2"), "%s",
                  w->io.events[w->io.nevents - 1]);
    json_decref(pre);
    world_free(w);
}
END_TEST

/* A relist (after 410 Gone, an API-server restart) that no longer shows a
 * pod: it was deleted while no watch ran, and no DELETED will come. What
 * preemption keeps of it goes, and the plan of a preemptor the LIST does not
 * show ends; the pods it shows stay, and so does their plan. */
/* A pod whose gpupack.io/gpu-model annotation is malformed (filter refuses it)
 * is still a pod on a GPU with a priority: preemption keeps knowing it. */
START_TEST(malformed_annotation_still_known)
{
    world *w = issue_scene(60);
    gp_preempt_stats st;
    preempt_stats(w->p, &st);
    size_t before = st.pods_known;
    json_t *j = pod_json("odd", 500, "n1", G / 4, 1, NULL, NULL);
    json_object_set_new(json_object_get(j, "metadata"), "annotations",
                        json_pack("{s:i}", "gpupack.io/gpu-model", 7));
    preempt_pod_event(w->p, false, j);
    preempt_stats(w->p, &st);
    ck_assert_uint_eq(st.pods_known, before + 1);
    preempt_pod_event(w->p, true, j);   /* and forgets it when it goes */
    preempt_stats(w->p, &st);
    ck_assert_uint_eq(st.pods_known, before);
    json_decref(j);
    world_free(w);
}
END_TEST

static void relist(world *w, const char *const *names)
{
    preempt_pods_listing(w->p, false, gp_mono_s());   /* the LIST asks its first page now */
    for (size_t i = 0; names[i]; i++) {
        bool urgent = strcmp(names[i], "urgent") == 0;
        json_t *j = pod_json(names[i], urgent ? 1000 : 0, urgent ? NULL : "n1", urgent ? G : G / 2, 1,
                             NULL, NULL);
        preempt_pod_event(w->p, false, j);
        json_decref(j);
    }
    preempt_pods_listing(w->p, true, 0);
}

/* A pending pod with a ResourceClaim that kube-scheduler found no node for
 * (PodScheduled False): parked, its preemption planned by the worker. */
static json_t *claim_pod(const char *name, bool parked)
{
    json_t *j = pod_json(name, 1000, NULL, G, 1, NULL,
                         "{\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimName\":\"c\"}]}");
    if (parked)
        json_object_set_new(json_object_get(j, "status"), "conditions",
                            json_pack("[{s:s,s:s,s:s}]", "type", "PodScheduled", "status", "False",
                                      "reason", "Unschedulable"));
    return j;
}

static unsigned long parked_count(world *w)
{
    gp_preempt_stats st;
    preempt_stats(w->p, &st);
    return st.claims_parked;
}

/* The worker's round for parked claim pods walks those alone, not every pod
 * known (at 20,000 pods the walk of all, five times a second, was the
 * service's busiest function): the set follows parking, binding, deletion
 * and relists. */
START_TEST(parked_claim_pods_tracked)
{
    world *w = issue_scene(60);
    json_t *a = claim_pod("ca", false), *b = claim_pod("cb", true), *c = claim_pod("cc", true);
    preempt_pod_event(w->p, false, a);   /* not parked: kube-scheduler has not tried yet */
    ck_assert_uint_eq(parked_count(w), 0);
    preempt_pod_event(w->p, false, b);
    preempt_pod_event(w->p, false, c);
    preempt_pod_event(w->p, false, c);   /* the same again: counted once */
    ck_assert_uint_eq(parked_count(w), 2);
    json_object_set_new(json_object_get(b, "spec"), "nodeName", json_string("n1"));
    preempt_pod_event(w->p, false, b);   /* bound */
    ck_assert_uint_eq(parked_count(w), 1);
    preempt_pod_event(w->p, true, c);    /* deleted */
    ck_assert_uint_eq(parked_count(w), 0);
    json_decref(a);
    json_decref(c);
    a = claim_pod("ca", true);   /* kube-scheduler tried it and found no node */
    c = claim_pod("cc", true);   /* created again */
    preempt_pod_event(w->p, false, a);
    preempt_pod_event(w->p, false, c);
    ck_assert_uint_eq(parked_count(w), 2);
    static const char *const listed[] = {"whole", "half-a", "half-b", NULL};
    relist(w, listed);                    /* neither claim pod is in the LIST */
    ck_assert_uint_eq(parked_count(w), 0);
    preempt_pod_event(w->p, false, c);
    preempt_tick(w->p);                   /* its round runs on a parked pod (no DRA GPU: no plan) */
    ck_assert_uint_eq(parked_count(w), 1);
    json_decref(a);
    json_decref(b);
    json_decref(c);
    world_free(w);   /* frees the parked one too: LeakSanitizer and valgrind check */
}
END_TEST

START_TEST(relist_forgets_the_unlisted)
{
    world *w = issue_scene(60);
    json_t *pre = pod_json("urgent", 1000, NULL, G, 1, NULL, NULL);
    preempt_pod_event(w->p, false, pre);
    json_decref(filter(w, pre, N1));
    ck_assert(has_claim(w, "urgent"));
    gp_preempt_stats st;
    preempt_stats(w->p, &st);
    ck_assert_uint_eq(st.pods_known, 4);

    relist(w, (const char *const[]){"whole", "half-a", "half-b", "urgent", NULL});
    preempt_stats(w->p, &st);
    ck_assert_uint_eq(st.pods_known, 4);
    ck_assert(has_claim(w, "urgent"));

    relist(w, (const char *const[]){"urgent", NULL});   /* the others were deleted meanwhile */
    preempt_stats(w->p, &st);
    ck_assert_uint_eq(st.pods_known, 1);
    ck_assert(has_claim(w, "urgent"));
    ck_assert_uint_eq(st.deleted, 0);

    /* a LIST that asked its first page before the plan was made may not show
     * the preemptor: the plan stays */
    preempt_pods_listing(w->p, false, 0.0);
    preempt_pods_listing(w->p, true, 0);
    preempt_stats(w->p, &st);
    ck_assert_uint_eq(st.pods_known, 0);   /* urgent's meta went: the watch will show it again */
    ck_assert_uint_eq(st.active, 1);
    ck_assert(has_claim(w, "urgent"));

    relist(w, (const char *const[]){NULL});   /* and the preemptor is gone */
    preempt_stats(w->p, &st);
    ck_assert_uint_eq(st.deleted, 1);   /* the plan ended */
    ck_assert_uint_eq(st.active, 0);
    /* and the GPU held for it is free again: no DELETED will come for a pod
     * deleted while no watch ran (seen in the 90-minute soak: a preemptor
     * deleted during a compaction kept its GPU held to the end of the run) */
    ck_assert(!has_claim(w, "urgent"));
    json_decref(pre);
    world_free(w);
}
END_TEST

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* The issue's scene with re-nudges 0.05 s apart, the nudge answered `answer`:
 * urgent's victim is evicted and gone, and urgent nudged once (*pre: urgent). */
static world *nudged_scene(int answer, json_t **pre)
{
    renudge_s = 0.05;
    world *w = issue_scene(60);
    renudge_s = 0;
    w->io.nudge_answer = answer;
    *pre = pod_json("urgent", 1000, NULL, G, 1, NULL, NULL);
    json_decref(filter(w, *pre, N1));
    preempt_tick(w->p);
    ck_assert_int_eq(w->io.nevict, 1);
    pod_gone(w, "whole");
    preempt_tick(w->p);
    ck_assert_int_eq(w->io.nnudge, 1);
    ck_assert(w->io.nudge_first);
    return w;
}

/* A preemptor still unbound after its nudge is nudged again, at doubling
 * gaps, RENUDGES_MAX times; not once it is bound, nor after a 403. */
START_TEST(renudge_while_unbound)
{
    json_t *pre;
    world *w = nudged_scene(0, &pre);
    ck_assert_msg(strstr(w->io.nudge_msg, "GPU 0 (16384 MiB) on n1 is free and held for this pod"),
                  "%s", w->io.nudge_msg);
    /* gaps 0.05, 0.1, 0.2 s: each sleep is past the next one */
    const double gaps[] = {0.06, 0.11, 0.21};
    for (int i = 0; i < 3; i++) {
        sleep_s(gaps[i]);
        preempt_tick(w->p);
        ck_assert_int_eq(w->io.nnudge, 2 + i);
        ck_assert(!w->io.nudge_first);
    }
    sleep_s(0.5);   /* past a fourth gap (0.4 s): three re-nudges at most */
    preempt_tick(w->p);
    ck_assert_int_eq(w->io.nnudge, 4);
    gp_preempt_stats st;
    preempt_stats(w->p, &st);
    ck_assert_int_eq(st.nudges, 1);
    ck_assert_int_eq(st.renudges, 3);
    gp_buf m;
    gp_buf_init(&m, 1 << 20);
    preempt_metrics(w->p, &m);
    ck_assert_msg(strstr(m.data, "gpupack_preemption_nudges_total{kind=\"again\"} 3"), "%s", m.data);
    gp_buf_free(&m);
    json_decref(pre);
    world_free(w);

    /* bound after its first nudge: no second one */
    w = nudged_scene(0, &pre);
    json_t *ans = filter(w, pre, N1);
    ck_assert(fits(ans, "n1"));
    json_decref(ans);
    ck_assert(bind(w, "urgent", "n1"));
    sleep_s(0.1);
    preempt_tick(w->p);
    ck_assert_int_eq(w->io.nnudge, 1);
    json_decref(pre);
    world_free(w);

    /* not allowed (RBAC): no second try */
    w = nudged_scene(2, &pre);
    sleep_s(0.1);
    preempt_tick(w->p);
    ck_assert_int_eq(w->io.nnudge, 1);
    json_decref(pre);
    world_free(w);
}
END_TEST

/* An API server outage: nothing is evicted until it answers; the claim holds. */
START_TEST(api_outage_retries)
{
    world *w = issue_scene(60);
    w->io.api_down = true;
    json_t *pre = pod_json("urgent", 1000, NULL, G, 1, NULL, NULL);
    json_decref(filter(w, pre, N1));
    preempt_tick(w->p);
    ck_assert_int_eq(w->io.nevict, 0);
    ck_assert(has_claim(w, "urgent"));
    w->io.api_down = false;
    struct timespec ts = {0, 600 * 1000000};   /* past the first backoff (0.5 s) */
    nanosleep(&ts, NULL);
    preempt_tick(w->p);
    ck_assert_int_eq(w->io.nevict, 1);
    ck_assert_str_eq(w->io.evicted[0], "whole");
    json_decref(pre);
    world_free(w);
}
END_TEST

/* A restarted gpupack: the preemptor carries nominatedNodeName, its victim is
 * terminating; the first LIST ends with the reservation rebuilt. */
START_TEST(restart_rebuilds_reservation)
{
    world *w = issue_scene(60);
    json_t *t = pod_json("whole", 0, "n1", G, 1, NULL, NULL);
    json_object_set_new(json_object_get(t, "metadata"), "deletionTimestamp",
                        json_string("2099-01-01T00:00:00Z"));
    preempt_pod_event(w->p, false, t);
    json_decref(t);
    json_t *pre = pod_json("urgent", 1000, NULL, G, 1, NULL, NULL);
    json_object_set_new(json_object_get(pre, "status"), "nominatedNodeName", json_string("n1"));
    preempt_pod_event(w->p, false, pre);
    ck_assert(!has_claim(w, "urgent"));
    preempt_pods_synced(w->p);
    ck_assert(has_claim(w, "urgent"));
    /* a lower-priority pod cannot take GPU 0 once the victim is gone */
    pod_gone(w, "whole");
    json_t *low = pod_json("late", 0, NULL, G / 2, 1, NULL, NULL);
    json_t *ans = filter(w, low, N1);
    ck_assert(!fits(ans, "n1"));
    json_decref(ans);
    ans = filter(w, pre, N1);
    ck_assert(fits(ans, "n1"));
    json_decref(ans);
    ck_assert_int_eq(w->io.nevict, 0);   /* a rebuild never evicts */
    json_decref(low);
    json_decref(pre);
    world_free(w);
}
END_TEST

/* Pods terminating for reasons of their own: a pending pod that only waits
 * for them holds nothing, unless it was nominated there (its preemption was
 * done by kube-scheduler, or by gpupack before a restart). */
START_TEST(waiting_needs_nomination)
{
    world *w = world_new(60);
    add_node(w, "n1", 1, "A100");
    add_pod(w, "going", 0, "n1", GPU0, G, 1, NULL);
    json_t *t = pod_json("going", 0, "n1", G, 1, NULL, NULL);
    json_object_set_new(json_object_get(t, "metadata"), "deletionTimestamp",
                        json_string("2099-01-01T00:00:00Z"));
    preempt_pod_event(w->p, false, t);
    json_decref(t);
    json_t *hi = pod_json("hi", 1000, NULL, G, 1, NULL, NULL);
    json_t *ans = filter(w, hi, N1);
    ck_assert(!fits(ans, "n1") && !strstr(reason(ans, "n1"), "held for this pod"));
    json_decref(ans);
    ck_assert(!has_claim(w, "hi"));
    ck_assert_int_eq(w->io.nevict, 0);   /* a terminating pod is no victim */
    json_object_set_new(json_object_get(hi, "status"), "nominatedNodeName", json_string("n1"));
    ans = filter(w, hi, N1);
    ck_assert_msg(strstr(reason(ans, "n1"), "waiting for 1 pod to terminate, GPU 0 (16384 MiB) held "
                                            "for this pod: ml/going"), "%s", reason(ans, "n1"));
    json_decref(ans);
    ck_assert(has_claim(w, "hi"));
    preempt_tick(w->p);
    ck_assert_int_eq(w->io.nevict, 0);
    json_decref(hi);
    world_free(w);
}
END_TEST

/* kube-scheduler's preemptVerb: pods without GPUs get their victims back
 * unchanged; a GPU pod gets the GPU victims added, or the node dropped. */
START_TEST(preempt_verb)
{
    world *w = issue_scene(60);
    add_node(w, "n2", 1, "T4");
    add_pod(w, "cpu-hog", 0, "n1", (const int[]){-1}, 0, 5, NULL);
    char *out = NULL;
    const char *cpu =
        "{\"Pod\":{\"metadata\":{\"name\":\"c\",\"namespace\":\"ml\",\"uid\":\"uid-c\"},\"spec\":"
        "{\"priority\":1000,\"containers\":[{\"name\":\"m\"}]}},\"NodeNameToMetaVictims\":"
        "{\"n1\":{\"Pods\":[{\"UID\":\"uid-cpu-hog\"}],\"NumPDBViolations\":0}}}";
    ck_assert_int_eq(extender_preempt(w->e, cpu, strlen(cpu), &out), 200);
    ck_assert_str_eq(out, "{\"NodeNameToMetaVictims\":{\"n1\":{\"Pods\":[{\"UID\":\"uid-cpu-hog\"}],"
                          "\"NumPDBViolations\":0}}}");
    free(out);
    const char *gpu =
        "{\"Pod\":{\"metadata\":{\"name\":\"g\",\"namespace\":\"ml\",\"uid\":\"uid-g\"},\"spec\":"
        "{\"priority\":1000,\"containers\":[{\"name\":\"m\",\"resources\":{\"limits\":"
        "{\"gpupack.io/gpu-mem\":\"16384\"}}}]}},\"NodeNameToMetaVictims\":"
        "{\"n1\":{\"Pods\":[{\"UID\":\"uid-cpu-hog\"}],\"NumPDBViolations\":0},"
        "\"n2\":{\"Pods\":[{\"UID\":\"uid-other\"}],\"NumPDBViolations\":0}}}";
    ck_assert_int_eq(extender_preempt(w->e, gpu, strlen(gpu), &out), 200);
    json_t *res = json_loads(out, 0, NULL);
    free(out);
    const json_t *map = json_object_get(res, "NodeNameToMetaVictims");
    ck_assert_int_eq(json_object_size(map), 2);
    const json_t *pods = json_object_get(json_object_get(map, "n1"), "Pods");
    ck_assert_int_eq(json_array_size(pods), 2);   /* kube-scheduler's victim + the GPU's */
    bool whole = false, hog = false;
    for (size_t i = 0; i < 2; i++) {
        const char *u = json_string_value(json_object_get(json_array_get(pods, i), "UID"));
        whole |= strcmp(u, "uid-whole") == 0;
        hog |= strcmp(u, "uid-cpu-hog") == 0;
    }
    ck_assert(whole && hog);
    /* n2 (an empty T4 without our pods) fits once kube-scheduler's victim goes: kept as proposed */
    ck_assert_int_eq(json_array_size(json_object_get(json_object_get(map, "n2"), "Pods")), 1);
    json_decref(res);
    const char *bad = "{\"Pod\":[]}";
    ck_assert_int_eq(extender_preempt(w->e, bad, strlen(bad), &out), 400);
    free(out);
    world_free(w);
}
END_TEST


/* ------------------------------------------------------------ consolidation -- */

/* Two GPUs each half full with a ReplicaSet's pods; a pod of the same
 * priority asks a whole GPU. */
static world *frag_scene(const char *owner_a, const char *owner_b)
{
    world *w = world_new(60);
    add_node(w, "n1", 2, "A100");
    add_pod_owned(w, "a", 0, "n1", GPU0, G / 2, 1, NULL, owner_a);
    add_pod_owned(w, "b", 0, "n1", GPU1, G / 2, 2, NULL, owner_b);
    return w;
}

static int held_places(world *w)
{
    json_t *ins = preempt_inspect(w->p);
    int n = (int)json_array_size(json_object_get(ins, "heldPlaces"));
    json_decref(ins);
    return n;
}

/* The story: one move, the freed GPU and the replacement's place are held,
 * a third pod takes neither, the replacement takes its place, the waiting
 * pod binds. */
START_TEST(consolidation_moves_one)
{
    world *w = frag_scene("ReplicaSet/rs-1", "ReplicaSet/rs-1");
    json_t *big = pod_json("big", 0, NULL, G, 1, NULL, NULL);
    json_t *ans = filter(w, big, N1);
    ck_assert_msg(strstr(reason(ans, "n1"), "moving 1 pod to free GPU 0 (16384 MiB) for this pod: "
                                            "ml/a"), "%s", reason(ans, "n1"));
    json_decref(ans);
    ck_assert(has_claim(w, "big"));
    ck_assert_int_eq(held_places(w), 1);
    preempt_tick(w->p);   /* nominate, evict */
    ck_assert_int_eq(w->io.nevict, 1);
    ck_assert_str_eq(w->io.evicted[0], "a");
    bool consolidating = false, moved = false;
    for (int i = 0; i < w->io.nevents; i++) {
        consolidating |= strncmp(w->io.events[i], "Consolidating big: moving 1 pod on n1", 37) == 0;
        moved |= strncmp(w->io.events[i], "MovedForConsolidation a: moved by gpupack", 41) == 0 &&
                 strstr(w->io.events[i], "for pod ml/big") &&
                 strstr(w->io.events[i], "held for the replacement on n1 GPU 1 (8192 MiB)");
    }
    ck_assert_msg(consolidating && moved, "%s | %s", w->io.events[0], w->io.events[1]);
    pod_gone(w, "a");
    /* a third pod of the same priority: the freed GPU and the held place are not its */
    json_t *third = pod_json("third", 0, NULL, G / 2, 1, NULL, NULL);
    ans = filter(w, third, N1);
    ck_assert_msg(!fits(ans, "n1"), "the third pod took a held share");
    json_decref(ans);
    /* the replacement (same ReplicaSet) takes the held place: on GPU 1 beside b */
    json_t *repl = pod_json("a-2", 0, NULL, G / 2, 1, NULL, NULL);
    set_owner(repl, "ReplicaSet/rs-1");
    ans = filter(w, repl, N1);
    ck_assert(fits(ans, "n1"));
    json_decref(ans);
    ck_assert(bind(w, "a-2", "n1"));
    preempt_tick(w->p);
    ck_assert_int_eq(held_places(w), 0);
    /* the waiting pod fits and binds; the third still does not */
    ans = filter(w, big, N1);
    ck_assert(fits(ans, "n1"));
    json_decref(ans);
    ck_assert(bind(w, "big", "n1"));
    ans = filter(w, third, N1);
    ck_assert(!fits(ans, "n1"));
    json_decref(ans);
    preempt_tick(w->p);
    gp_preempt_stats st;
    preempt_stats(w->p, &st);
    ck_assert_int_eq(st.c_started, 1);
    ck_assert_int_eq(st.c_moved, 1);
    ck_assert_int_eq(st.c_held_used, 1);
    ck_assert_int_eq(st.c_bound, 1);
    ck_assert_int_eq(st.started, 0);   /* not a preemption */
    ck_assert_int_eq(st.c_last_hour, 1);
    json_decref(repl);
    json_decref(third);
    json_decref(big);
    world_free(w);
}
END_TEST

/* Who is never moved, and what stops consolidation: nothing is claimed or
 * evicted. */
typedef struct keep_case {
    const char *what;
    const char *owner_a, *owner_b;
    int prio;                     /* of the waiting pod */
    const char *policy;
    const char *reason;           /* in filter's reason, or NULL */
} keep_case;

#define POLICY_HEAD "apiVersion: gpupack.io/v1alpha1\nkind: PackingPolicy\nmetadata: {name: default}\n"
static const keep_case keeps[] = {
    {"bare pods: nothing recreates them", NULL, NULL, 0, NULL, NULL},
    {"a Job's pods (an eviction counts against its backoffLimit)", "Job/j-1", "Job/j-1", 0, NULL,
     NULL},
    {"a DaemonSet's pods", "DaemonSet/d-1", "DaemonSet/d-1", 0, NULL, NULL},
    {"pods of higher priority than the waiting pod", "ReplicaSet/rs-1", "ReplicaSet/rs-1", -1, NULL,
     NULL},
    {"consolidation off in the policy", "ReplicaSet/rs-1", "StatefulSet/s-1", 0,
     POLICY_HEAD "spec: {consolidation: {enabled: false}}\n", NULL},
    {"pods placed under a policy that says movable: false", "ReplicaSet/rs-1", "ReplicaSet/rs-2", 0,
     POLICY_HEAD "spec: {consolidation: {movable: false}}\n", NULL},
    {"pods placed under a protected policy", "ReplicaSet/rs-1", "ReplicaSet/rs-2", 0,
     POLICY_HEAD "spec: {preemption: {protected: true}}\n", NULL},
    {"the namespace's hourly budget is spent", "ReplicaSet/rs-1", "ReplicaSet/rs-2", 0,
     POLICY_HEAD "spec: {consolidation: {maxMovesPerHour: 0}}\n",
     "moving 1 pod would make room, but the hourly move budget"},
};

START_TEST(consolidation_keeps)
{
    const keep_case *k = &keeps[_i];
    world *w = frag_scene(k->owner_a, k->owner_b);
    if (k->policy)
        use_policy(w, k->policy);
    json_t *big = pod_json("big", k->prio, NULL, G, 1, NULL, NULL);
    json_t *ans = filter(w, big, N1);
    ck_assert_msg(!fits(ans, "n1") && !strstr(reason(ans, "n1"), "moving 1 pod to"), "%s: %s",
                  k->what, reason(ans, "n1"));
    if (k->reason)
        ck_assert_msg(strstr(reason(ans, "n1"), k->reason), "%s: %s", k->what, reason(ans, "n1"));
    json_decref(ans);
    preempt_tick(w->p);
    ck_assert_msg(w->io.nevict == 0 && !has_claim(w, "big") && held_places(w) == 0, "%s",
                  k->what);
    json_decref(big);
    if (k->policy)
        drop_policy(w);
    world_free(w);
}
END_TEST

/* A PodDisruptionBudget refuses the move (429): the plan ends, its held
 * place goes, and the next plan moves the other controller's pod. */
START_TEST(consolidation_pdb_blocked)
{
    world *w = frag_scene("ReplicaSet/rs-1", "StatefulSet/s-2");
    json_t *big = pod_json("big", 0, NULL, G, 1, NULL, NULL);
    json_t *ans = filter(w, big, N1);
    ck_assert_msg(strstr(reason(ans, "n1"), "ml/a"), "%s", reason(ans, "n1"));
    json_decref(ans);
    gp_strlcpy(w->io.block, "a", sizeof w->io.block);
    preempt_tick(w->p);
    ck_assert_int_eq(w->io.nevict, 0);
    ck_assert(!has_claim(w, "big"));
    ck_assert_int_eq(held_places(w), 0);
    gp_preempt_stats st;
    preempt_stats(w->p, &st);
    ck_assert_int_eq(st.c_blocked, 1);
    bool warned = false;
    for (int i = 0; i < w->io.nevents; i++)
        warned |= strncmp(w->io.events[i], "ConsolidationBlocked big", 24) == 0;
    ck_assert(warned);
    ans = filter(w, big, N1);   /* a's controller rests: b moves */
    ck_assert_msg(strstr(reason(ans, "n1"), "moving 1 pod to free GPU 1 (16384 MiB) for this pod: "
                                            "ml/b"), "%s", reason(ans, "n1"));
    json_decref(ans);
    preempt_tick(w->p);
    ck_assert_int_eq(w->io.nevict, 1);
    ck_assert_str_eq(w->io.evicted[0], "b");
    json_decref(big);
    world_free(w);
}
END_TEST

/* The waiting pod as the watch shows it after its nomination: nominated on
 * n1, carrying the record of held places (heldrec.h) as its condition. */
static json_t *waiting_pod(const char *record)
{
    json_t *big = pod_json("big", 0, NULL, G, 1, NULL, NULL);
    json_t *st = json_object_get(big, "status");
    json_object_set_new(st, "nominatedNodeName", json_string("n1"));
    json_object_set_new(st, "conditions",
                        json_pack("[{s:s,s:s,s:s}]", "type", GP_HELD_PLACES_CONDITION, "status", "True",
                                  "message", record));
    return big;
}

/* A replacement of rs-1 bound on n1 GPU 1, made after the plan (its start far off). */
static void replacement_bound(world *w)
{
    add_pod_owned(w, "a-2", 0, "n1", GPU1, G / 2, 0, NULL, "ReplicaSet/rs-1");
    json_t *j = pod_json("a-2", 0, "n1", G / 2, 1, NULL, NULL);
    json_object_set_new(json_object_get(j, "status"), "startTime", json_string("2099-01-01T00:00:00Z"));
    set_owner(j, "ReplicaSet/rs-1");
    preempt_pod_event(w->p, false, j);
    json_decref(j);
}

/* The record the nomination writes holds the moved pod's place again after
 * a restart: a third pod cannot take it, the replacement can, and it goes
 * when a replacement is bound (by another replica: no claim was used here). */
START_TEST(consolidation_restart_holds_again)
{
    world *w = frag_scene("ReplicaSet/rs-1", "ReplicaSet/rs-1");
    json_t *big = pod_json("big", 0, NULL, G, 1, NULL, NULL);
    json_decref(filter(w, big, N1));
    json_decref(big);
    preempt_tick(w->p);   /* nominate (with the record), evict a */
    ck_assert_int_eq(w->io.nevict, 1);
    gp_held_rec r;
    gp_err err;
    ck_assert_msg(heldrec_decode(w->io.held, &r, &err) == 0, "%s: %s", w->io.held, err.msg);
    ck_assert_int_eq(r.n, 1);
    ck_assert_str_eq(r.p[0].owner, "rs-1");
    ck_assert_str_eq(r.p[0].pod, "a");
    ck_assert_str_eq(r.p[0].node, "n1");
    ck_assert_int_eq(r.p[0].nholds, 1);
    ck_assert_int_eq(r.p[0].holds[0].index, 1);
    ck_assert_int_eq(r.p[0].holds[0].mem_mib, G / 2);
    ck_assert(r.p[0].expires_ns > r.at_ns);
    heldrec_clear(&r);
    /* this replica's own watch shows the record: nothing is held twice */
    json_t *seen = waiting_pod(w->io.held);
    preempt_pod_event(w->p, false, seen);
    ck_assert_int_eq(held_places(w), 1);
    char record[sizeof w->io.held];
    gp_strlcpy(record, w->io.held, sizeof record);
    world_free(w);

    /* a restart: the LIST shows b, the waiting pod and its record; a is gone */
    for (int pass = 0; pass < 2; pass++) {
        w = world_new(60);
        add_node(w, "n1", 2, "A100");
        add_pod_owned(w, "b", 0, "n1", GPU1, G / 2, 2, NULL, "ReplicaSet/rs-1");
        if (pass == 1)
            replacement_bound(w);   /* bound before the restart: its place is not held again */
        preempt_pod_event(w->p, false, seen);
        ck_assert_int_eq(held_places(w), 0);   /* not before the LIST is complete */
        preempt_pods_synced(w->p);
        gp_preempt_stats st;
        preempt_stats(w->p, &st);
        ck_assert_int_eq(held_places(w), pass == 0 ? 1 : 0);
        ck_assert_int_eq(st.c_held_rebuilt, pass == 0 ? 1 : 0);
        if (pass == 0) {
            json_t *third = pod_json("third", 0, NULL, G / 2, 1, NULL, NULL);
            json_t *ans = filter(w, third, N1);
            ck_assert_msg(!fits(ans, "n1"), "the third pod took the place held again");
            json_decref(ans);
            json_decref(third);
            json_t *repl = pod_json("a-3", 0, NULL, G / 2, 1, NULL, NULL);
            set_owner(repl, "ReplicaSet/rs-1");
            ans = filter(w, repl, N1);
            ck_assert(fits(ans, "n1"));
            json_decref(ans);
            json_decref(repl);
            /* another replica binds the replacement: the place goes */
            replacement_bound(w);
            preempt_tick(w->p);
            ck_assert_int_eq(held_places(w), 0);
            preempt_stats(w->p, &st);
            ck_assert_int_eq(st.c_held_used, 1);
        }
        world_free(w);
    }
    json_decref(seen);
}
END_TEST

/* A pod of the moved pod's controller made in the plan's second (creation
 * times count whole seconds) is not taken for its replacement: the place
 * stays held. */
START_TEST(consolidation_same_second_is_not_after)
{
    world *w = frag_scene("ReplicaSet/rs-1", "ReplicaSet/rs-1");
    add_node(w, "n2", 1, "A100");
    add_pod_owned(w, "c", 0, "n2", GPU0, G, 0, NULL, "ReplicaSet/rs-1");
    json_t *c = pod_json("c", 0, "n2", G, 1, NULL, NULL);
    char ts[32];
    gp_rfc3339_format(gp_now_ns() / 1000000000 * 1000000000, ts, sizeof ts);   /* this second */
    json_object_set_new(json_object_get(c, "status"), "startTime", json_string(ts));
    set_owner(c, "ReplicaSet/rs-1");
    preempt_pod_event(w->p, false, c);
    json_decref(c);
    json_t *big = pod_json("big", 0, NULL, G, 1, NULL, NULL);
    json_decref(filter(w, big, N1));
    json_decref(big);
    ck_assert_int_eq(held_places(w), 1);
    preempt_tick(w->p);
    ck_assert_int_eq(held_places(w), 1);
    world_free(w);
}
END_TEST

/* A record that is over, too far off or malformed holds nothing. */
START_TEST(consolidation_record_ignored)
{
    int64_t now = gp_now_ns();
    char *texts[3];
    texts[0] = xasprintf("{\"v\":1,\"at\":%lld,\"places\":[{\"owner\":\"rs-1\",\"ns\":\"ml\","
                         "\"pod\":\"a\",\"node\":\"n1\",\"gpus\":[[1,8192,0]],\"cpu\":0,\"mem\":0,"
                         "\"expires\":%lld}]}", (long long)(now - 200000000000LL), (long long)(now - 1000000000LL));
    texts[1] = xasprintf("{\"v\":1,\"at\":%lld,\"places\":[{\"owner\":\"rs-1\",\"ns\":\"ml\","
                         "\"pod\":\"a\",\"node\":\"n1\",\"gpus\":[[1,8192,0]],\"cpu\":0,\"mem\":0,"
                         "\"expires\":%lld}]}", (long long)now, (long long)(now + 86400000000000LL));
    texts[2] = xstrdup("{\"v\":1,\"at\":5,\"places\":\"everything\"}");
    for (int i = 0; i < 3; i++) {
        world *w = world_new(60);
        add_node(w, "n1", 2, "A100");
        json_t *big = waiting_pod(texts[i]);
        preempt_pod_event(w->p, false, big);
        preempt_pods_synced(w->p);
        ck_assert_msg(held_places(w) == 0, "record %d held a place", i);
        json_decref(big);
        free(texts[i]);
        world_free(w);
    }
}
END_TEST

/* Each moved pod's replacement asks what that pod holds, on its own GPU
 * model: x (T4) and b (A100) hold the same 12 GiB, so a request made for
 * one must not serve the other. x cannot move (no other T4 GPU); b can, to
 * n3, the one A100 with 12 GiB free. */
START_TEST(consolidation_replacements_keep_their_model)
{
    world *w = world_new(60);
    add_node(w, "n1", 1, "T4");
    add_node(w, "n2", 1, "A100");
    add_node(w, "n3", 1, "A100");
    add_pod_owned(w, "x", 0, "n1", GPU0, 3 * G / 4, 1, NULL, "ReplicaSet/rs-x");
    add_pod_owned(w, "b", 0, "n2", GPU0, 3 * G / 4, 2, NULL, "ReplicaSet/rs-b");
    add_pod(w, "c", 0, "n3", GPU0, G / 4, 3, NULL);
    static const char *const all[] = {"n1", "n2", "n3", NULL};
    json_t *big = pod_json("big", 0, NULL, G, 1, NULL, NULL);
    json_t *ans = filter(w, big, all);
    ck_assert_msg(strstr(reason(ans, "n2"), "moving 1 pod to free GPU 0 (16384 MiB) for this pod: "
                                            "ml/b"), "%s", reason(ans, "n2"));
    json_decref(ans);
    preempt_tick(w->p);
    ck_assert_int_eq(w->io.nevict, 1);
    ck_assert_str_eq(w->io.evicted[0], "b");
    bool moved = false;
    for (int i = 0; i < w->io.nevents; i++)
        moved |= strncmp(w->io.events[i], "MovedForConsolidation b:", 24) == 0 &&
                 strstr(w->io.events[i], "held for the replacement on n3 GPU 0 (12288 MiB)");
    ck_assert_msg(moved, "%s | %s", w->io.events[0], w->io.events[1]);
    json_decref(big);
    world_free(w);
}
END_TEST

/* Nothing stays held: the replacement never comes, the waiting pod is deleted. */
START_TEST(consolidation_nothing_stays)
{
    world *w = frag_scene("ReplicaSet/rs-1", "ReplicaSet/rs-1");
    json_t *big = pod_json("big", 0, NULL, G, 1, NULL, NULL);
    json_t *ans = filter(w, big, N1);
    json_decref(ans);
    ck_assert(has_claim(w, "big"));
    ck_assert_int_eq(held_places(w), 1);
    pod_gone(w, "big");   /* deleted before anything moved: the held place goes with the plan */
    preempt_tick(w->p);
    ck_assert(!has_claim(w, "big"));
    ck_assert_int_eq(w->io.nevict, 0);
    ck_assert_int_eq(held_places(w), 0);
    json_decref(big);
    world_free(w);
}
END_TEST

Suite *suite_preempt(void);
Suite *suite_preempt(void)
{
    Suite *s = suite_create("preempt");
    TCase *t = tcase_create("preempt");
    tcase_set_timeout(t, 30);
    tcase_add_test(t, one_victim_not_two);
    tcase_add_loop_test(t, no_preemption, 0, (int)GP_ARRAY_LEN(noways));
    tcase_add_test(t, better_node_wins);
    tcase_add_test(t, just_bound_victim_counts);
    tcase_add_test(t, pdb_and_429);
    tcase_add_test(t, reservation_ends);
    tcase_add_test(t, relist_forgets_the_unlisted);
    tcase_add_test(t, parked_claim_pods_tracked);
    tcase_add_test(t, malformed_annotation_still_known);
    tcase_add_test(t, api_outage_retries);
    tcase_add_test(t, renudge_while_unbound);
    tcase_add_test(t, restart_rebuilds_reservation);
    tcase_add_test(t, waiting_needs_nomination);
    tcase_add_test(t, preempt_verb);
    tcase_add_test(t, consolidation_moves_one);
    tcase_add_loop_test(t, consolidation_keeps, 0, (int)GP_ARRAY_LEN(keeps));
    tcase_add_test(t, consolidation_pdb_blocked);
    tcase_add_test(t, consolidation_nothing_stays);
    tcase_add_test(t, consolidation_replacements_keep_their_model);
    tcase_add_test(t, consolidation_restart_holds_again);
    tcase_add_test(t, consolidation_record_ignored);
    tcase_add_test(t, consolidation_same_second_is_not_after);
    suite_add_tcase(s, t);
    return s;
}
