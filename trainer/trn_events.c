/*
 * trn_events.c — TensorBoard event files and the training metrics log.
 *
 * An event file is TensorFlow's TFRecord framing (little-endian uint64
 * length, masked CRC-32C of those 8 bytes, the bytes, masked CRC-32C of the
 * bytes) around tensorflow.Event protos (trn_event.proto): first an event
 * with file_version "brain.Event:2", then events with wall_time, step and a
 * summary of (tag, simple_value or histo) values (per hidden layer of a
 * canned DNN and per node a custom graph's summaries name, the batch's
 * activation histogram and fraction of zeros); with a job dir under MPI,
 * rank 0 alone writes them. Each record goes out in one write(),
 * so a killed trainer leaves complete records and at most a torn last one,
 * which TensorFlow's readers skip. Every run starts new files, as TF does:
 * JOB_DIR/events.out.tfevents.<secs>.<host> for training and
 * JOB_DIR/eval/events.out.tfevents.<secs>.<host> for evaluations.
 */
#include "trn_internal.h"

#include "trn_event.pb-c.h"

#include <errno.h>
#include <float.h>
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
    uint64_t last_examples; /* examples/sec: since the last summary point */
    int train_fd, eval_fd;  /* -1 until opened */
    int64_t last_step;      /* global_step/sec: since the last summary point */
    double last_time;       /* CLOCK_MONOTONIC seconds */
    double *limits;         /* TF's histogram bucket limits */
    size_t n_limits;
};

/* TFRecord's masked CRC: rotate right by 15 bits, add TF's kMaskDelta. */
static uint32_t masked_crc(const void *p, size_t n)
{
    uint32_t c = rt_hash_crc32c(0, p, n);
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
    ev.wall_time = rt_time_seconds(1);
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

/* An event at step with n summary values. */
static rt_status write_values(int fd, double wall, int64_t step, Tensorflow__Summary__Value **vp,
                              size_t n, const char *what, rt_err *err)
{
    Tensorflow__Summary sum = TENSORFLOW__SUMMARY__INIT;
    Tensorflow__Event ev = TENSORFLOW__EVENT__INIT;
    sum.n_value = n;
    sum.value = vp;
    ev.wall_time = wall;
    ev.step = step;
    ev.what_case = TENSORFLOW__EVENT__WHAT_SUMMARY;
    ev.summary = &sum;
    return write_event(fd, &ev, what, err);
}

static void set_scalar(Tensorflow__Summary__Value *v, const char *tag, double x)
{
    tensorflow__summary__value__init(v);
    v->tag = (char *)tag;
    v->value_case = TENSORFLOW__SUMMARY__VALUE__VALUE_SIMPLE_VALUE;
    v->simple_value = (float)x;
}

/* TF's default histogram bucket limits (core/lib/histogram): 0, +-1e-12
 * growing by 1.1 up to 1e20, and +-DBL_MAX at the ends. */
static rt_status histo_limits(trn_summary *s, rt_err *err)
{
    size_t np = 0;
    for (double v = 1e-12; v < 1e20; v *= 1.1)
        np++;
    s->n_limits = 2 * (np + 1) + 1;
    s->limits = malloc(s->n_limits * sizeof *s->limits);
    if (!s->limits)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    size_t k = np + 1;
    s->limits[k] = 0;
    double v = 1e-12;
    for (size_t i = 1; i <= np; i++, v *= 1.1) {
        s->limits[k + i] = v;
        s->limits[k - i] = -v;
    }
    s->limits[s->n_limits - 1] = DBL_MAX;
    s->limits[0] = -DBL_MAX;
    return RT_OK;
}

/* The histogram of x[0..n) with s's limits, empty runs of buckets folded
 * into their last (as TF encodes it); h's arrays are malloc'd. */
static int histogram(const trn_summary *s, const float *x, size_t n,
                     Tensorflow__HistogramProto *h)
{
    tensorflow__histogram_proto__init(h);
    double *cnt = calloc(s->n_limits, sizeof *cnt);
    h->bucket_limit = malloc(s->n_limits * sizeof *h->bucket_limit);
    h->bucket = malloc(s->n_limits * sizeof *h->bucket);
    if (!cnt || !h->bucket_limit || !h->bucket) {
        free(cnt);
        return -1;
    }
    h->min = n ? DBL_MAX : 0;
    h->max = n ? -DBL_MAX : 0;
    for (size_t i = 0; i < n; i++) {
        double v = x[i];
        size_t lo = 0, hi = s->n_limits - 1; /* first limit > v */
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (s->limits[mid] > v)
                hi = mid;
            else
                lo = mid + 1;
        }
        cnt[lo]++;
        h->min = v < h->min ? v : h->min;
        h->max = v > h->max ? v : h->max;
        h->sum += v;
        h->sum_squares += v * v;
    }
    h->num = (double)n;
    for (size_t i = 0; i < s->n_limits; i++) {
        if (cnt[i] == 0 && i + 1 < s->n_limits && cnt[i + 1] == 0)
            continue;
        h->bucket_limit[h->n_bucket_limit++] = s->limits[i];
        h->bucket[h->n_bucket++] = cnt[i];
    }
    free(cnt);
    return 0;
}

