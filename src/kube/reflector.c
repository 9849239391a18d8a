/* reflector.c -- LIST then WATCH one resource of the API server, forever, into callbacks. */
#include "kube/reflector.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonscan.h"
#include "lib/log.h"

struct gp_reflector {
    gp_kube *kube;
    gp_reflector_config cfg;
    char *resource, *path;
    const gp_reflector_ops *ops;
    void *ud;
    gp_reflector *gate;
    gp_kube_cancel *cancel;
    pthread_t thread;
    bool started;
    unsigned seed;

    pthread_mutex_t mu;            /* guards what other threads read: */
    bool synced, healthy;
    bool relisting;                /* after the first LIST: a LIST that will replace the view
                                    * is due or under way (events were lost) */
    double healthy_since;          /* monotonic start of the current healthy streak */
    char why[256];
    double down_since;
    gp_reflector_stats stats;

    bool relist_asked;             /* reflector_relist: a LIST is wanted now */
    gp_kube_cancel *watch_cancel;  /* the watch streaming now (NULL between watches) */

    /* the reflector thread's own state */
    char rv[64];
    bool need_list;
    unsigned bad_line_restarts;    /* watch restarts for malformed lines without progress */
    double list_began;             /* monotonic time the LIST being applied asked its first page */
};

/* The backoff returns to its minimum at a failure that comes after this long
 * without one (client-go's reflector: two minutes), and every sixth of it
 * without a failure halves the wait: API servers restarted one after another
 * half a minute apart (a control plane's rolling upgrade) are each met again
 * within seconds, while a server that fails again at once still gets a growing
 * wait. One watch never lasts that long where the server ends it at
 * timeoutSeconds (60 s in live mode), so the calm is counted across the
 * watches and LISTs that succeeded in a row. */
#define BACKOFF_RESET_S 60.0

double reflector_backoff_after_calm(const gp_reflector_config *cfg, double backoff, double calm)
{
    if (calm >= cfg->backoff_reset_s)
        return cfg->backoff_min_s;
    for (double c = calm; c >= cfg->backoff_reset_s / 6 && backoff > cfg->backoff_min_s;
         c -= cfg->backoff_reset_s / 6)
        backoff /= 2;
    return backoff > cfg->backoff_min_s ? backoff : cfg->backoff_min_s;
}

/* ------------------------------------------------------------- state --- */

static void set_healthy(gp_reflector *r)
{
    pthread_mutex_lock(&r->mu);
    if (!r->healthy && r->down_since > 0)
        LOG_INFO("%s: API server reachable again after %.1f s", r->resource,
                 gp_mono_s() - r->down_since);
    if (!r->healthy)
        r->healthy_since = gp_mono_s();
    r->healthy = true;
    r->down_since = 0;
    r->why[0] = '\0';
    pthread_mutex_unlock(&r->mu);
}

static void set_down(gp_reflector *r, const char *why)
{
    pthread_mutex_lock(&r->mu);
    if (r->down_since == 0)
        r->down_since = gp_mono_s();
    r->healthy = false;
    gp_strlcpy(r->why, why, sizeof r->why);
    pthread_mutex_unlock(&r->mu);
}

double reflector_list_began(const gp_reflector *r)
{
    return r->list_began;
}

bool reflector_synced(gp_reflector *r)
{
    pthread_mutex_lock(&r->mu);
    bool s = r->synced;
    pthread_mutex_unlock(&r->mu);
    return s;
}

bool reflector_current(gp_reflector *r, char *why, size_t whylen)
{
    pthread_mutex_lock(&r->mu);
    bool ok = r->synced && !r->relisting;
    if (!ok && why && whylen)
        snprintf(why, whylen, "%s: %s", r->resource,
                 r->synced ? "listing again (the watch lost events), not applied yet"
                           : "first LIST not applied yet");
    pthread_mutex_unlock(&r->mu);
    return ok;
}

bool reflector_healthy(gp_reflector *r, char *why, size_t whylen)
{
    pthread_mutex_lock(&r->mu);
    bool ok = r->healthy;
    if (!ok && why && whylen) {
        if (r->why[0])
            snprintf(why, whylen, "%s: %s (for %.0f s)", r->resource, r->why,
                     gp_mono_s() - r->down_since);
        else
            snprintf(why, whylen, "%s: not listed yet", r->resource);
    }
    pthread_mutex_unlock(&r->mu);
    return ok;
}

