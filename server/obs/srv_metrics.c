/*
 * srv_metrics.c — what an operator and an autoscaler read at
 * GET /monitoring/prometheus/metrics (Prometheus text format 0.0.4):
 *   :tensorflow:serving:request_count{model_name,status}       TF Serving's
 *   :tensorflow:serving:request_latency{model_name,API,entrypoint} (us)
 *   predictd_requests_total{model,version,method,code}
 *   predictd_request_duration_seconds{model,method}             histogram
 *   predictd_version_request_duration_seconds{model,version,method} (the same
 *   histograms by the version that answered: a canary's latency)
 *   predictd_http_responses_total{code}
 *   predictd_in_flight_requests, predictd_workers,
 *   predictd_worker_busy_seconds_total (busy fraction = rate / workers)
 *   predictd_rejected_requests_total{reason}
 *   predictd_open_connections, predictd_connections_refused_total,
 *   predictd_connections_closed_total{reason} (connection limit, timeouts)
 *   predictd_config_reloads_total{result}
 *   predictd_batch_size (histogram of instances per merged batch),
 *   predictd_batch_queue_depth, predictd_batched_requests_total,
 *   predictd_batch_fallbacks_total (cross-request batching)
 *   predictd_queue_wait_seconds{queue} (histogram: the wait for a worker
 *   or for a batch)
 * plus the model manager's predictd_model_versions and load times, and the
 * process_* metrics of every Prometheus client library (from /proc).
 * Series are kept in small arrays under one mutex; their number is capped so
 * that clients naming endless unknown models cannot grow them (unknown
 * models are counted under model=""). The counters every request touches
 * besides its series (answers by code, in flight, busy time, queue depth)
 * are atomics outside the mutex: a request takes the lock once.
 */
#include "srv.h"
#include "srv_limits.h"

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define N_BUCKETS 14
#define N_CODES 600
#define N_BATCH_BUCKETS 12 /* 1, 2, 4, ... 2048 instances */

static const double BUCKETS[N_BUCKETS] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                          0.025,  0.05,    0.1,    0.25,  0.5,    1,     5};

typedef struct series {
    char model[SRV_NAME_MAX + 1];
    int64_t version;
    rt_method method;
    srv_proto proto;
    int code;
    uint64_t count;
} series;

typedef struct hist {
    char model[SRV_NAME_MAX + 1];
    int64_t version;             /* -1: no version answered */
    rt_method method;
    srv_proto proto;
    uint64_t buckets[N_BUCKETS]; /* non-cumulative */
    uint64_t count;
    double sum;
    uint64_t ok_count;           /* answered 200 (Triton's success), the rest fail */
    double ok_sum;
    int64_t last_ms;             /* the last answer, ms since the epoch */
} hist;

typedef struct reason {
    char name[32];
    uint64_t count;
} reason;

struct srv_metrics {
    pthread_mutex_t mu;
    int workers;
    series *series;
    size_t n_series, cap_series;
    hist *hists;
    size_t n_hists, cap_hists;
    /* updated on every request without the lock (relaxed atomics: each
     * is a counter or gauge of its own, read when the text is made) */
    _Atomic uint64_t codes[N_CODES];
    atomic_long in_flight;
    atomic_long queue_depth;
    _Atomic int64_t busy_ns;
    reason reasons[8];
    size_t n_reasons;
    reason conn_closed[8];   /* connections predictd closed, by reason */
    size_t n_conn_closed;
    uint64_t conns_refused;  /* new connections refused at max_connections */
    long open_conns;
    uint64_t reloads_ok, reloads_refused;
    uint64_t dropped; /* series not recorded: cap reached */
    uint64_t batch_buckets[N_BATCH_BUCKETS]; /* non-cumulative */
    uint64_t batch_count, batch_sum, batch_over; /* over: above the last bucket */
    uint64_t batched_requests, batch_fallbacks;
    uint64_t batch_expired; /* gRPC calls past their deadline at their batch's start */
    uint64_t batch_cancelled; /* gRPC calls their client cancelled before their batch ran */
    uint64_t stopped[2]; /* runs stopped mid-run: client gone, deadline passed */
    long batch_queue;
    /* the wait of a request in a queue (predictd_queue_wait_seconds), per
     * queue: the workers' (0), the batcher's (1); relaxed atomics */
    _Atomic uint64_t wait_buckets[2][N_BUCKETS + 1]; /* non-cumulative; the last: +Inf */
    _Atomic uint64_t wait_count[2];
    _Atomic int64_t wait_ns[2];
};

