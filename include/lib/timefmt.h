/* timefmt.h -- RFC 3339 times as the API server writes them <-> Unix nanoseconds. Pure. */
#ifndef GP_TIMEFMT_H
#define GP_TIMEFMT_H

#include <stddef.h>
#include <stdint.h>

#include "lib/util.h"

/* "2024-05-01T12:00:00Z", with optional fraction and a Z or +hh:mm offset
 * (metav1.Time and MicroTime) -> Unix nanoseconds. Returns 0, or -1 when s
 * is NULL, not such a time, or outside what int64_t nanoseconds hold
 * (1677..2262). */
int gp_rfc3339_parse(const char *s, int64_t *ns) GP_WUR;
/* Unix nanoseconds -> "2024-05-01T12:00:00Z" (whole seconds, UTC, as metav1.Time
 * is written); out holds at least 21 bytes. */
void gp_rfc3339_format(int64_t ns, char *out, size_t len);

#endif
