/* dra_feed.c -- ResourceSlices, ResourceClaims and DeviceClasses from the API server into the map. */
#include "act/dra_feed.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/reflector.h"
#include "lib/log.h"
#include "lib/metrics.h"
#include "model/dra.h"

#define DRA_GROUP "/apis/resource.k8s.io/v1"
#define DRA_DISCOVERY_RETRY_S 1.0
#define DRA_DISCOVERY_TIMEOUT_S 5.0

struct gp_dra_feed {
    gp_kube *kube;
    gp_cluster *c;
    gp_drastore *ds;
    double stall_s;
    pthread_mutex_t mu;            /* guards state, asked, started, r[] creation */
    gp_dra_state state;
    double asked;                  /* monotonic time of the last discovery GET */
    gp_reflector *r[3];            /* slices, claims, classes */
    struct kind_ud *uds;           /* the reflectors' callback data (3) */
    unsigned long bad[3];          /* objects that did not decode */
    void (*on_freed)(void *ud);    /* a claim's allocation gone (dra_feed_on_freed) */
    void *on_freed_ud;
};

static const char *const kind_name[3] = {"resourceslices", "resourceclaims", "deviceclasses"};

/* --------------------------------------------------------- reflectors -- */

typedef struct kind_ud {
    gp_dra_feed *f;
    gp_dra_kind k;
} kind_ud;

static void begin(void *ud)
{
    kind_ud *u = ud;
    drastore_resync_begin(u->f->ds, u->k);
}

static void end(void *ud)
{
    kind_ud *u = ud;
    drastore_resync_end(u->f->ds, u->k);
    drastore_flush(u->f->ds, u->f->c);
}

static void apply(void *ud, gp_watch_type type, bool listed, const json_t *obj)
{
    kind_ud *u = ud;
    gp_dra_feed *f = u->f;
    gp_err err;
    gp_dra_drivers t;
    drastore_drivers(f->ds, &t);
    bool del = type == GP_WATCH_DELETED;
    int rc = 0;
    bool freed = false;
    if (u->k == GP_DRA_SLICES) {
        gp_dra_slice s;
        memset(&s, 0, sizeof s);
        rc = dra_slice_decode(obj, &t, &s, &err);
        if (rc == 0 && del)
            drastore_del_slice(f->ds, s.name);
        else if (rc == 0)
            drastore_put_slice(f->ds, &s);
        dra_slice_free(&s);
    } else if (u->k == GP_DRA_CLAIMS) {
        gp_dra_claim c;
        memset(&c, 0, sizeof c);
        rc = dra_claim_decode(obj, &c, &err);
        if (rc == 0 && del)
            freed = drastore_del_claim(f->ds, c.uid);
        else if (rc == 0)
            freed = drastore_put_claim(f->ds, &c);
        dra_claim_free(&c);
    } else {
        gp_dra_class cl;
        memset(&cl, 0, sizeof cl);
        rc = dra_class_decode(obj, &cl, &err);
        if (rc == 0 && del)
            drastore_del_class(f->ds, cl.name);
        else if (rc == 0)
            drastore_put_class(f->ds, &cl);
    }
    if (rc < 0) {
        pthread_mutex_lock(&f->mu);
        f->bad[u->k]++;
        pthread_mutex_unlock(&f->mu);
        LOG_WARN("%s: skipping an object: %s", kind_name[u->k], err.msg);
        return;
    }
    if (!listed) {   /* a LIST's objects are flushed at its end */
        drastore_flush(f->ds, f->c);
        if (freed && f->on_freed)
            f->on_freed(f->on_freed_ud);
    }
}

void dra_feed_on_freed(gp_dra_feed *f, void (*fn)(void *ud), void *ud)
{
    f->on_freed = fn;
    f->on_freed_ud = ud;
}

static const gp_reflector_ops ops = {begin, end, apply, NULL, NULL};

/* ---------------------------------------------------------- discovery -- */

gp_dra_feed *dra_feed_new(gp_kube *k, gp_cluster *c, gp_drastore *ds, double stall_s)
{
    gp_dra_feed *f = xcalloc(1, sizeof *f);
    f->kube = k;
    f->c = c;
    f->ds = ds;
    f->stall_s = stall_s > 0 ? stall_s : 90;
    f->asked = -1e9;
    pthread_mutex_init(&f->mu, NULL);
    return f;
}

