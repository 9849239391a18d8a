/* strmap.c -- string -> pointer hash map (open addressing, linear probing, tombstones). */
#include "lib/strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"

typedef struct slot {
    char *key;       /* NULL = empty; TOMB = deleted */
    void *val;
    uint64_t hash;
} slot;

struct strmap {
    slot *slots;
    size_t cap;      /* power of two */
    size_t count;    /* live keys */
    size_t used;     /* live + tombstones */
    bool borrow;     /* keys belong to the values: never copied or freed */
};

static char tomb_marker;
#define TOMB (&tomb_marker)

static uint64_t hash_str(const char *s)
{
    return gp_fnv1a(GP_FNV_OFFSET, s, strlen(s));
}

strmap *strmap_new(void)
{
    strmap *m = xcalloc(1, sizeof *m);
    m->cap = 16;
    m->slots = xcalloc(m->cap, sizeof *m->slots);
    return m;
}

strmap *strmap_new_borrowing(void)
{
    strmap *m = strmap_new();
    m->borrow = true;
    return m;
}

static void key_free(const strmap *m, char *key)
{
    if (!m->borrow)
        free(key);
}

void strmap_free(strmap *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key && m->slots[i].key != TOMB)
            key_free(m, m->slots[i].key);
    free(m->slots);
    free(m);
}

static slot *find(const strmap *m, const char *key, uint64_t h)
{
    size_t mask = m->cap - 1;
    for (size_t i = h & mask, n = 0; n < m->cap; i = (i + 1) & mask, n++) {
        slot *s = &m->slots[i];
        if (!s->key)
            return NULL;
        if (s->key != TOMB && s->hash == h && strcmp(s->key, key) == 0)
            return s;
    }
    return NULL;
}

static void grow(strmap *m)
{
    size_t cap = m->cap;
    while ((m->count + 1) * 2 > cap)
        cap *= 2;
    if (cap == m->cap && m->used * 4 < m->cap * 3)
        return;
    slot *old = m->slots;
    size_t oldcap = m->cap;
    m->slots = xcalloc(cap, sizeof *m->slots);
    m->cap = cap;
    m->used = m->count;
    for (size_t i = 0; i < oldcap; i++) {
        if (!old[i].key || old[i].key == TOMB)
            continue;
        size_t j = old[i].hash & (cap - 1);
        while (m->slots[j].key)
            j = (j + 1) & (cap - 1);
        m->slots[j] = old[i];
    }
    free(old);
}

void *strmap_get(const strmap *m, const char *key)
{
    slot *s = find(m, key, hash_str(key));
    return s ? s->val : NULL;
}

uint64_t strmap_hash(const char *key)
{
    return hash_str(key);
}

void *strmap_get_hashed(const strmap *m, const char *key, uint64_t h)
{
    slot *s = find(m, key, h);
    return s ? s->val : NULL;
}

void strmap_prefetch(const strmap *m, uint64_t h)
{
    __builtin_prefetch(&m->slots[h & (m->cap - 1)]);
}

void strmap_prefetch_key(const strmap *m, uint64_t h)
{
    const slot *s = &m->slots[h & (m->cap - 1)];
    if (s->key && s->key != TOMB && s->hash == h)
        __builtin_prefetch(s->key);
}

void *strmap_put(strmap *m, const char *key, void *val)
{
    uint64_t h = hash_str(key);
    slot *s = find(m, key, h);
    if (s) {
        void *prev = s->val;
        s->val = val;
        if (m->borrow)
            s->key = (char *)key;   /* the old key may go with the old value */
        return prev;
    }
    if ((m->used + 1) * 4 >= m->cap * 3)
        grow(m);
    size_t mask = m->cap - 1;
    size_t i = h & mask;
    while (m->slots[i].key && m->slots[i].key != TOMB)
        i = (i + 1) & mask;
    if (!m->slots[i].key)
        m->used++;
    m->slots[i] = (slot){m->borrow ? (char *)key : xstrdup(key), val, h};
    m->count++;
    return NULL;
}

void *strmap_del(strmap *m, const char *key)
{
    slot *s = find(m, key, hash_str(key));
    if (!s)
        return NULL;
    void *v = s->val;
    key_free(m, s->key);
    s->key = TOMB;
    s->val = NULL;
    m->count--;
    return v;
}

size_t strmap_count(const strmap *m)
{
    return m->count;
}

void *strmap_next(const strmap *m, size_t *iter, const char **key)
{
    while (*iter < m->cap) {
        slot *s = &m->slots[(*iter)++];
        if (s->key && s->key != TOMB) {
            if (key)
                *key = s->key;
            return s->val;
        }
    }
    return NULL;
}

size_t strmap_drop_if(strmap *m, bool (*drop)(const char *key, void *val, void *ud), void *ud)
{
    size_t n = 0;
    for (size_t i = 0; i < m->cap; i++) {
        slot *s = &m->slots[i];
        if (!s->key || s->key == TOMB || !drop(s->key, s->val, ud))
            continue;
        key_free(m, s->key);   /* a tombstone keeps the probe chains through it intact */
        s->key = TOMB;
        s->val = NULL;
        m->count--;
        n++;
    }
    return n;
}
