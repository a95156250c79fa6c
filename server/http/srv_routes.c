/*
 * srv_routes.c — the REST port's endpoints, one row each: the HTTP method,
 * the path pattern (srv_http_internal.h says how it reads), what the rest
 * of the front knows the route as, the scope a bearer token needs, the
 * function that answers it and the API it belongs to. The router
 * (srv_router.c) matches requests against these rows in this order, the
 * answer dispatch (srv_http_answer.c) calls a row's answer and the
 * security gate (srv_http_sec.c) asks for its scope. Adding an endpoint is
 * a row here and its answer function; docs/daemon.md's endpoint list has
 * one line per row (tests/unit/test_srv_router.c holds them to it).
 */
#include "srv_http_internal.h"
#include "srv_sec.h"

/* TF Serving's /v1/models/{m} paths: a version or a label, checked as read */
#define V1_MODEL "/v1/models/{model}[/versions/{version}|/labels/{label}]"
/* Cloud ML Engine's and the Open Inference Protocol's: {v} a number or a label */
#define CMLE_MODEL "/v1/projects/{project}/models/{model}[/versions/{version_or_label}]"
#define V2_MODEL "/v2/models/{model}[/versions/{version_or_label}]"

/* method, path, kind, scope, answer, protocol, run, strict, verb_help.
 * Every request walks the rows from the top, so the inference rows come
 * first; no two rows match the same path (the router's order decides
 * nothing else). */
static const srv_route_row ROUTES[] = {
    /* inference: TensorFlow Serving's, the Open Inference Protocol's
     * (KServe v2), Cloud ML Engine's */
    {"POST", V1_MODEL ":{predict|classify|regress|explain}", SRV_ROUTE_INFER, SRV_SCOPE_INFER,
     srv_http_answer_infer, "tfserving", 0, true, "use :predict, :classify, :regress or :explain"},
    {"POST", V2_MODEL "/infer", SRV_ROUTE_INFER, SRV_SCOPE_INFER, srv_http_answer_infer, "v2",
     RT_METHOD_INFER, false, NULL},
    {"POST", CMLE_MODEL ":{predict|explain}", SRV_ROUTE_INFER, SRV_SCOPE_INFER,
     srv_http_answer_infer, "cmle", 0, false, "this path supports :predict and :explain"},
    /* probes (open: no token) and metrics */
    {"GET", "/healthz", SRV_ROUTE_HEALTHZ, 0, srv_http_answer_healthz, "tfserving", 0, false, NULL},
    {"GET", "/readyz", SRV_ROUTE_READYZ, 0, srv_http_answer_readyz, "tfserving", 0, false, NULL},
    {"GET", "/v2/health/live", SRV_ROUTE_HEALTHZ, 0, srv_http_answer_healthz, "v2", 0, false, NULL},
    {"GET", "/v2/health/ready", SRV_ROUTE_V2_READY, 0, srv_http_answer_v2_ready, "v2", 0, false,
     NULL},
    {"GET", V2_MODEL "/ready", SRV_ROUTE_V2_MODEL_READY, 0, srv_http_answer_v2_model_ready, "v2", 0,
     false, NULL},
    {"GET", "/monitoring/prometheus/metrics", SRV_ROUTE_METRICS, SRV_SCOPE_METRICS,
     srv_http_answer_metrics, "tfserving", 0, false, NULL},
    {"GET", "/metrics", SRV_ROUTE_METRICS, SRV_SCOPE_METRICS, srv_http_answer_metrics,
     "tfserving", 0, false, NULL},
    /* TensorFlow Serving's model list, status and metadata; monitoring */
    {"GET", "/v1/models", SRV_ROUTE_LIST, SRV_SCOPE_READ, srv_http_answer_list, "tfserving", 0,
     false, NULL},
    {"GET", V1_MODEL, SRV_ROUTE_STATUS, SRV_SCOPE_READ, srv_http_answer_status, "tfserving", 0,
     true, NULL},
    {"GET", V1_MODEL "/metadata", SRV_ROUTE_METADATA, SRV_SCOPE_READ, srv_http_answer_metadata,
     "tfserving", 0, true, NULL},
    {"GET", V1_MODEL "/monitoring", SRV_ROUTE_MONITORING, SRV_SCOPE_READ,
     srv_http_answer_monitoring, "tfserving", 0, true, NULL},
    /* the Open Inference Protocol's metadata */
    {"GET", "/v2", SRV_ROUTE_V2_SERVER, SRV_SCOPE_READ, srv_http_v2_server, "v2", 0, false, NULL},
    {"GET", V2_MODEL, SRV_ROUTE_V2_METADATA, SRV_SCOPE_READ, srv_http_v2_metadata, "v2", 0, false,
     NULL},
    /* Triton's extensions: model configuration, statistics, repository index */
    {"GET", V2_MODEL "/config", SRV_ROUTE_ANSWER, SRV_SCOPE_READ, srv_http_v2_config, "v2", 0,
     false, NULL},
    {"GET", V2_MODEL "/stats", SRV_ROUTE_ANSWER, SRV_SCOPE_READ, srv_http_v2_stats, "v2", 0,
     false, NULL},
    {"POST", "/v2/repository/index", SRV_ROUTE_ANSWER, SRV_SCOPE_READ,
     srv_http_v2_repository_index, "v2", 0, false, NULL},
    /* the operator console (server/ui/srv_ui.c; docs/console.md) */
    {"GET", "/ui", SRV_ROUTE_ANSWER, SRV_SCOPE_READ, srv_ui_answer_page, "tfserving", 0, false,
     NULL},
    {"GET", "/ui/console.css", SRV_ROUTE_ANSWER, SRV_SCOPE_READ, srv_ui_answer_css, "tfserving",
     0, false, NULL},
    {"GET", "/ui/console.js", SRV_ROUTE_ANSWER, SRV_SCOPE_READ, srv_ui_answer_js, "tfserving", 0,
     false, NULL},
    {"GET", "/ui/api/traffic", SRV_ROUTE_ANSWER, SRV_SCOPE_READ, srv_ui_answer_traffic,
     "tfserving", 0, false, NULL},
};

const srv_route_row *srv_routes(size_t *n)
{
    *n = sizeof ROUTES / sizeof ROUTES[0];
    return ROUTES;
}
