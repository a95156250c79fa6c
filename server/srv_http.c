/*
 * srv_http.c — predictd's HTTP front: libmicrohttpd with its own poll(2)
 * thread pool, request bodies gathered under a hard cap (413 without reading
 * the rest), and the answers of every route in TensorFlow Serving's shapes:
 * JSON with Content-Type application/json, and errors as {"error": "..."}.
 *
 * Hot path without locks or allocations after warm-up: inference on an I/O
 * thread uses that thread's own rt_ctx (found through a pthread key held in
 * srv_http, created on the thread's first request); each connection keeps one
 * request record whose body and answer buffers are reused by every request
 * of the connection (the answer is handed to libmicrohttpd without a copy:
 * it stays untouched until the request completes). Contexts for requests
 * that leave their I/O thread (batching) come from a small mutex-guarded pool.
 *
 * Connections are registered with srv_conn.c, which keeps their number
 * under max_connections (libmicrohttpd's accept policy callback asks it;
 * idle keep-alive connections are reclaimed first) and closes those that
 * are too slow to send a request header or a whole request. The systemd
 * watchdog's probe does not need a free slot: it is a socketpair handed to
 * libmicrohttpd with MHD_add_connection, admitted outside the limit (whose
 * libmicrohttpd-side value is set above max_connections for it).
 *
 * With cross-request batching (enable_batching), a :predict body is parsed on
 * the I/O thread into its own rt_ctx (a parse error answers 400 at once),
 * the connection is suspended and the request joins a batch of its model
 * version and signature (srv_batch.c); a batch thread merges the batch, runs
 * it once (rt_merge_run), renders each request's answer and resumes each
 * connection. classify / regress bypass batching.
 */
#include "srv.h"

#include <arpa/inet.h>
#include <stddef.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

typedef struct conn_state conn_state;

/* One I/O thread's own state, found through srv_http.tkey. */
typedef struct tstate {
    rt_ctx *ctx;          /* inference on this thread */
    rt_rng rng;           /* traffic split and sampling draws of its requests */
    struct tstate *next;  /* srv_http.tstates (freed at stop) */
} tstate;

struct srv_http {
    struct MHD_Daemon *mhd;
    srv_http_params p;
    char metrics_path[256]; /* p.metrics_path's copy; "" = metrics not served */
    srv_manager *mgr;
    const _Atomic int *draining;
    int fd;        /* listening socket */
    bool own_fd;
    int port;
    pthread_mutex_t pool_mu; /* guards pool */
    rt_ctx **pool;
    size_t n_pool, cap_pool;
    srv_pool *workers;       /* NULL: inference runs on the I/O threads */
    rt_ctx **wctx;           /* [threads] one per worker */
    atomic_long active;      /* requests from their first call until libmicrohttpd
                                reports completion (stop waits for them) */
    srv_batcher *batcher;    /* NULL: no cross-request batching */
    rt_ctx **bctx;           /* [batch threads] the merged batch of each */
    pthread_key_t tkey;      /* -> this I/O thread's tstate */
    bool tkey_made;
    pthread_mutex_t conn_mu; /* guards tstates (links) */
    tstate *tstates;         /* every I/O thread's state */
    srv_conns *conns;        /* open connections: limit, deadlines */
    atomic_int probe_fd;     /* the watchdog probe's server end, or -1 */
    atomic_size_t held;      /* request body bytes held now (max_total_request_bytes) */
    srv_shadow *shadow;      /* shadow runs, after the answer was sent */
    srv_predlog *predlog;    /* prediction log writer */
    atomic_bool trim_due;    /* held passed TRIM_AFTER since the last malloc_trim */
};

/* One request's state between libmicrohttpd's calls. */
typedef struct req {
    srv_route route;
    srv_pick pick;    /* the split's draw in; the shadow and log choice out */
    int64_t served;   /* the version that answered (X-Predictd-Model-Version), or -1 */
    rt_buf body;
    bool answered;    /* a response was queued (or the request handed over) */
    bool counted;     /* counted in h->active */
    size_t held;      /* bytes of srv_http.held this request's body holds */
    struct timespec start;
    /* worker hand-over (SRV_ROUTE_INFER with a pool) */
    struct MHD_Connection *conn;
    srv_http *h;
    bool done;        /* the worker filled code/resp and resumed conn */
    unsigned code;
    rt_buf resp;      /* JSON answer or {"error": ...} */
    /* cross-request batching: held from parsing until answered */
    srv_version *ver;
    rt_ctx *ctx;      /* holds the parsed batch */
    rt_parsed parsed;
} req;

/* One connection, from libmicrohttpd's STARTED notice to its CLOSED notice
 * (which comes after the completion of its last request). */
struct conn_state {
    req rq;                   /* first member: the request in progress; its
                                 buffers are reused by the next request */
    srv_conn *c;              /* its record in srv_http.conns */
    /* the I/O thread's own: the current request's headers (framing check) */
    srv_field *fields;
    size_t n_fields, cap_fields;
    bool fields_oom;
    const char *route_key;    /* X-Predictd-Route-Key of the current request, or NULL */
    size_t route_key_len;
};

/* Sampled requests waiting for their shadow run / for the log writer; past
 * these, more are dropped and counted. */
#define SHADOW_QUEUE 256
#define LOG_QUEUE 4096

/* Buffers larger than this are freed when their request completes, so idle
 * keep-alive connections do not each hold a large body. */
#define CONN_BUF_KEEP (64 * 1024)

static void route_metrics(const srv_http *h, const char *method, const char *url, srv_route *r);

srv_http_params srv_http_default_params(void)
{
    srv_http_params p;
    memset(&p, 0, sizeof p);
    p.host = "0.0.0.0";
    p.port = 8501;
    p.listen_fd = -1;
    p.threads = 1;
    p.timeout_ms = 30000;
    p.connection_timeout_s = 60;
    p.request_read_timeout_s = 30;
    p.max_connections = 1024;
    p.header_timeout_s = 10;
    p.max_request_bytes = 1572864;
    p.max_total_request_bytes = (size_t)256 << 20;
    p.enable_cors = false;
    p.json = rt_json_default_params();
    p.batching = false;
    p.metrics_path = "/monitoring/prometheus/metrics";
    p.batch = srv_batcher_default_params();
    return p;
}

static double now_ms(void);

/* libmicrohttpd's per-connection memory (headers and its read buffer). */
#define SRV_CONN_MEMORY (16 * 1024)

/* ------------------------------------------------------ context pool */

static rt_ctx *ctx_take(srv_http *h)
{
    rt_ctx *c = NULL;
    pthread_mutex_lock(&h->pool_mu);
    if (h->n_pool)
        c = h->pool[--h->n_pool];
    pthread_mutex_unlock(&h->pool_mu);
    return c ? c : rt_ctx_new();
}

/* Contexts kept for reuse at most. Without batching at most one per I/O
 * thread is ever out; with it one per queued request, so a burst could
 * leave thousands (each with its arenas) behind: the rest are freed. */
#define CTX_POOL_KEEP 256