static const char *const WAIT_QUEUES[2] = {"workers", "batch"};

static const char *method_name(rt_method m)
{
    switch (m) {
    case RT_METHOD_PREDICT: return "predict";
    case RT_METHOD_CLASSIFY: return "classify";
    case RT_METHOD_REGRESS: return "regress";
    case RT_METHOD_INFER: return "infer"; /* the Open Inference Protocol's (/v2) */
    case RT_METHOD_EXPLAIN: return "explain"; /* Vertex AI's :explain */
    case RT_METHOD_MULTI_INFERENCE: return "multi_inference"; /* a whole gRPC MultiInference
                                                                 call refused before it ran */
    }
    return "predict";
}

/* The protocol label's value. */
static const char *proto_name(srv_proto p)
{
    return p == SRV_PROTO_GRPC ? "grpc" : "rest";
}

/* TF Serving's status strings for an HTTP code. */
static const char *tf_status(int code)
{
    switch (code) {
    case 200: return "OK";
    case 400: return "INVALID_ARGUMENT";
    case 404: return "NOT_FOUND";
    case 413: return "RESOURCE_EXHAUSTED";
    case 429: return "RESOURCE_EXHAUSTED";
    case 503: return "UNAVAILABLE";
    case 504: return "DEADLINE_EXCEEDED";
    default: return "INTERNAL";
    }
}

srv_metrics *srv_metrics_new(int workers)
{
    srv_metrics *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    pthread_mutex_init(&m->mu, NULL);
    m->workers = workers;
    return m;
}

void srv_metrics_free(srv_metrics *m)
{
    if (!m)
        return;
    pthread_mutex_destroy(&m->mu);
    free(m->series);
    free(m->hists);
    free(m);
}

int srv_metrics_snapshot_json(srv_metrics *m, rt_buf *out)
{
    int r = rt_buf_puts(out, "{\"le\": [");
    for (size_t b = 0; b < N_BUCKETS; b++)
        r |= rt_buf_printf(out, "%s%g", b ? ", " : "", BUCKETS[b]);
    r |= rt_buf_puts(out, "], \"hists\": [");
    if (!m)
        return r | rt_buf_puts(out, "], \"series\": []}");
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < m->n_hists; i++) {
        const hist *h = &m->hists[i];
        r |= rt_buf_puts(out, i ? ", {\"model\": " : "{\"model\": ");
        r |= rt_buf_json_string(out, h->model, strlen(h->model));
        r |= rt_buf_printf(out, ", \"version\": %lld, \"method\": \"%s\", \"protocol\": \"%s\", "
                                "\"count\": %llu, \"sum\": %.9g, \"buckets\": [",
                           (long long)h->version, method_name(h->method), proto_name(h->proto),
                           (unsigned long long)h->count, h->sum);
        for (size_t b = 0; b < N_BUCKETS; b++)
            r |= rt_buf_printf(out, "%s%llu", b ? ", " : "", (unsigned long long)h->buckets[b]);
        r |= rt_buf_puts(out, "]}");
    }
    r |= rt_buf_puts(out, "], \"series\": [");
    for (size_t i = 0; i < m->n_series; i++) {
        const series *x = &m->series[i];
        r |= rt_buf_puts(out, i ? ", {\"model\": " : "{\"model\": ");
        r |= rt_buf_json_string(out, x->model, strlen(x->model));
        r |= rt_buf_printf(out, ", \"version\": %lld, \"method\": \"%s\", \"protocol\": "
                                "\"%s\", \"code\": %d, \"count\": %llu}",
                           (long long)x->version, method_name(x->method), proto_name(x->proto),
                           x->code,
                           (unsigned long long)x->count);
    }
    r |= rt_buf_puts(out, "], \"batch\": {\"buckets\": [");
    for (size_t b = 0; b < N_BATCH_BUCKETS; b++)
        r |= rt_buf_printf(out, "%s%llu", b ? ", " : "", (unsigned long long)m->batch_buckets[b]);
    r |= rt_buf_printf(out, "], \"over\": %llu, \"count\": %llu, \"sum\": %llu, "
                            "\"queue\": %ld}",
                       (unsigned long long)m->batch_over, (unsigned long long)m->batch_count,
                       (unsigned long long)m->batch_sum, m->batch_queue);
    pthread_mutex_unlock(&m->mu);
    r |= rt_buf_puts(out, ", \"queue_wait\": {");
    for (int q = 0; q < 2; q++)
        r |= rt_buf_printf(
            out, "%s\"%s\": {\"count\": %llu, \"sum\": %.9g}", q ? ", " : "", WAIT_QUEUES[q],
            (unsigned long long)atomic_load_explicit(&m->wait_count[q], memory_order_relaxed),
            (double)atomic_load_explicit(&m->wait_ns[q], memory_order_relaxed) / 1e9);
    r |= rt_buf_printf(out, "}, \"queue_depth\": %ld, \"in_flight\": %ld}",
                       atomic_load_explicit(&m->queue_depth, memory_order_relaxed),
                       atomic_load_explicit(&m->in_flight, memory_order_relaxed));
    return r;
}

