/*
 * srv_http_internal.h — what the pieces of predictd's HTTP front share:
 * the front's state (srv_http), a connection's and a request's records, and
 * the functions one piece calls in another. Not part of the server's public
 * header (srv.h). The pieces:
 *   srv_http.c          start and stop: listener, libmicrohttpd's options, accept
 *                       policy, its log, URL unescaping, the watchdog probe
 *   srv_http_request.c  a request's life on its I/O thread: headers (framing
 *                       check, routing), the body under its limits, dispatch,
 *                       completion (shadow / prediction-log taps), connections
 *   srv_http_send.c     answers and errors in TF Serving's shapes, gzip, how
 *                       every piece sends (it calls none of the others)
 *   srv_routes.c        the route table: one row per endpoint (method, path,
 *                       token scope, answer function, protocol), read by the
 *                       router, the answer dispatch and the security gate
 *   srv_router.c        method + path -> the row that matches (srv_route)
 *   srv_http_answer.c   a read request to its row's answer; the answers that
 *                       are not inference (health, status, metadata, metrics)
 *   srv_http_infer.c    inference requests: on the I/O thread, queued to the
 *                       workers (admission, 429) or, heavy ones without workers,
 *                       to the offload threads; per-I/O-thread state
 *   srv_http_batch.c    cross-request batching: parse, join a batch, run merged
 *   srv_http_v2.c       the Open Inference Protocol's metadata answers
 *
 * Threads: libmicrohttpd's I/O threads call the request and answer code; a
 * request handed to a worker or a batch thread is the hand-over's alone
 * until that thread resumes its connection (req.done). Fields of srv_http
 * are set at start and read-only after it, except those marked atomic or
 * guarded by a mutex (pool_mu, conn_mu).
 */
#ifndef PREDICTD_SRV_HTTP_INTERNAL_H
#define PREDICTD_SRV_HTTP_INTERNAL_H

/* The build defines PREDICTD_MODULE_<folder> for each source (Makefile). */
#if !defined(PREDICTD_MODULE_server) && !defined(PREDICTD_MODULE_tests)
#error "srv_http_internal.h is server's own; other modules include srv.h (docs/design.md)"
#endif

#include "srv.h"
#include "srv_trace.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

typedef struct conn_state conn_state;

/* One I/O thread's own state, found through srv_http.tkey. */
typedef struct tstate {
    rt_ctx *ctx;         /* inference on this thread */
    rt_rng rng;          /* traffic split and sampling draws of its requests */
    struct tstate *next; /* srv_http.tstates (freed at stop) */
} tstate;

struct srv_http {
    struct MHD_Daemon *mhd;
    srv_http_params p;      /* the objects it was given (p.cfg: NULL after start) */
    srv_config cfg;         /* the settings, copied at start (every row of the
                               settings table; strings owned, no models): the
                               front reads each setting here, by its name */
    /* what follows from the settings, worked out once at start */
    int threads;            /* request threads: rest_api_num_threads, else the CPUs */
    int max_connections;    /* max_connections, resolved against RLIMIT_NOFILE */
    rt_json_params json;    /* the request reader's limits (max_answer_bytes) */
    srv_batcher_params batch; /* the batcher's knobs (threads: batch threads) */
    char metrics_path[256]; /* the config's metrics_path; "" = metrics not served */
    char aip_predict_target[SRV_NAME_MAX + 32]; /* /v1/models/MODEL:predict, the path
                                                   aip_predict_route stands for ("" = none) */
    srv_manager *mgr;
    const _Atomic int *draining;
    int fd; /* listening socket */
    bool own_fd;
    int port;
    pthread_mutex_t pool_mu; /* guards pool */
    rt_ctx **pool;
    size_t n_pool, cap_pool;
    srv_pool *workers;    /* NULL: inference runs on the I/O threads */
    rt_ctx **wctx;        /* [threads] one per worker */
    atomic_long active;   /* requests from their first call until libmicrohttpd
                             reports completion (stop waits for them) */
    srv_pool *offload;    /* without workers: the heavy inference requests'
                             threads (srv_http_offload); NULL with workers */
    rt_ctx **octx;        /* [threads] one per offload thread */
    srv_admit *admit;     /* NULL: no adaptive admission limit (max_queue_wait_ms 0) */
    struct MHD_Response *busy[2]; /* the 429s of srv_http_enqueue: [0] queue full or
                                     its oldest waited too long, [1] over the limit */
    srv_batcher *batcher; /* NULL: no cross-request batching */
    rt_ctx **bctx;        /* [batch threads] the merged batch of each */
    pthread_key_t tkey;   /* -> this I/O thread's tstate */
    bool tkey_made;
    pthread_mutex_t conn_mu; /* guards tstates (links) */
    tstate *tstates;         /* every I/O thread's state */
    srv_conns *conns;        /* open connections: limit, deadlines */
    atomic_int probe_fd;     /* the watchdog probe's server end, or -1 */
    atomic_size_t held;      /* request body bytes held now (max_total_request_bytes) */
    srv_shadow *shadow;      /* shadow runs, after the answer was sent */
    srv_predlog *predlog;    /* prediction log writer */
    srv_tracer *tracer;      /* OTLP traces (server/trace/), or NULL: tracing off */
    atomic_bool trim_due;    /* held passed SRV_TRIM_AFTER since the last malloc_trim */
    atomic_size_t kept;      /* bytes of large buffers kept by connections between
                                requests (under SRV_CONN_KEEP_TOTAL, srv_http_request.c) */
};

