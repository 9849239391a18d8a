/* requeue.c -- makes an older kube-scheduler retry the pods it parked where a newer one would. */
#include "act/requeue.h"

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "lib/metrics.h"
#include "lib/strmap.h"
#include "lib/tbucket.h"
#include "lib/timefmt.h"
#include "model/gpu.h"

#define RQ_POLL_DEFAULT 0.1
#define RQ_BATCH 64             /* pods taken per scan of the parked set */
#define RQ_TRIES 3              /* attempts per pod and trigger on transport errors / 5xx */
#define RQ_TIMEOUT_S 5.0        /* one PATCH */
#define RQ_RESCAN_S 1.0         /* while re-nudges may come due: scan this often */

enum { TRIG_REGAINED, TRIG_CAPACITY, TRIG_N };
static const char *const trig_name[TRIG_N] = {"regained", "capacity"};

/* Seconds from the trigger to the binding of a pod nudged for it. */
static const double rq_bounds[] = {1, 2, 5, 10, 20, 30, 60, 120, 300};
#define RQ_NB (GP_ARRAY_LEN(rq_bounds) + 1)

typedef enum { KIND_NONE, KIND_ERROR, KIND_OTHER } kind;

typedef struct cand {
    char ns[GP_NAME_MAX], name[GP_NAME_MAX];
    kind k;                     /* the watch's latest word (NONE: pending, not parked) */
    bool gpu;                   /* asks GPU resources */
    double parked_at;           /* monotonic time it was last seen becoming parked */
    unsigned long err_done, gpu_done;   /* generations of its nudges so far */
    double err_nudged_at;       /* its last nudge for an error (monotonic) ... */
    int renudges;               /* ... and how many came after the first in err_done */
    int trig;                   /* trigger of its last nudge (-1: none) */
    double base;                /* that trigger's time */
    unsigned long tried_key;    /* err_gen * 2^32 + gpu_gen of failed attempts ... */
    int tries;                  /* ... and how many */
    unsigned list_gen;          /* the pod LIST that last showed it (requeue_listing) */
} cand;

/* RACE: a GPU pod filter refused on every node. */
typedef struct refusal {
    char ns[GP_NAME_MAX], name[GP_NAME_MAX];
    double at;                  /* monotonic time of the last refusal */
    double nudged_at;           /* of its last nudge (0: none) */
} refusal;

typedef struct histo {
    atomic_ulong b[RQ_NB], count;
    _Atomic double sum;
} histo;

struct gp_requeue {
    gp_requeue_config cfg;
    gp_kube *k;
    gp_kube_cancel *stop;
    pthread_t th;
    bool started;
    atomic_int tracking;        /* 0 once kube-scheduler is known to need no nudges */
    atomic_bool grew;           /* capacity grew since the thread last looked */
    pthread_mutex_t mu;         /* guards the fields down to `dirty` */
    strmap *cands;              /* uid -> cand */
    unsigned list_gen;          /* pod LISTs begun */
    unsigned mask;              /* GP_REQUEUE_* decided at the last regained service */
    unsigned long err_gen, gpu_gen;     /* current trigger generations (0: none yet) */
    double err_until, gpu_until;        /* pods parked after these are not included */
    double err_base, gpu_base;          /* trigger times, for time-to-bind */
    int gpu_trig;
    bool blocked;               /* 403 met: nothing more until the next trigger */
    bool dirty;                 /* parked pods may wait for a nudge: scan again */
    /* RACE (guarded by mu as well) */
    strmap *refusals;           /* uid -> refusal */
    unsigned long events;       /* moving events and releases seen */
    unsigned long release_ev;   /* `events` at the last release not acted on (0: none) */
    double released_at;         /* its time (monotonic) */
    double pruned_at;           /* refusals last pruned (monotonic) */
    atomic_ulong regained, passes[TRIG_N], sent, gone, failed, forbidden, bound[TRIG_N];
    atomic_ulong race_passes, race_skips;
    atomic_int needed;
    histo h[TRIG_N];
};

/* A patch built of strings gpupack holds (a uid the watch decoded), as text. */
static char *dump_patch(json_t *p)
{
    if (!p)
        abort();
    char *s = json_dumps(p, JSON_COMPACT);
    json_decref(p);
    if (!s)
        abort();
    return s;
}

