/*
 * srv_http_v2.c — the Open Inference Protocol's (KServe v2) answers that are
 * not inference: server metadata (GET /v2) and model metadata (GET
 * /v2/models/{m}[/versions/{v}], {v} a version or a label, resolved as
 * every other route resolves it). Inference (POST .../infer) takes the /v1
 * path (srv_http_infer.c, srv_http_batch.c) with the runtime's v2 parser
 * and renderer (runtime/rt_v2_*.c); the binary answer's headers are set in
 * srv_http_send_computed. Triton's extensions a Triton user calls first:
 * the model configuration (GET .../config), the statistics (GET
 * .../stats) and the repository index (POST /v2/repository/index). Runs on
 * libmicrohttpd's I/O threads.
 */
#include "srv_http_internal.h"
#include "srv_limits.h"

#include <cJSON.h>
#include <stdio.h>
#include <string.h>

/* {"name": "predictd", "version": "...", "extensions": [...]} */
enum MHD_Result srv_http_v2_server(srv_http *h, struct MHD_Connection *conn, req *rq)
{
    (void)rq; /* the answer is the server's, whatever the request */
    rt_buf out;
    rt_buf_init(&out);
    const char *v = SRV_VERSION_STRING;
    const char *sp = strchr(v, ' ');
    int e = rt_buf_puts(&out, "{\"name\": \"predictd\", \"version\": ");
    e |= rt_buf_json_string(&out, sp ? sp + 1 : v, strlen(sp ? sp + 1 : v));
    e |= rt_buf_puts(&out, ", \"extensions\": [\"binary_tensor_data\", \"classification\"]}");
    enum MHD_Result res = e ? srv_http_send_error(h, conn, 500, "out of memory")
                            : srv_http_send(h, conn, 200, &out, "application/json", false,
                                            false, -1);
    rt_buf_free(&out);
    return res;
}

enum MHD_Result srv_http_v2_metadata(srv_http *h, struct MHD_Connection *conn, req *rq)
{
    const srv_route *r = &rq->route;
    enum MHD_Result res;
    srv_version *v = srv_http_acquire(h, conn, rq, &res);
    if (!v)
        return res;
    int64_t vers[SRV_V2_MAX_VERSIONS];
    size_t n = 1;
    vers[0] = srv_version_number(v);
    if (r->version < 0 && !r->label[0]) {
        /* the model as a whole: every version a client may name */
        n = srv_manager_versions(h->mgr, r->model, vers, SRV_V2_MAX_VERSIONS);
        if (n > SRV_V2_MAX_VERSIONS)
            n = SRV_V2_MAX_VERSIONS;
    }
    rt_buf out;
    rt_buf_init(&out);
    rt_status st = rt_v2_metadata(srv_version_model(v), r->model, vers, n, &out);
    int64_t served = srv_version_number(v);
    srv_version_release(v);
    res = st == RT_OK ? srv_http_send(h, conn, 200, &out, "application/json", false, false, served)
                      : srv_http_send_error(h, conn, 500, "metadata: %s", rt_err_status_str(st));
    rt_buf_free(&out);
    return res;
}

bool srv_http_v2_header(struct MHD_Connection *conn, req *rq)
{
    rq->v2_header = RT_V2_NO_HEADER;
    const char *v =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Inference-Header-Content-Length");
    if (!v)
        return true;
    size_t n = 0;
    if (!*v)
        return false;
    for (const char *p = v; *p; p++) {
        if (*p < '0' || *p > '9' || n > (RT_V2_FIND_HEADER - 10) / 10)
            return false;
        n = n * 10 + (size_t)(*p - '0');
    }
    rq->v2_header = n;
    return true;
}

/* ------------------------------------------ Triton's extensions (item 20) */

/* Triton's name of a v2 datatype in a model configuration. */
static const char *triton_type(const char *dt)
{
    return !strcmp(dt, "BYTES") ? "TYPE_STRING" : !strcmp(dt, "FP32") ? "TYPE_FP32" : NULL;
}

/* {"name", "dims", "data_type"} items of Triton's config from v2 metadata
 * tensors {"name", "datatype", "shape"}. */
static int put_config_tensors(rt_buf *o, const cJSON *list)
{
    int e = 0;
    bool first = true;
    const cJSON *t;
    cJSON_ArrayForEach(t, list)
    {
        const char *n = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "name"));
        const char *dt = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "datatype"));
        const char *tt = dt ? triton_type(dt) : NULL;
        char other[40];
        if (!tt) {
            snprintf(other, sizeof other, "TYPE_%.30s", dt ? dt : "INVALID");
            tt = other;
        }
        e |= rt_buf_puts(o, first ? "{\"name\": " : ", {\"name\": ");
        e |= rt_buf_json_string(o, n ? n : "", n ? strlen(n) : 0);
        e |= rt_buf_printf(o, ", \"data_type\": \"%s\", \"dims\": [", tt);
        const cJSON *d;
        bool fd = true;
        cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(t, "shape"))
        {
            e |= rt_buf_printf(o, "%s%lld", fd ? "" : ", ", (long long)d->valuedouble);
            fd = false;
        }
        e |= rt_buf_puts(o, "]}");
        first = false;
    }
    return e;
}

