/* tbucket.c -- a token bucket with the time passed in. */
#include "lib/tbucket.h"

#define TB_RATE_MIN 1e-3
#define TB_EPS 1e-9         /* refills summed in steps must reach a whole token */

void tbucket_init(gp_tbucket *b, double rate, double burst, double now)
{
    b->rate = rate > TB_RATE_MIN ? rate : TB_RATE_MIN;
    b->burst = burst >= 1 ? burst : 1;
    b->tokens = b->burst;
    b->last = now;
}

double tbucket_take(gp_tbucket *b, double now)
{
    if (now > b->last) {
        b->tokens += (now - b->last) * b->rate;
        if (b->tokens > b->burst)
            b->tokens = b->burst;
        b->last = now;
    }
    if (b->tokens >= 1 - TB_EPS) {
        b->tokens = b->tokens > 1 ? b->tokens - 1 : 0;
        return 0;
    }
    return (1 - b->tokens) / b->rate;
}
