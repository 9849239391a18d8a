/* flags.c -- typed flag tables: parsing, usage errors with a hint, generated --help. */
#include "lib/flags.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define HELP_COL 26   /* where the help text of a flag starts */

void flags_usage(const gp_command *cmd, FILE *f)
{
    fprintf(f, "usage: %s%s%s\n", cmd->name, cmd->synopsis ? " " : "",
            cmd->synopsis ? cmd->synopsis : "");
    if (cmd->summary)
        fprintf(f, "%s\n", cmd->summary);
    if (cmd->nflags)
        fprintf(f, "\nflags:\n");
    for (size_t i = 0; i < cmd->nflags; i++) {
        const gp_flag *fl = &cmd->flags[i];
        char head[128];
        int n = snprintf(head, sizeof head, "  %s%s%s", fl->name, fl->arg ? " " : "",
                         fl->arg ? fl->arg : "");
        const char *h = fl->help ? fl->help : "";
        if (n + 1 >= HELP_COL)
            fprintf(f, "%s\n%*s", head, HELP_COL, "");
        else
            fprintf(f, "%-*s", HELP_COL, head);
        for (const char *p = h; *p;) {
            const char *nl = strchr(p, '\n');
            size_t len = nl ? (size_t)(nl - p) : strlen(p);
            fprintf(f, "%.*s\n", (int)len, p);
            if (!nl)
                break;
            p = nl + 1;
            fprintf(f, "%*s", HELP_COL, "");
        }
        if (!*h)
            fputc('\n', f);
    }
    if (cmd->footer)
        fprintf(f, "%s", cmd->footer);
}

static void verror(const gp_command *cmd, const char *fmt, va_list ap) GP_PRINTF(2, 0);
static void verror(const gp_command *cmd, const char *fmt, va_list ap)
{
    fprintf(stderr, "%s: ", cmd->name);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\ntry '%s --help'\n", cmd->name);
}

int flags_error(const gp_command *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verror(cmd, fmt, ap);
    va_end(ap);
    return FLAGS_ERROR;
}

static const gp_flag *find(const gp_command *cmd, const char *name, size_t len)
{
    for (size_t i = 0; i < cmd->nflags; i++)
        if (strlen(cmd->flags[i].name) == len && strncmp(cmd->flags[i].name, name, len) == 0)
            return &cmd->flags[i];
    return NULL;
}

static bool takes_value(const gp_flag *f)
{
    return f->type != FLAG_BOOL && !(f->type == FLAG_FN && f->fn_no_value);
}

static int parse_whole(const char *v, double lo, double hi, unsigned long long *out)
{
    char *end;
    if (!*v || *v == '-' || *v == '+')
        return -1;
    unsigned long long n = strtoull(v, &end, 10);
    if (*end || (double)n < lo || (hi > 0 && (double)n > hi))
        return -1;
    *out = n;
    return 0;
}

/* Stores value v for flag f (v NULL for value-less flags). */
static int store(const gp_flag *f, const char *v, void *base, gp_err *err)
{
    char *field = (char *)base + f->off, *end;
    unsigned long long n;
    switch (f->type) {
    case FLAG_STR:
        *(const char **)field = v;
        return 0;
    case FLAG_BOOL:
    case FLAG_BOOL_ARG:
        if (v && strcmp(v, "true") != 0 && strcmp(v, "false") != 0)
            return gp_fail(err, "%s: true or false, not \"%s\"", f->name, v);
        *(bool *)field = !v || v[0] == 't';
        return 0;
    case FLAG_SIZE:
    case FLAG_UINT:
        if (parse_whole(v, f->min, f->max, &n)) {
            if (f->max > 0)
                return gp_fail(err, "%s: %s is not a valid number (%g..%g)", f->name, v, f->min,
                               f->max);
            return gp_fail(err, "%s: %s is not a valid number (at least %g)", f->name, v, f->min);
        }
        if (f->type == FLAG_SIZE)
            *(size_t *)field = (size_t)n;
        else
            *(unsigned *)field = (unsigned)n;
        return 0;
    case FLAG_DOUBLE: {
        double d = strtod(v, &end);
        if (!*v || *end || !(f->min_open ? d > f->min : d >= f->min) || (f->max > 0 && d > f->max)) {
            if (f->min_open && f->max <= 0)
                return gp_fail(err, "%s: %s is not a positive number", f->name, v);
            return gp_fail(err, "%s: \"%s\" is not a number in %g..%g", f->name, v, f->min, f->max);
        }
        *(double *)field = d;
        return 0;
    }
    case FLAG_DURATION: {
        double d = strtod(v, &end);
        double unit = strcmp(end, "ms") == 0 ? 0.001 : strcmp(end, "m") == 0 ? 60 : 1;
        if ((*end && strcmp(end, "s") != 0 && unit == 1) || end == v || !(d > 0) ||
            d * unit > f->max)
            return gp_fail(err, "%s: %s is not a duration such as 15s or 500ms (at most %gs)",
                           f->name, v, f->max);
        *(double *)field = d * unit;
        return 0;
    }
    case FLAG_CHOICE: {
        int k = 0;
        size_t vl = strlen(v);
        for (const char *p = f->choices; *p; k++) {
            const char *bar = strchr(p, '|');
            size_t len = bar ? (size_t)(bar - p) : strlen(p);
            if (len == vl && strncmp(p, v, len) == 0) {
                *(int *)field = k;
                return 0;
            }
            if (!bar)
                break;
            p = bar + 1;
        }
        return gp_fail(err, "%s: one of %s, not \"%s\"", f->name, f->choices, v);
    }
    case FLAG_FN: {
        gp_err e;
        if (f->fn(base, v, &e))
            return gp_fail(err, "%s: %s", f->name, e.msg);
        return 0;
    }
    }
    return gp_fail(err, "%s: unknown flag type", f->name);
}

int flags_parse(const gp_command *cmd, int argc, char **argv, void *base, const char **args,
                int *nargs)
{
    int npos = 0;
    bool only_args = false;
    gp_err err;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!only_args && (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)) {
            flags_usage(cmd, stdout);
            return FLAGS_HELP;
        }
        if (!only_args && strcmp(a, "--") == 0) {
            only_args = true;
            continue;
        }
        if (only_args || a[0] != '-' || strcmp(a, "-") == 0) {
            if (npos >= cmd->max_args)
                return flags_error(cmd, "unexpected argument %s", a);
            args[npos++] = a;
            continue;
        }
        const char *eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
        size_t len = eq ? (size_t)(eq - a) : strlen(a);
        const gp_flag *f = find(cmd, a, len);
        if (!f)
            return flags_error(cmd, "unknown flag %.*s", (int)len, a);
        const char *v = eq ? eq + 1 : NULL;
        if (!eq && takes_value(f)) {
            if (i + 1 >= argc)
                return flags_error(cmd, "%s needs a value", f->name);
            v = argv[++i];
        }
        if (eq && !takes_value(f) && f->type != FLAG_BOOL)
            return flags_error(cmd, "%s takes no value", f->name);
        if (store(f, v, base, &err))
            return flags_error(cmd, "%s", err.msg);
    }
    if (nargs)
        *nargs = npos;
    return FLAGS_OK;
}