/* GET /v2/models/{m}[/versions/{v}]/config: Triton's model configuration
 * extension, made from the version's v2 metadata: its inputs and outputs
 * with Triton's type names and dims as the metadata's shapes (-1: any
 * number of instances; max_batch_size 0, as Triton writes a model whose
 * first dimension is in its dims). */
enum MHD_Result srv_http_v2_config(srv_http *h, struct MHD_Connection *conn, req *rq)
{
    const srv_route *r = &rq->route;
    enum MHD_Result res;
    srv_version *v = srv_http_acquire(h, conn, rq, &res);
    if (!v)
        return res;
    int64_t served = srv_version_number(v);
    rt_buf md, out;
    rt_buf_init(&md);
    rt_buf_init(&out);
    rt_status st = rt_v2_metadata(srv_version_model(v), r->model, &served, 1, &md);
    srv_version_release(v);
    cJSON *doc = st == RT_OK ? cJSON_ParseWithLength(md.data, md.len) : NULL;
    int e = !doc;
    if (doc) {
        e |= rt_buf_puts(&out, "{\"name\": ");
        e |= rt_buf_json_string(&out, r->model, strlen(r->model));
        e |= rt_buf_puts(&out, ", \"platform\": \"predictd_export\", \"backend\": \"predictd\", "
                               "\"max_batch_size\": 0, \"input\": [");
        e |= put_config_tensors(&out, cJSON_GetObjectItemCaseSensitive(doc, "inputs"));
        e |= rt_buf_puts(&out, "], \"output\": [");
        e |= put_config_tensors(&out, cJSON_GetObjectItemCaseSensitive(doc, "outputs"));
        e |= rt_buf_puts(&out, "]}");
    }
    cJSON_Delete(doc);
    res = !e ? srv_http_send(h, conn, 200, &out, "application/json", false, false, served)
             : srv_http_send_error(h, conn, 500, "config: %s",
                                   st != RT_OK ? rt_err_status_str(st) : "out of memory");
    rt_buf_free(&md);
    rt_buf_free(&out);
    return res;
}

static int put_duration(rt_buf *o, const char *name, uint64_t count, double seconds)
{
    return rt_buf_printf(o, "\"%s\": {\"count\": %llu, \"ns\": %.0f}", name,
                         (unsigned long long)count, seconds * 1e9);
}

/* GET /v2/models/{m}[/versions/{v}]/stats: Triton's statistics extension
 * from the metrics predictd keeps: per version, the requests answered 200
 * (success; inference_count and execution_count count them too: predictd
 * counts requests, not the instances inside them) and the others (fail),
 * with their nanoseconds, and the last answer's time. predictd does not
 * time a request's phases, so queue and compute_* are not given. */
enum MHD_Result srv_http_v2_stats(srv_http *h, struct MHD_Connection *conn, req *rq)
{
    const srv_route *r = &rq->route;
    int64_t vers[SRV_V2_MAX_VERSIONS];
    size_t n = 1;
    if (r->version < 0 && !r->label[0]) {
        if (!srv_manager_has_model(h->mgr, r->model))
            return srv_http_send_error(h, conn, 404, "Servable not found for request: "
                                       "Latest(%s)", r->model);
        n = srv_manager_versions(h->mgr, r->model, vers, SRV_V2_MAX_VERSIONS);
        if (n > SRV_V2_MAX_VERSIONS)
            n = SRV_V2_MAX_VERSIONS;
    } else {
        enum MHD_Result res;
        srv_version *v = srv_http_acquire(h, conn, rq, &res);
        if (!v)
            return res;
        vers[0] = srv_version_number(v);
        srv_version_release(v);
    }
    rt_buf out;
    rt_buf_init(&out);
    int e = rt_buf_puts(&out, "{\"model_stats\": [");
    for (size_t i = 0; i < n; i++) {
        srv_model_stat s;
        srv_metrics_model_stat(h->p.metrics, r->model, vers[i], &s);
        e |= rt_buf_puts(&out, i ? ", {\"name\": " : "{\"name\": ");
        e |= rt_buf_json_string(&out, r->model, strlen(r->model));
        e |= rt_buf_printf(&out,
                           ", \"version\": \"%lld\", \"last_inference\": %lld, "
                           "\"inference_count\": %llu, \"execution_count\": %llu, "
                           "\"inference_stats\": {",
                           (long long)vers[i], (long long)s.last_ms, (unsigned long long)s.ok,
                           (unsigned long long)s.ok);
        e |= put_duration(&out, "success", s.ok, s.ok_seconds);
        e |= rt_buf_puts(&out, ", ");
        e |= put_duration(&out, "fail", s.fail, s.fail_seconds);
        e |= rt_buf_puts(&out, "}, \"batch_stats\": []}");
    }
    e |= rt_buf_puts(&out, "]}");
    enum MHD_Result res = e ? srv_http_send_error(h, conn, 500, "out of memory")
                            : srv_http_send(h, conn, 200, &out, "application/json", false,
                                            false, n == 1 ? vers[0] : -1);
    rt_buf_free(&out);
    return res;
}

