/*
 * srv_trace.c — the tracer (srv_trace.h): W3C traceparent parsing and
 * making, parent-based ratio sampling, a bounded span queue and the thread
 * that POSTs batches of it as OTLP/HTTP JSON (srv_trace_post.c) (the JSON mapping of
 * opentelemetry/proto/trace/v1/trace.proto: lowerCamelCase field names,
 * ids as hex, 64-bit integers as decimal strings, enums as numbers).
 * Requests only take the queue's lock to copy their spans in; the socket
 * work is the thread's, with a timeout on every step, so a receiver that
 * is down or slow costs requests nothing but dropped (counted) spans.
 */
#include "srv_trace_internal.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>


typedef struct span {
    uint8_t trace_id[16], span_id[8], parent_id[8];
    bool has_parent, server;
    char name[80];
    int64_t start, end; /* unix ns */
    /* the server span's */
    char tracestate[SRV_TRACE_STATE_MAX + 1];
    char method[8], path[128], model[SRV_NAME_MAX + 1];
    int64_t version;
    long instances;
    int64_t queue_wait_ns;
    unsigned status;
    bool rpc;
    char rpc_method[32];
    srv_trace_int attr[SRV_TRACE_PHASE_ATTRS]; /* a child's */
} span;

struct srv_tracer {
    srv_otlp_target to; /* the collector */
    uint64_t threshold; /* sampled when the trace id's low 8 bytes < it */
    bool all;           /* rate 1 */
    int64_t mono_to_unix; /* unix ns - CLOCK_MONOTONIC ns */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    span *q;            /* ring [SRV_TRACE_QUEUE] */
    size_t head, n;
    bool stop;
    pthread_t thread;
    /* counters (the metrics) */
    _Atomic uint64_t exported, dropped_queue, dropped_export, batches, failed_batches;
};

/* ------------------------------------------------------------ ids */

static _Thread_local rt_rng id_rng;
static _Thread_local bool id_rng_seeded;

static void random_bytes(uint8_t *p, size_t n)
{
    if (!id_rng_seeded) {
        uint64_t seed = 0;
        if (getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed)
            seed = (uint64_t)rt_time_now_ns() ^ (uint64_t)(uintptr_t)&seed;
        rt_rng_seed(&id_rng, seed);
        id_rng_seeded = true;
    }
    for (size_t i = 0; i < n; i += 8) {
        uint64_t v = rt_rng_next(&id_rng);
        memcpy(p + i, &v, n - i < 8 ? n - i : 8);
    }
}

static bool all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

static void hex(char *out, const uint8_t *p, size_t n)
{
    static const char D[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = D[p[i] >> 4];
        out[2 * i + 1] = D[p[i] & 15];
    }
    out[2 * n] = '\0';
}

static int unhex1(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static bool unhex(const char *s, uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int a = unhex1(s[2 * i]), b = unhex1(s[2 * i + 1]);
        if (a < 0 || b < 0)
            return false;
        p[i] = (uint8_t)(a << 4 | b);
    }
    return true;
}

/* W3C trace context, level 1: "00-<32 hex>-<16 hex>-<2 hex>", lowercase;
 * a later version may add fields after a '-'; version ff is invalid. */
static bool parse_traceparent(const char *s, uint8_t tid[16], uint8_t pid[8], uint8_t *flags)
{
    if (!s)
        return false;
    size_t len = strlen(s);
    uint8_t ver;
    if (len < 55 || !unhex(s, &ver, 1) || ver == 0xff || s[2] != '-' || s[35] != '-' ||
        s[52] != '-' || !unhex(s + 3, tid, 16) || !unhex(s + 36, pid, 8) ||
        !unhex(s + 53, flags, 1))
        return false;
    if ((ver == 0 && len != 55) || (ver != 0 && len > 55 && s[55] != '-'))
        return false;
    return !all_zero(tid, 16) && !all_zero(pid, 8);
}

/* ------------------------------------------------------------ requests */

static int64_t unix_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Now in Unix ns on the phases' clock: CLOCK_MONOTONIC plus the offset read
 * at start, so a server span and its children share one clock and a child
 * never starts before its parent (two clocks read apart could disagree). */
