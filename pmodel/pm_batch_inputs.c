/*
 * pm_batch_inputs.c — what a batch-prediction job read, recorded and checked
 * before the job is resumed. job.json records each unit's file size and
 * modification time (a FIFO as one: it is read once, never checked); each
 * shard, when it is scored, records the digest of its bytes (FarmHash
 * Fingerprint64, the runtime's rt_hash_fingerprint64, of each 1 MiB block,
 * chained) in DIR/.shard_NNNN.json, written before its predictions file. A
 * re-run that finds the job refuses to resume when a file's size is not what
 * the job read, or the bytes of a shard already scored are not: the finished
 * shards' predictions are of the old bytes and the new shards would mix rows
 * of the new (issue 35: 20,121 rows predicted twice, 20,000 never). Every
 * rank checks every file's size and the digests of the shards it scores, so
 * no rank writes a shard of changed input; each digest costs one more read of
 * its shard, by the rank that scores it (none when the job is made).
 */
#include "pm.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BLOCK (1u << 20)

/* The digest of path's bytes [start, end) (end 0: to the end of the file). */
static rt_status range_digest(const char *path, uint64_t start, uint64_t end, uint64_t *digest,
                              rt_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return rt_err_set(err, RT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    uint8_t *buf = malloc(BLOCK);
    if (!buf) {
        close(fd);
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    }
    rt_status st = RT_OK;
    uint64_t chain[2] = {0, 0}, at = start;
    for (;;) {
        size_t want = BLOCK;
        if (end > 0 && end - at < want)
            want = (size_t)(end - at);
        if (want == 0)
            break;
        ssize_t got = pread(fd, buf, want, (off_t)at);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            st = rt_err_set(err, RT_ERR_IO, "%s: read error: %s", path, strerror(errno));
            break;
        }
        if (got == 0)
            break;
        chain[1] = rt_hash_fingerprint64(buf, (size_t)got);
        chain[0] = rt_hash_fingerprint64(chain, sizeof chain);
        at += (uint64_t)got;
    }
    free(buf);
    close(fd);
    *digest = chain[0] ^ (at - start); /* the length too */
    return st;
}

rt_status pm_batch_inputs_json(const pm_batch_unit *units, size_t n, rt_buf *b, rt_err *err)
{
    rt_buf_puts(b, "\"inputs\": [");
    for (size_t k = 0; k < n; k++) {
        const pm_batch_unit *u = &units[k];
        struct stat sb;
        if (stat(u->path, &sb) != 0)
            return rt_err_set(err, RT_ERR_IO, "%s: %s", u->path, strerror(errno));
        rt_buf_puts(b, k ? ", " : "");
        rt_buf_printf(b, "{\"file\": ");
        rt_buf_json_string(b, u->path, strlen(u->path));
        rt_buf_printf(b, ", \"start\": %" PRIu64 ", \"end\": %" PRIu64, u->start, u->end);
        if (S_ISFIFO(sb.st_mode))
            rt_buf_puts(b, ", \"fifo\": true}");
        else
            rt_buf_printf(b, ", \"size\": %" PRIu64 ", \"mtime\": \"%lld.%09ld\"}",
                          (uint64_t)sb.st_size, (long long)sb.st_mtim.tv_sec,
                          (long)sb.st_mtim.tv_nsec);
    }
    rt_buf_puts(b, "]");
    return rt_buf_failed(b) ? rt_err_set(err, RT_ERR_NOMEM, "out of memory") : RT_OK;
}

static void sidecar_path(const char *dir, int width, size_t k, char *p, size_t n)
{
    snprintf(p, n, "%s/.shard_%0*zu.json", dir, width, k + 1);
}

static void mtime_text(const struct stat *sb, char *buf, size_t n)
{
    snprintf(buf, n, "%lld.%09ld", (long long)sb->st_mtim.tv_sec, (long)sb->st_mtim.tv_nsec);
}

rt_status pm_batch_shard_record(const char *dir, int width, size_t k, const pm_batch_unit *u,
                                rt_err *err)
{
    struct stat sb;
    if (stat(u->path, &sb) != 0)
        return rt_err_set(err, RT_ERR_IO, "%s: %s", u->path, strerror(errno));
    if (S_ISFIFO(sb.st_mode))
        return RT_OK; /* read once: nothing to check it against */
    uint64_t d = 0;
    rt_status st = range_digest(u->path, u->start, u->end, &d, err);
    if (st)
        return st;
    char p[4200], mt[40];
    mtime_text(&sb, mt, sizeof mt);
    rt_buf b;
    rt_buf_init(&b);
    rt_buf_puts(&b, "{\"file\": ");
    rt_buf_json_string(&b, u->path, strlen(u->path));
    rt_buf_printf(&b, ", \"start\": %" PRIu64 ", \"end\": %" PRIu64 ", \"size\": %" PRIu64
                  ", \"mtime\": \"%s\", \"digest\": \"%016" PRIx64 "\"}\n",
                  u->start, u->end, (uint64_t)sb.st_size, mt, d);
    sidecar_path(dir, width, k, p, sizeof p);
    st = rt_buf_failed(&b) ? rt_err_set(err, RT_ERR_NOMEM, "out of memory")
                           : rt_file_write(p, b.data, b.len, err);
    rt_buf_free(&b);
    return st;
}