static void copy_name(char *dst, const char *src)
{
    size_t n = src ? strnlen(src, SRV_NAME_MAX) : 0;
    memcpy(dst, src ? src : "", n);
    dst[n] = '\0';
}

void srv_metrics_request(srv_metrics *m, const char *model, int64_t version, rt_method method,
                         int http_code, double seconds)
{
    srv_metrics_request_via(m, SRV_PROTO_REST, model, version, method, http_code, seconds);
}

void srv_metrics_request_via(srv_metrics *m, srv_proto proto, const char *model, int64_t version,
                             rt_method method, int http_code, double seconds)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    series *s = NULL;
    for (size_t i = 0; i < m->n_series && !s; i++) {
        series *x = &m->series[i];
        if (x->version == version && x->method == method && x->proto == proto &&
            x->code == http_code && !strcmp(x->model, model ? model : ""))
            s = x;
    }
    if (!s && m->n_series < SRV_METRICS_MAX_SERIES &&
        rt_grow(&m->series, &m->cap_series, m->n_series + 1, sizeof *s) == 0) {
        s = &m->series[m->n_series++];
        memset(s, 0, sizeof *s);
        copy_name(s->model, model);
        s->version = version;
        s->method = method;
        s->proto = proto;
        s->code = http_code;
    }
    if (s)
        s->count++;
    else
        m->dropped++;
    hist *h = NULL;
    for (size_t i = 0; i < m->n_hists && !h; i++)
        if (m->hists[i].method == method && m->hists[i].proto == proto &&
            m->hists[i].version == version && !strcmp(m->hists[i].model, model ? model : ""))
            h = &m->hists[i];
    if (!h && m->n_hists < SRV_METRICS_MAX_HISTS &&
        rt_grow(&m->hists, &m->cap_hists, m->n_hists + 1, sizeof *h) == 0) {
        h = &m->hists[m->n_hists++];
        memset(h, 0, sizeof *h);
        copy_name(h->model, model);
        h->method = method;
        h->proto = proto;
        h->version = version;
    }
    if (h) {
        size_t b = 0;
        while (b < N_BUCKETS && seconds > BUCKETS[b])
            b++;
        if (b < N_BUCKETS)
            h->buckets[b]++;
        h->count++;
        h->sum += seconds;
        if (http_code == 200) {
            h->ok_count++;
            h->ok_sum += seconds;
        }
        h->last_ms = (int64_t)(rt_time_seconds(1) * 1000);
    }
    pthread_mutex_unlock(&m->mu);
}

void srv_metrics_model_stat(srv_metrics *m, const char *model, int64_t version,
                            srv_model_stat *out)
{
    memset(out, 0, sizeof *out);
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < m->n_hists; i++) {
        const hist *h = &m->hists[i];
        if (h->version != version || strcmp(h->model, model ? model : "") != 0)
            continue;
        out->ok += h->ok_count;
        out->ok_seconds += h->ok_sum;
        out->fail += h->count - h->ok_count;
        out->fail_seconds += h->sum - h->ok_sum;
        if (h->last_ms > out->last_ms)
            out->last_ms = h->last_ms;
    }
    pthread_mutex_unlock(&m->mu);
}

void srv_metrics_http(srv_metrics *m, int http_code)
{
    if (!m || http_code < 0 || http_code >= N_CODES)
        return;
    atomic_fetch_add_explicit(&m->codes[http_code], 1, memory_order_relaxed);
}

