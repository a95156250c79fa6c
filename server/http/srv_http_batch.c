/*
 * srv_http_batch.c — cross-request batching (enable_batching): a :predict,
 * :classify or :regress body is parsed on the I/O thread into its own
 * rt_ctx (a parse error answers 400 at once), the connection is suspended
 * and the request joins a batch of its model version and merge key
 * (rt_merge_key: its rows' missing-input policy; srv_batch.c), whatever its
 * method and signature; a batch thread merges the batch, runs it once
 * (rt_merge_run), renders each request's answer by its own method and
 * resumes each connection. /v2 infer requests are parsed by the v2 parser
 * and share batches with the others. A gRPC Predict, ModelInfer, Classify
 * or Regress call (and each MultiInference task) joins the same batches
 * through srv_http_batch_call, its thread waiting for the batch thread's
 * answer.
 * The requests' contexts come from a small mutex-guarded pool.
 */
#include "srv_http_internal.h"
#include "srv_limits.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void ctx_give(srv_http *h, rt_ctx *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&h->pool_mu);
    if (h->n_pool == h->cap_pool && h->cap_pool < SRV_CTX_POOL_KEEP)
        (void)rt_grow(&h->pool, &h->cap_pool, h->n_pool + 1, sizeof *h->pool); /* else freed */
    if (h->n_pool < h->cap_pool) {
        h->pool[h->n_pool++] = c;
        c = NULL;
    }
    pthread_mutex_unlock(&h->pool_mu);
    rt_ctx_free(c);
}

/* ------------------------------------------------------------ batches */

/* What a gRPC call's thread waits on while its request is in a batch. */
typedef struct srv_batch_waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
} srv_batch_waiter;

/* A batched request is answered: its connection resumed, or its gRPC
 * thread woken (nothing of rq is touched after that). */
