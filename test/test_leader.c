/* test_leader.c -- the Lease state machine with a fake store and a fake clock: acquire, renew,
 * conflicts, expiry of a dead holder, fencing before expiry, release; Lease JSON and times. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "ha/leader.h"
#include "ha/lease_kube.h"

/* ------------------------------------------------------------ fakes --- */

/* One Lease shared by every replica of a test. */
typedef struct fake_lease {
    gp_lease_rec rec;
    bool exists;
    long rv;
    int writes;
} fake_lease;

/* One replica's view of it: its own clock and faults. */
typedef struct replica {
    fake_lease *lease;
    double now;                 /* monotonic seconds */
    bool partitioned;           /* every call fails */
    bool race_next_update;      /* another writer slips in before our next update */
    gp_leader *l;
} replica;

static double fake_mono(void *ud)
{
    return ((replica *)ud)->now;
}

static int64_t fake_wall(void *ud)
{
    return 1700000000000000000 + (int64_t)(((replica *)ud)->now * 1e9);
}

static void bump(fake_lease *f, gp_lease_rec *rec)
{
    snprintf(rec->rv, sizeof rec->rv, "%ld", ++f->rv);
    f->rec = *rec;
    f->exists = true;
    f->writes++;
}

static gp_lease_rc st_get(void *ud, gp_lease_rec *out, gp_err *err)
{
    replica *r = ud;
    if (r->partitioned)
        return gp_fail(err, "partitioned"), GP_LEASE_ERROR;
    if (!r->lease->exists)
        return GP_LEASE_NOT_FOUND;
    *out = r->lease->rec;
    return GP_LEASE_OK;
}

static gp_lease_rc st_create(void *ud, gp_lease_rec *rec, gp_err *err)
{
    replica *r = ud;
    if (r->partitioned)
        return gp_fail(err, "partitioned"), GP_LEASE_ERROR;
    if (r->lease->exists)
        return GP_LEASE_CONFLICT;
    bump(r->lease, rec);
    return GP_LEASE_OK;
}

static gp_lease_rc st_update(void *ud, gp_lease_rec *rec, gp_err *err)
{
    replica *r = ud;
    if (r->partitioned)
        return gp_fail(err, "partitioned"), GP_LEASE_ERROR;
    if (r->race_next_update) {
        r->race_next_update = false;
        gp_lease_rec other = r->lease->rec;
        snprintf(other.holder, sizeof other.holder, "racer");
        bump(r->lease, &other);
    }
    if (!r->lease->exists || strcmp(rec->rv, r->lease->rec.rv) != 0)
        return GP_LEASE_CONFLICT;
    bump(r->lease, rec);
    return GP_LEASE_OK;
}

static void replica_init(replica *r, fake_lease *f, const char *id)
{
    memset(r, 0, sizeof *r);
    r->lease = f;
    gp_leader_config cfg = {.identity = id};   /* defaults: 15 s / 10 s / 2 s, quiet 1 s */
    gp_lease_store st = {r, st_get, st_create, st_update, NULL};
    gp_leader_clock clk = {r, fake_mono, fake_wall};
    gp_err err;
    r->l = leader_new(&cfg, &st, &clk, &err);
    ck_assert_msg(r->l != NULL, "%s", err.msg);
}

/* A lease held by a replica that is gone (it never renews again). */
static void dead_holder(fake_lease *f)
{
    gp_lease_rec rec;
    memset(&rec, 0, sizeof rec);
    snprintf(rec.holder, sizeof rec.holder, "dead");
    rec.duration_s = 15;
    rec.transitions = 3;
    rec.acquire_ns = rec.renew_ns = 1690000000000000000;
    bump(f, &rec);
}

/* ------------------------------------------------------------ tests --- */

START_TEST(acquire_creates_the_lease)
{
    fake_lease f = {0};
    replica a;
    replica_init(&a, &f, "a");
    ck_assert(!leader_may_bind(a.l, NULL));
    ck_assert(leader_step(a.l));
    ck_assert(f.exists);
    ck_assert_str_eq(f.rec.holder, "a");
    ck_assert_int_eq(f.rec.duration_s, 15);
    ck_assert_int_eq(f.rec.transitions, 0);
    ck_assert(f.rec.acquire_ns != 0 && f.rec.acquire_ns == f.rec.renew_ns);
    double budget = 0;
    ck_assert(leader_may_bind(a.l, &budget));   /* no previous holder: no quiet period */
    ck_assert_double_eq_tol(budget, 14.0, 1e-9);
    gp_leader_status st;
    leader_status(a.l, &st);
    ck_assert(st.leading && st.may_bind);
    ck_assert_str_eq(st.holder, "a");
    ck_assert_uint_eq(st.acquired, 1);
    leader_free(a.l);
}
END_TEST

