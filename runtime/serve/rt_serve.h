/*
 * rt_serve.h — the request path (runtime/serve/, runtime/serve/v2/): the JSON
 * reader, TensorFlow Serving's bodies in and out (:predict, :classify,
 * :regress), the per-thread request context, cross-request batching, the Open
 * Inference Protocol (KServe v2) bodies, and :explain bodies.
 *
 * Pipeline of one request:
 *   body --rt_json_handle--> rt_batch (raw inputs per instance, via the receiver)
 *        --rt_transform / rt_forward / rt_head_compute (rt_model.h)--> outputs
 *        --> JSON answer
 *
 * Thread safety: an rt_ctx (scratch for one request at a time) belongs to
 * one thread at a time.
 *
 * May use: every layer below.
 */
#ifndef PREDICTD_RT_SERVE_H
#define PREDICTD_RT_SERVE_H

#include "rt_explain.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------- JSON serving */

typedef enum {
    RT_METHOD_PREDICT = 0,
    RT_METHOD_CLASSIFY = 1,
    RT_METHOD_REGRESS = 2,
    RT_METHOD_INFER = 3, /* an Open Inference Protocol (KServe v2) infer body (rt_v2_*.c) */
    RT_METHOD_EXPLAIN = 4, /* Vertex AI's :explain (rt_json_explain) */
    RT_METHOD_MULTI_INFERENCE = 5, /* TF Serving's gRPC MultiInference: a name for the server's
                                      metrics only (its tasks run as classify / regress);
                                      never a method of rt_json_handle */
} rt_method;

typedef struct rt_json_params {
    size_t max_instances; /* per request; default 100000 */
    int max_depth;        /* JSON nesting; default 64 */
    size_t max_answer_bytes; /* largest answer; 0 = no limit (the default) */
    size_t max_explain_instances; /* instances of one :explain (each costs up to
                                     2^16 model rows); default 1000, 0 = no limit */
} rt_json_params;

/* The default limits (rt_json_params.c); max_answer_bytes 0. Pure. */
rt_json_params rt_json_default_params(void);

/* Per-thread scratch for serving requests (batch, features, workspace,
 * outputs); reuse it across requests on one thread. */
typedef struct rt_ctx rt_ctx;
rt_ctx *rt_ctx_new(void);
void rt_ctx_free(rt_ctx *c);
/* The hook an :explain on c asks between chunks of model rows and between
 * instances (rt_xai_params.stop), and any run on c (a predict, classify,
 * regress, a merged batch) before its forward pass and between chunks of
 * 4096 rows of it: true stops it with RT_ERR_LIMIT. NULL
 * clears it. The caller sets it for one request and clears it after. */
void rt_ctx_set_stop(rt_ctx *c, bool (*stop)(void *arg), void *arg);
/* When a request's stages ended on c (CLOCK_MONOTONIC ns, rt_time_now_ns; 0:
 * not reached): the body read into the batch (the transform began), the
 * feature columns done (the serving input function's transform), the
 * forward pass and head done, the answer written. Kept only while
 * rt_ctx_time_stages(c, true): the daemon's traced requests, whose child
 * spans they are; untraced requests read no clock. */
typedef struct rt_stage_marks {
    int64_t parsed, transformed, forwarded, rendered;
} rt_stage_marks;
/* Turns the stage clock of c on or off for its next request and clears
 * the marks. */
void rt_ctx_time_stages(rt_ctx *c, bool on);
/* The marks of the request c last ran (all 0 when the clock was off). */
rt_stage_marks rt_ctx_stages(const rt_ctx *c);
/* The raw inputs of the request c last read (after rt_json_handle,
 * rt_v2_handle or rt_merge_parse_only returned RT_OK), or NULL: for the
 * daemon's monitoring. Valid until c's next use. */
const rt_batch *rt_ctx_batch(const rt_ctx *c);

