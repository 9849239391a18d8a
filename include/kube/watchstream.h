/* watchstream.h -- bounded newline splitter and event decoder for watch streams. Pure.
 *
 * A watch response body is a byte stream of JSON events, one per line. Chunk
 * edges mean nothing (the apiserver cuts events mid-JSON in bursts), so bytes
 * are fed as they arrive and complete lines come out through a callback.
 * Usage:
 *     gp_watchstream *w = watchstream_new(GP_WATCH_LINE_MAX, on_line, ud);
 *     while (data) if (watchstream_feed(w, p, n, &err) < 0) ...;   // per network read
 *     watchstream_free(w);                                          // drops a partial tail
 */
#ifndef GP_WATCHSTREAM_H
#define GP_WATCHSTREAM_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "lib/jsonkeep.h"
#include "lib/util.h"

/* Largest watch event line accepted (etcd caps objects at 1.5 MiB; JSON of
 * such an object stays well below this). */
#define GP_WATCH_LINE_MAX (8u * 1024u * 1024u)

/* Called once per complete, non-empty line (without the '\n' or a trailing
 * '\r'); `line` is NUL-terminated and valid only during the call. Return 0 to
 * go on, -1 to stop feeding (watchstream_feed then returns -1 with err
 * "stopped by callback"). */
typedef int (*gp_ws_line_fn)(void *ud, const char *line, size_t len);

typedef struct gp_watchstream gp_watchstream;

/* line_max: the longest line accepted (bytes, without the newline). */
gp_watchstream *watchstream_new(size_t line_max, gp_ws_line_fn fn, void *ud);
void watchstream_free(gp_watchstream *w);   /* accepts NULL */

/* Feeds n bytes. Returns 0, or -1 with a message when a line exceeds
 * line_max (the stream is unusable then: reconnect) or the callback stopped. */
int watchstream_feed(gp_watchstream *w, const char *p, size_t n, gp_err *err) GP_WUR;

/* Bytes of an incomplete line held (a stream that ends with pending > 0 was
 * cut mid-event). */
size_t watchstream_pending(const gp_watchstream *w);

/* Drops any partial line (before reusing the splitter on a new stream). */
void watchstream_reset(gp_watchstream *w);

/* --- events ------------------------------------------------------------ */

typedef enum {
    GP_WATCH_ADDED,
    GP_WATCH_MODIFIED,
    GP_WATCH_DELETED,
    GP_WATCH_BOOKMARK,
    GP_WATCH_ERROR
} gp_watch_type;

/* One decoded event. `object` is owned (json_decref it, or use
 * watchstream_event_clear). For ERROR, code/message come from the Status
 * object (code 410 = the resourceVersion expired: relist). */
typedef struct gp_watch_event {
    gp_watch_type type;
    json_t *object;
    char rv[64];        /* object.metadata.resourceVersion, "" when absent */
    int code;           /* ERROR only: Status.code (0 when absent) */
    char reason[64];    /* ERROR only: Status.reason */
    char message[256];  /* ERROR only: Status.message */
} gp_watch_event;

/* Decodes one line. Returns 0, or -1 with a message (bad JSON, no type, an
 * unknown type, no object). Never keeps a reference to line. */
int watchstream_event_parse(const char *line, size_t len, gp_watch_event *ev, gp_err *err) GP_WUR;
/* The same, with the object of an ADDED, MODIFIED or DELETED event reduced to
 * the members `keep` names (jsonkeep.h) as the text is scanned: a pod's
 * managedFields and most of its status are never built. Where the scanner
 * declines (anything doubtful: lib/jsonscan.h), and for bookmarks and errors,
 * the object is whole, as watchstream_event_parse reads it; bad JSON fails
 * with the same message. One difference: a key repeated inside a member that
 * is skipped is not looked for (nothing reads either value); repeated among
 * the members kept, it fails as whole. keep NULL: watchstream_event_parse. */
int watchstream_event_parse_kept(const char *line, size_t len, const gp_keep *keep,
                                 gp_watch_event *ev, gp_err *err) GP_WUR;
void watchstream_event_clear(gp_watch_event *ev);
const char *watchstream_type_name(gp_watch_type t);

#endif