START_TEST(renew_keeps_acquire_time_and_moves_the_fence)
{
    fake_lease f = {0};
    replica a;
    replica_init(&a, &f, "a");
    ck_assert(leader_step(a.l));
    int64_t acquired = f.rec.acquire_ns;
    for (int i = 1; i <= 10; i++) {
        a.now = 2.0 * i;
        ck_assert(leader_step(a.l));
        ck_assert_int_eq(f.rec.acquire_ns, acquired);
        ck_assert_int_eq(f.rec.renew_ns, fake_wall(&a));
        ck_assert_int_eq(f.rec.transitions, 0);
    }
    a.now = 29.9;   /* 9.9 s after the last renew at 20 */
    double budget = 0;
    ck_assert(leader_may_bind(a.l, &budget));
    ck_assert_double_eq_tol(budget, 20 + 15 - GP_LEADER_MARGIN_S - 29.9, 1e-9);
    gp_leader_status st;
    leader_status(a.l, &st);
    ck_assert_uint_eq(st.acquired, 1);
    ck_assert_uint_eq(st.lost, 0);
    leader_free(a.l);
}
END_TEST

START_TEST(standby_never_takes_a_renewed_lease)
{
    fake_lease f = {0};
    replica a, b;
    replica_init(&a, &f, "a");
    replica_init(&b, &f, "b");
    ck_assert(leader_step(a.l));
    for (double t = 0; t < 120; t += 2) {
        a.now = b.now = t;
        ck_assert(leader_step(a.l));
        b.now = t + 1;
        ck_assert(!leader_step(b.l));
        ck_assert(!leader_may_bind(b.l, NULL));
    }
    gp_leader_status st;
    leader_status(b.l, &st);
    ck_assert_str_eq(st.holder, "a");
    ck_assert(!st.leading);
    leader_free(a.l);
    leader_free(b.l);
}
END_TEST

START_TEST(dead_holder_expires_after_lease_duration_then_quiet)
{
    fake_lease f = {0};
    dead_holder(&f);
    replica b;
    replica_init(&b, &f, "b");
    b.now = 100;   /* first sight of the record: the clock starts here, not at renewTime */
    ck_assert(!leader_step(b.l));
    b.now = 114.9;
    ck_assert(!leader_step(b.l));
    ck_assert_str_eq(f.rec.holder, "dead");
    b.now = 115.0;
    ck_assert(leader_step(b.l));
    ck_assert_str_eq(f.rec.holder, "b");
    ck_assert_int_eq(f.rec.transitions, 4);
    ck_assert_int_eq(f.rec.acquire_ns, fake_wall(&b));
    /* took over from a live-looking holder: quiet period before the first bind */
    ck_assert(!leader_may_bind(b.l, NULL));
    gp_leader_status st;
    leader_status(b.l, &st);
    ck_assert(st.leading && !st.may_bind);
    ck_assert_double_eq_tol(st.quiet_left_s, 1.0, 1e-9);
    b.now = 116.0;
    ck_assert(leader_may_bind(b.l, NULL));
    leader_free(b.l);
}
END_TEST

START_TEST(standby_retries_right_at_expiry)
{
    fake_lease f = {0};
    dead_holder(&f);
    replica b;
    replica_init(&b, &f, "b");
    b.now = 100;
    ck_assert(!leader_step(b.l));
    double w = leader_next_wait(b.l);
    ck_assert(w >= 2.0 && w < 2.4);   /* expiry is far: the jittered retry period */
    b.now = 114;
    w = leader_next_wait(b.l);
    ck_assert_double_eq_tol(w, 1.001, 1e-9);   /* the holder's lease ends at 115 */
    b.now += w;
    ck_assert(leader_step(b.l));
    w = leader_next_wait(b.l);
    ck_assert(w >= 2.0 && w < 2.4);   /* leading: renew on the retry period */
    leader_free(b.l);
}
END_TEST

