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
    slot *s;
    size_t mask;
    pthread_mutex_t mu[KEYCACHE_LOCKS];
    atomic_ulong hits, misses;
};

gp_keycache *keycache_new(size_t slots)
{
    size_t n = 64;
    while (n < slots && n < ((size_t)1 << 40))
        n <<= 1;
    gp_keycache *c = xcalloc(1, sizeof *c);
    c->s = xcalloc(n, sizeof *c->s);
    c->mask = n - 1;
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

/* The slot index: the key's high bits (callers' keys are well mixed). */
static size_t index_of(const gp_keycache *c, uint64_t key)
{
    return (size_t)(key >> 20 ^ key) & c->mask;
}

bool keycache_get(gp_keycache *c, uint64_t key, double *value)
{
    if (!c || key == 0)
        return false;
    size_t i = index_of(c, key);
    pthread_mutex_t *mu = &c->mu[i % KEYCACHE_LOCKS];
    pthread_mutex_lock(mu);
    bool hit = c->s[i].key == key;
    if (hit)
        *value = c->s[i].value;
    pthread_mutex_unlock(mu);
    atomic_fetch_add(hit ? &c->hits : &c->misses, 1);
    return hit;
}

void keycache_put(gp_keycache *c, uint64_t key, double value)
{
    if (!c || key == 0)
        return;
    size_t i = index_of(c, key);
    pthread_mutex_t *mu = &c->mu[i % KEYCACHE_LOCKS];
    pthread_mutex_lock(mu);
    c->s[i] = (slot){key, value};
    pthread_mutex_unlock(mu);
}

void keycache_stats(gp_keycache *c, unsigned long *hits, unsigned long *misses)
{
    *hits = c ? atomic_load(&c->hits) : 0;
    *misses = c ? atomic_load(&c->misses) : 0;
}
