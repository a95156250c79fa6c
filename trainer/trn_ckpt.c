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
 * The training loop's checkpoints are written in the background
 * (trn_ckpt_save_async): the file's bytes are copied from the model in the
 * training thread, and a thread of their own writes, fsyncs and renames
 * them while training goes on (about 30 ms of a census step's time each).
 */
#include "trn_internal.h"

#include "exp.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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

rt_status trn_job_dir_check(const char *job_dir, rt_err *err)
{
    rt_err why = {{0}};
    int dfd = -1;
    if (rt_file_mkdirs(job_dir, &why) != RT_OK ||
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
        if (rt_grow(steps, &cap, *n + 1, sizeof **steps) != 0) {
            st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
            break;
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
        qsort(*steps, *n, sizeof **steps, rt_cmp_i64);
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

/* Bytes of m's checkpoint file. */
static size_t image_size(const trn_model *m)
{
    size_t len = 24 + 4;
    for (size_t i = 0; i < m->n_params; i++) {
        const tparam *p = &m->p[i];
        len += 4 + strlen(p->name) + 12 + (size_t)p->count * sizeof(float) * (1 + p->n_slots);
    }
    if (m->trees)
        len += 8 + predictd__tree_ensemble__get_packed_size(m->trees);
    return len;
}

static unsigned char *put(unsigned char *o, const void *p, size_t n)
{
    memcpy(o, p, n);
    return o + n;
}

/* A buffer for an image of len bytes, aligned and padded (with zeros) to
 * DIRECT_ALIGN for O_DIRECT; *cap is its size. NULL: no memory. */
#define DIRECT_ALIGN 4096
static unsigned char *image_alloc(size_t len, size_t *cap)
{
    size_t c = (len + DIRECT_ALIGN - 1) / DIRECT_ALIGN * DIRECT_ALIGN;
    void *p = NULL;
    if (posix_memalign(&p, DIRECT_ALIGN, c) != 0)
        return NULL;
    *cap = c;
    return p;
}

/* m's checkpoint file into img (image_size bytes), all but the CRC. */
static void image_fill(const trn_model *m, unsigned char *img)
{
    uint32_t ver = CKPT_VERSION, cnt = (uint32_t)m->n_params;
    int64_t step = m->step;
    unsigned char *o = put(img, CKPT_MAGIC, 8);
    o = put(o, &ver, 4);
    o = put(o, &cnt, 4);
    o = put(o, &step, 8);
    for (size_t i = 0; i < m->n_params; i++) {
        const tparam *p = &m->p[i];
        uint32_t nl = (uint32_t)strlen(p->name), ns = (uint32_t)p->n_slots;
        uint64_t c = p->count;
        o = put(o, &nl, 4);
        o = put(o, p->name, nl);
        o = put(o, &c, 8);
        o = put(o, &ns, 4);
        o = put(o, p->data, c * sizeof(float));
        for (size_t k = 0; k < p->n_slots; k++)
            o = put(o, p->slot[k], c * sizeof(float));
    }
    if (m->trees) {
        uint64_t tl = predictd__tree_ensemble__get_packed_size(m->trees);
        o = put(o, &tl, 8);
        predictd__tree_ensemble__pack(m->trees, o);
    }
}

/*
 * Writes the image of step's checkpoint (its CRC computed here) through a
 * temporary file, fsync and rename; fsyncs the directory; keeps keep_max.
 * img is image_alloc'd (cap bytes): written with O_DIRECT, the disk reads
 * the bytes from it instead of the kernel copying 12 MB (census) into the
 * page cache each time (most of a checkpoint's CPU); the file is then cut to
 * len. Where O_DIRECT is refused (tmpfs, some file systems) it is written
 * as usual.
 */
static rt_status write_image(const char *job_dir, int64_t step, int keep_max,
                             unsigned char *img, size_t len, size_t cap, rt_err *err)
{
    char tmp[4096], fin[4096];
    if (mkdir(job_dir, 0755) != 0 && errno != EEXIST)
        return rt_err_set(err, RT_ERR_IO, "%s: %s", job_dir, strerror(errno));
    remove_temps(job_dir);
    if (snprintf(tmp, sizeof tmp, "%s/." CKPT_PREFIX "%lld.tmp", job_dir, (long long)step) >=
            (int)sizeof tmp ||
        snprintf(fin, sizeof fin, "%s/" CKPT_PREFIX "%lld", job_dir, (long long)step) >=
            (int)sizeof fin)
        return rt_err_set(err, RT_ERR_LIMIT, "%s: path too long", job_dir);
    uint32_t crc = rt_hash_crc32c(0, img, len - 4);
    memcpy(img + len - 4, &crc, 4);
    memset(img + len, 0, cap - len); /* O_DIRECT writes whole blocks: cut below */
    rt_status st = RT_OK;
    int direct = 1;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_DIRECT, 0644);
    if (fd < 0 && errno == EINVAL) {
        direct = 0;
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    }
    if (fd < 0)
        return rt_err_set(err, RT_ERR_IO, "%s: %s", tmp, strerror(errno));
    size_t total = cap;
    for (size_t off = 0; off < (direct ? total : len);) {
        size_t end = direct ? total : len;
        size_t chunk = end - off < ((size_t)1 << 30) ? end - off : ((size_t)1 << 30);
        ssize_t k = pwrite(fd, img + off, chunk, (off_t)off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && errno == EINVAL && direct) { /* alignment refused: as usual */
            direct = 0;
            if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_DIRECT) != 0) {
                st = rt_err_set(err, RT_ERR_IO, "%s: fcntl: %s", tmp, strerror(errno));
                goto out;
            }
            continue;
        }
        if (k <= 0) {
            st = rt_err_set(err, RT_ERR_IO, "%s: write: %s", tmp,
                            strerror(k < 0 && errno ? errno : EIO));
            goto out;
        }
        off += (size_t)k;
    }
    if (direct && ftruncate(fd, (off_t)len) != 0) {
        st = rt_err_set(err, RT_ERR_IO, "%s: truncate: %s", tmp, strerror(errno));
        goto out;
    }
    if (fsync(fd) != 0) {
        st = rt_err_set(err, RT_ERR_IO, "%s: fsync: %s", tmp, strerror(errno));
        goto out;
    }
    int rc = close(fd);
    fd = -1;
    if (rc != 0) {
        st = rt_err_set(err, RT_ERR_IO, "%s: close: %s", tmp, strerror(errno));
        goto out;
    }
    if ((st = rt_file_rename_durable(tmp, fin, err)))
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
    if (fd >= 0)
        close(fd);
    if (st)
        unlink(tmp);
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

rt_status trn_ckpt_save(const trn_model *m, const char *job_dir, int keep_max, rt_err *err)
{
    size_t len = image_size(m), cap;
    unsigned char *img = image_alloc(len, &cap);
    if (!img)
        return rt_err_set(err, RT_ERR_NOMEM, "checkpoint: out of memory (%zu bytes)", len);
    image_fill(m, img);
    rt_status st = write_image(job_dir, m->step, keep_max, img, len, cap, err);
    free(img);
    return st;
}

/* ------------------------------------------------- checkpoints in the background */

struct trn_ckpt_writer {
    unsigned char *img; /* the file's bytes, reused from save to save */
    size_t len, cap;
    char *job_dir;
    int64_t step;
    int keep_max;
    pthread_t thread;
    int running;
    rt_status st; /* of the last save */
    rt_err err;
};

trn_ckpt_writer *trn_ckpt_writer_new(void)
{
    return calloc(1, sizeof(trn_ckpt_writer));
}

static void *writer_main(void *arg)
{
    trn_ckpt_writer *w = arg;
    w->st = write_image(w->job_dir, w->step, w->keep_max, w->img, w->len, w->cap, &w->err);
    return NULL;
}

rt_status trn_ckpt_wait(trn_ckpt_writer *w, rt_err *err)
{
    if (!w)
        return RT_OK;
    if (w->running) {
        pthread_join(w->thread, NULL);
        w->running = 0;
    }
    rt_status st = w->st;
    if (st && err)
        *err = w->err;
    w->st = RT_OK;
    return st;
}

rt_status trn_ckpt_save_async(trn_ckpt_writer *w, const trn_model *m, const char *job_dir,
                              int keep_max, rt_err *err)
{
    rt_status st = trn_ckpt_wait(w, err);
    if (st)
        return st;
    size_t len = image_size(m);
    if (len > w->cap) {
        size_t cap;
        unsigned char *q = image_alloc(len, &cap);
        if (!q)
            return rt_err_set(err, RT_ERR_NOMEM, "checkpoint: out of memory (%zu bytes)", len);
        free(w->img);
        w->img = q;
        w->cap = cap;
    }
    if (!w->job_dir || strcmp(w->job_dir, job_dir) != 0) {
        char *d = strdup(job_dir);
        if (!d)
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        free(w->job_dir);
        w->job_dir = d;
    }
    image_fill(m, w->img);
    w->len = len;
    w->step = m->step;
    w->keep_max = keep_max;
    if (pthread_create(&w->thread, NULL, writer_main, w) == 0) {
        w->running = 1;
        return RT_OK;
    }
    return write_image(job_dir, w->step, keep_max, w->img, len, w->cap, err); /* no thread */
}

void trn_ckpt_writer_free(trn_ckpt_writer *w)
{
    if (!w)
        return;
    trn_ckpt_wait(w, NULL);
    free(w->img);
    free(w->job_dir);
    free(w);
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
    if (rt_hash_crc32c(0, b, len - 4) != crc_file)
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

/* Tries job_dir's checkpoints newest first with fn until one loads: a
 * damaged one is skipped (with a line "PATH: why" in warn) unless fn sets
 * *fatal (a checkpoint of another model is no damage). RT_ERR_NOTFOUND when
 * there is no checkpoint; RT_ERR_FORMAT naming each file and why when there
 * are checkpoints and none loads (training from step 0 over them would
 * silently lose them). */
typedef rt_status (*ckpt_try_fn)(void *ctx, const char *path, int *fatal, rt_err *err);

static rt_status newest_good(const char *job_dir, ckpt_try_fn fn, void *ctx, rt_buf *warn,
                             rt_err *err)
{
    int64_t *steps;
    size_t n;
    rt_status st = trn_ckpt_list(job_dir, &steps, &n, err);
    if (st)
        return st;
    st = rt_err_set(err, RT_ERR_NOTFOUND, "%s: no checkpoint", job_dir);
    rt_buf why;
    rt_buf_init(&why);
    int loaded = 0, fatal = 0;
    for (size_t i = n; i-- > 0;) {
        char path[4096];
        if (snprintf(path, sizeof path, "%s/" CKPT_PREFIX "%lld", job_dir,
                     (long long)steps[i]) >= (int)sizeof path)
            continue;
        rt_err e;
        st = fn(ctx, path, &fatal, &e);
        if (st == RT_OK) {
            loaded = 1;
            break;
        }
        if (err)
            *err = e;
        if (fatal)
            break;
        if (warn)
            rt_buf_printf(warn, "%s\n", e.msg);
        /* "model.ckpt-100: checksum mismatch" (the job dir is said once) */
        const char *m = strncmp(e.msg, job_dir, strlen(job_dir)) == 0 &&
                                e.msg[strlen(job_dir)] == '/'
                            ? e.msg + strlen(job_dir) + 1
                            : e.msg;
        rt_buf_printf(&why, "%s%s", why.len ? "; " : "", m);
    }
    if (!loaded && !fatal && n > 0)
        st = rt_err_set(err, RT_ERR_FORMAT, "%s: none of its %zu checkpoint%s restores (%s)",
                        job_dir, n, n == 1 ? "" : "s", why.len ? why.data : "");
    rt_buf_free(&why);
    free(steps);
    return st;
}

typedef struct restore_ctx {
    trn_model *m;
    int64_t *step;
} restore_ctx;

static rt_status try_restore(void *ctx, const char *path, int *fatal, rt_err *err)
{
    restore_ctx *r = ctx;
    char *img;
    size_t len;
    rt_status st = rt_file_read(AT_FDCWD, path, CKPT_MAX_BYTES, 0, &img, &len, err);
    if (st)
        return st;
    const unsigned char *b = (const unsigned char *)img;
    int64_t s;
    st = load_image(r->m, b, len, path, 0, &s, err);
    if (st == RT_OK)
        st = load_image(r->m, b, len, path, 1, r->step, err);
    free(img);
    /* a model mismatch is not damage: say so instead of falling back */
    *fatal = st != RT_OK && strstr(err->msg, "changed?") != NULL;
    return st;
}

rt_status trn_ckpt_restore(trn_model *m, const char *job_dir, int64_t *step, rt_buf *warn,
                           rt_err *err)
{
    restore_ctx r = {m, step};
    return newest_good(job_dir, try_restore, &r, warn, err);
}

/* ------------------------------------------------------ any checkpoint */

/* Indexes a checkpoint image of any model (CRC and layout checked). */
static rt_status view_image(trn_ckpt_view *v, size_t len, rt_err *err)
{
    const unsigned char *b = (const unsigned char *)v->img;
    if (len < 28)
        return rt_err_set(err, RT_ERR_FORMAT, "%s: too short (%zu bytes)", v->path, len);
    uint32_t crc_file, ver, cnt;
    memcpy(&crc_file, b + len - 4, 4);
    if (rt_hash_crc32c(0, b, len - 4) != crc_file)
        return rt_err_set(err, RT_ERR_FORMAT, "%s: checksum mismatch", v->path);
    len -= 4;
    memcpy(&ver, b + 8, 4);
    memcpy(&cnt, b + 12, 4);
    memcpy(&v->step, b + 16, 8);
    if (memcmp(b, CKPT_MAGIC, 8) != 0 || ver != CKPT_VERSION)
        return rt_err_set(err, RT_ERR_FORMAT, "%s: not a checkpoint of this version", v->path);
    v->t = calloc(cnt ? cnt : 1, sizeof *v->t);
    if (!v->t)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    size_t off = 24;
    for (uint32_t i = 0; i < cnt; i++) {
        trn_ckpt_tensor *t = &v->t[i];
        uint32_t nl, ns;
        if (len - off < 4)
            goto trunc;
        memcpy(&nl, b + off, 4);
        off += 4;
        if (len - off < (size_t)nl + 12)
            goto trunc;
        t->name = (const char *)b + off;
        t->name_len = nl;
        off += nl;
        memcpy(&t->count, b + off, 8);
        memcpy(&ns, b + off + 8, 4);
        off += 12;
        if (t->count > (len - off) / sizeof(float) / (1 + (uint64_t)ns))
            goto trunc;
        t->data = b + off;
        off += (size_t)t->count * sizeof(float) * (1 + ns);
        v->n++;
    }
    if (off != len && len - off >= 8) { /* a BoostedTrees model's trees */
        uint64_t tl;
        memcpy(&tl, b + off, 8);
        if (tl == len - off - 8) {
            v->trees_bytes = (size_t)tl;
            off = len;
        }
    }
    if (off != len)
        return rt_err_set(err, RT_ERR_FORMAT, "%s: %zu bytes of trailing data", v->path,
                          len - off);
    return RT_OK;
trunc:
    return rt_err_set(err, RT_ERR_FORMAT, "%s: truncated", v->path);
}

void trn_ckpt_view_free(trn_ckpt_view *v)
{
    if (!v)
        return;
    free(v->img);
    free(v->t);
    v->img = NULL;
    v->t = NULL;
    v->n = 0;
}

static rt_status try_view(void *ctx, const char *path, int *fatal, rt_err *err)
{
    trn_ckpt_view *v = ctx;
    *fatal = 0;
    trn_ckpt_view_free(v);
    snprintf(v->path, sizeof v->path, "%s", path);
    size_t len;
    rt_status st = rt_file_read(AT_FDCWD, path, CKPT_MAX_BYTES, 0, &v->img, &len, err);
    if (st == RT_OK)
        st = view_image(v, len, err);
    return st;
}

rt_status trn_ckpt_view_newest(const char *job_dir, trn_ckpt_view *v, rt_err *err)
{
    memset(v, 0, sizeof *v);
    rt_status st = newest_good(job_dir, try_view, v, NULL, err);
    if (st)
        trn_ckpt_view_free(v);
    return st;
}
