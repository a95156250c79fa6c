/*
 * exp_versions.c — the version directories of an export base: listing,
 * retention (keep the newest N), safe removal, and cleanup of the hidden
 * .tmp-* directories that interrupted exports or removals leave behind.
 */
#include "exp_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>


int exp_open_base(const char *base, int create, rt_status *st, rt_err *err)
{
    size_t len = base ? strlen(base) : 0;
    if (len == 0 || len >= 4096) {
        *st = rt_err_set(err, RT_ERR_INVALID, "export base path is empty or too long");
        return -1;
    }
    if (create && (*st = rt_file_mkdirs(base, err)) != RT_OK) {
        rt_err_prefix(err, "export base %s", base);
        return -1;
    }
    int fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        *st = rt_err_set(err, errno == ENOENT ? RT_ERR_NOTFOUND : RT_ERR_IO,
                         "export base %s: %s", base, strerror(errno));
        return -1;
    }
    *st = RT_OK;
    return fd;
}

rt_status exp_list_versions(const char *base, int64_t **versions, size_t *n, rt_err *err)
{
    rt_status st;
    if (!versions || !n)
        return rt_err_set(err, RT_ERR_INVALID, "exp_list_versions: NULL argument");
    *versions = NULL;
    *n = 0;
    int dfd = exp_open_base(base, 0, &st, err);
    if (dfd < 0)
        return st;
    st = rt_publish_list(dfd, base, versions, n, err);
    close(dfd);
    return st;
}

/* Renames dfd/<version> to a hidden temp name, makes that durable, removes it. */
static rt_status remove_at(int dfd, const char *base, int64_t version, rt_err *err)
{
    char name[32], tmp[96];
    snprintf(name, sizeof name, "%" PRId64, version);
    if (rt_publish_temp_name(tmp, sizeof tmp, version) != 0)
        return rt_err_set(err, RT_ERR_LIMIT, "temp name too long");
    if (renameat(dfd, name, dfd, tmp) != 0)
        return rt_err_set(err, errno == ENOENT ? RT_ERR_NOTFOUND : RT_ERR_IO,
                          "export %s/%s: rename to %s: %s", base, name, tmp, strerror(errno));
    fsync(dfd);
    if (rt_file_rmtree_at(dfd, tmp) != 0)
        return rt_err_set(err, RT_ERR_IO,
                          "export %s/%s: hidden as %s but not fully removed: %s", base, name,
                          tmp, strerror(errno));
    return RT_OK;
}

rt_status exp_remove_version(const char *base, int64_t version, rt_err *err)
{
    rt_status st;
    if (version < 0)
        return rt_err_set(err, RT_ERR_INVALID, "version %" PRId64 " is negative", version);
    int dfd = exp_open_base(base, 0, &st, err);
    if (dfd < 0)
        return st;
    st = remove_at(dfd, base, version, err);
    close(dfd);
    return st;
}

rt_status exp_retain_latest(const char *base, size_t keep, size_t *removed, rt_err *err)
{
    rt_status st;
    int64_t *v = NULL;
    size_t n = 0, done = 0;
    if (removed)
        *removed = 0;
    if (keep == 0)
        return rt_err_set(err, RT_ERR_INVALID, "exports_to_keep must be at least 1");
    int dfd = exp_open_base(base, 0, &st, err);
    if (dfd < 0)
        return st;
    if ((st = rt_publish_list(dfd, base, &v, &n, err)) != RT_OK)
        goto out;
    for (size_t i = 0; i + keep < n; i++) { /* ascending: the oldest come first */
        rt_status s = remove_at(dfd, base, v[i], err);
        if (s == RT_ERR_NOTFOUND)
            continue; /* someone else removed it: fine */
        if (s != RT_OK) {
            st = s;
            goto out;
        }
        done++;
    }
out:
    if (removed)
        *removed = done;
    free(v);
    close(dfd);
    return st;
}

rt_status exp_clean_temp(const char *base, int64_t max_age_secs, size_t *removed, rt_err *err)
{
    rt_status st;
    if (removed)
        *removed = 0;
    int dfd = exp_open_base(base, 0, &st, err); /* a missing base is the caller's error */
    if (dfd < 0)
        return st;
    close(dfd);
    return rt_publish_clean_temps(base, max_age_secs < 0 ? 0 : max_age_secs, removed, err);
}
