/* test_flags.c -- the one flag parser: every type in both forms, positionals,
 * the errors (one line and a hint), and the generated usage. */
#include <check.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/flags.h"

typedef struct topts {
    const char *name;
    bool on, strict;
    size_t bytes;
    unsigned n;
    double x, d;
    int pick;
    int calls;
} topts;

static int count(void *base, const char *v, gp_err *err)
{
    topts *o = base;
    if (v && strcmp(v, "bad") == 0)
        return gp_fail(err, "bad is bad");
    o->calls++;
    return 0;
}

#define O(f) offsetof(topts, f)
static const gp_flag tflags[] = {
    GP_FLAG("--name", FLAG_STR, O(name), "S", "a name\nover two lines"),
    GP_FLAG("--on", FLAG_BOOL, O(on), NULL, "a switch"),
    GP_FLAG("--strict", FLAG_BOOL_ARG, O(strict), "true|false", "a boolean with a value"),
    GP_FLAG("--bytes", FLAG_SIZE, O(bytes), "B", "bytes", .min = 1),
    GP_FLAG("--n", FLAG_UINT, O(n), "N", "a count", .min = 1, .max = 8),
    GP_FLAG("--x", FLAG_DOUBLE, O(x), "X", "positive", .min_open = true),
    GP_FLAG("--d", FLAG_DURATION, O(d), "D", "a duration", .max = 3600),
    GP_FLAG("--pick", FLAG_CHOICE, O(pick), "a|bb|c", "a choice", .choices = "a|bb|c"),
    GP_FLAG("--count", FLAG_FN, 0, "V", "custom", .fn = count),
    GP_FLAG("--tick", FLAG_FN, 0, NULL, "custom, no value", .fn = count, .fn_no_value = true),
};
#undef O

static const gp_command tcmd = {"gpupack t", "[flags] [A] [B]", "Tests.", tflags,
                                GP_ARRAY_LEN(tflags), "footer\n", 2};

/* Parses a space-separated command line with stderr and stdout captured.
 * The words stay in a static buffer: args and o's strings point into them
 * until the next call. */
static int parse(const char *line, topts *o, const char **args, int *nargs, char *out, size_t len)
{
    static char buf[512], *argv[32];
    int argc = 0;
    snprintf(buf, sizeof buf, "t %s", line);
    for (char *save = NULL, *t = strtok_r(buf, " ", &save); t && argc < 31;
         t = strtok_r(NULL, " ", &save))
        argv[argc++] = t;
    argv[argc] = NULL;
    memset(o, 0, sizeof *o);
    fflush(stdout);
    fflush(stderr);
    FILE *cap = tmpfile();
    int so = dup(1), se = dup(2);
    dup2(fileno(cap), 1);
    dup2(fileno(cap), 2);
    int rc = flags_parse(&tcmd, argc, argv, o, args, nargs);
    fflush(stdout);
    fflush(stderr);
    dup2(so, 1);
    dup2(se, 2);
    close(so);
    close(se);
    rewind(cap);
    size_t n = fread(out, 1, len - 1, cap);
    out[n] = '\0';
    fclose(cap);
    return rc;
}

START_TEST(parses_every_type_in_both_forms)
{
    topts o;
    const char *args[2];
    int nargs = 0;
    char out[2048];
    ck_assert_int_eq(parse("--name=a --on --strict false --bytes 4096 --n=8 --x 0.5 --d=500ms "
                           "--pick bb --count v --tick A B",
                           &o, args, &nargs, out, sizeof out),
                     FLAGS_OK);
    ck_assert_str_eq(o.name, "a");
    ck_assert(o.on);
    ck_assert(!o.strict);
    ck_assert_uint_eq(o.bytes, 4096);
    ck_assert_uint_eq(o.n, 8);
    ck_assert(o.x == 0.5);
    ck_assert(o.d > 0.4999 && o.d < 0.5001);
    ck_assert_int_eq(o.pick, 1);
    ck_assert_int_eq(o.calls, 2);
    ck_assert_int_eq(nargs, 2);
    ck_assert_str_eq(args[0], "A");
    ck_assert_str_eq(args[1], "B");
    ck_assert_str_eq(out, "");
    ck_assert_int_eq(parse("--on=false --d 2m -- --name", &o, args, &nargs, out, sizeof out),
                     FLAGS_OK);
    ck_assert(!o.on);
    ck_assert(o.d == 120);
    ck_assert_int_eq(nargs, 1);
    ck_assert_str_eq(args[0], "--name");   /* after --, everything is an argument */
}
END_TEST

