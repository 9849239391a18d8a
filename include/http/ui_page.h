/* ui_page.h -- the /ui page: one self-contained HTML file (inline CSS and JS,
 * no CDN) embedded in the binary; it draws /inspect on a canvas. */
#ifndef GP_UI_PAGE_H
#define GP_UI_PAGE_H

#include <stddef.h>

/* The page, static; *len gets its size in bytes (not counting the NUL that
 * follows it). */
const char *ui_page_html(size_t *len);

#endif
