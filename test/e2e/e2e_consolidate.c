/* e2e_consolidate.c -- consolidation on the real control plane, with the kit's
 * kube-controller-manager (ReplicaSets recreate evicted pods, the disruption
 * controller keeps PodDisruptionBudget status): the pods of a ReplicaSet are
 * left one per GPU, a pod of the same priority asks a whole GPU, and gpupack
 * moves the fewest pods so that it binds -- never a PDB-protected one, also
 * across a gpupack restart in the middle, and no GPU over-committed at any
 * poll by the assignment annotations.
 *
 * The scene: NODES nodes of one 24 GiB GPU. Bare "filler" pods pinned one per
 * node take half of each GPU, then the ReplicaSet's NODES pods of 12 GiB land
 * one per GPU (the only room), then the fillers go: every GPU holds 12 GiB,
 * 96 GiB are free, and a 24 GiB pod fits nowhere. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "model/heldrec.h"

#define NS "e2e-consol"
#define G 24576
#define NODES 8

/* ------------------------------------------------------------ helpers -- */

static e2e_gp *the_gp;

/* A node of one GPU, labelled e2e-node=name, once gpupack knows it. */
static void node(e2e_cp *cp, const char *name)
{
    json_t *n = e2e_node_gpupack(name, 1, G, "NVIDIA-L4");
    json_object_set_new(json_object_get(json_object_get(n, "metadata"), "labels"), "e2e-node",
                        json_string(name));
    e2e_node_create(cp, n);
    char path[300];
    snprintf(path, sizeof path, "/inspect/%s", name);
    double end = gp_mono_s() + 10;
    long st = 0;
    while (gp_mono_s() < end) {
        free(e2e_gp_get(the_gp, path, &st));
        if (st == 200)
            return;
        e2e_sleep(0.05);
    }
    ck_abort_msg("gpupack never saw node %s", name);
}

static json_t *gpod(const char *name, long mem)
{
    json_t *p = e2e_pod(NS, name);
    char m[32];
    snprintf(m, sizeof m, "%ld", mem);
    e2e_pod_ctr(p, "main", false, "gpupack.io/gpu-mem", m, NULL);
    return p;
}

static void replicaset(e2e_cp *cp, const char *name, int replicas, long mem)
{
    json_t *p = gpod("template", mem);
    json_t *spec = json_incref(json_object_get(p, "spec"));
    json_decref(p);
    json_t *rs = json_pack("{s:s,s:s,s:{s:s},s:{s:i,s:{s:{s:s}},s:{s:{s:{s:s}},s:o}}}",
                           "apiVersion", "apps/v1", "kind", "ReplicaSet", "metadata", "name", name,
                           "spec", "replicas", replicas, "selector", "matchLabels", "app", name,
                           "template", "metadata", "labels", "app", name, "spec", spec);
    json_decref(e2e_api_ok(cp, "POST", "/apis/apps/v1/namespaces/" NS "/replicasets", NULL, rs));
    json_decref(rs);
}

/* The set's pods: names into names (up to max), how many are bound (and not
 * terminating) in *bound. Returns how many exist. */
static int set_pods(e2e_cp *cp, const char *app, char names[][128], int max, int *bound)
{
    json_t *pods = e2e_pods(cp, NS);
    int n = 0;
    *bound = 0;
    size_t i;
    json_t *p;
    json_array_foreach(pods, i, p) {
        const json_t *md = json_object_get(p, "metadata");
        const char *a = json_string_value(json_object_get(json_object_get(md, "labels"), "app"));
        if (!a || strcmp(a, app) != 0)
            continue;
        const char *nn = json_string_value(json_object_get(json_object_get(p, "spec"), "nodeName"));
        if (nn && *nn && !json_object_get(md, "deletionTimestamp"))
            (*bound)++;
        if (n < max)
            gp_strlcpy(names[n], json_string_value(json_object_get(md, "name")), 128);
        n++;
    }
    json_decref(pods);
    return n;
}

static bool is_bound(e2e_cp *cp, const char *name)
{
    json_t *p = e2e_pod_get(cp, NS, name);
    const char *nn = p ? json_string_value(json_object_get(json_object_get(p, "spec"), "nodeName")) : NULL;
    bool b = nn && *nn;
    json_decref(p);
    return b;
}

