/* srv_log.c — one log line per event, with a level, on stderr. */
#include "srv.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *level_name(srv_log_level level)
{
    switch (level) {
    case SRV_LOG_ERROR: return "ERROR";
    case SRV_LOG_WARN: return "WARN";
    case SRV_LOG_INFO: return "INFO";
    case SRV_LOG_DEBUG: return "DEBUG";
    }
    return "INFO";
}

void srv_log(srv_log_level level, const char *fmt, ...)
{
    char line[2048];
    size_t pos = 0;
    int n;
    if (getenv("JOURNAL_STREAM")) {
        /* The journal adds its own time stamp; "<N>" sets the priority. */
        n = snprintf(line, sizeof line, "<%d>", (int)level);
    } else {
        struct timespec ts;
        struct tm tm;
        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %-5s ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, ts.tv_nsec / 1000000L, level_name(level));
    }
    if (n < 0)
        return;
    pos = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    va_list ap;
    va_start(ap, fmt);
    n = vsnprintf(line + pos, sizeof line - pos - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    size_t end = pos + (size_t)n;
    if (end > sizeof line - 2)
        end = sizeof line - 2;
    for (size_t i = pos; i < end; i++)
        if (line[i] == '\n' || line[i] == '\r')
            line[i] = ' ';
    line[end++] = '\n';
    size_t off = 0;
    while (off < end) {
        ssize_t w = write(STDERR_FILENO, line + off, end - off);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
}