START_TEST(lose_the_race_on_conflict)
{
    fake_lease f = {0};
    dead_holder(&f);
    replica b;
    replica_init(&b, &f, "b");
    ck_assert(!leader_step(b.l));
    b.now = 20;
    b.race_next_update = true;   /* another candidate writes between our read and update */
    ck_assert(!leader_step(b.l));
    ck_assert_str_eq(f.rec.holder, "racer");
    gp_leader_status st;
    leader_status(b.l, &st);
    ck_assert(!st.leading);
    ck_assert_uint_eq(st.attempts_failed, 1);
    /* b first sees the racer's record at its next read: a whole lease duration from there */
    b.now = 22;
    ck_assert(!leader_step(b.l));
    b.now = 36.9;
    ck_assert(!leader_step(b.l));
    b.now = 37;
    ck_assert(leader_step(b.l));
    leader_free(b.l);
}
END_TEST

START_TEST(two_candidates_one_leader)
{
    fake_lease f = {0};
    dead_holder(&f);
    replica a, b;
    replica_init(&a, &f, "a");
    replica_init(&b, &f, "b");
    ck_assert(!leader_step(a.l));
    ck_assert(!leader_step(b.l));
    a.now = b.now = 16;
    bool la = leader_step(a.l), lb = leader_step(b.l);
    ck_assert(la && !lb);
    ck_assert_str_eq(f.rec.holder, "a");
    leader_free(a.l);
    leader_free(b.l);
}
END_TEST

/* The leader is cut off from the API server, its election thread stuck in a
 * request that hangs; the standby is not. At every
 * tenth of a second at most one replica may bind, and the leader's last bind
 * must end before the standby's first one can start. */
START_TEST(fencing_before_expiry)
{
    fake_lease f = {0};
    replica a, b;
    replica_init(&a, &f, "a");
    replica_init(&b, &f, "b");
    ck_assert(leader_step(a.l));
    ck_assert(!leader_step(b.l));
    double a_bind_end = 0, b_first = -1, a_fenced = -1;
    for (int tick = 1; tick <= 400; tick++) {
        double t = tick / 10.0;
        a.now = b.now = t;
        if (tick == 30)
            a.partitioned = true;            /* last successful renew at t = 2 */
        if (tick % 20 == 0 && !a.partitioned)
            leader_step(a.l);   /* a hung request: no step ever returns */
        if (tick % 20 == 10)
            leader_step(b.l);
        double budget = 0;
        bool ma = leader_may_bind(a.l, &budget), mb = leader_may_bind(b.l, NULL);
        ck_assert_msg(!(ma && mb), "two binders at t=%.1f", t);
        if (ma && t + budget > a_bind_end)
            a_bind_end = t + budget;
        if (!ma && a_fenced < 0 && t > 3)
            a_fenced = t;
        if (mb && b_first < 0)
            b_first = t;
    }
    ck_assert_double_eq_tol(a_fenced, 12.0, 1e-9);   /* renew at 2 + renew deadline 10 */
    ck_assert(b_first > 0);
    ck_assert_msg(a_bind_end <= b_first - GP_LEADER_MARGIN_S + 1e-9,
                  "old leader's binds may run until %.1f, new leader binds from %.1f", a_bind_end,
                  b_first);
    ck_assert_str_eq(f.rec.holder, "b");
    /* when the hung request finally fails, a knows it lost */
    leader_step(a.l);
    gp_leader_status st;
    leader_status(a.l, &st);
    ck_assert(!st.leading);
    ck_assert_uint_eq(st.lost, 1);
    leader_free(a.l);
    leader_free(b.l);
}
END_TEST

START_TEST(renew_failures_within_deadline_keep_binding)
{
    fake_lease f = {0};
    replica a;
    replica_init(&a, &f, "a");
    ck_assert(leader_step(a.l));
    a.partitioned = true;
    for (double t = 2; t < 10; t += 2) {
        a.now = t;
        ck_assert(leader_step(a.l));   /* still within the renew deadline */
    }
    a.partitioned = false;
    a.now = 9.5;
    ck_assert(leader_step(a.l));
    a.now = 19;                        /* the fence moved with the renew at 9.5 */
    ck_assert(leader_may_bind(a.l, NULL));
    gp_leader_status st;
    leader_status(a.l, &st);
    ck_assert_uint_eq(st.lost, 0);
    ck_assert_uint_eq(st.attempts_failed, 4);
    leader_free(a.l);
}
END_TEST

