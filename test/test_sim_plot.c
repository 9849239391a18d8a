/* test_sim_plot.c -- `gpupack simulate --plot`: the gnuplot program, and the
 * PNG gnuplot draws from it (skipped with a message without gnuplot). */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/sim_plot.h"
#include "testutil.h"
#include "lib/yamljson.h"

static void two_steps(sim_result *r, double a1, double a2)
{
    memset(r, 0, sizeof *r);
    r->nsteps = 2;
    r->step[0] = (sim_point){0.10, a1, 0.05};
    r->step[1] = (sim_point){0.20, a2, 0.07};
    r->end = (sim_point){0.25, a2, 0.08};
}

START_TEST(script_has_data_and_panels)
{
    sim_result f, p;
    two_steps(&f, 0.1, 0.195);
    two_steps(&p, 0.1, 0.18);
    sim_plot_series s[2] = {{"fgd", "filter", &f}, {"fgd", "prioritize", &p}};
    char *text = NULL;
    size_t len;
    FILE *m = open_memstream(&text, &len);
    gp_err err;
    ck_assert_int_eq(sim_plot_script(m, "/tmp/out.png", s, 2, &err), 0);
    fclose(m);
    const char *want[] = {
        "$s0 << EOD\n0 0 0\n10.0000 10.0000 5.0000\n20.0000 19.5000 7.0000\n25.0000 19.5000 8.0000\nEOD\n",
        "$s1 << EOD\n", "set output '/tmp/out.png'", "set multiplot layout 1,2",
        "$s0 using 1:2 with linespoints pt 7 ps 0.6 title 'fgd (filter)'",
        "$s1 using 1:3 with linespoints pt 7 ps 0.6 title 'fgd (prioritize)'",
        "title 'allocation = arrived'", "unset multiplot",
    };
    for (size_t i = 0; i < GP_ARRAY_LEN(want); i++)
        ck_assert_msg(strstr(text, want[i]), "script lacks %s:\n%s", want[i], text);
    free(text);
    /* a name gnuplot could not take as a string */
    m = open_memstream(&text, &len);
    ck_assert_int_eq(sim_plot_script(m, "/tmp/o'ut.png", s, 2, &err), -1);
    fclose(m);
    free(text);
    ck_assert_ptr_nonnull(strstr(err.msg, "quotes"));
}
END_TEST

START_TEST(gnuplot_draws_a_png)
{
    if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
        printf("SKIP gnuplot_draws_a_png: gnuplot not on PATH (apt-get install gnuplot-nox; "
               ".ci/run installs it)\n");
        return;
    }
    sim_result f;
    two_steps(&f, 0.1, 0.195);
    sim_plot_series s = {"best-fit", "filter", &f};
    char png[] = "/tmp/gpupack-plot-XXXXXX.png";
    close(mkstemps(png, 4));
    gp_err err;
    ck_assert_msg(sim_plot_write(png, &s, 1, &err) == 0, "%s", err.msg);
    size_t len = 0;
    char *img = gp_read_file(png, 16u << 20, &len, &err);
    ck_assert_msg(img != NULL, "%s", err.msg);
    ck_assert_uint_gt(len, 5000);
    ck_assert_int_eq(memcmp(img, "\x89PNG", 4), 0);
    free(img);
    unlink(png);
}
END_TEST

Suite *suite_sim_plot(void);
Suite *suite_sim_plot(void)
{
    Suite *s = suite_create("sim_plot");
    TCase *t = tcase_create("plot");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, script_has_data_and_panels);
    tcase_add_test(t, gnuplot_draws_a_png);
    suite_add_tcase(s, t);
    return s;
}
