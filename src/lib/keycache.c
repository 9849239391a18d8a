/* keycache.c -- a fixed-size, thread-safe cache from 64-bit keys to a double. */
#include "lib/keycache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"

#define KEYCACHE_LOCKS 64

/* A slot holds its key folded with its value's bits: a reader takes no lock,
 * loads both words and recomputes the key. A slot being rewritten while it
 * is read gives a key that does not match (a miss, recomputed), unless the
 * torn pair happens to fold to the key looked up: about 2^-64, the odds the
 * callers' 64-bit fingerprints already take. Empty: both 0, which unfolds to
 * key 0, never stored. */
typedef struct slot {
    _Atomic uint64_t check;   /* key ^ bits */
    _Atomic uint64_t bits;    /* the value's bits */
} slot;

/* Four ways: a set is 64 bytes, one cache line. With two, keys that meet in
 * a set of their own thrashed: 75,000 (pod shape, node state) keys in 262,144
 * slots missed 2.4 % of their lookups round after round. */
#define WAYS 4

/* Writers to a set take its stripe's lock, each on a cache line of its own. */
typedef struct stripe {
    _Alignas(64) pthread_mutex_t mu;
} stripe;

/* The lookups counted: by keycache_get one at a time, by a caller that looks
 * up thousands (a 5,000-node filter on two threads) once per batch. A count
 * per lookup in memory both threads write passed its cache line from core to
 * core at every lookup: a quarter of a 5,000-node filter's time when the two
 * cores were far apart. */
struct gp_keycache {
    slot *s;          /* sets of WAYS: s[WAYS i] the most recently used ... the least */
    size_t mask;      /* over sets */
    stripe *locks;    /* KEYCACHE_LOCKS, set i under locks[i % KEYCACHE_LOCKS] */
    _Alignas(64) _Atomic unsigned long hits;
    _Atomic unsigned long misses;
};

static uint64_t bits_of(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

static double value_of(uint64_t b)
{
    double v;
    memcpy(&v, &b, sizeof v);
    return v;
}

/* The key a slot holds now (0: empty, or caught half rewritten and unmatched). */
static uint64_t slot_key(slot *sl, uint64_t *bits)
{
    *bits = atomic_load_explicit(&sl->bits, memory_order_relaxed);
    return atomic_load_explicit(&sl->check, memory_order_relaxed) ^ *bits;
}

static void slot_set(slot *sl, uint64_t key, uint64_t bits)
{
    atomic_store_explicit(&sl->bits, bits, memory_order_relaxed);
    atomic_store_explicit(&sl->check, key ^ bits, memory_order_relaxed);
}

/* Under the stripe's lock: slot w's entry goes to the front of its set, the
 * ones before it back by one (the last one, w = WAYS - 1, is dropped when a
 * new key comes in). */
static void move_front(slot *set, int w, uint64_t key, uint64_t bits)
{
    for (int k = w; k > 0; k--) {
        uint64_t b;
        uint64_t kk = slot_key(&set[k - 1], &b);
        slot_set(&set[k], kk, b);
    }
    slot_set(&set[0], key, bits);
}

gp_keycache *keycache_new(size_t slots)
{
    size_t n = 64;
    while (n < slots && n < ((size_t)1 << 40))
        n <<= 1;
    gp_keycache *c = aligned_alloc(_Alignof(gp_keycache), sizeof *c);   /* the counters' line */
    if (!c)
        abort();   /* as xmalloc does */
    memset(c, 0, sizeof *c);
    atomic_init(&c->hits, 0);
    atomic_init(&c->misses, 0);
    c->s = xcalloc_resident(n, sizeof *c->s);   /* keys land on any page: util.h */
    c->mask = n / WAYS - 1;
    c->locks = aligned_alloc(_Alignof(stripe), KEYCACHE_LOCKS * sizeof *c->locks);
    if (!c->locks)
        abort();   /* as xmalloc does */
    for (int i = 0; i < KEYCACHE_LOCKS; i++) {
        pthread_mutex_init(&c->locks[i].mu, NULL);
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

bool keycache_lookup(gp_keycache *c, uint64_t key, double *value)
{
    if (!c || key == 0)
        return false;
    size_t i = set_of(c, key);
    slot *set = &c->s[WAYS * i];
    for (int w = 0; w < WAYS; w++) {
        uint64_t bits;
        if (slot_key(&set[w], &bits) != key)
            continue;
        *value = value_of(bits);
        /* used again: to the front, if no writer holds the set (a hit
         * never waits; a busy set only keeps its order this time) */
        stripe *st = &c->locks[i % KEYCACHE_LOCKS];
        if (w > 0 && pthread_mutex_trylock(&st->mu) == 0) {
            uint64_t b;
            if (slot_key(&set[w], &b) == key)
                move_front(set, w, key, b);
            pthread_mutex_unlock(&st->mu);
        }
        return true;
    }
    return false;
}

void keycache_tally(gp_keycache *c, unsigned long hits, unsigned long misses)
{
    if (!c)
        return;
    if (hits)
        atomic_fetch_add_explicit(&c->hits, hits, memory_order_relaxed);
    if (misses)
        atomic_fetch_add_explicit(&c->misses, misses, memory_order_relaxed);
}

bool keycache_get(gp_keycache *c, uint64_t key, double *value)
{
    bool hit = keycache_lookup(c, key, value);
    if (c && key)
        keycache_tally(c, hit, !hit);
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
    uint64_t b;
    while (w < WAYS - 1 && slot_key(&set[w], &b) != key)   /* its own slot, or the last one goes */
        w++;
    move_front(set, w, key, bits_of(value));
    pthread_mutex_unlock(&st->mu);
}

void keycache_stats(gp_keycache *c, unsigned long *hits, unsigned long *misses)
{
    *hits = c ? atomic_load_explicit(&c->hits, memory_order_relaxed) : 0;
    *misses = c ? atomic_load_explicit(&c->misses, memory_order_relaxed) : 0;
}
