/* test_bindpipe.c -- the bind pipe's order without sockets: the gate before
 * anything is claimed or sent, the claim before the Binding, the outcome into
 * the store, the fencing budget bounding the Binding's timeout, the metrics. */
#include <check.h>
#include <string.h>

#include "act/bindpipe.h"
#include "ha/leader.h"
#include "testutil.h"

/* The Binding step, recorded. */
typedef struct fake_post {
    int calls;
    gp_bind_outcome answer;
    double timeout_s;
    char uid[GP_UID_MAX];
} fake_post;

static gp_bind_outcome post(void *ud, const gp_bind_call *call, double timeout_s, gp_err *err)
{
    fake_post *f = ud;
    f->calls++;
    f->timeout_s = timeout_s;
    gp_strlcpy(f->uid, call->uid, sizeof f->uid);
    if (f->answer != GP_BIND_BOUND)
        gp_fail(err, "HTTP %s", f->answer == GP_BIND_REFUSED ? "409: Conflict" : "503");
    return f->answer;
}

/* A one-GPU node with pod u1 assumed on it (bind decided 4 GiB). */
typedef struct world {
    gp_cluster *c;
    gp_assignment a;
    gp_bind_call call;
    fake_post fp;
} world;

static void world_init(world *w, gp_bind_outcome answer)
{
    memset(w, 0, sizeof *w);
    w->c = cluster_new();
    gp_inventory inv;
    tu_inventory(&inv, 1, 16384, "A100");
    cluster_upsert_node(w->c, "n0", &inv);
    gp_pod_req req;
    tu_req(&req, "u1", 1, 4096, 250);
    gp_place_opts opts;
    placement_default_opts(&opts);
    gp_err err;
    ck_assert_msg(cluster_place_and_assume(w->c, "n0", &req, &opts, 0, "default", GP_POD_ASSUMED,
                                           &w->a, &err) == 0, "%s", err.msg);
    gp_bind_call call = {"ns", "p", "u1", "n0", "7", NULL, &w->a, "default", NULL};
    w->call = call;
    w->fp.answer = answer;
}

static int64_t used(gp_cluster *c)
{
    gp_cluster_stats st;
    cluster_stats(c, &st);
    return st.mem_used;
}

/* Whether u1's Binding is one a GET must settle (an UNKNOWN outcome). */
static bool unsettled(gp_cluster *c)
{
    gp_unsettled u[2];
    return cluster_unsettled(c, 0, u, 2) == 1 && strcmp(u[0].uid, "u1") == 0;
}

static char *metrics_of(gp_bindpipe *p)
{
    gp_buf b;
    gp_buf_init(&b, 1 << 16);
    bindpipe_metrics(p, &b);
    ck_assert(!gp_buf_failed(&b));
    return b.data;
}

START_TEST(bound_is_kept_and_counted)
{
    world w;
    world_init(&w, GP_BIND_BOUND);
    gp_bindpipe_config bc = {.c = w.c, .post = post, .post_ud = &w.fp};
    gp_bindpipe *p = bindpipe_new(&bc);
    gp_err err;
    ck_assert_int_eq(bindpipe_run(p, &w.call, &err), GP_BIND_BOUND);
    ck_assert_int_eq(w.fp.calls, 1);
    ck_assert_str_eq(w.fp.uid, "u1");
    ck_assert(w.fp.timeout_s > 0 && w.fp.timeout_s <= 5.0);   /* GP_BINDER_TIMEOUT_S */
    ck_assert_int_eq(used(w.c), 4096);   /* kept until the watch shows it bound */
    ck_assert(!unsettled(w.c));
    char *m = metrics_of(p);
    ck_assert_msg(strstr(m, "gpupack_api_binds_total{result=\"bound\"} 1\n"), "%s", m);
    ck_assert_msg(strstr(m, "gpupack_api_bind_duration_seconds_count{} 1\n"), "%s", m);
    ck_assert_msg(strstr(m, "gpupack_binds_refused_total 0\n"), "%s", m);
    free(m);
    bindpipe_free(p);
    cluster_free(w.c);
}
END_TEST

START_TEST(refused_is_released_unknown_kept)
{
    for (int k = 0; k < 2; k++) {
        world w;
        world_init(&w, k == 0 ? GP_BIND_REFUSED : GP_BIND_UNKNOWN);
        gp_bindpipe_config bc = {.c = w.c, .post = post, .post_ud = &w.fp};
        gp_bindpipe *p = bindpipe_new(&bc);
        gp_err err;
        ck_assert_int_eq(bindpipe_run(p, &w.call, &err), w.fp.answer);
        ck_assert_int_eq(w.fp.calls, 1);
        if (k == 0) {
            ck_assert_msg(strstr(err.msg, "409"), "%s", err.msg);
            ck_assert_int_eq(used(w.c), 0);   /* rolled back */
        } else {
            ck_assert_int_eq(used(w.c), 4096);   /* kept until a GET settles it */
            ck_assert(unsettled(w.c));
        }
        char *m = metrics_of(p);
        ck_assert_msg(strstr(m, k == 0 ? "result=\"refused\"} 1\n" : "result=\"unknown\"} 1\n"),
                      "%s", m);
        free(m);
        bindpipe_free(p);
        cluster_free(w.c);
    }
}
END_TEST

/* Released between the decision and the bind thread (the pod's deletion,
 * reconciliation): nothing is posted. */