/* One request's state between libmicrohttpd's calls. */
typedef struct req {
    srv_route route;
    srv_pick pick;  /* the split's draw in; the shadow and log choice out */
    int64_t served; /* the version that answered (X-Predictd-Model-Version), or -1 */
    rt_buf body;
    bool answered; /* a response was queued (or the request handed over) */
    bool counted;  /* counted in h->active */
    size_t held;   /* bytes of srv_http.held this request's body holds */
    int64_t start;  /* rt_time_now_ns when its headers arrived */
    bool gzipped; /* Content-Encoding: gzip (the body is inflated when read whole) */
    /* worker hand-over (SRV_ROUTE_INFER with a pool) */
    struct MHD_Connection *conn;
    srv_http *h;
    int sock;          /* the client's socket (an :explain's presence check), or -1 */
    int stopped;       /* an :explain stopped: 1 past its deadline, 2 client gone */
    bool done; /* the worker filled code/resp and resumed conn */
    uint64_t ticket; /* its slot of srv_http.admit (given back when its run ends), or 0 */
    size_t weight;   /* the units that ticket holds (an :explain's rows, else 1) */
    int64_t t_admit; /* CLOCK_MONOTONIC ns: queued, taken by a worker (or, on
                        an I/O thread, started), run done: compute_infer
                        reads the clock once at each end of a run */
    int64_t t_run, t_done;
    unsigned code;
    rt_buf resp; /* JSON answer or {"error": ...} */
    size_t v2_header;   /* /v2 infer: the request's Inference-Header-Content-Length
                           (RT_V2_NO_HEADER when absent) */
    size_t v2_answer;   /* the answer's JSON length when binary tensors follow
                           it (its Inference-Header-Content-Length), else 0 */
    /* cross-request batching: held from parsing until answered */
    srv_version *ver;
    rt_ctx *ctx; /* holds the parsed batch */
    rt_parsed parsed;
    srv_trace_ctx trace; /* its trace context (active only with a tracer) */
    /* a traced request's stage clock (0 when not read): its rt_ctx's marks
     * (a merged batch's for transform and forward); batched: parsed and
     * handed to the batcher at t_admit, its batch taken at t_batch, its
     * own answer rendered from t_render */
    rt_stage_marks marks;
    bool batched;
    int64_t t_batch, t_render;
    size_t batch_size, batch_requests; /* the merged run's instances, requests */
    size_t instances;                  /* a traced request's instances (0: unknown) */
    /* a gRPC call in a batch (srv_http_batch_call): its thread waits on this
     * instead of a suspended connection; its version is the caller's
     * reference (not released here) and its metrics line the caller's */
    struct srv_batch_waiter *waiter;
    int64_t deadline; /* a gRPC call's deadline (rt_time_now_ns), 0: none */
    const _Atomic int *gone; /* a gRPC call's: its client went away, or NULL */
} req;

/* One connection, from libmicrohttpd's STARTED notice to its CLOSED notice
 * (which comes after the completion of its last request). */
struct conn_state {
    req rq;      /* first member: the request in progress; its
                    buffers are reused by the next request */
    srv_conn *c; /* its record in srv_http.conns */
    /* the I/O thread's own: the current request's headers (framing check) */
    srv_field *fields;
    size_t n_fields, cap_fields;
    bool fields_oom;
    const char *route_key; /* X-Predictd-Route-Key of the current request, or NULL */
    size_t route_key_len;
    /* the current request's first Content-Length and Content-Encoding (what
     * MHD_lookup_connection_value would give), found by the same header
     * walk, or NULL */
    const char *content_length, *content_encoding;
    size_t kept;           /* bytes of srv_http.kept its buffers count for */
    bool client_verified;  /* mutual TLS: its client certificate checked (srv_http_sec.c) */
};

