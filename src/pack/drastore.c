/* drastore.c -- DRA objects kept for the GPU map and the allocator's prediction. */
#include "pack/drastore.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "lib/strmap.h"

#define MIB (1024 * 1024)

typedef struct slice_ent {
    gp_dra_slice s;
    unsigned gen;
} slice_ent;

typedef struct claim_ent {
    gp_dra_claim c;
    unsigned gen;
} claim_ent;

typedef struct class_ent {
    gp_dra_class cl;
    unsigned gen;
} class_ent;

struct gp_drastore {
    pthread_mutex_t mu;
    gp_dra_drivers drivers;
    strmap *slices;       /* name -> slice_ent */
    strmap *claims;       /* uid -> claim_ent */
    strmap *by_name;      /* "ns/name" -> claim_ent (borrowed from claims) */
    strmap *classes;      /* name -> class_ent */
    strmap *dirty;        /* node name -> (void *)1: view to recompute */
    bool all_dirty;       /* every node (the driver table changed) */
    unsigned gen[3];
};

static void claim_key(char *out, size_t len, const char *ns, const char *name)
{
    snprintf(out, len, "%s/%s", ns, name);
}

gp_drastore *drastore_new(const gp_dra_drivers *t)
{
    gp_drastore *ds = xcalloc(1, sizeof *ds);
    pthread_mutex_init(&ds->mu, NULL);
    ds->drivers = *t;
    ds->slices = strmap_new();
    ds->claims = strmap_new();
    ds->by_name = strmap_new();
    ds->classes = strmap_new();
    ds->dirty = strmap_new();
    return ds;
}

void drastore_free(gp_drastore *ds)
{
    if (!ds)
        return;
    size_t it = 0;
    slice_ent *se;
    while ((se = strmap_next(ds->slices, &it, NULL))) {
        dra_slice_free(&se->s);
        free(se);
    }
    it = 0;
    claim_ent *ce;
    while ((ce = strmap_next(ds->claims, &it, NULL))) {
        dra_claim_free(&ce->c);
        free(ce);
    }
    it = 0;
    class_ent *cl;
    while ((cl = strmap_next(ds->classes, &it, NULL)))
        free(cl);
    strmap_free(ds->slices);
    strmap_free(ds->claims);
    strmap_free(ds->by_name);
    strmap_free(ds->classes);
    strmap_free(ds->dirty);
    pthread_mutex_destroy(&ds->mu);
    free(ds);
}

bool drastore_set_drivers(gp_drastore *ds, const gp_dra_drivers *t)
{
    pthread_mutex_lock(&ds->mu);
    bool changed = memcmp(&ds->drivers, t, sizeof *t) != 0;
    if (changed) {
        ds->drivers = *t;
        ds->all_dirty = true;
    }
    pthread_mutex_unlock(&ds->mu);
    return changed;
}

void drastore_drivers(gp_drastore *ds, gp_dra_drivers *out)
{
    pthread_mutex_lock(&ds->mu);
    *out = ds->drivers;
    pthread_mutex_unlock(&ds->mu);
}

static void mark(gp_drastore *ds, const char *node)
{
    if (node && *node && !strmap_get(ds->dirty, node))
        strmap_put(ds->dirty, node, (void *)1);
}

/* The nodes an object's GPUs sit on. */
static void mark_slice(gp_drastore *ds, const gp_dra_slice *s)
{
    mark(ds, s->node);
    for (int i = 0; i < s->ndevices; i++)
        mark(ds, s->devices[i].node);
}

/* ------------------------------------------------------------ objects -- */

void drastore_put_slice(gp_drastore *ds, gp_dra_slice *s)
{
    slice_ent *e = xcalloc(1, sizeof *e);
    e->s = *s;
    memset(s, 0, sizeof *s);
    pthread_mutex_lock(&ds->mu);
    e->gen = ds->gen[GP_DRA_SLICES];
    slice_ent *old = strmap_put(ds->slices, e->s.name, e);
    if (old) {
        mark_slice(ds, &old->s);
        dra_slice_free(&old->s);
        free(old);
    }
    mark_slice(ds, &e->s);
    pthread_mutex_unlock(&ds->mu);
}