static void batch_answered(req *rq)
{
    srv_batch_waiter *w = rq->waiter;
    if (!w) {
        rq->done = true;
        MHD_resume_connection(rq->conn);
        return;
    }
    pthread_mutex_lock(&w->mu);
    w->done = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* The end of a batched request's computation, as compute_infer ends one:
 * the code from st and the time taken, the metrics, an error body. */
static void batch_finish(srv_http *h, req *rq, rt_status st, const rt_err *err)
{
    const srv_route *r = &rq->route;
    double ms = srv_http_ms_since(rq->start);
    if (rq->trace.sampled)
        rq->t_done = rt_time_now_ns();
    rq->code = st == RT_OK ? (ms > h->cfg.rest_api_timeout_in_ms ? 504 : 200) : srv_http_status(st);
    if (st == RT_OK)
        srv_monitor_observe(srv_version_monitor(rq->ver), rt_ctx_batch(rq->ctx));
    if (!rq->waiter) /* a gRPC call's line is its own (srv_metrics_request_via) */
        srv_metrics_request(h->p.metrics, r->model, srv_version_number(rq->ver), r->method,
                            (int)rq->code, ms / 1e3);
    rq->v2_answer = rq->code == 200 && rq->parsed.v2 ? rt_v2_answer_header_len(rq->ctx) : 0;
    if (rq->code != 200) {
        char msg[RT_ERR_MAX + 128];
        if (rq->code == 504)
            snprintf(msg, sizeof msg,
                     "deadline exceeded: the request took %.0f ms, over "
                     "rest_api_timeout_in_ms=%d",
                     ms, h->cfg.rest_api_timeout_in_ms);
        else
            snprintf(msg, sizeof msg, "%s", err->msg);
        rt_buf_reset(&rq->resp);
        /* out of memory: the buffer's error sticks, and srv_http_send_computed
         * closes the connection rather than send half an answer */
        if (srv_http_put_error(&rq->resp, msg) != 0)
            rq->code = 500;
    }
}

/* Lets go of what a batched request held (its version and context). */
static void batch_release(srv_http *h, req *rq)
{
    if (!rq->waiter) /* a gRPC call's version is its caller's */
        srv_version_release(rq->ver);
    rq->ver = NULL;
    ctx_give(h, rq->ctx);
    rq->ctx = NULL;
}

/* Whether one of the n requests is traced (the merged run's stage clock). */
static bool any_sampled(req *const *rqs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (rqs[i]->trace.sampled)
            return true;
    return false;
}

/* The parse of a batched request's body by its method: /v2 infer by the v2
 * parser, the others by rt_merge_parse. */
static rt_status parse_body(srv_http *h, const rt_model *m, const char *model, int64_t served,
                            rt_method method, const char *body, size_t len, size_t v2_header,
                            rt_ctx *c, rt_parsed *pr, rt_err *err)
{
    if (method == RT_METHOD_INFER) /* /v2: may share a batch with /v1 */
        return rt_v2_parse(m, model, served, body, len, v2_header, &h->json, c, pr, err);
    return rt_merge_parse(m, method, body ? body : "", len, &h->json, c, pr, err);
}

/* A batch thread runs one batch: requests past their deadline answer 504
 * without running; the rest are merged and run once, or, when there is
 * only one or the merged run fails (one request's input is invalid), run
 * one by one, so that each gets exactly its own answer. */
void srv_http_batch_job(void *fn_ctx, void *const *jobs, size_t n, int thread)
{
    srv_http *h = fn_ctx;
    int64_t t0 = rt_time_now_ns();
    srv_metrics_batch_queue(h->p.metrics, (long)srv_batcher_depth(h->batcher));
    srv_metrics_in_flight(h->p.metrics, (int)n, 0);
    rt_ctx **ctxs = malloc(n * sizeof *ctxs);
    rt_parsed *parsed = malloc(n * sizeof *parsed);
    req **live = malloc(n * sizeof *live);
    size_t k = 0, instances = 0;
    for (size_t i = 0; i < n; i++) {
        req *rq = jobs[i];
        double ms = srv_http_ms_since(rq->start);
        if (rq->deadline && t0 > rq->deadline) {
            /* a gRPC call whose deadline passed while it waited (its client
             * got DEADLINE_EXCEEDED from the core): not run */
            rq->code = 504;
            srv_metrics_batch_expired(h->p.metrics);
            rt_buf_reset(&rq->resp);
            if (srv_http_put_error(&rq->resp, "deadline exceeded: the call's deadline passed "
                                              "while it waited for its batch") != 0)
                rq->code = 500;
            continue;
        }
        if (rq->gone && atomic_load_explicit(rq->gone, memory_order_relaxed)) {
            /* a gRPC call its client cancelled while it waited (the core
             * already answered it CANCELLED): not run, as REST's 499 */
            rq->code = 499;
            srv_metrics_batch_cancelled(h->p.metrics);
            rt_buf_reset(&rq->resp);
            if (srv_http_put_error(&rq->resp, "cancelled: the client cancelled the call "
                                              "while it waited for its batch") != 0)
                rq->code = 500;
            continue;
        }
        if (ms > h->cfg.rest_api_timeout_in_ms) {
            /* It waited past its deadline: not run (as in compute_infer). */
            char msg[160];
            snprintf(msg, sizeof msg,
                     "deadline exceeded: the request waited %.0f ms, over "
                     "rest_api_timeout_in_ms=%d",
                     ms, h->cfg.rest_api_timeout_in_ms);
            rq->code = 504;
            if (!rq->waiter)
                srv_metrics_request(h->p.metrics, rq->route.model, -1, rq->route.method, 504,
                                    ms / 1e3);
            rt_buf_reset(&rq->resp);
            /* out of memory: the buffer's error sticks, and srv_http_send_computed
             * closes the connection rather than send half an answer */
            if (srv_http_put_error(&rq->resp, msg) != 0)
                rq->code = 500;
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
    for (size_t i = 0; i < n; i++) { /* a traced request's batch span */
        req *rq = jobs[i];
        srv_metrics_queue_wait(h->p.metrics, true, t0 - rq->t_admit);
        rq->t_batch = t0;
        rq->batch_size = instances;
        rq->batch_requests = k;
    }
    bool merged = false, fallback = false;
    if (k >= 2 && live && ctxs && parsed) {
        const rt_model *m = srv_version_model(live[0]->ver);
        rt_err err = {{0}};
        rt_ctx_time_stages(h->bctx[thread], any_sampled(live, k));
        merged = rt_merge_run(m, h->bctx[thread], ctxs, parsed, k, &err) == RT_OK;
        fallback = !merged;
        rt_stage_marks mk = rt_ctx_stages(h->bctx[thread]);
        size_t start = 0;
        for (size_t i = 0; merged && i < k; i++) {
            req *lr = live[i];
            if (lr->trace.sampled) {
                lr->marks = mk;
                lr->t_render = rt_time_now_ns();
            }
            rt_status st = rt_merge_render(m, h->bctx[thread], start, &parsed[i], &lr->resp);
            rt_err e2 = {{0}};
            if (st != RT_OK && st != RT_ERR_NOMEM) { /* its own error: run alone */
                rt_buf_reset(&lr->resp);
                st = rt_merge_run_parsed(m, lr->ctx, &parsed[i], &lr->resp, &e2);
            } else if (st != RT_OK) {
                rt_err_set(&e2, st, "rendering the answer: %s", rt_err_status_str(st));
            }
            if (lr->trace.sampled)
                lr->marks.rendered = rt_time_now_ns();
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
                           ? rt_merge_run_parsed(srv_version_model(rq->ver), rq->ctx, &rq->parsed,
                                                &rq->resp, &err)
                           : rt_err_set(&err, RT_ERR_NOMEM, "batch: out of memory");
        if (rq->trace.sampled) /* run alone: its own context's clock */
            rq->marks = rt_ctx_stages(rq->ctx);
        batch_finish(h, rq, st, &err);
    }
    if (k > 0)
        srv_metrics_batch(h->p.metrics, instances, k, fallback);
    free(ctxs);
    free(parsed);
    free(live);
    srv_metrics_in_flight(h->p.metrics, -(int)n, srv_http_ms_since(t0) / 1e3);
    for (size_t i = 0; i < n; i++) {
        req *rq = jobs[i];
        batch_release(h, rq);
        batch_answered(rq);
    }
}

/* A :predict, :classify or :regress request (or a /v2 infer) with batching
 * on: parse here, then join a batch (the
 * connection suspended until a batch thread answers it). Empty requests and
 * requests over max_batch_size run alone, here; a full queue answers 429. */
enum MHD_Result srv_http_batch_enter(srv_http *h, struct MHD_Connection *conn, req *rq)
{
    const srv_route *r = &rq->route;
    rt_err err = {{0}};
    rt_status st = srv_manager_acquire_routed(h->mgr, r->model, r->version, r->label, &rq->pick,
                                              &rq->ver, &err);
    if (st != RT_OK) {
        unsigned code = srv_http_status(st);
        srv_metrics_request(h->p.metrics, srv_manager_has_model(h->mgr, r->model) ? r->model : "",
                            -1, r->method, (int)code, srv_http_ms_since(rq->start) / 1e3);
        return srv_http_send_error(h, conn, code, "%s", err.msg);
    }
    const rt_model *m = srv_version_model(rq->ver);
    rq->served = srv_version_number(rq->ver);
    rq->ctx = ctx_take(h);
    if (rq->trace.sampled)
        rq->t_run = rt_time_now_ns(); /* its parse begins */
    rt_ctx_time_stages(rq->ctx, rq->trace.sampled);
    if (!rq->ctx)
        st = rt_err_set(&err, RT_ERR_NOMEM, "out of memory");
    else
        st = parse_body(h, m, r->model, rq->served, r->method, rq->body.data, rq->body.len,
                        rq->v2_header, rq->ctx, &rq->parsed, &err);
    if (st == RT_OK && rq->parsed.n >= 1 && rq->parsed.n <= h->batch.max_batch_size) {
        rq->conn = conn;
        rq->h = h;
        /* Suspended before it can be answered: a batch thread may resume
         * it as soon as it is submitted. */
        MHD_suspend_connection(conn);
        rq->t_admit = rt_time_now_ns(); /* parsed; its wait for a batch begins */
        rq->batched = true;
        if (srv_batcher_submit(h->batcher, m, rt_merge_key(&rq->parsed), rq->parsed.n, rq) ==
            SRV_BATCH_QUEUED) {
            srv_metrics_batch_queue(h->p.metrics, (long)srv_batcher_depth(h->batcher));
            return MHD_YES;
        }
        /* Not taken: 429, sent when libmicrohttpd resumes the connection. */
        srv_metrics_rejected(h->p.metrics, "overloaded");
        srv_metrics_request(h->p.metrics, r->model, -1, r->method, 429,
                            srv_http_ms_since(rq->start) / 1e3);
        rq->code = 429;
        rq->served = -1;
        char msg[160];
        snprintf(msg, sizeof msg,
                 "overloaded: %zu batches are already waiting (max_enqueued_batches); "
                 "retry later",
                 h->batch.max_enqueued_batches);
        rt_buf_reset(&rq->resp);
        /* out of memory: the buffer's error sticks, and srv_http_send_computed
         * closes the connection rather than send half an answer */
        if (srv_http_put_error(&rq->resp, msg) != 0)
            rq->code = 500;
        batch_release(h, rq);
        rq->done = true;
        MHD_resume_connection(conn);
        return MHD_YES;
    }
    if (st == RT_OK) {
        /* Empty, or larger than a batch: it runs alone, here. */
        int64_t t0 = rt_time_now_ns();
        srv_metrics_in_flight(h->p.metrics, 1, 0);
        st = rt_merge_run_parsed(m, rq->ctx, &rq->parsed, &rq->resp, &err);
        srv_metrics_in_flight(h->p.metrics, -1, srv_http_ms_since(t0) / 1e3);
    }
    if (rq->trace.sampled && rq->ctx)
        rq->marks = rt_ctx_stages(rq->ctx);
    batch_finish(h, rq, st, &err);
    batch_release(h, rq);
    return srv_http_send_computed(h, conn, rq->code, rq);
}

bool srv_call_stop(void *arg)
{
    srv_call_watch *w = arg;
    if (w->deadline && rt_time_now_ns() > w->deadline)
        w->stopped = 1;
    else if (w->gone && atomic_load_explicit(w->gone, memory_order_relaxed))
        w->stopped = 2;
    return w->stopped != 0;
}

bool srv_http_batching(const srv_http *h)
{
    return h && h->batcher;
}

bool srv_http_batched_method(rt_method method)
{
    return method == RT_METHOD_PREDICT || method == RT_METHOD_CLASSIFY ||
           method == RT_METHOD_REGRESS || method == RT_METHOD_INFER;
}

unsigned srv_http_batch_call(srv_http *h, srv_version *v, const char *model, rt_method method,
                             const char *body, size_t len, size_t v2_header, int64_t start,
                             int64_t deadline, const _Atomic int *gone, rt_buf *ans,
                             size_t *v2_answer)
{
    *v2_answer = 0;
    rt_buf_reset(ans);
    req *rq = calloc(1, sizeof *rq);
    srv_batch_waiter w = {.done = false};
    if (!rq || !(rq->ctx = ctx_take(h))) {
        free(rq);
        if (srv_http_put_error(ans, "out of memory") != 0)
            rt_buf_reset(ans);
        return 500;
    }
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    rq->waiter = &w;
    rq->ver = v;
    rq->served = srv_version_number(v);
    rq->start = start;
    rq->deadline = deadline;
    rq->gone = gone;
    rq->route.kind = SRV_ROUTE_INFER;
    rq->route.method = method;
    snprintf(rq->route.model, sizeof rq->route.model, "%s", model);
    rt_buf_init(&rq->resp);
    const rt_model *m = srv_version_model(v);
    rt_err err = {{0}};
    rt_status st = parse_body(h, m, model, rq->served, method, body, len, v2_header, rq->ctx,
                              &rq->parsed, &err);
    bool queued = false;
    if (st == RT_OK && rq->parsed.n >= 1 && rq->parsed.n <= h->batch.max_batch_size) {
        rq->t_admit = rt_time_now_ns();
        rq->batched = true;
        queued = srv_batcher_submit(h->batcher, m, rt_merge_key(&rq->parsed), rq->parsed.n, rq) ==
                 SRV_BATCH_QUEUED;
        if (queued) {
            srv_metrics_batch_queue(h->p.metrics, (long)srv_batcher_depth(h->batcher));
            pthread_mutex_lock(&w.mu);
            while (!w.done)
                pthread_cond_wait(&w.cv, &w.mu);
            pthread_mutex_unlock(&w.mu);
        } else {
            srv_metrics_rejected(h->p.metrics, "overloaded");
            rq->code = 429;
            char msg[160];
            snprintf(msg, sizeof msg,
                     "overloaded: %zu batches are already waiting (max_enqueued_batches); "
                     "retry later",
                     h->batch.max_enqueued_batches);
            if (srv_http_put_error(&rq->resp, msg) != 0)
                rq->code = 500;
            batch_release(h, rq);
        }
    } else {
        srv_call_watch cw = {deadline, gone, 0};
        if (st == RT_OK) { /* empty, or larger than a batch: alone, here */
            int64_t t0 = rt_time_now_ns();
            srv_metrics_in_flight(h->p.metrics, 1, 0);
            rt_ctx_set_stop(rq->ctx, srv_call_stop, &cw); /* between chunks of its rows */
            st = rt_merge_run_parsed(m, rq->ctx, &rq->parsed, &rq->resp, &err);
            rt_ctx_set_stop(rq->ctx, NULL, NULL);
            srv_metrics_in_flight(h->p.metrics, -1, srv_http_ms_since(t0) / 1e3);
        }
        batch_finish(h, rq, st, &err);
        if (st != RT_OK && cw.stopped) { /* the core answered the client already */
            srv_metrics_stopped(h->p.metrics, cw.stopped == 1);
            rq->code = cw.stopped == 1 ? 504 : 499;
            rt_buf_reset(&rq->resp);
            if (srv_http_put_error(&rq->resp, cw.stopped == 1
                                                  ? "deadline exceeded: the call was stopped "
                                                    "during its run"
                                                  : "cancelled: the client cancelled the call "
                                                    "during its run") != 0)
                rq->code = 500;
        }
        batch_release(h, rq);
    }
    unsigned code = rq->code;
    *v2_answer = rq->v2_answer;
    rt_buf tmp = *ans; /* the answer's bytes change hands */
    *ans = rq->resp;
    rq->resp = tmp;
    rt_buf_free(&rq->resp);
    pthread_cond_destroy(&w.cv);
    pthread_mutex_destroy(&w.mu);
    free(rq);
    return code;
}
