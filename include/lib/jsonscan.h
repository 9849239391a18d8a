/* jsonscan.h -- a strict JSON text scanner for the fast paths, which read a
 * few members of large documents: skip a value as strictly as jansson would
 * parse it, copy the members of an object that a gp_keep table names (as
 * text, reduced as the table says), load such a reduced copy. Pure.
 *
 * Everything doubtful declines (-1): escapes in keys, non-ASCII keys, long
 * numbers, depth past 128, a value not of the shape its rule reduces.
 * Callers then parse the whole document with jansson and get its exact
 * behaviour and error messages.
 *
 *   json_t *pod;
 *   if (jscan_load_reduced(text, text + len, k8s_obs_pod_keep, 0, &pod) < 0)
 *       pod = json_loadb(text, len, 0, &jerr);   // the exact rules */
#ifndef GP_JSONSCAN_H
#define GP_JSONSCAN_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lib/jsonkeep.h"
#include "lib/util.h"

typedef struct gp_jscan {
    const char *p, *end;   /* the next byte, the end of the text */
} gp_jscan;

/* The small steps are inline: extargs runs them for each of the 5,000 node
 * names of a filter request. Skips blanks: */
static inline void jscan_ws(gp_jscan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

/* After a member or an element: 1 (past the comma) when another follows, 0
 * (past `close`, '}' or ']') at the end, -1 when neither comes. */
static inline int jscan_next(gp_jscan *s, char close)
{
    jscan_ws(s);
    if (s->p < s->end && *s->p == ',') {
        s->p++;
        return 1;
    }
    if (s->p < s->end && *s->p == close) {
        s->p++;
        return 0;
    }
    return -1;
}

/* The first byte of [p, end) that a plain string cannot hold as it is: a
 * quote, a backslash, a control byte or a non-ASCII one (end if none). Eight
 * bytes at a time: a word none of whose bytes is such a byte is passed
 * whole; a word that may hold one is looked at byte by byte. */
static inline const char *jscan_plain_run(const char *p, const char *end)
{
    const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
    while (end - p >= 8) {
        uint64_t x;
        memcpy(&x, p, 8);
        uint64_t q = x ^ (ones * '"'), bs = x ^ (ones * '\\');
        uint64_t hit = ((x - ones * 0x20) | (q - ones) | (bs - ones)) & ~x & highs;
        if ((hit | (x & highs)) != 0)
            break;   /* a byte below 0x20, '"', '\\' or one of 0x80 and above */
        p += 8;
    }
    while (p < end) {
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80)
            return p;
        p++;
    }
    return end;
}

/* A string with no escapes and only printable ASCII: [*start, *start + *len). */
static inline int jscan_plain_string(gp_jscan *s, const char **start, size_t *len)
{
    if (s->p >= s->end || *s->p != '"')
        return -1;
    const char *b = ++s->p;
    s->p = jscan_plain_run(s->p, s->end);
    if (s->p >= s->end || *s->p != '"')
        return -1;   /* unterminated, escapes and non-ASCII: let jansson judge */
    *start = b;
    *len = (size_t)(s->p - b);
    s->p++;
    return 0;
}

/* Skips one value (depth: its nesting so far). */
int jscan_skip_value(gp_jscan *s, int depth);
/* Copies the object at s->p into out, keeping the members `rules` names (or,
 * with prefixes, those whose key starts with one). */
int jscan_copy_object(gp_jscan *s, gp_buf *out, const gp_keep *rules, const char *const *prefixes,
                      int depth);
/* The object [b, e) reduced to what keep names and parsed by jansson with
 * flags (JSON_REJECT_DUPLICATES ...): 0 and *out (owned), or -1. */
int jscan_load_reduced(const char *b, const char *e, const gp_keep *keep, size_t flags, json_t **out);

#endif
