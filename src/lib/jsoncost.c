/* jsoncost.c -- memory a JSON text will take once decoded, counted in one pass. */
#include "lib/jsoncost.h"

#include <stdint.h>
#include <string.h>

/* Bytes of heap (glibc malloc chunks, 64-bit) per decoded jansson value, rounded
 * up; test_jsoncost checks them against mallinfo2 for the worst shapes. */
enum {
    COST_OBJECT = 256,     /* json_object_t + its first hash table (8 buckets) */
    COST_MEMBER = 96,      /* one pair (key inline) and a share of table growth */
    COST_ARRAY = 160,      /* json_array_t + its first table (8 slots) */
    COST_ELEMENT = 24,     /* a slot, with doubling growth */
    COST_STRING = 64,      /* json_string_t + the copy's chunk overhead */
    COST_NUMBER = 48,      /* json_integer_t / json_real_t */
    TEXT_COPIES = 3,       /* the body held, jansson's token buffer, an answer */
    WORST_PER_BYTE = 128,  /* ">=" any of the above per byte of input: "{}," is 3 bytes */
};

#define COST_CAP (SIZE_MAX / 2)

size_t jsoncost_bound(size_t n)
{
    return n > COST_CAP / WORST_PER_BYTE ? COST_CAP : n * WORST_PER_BYTE;
}

/* Past the string whose text starts at p[i] (after its opening quote): past
 * the first quote not escaped, or n. memchr finds the quotes (a name list is
 * mostly string bytes); a quote is escaped when an odd run of backslashes,
 * all inside this string, comes right before it. */
static size_t string_end(const char *p, size_t i, size_t n)
{
    size_t start = i;
    while (i < n) {
        const char *q = memchr(p + i, '"', n - i);
        if (!q)
            return n;
        size_t at = (size_t)(q - p), run = 0;
        while (at - run > start && p[at - run - 1] == '\\')
            run++;
        i = at + 1;
        if (run % 2 == 0)
            return i;
    }
    return n;
}

size_t jsoncost_estimate(const char *p, size_t n)
{
    /* Every token that starts a value is charged as a new value with a slot in
     * its container; this over-counts a little (a key is charged as a string
     * and a member) but needs no stack and no validation. */
    uint64_t cost = (uint64_t)n * TEXT_COPIES;
    size_t i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)p[i++];
        switch (c) {
        case '{':
            cost += COST_OBJECT;
            break;
        case ':':
            cost += COST_MEMBER;
            break;
        case '[':
            cost += COST_ARRAY;
            break;
        case ',':
            break;   /* charged one more slot: container growth */
        case '"':
            cost += COST_STRING;
            i = string_end(p, i, n);   /* the string's bytes are counted by n */
            break;
        case '-':
        case '0': case '1': case '2': case '3': case '4':
        case '5': case '6': case '7': case '8': case '9':
            cost += COST_NUMBER;
            while (i < n && ((p[i] >= '0' && p[i] <= '9') || p[i] == '.' || p[i] == 'e' ||
                             p[i] == 'E' || p[i] == '+' || p[i] == '-'))
                i++;
            break;
        case 't':
        case 'f':
        case 'n':   /* literals are shared singletons: only their slot */
            while (i < n && p[i] >= 'a' && p[i] <= 'z')
                i++;
            break;
        default:    /* whitespace, closing brackets, garbage: nothing is built */
            continue;
        }
        cost += COST_ELEMENT;   /* every value may take a slot in its container */
        if (cost > COST_CAP)
            return COST_CAP;
    }
    return (size_t)cost;
}
