/* apiversion.c -- the API server's /version and the facts gpupack derives from it. */
#include "kube/apiversion.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- facts --- */

/* [from, to) in (major, minor, patch); a zero `to` has no end. */
typedef struct vrange {
    int from[3], to[3];
} vrange;

#define APIV_RANGES_MAX 3

static const struct fact {
    const char *name;
    bool unknown;                   /* the value for a server whose version is unknown */
    size_t n;
    vrange holds[APIV_RANGES_MAX];  /* the fact holds inside any of these */
} facts[GP_FACT_COUNT] = {
    /* kube-apiserver 1.25.0 began wiping a created object's metadata.uid before the
     * pods/binding storage saw it (kubernetes PR 110646), so the uid precondition of
     * BindingREST went unused; restored by PR 116550 in 1.27.0 and PR 116763 in
     * 1.26.4. Whether (and in which patch) 1.25 got the fix is not established here:
     * all of 1.25 counts as wiping, which only costs bind a GET (binder.c). Unknown:
     * assumed wiped, the safe side. */
    [GP_FACT_BINDING_UID] = {"binding_uid", false, 2,
                             {{{0, 0, 0}, {1, 25, 0}}, {{1, 26, 4}, {0, 0, 0}}}},
    /* kube-scheduler before 1.29.0 puts a pod whose attempt ended in an error (no
     * failed plugin recorded, e.g. an extender it could not reach) into its
     * unschedulable pool, where it waits for a cluster event or the 5-minute flush;
     * 1.29.0 (PR 119105) sends such pods through backoff instead. kube-scheduler may
     * run one minor version behind kube-apiserver, so servers below 1.30 are nudged.
     * Unknown: no nudges (they need the pods patch grant, and /version is public:
     * an unknown version means no API server to patch through anyway). */
    [GP_FACT_REQUEUE_NUDGES] = {"requeue_nudges", false, 1, {{{0, 0, 0}, {1, 30, 0}}}},
    /* kube-scheduler's preCheckForNode (eventhandlers.go) filters the parked pods a
     * node add/update moves with noderesources.Fits against the node's allocatable,
     * without NodeResourcesFit's ignoredResources(Groups); gpupack's resources are
     * never allocatable, so GPU pods are never moved by node events. The pre-check is
     * skipped when the SchedulerQueueingHints gate is on: beta and on by default from
     * 1.32, GA (locked on) from 1.34. One minor of skew again: servers below 1.33.
     * Unknown: no nudges (as above). */
    [GP_FACT_NODE_PRECHECK] = {"node_precheck", false, 1, {{{0, 0, 0}, {1, 33, 0}}}},
};

static int vcmp(const int a[3], const int b[3])
{
    for (int i = 0; i < 3; i++)
        if (a[i] != b[i])
            return a[i] < b[i] ? -1 : 1;
    return 0;
}

bool apiversion_has(const gp_apiversion *v, gp_api_fact f)
{
    if ((unsigned)f >= GP_FACT_COUNT)
        return false;
    const struct fact *ft = &facts[f];
    if (!v || !v->known)
        return ft->unknown;
    const int at[3] = {v->major, v->minor, v->patch};
    static const int open_end[3] = {0, 0, 0};
    for (size_t i = 0; i < ft->n; i++) {
        const vrange *r = &ft->holds[i];
        if (vcmp(at, r->from) >= 0 && (vcmp(r->to, open_end) == 0 || vcmp(at, r->to) < 0))
            return true;
    }
    return false;
}

const char *apiversion_fact_name(gp_api_fact f)
{
    return (unsigned)f < GP_FACT_COUNT ? facts[f].name : "?";
}

void apiversion_describe(const gp_apiversion *v, char *out, size_t len)
{
    if (!v || !v->known)
        snprintf(out, len, "unknown");
    else if (v->git[0])
        snprintf(out, len, "%s", v->git);
    else
        snprintf(out, len, "v%d.%d (no gitVersion)", v->major, v->minor);
}

/* ------------------------------------------------------------ parsing --- */

#define APIV_NUM_MAX 9999   /* larger numbers are not a Kubernetes version */