static int64_t span_now(const srv_tracer *t)
{
    return rt_time_now_ns() + t->mono_to_unix;
}

static void copy_str(char *dst, size_t cap, const char *src)
{
    size_t n = src ? strnlen(src, cap - 1) : 0;
    memcpy(dst, src ? src : "", n);
    dst[n] = '\0';
}

/* The context's ids and sampling; the start is read only when sampled. */
static void begin_ids(srv_tracer *t, const char *traceparent, const char *tracestate,
                      srv_trace_ctx *ctx)
{
    ctx->active = true;
    uint8_t flags = 0;
    if (parse_traceparent(traceparent, ctx->trace_id, ctx->parent_id, &flags)) {
        ctx->has_parent = true;
        ctx->sampled = flags & 1; /* parent-based: the parent decided */
        if (tracestate)
            copy_str(ctx->tracestate, sizeof ctx->tracestate, tracestate);
    } else {
        random_bytes(ctx->trace_id, 16);
        uint64_t low;
        memcpy(&low, ctx->trace_id + 8, 8);
        ctx->sampled = t->all || low < t->threshold; /* the ratio, on the trace id */
    }
    random_bytes(ctx->span_id, 8);
    if (all_zero(ctx->span_id, 8))
        ctx->span_id[7] = 1;
    if (ctx->sampled)
        ctx->start_unix_ns = span_now(t);
}

void srv_trace_begin(srv_tracer *t, const char *traceparent, const char *tracestate,
                     const char *method, const char *path, srv_trace_ctx *ctx)
{
    if (!t)
        return;
    begin_ids(t, traceparent, tracestate, ctx);
    copy_str(ctx->method, sizeof ctx->method, method);
    /* the path without its query */
    size_t n = path ? strcspn(path, "?") : 0;
    if (n >= sizeof ctx->path)
        n = sizeof ctx->path - 1;
    memcpy(ctx->path, path ? path : "", n);
    ctx->path[n] = '\0';
}

void srv_trace_begin_rpc(srv_tracer *t, const char *traceparent, const char *tracestate,
                         const char *path, srv_trace_ctx *ctx)
{
    if (!t)
        return;
    begin_ids(t, traceparent, tracestate, ctx);
    ctx->rpc = true;
    const char *p = path ? path + (path[0] == '/') : "";
    const char *slash = strrchr(p, '/');
    size_t n = slash ? (size_t)(slash - p) : strlen(p);
    if (n >= sizeof ctx->path)
        n = sizeof ctx->path - 1;
    memcpy(ctx->path, p, n); /* rpc.service */
    ctx->path[n] = '\0';
    copy_str(ctx->rpc_method, sizeof ctx->rpc_method, slash ? slash + 1 : "");
}

void srv_trace_header(const srv_trace_ctx *ctx, char out[56])
{
    char tid[33], sid[17];
    hex(tid, ctx->trace_id, 16);
    hex(sid, ctx->span_id, 8);
    snprintf(out, 56, "00-%s-%s-%02x", tid, sid, ctx->sampled ? 1 : 0);
}

