/* cpus.h -- how many CPUs this process may really use: the CPUs its affinity
 * allows, and no more than its cgroup's CPU quota (a container's CPU limit).
 *
 * sysconf(_SC_NPROCESSORS_ONLN) counts the node's CPUs: a gpupack pod limited
 * to one CPU on a 64-core node would start four threads for one filter, burn
 * its 100 ms quota in 25 ms and be throttled for the rest of the period.
 *
 *   int n = gp_cpus_usable();   // >= 1 */
#ifndef GP_CPUS_H
#define GP_CPUS_H

/* CPUs a quota allows, from the text of cgroup v2's cpu.max ("max 100000",
 * "150000 100000") rounded up, or from v1's quota and period in microseconds
 * (period_text NULL for v2). 0: no limit, or text it cannot read. Pure. */
int gp_cpus_from_quota(const char *text, const char *period_text);

/* min(affinity, quota), at least 1; reads /sys/fs/cgroup once per call. */
int gp_cpus_usable(void);

#endif
