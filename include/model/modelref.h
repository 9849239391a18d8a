/* modelref.h -- GPU model names, interned: a GPU carries a 2-byte reference
 * to its model's name instead of the name itself.
 *
 * A node of 8 GPUs carried its model's name 8 times inline (64 bytes each),
 * for a handful of names in a whole cluster. Equal names get equal
 * references, so comparing two GPUs' models is an integer compare; the
 * reference 0 is the empty name (a model the inventory does not know), so a
 * zeroed GPU has no model, as before. Names live as long as the process:
 * they are few, and a GPU copied by value never points at freed memory.
 *
 *   gp_model_ref m = gp_model_intern("A100-SXM4-80GB");
 *   printf("%s\n", gp_model_name(m));
 *
 * Thread-safe: interning takes a lock, reading a name does not. Bounded:
 * past GP_MODEL_REFS_MAX distinct names (which no real cluster has; a node
 * agent that invents names could) a new name interns as 0, unknown, and the
 * first such name is logged once. */
#ifndef GP_MODELREF_H
#define GP_MODELREF_H

#include <stdint.h>

#define GP_MODEL_MAX 64           /* a model's name, NUL included */
#define GP_MODEL_REFS_MAX 4096    /* distinct names a process keeps */

typedef uint16_t gp_model_ref;

/* The reference of `name` (NULL or "" give 0). A name of GP_MODEL_MAX bytes
 * or more keeps its first GP_MODEL_MAX - 1: decoders refuse those before. */
gp_model_ref gp_model_intern(const char *name);

/* The name behind `ref`; "" for 0 and for a reference this process never
 * handed out. Valid as long as the process. */
const char *gp_model_name(gp_model_ref ref);

/* Distinct names interned so far, and names refused because the table was
 * full (for tests and /metrics). */
int gp_model_refs_used(void);
long gp_model_refs_refused(void);

#endif
