/*
 * srv_http_infer.c — inference requests (:predict, :classify, :regress and
 * Cloud ML Engine's predict) without batching. Without workers a request
 * runs on its I/O thread with that thread's own rt_ctx (found through a
 * pthread key held in srv_http, made on the thread's first request, so the
 * hot path takes no lock); with max_queue_depth it is queued to the
 * workers (srv_pool.c), its connection suspended until a worker answers it,
 * or refused with 429 at once when the queue does not take it or, with
 * max_queue_wait_ms, when the adaptive admission limit (srv_admit.c) is
 * reached; an :explain request weighs there the model rows it will
 * evaluate (explain_weight). A request holds its admission slot while it
 * waits in the queue and runs; its worker gives the slot back when the run
 * ends, reporting the queue wait (srv_http_worker_job), before the answer
 * is sent: sending is the I/O thread's work, which admission does not
 * shorten, and a slot held until then would bound the answers per I/O
 * round (one per slot) and let clients that read slowly hold the slots.
 * srv_http_admit_release gives back a slot that no worker did. The 429
 * answers are made once at start and shared. Without workers, the heavy
 * requests (:explain, bodies over max_inline_request_bytes) are queued the
 * same way to the offload threads (srv_http_offload), so that one long run
 * does not hold its I/O thread's other connections (issue 35, item 1).
 */
#include "srv_http_internal.h"
#include "srv_limits.h"

#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ms from the request's start to t (CLOCK_MONOTONIC ns). */
static double ms_at(const req *rq, int64_t t)
{
    return (double)(t - rq->start) / 1e6;
}

/* A run's stop hook (rt_ctx_set_stop), asked between chunks of an
 * :explain's model rows and between its instances, and between chunks of
 * any run's forward pass: past rest_api_timeout_in_ms, or the
 * client's socket hung up (it closed: no one will read the answer). */
typedef struct explain_run {
    srv_http *h;
    req *rq;
} explain_run;

static bool explain_stop(void *arg)
{
    explain_run *x = arg;
    if (ms_at(x->rq, rt_time_now_ns()) > x->h->cfg.rest_api_timeout_in_ms) {
        x->rq->stopped = 1;
        return true;
    }
    if (x->rq->sock >= 0) {
        struct pollfd pfd = {.fd = x->rq->sock, .events = POLLRDHUP};
        if (poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
            x->rq->stopped = 2;
            return true;
        }
    }
    return false;
}

/* The client's socket of conn, for explain_stop; -1 when not known. */
static int conn_socket(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        conn ? MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD) : NULL;
    return ci ? (int)ci->connect_fd : -1;
}

/* An :explain's budget: the model rows rt_json_explain_rows estimates
 * (every input differing from the baseline) against max_explain_rows. 0
 * when within it (or when the body is refused: the run reports that),
 * else 1 with the message in err. */
static int explain_over_budget(srv_http *h, srv_version *v, req *rq, rt_ctx *ctx, rt_err *err)
{
    size_t rows = 0;
    rt_err e2 = {{0}};
    if (rt_json_explain_rows(srv_version_model(v), rq->body.data ? rq->body.data : "",
                             rq->body.len, &h->json, ctx, &rows, &e2) != RT_OK ||
        rows <= h->cfg.max_explain_rows)
        return 0;
    snprintf(err->msg, sizeof err->msg,
             "explain: the request could evaluate %zu model rows, over the budget of %zu "
             "(max_explain_rows); send fewer instances, or use "
             "sampledShapleyAttribution with a smaller pathCount",
             rows, h->cfg.max_explain_rows);
    return 1;
}

/* Runs one inference request: fills *code and out (the JSON answer or an
 * error object), and rq->t_done with when it ended. rq->t_run is when it
 * began (read by the caller, which times the run too). Used on I/O threads
 * (no pool) and on workers. */
