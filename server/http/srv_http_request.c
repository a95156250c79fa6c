/*
 * srv_http_request.c — a request's life on its libmicrohttpd I/O thread:
 * the headers (framing checks against smuggling, routing, the traffic
 * split's draws), the body gathered under its hard caps (413 without
 * reading the rest; 429 past the budget of bodies held at once), dispatch
 * (answered here, queued to the workers, or batched), and completion (the
 * shadow and prediction-log taps, buffers kept or freed). Each connection
 * keeps one request record whose body and answer buffers are reused by
 * every request of the connection (the answer is handed to libmicrohttpd
 * without a copy: it stays untouched until the request completes).
 *
 * Connections are registered with srv_conn.c, which keeps their number
 * under max_connections and closes those that are too slow to send a
 * request header or a whole request.
 */
#include "srv_http_internal.h"
#include "srv_limits.h"
#include "srv_sec.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------ request bodies held at once */

/* Takes n bytes of the budget for request bodies held at once (a
 * Content-Length when the headers arrive, else each chunk as it comes);
 * false, taking nothing, when they do not fit under max_total_request_bytes. */
static bool hold_body(srv_http *h, req *rq, size_t n)
{
    size_t was = atomic_fetch_add(&h->held, n);
    if (n > h->cfg.max_total_request_bytes || was > h->cfg.max_total_request_bytes - n) {
        atomic_fetch_sub(&h->held, n);
        return false;
    }
    rq->held += n;
    if (was + n > SRV_TRIM_AFTER)
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

enum MHD_Result srv_http_send_error(srv_http *h, struct MHD_Connection *conn, unsigned code,
                                    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* 429 for a body that does not fit under max_total_request_bytes. */
static enum MHD_Result refuse_body(srv_http *h, struct MHD_Connection *conn, req *rq,
                                   unsigned long long n)
{
    rq->answered = true;
    srv_metrics_rejected(h->p.metrics, "body_memory");
    return srv_http_send_error(
        h, conn, 429,
        "overloaded: %zu bytes of request bodies are being received and %llu "
        "more would pass max_total_request_bytes=%zu; retry later",
        (size_t)atomic_load(&h->held), n, h->cfg.max_total_request_bytes);
}

/* The Prometheus metrics answer at h->metrics_path (TF Serving's
 * monitoring config may move them, or turn them off) and, whenever they are
 * served at all, at /metrics too (the path Prometheus and Kubernetes scrape
 * by default), with the same body and scope. */
static void route_metrics(const srv_http *h, const char *method, const char *url, srv_route *r)
{
    bool here = h->metrics_path[0] &&
                (!strcmp(url, h->metrics_path) || !strcmp(url, "/metrics"));
    if (r->kind == SRV_ROUTE_METRICS && !here) {
        memset(r, 0, sizeof *r);
        r->kind = SRV_ROUTE_NONE;
        r->version = -1;
    } else if (here && r->kind != SRV_ROUTE_METRICS) {
        srv_route_as(SRV_ROUTE_METRICS, method, r);
    }
}

/* Vertex AI's routes (aip_predict_route, aip_health_route: AIP_PREDICT_ROUTE
 * and AIP_HEALTH_ROUTE) are other paths of two rows: the one model's
 * /v1/models/MODEL:predict and /v2/health/ready. */
static void route_vertex(const srv_http *h, const char *method, const char *url, srv_route *r)
{
    if (h->aip_predict_target[0] && !strcmp(url, h->cfg.aip_predict_route))
        srv_route_request(method, h->aip_predict_target, r);
    else if (h->cfg.aip_health_route && !strcmp(url, h->cfg.aip_health_route))
        srv_route_request(method, "/v2/health/ready", r);
}

/* ------------------------------------------------ libmicrohttpd glue */

/* Collects one header into the connection's reused field array. */
static enum MHD_Result collect_field(void *cls, enum MHD_ValueKind kind, const char *key,
                                     size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    conn_state *cs = cls;
    if (rt_grow(&cs->fields, &cs->cap_fields, cs->n_fields + 1, sizeof *cs->fields) != 0) {
        cs->fields_oom = true;
        return MHD_NO;
    }
    cs->fields[cs->n_fields++] =
        (srv_field){key, key_size, value ? value : "", value ? value_size : 0};
    if (!value)
        return MHD_YES;
    if (key_size == 20 && !strncasecmp(key, "X-Predictd-Route-Key", 20)) {
        cs->route_key = value;
        cs->route_key_len = value_size;
    } else if (key_size == 14 && !cs->content_length && !strncasecmp(key, "Content-Length", 14)) {
        cs->content_length = value;
    } else if (key_size == 16 && !cs->content_encoding &&
               !strncasecmp(key, "Content-Encoding", 16)) {
        cs->content_encoding = value;
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
    cs->content_length = cs->content_encoding = NULL;
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
        code = srv_framing_check_block(method, ci->header_size, version, cs->fields, cs->n_fields,
                                       why, why_len);
#else
    (void)method;
#endif
    if (!code)
        code = srv_framing_check(cs->fields, cs->n_fields,
                                 version && !strcmp(version, MHD_HTTP_VERSION_1_0), why, why_len);
    return (unsigned)code;
}

/* A CORS preflight (enable_cors): 204 with the allowed methods and headers. */
static enum MHD_Result answer_preflight(struct MHD_Connection *conn, req *rq)
{
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

/* Content-Length: 413 over max_request_bytes at once; else the whole
 * body's bytes are held from now on (429 past the budget). */
static enum MHD_Result check_length(srv_http *h, struct MHD_Connection *conn, req *rq)
{
    const char *cl = ((conn_state *)rq)->content_length;
    if (!cl)
        return MHD_YES;
    char *end = NULL;
    unsigned long long n = strtoull(cl, &end, 10);
    if (end && *end == '\0' && n > h->cfg.max_request_bytes) {
        rq->answered = true;
        srv_metrics_rejected(h->p.metrics, "too_large");
        return srv_http_send_error(h, conn, 413,
                                   "request body of %llu bytes is over the limit of %zu bytes "
                                   "(max_request_bytes)",
                                   n, h->cfg.max_request_bytes);
    }
    /* the whole body's bytes are held from now on */
    if (end && *end == '\0' && n > 0 && !hold_body(h, rq, (size_t)n))
        return refuse_body(h, conn, rq, n);
    return MHD_YES;
}

/* A new request on this connection, its headers read: the connection's
 * request record reset for it (its buffers kept), then the framing checks,
 * a CORS preflight, routing, the security gate, Content-Encoding, the
 * traffic split's draw, the v2 binary header and Content-Length, each of
 * which may answer at once. */
static enum MHD_Result on_headers(srv_http *h, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, void **con_cls)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    conn_state *cs = ci ? ci->socket_context : NULL;
    if (!cs)
        return MHD_NO;
    req *rq = &cs->rq;
    rt_buf keep_body = rq->body, keep_resp = rq->resp;
    memset(rq, 0, sizeof *rq);
    rq->body = keep_body;
    rq->resp = keep_resp;
    rt_buf_reset(&rq->body);
    rt_buf_reset(&rq->resp);
    rq->served = -1;
    rq->start = rt_time_now_ns();
    if (h->tracer)
        srv_trace_begin(h->tracer, MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "traceparent"),
                        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "tracestate"), method,
                        url, &rq->trace);
    *con_cls = rq;
    rq->counted = true;
    atomic_fetch_add(&h->active, 1);
    srv_conn_headers_done(cs->c);
    char why[256];
    unsigned bad = check_framing(conn, cs, method, version, why, sizeof why);
    if (bad) {
        rq->answered = true;
        srv_metrics_rejected(h->p.metrics, bad == 501 ? "unsupported_coding" : "bad_framing");
        if (bad != 501) /* srv_http_send_error_msg logs 501 itself */
            srv_log(SRV_LOG_WARN, "refused a request (400, connection closed): %s", why);
        return srv_http_send_error_msg(h, conn, bad, true, why);
    }
    if (h->cfg.enable_cors && !strcmp(method, "OPTIONS"))
        return answer_preflight(conn, rq);
    srv_route_request(method, url, &rq->route);
    route_metrics(h, method, url, &rq->route);
    route_vertex(h, method, url, &rq->route);
    int gate = srv_http_sec_gate(h, conn, &rq->route, method);
    if (gate >= 0) {
        rq->answered = true;
        return (enum MHD_Result)gate;
    }
    const char *ce = cs->content_encoding;
    int coding = srv_gzip_coding(ce);
    if (coding < 0) {
        rq->answered = true;
        srv_metrics_rejected(h->p.metrics, "unsupported_coding");
        return srv_http_send_error(h, conn, 415,
                                   "Content-Encoding '%.64s' is not supported (gzip and "
                                   "identity are)", ce);
    }
    rq->gzipped = coding == 1;
    if (rq->route.kind == SRV_ROUTE_INFER && !srv_http_draw_route(h, cs, rq)) {
        rq->answered = true;
        return srv_http_send_error(h, conn, 503, "out of memory");
    }
    if (rq->route.kind == SRV_ROUTE_INFER && rq->route.method == RT_METHOD_INFER &&
        !srv_http_v2_header(conn, rq)) {
        rq->answered = true;
        return srv_http_send_error(h, conn, 400,
                                   "Inference-Header-Content-Length must be a number of "
                                   "bytes (the length of the JSON header)");
    }
    return check_length(h, conn, rq);
}

/* A chunk of the body: appended under max_request_bytes and the budget of
 * bodies held at once, or discarded after an answer. */
static enum MHD_Result on_body_chunk(srv_http *h, struct MHD_Connection *conn, req *rq,
                                     const char *upload_data, size_t *upload_data_size)
{
    size_t n = *upload_data_size;
    *upload_data_size = 0;
    if (rq->answered)
        return MHD_YES; /* discard */
    if (n > h->cfg.max_request_bytes || rq->body.len > h->cfg.max_request_bytes - n) {
        rq->answered = true;
        srv_metrics_rejected(h->p.metrics, "too_large");
        rt_buf_free(&rq->body);
        return srv_http_send_error(
            h, conn, 413, "request body is over the limit of %zu bytes (max_request_bytes)",
            h->cfg.max_request_bytes);
    }
    /* a chunked body is held chunk by chunk (past the budget the
     * connection is closed: no answer can be queued mid-upload) */
    if (rq->held < rq->body.len + n && !hold_body(h, rq, rq->body.len + n - rq->held))
        return refuse_body(h, conn, rq, n);
    /* one allocation of the announced size rather than doublings */
    if (rq->held > rq->body.cap && rt_buf_reserve(&rq->body, rq->held) != 0) {
        rq->answered = true;
        return srv_http_send_error(h, conn, 500, "out of memory reading the request body");
    }
    if (rt_buf_append(&rq->body, upload_data, n) != 0) {
        rq->answered = true;
        return srv_http_send_error(h, conn, 500, "out of memory reading the request body");
    }
    return MHD_YES;
}

/* Content-Encoding: gzip: the body inflated under max_request_bytes
 * (srv_gzip.c), the inflated bytes held like a body's. MHD_YES with
 * rq->answered false to go on; else the refusal's result. */
static enum MHD_Result inflate_body(srv_http *h, struct MHD_Connection *conn, req *rq)
{
    rt_buf plain;
    rt_buf_init(&plain);
    rt_err gerr = {{0}};
    rt_status gs = srv_gunzip(rq->body.data, rq->body.len, h->cfg.max_request_bytes, &plain, &gerr);
    rt_buf_free(&rq->body);
    rq->body = plain;
    if (gs != RT_OK) {
        rq->answered = true;
        rt_buf_free(&rq->body);
        srv_metrics_rejected(h->p.metrics, gs == RT_ERR_LIMIT ? "too_large" : "bad_gzip");
        return srv_http_send_error(h, conn, gs == RT_ERR_LIMIT ? 413 : 400, "%s", gerr.msg);
    }
    size_t inflated = rq->body.len;
    if (inflated > rq->held && !hold_body(h, rq, inflated - rq->held)) {
        rt_buf_free(&rq->body);
        return refuse_body(h, conn, rq, inflated);
    }
    return MHD_YES;
}

enum MHD_Result srv_http_on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                    const char *method, const char *version,
                                    const char *upload_data, size_t *upload_data_size,
                                    void **con_cls)
{
    srv_http *h = cls;
    req *rq = *con_cls;
    if (!rq) /* a new request on this connection: reuse its record and buffers */
        return on_headers(h, conn, url, method, version, con_cls);
    if (*upload_data_size)
        return on_body_chunk(h, conn, rq, upload_data, upload_data_size);
    /* The request has been read whole: the read deadline is over for it. */
    srv_conn_read_done(((conn_state *)rq)->c);
    if (rq->done) {
        /* Resumed after a worker ran it. */
        rq->done = false;
        enum MHD_Result res = srv_http_send_computed(h, conn, rq->code, rq);
        return res;
    }
    if (rq->answered)
        return MHD_YES;
    if (rq->gzipped) {
        enum MHD_Result r = inflate_body(h, conn, rq);
        if (rq->answered || r != MHD_YES)
            return r;
    }
    rq->answered = true;
    if (h->batcher && rq->route.kind == SRV_ROUTE_INFER &&
        srv_http_batched_method(rq->route.method))
        return srv_http_batch_enter(h, conn, rq);
    if (h->workers && rq->route.kind == SRV_ROUTE_INFER)
        return srv_http_enqueue(h, conn, rq);
    /* without workers a heavy request (an :explain, a large body) leaves
     * the I/O thread, which goes on answering its other connections
     * (issue 35, item 1) */
    if (rq->route.kind == SRV_ROUTE_INFER && srv_http_heavy(h, rq))
        return srv_http_offload(h, conn, rq);
    int64_t t0 = rq->t_run = rt_time_now_ns(); /* an inference's start too */
    srv_metrics_in_flight(h->p.metrics, 1, 0);
    enum MHD_Result res = srv_http_answer(h, conn, rq, method, url);
    srv_metrics_in_flight(h->p.metrics, -1, (double)(rt_time_now_ns() - t0) / 1e9);
    return res;
}

