/* livetest.c -- helpers shared by the live-mode test suites (files, captured samples). */
#include "livetest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/util.h"

char *livetest_captured(const char *rel)
{
    return xasprintf("test/fixtures/captured/%s", rel);
}

char *livetest_read(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    gp_buf b;
    gp_buf_init(&b, 256u << 20);
    char tmp[65536];
    size_t n;
    int ok = 1;
    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0)
        if (gp_buf_append(&b, tmp, n) < 0)
            ok = 0;
    fclose(f);
    if (!ok || !b.data) {
        if (ok && !b.data) {
            *len = 0;
            return xstrdup("");
        }
        gp_buf_free(&b);
        return NULL;
    }
    *len = b.len;
    return b.data;
}

int livetest_write(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = fwrite(data, 1, len, f);
    int rc = fclose(f);
    return (w == len && rc == 0) ? 0 : -1;
}

char *livetest_tmpdir(void)
{
    char *t = xstrdup("/tmp/gpupack-test-XXXXXX");
    if (!mkdtemp(t)) {
        free(t);
        return NULL;
    }
    return t;
}

void livetest_rmtree(const char *dir)
{
    if (!dir || strncmp(dir, "/tmp/gpupack-test-", 18) != 0)
        return;
    char *cmd = xasprintf("rm -rf '%s'", dir);
    if (system(cmd) != 0) {
        /* best effort: a leftover temp dir is harmless */
    }
    free(cmd);
}
