/*
 * srv_grpc_shared.c — what an inference call shares with REST's requests
 * (issue 38: one daemon, not a second pipeline): the run of a :predict,
 * :classify, :regress or /v2 infer body (Predict, Classify, Regress, each
 * MultiInference task, ModelInfer), through REST's batcher when batching is
 * on (so gRPC and REST requests share batches), and the tap of an answered call to REST's
 * prediction-log and shadow queues (srv_http_tap), with the protocol and
 * the method recorded. A call's body and answer there are the REST JSON it
 * ran as (docs/grpc.md).
 */
#include "srv_grpc_internal.h"

#include <cJSON.h>
#include <stdio.h>
#include <string.h>

/* The gRPC status REST's HTTP status stands for (srv_grpc_http_of's other
 * way, plus the batcher's 504). */
static int status_of_http(unsigned http)
{
    switch (http) {
    case 200: return SRV_GRPC_OK;
    case 400:
    case 413: return SRV_GRPC_INVALID_ARGUMENT;
    case 404: return SRV_GRPC_NOT_FOUND;
    case 429: return SRV_GRPC_RESOURCE_EXHAUSTED;
    case 499: return SRV_GRPC_CANCELLED;
    case 503: return SRV_GRPC_UNAVAILABLE;
    case 504: return SRV_GRPC_DEADLINE_EXCEEDED;
    default: return SRV_GRPC_INTERNAL;
    }
}

int srv_grpc_run_infer(srv_grpc_env *e, srv_version *v, const char *model, rt_method method,
                       const rt_buf *body, size_t v2_header, int64_t t0, rt_buf *ans,
                       size_t *v2_answer, char *msg)
{
    const char *b = body->data ? body->data : "";
    *v2_answer = 0;
    if (!srv_http_batching(e->http) || !srv_http_batched_method(method)) {
        /* on this thread, as REST without batching */
        rt_err err = {{0}};
        int64_t vnum = srv_version_number(v);
        srv_call_watch cw = {e->deadline_ns, e->gone, 0};
        rt_ctx_set_stop(e->ctx, srv_call_stop, &cw); /* between chunks of its rows */
        rt_status st =
            method == RT_METHOD_INFER
                ? rt_v2_handle(srv_version_model(v), model, vnum, b, body->len, v2_header,
                               &e->json, e->ctx, ans, &err)
                : rt_json_handle(srv_version_model(v), method, b, body->len, &e->json, e->ctx,
                                 ans, &err);
        rt_ctx_set_stop(e->ctx, NULL, NULL);
        if (st != RT_OK && cw.stopped) { /* the core answered the client already */
            srv_metrics_stopped(e->metrics, cw.stopped == 1);
            snprintf(msg, SRV_GRPC_MSG, "%s: the call was stopped during its run",
                     cw.stopped == 1 ? "deadline exceeded" : "cancelled");
            rt_buf_reset(ans);
            return cw.stopped == 1 ? SRV_GRPC_DEADLINE_EXCEEDED : SRV_GRPC_CANCELLED;
        }
        if (st != RT_OK) {
            snprintf(msg, SRV_GRPC_MSG, "%s", err.msg);
            return srv_grpc_status_of(st);
        }
        if (method == RT_METHOD_INFER)
            *v2_answer = rt_v2_answer_header_len(e->ctx);
        srv_monitor_observe(srv_version_monitor(v), rt_ctx_batch(e->ctx));
        return SRV_GRPC_OK;
    }
    unsigned http = srv_http_batch_call(e->http, v, model, method, b, body->len, v2_header, t0,
                                        e->deadline_ns, e->gone, ans, v2_answer);
    int code = status_of_http(http);
    if (code != SRV_GRPC_OK) { /* REST's {"error": ...} is the status's message */
        cJSON *doc = cJSON_ParseWithLength(ans->data ? ans->data : "", ans->len);
        const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "error"));
        snprintf(msg, SRV_GRPC_MSG, "%s", s ? s : "internal error");
        cJSON_Delete(doc);
        rt_buf_reset(ans);
    }
    return code;
}

int srv_grpc_answer_checked(srv_grpc_env *e, int code, char *msg)
{
    srv_call_watch cw = {e->deadline_ns, e->gone, 0};
    if (code != SRV_GRPC_OK || !srv_call_stop(&cw))
        return code;
    srv_metrics_stopped(e->metrics, cw.stopped == 1);
    snprintf(msg, SRV_GRPC_MSG, "%s: the call was stopped before its answer was sent",
             cw.stopped == 1 ? "deadline exceeded" : "cancelled");
    return cw.stopped == 1 ? SRV_GRPC_DEADLINE_EXCEEDED : SRV_GRPC_CANCELLED;
}

void srv_grpc_tap(srv_grpc_env *e, const char *model, int64_t vnum, rt_method method, int code,
                  int64_t t0, const rt_buf *body, const rt_buf *ans, const char *msg,
                  srv_pick *pick)
{
    if (!e->http || vnum < 0 || !(pick->shadow || pick->log)) {
        srv_version_release(pick->shadow);
        pick->shadow = NULL;
        return;
    }
    rt_buf err;
    rt_buf_init(&err);
    const rt_buf *a = ans;
    if (code != SRV_GRPC_OK) { /* the answer REST would have sent */
        cJSON *o = cJSON_CreateObject();
        char *t = o && cJSON_AddStringToObject(o, "error", msg) ? cJSON_PrintUnformatted(o) : NULL;
        if (t)
            (void)rt_buf_append(&err, t, strlen(t));
        cJSON_free(t);
        cJSON_Delete(o);
        a = &err;
    }
    srv_served s = {model,
                    vnum,
                    method,
                    (int)srv_grpc_http_of(code),
                    (double)(rt_time_now_ns() - t0) / 1e9,
                    rt_time_seconds(1),
                    body->data ? body->data : "",
                    body->len,
                    a->data ? a->data : "",
                    a->len,
                    SRV_PROTO_GRPC,
                    e->rpc};
    srv_http_tap(e->http, &s, pick);
    rt_buf_free(&err);
}
