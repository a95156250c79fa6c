/*
 * rt_file.c — reading a whole file, one way for every module: exports
 * (model.pb), vocabulary files, specs, checkpoints, warm-up requests and the
 * operator's config. The file is opened without blocking (a FIFO put where
 * a file should be cannot stall the daemon) unless the caller allows pipes,
 * refused when it is not a regular file, capped at the caller's size, and
 * read to its end with EINTR retried.
 */
#include "rt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

rt_status rt_read_file(int dfd, const char *path, size_t max, int flags, char **data,
                       size_t *len, rt_err *err)
{
    *data = NULL;
    if (len)
        *len = 0;
    int any = (flags & RT_READ_ANY_FILE) != 0;
    int fd = openat(dfd, path, O_RDONLY | O_CLOEXEC | (any ? 0 : O_NONBLOCK));
    if (fd < 0)
        return rt_err_set(err, errno == ENOENT ? RT_ERR_NOTFOUND : RT_ERR_IO,
                          "%s: cannot open: %s", path, strerror(errno));
    rt_status st = RT_OK;
    char *buf = NULL;
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        st = rt_err_set(err, RT_ERR_IO, "%s: fstat: %s", path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(sb.st_mode) && !any) {
        st = rt_err_set(err, RT_ERR_FORMAT, "%s: not a regular file", path);
        goto out;
    }
    if (S_ISREG(sb.st_mode) && (sb.st_size < 0 || (uint64_t)sb.st_size > max)) {
        st = rt_err_set(err, RT_ERR_LIMIT, "%s: %lld bytes exceeds the limit of %zu", path,
                        (long long)sb.st_size, max);
        goto out;
    }
    /* A regular file's size is only a hint (it may change while read): read
     * to the end, never more than max bytes. cap counts the NUL too. */
    size_t cap = S_ISREG(sb.st_mode) ? (size_t)sb.st_size : 65536, got = 0;
    cap = (cap < max ? cap : max) + 1;
    for (;;) {
        if (got + 1 == cap) { /* full */
            if (got == max) { /* at the cap: only the end of the file may follow */
                char c;
                ssize_t k;
                while ((k = read(fd, &c, 1)) < 0 && errno == EINTR)
                    ;
                if (k == 0)
                    break;
                st = k < 0 ? rt_err_set(err, RT_ERR_IO, "%s: read: %s", path, strerror(errno))
                           : rt_err_set(err, RT_ERR_LIMIT,
                                        "%s: larger than the limit of %zu bytes", path, max);
                goto out;
            }
            size_t want = got < max / 2 ? 2 * got + 4096 : max; /* > got: got < max */
            size_t ncap = (want < max ? want : max) + 1;
            char *p = realloc(buf, ncap);
            if (!p) {
                st = rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory for %zu bytes", path,
                                ncap);
                goto out;
            }
            buf = p;
            cap = ncap;
        } else if (!buf && !(buf = malloc(cap))) {
            st = rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory for %zu bytes", path, cap);
            goto out;
        }
        ssize_t k = read(fd, buf + got, cap - 1 - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            st = rt_err_set(err, RT_ERR_IO, "%s: read: %s", path, strerror(errno));
            goto out;
        }
        if (k == 0)
            break;
        got += (size_t)k;
    }
    if (!buf && !(buf = malloc(1))) {
        st = rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", path);
        goto out;
    }
    buf[got] = '\0';
    *data = buf;
    if (len)
        *len = got;
    buf = NULL;
out:
    free(buf);
    close(fd);
    return st;
}