void srv_metrics_in_flight(srv_metrics *m, int delta, double busy_seconds)
{
    if (!m)
        return;
    atomic_fetch_add_explicit(&m->in_flight, delta, memory_order_relaxed);
    if (busy_seconds > 0)
        atomic_fetch_add_explicit(&m->busy_ns, (int64_t)(busy_seconds * 1e9 + 0.5),
                                  memory_order_relaxed);
}

void srv_metrics_queue_depth(srv_metrics *m, long depth)
{
    if (!m)
        return;
    atomic_store_explicit(&m->queue_depth, depth, memory_order_relaxed);
}

void srv_metrics_queue_wait(srv_metrics *m, bool batch, int64_t wait_ns)
{
    if (!m || wait_ns < 0)
        return;
    int q = batch ? 1 : 0;
    double s = (double)wait_ns / 1e9;
    size_t b = 0;
    while (b < N_BUCKETS && s > BUCKETS[b])
        b++;
    atomic_fetch_add_explicit(&m->wait_buckets[q][b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->wait_count[q], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->wait_ns[q], wait_ns, memory_order_relaxed);
}

/* The queue-wait histograms (predictd_queue_wait_seconds{queue}). */
static void put_queue_wait(rt_buf *o, srv_metrics *m)
{
    rt_buf_puts(o, "# HELP predictd_queue_wait_seconds Time an inference request waited in a "
                   "queue: for a worker (queue=\"workers\", max_queue_depth) or for its batch "
                   "(queue=\"batch\", enable_batching).\n"
                   "# TYPE predictd_queue_wait_seconds histogram\n");
    for (int q = 0; q < 2; q++) {
        uint64_t cum = 0;
        for (size_t b = 0; b <= N_BUCKETS; b++) {
            cum += atomic_load_explicit(&m->wait_buckets[q][b], memory_order_relaxed);
            if (b < N_BUCKETS)
                rt_buf_printf(o, "predictd_queue_wait_seconds_bucket{queue=\"%s\",le=\"%g\"} %llu\n",
                              WAIT_QUEUES[q], BUCKETS[b], (unsigned long long)cum);
            else
                rt_buf_printf(o, "predictd_queue_wait_seconds_bucket{queue=\"%s\",le=\"+Inf\"} %llu\n",
                              WAIT_QUEUES[q], (unsigned long long)cum);
        }
        rt_buf_printf(o, "predictd_queue_wait_seconds_sum{queue=\"%s\"} %.9g\n"
                         "predictd_queue_wait_seconds_count{queue=\"%s\"} %llu\n",
                      WAIT_QUEUES[q],
                      (double)atomic_load_explicit(&m->wait_ns[q], memory_order_relaxed) / 1e9,
                      WAIT_QUEUES[q],
                      (unsigned long long)atomic_load_explicit(&m->wait_count[q],
                                                               memory_order_relaxed));
    }
}

/* Counts one `why` in rs[0..*n) (at most cap reasons; m->mu held). */
static void count_reason(reason *rs, size_t *n, size_t cap, const char *why)
{
    reason *r = NULL;
    for (size_t i = 0; i < *n && !r; i++)
        if (!strcmp(rs[i].name, why))
            r = &rs[i];
    if (!r && *n < cap) {
        r = &rs[(*n)++];
        size_t len = strnlen(why, sizeof r->name - 1);
        memcpy(r->name, why, len);
        r->name[len] = '\0';
        r->count = 0;
    }
    if (r)
        r->count++;
}

void srv_metrics_rejected(srv_metrics *m, const char *why)
{
    if (!m || !why)
        return;
    pthread_mutex_lock(&m->mu);
    count_reason(m->reasons, &m->n_reasons, sizeof m->reasons / sizeof m->reasons[0], why);
    pthread_mutex_unlock(&m->mu);
}

void srv_metrics_connections(srv_metrics *m, long open, bool refused, const char *closed)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    if (open >= 0)
        m->open_conns = open;
    if (refused)
        m->conns_refused++;
    if (closed)
        count_reason(m->conn_closed, &m->n_conn_closed,
                     sizeof m->conn_closed / sizeof m->conn_closed[0], closed);
    pthread_mutex_unlock(&m->mu);
}

void srv_metrics_reload(srv_metrics *m, bool ok)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    if (ok)
        m->reloads_ok++;
    else
        m->reloads_refused++;
    pthread_mutex_unlock(&m->mu);
}