double reflector_healthy_for(gp_reflector *r)
{
    pthread_mutex_lock(&r->mu);
    double t = r->healthy ? gp_mono_s() - r->healthy_since : -1;
    pthread_mutex_unlock(&r->mu);
    return t;
}

void reflector_stats(gp_reflector *r, gp_reflector_stats *out)
{
    pthread_mutex_lock(&r->mu);
    *out = r->stats;
    pthread_mutex_unlock(&r->mu);
}

#define STAT_ADD(r, field, n)          \
    do {                               \
        pthread_mutex_lock(&(r)->mu);  \
        (r)->stats.field += (n);       \
        pthread_mutex_unlock(&(r)->mu); \
    } while (0)

static void set_rv(gp_reflector *r, const char *rv)
{
    if (!rv || !*rv)
        return;
    gp_strlcpy(r->rv, rv, sizeof r->rv);
    pthread_mutex_lock(&r->mu);
    gp_strlcpy(r->stats.rv, rv, sizeof r->stats.rv);
    pthread_mutex_unlock(&r->mu);
}

/* -------------------------------------------------------------- LIST --- */

typedef enum { STEP_OK, STEP_RETRY, STEP_RELIST, STEP_STOP } step;

/* A page the client could not or should not hold: kube_request's response cap
 * ("response body exceeds N bytes", asserted by test_reflector through
 * page_bytes_max) or a 200 answer over page_bytes_max. */
static bool page_too_large(const gp_reflector *r, int rc, const gp_kube_resp *resp, const gp_err *err)
{
    if (rc < 0)
        return strstr(err->msg, "response body exceeds") != NULL;
    return resp->status == 200 && resp->body.len > r->cfg.page_bytes_max;
}

/* Appends a LIST page's items (trimmed, one compact JSON line each) to
 * items; returns false when items is full. */
static bool page_to_lines(gp_reflector *r, const json_t *pitems, gp_buf *items, size_t *nitems)
{
    size_t i;
    json_t *it;
    json_array_foreach(pitems, i, it) {
        json_t *t = r->ops->trim ? r->ops->trim(it) : json_incref(it);
        char *line = json_dumps(t, JSON_COMPACT);   /* escapes '\n' inside strings */
        json_decref(t);
        if (!line)
            continue;
        gp_buf_append(items, line, strlen(line));
        gp_buf_append(items, "\n", 1);
        free(line);
        if (gp_buf_failed(items))
            return false;
        (*nitems)++;
    }
    return true;
}

/* Applies a complete LIST (the lines page_to_lines kept) as one resync. */
static void apply_lines(gp_reflector *r, const gp_buf *items)
{
    r->ops->resync_begin(r->ud);
    for (size_t off = 0; off < items->len;) {
        const char *line = items->data + off;
        const char *nl = memchr(line, '\n', items->len - off);
        size_t len = nl ? (size_t)(nl - line) : items->len - off;
        json_t *obj = json_loadb(line, len, 0, NULL);
        if (obj)
            r->ops->apply(r->ud, GP_WATCH_ADDED, true, obj);
        json_decref(obj);
        off += len + 1;
    }
    r->ops->resync_end(r->ud);
}

/* GETs one LIST page (after `cont`, NULL = the first). A page too large
 * for the client is asked again, same continue token, at half the limit:
 * the API server accepts a new limit with a continue token. Returns
 * kube_request's result; *limit keeps the smaller size for the next pages. */
static int fetch_page(gp_reflector *r, const char *cont, int *limit, gp_kube_resp *resp,
                      gp_err *err)
{
    for (;;) {
        char *path;
        if (cont) {
            char *esc = kube_escape(cont);
            path = xasprintf("%s?limit=%d&continue=%s", r->path, *limit, esc);
            free(esc);
        } else {
            path = xasprintf("%s?limit=%d", r->path, *limit);
        }
        int rc = kube_request(r->kube, "GET", path, NULL, NULL, r->cfg.request_timeout_s,
                              r->cancel, resp, err);
        free(path);
        if (!page_too_large(r, rc, resp, err) || *limit <= 1)
            return rc;
        int smaller = *limit / 2;
        LOG_WARN("%s: a LIST page of %d objects is too large (%.200s); asking for %d per page",
                 r->resource, *limit, rc < 0 ? err->msg : "over the page limit", smaller);
        *limit = smaller;
        STAT_ADD(r, page_shrinks, 1);
        kube_resp_free(resp);
    }
}

