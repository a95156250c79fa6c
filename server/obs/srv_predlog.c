/*
 * srv_predlog.c — prediction logs (TF Serving's logging_config, in
 * predictd's form): a sampled request and its answer become one JSON line
 * in DIR/MODEL.jsonl, written by one writer thread fed by a bounded queue
 * (srv_pool: at most max_queue lines and max_bytes bytes of copied requests
 * and answers wait; what does not fit is dropped and counted; the request
 * never waits). Files are created 0600 (they hold user data) and rotated by size:
 * MODEL.jsonl -> MODEL.jsonl.1 -> ... -> MODEL.jsonl.(max_files-1), the
 * oldest removed. The line (docs/daemon.md, "Prediction logs"):
 *
 *   {"time": "2026-11-23T22:10:00.123456Z", "model": "census",
 *    "version": "1700000000", "method": "predict", "protocol": "rest",
 *    "signature": "serving_default", "status": 200, "latency_ms": 0.41,
 *    "instances": [...], "outputs": [...]}
 *
 * The writer thread alone touches the open files; a model's settings are
 * read from the manager for each line (so a reload moves the log at once).
 */
#include "srv.h"
#include "srv_limits.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

typedef struct logfile {
    char model[SRV_NAME_MAX + 1];
    char *path;               /* DIR/MODEL.jsonl */
    int fd;
    uint64_t size;            /* bytes of whole lines (the end of the last one) */
    bool torn;                /* the file may end inside a line: the next
                                 line starts with a newline */
} logfile;

typedef struct line_job {
    srv_predlog *l;
    size_t held;              /* bytes of l->queued it holds */
    char model[SRV_NAME_MAX + 1];
    int64_t version;
    rt_method method;
    srv_proto proto;
    const char *rpc;          /* gRPC: the method's path (static), else NULL */
    int code;
    double seconds, unix_time;
    char *body, *answer;
    size_t body_len, answer_len;
} line_job;

struct srv_predlog {
    srv_manager *mgr;
    srv_pool *pool;
    logfile files[SRV_PREDLOG_MAX_FILES_OPEN]; /* the writer thread's */
    size_t n_files;
    size_t max_bytes;              /* budget of the queued jobs' bytes */
    atomic_size_t queued;          /* bytes the queued (and running) jobs hold */
    pthread_mutex_t mu;            /* guards the counters */
    uint64_t lines, bytes, dropped, errors;
};

static void count(srv_predlog *l, uint64_t *what, uint64_t n)
{
    pthread_mutex_lock(&l->mu);
    *what += n;
    pthread_mutex_unlock(&l->mu);
}

static void file_close(logfile *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    free(f->path);
    f->path = NULL;
}

