/*
 * srv_grpc_internal.h — the gRPC room's inside. srv_grpc.c holds every call
 * to the gRPC core C API (grpc/grpc.h, built and tested against Debian 12's
 * libgrpc 1.51): the server, its completion queue and threads, calls and
 * byte buffers. The methods (srv_grpc_methods.c) see none of it: each is a
 * function from a request message's bytes to an answer's bytes and a status,
 * over this small interface, so a change of the core API stays in one file.
 */
#ifndef SRV_GRPC_INTERNAL_H
#define SRV_GRPC_INTERNAL_H

#if !defined(PREDICTD_MODULE_server) && !defined(PREDICTD_MODULE_tests)
#error "srv_grpc_internal.h is private to server/"
#endif

#include "srv.h"
#include "srv_trace.h"

#include <protobuf-c/protobuf-c.h>
#include <stdatomic.h>

/* gRPC's status codes (the wire's numbers, as grpc/status.h has them). */
enum {
    SRV_GRPC_OK = 0,
    SRV_GRPC_CANCELLED = 1,
    SRV_GRPC_UNKNOWN = 2,
    SRV_GRPC_INVALID_ARGUMENT = 3,
    SRV_GRPC_DEADLINE_EXCEEDED = 4,
    SRV_GRPC_NOT_FOUND = 5,
    SRV_GRPC_PERMISSION_DENIED = 7,
    SRV_GRPC_RESOURCE_EXHAUSTED = 8,
    SRV_GRPC_FAILED_PRECONDITION = 9,
    SRV_GRPC_UNIMPLEMENTED = 12,
    SRV_GRPC_INTERNAL = 13,
    SRV_GRPC_UNAVAILABLE = 14,
    SRV_GRPC_UNAUTHENTICATED = 16,
};

/* A call's trace (srv_grpc_trace.c, docs/console.md "Tracing"): its
 * context and, when sampled only, the clock readings and what its server
 * span says. */
typedef struct srv_grpc_trace {
    srv_trace_ctx ctx;
    rt_stage_marks marks; /* the run's stages (rt_ctx_time_stages) */
    int64_t t_run, t_done; /* the method began, returned (CLOCK_MONOTONIC ns) */
    char model[SRV_NAME_MAX + 1];
    int64_t version; /* -1: none */
    long instances;  /* -1: unknown */
    char header[56]; /* the traceparent sent in the initial metadata */
} srv_grpc_trace;

/* A bump allocator for unpacking a request message (srv_grpc_arena.c):
 * alloc carves from its chunks, free does nothing; reset gives everything
 * back at once (the thread's call is over) and keeps one chunk. */
typedef struct srv_grpc_arena {
    ProtobufCAllocator alloc;
    struct srv_grpc_chunk *head; /* the newest chunk */
} srv_grpc_arena;
void srv_grpc_arena_init(srv_grpc_arena *a);
void srv_grpc_arena_reset(srv_grpc_arena *a);
void srv_grpc_arena_free(srv_grpc_arena *a);

/* A JSON value read by srv_grpc_json_parse (srv_grpc_json.c), its nodes
 * and strings in an arena: an object's members and an array's elements are
 * child, next, next... (n of them), a member's name in key. */
enum { SRV_GRPC_JSON_NULL, SRV_GRPC_JSON_BOOL, SRV_GRPC_JSON_NUMBER, SRV_GRPC_JSON_STRING,
       SRV_GRPC_JSON_ARRAY, SRV_GRPC_JSON_OBJECT };
typedef struct srv_grpc_json {
    int kind;
    const char *key; /* a member's name, else NULL */
    const char *str; /* a string's text (UTF-8, NUL-terminated) */
    double num;      /* a number; a bool as 0 or 1 */
    size_t n;        /* an array's or object's count */
    struct srv_grpc_json *child, *next;
} srv_grpc_json;
/* The JSON text of len bytes (no NUL needed), all of it one value, or NULL
 * when it is not (or the arena ran out of memory). */
