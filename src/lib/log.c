/* log.c -- leveled, timestamped log lines on stderr. */
#include "lib/log.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile gp_log_level min_level = GP_LOG_INFO;
static const char *const names[] = {"debug", "info", "warn", "error"};

void gp_log_set_level(gp_log_level min)
{
    min_level = min;
}

int gp_log_parse_level(const char *s, gp_log_level *out)
{
    for (size_t i = 0; i < GP_ARRAY_LEN(names); i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = (gp_log_level)i;
            return 0;
        }
    }
    return -1;
}

void gp_log(gp_log_level lvl, const char *fmt, ...)
{
    if (lvl < min_level)
        return;
    char line[2048];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n = (int)strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%S", &tm);
    n += snprintf(line + n, sizeof line - (size_t)n, ".%03ldZ %-5s ", ts.tv_nsec / 1000000L,
                  names[lvl]);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0)
        m = 0;
    size_t len = (size_t)n + (size_t)m;
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    /* one write() per line keeps lines whole across threads */
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}