char *requeue_patch_body(const char *uid, int64_t now_ns)
{
    char ts[32];
    snprintf(ts, sizeof ts, "%lld", (long long)now_ns);
    return dump_patch(json_pack("{s:{s:s,s:{s:s}}}", "metadata", "uid", uid, "annotations",
                                GP_REQUEUE_ANNOTATION, ts));
}

char *requeue_condition_body(const char *uid, const char *type, const char *reason, const char *msg,
                             bool first, int64_t now_ns)
{
    char ts[32];
    gp_rfc3339_format(now_ns, ts, sizeof ts);
    json_t *c = json_pack("{s:s,s:s,s:s,s:s,s:s}", "type", type, "status", "True", "reason", reason,
                          "message", msg, "lastProbeTime", ts);
    if (!c)
        abort();   /* strings gpupack wrote */
    if (first)
        json_object_set_new(c, "lastTransitionTime", json_string(ts));
    return dump_patch(json_pack("{s:{s:s},s:{s:[o]}}", "metadata", "uid", uid, "status",
                                "conditions", c));
}

/* ----------------------------------------------------------- observing --- */

static void observe_bind(histo *h, double seconds)
{
    size_t b = 0;
    while (b < GP_ARRAY_LEN(rq_bounds) && seconds > rq_bounds[b])
        b++;
    atomic_fetch_add(&h->b[b], 1);
    atomic_fetch_add(&h->count, 1);
    double cur = atomic_load(&h->sum);
    while (!atomic_compare_exchange_weak(&h->sum, &cur, cur + seconds)) {
    }
}

void requeue_observe(gp_requeue *rq, const char *uid, const char *ns, const char *name,
                     gp_requeue_seen seen, bool gpu)
{
    if (!rq || !atomic_load(&rq->tracking) || !uid || !*uid)
        return;
    if (seen == GP_REQUEUE_PARKED && !gpu)
        seen = GP_REQUEUE_PENDING;   /* only GPU pods miss node events */
    double now = gp_mono_s();
    pthread_mutex_lock(&rq->mu);
    cand *c = strmap_get(rq->cands, uid);
    if (c)
        c->list_gen = rq->list_gen;
    switch (seen) {
    case GP_REQUEUE_PARKED_ERROR:
    case GP_REQUEUE_PARKED:
        if (!c) {
            if (strmap_count(rq->cands) >= GP_REQUEUE_TRACK_MAX || strlen(ns) >= GP_NAME_MAX ||
                strlen(name) >= GP_NAME_MAX)
                break;
            c = xcalloc(1, sizeof *c);
            c->list_gen = rq->list_gen;
            gp_strlcpy(c->ns, ns, sizeof c->ns);
            gp_strlcpy(c->name, name, sizeof c->name);
            c->trig = -1;
            strmap_put(rq->cands, uid, c);
        }
        if (c->k == KIND_NONE) {
            c->parked_at = now;
            rq->dirty = true;
        }
        c->k = seen == GP_REQUEUE_PARKED_ERROR ? KIND_ERROR : KIND_OTHER;
        c->gpu = gpu;
        break;
    case GP_REQUEUE_PENDING:
        if (c) {
            c->k = KIND_NONE;
            if (c->trig < 0)   /* nudged pods stay until bound: their time to bind is measured */
                free(strmap_del(rq->cands, uid));
        }
        break;
    case GP_REQUEUE_BOUND:
        if (c && c->trig >= 0) {
            observe_bind(&rq->h[c->trig], now - c->base);
            atomic_fetch_add(&rq->bound[c->trig], 1);
        }
        free(strmap_del(rq->cands, uid));
        break;
    case GP_REQUEUE_GONE:
        free(strmap_del(rq->cands, uid));
        break;
    }
    pthread_mutex_unlock(&rq->mu);
}

static bool cand_unlisted(const char *uid, void *val, void *ud)
{
    (void)uid;
    cand *c = val;
    if (c->list_gen == *(const unsigned *)ud)
        return false;
    free(c);
    return true;
}