/* Triton's state of a TF Serving version state. */
static const char *triton_state(const char *s)
{
    if (!strcmp(s, "AVAILABLE"))
        return "READY";
    if (!strcmp(s, "START") || !strcmp(s, "LOADING"))
        return "LOADING";
    if (!strcmp(s, "UNLOADING"))
        return "UNLOADING";
    return "UNAVAILABLE";
}

/* POST /v2/repository/index: Triton's model repository extension's index,
 * [{"name", "version", "state", "reason"}] for every version of every
 * model (READY, LOADING, UNLOADING or UNAVAILABLE with the version's error
 * as reason); {"ready": true} lists the READY ones only. */
enum MHD_Result srv_http_v2_repository_index(srv_http *h, struct MHD_Connection *conn, req *rq)
{
    bool ready_only = false;
    if (rq->body.len) {
        cJSON *b = cJSON_ParseWithLength(rq->body.data, rq->body.len);
        const cJSON *rd = cJSON_GetObjectItemCaseSensitive(b, "ready");
        bool ok = cJSON_IsObject(b) && (!rd || cJSON_IsBool(rd));
        ready_only = ok && cJSON_IsTrue(rd);
        cJSON_Delete(b);
        if (!ok)
            return srv_http_send_error(h, conn, 400, "the repository index request is a JSON "
                                       "object, optionally {\"ready\": true|false}");
    }
    rt_buf list, out;
    rt_buf_init(&list);
    rt_buf_init(&out);
    cJSON *doc = srv_manager_list_json(h->mgr, &list) == RT_OK
                     ? cJSON_ParseWithLength(list.data, list.len)
                     : NULL;
    int e = !doc || rt_buf_puts(&out, "[");
    bool first = true;
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(doc, "models"))
    {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "name"));
        const cJSON *v;
        cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(m, "versions"))
        {
            const char *ver = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "version"));
            const char *st = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "state"));
            if (!name || !ver || !st)
                continue;
            const char *ts = triton_state(st);
            if (ready_only && strcmp(ts, "READY") != 0)
                continue;
            char reason[512] = "";
            if (!strcmp(ts, "UNAVAILABLE")) {
                rt_buf sb;
                rt_buf_init(&sb);
                rt_err err = {{0}};
                int64_t num = srv_parse_version(ver, strlen(ver));
                if (srv_manager_status_json(h->mgr, name, num, "", &sb, &err) == RT_OK) {
                    cJSON *sd = cJSON_ParseWithLength(sb.data, sb.len);
                    const cJSON *s0 = cJSON_GetArrayItem(
                        cJSON_GetObjectItemCaseSensitive(sd, "model_version_status"), 0);
                    const char *em = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                        cJSON_GetObjectItemCaseSensitive(s0, "status"), "error_message"));
                    snprintf(reason, sizeof reason, "%s", em ? em : "");
                    cJSON_Delete(sd);
                }
                rt_buf_free(&sb);
            }
            e |= rt_buf_puts(&out, first ? "{\"name\": " : ", {\"name\": ");
            e |= rt_buf_json_string(&out, name, strlen(name));
            e |= rt_buf_puts(&out, ", \"version\": ");
            e |= rt_buf_json_string(&out, ver, strlen(ver));
            e |= rt_buf_printf(&out, ", \"state\": \"%s\", \"reason\": ", ts);
            e |= rt_buf_json_string(&out, reason, strlen(reason));
            e |= rt_buf_puts(&out, "}");
            first = false;
        }
    }
    e |= rt_buf_puts(&out, "]");
    cJSON_Delete(doc);
    enum MHD_Result res = e ? srv_http_send_error(h, conn, 500, "out of memory")
                            : srv_http_send(h, conn, 200, &out, "application/json", false,
                                            false, -1);
    rt_buf_free(&list);
    rt_buf_free(&out);
    return res;
}
