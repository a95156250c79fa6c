/*
 * srv_grpc.c — the gRPC front door on the gRPC core C API (grpc/grpc.h;
 * built and tested with Debian 12's libgrpc 1.51, core 29.0.0). The one
 * file of predictd that calls it: a server on one port, one completion
 * queue shared by a pool of threads, every method registered with its
 * request message read before the call is handed over
 * (GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER), a few calls requested per
 * method at a time. A thread that takes a call runs its method
 * (srv_grpc_methods.c: bytes in, bytes and a status out) on its own
 * rt_ctx, sends the answer and the status in one batch and, when that
 * batch completes, requests the next call in the same slot.
 *
 * Limits: a request message over max_request_bytes is refused by the core
 * (RESOURCE_EXHAUSTED) once it has received it whole (docs/grpc.md, Not
 * done yet); a call whose grpc-timeout
 * passed before its method ran (it waited in the core's queue for a free
 * thread, or the client sent it late) gets DEADLINE_EXCEEDED without
 * running, counted as REST's 504 of a request that waited past its
 * deadline. An inference call's close op starts before its method runs:
 * when the client cancels (or the core ends the call at its deadline) its
 * completion marks the call gone (srv_grpc_env.gone), so a call waiting for
 * its batch is not run and one running alone stops between chunks of its
 * forward pass. A call cancelled before its message was read (its deadline
 * passed while every thread was busy: the core reads calls on the threads
 * that wait for them) is not run either. An
 * inference call (a method that needs the infer scope: Predict, Classify,
 * Regress, MultiInference, ModelInfer) takes a slot of REST's admission limit
 * (max_queue_depth with max_queue_wait_ms, server/sched/srv_admit.c) for
 * its run, one unit as a REST :predict; past the limit it is refused at once
 * with RESOURCE_EXHAUSTED and REST's 429 message, never run. Each such
 * refusal is counted as REST's are (predictd_rejected_requests_total
 * {reason="overloaded"}, and under protocol="grpc" with code 429).
 *
 * Streams: a method marked `stream` (Health/Watch) sends its first answer
 * and stays open; one watcher thread runs it again on the same request every
 * SRV_GRPC_WATCH_MS and sends the answer when its bytes changed, until the
 * client leaves (the call's close op completes) or the server stops (then
 * each stream gets its status, UNAVAILABLE).
 *
 * TLS: with tls_cert_file (and tls_client_ca_file: mutual TLS, a client
 * certificate from that CA required) the port speaks only TLS, from the same
 * files as REST's HTTPS. The core asks for the certificate at each
 * handshake (a config fetcher); the files are read again after
 * srv_grpc_tls_reload (the daemon's SIGHUP, once REST's reload accepted the
 * new pair), so both doors rotate together. With TF Serving's
 * --ssl_config_file the daemon hands over PEM contents instead of paths
 * (tls_inline): the handshakes use them, and srv_grpc_tls_set_pem replaces
 * them (the daemon's SIGHUP, once the file was read again and checked).
 *
 * Stop: the server stops taking calls (new ones get UNAVAILABLE from the
 * core), the calls in flight finish; then, or after SRV_GRPC_STOP_GRACE_MS
 * when some have not, every call left is cancelled (a client that opened a
 * stream and never sent, or a connection that never made a call, holds
 * nothing after that), the queue drains and the threads end.
 */
#include "srv_grpc_internal.h"
#include "srv_limits.h"
#include "srv_sec.h"

#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

#include <fcntl.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* calls requested at once per method and thread */
#define SLOTS_PER_THREAD 2
#define SRV_GRPC_STOP_GRACE_MS 5000
/* how often the watcher works out the streaming calls' answers again */
#define SRV_GRPC_WATCH_MS 200

struct srv_grpc;

typedef struct slot {
    struct srv_grpc *g;
    size_t method; /* n_methods: a call to a method not served (UNIMPLEMENTED) */
    grpc_call_details cd; /* that call's method */
    /* 0: waiting for a call, 1: answer sent, 2: its batch failed. A slot
     * passes between threads through the completion queue: the thread that
     * hands it to the core stores its state last (release), the one that
     * takes its completion loads it first (acquire), so the slot's fields are
     * ordered in C's terms, not only by the core's locks (which
     * ThreadSanitizer cannot see). */
    _Atomic int state;
    grpc_call *call;
    gpr_timespec deadline;
    grpc_metadata_array md;
    grpc_byte_buffer *payload;
    grpc_byte_buffer *answer;
    grpc_slice details;
    int cancelled;
    /* A server-streaming call (a method with `stream`, Health/Watch): the
     * state is 3 while it is open. Its answer is worked out again by the
     * watcher (watch_main) from its request, and sent when its bytes
     * change; its close op has the tag &close_tag. All under g->mu. */
    bool w_active;  /* open, followed by the watcher */
    bool w_sending; /* a message or the status is in flight */
    bool w_closed;  /* its close op completed: the call ended */
    bool w_final;   /* its status was sent (the server stops) */
    char close_tag;
    rt_buf w_req, w_last; /* its request; the last answer sent */
    grpc_byte_buffer *w_msg; /* the message in flight */
    srv_grpc_trace tr;       /* a unary call's trace (srv_grpc_trace.c) */
    grpc_metadata tmd[2];    /* its traceparent and tracestate, sent back */
    /* A unary inference call is watched: its close op
     * (tag &close_tag) starts before its method runs, and completes when
     * the client cancels (or the core ends the call at its deadline) or
     * after the answer; its completion sets gone (the method's env.gone:
     * a call waiting for its batch is then not run). The slot finishes
     * when both its close op and its answer's batch completed (pending
     * counts them down). */
    bool watched;
    _Atomic int gone;
    _Atomic int pending;
} slot;

