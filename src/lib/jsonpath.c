/* jsonpath.c -- one or two levels down a jansson document (jsonpath.h). */
#include "lib/jsonpath.h"

const json_t *gp_json_at(const json_t *o, const char *a, const char *b)
{
    const json_t *v = json_object_get(o, a);
    return b ? json_object_get(v, b) : v;
}

const char *gp_json_str_at(const json_t *o, const char *a, const char *b)
{
    return json_string_value(gp_json_at(o, a, b));
}