static const struct {
    const char *line, *msg;
} bad[] = {
    {"--bogus", "gpupack t: unknown flag --bogus\ntry 'gpupack t --help'\n"},
    {"--bogus=1", "unknown flag --bogus\n"},
    {"--name", "--name needs a value\n"},
    {"--on=yes", "--on: true or false, not \"yes\"\n"},
    {"--strict maybe", "--strict: true or false"},
    {"--bytes 0", "--bytes: 0 is not a valid number (at least 1)"},
    {"--bytes -5", "--bytes: -5 is not a valid number"},
    {"--n 9", "--n: 9 is not a valid number (1..8)"},
    {"--n 2x", "--n: 2x is not a valid number"},
    {"--x 0", "--x: 0 is not a positive number"},
    {"--d 2h", "--d: 2h is not a duration"},
    {"--d 0s", "--d: 0s is not a duration"},
    {"--pick d", "--pick: one of a|bb|c, not \"d\""},
    {"--count bad", "--count: bad is bad"},
    {"--tick=1", "--tick takes no value"},
    {"A B C", "unexpected argument C"},
};

START_TEST(usage_errors_are_one_line_and_a_hint)
{
    topts o;
    const char *args[2];
    char out[2048];
    int rc = parse(bad[_i].line, &o, args, NULL, out, sizeof out);
    ck_assert_msg(rc == FLAGS_ERROR, "%s: rc %d", bad[_i].line, rc);
    ck_assert_msg(strstr(out, bad[_i].msg), "%s: %s", bad[_i].line, out);
    ck_assert_msg(strstr(out, "\ntry 'gpupack t --help'\n"), "%s: no hint: %s", bad[_i].line, out);
    int lines = 0;
    for (const char *p = out; *p; p++)
        lines += *p == '\n';
    ck_assert_int_eq(lines, 2);
}
END_TEST

START_TEST(help_is_generated_from_the_table)
{
    topts o;
    char out[4096];
    ck_assert_int_eq(parse("--n 2 -h", &o, NULL, NULL, out, sizeof out), FLAGS_HELP);
    ck_assert_ptr_nonnull(strstr(out, "usage: gpupack t [flags] [A] [B]\nTests.\n\nflags:\n"));
    ck_assert_ptr_nonnull(strstr(out, "  --name S                a name\n"
                                      "                          over two lines\n"));
    ck_assert_ptr_nonnull(strstr(out, "  --on                    a switch\n"));
    ck_assert_ptr_nonnull(strstr(out, "  --strict true|false     a boolean with a value\n"));
    ck_assert_ptr_nonnull(strstr(out, "\nfooter\n"));
    ck_assert_int_eq(parse("--help", &o, NULL, NULL, out, sizeof out), FLAGS_HELP);
}
END_TEST

Suite *suite_flags(void);
Suite *suite_flags(void)
{
    Suite *s = suite_create("flags");
    TCase *t = tcase_create("flags");
    tcase_add_test(t, parses_every_type_in_both_forms);
    tcase_add_loop_test(t, usage_errors_are_one_line_and_a_hint, 0, (int)GP_ARRAY_LEN(bad));
    tcase_add_test(t, help_is_generated_from_the_table);
    suite_add_tcase(s, t);
    return s;
}
