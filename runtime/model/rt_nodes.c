/*
 * rt_nodes.c — the serving forward of a custom model graph's computing
 * nodes (Graph.nodes, the custom estimator: docs/trainer.md): dense,
 * activation (every activation TensorFlow's Keras layers name), concat,
 * add, multiply, dropout and batch_norm, one node at a time.
 *
 * Batch invariance, as rt_forward.c promises: a dense node is rt_dense_rows
 * (each row summed in increasing input order, no fused multiply-add:
 * rt_dense.c); every other node works element by element, row by row, its
 * sums (add) and products (multiply) in the inputs' order, so an instance's
 * output has the same bits alone or in any batch. No OpenBLAS here.
 *
 * The canned five activations go through rt_activate (rt_activate.c) so
 * that a graph node and a canned hidden layer give the same bits; the
 * others are here. Batch normalization is rt_forward's: scale and shift per
 * unit computed in double, then y = x s + t in float.
 */
#include "rt_model.h"
#include "rt_model_internal.h"

#include <math.h>
#include <string.h>

/* SELU's constants (TensorFlow's, from Klambauer et al.). */
#define SELU_SCALE 1.0507009873554804934193349852946f
#define SELU_ALPHA 1.6732632423543772848170429916717f

static float sigmoid1(float x)
{
    if (x >= 0.0f)
        return 1.0f / (1.0f + expf(-x));
    float e = expf(x);
    return e / (1.0f + e);
}

void rt_node_activate(Predictd__Activation act, float alpha, float *y, size_t n)
{
    float a = alpha != 0.0f ? alpha : RT_NODE_LEAKY_ALPHA;
    switch (act) {
    case PREDICTD__ACTIVATION__ACT_RELU6: /* NaN kept, as relu */
        for (size_t k = 0; k < n; k++)
            y[k] = y[k] < 0.0f ? 0.0f : (y[k] > 6.0f ? 6.0f : y[k]);
        break;
    case PREDICTD__ACTIVATION__ACT_SELU:
        for (size_t k = 0; k < n; k++)
            y[k] = y[k] > 0.0f ? SELU_SCALE * y[k] : SELU_SCALE * (SELU_ALPHA * expm1f(y[k]));
        break;
    case PREDICTD__ACTIVATION__ACT_SOFTPLUS: /* log(1 + e^x), never e^large */
        for (size_t k = 0; k < n; k++) {
            float x = y[k];
            y[k] = x > 0.0f ? x + log1pf(expf(-x)) : log1pf(expf(x));
        }
        break;
    case PREDICTD__ACTIVATION__ACT_LEAKY_RELU:
        for (size_t k = 0; k < n; k++)
            y[k] = y[k] > 0.0f ? y[k] : a * y[k];
        break;
    case PREDICTD__ACTIVATION__ACT_GELU:
        for (size_t k = 0; k < n; k++) {
            float x = y[k];
            y[k] = 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
        }
        break;
    case PREDICTD__ACTIVATION__ACT_SWISH:
        for (size_t k = 0; k < n; k++)
            y[k] = y[k] * sigmoid1(y[k]);
        break;
    default: /* relu, linear, tanh, sigmoid, elu */
        rt_activate(act, y, n);
        break;
    }
}

static bool act_known(Predictd__Activation a)
{
    return (int)a >= 0 && a <= PREDICTD__ACTIVATION__ACT_SWISH;
}

