/* jsonkeep.c -- tables of the members of a JSON document worth keeping; the jansson trimmer. */
#include "lib/jsonkeep.h"

#include <string.h>

const gp_keep *jsonkeep_find(const gp_keep *rules, const char *key, size_t len)
{
    for (const gp_keep *r = rules; r && r->key; r++)
        if (strlen(r->key) == len && memcmp(r->key, key, len) == 0)
            return r;
    return NULL;
}

bool jsonkeep_prefixed(const char *const *prefixes, const char *key, size_t len)
{
    for (const char *const *p = prefixes; p && *p; p++) {
        size_t pl = strlen(*p);
        if (len >= pl && memcmp(key, *p, pl) == 0)
            return true;
    }
    return false;
}

static json_t *trim_value(const json_t *v, const gp_keep *k);

static json_t *trim_object(const json_t *v, const gp_keep *rules, const char *const *prefixes)
{
    json_t *out = json_object();
    const char *key;
    json_t *m;
    json_object_foreach((json_t *)v, key, m) {
        size_t len = strlen(key);
        if (prefixes) {
            if (jsonkeep_prefixed(prefixes, key, len))
                json_object_set_new(out, key, json_deep_copy(m));
            continue;
        }
        const gp_keep *k = jsonkeep_find(rules, key, len);
        if (k)
            json_object_set_new(out, key, trim_value(m, k));
    }
    return out;
}

/* A member's value as rule k keeps it. */
static json_t *trim_value(const json_t *v, const gp_keep *k)
{
    if (k->each && json_is_array(v)) {
        json_t *out = json_array();
        size_t i;
        json_t *el;
        json_array_foreach(v, i, el)
            json_array_append_new(out, json_is_object(el) ? trim_object(el, k->sub, NULL)
                                                          : json_deep_copy(el));
        return out;
    }
    if (!k->each && (k->sub || k->prefixes) && json_is_object(v))
        return trim_object(v, k->sub, k->prefixes);
    return json_deep_copy(v);   /* kept whole, or not the shape the rule reduces */
}

json_t *jsonkeep_trim(const json_t *v, const gp_keep *rules)
{
    return json_is_object(v) ? trim_object(v, rules, NULL) : json_deep_copy(v);
}