struct srv_grpc {
    grpc_server *server;
    grpc_completion_queue *cq;
    const srv_grpc_method *methods;
    size_t n_methods;
    void **handles; /* per method */
    slot *slots;
    size_t n_slots;
    pthread_t *threads;
    int n_threads;
    int port;
    _Atomic int stopping;
    int shutdown_tag; /* its address is the tag */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool shut_done;
    int in_flight; /* calls taken and not finished (under mu) */
    srv_manager *mgr;
    const _Atomic int *draining;
    srv_metrics *metrics;
    srv_auth *auth;
    srv_admit *admit; /* may be NULL */
    int max_queue_wait_ms;
    rt_json_params json;
    srv_tracer *tracer; /* REST's (srv_http_tracer), or NULL */
    srv_http *http;     /* REST's front (batcher, logs, shadow), or NULL */
    rt_status (*reload)(void *arg, const char *models, size_t len, rt_err *err);
    void *reload_arg;
    _Atomic uint64_t seed;
    /* TLS (NULL cert: plain) */
    char *tls_cert, *tls_key, *tls_ca;
    bool tls_inline;          /* the three hold PEM contents, not paths (under tls_mu) */
    _Atomic unsigned tls_gen; /* bumped by srv_grpc_tls_reload */
    unsigned tls_loaded;      /* the generation the core has (under tls_mu) */
    bool tls_have;            /* the core has a pair (under tls_mu) */
    pthread_mutex_t tls_mu;
    /* the watcher of streaming calls (under mu) */
    pthread_t watcher;
    bool watcher_on, w_quit;
    pthread_cond_t w_cv;
};

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

static int request_call(slot *s)
{
    grpc_metadata_array_init(&s->md);
    s->call = NULL;
    s->tr.ctx.active = s->tr.ctx.sampled = false;
    s->payload = NULL;
    s->watched = false;
    bool generic = s->method == s->g->n_methods;
    if (generic)
        grpc_call_details_init(&s->cd);
    /* the slot's writes before the core has it (see slot.state) */
    atomic_store_explicit(&s->state, 0, memory_order_release);
    grpc_call_error e;
    if (generic) {
        e = grpc_server_request_call(s->g->server, &s->call, &s->cd, &s->md, s->g->cq, s->g->cq,
                                     s);
        if (e != GRPC_CALL_OK)
            grpc_call_details_destroy(&s->cd);
    } else {
        e = grpc_server_request_registered_call(s->g->server, s->g->handles[s->method], &s->call,
                                                &s->deadline, &s->md, &s->payload, s->g->cq,
                                                s->g->cq, s);
    }
    if (e != GRPC_CALL_OK) {
        grpc_metadata_array_destroy(&s->md);
        return -1;
    }
    return 0;
}

/* The request message's bytes, contiguous (a copy: a byte buffer is slices). */
static int read_payload(grpc_byte_buffer *bb, rt_buf *in)
{
    if (!bb)
        return 0;
    grpc_byte_buffer_reader r;
    if (!grpc_byte_buffer_reader_init(&r, bb))
        return -1;
    grpc_slice sl;
    while (grpc_byte_buffer_reader_next(&r, &sl)) {
        rt_buf_append(in, GRPC_SLICE_START_PTR(sl), GRPC_SLICE_LENGTH(sl));
        grpc_slice_unref(sl);
    }
    grpc_byte_buffer_reader_destroy(&r);
    return rt_buf_failed(in);
}

/* The value of the call's metadata key (its first), NUL-terminated in buf
 * (cut to cap - 1 bytes), or NULL when the call has none. */
static const char *md_value(const slot *s, const char *key, char *buf, size_t cap)
{
    for (size_t i = 0; i < s->md.count; i++) {
        const grpc_metadata *m = &s->md.metadata[i];
        if (grpc_slice_str_cmp(m->key, key) == 0) {
            size_t n = GRPC_SLICE_LENGTH(m->value);
            if (n >= cap)
                n = cap - 1;
            memcpy(buf, GRPC_SLICE_START_PTR(m->value), n);
            buf[n] = '\0';
            return buf;
        }
    }
    return NULL;
}

/* The bearer token check of the call's `authorization` metadata for the
 * method's scope, with REST's messages: SRV_GRPC_OK or the status. */
static int check_token(slot *s, unsigned scope, char *msg)
{
    if (!s->g->auth && scope == SRV_SCOPE_ADMIN) {
        /* a config from the network only with a token that may give one */
        snprintf(msg, SRV_GRPC_MSG, "this method changes the served models: it needs a bearer "
                 "token with the 'admin' scope, and auth_tokens_file is not set "
                 "(docs/security.md)");
        return SRV_GRPC_PERMISSION_DENIED;
    }
    if (!s->g->auth || !scope)
        return SRV_GRPC_OK;
    char value[1024]; /* a longer one is cut: too long to be a token, invalid */
    const char *ah = md_value(s, "authorization", value, sizeof value);
    switch (srv_auth_check(s->g->auth, ah, scope)) {
    case SRV_AUTH_OK: return SRV_GRPC_OK;
    case SRV_AUTH_MISSING:
        snprintf(msg, SRV_GRPC_MSG, "this request needs an Authorization: Bearer token");
        return SRV_GRPC_UNAUTHENTICATED;
    case SRV_AUTH_INVALID:
        snprintf(msg, SRV_GRPC_MSG, "the bearer token is not valid");
        return SRV_GRPC_UNAUTHENTICATED;
    case SRV_AUTH_SCOPE: {
        char names[64];
        srv_auth_scope_names(scope, names, sizeof names);
        snprintf(msg, SRV_GRPC_MSG, "the bearer token lacks the '%s' scope", names);
        return SRV_GRPC_PERMISSION_DENIED;
    }
    }
    return SRV_GRPC_UNAUTHENTICATED;
}