/* Opens (creating, 0600) the file at f->path for appending. */
static bool file_open(logfile *f, const char *dir)
{
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return false;
    f->fd = open(f->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    struct stat sb;
    if (f->fd < 0 || fchmod(f->fd, 0600) != 0 || fstat(f->fd, &sb) != 0 ||
        !S_ISREG(sb.st_mode)) {
        if (f->fd >= 0)
            close(f->fd);
        f->fd = -1;
        return false;
    }
    f->size = (uint64_t)sb.st_size;
    /* a file that does not end with a newline (a crash mid-write, a torn
     * write that could not be undone): the next line starts on a new line */
    char last = '\n';
    f->torn = sb.st_size > 0 && pread(f->fd, &last, 1, sb.st_size - 1) == 1 && last != '\n';
    return true;
}

/* After a write of a line at offset at that wrote only got of its bytes (a
 * full disk): undo it, cutting the file back to its last whole line; when
 * that fails the next line starts with a newline, so that the torn one
 * stays a line of its own (not JSON, but never glued to a good one). */
static void undo_torn(logfile *f, off_t at, size_t got)
{
    if (got == 0)
        return;
    if (at >= 0 && ftruncate(f->fd, at) == 0)
        return;
    f->size += got;
    f->torn = true;
}

/* MODEL.jsonl -> .1 -> ... -> .(max_files-1); the oldest is removed. false
 * (out of memory): nothing renamed, the file stays open; the caller drops
 * and counts the line, so the size cap holds. */
static bool rotate(logfile *f, uint32_t max_files)
{
    size_t n = strlen(f->path) + 16;
    char *a = malloc(n), *b = malloc(n);
    if (!a || !b) { /* the file stays as it is: the line is dropped, counted */
        free(a);
        free(b);
        return false;
    }
    snprintf(a, n, "%s.%u", f->path, max_files - 1);
    unlink(a);
    for (uint32_t i = max_files - 1; i > 1; i--) {
        snprintf(a, n, "%s.%u", f->path, i - 1);
        snprintf(b, n, "%s.%u", f->path, i);
        rename(a, b); /* ENOENT: fewer files so far */
    }
    snprintf(b, n, "%s.1", f->path);
    if (max_files > 1)
        rename(f->path, b);
    else
        unlink(f->path);
    free(a);
    free(b);
    close(f->fd);
    f->fd = -1;
    return true;
}

/* The open file of model under dir (reopened when dir changed), or NULL. */
static logfile *file_for(srv_predlog *l, const char *model, const char *dir)
{
    logfile *f = NULL;
    for (size_t i = 0; i < l->n_files && !f; i++)
        if (!strcmp(l->files[i].model, model))
            f = &l->files[i];
    if (!f && l->n_files == SRV_PREDLOG_MAX_FILES_OPEN)
        return NULL;
    if (!f) {
        f = &l->files[l->n_files++];
        memset(f, 0, sizeof *f);
        f->fd = -1;
        snprintf(f->model, sizeof f->model, "%s", model);
    }
    size_t n = strlen(dir) + strlen(model) + 8;
    if (f->path && (strncmp(f->path, dir, strlen(dir)) || f->path[strlen(dir)] != '/'))
        file_close(f); /* a reload moved the log */
    if (!f->path && (f->path = malloc(n)))
        snprintf(f->path, n, "%s/%s.jsonl", dir, model);
    if (f->path && f->fd < 0 && !file_open(f, dir))
        return NULL;
    return f->path ? f : NULL;
}

static const char *method_name(rt_method m)
{
    return m == RT_METHOD_CLASSIFY  ? "classify"
           : m == RT_METHOD_REGRESS ? "regress"
           : m == RT_METHOD_INFER   ? "infer" /* the Open Inference Protocol's (/v2) */
           : m == RT_METHOD_EXPLAIN ? "explain"
                                    : "predict";
}

/* Moves member key of from (if any) into to. */
static void move_item(cJSON *to, cJSON *from, const char *key)
{
    cJSON *it = cJSON_DetachItemFromObjectCaseSensitive(from, key);
    if (it)
        cJSON_AddItemToObject(to, key, it);
}

/* ---------------------------------- binary tensor data (/v2, issue 35 #9) */

/* parameters.binary_data_size of tensor t: its bytes, or -1 when none. */
static int64_t binary_size(const cJSON *t)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(t, "parameters"), "binary_data_size");
    if (!cJSON_IsNumber(n) || !(n->valuedouble >= 0) || n->valuedouble > 9e15 ||
        n->valuedouble != (double)(int64_t)n->valuedouble)
        return -1;
    return (int64_t)n->valuedouble;
}

