/* test_cpus.c -- the CPUs a quota allows, from cgroup v1 and v2 text, and the
 * usable count's bounds. */
#include <check.h>
#include <unistd.h>

#include "lib/cpus.h"

START_TEST(quota_text_of_both_cgroup_versions)
{
    ck_assert_int_eq(gp_cpus_from_quota("100000 100000\n", NULL), 1);
    ck_assert_int_eq(gp_cpus_from_quota("150000 100000\n", NULL), 2);   /* 1.5 rounds up */
    ck_assert_int_eq(gp_cpus_from_quota("50000 100000", NULL), 1);
    ck_assert_int_eq(gp_cpus_from_quota("400000 100000", NULL), 4);
    ck_assert_int_eq(gp_cpus_from_quota("max 100000\n", NULL), 0);      /* no limit */
    ck_assert_int_eq(gp_cpus_from_quota("200000 100000", "x"), 0);      /* v1 with junk */
    ck_assert_int_eq(gp_cpus_from_quota("-1\n", "100000\n"), 0);        /* v1: no limit */
    ck_assert_int_eq(gp_cpus_from_quota("250000\n", "100000\n"), 3);
    ck_assert_int_eq(gp_cpus_from_quota("", NULL), 0);
    ck_assert_int_eq(gp_cpus_from_quota("100000", NULL), 0);            /* no period */
    ck_assert_int_eq(gp_cpus_from_quota("1e5 100000", NULL), 0);
    ck_assert_int_eq(gp_cpus_from_quota("100000 0", NULL), 0);
    ck_assert_int_eq(gp_cpus_from_quota("99999999999999999999 1", NULL), 0);   /* overflow */
    ck_assert_int_eq(gp_cpus_from_quota("999999999999 1", NULL), 4096);         /* capped */
    ck_assert_int_eq(gp_cpus_from_quota(NULL, NULL), 0);
}
END_TEST

START_TEST(usable_is_within_what_the_node_has)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int n = gp_cpus_usable();
    ck_assert_int_ge(n, 1);
    if (online > 0)
        ck_assert_int_le(n, online);
}
END_TEST

Suite *suite_cpus(void);
Suite *suite_cpus(void)
{
    Suite *s = suite_create("cpus");
    TCase *t = tcase_create("quota");
    tcase_add_test(t, quota_text_of_both_cgroup_versions);
    tcase_add_test(t, usable_is_within_what_the_node_has);
    suite_add_tcase(s, t);
    return s;
}
