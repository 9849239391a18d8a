/* strmap.h -- string -> pointer hash map (open addressing). Not thread-safe:
 * callers lock. Keys are copied; values are borrowed (the map never frees them). */
#ifndef GP_STRMAP_H
#define GP_STRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct strmap strmap;

strmap *strmap_new(void);
/* A map whose keys live in its values (a name field of the value): keys are
 * neither copied nor freed, and must stay valid and unchanged while their
 * entry is in the map. strmap_put on a present key takes the new key pointer
 * with the new value. A lookup then reads the key where the value is, so a
 * hit costs one cache line less than with a separate copy. */
strmap *strmap_new_borrowing(void);
void strmap_free(strmap *m);                    /* accepts NULL; values untouched */
void *strmap_get(const strmap *m, const char *key);
/* A lookup in steps, for a loop that looks up many keys: on a loaded machine
 * each lookup waits for memory (the key's slot, then the key), and a loop can
 * start those waits for a later key while it works on this one. The hash is
 * strmap_get's; strmap_prefetch asks for the key's slot, strmap_prefetch_key
 * (once the slot has come) for the key it holds -- the value's own line in a
 * borrowing map. Hints only: neither changes a result. */
uint64_t strmap_hash(const char *key);
void strmap_prefetch(const strmap *m, uint64_t h);
void strmap_prefetch_key(const strmap *m, uint64_t h);
void *strmap_get_hashed(const strmap *m, const char *key, uint64_t h);
/* Sets key to val (val must not be NULL); returns the previous value or NULL. */
void *strmap_put(strmap *m, const char *key, void *val);
/* Removes key; returns its value or NULL. */
void *strmap_del(strmap *m, const char *key);
size_t strmap_count(const strmap *m);
/* Iteration: *iter starts at 0; returns the next value (and key via *key if
 * non-NULL) or NULL at the end. Do not modify the map while iterating. */
void *strmap_next(const strmap *m, size_t *iter, const char **key);
/* Removes every entry for which drop(key, val, ud) returns true; drop may free
 * val then (the key is freed after it returns). Returns how many went. */
size_t strmap_drop_if(strmap *m, bool (*drop)(const char *key, void *val, void *ud), void *ud);

#endif
