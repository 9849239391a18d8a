/* leader.c -- Lease acquire / renew / release state machine and the fencing rule for binds. */
#include "ha/leader.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/metrics.h"

#define DEFAULT_LEASE_S 15.0
#define DEFAULT_RENEW_S 10.0
#define DEFAULT_RETRY_S 2.0
#define DEFAULT_QUIET_S 1.0
#define JITTER 1.2   /* retry waits retry_period x [1, JITTER) */

struct gp_leader {
    gp_leader_config cfg;
    char id[GP_LEADER_ID_MAX];
    gp_lease_store store;
    gp_leader_clock clock;

    /* election thread only */
    gp_lease_rec observed;       /* the last record read or written */
    bool have_observed;
    double observed_at;          /* when it last changed, monotonic */
    uint64_t rng;

    /* shared with request threads, under mu */
    pthread_mutex_t mu;
    bool leading;
    bool stopped;                /* leader_stop / leader_release: never bind again */
    double last_renew;           /* start of the last successful acquire/renew attempt */
    double quiet_until;
    char holder[GP_LEADER_ID_MAX];
    unsigned long acquired, lost, failed;

    /* the thread */
    pthread_t th;
    bool started, quit;
    pthread_cond_t cv;
};

/* ------------------------------------------------------------ clocks --- */

static double mono(gp_leader *l)
{
    return l->clock.mono_s ? l->clock.mono_s(l->clock.ud) : gp_mono_s();
}

static int64_t wall(gp_leader *l)
{
    return l->clock.wall_ns ? l->clock.wall_ns(l->clock.ud) : gp_now_ns();
}

/* ------------------------------------------------------------- setup --- */

gp_leader *leader_new(const gp_leader_config *cfg, const gp_lease_store *store,
                      const gp_leader_clock *clock, gp_err *err)
{
    gp_leader_config c = *cfg;
    if (c.lease_duration_s == 0)
        c.lease_duration_s = DEFAULT_LEASE_S;
    if (c.renew_deadline_s == 0)
        c.renew_deadline_s = DEFAULT_RENEW_S;
    if (c.retry_period_s == 0)
        c.retry_period_s = DEFAULT_RETRY_S;
    if (c.takeover_quiet_s == 0)
        c.takeover_quiet_s = DEFAULT_QUIET_S;
    if (c.takeover_quiet_s < 0)
        c.takeover_quiet_s = 0;
    if (!c.identity || !*c.identity || strlen(c.identity) >= GP_LEADER_ID_MAX) {
        gp_fail(err, "leader election: the identity must be 1..%d bytes", GP_LEADER_ID_MAX - 1);
        return NULL;
    }
    if (!(c.retry_period_s > 0) || !(c.renew_deadline_s > JITTER * c.retry_period_s) ||
        !(c.lease_duration_s > c.renew_deadline_s + GP_LEADER_MARGIN_S) || c.lease_duration_s > 3600) {
        gp_fail(err,
                "leader election: need lease duration (%.3g s) > renew deadline (%.3g s) + %.0f s > "
                "%.1f x retry period (%.3g s) > 0, and a lease of at most an hour",
                c.lease_duration_s, c.renew_deadline_s, GP_LEADER_MARGIN_S, JITTER, c.retry_period_s);
        return NULL;
    }
    gp_leader *l = xcalloc(1, sizeof *l);
    gp_strlcpy(l->id, c.identity, sizeof l->id);
    c.identity = l->id;
    l->cfg = c;
    l->store = *store;
    if (clock)
        l->clock = *clock;
    l->rng = (uint64_t)gp_now_ns() ^ ((uint64_t)getpid() << 32) ^ 0x9e3779b97f4a7c15u;
    pthread_mutex_init(&l->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&l->cv, &ca);
    pthread_condattr_destroy(&ca);
    return l;
}

