/*
 * trn_ckpt.c — checkpoints: JOB_DIR/model.ckpt-<global step>.
 *
 * Layout (little-endian, as the host writes it on the platforms we build
 * for; the magic's version guards changes):
 *   char[8] "PDCKPT\0\0", u32 version (1), u32 tensor count, i64 global step
 *   per tensor: u32 name length, name bytes, u64 float count, u32 slots,
 *               float data[count], then slots x float[count]
 *   BoostedTrees models only: u64 length, the packed TreeEnsemble (inputs
 *               with their bins, bias, the trees grown so far)
 *   u32 CRC-32C of everything before it
 * Written to a hidden temporary file in JOB_DIR, fsynced, renamed to its
 * final name and the directory fsynced: a kill -9 at any moment leaves
 * either the previous set of checkpoints or the new one, never half a file
 * under a checkpoint name (and a damaged file fails its CRC and is skipped).
 */
#include "trn_internal.h"

#include "exp.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define CKPT_MAGIC "PDCKPT\0\0"
#define CKPT_VERSION 1u
#define CKPT_PREFIX "model.ckpt-"
#define CKPT_MAX_BYTES ((size_t)1 << 40) /* far above any model the trainer holds */

/* Buffered writer that keeps a running CRC. */
typedef struct wr {
    int fd;
    uint32_t crc;
    unsigned char buf[1 << 16];
    size_t len;
    int failed;
} wr;

static void wr_flush(wr *w)
{
    size_t off = 0;
    while (off < w->len && !w->failed) {
        ssize_t k = write(w->fd, w->buf + off, w->len - off);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            w->failed = errno ? errno : EIO;
            break;
        }
        off += (size_t)k;
    }
    w->len = 0;
}

static void wr_put(wr *w, const void *p, size_t n)
{
    const unsigned char *s = p;
    w->crc = rt_crc32c(w->crc, p, n);
    while (n > 0 && !w->failed) {
        size_t room = sizeof w->buf - w->len;
        size_t k = n < room ? n : room;
        memcpy(w->buf + w->len, s, k);
        w->len += k;
        s += k;
        n -= k;
        if (w->len == sizeof w->buf)
            wr_flush(w);
    }
}

static rt_status fsync_dir(const char *dir, rt_err *err)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return rt_err_set(err, RT_ERR_IO, "%s: %s", dir, strerror(errno));
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    if (rc != 0)
        return rt_err_set(err, RT_ERR_IO, "%s: fsync: %s", dir, strerror(e));
    return RT_OK;
}