void dra_feed_free(gp_dra_feed *f)
{
    if (!f)
        return;
    for (int i = 0; i < 3; i++)
        reflector_free(f->r[i]);
    free(f->uds);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

/* Whether an APIResourceList names every resource gpupack reads. */
static bool lists_all(const char *body, size_t len)
{
    json_error_t je;
    json_t *doc = json_loadb(body ? body : "", len, 0, &je);
    int found = 0;
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(doc, "resources"), i, r) {
        const char *name = json_string_value(json_object_get(r, "name"));
        for (int k = 0; name && k < 3; k++)
            if (strcmp(name, kind_name[k]) == 0)
                found |= 1 << k;
    }
    json_decref(doc);
    return found == 7;
}

static int start_reflectors(gp_dra_feed *f, gp_err *err)
{
    int timeout = (int)(f->stall_s * 2 / 3);
    for (int k = 0; k < 3; k++) {   /* a start that failed half-way is tried again whole */
        reflector_free(f->r[k]);
        f->r[k] = NULL;
    }
    free(f->uds);
    f->uds = xcalloc(3, sizeof *f->uds);
    for (int k = 0; k < 3; k++) {
        char path[96];
        snprintf(path, sizeof path, DRA_GROUP "/%s", kind_name[k]);
        gp_reflector_config cfg = {.resource = kind_name[k], .path = path,
                                   .watch_timeout_s = timeout > 1 ? timeout : 1,
                                   .stall_s = f->stall_s};
        f->uds[k] = (kind_ud){f, (gp_dra_kind)k};
        f->r[k] = reflector_new(f->kube, &cfg, &ops, &f->uds[k]);
    }
    /* devices before the claims that name them, classes before both */
    reflector_set_gate(f->r[GP_DRA_SLICES], f->r[GP_DRA_CLASSES]);
    reflector_set_gate(f->r[GP_DRA_CLAIMS], f->r[GP_DRA_SLICES]);
    for (int k = 0; k < 3; k++)
        if (reflector_start(f->r[k], err) < 0)
            return -1;
    return 0;
}

void dra_feed_poll(gp_dra_feed *f)
{
    pthread_mutex_lock(&f->mu);
    bool ask = f->state == GP_DRA_UNKNOWN && gp_mono_s() - f->asked >= DRA_DISCOVERY_RETRY_S;
    if (ask)
        f->asked = gp_mono_s();
    pthread_mutex_unlock(&f->mu);
    if (!ask)
        return;
    gp_kube_resp resp;
    gp_err err;
    gp_dra_state st = GP_DRA_UNKNOWN;
    long code = kube_call(f->kube, "GET", DRA_GROUP, NULL, NULL, DRA_DISCOVERY_TIMEOUT_S, NULL,
                          "DRA discovery (GET " DRA_GROUP ")", &resp, &err);
    if (code == 404) {
        st = GP_DRA_ABSENT;
        LOG_INFO("DRA: the API server does not serve resource.k8s.io/v1 (Kubernetes before 1.34, "
                 "or the API is off): gpupack reads no ResourceSlices or ResourceClaims");
    } else if (code / 100 == 2 && lists_all(resp.body.data, resp.body.len)) {
        st = GP_DRA_PRESENT;
    } else if (code / 100 == 2) {
        st = GP_DRA_ABSENT;
        LOG_WARN("DRA: resource.k8s.io/v1 lacks resourceslices, resourceclaims or "
                 "deviceclasses: gpupack reads none of them");
    } else {
        LOG_WARN("%s; asked again", err.msg);   /* no answer, or an error status */
    }
    kube_resp_free(&resp);
    if (st == GP_DRA_UNKNOWN)
        return;
    if (st == GP_DRA_PRESENT) {
        if (start_reflectors(f, &err) < 0) {
            LOG_ERROR("DRA: cannot start the watches: %s; asked again", err.msg);
            return;
        }
        LOG_INFO("DRA: resource.k8s.io/v1 served: listing and watching ResourceSlices, "
                 "ResourceClaims and DeviceClasses (docs/dra.md)");
    }
    pthread_mutex_lock(&f->mu);
    f->state = st;
    pthread_mutex_unlock(&f->mu);
}