START_TEST(released_meanwhile_is_not_posted)
{
    world w;
    world_init(&w, GP_BIND_BOUND);
    cluster_forget(w.c, "u1");
    gp_bindpipe_config bc = {.c = w.c, .post = post, .post_ud = &w.fp};
    gp_bindpipe *p = bindpipe_new(&bc);
    gp_err err;
    ck_assert_int_eq(bindpipe_run(p, &w.call, &err), GP_BIND_REFUSED);
    ck_assert_msg(strstr(err.msg, "not posted"), "%s", err.msg);
    ck_assert_int_eq(w.fp.calls, 0);
    ck_assert_int_eq(used(w.c), 0);
    bindpipe_free(p);
    cluster_free(w.c);
}
END_TEST

/* --- leader election: the gate and the fencing budget --------------------- */

typedef struct lease {
    bool exists;
    gp_lease_rec rec;
    long rv;
    double now;
} lease;

static double lease_mono(void *ud)
{
    return ((lease *)ud)->now;
}

static int64_t lease_wall(void *ud)
{
    return 1700000000000000000 + (int64_t)(((lease *)ud)->now * 1e9);
}

static gp_lease_rc lease_get(void *ud, gp_lease_rec *out, gp_err *err)
{
    lease *l = ud;
    if (!l->exists)
        return GP_LEASE_NOT_FOUND;
    *out = l->rec;
    return GP_LEASE_OK;
}

static gp_lease_rc lease_put(void *ud, gp_lease_rec *rec, gp_err *err)
{
    lease *l = ud;
    snprintf(rec->rv, sizeof rec->rv, "%ld", ++l->rv);
    l->rec = *rec;
    l->exists = true;
    return GP_LEASE_OK;
}

static gp_leader *leader(lease *l)
{
    gp_leader_config cfg = {.identity = "me", .takeover_quiet_s = -1};   /* 15 s / 10 s / 2 s */
    gp_lease_store st = {l, lease_get, lease_put, lease_put, NULL};
    gp_leader_clock clk = {l, lease_mono, lease_wall};
    gp_err err;
    gp_leader *ld = leader_new(&cfg, &st, &clk, &err);
    ck_assert_msg(ld, "%s", err.msg);
    return ld;
}

/* A replica that does not lead sends nothing and keeps nothing assumed. */
START_TEST(standby_sends_nothing)
{
    world w;
    world_init(&w, GP_BIND_BOUND);
    lease l = {.now = 100};
    gp_leader *ld = leader(&l);   /* never stepped: does not lead */
    gp_bindpipe_config bc = {.c = w.c, .leader = ld, .post = post, .post_ud = &w.fp};
    gp_bindpipe *p = bindpipe_new(&bc);
    ck_assert(!bindpipe_may_bind(p, NULL, NULL, 0));
    gp_err err;
    ck_assert_int_eq(bindpipe_run(p, &w.call, &err), GP_BIND_REFUSED);
    ck_assert_msg(strstr(err.msg, "not ready to bind: this replica does not lead"), "%s", err.msg);
    ck_assert_int_eq(w.fp.calls, 0);
    ck_assert_int_eq(used(w.c), 0);   /* the assumption is dropped */
    char *m = metrics_of(p);
    ck_assert_msg(strstr(m, "gpupack_binds_refused_total 1\n"), "%s", m);
    ck_assert_msg(strstr(m, "result=\"refused\"} 0\n"), "%s", m);   /* no Binding posted */
    free(m);
    bindpipe_free(p);
    leader_free(ld);
    cluster_free(w.c);
}
END_TEST

/* A leader late in its lease gives the Binding a third of what is left. */
START_TEST(fencing_budget_bounds_the_timeout)
{
    world w;
    world_init(&w, GP_BIND_BOUND);
    lease l = {.now = 100};
    gp_leader *ld = leader(&l);
    ck_assert(leader_step(ld));
    l.now += 8.5;   /* renewed 8.5 s ago: 15 - 1 - 8.5 = 5.5 s left for the whole bind */
    gp_bindpipe_config bc = {.c = w.c, .leader = ld, .post = post, .post_ud = &w.fp};
    gp_bindpipe *p = bindpipe_new(&bc);
    double budget = 0;
    ck_assert(bindpipe_may_bind(p, &budget, NULL, 0));
    ck_assert_msg(budget > 5.4 && budget < 5.6, "%g", budget);
    gp_err err;
    ck_assert_int_eq(bindpipe_run(p, &w.call, &err), GP_BIND_BOUND);
    ck_assert_msg(w.fp.timeout_s > 1.8 && w.fp.timeout_s < 1.9, "%g", w.fp.timeout_s);
    bindpipe_free(p);
    leader_free(ld);
    cluster_free(w.c);
}
END_TEST

Suite *suite_bindpipe(void);
Suite *suite_bindpipe(void)
{
    Suite *s = suite_create("bindpipe");
    TCase *t = tcase_create("bindpipe");
    tcase_add_test(t, bound_is_kept_and_counted);
    tcase_add_test(t, refused_is_released_unknown_kept);
    tcase_add_test(t, released_meanwhile_is_not_posted);
    tcase_add_test(t, standby_sends_nothing);
    tcase_add_test(t, fencing_budget_bounds_the_timeout);
    suite_add_tcase(s, t);
    return s;
}