rt_status trn_job_dir_check(const char *job_dir, rt_err *err)
{
    rt_err why = {{0}};
    int dfd = -1;
    if (exp_mkdirs(job_dir, &why) != RT_OK ||
        (dfd = open(job_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        if (dfd < 0 && !why.msg[0])
            snprintf(why.msg, sizeof why.msg, "%s", strerror(errno));
        return rt_err_set(err, RT_ERR_IO, "--job-dir %s: cannot create or open it: %s "
                          "(checkpoints, eval/metrics.jsonl and exports go there; nothing was "
                          "trained)", job_dir, why.msg);
    }
    char probe[64];
    snprintf(probe, sizeof probe, ".predict-train-probe-%ld", (long)getpid());
    int fd = openat(dfd, probe, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    int e = fd < 0 ? errno : 0;
    errno = 0;
    if (!e && (write(fd, "probe\n", 6) != 6 || fsync(fd) != 0))
        e = errno ? errno : ENOSPC; /* a short write: the disk is full */
    if (fd >= 0 && close(fd) != 0 && !e)
        e = errno;
    if (fd >= 0)
        unlinkat(dfd, probe, 0);
    close(dfd);
    if (e)
        return rt_err_set(err, RT_ERR_IO, "--job-dir %s: not writable: %s (checkpoints, "
                          "eval/metrics.jsonl and exports go there; nothing was trained)",
                          job_dir, strerror(e));
    return RT_OK;
}

#define LOCK_NAME ".predict-train.lock"

rt_status trn_job_dir_lock(const char *job_dir, int *fd_out, rt_err *err)
{
    char path[4200];
    *fd_out = -1;
    if (snprintf(path, sizeof path, "%s/" LOCK_NAME, job_dir) >= (int)sizeof path)
        return rt_err_set(err, RT_ERR_LIMIT, "--job-dir %s: path too long", job_dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return rt_err_set(err, RT_ERR_IO, "%s: cannot open the job dir's lock: %s", path,
                          strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        char holder[32] = "";
        ssize_t k = e == EWOULDBLOCK ? pread(fd, holder, sizeof holder - 1, 0) : -1;
        close(fd);
        if (e != EWOULDBLOCK)
            return rt_err_set(err, RT_ERR_IO, "%s: cannot lock: %s", path, strerror(e));
        long pid = k > 0 ? strtol(holder, NULL, 10) : 0;
        char who[48] = "PID unknown";
        if (pid > 0)
            snprintf(who, sizeof who, "PID %ld", pid);
        return rt_err_set(err, RT_ERR_EXISTS, "--job-dir %s is in use by another predict-train "
                          "(%s, holding %s); wait for it to end or give another --job-dir "
                          "(nothing was trained)", job_dir, who, path);
    }
    /* the holder's PID, for the message a second trainer prints */
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
        int e = errno;
        close(fd);
        return rt_err_set(err, RT_ERR_IO, "%s: cannot write: %s", path, strerror(e));
    }
    *fd_out = fd;
    return RT_OK;
}

void trn_job_dir_unlock(int fd)
{
    if (fd < 0)
        return;
    /* emptied first: a PID left in the file would name a process that ended */
    if (ftruncate(fd, 0) != 0) {
        /* nothing to do: the lock goes with the descriptor anyway */
    }
    close(fd);
}

static int parse_step(const char *name, int64_t *step)
{
    size_t pl = strlen(CKPT_PREFIX);
    if (strncmp(name, CKPT_PREFIX, pl) != 0)
        return 0;
    const char *s = name + pl;
    if (!*s || strlen(s) > 18)
        return 0;
    int64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return 0;
        v = v * 10 + (*s - '0');
    }
    *step = v;
    return 1;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

rt_status trn_ckpt_list(const char *job_dir, int64_t **steps, size_t *n, rt_err *err)
{
    *steps = NULL;
    *n = 0;
    DIR *d = opendir(job_dir);
    if (!d) {
        if (errno == ENOENT)
            return RT_OK;
        return rt_err_set(err, RT_ERR_IO, "%s: %s", job_dir, strerror(errno));
    }
    size_t cap = 0;
    struct dirent *de;
    rt_status st = RT_OK;
    while ((de = readdir(d))) {
        int64_t s;
        if (!parse_step(de->d_name, &s))
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            int64_t *q = realloc(*steps, cap * sizeof *q);
            if (!q) {
                st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
                break;
            }
            *steps = q;
        }
        (*steps)[(*n)++] = s;
    }
    closedir(d);
    if (st) {
        free(*steps);
        *steps = NULL;
        *n = 0;
        return st;
    }
    if (*n)
        qsort(*steps, *n, sizeof **steps, cmp_i64);
    return RT_OK;
}

/* Removes leftovers of interrupted saves (.model.ckpt-*.tmp). */
static void remove_temps(const char *job_dir)
{
    DIR *d = opendir(job_dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (strncmp(de->d_name, "." CKPT_PREFIX, strlen("." CKPT_PREFIX)) == 0 && l > 4 &&
            strcmp(de->d_name + l - 4, ".tmp") == 0) {
            char p[4096];
            if (snprintf(p, sizeof p, "%s/%s", job_dir, de->d_name) < (int)sizeof p)
                unlink(p);
        }
    }
    closedir(d);
}

rt_status trn_ckpt_save(const trn_model *m, const char *job_dir, int keep_max, rt_err *err)
{
    char tmp[4096], fin[4096];
    int64_t step = m->step;
    if (mkdir(job_dir, 0755) != 0 && errno != EEXIST)
        return rt_err_set(err, RT_ERR_IO, "%s: %s", job_dir, strerror(errno));
    remove_temps(job_dir);
    if (snprintf(tmp, sizeof tmp, "%s/." CKPT_PREFIX "%lld.tmp", job_dir, (long long)step) >=
            (int)sizeof tmp ||
        snprintf(fin, sizeof fin, "%s/" CKPT_PREFIX "%lld", job_dir, (long long)step) >=
            (int)sizeof fin)
        return rt_err_set(err, RT_ERR_LIMIT, "%s: path too long", job_dir);
    wr *w = calloc(1, sizeof *w);
    if (!w)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    rt_status st = RT_OK;
    w->fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        st = rt_err_set(err, RT_ERR_IO, "%s: %s", tmp, strerror(errno));
        goto out;
    }
    uint32_t ver = CKPT_VERSION, cnt = (uint32_t)m->n_params;
    wr_put(w, CKPT_MAGIC, 8);
    wr_put(w, &ver, 4);
    wr_put(w, &cnt, 4);
    wr_put(w, &step, 8);
    for (size_t i = 0; i < m->n_params; i++) {
        const tparam *p = &m->p[i];
        uint32_t nl = (uint32_t)strlen(p->name), ns = (uint32_t)p->n_slots;
        uint64_t c = p->count;
        wr_put(w, &nl, 4);
        wr_put(w, p->name, nl);
        wr_put(w, &c, 8);
        wr_put(w, &ns, 4);
        wr_put(w, p->data, c * sizeof(float));
        for (size_t s = 0; s < p->n_slots; s++)
            wr_put(w, p->slot[s], c * sizeof(float));
    }
    if (m->trees) {
        uint64_t tl = predictd__tree_ensemble__get_packed_size(m->trees);
        uint8_t *tb = malloc(tl ? (size_t)tl : 1);
        if (!tb) {
            st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
            goto out;
        }
        predictd__tree_ensemble__pack(m->trees, tb);
        wr_put(w, &tl, 8);
        wr_put(w, tb, (size_t)tl);
        free(tb);
    }
    uint32_t crc = w->crc;
    wr_put(w, &crc, 4);
    wr_flush(w);
    if (w->failed) {
        st = rt_err_set(err, RT_ERR_IO, "%s: write: %s", tmp, strerror(w->failed));
        goto out;
    }
    if (fsync(w->fd) != 0) {
        st = rt_err_set(err, RT_ERR_IO, "%s: fsync: %s", tmp, strerror(errno));
        goto out;
    }
    if (close(w->fd) != 0) {
        w->fd = -1;
        st = rt_err_set(err, RT_ERR_IO, "%s: close: %s", tmp, strerror(errno));
        goto out;
    }
    w->fd = -1;
    if (rename(tmp, fin) != 0) {
        st = rt_err_set(err, RT_ERR_IO, "rename %s: %s", fin, strerror(errno));
        goto out;
    }
    if ((st = fsync_dir(job_dir, err)))
        goto out;
    if (keep_max > 0) {
        int64_t *steps;
        size_t n;
        if (trn_ckpt_list(job_dir, &steps, &n, NULL) == RT_OK) {
            for (size_t i = 0; i + (size_t)keep_max < n; i++) {
                char old[4096];
                if (steps[i] != step &&
                    snprintf(old, sizeof old, "%s/" CKPT_PREFIX "%lld", job_dir,
                             (long long)steps[i]) < (int)sizeof old)
                    unlink(old);
            }
            free(steps);
        }
    }
out:
    if (w->fd >= 0) {
        close(w->fd);
        unlink(tmp);
    } else if (st)
        unlink(tmp);
    free(w);
    return st;
}

/* A checkpoint's tree ensemble: its inputs must be m's (names and id
 * spaces); with apply, it replaces m's ensemble. */
static rt_status load_trees(trn_model *m, const uint8_t *b, size_t len, const char *path,
                            int apply, rt_err *err)
{
    Predictd__TreeEnsemble *e = predictd__tree_ensemble__unpack(NULL, len, b);
    if (!e)
        return rt_err_set(err, RT_ERR_FORMAT, "%s: the trees do not unpack", path);
    rt_status st = RT_OK;
    if (e->n_inputs != m->trees->n_inputs)
        st = rt_err_set(err, RT_ERR_FORMAT, "%s: %zu tree inputs, the model has %zu (the spec "
                        "changed? use a new --job-dir)", path, e->n_inputs,
                        m->trees->n_inputs);
    for (size_t j = 0; st == RT_OK && j < e->n_inputs; j++)
        if (strcmp(e->inputs[j]->column, m->trees->inputs[j]->column) != 0 ||
            e->inputs[j]->num_categories != m->trees->inputs[j]->num_categories)
            st = rt_err_set(err, RT_ERR_FORMAT, "%s: tree input %zu is %.80s, the model's is %s "
                            "(the spec changed? use a new --job-dir)", path, j,
                            e->inputs[j]->column, m->trees->inputs[j]->column);
    if (st == RT_OK && apply) {
        Predictd__TreeEnsemble old = *m->trees;
        *m->trees = *e;
        *e = old;
    }
    predictd__tree_ensemble__free_unpacked(e, NULL);
    return st;
}

/* Validates a checkpoint image against m; copies it in when apply is set. */
static rt_status load_image(trn_model *m, const unsigned char *b, size_t len, const char *path,
                            int apply, int64_t *step, rt_err *err)
{
    size_t off = 0;
#define NEED(k, what)                                                                         \
    do {                                                                                    \
        if ((k) > len - off)                                                                \
            return rt_err_set(err, RT_ERR_FORMAT, "%s: truncated in %s", path, what);      \
    } while (0)
    if (len < 28)
        return rt_err_set(err, RT_ERR_FORMAT, "%s: too short (%zu bytes)", path, len);
    uint32_t crc_file;
    memcpy(&crc_file, b + len - 4, 4);
    if (rt_crc32c(0, b, len - 4) != crc_file)
        return rt_err_set(err, RT_ERR_FORMAT, "%s: checksum mismatch", path);
    len -= 4;
    if (memcmp(b, CKPT_MAGIC, 8) != 0)
        return rt_err_set(err, RT_ERR_FORMAT, "%s: bad magic", path);
    uint32_t ver, cnt;
    int64_t s;
    memcpy(&ver, b + 8, 4);
    memcpy(&cnt, b + 12, 4);
    memcpy(&s, b + 16, 8);
    off = 24;
    if (ver != CKPT_VERSION)
        return rt_err_set(err, RT_ERR_FORMAT, "%s: version %u, expected %u", path, ver,
                          CKPT_VERSION);
    if (cnt != m->n_params)
        return rt_err_set(err, RT_ERR_FORMAT, "%s: %u tensors, the model has %zu (the spec "
                          "changed? use a new --job-dir)", path, cnt, m->n_params);
    for (size_t i = 0; i < m->n_params; i++) {
        tparam *p = &m->p[i];
        uint32_t nl, ns;
        uint64_t c;
        NEED(4, "a tensor name");
        memcpy(&nl, b + off, 4);
        off += 4;
        NEED(nl, "a tensor name");
        if (nl != strlen(p->name) || memcmp(b + off, p->name, nl) != 0)
            return rt_err_set(err, RT_ERR_FORMAT, "%s: tensor %zu is \"%.*s\", the model's is "
                              "%s (the spec changed? use a new --job-dir)", path, i,
                              (int)(nl > 80 ? 80 : nl), (const char *)b + off, p->name);
        off += nl;
        NEED(12, "a tensor header");
        memcpy(&c, b + off, 8);
        memcpy(&ns, b + off + 8, 4);
        off += 12;
        if (c != p->count || ns != p->n_slots)
            return rt_err_set(err, RT_ERR_FORMAT, "%s: tensor %s has %llu floats and %u slots, "
                              "the model %llu and %zu (spec or optimizer changed?)", path,
                              p->name, (unsigned long long)c, ns,
                              (unsigned long long)p->count, p->n_slots);
        size_t bytes = (size_t)c * sizeof(float);
        NEED(bytes * (1 + ns), "tensor data");
        if (apply) {
            memcpy(p->data, b + off, bytes);
            for (size_t k = 0; k < ns; k++)
                memcpy(p->slot[k], b + off + bytes * (k + 1), bytes);
        }
        off += bytes * (1 + ns);
    }
    if (m->trees) {
        uint64_t tl;
        NEED(8, "the trees");
        memcpy(&tl, b + off, 8);
        off += 8;
        NEED(tl, "the trees");
        rt_status st = load_trees(m, b + off, (size_t)tl, path, apply, err);
        if (st)
            return st;
        off += (size_t)tl;
    }
    if (off != len)
        return rt_err_set(err, RT_ERR_FORMAT, "%s: %zu bytes of trailing data", path,
                          len - off);
#undef NEED
    if (apply)
        m->step = s;
    *step = s;
    return RT_OK;
}

rt_status trn_ckpt_restore(trn_model *m, const char *job_dir, int64_t *step, rt_buf *warn,
                           rt_err *err)
{
    int64_t *steps;
    size_t n;
    rt_status st = trn_ckpt_list(job_dir, &steps, &n, err);
    if (st)
        return st;
    st = rt_err_set(err, RT_ERR_NOTFOUND, "%s: no checkpoint", job_dir);
    for (size_t i = n; i-- > 0;) {
        char path[4096];
        if (snprintf(path, sizeof path, "%s/" CKPT_PREFIX "%lld", job_dir,
                     (long long)steps[i]) >= (int)sizeof path)
            continue;
        char *img;
        size_t len;
        rt_err e;
        st = rt_read_file(AT_FDCWD, path, CKPT_MAX_BYTES, 0, &img, &len, &e);
        if (st == RT_OK) {
            const unsigned char *b = (const unsigned char *)img;
            int64_t s;
            st = load_image(m, b, len, path, 0, &s, &e);
            if (st == RT_OK)
                st = load_image(m, b, len, path, 1, step, &e);
            free(img);
        }
        if (st == RT_OK)
            break;
        if (err)
            *err = e;
        /* a model mismatch is not damage: say so instead of falling back */
        if (strstr(e.msg, "changed?"))
            break;
        if (warn)
            rt_buf_printf(warn, "skipping damaged checkpoint: %s\n", e.msg);
        st = RT_ERR_NOTFOUND;
    }
    free(steps);
    return st;
}
