/*
 * srv_trace.h — OpenTelemetry traces of REST requests and gRPC calls
 * (server/trace/, docs/console.md "Tracing"): W3C trace context read from a
 * request (a call's metadata) and
 * carried to its answer, a server span per sampled request with children
 * for its phases, exported as OTLP/HTTP JSON by a background thread with a
 * bounded queue. Nothing here blocks a request: a full queue drops the
 * request's spans and counts them.
 */
#ifndef PREDICTD_SRV_TRACE_H
#define PREDICTD_SRV_TRACE_H

#include "srv.h"

#include <stdbool.h>
#include <stdint.h>

#define SRV_TRACE_QUEUE 2048     /* spans waiting for the exporter (Triton's default) */
#define SRV_TRACE_BATCH 512      /* spans per POST */
#define SRV_TRACE_FLUSH_MS 5000  /* a batch goes out at least this often */
#define SRV_TRACE_STATE_MAX 256  /* tracestate bytes carried (W3C: 512 may be cut) */
#define SRV_TRACE_PHASES 8       /* child spans of one request at most */
#define SRV_TRACE_PHASE_ATTRS 2  /* integer attributes of a child span */

typedef struct srv_tracer srv_tracer;

/* A request's trace context (zeroed with the request). */
typedef struct srv_trace_ctx {
    bool active;               /* a tracer runs: the answer carries traceparent */
    bool sampled;              /* its spans are recorded */
    bool has_parent;           /* a valid traceparent came with the request */
    uint8_t trace_id[16], span_id[8], parent_id[8];
    char tracestate[SRV_TRACE_STATE_MAX + 1];
    int64_t start_unix_ns;
    char method[8];
    char path[128];
    unsigned status;           /* the answer's HTTP status (srv_http_send), or
                                  a gRPC call's status code */
    bool rpc;                  /* a gRPC call: path is its rpc.service */
    char rpc_method[32];       /* its rpc.method */
} srv_trace_ctx;

/* An integer attribute of a child span: key (a string that outlives the
 * tracer, e.g. a literal) = value. */
typedef struct srv_trace_int {
    const char *key; /* NULL: none */
    long long value;
} srv_trace_int;

/* One child span: [start, end) in CLOCK_MONOTONIC ns (rt_time_now_ns). */
typedef struct srv_trace_phase {
    const char *name;
    int64_t start_ns, end_ns;
    srv_trace_int attr[SRV_TRACE_PHASE_ATTRS];
} srv_trace_phase;

/* What the server span says besides its context. */
typedef struct srv_trace_attrs {
    const char *model;     /* NULL or "": none */
    int64_t version;       /* -1: none answered */
    long instances;        /* -1: unknown */
    int64_t queue_wait_ns; /* -1: it waited in no queue (workers' or batcher's) */
} srv_trace_attrs;

/* Starts the exporter thread for endpoint ("http://HOST:PORT/PATH" or
 * "https://..."; over https the collector's certificate is checked against
 * ca_file (PEM) when not NULL, else the system CA store) with parent-based
 * sampling at rate [0, 1]. OUT: *out, free with srv_tracer_free. */
SRV_WUR rt_status srv_tracer_new(const char *endpoint, const char *ca_file, double rate,
                                 srv_tracer **out, rt_err *err);
/* Exports what is queued (one last try), stops the thread. NULL is fine. */
void srv_tracer_free(srv_tracer *t);
/* A request's context from its traceparent and tracestate headers (either
 * may be NULL; an invalid traceparent is ignored, as W3C says): a new span
 * id, the parent's trace id or a new one, sampled as the parent says, else
 * by rate. Thread-safe. */
void srv_trace_begin(srv_tracer *t, const char *traceparent, const char *tracestate,
                     const char *method, const char *path, srv_trace_ctx *ctx);
/* As srv_trace_begin for a gRPC call to path "/package.Service/Method"
 * (its span is "package.Service/Method" with the RPC conventions'
 * attributes; ctx->status is then the call's gRPC status code). */
void srv_trace_begin_rpc(srv_tracer *t, const char *traceparent, const char *tracestate,
                         const char *path, srv_trace_ctx *ctx);
/* The traceparent header of the answer ("00-TRACE-SPAN-FLAGS") into out. */
void srv_trace_header(const srv_trace_ctx *ctx, char out[56]);
/* Queues the server span of a sampled request (ended now) and its phases
 * (those with end > start). Never blocks: no room for all of them drops
 * them all (counted). Thread-safe. */
void srv_trace_end(srv_tracer *t, const srv_trace_ctx *ctx, const srv_trace_attrs *a,
                   const srv_trace_phase *ph, size_t n_ph);
/* The Prometheus lines of the tracer (nothing for NULL); nonzero when out
 * of memory. */
SRV_WUR int srv_trace_metrics(srv_tracer *t, rt_buf *out);

#endif /* PREDICTD_SRV_TRACE_H */
