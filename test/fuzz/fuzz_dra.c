/* fuzz_dra.c -- libFuzzer harness for the DRA decoders: the input, as JSON, through
 * dra_slice_decode (the default driver table), dra_class_decode, dra_claim_decode and
 * dra_pod_claims. Each must return 0, or -1 with a message and its output zeroed; what
 * decodes must stay within the header's bounds, with terminated strings; freeing twice
 * (after success or failure) must be harmless. Leaks show under ASan. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/dra.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void need(bool ok)
{
    if (!ok)
        abort();
}

static void terminated(const char *s, size_t size)
{
    need(memchr(s, '\0', size) != NULL);
}
#define TERM(field) terminated((field), sizeof(field))

static bool zero(const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i])
            return false;
    return true;
}

static void check_counters(const gp_dra_counter *c, int n, int max)
{
    need(n >= 0 && n <= max);
    for (int i = 0; i < n; i++) {
        TERM(c[i].name);
        need(c[i].value >= 0);
    }
}

static void check_set(const gp_dra_counter_set *cs)
{
    TERM(cs->name);
    check_counters(cs->c, cs->n, GP_DRA_COUNTERS_MAX);
}

static void slice(const json_t *j, const gp_dra_drivers *t)
{
    gp_dra_slice s;
    gp_err err = {{0}};
    if (dra_slice_decode(j, t, &s, &err)) {
        need(err.msg[0] && zero(&s, sizeof s));
        dra_slice_free(&s);
        return;
    }
    TERM(s.name);
    TERM(s.uid);
    TERM(s.rv);
    TERM(s.driver);
    TERM(s.pool);
    TERM(s.node);
    need(s.name[0] && s.uid[0] && s.driver[0]);
    need(s.ndevices >= 0 && s.ndevices <= GP_DRA_DEVICES_MAX && (s.ndevices == 0) == !s.devices);
    need(s.nshared >= 0 && s.nshared <= GP_DRA_COUNTER_SETS_MAX && (s.nshared == 0) == !s.shared);
    for (int i = 0; i < s.ndevices; i++) {
        const gp_dra_device *d = &s.devices[i];
        TERM(d->name);
        TERM(d->uuid);
        TERM(d->model);
        TERM(d->node);
        need(d->name[0]);
        need(d->mem_mib >= 0 && d->core >= 0 && d->core <= GP_CORE_FULL);
        need(d->nvalues >= 0 && d->nvalues <= GP_DRA_VALUES_MAX);
        for (int k = 1; k < d->nvalues; k++)
            need(d->mem_values_mib[k - 1] <= d->mem_values_mib[k]);
        need(d->ncons >= 0 && d->ncons <= GP_DRA_COUNTER_SETS_MAX && (d->ncons == 0) == !d->cons);
        for (int k = 0; k < d->ncons; k++)
            check_set(&d->cons[k]);
    }
    for (int i = 0; i < s.nshared; i++)
        check_set(&s.shared[i]);
    dra_slice_free(&s);
    need(zero(&s, sizeof s));
    dra_slice_free(&s);
}

static void device_class(const json_t *j)
{
    gp_dra_class k;
    gp_err err = {{0}};
    if (dra_class_decode(j, &k, &err)) {
        need(err.msg[0] && zero(&k, sizeof k));
        return;
    }
    TERM(k.name);
    TERM(k.driver);
    TERM(k.attr);
    TERM(k.attr_value);
    TERM(k.extended_resource);
    need(k.name[0]);
    need(k.attr[0] || !k.attr_value[0]);   /* a value only with its attribute */
}

static void claim(const json_t *j)
{
    gp_dra_claim c;
    gp_err err = {{0}};
    if (dra_claim_decode(j, &c, &err)) {
        need(err.msg[0] && zero(&c, sizeof c));
        dra_claim_free(&c);
        return;
    }
    TERM(c.uid);
    TERM(c.ns);
    TERM(c.name);
    TERM(c.rv);
    TERM(c.node);
    need(c.name[0] && c.uid[0] && c.ns[0]);
    need(c.nreq >= 0 && c.nreq <= GP_DRA_REQUESTS_MAX && (c.nreq == 0) == !c.req);
    for (int i = 0; i < c.nreq; i++) {
        const gp_dra_request *q = &c.req[i];
        TERM(q->name);
        TERM(q->cls);
        need(q->name[0] && q->cls[0]);
        need(q->all ? q->count == 0 : q->count >= 1 && q->count <= GP_DRA_RESULTS_MAX);
        need(q->nalts >= 0 && q->nalts <= GP_DRA_ALTS_MAX);
        check_counters(q->cap, q->ncap, GP_DRA_CAPS_MAX);
    }
    need(c.nres >= 0 && c.nres <= GP_DRA_RESULTS_MAX && (c.nres == 0) == !c.res);
    need(c.allocated || (c.nres == 0 && !c.node[0]));
    for (int i = 0; i < c.nres; i++) {
        const gp_dra_result *r = &c.res[i];
        TERM(r->request);
        TERM(r->driver);
        TERM(r->pool);
        TERM(r->device);
        TERM(r->share_id);
        need(r->request[0] && r->driver[0] && r->pool[0] && r->device[0]);
        check_counters(r->cap, r->ncap, GP_DRA_CAPS_MAX);
    }
    need(c.nreserved >= 0 && c.nreserved <= GP_DRA_RESERVED_MAX);
    need(c.nreserved_pods >= 0 && c.nreserved_pods <= c.nreserved);
    need((c.nreserved_pods == 0) == !c.reserved);
    for (int i = 0; i < c.nreserved_pods; i++) {
        TERM(c.reserved[i].uid);
        TERM(c.reserved[i].name);
    }
    dra_claim_free(&c);
    need(zero(&c, sizeof c));
    dra_claim_free(&c);
}

static void pod(const json_t *j)
{
    gp_dra_pod_claims pc;
    gp_err err = {{0}};
    if (dra_pod_claims(j, &pc, &err)) {
        need(err.msg[0] && zero(&pc, sizeof pc));
        return;
    }
    need(pc.n >= 0 && pc.n <= GP_DRA_POD_CLAIMS_MAX);
    for (int i = 0; i < pc.n; i++) {
        TERM(pc.c[i].name);
        TERM(pc.c[i].claim);
        need(pc.c[i].name[0] && (pc.c[i].from_template || pc.c[i].claim[0]));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    if (!j)
        return 0;
    static gp_dra_drivers t;
    if (!t.n)
        dra_default_drivers(&t);
    slice(j, &t);
    device_class(j);
    claim(j);
    pod(j);
    json_decref(j);
    return 0;
}
