/* policy_store.h -- the live policy set of `gpupack serve --policies DIR`:
 * loads every *.yaml of DIR, hot-reloads on change, and reports how reloads
 * went; plus `gpupack policy check FILE...`.
 *
 * Usage (main.c):
 *   policy_store *ps;
 *   if (policy_store_open(dir, &ps, &err) < 0) { fprintf(stderr, "%s\n", err.msg); exit(1); }
 *   cfg.policies = policy_store_current; cfg.policies_ud = ps;   // gp_extender_config
 *   if (policy_store_start(ps, 0, &err) < 0) ...
 *   ... serve ...
 *   policy_store_free(ps);   // after the extender and the HTTP server are gone
 *
 * Reloads build a new immutable set off to the side and swap it in under a
 * mutex held for a pointer exchange only, so requests never wait for a
 * reload, and requests in flight keep the set they took. A change with any
 * error is rejected as a whole; the last good set keeps serving. */
#ifndef GP_POLICY_STORE_H
#define GP_POLICY_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "policy/policy.h"
#include "lib/util.h"

#define POLICY_STORE_FILES_MAX 256     /* *.yaml files in the directory */
#define POLICY_STORE_BYTES_MAX (16 * 1024 * 1024)   /* all of them together */
#define POLICY_STORE_POLL_S 0.5        /* default poll period; a change applies after it
                                          has been stable for one period (<= ~1 s) */
#define POLICY_STORE_READ_EVERY 20     /* a poll reads the files when stat shows a change,
                                          and at least every this many polls */

typedef struct policy_store policy_store;

/* Loads DIR once. Returns 0 and an owned store (free with policy_store_free),
 * or -1 when DIR cannot be read or any file is invalid: err holds the first
 * error and the count of the others; every error is logged. No thread yet. */
int policy_store_open(const char *dir, policy_store **out, gp_err *err) GP_WUR;

/* Starts the reload thread, polling every poll_s seconds (0 = default).
 * Returns 0 or -1 with a message. */
int policy_store_start(policy_store *st, double poll_s, gp_err *err) GP_WUR;

/* Stops the reload thread promptly (it waits on a condition variable, not a
 * sleep). Safe to call when not started, and more than once. */
void policy_store_stop(policy_store *st);

/* Stops, then frees. Sets still referenced by callers stay valid until they
 * unref them. Accepts NULL. */
void policy_store_free(policy_store *st);

/* The current set, referenced: the caller unrefs it. Matches
 * gp_policy_source_fn (extender.h); `store` is a policy_store *. Thread-safe,
 * never blocks on a reload in progress. */
gp_policy_set *policy_store_current(void *store);

/* Rescans DIR now, in the caller's thread (for SIGHUP, and tests). Returns 0
 * when the files load (or are unchanged since the active set), -1 when the
 * change was rejected (the previous set keeps serving; err says why). */
int policy_store_reload(policy_store *st, gp_err *err) GP_WUR;

/* How reloads went, for /metrics and /inspect. A copy: no lock held. */
typedef struct policy_store_status {
    unsigned long loads_ok;        /* loads that produced the active set (initial load included) */
    unsigned long loads_failed;    /* rejected changes */
    bool last_ok;                  /* false while the newest files are rejected */
    int64_t last_attempt_ns;       /* Unix ns; 0 = never */
    int64_t last_ok_ns;
    int nfiles;                    /* files behind the active set */
    int npolicies;                 /* policies of the active set, the default included */
    char last_error[512];          /* first error of the last rejected change, "" if none */
    unsigned long polls, polls_read;   /* the poll thread's polls, and those that read the files */
} policy_store_status;

void policy_store_get_status(policy_store *st, policy_store_status *out);

/* The status as JSON for /inspect: {"dir", "active": [policy objects, see
 * policy_set_to_json], "files": [...], "loads": {"ok", "failed"}, "lastOk",
 * "lastAttempt", "lastSuccess", "lastErrors": [...]}. Returns owned JSON. */
json_t *policy_store_inspect(policy_store *st);

/* metrics_fn (store: a policy_store *): the gpupack_policy_* families. */
void policy_store_metrics(void *store, gp_buf *out);

/* `gpupack policy check FILE|DIR...`: argv[0] is the subcommand name,
 * "check", or "policy" followed by "check" (anything else after "policy" is
 * a usage error); the rest are files, or directories whose *.yaml files are checked. All files
 * are checked together as one policy set (as one --policies directory), so
 * conflicts between files are found. Prints every error as
 * file:line:column: message to stderr and a summary to stdout. Returns the
 * exit code: 0 valid, 1 invalid, 2 usage error. */
int policy_check_main(int argc, char **argv);

#endif