/* A LIST page as JSON: with a keep table, its items reduced to it as the
 * text is scanned (a page of 500 pods parsed whole is tens of MiB of jansson
 * values, mostly managedFields, freed at once: the heap's high-water mark
 * at every relist); whole where the scanner declines. */
static json_t *load_page(gp_reflector *r, const gp_kube_resp *resp, json_error_t *jerr)
{
    const char *body = resp->body.data ? resp->body.data : "";
    if (r->ops->keep) {
        const gp_keep page_keep[] = {{.key = "metadata"},
                                     {.key = "items", .sub = r->ops->keep, .each = true},
                                     {0}};
        json_t *page;
        if (jscan_load_reduced(body, body + resp->body.len, page_keep, 0, &page) == 0)
            return page;
    }
    return json_loadb(body, resp->body.len, 0, jerr);
}

/* One full LIST. Applies it only when every page arrived. The items wait as
 * compact JSON lines (trimmed first): a parsed tree costs ten times more. */
static step do_list(gp_reflector *r)
{
    gp_buf items;
    gp_buf_init(&items, r->cfg.list_max);
    size_t nitems = 0;
    char *cont = NULL;
    char list_rv[64] = "";
    step res = STEP_RETRY;
    char why[400] = "";   /* set = this LIST failed */
    int limit = r->cfg.page_limit;
    double began = gp_mono_s();
    for (;;) {
        gp_kube_resp resp;
        gp_err err;
        int rc = fetch_page(r, cont, &limit, &resp, &err);
        if (rc < 0) {
            kube_resp_free(&resp);
            if (kube_cancel_fired(r->cancel)) {
                res = STEP_STOP;
                goto out;
            }
            snprintf(why, sizeof why, "LIST failed: %.300s", err.msg);
            goto out;
        }
        if (resp.status != 200) {
            char msg[256];
            kube_status_message(resp.body.data, resp.body.len, msg, sizeof msg);
            long st = resp.status;
            kube_resp_free(&resp);
            if (st == 410 && cont) {
                /* the continue token expired: start over from a fresh snapshot */
                LOG_INFO("%s: LIST continue token expired, listing again", r->resource);
                free(cont);
                cont = NULL;
                gp_buf_reset(&items);
                nitems = 0;
                STAT_ADD(r, expired, 1);
                continue;
            }
            snprintf(why, sizeof why, "LIST answered HTTP %ld: %s", st, msg);
            goto out;
        }
        json_error_t jerr = {.text = ""};
        json_t *page = load_page(r, &resp, &jerr);
        kube_resp_free(&resp);
        json_t *pitems = json_object_get(page, "items");
        const json_t *md = json_object_get(page, "metadata");
        if (!json_is_object(page) || !(json_is_array(pitems) || json_is_null(pitems))) {
            snprintf(why, sizeof why, "LIST answer is not a list (%s)", page ? "no items" : jerr.text);
            json_decref(page);
            goto out;
        }
        STAT_ADD(r, list_pages, 1);
        bool full = !page_to_lines(r, pitems, &items, &nitems);
        const char *rv = json_string_value(json_object_get(md, "resourceVersion"));
        const char *next = json_string_value(json_object_get(md, "continue"));
        if (!cont)
            gp_strlcpy(list_rv, rv ? rv : "", sizeof list_rv);
        free(cont);
        cont = next && *next ? xstrdup(next) : NULL;
        json_decref(page);
        if (full) {
            snprintf(why, sizeof why, "LIST larger than %zu bytes", r->cfg.list_max);
            goto out;
        }
        if (!cont)
            break;
    }
    if (!list_rv[0]) {
        snprintf(why, sizeof why, "LIST answer without metadata.resourceVersion");
        goto out;
    }
    r->list_began = began;   /* read by the ops from this thread, during apply_lines */
    apply_lines(r, &items);
    set_rv(r, list_rv);
    pthread_mutex_lock(&r->mu);
    if (!r->synced)
        LOG_INFO("%s: first LIST applied (%zu objects, resourceVersion %s)", r->resource, nitems,
                 list_rv);
    r->synced = true;
    r->relisting = false;
    r->stats.lists++;
    pthread_mutex_unlock(&r->mu);
    set_healthy(r);
    res = STEP_OK;
out:
    if (why[0]) {
        LOG_WARN("%s: %s", r->resource, why);
        set_down(r, why);
        STAT_ADD(r, list_failures, 1);
    }
    free(cont);
    gp_buf_free(&items);
    return res;
}

