/*
 * rt_ctx.c — per-thread request scratch: the batch, features, forward
 * workspace, head outputs, logits and text buffers one request needs, kept
 * and reused across requests so a warm thread allocates nothing.
 *
 * A batch belongs to one graph; when a request comes for another model the
 * batch is rebound to it. Everything only grows and is kept.
 */
#include "rt_serve.h"
#include "rt_serve_internal.h"
#include "rt_data_internal.h"

#include <stdlib.h>

/* the rows of a forward pass between two questions to a stop hook */
#define RT_CTX_STOP_ROWS 4096

rt_ctx *rt_ctx_new(void)
{
    rt_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    rt_transform_features_init(&c->features);
    rt_head_outputs_init(&c->outputs);
    rt_buf_init(&c->text);
    rt_buf_init(&c->key);
    rt_buf_init(&c->bytes);
    c->ws = rt_workspace_new();
    if (!c->ws) {
        rt_ctx_free(c);
        return NULL;
    }
    return c;
}

void rt_ctx_free(rt_ctx *c)
{
    if (!c)
        return;
    rt_batch_free(c->batch);
    rt_transform_features_free(&c->features);
    rt_workspace_free(c->ws);
    rt_head_outputs_free(&c->outputs);
    free(c->logits);
    rt_buf_free(&c->text);
    rt_buf_free(&c->key);
    rt_buf_free(&c->bytes);
    if (c->v2)
        c->v2_free(c->v2);
    free(c);
}

rt_status rt_ctx_prepare(rt_ctx *c, const rt_graph *g, rt_err *err)
{
    if (!c || !g)
        return rt_err_set(err, RT_ERR_INVALID, "rt_ctx_prepare: NULL argument");
    size_t n_inputs = rt_graph_num_inputs(g);
    if (!c->batch) {
        c->batch = rt_batch_new(g);
        if (!c->batch)
            return rt_err_set(err, RT_ERR_NOMEM, "request batch: out of memory");
    } else if (c->graph != g || c->graph_inputs != n_inputs) {
        /* Another model (or a new one at a freed one's address): rebind,
         * keeping the batch's memory. */
        rt_status st = rt_batch_rebind(c->batch, g);
        if (st != RT_OK)
            return rt_err_set(err, st, "request batch: cannot rebind to the model");
    }
    c->graph = g;
    c->graph_inputs = n_inputs;
    rt_batch_clear(c->batch);
    return RT_OK;
}

rt_status rt_ctx_run(rt_ctx *c, const rt_graph *g, rt_err *err)
{
    if (!c || !g || !c->batch || c->graph != g)
        return rt_err_set(err, RT_ERR_INVALID, "rt_ctx_run: context not prepared for model");
    rt_ctx_mark(c, &c->marks.parsed);
    rt_status st = rt_ctx_check_stop(c, "the parse", err);
    if (st != RT_OK || (st = rt_transform(g, c->batch, &c->features, err)) != RT_OK)
        return st;
    rt_ctx_mark(c, &c->marks.transformed);
    size_t n = c->features.n, ld = rt_graph_logits_dim(g);
    if (ld == 0 || n > SIZE_MAX / sizeof(float) / ld)
        return rt_err_set(err, RT_ERR_LIMIT, "batch of %zu instances too large", n);
    size_t need = n * ld;
    if (need > c->logits_cap || !c->logits) {
        float *p = realloc(c->logits, (need > 0 ? need : 1) * sizeof(float));
        if (!p)
            return rt_err_set(err, RT_ERR_NOMEM, "logits for %zu instances: out of memory", n);
        c->logits = p;
        c->logits_cap = need;
    }
    if ((st = rt_forward_stoppable(g, &c->features, c->ws, c->logits, RT_CTX_STOP_ROWS,
                                   c->stop, c->stop_arg, err)) != RT_OK)
        return st;
    st = rt_head_compute_ws(g, c->logits, c->ws, n, &c->outputs, err);
    rt_ctx_mark(c, &c->marks.forwarded);
    return st;
}

void rt_ctx_time_stages(rt_ctx *c, bool on)
{
    if (!c)
        return;
    c->timing = on;
    c->marks = (rt_stage_marks){0};
}

rt_stage_marks rt_ctx_stages(const rt_ctx *c)
{
    return c ? c->marks : (rt_stage_marks){0};
}

const rt_batch *rt_ctx_batch(const rt_ctx *c)
{
    return c ? c->batch : NULL;
}

rt_status rt_ctx_check_stop(const rt_ctx *c, const char *stage, rt_err *err)
{
    if (c && c->stop && c->stop(c->stop_arg))
        return rt_err_set(err, RT_ERR_LIMIT, "stopped after %s", stage);
    return RT_OK;
}

void rt_ctx_set_stop(rt_ctx *c, bool (*stop)(void *arg), void *arg)
{
    if (!c)
        return;
    c->stop = stop;
    c->stop_arg = stop ? arg : NULL;
}