static void compute_infer(srv_http *h, req *rq, rt_ctx *ctx, unsigned *code, rt_buf *out)
{
    const srv_route *r = &rq->route;
    rt_err err = {{0}};
    srv_version *v = NULL;
    double ms = ms_at(rq, rq->t_run);
    rq->t_done = rq->t_run;
    if (ms > h->cfg.rest_api_timeout_in_ms) {
        /* It waited in the queue past its deadline: do not run it. */
        *code = 504;
        snprintf(err.msg, sizeof err.msg,
                 "deadline exceeded: the request waited %.0f ms, over "
                 "rest_api_timeout_in_ms=%d",
                 ms, h->cfg.rest_api_timeout_in_ms);
        srv_metrics_request(h->p.metrics, srv_manager_has_model(h->mgr, r->model) ? r->model : "",
                            -1, r->method, 504, ms / 1e3);
        /* out of memory: the buffer's error sticks, and srv_http_send_computed
         * closes the connection rather than send half an answer */
        if (srv_http_put_error(out, err.msg) != 0)
            *code = 500;
        return;
    }
    rt_status st =
        srv_manager_acquire_routed(h->mgr, r->model, r->version, r->label, &rq->pick, &v, &err);
    if (st != RT_OK) {
        *code = srv_http_status(st);
        rq->t_done = rt_time_now_ns();
        srv_metrics_request(h->p.metrics, srv_manager_has_model(h->mgr, r->model) ? r->model : "",
                            -1, r->method, (int)*code, ms_at(rq, rq->t_done) / 1e3);
        /* out of memory: the buffer's error sticks, and srv_http_send_computed
         * closes the connection rather than send half an answer */
        if (srv_http_put_error(out, err.msg) != 0)
            *code = 500;
        return;
    }
    int64_t vnum = rq->served = srv_version_number(v);
    rq->v2_answer = 0;
    rt_ctx_time_stages(ctx, rq->trace.sampled); /* a traced request's child spans */
    explain_run x = {h, rq};
    rq->stopped = 0;
    if (r->method == RT_METHOD_INFER) { /* /v2: same path, the v2 parser and answer */
        rt_ctx_set_stop(ctx, explain_stop, &x); /* between chunks of its forward pass */
        st = rt_v2_handle(srv_version_model(v), r->model, vnum, rq->body.data, rq->body.len,
                          rq->v2_header, &h->json, ctx, out, &err);
        rt_ctx_set_stop(ctx, NULL, NULL);
        if (st == RT_OK)
            rq->v2_answer = rt_v2_answer_header_len(ctx);
    } else if (r->method == RT_METHOD_EXPLAIN && explain_over_budget(h, v, rq, ctx, &err)) {
        st = RT_ERR_LIMIT;
    } else {
        /* an :explain's between its chunks of rows; any run's between
         * chunks of its forward pass */
        rt_ctx_set_stop(ctx, explain_stop, &x);
        st = rt_json_handle(srv_version_model(v), r->method, rq->body.data ? rq->body.data : "",
                            rq->body.len, &h->json, ctx, out, &err);
        rt_ctx_set_stop(ctx, NULL, NULL);
    }
    if (rq->trace.sampled) {
        rq->marks = rt_ctx_stages(ctx);
        if (st == RT_OK && rt_ctx_batch(ctx))
            rq->instances = rt_batch_size(rt_ctx_batch(ctx)); /* predictd.instances */
    }
    if (st == RT_OK)
        srv_monitor_observe(srv_version_monitor(v), rt_ctx_batch(ctx));
    srv_version_release(v);
    rq->t_done = rt_time_now_ns();
    ms = ms_at(rq, rq->t_done);
    *code = st == RT_OK ? (ms > h->cfg.rest_api_timeout_in_ms ? 504 : 200) : srv_http_status(st);
    if (st != RT_OK && rq->stopped) { /* stopped: past its deadline, or no client */
        *code = rq->stopped == 1 ? 504 : 499;
        srv_metrics_stopped(h->p.metrics, rq->stopped == 1);
    }
    srv_metrics_request(h->p.metrics, r->model, vnum, r->method, (int)*code, ms / 1e3);
    if (*code != 200) {
        rt_buf_reset(out);
        if (*code == 504 && rq->stopped == 1)
            snprintf(err.msg, sizeof err.msg,
                     "deadline exceeded: the %s was stopped after %.0f ms, over "
                     "rest_api_timeout_in_ms=%d",
                     r->method == RT_METHOD_EXPLAIN ? "explanation" : "request", ms,
                     h->cfg.rest_api_timeout_in_ms);
        else if (*code == 504)
            snprintf(err.msg, sizeof err.msg,
                     "deadline exceeded: the request took %.0f ms, over "
                     "rest_api_timeout_in_ms=%d",
                     ms, h->cfg.rest_api_timeout_in_ms);
        else if (*code == 499)
            snprintf(err.msg, sizeof err.msg,
                     "the client closed the connection: the %s was stopped after %.0f ms",
                     r->method == RT_METHOD_EXPLAIN ? "explanation" : "request", ms);
        /* out of memory: the buffer's error sticks, and srv_http_send_computed
         * closes the connection rather than send half an answer */
        if (srv_http_put_error(out, err.msg) != 0)
            *code = 500;
    }
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
bool srv_http_draw_route(srv_http *h, const conn_state *cs, req *rq)
{
    tstate *t = thread_state(h);
    if (!t)
        return false;
    rq->pick.draw =
        cs->route_key ? srv_route_key_hash(cs->route_key, cs->route_key_len) : rt_rng_next(&t->rng);
    rq->pick.sample = rt_rng_next(&t->rng);
    return true;
}

enum MHD_Result srv_http_answer_infer(srv_http *h, struct MHD_Connection *conn, req *rq)
{
    rt_ctx *ctx = thread_ctx(h);
    if (!ctx)
        return srv_http_send_error(h, conn, 500, "out of memory");
    rq->code = 500;
    rt_buf_reset(&rq->resp);
    if (!rq->t_run) /* srv_http_on_request read it as it began the answer */
        rq->t_run = rt_time_now_ns();
    rq->sock = conn_socket(conn); /* the stop hook's (explain_stop) */
    compute_infer(h, rq, ctx, &rq->code, &rq->resp);
    return srv_http_send_computed(h, conn, rq->code, rq);
}

/* A worker runs a queued request, then hands the connection back. */
void srv_http_worker_job(void *fn_ctx, void *job, int worker)
{
    srv_http *h = fn_ctx;
    req *rq = job;
    srv_metrics_queue_depth(h->p.metrics, (long)srv_pool_depth(h->workers));
    srv_metrics_in_flight(h->p.metrics, 1, 0);
    rq->t_run = rt_time_now_ns();
    srv_metrics_queue_wait(h->p.metrics, false, rq->t_run - rq->t_admit);
    compute_infer(h, rq, h->wctx[worker], &rq->code, &rq->resp); /* sets rq->t_done */
    srv_metrics_in_flight(h->p.metrics, -1, (double)(rq->t_done - rq->t_run) / 1e9);
    if (rq->ticket) { /* its slot, with its wait in the queue (before the resume) */
        srv_admit_done_weighted(h->admit, rq->ticket, rq->weight, true, rq->t_run - rq->t_admit);
        rq->ticket = 0;
    }
    rq->done = true;
    MHD_resume_connection(rq->conn);
}

bool srv_http_heavy(const srv_http *h, const req *rq)
{
    return rq->route.method == RT_METHOD_EXPLAIN || rq->body.len > h->cfg.max_inline_request_bytes;
}

/* An offload thread runs a queued heavy request with its own scratch, then
 * hands the connection back, as a worker does. */
void srv_http_offload_job(void *fn_ctx, void *job, int thread)
{
    srv_http *h = fn_ctx;
    req *rq = job;
    srv_metrics_queue_depth(h->p.metrics, (long)srv_pool_depth(h->offload));
    srv_metrics_in_flight(h->p.metrics, 1, 0);
    rq->t_run = rt_time_now_ns();
    compute_infer(h, rq, h->octx[thread], &rq->code, &rq->resp); /* sets rq->t_done */
    srv_metrics_in_flight(h->p.metrics, -1, (double)(rq->t_done - rq->t_run) / 1e9);
    rq->done = true;
    MHD_resume_connection(rq->conn);
}

enum MHD_Result srv_http_offload(srv_http *h, struct MHD_Connection *conn, req *rq)
{
    rq->conn = conn;
    rq->h = h;
    rq->sock = conn_socket(conn); /* the stop hook's (explain_stop) */
    if (!srv_pool_reserve(h->offload)) {
        srv_metrics_rejected(h->p.metrics, "overloaded");
        srv_metrics_request(h->p.metrics,
                            srv_manager_has_model(h->mgr, rq->route.model) ? rq->route.model : "",
                            -1, rq->route.method, 429, srv_http_ms_since(rq->start) / 1e3);
        return srv_http_send_error(h, conn, 429,
                                   "overloaded: %d heavy inference requests (:explain, or "
                                   "bodies over max_inline_request_bytes=%zu) wait for the "
                                   "offload threads already; retry later",
                                   SRV_OFFLOAD_QUEUE_MAX, h->cfg.max_inline_request_bytes);
    }
    rq->t_admit = rt_time_now_ns();
    rq->code = 500;
    rt_buf_reset(&rq->resp);
    MHD_suspend_connection(conn);
    srv_pool_submit_reserved(h->offload, rq);
    srv_metrics_queue_depth(h->p.metrics, (long)srv_pool_depth(h->offload));
    return MHD_YES;
}

/* The message of srv_http_enqueue's 429s (by_limit: over the admission
 * limit, else the queue refused). */
void srv_http_busy_message(const srv_http *h, bool by_limit, char *msg, size_t len)
{
    if (by_limit)
        srv_admit_busy_message(h->cfg.max_queue_wait_ms, msg, len);
    else
        snprintf(msg, len,
                 "overloaded: the inference queue is full (max_queue_depth=%zu) or its oldest "
                 "request has waited over max_queue_wait_ms=%d; retry later",
                 (size_t)h->cfg.max_queue_depth, h->cfg.max_queue_wait_ms);
}

/* 429 at once, on the I/O thread: the request is not queued. The answer is
 * made once at start (srv_http_start) and shared: refusing must cost much
 * less than serving. */
static enum MHD_Result refuse(srv_http *h, struct MHD_Connection *conn, req *rq, bool by_limit)
{
    srv_metrics_rejected(h->p.metrics, "overloaded");
    srv_metrics_request(h->p.metrics,
                        srv_manager_has_model(h->mgr, rq->route.model) ? rq->route.model : "", -1,
                        rq->route.method, 429, srv_http_ms_since(rq->start) / 1e3);
    if (h->busy[by_limit])
        return srv_http_send_shared(h, conn, 429, h->busy[by_limit]);
    char msg[256];
    srv_http_busy_message(h, by_limit, msg, sizeof msg);
    return srv_http_send_error_msg(h, conn, 429, false, msg);
}

/* An :explain request's admission weight: the model rows it will evaluate
 * (rt_json_explain_rows: every input counted as differing from the
 * baseline), one unit per SRV_EXPLAIN_ROWS_PER_UNIT, at least 1 (the
 * admission caps it at its max). Estimated on the I/O thread against the
 * version the request names, else the default one; 1 when that is not
 * found or the body is refused (the worker answers the error). */
static size_t explain_weight(srv_http *h, req *rq)
{
    const srv_route *r = &rq->route;
    srv_version *v = NULL;
    rt_err err = {{0}};
    rt_ctx *ctx = thread_ctx(h);
    size_t rows = 0;
    if (!ctx || srv_manager_acquire(h->mgr, r->model, r->version, r->label, &v, &err) != RT_OK)
        return 1;
    if (rt_json_explain_rows(srv_version_model(v), rq->body.data ? rq->body.data : "",
                             rq->body.len, &h->json, ctx, &rows, &err) != RT_OK)
        rows = 0;
    srv_version_release(v);
    size_t units = (rows + SRV_EXPLAIN_ROWS_PER_UNIT - 1) / SRV_EXPLAIN_ROWS_PER_UNIT;
    return units ? units : 1;
}

enum MHD_Result srv_http_enqueue(srv_http *h, struct MHD_Connection *conn, req *rq)
{
    rq->conn = conn;
    rq->h = h;
    rq->sock = conn_socket(conn); /* the stop hook's (explain_stop) */
    size_t weight = h->admit && rq->route.method == RT_METHOD_EXPLAIN ? explain_weight(h, rq) : 1;
    uint64_t ticket = h->admit ? srv_admit_take_weighted(h->admit, weight) : 0;
    if (h->admit && !ticket)
        return refuse(h, conn, rq, true);
    if (!srv_pool_reserve(h->workers)) {
        if (ticket)
            srv_admit_done_weighted(h->admit, ticket, weight, false, 0);
        return refuse(h, conn, rq, false);
    }
    rq->ticket = ticket;
    rq->weight = weight;
    rq->t_admit = rt_time_now_ns();
    MHD_suspend_connection(conn);
    srv_pool_submit_reserved(h->workers, rq);
    srv_metrics_queue_depth(h->p.metrics, (long)srv_pool_depth(h->workers));
    return MHD_YES;
}

void srv_http_admit_release(srv_http *h, req *rq)
{
    if (!rq->ticket)
        return;
    /* no worker gave it back (normally the worker does): the slot only */
    srv_admit_done_weighted(h->admit, rq->ticket, rq->weight, false, 0);
    rq->ticket = 0;
}
