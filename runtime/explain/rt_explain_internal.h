/*
 * rt_explain_internal.h — what the explanation files share: rt_xai.c
 * (players, the value function over coalitions, exact and sampled Shapley),
 * rt_xai_ig.c (integrated gradients through the linear part and the
 * DNN or a custom graph), rt_xai_graph.c (a custom graph's input gradient), rt_xai_rows.c (the coalition rows and the inputs of a
 * column, under both), rt_json_explain.c (the :explain body and answer) and
 * rt_xai_base.c (baselines). Not for other modules, nor for the rest of
 * the runtime.
 */
#ifndef PREDICTD_RT_EXPLAIN_INTERNAL_H
#define PREDICTD_RT_EXPLAIN_INTERNAL_H

#include "rt_explain.h"
#include "rt_model_internal.h"

/* One explanation in progress: the instance, the baseline, the players (the
 * raw inputs whose cells differ between the two) and the scratch that
 * evaluates coalitions: rows mixing the instance's cells (a player in the
 * coalition) and the baseline's (the others), through the serving
 * transform, forward pass and head. */
typedef struct xai_ctx {
    const rt_graph *g;
    const rt_xai_params *p;
    const rt_graph *hv;  /* the explained head: g, or of several heads p->head's view
                            (rt_graph_head_view: its type, width, classes) */
    size_t hoff;         /* its first column in g's logits (0 for one head) */
    rt_xai_output space; /* resolved: never RT_XAI_OUT_DEFAULT */
    size_t n_out;        /* values of the explained output per row */
    const rt_batch *xb, *bb;
    size_t xi, bi;
    size_t n_in;              /* raw inputs of g */
    size_t d;                 /* players */
    size_t *players;          /* [d] raw input index of each player */
    size_t words;             /* uint64_t words of one coalition mask */
    unsigned char *from_base; /* [n_in] scratch of rt_xai_eval */
    rt_batch *rows;
    rt_features f;
    rt_workspace *ws;
    rt_outputs o;
    float *logits;
    size_t logits_cap;
    size_t evals; /* rows evaluated so far */
} xai_ctx;

/* Rows of one rt_xai_eval chunk. */
#define XAI_CHUNK 1024

/*
 * v[r * n_outs + j] = the explained output outs[j] at coalition masks[r]
 * (masks: n rows of e->words words; bit k = player k takes the instance's
 * cells), as double. Evaluates XAI_CHUNK rows at a time; each row's value
 * has the bits it would have alone (batch invariance).
 */
rt_status rt_xai_eval(xai_ctx *e, const uint64_t *masks, size_t n, const size_t *outs,
                      size_t n_outs, double *v, rt_err *err);

/* e->rows = the coalitions masks[0..m) (m rows, not run). */
rt_status rt_xai_fill(xai_ctx *e, const uint64_t *masks, size_t m, rt_err *err);

/* The explained output k of row r of outputs o (logits, probabilities or
 * predictions as e->space says; of several heads, the explained head's
 * own, o->heads[p->head]). */
float rt_xai_out_value(const xai_ctx *e, const rt_outputs *o, size_t r, size_t k);

/* The raw inputs feature column c reads (through its sources and the parts
 * of a cross), each once, into in[0..*n) (room for g->n_inputs). */
void rt_xai_column_inputs(const rt_graph *g, size_t c, size_t *in, size_t *n);

/*
 * Integrated gradients (rt_xai_ig.c): for each outs[j], attr[j] (room
 * for e->n_in doubles) gets the attribution of every raw input. The path
 * runs through the transformed inputs of the baseline and the instance;
 * its ends are evaluated as the forward pass does.
 */
rt_status rt_xai_integrated_gradients(xai_ctx *e, const size_t *outs, size_t n_outs,
                                   double *const *attr, rt_err *err);

/* A custom graph's nodes run over P rows (rt_xai_graph.c): every node's
 * output y[k] (P x its width) and a dense node's value before its
 * activation pre[k] (NULL for the others); logits = y[the head's node]
 * (several heads: heads_logits, their nodes' outputs side by side, P x
 * logits_dim). */
