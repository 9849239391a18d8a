/* idlestack.c -- idle handles for reuse, given back after a period unused. */
#include "lib/idlestack.h"

#include <stdlib.h>
#include <string.h>

#include "lib/util.h"

void idlestack_init(gp_idlestack *s, int max, double period, double now)
{
    s->max = max >= 1 ? max : 1;
    s->items = xcalloc((size_t)s->max, sizeof *s->items);
    s->n = s->low = 0;
    s->period = period;
    s->trimmed = now;
}

void idlestack_free(gp_idlestack *s)
{
    free(s->items);
    s->items = NULL;
    s->n = s->low = 0;
}

void *idlestack_pop(gp_idlestack *s)
{
    if (s->n == 0)
        return NULL;
    void *p = s->items[--s->n];
    if (s->n < s->low)
        s->low = s->n;
    return p;
}

bool idlestack_push(gp_idlestack *s, void *p)
{
    if (s->n >= s->max)
        return false;
    s->items[s->n++] = p;
    return true;
}

int idlestack_trim(gp_idlestack *s, double now, void **out, int outmax)
{
    if (now - s->trimmed < s->period && now >= s->trimmed)
        return 0;   /* (a clock that went back starts a new period) */
    int k = s->low < outmax ? s->low : outmax;
    if (k > s->n)
        k = s->n;
    memcpy(out, s->items, (size_t)k * sizeof *out);
    memmove(s->items, s->items + k, (size_t)(s->n - k) * sizeof *s->items);
    s->n -= k;
    s->low = s->n;
    s->trimmed = now;
    return k;
}