/* ---------------------------------------------------- srv_routes.c */

/* The function that answers a routed request whose body is read, on its I/O
 * thread (srv_http_answer calls it). */
typedef enum MHD_Result (*srv_route_answer)(srv_http *h, struct MHD_Connection *conn, req *rq);

/*
 * One endpoint: a row of the route table. path is the pattern the router
 * matches (and docs/daemon.md's endpoint list writes), segment by segment:
 *   /word                 the word itself
 *   /{model}              a model name (not a name: 404 "model '...' not found")
 *   /{project}            any segment (Cloud ML Engine's project)
 *   [/versions/{version}|/labels/{label}]
 *                         optional: a version number or a label name (400
 *                         when not one)
 *   [/versions/{version_or_label}]
 *                         optional: a version number, else a label name
 *   :{predict|classify|...}
 *                         at the end: the verbs the path takes (rt_method
 *                         names), required (an unknown one: 404 with
 *                         verb_help)
 * An optional group is taken when its first word is there and the path
 * has its segments. method "GET" takes HEAD too; another method answers
 * 405. A row's parts are checked once its whole path has matched, except
 * with strict (TF Serving's /v1/models paths): each part is checked as it
 * is read, so a bad name or version answers even when the rest of the path
 * matches no row, and a second /versions or /labels is refused.
 */
typedef struct srv_route_row {
    const char *method;      /* "GET" (and HEAD) or "POST" */
    const char *path;        /* the pattern (above) */
    srv_route_kind kind;     /* what the rest of the front knows the route as */
    unsigned scope;          /* SRV_SCOPE_* a bearer token needs (srv_sec.h); 0 =
                                open; SRV_SCOPE_METRICS is open when
                                metrics_require_token is off */
    srv_route_answer answer; /* answers it (srv_http_answer) */
    const char *protocol;    /* "tfserving", "cmle" or "v2": the API it belongs
                                to (srv_route.v2, .cmle; metrics label) */
    rt_method run;           /* a verb-less inference path: the method it runs */
    bool strict;             /* parts checked as read (above) */
    const char *verb_help;   /* the advice of an unknown verb's 404 */
} srv_route_row;

/* The table, in the order the router tries it, and its length (static;
 * thread-safe). */
const srv_route_row *srv_routes(size_t *n);

/* -------------------------------------------------- srv_http_send.c */

/* Queues b as the answer, with code's Retry-After (429, 503), CORS and
 * X-Predictd-Model-Version (version >= 0) headers, gzip-compressed when
 * gzip_response_min_bytes and the request's Accept-Encoding say so. keep: b stays untouched
 * until the request completes (a connection's own buffer; no copy); else
 * the response takes b's bytes (b is left empty). close: libmicrohttpd
 * closes the connection after it. I/O thread of conn. */
enum MHD_Result srv_http_send(srv_http *h, struct MHD_Connection *conn, unsigned code, rt_buf *b,
                              const char *ctype, bool keep, bool close, int64_t version);
/* A response {"error": msg} with code's headers (as srv_http_send), made
 * once to be queued any number of times with srv_http_send_shared (the
 * cheap answers under overload); NULL when out of memory. Free with
 * MHD_destroy_response. */
struct MHD_Response *srv_http_error_response(srv_http *h, unsigned code, const char *msg);
/* Queues a response made by srv_http_error_response (counted in metrics). */
enum MHD_Result srv_http_send_shared(srv_http *h, struct MHD_Connection *conn, unsigned code,
                                     struct MHD_Response *resp);
/* {"error": msg} with code (5xx but 503 are logged); close as above. */
enum MHD_Result srv_http_send_error_msg(srv_http *h, struct MHD_Connection *conn, unsigned code,
                                        bool close, const char *msg);
