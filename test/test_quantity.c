/* test_quantity.c -- Kubernetes quantities: table of accepted forms, rounding, and every rejection. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "model/quantity.h"

#define SENTINEL INT64_C(0x5a5a5a5a)

typedef struct {
    const char *in;
    int64_t milli;
} milli_case;

/* Thousandths of the unit; fractions below a thousandth round up (Kubernetes does). */
static const milli_case milli_ok[] = {
    {"0", 0},
    {"1", 1000},
    {"4096", 4096000},
    {"250m", 250},
    {"1500m", 1500},
    {"1Ki", 1024000},
    {"4Ki", 4096000},
    {"1Mi", INT64_C(1048576000)},
    {"1.5Gi", INT64_C(1610612736000)},
    {"1Ti", INT64_C(1099511627776000)},
    {"1Pi", INT64_C(1125899906842624000)},
    {"2k", 2000000},
    {"1M", INT64_C(1000000000)},
    {"3G", INT64_C(3000000000000)},
    {"1T", INT64_C(1000000000000000)},
    {"1P", INT64_C(1000000000000000000)},
    {"0.5", 500},
    {".5", 500},
    {"5.", 5000},
    {"1.0005", 1001},          /* 1000.5 thousandths -> 1001 */
    {"0.5Ki", 512000},
    {"+3", 3000},
    {"-2", -2000},
    {"-0", 0},
    {"1e3", 1000000},
    {"1E3", 1000000},
    {"1.5e3", 1500000},
    {"1e-3", 1},
    {"1e-5", 1},               /* 0.01 thousandths rounds up */
    {"1n", 1},
    {"1u", 1},
    {"1500u", 2},
    {"0.0000000001m", 1},
    {"9223372036854775807m", INT64_MAX},
    {"9223372036854775.807", INT64_MAX},
};

START_TEST(milli_accepts)
{
    const milli_case *c = &milli_ok[_i];
    int64_t v = SENTINEL;
    gp_err err = {{0}};
    int rc = quantity_parse_milli(c->in, &v, &err);
    ck_assert_msg(rc == 0, "\"%s\": %s", c->in, err.msg);
    ck_assert_msg(v == c->milli, "\"%s\": got %lld, want %lld", c->in, (long long)v,
                  (long long)c->milli);
}
END_TEST

typedef struct {
    const char *in;
    const char *msg;   /* substring the error must contain */
} bad_case;

static const bad_case milli_bad[] = {
    {"", "empty"},
    {"abc", "abc"},
    {"Ki", "no digits"},
    {"-", "no digits"},
    {".", "no digits"},
    {"--1", "no digits"},
    {" 1", "\" 1\""},
    {"1 ", "\"1 \""},
    {"1.5.5", "1.5.5"},
    {"1Kib", "1Kib"},
    {"1ki", "1ki"},
    {"1x", "unknown suffix"},
    {"0x10", "0x10"},
    {"1e", "1e"},
    {"1e+", "1e+"},
    {"1e41", "out of range"},
    {"9999999999999999999Ki", "too large"},
    {"9223372036854775808m", "too large"},
    {"9223372036854776", "too large"},   /* x1000 does not fit */
    {"1Ei", "too large"},
    {"1E", "too large"},                 /* exa, not an exponent */
    {"99999999999999999999999999999999", "too large"},
    {"1111111111111111111111111111111111111111111111111111111111111111111", "longer than"},
};

START_TEST(milli_rejects)
{
    const bad_case *c = &milli_bad[_i];
    int64_t v = SENTINEL;
    gp_err err = {{0}};
    ck_assert_msg(quantity_parse_milli(c->in, &v, &err) == -1, "\"%s\" accepted", c->in);
    ck_assert_msg(strstr(err.msg, c->msg) != NULL, "\"%s\": message \"%s\" lacks \"%s\"", c->in,
                  err.msg, c->msg);
    ck_assert_msg(v == SENTINEL, "\"%s\": output written on failure", c->in);
    /* a NULL error sink is allowed */
    ck_assert_int_eq(quantity_parse_milli(c->in, &v, NULL), -1);
}
END_TEST

typedef struct {
    const char *in;
    int64_t v;
} int_case;

static const int_case int_ok[] = {
    {"0", 0},
    {"4096", 4096},
    {"4Ki", 4096},
    {"4Gi", INT64_C(4294967296)},
    {"1k", 1000},
    {"0.5Ki", 512},
    {"2000m", 2},
    {"1e3", 1000},
    {"+7", 7},
    {"9223372036854775", INT64_C(9223372036854775)},
};

START_TEST(int_accepts)
{
    const int_case *c = &int_ok[_i];
    int64_t v = SENTINEL;
    gp_err err = {{0}};
    ck_assert_msg(quantity_parse_int(c->in, &v, &err) == 0, "\"%s\": %s", c->in, err.msg);
    ck_assert_msg(v == c->v, "\"%s\": got %lld, want %lld", c->in, (long long)v, (long long)c->v);
}
END_TEST

