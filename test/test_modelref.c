/* test_modelref.c -- the process's table of GPU model names (model/modelref.h). */
#include "model/modelref.h"

#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

START_TEST(equal_names_equal_refs)
{
    gp_model_ref a = gp_model_intern("modelref-A100-SXM4-80GB");
    gp_model_ref b = gp_model_intern("modelref-A100-SXM4-40GB");
    ck_assert_uint_ne(a, 0);
    ck_assert_uint_ne(b, 0);
    ck_assert_uint_ne(a, b);
    char copy[] = "modelref-A100-SXM4-80GB";   /* another buffer, same name */
    ck_assert_uint_eq(gp_model_intern(copy), a);
    ck_assert_str_eq(gp_model_name(a), "modelref-A100-SXM4-80GB");
    ck_assert_str_eq(gp_model_name(b), "modelref-A100-SXM4-40GB");
    /* names differ by case: two models (placement compares names exactly) */
    ck_assert_uint_ne(gp_model_intern("MODELREF-A100-SXM4-80GB"), a);
}
END_TEST

START_TEST(empty_and_unknown)
{
    ck_assert_uint_eq(gp_model_intern(""), 0);
    ck_assert_uint_eq(gp_model_intern(NULL), 0);
    ck_assert_str_eq(gp_model_name(0), "");
    /* a reference never handed out reads as no model, not as memory past the table */
    ck_assert_str_eq(gp_model_name(GP_MODEL_REFS_MAX - 1), "");
    ck_assert_str_eq(gp_model_name(65535), "");
}
END_TEST

START_TEST(long_name_cut)
{
    char name[GP_MODEL_MAX + 20];
    memset(name, 'x', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    memcpy(name, "modelref-long-", 14);
    gp_model_ref r = gp_model_intern(name);
    ck_assert_uint_eq(strlen(gp_model_name(r)), GP_MODEL_MAX - 1);
    ck_assert(strncmp(gp_model_name(r), name, GP_MODEL_MAX - 1) == 0);
    /* the same first GP_MODEL_MAX - 1 bytes: the same name */
    name[GP_MODEL_MAX + 5] = 'y';
    ck_assert_uint_eq(gp_model_intern(name), r);
    /* a name that is a prefix of a kept one is another name */
    name[20] = '\0';
    ck_assert_uint_ne(gp_model_intern(name), r);
}
END_TEST

/* Filling the table would leave it full for the suites after this one (they
 * share the process under CK_FORK=no): a child process fills it. */
START_TEST(full_table)
{
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        gp_model_ref kept = gp_model_intern("modelref-kept");
        int used = gp_model_refs_used(), bad = 0;
        char name[32];
        for (int i = used; i < GP_MODEL_REFS_MAX - 1; i++) {
            snprintf(name, sizeof name, "modelref-fill-%d", i);
            bad += gp_model_intern(name) == 0;
        }
        bad += gp_model_refs_used() != GP_MODEL_REFS_MAX - 1;
        bad += gp_model_refs_refused() != 0;
        /* full: a new name is no model; the names kept still resolve */
        bad += gp_model_intern("modelref-one-too-many") != 0;
        bad += gp_model_intern("modelref-two-too-many") != 0;
        bad += gp_model_refs_refused() != 2;
        bad += gp_model_intern("modelref-kept") != kept;
        bad += strcmp(gp_model_name(kept), "modelref-kept") != 0;
        snprintf(name, sizeof name, "modelref-fill-%d", GP_MODEL_REFS_MAX - 2);
        bad += strcmp(gp_model_name(gp_model_intern(name)), name) != 0;
        _exit(bad ? 10 + (bad > 100 ? 100 : bad) : 0);
    }
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: status %d (10 + failed checks)", st);
}
END_TEST

#define RACERS 4
#define RACE_NAMES 64

static void *race(void *arg)
{
    gp_model_ref *out = arg;
    char name[32];
    for (int i = 0; i < RACE_NAMES; i++) {
        snprintf(name, sizeof name, "modelref-race-%d", i);
        out[i] = gp_model_intern(name);
    }
    return NULL;
}

START_TEST(threads_agree)
{
    static gp_model_ref got[RACERS][RACE_NAMES];
    pthread_t t[RACERS];
    for (int i = 0; i < RACERS; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, race, got[i]), 0);
    for (int i = 0; i < RACERS; i++)
        pthread_join(t[i], NULL);
    for (int n = 0; n < RACE_NAMES; n++) {
        char name[32];
        snprintf(name, sizeof name, "modelref-race-%d", n);
        ck_assert_uint_ne(got[0][n], 0);
        ck_assert_str_eq(gp_model_name(got[0][n]), name);
        for (int i = 1; i < RACERS; i++)
            ck_assert_uint_eq(got[i][n], got[0][n]);
    }
}
END_TEST

Suite *suite_modelref(void);
Suite *suite_modelref(void)
{
    Suite *s = suite_create("modelref");
    TCase *t = tcase_create("intern");
    tcase_add_test(t, equal_names_equal_refs);
    tcase_add_test(t, empty_and_unknown);
    tcase_add_test(t, long_name_cut);
    tcase_add_test(t, full_table);
    tcase_add_test(t, threads_agree);
    suite_add_tcase(s, t);
    return s;
}