/* ------------------------------------------------------------- WATCH --- */

typedef struct watch_ctx {
    gp_reflector *r;
    gp_watchstream *ws;
    bool expired;             /* ERROR 410 seen */
    bool error_event;         /* another ERROR event */
    bool bad_line;            /* a malformed event: maybe one lost in transit */
    char error_msg[256];
    unsigned long events;
} watch_ctx;

static void on_open(void *ud, long status)
{
    watch_ctx *w = ud;
    if (status == 200)
        set_healthy(w->r);
}

static int on_line(void *ud, const char *line, size_t len)
{
    watch_ctx *w = ud;
    gp_reflector *r = w->r;
    gp_watch_event ev;
    gp_err err;
    if (watchstream_event_parse_kept(line, len, r->ops->keep, &ev, &err) < 0) {
        /* never skip: the line may have been a DELETED, whose loss would
         * leave a ghost holding GPUs until the next relist */
        STAT_ADD(r, bad_events, 1);
        w->bad_line = true;
        snprintf(w->error_msg, sizeof w->error_msg, "malformed watch event: %.200s", err.msg);
        return -1;
    }
    int rc = 0;
    switch (ev.type) {
    case GP_WATCH_ADDED:
    case GP_WATCH_MODIFIED:
    case GP_WATCH_DELETED:
        r->ops->apply(r->ud, ev.type, false, ev.object);
        set_rv(r, ev.rv);
        w->events++;
        STAT_ADD(r, events, 1);
        break;
    case GP_WATCH_BOOKMARK:
        set_rv(r, ev.rv);
        STAT_ADD(r, bookmarks, 1);
        break;
    case GP_WATCH_ERROR:
        if (ev.code == 410) {
            w->expired = true;
        } else {
            w->error_event = true;
            snprintf(w->error_msg, sizeof w->error_msg, "watch ERROR event %d %.40s: %.160s",
                     ev.code, ev.reason, ev.message);
        }
        rc = -1;    /* the server ends the stream after an ERROR anyway */
        break;
    }
    watchstream_event_clear(&ev);
    return rc;
}

static int on_data(void *ud, const char *p, size_t n)
{
    watch_ctx *w = ud;
    gp_err err;
    if (watchstream_feed(w->ws, p, n, &err) < 0) {
        if (!w->expired && !w->error_event && !w->bad_line) {
            w->error_event = true;
            gp_strlcpy(w->error_msg, err.msg, sizeof w->error_msg);
        }
        return -1;
    }
    return 0;
}