/* Fails the test at once when any GPU is over capacity by the annotations. */
static void no_overcommit(e2e_cp *cp, const char *when)
{
    e2e_verdict v;
    e2e_verify(cp, NULL, &v);
    ck_assert_msg(v.gpus_over == 0, "%s: %d GPU(s) over capacity: %s", when, v.gpus_over, v.report);
}

/* The scene above; the names of the set's pods into orig. */
static e2e_world *scene(char orig[][128])
{
    e2e_world_opts o = {.cp = {.controller_manager = true}};
    e2e_world *w = e2e_world_up(&o);
    the_gp = w->gp;
    e2e_cp *cp = w->cp;
    e2e_ns_create(cp, NS);
    for (int i = 0; i < NODES; i++) {
        char name[32], filler[32];
        snprintf(name, sizeof name, "consol-%d", i);
        node(cp, name);
        snprintf(filler, sizeof filler, "filler-%d", i);
        json_t *f = gpod(filler, G / 2);
        e2e_pod_select(f, "e2e-node", name);
        e2e_pod_create(cp, f);
    }
    ck_assert_msg(e2e_wait_bound(cp, NS, NODES, 60) == NODES, "the fillers were not bound");
    replicaset(cp, "frag", NODES, G / 2);
    int bound = 0;
    double end = gp_mono_s() + 90;
    while ((set_pods(cp, "frag", orig, NODES, &bound), bound) < NODES && gp_mono_s() < end)
        e2e_sleep(0.2);
    ck_assert_msg(bound == NODES, "only %d of the ReplicaSet's %d pods were bound", bound, NODES);
    for (int i = 0; i < NODES; i++) {
        char filler[32];
        snprintf(filler, sizeof filler, "filler-%d", i);
        e2e_pod_delete(cp, NS, filler);
    }
    e2e_verdict v;
    e2e_assert_consistent(cp, w->gp, 20, &v);
    ck_assert_int_eq(v.gpus_used, NODES);   /* one 12 GiB pod per GPU */
    e2e_log("scene: %d GPUs of 24 GiB, each holding one 12 GiB pod of ReplicaSet frag", NODES);
    return w;
}

/* How many of the set's original pods are gone (moved). */
static int moved(e2e_cp *cp, char orig[][128])
{
    int n = 0;
    for (int i = 0; i < NODES; i++) {
        json_t *p = e2e_pod_get(cp, NS, orig[i]);
        n += !p || json_object_get(json_object_get(p, "metadata"), "deletionTimestamp");
        json_decref(p);
    }
    return n;
}

/* The set's pods made after the scene (replacements of moved ones) that are bound. */
static int replacements_bound(e2e_cp *cp, char orig[][128])
{
    json_t *pods = e2e_pods(cp, NS);
    int n = 0;
    size_t i;
    json_t *p;
    json_array_foreach(pods, i, p) {
        const json_t *md = json_object_get(p, "metadata");
        const char *a = json_string_value(json_object_get(json_object_get(md, "labels"), "app"));
        const char *name = json_string_value(json_object_get(md, "name"));
        const char *nn = json_string_value(json_object_get(json_object_get(p, "spec"), "nodeName"));
        if (!a || strcmp(a, "frag") != 0 || !name || !nn || !*nn)
            continue;
        bool old = false;
        for (int k = 0; k < NODES && !old; k++)
            old = strcmp(orig[k], name) == 0;
        n += !old;
    }
    json_decref(pods);
    return n;
}

/* The waiting pod's record of held places (model/heldrec.h), waiting up to
 * timeout_s for the nomination that writes it: its number of places, or -1. */
static int held_record(e2e_cp *cp, const char *name, double timeout_s)
{
    double end = gp_mono_s() + timeout_s;
    for (;;) {
        json_t *p = e2e_pod_get(cp, NS, name);
        gp_held_rec r;
        gp_err err;
        int rc = p ? heldrec_from_pod(p, &r, &err) : 0;
        json_decref(p);
        ck_assert_msg(rc >= 0, "pod %s: malformed record: %s", name, err.msg);
        if (rc == 1) {
            int n = r.n;
            heldrec_clear(&r);
            return n;
        }
        if (gp_mono_s() > end)
            return -1;
        e2e_sleep(0.1);
    }
}

/* Waits for pod `name` to bind, checking over-commit at every poll; then
 * for the set to be whole again. Returns the seconds to bind, -1 if not. */
