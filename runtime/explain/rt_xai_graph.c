/*
 * rt_xai_graph.c — the input gradient of a custom model graph (Graph.nodes,
 * the custom estimator) at serving time, for integrated gradients
 * (rt_xai_ig.c). The runtime does not link the trainer's backprop: this is
 * the runtime's own, for the serving forward only.
 *
 * Forward: the nodes in order over P rows given the DNN input and the
 * linear node's output, every node's output kept (and a dense node's value
 * before its activation): input and embedding nodes copy their slices of
 * the DNN input as rt_forward does, the others are rt_node_forward itself
 * (rt_nodes.c), so the logits along the path are the served arithmetic.
 *
 * Several heads (TF's MultiHead): the logits are the heads' logits nodes'
 * outputs side by side (rt_forward's layout), and the backward starts from
 * each head's columns of d output / d logits at that head's node (an
 * explained head's alone are non-zero: the others' nodes get 0).
 *
 * Backward, in double, from d output / d logits at the head's logits node
 * back to the first node: dense the activation's derivative then the
 * kernel's transpose; activation its derivative; dropout the identity
 * (serving); batch_norm the scale gamma / sqrt(var + eps) in float as the
 * forward uses it; concat splits; add passes to each input; multiply gives
 * each input the product of the others; input and embedding nodes add into
 * their slices of the DNN input's gradient; the linear node's gradient is
 * returned as it is (the linear part is linear along the path).
 *
 * Derivatives (rt_xai_act_grad), at the pre-activation z and activation y:
 * relu 1 where z > 0 (0 at 0, as TensorFlow's), relu6 1 where 0 < z < 6,
 * elu 1 or y + 1, selu scale or y + scale alpha, tanh 1 - y^2, sigmoid
 * y (1 - y), softplus sigmoid(z), leaky_relu 1 or alpha, gelu (erf)
 * Phi(z) + z phi(z), swish s + z s (1 - s) with s = sigmoid(z), linear 1.
 */
#include "rt_explain.h"
#include "rt_explain_internal.h"
#include "rt_model_limits.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* SELU's constants, rt_nodes.c's (TensorFlow's). */
#define SELU_SCALE 1.0507009873554804934193349852946
#define SELU_ALPHA 1.6732632423543772848170429916717

static double sigmoid(double x)
{
    return x >= 0.0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
}

double rt_xai_act_grad(Predictd__Activation act, float alpha, float z, float y)
{
    double a = alpha != 0.0f ? (double)alpha : (double)RT_NODE_LEAKY_ALPHA;
    double zd = (double)z, yd = (double)y;
    switch (act) {
    case PREDICTD__ACTIVATION__ACT_RELU: return z > 0.0f ? 1.0 : 0.0;
    case PREDICTD__ACTIVATION__ACT_RELU6: return z > 0.0f && z < 6.0f ? 1.0 : 0.0;
    case PREDICTD__ACTIVATION__ACT_ELU: return z > 0.0f ? 1.0 : yd + 1.0;
    case PREDICTD__ACTIVATION__ACT_SELU: return z > 0.0f ? SELU_SCALE : yd + SELU_SCALE * SELU_ALPHA;
    case PREDICTD__ACTIVATION__ACT_TANH: return 1.0 - yd * yd;
    case PREDICTD__ACTIVATION__ACT_SIGMOID: return yd * (1.0 - yd);
    case PREDICTD__ACTIVATION__ACT_SOFTPLUS: return sigmoid(zd);
    case PREDICTD__ACTIVATION__ACT_LEAKY_RELU: return z > 0.0f ? 1.0 : a;
    case PREDICTD__ACTIVATION__ACT_GELU:
        return 0.5 * (1.0 + erf(zd * 0.70710678118654752)) +
               zd * exp(-0.5 * zd * zd) * 0.39894228040143268;
    case PREDICTD__ACTIVATION__ACT_SWISH: {
        double s = sigmoid(zd);
        return s + zd * s * (1.0 - s);
    }
    default: return 1.0; /* linear */
    }
}

void rt_xai_graph_free(xai_gpath *t)
{
    for (size_t k = 0; t->y && k < t->n; k++) {
        free(t->y[k]);
        free(t->pre[k]);
    }
    free(t->y);
    free(t->pre);
    free(t->heads_logits);
    memset(t, 0, sizeof *t);
}