void srv_http_tap(srv_http *h, const srv_served *s, srv_pick *pick)
{
    srv_version *shadow = pick->shadow;
    pick->shadow = NULL;
    if (s->version < 0 || !(shadow || pick->log)) {
        srv_version_release(shadow);
        return;
    }
    if (pick->log)
        srv_predlog_submit(h->predlog, s);
    if (shadow && s->code == 200)
        srv_shadow_submit(h->shadow, s, shadow);
    else
        srv_version_release(shadow);
}

/* Queues what a request's routing sampled, now that its answer is sent:
 * its shadow run (if the served version answered 200) and its log line.
 * Both copy; neither blocks (a full queue drops and counts). */
static void tap_request(srv_http *h, req *rq)
{
    srv_served s = {rq->route.model,
                    rq->served,
                    rq->route.method,
                    (int)rq->code,
                    srv_http_ms_since(rq->start) / 1e3,
                    rt_time_seconds(1),
                    rq->body.data,
                    rq->body.len,
                    rq->resp.data,
                    rq->resp.len,
                    SRV_PROTO_REST,
                    NULL};
    srv_http_tap(h, &s, &rq->pick);
}

/* The bytes of cs's buffers over SRV_CONN_BUF_KEEP, which count in h->kept. */
static size_t large_bytes(const conn_state *cs)
{
    return (cs->rq.body.cap > SRV_CONN_BUF_KEEP ? cs->rq.body.cap : 0) +
           (cs->rq.resp.cap > SRV_CONN_BUF_KEEP ? cs->rq.resp.cap : 0);
}

