/* trn_batchnorm.c: one batch-normalization training step (the batch's
 * statistics, the normalized values kept for backprop, the moving statistics
 * moved by momentum) and its backprop, shared by the canned DNN's layers (trn_backprop.c) and
 * the custom graph's BatchNormalization nodes (trn_graph.c). */
#include <math.h>

#include "trn_internal.h"

/* Batch normalization of x (n x w) in place with the batch's statistics
 * (biased variance, as tf.layers.BatchNormalization in training), keeping
 * the normalized values and 1/std for backprop; moves the moving statistics
 * by the layer's momentum when update. */
void trn_bn_train(const trn_bn *b, const float *x, float *y, float *xh, float *istd, size_t n,
                  size_t w, int update)
{
    for (size_t j = 0; j < w; j++) {
        double mean = 0, var = 0;
        for (size_t i = 0; i < n; i++)
            mean += x[i * w + j];
        mean /= (double)n;
        for (size_t i = 0; i < n; i++) {
            double e = x[i * w + j] - mean;
            var += e * e;
        }
        var /= (double)n;
        double is = 1.0 / sqrt(var + (double)b->eps);
        istd[j] = (float)is;
        for (size_t i = 0; i < n; i++) {
            float h = (float)((x[i * w + j] - mean) * is);
            xh[i * w + j] = h;
            y[i * w + j] = b->gamma[j] * h + b->beta[j];
        }
        if (update) {
            double mo = b->momentum;
            b->mean[j] = (float)(b->mean[j] * mo + mean * (1.0 - mo));
            b->var[j] = (float)(b->var[j] * mo + var * (1.0 - mo));
        }
    }
}

void trn_bn_backward(trn_model *m, long gamma, long beta, const float *dy, const float *xh,
                     const float *istd, float *dx, bool assign, size_t n, size_t w)
{
    const float *ga = m->p[gamma].data;
    float *gg = m->p[gamma].grad, *gb = m->p[beta].grad;
    for (size_t j = 0; j < w; j++) {
        double sd = 0, sdx = 0;
        for (size_t i = 0; i < n; i++) {
            sd += dy[i * w + j];
            sdx += (double)dy[i * w + j] * xh[i * w + j];
        }
        gg[j] += (float)sdx;
        gb[j] += (float)sd;
        if (!dx)
            continue;
        double c = (double)ga[j] * istd[j] / (double)n;
        for (size_t i = 0; i < n; i++) {
            float v = (float)(c * ((double)n * dy[i * w + j] - sd - xh[i * w + j] * sdx));
            dx[i * w + j] = assign ? v : dx[i * w + j] + v;
        }
    }
}