rt_status trn_summary_open(const char *job_dir, int64_t step, trn_summary **out, rt_err *err)
{
    trn_summary *s = calloc(1, sizeof *s);
    if (!s || !(s->job_dir = strdup(job_dir))) {
        free(s);
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    }
    s->train_fd = s->eval_fd = -1;
    s->last_step = step;
    s->last_time = rt_time_seconds(0);
    rt_status st = histo_limits(s, err);
    if (!st)
        st = open_event_file(s->job_dir, &s->train_fd, err);
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
    free(s->limits);
    free(s->job_dir);
    free(s);
}

/* Hidden layer l's output for the last training batch, as TF's summary sees
 * it (after dropout): the input of layer l + 1. */
static const float *hidden_output(const trn_model *m, size_t l, size_t *width)
{
    if (m->drop_active) {
        *width = m->layers[l + 1].in;
        return m->dx[l + 1];
    }
    return rt_workspace_layer(m->ws, l + 1, width);
}

/* PREFIX/fraction_of_zero_values and PREFIX/activation (a histogram) of
 * x[0..cnt) into v[0..2) (tags and histogram malloc'd); 0 when out of
 * memory (nothing left allocated), else 2. */
static size_t activation_values(const trn_summary *s, const char *prefix, const float *x,
                                size_t cnt, Tensorflow__Summary__Value *v)
{
    size_t zeros = 0;
    for (size_t i = 0; i < cnt; i++)
        zeros += x[i] == 0.0f;
    size_t len = strlen(prefix) + sizeof "/fraction_of_zero_values";
    char *ztag = malloc(len), *atag = malloc(len);
    Tensorflow__HistogramProto *h = malloc(sizeof *h);
    if (!ztag || !atag || !h || histogram(s, x, cnt, h) != 0) {
        free(ztag);
        free(atag);
        free(h);
        return 0;
    }
    snprintf(ztag, len, "%s/fraction_of_zero_values", prefix);
    snprintf(atag, len, "%s/activation", prefix);
    set_scalar(&v[0], ztag, cnt ? (double)zeros / (double)cnt : 0);
    tensorflow__summary__value__init(&v[1]);
    v[1].tag = atag;
    v[1].value_case = TENSORFLOW__SUMMARY__VALUE__VALUE_HISTO;
    v[1].histo = h;
    return 2;
}

/* dnn/hiddenlayer_N/... for every hidden layer, then NODE/... for every
 * node of a custom graph's summaries, into v (2 each). */
static size_t activation_summaries(const trn_summary *s, const trn_model *m, size_t rows,
                                   Tensorflow__Summary__Value *v)
{
    const Predictd__Graph *gr = m->def->graph;
    size_t k = 0;
    if (!rows) /* no batch on this rank at this step */
        return 0;
    for (size_t l = 0; l < gr->n_hidden_layers && l + 1 < m->n_layers; l++) {
        size_t w = 0;
        const float *x = hidden_output(m, l, &w);
        char prefix[64];
        snprintf(prefix, sizeof prefix, "dnn/hiddenlayer_%zu", l);
        if (x && w)
            k += activation_values(s, prefix, x, rows * w, v + k);
    }
    for (size_t i = 0; m->n_nodes && i < gr->n_summaries; i++) {
        size_t w = 0;
        const char *name = NULL;
        const float *x = trn_nodes_summary(m, i, &name, &w);
        if (x && w)
            k += activation_values(s, name, x, rows * w, v + k);
    }
    return k;
}

/* The decayed learning rates of the update that reached m's step, of the
 * optimizers in use that have a schedule: "learning_rate", or with both a
 * linear and a DNN part "linear/learning_rate" and "dnn/learning_rate".
 * Returns how many (at most 2) went into tags[] and lr[]. */
static size_t learning_rates(const trn_model *m, const char *tags[2], double lr[2])
{
    int used[2] = {0, 0};
    for (size_t i = 0; i < m->n_params; i++)
        used[m->p[i].dnn ? 1 : 0] = 1;
    const trn_optimizer *o[2] = {&m->linear_opt, &m->dnn_opt};
    static const char *const part[2] = {"linear/learning_rate", "dnn/learning_rate"};
    size_t n = 0;
    for (int k = 0; k < 2; k++) {
        if (!used[k] || o[k]->lr_decay.type == TRN_LR_CONSTANT)
            continue;
        tags[n] = used[0] && used[1] ? part[k] : "learning_rate";
        lr[n++] = trn_optim_lr(o[k], m->step > 0 ? m->step - 1 : 0);
    }
    return n;
}

/*
 * One training summary point at step: v[0..n) are the event's values, of
 * which v[first_scalar..n) are scalars also written to the JSON line, with
 * their tags and the values x[0..n - first_scalar) in full precision (the
 * event's are float32); v[0] and v[1] are filled here (loss,
 * global_step/sec).
 */
