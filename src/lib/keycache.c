/* keycache.c -- a fixed-size, thread-safe cache from 64-bit keys to a double. */
#include "lib/keycache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "lib/util.h"

#define KEYCACHE_LOCKS 64

typedef struct slot {
    uint64_t key;   /* 0 = empty */
    double value;
} slot;

struct gp_keycache {
    slot *s;          /* sets of two: s[2i] the newer, s[2i + 1] the older */
    size_t mask;      /* over sets */
    pthread_mutex_t mu[KEYCACHE_LOCKS];
    atomic_ulong hits, misses;
};

gp_keycache *keycache_new(size_t slots)
{
    size_t n = 64;
    while (n < slots && n < ((size_t)1 << 40))
        n <<= 1;
    gp_keycache *c = xcalloc(1, sizeof *c);
    c->s = xcalloc_resident(n, sizeof *c->s);   /* keys land on any page: util.h */
    c->mask = n / 2 - 1;
    for (int i = 0; i < KEYCACHE_LOCKS; i++)
        pthread_mutex_init(&c->mu[i], NULL);
    return c;
}

void keycache_free(gp_keycache *c)
{
    if (!c)
        return;
    for (int i = 0; i < KEYCACHE_LOCKS; i++)
        pthread_mutex_destroy(&c->mu[i]);
    free(c->s);
    free(c);
}

/* The set of a key (callers' keys are well mixed). */
static size_t set_of(const gp_keycache *c, uint64_t key)
{
    return (size_t)(key >> 20 ^ key) & c->mask;
}

bool keycache_get(gp_keycache *c, uint64_t key, double *value)
{
    if (!c || key == 0)
        return false;
    size_t i = set_of(c, key);
    slot *set = &c->s[2 * i];
    pthread_mutex_t *mu = &c->mu[i % KEYCACHE_LOCKS];
    pthread_mutex_lock(mu);
    bool hit = false;
    if (set[0].key == key) {
        *value = set[0].value;
        hit = true;
    } else if (set[1].key == key) {
        *value = set[1].value;
        slot t = set[0];   /* the one used last goes first */
        set[0] = set[1];
        set[1] = t;
        hit = true;
    }
    pthread_mutex_unlock(mu);
    atomic_fetch_add(hit ? &c->hits : &c->misses, 1);
    return hit;
}

void keycache_put(gp_keycache *c, uint64_t key, double value)
{
    if (!c || key == 0)
        return;
    size_t i = set_of(c, key);
    slot *set = &c->s[2 * i];
    pthread_mutex_t *mu = &c->mu[i % KEYCACHE_LOCKS];
    pthread_mutex_lock(mu);
    if (set[0].key == key) {
        set[0].value = value;
    } else {
        if (set[1].key != key)
            set[1] = set[0];   /* the older of the two goes */
        set[0] = (slot){key, value};
    }
    pthread_mutex_unlock(mu);
}

void keycache_stats(gp_keycache *c, unsigned long *hits, unsigned long *misses)
{
    *hits = c ? atomic_load(&c->hits) : 0;
    *misses = c ? atomic_load(&c->misses) : 0;
}