void requeue_listing(gp_requeue *rq, bool end)
{
    if (!rq)
        return;
    pthread_mutex_lock(&rq->mu);
    if (!end)
        rq->list_gen++;
    else
        strmap_drop_if(rq->cands, cand_unlisted, &rq->list_gen);
    pthread_mutex_unlock(&rq->mu);
}

void requeue_capacity_grew(gp_requeue *rq)
{
    if (rq && atomic_load(&rq->tracking))
        atomic_store(&rq->grew, true);
}

void requeue_refused(gp_requeue *rq, const char *uid, const char *ns, const char *name)
{
    if (!rq || !uid || !*uid || strlen(ns) >= GP_NAME_MAX || strlen(name) >= GP_NAME_MAX)
        return;
    double now = gp_mono_s();
    pthread_mutex_lock(&rq->mu);
    refusal *r = strmap_get(rq->refusals, uid);
    if (!r && strmap_count(rq->refusals) < GP_REQUEUE_RACE_MAX) {
        r = xcalloc(1, sizeof *r);
        gp_strlcpy(r->ns, ns, sizeof r->ns);
        gp_strlcpy(r->name, name, sizeof r->name);
        strmap_put(rq->refusals, uid, r);
    }
    if (r)
        r->at = now;
    pthread_mutex_unlock(&rq->mu);
}

void requeue_released(gp_requeue *rq)
{
    if (!rq)
        return;
    double now = gp_mono_s();
    pthread_mutex_lock(&rq->mu);
    rq->release_ev = ++rq->events;
    rq->released_at = now;
    pthread_mutex_unlock(&rq->mu);
}

void requeue_moving_event(gp_requeue *rq)
{
    if (!rq)
        return;
    pthread_mutex_lock(&rq->mu);
    rq->events++;
    pthread_mutex_unlock(&rq->mu);
}

static void forget_all_locked(gp_requeue *rq)
{
    size_t it = 0;
    cand *c;
    while ((c = strmap_next(rq->cands, &it, NULL)))
        free(c);
    strmap_free(rq->cands);
    rq->cands = strmap_new();
}

/* ------------------------------------------------------------- nudging --- */

/* Still parked after an error, renudge_s after its nudge for the current
 * trigger, whose window is open: its retry failed again. Locked. */
static bool renudge_due_locked(const gp_requeue *rq, const cand *c, double now)
{
    return c->err_done == rq->err_gen && now <= rq->err_until &&
           c->renudges < GP_REQUEUE_RENUDGE_MAX && now - c->err_nudged_at >= rq->cfg.renudge_s;
}

/* Which current triggers c is due a nudge for (bit 1: errors, bit 2: GPU). Locked. */
static unsigned due_locked(const gp_requeue *rq, const cand *c, double now)
{
    unsigned due = 0;
    if (c->k == KIND_ERROR && (rq->mask & GP_REQUEUE_ERRORS) && rq->err_gen &&
        ((c->err_done != rq->err_gen && c->parked_at <= rq->err_until) ||
         renudge_due_locked(rq, c, now)))
        due |= GP_REQUEUE_ERRORS;
    if (c->k != KIND_NONE && c->gpu && (rq->mask & GP_REQUEUE_NODES) && rq->gpu_gen &&
        c->gpu_done != rq->gpu_gen && c->parked_at <= rq->gpu_until)
        due |= GP_REQUEUE_NODES;
    unsigned long key = (rq->err_gen << 32) ^ rq->gpu_gen;
    if (due && c->tried_key == key && c->tries >= RQ_TRIES)
        due = 0;
    return due;
}

typedef struct pick {
    char uid[GP_UID_MAX], ns[GP_NAME_MAX], name[GP_NAME_MAX];
} pick;

static size_t pick_batch(gp_requeue *rq, pick *out, size_t max)
{
    size_t n = 0, it = 0;
    const char *uid;
    cand *c;
    double now = gp_mono_s();
    pthread_mutex_lock(&rq->mu);
    while (!rq->blocked && n < max && (c = strmap_next(rq->cands, &it, &uid))) {
        if (!due_locked(rq, c, now) || strlen(uid) >= GP_UID_MAX)
            continue;
        gp_strlcpy(out[n].uid, uid, sizeof out[n].uid);
        gp_strlcpy(out[n].ns, c->ns, sizeof out[n].ns);
        gp_strlcpy(out[n].name, c->name, sizeof out[n].name);
        n++;
    }
    pthread_mutex_unlock(&rq->mu);
    return n;
}

