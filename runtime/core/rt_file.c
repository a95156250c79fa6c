/*
 * rt_file.c — files, one way for every module: reading a whole one, writing
 * one atomically (rt_file_write, the rename and directory fsync under it),
 * mkdir -p and rm -rf. Read: exports
 * (model.pb), vocabulary files, specs, checkpoints, warm-up requests and the
 * operator's config. The file is opened without blocking (a FIFO put where
 * a file should be cannot stall the daemon) unless the caller allows pipes,
 * refused when it is not a regular file, capped at the caller's size, and
 * read to its end with EINTR retried.
 */
#include "rt_core.h"
#include "rt_core_internal.h"
#include "rt_core_limits.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *file_kind(mode_t m)
{
    return S_ISFIFO(m) ? "a FIFO" : S_ISDIR(m) ? "a directory" : S_ISSOCK(m) ? "a socket"
           : S_ISCHR(m) || S_ISBLK(m)          ? "a device"
                                               : "not a plain file";
}

/* Opens path the way both readers do: O_NONBLOCK unless any, refused
 * unless a regular file (unless any), a regular file capped at max bytes.
 * Returns the descriptor (>= 0) with *sb filled, or -1 with *st set. */
static int open_checked(int dfd, const char *path, size_t max, bool any, struct stat *sb,
                        rt_status *st, rt_err *err)
{
    int fd = openat(dfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | (any ? 0 : O_NONBLOCK));
    if (fd < 0) {
        *st = rt_err_set(err, errno == ENOENT ? RT_ERR_NOTFOUND : RT_ERR_IO,
                         "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, sb) != 0)
        *st = rt_err_set(err, RT_ERR_IO, "%s: fstat: %s", path, strerror(errno));
    else if (!S_ISREG(sb->st_mode) && !any)
        *st = rt_err_set(err, RT_ERR_FORMAT, "%s: not a regular file (%s)", path,
                         file_kind(sb->st_mode));
    else if (S_ISREG(sb->st_mode) && (sb->st_size < 0 || (uint64_t)sb->st_size > max))
        *st = rt_err_set(err, RT_ERR_LIMIT, "%s: %lld bytes exceeds the limit of %zu", path,
                         (long long)sb->st_size, max);
    else
        return fd;
    close(fd);
    return -1;
}

rt_status rt_file_read_aligned(int dfd, const char *path, size_t max, size_t align, void **data,
                               size_t *len, rt_err *err)
{
    struct stat sb;
    rt_status st = RT_OK;
    *data = NULL;
    *len = 0;
    int fd = open_checked(dfd, path, max < SIZE_MAX - align ? max : SIZE_MAX - align - 1, false,
                          &sb, &st, err);
    if (fd < 0)
        return st;
    size_t want = (size_t)sb.st_size, got = 0;
    char *buf = aligned_alloc(align, (want + align) / align * align); /* + 1 byte at least */
    if (!buf) {
        st = rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory for %zu bytes", path, want);
        goto out;
    }
    while (got < want) {
        ssize_t k = read(fd, buf + got, want - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            st = k < 0 ? rt_err_set(err, RT_ERR_IO, "%s: read: %s", path, strerror(errno))
                       : rt_err_set(err, RT_ERR_FORMAT,
                                    "%s: the file shrank from %zu to %zu bytes while read", path,
                                    want, got);
            goto out;
        }
        got += (size_t)k;
    }
    *data = buf;
    *len = want;
    buf = NULL;
out:
    free(buf);
    close(fd);
    return st;
}

rt_status rt_file_read(int dfd, const char *path, size_t max, int flags, char **data,
                       size_t *len, rt_err *err)
{
    *data = NULL;
    if (len)
        *len = 0;
    bool any = (flags & RT_READ_ANY_FILE) != 0;
    rt_status st = RT_OK;
    struct stat sb;
    int fd = open_checked(dfd, path, max, any, &sb, &st, err);
    if (fd < 0)
        return st;
    char *buf = NULL;
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

rt_status rt_file_fsync_dir(const char *dir, rt_err *err)
{
    int fd = open(dir && dir[0] ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return rt_err_set(err, RT_ERR_IO, "%s: cannot open the directory: %s", dir,
                          strerror(errno));
    int rc = fsync(fd), e = errno;
    close(fd);
    if (rc != 0 && e != EINVAL) /* EINVAL: a file system whose directories do not sync */
        return rt_err_set(err, RT_ERR_IO, "%s: fsync: %s", dir, strerror(e));
    return RT_OK;
}

rt_status rt_file_rename_durable(const char *from, const char *to, rt_err *err)
{
    if (rename(from, to) != 0)
        return rt_err_set(err, RT_ERR_IO, "rename %s to %s: %s", from, to, strerror(errno));
    const char *slash = strrchr(to, '/');
    if (!slash)
        return rt_file_fsync_dir(".", err);
    if (slash == to)
        return rt_file_fsync_dir("/", err);
    rt_buf dir;
    rt_buf_init(&dir);
    if (rt_buf_append(&dir, to, (size_t)(slash - to)) != 0)
        return rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", to);
    rt_status st = rt_file_fsync_dir(dir.data, err);
    rt_buf_free(&dir);
    return st;
}

rt_status rt_file_write_fd(int fd, const void *data, size_t len, const char *name, rt_err *err)
{
    for (size_t off = 0; off < len;) {
        ssize_t n = write(fd, (const char *)data + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return rt_err_set(err, RT_ERR_IO, "%s: write: %s", name,
                              n < 0 ? strerror(errno) : "no progress");
        off += (size_t)n;
    }
    return RT_OK;
}

rt_status rt_file_write_tag(const char *path, const char *tag, const void *data, size_t len,
                            rt_err *err)
{
    rt_buf tmp;
    rt_buf_init(&tmp);
    if (rt_buf_printf(&tmp, "%s%s%ld", path, tag && tag[0] ? tag : ".tmp-", (long)getpid()))
        return rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", path);
    struct stat sb;
    mode_t mode = stat(path, &sb) == 0 ? (sb.st_mode & 07777) : 0644;
    rt_status st = RT_OK;
    int fd = open(tmp.data, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0) {
        st = rt_err_set(err, RT_ERR_IO, "%s: cannot create: %s", tmp.data, strerror(errno));
        goto out;
    }
    st = rt_file_write_fd(fd, data, len, tmp.data, err);
    if (!st && (fchmod(fd, mode) != 0 || fsync(fd) != 0))
        st = rt_err_set(err, RT_ERR_IO, "%s: %s", tmp.data, strerror(errno));
    if (close(fd) != 0 && !st)
        st = rt_err_set(err, RT_ERR_IO, "%s: close: %s", tmp.data, strerror(errno));
    if (!st)
        st = rt_file_rename_durable(tmp.data, path, err);
    if (st)
        unlink(tmp.data); /* ENOENT once renamed: the fsync of the directory failed */
out:
    rt_buf_free(&tmp);
    return st;
}

rt_status rt_file_write(const char *path, const void *data, size_t len, rt_err *err)
{
    return rt_file_write_tag(path, NULL, data, len, err);
}

rt_status rt_file_mkdirs(const char *dir, rt_err *err)
{
    size_t len = dir ? strlen(dir) : 0;
    if (len == 0)
        return rt_err_set(err, RT_ERR_INVALID, "directory path is empty");
    char *path = malloc(len + 1);
    if (!path)
        return rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", dir);
    memcpy(path, dir, len + 1);
    rt_status st = RT_OK;
    /* each missing component in turn */
    for (size_t i = 1; i <= len && !st; i++) {
        if (path[i] != '/' && path[i] != '\0')
            continue;
        char c = path[i];
        path[i] = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST)
            st = rt_err_set(err, RT_ERR_IO, "mkdir %s: %s", path, strerror(errno));
        path[i] = c;
    }
    free(path);
    return st;
}


static int rmtree_depth(int dfd, const char *name, int depth)
{
    if (unlinkat(dfd, name, 0) == 0)
        return 0;
    if (errno != EISDIR && errno != EPERM)
        return errno == ENOENT ? 0 : -1;
    if (depth >= RT_RMTREE_MAX_DEPTH) {
        errno = ELOOP;
        return -1;
    }
    int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (rmtree_depth(dirfd(d), de->d_name, depth + 1) != 0) {
            rc = -1;
            break;
        }
    }
    int e = errno;
    closedir(d);
    if (rc != 0) {
        errno = e;
        return -1;
    }
    if (unlinkat(dfd, name, AT_REMOVEDIR) != 0 && errno != ENOENT)
        return -1;
    return 0;
}

int rt_file_rmtree_at(int dfd, const char *name)
{
    return rmtree_depth(dfd, name, 0);
}
