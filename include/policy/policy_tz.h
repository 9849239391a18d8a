/* policy_tz.h -- time zones for policy time windows, without touching the
 * process-wide TZ (setenv/tzset race with other threads).
 *
 * A zone is loaded once (when a policy set is built) into an immutable value;
 * lookups are pure and thread-safe. Accepted names:
 *   "UTC", "UTC+02:00", "UTC-05:30", "UTC+2"   fixed offsets east of UTC
 *   "Europe/Berlin", "America/New_York", ...   IANA names, read from the TZif
 *                                              file under $TZDIR or
 *                                              /usr/share/zoneinfo, including
 *                                              the POSIX rule that extends the
 *                                              table past its last transition. */
#ifndef GP_POLICY_TZ_H
#define GP_POLICY_TZ_H

#include <stdint.h>
#include <time.h>

#include "lib/util.h"

typedef struct policy_tz policy_tz;

/* Loads the zone `name` (see above). Returns 0 and an owned zone in *out
 * (free with policy_tz_free), or -1 with a message. Reads a file for IANA
 * names; call it at load time, not per request. */
int policy_tz_load(const char *name, policy_tz **out, gp_err *err) GP_WUR;
void policy_tz_free(policy_tz *tz);   /* accepts NULL */

/* Seconds east of UTC in force at `t` (NULL zone = UTC). Pure. */
int32_t policy_tz_offset(const policy_tz *tz, int64_t t);

/* The local wall clock at `t`: weekday (0 = Sunday) and minute of the day. */
void policy_tz_local(const policy_tz *tz, int64_t t, int *wday, int *minute);

#endif
