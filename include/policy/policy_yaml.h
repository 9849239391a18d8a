/* policy_yaml.h -- PackingPolicy YAML documents -> validated policies, with
 * every problem of a file reported as `file:line:column: what is wrong`.
 *
 * The parsed form (gp_policy) is plain data shared by the parser, the set
 * builder in policy.c and the tests; nothing outside the policy modules
 * should need it. */
#ifndef GP_POLICY_YAML_H
#define GP_POLICY_YAML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pack/placement.h"
#include "model/podreq.h"
#include "model/dra.h"
#include "policy/policy.h"
#include "policy/policy_tz.h"
#include "lib/util.h"

/* Bounds on what one file may contain (everything read is bounded). */
#define POLICY_FILE_MAX (1024 * 1024)     /* bytes per file */
#define POLICY_DOCS_MAX 256               /* documents per file */
#define POLICY_LIST_MAX 256               /* items in any list (namespaces, values, ...) */
#define POLICY_STR_MAX 253                /* longest string value anywhere */
#define POLICY_DIAG_MAX 100               /* errors kept per load; the rest are counted */

/* ------------------------------------------------------------ diagnostics */

/* Error lines, each "file:line:column: message", in the order found. */
typedef struct policy_diag {
    int n, cap;
    char **msgs;
    int dropped;          /* errors past POLICY_DIAG_MAX, counted not kept */
} policy_diag;

/* line and col are 1-based. Appends one message (never fails). */
void policy_diag_add(policy_diag *d, const char *file, int line, int col, const char *fmt, ...)
    GP_PRINTF(5, 6);
int policy_diag_count(const policy_diag *d);     /* kept + dropped */
/* "first message (and N more errors)" into err, for single-line callers. */
void policy_diag_summary(const policy_diag *d, gp_err *err);
void policy_diag_free(policy_diag *d);           /* leaves an empty, reusable diag */

/* ------------------------------------------------------------ the policy */

typedef enum {
    POLICY_OP_IN,
    POLICY_OP_NOT_IN,
    POLICY_OP_EXISTS,
    POLICY_OP_DOES_NOT_EXIST
} policy_op;

/* One label requirement (matchLabels entries become In with one value). */
typedef struct policy_req {
    char *key;
    policy_op op;
    int nvalues;
    char **values;
} policy_req;

/* One time window: starts on one of `days` at from_min (local minutes) and
 * ends at to_min the same day, or the next day when to_min <= from_min. */
typedef struct policy_window {
    unsigned days;        /* bit 0 = Sunday ... bit 6 = Saturday */
    int from_min, to_min; /* 0..1439, 1..1440 */
} policy_window;

/* Where something was written, for conflict messages. */
typedef struct policy_mark {
    int line, col;        /* 1-based */
} policy_mark;

typedef struct gp_policy {
    char name[GP_NAME_MAX];
    char *file;                 /* owned; the file the policy came from */
    policy_mark at;             /* metadata.name */
    policy_mark prio_at;        /* spec.priority (or the spec) */
    bool is_default;            /* named "default": the fallback policy */
    long priority;
    bool allow_request;
    int nns;                    /* 0 = every namespace */
    char **ns;
    int nreqs;                  /* all must hold (AND) */
    policy_req *reqs;
    int nwin;                   /* 0 = always */
    policy_window *win;
    char tz_name[POLICY_STR_MAX + 1];   /* "" = UTC */
    policy_tz *tz;              /* NULL = UTC */
    gp_place_opts place;        /* place.shapes points at `shapes` when set */
    gp_shapes shapes;
    gp_resource_names names;
    bool decide_in_filter;
    double ns_share_cap;
    gp_preempt_rules preempt;   /* spec.preemption */
    gp_consol_rules consol;     /* spec.consolidation */
    bool has_dra;               /* spec.dra given (the default policy only) */
    gp_dra_drivers dra;         /* spec.dra.drivers: which DRA devices are GPUs */
} gp_policy;

/* A policy with every default filled in (the built-in "default" when named so). */
gp_policy *policy_yaml_new(const char *name, const char *file);
void policy_yaml_free(gp_policy *p);   /* accepts NULL */

/* Parses every document of one file's text (`file` names it in messages).
 * Appends the valid policies to *pols (a growable array of owned pointers,
 * *npols items) and every error to diag. Returns 0 when the file had no
 * error, -1 otherwise; a document with errors contributes no policy. Bounds:
 * POLICY_FILE_MAX bytes, POLICY_DOCS_MAX documents. Never crashes on any
 * input. */
int policy_yaml_parse(const char *file, const char *text, size_t len, gp_policy ***pols,
                      int *npols, policy_diag *diag) GP_WUR;

/* Reads `path` (at most POLICY_FILE_MAX bytes) and parses it as above. */
int policy_yaml_parse_file(const char *path, gp_policy ***pols, int *npols,
                           policy_diag *diag) GP_WUR;

#endif
