/* jsonw.h -- writing JSON text straight into a gp_buf (hot paths that would
 * otherwise build and serialise thousands of jansson objects). */
#ifndef GP_JSONW_H
#define GP_JSONW_H

#include <jansson.h>

#include "lib/util.h"

/* Appends s as a JSON string literal (quotes, escapes). Well-formed UTF-8 is
 * copied as it is; a byte that starts no well-formed sequence becomes U+FFFD,
 * so that the text is JSON whatever s holds (an error message may quote the
 * bytes of a request). Returns 0, or -1 when the buffer has failed (past its
 * limit, now or before: the error sticks, so callers may check once with
 * gp_buf_failed at the end). */
int jsonw_str(gp_buf *b, const char *s);
/* Appends a literal piece of JSON syntax. */
int jsonw_raw(gp_buf *b, const char *s);
/* Appends a jansson value serialised compactly. */
int jsonw_value(gp_buf *b, const json_t *v);

#endif