static uint64_t le_bytes(const unsigned char *p, size_t k)
{
    uint64_t v = 0;
    for (size_t i = 0; i < k; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Bytes of one element of datatype dt (BYTES: 0), or -1 when predictd does
 * not decode it; *kind: 'b' BOOL, 'i' signed, 'u' unsigned, 'f' float,
 * 's' BYTES. */
static int elem_size(const char *dt, char *kind)
{
    static const struct {
        const char *name;
        int size;
        char kind;
    } T[] = {{"BOOL", 1, 'b'},   {"INT8", 1, 'i'},   {"INT16", 2, 'i'}, {"INT32", 4, 'i'},
             {"INT64", 8, 'i'},  {"UINT8", 1, 'u'},  {"UINT16", 2, 'u'}, {"UINT32", 4, 'u'},
             {"UINT64", 8, 'u'}, {"FP32", 4, 'f'},   {"FP64", 8, 'f'},  {"BYTES", 0, 's'}};
    for (size_t k = 0; dt && k < sizeof T / sizeof T[0]; k++)
        if (!strcmp(dt, T[k].name)) {
            *kind = T[k].kind;
            return T[k].size;
        }
    return -1;
}

/* True when s[0..n) is UTF-8 text without a NUL byte (strict: no
 * overlong forms, no surrogates, nothing above U+10FFFF). */
static bool utf8_text(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t k = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3
                             : (c & 0xf8) == 0xf0 ? 4 : 0;
        if (c == 0 || k == 0 || n - i < k)
            return false;
        uint32_t cp = k == 1 ? c : c & (0x7fu >> k);
        for (size_t j = 1; j < k; j++) {
            if ((s[i + j] & 0xc0) != 0x80)
                return false;
            cp = cp << 6 | (s[i + j] & 0x3f);
        }
        static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < least[k] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += k;
    }
    return true;
}

/* One float's JSON: its shortest round-trip digits, or "NaN", "Infinity",
 * "-Infinity" as strings (the line stays plain JSON). */
static cJSON *float_item(double v, int digits)
{
    if (v != v)
        return cJSON_CreateString("NaN");
    if (v > 1.7976931348623157e308 || v < -1.7976931348623157e308)
        return cJSON_CreateString(v > 0 ? "Infinity" : "-Infinity");
    char t[40];
    snprintf(t, sizeof t, "%.*g", digits, v);
    return cJSON_CreateRaw(t);
}

/* The values of n bytes of datatype dt as a JSON list, or NULL when they
 * cannot be shown so (an unknown datatype, a size that is not a whole
 * number of elements, BYTES that are not text). */
static cJSON *decode_tensor(const char *dt, const unsigned char *p, size_t n)
{
    char kind = 0;
    int es = elem_size(dt, &kind);
    if (es < 0 || (es > 0 && n % (size_t)es != 0))
        return NULL;
    cJSON *a = cJSON_CreateArray();
    char t[32];
    for (size_t at = 0; a && at < n;) {
        cJSON *x = NULL;
        if (kind == 's') {
            if (n - at < 4)
                break;
            size_t len = (size_t)le_bytes(p + at, 4);
            if (len > n - at - 4 || !utf8_text(p + at + 4, len))
                break;
            char *str = malloc(len + 1);
            if (str) {
                memcpy(str, p + at + 4, len);
                str[len] = '\0';
                x = cJSON_CreateString(str);
                free(str);
            }
            at += 4 + len;
        } else {
            uint64_t v = le_bytes(p + at, (size_t)es);
            if (kind == 'b') {
                x = cJSON_CreateBool(v != 0);
            } else if (kind == 'u') {
                snprintf(t, sizeof t, "%llu", (unsigned long long)v);
                x = cJSON_CreateRaw(t);
            } else if (kind == 'i') {
                int sh = 64 - 8 * es; /* sign-extend */
                snprintf(t, sizeof t, "%lld", (long long)((int64_t)(v << sh) >> sh));
                x = cJSON_CreateRaw(t);
            } else if (es == 4) {
                uint32_t u = (uint32_t)v;
                float f;
                memcpy(&f, &u, sizeof f);
                x = float_item((double)f, 9);
            } else {
                double f;
                memcpy(&f, &v, sizeof f);
                x = float_item(f, 17);
            }
            at += (size_t)es;
        }
        if (!x) {
            cJSON_Delete(a);
            return NULL;
        }
        cJSON_AddItemToArray(a, x);
        if (at == n)
            return a;
    }
    cJSON_Delete(a);
    return n == 0 ? cJSON_CreateArray() : NULL;
}

/* p[0..n) in base64 (RFC 4648, padded) as a JSON string, or NULL. */
static cJSON *base64_item(const unsigned char *p, size_t n)
{
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *o = malloc((n + 2) / 3 * 4 + 1);
    if (!o)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
                     (i + 2 < n ? p[i + 2] : 0);
        o[k++] = A[v >> 18 & 63];
        o[k++] = A[v >> 12 & 63];
        o[k++] = i + 1 < n ? A[v >> 6 & 63] : '=';
        o[k++] = i + 2 < n ? A[v & 63] : '=';
    }
    o[k] = '\0';
    cJSON *s = cJSON_CreateString(o);
    free(o);
    return s;
}