typedef enum { NUDGE_SENT, NUDGE_GONE, NUDGE_FAILED, NUDGE_FORBIDDEN } nudge_result;

/* One nudge: the annotation (merge patch), or with `status` the condition
 * GP_REQUEUE_CONDITION on the pod's status (strategic merge patch). */
static nudge_result nudge(gp_requeue *rq, const pick *p, bool status)
{
    char *body = status ? requeue_condition_body(p->uid, GP_REQUEUE_CONDITION, "GPUShareFreed",
                                                 "gpupack refused this pod just before its watch "
                                                 "showed a GPU share freed: kube-scheduler "
                                                 "retries it", true, gp_now_ns())
                        : requeue_patch_body(p->uid, gp_now_ns());
    gp_err err;
    static const nudge_result by[] = {[GP_PATCH_DONE] = NUDGE_SENT, [GP_PATCH_GONE] = NUDGE_GONE,
                                      [GP_PATCH_REFUSED] = NUDGE_FORBIDDEN,
                                      [GP_PATCH_RETRY] = NUDGE_FAILED};
    nudge_result r = by[kube_patch_pod(rq->k, p->ns, p->name, status ? "status" : NULL,
                                       status ? "application/strategic-merge-patch+json"
                                              : "application/merge-patch+json",
                                       body, RQ_TIMEOUT_S, rq->stop, &err)];
    if (r == NUDGE_SENT)
        LOG_DEBUG("requeue: nudged pod %s/%s", p->ns, p->name);
    else if (r == NUDGE_GONE)
        LOG_DEBUG("requeue: pod %s/%s not nudged (%s)", p->ns, p->name, err.msg);
    else if (r == NUDGE_FAILED)
        LOG_WARN("requeue: nudging pod %s/%s failed: %s", p->ns, p->name, err.msg);
    else if (status)
        LOG_ERROR("requeue: may not patch the status of pod %s/%s (%s); kube-scheduler retries "
                  "the pods it parked within 5 minutes. Grant gpupack `patch` on pods/status "
                  "(manifests/base/rbac.yaml) to have them retried at once",
                  p->ns, p->name, err.msg);
    else
        LOG_ERROR("requeue: may not patch pod %s/%s (%s); kube-scheduler retries the pods it "
                  "parked within 5 minutes. Grant gpupack `patch` on pods "
                  "(manifests/components/requeue-rbac) to have them retried at once",
                  p->ns, p->name, err.msg);
    free(body);
    return r;
}

/* One nudge when the bucket allows it, counted by outcome (*r). Returns false,
 * sending nothing, when interrupted (shutting down) or no longer serving. */
static bool paced_nudge(gp_requeue *rq, gp_tbucket *tb, const pick *p, bool status,
                        nudge_result *r)
{
    double wait;
    while ((wait = tbucket_take(tb, gp_mono_s())) > 0)
        if (kube_cancel_sleep(rq->stop, wait))
            return false;
    if (!rq->cfg.serving(rq->cfg.ud))
        return false;
    *r = nudge(rq, p, status);
    atomic_ulong *by[] = {[NUDGE_SENT] = &rq->sent, [NUDGE_GONE] = &rq->gone,
                          [NUDGE_FAILED] = &rq->failed, [NUDGE_FORBIDDEN] = &rq->forbidden};
    atomic_fetch_add(by[*r], 1);
    return true;
}

