/* util.c -- allocation that aborts on OOM, bounded growable buffers, error text. */
#include "lib/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <pthread.h>
#include <string.h>
#include <time.h>

static void oom(size_t n)
{
    fprintf(stderr, "gpupack: out of memory allocating %zu bytes\n", n);
    abort();
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom(n);
    return p;
}

void *xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        oom(count * size);
    return p;
}

void *xcalloc_aligned(size_t align, size_t n)
{
    size_t len = (n ? n : 1) + align - 1;
    if (len < n)
        oom(n);
    len -= len % align;
    void *p = aligned_alloc(align, len);
    if (!p)
        oom(len);
    return memset(p, 0, len);
}

void *xcalloc_resident(size_t count, size_t size)
{
    char *p = xcalloc(count, size);
    /* calloc's large blocks are fresh mappings whose pages stay unmapped until
     * written: write one byte per page (volatile, so the stores stay) */
    volatile char *v = p;
    size_t len = count * size;
    for (size_t i = 0; i < len; i += 4096)
        v[i] = 0;
    return p;
}

void gp_heap_trim(void)
{
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

void gp_thread_set_name(const char *name)
{
#ifdef __GLIBC__
    char n[16];   /* the kernel's TASK_COMM_LEN */
    snprintf(n, sizeof n, "%s", name);
    pthread_setname_np(pthread_self(), n);
#else
    (void)name;
#endif
}

bool gp_heap_stats(size_t *in_use, size_t *free_bytes)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    struct mallinfo2 mi = mallinfo2();   /* every arena, not only the main one */
    *in_use = mi.uordblks + mi.hblkhd;
    *free_bytes = mi.fordblks;
    return true;
#else
    *in_use = *free_bytes = 0;
    return false;
#endif
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        oom(n);
    return q;
}

char *xstrdup(const char *s)
{
    return s ? xstrndup(s, strlen(s)) : NULL;
}

char *xstrndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *d = xmalloc(len + 1);
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        oom(0);
    char *s = xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

int gp_fail(gp_err *err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        gp_utf8_scrub(err->msg);
    }
    return -1;
}

void gp_buf_init(gp_buf *b, size_t max)
{
    memset(b, 0, sizeof *b);
    b->max = max;
}

int gp_buf_append(gp_buf *b, const void *p, size_t n)
{
    if (b->failed)
        return -1;
    if (n > b->max || b->len > b->max - n) {
        b->failed = true;
        return -1;
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        b->data = xrealloc(b->data, cap);
        b->cap = cap;
    }
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int gp_buf_printf(gp_buf *b, const char *fmt, ...)
{
    if (b->failed)
        return -1;
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = true;
        return -1;
    }
    if ((size_t)n < sizeof small)
        return gp_buf_append(b, small, (size_t)n);
    char *big = xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    int rc = gp_buf_append(b, big, (size_t)n);
    free(big);
    return rc;
}

bool gp_buf_failed(const gp_buf *b)
{
    return b->failed;
}

void gp_buf_reset(gp_buf *b)
{
    b->len = 0;
    b->failed = false;
    if (b->data)
        b->data[0] = '\0';
}

void gp_buf_free(gp_buf *b)
{
    if (!b)
        return;
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->failed = false;
}

char *gp_read_file(const char *path, size_t max, size_t *len, gp_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        int e = errno;
        gp_fail(err, "%s: %s", path, strerror(e));
        errno = e;
        return NULL;
    }
    gp_buf b;
    gp_buf_init(&b, max);
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0 && gp_buf_append(&b, chunk, n) == 0)
        ;
    int bad = ferror(f);
    fclose(f);
    if (gp_buf_failed(&b) || bad) {
        if (bad)
            gp_fail(err, "%s: read error", path);
        else
            gp_fail(err, "%s: larger than %zu bytes", path, max);
        gp_buf_free(&b);
        errno = bad ? EIO : EFBIG;
        return NULL;
    }
    if (len)
        *len = b.len;
    return b.data ? b.data : xstrdup("");
}

size_t gp_strlcpy(char *dst, const char *src, size_t dstsize)
{
    size_t len = strlen(src);
    if (dstsize) {
        size_t n = len < dstsize - 1 ? len : dstsize - 1;
        memcpy(dst, src, n);
        dst[n] = '\0';
    }
    return len;
}

int gp_utf8_seq(const char *p, const char *end)
{
    if (p >= end)
        return -1;
    unsigned char c = (unsigned char)*p;
    if (c < 0x80)
        return 1;
    int n = c >= 0xC2 && c <= 0xDF ? 1 : c >= 0xE0 && c <= 0xEF ? 2 : c >= 0xF0 && c <= 0xF4 ? 3 : -1;
    if (n < 0 || end - p <= n)
        return -1;
    unsigned char c1 = (unsigned char)p[1];
    if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F) || (c == 0xF0 && c1 < 0x90) ||
        (c == 0xF4 && c1 > 0x8F))
        return -1;
    for (int i = 1; i <= n; i++)
        if (((unsigned char)p[i] & 0xC0) != 0x80)
            return -1;
    return n + 1;
}

char *gp_utf8_scrub(char *s)
{
    char *end = s + strlen(s);
    for (char *p = s; p < end;) {
        int n = gp_utf8_seq(p, end);
        if (n < 0)
            *p++ = '?';
        else
            p += n;
    }
    return s;
}

uint64_t gp_fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= GP_FNV_PRIME;
    }
    return h;
}

int64_t gp_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double gp_mono_s(void)
{
    return clock_s(CLOCK_MONOTONIC);
}

double gp_cpu_s(void)
{
    return clock_s(CLOCK_PROCESS_CPUTIME_ID);
}