/* The binary tensor data after the JSON of buf (len bytes in all): the
 * tensors of list (a request's "inputs", an answer's "outputs") that give
 * parameters.binary_data_size hold, in their order, the last bytes of buf.
 * Each gets its values as "data" (numbers, BOOL as true/false, BYTES as
 * strings) or, when they are not shown so, "data_base64", beside its
 * datatype and shape. Nothing changes when the sizes do not fit in buf. */
static void attach_binary(cJSON *list, const char *buf, size_t len)
{
    if (!cJSON_IsArray(list) || !buf)
        return;
    uint64_t total = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, list)
    {
        int64_t sz = binary_size(t);
        if (sz > 0)
            total += (uint64_t)sz;
        if (total > len)
            return;
    }
    const unsigned char *p = (const unsigned char *)buf + (len - total);
    cJSON *x;
    cJSON_ArrayForEach(x, list)
    {
        int64_t sz = binary_size(x);
        if (sz < 0)
            continue;
        if (cJSON_GetObjectItemCaseSensitive(x, "data")) { /* refused: both given */
            p += sz;
            continue;
        }
        const char *dt = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(x, "datatype"));
        cJSON *v = decode_tensor(dt, p, (size_t)sz);
        if (v)
            cJSON_AddItemToObject(x, "data", v);
        else if ((v = base64_item(p, (size_t)sz)))
            cJSON_AddItemToObject(x, "data_base64", v);
        p += sz;
    }
}

/* The JSON line of a job (malloc'd, no newline), or NULL. */
static char *render(const line_job *j)
{
    cJSON *line = cJSON_CreateObject();
    cJSON *req = cJSON_ParseWithLength(j->body, j->body_len);
    cJSON *ans = cJSON_ParseWithLength(j->answer, j->answer_len);
    char when[64], ver[24];
    time_t secs = (time_t)j->unix_time;
    struct tm tm;
    gmtime_r(&secs, &tm);
    size_t k = strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(when + k, sizeof when - k, ".%06dZ",
             (int)((j->unix_time - (double)secs) * 1e6) % 1000000);
    snprintf(ver, sizeof ver, "%lld", (long long)j->version);
    const char *sig = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "signature_name"));
    cJSON_AddStringToObject(line, "time", when);
    cJSON_AddStringToObject(line, "model", j->model);
    cJSON_AddStringToObject(line, "version", ver);
    cJSON_AddStringToObject(line, "method", method_name(j->method));
    /* the door it came in by; a gRPC call's method path beside it */
    cJSON_AddStringToObject(line, "protocol", j->proto == SRV_PROTO_GRPC ? "grpc" : "rest");
    if (j->rpc)
        cJSON_AddStringToObject(line, "rpc", j->rpc);
    cJSON_AddStringToObject(line, "signature", sig ? sig : "serving_default");
    cJSON_AddNumberToObject(line, "status", j->code);
    cJSON_AddNumberToObject(line, "latency_ms", j->seconds * 1e3);
    if (j->method == RT_METHOD_INFER) { /* the values of binary tensors too */
        attach_binary(cJSON_GetObjectItemCaseSensitive(req, "inputs"), j->body, j->body_len);
        attach_binary(cJSON_GetObjectItemCaseSensitive(ans, "outputs"), j->answer,
                      j->answer_len);
    }
    if (req) {
        move_item(line, req, "instances");
        move_item(line, req, "inputs");
        move_item(line, req, "examples");
        move_item(line, req, "context");
    } else { /* not plain JSON (NaN tokens, say): the body as it came */
        cJSON_AddItemToObject(line, "request",
                              cJSON_CreateString(j->body ? j->body : ""));
    }
    cJSON *out = cJSON_DetachItemFromObjectCaseSensitive(ans, "predictions");
    if (!out)
        out = cJSON_DetachItemFromObjectCaseSensitive(ans, "outputs");
    if (!out)
        out = cJSON_DetachItemFromObjectCaseSensitive(ans, "results");
    cJSON_AddItemToObject(line, "outputs", out ? out : cJSON_CreateNull());
    move_item(line, ans, "error");
    char *text = cJSON_PrintUnformatted(line);
    cJSON_Delete(line);
    cJSON_Delete(req);
    cJSON_Delete(ans);
    return text;
}