/* Records a nudge's result on its pod. Locked. */
static void settle_locked(gp_requeue *rq, const char *uid, nudge_result r)
{
    cand *c = strmap_get(rq->cands, uid);
    if (r == NUDGE_FORBIDDEN)
        rq->blocked = true;
    if (!c)
        return;
    double now = gp_mono_s();
    unsigned due = due_locked(rq, c, now);
    if (r == NUDGE_FAILED) {
        unsigned long key = (rq->err_gen << 32) ^ rq->gpu_gen;
        if (c->tried_key != key) {
            c->tried_key = key;
            c->tries = 0;
        }
        c->tries++;
        rq->dirty = true;   /* tried again at the next scan, RQ_TRIES times at most */
    } else if (r == NUDGE_SENT) {
        if (due & GP_REQUEUE_ERRORS) {
            c->renudges = c->err_done == rq->err_gen ? c->renudges + 1 : 0;
            c->err_nudged_at = now;
            c->err_done = rq->err_gen;
            c->trig = TRIG_REGAINED;
            c->base = rq->err_base;
        }
        if (due & GP_REQUEUE_NODES) {
            c->gpu_done = rq->gpu_gen;
            if (!(due & GP_REQUEUE_ERRORS)) {
                c->trig = rq->gpu_trig;
                c->base = rq->gpu_base;
            }
        }
    } else if (r == NUDGE_GONE) {
        free(strmap_del(rq->cands, uid));
    }
}

/* Nudges every pod due now. Returns false when interrupted (service lost,
 * shutting down). */
static bool nudge_all(gp_requeue *rq, gp_tbucket *tb)
{
    pick *batch = xmalloc(RQ_BATCH * sizeof *batch);
    bool ok = true;
    size_t n;
    while (ok && (n = pick_batch(rq, batch, RQ_BATCH)) > 0) {
        for (size_t i = 0; i < n && ok; i++) {
            nudge_result r;
            if (!(ok = paced_nudge(rq, tb, &batch[i], false, &r)))
                break;
            pthread_mutex_lock(&rq->mu);
            settle_locked(rq, batch[i].uid, r);
            bool blocked = rq->blocked;
            pthread_mutex_unlock(&rq->mu);
            if (blocked)
                break;
        }
    }
    free(batch);
    return ok;
}

/* Service regained: asks what kube-scheduler needs and opens the triggers.
 * Returns false when the answer is not known yet. */
static bool regained(gp_requeue *rq, double at)
{
    int need = rq->cfg.needed(rq->cfg.ud);
    atomic_store(&rq->needed, need);
    if (need < 0)
        return false;
    double now = gp_mono_s();
    pthread_mutex_lock(&rq->mu);
    rq->mask = (unsigned)need & (GP_REQUEUE_ERRORS | GP_REQUEUE_NODES);
    if (!rq->mask) {
        /* this kube-scheduler retries such pods by itself: nothing to track */
        atomic_store(&rq->tracking, 0);
        forget_all_locked(rq);
        pthread_mutex_unlock(&rq->mu);
        return true;
    }
    atomic_store(&rq->tracking, 1);
    rq->err_gen++;
    rq->gpu_gen++;
    rq->err_until = rq->gpu_until = now + rq->cfg.window_s;
    rq->err_base = rq->gpu_base = at;
    rq->gpu_trig = TRIG_REGAINED;
    rq->blocked = false;
    rq->dirty = true;
    size_t known = strmap_count(rq->cands);
    unsigned mask = rq->mask;
    pthread_mutex_unlock(&rq->mu);
    atomic_fetch_add(&rq->passes[TRIG_REGAINED], 1);
    LOG_INFO("requeue: serving; nudging the pods kube-scheduler parked %s%s%s (%zu known now, "
             "more reported within %.0f s), at most %.0f a second",
             mask & GP_REQUEUE_ERRORS ? "after an error" : "",
             mask == (GP_REQUEUE_ERRORS | GP_REQUEUE_NODES) ? " and " : "",
             mask & GP_REQUEUE_NODES ? "GPU pods that node events do not wake" : "", known,
             rq->cfg.window_s, rq->cfg.rate);
    return true;
}

static void capacity_grew(gp_requeue *rq)
{
    double now = gp_mono_s();
    pthread_mutex_lock(&rq->mu);
    bool act = (rq->mask & GP_REQUEUE_NODES) != 0;
    if (act) {
        rq->gpu_gen++;
        rq->gpu_until = now + rq->cfg.nodes_window_s;
        rq->gpu_base = now;
        rq->gpu_trig = TRIG_CAPACITY;
        rq->blocked = false;
        rq->dirty = true;
    }
    pthread_mutex_unlock(&rq->mu);
    if (act) {
        atomic_fetch_add(&rq->passes[TRIG_CAPACITY], 1);
        LOG_DEBUG("requeue: GPU capacity grew; nudging parked GPU pods");
    }
}

