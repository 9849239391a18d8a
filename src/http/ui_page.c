/* ui_page.c -- the /ui page (src/http/ui/index.html) embedded in the binary. The
 * assembler includes the file as it is: no generator, no build step. */
#include "http/ui_page.h"

/* make compiles from the repository root, so the path is relative to it */
__asm__(".section .rodata\n"
        ".global gp_ui_page_html\n"
        ".type gp_ui_page_html, @object\n"
        "gp_ui_page_html:\n"
        ".incbin \"src/http/ui/index.html\"\n"
        ".global gp_ui_page_html_end\n"
        "gp_ui_page_html_end:\n"
        ".byte 0\n"
        ".previous\n");

extern const char gp_ui_page_html[], gp_ui_page_html_end[];

const char *ui_page_html(size_t *len)
{
    *len = (size_t)(gp_ui_page_html_end - gp_ui_page_html);
    return gp_ui_page_html;
}