static rt_status train_point(trn_summary *s, int64_t step, double loss, uint64_t examples,
                             Tensorflow__Summary__Value *v, size_t n, size_t first_scalar,
                             const double *x, rt_err *err)
{
    double t = rt_time_seconds(0), el = t - s->last_time;
    double sps = el > 0 ? (double)(step - s->last_step) / el : 0;
    double eps = el > 0 ? (double)(examples - s->last_examples) / el : 0;
    s->last_step = step;
    s->last_examples = examples;
    s->last_time = t;
    double wall = rt_time_seconds(1);
    set_scalar(&v[0], "loss", loss);
    set_scalar(&v[1], "global_step/sec", sps);
    Tensorflow__Summary__Value **vp = calloc(n, sizeof *vp);
    if (!vp)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        vp[i] = &v[i];
    rt_status st = write_values(s->train_fd, wall, step, vp, n, "training", err);
    free(vp);
    if (st)
        return st;
    rt_buf b;
    rt_buf_init(&b);
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/train", s->job_dir);
    int rc = rt_buf_printf(&b, "{\"global_step\": %lld, \"loss\": ", (long long)step);
    rc = rc || (isfinite(loss) ? rt_buf_json_double(&b, loss) : rt_buf_puts(&b, "null"));
    rc = rc || rt_buf_puts(&b, ", \"global_step/sec\": ") || rt_buf_json_double(&b, sps) ||
         rt_buf_puts(&b, ", \"examples/sec\": ") ||
         rt_buf_json_double(&b, eps);
    for (size_t i = first_scalar; i < n; i++) {
        double xi = x[i - first_scalar]; /* counts as integers: 150, not 1.5e+02 */
        rc = rc || rt_buf_printf(&b, ", \"%s\": ", v[i].tag) ||
             (xi == floor(xi) && fabs(xi) < 9007199254740992.0
                  ? rt_buf_printf(&b, "%lld", (long long)xi)
                  : rt_buf_json_double(&b, xi));
    }
    rc = rc || rt_buf_puts(&b, ", \"wall_time\": ") || rt_buf_json_double(&b, wall) ||
         rt_buf_puts(&b, "}\n");
    st = rc ? rt_err_set(err, RT_ERR_NOMEM, "out of memory")
            : trn_append_file(dir, "metrics.jsonl", b.data, b.len, 0,
                              "cannot write the training metrics", err);
    rt_buf_free(&b);
    return st;
}

rt_status trn_summary_train(trn_summary *s, const trn_model *m, size_t rows, double loss,
                            uint64_t examples, rt_err *err)
{
    rt_status st = RT_OK;
    size_t na = m->def->graph->n_hidden_layers + m->def->graph->n_summaries;
    const char *lr_tag[2];
    double lr[2];
    size_t n_lr = learning_rates(m, lr_tag, lr);
    Tensorflow__Summary__Value *v = calloc(4 + 2 * na, sizeof *v);
    size_t n = 2, first_lr = SIZE_MAX;
    if (!v)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    n += activation_summaries(s, m, rows, v + 2);
    first_lr = n;
    for (size_t i = 0; i < n_lr; i++)
        set_scalar(&v[n++], lr_tag[i], lr[i]);
    st = train_point(s, m->step, loss, examples, v, n, first_lr, lr, err);
    for (size_t i = 2; i < first_lr; i++) { /* the rates' tags are static */
        free(v[i].tag);
        if (v[i].value_case == TENSORFLOW__SUMMARY__VALUE__VALUE_HISTO) {
            free(v[i].histo->bucket_limit);
            free(v[i].histo->bucket);
            free(v[i].histo);
        }
    }
    free(v);
    return st;
}

rt_status trn_summary_scalars(trn_summary *s, int64_t step, double loss, uint64_t examples,
                              const char *const *tags, const double *values, size_t n,
                              rt_err *err)
{
    Tensorflow__Summary__Value *v = calloc(2 + n, sizeof *v);
    if (!v)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        set_scalar(&v[2 + i], tags[i], values[i]);
    rt_status st = train_point(s, step, loss, examples, v, 2 + n, 2, values, err);
    free(v);
    return st;
}

rt_status trn_summary_eval(trn_summary *s, const rt_metric_list *ml, int64_t step,
                           rt_err *err)
{
    Tensorflow__Summary__Value v[RT_MAX_METRICS], *vp[RT_MAX_METRICS];
    size_t n = 0;
    rt_status st;
    for (size_t i = 0; i < ml->n && n < RT_MAX_METRICS; i++) {
        if (strcmp(ml->m[i].name, "global_step") == 0)
            continue; /* TF writes the step as the event's step, not as a value */
        set_scalar(&v[n], ml->m[i].name, ml->m[i].value);
        vp[n] = &v[n];
        n++;
    }
    if (s->eval_fd < 0) {
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/eval", s->job_dir);
        if ((st = open_event_file(dir, &s->eval_fd, err)))
            return st;
    }
    return write_values(s->eval_fd, rt_time_seconds(1), step, vp, n, "evaluation", err);
}