void srv_metrics_batch(srv_metrics *m, size_t instances, size_t requests, bool fallback)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    size_t b = 0;
    while (b < N_BATCH_BUCKETS && instances > ((size_t)1 << b))
        b++;
    if (b < N_BATCH_BUCKETS)
        m->batch_buckets[b]++;
    else
        m->batch_over++;
    m->batch_count++;
    m->batch_sum += instances;
    m->batched_requests += requests;
    m->batch_fallbacks += fallback;
    pthread_mutex_unlock(&m->mu);
}

void srv_metrics_batch_expired(srv_metrics *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    m->batch_expired++;
    pthread_mutex_unlock(&m->mu);
}

void srv_metrics_batch_cancelled(srv_metrics *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    m->batch_cancelled++;
    pthread_mutex_unlock(&m->mu);
}

void srv_metrics_stopped(srv_metrics *m, bool deadline)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    m->stopped[deadline]++;
    pthread_mutex_unlock(&m->mu);
}

void srv_metrics_batch_queue(srv_metrics *m, long depth)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    m->batch_queue = depth;
    pthread_mutex_unlock(&m->mu);
}

/* The batching series (m locked). */
static void put_batch(rt_buf *o, const srv_metrics *m)
{
    rt_buf_puts(o, "# HELP predictd_batch_size Instances per merged batch "
                   "(cross-request batching).\n"
                   "# TYPE predictd_batch_size histogram\n");
    uint64_t cum = 0;
    for (size_t b = 0; b < N_BATCH_BUCKETS; b++) {
        cum += m->batch_buckets[b];
        rt_buf_printf(o, "predictd_batch_size_bucket{le=\"%zu\"} %llu\n", (size_t)1 << b,
                      (unsigned long long)cum);
    }
    rt_buf_printf(o,
                  "predictd_batch_size_bucket{le=\"+Inf\"} %llu\n"
                  "predictd_batch_size_sum %llu\npredictd_batch_size_count %llu\n"
                  "# HELP predictd_batch_queue_depth Batches waiting to run.\n"
                  "# TYPE predictd_batch_queue_depth gauge\npredictd_batch_queue_depth %ld\n"
                  "# HELP predictd_batched_requests_total Requests run through the batch "
                  "queue.\n"
                  "# TYPE predictd_batched_requests_total counter\n"
                  "predictd_batched_requests_total %llu\n"
                  "# HELP predictd_batch_fallbacks_total Merged batches that failed and ran "
                  "request by request (one request's input was invalid).\n"
                  "# TYPE predictd_batch_fallbacks_total counter\n"
                  "predictd_batch_fallbacks_total %llu\n"
                  "# HELP predictd_batch_expired_total gRPC calls not run: their deadline "
                  "passed while they waited for their batch.\n"
                  "# TYPE predictd_batch_expired_total counter\n"
                  "predictd_batch_expired_total %llu\n"
                  "# HELP predictd_batch_cancelled_total gRPC calls not run: their client "
                  "cancelled them while they waited for their batch.\n"
                  "# TYPE predictd_batch_cancelled_total counter\n"
                  "predictd_batch_cancelled_total %llu\n"
                  "# HELP predictd_runs_stopped_total Requests and gRPC calls stopped "
                  "during their work (between its stages, between chunks of the forward "
                  "pass or of an :explain's rows, or before the answer is sent): the "
                  "client went away, or the deadline passed.\n"
                  "# TYPE predictd_runs_stopped_total counter\n"
                  "predictd_runs_stopped_total{reason=\"cancelled\"} %llu\n"
                  "predictd_runs_stopped_total{reason=\"deadline\"} %llu\n",
                  (unsigned long long)m->batch_count, (unsigned long long)m->batch_sum,
                  (unsigned long long)m->batch_count, m->batch_queue,
                  (unsigned long long)m->batched_requests,
                  (unsigned long long)m->batch_fallbacks,
                  (unsigned long long)m->batch_expired,
                  (unsigned long long)m->batch_cancelled,
                  (unsigned long long)m->stopped[0], (unsigned long long)m->stopped[1]);
}

/* Appends the histogram of h under name with extra labels; scale converts
 * seconds to the metric's unit. */
