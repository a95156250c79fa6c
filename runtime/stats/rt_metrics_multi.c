/*
 * rt_metrics_multi.c — the training loss of several heads (TensorFlow's
 * MultiHead): the weighted sum of each head's own loss over its columns of
 * the concatenated logits and labels, and its gradient, each head's in its
 * own columns. Each head's loss is rt_metrics_head_loss_with's (so one
 * head's is exactly the single-head loss) over its own example weights,
 * reduced by its loss_reduction; its columns (and strided weights) are
 * gathered into a contiguous copy first and its gradient scattered back.
 */
#include "rt_stats.h"

#include <stdlib.h>
#include <string.h>

rt_status rt_metrics_multi_loss(const rt_head_slice *heads, size_t n_heads, size_t ld_total,
                                size_t label_w, const float *logits, const float *labels,
                                size_t n, size_t denom, float *dlogits, double *total)
{
    *total = 0.0;
    size_t max_ld = 0;
    for (size_t k = 0; k < n_heads; k++) {
        const rt_head_slice *h = &heads[k];
        size_t lw = h->head == PREDICTD__HEAD_TYPE__HEAD_REGRESSION ||
                            h->head == PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL
                        ? h->ld
                        : 1;
        if (h->ld == 0 || h->off + h->ld > ld_total || h->label_off + lw > label_w)
            return RT_ERR_INVALID;
        if (h->ld > max_ld)
            max_ld = h->ld;
    }
    if (n == 0)
        return RT_OK;
    float *z = malloc(n * max_ld * sizeof *z), *y = malloc(n * max_ld * sizeof *y);
    float *d = dlogits ? malloc(n * max_ld * sizeof *d) : NULL;
    float *w = malloc(n * sizeof *w);
    if (!z || !y || !w || (dlogits && !d)) {
        free(z);
        free(y);
        free(d);
        free(w);
        return RT_ERR_NOMEM;
    }
    double sum = 0.0;
    for (size_t k = 0; k < n_heads; k++) {
        const rt_head_slice *h = &heads[k];
        size_t lw = h->head == PREDICTD__HEAD_TYPE__HEAD_REGRESSION ||
                            h->head == PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL
                        ? h->ld
                        : 1;
        for (size_t i = 0; i < n; i++) {
            memcpy(z + i * h->ld, logits + i * ld_total + h->off, h->ld * sizeof *z);
            memcpy(y + i * lw, labels + i * label_w + h->label_off, lw * sizeof *y);
        }
        const float *hw = h->weights;
        if (hw && h->weight_stride > 1) {
            for (size_t i = 0; i < n; i++)
                w[i] = hw[i * h->weight_stride];
            hw = w;
        }
        double l = rt_metrics_head_loss_with(h->head, &h->loss, h->ld, z, y, hw, n, denom, d);
        /* SUM: TF sums the [batch, values] loss of a regression head; the
         * per-row loss is the mean over the values, so the sum is n x values
         * times the mean (a multi-label row's loss is already its classes'
         * mean, summed over the batch: n) */
        size_t vals = h->head == PREDICTD__HEAD_TYPE__HEAD_REGRESSION ? h->ld : 1;
        double scale = h->reduce_sum ? (double)(n * vals) : 1.0;
        sum += h->loss_weight * l * scale;
        if (!dlogits)
            continue;
        double g = h->loss_weight * scale;
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < h->ld; j++)
                dlogits[i * ld_total + h->off + j] =
                    g == 1.0 ? d[i * h->ld + j] : (float)(g * (double)d[i * h->ld + j]);
    }
    free(z);
    free(y);
    free(d);
    free(w);
    *total = sum;
    return RT_OK;
}
