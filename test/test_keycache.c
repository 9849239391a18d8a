/* test_keycache.c -- the fixed-size key -> double cache: hits, replacement of the
 * less recently used of a set, key 0, NULL cache, uncounted lookups and their
 * tally, and threads at once. */
#include <check.h>
#include <pthread.h>

#include "lib/keycache.h"
#include "lib/util.h"

START_TEST(get_put_replace)
{
    gp_keycache *c = keycache_new(100);   /* rounded up to 128 slots */
    double v = -1;
    ck_assert(!keycache_get(c, 42, &v));
    keycache_put(c, 42, 1.5);
    ck_assert(keycache_get(c, 42, &v));
    ck_assert_double_eq(v, 1.5);
    keycache_put(c, 42, 2.5);             /* replaced */
    ck_assert(keycache_get(c, 42, &v));
    ck_assert_double_eq(v, 2.5);
    /* 129 distinct keys in 128 slots: some are pushed out, a lookup never
     * answers another key's value */
    for (uint64_t k = 1000; k < 1129; k++)
        keycache_put(c, k, (double)k);
    int hits = 0;
    for (uint64_t k = 1000; k < 1129; k++)
        if (keycache_get(c, k, &v)) {
            ck_assert_double_eq(v, (double)k);
            hits++;
        }
    ck_assert_int_ge(hits, 64);
    ck_assert_int_lt(hits, 129);
    keycache_put(c, 0, 9.0);              /* key 0 means empty: never stored */
    ck_assert(!keycache_get(c, 0, &v));
    unsigned long h, m;
    keycache_stats(c, &h, &m);
    ck_assert_uint_eq(h, 2 + (unsigned long)hits);   /* key 0 is not a lookup */
    ck_assert_uint_eq(m, 1 + 129 - (unsigned long)hits);
    /* an uncounted lookup answers the same and counts nothing until tallied */
    keycache_put(c, 4242, 3.5);
    ck_assert(keycache_lookup(c, 4242, &v));
    ck_assert_double_eq(v, 3.5);
    ck_assert(!keycache_lookup(c, 77, &v));
    keycache_stats(c, &h, &m);
    ck_assert_uint_eq(h, 2 + (unsigned long)hits);
    keycache_tally(c, 5, 3);
    keycache_tally(NULL, 5, 3);
    unsigned long h2, m2;
    keycache_stats(c, &h2, &m2);
    ck_assert_uint_eq(h2, h + 5);
    ck_assert_uint_eq(m2, m + 3);
    keycache_free(c);
    ck_assert(!keycache_get(NULL, 42, &v));
    keycache_put(NULL, 42, 1);
    keycache_free(NULL);
}
END_TEST

/* Four keys share a set, and the fifth pushes out the one used least
 * recently. (White box: a small key's set is its low bits, so multiples of
 * 16 meet in set 0 of a 64-slot cache.) */
START_TEST(four_ways_least_recently_used_goes)
{
    gp_keycache *c = keycache_new(64);
    double v;
    for (uint64_t k = 16; k <= 64; k += 16)
        keycache_put(c, k, (double)k);
    for (uint64_t k = 16; k <= 64; k += 16)
        ck_assert(keycache_get(c, k, &v) && v == (double)k);   /* all four kept */
    ck_assert(keycache_get(c, 16, &v));   /* 16 used last; 32 now the least recent */
    keycache_put(c, 80, 80.0);
    ck_assert(!keycache_get(c, 32, &v));
    for (uint64_t k = 16; k <= 80; k += 16)
        if (k != 32)
            ck_assert(keycache_get(c, k, &v) && v == (double)k);
    keycache_put(c, 48, 4.8);             /* a key present is replaced in place */
    ck_assert(keycache_get(c, 48, &v) && v == 4.8);
    for (uint64_t k = 16; k <= 80; k += 16)
        if (k != 32)
            ck_assert(keycache_get(c, k, &v));
    keycache_free(c);
}
END_TEST

static void *hammer(void *arg)
{
    gp_keycache *c = arg;
    for (uint64_t k = 1; k < 20000; k++) {
        keycache_put(c, k, (double)k * 2);
        double v;
        if (keycache_get(c, k ^ 1, &v) && v != (double)(k ^ 1) * 2)
            return (void *)1;   /* a torn or foreign value */
    }
    return NULL;
}

START_TEST(threads_never_see_a_foreign_value)
{
    gp_keycache *c = keycache_new(1024);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, hammer, c);
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        ck_assert_ptr_null(r);
    }
    unsigned long h, m;   /* every lookup counted once, whichever stripe counted it */
    keycache_stats(c, &h, &m);
    ck_assert_uint_eq(h + m, 4ul * 19998);   /* key 0 (k = 1) is no lookup */
    keycache_free(c);
}
END_TEST

Suite *suite_keycache(void);
Suite *suite_keycache(void)
{
    Suite *s = suite_create("keycache");
    TCase *t = tcase_create("keycache");
    tcase_add_test(t, get_put_replace);
    tcase_add_test(t, four_ways_least_recently_used_goes);
    tcase_add_test(t, threads_never_see_a_foreign_value);
    suite_add_tcase(s, t);
    return s;
}