rt_status rt_xai_graph_forward(const rt_graph *g, const float *z, const float *lin, size_t P,
                               xai_gpath *t, rt_err *err)
{
    memset(t, 0, sizeof *t);
    t->g = g;
    t->P = P;
    t->n = g->n_nodes;
    t->y = calloc(t->n ? t->n : 1, sizeof *t->y);
    t->pre = calloc(t->n ? t->n : 1, sizeof *t->pre);
    if (!t->y || !t->pre)
        goto nomem;
    size_t D = g->dnn_dim;
    for (size_t k = 0; k < t->n; k++) {
        const rt_gnode *gn = &g->nodes[k];
        size_t w = gn->op.out;
        bool dense = gn->op.kind == PREDICTD__NODE_KIND__NODE_DENSE;
        float *y = t->y[k] = malloc(P * w * sizeof(float));
        if (!y || (dense && !(t->pre[k] = malloc(P * w * sizeof(float)))))
            goto nomem;
        switch (gn->op.kind) {
        case PREDICTD__NODE_KIND__NODE_INPUT:
        case PREDICTD__NODE_KIND__NODE_EMBEDDING:
            for (size_t i = 0; i < P; i++)
                for (size_t q = 0, off = 0; q < gn->n_slices; off += gn->slice_w[q++])
                    memcpy(y + i * w + off, z + i * D + gn->slice_off[q],
                           gn->slice_w[q] * sizeof(float));
            break;
        case PREDICTD__NODE_KIND__NODE_LINEAR:
            if (!lin)
                return rt_err_set(err, RT_ERR_INVALID,
                                  "rt_xai_graph_forward: node %s: no linear values",
                                  gn->def->name);
            memcpy(y, lin, P * w * sizeof(float));
            break;
        default: {
            const float *xs[RT_SPEC_MAX_NODE_INPUTS];
            for (size_t j = 0; j < gn->op.n_in; j++)
                xs[j] = t->y[gn->in[j]];
            rt_node_forward(&gn->op, xs, P, t->pre[k], y);
            break;
        }
        }
    }
    if (g->n_heads > 1) { /* the heads' logits side by side, as rt_forward lays them */
        size_t ld = g->logits_dim;
        float *l = t->heads_logits = malloc(P * ld * sizeof *l);
        if (!l)
            goto nomem;
        for (size_t h = 0; h < g->n_heads; h++)
            for (size_t i = 0; i < P; i++)
                memcpy(l + i * ld + g->head_off[h], t->y[g->head_node[h]] + i * g->head_w[h],
                       g->head_w[h] * sizeof *l);
        t->logits = l;
        return RT_OK;
    }
    t->logits = t->y[g->logits_node];
    return RT_OK;
nomem:
    return rt_err_set(err, RT_ERR_NOMEM, "integrated gradients: out of memory");
}

/* Node k's gradient gk (P x out) into its inputs' gradients gi; d is
 * scratch of the node's width. */
static void node_back(const xai_gpath *t, size_t k, const double *gk, double *const *gi,
                      double *d)
{
    const rt_gnode *gn = &t->g->nodes[k];
    const rt_node_op *op = &gn->op;
    size_t P = t->P, w = op->out, cnt = P * w;
    const float *y = t->y[k];
    switch (op->kind) {
    case PREDICTD__NODE_KIND__NODE_DENSE: {
        size_t ni = op->in_width[0];
        for (size_t i = 0; i < P; i++) {
            for (size_t j = 0; j < w; j++)
                d[j] = gk[i * w + j] *
                       rt_xai_act_grad(op->act, op->alpha, t->pre[k][i * w + j], y[i * w + j]);
            for (size_t a = 0; a < ni; a++) {
                const float *wr = op->kernel + a * w;
                double s = 0.0;
                for (size_t j = 0; j < w; j++)
                    s += (double)wr[j] * d[j];
                gi[0][i * ni + a] += s;
            }
        }
        return;
    }
    case PREDICTD__NODE_KIND__NODE_ACTIVATION: {
        const float *x = t->y[gn->in[0]];
        for (size_t e = 0; e < cnt; e++)
            gi[0][e] += gk[e] * rt_xai_act_grad(op->act, op->alpha, x[e], y[e]);
        return;
    }
    case PREDICTD__NODE_KIND__NODE_DROPOUT:
        for (size_t e = 0; e < cnt; e++)
            gi[0][e] += gk[e];
        return;
    case PREDICTD__NODE_KIND__NODE_BATCH_NORM:
        for (size_t j = 0; j < w; j++) {
            double s = (double)op->bn_gamma[j] / sqrt((double)op->bn_var[j] + (double)op->bn_eps);
            double sc = (double)(float)s; /* the forward's float scale */
            for (size_t i = 0; i < P; i++)
                gi[0][i * w + j] += gk[i * w + j] * sc;
        }
        return;
    case PREDICTD__NODE_KIND__NODE_CONCAT:
        for (size_t i = 0; i < P; i++)
            for (size_t q = 0, off = 0; q < op->n_in; off += op->in_width[q++])
                for (size_t c = 0; c < op->in_width[q]; c++)
                    gi[q][i * op->in_width[q] + c] += gk[i * w + off + c];
        return;
    case PREDICTD__NODE_KIND__NODE_ADD:
        for (size_t q = 0; q < op->n_in; q++)
            for (size_t e = 0; e < cnt; e++)
                gi[q][e] += gk[e];
        return;
    case PREDICTD__NODE_KIND__NODE_MULTIPLY:
        for (size_t q = 0; q < op->n_in; q++)
            for (size_t e = 0; e < cnt; e++) {
                double p = gk[e];
                for (size_t r = 0; r < op->n_in; r++)
                    if (r != q)
                        p *= (double)t->y[gn->in[r]][e];
                gi[q][e] += p;
            }
        return;
    default:
        return; /* input, embedding, linear: rt_xai_graph_backward */
    }
}

