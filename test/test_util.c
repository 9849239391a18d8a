/* test_util.c -- the growable buffer's limit and sticky error, bounded copy, the heap figures,
 * the string map, the CPU clock. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pthread.h>

#include "lib/strmap.h"
#include "lib/util.h"
#include "lib/workq.h"

START_TEST(buf_appends_within_limit)
{
    gp_buf b;
    gp_buf_init(&b, 8);
    ck_assert_int_eq(gp_buf_append(&b, "abc", 3), 0);
    ck_assert_int_eq(gp_buf_printf(&b, "%d", 12345), 0);   /* exactly 8 bytes */
    ck_assert_str_eq(b.data, "abc12345");
    ck_assert(!gp_buf_failed(&b));
    gp_buf_free(&b);
    gp_buf_free(&b);   /* a freed buffer may be freed again */
}
END_TEST

/* The first append past the limit fails and the failure sticks: a later
 * append that would fit does nothing, so a writer may check once at the end. */
START_TEST(buf_error_sticks)
{
    gp_buf b;
    gp_buf_init(&b, 8);
    ck_assert_int_eq(gp_buf_append(&b, "abcdef", 6), 0);
    ck_assert_int_eq(gp_buf_printf(&b, "%s", "xyz"), -1);   /* 9 bytes > 8 */
    ck_assert(gp_buf_failed(&b));
    ck_assert_int_eq(gp_buf_append(&b, "x", 1), -1);         /* would fit, but failed */
    ck_assert_int_eq(gp_buf_printf(&b, "y"), -1);
    ck_assert_uint_eq(b.len, 6);
    ck_assert_str_eq(b.data, "abcdef");
    ck_assert(gp_buf_failed(&b));
    /* reset clears the error and keeps the capacity */
    gp_buf_reset(&b);
    ck_assert(!gp_buf_failed(&b));
    ck_assert_int_eq(gp_buf_append(&b, "12345678", 8), 0);
    ck_assert_str_eq(b.data, "12345678");
    gp_buf_free(&b);
    ck_assert(!gp_buf_failed(&b));
}
END_TEST