typedef struct xai_gpath {
    const rt_graph *g;
    size_t P, n;
    float **y, **pre;
    float *heads_logits;
    const float *logits;
} xai_gpath;

/* Runs g's nodes (g->n_nodes > 0) over P rows as the serving forward does
 * (rt_node_forward): z (P x g->dnn_dim) the DNN input the input and
 * embedding nodes read, lin (P x logits_dim) the linear node's output (NULL
 * when g has none). t is then released by rt_xai_graph_free, even on an
 * error (RT_ERR_NOMEM). */
rt_status rt_xai_graph_forward(const rt_graph *g, const float *z, const float *lin, size_t P,
                               xai_gpath *t, rt_err *err);
/* From gl (P x logits_dim: d output / d logits at each row) back through
 * t's nodes: gz (P x dnn_dim) gets d output / d DNN input, glin (P x
 * logits_dim, NULL: not wanted) d output / d the linear node's output. In
 * double. RT_ERR_NOMEM only. */
rt_status rt_xai_graph_backward(const xai_gpath *t, const double *gl, double *gz, double *glin,
                                rt_err *err);
/* Frees what rt_xai_graph_forward made; t zeroed. */
void rt_xai_graph_free(xai_gpath *t);
/* The derivative of activation act (leaky_relu's slope alpha, 0: the
 * default) at pre-activation z with activation y: relu's is 0 at 0, as
 * TensorFlow's. Pure. */
double rt_xai_act_grad(Predictd__Activation act, float alpha, float z, float y);

/* An ONNX network along the integrated-gradients path (rt_xai_onnx.c):
 * every value's P rows (val, as the plan runs them) and its gradient
 * (grad, double; an alias shares its target's), the logits (P x ld). */
typedef struct xai_opath {
    const rt_onnx *o;
    size_t P;
    float **val;
    double **grad;
    float *logits;
} xai_opath;

/* RT_ERR_INVALID naming the first step of o that has no gradient (a tree
 * ensemble, OneHotEncoder, LabelEncoder, a LinearClassifier's SOFTMAX_ZERO
 * or PROBIT), else RT_OK. */
rt_status rt_xai_onnx_check(const rt_onnx *o, rt_err *err);
/* Runs g's ONNX network (g->onnx) over the m + 1 points of the straight
 * path from row 0 of f (the baseline's features) to row 1 (the
 * instance's); its ends are the two rows exactly. t is released by
 * rt_xai_onnx_free (done here on an error). */
rt_status rt_xai_onnx_forward(const rt_graph *g, const rt_features *f, size_t m, xai_opath *t,
                              rt_err *err);
/* From gl (P x ld: d output / d logits) back through t's steps: afterwards
 * t->grad[o->inputs[i]] holds d output / d graph input i at each point. */
rt_status rt_xai_onnx_backward(const xai_opath *t, const double *gl, size_t ld, rt_err *err);
/* Frees what rt_xai_onnx_forward made; t zeroed. */
void rt_xai_onnx_free(xai_opath *t);

/* One input's baseline value given by a request (inputBaselines): a
 * number (a list input: in each of its slots), a string, or for a list input
 * a list of its length (vec, one value per slot). */
typedef struct xai_base_value {
    bool given;
    bool is_str;
    double num;
    char *str; /* malloc'd when is_str */
    size_t len;
    double *vec; /* malloc'd, n_vec values (a list input's whole baseline), or NULL */
    size_t n_vec;
} xai_base_value;

/* The values raw input in holds per instance: its numeric column's width
 * when it is a list input (an ONNX graph input fed whole, k > 1), else 1. */
size_t rt_xai_input_width(const rt_graph *g, size_t in);

/* rt_xai_model_baseline with the request's values over[0..n_inputs) (NULL:
 * none) taking precedence (rt_xai_base.c). */
rt_status rt_xai_baseline_batch(const rt_model *m, const xai_base_value *over, rt_batch **out,
                             rt_err *err);

#endif /* PREDICTD_RT_EXPLAIN_INTERNAL_H */