void srv_trace_end(srv_tracer *t, const srv_trace_ctx *ctx, const srv_trace_attrs *a,
                   const srv_trace_phase *ph, size_t n_ph)
{
    if (!t || !ctx->active || !ctx->sampled)
        return;
    size_t want = 1;
    for (size_t i = 0; i < n_ph; i++)
        want += ph[i].end_ns > ph[i].start_ns;
    pthread_mutex_lock(&t->mu);
    if (t->n + want > SRV_TRACE_QUEUE || t->stop) {
        pthread_mutex_unlock(&t->mu);
        atomic_fetch_add_explicit(&t->dropped_queue, want, memory_order_relaxed);
        return;
    }
    span *s = &t->q[(t->head + t->n++) % SRV_TRACE_QUEUE];
    memset(s, 0, sizeof *s);
    memcpy(s->trace_id, ctx->trace_id, 16);
    memcpy(s->span_id, ctx->span_id, 8);
    memcpy(s->parent_id, ctx->parent_id, 8);
    s->has_parent = ctx->has_parent;
    s->server = true;
    if (ctx->rpc) /* the RPC conventions' name: package.Service/Method */
        snprintf(s->name, sizeof s->name, "%.50s/%.28s", ctx->path, ctx->rpc_method);
    else
        snprintf(s->name, sizeof s->name, "%s", ctx->method);
    s->start = ctx->start_unix_ns;
    s->end = span_now(t);
    memcpy(s->tracestate, ctx->tracestate, sizeof s->tracestate);
    memcpy(s->method, ctx->method, sizeof s->method);
    memcpy(s->path, ctx->path, sizeof s->path);
    copy_str(s->model, sizeof s->model, a ? a->model : NULL);
    s->version = a ? a->version : -1;
    s->instances = a ? a->instances : -1;
    s->queue_wait_ns = a ? a->queue_wait_ns : -1;
    s->status = ctx->status;
    s->rpc = ctx->rpc;
    memcpy(s->rpc_method, ctx->rpc_method, sizeof s->rpc_method);
    for (size_t i = 0; i < n_ph; i++) {
        if (ph[i].end_ns <= ph[i].start_ns)
            continue;
        span *c = &t->q[(t->head + t->n++) % SRV_TRACE_QUEUE];
        memset(c, 0, sizeof *c);
        memcpy(c->trace_id, ctx->trace_id, 16);
        random_bytes(c->span_id, 8);
        memcpy(c->parent_id, ctx->span_id, 8);
        c->has_parent = true;
        copy_str(c->name, sizeof c->name, ph[i].name);
        c->start = ph[i].start_ns + t->mono_to_unix;
        c->end = ph[i].end_ns + t->mono_to_unix;
        c->version = -1;
        c->instances = -1;
        c->queue_wait_ns = -1;
        memcpy(c->attr, ph[i].attr, sizeof c->attr);
    }
    bool full = t->n >= SRV_TRACE_BATCH;
    pthread_mutex_unlock(&t->mu);
    if (full)
        pthread_cond_signal(&t->cv);
}

/* ------------------------------------------------------------ OTLP JSON */

static int attr_str(rt_buf *b, bool *first, const char *k, const char *v)
{
    int r = rt_buf_printf(b, "%s{\"key\": \"%s\", \"value\": {\"stringValue\": ", *first ? "" : ", ", k);
    r |= rt_buf_json_string(b, v, strlen(v));
    *first = false;
    return r | rt_buf_puts(b, "}}");
}

static int attr_int(rt_buf *b, bool *first, const char *k, long long v)
{
    const char *sep = *first ? "" : ", ";
    *first = false;
    return rt_buf_printf(b, "%s{\"key\": \"%s\", \"value\": {\"intValue\": \"%lld\"}}",
                         sep, k, v);
}

static bool grpc_error(unsigned code)
{
    return code == 2 || code == 4 || code == 12 || code == 13 || code == 14 || code == 15;
}

