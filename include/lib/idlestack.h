/* idlestack.h -- a bounded stack of idle handles (reused newest first) that
 * gives back the ones no one needed for a whole period. Pure: the caller passes
 * the time and frees what a trim returns, so tests need neither sleeps nor
 * sockets.
 *
 *     gp_idlestack s;
 *     idlestack_init(&s, 32, 60, gp_mono_s());
 *     void *h = idlestack_pop(&s);                 // NULL: make a new one
 *     if (!idlestack_push(&s, h)) close_it(h);     // full
 *     void *old[32];
 *     int n = idlestack_trim(&s, gp_mono_s(), old, 32);   // close old[0..n)
 *
 * A burst of concurrent requests leaves as many handles idle as it used; without
 * the trim they stayed for the life of the process (each libcurl multi handle
 * holds a socket pair, each easy handle its buffers), so the memory and the
 * descriptors kept climbing to the highest burst ever seen. Not thread-safe:
 * one owner, or the owner's lock. */
#ifndef GP_IDLESTACK_H
#define GP_IDLESTACK_H

#include <stdbool.h>

typedef struct gp_idlestack {
    void **items;       /* items[0] idle longest, items[n - 1] most recently */
    int n, max;
    int low;            /* the fewest idle at any moment since the last trim */
    double period;      /* seconds a handle may stay unused before a trim takes it */
    double trimmed;     /* time of the last trim */
} gp_idlestack;

/* Room for `max` (>= 1) idle handles; a handle unused for `period` seconds goes. */
void idlestack_init(gp_idlestack *s, int max, double period, double now);
/* Frees the stack itself, not the handles: take them with idlestack_pop first. */
void idlestack_free(gp_idlestack *s);
/* The most recently idle handle, or NULL when none is. */
void *idlestack_pop(gp_idlestack *s);
/* Keeps `p` for reuse; false when full (the caller closes it). */
bool idlestack_push(gp_idlestack *s, void *p);
/* Once per period: the handles that stayed idle through all of it (the stack
 * never went below them) are taken out and written to out[0..return), oldest
 * first, at most `outmax`; 0 and nothing changes before the period is over. */
int idlestack_trim(gp_idlestack *s, double now, void **out, int outmax);

#endif