START_TEST(release_hands_over_at_once)
{
    fake_lease f = {0};
    replica a, b;
    replica_init(&a, &f, "a");
    replica_init(&b, &f, "b");
    ck_assert(leader_step(a.l));
    b.now = 1;
    ck_assert(!leader_step(b.l));
    a.now = 2;
    gp_err err;
    ck_assert_int_eq(leader_release(a.l, &err), 0);
    ck_assert(!leader_may_bind(a.l, NULL));
    ck_assert_str_eq(f.rec.holder, "");
    ck_assert_int_eq(f.rec.duration_s, 1);
    ck_assert(!leader_step(a.l));      /* a released leader never campaigns again */
    b.now = 2.5;                       /* b's next attempt: no waiting, no quiet */
    ck_assert(leader_step(b.l));
    ck_assert(leader_may_bind(b.l, NULL));
    ck_assert_int_eq(f.rec.transitions, 1);
    /* releasing a lease one does not hold writes nothing */
    int writes = f.writes;
    ck_assert_int_eq(leader_release(a.l, &err), 0);
    ck_assert_int_eq(f.writes, writes);
    leader_free(a.l);
    leader_free(b.l);
}
END_TEST

#define CFG(id, lease, renew, retry, quiet) \
    {.identity = id, .lease_duration_s = lease, .renew_deadline_s = renew, .retry_period_s = retry, \
     .takeover_quiet_s = quiet}

START_TEST(config_is_validated)
{
    fake_lease f = {0};
    replica r = {.lease = &f};
    gp_lease_store st = {&r, st_get, st_create, st_update, NULL};
    const struct {
        gp_leader_config cfg;
        bool ok;
    } cases[] = {
        {CFG("x", 0, 0, 0, 0), true},
        {CFG("x", 15, 10, 2, 1), true},
        {CFG("x", 10, 10, 2, 1), false}, /* lease must outlast renew deadline + margin */
        {CFG("x", 10.5, 10, 2, 1), false},
        {CFG("x", 15, 2, 2, 1), false}, /* renew deadline > 1.2 x retry */
        {CFG("x", 15, 10, -1, 1), false},
        {CFG("", 15, 10, 2, 1), false},
        {CFG(NULL, 15, 10, 2, 1), false},
        {CFG("x", 7200, 10, 2, 1), false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gp_err err;
        gp_leader *l = leader_new(&cases[i].cfg, &st, NULL, &err);
        ck_assert_msg((l != NULL) == cases[i].ok, "case %zu: %s", i, l ? "accepted" : err.msg);
        leader_free(l);
    }
}
END_TEST

START_TEST(identity_is_unique_per_call)
{
    char a[GP_LEADER_ID_MAX], b[GP_LEADER_ID_MAX];
    leader_identity(a, sizeof a);
    leader_identity(b, sizeof b);
    ck_assert(strlen(a) > 13 && strchr(a, '_'));
    ck_assert_str_ne(a, b);
}
END_TEST

START_TEST(thread_start_stop)
{
    fake_lease f = {0};
    replica a;
    replica_init(&a, &f, "a");
    gp_err err;
    ck_assert_int_eq(leader_start(a.l, &err), 0);
    leader_stop(a.l);
    leader_stop(a.l);
    ck_assert(!leader_may_bind(a.l, NULL));   /* stopped: binds refused */
    leader_free(a.l);
}
END_TEST

/* --------------------------------------------------------- Lease JSON --- */

START_TEST(times_parse_and_format)
{
    const struct {
        const char *in;
        int64_t ns;
        int rc;
    } cases[] = {
        {"2026-11-23T06:51:10.123456Z", 1795416670123456000, 0},
        {"2026-11-23T06:51:10Z", 1795416670000000000, 0},
        {"2026-11-23T07:51:10.5+01:00", 1795416670500000000, 0},
        {"1970-01-01T00:00:00.000000Z", 0, 0},
        {"2026-11-23 06:51:10Z", 0, -1},
        {"2026-11-23T06:51:10", 0, -1},
        {"2026-13-23T06:51:10Z", 0, -1},
        {"2026-11-23T06:51:10.Z", 0, -1},
        {"2026-11-23T06:51:10Zjunk", 0, -1},
        {"", 0, -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t ns = -7;
        int rc = lease_kube_parse_time(cases[i].in, &ns);
        ck_assert_msg(rc == cases[i].rc, "%s: rc %d", cases[i].in, rc);
        if (rc == 0)
            ck_assert_msg(ns == cases[i].ns, "%s: %lld", cases[i].in, (long long)ns);
    }
    char out[40];
    lease_kube_format_time(1795416670123456789, out);
    ck_assert_str_eq(out, "2026-11-23T06:51:10.123456Z");
}
END_TEST

START_TEST(lease_json_round_trip)
{
    gp_lease_rec rec = {.duration_s = 15, .transitions = 2, .acquire_ns = 1795416670123456000,
                        .renew_ns = 1795416680000001000};
    snprintf(rec.holder, sizeof rec.holder, "gpupack-0_abc");
    snprintf(rec.rv, sizeof rec.rv, "4711");
    json_t *j = lease_kube_encode(&rec, "gpupack-system", "gpupack");
    ck_assert_str_eq(json_string_value(json_object_get(j, "kind")), "Lease");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "spec"), "renewTime")),
                     "2026-11-23T06:51:20.000001Z");
    gp_lease_rec back;
    gp_err err;
    ck_assert_int_eq(lease_kube_decode(j, &back, &err), 0);
    ck_assert_mem_eq(&back, &rec, sizeof rec);
    json_decref(j);
}
END_TEST

