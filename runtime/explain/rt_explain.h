/*
 * rt_explain.h — feature attributions (runtime/explain/): exact and sampled
 * Shapley values, TreeSHAP, integrated gradients, and the baselines they
 * start from. The JSON of an :explain request is the serving layer's
 * (rt_serve.h, rt_json_explain).
 *
 * May use: core, data, stats, model.
 */
#ifndef PREDICTD_RT_EXPLAIN_H
#define PREDICTD_RT_EXPLAIN_H

#include "rt_model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------ explanations (rt_xai*.c) */

/*
 * Feature attributions for one prediction (docs/explanations.md): how much
 * each raw input of the serving signature moved the explained output from
 * its value at the baseline instance to its value at the instance. A column
 * that reads several raw inputs (crossed, embedding of a cross) is not a
 * feature of its own: the raw inputs it reads share it. Methods:
 *   EXACT    Shapley values, exactly: a BoostedTrees model explained on its
 *            logits by TreeSHAP with the baseline as the one reference
 *            (polynomial); else every coalition of the inputs that differ
 *            from the baseline (at most RT_XAI_EXACT_MAX of them) batched
 *            through the forward pass; past that, the closed form of a model
 *            additive in its inputs (a linear model explained on its
 *            logits); else refused.
 *   SAMPLED  Vertex AI's sampled Shapley: path_count random permutations,
 *            seeded (the same request gives the same answer).
 *   TREE_SHAP path-dependent TreeSHAP (Lundberg et al. 2018, Algorithm 2)
 *            of a tree ensemble's logits, the covers its node weights (an
 *            XGBoost model's sum_hessian): no baseline instance, the baseline
 *            output is the expected logit under the covers; for an XGBoost
 *            model Booster.predict(pred_contribs=True) to the float.
 *   IG       integrated gradients (Sundararajan et al. 2017) by step_count
 *            trapezoid steps of the gradient of the output along the
 *            straight path from the baseline's transformed inputs (DNN input
 *            vector, linear part's one-hot / values) to the instance's;
 *            linear, DNN and wide & deep models (not trees).
 */
typedef enum {
    RT_XAI_DEFAULT = 0, /* EXACT when the model has at most RT_XAI_EXACT_MAX
                           raw inputs or is a tree ensemble explained on its
                           logits (TreeSHAP), else SAMPLED */
    RT_XAI_EXACT,
    RT_XAI_SAMPLED,
    RT_XAI_IG,
    RT_XAI_TREE_SHAP,
} rt_xai_method;

/* Which output is explained (Vertex's ExplanationMetadata.outputs key). */
typedef enum {
    RT_XAI_OUT_DEFAULT = 0, /* classifiers: probabilities; regressors: predictions */
    RT_XAI_OUT_PROBABILITIES,
    RT_XAI_OUT_LOGITS,
    RT_XAI_OUT_PREDICTIONS,
} rt_xai_output;

#define RT_XAI_EXACT_MAX 16     /* players of an exact enumeration (2^16 rows) */
#define RT_XAI_MAX_OUTPUTS 64   /* output indices one request may name */
#define RT_XAI_PATHS_DEFAULT 10 /* sampled Shapley's pathCount when not given */
#define RT_XAI_STEPS_DEFAULT 50 /* integrated gradients' stepCount when not given */
#define RT_XAI_MAX_BASELINES 16 /* inputBaselines values per input (averaged over) */

typedef struct rt_xai_params {
    rt_xai_method method;
    int path_count;            /* SAMPLED: 1..50 */
    int step_count;            /* IG: 1..100 */
    rt_xai_output output;
    int top_k;                 /* outputs explained, highest first; -1 all;
                                  0: 1 (unless output_indices) */
    size_t n_output_indices;   /* > 0: exactly these outputs */
    size_t output_indices[RT_XAI_MAX_OUTPUTS];
    size_t head;               /* several heads (TF's MultiHead): the head explained,
                                  its index (0: the first, TF's default); its own
                                  outputs are explained as a one-head model of its
                                  type would be. A one-head model has only 0 */
    uint64_t seed;             /* SAMPLED's permutations */
    bool enumerate;            /* EXACT: enumerate the coalitions even where
                                  TreeSHAP applies (tests compare the two) */
    bool (*stop)(void *arg);   /* asked before each chunk of model rows (and each
                                  instance of an :explain): true stops the work
                                  with RT_ERR_LIMIT "explain: stopped ..."; NULL:
                                  never (the server's deadline and client check) */
    void *stop_arg;
} rt_xai_params;

/* The defaults: RT_XAI_DEFAULT, RT_XAI_OUT_DEFAULT, top_k 0, path_count
 * RT_XAI_PATHS_DEFAULT, step_count RT_XAI_STEPS_DEFAULT, seed 1. */
rt_xai_params rt_xai_default_params(void);
/* The name of a method as requests write it ("exactShapleyAttribution",
 * "sampledShapleyAttribution", "integratedGradientsAttribution",
 * "treeShapAttribution"). */
const char *rt_xai_method_name(rt_xai_method m);

/* One explained output of one instance. */
typedef struct rt_xai_result {
    size_t output_index;
    float instance_value;      /* the output at the instance: the bits :predict answers */
    float baseline_value;      /* the output at the baseline instance */
    double approx_error;       /* |sum(attr) - (instance - baseline)| / |instance - baseline|
                                  (the absolute gap when the two are equal) */
    double *attr;              /* [rt_graph_num_inputs] owned by the caller */
    rt_xai_method method;      /* what ran (EXACT's closed form is EXACT) */
    size_t evaluations;        /* model rows evaluated */
} rt_xai_result;

/*
 * Explains instance xi of batch xb (made for g and filled by a receiver)
 * against instance bi of batch bb (the baseline: one value or none per
 * input; a missing cell follows bb's missing-input policy), for the outputs
 * p selects: n_res results, each with res[j].attr pointing at room for
 * rt_graph_num_inputs(g) doubles (the caller's). *n_res gets how many were
 * filled (at most max_res). Of a model with several heads, p->head's
 * outputs (output indices are the head's own). Errors: RT_ERR_INVALID naming the parameter
 * ("integratedGradientsAttribution: BoostedTrees models have no gradient
 * ..."), the instance's own transform errors; RT_ERR_LIMIT when EXACT
 * would need more than 2^RT_XAI_EXACT_MAX rows. Thread-safe for distinct
 * batches (g is only read).
 */
RT_WUR rt_status rt_xai_explain(const rt_graph *g, const rt_batch *xb, size_t xi, const rt_batch *bb,
                         size_t bi, const rt_xai_params *p, rt_xai_result *res, size_t max_res,
                         size_t *n_res, rt_err *err);

/*
 * The baseline instance for model m into a new one-instance batch *out
 * (rt_batch_free it): per raw input, the first of
 *   the export's training statistics (median of a numeric input, the most
 *   frequent value of a categorical one) -- when the export has them;
 *   the spec's export.explanation.baselines.<input> (training.spec_json);
 *   the raw column's CSV default, else 0 or "".
 * Thread-safe.
 */
RT_WUR rt_status rt_xai_model_baseline(const rt_model *m, rt_batch **out, rt_err *err);

#ifdef __cplusplus
}
#endif

#endif /* PREDICTD_RT_EXPLAIN_H */