/*
 * Handles one TensorFlow Serving REST body against model m:
 *   predict: {"instances": [...]} or {"inputs": ...}, optional "signature_name";
 *   classify / regress: {"examples": [...], "context": {...}};
 *   infer: an Open Inference Protocol body (rt_v2_handle, its JSON header
 *   ending where its value ends: RT_V2_FIND_HEADER; for replays);
 *   explain: a :predict body with Vertex AI's explanationSpecOverride
 *   (rt_json_explain).
 * On success appends the JSON answer to out ({"predictions": [...]},
 * {"outputs": ...} or {"results": [...]}). On bad input returns
 * RT_ERR_INVALID (HTTP 400) or RT_ERR_LIMIT and a message naming the
 * instance and input; the caller renders {"error": msg}.
 */
RT_WUR rt_status rt_json_handle(const rt_model *m, rt_method method, const char *body, size_t len,
                         const rt_json_params *p, rt_ctx *c, rt_buf *out, rt_err *err);

/* The signature a request names (NULL or "" = serving_default; "predict" and
 * "serving_default" stand in for each other). *sig is NULL when the model
 * lists no signatures at all. RT_ERR_INVALID naming it when unknown. */
RT_WUR rt_status rt_json_find_signature(const Predictd__ModelDef *def, const char *name,
                                 const Predictd__SignatureDef **sig, rt_err *err);

/* A :predict body ({"instances"} or {"inputs"}, "signature_name") read into
 * c's batch as rt_json_handle reads it, then only the serving input function
 * run on it (rt_transform; no forward pass, no head): *f gets the features,
 * held by c and valid until c's next use. With f NULL the body is only read.
 * Errors are the parser's and the transform's own messages, as they are
 * ("instances[3].age: ..."; rt_json_handle words some of them for the
 * client). For predict-model transform. c: one thread at a time. */
RT_WUR rt_status rt_json_transform(const rt_graph *g, const char *body, size_t len,
                            const rt_json_params *p, rt_ctx *c, const rt_features **f,
                            rt_err *err);

/* ------------------------------------------ cross-request batching (rt_merge.c) */

/* A :predict, :classify or :regress body parsed into an rt_ctx but not run
 * yet (the daemon's cross-request batching parses on the HTTP threads, runs
 * later). Requests of one model whose rt_merge_key is the same may be merged
 * whatever their method and signature: the run (transform, forward pass,
 * every head) does not depend on them, only each answer's rendering does. */
typedef struct rt_parsed {
    const void *sig;  /* the signature it named (by address) */
    int columnar;     /* answered as {"outputs"} instead of {"predictions"} */
    size_t n;         /* instances */
    const void *v2;   /* an Open Inference Protocol request (rt_v2_parse): its
                         answer's settings, held by the request's rt_ctx; NULL
                         for a TF Serving body */
    int method;       /* RT_METHOD_PREDICT (and v2), _CLASSIFY or _REGRESS:
                         how its answer is rendered */
    long head;        /* :classify / :regress on a model of several heads:
                         the head it answers (rt_json_serve's rule); else -1 */
    int missing;      /* its batch's missing-input policy (rt_missing_policy) */
} rt_parsed;

/* Parses a :predict body for model m into c's batch, without running it.
 * Fails exactly as rt_json_handle would on the same body (same status and
 * message). Thread safety: c belongs to the caller. */
RT_WUR rt_status rt_merge_parse_only(const rt_model *m, const char *body, size_t len,
                             const rt_json_params *p, rt_ctx *c, rt_parsed *out, rt_err *err);

/* rt_merge_parse_only for a body of `method`: RT_METHOD_PREDICT (the same),
 * RT_METHOD_CLASSIFY or RT_METHOD_REGRESS ({"examples"}, read as
 * rt_json_handle reads them, the head chosen and the answer's size checked
 * as it does). Fails exactly as rt_json_handle would on the same body. A
 * request of tf.Examples whose every string input has a value is given the
 * missing-input policy of a :predict body (the same transform for its rows),
 * so that it may share a batch with :predict requests. */
RT_WUR rt_status rt_merge_parse(const rt_model *m, rt_method method, const char *body, size_t len,
                         const rt_json_params *p, rt_ctx *c, rt_parsed *out, rt_err *err);

