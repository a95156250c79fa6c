/*
 * rt_json_handle.c — one request body against a model, by its method:
 * :predict, :classify and :regress (rt_json_serve.c), Open Inference
 * Protocol :infer (rt_v2_parse.c), :explain (rt_json_explain.c); and for
 * predict-model transform, the parse and the transform alone
 * (rt_json_transform).
 */
#include "rt_serve.h"
#include "rt_json_internal.h"

rt_status rt_json_handle(const rt_model *m, rt_method method, const char *body, size_t len,
                         const rt_json_params *p, rt_ctx *c, rt_buf *out, rt_err *err)
{
    if (method == RT_METHOD_INFER) /* the JSON header ends where its value ends */
        return rt_v2_handle(m, NULL, -1, body, len, RT_V2_FIND_HEADER, p, c, out, err);
    if (method == RT_METHOD_EXPLAIN)
        return rt_json_tidy_message(rt_json_explain(m, body, len, p, c, out, NULL, err), err);
    return rt_json_serve(m, method, body, len, p, c, out, err);
}

rt_status rt_json_transform(const rt_graph *g, const char *body, size_t len,
                            const rt_json_params *p, rt_ctx *c, const rt_features **f,
                            rt_err *err)
{
    int columnar = 0;
    const Predictd__SignatureDef *sig = NULL;
    rt_status st = rt_json_parse_predict(g, body, len, p, c, &columnar, &sig, err);
    if (st != RT_OK || !f)
        return st;
    if ((st = rt_transform(g, c->batch, &c->features, err)) != RT_OK)
        return st;
    *f = &c->features;
    return RT_OK;
}
