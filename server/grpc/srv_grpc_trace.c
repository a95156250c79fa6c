/*
 * srv_grpc_trace.c — a gRPC call's trace (docs/console.md "Tracing"), as
 * REST's (server/http/srv_http_trace.c): W3C traceparent and tracestate
 * read from the call's metadata, sampled parent-based, a SERVER span per
 * call named "package.Service/Method" with OpenTelemetry's RPC attributes
 * (rpc.system, rpc.service, rpc.method, rpc.grpc.status_code) and
 * predictd.model/version/instances; the traceparent goes back in the
 * initial metadata. Its children, one after another inside it, from the
 * stage marks of the run (rt_ctx_time_stages), read only when sampled:
 *   parse      the request message read into the batch (decoded, made
 *              into REST's body and parsed)
 *   transform  the feature columns
 *   forward    the forward pass and the head
 *   render     the answer written and made into the answer message
 *   respond    the answer's batch handed to the core until it completed
 * A stage that failed ends when the method returned; the later ones are not
 * there. A gRPC call waits in no queue of predictd's (the thread that takes
 * it runs it): there is no queue child.
 */
#include "srv_grpc_internal.h"

#include <string.h>

void srv_grpc_trace_begin(srv_tracer *t, const char *path, const char *traceparent,
                          const char *tracestate, srv_grpc_trace *tr)
{
    tr->ctx.active = tr->ctx.sampled = false;
    if (!t)
        return;
    memset(tr, 0, sizeof *tr);
    srv_trace_begin_rpc(t, traceparent, tracestate, path, &tr->ctx);
    srv_trace_header(&tr->ctx, tr->header);
    tr->version = -1;
    tr->instances = -1;
}

void srv_grpc_trace_run(srv_grpc_trace *tr, rt_ctx *ctx)
{
    rt_ctx_time_stages(ctx, tr->ctx.sampled);
    if (tr->ctx.sampled)
        tr->t_run = rt_time_now_ns();
}

void srv_grpc_trace_ran(srv_grpc_trace *tr, rt_ctx *ctx, int code)
{
    tr->ctx.status = (unsigned)code;
    if (!tr->ctx.sampled)
        return;
    tr->t_done = rt_time_now_ns();
    tr->marks = rt_ctx_stages(ctx);
    if (code == SRV_GRPC_OK && tr->marks.parsed && rt_ctx_batch(ctx))
        tr->instances = (long)rt_batch_size(rt_ctx_batch(ctx));
}

void srv_grpc_trace_note(srv_grpc_env *e, const char *model, int64_t version)
{
    if (!e->trace)
        return;
    size_t n = model ? strnlen(model, SRV_NAME_MAX) : 0;
    memcpy(e->trace->model, model ? model : "", n);
    e->trace->model[n] = '\0';
    e->trace->version = version;
}

void srv_grpc_trace_end(srv_tracer *t, srv_grpc_trace *tr)
{
    if (!t || !tr->ctx.sampled)
        return;
    static const char *const NAMES[4] = {"parse", "transform", "forward", "render"};
    /* render: the answer written (REST's mark) and made into the message */
    int64_t m[4] = {tr->marks.parsed, tr->marks.transformed, tr->marks.forwarded,
                    tr->marks.rendered ? tr->t_done : 0};
    srv_trace_phase ph[SRV_TRACE_PHASES];
    size_t n = 0;
    int64_t at = tr->t_run;
    for (int i = 0; i < 4 && at && tr->marks.parsed; i++) {
        int64_t end = m[i] ? m[i] : tr->t_done;
        if (end > at)
            ph[n++] = (srv_trace_phase){NAMES[i], at, end, {{0}}};
        if (!m[i])
            break; /* failed here */
        at = end;
    }
    int64_t now = rt_time_now_ns();
    if (tr->t_done && now > tr->t_done)
        ph[n++] = (srv_trace_phase){"respond", tr->t_done, now, {{0}}};
    srv_trace_attrs a = {tr->model[0] ? tr->model : NULL, tr->version, tr->instances, -1};
    srv_trace_end(t, &tr->ctx, &a, ph, n);
    tr->ctx.sampled = false;
}
