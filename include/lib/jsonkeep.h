/* jsonkeep.h -- tables of the members of a JSON document worth keeping, and the jansson
 * trimmer that applies one. Pure.
 *
 * One table serves two readers that must agree: the text scanner of
 * ExtenderArgs (extargs.h), which copies only these members out of a request
 * body, and jsonkeep_trim, which copies them out of a parsed document (the
 * LIST buffer, the pods remembered between filter and bind). A decoder that
 * starts reading a member adds it to the table, and every copy keeps it.
 *
 *   static const gp_keep ctr[] = {{"name"}, {"resources"}, {0}};
 *   static const gp_keep spec[] = {{"containers", ctr, true}, {0}};
 *   static const gp_keep pod[] = {{"spec", spec}, {0}};
 *   json_t *t = jsonkeep_trim(pod_json, pod);
 */
#ifndef GP_JSONKEEP_H
#define GP_JSONKEEP_H

#include <jansson.h>
#include <stdbool.h>

typedef struct gp_keep {
    const char *key;                 /* a member of the object; NULL ends a table */
    const struct gp_keep *sub;       /* keep only these members of its value (an object) */
    bool each;                       /* its value is an array: apply sub to every element */
    const char *const *prefixes;     /* its value is an object: keep the members whose key
                                      * starts with one of these (NULL-terminated) */
} gp_keep;

/* A copy (owned) of object v holding only the members `rules` keep, reduced
 * as they say. Where a value does not have the shape a rule reduces (an
 * object, an array of objects), it is copied whole, so that a decoder meets
 * the same malformed value in the copy as in the original. Members absent
 * stay absent. v not an object: a copy of v. */
json_t *jsonkeep_trim(const json_t *v, const gp_keep *rules);

/* The rule for member `key` (len bytes) in rules, or NULL. */
const gp_keep *jsonkeep_find(const gp_keep *rules, const char *key, size_t len);
/* Whether a key of len bytes starts with one of the prefixes. */
bool jsonkeep_prefixed(const char *const *prefixes, const char *key, size_t len);

#endif
