/* tbucket.h -- a token bucket: `rate` tokens a second, at most `burst` saved up. Pure:
 * the caller passes the time (seconds on any monotonic clock), so tests need no sleeps.
 *
 *     gp_tbucket b;
 *     tbucket_init(&b, 20, 20, gp_mono_s());
 *     double wait = tbucket_take(&b, gp_mono_s());   // 0: go; else sleep `wait`, try again
 *
 * Not thread-safe: one owner (or the owner's lock). */
#ifndef GP_TBUCKET_H
#define GP_TBUCKET_H

typedef struct gp_tbucket {
    double rate;      /* tokens per second, > 0 */
    double burst;     /* capacity, >= 1 */
    double tokens;
    double last;      /* time of the last refill */
} gp_tbucket;

/* Starts full. rate <= 0 or burst < 1 are raised to the smallest sane values
 * (1e-3 tokens/s, 1 token) rather than failing. */
void tbucket_init(gp_tbucket *b, double rate, double burst, double now);
/* Takes one token at `now`: returns 0 when taken, else the seconds until one
 * is there (nothing taken). A clock that went backwards refills nothing. */
double tbucket_take(gp_tbucket *b, double now);

#endif
