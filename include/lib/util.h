/* util.h -- allocation that aborts on OOM, bounded growable buffers, error text. */
#ifndef GP_UTIL_H
#define GP_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GP_WUR __attribute__((warn_unused_result))
#define GP_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define GP_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Out of memory is not a recoverable condition for a scheduler extender: these
 * print a message and abort, so logic code carries no NULL checks. */
void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);
/* n zeroed bytes at an address that is a multiple of align (a power of two,
 * for example a cache line's 64); freed with free(). */
void *xcalloc_aligned(size_t align, size_t n);
/* xcalloc for a fixed-size table that fills as it is used (a ring, an LRU):
 * every page is made resident now, so the process's resident size is its
 * steady one from the start and a later rise in RSS means a leak, not a
 * table paging in (a soak's growth check reads it so). */
void *xcalloc_resident(size_t count, size_t size);
void *xrealloc(void *p, size_t n);
/* Hands the heap's free pages back to the system (glibc's malloc_trim; a
 * no-op elsewhere): after a large transient allocation (a LIST of every pod)
 * freed memory otherwise stays resident as the heap's high-water mark. */
void gp_heap_trim(void);
/* The heap as the allocator sees it (glibc 2.33+ mallinfo2, every arena):
 * bytes handed out and not freed (mmapped blocks included), and bytes free but
 * still held. False (both 0) where it cannot tell. Walks the arenas: call it
 * for a metrics page, not per request. */
bool gp_heap_stats(size_t *in_use, size_t *free_bytes);
/* Names the calling thread (on Linux at most 15 characters, the rest cut
 * off), so that top -H, perf and /proc/PID/task/TID/comm tell gpupack's
 * threads apart. A no-op where the C library cannot. */
void gp_thread_set_name(const char *name);
char *xstrdup(const char *s);          /* NULL in, NULL out */
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) GP_PRINTF(1, 2);

/* An error message filled by fallible functions. Callers own it on the stack. */
typedef struct gp_err {
    char msg[512];
} gp_err;

/* Sets err->msg (err may be NULL); always returns -1 so callers can
 * `return gp_fail(err, "...")`. The message is scrubbed to UTF-8
 * (gp_utf8_scrub): it may quote bytes of a request, or be cut mid-character,
 * and it ends up in JSON answers and Events. */
int gp_fail(gp_err *err, const char *fmt, ...) GP_PRINTF(2, 3);

/* A growable byte buffer with a hard size limit and a sticky error (curl's
 * dynbuf habit). Create it with the limit; the first append that would pass
 * the limit fails, the failure sticks, and every later append is a no-op. So
 * a writer appends without checking each call and checks gp_buf_failed()
 * once at the end:
 *
 *   gp_buf b;
 *   gp_buf_init(&b, PAGE_MAX);
 *   gp_buf_printf(&b, "a %d\n", 1);
 *   gp_buf_append(&b, "b\n", 2);
 *   if (gp_buf_failed(&b)) { gp_buf_free(&b); return -1; }
 *
 * The bytes appended before the failure stay (NUL-terminated) until
 * gp_buf_reset or gp_buf_free; never use them once the buffer has failed.
 * The buffer owns data; gp_buf_free releases it. Not thread-safe. */
typedef struct gp_buf {
    char *data;
    size_t len;
    size_t cap;
    size_t max;    /* appends past this many bytes fail */
    bool failed;   /* sticky: an append failed; later appends do nothing */
} gp_buf;

void gp_buf_init(gp_buf *b, size_t max);
/* Appends n bytes. Returns 0, or -1 when the buffer has failed (now, because
 * the result would exceed b->max, or earlier). Callers may test the result
 * at once (a stream that stops at the first failure) or only gp_buf_failed()
 * at the end. */
int gp_buf_append(gp_buf *b, const void *p, size_t n);
int gp_buf_printf(gp_buf *b, const char *fmt, ...) GP_PRINTF(2, 3);
/* True once an append has failed (until gp_buf_reset). */
bool gp_buf_failed(const gp_buf *b) GP_WUR;
/* Empties the buffer and clears its error; keeps the capacity. */
void gp_buf_reset(gp_buf *b);
void gp_buf_free(gp_buf *b);   /* accepts a zeroed or freed buffer */

/* The one bounded file reader: the whole file at `path`, at most max bytes,
 * into an owned buffer with a NUL after its *len bytes (len may be NULL).
 * Returns NULL on failure with err "PATH: <strerror>" (cannot open), "PATH:
 * larger than MAX bytes" or "PATH: read error", and errno set (EFBIG when
 * larger than max), for callers that phrase their own message. */
char *gp_read_file(const char *path, size_t max, size_t *len, gp_err *err);

/* "s" unless n is 1: "%d GPU%s", n, gp_s(n). */
static inline const char *gp_s(long long n)
{
    return n == 1 ? "" : "s";
}

/* Bounded copy; always terminates dst (dstsize > 0). Returns strlen(src). */
size_t gp_strlcpy(char *dst, const char *src, size_t dstsize);

/* The length (1-4) of the well-formed UTF-8 sequence at p (strict, as jansson
 * checks: no overlong forms, no surrogates, at most U+10FFFF), or -1. */
int gp_utf8_seq(const char *p, const char *end);
/* Makes s valid UTF-8 in place: each byte of an ill-formed sequence (text
 * from a client, or a multi-byte character cut by a bounded %.Ns) becomes
 * '?'. Returns s. */
char *gp_utf8_scrub(char *s);

/* FNV-1a over n bytes, continuing from h (start with GP_FNV_OFFSET). For
 * hash tables and change fingerprints, not for security. */
#define GP_FNV_OFFSET UINT64_C(14695981039346656037)
#define GP_FNV_PRIME UINT64_C(1099511628211)
uint64_t gp_fnv1a(uint64_t h, const void *p, size_t n);

/* Wall clock in Unix nanoseconds, a monotonic clock in seconds, and the CPU
 * time the process has used (all its threads) in seconds. */
int64_t gp_now_ns(void);
double gp_mono_s(void);
double gp_cpu_s(void);

#endif