static void ctx_give(srv_http *h, rt_ctx *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&h->pool_mu);
    if (h->n_pool == h->cap_pool && h->cap_pool < CTX_POOL_KEEP) {
        size_t cap = h->cap_pool ? h->cap_pool * 2 : 8;
        rt_ctx **p = realloc(h->pool, cap * sizeof *p);
        if (p) {
            h->pool = p;
            h->cap_pool = cap;
        }
    }
    if (h->n_pool < h->cap_pool) {
        h->pool[h->n_pool++] = c;
        c = NULL;
    }
    pthread_mutex_unlock(&h->pool_mu);
    rt_ctx_free(c);
}

/* ------------------------------------------ request bodies held at once */

/* After a burst that held more than this, the heap is trimmed once the
 * last body is let go. */
#define TRIM_AFTER ((size_t)32 << 20)

/* Takes n bytes of the budget for request bodies held at once (a
 * Content-Length when the headers arrive, else each chunk as it comes);
 * false, taking nothing, when they do not fit under max_total_request_bytes. */
static bool hold_body(srv_http *h, req *rq, size_t n)
{
    size_t was = atomic_fetch_add(&h->held, n);
    if (n > h->p.max_total_request_bytes || was > h->p.max_total_request_bytes - n) {
        atomic_fetch_sub(&h->held, n);
        return false;
    }
    rq->held += n;
    if (was + n > TRIM_AFTER)
        atomic_store(&h->trim_due, true);
    return true;
}

/* Gives rq's bytes back when its request completes (its buffer is freed
 * then when large); the last request of a large burst trims the heap so
 * that RSS comes back. */
static void release_body(srv_http *h, req *rq)
{
    if (!rq->held)
        return;
    size_t left = atomic_fetch_sub(&h->held, rq->held) - rq->held;
    rq->held = 0;
    if (left == 0 && atomic_exchange(&h->trim_due, false))
        malloc_trim(0);
}