/* The key under which a parsed request may be merged with others of the same
 * model (the same key: the same missing-input policy). */
const void *rt_merge_key(const rt_parsed *pr);

/* Runs the request parsed into c on its own and appends its answer to out
 * (its method's: predictions, outputs, a v2 answer, or results): the same
 * bytes rt_json_handle gives for the body, and the same error. */
RT_WUR rt_status rt_merge_run_parsed(const rt_model *m, rt_ctx *c, const rt_parsed *pr, rt_buf *out,
                             rt_err *err);

/* Appends every instance of src (values and strings copied) to dst; both
 * made for the same graph and with the same missing-input policy. */
RT_WUR rt_status rt_merge_batch_append(rt_batch *dst, const rt_batch *src, rt_err *err);

/*
 * Merges the parsed requests reqs[0..n) (all for model m and of one
 * rt_merge_key, each rt_ctx holding one rt_merge_parse result) into mc's batch in that order, and
 * runs ONE transform, forward pass and head over it. Request k's instances
 * are rows [start_k, start_k + n_k), start_k = the sum of the earlier n.
 * Every row gets the bits it would get if its request ran alone (the DNN
 * runs each request's rows as a segment of its own). On failure (for
 * instance one request's input fails the transform) nothing is kept: run
 * each request with rt_merge_run_parsed instead, which gives each its own
 * answer or error. mc, reqs: owned by the caller, one thread at a time.
 */
RT_WUR rt_status rt_merge_run(const rt_model *m, rt_ctx *mc, rt_ctx *const *reqs,
                       const rt_parsed *parsed, size_t n, rt_err *err);

/* Appends the answer of the request whose rows start at `start` in mc's
 * last rt_merge_run (pr->n rows), rendered as pr asked (its method: rows or
 * columns of its signature's outputs, v2, or classify / regress results of
 * its head). On an error (RT_ERR_INVALID: a regress its head cannot answer)
 * run that request alone (rt_merge_run_parsed) for its own message. */
RT_WUR rt_status rt_merge_render(const rt_model *m, const rt_ctx *mc, size_t start,
                          const rt_parsed *pr, rt_buf *out);

/* TensorFlow's name of a dtype ("DT_FLOAT", "DT_STRING", ...; "DT_INVALID"). */
const char *rt_json_dtype_name(Predictd__DType t);

/* Appends {"model_spec": ..., "metadata": {"signature_def": ...}} (TF
 * Serving's GET .../metadata answer) for model `name` version `version`. */
RT_WUR rt_status rt_json_metadata(const rt_model *m, const char *name, int64_t version, rt_buf *out);

/* ------------------------- Open Inference Protocol, KServe v2 (rt_v2_*.c) */

/*
 * The Open Inference Protocol's REST bodies (docs/v2-protocol.md): model
 * metadata, and infer requests whose input tensors (JSON "data", or raw
 * little-endian bytes after the JSON header: Triton's binary tensor data
 * extension) fill the same rt_batch a :predict body fills, read by the same
 * JSON reader with the same rules for values. Answers are rendered from the
 * same rt_outputs, as JSON or binary tensors, with Triton's classification
 * extension. One input per raw feature (FP32 or BYTES, shape [-1] or
 * [-1, k]), or the one BYTES input of a CSV / tf.Example receiver; outputs
 * are the serving_default signature's.
 */

/* header_len values besides a length: no Inference-Header-Content-Length
 * (the whole body is JSON), or the JSON header ends where its value ends
 * (a replayed body whose header length was not kept). */
#define RT_V2_NO_HEADER SIZE_MAX
#define RT_V2_FIND_HEADER (SIZE_MAX - 1)

/*
 * Parses an infer body (header_len: the Inference-Header-Content-Length,
 * or one of the values above) for model m into c's batch without running
 * it; the answer's settings (requested outputs, binary, classification,
 * id, model_name and version to report) stay in c for rendering. out->v2 is
 * set (see rt_parsed): rt_merge_run_parsed and rt_merge_render render a v2
 * answer for it. RT_ERR_INVALID / RT_ERR_LIMIT (400) name the tensor, what
 * was sent and what the model expects. name: the model's name in answers
 * (NULL: the export's); version < 0: no model_version. c: the caller's.
 */
