/* quantity.h -- Kubernetes resource quantities ("4096", "4Ki", "2k", "250m", "1.5Gi"). Pure. */
#ifndef GP_QUANTITY_H
#define GP_QUANTITY_H

#include <jansson.h>
#include <stdint.h>

#include "lib/util.h"

/* Parses a quantity into thousandths of its unit ("250m" -> 250, "2" -> 2000,
 * "1Ki" -> 1024000). Accepts decimal and binary suffixes (k M G T P E, Ki Mi
 * Gi Ti Pi Ei), the milli suffix m, and exponents (1e3). Returns 0, or -1 with
 * a message on syntax errors and on values that do not fit in int64. */
int quantity_parse_milli(const char *s, int64_t *out, gp_err *err) GP_WUR;

/* For integer resources (GPU memory, counts, percent): rejects fractions
 * ("1.5", "500m") and negative values. Returns 0 or -1 with a message. */
int quantity_parse_int(const char *s, int64_t *out, gp_err *err) GP_WUR;

/* For amounts kept in their own unit whatever their size (DRA capacities and
 * counters: bytes, counts): whole units, fractions rounded up in magnitude as
 * Kubernetes' Quantity.Value() does ("1500m" -> 2, "80Gi" -> 85899345920).
 * A magnitude past INT64_MAX saturates there ("16Ei" -> INT64_MAX, "-16Ei" ->
 * -INT64_MAX) instead of failing. Returns 0, or -1 with a message on syntax
 * errors (exponents past +-40 included); the sign is the caller's to check. */
int quantity_parse_units(const char *s, int64_t *out, gp_err *err) GP_WUR;

/* The value of resource `name` in a container's `resources` object
 * (borrowed): limits, then requests (Kubernetes defaults requests from
 * limits), as a quantity string or a JSON number, whole and non-negative.
 * Returns 1 (found, *out set), 0 (absent or null) or -1 with a message that
 * names the field, e.g. `where.resources.limits["name"]: quantity "1.5" is
 * fractional ...`. */
int quantity_resource(const json_t *resources, const char *name, const char *where, int64_t *out,
                      gp_err *err) GP_WUR;

#endif