static void slice_drop(gp_drastore *ds, const char *name)
{
    slice_ent *old = strmap_del(ds->slices, name);
    if (old) {
        mark_slice(ds, &old->s);
        dra_slice_free(&old->s);
        free(old);
    }
}

void drastore_del_slice(gp_drastore *ds, const char *name)
{
    pthread_mutex_lock(&ds->mu);
    slice_drop(ds, name);
    pthread_mutex_unlock(&ds->mu);
}

/* A claim may matter on the node its allocation names; one without a single
 * node (allNodes devices) is rare for GPUs: every node is recomputed. */
static void mark_claim(gp_drastore *ds, const gp_dra_claim *c)
{
    if (!c->allocated)
        return;
    if (c->node[0])
        mark(ds, c->node);
    else
        ds->all_dirty = true;
}

/* Drops claim uid; returns whether it held an allocation. */
static bool claim_drop(gp_drastore *ds, const char *uid)
{
    claim_ent *old = strmap_del(ds->claims, uid);
    if (!old)
        return false;
    bool held = old->c.allocated;
    char key[2 * GP_NAME_MAX + 2];
    claim_key(key, sizeof key, old->c.ns, old->c.name);
    if (strmap_get(ds->by_name, key) == old)
        strmap_del(ds->by_name, key);
    mark_claim(ds, &old->c);
    dra_claim_free(&old->c);
    free(old);
    return held;
}

bool drastore_put_claim(gp_drastore *ds, gp_dra_claim *c)
{
    claim_ent *e = xcalloc(1, sizeof *e);
    e->c = *c;
    memset(c, 0, sizeof *c);
    pthread_mutex_lock(&ds->mu);
    e->gen = ds->gen[GP_DRA_CLAIMS];
    bool freed = claim_drop(ds, e->c.uid) && !e->c.allocated;
    char key[2 * GP_NAME_MAX + 2];
    claim_key(key, sizeof key, e->c.ns, e->c.name);
    strmap_put(ds->claims, e->c.uid, e);
    strmap_put(ds->by_name, key, e);
    mark_claim(ds, &e->c);
    pthread_mutex_unlock(&ds->mu);
    return freed;
}

bool drastore_del_claim(gp_drastore *ds, const char *uid)
{
    pthread_mutex_lock(&ds->mu);
    bool freed = claim_drop(ds, uid);
    pthread_mutex_unlock(&ds->mu);
    return freed;
}

void drastore_put_class(gp_drastore *ds, const gp_dra_class *cl)
{
    class_ent *e = xcalloc(1, sizeof *e);
    e->cl = *cl;
    pthread_mutex_lock(&ds->mu);
    e->gen = ds->gen[GP_DRA_CLASSES];
    free(strmap_put(ds->classes, e->cl.name, e));
    pthread_mutex_unlock(&ds->mu);
}

void drastore_del_class(gp_drastore *ds, const char *name)
{
    pthread_mutex_lock(&ds->mu);
    free(strmap_del(ds->classes, name));
    pthread_mutex_unlock(&ds->mu);
}

void drastore_resync_begin(gp_drastore *ds, gp_dra_kind k)
{
    pthread_mutex_lock(&ds->mu);
    ds->gen[k]++;
    pthread_mutex_unlock(&ds->mu);
}