static void job_free(line_job *j)
{
    if (j) {
        atomic_fetch_sub(&j->l->queued, j->held);
        free(j->body);
        free(j->answer);
        free(j);
    }
}

/* The writer thread: one line per job. */
static void write_job(void *fn_ctx, void *arg, int worker)
{
    (void)worker;
    srv_predlog *l = fn_ctx;
    line_job *j = arg;
    char dir[4096];
    uint64_t max_bytes = 0;
    uint32_t max_files = 1;
    char *text = NULL;
    if (!srv_manager_log_conf(l->mgr, j->model, dir, sizeof dir, &max_bytes, &max_files))
        goto out; /* logging was turned off meanwhile */
    logfile *f = file_for(l, j->model, dir);
    if (!f || !(text = render(j))) {
        count(l, &l->errors, 1);
        goto out;
    }
    size_t n = strlen(text);
    text[n++] = '\n'; /* over the NUL: written by length */
    if (f->size > 0 && f->size + n > max_bytes) {
        if (!rotate(f, max_files) || !file_open(f, dir)) {
            count(l, &l->errors, 1);
            goto out;
        }
    }
    /* one write of the whole line (O_APPEND), a newline first when the
     * file may end inside a line */
    struct iovec iov[2] = {{(void *)"\n", 1}, {text, n}};
    int first = f->torn ? 0 : 1;
    size_t want = n + (f->torn ? 1 : 0);
    off_t at = lseek(f->fd, 0, SEEK_END); /* where the line goes */
    ssize_t w = writev(f->fd, iov + first, 2 - first);
    int e = errno;
    if (w == (ssize_t)want) {
        f->size += want;
        f->torn = false;
        pthread_mutex_lock(&l->mu);
        l->lines++;
        l->bytes += want;
        pthread_mutex_unlock(&l->mu);
    } else {
        /* the line is lost (counted); what was written of it is undone */
        undo_torn(f, at, w > 0 ? (size_t)w : 0);
        count(l, &l->errors, 1);
        srv_log(SRV_LOG_WARN,
                "prediction log %s: write failed: %s (%zu of %zu bytes written%s); the line "
                "is lost",
                f->path, w < 0 ? strerror(e) : "short write (file system full?)",
                w > 0 ? (size_t)w : 0, want,
                w <= 0    ? ""
                : f->torn ? ", not cut off: the next line starts on a new line"
                          : ", cut off again");
    }
out:
    cJSON_free(text);
    job_free(j);
}