/* RACE: GP_REQUEUE_RACE_SETTLE_S after a release with no moving event since,
 * nudges the pods refused up to GP_REQUEUE_RACE_WINDOW_S before it; forgets
 * refusals too old to matter. Returns false when interrupted. */
static bool race_pass(gp_requeue *rq, gp_tbucket *tb)
{
    double now = gp_mono_s();
    size_t n = 0, nold = 0;
    pick *batch = NULL;
    char **old = NULL;
    pthread_mutex_lock(&rq->mu);
    bool status = !(rq->mask & GP_REQUEUE_NODES);   /* 1.32+: any new resourceVersion wakes it */
    size_t cap = strmap_count(rq->refusals);
    if (rq->release_ev && now - rq->released_at >= GP_REQUEUE_RACE_SETTLE_S) {
        double t = rq->released_at;
        bool quiet = rq->events == rq->release_ev;
        rq->release_ev = 0;
        if (!quiet)
            atomic_fetch_add(&rq->race_skips, 1);   /* kube-scheduler moved the pods itself */
        batch = quiet && cap ? xmalloc(cap * sizeof *batch) : NULL;
        size_t it = 0;
        const char *uid;
        refusal *r;
        while (batch && (r = strmap_next(rq->refusals, &it, &uid))) {
            if (r->at < t - GP_REQUEUE_RACE_WINDOW_S || r->at > t || strlen(uid) >= GP_UID_MAX ||
                (r->nudged_at > 0 && now - r->nudged_at < GP_REQUEUE_RACE_GAP_S))
                continue;
            r->nudged_at = now;
            gp_strlcpy(batch[n].uid, uid, sizeof batch[n].uid);
            gp_strlcpy(batch[n].ns, r->ns, sizeof batch[n].ns);
            gp_strlcpy(batch[n].name, r->name, sizeof batch[n].name);
            n++;
        }
        if (n)
            atomic_fetch_add(&rq->race_passes, 1);
    }
    /* older than any window a release not settled yet could open: forgotten */
    if (cap && now - rq->pruned_at >= 1.0) {
        rq->pruned_at = now;
        old = xmalloc(cap * sizeof *old);
        size_t it = 0;
        const char *uid;
        refusal *r;
        while ((r = strmap_next(rq->refusals, &it, &uid)))
            if (now - r->at > GP_REQUEUE_RACE_WINDOW_S + GP_REQUEUE_RACE_SETTLE_S + 1 &&
                (r->nudged_at == 0 || now - r->nudged_at >= GP_REQUEUE_RACE_GAP_S))
                old[nold++] = xstrdup(uid);
        for (size_t i = 0; i < nold; i++) {
            free(strmap_del(rq->refusals, old[i]));
            free(old[i]);
        }
        free(old);
    }
    pthread_mutex_unlock(&rq->mu);
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        nudge_result r;
        if (!(ok = paced_nudge(rq, tb, &batch[i], status, &r)))
            break;
        if (r == NUDGE_SENT)
            LOG_INFO("requeue: nudged pod %s/%s, refused just before gpupack saw a GPU share "
                     "freed", batch[i].ns, batch[i].name);
        if (r == NUDGE_FORBIDDEN)
            break;
    }
    free(batch);
    return ok;
}