const srv_grpc_json *srv_grpc_json_parse(srv_grpc_arena *a, const char *text, size_t len);
/* obj's member key (the first), NULL when obj is not an object or has none. */
const srv_grpc_json *srv_grpc_json_get(const srv_grpc_json *obj, const char *key);
/* j's text when j is a string, else NULL. */
const char *srv_grpc_json_str(const srv_grpc_json *j);

/* What a method sees: the daemon's objects and its thread's context. */
typedef struct srv_grpc_env {
    srv_manager *mgr;
    const _Atomic int *draining; /* may be NULL */
    srv_metrics *metrics;        /* may be NULL */
    rt_json_params json;         /* the request reader's limits, as REST's */
    rt_ctx *ctx;                 /* this thread's */
    uint64_t draw;               /* the traffic split's draw (random) */
    uint64_t sample;             /* the sampling draw */
    srv_grpc_trace *trace;       /* the call's, sampled; NULL: not traced */
    /* the thread's arena for the request message (reset by the caller after
     * the method returns: nothing allocated there outlives the call); NULL:
     * unpack with malloc and free_unpacked */
    srv_grpc_arena *arena;
    /* the daemon's config reload (srv_grpc_params.reload), NULL: none */
    rt_status (*reload)(void *arg, const char *models, size_t len, rt_err *err);
    void *reload_arg;
    /* REST's front (srv_grpc_params.http): its batcher, prediction logs and
     * shadow queue, which inference calls share; NULL: none */
    srv_http *http;
    const char *rpc; /* the method's path ("/package.Service/Method") */
    int64_t deadline_ns; /* the call's deadline (rt_time_now_ns's clock), 0: none */
    /* set (by another thread) when the call's client went away: it
     * cancelled, or the core ended the call at its deadline; NULL: not
     * watched (srv_grpc.c watches inference calls) */
    const _Atomic int *gone;
} srv_grpc_env;

/* One method: in/len the request message; out the answer message; returns a
 * status code (SRV_GRPC_*), with msg (size SRV_GRPC_MSG) set when it is not
 * OK. */
#define SRV_GRPC_MSG 512
typedef int (*srv_grpc_fn)(srv_grpc_env *e, const uint8_t *in, size_t len, rt_buf *out,
                           char *msg);
typedef struct srv_grpc_method {
    const char *path; /* "/package.Service/Method" */
    srv_grpc_fn fn;
    const char *label; /* the method's name in metrics */
    unsigned scope;    /* the bearer token's scope it needs (SRV_SCOPE_*), 0: open */
    bool stream;       /* server streaming (Health/Watch): fn's answer is the first
                          message; fn runs again on the same request every
                          SRV_GRPC_WATCH_MS and its answer is sent when its bytes
                          changed, until the client leaves or the server stops */
} srv_grpc_method;

/* The methods served (srv_grpc_methods.c), in a fixed order. */
const srv_grpc_method *srv_grpc_methods(size_t *n);

/* predictd's error (as srv_http_status maps it for REST) as a gRPC status. */
int srv_grpc_status_of(rt_status st);
/* The REST status a gRPC status stands for (metrics count both doors alike). */
unsigned srv_grpc_http_of(int code);
/* Packs msg into out: SRV_GRPC_OK or RESOURCE_EXHAUSTED. */
int srv_grpc_pack(const ProtobufCMessage *msg, rt_buf *out);
/* INVALID_ARGUMENT with "the request is not a valid <what> message". */
int srv_grpc_bad_message(char *msg, const char *what);

/* The call's trace (srv_grpc_trace.c). Begin: the context from the
 * call's traceparent and tracestate metadata values (either NULL) for the
 * method at path, with tracer t (NULL: none, tr inactive); the header to
 * send is tr->header when tr->ctx.active. */
void srv_grpc_trace_begin(srv_tracer *t, const char *path, const char *traceparent,
                          const char *tracestate, srv_grpc_trace *tr);
