/*
 * rt_publish.c — a new version directory of an export base, written the one
 * way the exporter and predict-model import write one: the version picked
 * (the caller's, or the Unix time, or one past the newest when that is not
 * older), its files written into a hidden BASE/.tmp-<version>-<pid>-<rand>
 * directory (subdirectories made as the names ask, every file and directory
 * fsynced), the caller's check run on the complete directory, then renamed
 * to its integer name with RENAME_NOREPLACE (the next integer when taken)
 * and BASE fsynced. On any failure the temp directory is removed: no version
 * and no partial directory is left behind. Layout: docs/export-format.md.
 */
#include "rt_model.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PUBLISH_VERSION_TRIES 1000 /* next integers tried when a version exists */

int rt_publish_temp_name(char *buf, size_t cap, int64_t v)
{
    uint64_t r = 0;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        r = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)ts.tv_sec ^
            (uint64_t)(uintptr_t)buf;
    }
    int w = snprintf(buf, cap, RT_PUBLISH_TMP_PREFIX "%" PRId64 "-%ld-%08" PRIx32, v,
                     (long)getpid(), (uint32_t)r);
    return (w < 0 || (size_t)w >= cap) ? -1 : 0;
}

long rt_publish_temp_pid(const char *name)
{
    if (strncmp(name, RT_PUBLISH_TMP_PREFIX, strlen(RT_PUBLISH_TMP_PREFIX)) != 0)
        return -1;
    const char *p = name + strlen(RT_PUBLISH_TMP_PREFIX);
    char *end;
    errno = 0;
    (void)strtoll(p, &end, 10);
    if (end == p || *end != '-' || errno)
        return -1;
    p = end + 1;
    long pid = strtol(p, &end, 10);
    if (end == p || *end != '-' || errno || pid <= 0)
        return -1;
    return pid;
}

/* Live writers' temp directories older than this many times max_age_secs
 * go too: a slow writer keeps its directory, a reused pid not forever. */
#define PUBLISH_LIVE_AGE_FACTOR 24

rt_status rt_publish_clean_temps(const char *base, int64_t max_age_secs, size_t *removed,
                                 rt_err *err)
{
    if (removed)
        *removed = 0;
    int dfd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return errno == ENOENT ? RT_OK
                               : rt_err_set(err, RT_ERR_IO, "export base %s: %s", base,
                                            strerror(errno));
    int fd = dup(dfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        rt_status st = rt_err_set(err, RT_ERR_IO, "export base %s: %s", base, strerror(errno));
        close(dfd);
        return st;
    }
    rewinddir(d);
    time_t now = time(NULL);
    rt_status first = RT_OK;
    size_t done = 0;
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        if (strncmp(de->d_name, RT_PUBLISH_TMP_PREFIX, strlen(RT_PUBLISH_TMP_PREFIX)) != 0)
            continue;
        long pid = rt_publish_temp_pid(de->d_name);
        int alive = pid > 0 && (pid == (long)getpid() || kill((pid_t)pid, 0) == 0 ||
                                errno != ESRCH);
        int dead = pid > 0 && !alive;
        int old = 0;
        struct stat sb;
        if (!dead && max_age_secs >= 0 &&
            fstatat(dfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0) {
            int64_t age = (int64_t)(now - sb.st_mtime);
            old = alive ? age > PUBLISH_LIVE_AGE_FACTOR * max_age_secs : age > max_age_secs;
        }
        if (!dead && !old)
            continue;
        if (rt_file_rmtree_at(dfd, de->d_name) != 0) {
            if (first == RT_OK)
                first = rt_err_set(err, RT_ERR_IO, "export base %s: removing %s: %s", base,
                                   de->d_name, strerror(errno));
            continue;
        }
        done++;
    }
    closedir(d);
    close(dfd);
    if (removed)
        *removed = done;
    return first;
}

rt_status rt_publish_list(int dfd, const char *base, int64_t **versions, size_t *n, rt_err *err)
{
    rt_status st = RT_OK;
    int64_t *v = NULL;
    size_t count = 0, cap = 0;
    *versions = NULL;
    *n = 0;
    int fd = dup(dfd);
    if (fd < 0)
        return rt_err_set(err, RT_ERR_IO, "export base %s: dup: %s", base, strerror(errno));
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return rt_err_set(err, RT_ERR_IO, "export base %s: %s", base, strerror(errno));
    }
    rewinddir(d); /* a dup shares the file position */
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        int64_t ver;
        struct stat sb;
        if (!rt_model_version_parse(de->d_name, &ver) ||
            fstatat(dfd, de->d_name, &sb, 0) != 0 || !S_ISDIR(sb.st_mode))
            continue;
        if (rt_grow(&v, &cap, count + 1, sizeof *v) != 0) {
            st = rt_err_set(err, RT_ERR_NOMEM, "export base %s: out of memory", base);
            free(v);
            closedir(d);
            return st;
        }
        v[count++] = ver;
    }
    closedir(d);
    if (count)
        qsort(v, count, sizeof *v, rt_cmp_i64);
    else
        free(v);
    *versions = count ? v : NULL;
    *n = count;
    return RT_OK;
}