/* The metrics' method of an inference method (by its label). */
static rt_method method_kind(const srv_grpc_method *m)
{
    return !strcmp(m->label, "Classify")         ? RT_METHOD_CLASSIFY
           : !strcmp(m->label, "Regress")        ? RT_METHOD_REGRESS
           : !strcmp(m->label, "ModelInfer")     ? RT_METHOD_INFER
           : !strcmp(m->label, "MultiInference") ? RT_METHOD_MULTI_INFERENCE
                                                 : RT_METHOD_PREDICT;
}

/* The call's deadline on rt_time_now_ns's clock, 0: none (infinite, or
 * over a year away: as good as none, and no overflow). */
static int64_t deadline_ns(gpr_timespec d)
{
    if (gpr_time_cmp(d, gpr_inf_future(d.clock_type)) == 0)
        return 0;
    gpr_timespec left = gpr_time_sub(d, gpr_now(d.clock_type));
    if (left.tv_sec > 366 * 86400)
        return 0;
    return rt_time_now_ns() + (int64_t)left.tv_sec * 1000000000 + left.tv_nsec;
}

/* Runs the method on env with an admission slot when it is an inference
 * method and there is a limit: RESOURCE_EXHAUSTED (REST's 429, counted the
 * same way) when the limit is reached, without running it. */
static int run_admitted(struct srv_grpc *g, const srv_grpc_method *m, srv_grpc_env *env,
                        const rt_buf *in, rt_buf *out, char *msg)
{
    bool gated = g->admit && m->scope == SRV_SCOPE_INFER;
    int64_t t0 = rt_time_now_ns();
    uint64_t ticket = gated ? srv_admit_take(g->admit) : 0;
    if (gated && !ticket) {
        srv_admit_busy_message(g->max_queue_wait_ms, msg, SRV_GRPC_MSG);
        srv_metrics_rejected(g->metrics, "overloaded");
        srv_metrics_request_via(g->metrics, SRV_PROTO_GRPC, "", -1, method_kind(m), 429,
                                (double)(rt_time_now_ns() - t0) / 1e9);
        return SRV_GRPC_RESOURCE_EXHAUSTED;
    }
    int code = m->fn(env, (const uint8_t *)(in->data ? in->data : ""), in->len, out, msg);
    if (ticket) /* no queue wait: the call runs on the thread that took it */
        srv_admit_done(g->admit, ticket, true, 0);
    return code;
}

static grpc_byte_buffer *buffer_of(const void *p, size_t n)
{
    grpc_slice sl = grpc_slice_from_copied_buffer(p ? p : "", n);
    grpc_byte_buffer *b = grpc_raw_byte_buffer_create(&sl, 1);
    grpc_slice_unref(sl);
    return b;
}

/* Under g->mu: sends the streaming call's next message (msg) or, with msg
 * NULL, its status (the server stops). */
static void stream_send(slot *s, const rt_buf *msg)
{
    grpc_op op;
    memset(&op, 0, sizeof op);
    if (msg) {
        s->w_msg = buffer_of(msg->data, msg->len);
        op.op = GRPC_OP_SEND_MESSAGE;
        op.data.send_message.send_message = s->w_msg;
    } else {
        grpc_slice_unref(s->details);
        s->details = grpc_slice_from_copied_string("the server is stopping");
        op.op = GRPC_OP_SEND_STATUS_FROM_SERVER;
        op.data.send_status_from_server.status = GRPC_STATUS_UNAVAILABLE;
        op.data.send_status_from_server.status_details = &s->details;
        s->w_final = true;
    }
    s->w_sending = true;
    if (grpc_call_start_batch(s->call, &op, 1, s, NULL) != GRPC_CALL_OK) {
        s->w_sending = false;
        grpc_call_cancel(s->call, NULL); /* its close op completes */
    }
}

/* A streaming call's first answer: the close op, then the initial metadata
 * and the first message; the watcher sends the next ones. True (the slot
 * is the completions' now), or false when nothing started. */
static bool stream_start(slot *s, const rt_buf *in, const rt_buf *out)
{
    struct srv_grpc *g = s->g;
    s->details = grpc_empty_slice(); /* the status's, if the server stops */
    rt_buf_reset(&s->w_req);
    rt_buf_reset(&s->w_last);
    rt_buf_append(&s->w_req, in->data ? in->data : "", in->len);
    rt_buf_append(&s->w_last, out->data ? out->data : "", out->len);
    s->answer = NULL;
    if (rt_buf_failed(&s->w_req) || rt_buf_failed(&s->w_last)) {
        grpc_call_cancel_with_status(s->call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory",
                                     NULL);
        return false;
    }
    grpc_op close;
    memset(&close, 0, sizeof close);
    close.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    close.data.recv_close_on_server.cancelled = &s->cancelled;
    grpc_op ops[2];
    memset(ops, 0, sizeof ops);
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    pthread_mutex_lock(&g->mu);
    s->w_msg = buffer_of(out->data, out->len);
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = s->w_msg;
    s->w_active = true;
    s->w_closed = s->w_final = false;
    s->w_sending = true;
    atomic_store_explicit(&s->state, 3, memory_order_release);
    bool ok = grpc_call_start_batch(s->call, &close, 1, &s->close_tag, NULL) == GRPC_CALL_OK;
    if (ok && grpc_call_start_batch(s->call, ops, 2, s, NULL) != GRPC_CALL_OK) {
        s->w_sending = false; /* the close op ends it */
        grpc_call_cancel(s->call, NULL);
    }
    if (!ok) {
        s->w_active = s->w_sending = false;
        grpc_byte_buffer_destroy(s->w_msg);
        s->w_msg = NULL;
        grpc_call_cancel(s->call, NULL);
    }
    pthread_mutex_unlock(&g->mu);
    return ok;
}