static enum MHD_Result send_error(srv_http *h, struct MHD_Connection *conn, unsigned code,
                                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* 429 for a body that does not fit under max_total_request_bytes. */
static enum MHD_Result refuse_body(srv_http *h, struct MHD_Connection *conn, req *rq,
                                   unsigned long long n)
{
    rq->answered = true;
    srv_metrics_rejected(h->p.metrics, "body_memory");
    return send_error(h, conn, 429,
                      "overloaded: %zu bytes of request bodies are being received and %llu "
                      "more would pass max_total_request_bytes=%zu; retry later",
                      (size_t)atomic_load(&h->held), n, h->p.max_total_request_bytes);
}

/* ----------------------------------------------------------- answers */

/* Queues b as the answer. With keep, b must stay untouched until the request
 * completes (a connection's own answer buffer): no copy is made. Otherwise
 * the response takes b's bytes (b is left empty). */
static enum MHD_Result send_buf_close(srv_http *h, struct MHD_Connection *conn, unsigned code,
                                      rt_buf *b, const char *ctype, bool keep, bool close,
                                      int64_t version)
{
    struct MHD_Response *resp;
    if (b->data && keep) {
        resp = MHD_create_response_from_buffer(b->len, b->data, MHD_RESPMEM_PERSISTENT);
    } else if (b->data) {
        resp = MHD_create_response_from_buffer(b->len, b->data, MHD_RESPMEM_MUST_FREE);
        if (resp)
            rt_buf_init(b); /* the response owns the bytes now */
    } else {
        resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    }
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    if (h->p.enable_cors)
        MHD_add_response_header(resp, "Access-Control-Allow-Origin", "*");
    if (code == 503 || code == 429)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    if (close) /* libmicrohttpd closes the connection after this answer */
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    if (version >= 0) { /* digits by hand: snprintf costs more than the header */
        char v[24], *d = v + sizeof v - 1;
        uint64_t u = (uint64_t)version;
        *d = '\0';
        do
            *--d = (char)('0' + u % 10);
        while (u /= 10);
        MHD_add_response_header(resp, "X-Predictd-Model-Version", d);
    }
    srv_metrics_http(h->p.metrics, (int)code);
    enum MHD_Result r = MHD_queue_response(conn, code, resp);
    MHD_destroy_response(resp);
    return r;
}

static enum MHD_Result send_buf(srv_http *h, struct MHD_Connection *conn, unsigned code,
                                rt_buf *b, const char *ctype)
{
    return send_buf_close(h, conn, code, b, ctype, false, false, -1);
}

static enum MHD_Result send_json(srv_http *h, struct MHD_Connection *conn, unsigned code,
                                 rt_buf *b)
{
    return send_buf(h, conn, code, b, "application/json");
}

/* {"error": msg} with code; close: the connection is closed after it. */
static enum MHD_Result send_error_msg(srv_http *h, struct MHD_Connection *conn, unsigned code,
                                      bool close, const char *msg)
{
    rt_buf b;
    rt_buf_init(&b);
    int r = rt_buf_puts(&b, "{\"error\": ");
    r |= rt_buf_json_string(&b, msg, strlen(msg));
    r |= rt_buf_puts(&b, "}");
    if (r) {
        rt_buf_free(&b);
        return MHD_NO;
    }
    if (code >= 500 && code != 503)
        srv_log(SRV_LOG_WARN, "answered %u: %s", code, msg);
    enum MHD_Result res =
        send_buf_close(h, conn, code, &b, "application/json", false, close, -1);
    rt_buf_free(&b);
    return res;
}

static enum MHD_Result send_error(srv_http *h, struct MHD_Connection *conn, unsigned code,
                                  const char *fmt, ...)
{
    char msg[RT_ERR_MAX + 128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return send_error_msg(h, conn, code, false, msg);
}

static unsigned status_to_http(rt_status s)
{
    switch (s) {
    case RT_OK: return 200;
    case RT_ERR_INVALID: return 400;
    case RT_ERR_FORMAT: return 400;
    case RT_ERR_LIMIT: return 400;
    case RT_ERR_NOTFOUND: return 404;
    case RT_ERR_UNSUPPORTED: return 503;
    default: return 500;
    }
}

static double ms_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

/* Appends {"error": msg} to out. */
static int put_error(rt_buf *out, const char *msg)
{
    int r = rt_buf_puts(out, "{\"error\": ");
    r |= rt_buf_json_string(out, msg, strlen(msg));
    r |= rt_buf_puts(out, "}");
    return r;
}

/* Runs one inference request: fills *code and out (the JSON answer or an
 * error object). Used on I/O threads (no pool) and on workers. */
static void compute_infer(srv_http *h, req *rq, rt_ctx *ctx, unsigned *code, rt_buf *out)
{
    const srv_route *r = &rq->route;
    rt_err err = {{0}};
    srv_version *v = NULL;
    double ms = ms_since(&rq->start);
    if (ms > h->p.timeout_ms) {
        /* It waited in the queue past its deadline: do not run it. */
        *code = 504;
        snprintf(err.msg, sizeof err.msg,
                 "deadline exceeded: the request waited %.0f ms, over "
                 "rest_api_timeout_in_ms=%d",
                 ms, h->p.timeout_ms);
        srv_metrics_request(h->p.metrics,
                            srv_manager_has_model(h->mgr, r->model) ? r->model : "", -1,
                            r->method, 504, ms / 1e3);
        put_error(out, err.msg);
        return;
    }
    rt_status st =
        srv_manager_acquire_routed(h->mgr, r->model, r->version, r->label, &rq->pick, &v, &err);
    if (st != RT_OK) {
        *code = status_to_http(st);
        srv_metrics_request(h->p.metrics,
                            srv_manager_has_model(h->mgr, r->model) ? r->model : "", -1,
                            r->method, (int)*code, ms_since(&rq->start) / 1e3);
        put_error(out, err.msg);
        return;
    }
    int64_t vnum = rq->served = srv_version_number(v);
    st = rt_json_handle(srv_version_model(v), r->method, rq->body.data ? rq->body.data : "",
                        rq->body.len, &h->p.json, ctx, out, &err);
    srv_version_release(v);
    ms = ms_since(&rq->start);
    *code = st == RT_OK ? (ms > h->p.timeout_ms ? 504 : 200) : status_to_http(st);
    srv_metrics_request(h->p.metrics, r->model, vnum, r->method, (int)*code, ms / 1e3);
    if (*code != 200) {
        rt_buf_reset(out);
        if (*code == 504)
            snprintf(err.msg, sizeof err.msg,
                     "deadline exceeded: the request took %.0f ms, over "
                     "rest_api_timeout_in_ms=%d",
                     ms, h->p.timeout_ms);
        put_error(out, err.msg);
    }
}

/* Sends a computed answer: rq->resp, the connection's own buffer (no copy). */
static enum MHD_Result send_computed(srv_http *h, struct MHD_Connection *conn, unsigned code,
                                     req *rq)
{
    rt_buf *out = &rq->resp;
    if (code >= 500 && code != 503)
        srv_log(SRV_LOG_WARN, "answered %u: %.300s", code, out->data ? out->data : "");
    return send_buf_close(h, conn, code, out, "application/json", true, false, rq->served);
}

/* This I/O thread's state, made on its first request (no lock after that). */
static tstate *thread_state(srv_http *h)
{
    tstate *t = pthread_getspecific(h->tkey);
    if (t)
        return t;
    t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    if (!(t->ctx = rt_ctx_new()) || pthread_setspecific(h->tkey, t) != 0) {
        rt_ctx_free(t->ctx);
        free(t);
        return NULL;
    }
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    rt_rng_seed(&t->rng, (uint64_t)(uintptr_t)t ^ ((uint64_t)now.tv_nsec << 20) ^
                             ((uint64_t)getpid() << 40) ^ (uint64_t)now.tv_sec);
    pthread_mutex_lock(&h->conn_mu);
    t->next = h->tstates;
    h->tstates = t;
    pthread_mutex_unlock(&h->conn_mu);
    return t;
}

static rt_ctx *thread_ctx(srv_http *h)
{
    tstate *t = thread_state(h);
    return t ? t->ctx : NULL;
}

/* An inference request's draws, on its I/O thread: the traffic split's
 * (the hash of X-Predictd-Route-Key, which check_framing's header walk
 * found, else random) and the sampling one. */
static bool draw_route(srv_http *h, const conn_state *cs, req *rq)
{
    tstate *t = thread_state(h);
    if (!t)
        return false;
    rq->pick.draw = cs->route_key ? srv_route_key_hash(cs->route_key, cs->route_key_len)
                                  : rt_rng_next(&t->rng);
    rq->pick.sample = rt_rng_next(&t->rng);
    return true;
}

static enum MHD_Result answer_infer(srv_http *h, struct MHD_Connection *conn, req *rq)
{
    rt_ctx *ctx = thread_ctx(h);
    if (!ctx)
        return send_error(h, conn, 500, "out of memory");
    rq->code = 500;
    rt_buf_reset(&rq->resp);
    compute_infer(h, rq, ctx, &rq->code, &rq->resp);
    return send_computed(h, conn, rq->code, rq);
}

/* A worker runs a queued request, then hands the connection back. */
static void worker_job(void *fn_ctx, void *job, int worker)
{
    srv_http *h = fn_ctx;
    req *rq = job;
    srv_metrics_queue_depth(h->p.metrics, (long)srv_pool_depth(h->workers));
    srv_metrics_in_flight(h->p.metrics, 1, 0);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    compute_infer(h, rq, h->wctx[worker], &rq->code, &rq->resp);
    srv_metrics_in_flight(h->p.metrics, -1, ms_since(&t0) / 1e3);
    rq->done = true;
    MHD_resume_connection(rq->conn);
}

/* ------------------------------------------- cross-request batching */

/* The end of a batched request's computation, as compute_infer ends one:
 * the code from st and the time taken, the metrics, an error body. */
static void batch_finish(srv_http *h, req *rq, rt_status st, const rt_err *err)
{
    const srv_route *r = &rq->route;
    double ms = ms_since(&rq->start);
    rq->code = st == RT_OK ? (ms > h->p.timeout_ms ? 504 : 200) : status_to_http(st);
    srv_metrics_request(h->p.metrics, r->model, srv_version_number(rq->ver), r->method,
                        (int)rq->code, ms / 1e3);
    if (rq->code != 200) {
        char msg[RT_ERR_MAX + 128];
        if (rq->code == 504)
            snprintf(msg, sizeof msg,
                     "deadline exceeded: the request took %.0f ms, over "
                     "rest_api_timeout_in_ms=%d",
                     ms, h->p.timeout_ms);
        else
            snprintf(msg, sizeof msg, "%s", err->msg);
        rt_buf_reset(&rq->resp);
        put_error(&rq->resp, msg);
    }
}

/* Lets go of what a batched request held (its version and context). */
static void batch_release(srv_http *h, req *rq)
{
    srv_version_release(rq->ver);
    rq->ver = NULL;
    ctx_give(h, rq->ctx);
    rq->ctx = NULL;
}

/* A batch thread runs one batch: requests past their deadline answer 504
 * without running; the rest are merged and run once, or, when there is
 * only one or the merged run fails (one request's input is invalid), run
 * one by one, so that each gets exactly its own answer. */
static void batch_job(void *fn_ctx, void *const *jobs, size_t n, int thread)
{
    srv_http *h = fn_ctx;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    srv_metrics_batch_queue(h->p.metrics, (long)srv_batcher_depth(h->batcher));
    srv_metrics_in_flight(h->p.metrics, (int)n, 0);
    rt_ctx **ctxs = malloc(n * sizeof *ctxs);
    rt_parsed *parsed = malloc(n * sizeof *parsed);
    req **live = malloc(n * sizeof *live);
    size_t k = 0, instances = 0;
    for (size_t i = 0; i < n; i++) {
        req *rq = jobs[i];
        double ms = ms_since(&rq->start);
        if (ms > h->p.timeout_ms) {
            /* It waited past its deadline: not run (as in compute_infer). */
            char msg[160];
            snprintf(msg, sizeof msg,
                     "deadline exceeded: the request waited %.0f ms, over "
                     "rest_api_timeout_in_ms=%d",
                     ms, h->p.timeout_ms);
            rq->code = 504;
            srv_metrics_request(h->p.metrics, rq->route.model, -1, rq->route.method, 504,
                                ms / 1e3);
            rt_buf_reset(&rq->resp);
            put_error(&rq->resp, msg);
            continue;
        }
        if (live && ctxs && parsed) {
            live[k] = rq;
            ctxs[k] = rq->ctx;
            parsed[k] = rq->parsed;
        }
        k++;
        instances += rq->parsed.n;
    }
    bool merged = false, fallback = false;
    if (k >= 2 && live && ctxs && parsed) {
        const rt_model *m = srv_version_model(live[0]->ver);
        rt_err err = {{0}};
        merged = rt_merge_run(m, h->bctx[thread], ctxs, parsed, k, &err) == RT_OK;
        fallback = !merged;
        size_t start = 0;
        for (size_t i = 0; merged && i < k; i++) {
            rt_status st = rt_merge_render(m, h->bctx[thread], start, &parsed[i],
                                           &live[i]->resp);
            rt_err e2 = {{0}};
            if (st != RT_OK)
                rt_err_set(&e2, st, "rendering the answer: %s", rt_status_str(st));
            batch_finish(h, live[i], st, &e2);
            start += parsed[i].n;
        }
    }
    for (size_t i = 0; !merged && i < n; i++) {
        req *rq = jobs[i];
        if (rq->code != 0)
            continue; /* answered above (deadline) */
        rt_err err = {{0}};
        rt_status st = live && ctxs && parsed
                           ? rt_json_run_parsed(srv_version_model(rq->ver), rq->ctx, &rq->parsed,
                                                &rq->resp, &err)
                           : rt_err_set(&err, RT_ERR_NOMEM, "batch: out of memory");
        batch_finish(h, rq, st, &err);
    }
    if (k > 0)
        srv_metrics_batch(h->p.metrics, instances, k, fallback);
    free(ctxs);
    free(parsed);
    free(live);
    srv_metrics_in_flight(h->p.metrics, -(int)n, ms_since(&t0) / 1e3);
    for (size_t i = 0; i < n; i++) {
        req *rq = jobs[i];
        batch_release(h, rq);
        rq->done = true;
        MHD_resume_connection(rq->conn);
    }
}

/* A :predict request with batching on: parse here, then join a batch (the
 * connection suspended until a batch thread answers it). Empty requests and
 * requests over max_batch_size run alone, here; a full queue answers 429. */
static enum MHD_Result batch_enter(srv_http *h, struct MHD_Connection *conn, req *rq)
{
    const srv_route *r = &rq->route;
    rt_err err = {{0}};
    rt_status st = srv_manager_acquire_routed(h->mgr, r->model, r->version, r->label, &rq->pick,
                                              &rq->ver, &err);
    if (st != RT_OK) {
        unsigned code = status_to_http(st);
        srv_metrics_request(h->p.metrics,
                            srv_manager_has_model(h->mgr, r->model) ? r->model : "", -1,
                            r->method, (int)code, ms_since(&rq->start) / 1e3);
        return send_error(h, conn, code, "%s", err.msg);
    }
    const rt_model *m = srv_version_model(rq->ver);
    rq->served = srv_version_number(rq->ver);
    rq->ctx = ctx_take(h);
    if (!rq->ctx)
        st = rt_err_set(&err, RT_ERR_NOMEM, "out of memory");
    else
        st = rt_json_parse_only(m, rq->body.data ? rq->body.data : "", rq->body.len,
                                &h->p.json, rq->ctx, &rq->parsed, &err);
    if (st == RT_OK && rq->parsed.n >= 1 && rq->parsed.n <= h->p.batch.max_batch_size) {
        rq->conn = conn;
        rq->h = h;
        /* Suspended before it can be answered: a batch thread may resume
         * it as soon as it is submitted. */
        MHD_suspend_connection(conn);
        if (srv_batcher_submit(h->batcher, m, rq->parsed.sig, rq->parsed.n, rq) ==
            SRV_BATCH_QUEUED) {
            srv_metrics_batch_queue(h->p.metrics, (long)srv_batcher_depth(h->batcher));
            return MHD_YES;
        }
        /* Not taken: 429, sent when libmicrohttpd resumes the connection. */
        srv_metrics_rejected(h->p.metrics, "overloaded");
        srv_metrics_request(h->p.metrics, r->model, -1, r->method, 429,
                            ms_since(&rq->start) / 1e3);
        rq->code = 429;
        rq->served = -1;
        char msg[160];
        snprintf(msg, sizeof msg,
                 "overloaded: %zu batches are already waiting (max_enqueued_batches); "
                 "retry later",
                 h->p.batch.max_enqueued_batches);
        rt_buf_reset(&rq->resp);
        put_error(&rq->resp, msg);
        batch_release(h, rq);
        rq->done = true;
        MHD_resume_connection(conn);
        return MHD_YES;
    }
    if (st == RT_OK) {
        /* Empty, or larger than a batch: it runs alone, here. */
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        srv_metrics_in_flight(h->p.metrics, 1, 0);
        st = rt_json_run_parsed(m, rq->ctx, &rq->parsed, &rq->resp, &err);
        srv_metrics_in_flight(h->p.metrics, -1, ms_since(&t0) / 1e3);
    }
    batch_finish(h, rq, st, &err);
    batch_release(h, rq);
    return send_computed(h, conn, rq->code, rq);
}

static enum MHD_Result answer_metadata(srv_http *h, struct MHD_Connection *conn,
                                       const srv_route *r)
{
    rt_err err = {{0}};
    srv_version *v = NULL;
    rt_status st = srv_manager_acquire(h->mgr, r->model, r->version, r->label, &v, &err);
    if (st != RT_OK)
        return send_error(h, conn, status_to_http(st), "%s", err.msg);
    rt_buf out;
    rt_buf_init(&out);
    st = rt_json_metadata(srv_version_model(v), r->model, srv_version_number(v), &out);
    srv_version_release(v);
    enum MHD_Result res = st == RT_OK ? send_json(h, conn, 200, &out)
                                      : send_error(h, conn, 500, "metadata: %s",
                                                   rt_status_str(st));
    rt_buf_free(&out);
    return res;
}

static enum MHD_Result answer_simple(srv_http *h, struct MHD_Connection *conn, unsigned code,
                                     const char *json)
{
    rt_buf b;
    rt_buf_init(&b);
    if (rt_buf_puts(&b, json) != 0)
        return MHD_NO;
    enum MHD_Result r = send_json(h, conn, code, &b);
    rt_buf_free(&b);
    return r;
}

static bool is_draining(const srv_http *h)
{
    return h->draining && atomic_load(h->draining);
}

static enum MHD_Result answer(srv_http *h, struct MHD_Connection *conn, req *rq,
                              const char *method, const char *url)
{
    const srv_route *r = &rq->route;
    rt_buf out;
    rt_buf_init(&out);
    rt_err err = {{0}};
    char why[256] = "";
    enum MHD_Result res;
    switch (r->kind) {
    case SRV_ROUTE_NONE:
        return send_error(h, conn, 404,
                          "no such path: %.16s %.200s (see GET /v1/models, "
                          "POST /v1/models/NAME:predict)",
                          method, url);
    case SRV_ROUTE_BAD:
        return send_error(h, conn, (unsigned)r->http_code, "%s", r->msg);
    case SRV_ROUTE_HEALTHZ:
        return answer_simple(h, conn, 200, r->v2 ? "{\"live\": true}" : "{\"status\": \"alive\"}");
    case SRV_ROUTE_READYZ:
        if (is_draining(h))
            return send_error(h, conn, 503, "not ready: draining");
        if (!srv_manager_ready(h->mgr, why, sizeof why))
            return send_error(h, conn, 503, "not ready: %s", why);
        return answer_simple(h, conn, 200, "{\"status\": \"ready\"}");
    case SRV_ROUTE_V2_READY:
        if (is_draining(h) || !srv_manager_ready(h->mgr, why, sizeof why))
            return answer_simple(h, conn, 503, "{\"ready\": false}");
        return answer_simple(h, conn, 200, "{\"ready\": true}");
    case SRV_ROUTE_V2_MODEL_READY: {
        srv_version *v = NULL;
        rt_status st = srv_manager_acquire(h->mgr, r->model, r->version, NULL, &v, &err);
        srv_version_release(v);
        if (st == RT_ERR_NOTFOUND && !srv_manager_has_model(h->mgr, r->model))
            return send_error(h, conn, 404, "%s", err.msg);
        bool ok = st == RT_OK;
        int e = rt_buf_puts(&out, "{\"name\": ");
        e |= rt_buf_json_string(&out, r->model, strlen(r->model));
        e |= rt_buf_printf(&out, ", \"ready\": %s}", ok ? "true" : "false");
        res = e ? MHD_NO : send_json(h, conn, ok ? 200 : 503, &out);
        rt_buf_free(&out);
        return res;
    }
    case SRV_ROUTE_LIST:
        if (srv_manager_list_json(h->mgr, &out) != RT_OK) {
            rt_buf_free(&out);
            return send_error(h, conn, 500, "out of memory");
        }
        res = send_json(h, conn, 200, &out);
        rt_buf_free(&out);
        return res;
    case SRV_ROUTE_STATUS: {
        rt_status st = srv_manager_status_json(h->mgr, r->model, r->version, r->label, &out,
                                               &err);
        res = st == RT_OK ? send_json(h, conn, 200, &out)
                          : send_error(h, conn, status_to_http(st), "%s", err.msg);
        rt_buf_free(&out);
        return res;
    }
    case SRV_ROUTE_METADATA:
        return answer_metadata(h, conn, r);
    case SRV_ROUTE_INFER:
        return answer_infer(h, conn, rq);
    case SRV_ROUTE_METRICS:
        rt_buf_printf(&out, "# HELP predictd_up 1 while the daemon runs.\n"
                            "# TYPE predictd_up gauge\npredictd_up 1\n"
                            "# HELP predictd_ready 1 when /readyz answers 200.\n"
                            "# TYPE predictd_ready gauge\npredictd_ready %d\n"
                            "# HELP predictd_draining 1 after SIGTERM.\n"
                            "# TYPE predictd_draining gauge\npredictd_draining %d\n",
                      !is_draining(h) && srv_manager_ready(h->mgr, NULL, 0), is_draining(h));
        if (srv_metrics_render(h->p.metrics, h->mgr, &out) != RT_OK ||
            srv_shadow_metrics(h->shadow, &out) != RT_OK ||
            srv_predlog_metrics(h->predlog, &out) != RT_OK) {
            rt_buf_free(&out);
            return send_error(h, conn, 500, "out of memory");
        }
        res = send_buf(h, conn, 200, &out, "text/plain; version=0.0.4");
        rt_buf_free(&out);
        return res;
    }
    return send_error(h, conn, 500, "unhandled route");
}

/* ------------------------------------------------ libmicrohttpd glue */

/* Collects one header into the connection's reused field array. */
static enum MHD_Result collect_field(void *cls, enum MHD_ValueKind kind, const char *key,
                                     size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    conn_state *cs = cls;
    if (cs->n_fields == cs->cap_fields) {
        size_t cap = cs->cap_fields ? cs->cap_fields * 2 : 32;
        srv_field *f = realloc(cs->fields, cap * sizeof *f);
        if (!f) {
            cs->fields_oom = true;
            return MHD_NO;
        }
        cs->fields = f;
        cs->cap_fields = cap;
    }
    cs->fields[cs->n_fields++] =
        (srv_field){key, key_size, value ? value : "", value ? value_size : 0};
    if (key_size == 20 && value && !strncasecmp(key, "X-Predictd-Route-Key", 20)) {
        cs->route_key = value;
        cs->route_key_len = value_size;
    }
    return MHD_YES;
}

/* The framing checks of srv_framing.c on a request whose headers have just
 * been parsed: 0, or the status to refuse it with (why says what). The
 * raw block check relies on libmicrohttpd 0.9.x's in-place parser (checked
 * against 0.9.75, Debian 12's); later versions refuse these shapes
 * themselves (MHD_OPTION_CLIENT_DISCIPLINE_LVL, see srv_http_start). */
static unsigned check_framing(struct MHD_Connection *conn, conn_state *cs, const char *method,
                              const char *version, char *why, size_t why_len)
{
    cs->n_fields = 0;
    cs->fields_oom = false;
    cs->route_key = NULL;
    MHD_get_connection_values_n(conn, MHD_HEADER_KIND, collect_field, cs);
    if (cs->fields_oom) {
        snprintf(why, why_len, "out of memory checking the request headers");
        return 503;
    }
    int code = 0;
#if MHD_VERSION < 0x00097700
    /* first: it names folding, which also leaves odd header names behind */
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    if (ci)
        code = srv_framing_check_block(method, ci->header_size, version, cs->fields,
                                       cs->n_fields, why, why_len);
#else
    (void)method;
#endif
    if (!code)
        code = srv_framing_check(cs->fields, cs->n_fields,
                                 version && !strcmp(version, MHD_HTTP_VERSION_1_0), why,
                                 why_len);
    return (unsigned)code;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    srv_http *h = cls;
    req *rq = *con_cls;
    if (!rq) {
        /* A new request on this connection: reuse its record and buffers. */
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        conn_state *cs = ci ? ci->socket_context : NULL;
        if (!cs)
            return MHD_NO;
        rq = &cs->rq;
        rt_buf keep_body = rq->body, keep_resp = rq->resp;
        memset(rq, 0, sizeof *rq);
        rq->body = keep_body;
        rq->resp = keep_resp;
        rt_buf_reset(&rq->body);
        rt_buf_reset(&rq->resp);
        rq->served = -1;
        clock_gettime(CLOCK_MONOTONIC, &rq->start);
        *con_cls = rq;
        rq->counted = true;
        atomic_fetch_add(&h->active, 1);
        srv_conn_headers_done(cs->c);
        char why[256];
        unsigned bad = check_framing(conn, cs, method, version, why, sizeof why);
        if (bad) {
            rq->answered = true;
            srv_metrics_rejected(h->p.metrics, bad == 501 ? "unsupported_coding" : "bad_framing");
            if (bad != 501) /* send_error_msg logs 501 itself */
                srv_log(SRV_LOG_WARN, "refused a request (400, connection closed): %s", why);
            return send_error_msg(h, conn, bad, true, why);
        }
        if (h->p.enable_cors && !strcmp(method, "OPTIONS")) {
            struct MHD_Response *resp =
                MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
            if (!resp)
                return MHD_NO;
            MHD_add_response_header(resp, "Access-Control-Allow-Origin", "*");
            MHD_add_response_header(resp, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
            MHD_add_response_header(resp, "Access-Control-Allow-Headers", "Content-Type");
            rq->answered = true;
            enum MHD_Result r = MHD_queue_response(conn, 204, resp);
            MHD_destroy_response(resp);
            return r;
        }
        srv_route_request(method, url, &rq->route);
        route_metrics(h, method, url, &rq->route);
        if (rq->route.kind == SRV_ROUTE_INFER && !draw_route(h, cs, rq)) {
            rq->answered = true;
            return send_error(h, conn, 503, "out of memory");
        }
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl) {
            char *end = NULL;
            unsigned long long n = strtoull(cl, &end, 10);
            if (end && *end == '\0' && n > h->p.max_request_bytes) {
                rq->answered = true;
                srv_metrics_rejected(h->p.metrics, "too_large");
                return send_error(h, conn, 413,
                                  "request body of %llu bytes is over the limit of %zu bytes "
                                  "(max_request_bytes)",
                                  n, h->p.max_request_bytes);
            }
            /* the whole body's bytes are held from now on */
            if (end && *end == '\0' && n > 0 && !hold_body(h, rq, (size_t)n))
                return refuse_body(h, conn, rq, n);
        }
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (rq->answered)
            return MHD_YES; /* discard */
        if (n > h->p.max_request_bytes || rq->body.len > h->p.max_request_bytes - n) {
            rq->answered = true;
            srv_metrics_rejected(h->p.metrics, "too_large");
            rt_buf_free(&rq->body);
            return send_error(h, conn, 413,
                              "request body is over the limit of %zu bytes (max_request_bytes)",
                              h->p.max_request_bytes);
        }
        /* a chunked body is held chunk by chunk (past the budget the
         * connection is closed: no answer can be queued mid-upload) */
        if (rq->held < rq->body.len + n && !hold_body(h, rq, rq->body.len + n - rq->held))
            return refuse_body(h, conn, rq, n);
        /* one allocation of the announced size rather than doublings */
        if (rq->held > rq->body.cap && rt_buf_reserve(&rq->body, rq->held) != 0) {
            rq->answered = true;
            return send_error(h, conn, 500, "out of memory reading the request body");
        }
        if (rt_buf_append(&rq->body, upload_data, n) != 0) {
            rq->answered = true;
            return send_error(h, conn, 500, "out of memory reading the request body");
        }
        return MHD_YES;
    }
    /* The request has been read whole: the read deadline is over for it. */
    srv_conn_read_done(((conn_state *)rq)->c);
    if (rq->done) {
        /* Resumed after a worker ran it. */
        rq->done = false;
        enum MHD_Result res = send_computed(h, conn, rq->code, rq);
        return res;
    }
    if (rq->answered)
        return MHD_YES;
    rq->answered = true;
    if (h->batcher && rq->route.kind == SRV_ROUTE_INFER &&
        rq->route.method == RT_METHOD_PREDICT)
        return batch_enter(h, conn, rq);
    if (h->workers && rq->route.kind == SRV_ROUTE_INFER) {
        rq->conn = conn;
        rq->h = h;
        if (srv_pool_reserve(h->workers)) {
            MHD_suspend_connection(conn);
            srv_pool_submit_reserved(h->workers, rq);
            srv_metrics_queue_depth(h->p.metrics, (long)srv_pool_depth(h->workers));
            return MHD_YES;
        }
        srv_metrics_rejected(h->p.metrics, "overloaded");
        srv_metrics_request(h->p.metrics,
                            srv_manager_has_model(h->mgr, rq->route.model) ? rq->route.model
                                                                           : "",
                            -1, rq->route.method, 429, ms_since(&rq->start) / 1e3);
        return send_error(h, conn, 429,
                          "overloaded: the inference queue is full (max_queue_depth=%zu) or "
                          "its oldest request has waited over max_queue_wait_ms=%d; retry "
                          "later",
                          h->p.max_queue, h->p.max_queue_wait_ms);
    }
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    srv_metrics_in_flight(h->p.metrics, 1, 0);
    enum MHD_Result res = answer(h, conn, rq, method, url);
    srv_metrics_in_flight(h->p.metrics, -1, ms_since(&t0) / 1e3);
    return res;
}

/* Queues what a request's routing sampled, now that its answer is sent:
 * its shadow run (if the served version answered 200) and its log line.
 * Both copy; neither blocks (a full queue drops and counts). */
static void tap_request(srv_http *h, req *rq)
{
    srv_version *shadow = rq->pick.shadow;
    rq->pick.shadow = NULL;
    if (rq->served < 0 || !(shadow || rq->pick.log)) {
        srv_version_release(shadow);
        return;
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    srv_served s = {rq->route.model, rq->served, rq->route.method, (int)rq->code,
                    ms_since(&rq->start) / 1e3, (double)now.tv_sec + (double)now.tv_nsec / 1e9,
                    rq->body.data, rq->body.len, rq->resp.data, rq->resp.len};
    if (rq->pick.log)
        srv_predlog_submit(h->predlog, &s);
    if (shadow && rq->code == 200)
        srv_shadow_submit(h->shadow, &s, shadow);
    else
        srv_version_release(shadow);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    srv_http *h = cls;
    (void)conn;
    (void)toe;
    req *rq = *con_cls;
    if (!rq)
        return;
    if (rq->counted)
        atomic_fetch_sub(&h->active, 1);
    tap_request(h, rq);
    if (rq->body.cap > CONN_BUF_KEEP)
        rt_buf_free(&rq->body);
    release_body(h, rq);
    if (rq->resp.cap > CONN_BUF_KEEP)
        rt_buf_free(&rq->resp);
    rq->counted = false;
    *con_cls = NULL;
    srv_conn_request_done(((conn_state *)rq)->c);
}

/* libmicrohttpd's connection notices: a connection's record is made when it
 * opens and freed when it closes (after its last request completed; the
 * socket is closed only after this notice, so the sweeper may shut it down
 * while holding conn_mu). */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    srv_http *h = cls;
    conn_state *cs = *socket_context;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        int fd = ci ? ci->connect_fd : -1;
        cs = calloc(1, sizeof *cs);
        if (cs && !(cs->c = srv_conns_add(h->conns, fd, fd >= 0 && fd == atomic_load(&h->probe_fd)))) {
            free(cs);
            cs = NULL;
        }
        if (!cs)
            return; /* on_request refuses such a connection */
        rt_buf_init(&cs->rq.body);
        rt_buf_init(&cs->rq.resp);
        *socket_context = cs;
        return;
    }
    if (!cs)
        return;
    srv_conns_remove(h->conns, cs->c);
    rt_buf_free(&cs->rq.body);
    rt_buf_free(&cs->rq.resp);
    free(cs->fields);
    free(cs);
    *socket_context = NULL;
}

/* libmicrohttpd's URI callback: a request line arrived (the header
 * deadline of a keep-alive connection's next request starts). Returns the
 * request's first context: none. */
static void *on_request_line(void *cls, const char *uri, struct MHD_Connection *conn)
{
    (void)cls;
    (void)uri;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    conn_state *cs = ci ? ci->socket_context : NULL;
    if (cs)
        srv_conn_request_began(cs->c);
    return NULL;
}

/* The watchdog probe's address (MHD_add_connection wants one): an abstract
 * Unix socket name that is never bound. */
#define PROBE_NAME "\0predictd-watchdog-probe"
static const struct sockaddr_un PROBE_ADDR = {AF_UNIX, PROBE_NAME};
#define PROBE_ADDR_LEN (offsetof(struct sockaddr_un, sun_path) + sizeof PROBE_NAME - 1)

/* libmicrohttpd's accept policy: every new connection but the probe must
 * fit under max_connections. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
    srv_http *h = cls;
    if (addrlen == PROBE_ADDR_LEN && !memcmp(addr, &PROBE_ADDR, PROBE_ADDR_LEN))
        return MHD_YES;
    return srv_conns_admit(h->conns) ? MHD_YES : MHD_NO;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    srv_http *h = cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    /* libmicrohttpd's own limit (per I/O thread) refused a connection */
    if (strstr(msg, "reached connection limit"))
        srv_metrics_connections(h->p.metrics, -1, true, NULL);
    srv_log(SRV_LOG_WARN, "http: %s", msg);
}

