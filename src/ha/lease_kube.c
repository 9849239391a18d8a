/* lease_kube.c -- the leader's Lease store: GET / POST / PUT of a coordination.k8s.io/v1 Lease. */
#include "ha/lease_kube.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/timefmt.h"

#define LEASE_API "/apis/coordination.k8s.io/v1/namespaces/"

struct gp_lease_kube {
    gp_kube *k;
    char *ns, *name;
    char *coll_path, *obj_path;   /* .../leases and .../leases/NAME */
    double timeout_s;
    gp_kube_cancel *cancel;       /* fired by interrupt */
};

/* ------------------------------------------------------------ times --- */

void lease_kube_format_time(int64_t ns, char out[40])
{
    time_t s = (time_t)(ns / 1000000000);
    long us = (long)((ns % 1000000000) / 1000);
    if (ns < 0) {
        s = 0;
        us = 0;
    }
    struct tm tm;
    gmtime_r(&s, &tm);
    char date[24];
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, 40, "%.20s.%06ldZ", date, us);
}

int lease_kube_parse_time(const char *s, int64_t *ns)
{
    return gp_rfc3339_parse(s, ns);
}

/* ------------------------------------------------------------- JSON --- */

int lease_kube_decode(const json_t *lease, gp_lease_rec *out, gp_err *err)
{
    memset(out, 0, sizeof *out);
    const json_t *md = json_object_get(lease, "metadata");
    const char *rv = json_string_value(json_object_get(md, "resourceVersion"));
    if (!json_is_object(lease) || !rv || !*rv || strlen(rv) >= sizeof out->rv)
        return gp_fail(err, "Lease without a usable metadata.resourceVersion");
    gp_strlcpy(out->rv, rv, sizeof out->rv);
    const json_t *spec = json_object_get(lease, "spec");
    if (spec && !json_is_object(spec))
        return gp_fail(err, "Lease spec is not an object");
    const json_t *h = json_object_get(spec, "holderIdentity");
    if (h && !json_is_null(h)) {
        if (!json_is_string(h) || json_string_length(h) >= sizeof out->holder)
            return gp_fail(err, "Lease spec.holderIdentity is not a string of at most %zu bytes",
                           sizeof out->holder - 1);
        gp_strlcpy(out->holder, json_string_value(h), sizeof out->holder);
    }
    const struct {
        const char *key;
        int *dst;
    } ints[] = {{"leaseDurationSeconds", &out->duration_s}, {"leaseTransitions", &out->transitions}};
    for (size_t i = 0; i < GP_ARRAY_LEN(ints); i++) {
        const json_t *v = json_object_get(spec, ints[i].key);
        if (!v || json_is_null(v))
            continue;
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 1000000000)
            return gp_fail(err, "Lease spec.%s is not a small non-negative integer", ints[i].key);
        *ints[i].dst = (int)json_integer_value(v);
    }
    const struct {
        const char *key;
        int64_t *dst;
    } times[] = {{"acquireTime", &out->acquire_ns}, {"renewTime", &out->renew_ns}};
    for (size_t i = 0; i < GP_ARRAY_LEN(times); i++) {
        const json_t *v = json_object_get(spec, times[i].key);
        if (!v || json_is_null(v))
            continue;
        if (lease_kube_parse_time(json_string_value(v), times[i].dst))
            return gp_fail(err, "Lease spec.%s is not an RFC 3339 time", times[i].key);
    }
    return 0;
}

json_t *lease_kube_encode(const gp_lease_rec *rec, const char *ns, const char *name)
{
    json_t *md = json_pack("{s:s,s:s}", "name", name, "namespace", ns);
    if (rec->rv[0])
        json_object_set_new(md, "resourceVersion", json_string(rec->rv));
    json_t *spec = json_pack("{s:s,s:i,s:i}", "holderIdentity", rec->holder, "leaseDurationSeconds",
                             rec->duration_s, "leaseTransitions", rec->transitions);
    char t[40];
    if (rec->acquire_ns) {
        lease_kube_format_time(rec->acquire_ns, t);
        json_object_set_new(spec, "acquireTime", json_string(t));
    }
    if (rec->renew_ns) {
        lease_kube_format_time(rec->renew_ns, t);
        json_object_set_new(spec, "renewTime", json_string(t));
    }
    return json_pack("{s:s,s:s,s:o,s:o}", "apiVersion", "coordination.k8s.io/v1", "kind", "Lease",
                     "metadata", md, "spec", spec);
}

