/* cpus.c -- the CPUs this process may use (cpus.h). */
#include "lib/cpus.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* A positive decimal integer (no sign, no junk but a trailing blank). */
static int parse_count(const char *s, long long *out)
{
    while (*s == ' ')
        s++;
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || v <= 0)
        return -1;
    while (*end == ' ' || *end == '\n')
        end++;
    if (*end)
        return -1;
    *out = v;
    return 0;
}

int gp_cpus_from_quota(const char *text, const char *period_text)
{
    if (!text)
        return 0;
    char quota[64], period[64];
    if (!period_text) {   /* v2: "QUOTA PERIOD" or "max PERIOD"; v1: two files */
        if (sscanf(text, "%63s %63s", quota, period) != 2)
            return 0;
        text = quota;
        period_text = period;
    }
    long long q, p;
    if (parse_count(text, &q) || parse_count(period_text, &p))
        return 0;   /* "max", -1, or not a number: no limit this can use */
    long long n = (q + p - 1) / p;
    return n > 4096 ? 4096 : (int)n;
}

/* The first line of a small file, or NULL. */
static char *first_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *r = fgets(buf, (int)len, f);
    fclose(f);
    return r;
}

int gp_cpus_usable(void)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int n = online > 0 ? (int)(online > 4096 ? 4096 : online) : 1;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0 && CPU_COUNT(&set) < n)
        n = CPU_COUNT(&set);
    char a[128], b[128];
    int q = 0;
    if (first_line("/sys/fs/cgroup/cpu.max", a, sizeof a))
        q = gp_cpus_from_quota(a, NULL);
    else if (first_line("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", a, sizeof a) &&
             first_line("/sys/fs/cgroup/cpu/cpu.cfs_period_us", b, sizeof b))
        q = gp_cpus_from_quota(a, b);
    if (q > 0 && q < n)
        n = q;
    return n < 1 ? 1 : n;
}