static rt_status open_listener(const char *host, int port, int *fd_out, rt_err *err)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    int e = getaddrinfo(host, ps, &hints, &res);
    if (e != 0)
        return rt_err_set(err, RT_ERR_INVALID, "rest_api_host '%s': %s", host, gai_strerror(e));
    rt_status st = RT_ERR_IO;
    int fd = -1;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0)
            continue;
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 1024) == 0) {
            st = RT_OK;
            break;
        }
        rt_err_set(err, RT_ERR_IO, "cannot listen on %s:%d: %s", host, port, strerror(errno));
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (st == RT_OK)
        *fd_out = fd;
    else if (err && !err->msg[0])
        rt_err_set(err, RT_ERR_IO, "cannot listen on %s:%d", host, port);
    return st;
}

static int bound_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return -1;
    if (ss.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return -1;
}

/* The Prometheus metrics answer at h->metrics_path only (TF Serving's
 * monitoring config may move them, or turn them off). */
static void route_metrics(const srv_http *h, const char *method, const char *url, srv_route *r)
{
    bool here = h->metrics_path[0] && !strcmp(url, h->metrics_path);
    if (r->kind == SRV_ROUTE_METRICS && !here) {
        memset(r, 0, sizeof *r);
        r->kind = SRV_ROUTE_NONE;
        r->version = -1;
    } else if (here && r->kind != SRV_ROUTE_METRICS) {
        memset(r, 0, sizeof *r);
        r->kind = SRV_ROUTE_METRICS;
        r->version = -1;
        if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
            r->kind = SRV_ROUTE_BAD;
            r->http_code = 405;
            snprintf(r->msg, sizeof r->msg, "method %.16s is not allowed here; use GET", method);
        }
    }
}

