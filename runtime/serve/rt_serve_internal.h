/*
 * rt_serve_internal.h — the request path's own structures: the per-thread request
 * context (struct rt_ctx) and the answer renderers shared by the JSON,
 * v2 and batching files of runtime/serve/.
 */
#ifndef PREDICTD_RT_SERVE_INTERNAL_H
#define PREDICTD_RT_SERVE_INTERNAL_H

/* The build defines PREDICTD_LAYER_<layer> for each runtime source (Makefile). */
#if !defined(PREDICTD_LAYER_serve) && \
    !defined(PREDICTD_MODULE_tests) && !defined(PREDICTD_MODULE_bench)
#error "rt_serve_internal.h is the serving layer's own (docs/design.md, \"The runtime's layers\")"
#endif

#include "rt_serve.h"
#include "rt_model_internal.h"

/* ------------------------------------------- serving scratch (rt_ctx.c) */

/* Per-thread request scratch behind the opaque rt_ctx (rt.h). */
struct rt_ctx {
    const rt_graph *graph;  /* the graph `batch` was made for */
    size_t graph_inputs;    /* its input count (guards against address reuse) */
    rt_batch *batch;
    rt_features features;
    rt_workspace *ws;
    rt_outputs outputs;
    float *logits;          /* n x logits_dim */
    size_t logits_cap;      /* floats */
    rt_buf text;            /* request strings with escapes, unescaped */
    rt_buf key;             /* request keys with escapes, unescaped */
    rt_buf bytes;           /* decoded base64 */
    struct rt_v2_req *v2;   /* an Open Inference Protocol request's answer
                               settings (rt_v2_internal.h), made on first use */
    void (*v2_free)(struct rt_v2_req *); /* its destructor, set with it by
                               rt_v2_parse.c, which owns it: rt_ctx_free
                               calls through it, so the calls go one way */
    bool (*stop)(void *arg); /* rt_ctx_set_stop: an :explain's stop hook */
    void *stop_arg;
    bool timing;             /* rt_ctx_time_stages: marks are kept */
    rt_stage_marks marks;    /* rt_ctx_stages */
};

/* Marks the end of a stage (*at = now) when c's stage clock is on. */
static inline void rt_ctx_mark(const rt_ctx *c, int64_t *at)
{
    if (c->timing)
        *at = rt_time_now_ns();
}

/* Gives c an empty batch for graph g (made anew when the graph changed). */
RT_WUR rt_status rt_ctx_prepare(rt_ctx *c, const rt_graph *g, rt_err *err);
/* transform + forward + head of c->batch into c->outputs; c's stop hook
 * (rt_ctx_set_stop) is asked before the transform, before the forward pass
 * and between its chunks. */
RT_WUR rt_status rt_ctx_run(rt_ctx *c, const rt_graph *g, rt_err *err);
/* RT_ERR_LIMIT "stopped after <stage>" when c's stop hook says stop (the
 * caller's client is gone or its deadline passed), else RT_OK: asked where
 * a request's work moves from one stage to the next. */
RT_WUR rt_status rt_ctx_check_stop(const rt_ctx *c, const char *stage, rt_err *err);

/* ------------------------------------------- JSON serving (rt_json_*.c) */


/* Parses a predict body into c's batch (rt_ctx_prepare'd for g) without
 * running the model: *columnar tells "inputs" from "instances", *sig the
 * signature. For rt_json_handle and rt_json_transform. */
RT_WUR rt_status rt_json_parse_predict(const rt_graph *g, const char *body, size_t len,
                                const rt_json_params *p, rt_ctx *c, int *columnar,
                                const Predictd__SignatureDef **sig, rt_err *err);

/* A columnar request's transform error, named as the client sent it:
 * "instances[3].age: ..." -> "inputs.age[3]: ..."; a missing input lists
 * every input the request lacks (rt_transform_needs) (rt_json_where.c). */
void rt_json_name_columns(const rt_graph *g, const rt_batch *b, rt_err *err);
/* A row request's "instances[i].NAME: missing input" gets every input that
 * instance lacks appended: "...; not given: age, education" (one 400 names
 * them all). Other messages are left as they are. */
void rt_json_name_missing(const rt_graph *g, const rt_batch *b, rt_err *err);

/* Renders c->outputs for a predict request: {"predictions": [...]} (rows) or
 * {"outputs": ...} (columnar) with the signature's outputs (sig may be NULL:
 * the head's usual outputs). */
RT_WUR rt_status rt_json_render_predict(const rt_graph *g, const Predictd__SignatureDef *sig,
                                 const rt_outputs *o, int columnar, rt_buf *out);
/* On a model of several heads (TF's MultiHead), the head whose own
 * signature sig is ("<head>" or "<head>/<key>", as TF's MultiHead names
 * them); -1 for any other signature, NULL, or a model of one head. */
long rt_json_signature_head(const rt_graph *g, const Predictd__SignatureDef *sig);
/* {"results": [[[label, score], ...], ...]} for classify. */
RT_WUR rt_status rt_json_render_classify(const rt_graph *g, const rt_outputs *o, rt_buf *out);
/* {"results": [value, ...]} for regress (regressors: predictions; binary
 * classifiers: logistic). */
RT_WUR rt_status rt_json_render_regress(const rt_graph *g, const rt_outputs *o, rt_buf *out,
                                 rt_err *err);
/* Before running a parsed request of n instances: RT_ERR_LIMIT, with a
 * message naming max_answer_bytes, when its answer (method; for predict
 * the outputs of sig) could pass p->max_answer_bytes, counting every float
 * at its longest text; RT_OK when it cannot, or when there is no limit. */
RT_WUR rt_status rt_json_check_answer(const rt_graph *g, const Predictd__SignatureDef *sig,
                               rt_method method, size_t n, const rt_json_params *p,
                               rt_err *err);
/* The answer of n instances of at most per bytes each and fixed bytes
 * besides, against limit (max_answer_bytes): RT_OK when it fits, else
 * RT_ERR_LIMIT with the message of rt_json_check_answer (the bound, the
 * limit, how many instances fit). Used by /v1 and /v2 (rt_v2_check_answer). */
RT_WUR rt_status rt_json_answer_bound(size_t n, size_t per, size_t fixed, size_t limit, rt_err *err);

#endif /* PREDICTD_RT_SERVE_INTERNAL_H */