void drastore_resync_end(gp_drastore *ds, gp_dra_kind k)
{
    pthread_mutex_lock(&ds->mu);
    strmap *m = k == GP_DRA_SLICES ? ds->slices : k == GP_DRA_CLAIMS ? ds->claims : ds->classes;
    for (;;) {
        char gone[64][GP_NAME_MAX];
        size_t n = 0, it = 0;
        const char *key;
        void *v;
        while (n < GP_ARRAY_LEN(gone) && (v = strmap_next(m, &it, &key))) {
            unsigned gen = k == GP_DRA_SLICES  ? ((slice_ent *)v)->gen
                           : k == GP_DRA_CLAIMS ? ((claim_ent *)v)->gen
                                                : ((class_ent *)v)->gen;
            if (gen != ds->gen[k])
                gp_strlcpy(gone[n++], key, GP_NAME_MAX);
        }
        if (n == 0)
            break;
        for (size_t i = 0; i < n; i++) {
            if (k == GP_DRA_SLICES)
                slice_drop(ds, gone[i]);
            else if (k == GP_DRA_CLAIMS)
                claim_drop(ds, gone[i]);
            else
                free(strmap_del(ds->classes, gone[i]));
        }
    }
    pthread_mutex_unlock(&ds->mu);
}

/* -------------------------------------------------------------- views -- */

static int64_t bytes_to_mib_up(int64_t b)
{
    return b <= 0 ? 0 : b / MIB + (b % MIB ? 1 : 0);
}

/* The amount of capacity `name` in a list (0 when absent). */
static int64_t cap_of(const gp_dra_counter *caps, int n, const char *name)
{
    for (int i = 0; name[0] && i < n; i++)
        if (strcmp(caps[i].name, name) == 0)
            return caps[i].value;
    return 0;
}

typedef struct node_slice {
    const gp_dra_slice *s;
} node_slice;

static int cmp_slices(const void *a, const void *b)
{
    const gp_dra_slice *x = ((const node_slice *)a)->s, *y = ((const node_slice *)b)->s;
    int d = strcmp(x->driver, y->driver);
    if (!d)
        d = strcmp(x->pool, y->pool);
    if (!d)
        d = strcmp(x->name, y->name);
    return d;
}

/* A pool's slices count only at its newest generation (the allocator skips
 * older ones while a driver republishes). */
static bool newest_generation(gp_drastore *ds, const gp_dra_slice *s)
{
    size_t it = 0;
    slice_ent *e;
    while ((e = strmap_next(ds->slices, &it, NULL)))
        if (strcmp(e->s.driver, s->driver) == 0 && strcmp(e->s.pool, s->pool) == 0 &&
            e->s.pool_generation > s->pool_generation)
            return false;
    return true;
}

typedef struct dev_ref {
    const gp_dra_slice *s;
    const gp_dra_device *d;
    int gpu;                 /* position in the view, -1 when not a GPU */
} dev_ref;

static const dev_ref *find_dev(const dev_ref *refs, int n, const gp_dra_result *r)
{
    for (int i = 0; i < n; i++)
        if (strcmp(refs[i].d->name, r->device) == 0 && strcmp(refs[i].s->pool, r->pool) == 0 &&
            strcmp(refs[i].s->driver, r->driver) == 0)
            return &refs[i];
    return NULL;
}

/* Whether device d of slice s sits on `node`. */
static bool on_node(const gp_dra_slice *s, const gp_dra_device *d, const char *node)
{
    if (d->node[0])
        return strcmp(d->node, node) == 0;
    return strcmp(s->node, node) == 0;
}