/* ------------------------------------------------------------ store --- */

gp_lease_kube *lease_kube_new(gp_kube *k, const char *ns, const char *name, double timeout_s)
{
    gp_lease_kube *s = xcalloc(1, sizeof *s);
    s->k = k;
    s->ns = xstrdup(ns);
    s->name = xstrdup(name);
    char *ens = kube_escape(ns), *ename = kube_escape(name);
    s->coll_path = xasprintf(LEASE_API "%s/leases", ens);
    s->obj_path = xasprintf(LEASE_API "%s/leases/%s", ens, ename);
    free(ens);
    free(ename);
    s->timeout_s = timeout_s;
    s->cancel = kube_cancel_new();
    return s;
}

void lease_kube_free(gp_lease_kube *s)
{
    if (!s)
        return;
    kube_cancel_free(s->cancel);
    free(s->ns);
    free(s->name);
    free(s->coll_path);
    free(s->obj_path);
    free(s);
}

/* One call; 2xx bodies are decoded into rec. conflict_status: the status
 * that means GP_LEASE_CONFLICT (409), 404 means GP_LEASE_NOT_FOUND. */
static gp_lease_rc call(gp_lease_kube *s, const char *method, const char *path, gp_lease_rec *rec,
                        gp_kube_cancel *cancel, gp_err *err)
{
    gp_lease_rc rc = GP_LEASE_ERROR;
    char *body = NULL;
    json_t *obj = NULL;
    gp_kube_resp resp;
    if (strcmp(method, "GET") != 0) {
        json_t *lease = lease_kube_encode(rec, s->ns, s->name);
        body = json_dumps(lease, JSON_COMPACT);
        json_decref(lease);
    }
    char what[600];
    snprintf(what, sizeof what, "%s lease %s/%s", method, s->ns, s->name);
    long st = kube_call(s->k, method, path, body ? "application/json" : NULL, body, s->timeout_s,
                        cancel, what, &resp, err);
    if (st == 0) {
        goto out;
    } else if (st == 404 && strcmp(method, "GET") == 0) {
        rc = GP_LEASE_NOT_FOUND;
    } else if (st == 409) {
        rc = GP_LEASE_CONFLICT;
    } else if (st / 100 != 2) {
        /* err says what */
    } else {
        json_error_t je;
        obj = json_loadb(resp.body.data, resp.body.len, 0, &je);
        if (!obj)
            gp_fail(err, "%s lease %s/%s: bad JSON: %s", method, s->ns, s->name, je.text);
        else if (lease_kube_decode(obj, rec, err) == 0)
            rc = GP_LEASE_OK;
    }
out:
    json_decref(obj);
    kube_resp_free(&resp);
    free(body);
    return rc;
}

static gp_lease_rc st_get(void *ud, gp_lease_rec *out, gp_err *err)
{
    gp_lease_kube *s = ud;
    return call(s, "GET", s->obj_path, out, s->cancel, err);
}

static gp_lease_rc st_create(void *ud, gp_lease_rec *rec, gp_err *err)
{
    gp_lease_kube *s = ud;
    rec->rv[0] = '\0';
    return call(s, "POST", s->coll_path, rec, s->cancel, err);
}

static gp_lease_rc st_update(void *ud, gp_lease_rec *rec, gp_err *err)
{
    gp_lease_kube *s = ud;
    /* giving the lease back must work after interrupt (shutdown) */
    return call(s, "PUT", s->obj_path, rec, rec->holder[0] ? s->cancel : NULL, err);
}

static void st_interrupt(void *ud)
{
    gp_lease_kube *s = ud;
    kube_cancel_fire(s->cancel);
}

gp_lease_store lease_kube_store(gp_lease_kube *s)
{
    gp_lease_store st = {s, st_get, st_create, st_update, st_interrupt};
    return st;
}
