/* strmap.h -- string -> pointer hash map (open addressing). Not thread-safe:
 * callers lock. Keys are copied; values are borrowed (the map never frees them). */
#ifndef GP_STRMAP_H
#define GP_STRMAP_H

#include <stdbool.h>
#include <stddef.h>

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
