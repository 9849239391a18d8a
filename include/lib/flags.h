/* flags.h -- the command line of every gpupack subcommand: a table of typed
 * flags with their help, parsed in one way and turned into `--help` text.
 *
 *   typedef struct opts { const char *listen; unsigned threads; bool json; } opts;
 *   static const gp_flag flags[] = {
 *       GP_FLAG("--listen", FLAG_STR, offsetof(opts, listen), "HOST:PORT", "address to serve on"),
 *       GP_FLAG("--threads", FLAG_UINT, offsetof(opts, threads), "N", "worker threads",
 *               .min = 1, .max = 64),
 *       GP_FLAG("--json", FLAG_BOOL, offsetof(opts, json), NULL, "print JSON"),
 *   };
 *   static const gp_command cmd = {"gpupack x", "[flags]", "does x", flags, GP_ARRAY_LEN(flags)};
 *   opts o = {...defaults...};
 *   int rc = flags_parse(&cmd, argc, argv, &o, NULL, NULL);
 *   if (rc != FLAGS_OK) return rc == FLAGS_HELP ? 0 : 2;
 *
 * Accepted forms: `--name value`, `--name=value`; a FLAG_BOOL takes no value
 * (`--name`, or `--name=true|false`); `-h`/`--help` print the usage to stdout;
 * `--` ends the flags. A usage error prints one line and a hint to stderr:
 *
 *   gpupack serve: --threads: 0 is not a number in 1..64
 *   try 'gpupack serve --help'
 *
 * Values are borrowed from argv (FLAG_STR keeps the pointer). Not thread-safe
 * only in that it writes the caller's struct. */
#ifndef GP_FLAGS_H
#define GP_FLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "lib/util.h"

typedef enum {
    FLAG_STR,        /* const char *: the value as given */
    FLAG_BOOL,       /* bool: no value; --name=true|false also accepted */
    FLAG_BOOL_ARG,   /* bool: a value true|false is required (--name true) */
    FLAG_SIZE,       /* size_t: a whole number in [min, max] (max 0: no upper bound) */
    FLAG_UINT,       /* unsigned: a whole number in [min, max] */
    FLAG_DOUBLE,     /* double: a number in [min, max]; min_open excludes min */
    FLAG_DURATION,   /* double seconds: 15s, 500ms, 1m (a bare number is seconds), in (0, max] */
    FLAG_CHOICE,     /* int: the position of the value in `choices` ("a|b|c") */
    FLAG_FN,         /* fn(base, value, err) stores it (value NULL when takes_value is false) */
} flag_type;

typedef struct gp_flag {
    const char *name;    /* "--listen" */
    flag_type type;
    size_t off;          /* offsetof the field in the caller's struct */
    const char *arg;     /* the value's name in the help ("HOST:PORT"); NULL: no value */
    const char *help;    /* may hold '\n': continuation lines, indented under the first */
    double min, max;
    bool min_open;       /* FLAG_DOUBLE: the value must be > min */
    const char *choices; /* FLAG_CHOICE */
    /* FLAG_FN: returns 0, or -1 with a message (no flag name: it is added) */
    int (*fn)(void *base, const char *value, gp_err *err);
    bool fn_no_value;    /* FLAG_FN that takes no value */
} gp_flag;

/* One table entry: GP_FLAG(name, type, off, arg, help[, .min = .., .max = ..,
 * .fn = ..]) (designated, so the optional fields may be left out). */
#define GP_FLAG(name_, type_, off_, arg_, ...) \
    {.name = (name_), .type = (type_), .off = (off_), .arg = (arg_), .help = __VA_ARGS__}

typedef struct gp_command {
    const char *name;       /* "gpupack serve": the prefix of messages */
    const char *synopsis;   /* after the name in "usage: NAME SYNOPSIS" */
    const char *summary;    /* one line of what it does (may hold '\n') */
    const gp_flag *flags;
    size_t nflags;
    const char *footer;     /* printed after the flags (may be NULL) */
    int max_args;           /* positional arguments allowed (collected into args) */
} gp_command;

enum { FLAGS_OK = 0, FLAGS_HELP = 1, FLAGS_ERROR = 2 };

/* Parses argv[1..argc) into the struct at base. Positional arguments go to
 * args[0..*nargs) (args may be NULL when cmd->max_args is 0). Returns
 * FLAGS_OK; FLAGS_HELP after printing the usage to stdout (exit 0);
 * FLAGS_ERROR after printing the error and the hint (exit 2). */
int flags_parse(const gp_command *cmd, int argc, char **argv, void *base, const char **args,
                int *nargs);

/* Prints "usage: NAME SYNOPSIS", the summary, and one line per flag (name,
 * value, help) to f; then the footer. */
void flags_usage(const gp_command *cmd, FILE *f);

/* A usage error found after parsing: prints "NAME: MESSAGE" and the hint
 * "try 'NAME --help'" to stderr. Returns FLAGS_ERROR (the exit status 2). */
int flags_error(const gp_command *cmd, const char *fmt, ...) GP_PRINTF(2, 3);

#endif
