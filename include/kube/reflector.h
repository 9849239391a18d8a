/* reflector.h -- LIST then WATCH one resource of the API server, forever, into callbacks.
 *
 * One thread per reflector:
 *   LIST   GET path?limit=N[&continue=T], all pages buffered (trimmed, compact), then
 *          applied at once between resync_begin and resync_end -- a LIST that
 *          fails half-way changes nothing;
 *   WATCH  GET path?watch=1&resourceVersion=RV&allowWatchBookmarks=true&timeoutSeconds=T
 *          events applied in order; BOOKMARK only moves RV; ERROR 410 (the
 *          apiserver answers an expired RV with HTTP 200 + an ERROR event) or
 *          HTTP 410 -> a fresh LIST; the server closing at timeoutSeconds ->
 *          re-watch at once; a dropped connection, 5xx, or a stream silent for
 *          longer than the stall limit -> re-watch after a capped exponential
 *          backoff with jitter; a LIST page over the response cap -> the same page
 *          again with half the limit. A malformed event line (maybe a lost
 *          DELETED) -> re-watch from the last good resourceVersion, and a relist
 *          when the same place fails again. The backoff comes back to its
 *          minimum at a failure that comes backoff_reset_s after the last one
 *          (LISTs and watches that succeeded in between, however many) and
 *          halves for every sixth of that without a failure; never after a
 *          LIST alone.
 * The view is "healthy" while the last attempt succeeded. */
#ifndef GP_REFLECTOR_H
#define GP_REFLECTOR_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "kube/kube.h"
#include "lib/util.h"
#include "kube/watchstream.h"

typedef struct gp_reflector_ops {
    /* A complete LIST is about to replace the view / has been applied. */
    void (*resync_begin)(void *ud);
    void (*resync_end)(void *ud);
    /* One object (borrowed): a LIST item (type ADDED, listed = true) or a
     * watch event ADDED / MODIFIED / DELETED. Called from the reflector's
     * thread only, in API order. */
    void (*apply)(void *ud, gp_watch_type type, bool listed, const json_t *obj);
    /* Optional: shrinks a LIST item before it is buffered (returns owned). */
    json_t *(*trim)(const json_t *obj);
    /* Optional: the members of an object apply reads; LIST pages and watch
     * events are decoded reduced to them as their text is scanned
     * (lib/jsonscan.h, watchstream_event_parse_kept), whole where the scanner
     * declines. apply must then read nothing else, which a trim that keeps no
     * more already asks. */
    const gp_keep *keep;
} gp_reflector_ops;

typedef struct gp_reflector_config {
    const char *resource;          /* "pods", "nodes": for messages */
    const char *path;              /* "/api/v1/pods" */
    int page_limit;                /* LIST page size (default 500) */
    int watch_timeout_s;           /* timeoutSeconds of each watch (default 300) */
    double stall_s;                /* no byte for this long = stuck stream (default timeout + 30) */
    double backoff_min_s;          /* first retry delay (default 0.2) */
    double backoff_max_s;          /* cap (default 30) */
    double backoff_reset_s;        /* the backoff returns to its minimum at a failure after
                                    * this long without one, and halves for every sixth of
                                    * it (default 60: one watch term in live mode; client-go
                                    * resets after 120) */
    double request_timeout_s;      /* one LIST page (default 60) */
    size_t line_max;               /* default GP_WATCH_LINE_MAX */
    size_t list_max;               /* bytes of trimmed objects (compact JSON) buffered per LIST (default 1 GiB) */
    size_t page_bytes_max;         /* a LIST page larger than this is asked again with half
                                    * the limit (default and upper bound: GP_KUBE_BODY_MAX) */
} gp_reflector_config;

/* The wait before the next try after a failure that followed `calm` seconds
 * without one, when the last wait was `backoff` (cfg with its defaults
 * filled: backoff_min_s, backoff_reset_s). Pure. */
double reflector_backoff_after_calm(const gp_reflector_config *cfg, double backoff, double calm);

typedef struct gp_reflector gp_reflector;

/* Borrows k, ops and ud (they must outlive the reflector); copies cfg. */
gp_reflector *reflector_new(gp_kube *k, const gp_reflector_config *cfg, const gp_reflector_ops *ops,
                            void *ud);
/* Before its first LIST, r waits until `gate` has synced (nodes before pods). */
void reflector_set_gate(gp_reflector *r, gp_reflector *gate);
int reflector_start(gp_reflector *r, gp_err *err) GP_WUR;
/* Stops the thread promptly (unblocking a streaming watch) and frees; accepts NULL. */
void reflector_free(gp_reflector *r);

/* Ends the current watch and LISTs again (a reader whose way of decoding
 * the objects changed); until that LIST is applied the view is not current.
 * A LIST under way is followed by another. Thread-safe. */
void reflector_relist(gp_reflector *r);

/* The monotonic time (gp_mono_s) the LIST being applied asked for its first
 * page: objects created after it may be missing from that LIST. Meant for the
 * ops' resync_begin / resync_end, on the reflector's thread. */
double reflector_list_began(const gp_reflector *r);

/* True once a first complete LIST was applied. Thread-safe. */
bool reflector_synced(gp_reflector *r);
/* True while the view is the API server's as of the last event applied: a
 * first LIST was applied and no relist is due (a relist is due from the
 * moment the watch cannot resume -- 410 Gone, an ERROR event, a malformed
 * line met twice -- until its LIST is applied: events were lost meanwhile).
 * A watch that merely fails and resumes from its resourceVersion keeps the
 * view current (it may lag). Otherwise why says which. Thread-safe. */
bool reflector_current(gp_reflector *r, char *why, size_t whylen);
/* True while the last LIST/WATCH attempt succeeded; otherwise why says what
 * failed and for how long. Thread-safe. */
bool reflector_healthy(gp_reflector *r, char *why, size_t whylen);

/* Seconds the view has been healthy without a break (since the LIST or the
 * watch that ended the last failure), or -1 while it is not. Thread-safe. */
double reflector_healthy_for(gp_reflector *r);

typedef struct gp_reflector_stats {
    unsigned long lists, list_pages, list_failures;
    unsigned long watches, watch_failures, events, bookmarks, expired, bad_events;
    unsigned long page_shrinks;    /* LIST pages asked again smaller (too large) */
    char rv[64];                   /* last resourceVersion seen */
} gp_reflector_stats;
void reflector_stats(gp_reflector *r, gp_reflector_stats *out);

#endif