static void put_hist(rt_buf *o, const char *name, const char *labels, const hist *h, double scale)
{
    uint64_t cum = 0;
    for (size_t b = 0; b < N_BUCKETS; b++) {
        cum += h->buckets[b];
        rt_buf_printf(o, "%s_bucket{%s,le=\"%g\"} %llu\n", name, labels, BUCKETS[b] * scale,
                      (unsigned long long)cum);
    }
    rt_buf_printf(o, "%s_bucket{%s,le=\"+Inf\"} %llu\n", name, labels,
                  (unsigned long long)h->count);
    rt_buf_printf(o, "%s_sum{%s} %.9g\n", name, labels, h->sum * scale);
    rt_buf_printf(o, "%s_count{%s} %llu\n", name, labels, (unsigned long long)h->count);
}

/* The histogram of hists[i]'s model, method and protocol over every
 * version, into *all; false when an earlier entry has the same three (it was
 * summed there). Locked. */
static bool model_hist(const srv_metrics *m, size_t i, hist *all)
{
    const hist *h = &m->hists[i];
    for (size_t j = 0; j < i; j++)
        if (m->hists[j].method == h->method && m->hists[j].proto == h->proto &&
            !strcmp(m->hists[j].model, h->model))
            return false;
    *all = *h;
    for (size_t j = i + 1; j < m->n_hists; j++) {
        const hist *x = &m->hists[j];
        if (x->method != h->method || x->proto != h->proto || strcmp(x->model, h->model))
            continue;
        for (size_t b = 0; b < N_BUCKETS; b++)
            all->buckets[b] += x->buckets[b];
        all->count += x->count;
        all->sum += x->sum;
    }
    return true;
}

/* The process_* metrics every Prometheus client library exports (the Go
 * and Python clients' names, units and sources), read from /proc at each
 * scrape: CPU seconds (user + system), resident and virtual memory, open
 * and permitted file descriptors, and the start time in seconds since the
 * epoch (boot time + start ticks, as client_golang computes it). A value
 * /proc does not give is left out, never made up. */
static void put_process(rt_buf *o)
{
    long tick = sysconf(_SC_CLK_TCK);
    long page = sysconf(_SC_PAGESIZE);
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the command name may hold anything */
    unsigned long long utime = 0, stime = 0, start = 0, vsize = 0;
    long long rss = 0;
    bool stat_ok = p && tick > 0 && page > 0 &&
                   sscanf(p + 1,
                          " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d "
                          "%*d %*d %*d %*d %llu %llu %lld",
                          &utime, &stime, &start, &vsize, &rss) == 5;
    if (stat_ok)
        rt_buf_printf(o,
                      "# HELP process_cpu_seconds_total Total user and system CPU time "
                      "spent in seconds.\n"
                      "# TYPE process_cpu_seconds_total counter\n"
                      "process_cpu_seconds_total %.2f\n"
                      "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
                      "# TYPE process_resident_memory_bytes gauge\n"
                      "process_resident_memory_bytes %lld\n"
                      "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
                      "# TYPE process_virtual_memory_bytes gauge\n"
                      "process_virtual_memory_bytes %llu\n",
                      (double)(utime + stime) / (double)tick, rss * (long long)page, vsize);
    long long fds = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL)
            if (e->d_name[0] != '.')
                fds++;
        closedir(d);
        fds--; /* the directory stream's own descriptor */
        rt_buf_printf(o,
                      "# HELP process_open_fds Number of open file descriptors.\n"
                      "# TYPE process_open_fds gauge\nprocess_open_fds %lld\n",
                      fds);
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        rt_buf_printf(o,
                      "# HELP process_max_fds Maximum number of open file descriptors.\n"
                      "# TYPE process_max_fds gauge\nprocess_max_fds %.0f\n",
                      rl.rlim_cur == RLIM_INFINITY ? 1.8446744073709552e19
                                                   : (double)rl.rlim_cur);
    unsigned long long btime = 0;
    f = stat_ok ? fopen("/proc/stat", "r") : NULL;
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "btime %llu", &btime) == 1)
                break;
        fclose(f);
    }
    if (btime)
        rt_buf_printf(o,
                      "# HELP process_start_time_seconds Start time of the process since "
                      "unix epoch in seconds.\n"
                      "# TYPE process_start_time_seconds gauge\n"
                      "process_start_time_seconds %.2f\n",
                      (double)btime + (double)start / (double)tick);
}

/* TF Serving's request_count (by model and status, over versions, methods
 * and protocols) and request_latency (by model, API and entrypoint). Model
 * names are [A-Za-z0-9_.-]: no escaping. Locked. */