/* A completion of a streaming call (close: its close op, else a send):
 * true when the call is over (the caller finishes the slot). */
static bool stream_done(slot *s, bool close)
{
    struct srv_grpc *g = s->g;
    pthread_mutex_lock(&g->mu);
    if (close) {
        s->w_closed = true;
    } else {
        s->w_sending = false;
        if (s->w_msg)
            grpc_byte_buffer_destroy(s->w_msg);
        s->w_msg = NULL;
    }
    bool over = s->w_closed && !s->w_sending;
    if (over)
        s->w_active = false;
    else
        pthread_cond_broadcast(&g->w_cv); /* a change may wait to be sent */
    pthread_mutex_unlock(&g->mu);
    return over;
}

/* The watcher: every SRV_GRPC_WATCH_MS (and when woken) works out each open
 * streaming call's answer again from its request and sends it when its
 * bytes changed; once the server stops, sends each its status instead. */
static void *watch_main(void *arg)
{
    struct srv_grpc *g = arg;
    rt_ctx *ctx = rt_ctx_new();
    rt_buf out;
    rt_buf_init(&out);
    pthread_mutex_lock(&g->mu);
    while (!g->w_quit) {
        bool stopping = atomic_load(&g->stopping);
        for (size_t i = 0; ctx && i < g->n_slots; i++) {
            slot *s = &g->slots[i];
            if (!s->w_active || s->w_closed || s->w_sending || s->w_final)
                continue;
            if (stopping) {
                stream_send(s, NULL);
                continue;
            }
            char msg[SRV_GRPC_MSG];
            srv_grpc_env env = {.mgr = g->mgr, .draining = g->draining, .metrics = g->metrics,
                                .json = g->json, .ctx = ctx};
            rt_buf_reset(&out);
            int code = g->methods[s->method].fn(&env, (const uint8_t *)s->w_req.data,
                                                s->w_req.len, &out, msg);
            if (code != SRV_GRPC_OK || rt_buf_failed(&out) ||
                (out.len == s->w_last.len && !memcmp(out.data ? out.data : "",
                                                     s->w_last.data ? s->w_last.data : "",
                                                     out.len)))
                continue;
            rt_buf_reset(&s->w_last);
            rt_buf_append(&s->w_last, out.data ? out.data : "", out.len);
            stream_send(s, &out);
        }
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += SRV_GRPC_WATCH_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L)
            until.tv_sec++, until.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&g->w_cv, &g->mu, &until);
    }
    pthread_mutex_unlock(&g->mu);
    rt_buf_free(&out);
    rt_ctx_free(ctx);
    return NULL;
}

/* With a tracer, the trace context of a unary call to a method served,
 * from its traceparent and tracestate metadata. */
static void trace_begin(slot *s)
{
    struct srv_grpc *g = s->g;
    s->tr.ctx.active = s->tr.ctx.sampled = false;
    if (!g->tracer || s->method == g->n_methods || g->methods[s->method].stream)
        return;
    char tp[64], ts[SRV_TRACE_STATE_MAX + 1];
    srv_grpc_trace_begin(g->tracer, g->methods[s->method].path,
                         md_value(s, "traceparent", tp, sizeof tp),
                         md_value(s, "tracestate", ts, sizeof ts), &s->tr);
}

/* A traced call's initial metadata: traceparent (and the tracestate it
 * came with), as REST's answer headers; the values live in the slot until
 * the batch completes. */
static void trace_metadata(slot *s, grpc_op *op)
{
    if (!s->tr.ctx.active)
        return;
    memset(s->tmd, 0, sizeof s->tmd);
    size_t k = 0;
    s->tmd[k].key = grpc_slice_from_static_string("traceparent");
    s->tmd[k++].value = grpc_slice_from_static_string(s->tr.header);
    if (s->tr.ctx.tracestate[0]) {
        s->tmd[k].key = grpc_slice_from_static_string("tracestate");
        s->tmd[k++].value = grpc_slice_from_static_string(s->tr.ctx.tracestate);
    }
    op->data.send_initial_metadata.count = k;
    op->data.send_initial_metadata.metadata = s->tmd;
}

/* Starts the close op of a unary call before its method runs (see
 * slot.watched): true when it started. */
static bool watch_close(slot *s)
{
    s->cancelled = 0;
    atomic_store_explicit(&s->gone, 0, memory_order_relaxed);
    atomic_store_explicit(&s->pending, 2, memory_order_release); /* close op, answer */
    grpc_op close;
    memset(&close, 0, sizeof close);
    close.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    close.data.recv_close_on_server.cancelled = &s->cancelled;
    s->watched = grpc_call_start_batch(s->call, &close, 1, &s->close_tag, NULL) == GRPC_CALL_OK;
    return s->watched;
}

/* One of a watched call's two completions: true when it was the last (the
 * caller finishes the slot). */
static bool watched_done(slot *s)
{
    return atomic_fetch_sub_explicit(&s->pending, 1, memory_order_acq_rel) == 1;
}

/* Runs the slot's method on its call and starts the answer's batch: true
 * when it started (then the slot belongs to whichever thread takes its
 * completion, which may come before this returns: the caller must not look
 * at the slot again). */