/* {"error": printf(fmt, ...)} with code. */
enum MHD_Result srv_http_send_error(srv_http *h, struct MHD_Connection *conn, unsigned code,
                                    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* With a tracer: notes code as the request's status and puts traceparent
 * (and its tracestate) on resp (NULL: a shared response, the status only). */
void srv_http_trace_answer(srv_http *h, struct MHD_Connection *conn, unsigned code,
                           struct MHD_Response *resp);
/* Sends rq->resp, the connection's own answer buffer, with code (no copy). */
enum MHD_Result srv_http_send_computed(srv_http *h, struct MHD_Connection *conn, unsigned code,
                                       req *rq);
/* The HTTP status of a runtime status (400 bad input, 404, 503, 500). */
unsigned srv_http_status(rt_status s);
/* Appends {"error": msg} to out; nonzero when out of memory. */
SRV_WUR int srv_http_put_error(rt_buf *out, const char *msg);
/* Milliseconds since t0 (rt_time_now_ns: CLOCK_MONOTONIC ns). */
double srv_http_ms_since(int64_t t0);

/* ---------------------------------------------------- srv_http_trace.c */

/* At a request's completion: its server span and the child spans of its
 * clock readings (srv_http_trace.c), queued to the tracer when its trace
 * is sampled; nothing otherwise. */
void srv_http_trace_request(srv_http *h, const req *rq);

/* ------------------------------------------------ srv_http_answer.c */

/* Answers a routed request whose body has been read (every route but
 * batched :predict and queued inference), on its I/O thread: 404 for no
 * row, the router's message for a refused one, else the row's answer. */
enum MHD_Result srv_http_answer(srv_http *h, struct MHD_Connection *conn, req *rq,
                                const char *method, const char *url);
/* The rows' answers that are not inference (srv_route_answer): GET
 * /healthz and /v2/health/live, /readyz, /v2/health/ready,
 * /v2/models/{m}/ready, /v1/models, the model's status, its metadata, its
 * monitoring, the Prometheus metrics. */
enum MHD_Result srv_http_answer_healthz(srv_http *h, struct MHD_Connection *conn, req *rq);
enum MHD_Result srv_http_answer_readyz(srv_http *h, struct MHD_Connection *conn, req *rq);
enum MHD_Result srv_http_answer_v2_ready(srv_http *h, struct MHD_Connection *conn, req *rq);
enum MHD_Result srv_http_answer_v2_model_ready(srv_http *h, struct MHD_Connection *conn,
                                               req *rq);
enum MHD_Result srv_http_answer_list(srv_http *h, struct MHD_Connection *conn, req *rq);
enum MHD_Result srv_http_answer_status(srv_http *h, struct MHD_Connection *conn, req *rq);
enum MHD_Result srv_http_answer_metadata(srv_http *h, struct MHD_Connection *conn, req *rq);
enum MHD_Result srv_http_answer_monitoring(srv_http *h, struct MHD_Connection *conn, req *rq);
enum MHD_Result srv_http_answer_metrics(srv_http *h, struct MHD_Connection *conn, req *rq);
/* The version rq's route names (model, version or label), acquired for the
 * caller to release (srv_version_release); NULL when there is none, the
 * manager's error already sent with its status (400, 404, 503) and *res
 * what to return. I/O thread of conn. */
srv_version *srv_http_acquire(srv_http *h, struct MHD_Connection *conn, const req *rq,
                              enum MHD_Result *res);

/* ---------------------------------------------------- srv_http_v2.c */

/* GET /v2: the server metadata answer (srv_route_answer). */
enum MHD_Result srv_http_v2_server(srv_http *h, struct MHD_Connection *conn, req *rq);
/* GET /v2/models/{m}[/versions/{v}]: the model metadata answer (404/400/503
 * as the model's other routes; srv_route_answer). */
enum MHD_Result srv_http_v2_metadata(srv_http *h, struct MHD_Connection *conn, req *rq);
/* Triton's extensions: GET /v2/models/{m}[/versions/{v}]/config (model
 * configuration), GET .../stats (statistics, from the metrics), POST
 * /v2/repository/index (every version's state). */
enum MHD_Result srv_http_v2_config(srv_http *h, struct MHD_Connection *conn, req *rq);
enum MHD_Result srv_http_v2_stats(srv_http *h, struct MHD_Connection *conn, req *rq);
enum MHD_Result srv_http_v2_repository_index(srv_http *h, struct MHD_Connection *conn, req *rq);
/* Reads a /v2 infer request's Inference-Header-Content-Length into
 * rq->v2_header (RT_V2_NO_HEADER when absent); false when it is not a
 * decimal number. */
bool srv_http_v2_header(struct MHD_Connection *conn, req *rq);

/* ------------------------------------------------- srv_http_infer.c */

/* Draws an inference request's traffic split (X-Predictd-Route-Key's hash,
 * else random) and sampling numbers from the I/O thread's generator; false
 * when the thread's state cannot be made (out of memory). I/O thread. */
bool srv_http_draw_route(srv_http *h, const conn_state *cs, req *rq);
/* Runs an inference request here, on its I/O thread, and answers it. */
enum MHD_Result srv_http_answer_infer(srv_http *h, struct MHD_Connection *conn, req *rq);
/* With workers: queues rq (its connection suspended until a worker has
 * answered it: req.done) or answers 429 at once when the queue refuses it. */
enum MHD_Result srv_http_enqueue(srv_http *h, struct MHD_Connection *conn, req *rq);
/* Without workers: true when rq (an inference request, its body read
 * whole) is too heavy for its I/O thread: an :explain, or a body over
 * max_inline_request_bytes. */
bool srv_http_heavy(const srv_http *h, const req *rq);
/* Without workers: queues a heavy request to the offload threads, its
 * connection suspended until one has its answer (as a worker's), so that
 * the I/O thread goes on serving its other connections; or answers 429 at
 * once when SRV_OFFLOAD_QUEUE_MAX wait already. */
enum MHD_Result srv_http_offload(srv_http *h, struct MHD_Connection *conn, req *rq);
/* An offload thread runs a queued heavy request, then hands the connection
 * back (srv_pool's job function). */
void srv_http_offload_job(void *fn_ctx, void *job, int thread);
/* The message of those 429s into msg (by_limit: over the admission limit;
 * else the queue refused). */
void srv_http_busy_message(const srv_http *h, bool by_limit, char *msg, size_t len);
/* At a request's completion: gives back its admission slot if it still
 * holds one (its worker gives it back when the run ends; one that never
 * ran, only the slot). */
void srv_http_admit_release(srv_http *h, req *rq);
/* The workers' job function (srv_pool): runs a queued request, resumes its
 * connection. */
void srv_http_worker_job(void *fn_ctx, void *job, int worker);

/* ------------------------------------------------- srv_http_batch.c */

/* A :predict request with batching on: parsed here, then it joins a batch
 * (connection suspended until a batch thread resumes it) or runs alone
 * (empty, or over max_batch_size); a full batch queue answers 429. */
enum MHD_Result srv_http_batch_enter(srv_http *h, struct MHD_Connection *conn, req *rq);
/* The batch threads' job function (srv_batcher): runs one batch. */
void srv_http_batch_job(void *fn_ctx, void *const *jobs, size_t n, int thread);

/* ----------------------------------------------- srv_http_request.c */

/* libmicrohttpd's callbacks (srv_http_start installs them; cls is the
 * srv_http): a request's calls, its completion, connection notices and
 * the request line's arrival. */
enum MHD_Result srv_http_on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                    const char *method, const char *version,
                                    const char *upload_data, size_t *upload_data_size,
                                    void **con_cls);
