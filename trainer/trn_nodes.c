/*
 * trn_nodes.c — backprop through one computing node of a custom model graph
 * (runtime/model/rt_nodes.c's forward): dense, activation, concat, add,
 * multiply, dropout (its training mask) and batch_norm (with its moving
 * statistics held constant, as serving computes it).
 *
 * Plain loops in a fixed order (no OpenBLAS): a node's gradients are the
 * same bits at any thread count. Gradients are added (+=) to what the
 * buffers hold, so a node read by several others gets the sum of theirs
 * (the DAG's fan-out) and a parameter's gradient the sum over the batch.
 */
#include "trn_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SELU_SCALE 1.0507009873554804934193349852946f
#define SELU_ALPHA 1.6732632423543772848170429916717f

static float sig(float x)
{
    if (x >= 0.0f)
        return 1.0f / (1.0f + expf(-x));
    float e = expf(x);
    return e / (1.0f + e);
}

void trn_act_grad(Predictd__Activation act, float alpha, const float *x, const float *y, float *d,
                  size_t cnt)
{
    float a = alpha != 0.0f ? alpha : RT_NODE_LEAKY_ALPHA;
    switch (act) {
    case PREDICTD__ACTIVATION__ACT_RELU:
        for (size_t k = 0; k < cnt; k++)
            d[k] = x[k] > 0.0f ? d[k] : 0.0f;
        break;
    case PREDICTD__ACTIVATION__ACT_TANH:
        for (size_t k = 0; k < cnt; k++)
            d[k] *= 1.0f - y[k] * y[k];
        break;
    case PREDICTD__ACTIVATION__ACT_SIGMOID:
        for (size_t k = 0; k < cnt; k++)
            d[k] *= y[k] * (1.0f - y[k]);
        break;
    case PREDICTD__ACTIVATION__ACT_ELU:
        for (size_t k = 0; k < cnt; k++)
            if (!(x[k] > 0.0f))
                d[k] *= y[k] + 1.0f;
        break;
    case PREDICTD__ACTIVATION__ACT_RELU6:
        for (size_t k = 0; k < cnt; k++)
            d[k] = x[k] > 0.0f && x[k] < 6.0f ? d[k] : 0.0f;
        break;
    case PREDICTD__ACTIVATION__ACT_SELU:
        for (size_t k = 0; k < cnt; k++)
            d[k] *= x[k] > 0.0f ? SELU_SCALE : y[k] + SELU_SCALE * SELU_ALPHA;
        break;
    case PREDICTD__ACTIVATION__ACT_SOFTPLUS:
        for (size_t k = 0; k < cnt; k++)
            d[k] *= sig(x[k]);
        break;
    case PREDICTD__ACTIVATION__ACT_LEAKY_RELU:
        for (size_t k = 0; k < cnt; k++)
            d[k] = x[k] > 0.0f ? d[k] : a * d[k];
        break;
    case PREDICTD__ACTIVATION__ACT_GELU:
        for (size_t k = 0; k < cnt; k++) { /* Phi(x) + x phi(x) */
            double v = x[k];
            double g = 0.5 * (1.0 + erf(v * 0.70710678118654752)) +
                       v * exp(-0.5 * v * v) * 0.39894228040143268;
            d[k] = (float)(d[k] * g);
        }
        break;
    case PREDICTD__ACTIVATION__ACT_SWISH:
        for (size_t k = 0; k < cnt; k++) { /* s + x s (1 - s) */
            float s = sig(x[k]);
            d[k] *= s + x[k] * s * (1.0f - s);
        }
        break;
    case PREDICTD__ACTIVATION__ACT_LINEAR:
    default:
        break;
    }
}

void trn_dropout_apply(const float *mask, const float *x, float *y, size_t cnt)
{
    for (size_t k = 0; k < cnt; k++)
        y[k] = x[k] * mask[k];
}

void trn_dropout_mask(rt_rng *r, float rate, float *mask, size_t cnt)
{
    float keep = 1.0f / (1.0f - rate);
    for (size_t k = 0; k < cnt; k++)
        mask[k] = rt_rng_uniform(r) < (double)rate ? 0.0f : keep;
}