START_TEST(lease_json_bad_input)
{
    const char *bad[] = {
        "{}",
        "[]",
        "{\"metadata\":{\"resourceVersion\":\"\"}}",
        "{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":[]}",
        "{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"holderIdentity\":5}}",
        "{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"leaseDurationSeconds\":-1}}",
        "{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"leaseTransitions\":\"2\"}}",
        "{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"renewTime\":\"yesterday\"}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *j = json_loads(bad[i], 0, NULL);
        gp_lease_rec rec;
        gp_err err;
        ck_assert_msg(lease_kube_decode(j, &rec, &err) == -1, "%s accepted", bad[i]);
        json_decref(j);
    }
    /* a released Lease (empty holder, nulls) is fine */
    json_t *j = json_loads("{\"metadata\":{\"resourceVersion\":\"9\"},\"spec\":{\"holderIdentity\":null,"
                           "\"leaseDurationSeconds\":1}}",
                           0, NULL);
    gp_lease_rec rec;
    gp_err err;
    ck_assert_int_eq(lease_kube_decode(j, &rec, &err), 0);
    ck_assert_str_eq(rec.holder, "");
    ck_assert_int_eq(rec.duration_s, 1);
    json_decref(j);
}
END_TEST

Suite *suite_leader(void);
Suite *suite_leader(void)
{
    Suite *s = suite_create("leader");
    TCase *tc = tcase_create("election");
    tcase_add_test(tc, acquire_creates_the_lease);
    tcase_add_test(tc, renew_keeps_acquire_time_and_moves_the_fence);
    tcase_add_test(tc, standby_never_takes_a_renewed_lease);
    tcase_add_test(tc, dead_holder_expires_after_lease_duration_then_quiet);
    tcase_add_test(tc, standby_retries_right_at_expiry);
    tcase_add_test(tc, lose_the_race_on_conflict);
    tcase_add_test(tc, two_candidates_one_leader);
    tcase_add_test(tc, fencing_before_expiry);
    tcase_add_test(tc, renew_failures_within_deadline_keep_binding);
    tcase_add_test(tc, release_hands_over_at_once);
    tcase_add_test(tc, config_is_validated);
    tcase_add_test(tc, identity_is_unique_per_call);
    tcase_add_test(tc, thread_start_stop);
    suite_add_tcase(s, tc);
    TCase *tj = tcase_create("lease-json");
    tcase_add_test(tj, times_parse_and_format);
    tcase_add_test(tj, lease_json_round_trip);
    tcase_add_test(tj, lease_json_bad_input);
    suite_add_tcase(s, tj);
    return s;
}