/* Around the method's run on ctx: the stage clock on only when sampled
 * (an untraced call reads no clock for it); after, code is its status. */
void srv_grpc_trace_run(srv_grpc_trace *tr, rt_ctx *ctx);
void srv_grpc_trace_ran(srv_grpc_trace *tr, rt_ctx *ctx, int code);
/* A method's model and version (the version it ran on, -1: none), for the
 * span of a sampled call; nothing when e->trace is NULL. */
void srv_grpc_trace_note(srv_grpc_env *e, const char *model, int64_t version);
/* The call is over (its answer's batch completed): its spans to t when
 * sampled. */
void srv_grpc_trace_end(srv_tracer *t, srv_grpc_trace *tr);

/* The code an inference call ends with once its answer is translated:
 * code itself, unless code is OK and the call's deadline passed or its
 * client cancelled since its run (the core has ended the call already):
 * then DEADLINE_EXCEEDED or CANCELLED with msg set, counted in
 * predictd_runs_stopped_total, and the answer is not sent (srv_grpc_shared.c). */
int srv_grpc_answer_checked(srv_grpc_env *e, int code, char *msg);

/* What inference calls share with REST (srv_grpc_shared.c). Runs body (a
 * :predict / :classify / :regress body, or for RT_METHOD_INFER a /v2 infer
 * body with v2_header its JSON's length or RT_V2_NO_HEADER) of model on v:
 * through REST's batcher when it batches and the method is PREDICT or
 * INFER (the call may share a batch with REST requests; t0 is when the call
 * began, for rest_api_timeout_in_ms), else on e->ctx. ans gets REST's JSON
 * answer and *v2_answer its JSON's length when binary tensors follow (0:
 * none); not OK: msg is set, ans empty. The monitor observes the run. */
int srv_grpc_run_infer(srv_grpc_env *e, srv_version *v, const char *model, rt_method method,
                       const rt_buf *body, size_t v2_header, int64_t t0, rt_buf *ans,
                       size_t *v2_answer, char *msg);
/* An answered inference call (code, msg when not OK) to REST's prediction
 * log and shadow queue as pick sampled them (srv_http_tap; protocol "grpc"
 * and e->rpc recorded): body and ans are the REST JSON it ran as. Takes
 * pick->shadow's reference (NULL after). Nothing but that when e->http is
 * NULL or no version answered (vnum < 0). */
void srv_grpc_tap(srv_grpc_env *e, const char *model, int64_t vnum, rt_method method, int code,
                  int64_t t0, const rt_buf *body, const rt_buf *ans, const char *msg,
                  srv_pick *pick);

/* TensorFlow Serving's methods (srv_grpc_tfs.c, srv_grpc_tfs_multi.c,
 * srv_grpc_tfs_meta.c, srv_grpc_tfs_reload.c). */
int srv_grpc_tfs_predict(srv_grpc_env *e, const uint8_t *in, size_t len, rt_buf *out, char *msg);
int srv_grpc_tfs_classify(srv_grpc_env *e, const uint8_t *in, size_t len, rt_buf *out, char *msg);
int srv_grpc_tfs_regress(srv_grpc_env *e, const uint8_t *in, size_t len, rt_buf *out, char *msg);
int srv_grpc_tfs_multi(srv_grpc_env *e, const uint8_t *in, size_t len, rt_buf *out, char *msg);
int srv_grpc_tfs_metadata(srv_grpc_env *e, const uint8_t *in, size_t len, rt_buf *out,
                          char *msg);
int srv_grpc_tfs_status(srv_grpc_env *e, const uint8_t *in, size_t len, rt_buf *out, char *msg);
/* ModelService/HandleReloadConfigRequest (srv_grpc_tfs_reload.c). */
int srv_grpc_tfs_reload(srv_grpc_env *e, const uint8_t *in, size_t len, rt_buf *out, char *msg);

#endif
