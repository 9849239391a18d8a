/* modelref.c -- the process's table of GPU model names (modelref.h).
 *
 * Names sit in a static array, found through an open-addressing index of
 * their hashes: interning happens when a node's inventory is decoded, a few
 * times per node event, and reading a name is an array load. */
#include "model/modelref.h"

#include "lib/log.h"
#include "lib/util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#define INDEX_SLOTS (2 * GP_MODEL_REFS_MAX)   /* a power of two, at most half full */

static char names[GP_MODEL_REFS_MAX][GP_MODEL_MAX];   /* [0] stays "" */
static _Atomic int nnames = 1;                        /* names[1 .. nnames-1] are set */
static gp_model_ref slots[INDEX_SLOTS];               /* 0: empty */
static long refused;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static uint32_t hash_name(const char *s, size_t len)
{
    uint32_t h = 2166136261u;   /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

gp_model_ref gp_model_intern(const char *name)
{
    if (!name || !name[0])
        return 0;
    size_t len = strnlen(name, GP_MODEL_MAX - 1);
    uint32_t at = hash_name(name, len) & (INDEX_SLOTS - 1);
    gp_model_ref ref = 0;
    bool full = false;
    pthread_mutex_lock(&mu);
    for (;; at = (at + 1) & (INDEX_SLOTS - 1)) {
        gp_model_ref r = slots[at];
        if (!r) {
            int n = atomic_load_explicit(&nnames, memory_order_relaxed);
            if (n == GP_MODEL_REFS_MAX) {
                full = refused++ == 0;
                break;
            }
            memcpy(names[n], name, len);
            names[n][len] = '\0';
            ref = (gp_model_ref)n;
            slots[at] = ref;
            /* the name is written before a reader can learn its reference */
            atomic_store_explicit(&nnames, n + 1, memory_order_release);
            break;
        }
        if (strncmp(names[r], name, len) == 0 && names[r][len] == '\0') {
            ref = r;
            break;
        }
    }
    pthread_mutex_unlock(&mu);
    if (full)
        LOG_WARN("GPU models: %d distinct names kept, no room for \"%.*s\": GPUs of this and later new "
               "models count as of unknown model", GP_MODEL_REFS_MAX - 1, (int)len, name);
    return ref;
}

const char *gp_model_name(gp_model_ref ref)
{
    return ref < atomic_load_explicit(&nnames, memory_order_acquire) ? names[ref] : names[0];
}

int gp_model_refs_used(void)
{
    return atomic_load(&nnames) - 1;
}

long gp_model_refs_refused(void)
{
    pthread_mutex_lock(&mu);
    long n = refused;
    pthread_mutex_unlock(&mu);
    return n;
}
