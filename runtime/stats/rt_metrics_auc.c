/*
 * rt_metrics_auc.c — the exact curves' areas the evaluations report: ROC AUC
 * by the rank-sum (Mann-Whitney) formula with tied scores averaged, PR AUC as
 * step-wise average precision over distinct thresholds, each example counting
 * its weight; and the examples sorted by score the AUCs and an evaluation's
 * ROC and precision-recall curves walk. Shared by the heads' metrics
 * (rt_metrics.c) and the multi-label head's flattened curves
 * (rt_metrics_mlabel.c).
 */
#include "rt_stats.h"

#include <math.h>
#include <stdlib.h>

static int by_score_desc(const void *a, const void *b)
{
    float x = ((const rt_scored *)a)->s, y = ((const rt_scored *)b)->s;
    return (x < y) - (x > y);
}

rt_scored *rt_metrics_sorted_desc(const float *scores, const float *labels, const float *weights,
                          size_t n)
{
    rt_scored *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        v[i].s = scores[i];
        v[i].y = labels[i] > 0.5f ? 1.0f : 0.0f;
        v[i].w = weights ? weights[i] : 1.0f;
    }
    qsort(v, n, sizeof *v, by_score_desc);
    return v;
}

double rt_metrics_auc_roc(const float *scores, const float *labels, const float *weights, size_t n)
{
    rt_scored *v = rt_metrics_sorted_desc(scores, labels, weights, n);
    if (!v)
        return NAN;
    /* Walk down the thresholds; each tie group adds a trapezoid. Counts are
     * weighted: an example counts w positives or negatives. */
    double P = 0, N = 0;
    for (size_t i = 0; i < n; i++)
        P += v[i].w * v[i].y, N += v[i].w * (1.0 - v[i].y);
    double auc = 0, tp = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        double gp = 0, gn = 0;
        while (j < n && v[j].s == v[i].s) {
            gp += v[j].w * v[j].y;
            gn += v[j].w * (1.0 - v[j].y);
            j++;
        }
        auc += gn * (tp + gp / 2.0);
        tp += gp;
        i = j;
    }
    free(v);
    if (P == 0 || N == 0)
        return NAN;
    return auc / (P * N);
}

double rt_metrics_auc_pr(const float *scores, const float *labels, const float *weights, size_t n)
{
    rt_scored *v = rt_metrics_sorted_desc(scores, labels, weights, n);
    if (!v)
        return NAN;
    double P = 0;
    for (size_t i = 0; i < n; i++)
        P += v[i].w * v[i].y;
    double ap = 0, tp = 0, fp = 0, prev_recall = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && v[j].s == v[i].s) {
            tp += v[j].w * v[j].y;
            fp += v[j].w * (1.0 - v[j].y);
            j++;
        }
        double recall = P > 0 ? tp / P : 0, precision = tp + fp > 0 ? tp / (tp + fp) : 0;
        ap += (recall - prev_recall) * precision;
        prev_recall = recall;
        i = j;
    }
    free(v);
    return P > 0 ? ap : NAN;
}
