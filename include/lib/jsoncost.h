/* jsoncost.h -- how much memory decoding a JSON text will take, counted before decoding. Pure.
 *
 * A JSON text of n bytes can cost far more than n once decoded: every "{}"
 * becomes a jansson object with its hash table (about 200 bytes for 3 bytes
 * of input), every "0" an integer node. The HTTP front estimates a request
 * body's decoded size with one linear pass, without allocating, and refuses
 * the bodies that would not fit its memory budget before anything is built. */
#ifndef GP_JSONCOST_H
#define GP_JSONCOST_H

#include <stddef.h>

/* Upper estimate, in bytes, of the heap jansson (json_loadb) uses for the JSON
 * text [p, p+n), plus the text itself held by the caller and an answer of
 * similar size: meant to be at least the real cost for any input, valid or
 * not, and within a small factor of it for real requests. Saturates at
 * SIZE_MAX / 2. Never reads past n. */
size_t jsoncost_estimate(const char *p, size_t n);

/* The cheap bound used without a scan: estimate(p, n) <= jsoncost_bound(n). */
size_t jsoncost_bound(size_t n);

#endif
