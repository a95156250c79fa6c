/*
 * rt_json_serve.c — one TensorFlow Serving REST request against a model
 * (:predict, :classify, :regress): the body parsed into the batch
 * (rt_json_predict.c, rt_json_examples.c), the answer's size checked,
 * transform, forward pass and head (rt_ctx_run), the answer rendered
 * (rt_json_out.c). Under rt_json_handle.c and rt_json_explain.c (whose
 * answers carry the :predict answer).
 */
#include "rt_serve.h"
#include "rt_json_internal.h"

static rt_status serve(const rt_model *m, rt_method method, const char *body, size_t len,
                        const rt_json_params *p, rt_ctx *c, rt_buf *out, rt_err *err)
{
    if (!m || !c || !out || (!body && len > 0))
        return rt_err_set(err, RT_ERR_INVALID, "rt_json_handle: NULL argument");
    rt_json_params dp = rt_json_default_params();
    if (!p)
        p = &dp;
    const rt_graph *g = rt_model_graph(m);
    if (!g)
        return rt_err_set(err, RT_ERR_INVALID, "model has no graph");
    const Predictd__SignatureDef *sig = NULL;
    int columnar = 0;
    rt_status st;
    switch (method) {
    case RT_METHOD_PREDICT:
        st = rt_json_parse_predict(g, body, len, p, c, &columnar, &sig, err);
        break;
    case RT_METHOD_CLASSIFY:
    case RT_METHOD_REGRESS:
        st = rt_json_parse_examples(g, method, body, len, p, c, &sig, err);
        break;
    default:
        st = rt_err_set(err, RT_ERR_INVALID, "unknown method %d", (int)method);
    }
    if (st != RT_OK)
        return st;
    /* several heads (TF's MultiHead): :classify / :regress answer the head
     * whose signature is named, else the first head (TF's default) */
    long head = -1;
    const rt_graph *rg = g;
    if (method != RT_METHOD_PREDICT && rt_graph_head_view(g, 0, NULL)) {
        head = rt_json_signature_head(g, sig);
        head = head < 0 ? 0 : head;
        rg = rt_graph_head_view(g, (size_t)head, NULL);
    }
    /* an answer too large is refused before any work is done for it */
    if ((st = rt_json_check_answer(rg, sig, method, rt_batch_size(c->batch), p, err)) != RT_OK)
        return st;
    if (rt_batch_size(c->batch) == 0) {
        c->outputs.n = 0; /* nothing to run: an empty answer */
    } else if ((st = rt_ctx_run(c, g, err)) != RT_OK) {
        if (!columnar)
            rt_json_name_missing(g, c->batch, err);
        if (method != RT_METHOD_PREDICT)
            rt_json_name_examples(err);
        else if (columnar)
            rt_json_name_columns(g, c->batch, err);
        return st;
    }
    const rt_outputs *ro = &c->outputs;
    if (head >= 0 && (size_t)head < c->outputs.n_heads) {
        ro = &c->outputs.heads[head];
    }
    switch (method) {
    case RT_METHOD_CLASSIFY:
        st = rt_json_render_classify(rg, ro, out);
        break;
    case RT_METHOD_REGRESS:
        st = rt_json_render_regress(rg, ro, out, err);
        break;
    default:
        st = rt_json_render_predict(g, sig, &c->outputs, columnar, out);
    }
    rt_ctx_mark(c, &c->marks.rendered);
    /* the renderers report no message of their own for want of memory */
    if (st == RT_ERR_NOMEM)
        return rt_err_set(err, st, "out of memory writing the answer");
    /* an answer its client no longer waits for is not sent */
    return st == RT_OK ? rt_ctx_check_stop(c, "the answer was written", err) : st;
}

rt_status rt_json_serve(const rt_model *m, rt_method method, const char *body, size_t len,
                        const rt_json_params *p, rt_ctx *c, rt_buf *out, rt_err *err)
{
    return rt_json_tidy_message(serve(m, method, body, len, p, c, out, err), err);
}