/* libmicrohttpd's URL unescaping, except that "%00" stays as it is: a
 * decoded NUL would end the path early ("census%00.json" would name
 * "census"); left encoded, it is a character no route or name accepts. */
static size_t unescape_url(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls;
    (void)c;
    char *w = s;
    const char *r = s;
    while (*r) {
        int hi = r[0] == '%' ? rt_hex_digit(r[1]) : -1;
        int lo = hi >= 0 ? rt_hex_digit(r[2]) : -1;
        if (lo >= 0 && (hi | lo) != 0) {
            *w++ = (char)(hi * 16 + lo);
            r += 3;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
    return (size_t)(w - s);
}

/* Connections libmicrohttpd admits per I/O thread beyond max_connections:
 * the watchdog probe, and connections being reclaimed. */
#define PROBE_SLOTS 8

/* Raises the soft limit of open files to need (at most the hard limit), so
 * that max_connections sockets can be open. */
static void raise_fd_limit(rlim_t need)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= need)
        return;
    rlim_t want = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need ? rl.rlim_max : need;
    rl.rlim_cur = want;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || want < need)
        srv_log(SRV_LOG_WARN,
                "open files limit is %llu: max_connections needs about %llu (raise "
                "LimitNOFILE= or ulimit -n)",
                (unsigned long long)want, (unsigned long long)need);
}