static double wait_whole(e2e_world *w, const char *name, double since, double timeout_s)
{
    double end = gp_mono_s() + timeout_s;
    while (!is_bound(w->cp, name)) {
        no_overcommit(w->cp, "while consolidating");
        if (gp_mono_s() > end)
            return -1;
        e2e_sleep(0.25);
    }
    double took = gp_mono_s() - since;
    char names[NODES * 2][128];
    int bound = 0;
    end = gp_mono_s() + 60;
    while ((set_pods(w->cp, "frag", names, NODES * 2, &bound), bound) < NODES && gp_mono_s() < end) {
        no_overcommit(w->cp, "while the replacements come");
        e2e_sleep(0.25);
    }
    ck_assert_msg(bound == NODES, "the ReplicaSet has %d of %d pods bound after the move", bound,
                  NODES);
    return took;
}

/* ------------------------------------------------------------ cases -- */

/* The scene: one move makes room, the pod binds, the replacement too. */
START_TEST(moves_for_whole_gpu)
{
    char orig[NODES][128];
    e2e_world *w = scene(orig);
    e2e_cp *cp = w->cp;
    double t0 = gp_mono_s();
    e2e_pod_create(cp, gpod("whole", G));
    double took = wait_whole(w, "whole", t0, 120);
    ck_assert_msg(took >= 0, "the 24 GiB pod was not bound within 120 s");
    int n = moved(cp, orig);
    ck_assert_msg(n == 1, "%d pods moved, the minimum is 1", n);
    char *ev = e2e_wait_pod_event(cp, NS, "whole", "Consolidating", "moving 1 pod", 10);
    ck_assert_msg(ev != NULL, "no Consolidating event on the waiting pod");
    free(ev);
    bool seen = false;
    for (int i = 0; i < NODES && !seen; i++) {
        char *m = e2e_pod_event(cp, NS, orig[i], "MovedForConsolidation");
        seen = m && strstr(m, "for pod " NS "/whole");
        free(m);
    }
    ck_assert_msg(seen, "no MovedForConsolidation event on the moved pod");
    ck_assert_int_eq(e2e_gp_metric(w->gp, "gpupack_consolidation_moves_total"), 1);
    e2e_log("FIGURE consolidation: 24 GiB pod created -> bound in %.2f s; %d pod moved (minimum 1)",
            took, n);
    e2e_verdict v;
    e2e_assert_consistent(cp, w->gp, 20, &v);
    /* the place held for the replacement goes at preemption's next round after
     * the replacement is placed (0.2 s), which may come after the check above:
     * seen in CI, released 0.2 s after the bind */
    e2e_gp_wait_metric(w->gp, "gpupack_consolidation_held_places", 0, 5);
    e2e_world_down(w);
}
END_TEST

/* A PodDisruptionBudget that allows no disruption: nothing of the set moves,
 * the waiting pod stays pending and is told why. */
