/*
 * srv_auth_file.c — the writing side of the tokens file (predictctl token
 * add): a new random token is made, only its SHA-256 and scopes are
 * appended, under the same kind of lock as config edits (an exclusive
 * flock on PATH.lock, a file beside it, since the tokens file itself is
 * replaced by rename), atomically, so the daemon's reload reads the old
 * file or the new one.
 */
#include "srv_sec.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

rt_status srv_auth_add_token(const char *path, unsigned scopes, const char *name,
                             char token[69], rt_err *err)
{
    if (name && !srv_name_valid(name, strlen(name)))
        return rt_err_set(err, RT_ERR_INVALID, "--name '%s': expected [A-Za-z0-9_.-]+", name);
    char lock[4200];
    if (snprintf(lock, sizeof lock, "%s.lock", path) >= (int)sizeof lock)
        return rt_err_set(err, RT_ERR_INVALID, "%s: path too long", path);
    int lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lfd < 0)
        return rt_err_set(err, RT_ERR_IO, "%s: cannot create the edit lock: %s", lock,
                          strerror(errno));
    if (flock(lfd, LOCK_EX) != 0) {
        close(lfd);
        return rt_err_set(err, RT_ERR_IO, "%s: cannot lock: %s", lock, strerror(errno));
    }
    rt_status st = RT_OK;
    /* a new file is made 0600 first, so rt_file_write keeps that mode */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
    char *text = NULL;
    size_t len = 0;
    rt_buf out;
    rt_buf_init(&out);
    if ((st = rt_file_read(AT_FDCWD, path, 16u << 20, 0, &text, &len, err)) != RT_OK)
        goto done;
    if (!srv_auth_new_token(token)) {
        st = rt_err_set(err, RT_ERR_IO, "cannot draw a random token");
        goto done;
    }
    char hex[65], names[64];
    srv_auth_sha256_hex(token, strlen(token), hex);
    srv_auth_scope_names(scopes, names, sizeof names);
    if (rt_buf_append(&out, text, len) != 0 ||
        (len && text[len - 1] != '\n' && rt_buf_append(&out, "\n", 1) != 0) ||
        rt_buf_printf(&out, "%s %s%s%s\n", hex, names, name ? " " : "", name ? name : "") != 0) {
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto done;
    }
    st = rt_file_write(path, out.data, out.len, err);
done:
    free(text);
    rt_buf_free(&out);
    close(lfd); /* releases the lock */
    return st;
}