rt_status srv_http_start(const srv_http_params *p, srv_manager *mgr,
                         const _Atomic int *draining, srv_http **out, rt_err *err)
{
    *out = NULL;
    if (p->threads < 1 || p->max_request_bytes == 0 || p->timeout_ms < 1)
        return rt_err_set(err, RT_ERR_INVALID, "http: threads, max_request_bytes and timeout "
                                               "must be positive");
    srv_http *h = calloc(1, sizeof *h);
    if (!h)
        return rt_err_set(err, RT_ERR_NOMEM, "http: out of memory");
    h->p = *p;
    snprintf(h->metrics_path, sizeof h->metrics_path, "%s", p->metrics_path ? p->metrics_path : "");
    h->p.metrics_path = NULL; /* the caller's string may not outlive the start */
    h->p.host = NULL; /* not kept */
    h->mgr = mgr;
    h->draining = draining;
    h->fd = -1;
    atomic_init(&h->probe_fd, -1);
    pthread_mutex_init(&h->pool_mu, NULL);
    pthread_mutex_init(&h->conn_mu, NULL);
    rt_status st;
    srv_conns_params cp = {p->max_connections, p->header_timeout_s, p->request_read_timeout_s,
                           p->metrics};
    if ((st = srv_conns_new(&cp, &h->conns, err)) != RT_OK)
        goto fail;
    raise_fd_limit((rlim_t)p->max_connections + 256);
    if ((st = srv_shadow_new(SHADOW_QUEUE, &p->json, &h->shadow, err)) != RT_OK ||
        (st = srv_predlog_new(mgr, LOG_QUEUE, &h->predlog, err)) != RT_OK)
        goto fail;
    if (pthread_key_create(&h->tkey, NULL) != 0) {
        st = rt_err_set(err, RT_ERR_NOMEM, "http: cannot create a thread key");
        goto fail;
    }
    h->tkey_made = true;
    if (p->listen_fd >= 0) {
        h->fd = p->listen_fd;
    } else {
        if ((st = open_listener(p->host ? p->host : "0.0.0.0", p->port, &h->fd, err)) != RT_OK)
            goto fail;
        h->own_fd = true;
    }
    h->port = bound_port(h->fd);
    int io_threads = p->threads;
    if (p->max_queue > 0) {
        /* Inference runs on `threads` workers; I/O needs few threads. */
        io_threads = p->io_threads > 0 ? p->io_threads : (p->threads + 1) / 2;
        h->wctx = calloc((size_t)p->threads, sizeof *h->wctx);
        for (int i = 0; h->wctx && i < p->threads; i++)
            if (!(h->wctx[i] = rt_ctx_new())) {
                st = rt_err_set(err, RT_ERR_NOMEM, "http: out of memory");
                goto fail;
            }
        if (!h->wctx) {
            st = rt_err_set(err, RT_ERR_NOMEM, "http: out of memory");
            goto fail;
        }
        if ((st = srv_pool_new(p->threads, p->max_queue, worker_job, h, &h->workers, err)) !=
            RT_OK)
            goto fail;
        srv_pool_set_max_wait(h->workers, p->max_queue_wait_ms);
    } else if (p->io_threads > 0) {
        io_threads = p->io_threads;
    }
    if (p->batching) {
        h->bctx = calloc((size_t)(p->batch.threads > 0 ? p->batch.threads : 1), sizeof *h->bctx);
        for (int i = 0; h->bctx && i < p->batch.threads; i++)
            if (!(h->bctx[i] = rt_ctx_new())) {
                st = rt_err_set(err, RT_ERR_NOMEM, "http: out of memory");
                goto fail;
            }
        if (!h->bctx) {
            st = rt_err_set(err, RT_ERR_NOMEM, "http: out of memory");
            goto fail;
        }
        if ((st = srv_batcher_new(&p->batch, batch_job, h, &h->batcher, err)) != RT_OK)
            goto fail;
    }
    /* poll(2), not epoll: libmicrohttpd 0.9.75's epoll loop takes 128
     * events per epoll_wait and, after a full batch, waits again with the
     * whole idle timeout before handling any of them, so 128 or more
     * requests arriving together (a descheduled I/O thread, a burst over
     * many keep-alive connections) sit unread until the idle timeout or
     * the header deadline; its poll loop is level-triggered and has no
     * such batch (docs/daemon.md, "HTTP and workers"). */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG |
                     MHD_USE_ITC |
                     (h->workers || h->batcher ? MHD_ALLOW_SUSPEND_RESUME : 0);
    struct MHD_OptionItem opts[] = {
        {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)on_mhd_log, h},
        {MHD_OPTION_LISTEN_SOCKET, h->fd, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT,
         (intptr_t)(p->connection_timeout_s > 0 ? p->connection_timeout_s : 60), NULL},
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, h},
        {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, h},
        {MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)on_request_line, h},
        /* on_accept holds clients to max_connections; libmicrohttpd splits
         * its own limit between I/O threads, so each gets all of it and
         * room for the watchdog probe */
        {MHD_OPTION_CONNECTION_LIMIT,
         (intptr_t)((unsigned)io_threads * ((unsigned)p->max_connections + PROBE_SLOTS)), NULL},
        /* libmicrohttpd clears this pool for every request; it holds only
         * the headers (bodies are gathered in our own buffer). */
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)SRV_CONN_MEMORY, NULL},
        {MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)unescape_url, h},
