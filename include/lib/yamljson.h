/* yamljson.h -- YAML (or JSON) text -> jansson values, with bounds. Pure. */
#ifndef GP_YAMLJSON_H
#define GP_YAMLJSON_H

#include <jansson.h>
#include <stddef.h>

#include "lib/util.h"

#define YAMLJSON_MAX_DEPTH 64
#define YAMLJSON_MAX_NODES 2000000      /* after alias expansion */
#define YAMLJSON_MAX_FILE (64u << 20)   /* 64 MiB */

/* Parses every document of a YAML stream (JSON is YAML). Plain scalars get
 * YAML core-schema types (null, true/false, integers, floats); quoted ones
 * stay strings; aliases are expanded within the node budget. Returns an owned
 * array of documents, or NULL with "line:column: what" in err. */
json_t *yamljson_parse(const char *text, size_t len, gp_err *err);

/* Reads a file (at most YAMLJSON_MAX_FILE bytes) and parses it as above;
 * errors are prefixed with the path. */
json_t *yamljson_load_file(const char *path, gp_err *err);

#endif
