/*
 * trn_events.c — TensorBoard event files and the training metrics log.
 *
 * An event file is TensorFlow's TFRecord framing (little-endian uint64
 * length, masked CRC-32C of those 8 bytes, the bytes, masked CRC-32C of the
 * bytes) around tensorflow.Event protos (trn_event.proto): first an event
 * with file_version "brain.Event:2", then events with wall_time, step and a
 * summary of (tag, simple_value) values. Each record goes out in one write(),
 * so a killed trainer leaves complete records and at most a torn last one,
 * which TensorFlow's readers skip. Every run starts new files, as TF does:
 * JOB_DIR/events.out.tfevents.<secs>.<host> for training and
 * JOB_DIR/eval/events.out.tfevents.<secs>.<host> for evaluations.
 */
#include "trn_internal.h"

#include "trn_event.pb-c.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define EVENT_FILE_VERSION "brain.Event:2"

struct trn_summary {
    char *job_dir;
    size_t batch_size;
    int train_fd, eval_fd;  /* -1 until opened */
    int64_t last_step;      /* global_step/sec: since the last summary point */
    double last_time;       /* CLOCK_MONOTONIC seconds */
};

/* TFRecord's masked CRC: rotate right by 15 bits, add TF's kMaskDelta. */
static uint32_t masked_crc(const void *p, size_t n)
{
    uint32_t c = rt_crc32c(0, p, n);
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

static void put_le(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

rt_status trn_append_file(const char *dir, const char *name, const void *data, size_t len,
                          int sync, const char *what, rt_err *err)
{
    char path[4200];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return rt_err_set(err, RT_ERR_LIMIT, "%s: path too long", dir);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return rt_err_set(err, RT_ERR_IO, "%s: mkdir: %s", dir, strerror(errno));
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return rt_err_set(err, RT_ERR_IO, "%s: %s", path, strerror(errno));
    off_t before = lseek(fd, 0, SEEK_END);
    errno = 0;
    ssize_t n = write(fd, data, len);
    int e = n == (ssize_t)len ? 0 : errno ? errno : ENOSPC; /* short: the disk is full */
    if (!e && sync && fsync(fd) != 0 && errno != EINVAL) /* EINVAL: a file that cannot sync */
        e = errno;
    if (e && n > 0 && before >= 0 && ftruncate(fd, before) != 0) {
        /* the partial line stays; readers skip a last line that is not JSON */
    }
    if (close(fd) != 0 && !e)
        e = errno;
    if (e)
        return rt_err_set(err, RT_ERR_IO, "%s: %s%s%s", path, what ? what : "", what ? ": " : "",
                          strerror(e));
    return RT_OK;
}

/* One TFRecord holding ev, in one write. */
static rt_status write_event(int fd, const Tensorflow__Event *ev, const char *what, rt_err *err)
{
    size_t n = tensorflow__event__get_packed_size(ev);
    uint8_t *rec = malloc(n + 16);
    if (!rec)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    put_le(rec, n, 8);
    put_le(rec + 8, masked_crc(rec, 8), 4);
    tensorflow__event__pack(ev, rec + 12);
    put_le(rec + 12 + n, masked_crc(rec + 12, n), 4);
    errno = 0;
    ssize_t w = write(fd, rec, n + 16);
    int e = w == (ssize_t)(n + 16) ? 0 : errno ? errno : ENOSPC;
    free(rec);
    if (e)
        return rt_err_set(err, RT_ERR_IO, "%s event file: %s", what, strerror(e));
    return RT_OK;
}

/* Creates DIR/events.out.tfevents.<secs>.<host>[.N] and writes the version event. */
static rt_status open_event_file(const char *dir, int *out, rt_err *err)
{
    char host[256] = "localhost";
    if (gethostname(host, sizeof host - 1) != 0 || !host[0])
        snprintf(host, sizeof host, "localhost");
    for (char *p = host; *p; p++)
        if (*p == '/')
            *p = '_';
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return rt_err_set(err, RT_ERR_IO, "%s: mkdir: %s", dir, strerror(errno));
    long long secs = (long long)time(NULL);
    char path[4600];
    int fd = -1;
    for (int k = 0; k < 100 && fd < 0; k++) { /* two runs in one second: .1, .2, ... */
        int len = k ? snprintf(path, sizeof path, "%s/events.out.tfevents.%010lld.%s.%d", dir,
                               secs, host, k)
                    : snprintf(path, sizeof path, "%s/events.out.tfevents.%010lld.%s", dir,
                               secs, host);
        if (len >= (int)sizeof path)
            return rt_err_set(err, RT_ERR_LIMIT, "%s: path too long", dir);
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST)
            return rt_err_set(err, RT_ERR_IO, "%s: %s", path, strerror(errno));
    }
    if (fd < 0)
        return rt_err_set(err, RT_ERR_IO, "%s: cannot create a new event file", dir);
    Tensorflow__Event ev = TENSORFLOW__EVENT__INIT;
    ev.wall_time = rt_seconds(1);
    ev.what_case = TENSORFLOW__EVENT__WHAT_FILE_VERSION;
    ev.file_version = (char *)EVENT_FILE_VERSION;
    rt_status st = write_event(fd, &ev, path, err);
    if (st) {
        close(fd);
        return st;
    }
    *out = fd;
    return RT_OK;
}

/* An event at step with n scalars. */
static rt_status write_scalars(int fd, double wall, int64_t step, const char *const *tags,
                               const double *values, size_t n, const char *what, rt_err *err)
{
    Tensorflow__Summary__Value vs[TRN_MAX_METRICS];
    Tensorflow__Summary__Value *vp[TRN_MAX_METRICS];
    Tensorflow__Summary sum = TENSORFLOW__SUMMARY__INIT;
    Tensorflow__Event ev = TENSORFLOW__EVENT__INIT;
    if (n > TRN_MAX_METRICS)
        n = TRN_MAX_METRICS;
    for (size_t i = 0; i < n; i++) {
        tensorflow__summary__value__init(&vs[i]);
        vs[i].tag = (char *)tags[i];
        vs[i].value_case = TENSORFLOW__SUMMARY__VALUE__VALUE_SIMPLE_VALUE;
        vs[i].simple_value = (float)values[i];
        vp[i] = &vs[i];
    }
    sum.n_value = n;
    sum.value = vp;
    ev.wall_time = wall;
    ev.step = step;
    ev.what_case = TENSORFLOW__EVENT__WHAT_SUMMARY;
    ev.summary = &sum;
    return write_event(fd, &ev, what, err);
}

rt_status trn_summary_open(const char *job_dir, size_t batch_size, int64_t step,
                           trn_summary **out, rt_err *err)
{
    trn_summary *s = calloc(1, sizeof *s);
    if (!s || !(s->job_dir = strdup(job_dir))) {
        free(s);
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    }
    s->batch_size = batch_size;
    s->train_fd = s->eval_fd = -1;
    s->last_step = step;
    s->last_time = rt_seconds(0);
    rt_status st = open_event_file(s->job_dir, &s->train_fd, err);
    if (st) {
        trn_summary_close(s);
        return st;
    }
    *out = s;
    return RT_OK;
}

void trn_summary_close(trn_summary *s)
{
    if (!s)
        return;
    if (s->train_fd >= 0) {
        fsync(s->train_fd);
        close(s->train_fd);
    }
    if (s->eval_fd >= 0) {
        fsync(s->eval_fd);
        close(s->eval_fd);
    }
    free(s->job_dir);
    free(s);
}

rt_status trn_summary_train(trn_summary *s, int64_t step, double loss, rt_err *err)
{
    double t = rt_seconds(0), el = t - s->last_time;
    double sps = el > 0 ? (double)(step - s->last_step) / el : 0;
    s->last_step = step;
    s->last_time = t;
    double wall = rt_seconds(1);
    rt_status st;
    static const char *const tags[] = {"loss", "global_step/sec"};
    const double vals[] = {loss, sps};
    if ((st = write_scalars(s->train_fd, wall, step, tags, vals, 2, "training", err)))
        return st;
    rt_buf b;
    rt_buf_init(&b);
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/train", s->job_dir);
    int rc = rt_buf_printf(&b, "{\"global_step\": %lld, \"loss\": ", (long long)step);
    rc = rc || (isfinite(loss) ? rt_buf_json_double(&b, loss) : rt_buf_puts(&b, "null"));
    rc = rc || rt_buf_puts(&b, ", \"global_step/sec\": ") || rt_buf_json_double(&b, sps) ||
         rt_buf_puts(&b, ", \"examples/sec\": ") ||
         rt_buf_json_double(&b, sps * (double)s->batch_size) ||
         rt_buf_puts(&b, ", \"wall_time\": ") || rt_buf_json_double(&b, wall) ||
         rt_buf_puts(&b, "}\n");
    st = rc ? rt_err_set(err, RT_ERR_NOMEM, "out of memory")
            : trn_append_file(dir, "metrics.jsonl", b.data, b.len, 0,
                                    "cannot write the training metrics", err);
    rt_buf_free(&b);
    return st;
}

rt_status trn_summary_eval(trn_summary *s, const trn_metric_list *ml, int64_t step,
                           rt_err *err)
{
    const char *tags[TRN_MAX_METRICS];
    double vals[TRN_MAX_METRICS];
    size_t n = 0;
    rt_status st;
    for (size_t i = 0; i < ml->n && n < TRN_MAX_METRICS; i++) {
        if (strcmp(ml->m[i].name, "global_step") == 0)
            continue; /* TF writes the step as the event's step, not as a value */
        tags[n] = ml->m[i].name;
        vals[n++] = ml->m[i].value;
    }
    if (s->eval_fd < 0) {
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/eval", s->job_dir);
        if ((st = open_event_file(dir, &s->eval_fd, err)))
            return st;
    }
    return write_scalars(s->eval_fd, rt_seconds(1), step, tags, vals, n, "evaluation", err);
}