#if MHD_VERSION >= 0x01000000
        /* refuses bare LF, folding, NUL, white space before ':' itself */
        {MHD_OPTION_CLIENT_DISCIPLINE_LVL, 1, NULL},
#endif
        /* libmicrohttpd warns about a pool of one: leave it out then */
        {io_threads > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END, io_threads, NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    h->mhd = MHD_start_daemon(flags, 0, on_accept, h, on_request, h, MHD_OPTION_ARRAY, opts,
                              MHD_OPTION_END);
    if (!h->mhd) {
        st = rt_err_set(err, RT_ERR_IO, "http: libmicrohttpd failed to start on port %d",
                        h->port);
        goto fail;
    }
    *out = h;
    return RT_OK;
fail:
    srv_batcher_free(h->batcher);
    for (int i = 0; h->bctx && i < p->batch.threads; i++)
        rt_ctx_free(h->bctx[i]);
    free(h->bctx);
    srv_pool_free(h->workers);
    for (int i = 0; h->wctx && i < p->threads; i++)
        rt_ctx_free(h->wctx[i]);
    free(h->wctx);
    if (h->own_fd && h->fd >= 0)
        close(h->fd);
    if (h->tkey_made)
        pthread_key_delete(h->tkey);
    srv_conns_free(h->conns);
    srv_shadow_free(h->shadow);
    srv_predlog_free(h->predlog);
    pthread_mutex_destroy(&h->pool_mu);
    pthread_mutex_destroy(&h->conn_mu);
    free(h);
    return st;
}