static bool answer(slot *s, rt_ctx *ctx, srv_grpc_arena *arena, rt_buf *in, rt_buf *out)
{
    struct srv_grpc *g = s->g;
    const char *path = s->method < g->n_methods ? g->methods[s->method].path : "(unknown)";
    char msg[SRV_GRPC_MSG] = "";
    int code;
    rt_buf_reset(in);
    rt_buf_reset(out);
    trace_begin(s);
    if (s->method == g->n_methods) {
        code = SRV_GRPC_UNIMPLEMENTED;
        snprintf(msg, sizeof msg, "predictd does not serve %.*s (docs/grpc.md lists the methods)",
                 (int)(GRPC_SLICE_LENGTH(s->cd.method) > 300 ? 300 : GRPC_SLICE_LENGTH(s->cd.method)),
                 (const char *)GRPC_SLICE_START_PTR(s->cd.method));
    } else if ((code = check_token(s, g->methods[s->method].scope, msg)) != SRV_GRPC_OK) {
        /* refused before the message is read */
    } else if (gpr_time_cmp(s->deadline, gpr_now(s->deadline.clock_type)) < 0) {
        code = SRV_GRPC_DEADLINE_EXCEEDED;
        snprintf(msg, sizeof msg, "deadline exceeded before the request ran");
        if (g->methods[s->method].scope == SRV_SCOPE_INFER) /* as REST's queue 504 */
            srv_metrics_request_via(g->metrics, SRV_PROTO_GRPC, "", -1,
                                    method_kind(&g->methods[s->method]), 504, 0);
    } else if (!s->payload && !g->methods[s->method].stream) {
        /* a unary call without its message: the client cancelled it before
         * the message was read (its deadline passed while no thread was
         * free to read the call, or it left), or half-closed without one.
         * Not run (gRPC's C++ server answers INTERNAL likewise); counted as
         * REST's 499 of a client gone */
        code = SRV_GRPC_INTERNAL;
        snprintf(msg, sizeof msg, "no request message (the call was cancelled or sent none)");
        if (g->methods[s->method].scope == SRV_SCOPE_INFER)
            srv_metrics_request_via(g->metrics, SRV_PROTO_GRPC, "", -1,
                                    method_kind(&g->methods[s->method]), 499, 0);
    } else if (read_payload(s->payload, in) != 0) {
        code = SRV_GRPC_RESOURCE_EXHAUSTED;
        snprintf(msg, sizeof msg, "out of memory");
    } else {
        /* a call that may wait for its batch: its client's cancel is seen */
        bool watch = g->methods[s->method].scope == SRV_SCOPE_INFER &&
                     !g->methods[s->method].stream && watch_close(s);
        uint64_t r = mix(atomic_fetch_add(&g->seed, 0x9e3779b97f4a7c15ULL));
        srv_grpc_env env = {.mgr = g->mgr,
                            .draining = g->draining,
                            .metrics = g->metrics,
                            .json = g->json,
                            .ctx = ctx,
                            .draw = r,
                            .sample = mix(r),
                            .trace = s->tr.ctx.sampled ? &s->tr : NULL,
                            .arena = arena,
                            .reload = g->reload,
                            .reload_arg = g->reload_arg,
                            .http = g->http,
                            .rpc = g->methods[s->method].path,
                            .deadline_ns = deadline_ns(s->deadline),
                            .gone = watch ? &s->gone : NULL};
        srv_grpc_trace_run(&s->tr, ctx);
        code = run_admitted(g, &g->methods[s->method], &env, in, out, msg);
        srv_grpc_arena_reset(arena); /* the request message is gone */
        srv_grpc_trace_ran(&s->tr, ctx, code);
        if (code == SRV_GRPC_OK && rt_buf_failed(out)) {
            code = SRV_GRPC_RESOURCE_EXHAUSTED;
            snprintf(msg, sizeof msg, "out of memory");
        }
        if (code == SRV_GRPC_OK && g->methods[s->method].stream)
            return stream_start(s, in, out);
    }
    grpc_op ops[4];
    memset(ops, 0, sizeof ops);
    size_t n = 0;
    ops[n].op = GRPC_OP_SEND_INITIAL_METADATA;
    trace_metadata(s, &ops[n++]);
    s->answer = NULL;
    if (code == SRV_GRPC_OK) {
        grpc_slice sl = grpc_slice_from_copied_buffer(out->data ? out->data : "", out->len);
        s->answer = grpc_raw_byte_buffer_create(&sl, 1);
        grpc_slice_unref(sl);
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n++].data.send_message.send_message = s->answer;
    }
    s->details = grpc_slice_from_copied_string(msg);
    ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    ops[n].data.send_status_from_server.status = (grpc_status_code)code;
    ops[n++].data.send_status_from_server.status_details = code ? &s->details : NULL;
    if (!s->watched) { /* else it is in flight already */
        ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
        ops[n++].data.recv_close_on_server.cancelled = &s->cancelled;
    }
    /* nothing of the slot is read past the release: once the batch starts,
     * its completion may be finishing the slot on another thread */
    grpc_call *call = s->call;
    atomic_store_explicit(&s->state, 1, memory_order_release);
    if (grpc_call_start_batch(call, ops, n, s, NULL) != GRPC_CALL_OK) {
        /* not started: nothing will complete for this tag */
        srv_log(SRV_LOG_ERROR, "grpc: %s: could not send the answer", path);
        grpc_call_cancel(call, NULL);
        atomic_store_explicit(&s->state, 2, memory_order_relaxed);
        return false;
    }
    return true;
}

static void finish_call(slot *s)
{
    struct srv_grpc *g = s->g;
    srv_grpc_trace_end(g->tracer, &s->tr); /* a sampled call's spans */
    pthread_mutex_lock(&g->mu);
    if (--g->in_flight == 0)
        pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    if (s->answer)
        grpc_byte_buffer_destroy(s->answer);
    s->answer = NULL;
    grpc_slice_unref(s->details);
    if (s->payload)
        grpc_byte_buffer_destroy(s->payload);
    s->payload = NULL;
    grpc_metadata_array_destroy(&s->md);
    if (s->method == s->g->n_methods)
        grpc_call_details_destroy(&s->cd);
    grpc_call_unref(s->call);
    s->call = NULL;
}

