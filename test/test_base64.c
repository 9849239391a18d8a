/* test_base64.c -- the one base64 codec (GnuTLS): RFC 4648 vectors both ways,
 * whitespace in input, and every malformed form rejected. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base64.h"
#include "lib/util.h"

static const char *const vec[][2] = {
    {"", ""},         {"f", "Zg=="},        {"fo", "Zm8="},         {"foo", "Zm9v"},
    {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"},
};

START_TEST(encodes_rfc4648_vectors)
{
    for (size_t i = 0; i < GP_ARRAY_LEN(vec); i++) {
        char *b = gp_base64_encode(vec[i][0], strlen(vec[i][0]));
        ck_assert_str_eq(b, vec[i][1]);
        free(b);
    }
    /* binary bytes and no line breaks however long */
    unsigned char bin[300];
    for (size_t i = 0; i < sizeof bin; i++)
        bin[i] = (unsigned char)(i * 7);
    char *b = gp_base64_encode(bin, sizeof bin);
    ck_assert_uint_eq(strlen(b), 400);
    ck_assert_ptr_null(strchr(b, '\n'));
    size_t n;
    char *d = gp_base64_decode(b, &n);
    ck_assert_uint_eq(n, sizeof bin);
    ck_assert(memcmp(d, bin, n) == 0);
    free(d);
    free(b);
}
END_TEST

START_TEST(decodes_and_rejects)
{
    for (size_t i = 0; i < GP_ARRAY_LEN(vec); i++) {
        size_t n = 99;
        char *d = gp_base64_decode(vec[i][1], &n);
        ck_assert_ptr_nonnull(d);
        ck_assert_uint_eq(n, strlen(vec[i][0]));
        ck_assert_str_eq(d, vec[i][0]);
        free(d);
    }
    static const struct {
        const char *in, *out;
    } ws[] = {{"Zm9v\nYmFy\n", "foobar"}, {"YWJj ZGVm", "abcdef"}, {"Zm9v\r\nYmFy", "foobar"}};
    for (size_t i = 0; i < GP_ARRAY_LEN(ws); i++) {
        size_t n;
        char *d = gp_base64_decode(ws[i].in, &n);
        ck_assert_ptr_nonnull(d);
        ck_assert_str_eq(d, ws[i].out);
        free(d);
    }
    /* bad characters, a lone or stray symbol, data after padding, too much
     * padding, and missing padding (Kubernetes' decoder requires it) */
    static const char *const no[] = {"Z", "Zm9vY", "Zg==Zg", "Zm9v!", "Zg===", "Zm9vYg"};
    for (size_t i = 0; i < GP_ARRAY_LEN(no); i++) {
        size_t n;
        ck_assert_msg(gp_base64_decode(no[i], &n) == NULL, "%s", no[i]);
    }
}
END_TEST

Suite *suite_base64(void);
Suite *suite_base64(void)
{
    Suite *s = suite_create("base64");
    TCase *t = tcase_create("base64");
    tcase_add_test(t, encodes_rfc4648_vectors);
    tcase_add_test(t, decodes_and_rejects);
    suite_add_tcase(s, t);
    return s;
}
