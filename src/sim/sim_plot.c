/* sim_plot.c -- `gpupack simulate --plot`: a gnuplot program, and gnuplot. */
#include "sim/sim_plot.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* gnuplot strings in single quotes take everything but a quote and newlines */
static bool quotable(const char *s)
{
    return !strpbrk(s, "'\n\r");
}

static void data_block(FILE *f, int i, const sim_plot_series *s)
{
    fprintf(f, "$s%d << EOD\n0 0 0\n", i);
    for (int k = 0; k < s->mean->nsteps; k++)
        fprintf(f, "%.4f %.4f %.4f\n", 100 * s->mean->step[k].arrived,
                100 * s->mean->step[k].alloc, 100 * s->mean->step[k].frag);
    const sim_point *e = &s->mean->end;
    fprintf(f, "%.4f %.4f %.4f\nEOD\n", 100 * e->arrived, 100 * e->alloc, 100 * e->frag);
}

int sim_plot_script(FILE *f, const char *png, const sim_plot_series *s, int n, gp_err *err)
{
    if (!quotable(png))
        return gp_fail(err, "--plot %s: the file name may not contain quotes or newlines", png);
    for (int i = 0; i < n; i++)
        if (!quotable(s[i].label))
            return gp_fail(err, "--plot: the label may not contain quotes or newlines");
    for (int i = 0; i < n; i++)
        data_block(f, i, &s[i]);
    fprintf(f,
            "set terminal pngcairo size 1000,420 font 'sans,10'\n"
            "set output '%s'\n"
            "set multiplot layout 1,2\n"
            "set grid\nset key Left reverse samplen 2\n"
            "set xlabel 'arrived GPU workload (%% of capacity)'\n",
            png);
    for (int panel = 0; panel < 2; panel++) {
        fprintf(f, "set ylabel '%s'\nset title '%s'\n",
                panel ? "fragmentation (% of idle GPU share)" : "GPU allocation (% of capacity)",
                panel ? "Fragmentation" : "Allocation");
        /* the empty corner of each panel: below the allocation curve, above the
         * low fragmentation of light load */
        fprintf(f, "set key %s\nset yrange [0:%s]\nplot ", panel ? "left top" : "right bottom",
                panel ? "105" : "100");
        for (int i = 0; i < n; i++)
            fprintf(f, "%s$s%d using 1:%d with linespoints pt 7 ps 0.6 title '%s (%s)'",
                    i ? ", " : "", i, panel ? 3 : 2, s[i].label, s[i].mode);
        fprintf(f, panel ? "\n" : ", x with lines dt 2 lc rgb 'gray' title 'allocation = arrived'\n");
    }
    fprintf(f, "unset multiplot\n");
    return 0;
}

int sim_plot_write(const char *png, const sim_plot_series *s, int n, gp_err *err)
{
    char *prog = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&prog, &len);
    if (!m)
        abort();
    int rc = sim_plot_script(m, png, s, n, err);
    fclose(m);
    if (rc == 0) {
        FILE *g = popen("gnuplot 2>&1 >/dev/null", "w");
        if (!g) {
            rc = gp_fail(err, "--plot: cannot run gnuplot");
        } else {
            fwrite(prog, 1, len, g);
            int st = pclose(g);
            if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
                rc = gp_fail(err, "--plot %s: gnuplot failed (exit %d); is it installed "
                                  "(apt-get install gnuplot-nox)?",
                             png, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        }
    }
    free(prog);
    return rc;
}