static void *thread_main(void *arg)
{
    struct srv_grpc *g = arg;
    rt_ctx *ctx = rt_ctx_new();
    rt_buf in, out;
    rt_buf_init(&in);
    rt_buf_init(&out);
    srv_grpc_arena arena;
    srv_grpc_arena_init(&arena);
    for (;;) {
        grpc_event ev = grpc_completion_queue_next(g->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN)
            break;
        if (ev.type != GRPC_OP_COMPLETE)
            continue;
        if (ev.tag == &g->shutdown_tag) {
            pthread_mutex_lock(&g->mu);
            g->shut_done = true;
            pthread_cond_broadcast(&g->cv);
            pthread_mutex_unlock(&g->mu);
            continue;
        }
        /* a slot's own address, or its close_tag's (a streaming call's close op) */
        size_t off = (size_t)((const char *)ev.tag - (const char *)g->slots);
        slot *s = &g->slots[off / sizeof(slot)];
        bool close = off % sizeof(slot) == offsetof(slot, close_tag);
        int state = atomic_load_explicit(&s->state, memory_order_acquire);
        if (close && state != 3) { /* a watched unary call's close op */
            /* watch_close's writes (s->cancelled's reset) before the core had it */
            (void)atomic_load_explicit(&s->pending, memory_order_acquire);
            atomic_store_explicit(&s->gone, s->cancelled != 0, memory_order_relaxed);
            if (!watched_done(s))
                continue;
            finish_call(s);
        } else if (state == 3) {
            if (!stream_done(s, close))
                continue;
            finish_call(s);
        } else if (state == 0) {
            if (!ev.success) { /* the server is shutting down */
                grpc_metadata_array_destroy(&s->md);
                if (s->method == g->n_methods)
                    grpc_call_details_destroy(&s->cd);
                if (s->payload)
                    grpc_byte_buffer_destroy(s->payload);
                s->payload = NULL;
                continue;
            }
            pthread_mutex_lock(&g->mu);
            g->in_flight++;
            pthread_mutex_unlock(&g->mu);
            if (!ctx) { /* no context: refuse, as REST's 500 */
                s->details = grpc_slice_from_copied_string("out of memory");
                grpc_call_cancel_with_status(s->call, GRPC_STATUS_RESOURCE_EXHAUSTED,
                                             "out of memory", NULL);
                s->answer = NULL;
                finish_call(s);
            } else {
                if (answer(s, ctx, &arena, &in, &out))
                    continue; /* finishes when its batch completes */
                if (s->watched && !watched_done(s))
                    continue; /* its close op (the call is cancelled) finishes it */
                finish_call(s);
            }
        } else {
            if (s->watched && !watched_done(s))
                continue; /* its close op is still to complete */
            finish_call(s);
        }
        if (!atomic_load(&g->stopping))
            (void)request_call(s);
    }
    rt_buf_free(&in);
    rt_buf_free(&out);
    srv_grpc_arena_free(&arena);
    rt_ctx_free(ctx);
    return NULL;
}

/* The certificate config for the core's next handshake: NEW when the files
 * were not read since the last srv_grpc_tls_reload, else UNCHANGED. A read
 * that fails keeps the pair the core has (FAIL only when it has none). */
static grpc_ssl_certificate_config_reload_status tls_fetch(void *arg,
                                                            grpc_ssl_server_certificate_config **c)
{
    struct srv_grpc *g = arg;
    grpc_ssl_certificate_config_reload_status r = GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_UNCHANGED;
    pthread_mutex_lock(&g->tls_mu);
    unsigned gen = atomic_load(&g->tls_gen);
    if (!g->tls_have || gen != g->tls_loaded) {
        char *cert = NULL, *key = NULL, *ca = NULL;
        rt_err err = {{0}};
        if (g->tls_inline) {
            cert = strdup(g->tls_cert);
            key = strdup(g->tls_key);
            ca = g->tls_ca ? strdup(g->tls_ca) : NULL;
            if (!cert || !key || (g->tls_ca && !ca)) {
                free(cert), free(ca);
                if (key)
                    memset(key, 0, strlen(key));
                free(key);
                cert = key = ca = NULL;
                rt_err_set(&err, RT_ERR_NOMEM, "out of memory");
            }
        }
        if (g->tls_inline ? cert != NULL
                          : rt_file_read(AT_FDCWD, g->tls_cert, SRV_TLS_MAX_PEM_BYTES, 0, &cert,
                                         NULL, &err) == RT_OK &&
                                rt_file_read(AT_FDCWD, g->tls_key, SRV_TLS_MAX_PEM_BYTES, 0,
                                             &key, NULL, &err) == RT_OK &&
                                (!g->tls_ca || rt_file_read(AT_FDCWD, g->tls_ca,
                                                            SRV_TLS_MAX_PEM_BYTES, 0, &ca, NULL,
                                                            &err) == RT_OK)) {
            grpc_ssl_pem_key_cert_pair pair = {key, cert};
            /* libgrpc 1.51 aborts on a fetched config without root
             * certificates; they only verify client certificates, which
             * are not asked for without a client CA: the server's own
             * chain stands in */
            *c = grpc_ssl_server_certificate_config_create(ca ? ca : cert, &pair, 1);
            r = *c ? GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_NEW
                   : GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_FAIL;
            g->tls_have |= *c != NULL;
        } else {
            srv_log(SRV_LOG_ERROR, "grpc: TLS: %s; %s", err.msg,
                    g->tls_have ? "the running certificate stays" : "no handshake can succeed");
            r = g->tls_have ? GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_UNCHANGED
                            : GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_FAIL;
        }
        g->tls_loaded = gen;
        if (key)
            memset(key, 0, strlen(key)); /* the core has its own copy */
        free(cert), free(key), free(ca);
    }
    pthread_mutex_unlock(&g->tls_mu);
    return r;
}

