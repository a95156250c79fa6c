/*
 * trn_nodes.c — backprop through one computing node of a custom model graph
 * (runtime/model/rt_nodes.c's forward): dense, activation, concat, add,
 * multiply, dropout (its training mask) and batch_norm (with its moving
 * statistics held constant, as serving computes it).
 *
 * A dense node uses the canned DNN's cblas_sgemm calls (trn_backprop.c),
 * so a graph written as the canned DNN computes the same bits; the rest are
 * plain loops in a fixed order. Gradients are added (+=) to what the
 * buffers hold, so a node read by several others gets the sum of theirs
 * (the DAG's fan-out) and a parameter's gradient the sum over the batch;
 * an input delta whose dx_set flag is still 0 is assigned instead (its
 * first writer: no zeroing pass, and the canned DNN's exact bits).
 */
#include "trn_internal.h"

#include <cblas.h>
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

#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("O3"))) /* vectorize the element loops (the canned DNN runs them too) */
#endif
void trn_act_grad(Predictd__Activation act, float alpha, const float *restrict x,
                  const float *restrict y, float *restrict d, size_t cnt)
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

/* dx[k] of io: NULL when not wanted. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("O3")))
#endif
void trn_node_add_rows(const float *restrict d, size_t n, size_t w, float *restrict g)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < w; j++)
            g[j] += d[i * w + j];
}

static float *dxk(const trn_node_io *io, size_t k)
{
    return io->dx ? io->dx[k] : NULL;
}

/* Whether dx[k] is still to be written (then assigned, not added to),
 * marking it written. */
static bool first_write(const trn_node_io *io, size_t k)
{
    if (!io->dx_set || !io->dx_set[k] || *io->dx_set[k])
        return false;
    *io->dx_set[k] = 1;
    return true;
}

/* dst (cnt values) = or += src. */
static void put(float *dst, const float *src, size_t cnt, bool assign)
{
    if (assign)
        memcpy(dst, src, cnt * sizeof(float));
    else
        for (size_t e = 0; e < cnt; e++)
            dst[e] += src[e];
}

rt_status trn_node_backward(const rt_node_op *op, const trn_node_io *io, size_t n, rt_err *err)
{
    size_t w = op->out, cnt = n * w;
    const float *dy = io->dy;
    if (n == 0)
        return RT_OK;
    switch (op->kind) {
    case PREDICTD__NODE_KIND__NODE_DENSE: {
        /* the canned DNN's operations (trn_backprop.c's dnn_backprop): the
         * same sgemm calls, so a graph written as the canned DNN gets its
         * gradients' bits */
        size_t in = op->in_width[0];
        float *d = io->dpre ? io->dpre : malloc((cnt ? cnt : 1) * sizeof(float));
        if (!d)
            return rt_err_set(err, RT_ERR_NOMEM, "backprop: out of memory");
        if (d != dy) /* dpre may be dy's buffer: then in place */
            memcpy(d, dy, cnt * sizeof(float));
        trn_act_grad(op->act, op->alpha, io->pre, io->y, d, cnt);
        const float *x = io->x[0];
        if (io->dkernel)
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (blasint)in, (blasint)w,
                        (blasint)n, 1.0f, x, (blasint)in, d, (blasint)w, 1.0f, io->dkernel,
                        (blasint)w);
        if (io->dbias)
            trn_node_add_rows(d, n, w, io->dbias);
        float *dx = dxk(io, 0);
        if (dx) {
            bool assign = first_write(io, 0);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)n, (blasint)in,
                        (blasint)w, 1.0f, d, (blasint)w, op->kernel, (blasint)w,
                        assign ? 0.0f : 1.0f, dx, (blasint)in);
        }
        if (d != io->dpre)
            free(d);
        return RT_OK;
    }
    case PREDICTD__NODE_KIND__NODE_ACTIVATION: {
        float *dx = dxk(io, 0);
        if (!dx)
            return RT_OK;
        float *d = malloc((cnt ? cnt : 1) * sizeof(float));
        if (!d)
            return rt_err_set(err, RT_ERR_NOMEM, "backprop: out of memory");
        memcpy(d, dy, cnt * sizeof(float));
        trn_act_grad(op->act, op->alpha, io->x[0], io->y, d, cnt);
        put(dx, d, cnt, first_write(io, 0));
        free(d);
        return RT_OK;
    }
    case PREDICTD__NODE_KIND__NODE_DROPOUT: {
        float *dx = dxk(io, 0);
        if (!dx)
            return RT_OK;
        bool assign = first_write(io, 0);
        for (size_t e = 0; e < cnt; e++) {
            float g = io->mask ? dy[e] * io->mask[e] : dy[e];
            dx[e] = assign ? g : dx[e] + g;
        }
        return RT_OK;
    }
    case PREDICTD__NODE_KIND__NODE_BATCH_NORM: {
        float *dx = dxk(io, 0);
        bool assign = dx && first_write(io, 0);
        for (size_t j = 0; j < w; j++) {
            double inv = 1.0 / sqrt((double)op->bn_var[j] + (double)op->bn_eps);
            float sc = (float)((double)op->bn_gamma[j] * inv);
            for (size_t i = 0; i < n; i++) {
                float g = dy[i * w + j];
                if (dx)
                    dx[i * w + j] = assign ? g * sc : dx[i * w + j] + g * sc;
                if (io->dgamma)
                    io->dgamma[j] +=
                        (float)((double)g * ((double)io->x[0][i * w + j] - op->bn_mean[j]) * inv);
                if (io->dbeta)
                    io->dbeta[j] += g;
            }
        }
        return RT_OK;
    }
    case PREDICTD__NODE_KIND__NODE_CONCAT: {
        size_t off = 0;
        for (size_t k = 0; k < op->n_in; k++) {
            size_t wk = op->in_width[k];
            float *dx = dxk(io, k);
            if (dx) {
                bool assign = first_write(io, k);
                for (size_t i = 0; i < n; i++)
                    put(dx + i * wk, dy + i * w + off, wk, assign);
            }
            off += wk;
        }
        return RT_OK;
    }
    case PREDICTD__NODE_KIND__NODE_ADD:
        for (size_t k = 0; k < op->n_in; k++)
            if (dxk(io, k))
                put(dxk(io, k), dy, cnt, first_write(io, k));
        return RT_OK;
    case PREDICTD__NODE_KIND__NODE_MULTIPLY: {
        float *p = malloc((cnt ? cnt : 1) * sizeof(float));
        if (!p)
            return rt_err_set(err, RT_ERR_NOMEM, "backprop: out of memory");
        for (size_t k = 0; k < op->n_in; k++) {
            if (!dxk(io, k))
                continue;
            for (size_t e = 0; e < cnt; e++) { /* the product of the others */
                float v = dy[e];
                for (size_t q = 0; q < op->n_in; q++)
                    if (q != k)
                        v *= io->x[q][e];
                p[e] = v;
            }
            put(dxk(io, k), p, cnt, first_write(io, k));
        }
        free(p);
        return RT_OK;
    }
    default:
        return rt_err_set(err, RT_ERR_UNSUPPORTED, "backprop: node kind %d", (int)op->kind);
    }
}
