/*
 * srv_http_answer.c — a request whose body is read, answered by its route's
 * row of the route table (srv_routes.c): inference (srv_http_infer.c), the
 * v2 metadata routes (srv_http_v2.c), and here the answers that are not
 * inference (health and readiness, model list, status, metadata,
 * monitoring, metrics). The answers are sent through srv_http_send.c. Runs
 * on libmicrohttpd's I/O threads.
 */
#include "srv_http_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static enum MHD_Result send_buf(srv_http *h, struct MHD_Connection *conn, unsigned code, rt_buf *b,
                                const char *ctype)
{
    return srv_http_send(h, conn, code, b, ctype, false, false, -1);
}

static enum MHD_Result send_json(srv_http *h, struct MHD_Connection *conn, unsigned code, rt_buf *b)
{
    return send_buf(h, conn, code, b, "application/json");
}

srv_version *srv_http_acquire(srv_http *h, struct MHD_Connection *conn, const req *rq,
                              enum MHD_Result *res)
{
    const srv_route *r = &rq->route;
    rt_err err = {{0}};
    srv_version *v = NULL;
    rt_status st = srv_manager_acquire(h->mgr, r->model, r->version, r->label, &v, &err);
    if (st == RT_OK)
        return v;
    *res = srv_http_send_error(h, conn, srv_http_status(st), "%s", err.msg);
    return NULL;
}

enum MHD_Result srv_http_answer_metadata(srv_http *h, struct MHD_Connection *conn, req *rq)
{
    const srv_route *r = &rq->route;
    enum MHD_Result res;
    srv_version *v = srv_http_acquire(h, conn, rq, &res);
    if (!v)
        return res;
    rt_buf out;
    rt_buf_init(&out);
    rt_status st = rt_json_metadata(srv_version_model(v), r->model, srv_version_number(v), &out);
    srv_version_release(v);
    res = st == RT_OK ? send_json(h, conn, 200, &out)
                      : srv_http_send_error(h, conn, 500, "metadata: %s", rt_err_status_str(st));
    rt_buf_free(&out);
    return res;
}