static void view_locked(gp_drastore *ds, const char *node, gp_dra_node_view *out)
{
    memset(out, 0, sizeof *out);
    size_t cap = 8, n = 0, it = 0;
    node_slice *sl = xmalloc(cap * sizeof *sl);
    slice_ent *se;
    while ((se = strmap_next(ds->slices, &it, NULL))) {
        bool here = strcmp(se->s.node, node) == 0;
        for (int i = 0; !here && i < se->s.ndevices; i++)
            here = strcmp(se->s.devices[i].node, node) == 0;
        if (!here || !newest_generation(ds, &se->s))
            continue;
        if (n == cap)
            sl = xrealloc(sl, (cap *= 2) * sizeof *sl);
        sl[n++].s = &se->s;
    }
    qsort(sl, n, sizeof *sl, cmp_slices);
    int ndev = 0;
    for (size_t i = 0; i < n; i++)
        ndev += sl[i].s->ndevices;
    dev_ref *refs = xmalloc((size_t)(ndev ? ndev : 1) * sizeof *refs);
    int nr = 0, ngpu = 0;
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < sl[i].s->ndevices; k++) {
            const gp_dra_device *d = &sl[i].s->devices[k];
            if (!on_node(sl[i].s, d, node))
                continue;
            bool gpu = d->gpu && d->mem_mib > 0 && ngpu < GP_MAX_GPUS_PER_NODE;
            refs[nr++] = (dev_ref){sl[i].s, d, gpu ? ngpu++ : -1};
        }
    if (ngpu == 0)
        goto done;
    out->gpus = xcalloc((size_t)ngpu, sizeof *out->gpus);
    out->ngpus = ngpu;
    for (int i = 0; i < nr; i++) {
        if (refs[i].gpu < 0)
            continue;
        const gp_dra_device *d = refs[i].d;
        const gp_dra_driver *drv = dra_driver_find(&ds->drivers, refs[i].s->driver);
        gp_dra_gpu_view *v = &out->gpus[refs[i].gpu];
        gp_strlcpy(v->uuid, d->uuid, sizeof v->uuid);
        gp_strlcpy(v->model, d->model, sizeof v->model);
        gp_strlcpy(v->driver, refs[i].s->driver, sizeof v->driver);
        gp_strlcpy(v->pool, refs[i].s->pool, sizeof v->pool);
        gp_strlcpy(v->device, d->name, sizeof v->device);
        v->dra.order = (int16_t)(refs[i].gpu + 1);
        v->dra.mem_total = d->mem_mib;
        v->dra.multi = d->multi;
        v->dra.default_mib = d->mem_default_mib;
        v->dra.min_mib = d->mem_min_mib;
        v->dra.step_mib = d->mem_step_mib;
        v->dra.cores = drv && drv->core_capacity[0] && d->core > 0 && d->multi;
        v->dra.core_default = GP_CORE_FULL;
    }
    /* what the allocated claims hold */
    int hcap = 8;
    out->holders = xmalloc((size_t)hcap * sizeof *out->holders);
    it = 0;
    claim_ent *ce;
    while ((ce = strmap_next(ds->claims, &it, NULL))) {
        const gp_dra_claim *c = &ce->c;
        if (!c->allocated || (c->node[0] && strcmp(c->node, node) != 0))
            continue;
        for (int r = 0; r < c->nres; r++) {
            const gp_dra_result *res = &c->res[r];
            if (res->admin)
                continue;
            const dev_ref *dr = find_dev(refs, nr, res);
            if (!dr || dr->gpu < 0)
                continue;
            gp_dra_gpu_view *v = &out->gpus[dr->gpu];
            const gp_dra_driver *drv = dra_driver_find(&ds->drivers, dr->s->driver);
            int64_t mem;
            int core;
            if (!dr->d->multi || res->ncap == 0) {
                mem = v->dra.mem_total;
                core = GP_CORE_FULL;
            } else {
                mem = bytes_to_mib_up(cap_of(res->cap, res->ncap, drv ? drv->mem_capacity : ""));
                int64_t cu = drv && drv->core_capacity[0] && drv->core_full > 0
                                 ? cap_of(res->cap, res->ncap, drv->core_capacity) : 0;
                core = (int)(cu * GP_CORE_FULL / (drv && drv->core_full > 0 ? drv->core_full : 1));
                if (core > GP_CORE_FULL)
                    core = GP_CORE_FULL;
            }
            v->dra.mem_used += mem;
            v->dra.core_used = (int16_t)(v->dra.core_used + (v->dra.cores ? core : 0));
            v->core_used += core;
            if (v->dra.claims < UINT16_MAX)
                v->dra.claims++;
            if (out->nholders == hcap)
                out->holders = xrealloc(out->holders, (size_t)(hcap *= 2) * sizeof *out->holders);
            gp_dra_holder *h = &out->holders[out->nholders++];
            memset(h, 0, sizeof *h);
            h->gpu = dr->gpu;
            gp_strlcpy(h->claim_ns, c->ns, sizeof h->claim_ns);
            gp_strlcpy(h->claim, c->name, sizeof h->claim);
            if (c->nreserved_pods > 0) {
                gp_strlcpy(h->pod_uid, c->reserved[0].uid, sizeof h->pod_uid);
                gp_strlcpy(h->pod, c->reserved[0].name, sizeof h->pod);
            }
            h->mem_mib = mem;
            h->core = core;
        }
    }
    /* partitionable devices: a GPU whose counters another allocated device
     * (a MIG slice of it) consumes is not the allocator's to give whole, and
     * holds what the partitions hold */
    for (int i = 0; i < nr; i++) {
        if (refs[i].gpu < 0 || refs[i].d->ncons == 0)
            continue;
        gp_dra_gpu_view *v = &out->gpus[refs[i].gpu];
        for (int j = 0; j < nr; j++) {
            /* the counter sets live in a slice of their own: a partition and
             * its GPU share the pool, not necessarily the slice */
            if (j == i || refs[j].d->ncons == 0 || strcmp(refs[j].s->driver, refs[i].s->driver) ||
                strcmp(refs[j].s->pool, refs[i].s->pool))
                continue;
            bool shares = false;
            for (int a = 0; a < refs[i].d->ncons && !shares; a++)
                for (int b = 0; b < refs[j].d->ncons && !shares; b++)
                    shares = strcmp(refs[i].d->cons[a].name, refs[j].d->cons[b].name) == 0;
            if (!shares)
                continue;
            it = 0;
            while ((ce = strmap_next(ds->claims, &it, NULL))) {
                const gp_dra_claim *c = &ce->c;
                for (int r = 0; c->allocated && r < c->nres; r++) {
                    if (c->res[r].admin || find_dev(refs, nr, &c->res[r]) != &refs[j])
                        continue;
                    int64_t mem = 0;
                    const gp_dra_driver *drv = dra_driver_find(&ds->drivers, refs[j].s->driver);
                    for (int b = 0; drv && b < refs[j].d->ncons; b++)
                        mem += cap_of(refs[j].d->cons[b].c, refs[j].d->cons[b].n, drv->mem_capacity);
                    mem = bytes_to_mib_up(mem);
                    if (mem <= 0 || mem > v->dra.mem_total - v->dra.mem_used)
                        mem = v->dra.mem_total - v->dra.mem_used;
                    v->dra.mem_used += mem;
                    v->core_used = GP_CORE_FULL;
                    if (v->dra.claims < UINT16_MAX)
                        v->dra.claims++;
                }
            }
        }
    }