/* Reads a decimal number at *p (advancing it); -1 when there is none or it is too large. */
static int number(const char **p)
{
    if (!isdigit((unsigned char)**p))
        return -1;
    long n = 0;
    while (isdigit((unsigned char)**p)) {
        n = n * 10 + (**p - '0');
        if (n > APIV_NUM_MAX)
            return -1;
        (*p)++;
    }
    return (int)n;
}

/* "v1.26.4", "v1.26.4+k3s1", "v1.27.3-gke.100" -> 1, 26, 4. 0 or -1. */
static int parse_git(const char *s, int out[3])
{
    const char *p = s;
    if (*p == 'v')
        p++;
    for (int i = 0; i < 3; i++) {
        if (i > 0 && *p++ != '.')
            return -1;
        out[i] = number(&p);
        if (out[i] < 0)
            return -1;
    }
    /* what may follow: a pre-release or build suffix */
    return *p == '\0' || *p == '-' || *p == '+' ? 0 : -1;
}

/* major / minor fields: "1", "26", "26+" (some distributions add the '+'). */
static int parse_field(const char *s)
{
    const char *p = s;
    int n = number(&p);
    if (n < 0 || (*p && strcmp(p, "+") != 0))
        return -1;
    return n;
}

static void sanitise(const char *in, char *out, size_t len)
{
    size_t i = 0;
    for (; in[i] && i + 1 < len; i++)
        out[i] = isprint((unsigned char)in[i]) ? in[i] : '?';
    out[i] = '\0';
}

int apiversion_parse(const char *body, size_t len, gp_apiversion *out, gp_err *err)
{
    memset(out, 0, sizeof *out);
    if (len > GP_APIVERSION_BODY_MAX)
        return gp_fail(err, "/version: answer of %zu bytes, more than %d", len, GP_APIVERSION_BODY_MAX);
    json_error_t je;
    json_t *j = json_loadb(body, len, 0, &je);
    int rc = -1;
    if (!json_is_object(j)) {
        gp_fail(err, "/version: not a JSON object (%s)", j ? "another JSON value" : je.text);
        goto done;
    }
    const json_t *gv = json_object_get(j, "gitVersion");
    int at[3];
    char shown[64];
    if (json_is_string(gv)) {
        sanitise(json_string_value(gv), shown, sizeof shown);
        if (parse_git(json_string_value(gv), at) == 0) {
            gp_strlcpy(out->git, shown, sizeof out->git);
            out->major = at[0];
            out->minor = at[1];
            out->patch = at[2];
            out->known = true;
            rc = 0;
            goto done;
        }
    }
    /* no usable gitVersion: major and minor alone (patch unknown, taken as 0) */
    const char *ma = json_string_value(json_object_get(j, "major"));
    const char *mi = json_string_value(json_object_get(j, "minor"));
    int major = ma ? parse_field(ma) : -1, minor = mi ? parse_field(mi) : -1;
    if (major < 0 || minor < 0) {
        if (json_is_string(gv))
            gp_fail(err, "/version: gitVersion \"%s\" is not vMAJOR.MINOR.PATCH and major/minor "
                         "are unusable", shown);
        else
            gp_fail(err, "/version: no gitVersion, and major \"%.20s\" / minor \"%.20s\" are not "
                         "numbers", ma ? ma : "(absent)", mi ? mi : "(absent)");
        goto done;
    }
    out->major = major;
    out->minor = minor;
    out->known = true;
    rc = 0;
done:
    json_decref(j);
    return rc;
}

int apiversion_fetch(gp_kube *k, double timeout_s, gp_apiversion *out, gp_err *err)
{
    memset(out, 0, sizeof *out);
    gp_kube_resp resp;
    gp_err e;
    int rc = -1;
    if (kube_request(k, "GET", "/version", NULL, NULL, timeout_s, NULL, &resp, &e) < 0) {
        gp_fail(err, "GET /version: %s", e.msg);
    } else if (resp.status != 200) {
        char msg[200];
        kube_status_message(resp.body.data, resp.body.len, msg, sizeof msg);
        gp_fail(err, "GET /version: HTTP %ld: %s", resp.status, msg);
    } else {
        rc = apiversion_parse(resp.body.data ? resp.body.data : "", resp.body.len, out, err);
    }
    kube_resp_free(&resp);
    return rc;
}
