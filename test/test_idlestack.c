/* test_idlestack.c -- idle handles: reused newest first, bounded, and given
 * back only when they stayed idle through a whole period (a burst's handles go,
 * the ones steady traffic keeps using stay). */
#include <check.h>

#include "lib/idlestack.h"

static int h[64];   /* the "handles": addresses of these */

START_TEST(reuse_newest_first_and_bounded)
{
    gp_idlestack s;
    idlestack_init(&s, 3, 60, 0);
    ck_assert_ptr_null(idlestack_pop(&s));
    ck_assert(idlestack_push(&s, &h[0]));
    ck_assert(idlestack_push(&s, &h[1]));
    ck_assert(idlestack_push(&s, &h[2]));
    ck_assert(!idlestack_push(&s, &h[3]));   /* full: the caller closes it */
    ck_assert_ptr_eq(idlestack_pop(&s), &h[2]);
    ck_assert_ptr_eq(idlestack_pop(&s), &h[1]);
    ck_assert(idlestack_push(&s, &h[4]));
    ck_assert_ptr_eq(idlestack_pop(&s), &h[4]);
    ck_assert_ptr_eq(idlestack_pop(&s), &h[0]);
    ck_assert_ptr_null(idlestack_pop(&s));
    idlestack_free(&s);
}
END_TEST

/* A burst of 10 at once, then one request at a time: after one period the
 * handles the burst left go (oldest first), the one still in use stays. */
START_TEST(a_burst_is_given_back_after_a_period)
{
    gp_idlestack s;
    idlestack_init(&s, 32, 60, 0);
    for (int i = 0; i < 10; i++)
        ck_assert(idlestack_push(&s, &h[i]));
    void *out[32];
    ck_assert_int_eq(idlestack_trim(&s, 30, out, 32), 0);   /* not a period yet */
    /* the first period ends: what was pushed during it was not idle all of it */
    ck_assert_int_eq(idlestack_trim(&s, 61, out, 32), 0);
    ck_assert_int_eq(s.n, 10);
    for (int t = 62; t < 121; t++) {   /* steady: one handle taken and given back */
        void *p = idlestack_pop(&s);
        ck_assert_ptr_eq(p, &h[9]);
        ck_assert(idlestack_push(&s, p));
    }
    int n = idlestack_trim(&s, 121, out, 32);
    ck_assert_int_eq(n, 9);
    for (int i = 0; i < 9; i++)
        ck_assert_ptr_eq(out[i], &h[i]);   /* oldest first */
    ck_assert_int_eq(s.n, 1);
    ck_assert_ptr_eq(idlestack_pop(&s), &h[9]);   /* the one in use stays */
    idlestack_free(&s);
}
END_TEST

/* Handles that every period's peak uses are never taken. */
START_TEST(what_each_period_uses_stays)
{
    gp_idlestack s;
    idlestack_init(&s, 32, 10, 0);
    for (int i = 0; i < 4; i++)
        ck_assert(idlestack_push(&s, &h[i]));
    void *out[32];
    ck_assert_int_eq(idlestack_trim(&s, 10, out, 32), 0);
    for (int period = 1; period <= 5; period++) {
        void *p[4];
        for (int i = 0; i < 4; i++)   /* a peak of 4 at once */
            ck_assert_ptr_nonnull(p[i] = idlestack_pop(&s));
        for (int i = 3; i >= 0; i--)
            ck_assert(idlestack_push(&s, p[i]));
        ck_assert_int_eq(idlestack_trim(&s, 10.0 + 10 * period, out, 32), 0);
        ck_assert_int_eq(s.n, 4);
    }
    /* a period without the peak: the three it did not need go */
    void *p = idlestack_pop(&s);
    ck_assert(idlestack_push(&s, p));
    ck_assert_int_eq(idlestack_trim(&s, 70, out, 32), 3);
    ck_assert_int_eq(s.n, 1);
    /* an idle period takes the last one too */
    ck_assert_int_eq(idlestack_trim(&s, 80, out, 32), 1);
    ck_assert_int_eq(s.n, 0);
    idlestack_free(&s);
}
END_TEST

/* A trim hands out at most what the caller has room for; the rest of the
 * surplus stays for the next period. A clock that went back starts a period. */
START_TEST(trim_bounded_by_room_and_clock_going_back)
{
    gp_idlestack s;
    idlestack_init(&s, 8, 10, 100);
    for (int i = 0; i < 8; i++)
        ck_assert(idlestack_push(&s, &h[i]));
    void *out[3];
    ck_assert_int_eq(idlestack_trim(&s, 110, out, 3), 0);   /* the first period: none was idle all of it */
    ck_assert_int_eq(idlestack_trim(&s, 120, out, 3), 3);
    ck_assert_ptr_eq(out[0], &h[0]);
    ck_assert_int_eq(s.n, 5);
    ck_assert_int_eq(idlestack_trim(&s, 50, out, 3), 3);    /* back in time: trims, restarts */
    ck_assert_ptr_eq(out[0], &h[3]);
    ck_assert_int_eq(idlestack_trim(&s, 55, out, 3), 0);
    ck_assert_int_eq(idlestack_trim(&s, 60, out, 3), 2);
    ck_assert_int_eq(s.n, 0);
    idlestack_free(&s);
}
END_TEST

Suite *suite_idlestack(void);
Suite *suite_idlestack(void)
{
    Suite *s = suite_create("idlestack");
    TCase *t = tcase_create("idlestack");
    tcase_add_test(t, reuse_newest_first_and_bounded);
    tcase_add_test(t, a_burst_is_given_back_after_a_period);
    tcase_add_test(t, what_each_period_uses_stays);
    tcase_add_test(t, trim_bounded_by_room_and_clock_going_back);
    suite_add_tcase(s, t);
    return s;
}