/* GET .../monitoring: the version's skew and drift (srv_monitor_json). */
enum MHD_Result srv_http_answer_monitoring(srv_http *h, struct MHD_Connection *conn, req *rq)
{
    const srv_route *r = &rq->route;
    enum MHD_Result res;
    srv_version *v = srv_http_acquire(h, conn, rq, &res);
    if (!v)
        return res;
    srv_monitor *mon = srv_version_monitor(v);
    if (!mon) {
        int64_t num = srv_version_number(v);
        bool stats = rt_model_stats(srv_version_model(v)) != NULL;
        srv_version_release(v);
        return srv_http_send_error(h, conn, 404, "model %s version %lld is not monitored: %s",
                                   r->model, (long long)num,
                                   stats ? "the model's config has no \"monitoring\" key"
                                         : "its export has no training statistics "
                                           "(statistics.json)");
    }
    rt_buf out;
    rt_buf_init(&out);
    rt_status st = srv_monitor_json(mon, &out);
    srv_version_release(v);
    res = st == RT_OK ? send_json(h, conn, 200, &out)
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

enum MHD_Result srv_http_answer_healthz(srv_http *h, struct MHD_Connection *conn, req *rq)
{
    return answer_simple(h, conn, 200,
                         rq->route.v2 ? "{\"live\": true}" : "{\"status\": \"alive\"}");
}

enum MHD_Result srv_http_answer_readyz(srv_http *h, struct MHD_Connection *conn, req *rq)
{
    (void)rq; /* the daemon's readiness, whatever the request */
    char why[256] = "";
    if (is_draining(h))
        return srv_http_send_error(h, conn, 503, "not ready: draining");
    if (!srv_manager_ready(h->mgr, why, sizeof why))
        return srv_http_send_error(h, conn, 503, "not ready: %s", why);
    return answer_simple(h, conn, 200, "{\"status\": \"ready\"}");
}

enum MHD_Result srv_http_answer_v2_ready(srv_http *h, struct MHD_Connection *conn, req *rq)
{
    (void)rq; /* the daemon's readiness, whatever the request */
    char why[256] = "";
    if (is_draining(h) || !srv_manager_ready(h->mgr, why, sizeof why))
        return answer_simple(h, conn, 503, "{\"ready\": false}");
    return answer_simple(h, conn, 200, "{\"ready\": true}");
}

enum MHD_Result srv_http_answer_v2_model_ready(srv_http *h, struct MHD_Connection *conn, req *rq)
{
    const srv_route *r = &rq->route;
    rt_err err = {{0}};
    srv_version *v = NULL;
    rt_status st = srv_manager_acquire(h->mgr, r->model, r->version, r->label, &v, &err);
    srv_version_release(v);
    /* an unknown model, version or label: /v1's 404 or 400; a known
     * model without a version yet: not ready (503) */
    if ((st == RT_ERR_NOTFOUND && (r->version >= 0 || !srv_manager_has_model(h->mgr, r->model))) ||
        st == RT_ERR_INVALID)
        return srv_http_send_error(h, conn, srv_http_status(st), "%s", err.msg);
    bool ok = st == RT_OK;
    rt_buf out;
    rt_buf_init(&out);
    rt_buf_puts(&out, "{\"name\": ");
    rt_buf_json_string(&out, r->model, strlen(r->model));
    rt_buf_printf(&out, ", \"ready\": %s}", ok ? "true" : "false");
    enum MHD_Result res = rt_buf_failed(&out) ? MHD_NO : send_json(h, conn, ok ? 200 : 503, &out);
    rt_buf_free(&out);
    return res;
}

enum MHD_Result srv_http_answer_list(srv_http *h, struct MHD_Connection *conn, req *rq)
{
    (void)rq; /* every model, whatever the request */
    rt_buf out;
    rt_buf_init(&out);
    if (srv_manager_list_json(h->mgr, &out) != RT_OK) {
        rt_buf_free(&out);
        return srv_http_send_error(h, conn, 500, "out of memory");
    }
    enum MHD_Result res = send_json(h, conn, 200, &out);
    rt_buf_free(&out);
    return res;
}

enum MHD_Result srv_http_answer_status(srv_http *h, struct MHD_Connection *conn, req *rq)
{
    const srv_route *r = &rq->route;
    rt_buf out;
    rt_buf_init(&out);
    rt_err err = {{0}};
    rt_status st = srv_manager_status_json(h->mgr, r->model, r->version, r->label, &out, &err);
    enum MHD_Result res = st == RT_OK
                              ? send_json(h, conn, 200, &out)
                              : srv_http_send_error(h, conn, srv_http_status(st), "%s", err.msg);
    rt_buf_free(&out);
    return res;
}

enum MHD_Result srv_http_answer_metrics(srv_http *h, struct MHD_Connection *conn, req *rq)
{
    (void)rq; /* the daemon's metrics, whatever the request */
    rt_buf out;
    rt_buf_init(&out);
    rt_buf_printf(&out,
                  "# HELP predictd_up 1 while the daemon runs.\n"
                  "# TYPE predictd_up gauge\npredictd_up 1\n"
                  "# HELP predictd_ready 1 when /readyz answers 200.\n"
                  "# TYPE predictd_ready gauge\npredictd_ready %d\n"
                  "# HELP predictd_draining 1 after SIGTERM.\n"
                  "# TYPE predictd_draining gauge\npredictd_draining %d\n",
                  !is_draining(h) && srv_manager_ready(h->mgr, NULL, 0), is_draining(h));
    size_t limit = 0, in_flight = 0;
    if (h->admit)
        srv_admit_read(h->admit, &limit, &in_flight);
    if (h->admit)
        rt_buf_printf(&out,
                      "# HELP predictd_admission_limit Inference requests that may be in "
                      "flight now (adapted to max_queue_wait_ms).\n"
                      "# TYPE predictd_admission_limit gauge\npredictd_admission_limit %zu\n"
                      "# HELP predictd_admission_in_flight Inference requests admitted and "
                      "not yet answered.\n"
                      "# TYPE predictd_admission_in_flight gauge\n"
                      "predictd_admission_in_flight %zu\n",
                      limit, in_flight);
    rt_buf_printf(&out,
                  "# HELP predictd_request_body_bytes_held Bytes of request bodies held "
                  "now (limit: max_total_request_bytes).\n"
                  "# TYPE predictd_request_body_bytes_held gauge\n"
                  "predictd_request_body_bytes_held %zu\n",
                  (size_t)atomic_load(&h->held));
    /* rt_buf's errors stick: the appends above are checked with the last */
    if (srv_metrics_render(h->p.metrics, h->mgr, &out) != RT_OK ||
        srv_shadow_metrics(h->shadow, &out) != RT_OK ||
        srv_predlog_metrics(h->predlog, &out) != RT_OK || srv_http_sec_metrics(h, &out) ||
        srv_trace_metrics(h->tracer, &out) ||
        rt_buf_failed(&out)) {
        rt_buf_free(&out);
        return srv_http_send_error(h, conn, 500, "out of memory");
    }
    enum MHD_Result res = send_buf(h, conn, 200, &out, "text/plain; version=0.0.4");
    rt_buf_free(&out);
    return res;
}

enum MHD_Result srv_http_answer(srv_http *h, struct MHD_Connection *conn, req *rq,
                                const char *method, const char *url)
{
    const srv_route *r = &rq->route;
    switch (r->kind) {
    case SRV_ROUTE_NONE:
        return srv_http_send_error(h, conn, 404,
                                   "no such path: %.16s %.200s (see GET /v1/models, "
                                   "POST /v1/models/NAME:predict)",
                                   method, url);
    case SRV_ROUTE_BAD: return srv_http_send_error(h, conn, (unsigned)r->http_code, "%s", r->msg);
    default:
        if (r->row && r->row->answer)
            return r->row->answer(h, conn, rq);
        return srv_http_send_error(h, conn, 500, "unhandled route");
    }
}
