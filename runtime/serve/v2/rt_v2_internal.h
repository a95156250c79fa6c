/*
 * rt_v2_internal.h — the Open Inference Protocol's (KServe v2) parts in the
 * runtime, shared by:
 *
 *   rt_v2_model.c   the model as v2 shows it: input and output tensors
 *                   (names, datatypes, shapes), the metadata answer
 *   rt_v2_parse.c   an infer body (JSON tensors, binary tensors after the
 *                   JSON header) into the request's rt_batch
 *   rt_v2_replay.c  the last JSON body's layout, to read the next one
 *                   that differs only in its values without the full parse
 *   rt_v2_out.c     the answer from rt_outputs: JSON or binary tensors,
 *                   requested outputs, the classification extension
 *
 * Not for other modules (they use rt.h), nor for the rest of the runtime.
 */
#ifndef PREDICTD_RT_V2_INTERNAL_H
#define PREDICTD_RT_V2_INTERNAL_H

#include "rt_json_internal.h"

/* What an output tensor holds (the serving_default signature's names). */
typedef enum {
    RT_V2_OUT_NONE = 0,
    RT_V2_OUT_ALL_CLASS_IDS, /* INT32 [n, classes] */
    RT_V2_OUT_ALL_CLASSES,   /* BYTES [n, classes] */
    RT_V2_OUT_CLASS_IDS,     /* INT64 [n, 1] */
    RT_V2_OUT_CLASSES,       /* BYTES [n, 1] */
    RT_V2_OUT_LOGISTIC,      /* FP32 [n, 1] (binary classifiers) */
    RT_V2_OUT_LOGITS,        /* FP32 [n, logits_dim] */
    RT_V2_OUT_PROBABILITIES, /* FP32 [n, classes] */
    RT_V2_OUT_PREDICTIONS,   /* FP32 [n, label_dimension] (regressors) */
    RT_V2_OUT_LABEL_INT64,   /* INT64 [n]: an ONNX classifier's int64 label */
} rt_v2_out_kind;

#define RT_V2_MAX_OUTPUTS 16
/* A request's "id" is echoed in its answer and log: at most this many bytes
 * (Triton's ids are UUIDs and trace ids, well under it). */
#define RT_V2_MAX_ID_BYTES 1024
/* A "parameters" object (the request's, an input's, an output's) as JSON
 * text: at most this many bytes (its keys are a handful of flags). */
#define RT_V2_MAX_PARAMS_BYTES 16384

/* One output tensor of the model. */
typedef struct rt_v2_output {
    const char *name;
    rt_v2_out_kind kind;
    const char *datatype; /* "FP32", "INT64", "INT32", "BYTES" */
    size_t width;         /* values per instance */
    size_t off;           /* PREDICTIONS: the first of them (an ONNX graph's output) */
    bool flat;            /* shape [n] (an ONNX graph's rank-1 output), else [n, width] */
    const char *const *labels; /* LABEL_INT64: each class's label, as digits */
    size_t head; /* several heads: 1 + the head whose output ("<head>/<output>") it is */
} rt_v2_output;

/* The v2 datatype of a ModelDef dtype ("FP32", "BYTES", "INT64", "INT32"). */
const char *rt_v2_datatype(Predictd__DType t);

/* The signature v2 serves (serving_default, or predict; a model of several
 * heads: predict, every head's outputs as "<head>/<output>"), NULL when the
 * model lists none. */
const Predictd__SignatureDef *rt_v2_signature(const rt_graph *g);

/* The model's output tensors, in the signature's order (the head's usual
 * outputs without one) into outs[RT_V2_MAX_OUTPUTS]; returns their count. */
size_t rt_v2_outputs(const rt_graph *g, const Predictd__SignatureDef *sig, rt_v2_output *outs);

/* Values per instance of raw input `in` (features mode): the signature's
 * second dimension, else 1. hint: where to look first in sig->inputs. */
size_t rt_v2_input_width(const rt_graph *g, const Predictd__SignatureDef *sig, size_t in);

/* One requested output: which one and how it is answered. */
typedef struct rt_v2_sel {
    size_t out;      /* index into the model's outputs */
    int binary;      /* answered as binary tensor data */
    int64_t classes; /* the classification extension's count, 0: off */
} rt_v2_sel;

/* The answer settings of a parsed infer request, kept in its rt_ctx
 * (struct rt_ctx's v2) from rt_v2_parse until rendered. */
