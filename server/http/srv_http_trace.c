/*
 * srv_http_trace.c — a traced request's spans (docs/console.md "Tracing"):
 * its clock readings, taken only when its trace is sampled, made into the
 * server span's children, one after another inside it:
 *   queue      waiting for a worker (the worker pool)
 *   parse      the body read into the batch (the receiver; a batched
 *              request's on its I/O thread)
 *   batch      a batched request waiting for its batch and merged into it
 *              (predictd.batch.size instances of predictd.batch.requests)
 *   transform  the feature columns: the serving input function's transform
 *   forward    the forward pass and the head
 *   render     the answer written (a batched request's own part of it)
 *   explain    an :explain's attributions, after the predictions
 *   respond    the answer handed to libmicrohttpd until the request completed
 * A stage that failed ends when the run did; the stages after it are not there.
 */
#include "srv_http_internal.h"

/* The run's stages from `at`: each ends at its mark; the first one not
 * reached (no later mark either) ends when the run did. */
static size_t stages(const req *rq, int64_t at, bool skip_parse, srv_trace_phase *ph, size_t n)
{
    static const char *const NAMES[4] = {"parse", "transform", "forward", "render"};
    int64_t m[4] = {rq->marks.parsed, rq->marks.transformed, rq->marks.forwarded,
                    rq->marks.rendered};
    int last = -1;
    for (int i = 0; i < 4; i++)
        if (m[i])
            last = i;
    for (int i = skip_parse ? 1 : 0; i < 4 && at; i++) {
        if (!m[i] && i < last)
            continue; /* not run (an empty batch): nothing to show */
        int64_t end = m[i] ? m[i] : rq->t_done;
        int64_t start = i == 3 && rq->t_render > at ? rq->t_render : at;
        if (end > start)
            ph[n++] = (srv_trace_phase){NAMES[i], start, end, {{0}}};
        if (!m[i])
            return n; /* failed here */
        at = end;
    }
    if (rq->route.method == RT_METHOD_EXPLAIN && last == 3 && rq->t_done > at)
        ph[n++] = (srv_trace_phase){"explain", at, rq->t_done, {{0}}};
    return n;
}

void srv_http_trace_request(srv_http *h, const req *rq)
{
    if (!h->tracer || !rq->trace.sampled)
        return;
    srv_trace_phase ph[SRV_TRACE_PHASES];
    size_t n = 0;
    int64_t wait = -1, at = rq->t_run;
    if (rq->batched) {
        int64_t end = rq->marks.parsed ? rq->marks.parsed : rq->t_done;
        if (rq->t_admit > rq->t_run)
            ph[n++] = (srv_trace_phase){"parse", rq->t_run, rq->t_admit, {{0}}};
        if (end > rq->t_admit)
            ph[n++] = (srv_trace_phase){"batch",
                                        rq->t_admit,
                                        end,
                                        {{"predictd.batch.size", (long long)rq->batch_size},
                                         {"predictd.batch.requests",
                                          (long long)rq->batch_requests}}};
        if (rq->t_batch >= rq->t_admit)
            wait = rq->t_batch - rq->t_admit;
        at = rq->marks.parsed;
    } else if (rq->t_admit && rq->t_run >= rq->t_admit) {
        ph[n++] = (srv_trace_phase){"queue", rq->t_admit, rq->t_run, {{0}}};
        wait = rq->t_run - rq->t_admit;
    }
    n = stages(rq, at, rq->batched, ph, n);
    int64_t now = rt_time_now_ns();
    if (rq->t_done && now > rq->t_done)
        ph[n++] = (srv_trace_phase){"respond", rq->t_done, now, {{0}}};
    srv_trace_attrs a = {rq->route.model[0] ? rq->route.model : NULL, rq->served,
                         rq->instances ? (long)rq->instances
                         : rq->parsed.n ? (long)rq->parsed.n
                                        : -1,
                         wait};
    srv_trace_end(h->tracer, &rq->trace, &a, ph, n);
}
