/* test_jsoncost.c -- the decoded-size estimate against what jansson really allocates. */
#include <check.h>
#include <jansson.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsoncost.h"
#include "testutil.h"
#include "lib/util.h"

/* Whether mallinfo2 sees this process's allocations (not under ASan's or
 * valgrind's allocator): a known block must show. */
static bool heap_measurable(void)
{
    struct mallinfo2 before = mallinfo2();
    char *volatile p = malloc(1u << 16);
    struct mallinfo2 after = mallinfo2();
    bool ok = p && after.uordblks >= before.uordblks + (1u << 16);
    free(p);
    return ok;
}
#define HEAP_MEASURABLE heap_measurable()

/* "prefix" + n copies of "unit" (comma-separated) + "suffix". Owned. */
static char *repeat(const char *prefix, const char *unit, size_t n, const char *suffix, size_t *len)
{
    gp_buf b;
    gp_buf_init(&b, (size_t)1 << 30);
    ck_assert_int_eq(gp_buf_append(&b, prefix, strlen(prefix)), 0);
    for (size_t i = 0; i < n; i++) {
        if (i)
            ck_assert_int_eq(gp_buf_append(&b, ",", 1), 0);
        ck_assert_int_eq(gp_buf_append(&b, unit, strlen(unit)), 0);
    }
    ck_assert_int_eq(gp_buf_append(&b, suffix, strlen(suffix)), 0);
    *len = b.len;
    return b.data;
}

/* Heap bytes held by the decoded value of text. */
static size_t decoded_heap(const char *text, size_t len)
{
    struct mallinfo2 before = mallinfo2();
    json_t *v = json_loadb(text, len, 0, NULL);
    ck_assert_ptr_nonnull(v);
    struct mallinfo2 after = mallinfo2();
    json_decref(v);
    return after.uordblks > before.uordblks ? after.uordblks - before.uordblks : 0;
}

/* The shapes that cost the most per byte, and real requests. */
typedef struct shape {
    const char *prefix, *unit, *suffix;
} shape;

static const shape worst[] = {
    {"{\"Nodes\":{\"items\":[", "{}", "]}}"},
    {"[", "[]", "]"},
    {"[", "\"\"", "]"},
    {"[", "0", "]"},
    {"[", "1.5", "]"},
    {"[", "{\"a\":0}", "]"},
    {"[", "{\"a\":{\"b\":[]}}", "]"},
    {"[", "[[[[]]]]", "]"},
    {"{\"k\":[", "true", "]}"},
};

START_TEST(estimate_covers_worst_shapes)
{
    const shape *sh = &worst[_i];
    size_t len;
    char *text = repeat(sh->prefix, sh->unit, 20000, sh->suffix, &len);
    size_t est = jsoncost_estimate(text, len);
    ck_assert_uint_le(est, jsoncost_bound(len));
    if (HEAP_MEASURABLE) {
        size_t heap = decoded_heap(text, len) + len;
        ck_assert_msg(est >= heap, "%s%s...: estimate %zu < decoded %zu (%zu bytes of text)",
                      sh->prefix, sh->unit, est, heap, len);
    }
    free(text);
}
END_TEST

/* Real bodies are not overestimated by much (else legitimate requests would be refused). */
START_TEST(estimate_is_close_for_real_bodies)
{
    static const char *const files[] = {"filter-1.json", "wire/nodes/list.trimmed.json"};
    for (size_t i = 0; i < GP_ARRAY_LEN(files); i++) {
        json_t *j = tu_load_json(tu_captured(files[i]));
        char *text = json_dumps(j, JSON_COMPACT);
        json_decref(j);
        size_t len = strlen(text);
        size_t est = jsoncost_estimate(text, len);
        ck_assert_uint_le(est, jsoncost_bound(len));
        if (HEAP_MEASURABLE) {
            size_t heap = decoded_heap(text, len) + len;
            ck_assert_msg(est >= heap && est <= 4 * heap + 4096, "%s: estimate %zu, decoded %zu",
                          files[i], est, heap);
        }
        free(text);
    }
}
END_TEST

START_TEST(estimate_never_reads_past_the_end)
{
    static const char *const texts[] = {"\"abc", "\"a\\", "-", "{\"a\":", "[1e", "tru", ""};
    for (size_t i = 0; i < GP_ARRAY_LEN(texts); i++) {
        size_t n = strlen(texts[i]);
        char *copy = xmalloc(n ? n : 1);   /* exact size: ASan sees any overread */
        memcpy(copy, texts[i], n);
        ck_assert_uint_le(jsoncost_estimate(copy, n), jsoncost_bound(n));
        free(copy);
    }
    ck_assert_uint_eq(jsoncost_bound(SIZE_MAX), SIZE_MAX / 2);
}
END_TEST

/* Where the estimate's string skip must end: the reference walk, byte by
 * byte (a backslash takes the next byte with it). */
static size_t ref_string_end(const char *p, size_t i, size_t n)
{
    while (i < n && p[i] != '"') {
        if (p[i] == '\\')
            i++;
        i++;
    }
    return i + 1;
}

/* The estimate with the reference string walk: what jsoncost_estimate must
 * give for any text, whatever way it finds the end of a string. */
static size_t ref_estimate(const char *p, size_t n)
{
    size_t cost = n * 3, i = 0;
    while (i < n) {
        char c = p[i++];
        if (c == '"') {
            cost += 64 + 24;
            i = ref_string_end(p, i, n);
        } else if (c == '{') {
            cost += 256 + 24;
        } else if (c == ':') {
            cost += 96 + 24;
        } else if (c == '[') {
            cost += 160 + 24;
        } else if (c == ',') {
            cost += 24;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            cost += 48 + 24;
            while (i < n && strchr("0123456789.eE+-", p[i]) && p[i])
                i++;
        } else if (c == 't' || c == 'f' || c == 'n') {
            cost += 24;
            while (i < n && p[i] >= 'a' && p[i] <= 'z')
                i++;
        }
    }
    return cost;
}

/* Texts made of the characters that matter to a string's end (quotes,
 * backslashes runs of every parity) and to the tokens around it. */
START_TEST(estimate_finds_string_ends_like_a_byte_walk)
{
    static const char alphabet[] = "\"\\\\\\a{}[]:,1t";
    unsigned seed = 12345;
    for (int round = 0; round < 20000; round++) {
        char text[48];
        seed = seed * 1103515245u + 12345u;
        size_t n = (seed >> 16) % sizeof text;
        for (size_t k = 0; k < n; k++) {
            seed = seed * 1103515245u + 12345u;
            text[k] = alphabet[(seed >> 16) % (sizeof alphabet - 1)];
        }
        char *copy = xmalloc(n ? n : 1);   /* exact size: ASan sees any overread */
        memcpy(copy, text, n);
        ck_assert_msg(jsoncost_estimate(copy, n) == ref_estimate(copy, n), "text %.*s", (int)n,
                      copy);
        free(copy);
    }
}
END_TEST

Suite *suite_jsoncost(void);
Suite *suite_jsoncost(void)
{
    Suite *s = suite_create("jsoncost");
    TCase *t = tcase_create("estimate");
    tcase_set_timeout(t, 60);
    tcase_add_loop_test(t, estimate_covers_worst_shapes, 0, (int)GP_ARRAY_LEN(worst));
    tcase_add_test(t, estimate_is_close_for_real_bodies);
    tcase_add_test(t, estimate_never_reads_past_the_end);
    tcase_add_test(t, estimate_finds_string_ends_like_a_byte_walk);
    suite_add_tcase(s, t);
    return s;
}