static int span_json(rt_buf *b, const span *s, bool first)
{
    char tid[33], sid[17], pid[17];
    hex(tid, s->trace_id, 16);
    hex(sid, s->span_id, 8);
    hex(pid, s->parent_id, 8);
    int r = rt_buf_printf(b, "%s{\"traceId\": \"%s\", \"spanId\": \"%s\", ", first ? "" : ",\n",
                          tid, sid);
    if (s->has_parent)
        r |= rt_buf_printf(b, "\"parentSpanId\": \"%s\", ", pid);
    if (s->tracestate[0]) {
        r |= rt_buf_puts(b, "\"traceState\": ");
        r |= rt_buf_json_string(b, s->tracestate, strlen(s->tracestate));
        r |= rt_buf_puts(b, ", ");
    }
    r |= rt_buf_puts(b, "\"name\": ");
    r |= rt_buf_json_string(b, s->name, strlen(s->name));
    /* SPAN_KIND_SERVER = 2, SPAN_KIND_INTERNAL = 1 */
    r |= rt_buf_printf(b, ", \"kind\": %d, \"startTimeUnixNano\": \"%lld\", "
                          "\"endTimeUnixNano\": \"%lld\", \"attributes\": [",
                       s->server ? 2 : 1, (long long)s->start, (long long)s->end);
    bool f = true;
    if (s->server && s->rpc) {
        r |= attr_str(b, &f, "rpc.system", "grpc");
        r |= attr_str(b, &f, "rpc.service", s->path);
        r |= attr_str(b, &f, "rpc.method", s->rpc_method);
        r |= attr_int(b, &f, "rpc.grpc.status_code", (long long)s->status);
    } else if (s->server) {
        r |= attr_str(b, &f, "http.request.method", s->method);
        r |= attr_str(b, &f, "url.path", s->path);
        r |= attr_int(b, &f, "http.response.status_code", (long long)s->status);
    }
    if (s->server) {
        if (s->model[0])
            r |= attr_str(b, &f, "predictd.model", s->model);
        if (s->version >= 0)
            r |= attr_int(b, &f, "predictd.version", (long long)s->version);
        if (s->instances >= 0)
            r |= attr_int(b, &f, "predictd.instances", (long long)s->instances);
        if (s->queue_wait_ns >= 0)
            r |= attr_int(b, &f, "predictd.queue_wait_ns", (long long)s->queue_wait_ns);
    }
    for (int i = 0; i < SRV_TRACE_PHASE_ATTRS; i++)
        if (s->attr[i].key)
            r |= attr_int(b, &f, s->attr[i].key, s->attr[i].value);
    r |= rt_buf_puts(b, "]");
    /* STATUS_CODE_ERROR = 2 for a server span's 5xx (HTTP conventions), or
     * a gRPC server span's UNKNOWN, DEADLINE_EXCEEDED, UNIMPLEMENTED,
     * INTERNAL, UNAVAILABLE, DATA_LOSS (RPC conventions) */
    if (s->server && (s->rpc ? grpc_error(s->status) : s->status >= 500))
        r |= rt_buf_puts(b, ", \"status\": {\"code\": 2}");
    return r | rt_buf_puts(b, "}");
}

static int batch_json(rt_buf *b, const span *spans, size_t n)
{
    int r = rt_buf_puts(b, "{\"resourceSpans\": [{\"resource\": {\"attributes\": ["
                           "{\"key\": \"service.name\", \"value\": {\"stringValue\": \"predictd\"}}"
                           "]}, \"scopeSpans\": [{\"scope\": {\"name\": \"predictd\", "
                           "\"version\": \"0.1\"}, \"spans\": [\n");
    for (size_t i = 0; i < n; i++)
        r |= span_json(b, &spans[i], i == 0);
    return r | rt_buf_puts(b, "]}]}]}\n");
}

/* ------------------------------------------------------------ export */

static void *exporter(void *arg)
{
    srv_tracer *t = arg;
    span *batch = malloc(SRV_TRACE_BATCH * sizeof *batch);
    rt_buf body;
    rt_buf_init(&body);
    pthread_mutex_lock(&t->mu);
    for (;;) {
        if (!t->stop && t->n < SRV_TRACE_BATCH) {
            struct timespec ts;
            rt_time_deadline(&ts, (int64_t)SRV_TRACE_FLUSH_MS * 1000000);
            pthread_cond_timedwait(&t->cv, &t->mu, &ts);
        }
        size_t n = t->n < SRV_TRACE_BATCH ? t->n : SRV_TRACE_BATCH;
        if (n == 0 && t->stop)
            break;
        if (n == 0)
            continue;
        if (!batch) { /* out of memory at start: nothing can be sent */
            t->head = (t->head + n) % SRV_TRACE_QUEUE;
            t->n -= n;
            atomic_fetch_add(&t->dropped_export, n);
            continue;
        }
        for (size_t i = 0; i < n; i++)
            batch[i] = t->q[(t->head + i) % SRV_TRACE_QUEUE];
        t->head = (t->head + n) % SRV_TRACE_QUEUE;
        t->n -= n;
        bool stopping = t->stop;
        pthread_mutex_unlock(&t->mu);
        rt_buf_reset(&body);
        bool ok = batch_json(&body, batch, n) == 0 && !rt_buf_failed(&body) && srv_otlp_post(&t->to, &body);
        atomic_fetch_add(ok ? &t->exported : &t->dropped_export, n);
        atomic_fetch_add(ok ? &t->batches : &t->failed_batches, 1);
        pthread_mutex_lock(&t->mu);
        if (stopping && !ok) { /* one last try only: drop the rest */
            atomic_fetch_add(&t->dropped_export, t->n);
            t->n = 0;
        }
    }
    pthread_mutex_unlock(&t->mu);
    rt_buf_free(&body);
    free(batch);
    return NULL;
}