static step do_watch(gp_reflector *r)
{
    char *rv = kube_escape(r->rv);
    char *path = xasprintf("%s?watch=1&resourceVersion=%s&allowWatchBookmarks=true&timeoutSeconds=%d",
                           r->path, rv, r->cfg.watch_timeout_s);
    free(rv);
    watch_ctx w = {.r = r};
    w.ws = watchstream_new(r->cfg.line_max, on_line, &w);
    long status = 0;
    gp_buf errbody;
    gp_err err;
    STAT_ADD(r, watches, 1);
    double started = gp_mono_s();
    /* its own cancel, fired by reflector_free and reflector_relist alike */
    gp_kube_cancel *wc = kube_cancel_new();
    pthread_mutex_lock(&r->mu);
    r->watch_cancel = wc;
    bool asked = r->relist_asked;
    pthread_mutex_unlock(&r->mu);
    if (asked || kube_cancel_fired(r->cancel))
        kube_cancel_fire(wc);
    int rc = kube_stream(r->kube, path, r->cfg.stall_s, (double)r->cfg.watch_timeout_s + r->cfg.stall_s,
                         wc, on_open, on_data, &w, &status, &errbody, &err);
    pthread_mutex_lock(&r->mu);
    r->watch_cancel = NULL;
    asked = r->relist_asked;
    r->relist_asked = false;
    pthread_mutex_unlock(&r->mu);
    kube_cancel_free(wc);
    step res;
    char why[400];
    if (w.events > 0)
        r->bad_line_restarts = 0;
    if (kube_cancel_fired(r->cancel)) {
        res = STEP_STOP;
    } else if (asked) {
        LOG_INFO("%s: listing again, as asked", r->resource);
        res = STEP_RELIST;
    } else if (w.bad_line) {
        /* resume from the last good resourceVersion; the same spot failing
         * again without progress means the stream will not heal: relist */
        bool again = r->bad_line_restarts++ > 0;
        LOG_WARN("%s: %s after %lu events; %s", r->resource, w.error_msg, w.events,
                 again ? "failed again at the same place, listing again"
                       : "restarting the watch from the last good resourceVersion");
        if (again)
            r->bad_line_restarts = 0;
        res = again ? STEP_RELIST : STEP_RETRY;
    } else if (w.expired) {
        LOG_INFO("%s: resourceVersion %s expired (410), listing again", r->resource, r->rv);
        STAT_ADD(r, expired, 1);
        res = STEP_RELIST;
    } else if (w.error_event) {
        snprintf(why, sizeof why, "%s", w.error_msg);
        res = STEP_RELIST;
        LOG_WARN("%s: %s; listing again", r->resource, why);
        set_down(r, why);
        STAT_ADD(r, watch_failures, 1);
    } else if (rc < 0) {
        snprintf(why, sizeof why, "%.300s%s", err.msg,
                 watchstream_pending(w.ws) ? " (cut mid-event)" : "");
        LOG_WARN("%s: watch failed after %lu events: %s", r->resource, w.events, why);
        set_down(r, why);
        STAT_ADD(r, watch_failures, 1);
        res = STEP_RETRY;
    } else if (status == 410) {
        LOG_INFO("%s: watch answered HTTP 410, listing again", r->resource);
        STAT_ADD(r, expired, 1);
        res = STEP_RELIST;
    } else if (status != 200) {
        char msg[256];
        kube_status_message(errbody.data, errbody.len, msg, sizeof msg);
        snprintf(why, sizeof why, "watch answered HTTP %ld: %s", status, msg);
        LOG_WARN("%s: %s", r->resource, why);
        set_down(r, why);
        STAT_ADD(r, watch_failures, 1);
        res = STEP_RETRY;
    } else {
        /* the server closed at timeoutSeconds: re-watch at once, unless it
         * keeps closing at once without news (then pause like a failure) */
        res = (w.events == 0 && gp_mono_s() - started < 1.0) ? STEP_RETRY : STEP_OK;
        if (watchstream_pending(w.ws))
            LOG_WARN("%s: watch ended mid-event; the event will be re-sent", r->resource);
    }
    gp_buf_free(&errbody);
    watchstream_free(w.ws);
    free(path);
    return res;
}

/* -------------------------------------------------------------- loop --- */

static double jitter(gp_reflector *r, double d)
{
    double f = 0.8 + 0.4 * ((double)rand_r(&r->seed) / (double)RAND_MAX);
    return d * f;
}

static void *run(void *arg)
{
    gp_reflector *r = arg;
    char tname[64];
    snprintf(tname, sizeof tname, "w-%s", r->cfg.resource ? r->cfg.resource : "?");
    gp_thread_set_name(tname);   /* "w-pods", "w-resourceclaim" */
    double backoff = r->cfg.backoff_min_s;
    double calm_since = 0;   /* start of the steps that succeeded in a row (0: none) */
    r->need_list = true;
    bool just_listed = false;
    while (!kube_cancel_fired(r->cancel)) {
        if (r->gate && !reflector_synced(r->gate)) {
            if (kube_cancel_sleep(r->cancel, 0.02))
                break;
            continue;
        }
        step s;
        double began = gp_mono_s();
        if (r->need_list) {
            s = do_list(r);
            if (s == STEP_OK)
                r->need_list = false;
            just_listed = s == STEP_OK;
        } else {
            s = do_watch(r);
            /* a watch that streamed before it failed was calm meanwhile: the
             * first one after an outage, cut by the next outage, counts (one
             * that fails at once adds nothing) */
            if (s == STEP_RETRY && calm_since == 0)
                calm_since = began;
            if (s == STEP_RELIST) {
                r->need_list = true;
                pthread_mutex_lock(&r->mu);
                r->relisting = true;   /* the view misses events until the LIST is applied */
                pthread_mutex_unlock(&r->mu);
                /* expired again right after a LIST: do not spin on the server */
                if (just_listed)
                    s = STEP_RETRY;
            }
            just_listed = false;
        }
        if (s == STEP_STOP)
            break;
        if (s != STEP_RETRY && calm_since == 0)
            calm_since = began;
        if (s == STEP_RETRY) {
            /* a failure after a calm is a new outage: retry sooner */
            if (calm_since > 0)
                backoff = reflector_backoff_after_calm(&r->cfg, backoff, gp_mono_s() - calm_since);
            calm_since = 0;
            if (kube_cancel_sleep(r->cancel, jitter(r, backoff)))
                break;
            backoff *= 2;
            if (backoff > r->cfg.backoff_max_s)
                backoff = r->cfg.backoff_max_s;
        }
        /* a successful LIST alone never resets the backoff: a watch that
         * fails at once after each LIST would otherwise relist in a loop
         * (the calm is counted from the LIST, and is short) */
    }
    return NULL;
}