rt_status srv_predlog_new(srv_manager *mgr, size_t max_queue, size_t max_bytes,
                          srv_predlog **out, rt_err *err)
{
    *out = NULL;
    srv_predlog *l = calloc(1, sizeof *l);
    if (!l)
        return rt_err_set(err, RT_ERR_NOMEM, "prediction log: out of memory");
    l->mgr = mgr;
    l->max_bytes = max_bytes;
    atomic_init(&l->queued, 0);
    pthread_mutex_init(&l->mu, NULL);
    rt_status st = srv_pool_new(1, max_queue, write_job, l, &l->pool, err);
    if (st != RT_OK) {
        pthread_mutex_destroy(&l->mu);
        free(l);
        return st;
    }
    *out = l;
    return RT_OK;
}

void srv_predlog_free(srv_predlog *l)
{
    if (!l)
        return;
    srv_pool_free(l->pool); /* writes what is queued, then joins */
    for (size_t i = 0; i < l->n_files; i++)
        file_close(&l->files[i]);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

bool srv_predlog_submit(srv_predlog *l, const srv_served *r)
{
    /* the budget first: nothing is copied for a line that does not fit */
    size_t need = sizeof(line_job) + r->body_len + r->answer_len;
    size_t was = atomic_fetch_add(&l->queued, need);
    if (need > l->max_bytes || was > l->max_bytes - need) {
        atomic_fetch_sub(&l->queued, need);
        count(l, &l->dropped, 1);
        return false;
    }
    line_job *j = calloc(1, sizeof *j);
    if (!j)
        atomic_fetch_sub(&l->queued, need);
    if (j) {
        j->l = l;
        j->held = need;
        snprintf(j->model, sizeof j->model, "%s", r->model);
        j->version = r->version;
        j->method = r->method;
        j->proto = r->proto;
        j->rpc = r->rpc;
        j->code = r->code;
        j->seconds = r->seconds;
        j->unix_time = r->unix_time;
        j->body = srv_copy_bytes(r->body, r->body_len);
        j->body_len = r->body_len;
        j->answer = srv_copy_bytes(r->answer, r->answer_len);
        j->answer_len = r->answer_len;
    }
    if (j && j->body && j->answer && srv_pool_submit(l->pool, j))
        return true;
    job_free(j);
    count(l, &l->dropped, 1);
    return false;
}

rt_status srv_predlog_metrics(srv_predlog *l, rt_buf *o)
{
    if (!l)
        return RT_OK;
    pthread_mutex_lock(&l->mu);
    int r = rt_buf_printf(
        o,
        "# HELP predictd_prediction_log_lines_total Requests written to prediction logs.\n"
        "# TYPE predictd_prediction_log_lines_total counter\n"
        "predictd_prediction_log_lines_total %llu\n"
        "# HELP predictd_prediction_log_bytes_total Bytes written to prediction logs.\n"
        "# TYPE predictd_prediction_log_bytes_total counter\n"
        "predictd_prediction_log_bytes_total %llu\n"
        "# HELP predictd_prediction_log_dropped_total Sampled requests not logged: the "
        "writer's queue was full (4096 lines or prediction_log_queue_bytes).\n"
        "# TYPE predictd_prediction_log_dropped_total counter\n"
        "predictd_prediction_log_dropped_total %llu\n"
        "# HELP predictd_prediction_log_errors_total Lines that could not be written.\n"
        "# TYPE predictd_prediction_log_errors_total counter\n"
        "predictd_prediction_log_errors_total %llu\n"
        "# HELP predictd_prediction_log_queued_bytes Bytes of requests and answers waiting "
        "for the writer (at most prediction_log_queue_bytes).\n"
        "# TYPE predictd_prediction_log_queued_bytes gauge\n"
        "predictd_prediction_log_queued_bytes %zu\n",
        (unsigned long long)l->lines, (unsigned long long)l->bytes,
        (unsigned long long)l->dropped, (unsigned long long)l->errors,
        (size_t)atomic_load(&l->queued));
    pthread_mutex_unlock(&l->mu);
    return r ? RT_ERR_NOMEM : RT_OK;
}