/* The default version: the Unix time now, or one past the newest existing
 * version if that is not older (several exports in one second), so a new
 * version is always the newest and retention never removes it. */
static rt_status default_version(int bfd, const char *base, int64_t *version, rt_err *err)
{
    int64_t *have = NULL;
    size_t n = 0;
    rt_status st = rt_publish_list(bfd, base, &have, &n, err);
    if (st != RT_OK)
        return st;
    int64_t v = (int64_t)time(NULL);
    if (n > 0 && have[n - 1] >= v)
        v = have[n - 1] < INT64_MAX ? have[n - 1] + 1 : have[n - 1];
    free(have);
    *version = v;
    return RT_OK;
}

/* Copies the regular file src_path into fd. */
static rt_status copy_into(int fd, const char *label, const char *src_path, rt_err *err)
{
    uint8_t buf[65536];
    struct stat sb;
    rt_status st = RT_OK;
    int src = open(src_path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO cannot block */
    if (src < 0)
        return rt_err_set(err, RT_ERR_IO, "%s: cannot open source %s: %s", label, src_path,
                          strerror(errno));
    if (fstat(src, &sb) != 0 || !S_ISREG(sb.st_mode))
        st = rt_err_set(err, RT_ERR_IO, "%s: source %s is not a regular file", label, src_path);
    while (st == RT_OK) {
        ssize_t r = read(src, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            st = rt_err_set(err, RT_ERR_IO, "%s: read %s: %s", label, src_path, strerror(errno));
        if (r <= 0)
            break;
        st = rt_file_write_fd(fd, buf, (size_t)r, label, err);
    }
    close(src);
    return st;
}

/* Creates dfd/name (label in messages) with f's bytes or a copy of its
 * source, fsynced when sync. */
static rt_status write_file_at(int dfd, const char *label, const char *name,
                               const rt_publish_file *f, bool sync, rt_err *err)
{
    int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return rt_err_set(err, RT_ERR_IO, "%s: create: %s", label, strerror(errno));
    rt_status st = f->data || !f->src_path ? rt_file_write_fd(fd, f->data, f->len, label, err)
                                           : copy_into(fd, label, f->src_path, err);
    if (st == RT_OK && sync && fsync(fd) != 0)
        st = rt_err_set(err, RT_ERR_IO, "%s: fsync: %s", label, strerror(errno));
    if (close(fd) != 0 && st == RT_OK)
        st = rt_err_set(err, RT_ERR_IO, "%s: close: %s", label, strerror(errno));
    return st;
}

/* Opens (creating when missing) directory `name` (len bytes) inside dfd;
 * fsyncs dfd after creating it when sync. -1 with errno on failure. */
static int open_subdir(int dfd, const char *name, size_t len, bool sync)
{
    char comp[256];
    if (len >= sizeof comp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(comp, name, len);
    comp[len] = '\0';
    if (mkdirat(dfd, comp, 0755) == 0) {
        if (sync && fsync(dfd) != 0)
            return -1;
    } else if (errno != EEXIST) {
        return -1;
    }
    return openat(dfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* Writes f at its relative path inside the temp dir tfd, making (and
 * fsyncing) the directories its name asks for. */
static rt_status write_one(int tfd, const rt_publish_file *f, bool sync, rt_err *err)
{
    rt_status st = RT_OK;
    if (!f->name || !f->name[0] || f->name[0] == '/')
        return rt_err_set(err, RT_ERR_INVALID, "file name \"%s\" must be a relative path",
                          f->name ? f->name : "(null)");
    if (!f->data && !f->src_path && f->len)
        return rt_err_set(err, RT_ERR_INVALID, "%s: no data and no source path", f->name);
    int dfd = dup(tfd);
    if (dfd < 0)
        return rt_err_set(err, RT_ERR_IO, "%s: dup: %s", f->name, strerror(errno));
    const char *c = f->name;
    int nested = 0;
    for (const char *slash; (slash = strchr(c, '/')) != NULL; c = slash + 1, nested = 1) {
        int sub = open_subdir(dfd, c, (size_t)(slash - c), sync);
        if (sub < 0) {
            st = rt_err_set(err, RT_ERR_IO, "%s: directory: %s", f->name, strerror(errno));
            close(dfd);
            return st;
        }
        close(dfd);
        dfd = sub;
    }
    st = write_file_at(dfd, f->name, c, f, sync, err);
    if (st == RT_OK && nested && sync && fsync(dfd) != 0)
        st = rt_err_set(err, RT_ERR_IO, "%s: fsync of its directory: %s", f->name,
                        strerror(errno));
    close(dfd);
    return st;
}

/* rename(2) that never replaces an existing target. -1 with errno (EEXIST
 * when the target exists). */
static int rename_noreplace(int dfd, const char *from, const char *to)
{
    if (renameat2(dfd, from, dfd, to, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -1;
    /* File systems without RENAME_NOREPLACE: check, then rename. A racing
     * writer could still win in between; renaming onto a non-empty version
     * directory fails with ENOTEMPTY, which we treat as "exists". */
    struct stat sb;
    if (fstatat(dfd, to, &sb, AT_SYMLINK_NOFOLLOW) == 0) {
        errno = EEXIST;
        return -1;
    }
    if (renameat(dfd, from, dfd, to) == 0)
        return 0;
    if (errno == ENOTEMPTY)
        errno = EEXIST;
    return -1;
}

/* Renames bfd/tmp to the first free integer name from *version on and
 * makes it durable; *version the name taken. */
static rt_status rename_into_place(int bfd, const char *base, const char *tmp, bool sync,
                                   int64_t *version, int *have_tmp, rt_err *err)
{
    char name[32];
    int64_t v = *version;
    for (int tries = 0;; v++) {
        snprintf(name, sizeof name, "%" PRId64, v);
        if (rename_noreplace(bfd, tmp, name) == 0)
            break;
        if (errno != EEXIST || ++tries >= PUBLISH_VERSION_TRIES || v == INT64_MAX)
            return rt_err_set(err, errno == EEXIST ? RT_ERR_EXISTS : RT_ERR_IO,
                              "export base %s: rename %s to %s: %s", base, tmp, name,
                              strerror(errno));
    }
    *have_tmp = 0;
    if (sync && fsync(bfd) != 0) {
        /* Its durability is in doubt: take the version back out. */
        rt_status st =
            rt_err_set(err, RT_ERR_IO, "export base %s: fsync: %s", base, strerror(errno));
        if (renameat(bfd, name, bfd, tmp) == 0)
            *have_tmp = 1;
        return st;
    }
    *version = v;
    return RT_OK;
}

rt_status rt_publish_version(const char *base, const rt_publish_file *files, size_t n,
                             const rt_publish_params *p, int64_t *version, rt_err *err)
{
    rt_status st = RT_OK;
    rt_publish_params defaults = {.sync = true};
    char tmp[96], path[4200];
    int bfd = -1, tfd = -1, have_tmp = 0;
    if (!p)
        p = &defaults;
    if (p->version < 0)
        return rt_err_set(err, RT_ERR_INVALID, "version %" PRId64 " is negative", p->version);
    size_t blen = base ? strlen(base) : 0;
    if (blen == 0 || blen >= 4096)
        return rt_err_set(err, RT_ERR_INVALID, "export base path is empty or too long");
    if (n && !files)
        return rt_err_set(err, RT_ERR_INVALID, "rt_publish_version: NULL file list");
    if ((st = rt_file_mkdirs(base, err)) != RT_OK) {
        rt_err_prefix(err, "export base %s", base);
        return st;
    }
    if ((bfd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return rt_err_set(err, errno == ENOENT ? RT_ERR_NOTFOUND : RT_ERR_IO,
                          "export base %s: %s", base, strerror(errno));
    int64_t v = p->version;
    if (v == 0 && (st = default_version(bfd, base, &v, err)) != RT_OK)
        goto out;
    if (rt_publish_temp_name(tmp, sizeof tmp, v) != 0) {
        st = rt_err_set(err, RT_ERR_LIMIT, "temp name too long");
        goto out;
    }
    if (mkdirat(bfd, tmp, 0755) != 0) {
        st = rt_err_set(err, RT_ERR_IO, "export base %s: mkdir %s: %s", base, tmp,
                        strerror(errno));
        goto out;
    }
    have_tmp = 1;
    if ((tfd = openat(bfd, tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        st = rt_err_set(err, RT_ERR_IO, "export base %s: open %s: %s", base, tmp,
                        strerror(errno));
        goto out;
    }
    for (size_t i = 0; i < n && st == RT_OK; i++)
        st = write_one(tfd, &files[i], p->sync, err);
    if (st == RT_OK && p->sync && fsync(tfd) != 0)
        st = rt_err_set(err, RT_ERR_IO, "export directory %s: fsync: %s", tmp, strerror(errno));
    snprintf(path, sizeof path, "%s/%s", base, tmp);
    if (st == RT_OK && p->check)
        st = p->check(path, p->check_arg, err);
    if (st == RT_OK)
        st = rename_into_place(bfd, base, tmp, p->sync, &v, &have_tmp, err);
    if (st == RT_OK && version)
        *version = v;
out:
    if (tfd >= 0)
        close(tfd);
    if (have_tmp)
        (void)rt_file_rmtree_at(bfd, tmp);
    close(bfd);
    return st;
}
