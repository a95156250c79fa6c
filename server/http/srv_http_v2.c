/*
 * srv_http_v2.c — the Open Inference Protocol's (KServe v2) answers that are
 * not inference: server metadata (GET /v2) and model metadata (GET
 * /v2/models/{m}[/versions/{v}], {v} a version or a label, resolved as
 * every other route resolves it). Inference (POST .../infer) takes the /v1
 * path (srv_http_infer.c, srv_http_batch.c) with the runtime's v2 parser
 * and renderer (runtime/rt_v2_*.c); the binary answer's headers are set in
 * srv_http_send_computed. Runs on libmicrohttpd's I/O threads.
 */
#include "srv_http_internal.h"
#include "srv_limits.h"

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
    rt_err err = {{0}};
    srv_version *v = NULL;
    rt_status st = srv_manager_acquire(h->mgr, r->model, r->version, r->label, &v, &err);
    if (st != RT_OK)
        return srv_http_send_error(h, conn, srv_http_status(st), "%s", err.msg);
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
    st = rt_v2_metadata(srv_version_model(v), r->model, vers, n, &out);
    int64_t served = srv_version_number(v);
    srv_version_release(v);
    enum MHD_Result res =
        st == RT_OK ? srv_http_send(h, conn, 200, &out, "application/json", false, false, served)
                    : srv_http_send_error(h, conn, 500, "metadata: %s", rt_status_str(st));
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
