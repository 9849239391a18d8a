/* keycache.c -- a fixed-size, thread-safe cache from 64-bit keys to a double. */
#include "lib/keycache.h"

#include <pthread.h>
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

/* A lock and the lookups it saw, on a cache line of its own: two threads
 * looking up 5,000 nodes each for one filter no longer pass the line of one
 * shared counter (and of neighbouring locks) back and forth at every lookup. */
typedef struct stripe {
    _Alignas(64) pthread_mutex_t mu;
    unsigned long hits, misses;   /* under mu */
} stripe;

struct gp_keycache {
    slot *s;          /* sets of WAYS: s[WAYS i] the most recently used ... the least */
    size_t mask;      /* over sets */
    stripe *locks;    /* KEYCACHE_LOCKS, set i under locks[i % KEYCACHE_LOCKS] */
};

gp_keycache *keycache_new(size_t slots)
{
    size_t n = 64;
    while (n < slots && n < ((size_t)1 << 40))
        n <<= 1;
    gp_keycache *c = xcalloc(1, sizeof *c);
    c->s = xcalloc_resident(n, sizeof *c->s);   /* keys land on any page: util.h */
    c->mask = n / WAYS - 1;
    c->locks = aligned_alloc(_Alignof(stripe), KEYCACHE_LOCKS * sizeof *c->locks);
    if (!c->locks)
        abort();   /* as xmalloc does */
    for (int i = 0; i < KEYCACHE_LOCKS; i++) {
        pthread_mutex_init(&c->locks[i].mu, NULL);
        c->locks[i].hits = c->locks[i].misses = 0;
    }
    return c;
}

void keycache_free(gp_keycache *c)
{
    if (!c)
        return;
    for (int i = 0; i < KEYCACHE_LOCKS; i++)
        pthread_mutex_destroy(&c->locks[i].mu);
    free(c->locks);
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
    stripe *st = &c->locks[i % KEYCACHE_LOCKS];
    pthread_mutex_lock(&st->mu);
    bool hit = false;
    for (int w = 0; w < WAYS; w++) {
        if (set[w].key == key) {
            slot t = set[w];
            if (w > 0) {   /* it moves to the front, the ones before it back */
                memmove(&set[1], &set[0], (size_t)w * sizeof *set);
                set[0] = t;
            }
            *value = t.value;
            hit = true;
            break;
        }
    }
    if (hit)
        st->hits++;
    else
        st->misses++;
    pthread_mutex_unlock(&st->mu);
    return hit;
}

void keycache_put(gp_keycache *c, uint64_t key, double value)
{
    if (!c || key == 0)
        return;
    size_t i = set_of(c, key);
    slot *set = &c->s[WAYS * i];
    stripe *st = &c->locks[i % KEYCACHE_LOCKS];
    pthread_mutex_lock(&st->mu);
    int w = 0;
    while (w < WAYS - 1 && set[w].key != key)   /* its own slot, or the last one goes */
        w++;
    memmove(&set[1], &set[0], (size_t)w * sizeof *set);
    set[0] = (slot){key, value};
    pthread_mutex_unlock(&st->mu);
}

void keycache_stats(gp_keycache *c, unsigned long *hits, unsigned long *misses)
{
    *hits = *misses = 0;
    for (int i = 0; c && i < KEYCACHE_LOCKS; i++) {
        pthread_mutex_lock(&c->locks[i].mu);
        *hits += c->locks[i].hits;
        *misses += c->locks[i].misses;
        pthread_mutex_unlock(&c->locks[i].mu);
    }
}
