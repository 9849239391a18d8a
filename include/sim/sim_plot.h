/* sim_plot.h -- `gpupack simulate --plot FILE.png`: allocation and
 * fragmentation against arrived load, one series per mode of the run, drawn
 * by gnuplot (a subprocess; Debian package gnuplot-nox). */
#ifndef GP_SIM_PLOT_H
#define GP_SIM_PLOT_H

#include <stdio.h>

#include "sim/sim.h"
#include "lib/util.h"

/* One curve: a policy label, the mode it ran in, its mean result. */
typedef struct sim_plot_series {
    const char *label;
    const char *mode;
    const sim_result *mean;
} sim_plot_series;

/* Writes the gnuplot program (data inline) that draws the series into
 * `png`. Returns 0, or -1 when the path cannot be quoted for gnuplot. Pure. */
int sim_plot_script(FILE *f, const char *png, const sim_plot_series *s, int n, gp_err *err) GP_WUR;

/* Runs gnuplot on that program. Returns 0, or -1 with a message (gnuplot
 * missing or failing). */
int sim_plot_write(const char *png, const sim_plot_series *s, int n, gp_err *err) GP_WUR;

#endif