rt_status trn_node_backward(const rt_node_op *op, const trn_node_io *io, size_t n, rt_err *err)
{
    size_t w = op->out, cnt = n * w;
    const float *dy = io->dy;
    if (n == 0)
        return RT_OK;
    switch (op->kind) {
    case PREDICTD__NODE_KIND__NODE_DENSE: {
        size_t in = op->in_width[0];
        float *d = malloc((cnt ? cnt : 1) * sizeof(float));
        if (!d)
            return rt_err_set(err, RT_ERR_NOMEM, "backprop: out of memory");
        memcpy(d, dy, cnt * sizeof(float));
        trn_act_grad(op->act, op->alpha, io->pre, io->y, d, cnt);
        const float *x = io->x[0];
        for (size_t i = 0; i < n; i++) {
            const float *di = d + i * w, *xi = x + i * in;
            if (io->dbias)
                for (size_t j = 0; j < w; j++)
                    io->dbias[j] += di[j];
            if (io->dkernel)
                for (size_t k = 0; k < in; k++) {
                    float xk = xi[k];
                    float *gk = io->dkernel + k * w;
                    for (size_t j = 0; j < w; j++)
                        gk[j] += xk * di[j];
                }
            if (io->dx && io->dx[0]) {
                float *dxi = io->dx[0] + i * in;
                for (size_t k = 0; k < in; k++) {
                    const float *wk = op->kernel + k * w;
                    float s = 0.0f;
                    for (size_t j = 0; j < w; j++)
                        s += wk[j] * di[j];
                    dxi[k] += s;
                }
            }
        }
        free(d);
        return RT_OK;
    }
    case PREDICTD__NODE_KIND__NODE_ACTIVATION: {
        if (!io->dx || !io->dx[0])
            return RT_OK;
        float *d = malloc((cnt ? cnt : 1) * sizeof(float));
        if (!d)
            return rt_err_set(err, RT_ERR_NOMEM, "backprop: out of memory");
        memcpy(d, dy, cnt * sizeof(float));
        trn_act_grad(op->act, op->alpha, io->x[0], io->y, d, cnt);
        for (size_t e = 0; e < cnt; e++)
            io->dx[0][e] += d[e];
        free(d);
        return RT_OK;
    }
    case PREDICTD__NODE_KIND__NODE_DROPOUT:
        if (io->dx && io->dx[0])
            for (size_t e = 0; e < cnt; e++)
                io->dx[0][e] += io->mask ? dy[e] * io->mask[e] : dy[e];
        return RT_OK;
    case PREDICTD__NODE_KIND__NODE_BATCH_NORM:
        for (size_t j = 0; j < w; j++) {
            double inv = 1.0 / sqrt((double)op->bn_var[j] + (double)op->bn_eps);
            float sc = (float)((double)op->bn_gamma[j] * inv);
            for (size_t i = 0; i < n; i++) {
                float g = dy[i * w + j];
                if (io->dx && io->dx[0])
                    io->dx[0][i * w + j] += g * sc;
                if (io->dgamma)
                    io->dgamma[j] +=
                        (float)((double)g * ((double)io->x[0][i * w + j] - op->bn_mean[j]) * inv);
                if (io->dbeta)
                    io->dbeta[j] += g;
            }
        }
        return RT_OK;
    case PREDICTD__NODE_KIND__NODE_CONCAT:
        for (size_t i = 0; i < n; i++) {
            size_t off = 0;
            for (size_t k = 0; k < op->n_in; k++) {
                size_t wk = op->in_width[k];
                if (io->dx && io->dx[k])
                    for (size_t j = 0; j < wk; j++)
                        io->dx[k][i * wk + j] += dy[i * w + off + j];
                off += wk;
            }
        }
        return RT_OK;
    case PREDICTD__NODE_KIND__NODE_ADD:
        for (size_t k = 0; k < op->n_in; k++)
            if (io->dx && io->dx[k])
                for (size_t e = 0; e < cnt; e++)
                    io->dx[k][e] += dy[e];
        return RT_OK;
    case PREDICTD__NODE_KIND__NODE_MULTIPLY:
        for (size_t k = 0; k < op->n_in; k++) {
            if (!io->dx || !io->dx[k])
                continue;
            for (size_t e = 0; e < cnt; e++) { /* the product of the others */
                float p = dy[e];
                for (size_t q = 0; q < op->n_in; q++)
                    if (q != k)
                        p *= io->x[q][e];
                io->dx[k][e] += p;
            }
        }
        return RT_OK;
    default:
        return rt_err_set(err, RT_ERR_UNSUPPORTED, "backprop: node kind %d", (int)op->kind);
    }
}
