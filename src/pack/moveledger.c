/* moveledger.c -- recent moves per namespace and per controller (moveledger.h). */
#include "pack/moveledger.h"

#include <stdlib.h>
#include <string.h>

#include "lib/strmap.h"
#include "lib/util.h"

#define HOUR_S 3600.0

typedef struct ns_moves {
    double *t;                    /* move times, oldest first */
    size_t n, cap;
} ns_moves;

struct gp_ledger {
    strmap *ns;                   /* namespace -> ns_moves */
    strmap *owners;               /* controller uid -> double (last move) */
};

gp_ledger *ledger_new(void)
{
    gp_ledger *l = xcalloc(1, sizeof *l);
    l->ns = strmap_new();
    l->owners = strmap_new();
    return l;
}

void ledger_free(gp_ledger *l)
{
    if (!l)
        return;
    size_t it = 0;
    ns_moves *m;
    while ((m = strmap_next(l->ns, &it, NULL))) {
        free(m->t);
        free(m);
    }
    it = 0;
    void *v;
    while ((v = strmap_next(l->owners, &it, NULL)))
        free(v);
    strmap_free(l->ns);
    strmap_free(l->owners);
    free(l);
}

/* Drops the times older than an hour before now. */
static void trim(ns_moves *m, double now)
{
    size_t k = 0;
    while (k < m->n && m->t[k] <= now - HOUR_S)
        k++;
    if (k) {
        memmove(m->t, m->t + k, (m->n - k) * sizeof *m->t);
        m->n -= k;
    }
}

void ledger_record(gp_ledger *l, const char *ns, const char *owner, double now)
{
    ns_moves *m = ns ? strmap_get(l->ns, ns) : NULL;
    if (ns && !m) {
        m = xcalloc(1, sizeof *m);
        strmap_put(l->ns, ns, m);
    }
    if (m) {
        trim(m, now);
        if (m->n == LEDGER_NS_MAX) {   /* keep the newest */
            memmove(m->t, m->t + 1, (m->n - 1) * sizeof *m->t);
            m->n--;
        }
        if (m->n == m->cap) {
            m->cap = m->cap ? m->cap * 2 : 8;
            m->t = xrealloc(m->t, m->cap * sizeof *m->t);
        }
        m->t[m->n++] = now;
    }
    if (owner && *owner) {
        double *t = strmap_get(l->owners, owner);
        if (!t) {
            t = xmalloc(sizeof *t);
            strmap_put(l->owners, owner, t);
        }
        *t = now;
    }
}

int ledger_left(gp_ledger *l, const char *ns, int per_hour, double now)
{
    ns_moves *m = strmap_get(l->ns, ns);
    if (m)
        trim(m, now);
    long left = (long)per_hour - (long)(m ? m->n : 0);
    return left > 0 ? (int)left : 0;
}

bool ledger_cooling(const gp_ledger *l, const char *owner, double cooldown_s, double now)
{
    const double *t = owner && *owner ? strmap_get(l->owners, owner) : NULL;
    return t && now - *t < cooldown_s;
}

size_t ledger_last_hour(gp_ledger *l, double now)
{
    size_t n = 0, it = 0;
    ns_moves *m;
    while ((m = strmap_next(l->ns, &it, NULL))) {
        trim(m, now);
        n += m->n;
    }
    return n;
}

/* Keys of m whose value `old` says is done with (owned; *n of them). */
static char **stale_keys(strmap *m, bool (*old)(void *v, double now, double keep_s), double now,
                         double keep_s, size_t *n)
{
    char **keys = xmalloc((strmap_count(m) + 1) * sizeof *keys);
    size_t it = 0, k = 0;
    const char *key;
    void *v;
    while ((v = strmap_next(m, &it, &key)))
        if (old(v, now, keep_s))
            keys[k++] = xstrdup(key);
    *n = k;
    return keys;
}

static bool owner_old(void *v, double now, double keep_s)
{
    return now - *(double *)v >= keep_s;
}

static bool ns_old(void *v, double now, double keep_s)
{
    ns_moves *m = v;
    (void)keep_s;
    trim(m, now);
    return m->n == 0;
}

void ledger_prune(gp_ledger *l, double now, double keep_s)
{
    if (keep_s < HOUR_S)
        keep_s = HOUR_S;
    size_t n;
    char **keys = stale_keys(l->owners, owner_old, now, keep_s, &n);   /* deleted after the walk */
    for (size_t i = 0; i < n; i++) {
        free(strmap_del(l->owners, keys[i]));
        free(keys[i]);
    }
    free(keys);
    keys = stale_keys(l->ns, ns_old, now, keep_s, &n);
    for (size_t i = 0; i < n; i++) {
        ns_moves *m = strmap_del(l->ns, keys[i]);
        free(m->t);
        free(m);
        free(keys[i]);
    }
    free(keys);
}
