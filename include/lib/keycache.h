/* keycache.h -- a fixed-size, thread-safe cache from 64-bit keys to a double.
 *
 * Four-way set-associative: a key has a set of four slots (one cache line),
 * and a new key takes the place of the one used least recently. Meant for results that are pure
 * functions of what the key fingerprints (the caller makes the key; a key of
 * 0 is never stored), so a lost entry only costs the recomputation. A lookup
 * takes no lock (a slot caught while it is rewritten reads as a miss); a
 * store takes the lock of its set's stripe.
 *
 *   gp_keycache *c = keycache_new(1u << 17);
 *   double v;
 *   if (!keycache_get(c, key, &v)) {
 *       v = compute();
 *       keycache_put(c, key, v);
 *   }
 *   keycache_free(c); */
#ifndef GP_KEYCACHE_H
#define GP_KEYCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct gp_keycache gp_keycache;

/* slots: rounded up to a power of two (at least 64). The table is zeroed
 * memory that the kernel maps in only as slots are used. */
gp_keycache *keycache_new(size_t slots);
void keycache_free(gp_keycache *c);   /* accepts NULL */

/* True and *value when key is cached, the lookup counted. Thread-safe; c may
 * be NULL (a miss). */
bool keycache_get(gp_keycache *c, uint64_t key, double *value);
/* The same lookup, not counted: a caller looking up many keys counts its
 * hits and misses itself and adds them with keycache_tally once per batch. */
bool keycache_lookup(gp_keycache *c, uint64_t key, double *value);
void keycache_tally(gp_keycache *c, unsigned long hits, unsigned long misses);
/* Stores (or replaces) key's value; key 0 is ignored. Thread-safe; c may be NULL. */
void keycache_put(gp_keycache *c, uint64_t key, double value);

/* Lookups so far. */
void keycache_stats(gp_keycache *c, unsigned long *hits, unsigned long *misses);

#endif