START_TEST(pdb_protected_set)
{
    char orig[NODES][128];
    e2e_world *w = scene(orig);
    e2e_cp *cp = w->cp;
    /* the set runs and is Ready, as a kubelet would report: the Eviction API
     * ignores budgets for pods still Pending */
    for (int i = 0; i < NODES; i++) {
        char *path = xasprintf("/api/v1/namespaces/" NS "/pods/%s/status", orig[i]);
        json_t *patch = json_pack("{s:{s:s,s:[{s:s,s:s}]}}", "status", "phase", "Running",
                                  "conditions", "type", "Ready", "status", "True");
        json_decref(e2e_api_ok(cp, "PATCH", path, "application/merge-patch+json", patch));
        json_decref(patch);
        free(path);
    }
    json_t *pdb = json_pack("{s:s,s:s,s:{s:s},s:{s:i,s:{s:{s:s}}}}", "apiVersion", "policy/v1", "kind",
                            "PodDisruptionBudget", "metadata", "name", "frag", "spec", "minAvailable",
                            NODES, "selector", "matchLabels", "app", "frag");
    json_decref(e2e_api_ok(cp, "POST", "/apis/policy/v1/namespaces/" NS "/poddisruptionbudgets", NULL,
                           pdb));
    json_decref(pdb);
    /* the disruption controller's status: the Eviction API refuses by it */
    double end = gp_mono_s() + 30;
    bool ready = false;
    while (!ready && gp_mono_s() < end) {
        json_t *b = e2e_api(cp, "GET", "/apis/policy/v1/namespaces/" NS "/poddisruptionbudgets/frag",
                            NULL, NULL);
        const json_t *st = json_object_get(b, "status");
        ready = json_integer_value(json_object_get(st, "currentHealthy")) == NODES &&
                json_is_integer(json_object_get(st, "disruptionsAllowed"));
        json_decref(b);
        if (!ready)
            e2e_sleep(0.2);
    }
    ck_assert_msg(ready, "the PodDisruptionBudget's status was never computed");
    e2e_sleep(1);   /* gpupack's budget watch */
    e2e_pod_create(cp, gpod("whole", G));
    char *ev = e2e_wait_pod_event(cp, NS, "whole", "ConsolidationBlocked", "PodDisruptionBudget", 60);
    ck_assert_msg(ev != NULL, "no ConsolidationBlocked event on the waiting pod");
    free(ev);
    for (int i = 0; i < 20; i++) {   /* 5 s more: nothing moves */
        no_overcommit(cp, "with the set protected");
        e2e_sleep(0.25);
    }
    ck_assert_int_eq(moved(cp, orig), 0);
    ck_assert_msg(!is_bound(cp, "whole"), "the 24 GiB pod was bound: something moved");
    e2e_verdict v;
    e2e_assert_consistent(cp, w->gp, 20, &v);
    e2e_world_down(w);
}
END_TEST

/* gpupack is killed once the plan is under way (its record of held places
 * written on the waiting pod) and comes back: it holds again the places whose
 * replacement is not bound yet, the pod still binds, at most one more pod
 * moves, nothing is over-committed. */
START_TEST(restart_midway)
{
    char orig[NODES][128];
    e2e_world *w = scene(orig);
    e2e_cp *cp = w->cp;
    double t0 = gp_mono_s();
    e2e_pod_create(cp, gpod("whole", G));
    char *ev = e2e_wait_pod_event(cp, NS, "whole", "Consolidating", "moving 1 pod", 60);
    ck_assert_msg(ev != NULL, "no Consolidating event on the waiting pod");
    free(ev);
    int places = held_record(cp, "whole", 10);
    ck_assert_msg(places == 1, "the nomination recorded %d held places, want 1", places);
    e2e_gp_kill(w->gp, SIGKILL);
    no_overcommit(cp, "gpupack down");
    /* nothing binds a GPU pod while gpupack is down: what is bound now was before the kill */
    int before = replacements_bound(cp, orig);
    e2e_gp_restart(w->gp);
    double rebuilt = e2e_gp_metric(w->gp, "gpupack_consolidation_held_rebuilt_total");
    /* none bound: every place is held again. One bound: its place may be held
     * again all the same when the replacement was made in the plan's second
     * (creation times count whole seconds; docs/consolidation.md), until it expires */
    if (before == 0)
        ck_assert_msg((int)rebuilt == places,
                      "%.0f places held again after the restart; the record had %d and no "
                      "replacement was bound before the kill", rebuilt, places);
    else
        ck_assert_msg(rebuilt >= places - before && rebuilt <= places,
                      "%.0f places held again after the restart; the record had %d, %d replacement(s) "
                      "bound before the kill", rebuilt, places, before);
    double took = wait_whole(w, "whole", t0, 120);
    ck_assert_msg(took >= 0, "the 24 GiB pod was not bound within 120 s of a restart");
    int n = moved(cp, orig);
    ck_assert_msg(n >= 1 && n <= 2, "%d pods moved across a restart", n);
    e2e_log("FIGURE consolidation across a gpupack SIGKILL: bound in %.2f s; %d pod(s) moved; "
            "%.0f held place(s) rebuilt (%d replacement(s) bound before the kill)", took, n, rebuilt,
            before);
    e2e_verdict v;
    e2e_assert_consistent(cp, w->gp, 20, &v);
    e2e_world_down(w);
}
END_TEST

E2E_SUITE(consolidate)
{
    Suite *s = suite_create("e2e consolidate");
    E2E_TEST(s, moves_for_whole_gpu, 300);
    E2E_TEST(s, pdb_protected_set, 300);
    E2E_TEST(s, restart_midway, 300);
    return s;
}