/* The refusal naming the file, what changed and what to do. */
static rt_status changed(rt_err *err, const char *dir, const char *path, const char *what)
{
    return rt_err_set(err, RT_ERR_INVALID, "%s changed since the job began (%s): resuming "
                      "would mix predictions of its old and new rows; not resumed. Remove %s "
                      "(or give another --output-dir) to run the job anew", path, what, dir);
}

/* The digest a scored shard recorded (its .shard_NNNN.json) into hex[17] and
 * its mtime into mt: 1; 0 when it recorded none (not scored yet, or scored
 * before digests were kept). */
static int recorded(const char *dir, int width, size_t k, char *hex, char *mt, size_t mtn)
{
    char p[4200], *text = NULL;
    size_t len = 0;
    sidecar_path(dir, width, k, p, sizeof p);
    if (rt_file_read(AT_FDCWD, p, 1u << 16, 0, &text, &len, NULL) != RT_OK)
        return 0;
    cJSON *j = cJSON_ParseWithLength(text, len);
    const cJSON *dg = cJSON_GetObjectItemCaseSensitive(j, "digest");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "mtime");
    int ok = cJSON_IsString(dg) && strlen(dg->valuestring) == 16;
    if (ok) {
        memcpy(hex, dg->valuestring, 17);
        snprintf(mt, mtn, "%s", cJSON_IsString(m) ? m->valuestring : "?");
    }
    cJSON_Delete(j);
    free(text);
    return ok;
}

rt_status pm_batch_inputs_check(const char *job_json, size_t len, const char *dir, int width,
                                const pm_batch_unit *units, size_t n, long rank, long size,
                                rt_err *err)
{
    cJSON *root = cJSON_ParseWithLength(job_json, len);
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(root, "inputs"), *e;
    rt_status st = RT_OK;
    if (!cJSON_IsArray(in) || (size_t)cJSON_GetArraySize(in) != n) {
        st = rt_err_set(err, RT_ERR_FORMAT, "%s/job.json: its \"inputs\" are not this job's %zu "
                        "shards: not resumed", dir, n);
        goto out;
    }
    size_t k = 0;
    cJSON_ArrayForEach(e, in)
    {
        const pm_batch_unit *u = &units[k];
        const cJSON *file = cJSON_GetObjectItemCaseSensitive(e, "file");
        const cJSON *sz = cJSON_GetObjectItemCaseSensitive(e, "size");
        if (!cJSON_IsString(file) || strcmp(file->valuestring, u->path) != 0) {
            st = rt_err_set(err, RT_ERR_FORMAT, "%s/job.json: inputs[%zu] is not %s: not "
                            "resumed", dir, k, u->path);
            goto out;
        }
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "fifo")) || !cJSON_IsNumber(sz)) {
            k++;
            continue; /* a FIFO (read once), or a job recorded before sizes */
        }
        struct stat sb;
        char what[300], hex[17], mt[40], now[40];
        if (stat(u->path, &sb) != 0) {
            st = rt_err_set(err, RT_ERR_IO, "%s: %s (an input of the job in %s)", u->path,
                            strerror(errno), dir);
            goto out;
        }
        mtime_text(&sb, now, sizeof now);
        if ((double)sb.st_size != sz->valuedouble) {
            snprintf(what, sizeof what, "%.0f bytes then, %lld now", sz->valuedouble,
                     (long long)sb.st_size);
            st = changed(err, dir, u->path, what);
            goto out;
        }
        if ((long)(k % (size_t)size) == rank && recorded(dir, width, k, hex, mt, sizeof mt)) {
            uint64_t d = 0; /* a shard this rank scores, scored before: its bytes */
            if ((st = range_digest(u->path, u->start, u->end, &d, err)))
                goto out;
            char got[24];
            snprintf(got, sizeof got, "%016" PRIx64, d);
            if (strcmp(got, hex) != 0) {
                char range[64];
                if (u->end)
                    snprintf(range, sizeof range, "bytes %" PRIu64 " to %" PRIu64, u->start,
                             u->end);
                else
                    snprintf(range, sizeof range, "bytes %" PRIu64 " to its end", u->start);
                snprintf(what, sizeof what, "%s, shard %zu: digest %s then, %s now; modified "
                         "%s then, %s now", range, k + 1, hex, got, mt, now);
                st = changed(err, dir, u->path, what);
                goto out;
            }
        }
        k++;
    }
out:
    cJSON_Delete(root);
    return st;
}