done:
    free(refs);
    free(sl);
}

void drastore_node_view(gp_drastore *ds, const char *node, gp_dra_node_view *out)
{
    pthread_mutex_lock(&ds->mu);
    view_locked(ds, node, out);
    pthread_mutex_unlock(&ds->mu);
}

int drastore_flush(gp_drastore *ds, gp_cluster *c)
{
    pthread_mutex_lock(&ds->mu);
    if (ds->all_dirty) {
        size_t it = 0;
        slice_ent *se;
        while ((se = strmap_next(ds->slices, &it, NULL)))
            mark_slice(ds, &se->s);
        /* nodes whose last slice went keep an empty view until then: the
         * cluster drops a view that is empty */
        ds->all_dirty = false;
    }
    size_t n = strmap_count(ds->dirty), it = 0, k = 0;
    char (*names)[GP_NAME_MAX] = xmalloc((n ? n : 1) * sizeof *names);
    const char *key;
    while (k < n && strmap_next(ds->dirty, &it, &key))
        gp_strlcpy(names[k++], key, GP_NAME_MAX);
    strmap_free(ds->dirty);
    ds->dirty = strmap_new();
    gp_dra_node_view *views = xcalloc(k ? k : 1, sizeof *views);
    for (size_t i = 0; i < k; i++)
        view_locked(ds, names[i], &views[i]);
    pthread_mutex_unlock(&ds->mu);
    for (size_t i = 0; i < k; i++) {
        cluster_set_dra(c, names[i], &views[i]);
        cluster_dra_view_free(&views[i]);
    }
    free(views);
    free(names);
    return (int)k;
}