/* A long formatted append takes the heap path and obeys the limit too. */
START_TEST(buf_printf_long)
{
    gp_buf b;
    gp_buf_init(&b, 1000);
    char big[600];
    memset(big, 'q', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    ck_assert_int_eq(gp_buf_printf(&b, "%s", big), 0);
    ck_assert_uint_eq(b.len, 599);
    ck_assert_int_eq(gp_buf_printf(&b, "%s", big), -1);
    ck_assert(gp_buf_failed(&b));
    ck_assert_uint_eq(b.len, 599);
    gp_buf_free(&b);
}
END_TEST

START_TEST(strlcpy_truncates)
{
    char d[4];
    ck_assert_uint_eq(gp_strlcpy(d, "abcdef", sizeof d), 6);
    ck_assert_str_eq(d, "abc");
}
END_TEST

/* The one file reader: exactly max bytes pass, one more fails with EFBIG; a
 * missing file names the path; an empty file is "". */
START_TEST(read_file_is_bounded)
{
    char path[] = "/tmp/gpupack-read-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "0123456789", 10), 10);
    close(fd);
    gp_err err;
    size_t len = 99;
    char *t = gp_read_file(path, 10, &len, &err);
    ck_assert_ptr_nonnull(t);
    ck_assert_uint_eq(len, 10);
    ck_assert_str_eq(t, "0123456789");
    free(t);
    errno = 0;
    ck_assert_ptr_null(gp_read_file(path, 9, &len, &err));
    ck_assert_int_eq(errno, EFBIG);
    ck_assert_ptr_nonnull(strstr(err.msg, ": larger than 9 bytes"));
    ck_assert_int_eq(truncate(path, 0), 0);
    t = gp_read_file(path, 9, NULL, &err);
    ck_assert_str_eq(t, "");
    free(t);
    unlink(path);
    ck_assert_ptr_null(gp_read_file(path, 9, &len, &err));
    ck_assert_int_eq(errno, ENOENT);
    ck_assert_ptr_nonnull(strstr(err.msg, path));
    ck_assert_ptr_nonnull(strstr(err.msg, "No such file"));
}
END_TEST

/* gp_heap_stats follows what is allocated and freed. Under AddressSanitizer
 * or valgrind malloc is not glibc's and glibc's figures stay 0: nothing to
 * check there (the plain run checks it). */
START_TEST(heap_stats_follow_allocations)
{
    size_t used0, free0, used1, free1, used2, free2;
#if defined(__SANITIZE_ADDRESS__)
    return;
#endif
    const char *pre = getenv("LD_PRELOAD");
    if (pre && strstr(pre, "vgpreload"))
        return;   /* valgrind's malloc */
    if (!gp_heap_stats(&used0, &free0))
        return;   /* not glibc 2.33+: the metric is not served either */
    enum { N = 64, SZ = 4096 };   /* small blocks: from the arena, not mmapped */
    char *p[N];
    for (int i = 0; i < N; i++) {
        p[i] = xmalloc(SZ);
        memset(p[i], i, SZ);
    }
    ck_assert(gp_heap_stats(&used1, &free1));
    for (int i = 0; i < N; i++)
        free(p[i]);
    ck_assert(gp_heap_stats(&used2, &free2));
    ck_assert_uint_ge(used1, used0 + (size_t)N * SZ);
    ck_assert_uint_le(used2 + (size_t)N * SZ, used1);
}
END_TEST

/* strmap_drop_if removes what its predicate picks, hands each value over
 * once, and leaves every other key reachable through the tombstones it leaves
 * (a small map: long probe chains through dropped slots). */
static bool drop_odd(const char *key, void *val, void *ud)
{
    (void)key;
    int *v = val;
    if (*v % 2 == 0)
        return false;
    (*(int *)ud)++;
    free(v);
    return true;
}

typedef struct named {
    char name[24];
    int v;
} named;

static named *named_new(int i, int v)
{
    named *n = xmalloc(sizeof *n);
    snprintf(n->name, sizeof n->name, "node-%d", i);
    n->v = v;
    return n;
}

static bool drop_low(const char *key, void *val, void *ud)
{
    (void)key;
    (void)ud;
    named *n = val;
    bool drop = n->v < 100;
    if (drop)
        free(n);
    return drop;
}

/* Keys that live in the values: replacing a value hands the map the new
 * value's key, and freeing the old value then leaves no dangling key behind
 * (AddressSanitizer and valgrind read the suite). */
START_TEST(strmap_borrowing_keys_follow_their_values)
{
    strmap *m = strmap_new_borrowing();
    enum { N = 300 };
    for (int i = 0; i < N; i++) {
        named *n = named_new(i, i);
        ck_assert_ptr_null(strmap_put(m, n->name, n));
    }
    for (int i = 0; i < N; i += 3) {   /* a new value for every third: the old one is freed */
        named *n = named_new(i, 1000 + i);
        named *old = strmap_put(m, n->name, n);
        ck_assert_ptr_nonnull(old);
        ck_assert_int_eq(old->v, i);
        free(old);
    }
    ck_assert_uint_eq(strmap_count(m), N);
    /* growing rehashes by the stored hash; the keys read after are the new values' */
    for (int i = N; i < 4 * N; i++) {
        named *n = named_new(i, i);
        ck_assert_ptr_null(strmap_put(m, n->name, n));
    }
    for (int i = 0; i < 4 * N; i++) {
        char k[24];
        snprintf(k, sizeof k, "node-%d", i);
        named *n = strmap_get(m, k);
        ck_assert_ptr_nonnull(n);
        ck_assert_int_eq(n->v, i < N && i % 3 == 0 ? 1000 + i : i);
    }
    named *gone = strmap_del(m, "node-7");
    ck_assert_ptr_nonnull(gone);
    free(gone);
    ck_assert_ptr_null(strmap_get(m, "node-7"));
    /* v < 100: 0..99 less the 34 renewed (multiples of 3) and node-7 */
    ck_assert_uint_eq(strmap_drop_if(m, drop_low, NULL), 65);
    size_t it = 0;
    const char *key;
    named *n;
    size_t left = 0;
    while ((n = strmap_next(m, &it, &key))) {
        ck_assert_ptr_eq(key, n->name);   /* the key is the value's own */
        left++;
        free(n);
    }
    ck_assert_uint_eq(left, 4 * N - 1 - 65);
    strmap_free(m);
}
END_TEST

START_TEST(strmap_drop_if_keeps_the_rest)
{
    strmap *m = strmap_new();
    enum { N = 200 };
    for (int i = 0; i < N; i++) {
        char k[16];
        snprintf(k, sizeof k, "pod-%d", i);
        int *v = xmalloc(sizeof *v);
        *v = i;
        ck_assert_ptr_null(strmap_put(m, k, v));
    }
    int freed = 0;
    ck_assert_uint_eq(strmap_drop_if(m, drop_odd, &freed), N / 2);
    ck_assert_int_eq(freed, N / 2);
    ck_assert_uint_eq(strmap_count(m), N / 2);
    for (int i = 0; i < N; i++) {
        char k[16];
        snprintf(k, sizeof k, "pod-%d", i);
        int *v = strmap_get(m, k);
        if (i % 2) {
            ck_assert_ptr_null(v);
        } else {
            ck_assert_ptr_nonnull(v);
            ck_assert_int_eq(*v, i);
        }
    }
    /* a dropped key comes back as a new entry */
    int *again = xmalloc(sizeof *again);
    *again = 2;
    ck_assert_ptr_null(strmap_put(m, "pod-1", again));
    ck_assert_uint_eq(strmap_count(m), N / 2 + 1);
    ck_assert_uint_eq(strmap_drop_if(m, drop_odd, &freed), 0);
    size_t it = 0;
    int *v;
    while ((v = strmap_next(m, &it, NULL)))
        free(v);
    strmap_free(m);
}
END_TEST

/* Ill-formed UTF-8 becomes '?', byte by byte; well-formed text is kept. */
START_TEST(utf8_scrub_table)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"plain", "plain"},
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x99\x82", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x99\x82"},
        {"\xff\xfe", "??"},
        {"cut \xe2\x82", "cut ??"},              /* a character cut by %.Ns */
        {"\xc0\xaf", "??"},                        /* overlong '/' */
        {"\xed\xa0\x80", "???"},                   /* a surrogate */
        {"\xf4\x90\x80\x80", "????"},               /* past U+10FFFF */
        {"a\x80" "b", "a?b"},                       /* a lone continuation byte */
    };
    for (size_t i = 0; i < GP_ARRAY_LEN(cases); i++) {
        char *s = xstrdup(cases[i].in);
        ck_assert_str_eq(gp_utf8_scrub(s), cases[i].out);
        free(s);
    }
}
END_TEST

