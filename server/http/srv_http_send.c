/*
 * srv_http_send.c — how predictd's answers go out, in TensorFlow Serving's
 * shapes: JSON with Content-Type application/json, errors as {"error":
 * "..."} with the HTTP status of the runtime's status, Retry-After on 429
 * and 503, the served version in X-Predictd-Model-Version, gzip when the
 * client takes it (gzip_response_min_bytes), v2 binary tensors after their
 * JSON header. Every part of the HTTP front sends through here
 * (srv_http_answer.c, srv_http_infer.c, srv_http_v2.c, srv_http_sec.c,
 * srv_http_request.c); this file calls none of them. Runs on
 * libmicrohttpd's I/O threads and the workers.
 */
#include "srv_http_internal.h"
#include "srv_sec.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* gzip_response_min_bytes: true with b compressed into z (the caller frees
 * it) when the answer is large enough and the client's Accept-Encoding
 * takes gzip; false to answer b as it is. */
static bool gzip_answer(srv_http *h, struct MHD_Connection *conn, const rt_buf *b, rt_buf *z)
{
    if (!h->cfg.gzip_response_min_bytes || b->len < h->cfg.gzip_response_min_bytes ||
        !srv_gzip_accepted(MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                       MHD_HTTP_HEADER_ACCEPT_ENCODING)))
        return false;
    rt_buf_init(z);
    if (srv_gzip_compress(b->data, b->len, z) != 0) {
        rt_buf_free(z);
        return false; /* answered uncompressed */
    }
    return true;
}

/* The response srv_http_send queues (see there), or NULL. */
static struct MHD_Response *make_response(srv_http *h, unsigned code, rt_buf *b,
                                          const char *ctype, bool keep, bool close,
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
        return NULL;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    if (h->cfg.enable_cors)
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
    return resp;
}

/* Queues b as the answer. With keep, b must stay untouched until the request
 * completes (a connection's own answer buffer): no copy is made. Otherwise
 * the response takes b's bytes (b is left empty). */
/* The request's trace context: its status noted, traceparent (and the
 * tracestate it came with) on the answer. */
void srv_http_trace_answer(srv_http *h, struct MHD_Connection *conn, unsigned code,
                           struct MHD_Response *resp)
{
    if (!h->tracer)
        return;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    conn_state *cs = ci ? ci->socket_context : NULL;
    if (!cs || !cs->rq.trace.active)
        return;
    cs->rq.trace.status = code;
    if (!resp)
        return;
    char tp[56];
    srv_trace_header(&cs->rq.trace, tp);
    MHD_add_response_header(resp, "traceparent", tp);
    if (cs->rq.trace.tracestate[0])
        MHD_add_response_header(resp, "tracestate", cs->rq.trace.tracestate);
}

enum MHD_Result srv_http_send(srv_http *h, struct MHD_Connection *conn, unsigned code, rt_buf *b,
                              const char *ctype, bool keep, bool close, int64_t version)
{
    if (code >= 400 && b->data) /* the console's recent errors (server/ui/srv_ui.c) */
        srv_ui_note_error(code, b->data, b->len);
    rt_buf z; /* Accept-Encoding: gzip, over gzip_response_min_bytes (srv_http_sec.c) */
    bool gz = gzip_answer(h, conn, b, &z);
    struct MHD_Response *resp = make_response(h, code, gz ? &z : b, ctype, keep && !gz, close,
                                              version);
    if (gz) {
        rt_buf_free(&z);
        if (!keep)
            rt_buf_free(b); /* as if the response had taken it */
        if (resp) {
            MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
            MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, "Accept-Encoding");
        }
    }
    srv_http_trace_answer(h, conn, code, resp);
    if (!resp)
        return MHD_NO;
    srv_metrics_http(h->p.metrics, (int)code);
    enum MHD_Result r = MHD_queue_response(conn, code, resp);
    MHD_destroy_response(resp);
    return r;
}

struct MHD_Response *srv_http_error_response(srv_http *h, unsigned code, const char *msg)
{
    rt_buf b;
    rt_buf_init(&b);
    struct MHD_Response *resp = NULL;
    if (srv_http_put_error(&b, msg) == 0)
        resp = make_response(h, code, &b, "application/json", false, false, -1);
    rt_buf_free(&b);
    return resp;
}

enum MHD_Result srv_http_send_shared(srv_http *h, struct MHD_Connection *conn, unsigned code,
                                     struct MHD_Response *resp)
{
    srv_metrics_http(h->p.metrics, (int)code);
    srv_http_trace_answer(h, conn, code, NULL); /* shared: no header of its own */
    return MHD_queue_response(conn, code, resp);
}

/* {"error": msg} with code; close: the connection is closed after it. */
enum MHD_Result srv_http_send_error_msg(srv_http *h, struct MHD_Connection *conn, unsigned code,
                                        bool close, const char *msg)
{
    rt_buf b;
    rt_buf_init(&b);
    rt_buf_puts(&b, "{\"error\": ");
    rt_buf_json_string(&b, msg, strlen(msg));
    int r = rt_buf_puts(&b, "}"); /* its errors stick: the last append's is every one's */
    if (r) {
        rt_buf_free(&b);
        return MHD_NO;
    }
    if (code >= 500 && code != 503)
        srv_log(SRV_LOG_WARN, "answered %u: %s", code, msg);
    enum MHD_Result res = srv_http_send(h, conn, code, &b, "application/json", false, close, -1);
    rt_buf_free(&b);
    return res;
}

enum MHD_Result srv_http_send_error(srv_http *h, struct MHD_Connection *conn, unsigned code,
                                    const char *fmt, ...)
{
    char msg[RT_ERR_MAX + 128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return srv_http_send_error_msg(h, conn, code, false, msg);
}

unsigned srv_http_status(rt_status s)
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

double srv_http_ms_since(int64_t t0)
{
    return (double)(rt_time_now_ns() - t0) / 1e6;
}

/* Appends {"error": msg} to out. */
int srv_http_put_error(rt_buf *out, const char *msg)
{
    rt_buf_puts(out, "{\"error\": ");
    rt_buf_json_string(out, msg, strlen(msg));
    return rt_buf_puts(out, "}"); /* its errors stick: the last append's is every one's */
}

/* Sends a computed answer: rq->resp, the connection's own buffer (no copy). */
enum MHD_Result srv_http_send_computed(srv_http *h, struct MHD_Connection *conn, unsigned code,
                                       req *rq)
{
    rt_buf *out = &rq->resp;
    /* an answer (or its error) that could not be written whole: no half
     * answer goes out; libmicrohttpd closes the connection */
    if (rt_buf_failed(out))
        return MHD_NO;
    if (code >= 500 && code != 503)
        srv_log(SRV_LOG_WARN, "answered %u: %.300s", code, out->data ? out->data : "");
    if (code != 200 || !rq->v2_answer)
        return srv_http_send(h, conn, code, out, "application/json", true, false, rq->served);
    /* binary tensors follow the JSON (the binary tensor data extension) */
    struct MHD_Response *resp = make_response(h, code, out, "application/octet-stream", true,
                                              false, rq->served);
    if (!resp)
        return MHD_NO;
    char n[24];
    snprintf(n, sizeof n, "%zu", rq->v2_answer);
    MHD_add_response_header(resp, "Inference-Header-Content-Length", n);
    srv_http_trace_answer(h, conn, code, resp);
    srv_metrics_http(h->p.metrics, (int)code);
    enum MHD_Result r = MHD_queue_response(conn, code, resp);
    MHD_destroy_response(resp);
    return r;
}