/* ------------------------------------------------------ pod requests -- */

int drastore_pod_request(gp_drastore *ds, const gp_dra_pod_claims *pc, const char *ns,
                         gp_pod_req *req, gp_err *why)
{
    if (pc->n == 0)
        return 0;
    gp_ctr_req ctrs[GP_MAX_CTRS];
    int nc = 0, rc = 0;
    pthread_mutex_lock(&ds->mu);
    for (int i = 0; i < pc->n && rc == 0; i++) {
        const gp_dra_pod_claims_entry *pe = &pc->c[i];
        if (!pe->claim[0]) {
            gp_fail(why, "claim %s of the pod is not made yet", pe->name);
            rc = 1;
            break;
        }
        char key[2 * GP_NAME_MAX + 2];
        claim_key(key, sizeof key, ns, pe->claim);
        const claim_ent *ce = strmap_get(ds->by_name, key);
        if (!ce) {
            gp_fail(why, "ResourceClaim %s/%s not seen yet", ns, pe->claim);
            rc = 1;
            break;
        }
        const gp_dra_claim *c = &ce->c;
        if (c->allocated)
            continue;   /* its devices are chosen: they count once the view has them */
        for (int r = 0; r < c->nreq; r++) {
            const gp_dra_request *q = &c->req[r];
            const class_ent *cl = strmap_get(ds->classes, q->cls);
            const gp_dra_driver *drv = cl ? dra_driver_find(&ds->drivers, cl->cl.driver) : NULL;
            if (!drv || q->admin)
                continue;   /* not a GPU class gpupack knows, or admin access (holds nothing) */
            if (q->all) {
                gp_fail(why, "claim %s request %s asks all devices (allocationMode All): not "
                        "predicted", c->name, q->name);
                rc = 1;
                break;
            }
            if (nc == GP_MAX_CTRS) {
                gp_fail(why, "the pod's claims make more than %d GPU requests", GP_MAX_CTRS);
                rc = 1;
                break;
            }
            gp_ctr_req *cr = &ctrs[nc++];
            memset(cr, 0, sizeof *cr);
            snprintf(cr->name, sizeof cr->name, "%.31s/%.31s", pe->name, q->name);
            cr->count = q->count > 0 ? q->count : 1;
            int64_t mem = cap_of(q->cap, q->ncap, drv->mem_capacity);
            if (mem > 0) {
                cr->mem_mib = bytes_to_mib_up(mem);
                cr->ask = GP_ASK_MIB;
            } else {
                cr->ask = GP_ASK_WHOLE;
                cr->mem_ppm = GP_PPM_FULL;
            }
            int64_t cu = drv->core_capacity[0] ? cap_of(q->cap, q->ncap, drv->core_capacity) : 0;
            if (cu > 0 && drv->core_full > 0)
                cr->core = (int)(cu * GP_CORE_FULL / drv->core_full > GP_CORE_FULL
                                     ? GP_CORE_FULL : cu * GP_CORE_FULL / drv->core_full);
        }
    }
    pthread_mutex_unlock(&ds->mu);
    if (rc || nc == 0)
        return rc;
    req->nctrs = nc;
    memcpy(req->ctrs, ctrs, (size_t)nc * sizeof *ctrs);
    req->dra = true;
    return 0;
}

void drastore_stats(gp_drastore *ds, gp_drastore_stats *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&ds->mu);
    out->slices = strmap_count(ds->slices);
    out->claims = strmap_count(ds->claims);
    out->classes = strmap_count(ds->classes);
    size_t it = 0;
    claim_ent *ce;
    while ((ce = strmap_next(ds->claims, &it, NULL)))
        out->claims_allocated += ce->c.allocated;
    slice_ent *se;
    it = 0;
    while ((se = strmap_next(ds->slices, &it, NULL)))
        for (int i = 0; i < se->s.ndevices; i++)
            out->gpus += se->s.devices[i].gpu;
    pthread_mutex_unlock(&ds->mu);
}
