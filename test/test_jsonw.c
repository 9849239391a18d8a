/* test_jsonw.c -- JSON text written straight into a buffer: string literals
 * are JSON whatever bytes they are given. */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonw.h"
#include "lib/util.h"

static char *str_literal(const char *s)
{
    gp_buf b;
    gp_buf_init(&b, 1 << 16);
    ck_assert_int_eq(jsonw_str(&b, s), 0);
    ck_assert(!gp_buf_failed(&b));
    return b.data;
}

static const struct {
    const char *in, *out;
} cases[] = {
    {"", "\"\""},
    {"plain", "\"plain\""},
    {"q\"b\\n\nr\rt\t\x01", "\"q\\\"b\\\\n\\nr\\rt\\t\\u0001\""},
    {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e", "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e\""},
    {"a\x80z", "\"a\\ufffdz\""},                          /* a lone continuation byte */
    {"\xc0\xaf", "\"\\ufffd\\ufffd\""},                   /* an overlong '/' */
    {"\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""},        /* a UTF-16 surrogate */
    {"\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""},   /* past U+10FFFF */
    {"x\xe2\x82", "\"x\\ufffd\\ufffd\""},                 /* cut short by the end */
    {"\xe2\x82 y", "\"\\ufffd\\ufffd y\""},               /* cut short by ASCII */
    {"\xff\xfe", "\"\\ufffd\\ufffd\""},
};

START_TEST(str_escapes_and_replaces)
{
    char *got = str_literal(cases[_i].in);
    ck_assert_str_eq(got, cases[_i].out);
    free(got);
}
END_TEST

/* Any bytes: the literal parses, and well-formed text comes back as it was. */
START_TEST(str_is_json_for_any_bytes)
{
    unsigned seed = 7;
    for (int round = 0; round < 20000; round++) {
        char in[24];
        seed = seed * 1103515245u + 12345u;
        size_t n = (seed >> 16) % (sizeof in - 1);
        for (size_t k = 0; k < n; k++) {
            seed = seed * 1103515245u + 12345u;
            unsigned char c = (unsigned char)(seed >> 16);
            /* mostly the bytes around sequence boundaries */
            in[k] = (char)(seed & 0x100 ? c : (c % 8 == 0 ? 0xc3 : c % 8 == 1 ? 0xa9 : c % 8 == 2 ? 0xe2 : 0x80 + c % 64));
            if (in[k] == '\0')
                in[k] = 'z';
        }
        in[n] = '\0';
        char *lit = str_literal(in);
        json_error_t je;
        json_t *j = json_loads(lit, JSON_DECODE_ANY, &je);
        ck_assert_msg(j != NULL, "not JSON (%s): %s", je.text, lit);
        json_t *direct = json_string(in);   /* NULL: jansson finds in not UTF-8 */
        if (direct)
            ck_assert_str_eq(json_string_value(j), in);
        else
            ck_assert_ptr_nonnull(strstr(lit, "\\ufffd"));
        json_decref(direct);
        json_decref(j);
        free(lit);
    }
}
END_TEST

Suite *suite_jsonw(void);
Suite *suite_jsonw(void)
{
    Suite *s = suite_create("jsonw");
    TCase *t = tcase_create("str");
    tcase_add_loop_test(t, str_escapes_and_replaces, 0, (int)GP_ARRAY_LEN(cases));
    tcase_add_test(t, str_is_json_for_any_bytes);
    suite_add_tcase(s, t);
    return s;
}