rt_status rt_xai_graph_backward(const xai_gpath *t, const double *gl, double *gz, double *glin,
                                rt_err *err)
{
    const rt_graph *g = t->g;
    size_t P = t->P, D = g->dnn_dim, n = t->n;
    double **gd = calloc(n ? n : 1, sizeof *gd), *d = NULL;
    rt_status st = RT_OK;
    size_t wmax = 1;
    for (size_t k = 0; k < n; k++)
        wmax = g->nodes[k].op.out > wmax ? g->nodes[k].op.out : wmax;
    if (!gd || !(d = malloc(wmax * sizeof *d))) {
        free(gd);
        return rt_err_set(err, RT_ERR_NOMEM, "integrated gradients: out of memory");
    }
    for (size_t k = 0; k < n; k++)
        if (!(gd[k] = calloc(P * g->nodes[k].op.out, sizeof **gd))) {
            st = rt_err_set(err, RT_ERR_NOMEM, "integrated gradients: out of memory");
            goto out;
        }
    if (g->n_heads > 1) { /* each head's columns of gl at its node (+=: heads may share one) */
        for (size_t h = 0; h < g->n_heads; h++)
            for (size_t i = 0; i < P; i++)
                for (size_t c = 0; c < g->head_w[h]; c++)
                    gd[g->head_node[h]][i * g->head_w[h] + c] +=
                        gl[i * g->logits_dim + g->head_off[h] + c];
    } else {
        memcpy(gd[g->logits_node], gl, P * g->logits_dim * sizeof **gd);
    }
    if (D)
        memset(gz, 0, P * D * sizeof *gz);
    if (glin)
        memset(glin, 0, P * g->logits_dim * sizeof *glin);
    for (size_t k = n; k-- > 0;) {
        const rt_gnode *gn = &g->nodes[k];
        size_t w = gn->op.out;
        switch (gn->op.kind) {
        case PREDICTD__NODE_KIND__NODE_INPUT:
        case PREDICTD__NODE_KIND__NODE_EMBEDDING:
            for (size_t i = 0; i < P; i++)
                for (size_t q = 0, off = 0; q < gn->n_slices; off += gn->slice_w[q++])
                    for (size_t c = 0; c < gn->slice_w[q]; c++)
                        gz[i * D + gn->slice_off[q] + c] += gd[k][i * w + off + c];
            break;
        case PREDICTD__NODE_KIND__NODE_LINEAR:
            if (glin)
                for (size_t e = 0; e < P * w; e++)
                    glin[e] += gd[k][e];
            break;
        default: {
            double *gi[RT_SPEC_MAX_NODE_INPUTS];
            for (size_t j = 0; j < gn->op.n_in; j++)
                gi[j] = gd[gn->in[j]];
            node_back(t, k, gd[k], gi, d);
            break;
        }
        }
    }
out:
    for (size_t k = 0; k < n; k++)
        free(gd[k]);
    free(gd);
    free(d);
    return st;
}