/* Integer resources (GPU memory, counts, percent) take whole, non-negative numbers. */
static const bad_case int_bad[] = {
    {"1.5", "fractional"},
    {"500m", "fractional"},
    {"1n", "fractional"},
    {"0.1Ki", "fractional"},   /* 102.4 */
    {"-1", "negative"},
    {"-4Ki", "negative"},
    {"abc", "abc"},
    {"", "empty"},
    {"9999999999999999999Ki", "too large"},
    {"1Ei", "too large"},
};

START_TEST(int_rejects)
{
    const bad_case *c = &int_bad[_i];
    int64_t v = SENTINEL;
    gp_err err = {{0}};
    ck_assert_msg(quantity_parse_int(c->in, &v, &err) == -1, "\"%s\" accepted as %lld", c->in,
                  (long long)v);
    ck_assert_msg(strstr(err.msg, c->msg) != NULL, "\"%s\": message \"%s\" lacks \"%s\"", c->in,
                  err.msg, c->msg);
    ck_assert_msg(v == SENTINEL, "\"%s\": output written on failure", c->in);
}
END_TEST

/* BUG (lead): more than 19 significant digits in total overflow the digit
 * accumulator's range check although the value is small: "10.000000000000000000"
 * (ten, with 18 zero decimals) is rejected as "too large". Kubernetes accepts it. */
static const milli_case long_fraction[] = {
    {"10.000000000000000000", 10000},
    {"99.999999999999999999", 100000},
};

START_TEST(bug_long_fraction_is_not_large)
{
    const milli_case *c = &long_fraction[_i];
    int64_t v = SENTINEL;
    gp_err err = {{0}};
    int rc = quantity_parse_milli(c->in, &v, &err);
    ck_assert_msg(rc == 0, "\"%s\": %s", c->in, err.msg);
    ck_assert_msg(v == c->milli, "\"%s\": got %lld", c->in, (long long)v);
}
END_TEST

/* Whole units, rounded up, saturating: DRA capacities and counters in bytes. */
static const int_case units_ok[] = {
    {"0", 0},
    {"80Gi", INT64_C(85899345920)},
    {"81559Mi", INT64_C(85520809984)},
    {"85899345920", INT64_C(85899345920)},
    {"1500m", 2},
    {"250m", 1},
    {"1n", 1},
    {"-1500m", -2},
    {"1.5Gi", INT64_C(1610612736)},
    {"10Pi", INT64_C(11258999068426240)},          /* past what thousandths hold */
    {"7Ei", INT64_C(8070450532247928832)},
    {"8Ei", INT64_MAX},                            /* 2^63: saturates */
    {"16Ei", INT64_MAX},
    {"-16Ei", -INT64_MAX},
    {"9223372036854775807", INT64_MAX},
    {"9223372036854775808", INT64_MAX},
    {"99999999999999999999999999999999", INT64_MAX},
    {"9999999999999999999999999n", INT64_C(10000000000000000)},   /* digits dropped, then scaled down */
    {"1e40", INT64_MAX},
    {"1e-40", 1},
    {"10.000000000000000000", 10},
};

START_TEST(units_accepts)
{
    const int_case *c = &units_ok[_i];
    int64_t v = SENTINEL;
    gp_err err = {{0}};
    ck_assert_msg(quantity_parse_units(c->in, &v, &err) == 0, "\"%s\": %s", c->in, err.msg);
    ck_assert_msg(v == c->v, "\"%s\": got %lld, want %lld", c->in, (long long)v, (long long)c->v);
}
END_TEST

static const bad_case units_bad[] = {
    {"", "empty"},
    {"1x", "unknown suffix"},
    {"1e41", "out of range"},
    {"1.5.5", "1.5.5"},
    {"Gi", "no digits"},
    {"1111111111111111111111111111111111111111111111111111111111111111111", "longer than"},
};

START_TEST(units_rejects)
{
    const bad_case *c = &units_bad[_i];
    int64_t v = SENTINEL;
    gp_err err = {{0}};
    ck_assert_msg(quantity_parse_units(c->in, &v, &err) == -1, "\"%s\" accepted", c->in);
    ck_assert_msg(strstr(err.msg, c->msg) != NULL, "\"%s\": message \"%s\" lacks \"%s\"", c->in,
                  err.msg, c->msg);
    ck_assert_msg(v == SENTINEL, "\"%s\": output written on failure", c->in);
}
END_TEST

Suite *suite_quantity(void);
Suite *suite_quantity(void)
{
    Suite *s = suite_create("quantity");
    TCase *t = tcase_create("parse");
    tcase_add_loop_test(t, milli_accepts, 0, (int)GP_ARRAY_LEN(milli_ok));
    tcase_add_loop_test(t, milli_rejects, 0, (int)GP_ARRAY_LEN(milli_bad));
    tcase_add_loop_test(t, int_accepts, 0, (int)GP_ARRAY_LEN(int_ok));
    tcase_add_loop_test(t, int_rejects, 0, (int)GP_ARRAY_LEN(int_bad));
    tcase_add_loop_test(t, units_accepts, 0, (int)GP_ARRAY_LEN(units_ok));
    tcase_add_loop_test(t, units_rejects, 0, (int)GP_ARRAY_LEN(units_bad));
    tcase_add_loop_test(t, bug_long_fraction_is_not_large, 0, (int)GP_ARRAY_LEN(long_fraction));
    suite_add_tcase(s, t);
    return s;
}