static void *requeue_thread(void *arg)
{
    gp_requeue *rq = arg;
    gp_thread_set_name("requeue");
    bool was_serving = false, decided = false;
    double edge_at = 0, scanned_at = 0;
    gp_tbucket tb;
    tbucket_init(&tb, rq->cfg.rate, rq->cfg.burst, gp_mono_s());
    while (!kube_cancel_sleep(rq->stop, rq->cfg.poll_s)) {
        bool serving = rq->cfg.serving(rq->cfg.ud);
        if (serving && !was_serving) {
            atomic_fetch_add(&rq->regained, 1);
            edge_at = gp_mono_s();
            decided = false;
            atomic_store(&rq->grew, false);   /* the regained pass covers it */
        }
        was_serving = serving;
        if (!serving)
            continue;
        if (!decided) {
            decided = regained(rq, edge_at);
            if (!decided)
                continue;
        }
        if (atomic_exchange(&rq->grew, false))
            capacity_grew(rq);
        if (!race_pass(rq, &tb))
            continue;
        double now = gp_mono_s();
        pthread_mutex_lock(&rq->mu);
        bool dirty = rq->dirty && rq->mask;
        /* re-nudges come due with time alone: look again now and then while they may */
        if (!dirty && (rq->mask & GP_REQUEUE_ERRORS) && now <= rq->err_until &&
            now - scanned_at >= (rq->cfg.renudge_s < RQ_RESCAN_S ? rq->cfg.renudge_s : RQ_RESCAN_S))
            dirty = true;
        rq->dirty = false;
        pthread_mutex_unlock(&rq->mu);
        if (dirty) {
            scanned_at = now;
            (void)nudge_all(rq, &tb);
        }
    }
    return NULL;
}

/* ---------------------------------------------------------------- life --- */

gp_requeue *requeue_new(gp_kube *k, const gp_requeue_config *cfg)
{
    gp_requeue *rq = xcalloc(1, sizeof *rq);
    rq->cfg = *cfg;
    if (rq->cfg.rate <= 0)
        rq->cfg.rate = GP_REQUEUE_RATE_DEFAULT;
    if (rq->cfg.burst <= 0)
        rq->cfg.burst = GP_REQUEUE_BURST_DEFAULT;
    if (rq->cfg.window_s <= 0)
        rq->cfg.window_s = GP_REQUEUE_WINDOW_DEFAULT;
    if (rq->cfg.nodes_window_s <= 0)
        rq->cfg.nodes_window_s = GP_REQUEUE_NODES_WINDOW_DEFAULT;
    if (rq->cfg.renudge_s <= 0)
        rq->cfg.renudge_s = GP_REQUEUE_RENUDGE_DEFAULT;
    if (rq->cfg.poll_s <= 0)
        rq->cfg.poll_s = RQ_POLL_DEFAULT;
    rq->k = k;
    rq->stop = kube_cancel_new();
    rq->cands = strmap_new();
    rq->refusals = strmap_new();
    pthread_mutex_init(&rq->mu, NULL);
    atomic_init(&rq->tracking, 1);
    atomic_init(&rq->grew, false);
    atomic_init(&rq->needed, -1);
    for (int t = 0; t < TRIG_N; t++)
        atomic_init(&rq->h[t].sum, 0.0);
    return rq;
}

int requeue_start(gp_requeue *rq, gp_err *err)
{
    int rc = pthread_create(&rq->th, NULL, requeue_thread, rq);
    if (rc != 0)
        return gp_fail(err, "cannot start the requeue thread: %s", strerror(rc));
    rq->started = true;
    return 0;
}

void requeue_free(gp_requeue *rq)
{
    if (!rq)
        return;
    kube_cancel_fire(rq->stop);
    if (rq->started)
        pthread_join(rq->th, NULL);
    forget_all_locked(rq);
    strmap_free(rq->cands);
    size_t it = 0;
    refusal *r;
    while ((r = strmap_next(rq->refusals, &it, NULL)))
        free(r);
    strmap_free(rq->refusals);
    pthread_mutex_destroy(&rq->mu);
    kube_cancel_free(rq->stop);
    free(rq);
}

void requeue_stats(gp_requeue *rq, gp_requeue_stats *out)
{
    memset(out, 0, sizeof *out);
    out->needed = -1;
    if (!rq)
        return;
    out->regained = atomic_load(&rq->regained);
    out->race_passes = atomic_load(&rq->race_passes);
    out->race_quiet_skips = atomic_load(&rq->race_skips);
    for (int t = 0; t < TRIG_N; t++) {
        out->passes[t] = atomic_load(&rq->passes[t]);
        out->bound[t] = atomic_load(&rq->bound[t]);
    }
    out->sent = atomic_load(&rq->sent);
    out->gone = atomic_load(&rq->gone);
    out->failed = atomic_load(&rq->failed);
    out->forbidden = atomic_load(&rq->forbidden);
    out->needed = atomic_load(&rq->needed);
    pthread_mutex_lock(&rq->mu);
    size_t it = 0;
    cand *c;
    while ((c = strmap_next(rq->cands, &it, NULL)))
        out->parked += c->k != KIND_NONE;
    pthread_mutex_unlock(&rq->mu);
}