rt_status srv_tracer_new(const char *endpoint, const char *ca_file, double rate,
                         srv_tracer **out, rt_err *err)
{
    *out = NULL;
    srv_tracer *t = calloc(1, sizeof *t);
    if (!t || !(t->q = malloc(SRV_TRACE_QUEUE * sizeof *t->q))) {
        free(t);
        return rt_err_set(err, RT_ERR_NOMEM, "tracing: out of memory");
    }
    rt_status st = srv_otlp_target_init(&t->to, endpoint, ca_file, err);
    if (st != RT_OK) {
        free(t->q);
        free(t);
        return st;
    }
    t->all = rate >= 1;
    /* rate 1 is every trace id (t->all); below it rate x 2^64 < 2^64 fits */
    t->threshold = rate <= 0 ? 0 : rate >= 1 ? UINT64_MAX : (uint64_t)ldexp(rate, 64);
    t->mono_to_unix = unix_ns() - rt_time_now_ns();
    pthread_mutex_init(&t->mu, NULL);
    rt_time_cond_init(&t->cv);
    if (pthread_create(&t->thread, NULL, exporter, t) != 0) {
        pthread_cond_destroy(&t->cv);
        pthread_mutex_destroy(&t->mu);
        srv_otlp_target_free(&t->to);
        free(t->q);
        free(t);
        return rt_err_set(err, RT_ERR_NOMEM, "tracing: cannot start the exporter thread");
    }
    *out = t;
    return RT_OK;
}

void srv_tracer_free(srv_tracer *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->mu);
    t->stop = true;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->thread, NULL);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    srv_otlp_target_free(&t->to);
    free(t->q);
    free(t);
}

int srv_trace_metrics(srv_tracer *t, rt_buf *out)
{
    if (!t)
        return 0;
    pthread_mutex_lock(&t->mu);
    size_t queued = t->n;
    pthread_mutex_unlock(&t->mu);
    return rt_buf_printf(
        out,
        "# HELP predictd_trace_spans_exported_total Spans the OTLP receiver took (2xx).\n"
        "# TYPE predictd_trace_spans_exported_total counter\n"
        "predictd_trace_spans_exported_total %llu\n"
        "# HELP predictd_trace_spans_dropped_total Spans not exported: the queue was full "
        "(queue_full) or the receiver failed, was slow or refused (export_failed).\n"
        "# TYPE predictd_trace_spans_dropped_total counter\n"
        "predictd_trace_spans_dropped_total{reason=\"queue_full\"} %llu\n"
        "predictd_trace_spans_dropped_total{reason=\"export_failed\"} %llu\n"
        "# HELP predictd_trace_export_batches_total OTLP POSTs, by result.\n"
        "# TYPE predictd_trace_export_batches_total counter\n"
        "predictd_trace_export_batches_total{result=\"ok\"} %llu\n"
        "predictd_trace_export_batches_total{result=\"failed\"} %llu\n"
        "# HELP predictd_trace_spans_queued Spans waiting for the exporter.\n"
        "# TYPE predictd_trace_spans_queued gauge\npredictd_trace_spans_queued %zu\n",
        (unsigned long long)atomic_load(&t->exported),
        (unsigned long long)atomic_load(&t->dropped_queue),
        (unsigned long long)atomic_load(&t->dropped_export),
        (unsigned long long)atomic_load(&t->batches),
        (unsigned long long)atomic_load(&t->failed_batches), queued);
}