/* After a request: cs keeps its large buffers for the next one when they
 * fit under SRV_CONN_KEEP_TOTAL with every other connection's, else frees them. */
static void keep_buffers(srv_http *h, conn_state *cs)
{
    size_t want = large_bytes(cs);
    if (want <= cs->kept) {
        atomic_fetch_sub(&h->kept, cs->kept - want);
        cs->kept = want;
        return;
    }
    size_t more = want - cs->kept;
    size_t was = atomic_fetch_add(&h->kept, more);
    if (was + more <= SRV_CONN_KEEP_TOTAL) {
        cs->kept = want;
        return;
    }
    atomic_fetch_sub(&h->kept, more + cs->kept);
    cs->kept = 0;
    if (cs->rq.body.cap > SRV_CONN_BUF_KEEP)
        rt_buf_free(&cs->rq.body);
    if (cs->rq.resp.cap > SRV_CONN_BUF_KEEP)
        rt_buf_free(&cs->rq.resp);
}

void srv_http_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
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
    srv_http_admit_release(h, rq);
    tap_request(h, rq);
    srv_http_trace_request(h, rq);
    keep_buffers(h, (conn_state *)rq);
    release_body(h, rq);
    rq->counted = false;
    *con_cls = NULL;
    srv_conn_request_done(((conn_state *)rq)->c);
}

