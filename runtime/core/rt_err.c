/* rt_err.c — the project's status codes and the caller's error buffer. */
#include "rt_core.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *rt_err_status_str(rt_status s)
{
    switch (s) {
    case RT_OK: return "ok";
    case RT_ERR_INVALID: return "invalid argument";
    case RT_ERR_NOMEM: return "out of memory";
    case RT_ERR_IO: return "I/O error";
    case RT_ERR_NOTFOUND: return "not found";
    case RT_ERR_FORMAT: return "malformed data";
    case RT_ERR_LIMIT: return "limit exceeded";
    case RT_ERR_UNSUPPORTED: return "unsupported";
    case RT_ERR_EXISTS: return "already exists";
    }
    return "unknown error";
}

rt_status rt_err_set(rt_err *err, rt_status code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

void rt_err_prefix(rt_err *err, const char *fmt, ...)
{
    if (!err)
        return;
    char prefix[RT_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    char old[RT_ERR_MAX];
    memcpy(old, err->msg, sizeof old);
    old[sizeof old - 1] = '\0';
    /* Truncation is fine: the message is for people. */
    size_t plen = strlen(prefix);
    if (plen > sizeof err->msg - 3)
        plen = sizeof err->msg - 3;
    memcpy(err->msg, prefix, plen);
    memcpy(err->msg + plen, ": ", 2);
    size_t room = sizeof err->msg - plen - 3;
    size_t olen = strnlen(old, room);
    memcpy(err->msg + plen + 2, old, olen);
    err->msg[plen + 2 + olen] = '\0';
}

_Noreturn void rt_err_invariant_failed(const char *expr, const char *file, int line)
{
    fprintf(stderr, "predictd: invariant failed: %s (%s:%d)\n", expr, file, line);
    abort();
}
