/*
 * srv_http_answer.c — predictd's answers in TensorFlow Serving's shapes: JSON
 * with Content-Type application/json, errors as {"error": "..."} with the
 * HTTP status of the runtime's status, Retry-After on 429 and 503, the
 * served version in X-Predictd-Model-Version; and the routes that are not
 * inference (health and readiness, model list, status, metadata, metrics).
 * Runs on libmicrohttpd's I/O threads.
 */
#include "srv_http_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
    return resp;
}

/* Queues b as the answer. With keep, b must stay untouched until the request
 * completes (a connection's own answer buffer): no copy is made. Otherwise
 * the response takes b's bytes (b is left empty). */
enum MHD_Result srv_http_send(srv_http *h, struct MHD_Connection *conn, unsigned code, rt_buf *b,
                              const char *ctype, bool keep, bool close, int64_t version)
{
    rt_buf z; /* Accept-Encoding: gzip, over gzip_response_min_bytes (srv_http_sec.c) */
    bool gz = srv_http_gzip_answer(h, conn, b, &z);
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
    return MHD_queue_response(conn, code, resp);
}

static enum MHD_Result send_buf(srv_http *h, struct MHD_Connection *conn, unsigned code, rt_buf *b,
                                const char *ctype)
{
    return srv_http_send(h, conn, code, b, ctype, false, false, -1);
}

static enum MHD_Result send_json(srv_http *h, struct MHD_Connection *conn, unsigned code, rt_buf *b)
{
    return send_buf(h, conn, code, b, "application/json");
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

double srv_http_ms_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
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
    srv_metrics_http(h->p.metrics, (int)code);
    enum MHD_Result r = MHD_queue_response(conn, code, resp);
    MHD_destroy_response(resp);
    return r;
}

static enum MHD_Result answer_metadata(srv_http *h, struct MHD_Connection *conn, const srv_route *r)
{
    rt_err err = {{0}};
    srv_version *v = NULL;
    rt_status st = srv_manager_acquire(h->mgr, r->model, r->version, r->label, &v, &err);
    if (st != RT_OK)
        return srv_http_send_error(h, conn, srv_http_status(st), "%s", err.msg);
    rt_buf out;
    rt_buf_init(&out);
    st = rt_json_metadata(srv_version_model(v), r->model, srv_version_number(v), &out);
    srv_version_release(v);
    enum MHD_Result res =
        st == RT_OK ? send_json(h, conn, 200, &out)
                    : srv_http_send_error(h, conn, 500, "metadata: %s", rt_status_str(st));
    rt_buf_free(&out);
    return res;
}