void srv_grpc_tls_reload(srv_grpc *g)
{
    if (g && g->tls_cert && !g->tls_inline)
        atomic_fetch_add(&g->tls_gen, 1);
}

/* Wipes and frees a string that may hold a private key. */
static void free_secret(char *s)
{
    if (s)
        memset(s, 0, strlen(s));
    free(s);
}

rt_status srv_grpc_tls_set_pem(srv_grpc *g, const char *cert, const char *key, const char *ca,
                               rt_err *err)
{
    if (!g || !g->tls_inline)
        return rt_err_set(err, RT_ERR_UNSUPPORTED, "the gRPC port does not take PEM contents");
    if (!cert || !key || !ca != !g->tls_ca)
        return rt_err_set(err, RT_ERR_INVALID, "client certificate verification cannot change "
                          "while the port is open: restart to apply it");
    char *c = strdup(cert), *k = strdup(key), *a = ca ? strdup(ca) : NULL;
    if (!c || !k || (ca && !a)) {
        free(c), free_secret(k), free(a);
        return rt_err_set(err, RT_ERR_NOMEM, "grpc: out of memory");
    }
    pthread_mutex_lock(&g->tls_mu);
    free(g->tls_cert), free_secret(g->tls_key), free(g->tls_ca);
    g->tls_cert = c, g->tls_key = k, g->tls_ca = a;
    atomic_fetch_add(&g->tls_gen, 1);
    pthread_mutex_unlock(&g->tls_mu);
    return RT_OK;
}

/* The port's credentials: TLS from the files, or plain. */
static grpc_server_credentials *credentials(struct srv_grpc *g)
{
    if (!g->tls_cert)
        return grpc_insecure_server_credentials_create();
    grpc_ssl_server_credentials_options *o =
        grpc_ssl_server_credentials_create_options_using_config_fetcher(
            g->tls_ca ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                      : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE,
            tls_fetch, g);
    return o ? grpc_ssl_server_credentials_create_with_options(o) : NULL;
}

static void destroy(struct srv_grpc *g)
{
    if (g->server)
        grpc_server_destroy(g->server);
    if (g->cq)
        grpc_completion_queue_destroy(g->cq);
    free(g->handles);
    for (size_t i = 0; g->slots && i < g->n_slots; i++) {
        rt_buf_free(&g->slots[i].w_req);
        rt_buf_free(&g->slots[i].w_last);
    }
    free(g->slots);
    free(g->threads);
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->tls_mu);
    pthread_cond_destroy(&g->w_cv);
    free(g->tls_cert), free_secret(g->tls_key), free(g->tls_ca);
    free(g);
    grpc_shutdown();
}