int srv_http_port(const srv_http *h)
{
    return h->port;
}

void srv_http_stop(srv_http *h)
{
    if (!h)
        return;
    if (h->mhd) {
        /* Stop accepting first; then MHD leaves the socket to us. */
        MHD_socket fd = MHD_quiesce_daemon(h->mhd);
        /* Let queued and running requests finish and their answers go out
         * (bounded by the request deadline plus a margin). */
        double limit = now_ms() + h->p.timeout_ms + 5000;
        while (atomic_load(&h->active) > 0 && now_ms() < limit) {
            struct timespec ts = {0, 5000000L};
            nanosleep(&ts, NULL);
        }
        /* Batches still waiting run now (their connections are resumed
         * while libmicrohttpd still runs); later submissions are refused. */
        srv_batcher_stop(h->batcher);
        MHD_stop_daemon(h->mhd); /* waits for the I/O threads */
        if (fd != MHD_INVALID_SOCKET && h->own_fd)
            close(fd);
    } else if (h->own_fd && h->fd >= 0) {
        close(h->fd);
    }
    srv_pool_free(h->workers);
    for (int i = 0; h->wctx && i < h->p.threads; i++)
        rt_ctx_free(h->wctx[i]);
    free(h->wctx);
    srv_batcher_free(h->batcher);
    for (int i = 0; h->bctx && i < h->p.batch.threads; i++)
        rt_ctx_free(h->bctx[i]);
    free(h->bctx);
    for (size_t i = 0; i < h->n_pool; i++)
        rt_ctx_free(h->pool[i]);
    free(h->pool);
    while (h->tstates) {
        tstate *t = h->tstates;
        h->tstates = t->next;
        rt_ctx_free(t->ctx);
        free(t);
    }
    if (h->tkey_made)
        pthread_key_delete(h->tkey);
    srv_conns_free(h->conns); /* after libmicrohttpd closed every connection */
    srv_shadow_free(h->shadow); /* after the last request queued its run */
    srv_predlog_free(h->predlog);
    pthread_mutex_destroy(&h->pool_mu);
    pthread_mutex_destroy(&h->conn_mu);
    free(h);
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

bool srv_http_probe(srv_http *h, int timeout_ms)
{
    int sv[2];
    if (!h || !h->mhd || socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv))
        return false;
    /* Outside max_connections (on_accept knows its address, on_connection
     * its descriptor), through the same I/O threads and handler as clients. */
    atomic_store(&h->probe_fd, sv[0]);
    if (MHD_add_connection(h->mhd, sv[0], (const struct sockaddr *)&PROBE_ADDR,
                           (socklen_t)PROBE_ADDR_LEN) != MHD_YES) {
        atomic_store(&h->probe_fd, -1);
        close(sv[1]); /* libmicrohttpd closed sv[0] */
        return false;
    }
    int status = 0;
    rt_buf body;
    rt_buf_init(&body);
    rt_status st = srv_client_request_fd(sv[1], "watchdog", "GET", "/healthz", NULL, timeout_ms,
                                         &status, &body, NULL);
    rt_buf_free(&body);
    atomic_store(&h->probe_fd, -1);
    return st == RT_OK && status == 200;
}