static void put_tf_serving(const srv_metrics *m, rt_buf *o)
{
    rt_buf_puts(o, "# HELP :tensorflow:serving:request_count Number of requests.\n"
                   "# TYPE :tensorflow:serving:request_count counter\n");
    for (size_t i = 0; i < m->n_series; i++) {
        /* Sum over versions and methods per (model, status). */
        const series *s = &m->series[i];
        bool first = true;
        for (size_t j = 0; j < i && first; j++)
            first = !(!strcmp(m->series[j].model, s->model) &&
                      !strcmp(tf_status(m->series[j].code), tf_status(s->code)));
        if (!first)
            continue;
        uint64_t total = 0;
        for (size_t j = i; j < m->n_series; j++)
            if (!strcmp(m->series[j].model, s->model) &&
                !strcmp(tf_status(m->series[j].code), tf_status(s->code)))
                total += m->series[j].count;
        rt_buf_printf(o,
                      ":tensorflow:serving:request_count{model_name=\"%s\","
                      "status=\"%s\"} %llu\n",
                      s->model, tf_status(s->code), (unsigned long long)total);
    }
    rt_buf_puts(o, "# HELP :tensorflow:serving:request_latency Distribution of "
                   "request latencies in microseconds.\n"
                   "# TYPE :tensorflow:serving:request_latency histogram\n");
    for (size_t i = 0; i < m->n_hists; i++) {
        char labels[256];
        hist all;
        if (!model_hist(m, i, &all))
            continue;
        rt_method hm = m->hists[i].method;
        const char *api = hm == RT_METHOD_PREDICT    ? "Predict"
                          : hm == RT_METHOD_CLASSIFY ? "Classify"
                          : hm == RT_METHOD_REGRESS  ? "Regress"
                          : hm == RT_METHOD_EXPLAIN  ? "Explain"
                          : hm == RT_METHOD_MULTI_INFERENCE ? "MultiInference"
                                                     : "ModelInfer";
        snprintf(labels, sizeof labels,
                 "model_name=\"%s\",API=\"%s\",entrypoint=\"%s\"", m->hists[i].model, api,
                 m->hists[i].proto == SRV_PROTO_GRPC ? "GRPC" : "REST");
        put_hist(o, ":tensorflow:serving:request_latency", labels, &all, 1e6);
    }
}