rt_status rt_node_check(const rt_node_op *op, const char *name, rt_err *err)
{
    const char *nm = name ? name : "?";
    if (!op || (op->n_in && !op->in_width))
        return rt_err_set(err, RT_ERR_INVALID, "node %s: NULL argument", nm);
    if (op->out == 0)
        return rt_err_set(err, RT_ERR_INVALID, "node %s: width 0", nm);
    switch (op->kind) {
    case PREDICTD__NODE_KIND__NODE_DENSE:
        if (op->n_in != 1 || op->in_width[0] == 0)
            return rt_err_set(err, RT_ERR_INVALID, "node %s: dense reads one input", nm);
        if (!op->kernel || !op->bias)
            return rt_err_set(err, RT_ERR_INVALID, "node %s: dense has no kernel or bias", nm);
        if (!act_known(op->act))
            return rt_err_set(err, RT_ERR_INVALID, "node %s: unknown activation %d", nm,
                              (int)op->act);
        return RT_OK;
    case PREDICTD__NODE_KIND__NODE_ACTIVATION:
        if (!act_known(op->act))
            return rt_err_set(err, RT_ERR_INVALID, "node %s: unknown activation %d", nm,
                              (int)op->act);
        /* fall through */
    case PREDICTD__NODE_KIND__NODE_DROPOUT:
    case PREDICTD__NODE_KIND__NODE_BATCH_NORM:
        if (op->n_in != 1 || op->in_width[0] != op->out)
            return rt_err_set(err, RT_ERR_INVALID,
                              "node %s: reads one input of its own width %zu", nm, op->out);
        if (op->kind == PREDICTD__NODE_KIND__NODE_BATCH_NORM &&
            (!op->bn_gamma || !op->bn_beta || !op->bn_mean || !op->bn_var))
            return rt_err_set(err, RT_ERR_INVALID, "node %s: batch_norm has no statistics", nm);
        if (op->kind == PREDICTD__NODE_KIND__NODE_DROPOUT && !(op->rate >= 0.0f && op->rate < 1.0f))
            return rt_err_set(err, RT_ERR_INVALID, "node %s: dropout rate not in [0, 1)", nm);
        return RT_OK;
    case PREDICTD__NODE_KIND__NODE_CONCAT: {
        size_t sum = 0;
        for (size_t k = 0; k < op->n_in; k++) {
            if (op->in_width[k] > op->out - sum)
                return rt_err_set(err, RT_ERR_INVALID, "node %s: inputs wider than %zu", nm,
                                  op->out);
            sum += op->in_width[k];
        }
        if (op->n_in == 0 || sum != op->out)
            return rt_err_set(err, RT_ERR_INVALID, "node %s: inputs' widths sum to %zu, not %zu",
                              nm, sum, op->out);
        return RT_OK;
    }
    case PREDICTD__NODE_KIND__NODE_ADD:
    case PREDICTD__NODE_KIND__NODE_MULTIPLY:
        if (op->n_in < 2)
            return rt_err_set(err, RT_ERR_INVALID, "node %s: needs two or more inputs", nm);
        for (size_t k = 0; k < op->n_in; k++)
            if (op->in_width[k] != op->out)
                return rt_err_set(err, RT_ERR_INVALID,
                                  "node %s: input %zu has width %zu, the node %zu", nm, k,
                                  op->in_width[k], op->out);
        return RT_OK;
    default:
        return rt_err_set(err, RT_ERR_UNSUPPORTED,
                          "node %s: kind %d is not computed by rt_node_forward", nm,
                          (int)op->kind);
    }
}

/* y = x s + t per unit with the moving statistics (rt_forward.c's
 * batch_norm, the same operations in the same order). */
static void batch_norm(const rt_node_op *op, const float *x, size_t n, float *y)
{
    size_t w = op->out;
    for (size_t j = 0; j < w; j++) {
        double s = (double)op->bn_gamma[j] / sqrt((double)op->bn_var[j] + (double)op->bn_eps);
        float sc = (float)s;
        float sh = (float)((double)op->bn_beta[j] - (double)op->bn_mean[j] * s);
        for (size_t i = 0; i < n; i++)
            y[i * w + j] = x[i * w + j] * sc + sh;
    }
}

void rt_node_forward(const rt_node_op *op, const float *const *x, size_t n, float *pre, float *y)
{
    size_t w = op->out, cnt = n * w;
    if (n == 0)
        return;
    switch (op->kind) {
    case PREDICTD__NODE_KIND__NODE_DENSE:
        if (pre) {
            rt_dense_rows(x[0], n, op->in_width[0], op->kernel, op->bias, w, pre);
            memcpy(y, pre, cnt * sizeof(float));
        } else {
            rt_dense_rows(x[0], n, op->in_width[0], op->kernel, op->bias, w, y);
        }
        rt_node_activate(op->act, op->alpha, y, cnt);
        return;
    case PREDICTD__NODE_KIND__NODE_ACTIVATION:
        memcpy(y, x[0], cnt * sizeof(float));
        rt_node_activate(op->act, op->alpha, y, cnt);
        return;
    case PREDICTD__NODE_KIND__NODE_DROPOUT:
        memcpy(y, x[0], cnt * sizeof(float));
        return;
    case PREDICTD__NODE_KIND__NODE_BATCH_NORM:
        batch_norm(op, x[0], n, y);
        return;
    case PREDICTD__NODE_KIND__NODE_CONCAT:
        for (size_t i = 0; i < n; i++) {
            size_t off = 0;
            for (size_t k = 0; k < op->n_in; k++) {
                size_t wk = op->in_width[k];
                memcpy(y + i * w + off, x[k] + i * wk, wk * sizeof(float));
                off += wk;
            }
        }
        return;
    case PREDICTD__NODE_KIND__NODE_ADD:
    case PREDICTD__NODE_KIND__NODE_MULTIPLY: {
        bool add = op->kind == PREDICTD__NODE_KIND__NODE_ADD;
        memcpy(y, x[0], cnt * sizeof(float));
        for (size_t k = 1; k < op->n_in; k++) { /* ((x0 op x1) op x2) ... */
            const float *xk = x[k];
            if (add)
                for (size_t e = 0; e < cnt; e++)
                    y[e] += xk[e];
            else
                for (size_t e = 0; e < cnt; e++)
                    y[e] *= xk[e];
        }
        return;
    }
    default:
        return; /* rt_node_check refuses the others */
    }
}