/* GET .../monitoring: the version's skew and drift (srv_monitor_json). */
static enum MHD_Result answer_monitoring(srv_http *h, struct MHD_Connection *conn,
                                         const srv_route *r)
{
    rt_err err = {{0}};
    srv_version *v = NULL;
    rt_status st = srv_manager_acquire(h->mgr, r->model, r->version, r->label, &v, &err);
    if (st != RT_OK)
        return srv_http_send_error(h, conn, srv_http_status(st), "%s", err.msg);
    srv_monitor *mon = srv_version_monitor(v);
    if (!mon) {
        int64_t num = srv_version_number(v);
        bool stats = rt_model_stats(srv_version_model(v)) != NULL;
        srv_version_release(v);
        return srv_http_send_error(h, conn, 404,
                                   "model %s version %lld is not monitored: %s", r->model,
                                   (long long)num,
                                   stats ? "the model's config has no \"monitoring\" key"
                                         : "its export has no training statistics "
                                           "(statistics.json)");
    }
    rt_buf out;
    rt_buf_init(&out);
    st = srv_monitor_json(mon, &out);
    srv_version_release(v);
    enum MHD_Result res = st == RT_OK ? send_json(h, conn, 200, &out)
                                      : srv_http_send_error(h, conn, 500, "out of memory");
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

enum MHD_Result srv_http_answer(srv_http *h, struct MHD_Connection *conn, req *rq,
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
        return srv_http_send_error(h, conn, 404,
                                   "no such path: %.16s %.200s (see GET /v1/models, "
                                   "POST /v1/models/NAME:predict)",
                                   method, url);
    case SRV_ROUTE_BAD: return srv_http_send_error(h, conn, (unsigned)r->http_code, "%s", r->msg);
    case SRV_ROUTE_HEALTHZ:
        return answer_simple(h, conn, 200, r->v2 ? "{\"live\": true}" : "{\"status\": \"alive\"}");
    case SRV_ROUTE_READYZ:
        if (is_draining(h))
            return srv_http_send_error(h, conn, 503, "not ready: draining");
        if (!srv_manager_ready(h->mgr, why, sizeof why))
            return srv_http_send_error(h, conn, 503, "not ready: %s", why);
        return answer_simple(h, conn, 200, "{\"status\": \"ready\"}");
    case SRV_ROUTE_V2_READY:
        if (is_draining(h) || !srv_manager_ready(h->mgr, why, sizeof why))
            return answer_simple(h, conn, 503, "{\"ready\": false}");
        return answer_simple(h, conn, 200, "{\"ready\": true}");
    case SRV_ROUTE_V2_MODEL_READY: {
        srv_version *v = NULL;
        rt_status st = srv_manager_acquire(h->mgr, r->model, r->version, r->label, &v, &err);
        srv_version_release(v);
        /* an unknown model, version or label: /v1's 404 or 400; a known
         * model without a version yet: not ready (503) */
        if ((st == RT_ERR_NOTFOUND &&
             (r->version >= 0 || !srv_manager_has_model(h->mgr, r->model))) ||
            st == RT_ERR_INVALID)
            return srv_http_send_error(h, conn, srv_http_status(st), "%s", err.msg);
        bool ok = st == RT_OK;
        rt_buf_puts(&out, "{\"name\": ");
        rt_buf_json_string(&out, r->model, strlen(r->model));
        rt_buf_printf(&out, ", \"ready\": %s}", ok ? "true" : "false");
        res = rt_buf_failed(&out) ? MHD_NO : send_json(h, conn, ok ? 200 : 503, &out);
        rt_buf_free(&out);
        return res;
    }
    case SRV_ROUTE_V2_SERVER: return srv_http_v2_server(h, conn);
    case SRV_ROUTE_V2_METADATA: return srv_http_v2_metadata(h, conn, r);
    case SRV_ROUTE_LIST:
        if (srv_manager_list_json(h->mgr, &out) != RT_OK) {
            rt_buf_free(&out);
            return srv_http_send_error(h, conn, 500, "out of memory");
        }
        res = send_json(h, conn, 200, &out);
        rt_buf_free(&out);
        return res;
    case SRV_ROUTE_STATUS: {
        rt_status st = srv_manager_status_json(h->mgr, r->model, r->version, r->label, &out, &err);
        res = st == RT_OK ? send_json(h, conn, 200, &out)
                          : srv_http_send_error(h, conn, srv_http_status(st), "%s", err.msg);
        rt_buf_free(&out);
        return res;
    }
    case SRV_ROUTE_METADATA: return answer_metadata(h, conn, r);
    case SRV_ROUTE_MONITORING: return answer_monitoring(h, conn, r);
    case SRV_ROUTE_INFER: return srv_http_answer_infer(h, conn, rq);
    case SRV_ROUTE_METRICS:
        rt_buf_printf(&out,
                      "# HELP predictd_up 1 while the daemon runs.\n"
                      "# TYPE predictd_up gauge\npredictd_up 1\n"
                      "# HELP predictd_ready 1 when /readyz answers 200.\n"
                      "# TYPE predictd_ready gauge\npredictd_ready %d\n"
                      "# HELP predictd_draining 1 after SIGTERM.\n"
                      "# TYPE predictd_draining gauge\npredictd_draining %d\n",
                      !is_draining(h) && srv_manager_ready(h->mgr, NULL, 0), is_draining(h));
        if (h->admit)
            rt_buf_printf(&out,
                          "# HELP predictd_admission_limit Inference requests that may be in "
                          "flight now (adapted to max_queue_wait_ms).\n"
                          "# TYPE predictd_admission_limit gauge\npredictd_admission_limit %zu\n"
                          "# HELP predictd_admission_in_flight Inference requests admitted and "
                          "not yet answered.\n"
                          "# TYPE predictd_admission_in_flight gauge\n"
                          "predictd_admission_in_flight %zu\n",
                          srv_admit_limit(h->admit), srv_admit_in_flight(h->admit));
        /* rt_buf's errors stick: the appends above are checked with the last */
        if (srv_metrics_render(h->p.metrics, h->mgr, &out) != RT_OK ||
            srv_shadow_metrics(h->shadow, &out) != RT_OK ||
            srv_predlog_metrics(h->predlog, &out) != RT_OK || srv_http_sec_metrics(h, &out) ||
            rt_buf_failed(&out)) {
            rt_buf_free(&out);
            return srv_http_send_error(h, conn, 500, "out of memory");
        }
        res = send_buf(h, conn, 200, &out, "text/plain; version=0.0.4");
        rt_buf_free(&out);
        return res;
    }
    return srv_http_send_error(h, conn, 500, "unhandled route");
}