typedef struct rt_v2_req {
    rt_buf name;    /* model_name (text) */
    int64_t version; /* model_version, -1: none */
    rt_buf id;      /* the request's "id" as a JSON string (quoted), empty: none */
    rt_v2_output outs[RT_V2_MAX_OUTPUTS];
    size_t n_outs;
    rt_v2_sel sel[RT_V2_MAX_OUTPUTS];
    size_t n_sel;
    size_t answer_header; /* after rendering: the answer's JSON length when
                             binary tensors follow, else 0 */
    rt_buf bin;      /* scratch: binary tensor data of an answer */
    void *ins;       /* scratch: the parser's per-input records */
    size_t cap_ins;
    struct rt_v2_plan *plan; /* the last JSON body's layout (rt_v2_replay.c),
                                NULL until one is recorded */
    uint64_t replays;        /* bodies read by the plan (for tests) */
} rt_v2_req;

/* c's request settings, made on first use; NULL when out of memory. */
rt_v2_req *rt_v2_req_of(rt_ctx *c);
/* Frees what rt_v2_req_of made (rt_ctx_free calls it through c->v2_free).
 * NULL is fine. */
void rt_v2_req_free(rt_v2_req *q);

/* Renders the answer of request q over outputs o (o->n instances) into out
 * and sets q->answer_header. */
RT_WUR rt_status rt_v2_render(const rt_graph *g, rt_v2_req *q, const rt_outputs *o, rt_buf *out);
/* Before running request q of n instances: RT_ERR_LIMIT, with the message
 * /v1's rt_json_check_answer gives (naming max_answer_bytes), when its
 * answer (the requested outputs, JSON or binary, the echoed id) could pass
 * p->max_answer_bytes, counting every float at its longest text; RT_OK when
 * it cannot, or when there is no limit (p NULL or 0). */
RT_WUR rt_status rt_v2_check_answer(const rt_graph *g, const rt_v2_req *q, size_t n,
                             const rt_json_params *p, rt_err *err);

/* ------------------------------------------- replay (rt_v2_replay.c) */

/* The layout of the last JSON body read without fault: its bytes, and
 * where each of its values stood and went. */
typedef struct rt_v2_plan rt_v2_plan;

/* What a recorded value is. */
typedef enum {
    RT_V2_SLOT_NUMBER, /* an element of an FP32 input's "data" */
    RT_V2_SLOT_STRING, /* an element of a BYTES input's "data" */
    RT_V2_SLOT_ID,     /* the request's "id" */
} rt_v2_slot_kind;

/* An empty plan (NULL when out of memory); rt_v2_plan_free frees it (NULL
 * is fine). */
rt_v2_plan *rt_v2_plan_new(void);
void rt_v2_plan_free(rt_v2_plan *pl);
/* Recording: rt_v2_plan_begin forgets the plan and starts recording the
 * body the full parser reads; rt_v2_plan_slot notes one value it took
 * (bytes [at, end) of the body, for instance inst and graph input `input`;
 * an id's inst and input are 0); rt_v2_plan_drop_data forgets the data
 * values noted so far (the parser starts filling again); rt_v2_plan_keep,
 * after the parser succeeded, keeps the recording as the plan for graph g
 * under params (signature sig, n instances, q's outputs and selection).
 * A recording that grew too large or ran out of memory is not kept. */
void rt_v2_plan_begin(rt_v2_plan *pl);
void rt_v2_plan_slot(rt_v2_plan *pl, size_t at, size_t end, size_t inst, size_t input,
                     rt_v2_slot_kind kind);
void rt_v2_plan_drop_data(rt_v2_plan *pl);
void rt_v2_plan_keep(rt_v2_plan *pl, const rt_graph *g, const rt_json_params *params,
                     const Predictd__SignatureDef *sig, const char *body, size_t len,
                     const rt_v2_req *q, size_t n);
/* Reads body by plan pl (NULL: none) when it was recorded for g under the
 * same params and the body differs from it only in its values: returns 1
 * with c's (prepared, empty) batch filled, q's id, outputs and selection
 * set and *out filled, as the full parser would have left them, and
 * q->replays counted. Otherwise
 * 0, with the batch and q's id empty again and nothing reported. */
int rt_v2_plan_replay(const rt_v2_plan *pl, const rt_graph *g, const rt_json_params *params,
                      const char *body, size_t len, rt_ctx *c, rt_v2_req *q, rt_parsed *out);

#endif /* PREDICTD_RT_V2_INTERNAL_H */