RT_WUR rt_status rt_v2_parse(const rt_model *m, const char *name, int64_t version, const char *body,
                      size_t len, size_t header_len, const rt_json_params *p, rt_ctx *c,
                      rt_parsed *out, rt_err *err);
/* rt_v2_parse, run, and the answer appended to out (the bytes
 * rt_merge_run_parsed would give). */
RT_WUR rt_status rt_v2_handle(const rt_model *m, const char *name, int64_t version, const char *body,
                       size_t len, size_t header_len, const rt_json_params *p, rt_ctx *c,
                       rt_buf *out, rt_err *err);
/* After a v2 answer was rendered for the request parsed into c: the length
 * of its JSON part when binary tensors follow it (the answer's
 * Inference-Header-Content-Length), else 0. */
size_t rt_v2_answer_header_len(const rt_ctx *c);
/* Appends the model metadata answer {"name", "versions", "platform",
 * "inputs", "outputs"} for m, served as model `name` with the given
 * versions (the ones a client may ask for, ascending). */
RT_WUR rt_status rt_v2_metadata(const rt_model *m, const char *name, const int64_t *versions,
                         size_t n_versions, rt_buf *out);

/* ------------------------------------ :explain bodies (rt_json_explain.c) */

/*
 * Handles one :explain body against m: a :predict body ("instances" or
 * "inputs", "signature_name") plus Vertex AI's optional
 * "explanationSpecOverride": {"parameters": {"sampledShapleyAttribution":
 * {"pathCount"}, "integratedGradientsAttribution": {"stepCount"},
 * "exactShapleyAttribution": {}, "topK", "outputIndices"}, "metadata":
 * {"inputs": {NAME: {"inputBaselines": [v, ...]}}, "outputs": {"probabilities" |
 * "logits" | "predictions": {}}}}. Appends Vertex's ExplainResponse:
 * {"explanations": [{"attributions": [{...}]}], "predictions": ...} whose
 * predictions are the bytes :predict answers for the same body. Several
 * inputBaselines (the same number k for every input that gives several; one
 * value is in every baseline): the attributions and baseline output are the
 * means over the k baselines, as Vertex AI's. Errors as
 * rt_json_handle's, and RT_ERR_INVALID naming the override's key
 * ("explanationSpecOverride.parameters.sampledShapleyAttribution.pathCount:
 * 0 is out of range [1, 50]"). *evals (may be NULL) gets the model rows
 * evaluated. c: one thread at a time.
 */
RT_WUR rt_status rt_json_explain(const rt_model *m, const char *body, size_t len,
                          const rt_json_params *p, rt_ctx *c, rt_buf *out, size_t *evals,
                          rt_err *err);

/*
 * What an :explain body will cost m, before running it: *rows gets the model
 * rows rt_json_explain would evaluate when every raw input differs from the
 * baseline (an upper bound; an input equal to its baseline costs nothing):
 * per instance, the two ends plus 2^d coalitions (exact enumeration; d + 1
 * past RT_XAI_EXACT_MAX for a model additive in its inputs; none for
 * TreeSHAP), pathCount x (d + 1) (sampled Shapley), or 2 x (stepCount + 1)
 * (integrated gradients, forward and backward), d the model's raw inputs;
 * times the baselines and the instances, which are counted, not read. Reads the
 * explanationSpecOverride as rt_json_explain does; a body it refuses is an
 * error here too (rt_json_explain gives the answer). c: scratch, one thread
 * at a time.
 */
RT_WUR rt_status rt_json_explain_rows(const rt_model *m, const char *body, size_t len,
                               const rt_json_params *p, rt_ctx *c, size_t *rows, rt_err *err);

#ifdef __cplusplus
}
#endif

#endif /* PREDICTD_RT_SERVE_H */