gp_dra_state dra_feed_state(gp_dra_feed *f)
{
    pthread_mutex_lock(&f->mu);
    gp_dra_state st = f->state;
    pthread_mutex_unlock(&f->mu);
    return st;
}

bool dra_feed_current(gp_dra_feed *f, char *why, size_t whylen)
{
    gp_dra_state st = dra_feed_state(f);
    if (st == GP_DRA_ABSENT)
        return true;
    if (st == GP_DRA_UNKNOWN) {
        if (why && whylen)
            snprintf(why, whylen, "DRA discovery (GET " DRA_GROUP ") not answered yet");
        return false;
    }
    for (int k = 0; k < 3; k++) {
        char w[200] = "";
        if (!reflector_current(f->r[k], w, sizeof w)) {
            if (why && whylen)
                snprintf(why, whylen, "%s", w);
            return false;
        }
    }
    return true;
}

void dra_feed_drivers_changed(gp_dra_feed *f)
{
    if (dra_feed_state(f) == GP_DRA_PRESENT)
        reflector_relist(f->r[GP_DRA_SLICES]);
}

/* ------------------------------------------------------- bind's claims -- */

int dra_feed_refresh_claims(gp_dra_feed *f, const char *ns, const char *const *names, int n,
                            double timeout_s)
{
    if (dra_feed_state(f) != GP_DRA_PRESENT)
        return 0;
    int applied = 0;
    for (int i = 0; i < n; i++) {
        char *ens = kube_escape(ns), *ename = kube_escape(names[i]);
        char *path = xasprintf(DRA_GROUP "/namespaces/%s/resourceclaims/%s", ens, ename);
        free(ens);
        free(ename);
        gp_kube_resp resp;
        gp_err err;
        if (kube_call(f->kube, "GET", path, NULL, NULL, timeout_s, NULL, NULL, &resp, &err) == 200) {
            json_error_t je;
            json_t *obj = json_loadb(resp.body.data ? resp.body.data : "", resp.body.len, 0, &je);
            gp_dra_claim c;
            memset(&c, 0, sizeof c);
            if (obj && dra_claim_decode(obj, &c, &err) == 0) {
                (void)drastore_put_claim(f->ds, &c);   /* read at bind: an allocation */
                applied++;
            }
            dra_claim_free(&c);
            json_decref(obj);
        }
        kube_resp_free(&resp);
        free(path);
    }
    if (applied)
        drastore_flush(f->ds, f->c);
    return applied;
}

/* ------------------------------------------------------------ metrics -- */

void dra_feed_metrics(void *feed, gp_buf *out)
{
    gp_dra_feed *f = feed;
    gp_dra_state st = dra_feed_state(f);
    metrics_header(out, "gpupack_dra_api", "gauge",
                   "resource.k8s.io/v1 on the API server: 0 not known yet, 1 absent, 2 served");
    metrics_i(out, "gpupack_dra_api", NULL, (long long)st);
    gp_drastore_stats s;
    drastore_stats(f->ds, &s);
    metrics_header(out, "gpupack_dra_objects", "gauge", "DRA objects gpupack holds, by kind");
    metrics_u(out, "gpupack_dra_objects", "kind=\"resourceslices\"", s.slices);
    metrics_u(out, "gpupack_dra_objects", "kind=\"resourceclaims\"", s.claims);
    metrics_u(out, "gpupack_dra_objects", "kind=\"deviceclasses\"", s.classes);
    metrics_header(out, "gpupack_dra_claims_allocated", "gauge",
                   "ResourceClaims with an allocation (any device)");
    metrics_u(out, "gpupack_dra_claims_allocated", NULL, s.claims_allocated);
    metrics_header(out, "gpupack_dra_objects_skipped_total", "counter",
                   "DRA objects that did not decode (logged), by kind");
    pthread_mutex_lock(&f->mu);
    unsigned long bad[3] = {f->bad[0], f->bad[1], f->bad[2]};
    pthread_mutex_unlock(&f->mu);
    for (int k = 0; k < 3; k++) {
        char l[64];
        snprintf(l, sizeof l, "kind=\"%s\"", kind_name[k]);
        metrics_u(out, "gpupack_dra_objects_skipped_total", l, bad[k]);
    }
}