/* libmicrohttpd's connection notices: a connection's record is made when it
 * opens and freed when it closes (after its last request completed; the
 * socket is closed only after this notice, so the sweeper may shut it down
 * while holding conn_mu). */
void srv_http_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                            enum MHD_ConnectionNotificationCode toe)
{
    srv_http *h = cls;
    conn_state *cs = *socket_context;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        int fd = ci ? ci->connect_fd : -1;
        cs = calloc(1, sizeof *cs);
        if (cs &&
            !(cs->c = srv_conns_add(h->conns, fd, fd >= 0 && fd == atomic_load(&h->probe_fd)))) {
            free(cs);
            cs = NULL;
        }
        if (!cs)
            return; /* srv_http_on_request refuses such a connection */
        rt_buf_init(&cs->rq.body);
        rt_buf_init(&cs->rq.resp);
        *socket_context = cs;
        if (h->p.tls) { /* plain HTTP to the TLS port gets a 400 (srv_tls.c) */
            ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
            srv_tls_guard_plain(ci ? ci->tls_session : NULL);
        }
        return;
    }
    if (h->p.tls) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
        srv_tls_conn_closed(ci ? ci->tls_session : NULL);
    }
    if (!cs)
        return;
    srv_conns_remove(h->conns, cs->c);
    atomic_fetch_sub(&h->kept, cs->kept);
    rt_buf_free(&cs->rq.body);
    rt_buf_free(&cs->rq.resp);
    free(cs->fields);
    free(cs);
    *socket_context = NULL;
}

/* libmicrohttpd's URI callback: a request line arrived (the header
 * deadline of a keep-alive connection's next request starts). Returns the
 * request's first context: none. */
void *srv_http_on_request_line(void *cls, const char *uri, struct MHD_Connection *conn)
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