void requeue_metrics(gp_requeue *rq, gp_buf *out)
{
    if (!rq)
        return;
    gp_requeue_stats s;
    requeue_stats(rq, &s);
    metrics_header(out, "gpupack_requeue_regained_total", "counter",
                   "Times this replica regained the ability to serve (first full list applied, "
                   "leadership won).");
    metrics_u(out, "gpupack_requeue_regained_total", NULL, s.regained);
    metrics_header(out, "gpupack_requeue_triggers_total", "counter",
                   "Triggers on which parked pods were nudged, by trigger: regained and capacity "
                   "(kube-scheduler before 1.29 / 1.32 only), released (every version: pods "
                   "refused just before gpupack saw a GPU share freed).");
    metrics_u(out, "gpupack_requeue_triggers_total", "trigger=\"regained\"",
              s.passes[TRIG_REGAINED]);
    metrics_u(out, "gpupack_requeue_triggers_total", "trigger=\"capacity\"",
              s.passes[TRIG_CAPACITY]);
    metrics_u(out, "gpupack_requeue_triggers_total", "trigger=\"released\"", s.race_passes);
    metrics_header(out, "gpupack_requeue_race_skips_total", "counter",
                   "GPU shares freed after which no refused pod was nudged: another event moved "
                   "kube-scheduler's parked pods first (every version).");
    metrics_u(out, "gpupack_requeue_race_skips_total", NULL, s.race_quiet_skips);
    metrics_header(out, "gpupack_requeue_nudges_total", "counter",
                   "Pods patched (annotation " GP_REQUEUE_ANNOTATION ", or from 1.32 condition "
                   GP_REQUEUE_CONDITION ") so that kube-scheduler retries them, by outcome.");
    metrics_u(out, "gpupack_requeue_nudges_total", "result=\"sent\"", s.sent);
    metrics_u(out, "gpupack_requeue_nudges_total", "result=\"gone\"", s.gone);
    metrics_u(out, "gpupack_requeue_nudges_total", "result=\"failed\"", s.failed);
    metrics_u(out, "gpupack_requeue_nudges_total", "result=\"forbidden\"", s.forbidden);
    metrics_header(out, "gpupack_requeue_parked_pods", "gauge",
                   "Pending pods kube-scheduler parked that gpupack tracks (only while nudges may "
                   "be needed).");
    metrics_u(out, "gpupack_requeue_parked_pods", NULL, s.parked);
    /* its own buckets (seconds to minutes), so not metrics_render_histo's */
    metrics_header(out, "gpupack_requeue_bind_seconds", "histogram",
                   "Time from a trigger (service regained, GPU capacity grew) to the binding of a "
                   "pod nudged for it.");
    for (int t = 0; t < TRIG_N; t++) {
        char labels[64];
        unsigned long cum = 0;
        for (size_t b = 0; b < RQ_NB; b++) {
            cum += atomic_load(&rq->h[t].b[b]);
            if (b < GP_ARRAY_LEN(rq_bounds))
                snprintf(labels, sizeof labels, "trigger=\"%s\",le=\"%g\"", trig_name[t],
                         rq_bounds[b]);
            else
                snprintf(labels, sizeof labels, "trigger=\"%s\",le=\"+Inf\"", trig_name[t]);
            metrics_u(out, "gpupack_requeue_bind_seconds_bucket", labels, cum);
        }
        snprintf(labels, sizeof labels, "trigger=\"%s\"", trig_name[t]);
        metrics_f(out, "gpupack_requeue_bind_seconds_sum", labels, 3, atomic_load(&rq->h[t].sum));
        metrics_u(out, "gpupack_requeue_bind_seconds_count", labels, atomic_load(&rq->h[t].count));
    }
}