/* Threads carry names that top -H, perf and /proc tell apart; a long name is
 * cut to the kernel's 15 characters, not refused (which would keep the
 * process's name). */
static void *name_self(void *arg)
{
    gp_thread_set_name(arg);
    char *got = xcalloc(1, 64);
    pthread_getname_np(pthread_self(), got, 64);
    return got;
}

static void record_name(void *arg)
{
    pthread_getname_np(pthread_self(), arg, 64);
}

/* gp_cpu_s counts the process's CPU time: it stands still while the process
 * sleeps and moves when it works (gp_mono_s moves in both). */
START_TEST(cpu_clock_counts_work_not_sleep)
{
    double c0 = gp_cpu_s(), m0 = gp_mono_s();
    usleep(100 * 1000);
    ck_assert_double_ge(gp_mono_s() - m0, 0.1);
    ck_assert_double_lt(gp_cpu_s() - c0, 0.05);
    c0 = gp_cpu_s();
    volatile unsigned long x = 0;
    while (gp_cpu_s() - c0 < 0.01 && gp_mono_s() - m0 < 30)
        x++;
    ck_assert_double_ge(gp_cpu_s() - c0, 0.01);
}
END_TEST

START_TEST(threads_are_named)
{
    const char *names[] = {"w-pods", "w-resourceclaims", "housekeeping"};
    const char *want[] = {"w-pods", "w-resourceclaim", "housekeeping"};
    for (size_t i = 0; i < GP_ARRAY_LEN(names); i++) {
        pthread_t t;
        ck_assert_int_eq(pthread_create(&t, NULL, name_self, (void *)names[i]), 0);
        char *got = NULL;
        pthread_join(t, (void **)&got);
        ck_assert_int_eq(strlen(got), strlen(names[i]) > 15 ? 15 : strlen(names[i]));
        ck_assert_msg(strncmp(got, want[i], strlen(want[i])) == 0, "%s: named '%s'", names[i], got);
        free(got);
    }
    /* a pool's threads carry the pool's name */
    gp_err err;
    gp_workq *q = workq_new(2, "bind threads", &err);
    ck_assert_ptr_nonnull(q);
    char name[64] = "";
    workq_push(q, record_name, name);
    workq_free(q);   /* runs the job and joins its thread */
    ck_assert_str_eq(name, "bind threads");
}
END_TEST

Suite *suite_util(void);
Suite *suite_util(void)
{
    Suite *s = suite_create("util");
    TCase *t = tcase_create("buf");
    tcase_add_test(t, buf_appends_within_limit);
    tcase_add_test(t, utf8_scrub_table);
    tcase_add_test(t, buf_error_sticks);
    tcase_add_test(t, buf_printf_long);
    tcase_add_test(t, strlcpy_truncates);
    tcase_add_test(t, read_file_is_bounded);
    tcase_add_test(t, heap_stats_follow_allocations);
    tcase_add_test(t, strmap_drop_if_keeps_the_rest);
    tcase_add_test(t, strmap_borrowing_keys_follow_their_values);
    tcase_add_test(t, threads_are_named);
    tcase_add_test(t, cpu_clock_counts_work_not_sleep);
    suite_add_tcase(s, t);
    return s;
}