void leader_free(gp_leader *l)
{
    if (!l)
        return;
    leader_stop(l);
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

/* ---------------------------------------------------- state changes --- */

/* Called with mu held. */
static void become_leader(gp_leader *l, double started, bool took_over, const char *from)
{
    l->leading = true;
    l->last_renew = started;
    l->quiet_until = took_over ? started + l->cfg.takeover_quiet_s : started;
    l->acquired++;
    if (took_over)
        LOG_INFO("leader election: %s took the lease over from %s (expired); first bind after %.1f s",
                 l->id, from, l->cfg.takeover_quiet_s);
    else
        LOG_INFO("leader election: %s leads%s%s", l->id, from[0] ? " after " : "", from);
}

/* Called with mu held. */
static void stop_leading(gp_leader *l, const char *why)
{
    if (!l->leading)
        return;
    l->leading = false;
    l->lost++;
    LOG_WARN("leader election: %s stopped leading: %s", l->id, why);
}

/* An attempt failed: a leader past its renew deadline stops leading. */
static void attempt_failed(gp_leader *l, double now, const char *what, const gp_err *err)
{
    pthread_mutex_lock(&l->mu);
    l->failed++;
    bool leading = l->leading;
    if (leading && now >= l->last_renew + l->cfg.renew_deadline_s)
        stop_leading(l, "could not renew the lease within the renew deadline");
    pthread_mutex_unlock(&l->mu);
    if (err)
        LOG_WARN("leader election: %s the lease failed: %s", what, err->msg);
    else
        LOG_DEBUG("leader election: %s the lease lost a race (conflict)", what);
}

/* Remembers rec as observed at `now` when it differs from the last one. */
static void observe(gp_leader *l, const gp_lease_rec *rec, double now)
{
    bool changed = !l->have_observed || strcmp(l->observed.rv, rec->rv) != 0 ||
                   strcmp(l->observed.holder, rec->holder) != 0 ||
                   l->observed.renew_ns != rec->renew_ns;
    if (changed) {
        l->observed = *rec;
        l->observed_at = now;
        l->have_observed = true;
    }
    pthread_mutex_lock(&l->mu);
    gp_strlcpy(l->holder, rec->holder, sizeof l->holder);
    pthread_mutex_unlock(&l->mu);
}

static void fill_mine(gp_leader *l, gp_lease_rec *rec)
{
    gp_strlcpy(rec->holder, l->id, sizeof rec->holder);
    rec->duration_s = (int)ceil(l->cfg.lease_duration_s);
    rec->renew_ns = wall(l);
}

/* ------------------------------------------------------------- step --- */

bool leader_step(gp_leader *l)
{
    double now = mono(l);   /* before any request: the conservative start of a renew */
    gp_lease_rec cur;
    gp_err err;
    memset(&cur, 0, sizeof cur);
    pthread_mutex_lock(&l->mu);
    bool stopped = l->stopped;
    pthread_mutex_unlock(&l->mu);
    if (stopped)
        return false;

    gp_lease_rc rc = l->store.get(l->store.ud, &cur, &err);
    if (rc == GP_LEASE_ERROR) {
        attempt_failed(l, now, "reading", &err);
        return leader_may_bind(l, NULL);
    }
    if (rc == GP_LEASE_NOT_FOUND) {
        gp_lease_rec rec;
        memset(&rec, 0, sizeof rec);
        fill_mine(l, &rec);
        rec.acquire_ns = rec.renew_ns;
        rc = l->store.create(l->store.ud, &rec, &err);
        if (rc != GP_LEASE_OK) {
            attempt_failed(l, now, "creating", rc == GP_LEASE_ERROR ? &err : NULL);
            return leader_may_bind(l, NULL);
        }
        observe(l, &rec, now);
        pthread_mutex_lock(&l->mu);
        become_leader(l, now, false, "creating the lease");
        pthread_mutex_unlock(&l->mu);
        return true;
    }

    observe(l, &cur, now);
    bool mine = strcmp(cur.holder, l->id) == 0;
    if (cur.holder[0] && !mine && now < l->observed_at + l->cfg.lease_duration_s) {
        /* someone else holds a lease that has not expired on our clock */
        pthread_mutex_lock(&l->mu);
        stop_leading(l, "another replica holds the lease");
        pthread_mutex_unlock(&l->mu);
        return false;
    }
    gp_lease_rec rec = cur;
    fill_mine(l, &rec);
    if (!mine || rec.acquire_ns == 0) {
        rec.acquire_ns = rec.renew_ns;
        if (!mine)
            rec.transitions = cur.transitions + 1;
    }
    rc = l->store.update(l->store.ud, &rec, &err);
    if (rc != GP_LEASE_OK) {
        attempt_failed(l, now, mine ? "renewing" : "taking", rc == GP_LEASE_ERROR ? &err : NULL);
        return leader_may_bind(l, NULL);
    }
    observe(l, &rec, now);
    pthread_mutex_lock(&l->mu);
    if (l->leading) {
        l->last_renew = now;
    } else {
        char from[GP_LEADER_ID_MAX + 32];
        snprintf(from, sizeof from, "%s", cur.holder[0] ? cur.holder : "a released lease");
        become_leader(l, now, cur.holder[0] && !mine, mine ? "renewing its own lease" : from);
    }
    pthread_mutex_unlock(&l->mu);
    return true;
}

/* ---------------------------------------------------------- release --- */

int leader_release(gp_leader *l, gp_err *err)
{
    pthread_mutex_lock(&l->mu);
    l->stopped = true;
    bool was = l->leading;
    l->leading = false;
    pthread_mutex_unlock(&l->mu);
    if (!l->have_observed || strcmp(l->observed.holder, l->id) != 0)
        return 0;   /* not ours: nothing to give back */
    gp_lease_rec rec = l->observed;
    rec.holder[0] = '\0';
    rec.duration_s = 1;
    rec.renew_ns = rec.acquire_ns = wall(l);
    if (l->store.update(l->store.ud, &rec, err) != GP_LEASE_OK)
        return -1;
    l->observed = rec;
    pthread_mutex_lock(&l->mu);
    l->holder[0] = '\0';
    pthread_mutex_unlock(&l->mu);
    LOG_INFO("leader election: %s released the lease%s", l->id, was ? "" : " (was not binding)");
    return 0;
}

/* ---------------------------------------------------------- queries --- */

bool leader_may_bind(gp_leader *l, double *budget_s)
{
    double now = mono(l);
    pthread_mutex_lock(&l->mu);
    bool ok = l->leading && !l->stopped && now >= l->quiet_until &&
              now < l->last_renew + l->cfg.renew_deadline_s;
    double budget = l->last_renew + l->cfg.lease_duration_s - GP_LEADER_MARGIN_S - now;
    pthread_mutex_unlock(&l->mu);
    if (budget_s)
        *budget_s = ok ? budget : 0;
    return ok;
}

void leader_status(gp_leader *l, gp_leader_status *out)
{
    memset(out, 0, sizeof *out);
    double now = mono(l);
    bool may = leader_may_bind(l, NULL);
    pthread_mutex_lock(&l->mu);
    gp_strlcpy(out->identity, l->id, sizeof out->identity);
    gp_strlcpy(out->holder, l->holder, sizeof out->holder);
    out->leading = l->leading;
    out->may_bind = may;
    out->since_renew_s = l->leading ? now - l->last_renew : -1;
    out->quiet_left_s = l->leading && now < l->quiet_until ? l->quiet_until - now : 0;
    out->acquired = l->acquired;
    out->lost = l->lost;
    out->attempts_failed = l->failed;
    pthread_mutex_unlock(&l->mu);
}

void leader_metrics(void *leader, gp_buf *out)
{
    gp_leader_status st;
    leader_status(leader, &st);
    char id[GP_LEADER_ID_MAX], holder[GP_LEADER_ID_MAX], labels[2 * GP_LEADER_ID_MAX + 32];
    metrics_label_value(id, sizeof id, st.identity);
    metrics_label_value(holder, sizeof holder, st.holder);
    metrics_header(out, "gpupack_leader", "gauge",
                   "1 while this replica leads and may bind (leader election).");
    metrics_i(out, "gpupack_leader", NULL, st.may_bind);
    metrics_header(out, "gpupack_leader_info", "gauge",
                   "This replica's identity and the Lease holder it last saw.");
    snprintf(labels, sizeof labels, "identity=\"%s\",holder=\"%s\"", id, holder);
    metrics_i(out, "gpupack_leader_info", labels, 1);
    metrics_header(out, "gpupack_leader_transitions_total", "counter",
                   "Times this replica became leader or stopped leading.");
    metrics_u(out, "gpupack_leader_transitions_total", "kind=\"acquired\"", st.acquired);
    metrics_u(out, "gpupack_leader_transitions_total", "kind=\"lost\"", st.lost);
    metrics_header(out, "gpupack_leader_election_failures_total", "counter",
                   "Lease attempts that failed or lost a race.");
    metrics_u(out, "gpupack_leader_election_failures_total", NULL, st.attempts_failed);
    metrics_header(out, "gpupack_leader_renew_age_seconds", "gauge",
                   "Since the last successful renew (-1: not leading).");
    metrics_f(out, "gpupack_leader_renew_age_seconds", NULL, 3, st.since_renew_s);
}

json_t *leader_inspect(gp_leader *l)
{
    gp_leader_status st;
    leader_status(l, &st);
    json_t *o = json_pack("{s:s,s:s,s:b,s:b,s:i,s:i,s:i}", "identity", st.identity, "holder",
                          st.holder, "leading", st.leading, "mayBind", st.may_bind, "acquired",
                          (json_int_t)st.acquired, "lost", (json_int_t)st.lost, "failedAttempts",
                          (json_int_t)st.attempts_failed);
    if (st.leading) {
        json_object_set_new(o, "sinceRenewSeconds", json_real(st.since_renew_s));
        json_object_set_new(o, "quietLeftSeconds", json_real(st.quiet_left_s));
    }
    return o;
}

/* ----------------------------------------------------------- thread --- */

static double jitter(gp_leader *l)
{
    l->rng ^= l->rng << 13;
    l->rng ^= l->rng >> 7;
    l->rng ^= l->rng << 17;
    return 1.0 + (JITTER - 1.0) * (double)(l->rng >> 11) / (double)(UINT64_C(1) << 53);
}

double leader_next_wait(gp_leader *l)
{
    double wait = l->cfg.retry_period_s * jitter(l);
    pthread_mutex_lock(&l->mu);
    bool leading = l->leading;
    pthread_mutex_unlock(&l->mu);
    if (!leading && l->have_observed && l->observed.holder[0] && strcmp(l->observed.holder, l->id)) {
        /* a standby tries again right when the holder's lease expires on its clock */
        double until = l->observed_at + l->cfg.lease_duration_s - mono(l);
        if (until < wait)
            wait = until > 0 ? until + 0.001 : 0.001;
    }
    return wait;
}

static void *run(void *arg)
{
    gp_leader *l = arg;
    gp_thread_set_name("lease");
    pthread_mutex_lock(&l->mu);
    while (!l->quit) {
        pthread_mutex_unlock(&l->mu);
        leader_step(l);
        double wait = leader_next_wait(l);
        if (l->cfg.on_step) {
            pthread_mutex_lock(&l->mu);
            bool leading = l->leading && !l->stopped;
            pthread_mutex_unlock(&l->mu);
            l->cfg.on_step(l->cfg.on_step_ud, leading);
        }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        double end = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 + wait;
        ts.tv_sec = (time_t)end;
        ts.tv_nsec = (long)((end - (double)ts.tv_sec) * 1e9);
        pthread_mutex_lock(&l->mu);
        while (!l->quit && pthread_cond_timedwait(&l->cv, &l->mu, &ts) != ETIMEDOUT) {
        }
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

int leader_start(gp_leader *l, gp_err *err)
{
    int rc = pthread_create(&l->th, NULL, run, l);
    if (rc != 0)
        return gp_fail(err, "cannot start the leader election thread: %s", strerror(rc));
    l->started = true;
    LOG_INFO("leader election: %s is a candidate (lease %.3g s, renew deadline %.3g s, retry %.3g s)",
             l->id, l->cfg.lease_duration_s, l->cfg.renew_deadline_s, l->cfg.retry_period_s);
    return 0;
}

void leader_stop(gp_leader *l)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->mu);
    l->stopped = true;
    l->quit = true;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    if (!l->started)
        return;
    if (l->store.interrupt)
        l->store.interrupt(l->store.ud);
    pthread_join(l->th, NULL);
    l->started = false;
}

/* --------------------------------------------------------- identity --- */

void leader_identity(char *out, size_t len)
{
    char host[128] = "gpupack";
    if (gethostname(host, sizeof host - 1) != 0 || !host[0])
        snprintf(host, sizeof host, "gpupack");
    host[sizeof host - 1] = '\0';
    unsigned char r[6] = {0};
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, r, sizeof r) : -1;
    if (fd >= 0)
        close(fd);
    if (n != (ssize_t)sizeof r) {
        uint64_t x = (uint64_t)gp_now_ns() ^ ((uint64_t)getpid() << 20);
        memcpy(r, &x, sizeof r);
    }
    snprintf(out, len, "%s_%02x%02x%02x%02x%02x%02x", host, r[0], r[1], r[2], r[3], r[4], r[5]);
}