void srv_http_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                           enum MHD_RequestTerminationCode toe);
void srv_http_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                            enum MHD_ConnectionNotificationCode toe);
void *srv_http_on_request_line(void *cls, const char *uri, struct MHD_Connection *conn);

/* ------------------------------------------ server/ui/srv_ui.c */

/* The console's answers (srv_route_answer): GET /ui, /ui/console.css,
 * /ui/console.js (the files built into the binary) and /ui/api/traffic
 * (metrics snapshots and recent errors, JSON); 404 with ui_enabled off. */
enum MHD_Result srv_ui_answer_page(srv_http *h, struct MHD_Connection *conn, req *rq);
enum MHD_Result srv_ui_answer_css(srv_http *h, struct MHD_Connection *conn, req *rq);
enum MHD_Result srv_ui_answer_js(srv_http *h, struct MHD_Connection *conn, req *rq);
enum MHD_Result srv_ui_answer_traffic(srv_http *h, struct MHD_Connection *conn, req *rq);
/* server/ui/srv_ui_errors.c: keeps a refused answer (code >= 400, its
 * body's first bytes; no request body) for the console's recent errors;
 * appends them as the members "errors_total": N, "errors": [...] (newest
 * first; nonzero when out of memory). Thread-safe. */
void srv_ui_note_error(unsigned code, const char *body, size_t len);
SRV_WUR int srv_ui_errors_json(rt_buf *out);

/* ------------------------------------------------ srv_http_sec.c */

/* The security gate of a routed request (mutual TLS, bearer tokens): -1
 * when it may go on, else the result of the refusal it queued. */
int srv_http_sec_gate(srv_http *h, struct MHD_Connection *conn, const srv_route *route,
                      const char *method);
/* Appends the TLS and token metrics (nothing when neither is on); nonzero
 * when out of memory. */
SRV_WUR int srv_http_sec_metrics(srv_http *h, rt_buf *out);

#endif /* PREDICTD_SRV_HTTP_INTERNAL_H */
