/* base64.c -- standard base64 through GnuTLS's codec. */
#include "lib/base64.h"

#include <gnutls/gnutls.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"

/* GnuTLS allocates with its own allocator: copy into ours, with a NUL. */
static char *own(gnutls_datum_t *d)
{
    char *s = xmalloc((size_t)d->size + 1);
    if (d->size)
        memcpy(s, d->data, d->size);
    s[d->size] = '\0';
    gnutls_free(d->data);
    return s;
}

char *gp_base64_encode(const void *data, size_t n)
{
    if (n > 0xffffffffu / 2)
        abort();   /* gnutls_datum_t sizes are 32-bit; nothing gpupack encodes comes near */
    gnutls_datum_t in = {(unsigned char *)(uintptr_t)data, (unsigned)n}, out = {NULL, 0};
    if (gnutls_base64_encode2(&in, &out) < 0) {
        /* only on allocation failure: the same policy as xmalloc */
        abort();
    }
    return own(&out);
}

char *gp_base64_decode(const char *s, size_t *len)
{
    size_t n = strlen(s);
    if (n > 0xffffffffu / 2)
        return NULL;
    gnutls_datum_t in = {(unsigned char *)(uintptr_t)s, (unsigned)n}, out = {NULL, 0};
    if (gnutls_base64_decode2(&in, &out) < 0) {
        gnutls_free(out.data);
        return NULL;
    }
    *len = out.size;
    return own(&out);
}
