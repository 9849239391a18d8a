/* run.c -- runs every Check suite (the list is generated from test/test_*.c).
 *   build/out/unit-tests            all suites
 *   build/out/unit-tests NAME...    only the named suites (e.g. placement) */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SUITE(n) Suite *suite_##n(void);
#include "suites.h"
#undef SUITE

struct entry {
    const char *name;
    Suite *(*make)(void);
};

static const struct entry all[] = {
#define SUITE(n) {#n, suite_##n},
#include "suites.h"
#undef SUITE
};

static int wanted(const char *name, int argc, char **argv)
{
    if (argc < 2)
        return 1;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    SRunner *sr = NULL;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (!wanted(all[i].name, argc, argv))
            continue;
        if (!sr)
            sr = srunner_create(all[i].make());
        else
            srunner_add_suite(sr, all[i].make());
    }
    if (!sr) {
        fprintf(stderr, "no such suite\n");
        return 2;
    }
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
