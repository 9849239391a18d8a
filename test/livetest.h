/* livetest.h -- helpers shared by the live-mode test suites (files, captured samples). */
#ifndef GP_LIVETEST_H
#define GP_LIVETEST_H

#include <stddef.h>

/* Path of a capture under test/fixtures/captured/ (README there). Returns owned string. */
char *livetest_captured(const char *rel);

/* Reads a whole file; NULL when unreadable. *len gets its size. Owned. */
char *livetest_read(const char *path, size_t *len);

/* Writes a file (0 or -1). */
int livetest_write(const char *path, const char *data, size_t len);

/* A fresh temporary directory (owned path), removed by livetest_rmtree. */
char *livetest_tmpdir(void);
void livetest_rmtree(const char *dir);

#endif