rt_status srv_metrics_render(srv_metrics *m, srv_manager *mgr, rt_buf *o)
{
    if (m) {
        pthread_mutex_lock(&m->mu);
        put_tf_serving(m, o); /* TF Serving's names first */
        rt_buf_puts(o, "# HELP predictd_requests_total Inference requests by model, "
                       "version, method, protocol and HTTP code (gRPC's status as the "
                       "HTTP code REST answers for it).\n"
                       "# TYPE predictd_requests_total counter\n");
        for (size_t i = 0; i < m->n_series; i++) {
            const series *s = &m->series[i];
            char ver[24] = "";
            if (s->version >= 0)
                snprintf(ver, sizeof ver, "%lld", (long long)s->version);
            rt_buf_printf(o,
                          "predictd_requests_total{model=\"%s\",version=\"%s\","
                          "method=\"%s\",protocol=\"%s\",code=\"%d\"} %llu\n",
                          s->model, ver, method_name(s->method), proto_name(s->proto), s->code,
                          (unsigned long long)s->count);
        }
        rt_buf_puts(o, "# HELP predictd_request_duration_seconds Inference request "
                       "latency.\n# TYPE predictd_request_duration_seconds histogram\n");
        for (size_t i = 0; i < m->n_hists; i++) {
            char labels[256];
            hist all;
            if (!model_hist(m, i, &all))
                continue;
            snprintf(labels, sizeof labels, "model=\"%s\",method=\"%s\",protocol=\"%s\"",
                     m->hists[i].model, method_name(m->hists[i].method),
                     proto_name(m->hists[i].proto));
            put_hist(o, "predictd_request_duration_seconds", labels, &all, 1);
        }
        rt_buf_puts(o, "# HELP predictd_version_request_duration_seconds Inference "
                       "request latency by the version that answered.\n"
                       "# TYPE predictd_version_request_duration_seconds histogram\n");
        for (size_t i = 0; i < m->n_hists; i++) {
            char labels[300];
            if (m->hists[i].version < 0)
                continue;
            snprintf(labels, sizeof labels,
                     "model=\"%s\",version=\"%lld\",method=\"%s\",protocol=\"%s\"",
                     m->hists[i].model, (long long)m->hists[i].version,
                     method_name(m->hists[i].method), proto_name(m->hists[i].proto));
            put_hist(o, "predictd_version_request_duration_seconds", labels, &m->hists[i],
                     1);
        }
        rt_buf_puts(o, "# HELP predictd_http_responses_total HTTP answers by code.\n"
                       "# TYPE predictd_http_responses_total counter\n");
        for (int c = 0; c < N_CODES; c++) {
            uint64_t n = atomic_load_explicit(&m->codes[c], memory_order_relaxed);
            if (n)
                rt_buf_printf(o, "predictd_http_responses_total{code=\"%d\"} %llu\n", c,
                              (unsigned long long)n);
        }
        rt_buf_printf(o,
                      "# HELP predictd_in_flight_requests Requests being handled now.\n"
                      "# TYPE predictd_in_flight_requests gauge\n"
                      "predictd_in_flight_requests %ld\n"
                      "# HELP predictd_queue_depth Inference requests waiting for a "
                      "worker.\n"
                      "# TYPE predictd_queue_depth gauge\npredictd_queue_depth %ld\n"
                      "# HELP predictd_workers Request threads.\n"
                      "# TYPE predictd_workers gauge\npredictd_workers %d\n"
                      "# HELP predictd_worker_busy_seconds_total Time request threads "
                      "spent handling requests (busy fraction = rate / workers).\n"
                      "# TYPE predictd_worker_busy_seconds_total counter\n"
                      "predictd_worker_busy_seconds_total %.6f\n",
                      atomic_load_explicit(&m->in_flight, memory_order_relaxed),
                      atomic_load_explicit(&m->queue_depth, memory_order_relaxed), m->workers,
                      (double)atomic_load_explicit(&m->busy_ns, memory_order_relaxed) / 1e9);
        rt_buf_puts(o, "# HELP predictd_rejected_requests_total Requests refused before "
                       "running, by reason.\n"
                       "# TYPE predictd_rejected_requests_total counter\n");
        for (size_t i = 0; i < m->n_reasons; i++)
            rt_buf_printf(o, "predictd_rejected_requests_total{reason=\"%s\"} %llu\n",
                          m->reasons[i].name, (unsigned long long)m->reasons[i].count);
        rt_buf_printf(o,
                      "# HELP predictd_open_connections Client connections open now.\n"
                      "# TYPE predictd_open_connections gauge\n"
                      "predictd_open_connections %ld\n"
                      "# HELP predictd_connections_refused_total New connections closed "
                      "at once: max_connections were open and none was idle.\n"
                      "# TYPE predictd_connections_refused_total counter\n"
                      "predictd_connections_refused_total %llu\n"
                      "# HELP predictd_connections_closed_total Open connections "
                      "predictd closed, by reason.\n"
                      "# TYPE predictd_connections_closed_total counter\n",
                      m->open_conns, (unsigned long long)m->conns_refused);
        for (size_t i = 0; i < m->n_conn_closed; i++)
            rt_buf_printf(o, "predictd_connections_closed_total{reason=\"%s\"} %llu\n",
                          m->conn_closed[i].name,
                          (unsigned long long)m->conn_closed[i].count);
        rt_buf_printf(o,
                      "# HELP predictd_config_reloads_total Config reloads by result.\n"
                      "# TYPE predictd_config_reloads_total counter\n"
                      "predictd_config_reloads_total{result=\"ok\"} %llu\n"
                      "predictd_config_reloads_total{result=\"refused\"} %llu\n"
                      "# HELP predictd_metrics_series_dropped_total Samples not recorded "
                      "because the series cap was reached.\n"
                      "# TYPE predictd_metrics_series_dropped_total counter\n"
                      "predictd_metrics_series_dropped_total %llu\n",
                      (unsigned long long)m->reloads_ok,
                      (unsigned long long)m->reloads_refused,
                      (unsigned long long)m->dropped);
        put_batch(o, m);
        pthread_mutex_unlock(&m->mu);
        put_queue_wait(o, m);
    }
    if (mgr && srv_manager_metrics(mgr, o) != RT_OK)
        return RT_ERR_NOMEM;
    put_process(o);
    return rt_buf_failed(o) ? RT_ERR_NOMEM : RT_OK; /* its errors stick: checked once */
}
