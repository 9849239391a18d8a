/* keycache.c -- a fixed-size, thread-safe cache from 64-bit keys to a double. */
#include "lib/keycache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"

#define KEYCACHE_LOCKS 64

typedef struct slot {
    uint64_t key;   /* 0 = empty */
    double value;
} slot;

/* Four ways: a set is 64 bytes, one cache line. With two, keys that meet in
 * a set of their own thrashed: 75,000 (pod shape, node state) keys in 262,144
 * slots missed 2.4 % of their lookups round after round. */
#define WAYS 4

struct gp_keycache {
    slot *s;          /* sets of WAYS: s[WAYS i] the most recently used ... the least */
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
    c->mask = n / WAYS - 1;
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
    slot *set = &c->s[WAYS * i];
    pthread_mutex_t *mu = &c->mu[i % KEYCACHE_LOCKS];
    pthread_mutex_lock(mu);
    bool hit = false;
    for (int w = 0; w < WAYS; w++) {
        if (set[w].key == key) {
            slot t = set[w];   /* it moves to the front, the ones before it back */
            memmove(&set[1], &set[0], (size_t)w * sizeof *set);
            set[0] = t;
            *value = t.value;
            hit = true;
            break;
        }
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
    slot *set = &c->s[WAYS * i];
    pthread_mutex_t *mu = &c->mu[i % KEYCACHE_LOCKS];
    pthread_mutex_lock(mu);
    int w = 0;
    while (w < WAYS - 1 && set[w].key != key)   /* its own slot, or the last one goes */
        w++;
    memmove(&set[1], &set[0], (size_t)w * sizeof *set);
    set[0] = (slot){key, value};
    pthread_mutex_unlock(mu);
}

void keycache_stats(gp_keycache *c, unsigned long *hits, unsigned long *misses)
{
    *hits = c ? atomic_load(&c->hits) : 0;
    *misses = c ? atomic_load(&c->misses) : 0;
}
