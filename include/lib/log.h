/* log.h -- leveled, timestamped log lines on stderr (thread-safe: one write per line). */
#ifndef GP_LOG_H
#define GP_LOG_H

#include "lib/util.h"

typedef enum { GP_LOG_DEBUG, GP_LOG_INFO, GP_LOG_WARN, GP_LOG_ERROR } gp_log_level;

void gp_log_set_level(gp_log_level min);
/* Parses "debug|info|warn|error"; returns 0 or -1. */
int gp_log_parse_level(const char *s, gp_log_level *out) GP_WUR;
void gp_log(gp_log_level lvl, const char *fmt, ...) GP_PRINTF(2, 3);

#define LOG_DEBUG(...) gp_log(GP_LOG_DEBUG, __VA_ARGS__)
#define LOG_INFO(...) gp_log(GP_LOG_INFO, __VA_ARGS__)
#define LOG_WARN(...) gp_log(GP_LOG_WARN, __VA_ARGS__)
#define LOG_ERROR(...) gp_log(GP_LOG_ERROR, __VA_ARGS__)

#endif