gp_reflector *reflector_new(gp_kube *k, const gp_reflector_config *cfg, const gp_reflector_ops *ops,
                            void *ud)
{
    gp_reflector *r = xcalloc(1, sizeof *r);
    r->kube = k;
    r->cfg = *cfg;
    r->resource = xstrdup(cfg->resource ? cfg->resource : cfg->path);
    r->path = xstrdup(cfg->path);
    r->cfg.resource = r->resource;
    r->cfg.path = r->path;
    if (r->cfg.page_limit <= 0)
        r->cfg.page_limit = 500;
    if (r->cfg.watch_timeout_s <= 0)
        r->cfg.watch_timeout_s = 300;
    if (r->cfg.stall_s <= 0)
        r->cfg.stall_s = r->cfg.watch_timeout_s + 30;
    if (r->cfg.backoff_min_s <= 0)
        r->cfg.backoff_min_s = 0.2;
    if (r->cfg.backoff_max_s < r->cfg.backoff_min_s)
        r->cfg.backoff_max_s = r->cfg.backoff_min_s > 30 ? r->cfg.backoff_min_s : 30;
    if (r->cfg.request_timeout_s <= 0)
        r->cfg.request_timeout_s = 60;
    if (r->cfg.line_max == 0)
        r->cfg.line_max = GP_WATCH_LINE_MAX;
    if (r->cfg.list_max == 0)
        r->cfg.list_max = (size_t)1 << 30;
    if (r->cfg.page_bytes_max == 0 || r->cfg.page_bytes_max > GP_KUBE_BODY_MAX)
        r->cfg.page_bytes_max = GP_KUBE_BODY_MAX;
    if (r->cfg.backoff_reset_s <= 0)
        r->cfg.backoff_reset_s = BACKOFF_RESET_S;
    r->ops = ops;
    r->ud = ud;
    r->cancel = kube_cancel_new();
    r->seed = (unsigned)(gp_now_ns() ^ (int64_t)(uintptr_t)r);
    pthread_mutex_init(&r->mu, NULL);
    return r;
}

void reflector_set_gate(gp_reflector *r, gp_reflector *gate)
{
    r->gate = gate;
}

int reflector_start(gp_reflector *r, gp_err *err)
{
    if (r->started)
        return gp_fail(err, "%s reflector already started", r->resource);
    int rc = pthread_create(&r->thread, NULL, run, r);
    if (rc != 0)
        return gp_fail(err, "%s reflector: cannot start a thread: %s", r->resource, strerror(rc));
    r->started = true;
    return 0;
}

void reflector_relist(gp_reflector *r)
{
    pthread_mutex_lock(&r->mu);
    r->relist_asked = true;
    if (r->watch_cancel)
        kube_cancel_fire(r->watch_cancel);
    pthread_mutex_unlock(&r->mu);
}

void reflector_free(gp_reflector *r)
{
    if (!r)
        return;
    kube_cancel_fire(r->cancel);
    pthread_mutex_lock(&r->mu);
    if (r->watch_cancel)
        kube_cancel_fire(r->watch_cancel);
    pthread_mutex_unlock(&r->mu);
    if (r->started)
        pthread_join(r->thread, NULL);
    kube_cancel_free(r->cancel);
    pthread_mutex_destroy(&r->mu);
    free(r->resource);
    free(r->path);
    free(r);
}
