/* jsonpath.h -- reading one or two levels down a jansson document: the one
 * helper the decoders share. NULL-safe at every step. Pure. */
#ifndef GP_JSONPATH_H
#define GP_JSONPATH_H

#include <jansson.h>

/* o[a], or o[a][b] when b is non-NULL; NULL when any step is missing. */
const json_t *gp_json_at(const json_t *o, const char *a, const char *b);
/* The same when it is a string, else NULL. */
const char *gp_json_str_at(const json_t *o, const char *a, const char *b);

#endif
