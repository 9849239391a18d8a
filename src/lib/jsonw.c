/* jsonw.c -- writing JSON text straight into a gp_buf. */
#include "lib/jsonw.h"

#include <stdio.h>
#include <string.h>

int jsonw_raw(gp_buf *b, const char *s)
{
    return gp_buf_append(b, s, strlen(s));
}

int jsonw_str(gp_buf *b, const char *s)
{
    if (gp_buf_append(b, "\"", 1))
        return -1;
    const char *run = s, *end = NULL;   /* found at the first byte >= 0x80: ASCII needs no length */
    for (const unsigned char *p = (const unsigned char *)s;; p++) {
        unsigned char c = *p;
        if (c >= 0x80) {
            if (!end)
                end = (const char *)p + strlen((const char *)p);
            int n = gp_utf8_seq((const char *)p, end);
            if (n > 0) {
                p += n - 1;
                continue;
            }
        } else if (c >= 0x20 && c != '"' && c != '\\') {
            continue;
        }
        /* flush the plain run before this byte */
        if (gp_buf_append(b, run, (size_t)((const char *)p - run)))
            return -1;
        if (c == '\0')
            break;
        char esc[8];
        switch (c) {
        case '"': memcpy(esc, "\\\"", 3); break;
        case '\\': memcpy(esc, "\\\\", 3); break;
        case '\n': memcpy(esc, "\\n", 3); break;
        case '\r': memcpy(esc, "\\r", 3); break;
        case '\t': memcpy(esc, "\\t", 3); break;
        /* a byte that starts no UTF-8 sequence: the replacement character */
        default:
            if (c >= 0x80)
                memcpy(esc, "\\ufffd", 7);
            else
                snprintf(esc, sizeof esc, "\\u%04x", c);
            break;
        }
        if (gp_buf_append(b, esc, strlen(esc)))
            return -1;
        run = (const char *)p + 1;
    }
    return gp_buf_append(b, "\"", 1);
}

static int dump_cb(const char *buffer, size_t size, void *data)
{
    return gp_buf_append(data, buffer, size);
}

int jsonw_value(gp_buf *b, const json_t *v)
{
    return json_dump_callback(v, dump_cb, b, JSON_COMPACT | JSON_ENCODE_ANY);
}
