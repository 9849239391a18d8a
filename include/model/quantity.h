/* quantity.h -- Kubernetes resource quantities ("4096", "4Ki", "2k", "250m", "1.5Gi"). Pure. */
#ifndef GP_QUANTITY_H
#define GP_QUANTITY_H

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

#endif