rt_status srv_grpc_start(const srv_grpc_params *p, srv_manager *mgr, const _Atomic int *draining,
                         srv_grpc **out, rt_err *err)
{
    *out = NULL;
    grpc_init();
    struct srv_grpc *g = calloc(1, sizeof *g);
    if (!g) {
        grpc_shutdown();
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    }
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    pthread_mutex_init(&g->tls_mu, NULL);
    pthread_cond_init(&g->w_cv, NULL);
    if (p->tls_cert_pem) { /* TF Serving's --ssl_config_file: the contents */
        g->tls_inline = true;
        g->tls_cert = strdup(p->tls_cert_pem);
        g->tls_key = p->tls_key_pem ? strdup(p->tls_key_pem) : NULL;
        g->tls_ca = p->tls_ca_pem ? strdup(p->tls_ca_pem) : NULL;
        if (!g->tls_cert || !g->tls_key || (p->tls_ca_pem && !g->tls_ca)) {
            destroy(g);
            return rt_err_set(err, RT_ERR_NOMEM, "grpc: out of memory");
        }
    } else if (p->tls_cert_file) {
        g->tls_cert = strdup(p->tls_cert_file);
        g->tls_key = p->tls_key_file ? strdup(p->tls_key_file) : NULL;
        g->tls_ca = p->tls_client_ca_file ? strdup(p->tls_client_ca_file) : NULL;
        if (!g->tls_cert || !g->tls_key || (p->tls_client_ca_file && !g->tls_ca)) {
            destroy(g);
            return rt_err_set(err, RT_ERR_NOMEM, "grpc: out of memory");
        }
    }
    g->mgr = mgr;
    g->draining = draining;
    g->metrics = p->metrics;
    g->auth = p->auth;
    g->admit = p->admit;
    g->max_queue_wait_ms = p->max_queue_wait_ms;
    g->tracer = p->tracer;
    g->http = p->http;
    g->reload = p->reload;
    g->reload_arg = p->reload_arg;
    g->json = rt_json_default_params();
    g->json.max_answer_bytes = p->max_answer_bytes;
    g->methods = srv_grpc_methods(&g->n_methods);
    g->n_threads = p->threads > 0 ? p->threads : 1;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    atomic_store(&g->seed, mix((uint64_t)now.tv_nsec ^ ((uint64_t)getpid() << 32) ^
                               (uint64_t)(uintptr_t)g));

    /* message size limits: the request's as REST's body limit, the answer's
     * as max_answer_bytes (the core refuses past them) */
    grpc_arg args[3];
    args[0].type = GRPC_ARG_INTEGER;
    args[0].key = (char *)GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH;
    args[0].value.integer = p->max_request_bytes > 0x7fffffff ? 0x7fffffff : (int)p->max_request_bytes;
    args[1].type = GRPC_ARG_INTEGER;
    args[1].key = (char *)GRPC_ARG_MAX_SEND_MESSAGE_LENGTH;
    args[1].value.integer = p->max_answer_bytes == 0 || p->max_answer_bytes > 0x7fffffff
                                ? 0x7fffffff
                                : (int)p->max_answer_bytes;
    /* no SO_REUSEPORT (the core's default): a second daemon on the port
     * must fail to start, not take half of its calls */
    args[2].type = GRPC_ARG_INTEGER;
    args[2].key = (char *)GRPC_ARG_ALLOW_REUSEPORT;
    args[2].value.integer = 0;
    grpc_channel_args cargs = {3, args};
    g->server = grpc_server_create(&cargs, NULL);
    g->cq = grpc_completion_queue_create_for_next(NULL);
    g->handles = calloc(g->n_methods, sizeof *g->handles);
    /* each method's slots, then the slots of calls to other methods, then
     * those of the streams that stay open (SRV_GRPC_MAX_STREAMS per stream
     * method: a stream holds its slot while it is open) */
    size_t n_stream = 0;
    for (size_t i = 0; i < g->n_methods; i++)
        n_stream += g->methods[i].stream;
    size_t n_unary = (g->n_methods + 1) * (size_t)g->n_threads * SLOTS_PER_THREAD;
    g->n_slots = n_unary + n_stream * SRV_GRPC_MAX_STREAMS;
    g->slots = calloc(g->n_slots, sizeof *g->slots);
    g->threads = calloc((size_t)g->n_threads, sizeof *g->threads);
    if (!g->server || !g->cq || !g->handles || !g->slots || !g->threads) {
        destroy(g);
        return rt_err_set(err, RT_ERR_NOMEM, "grpc: out of memory");
    }
    for (size_t i = 0; i < g->n_methods; i++)
        g->handles[i] = grpc_server_register_method(g->server, g->methods[i].path, NULL,
                                                    GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
    grpc_server_register_completion_queue(g->server, g->cq, NULL);
    char addr[300];
    snprintf(addr, sizeof addr, "%s:%d", p->host && *p->host ? p->host : "0.0.0.0", p->port);
    grpc_server_credentials *creds = credentials(g);
    g->port = creds ? grpc_server_add_http2_port(g->server, addr, creds) : 0;
    if (creds)
        grpc_server_credentials_release(creds);
    if (g->port <= 0) {
        destroy(g);
        return rt_err_set(err, RT_ERR_IO, "grpc: cannot listen on %s (port in use?)", addr);
    }
    grpc_server_start(g->server);
    for (size_t i = 0; i < g->n_slots; i++) {
        g->slots[i].g = g;
        g->slots[i].method = i % (g->n_methods + 1);
        if (i >= n_unary) { /* the k-th stream method's share */
            size_t k = (i - n_unary) / SRV_GRPC_MAX_STREAMS, m = 0;
            while (!g->methods[m].stream || k--)
                m++;
            g->slots[i].method = m;
        }
        g->slots[i].details = grpc_empty_slice();
        rt_buf_init(&g->slots[i].w_req);
        rt_buf_init(&g->slots[i].w_last);
        if (request_call(&g->slots[i]) != 0) {
            srv_log(SRV_LOG_ERROR, "grpc: could not request calls");
            break;
        }
    }
    for (int i = 0; i < g->n_threads; i++)
        if (pthread_create(&g->threads[i], NULL, thread_main, g) != 0) {
            g->n_threads = i;
            break;
        }
    if (g->n_threads > 0)
        g->watcher_on = pthread_create(&g->watcher, NULL, watch_main, g) == 0;
    if (g->n_threads == 0) {
        grpc_server_shutdown_and_notify(g->server, g->cq, &g->shutdown_tag);
        grpc_server_cancel_all_calls(g->server);
        grpc_completion_queue_shutdown(g->cq);
        while (grpc_completion_queue_next(g->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
               GRPC_QUEUE_SHUTDOWN) {
        }
        destroy(g);
        return rt_err_set(err, RT_ERR_IO, "grpc: cannot start threads");
    }
    *out = g;
    return RT_OK;
}

int srv_grpc_port(const srv_grpc *g)
{
    return g ? g->port : 0;
}

void srv_grpc_stop(srv_grpc *g)
{
    if (!g)
        return;
    atomic_store(&g->stopping, 1);
    grpc_server_shutdown_and_notify(g->server, g->cq, &g->shutdown_tag);
    pthread_mutex_lock(&g->mu);
    pthread_cond_broadcast(&g->w_cv); /* streaming calls get their status now */
    pthread_mutex_unlock(&g->mu);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += SRV_GRPC_STOP_GRACE_MS / 1000;
    /* the calls in flight finish (within the grace); what the shutdown
     * still waits for then (connections that never made a call) is cut */
    pthread_mutex_lock(&g->mu);
    while (!g->shut_done && g->in_flight > 0)
        if (pthread_cond_timedwait(&g->cv, &g->mu, &until) != 0)
            break;
    bool done = g->shut_done;
    pthread_mutex_unlock(&g->mu);
    if (!done) {
        grpc_server_cancel_all_calls(g->server);
        pthread_mutex_lock(&g->mu);
        while (!g->shut_done)
            pthread_cond_wait(&g->cv, &g->mu);
        pthread_mutex_unlock(&g->mu);
    }
    if (g->watcher_on) { /* before the queue shuts: it may still send a status */
        pthread_mutex_lock(&g->mu);
        g->w_quit = true;
        pthread_cond_broadcast(&g->w_cv);
        pthread_mutex_unlock(&g->mu);
        pthread_join(g->watcher, NULL);
    }
    grpc_completion_queue_shutdown(g->cq);
    for (int i = 0; i < g->n_threads; i++)
        pthread_join(g->threads[i], NULL);
    destroy(g);
}
