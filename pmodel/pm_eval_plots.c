/*
 * pm_eval_plots.c — a binary classifier's evaluation plots and tables from
 * its scores and labels: the ROC and precision-recall curves, the
 * calibration bins with the expected calibration error and the threshold
 * table (pm_eval.c for one head, pm_eval_heads.c per binary head).
 */
#include "pm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------- plots (binary) */

/* Appends (x, y, threshold) unless it is within 0.002 of the last point in
 * both coordinates (the curves stay readable and small); last forces it. */
static rt_status curve_push(pm_eval_curve *c, double x, double y, double t, int last)
{
    if (c->n && !last) {
        const pm_eval_point *p = &c->p[c->n - 1];
        if (fabs(p->x - x) < 0.002 && fabs(p->y - y) < 0.002)
            return RT_OK;
    }
    if (rt_grow(&c->p, &c->cap, c->n + 1, sizeof *c->p) != 0)
        return RT_ERR_NOMEM;
    c->p[c->n++] = (pm_eval_point){x, y, t};
    return RT_OK;
}

rt_status pm_eval_binary_plots(pm_eval *e, const float *scores, const float *labels, size_t n)
{
    rt_scored *v = rt_metrics_sorted_desc(scores, labels, NULL, n);
    if (!v)
        return RT_ERR_NOMEM;
    double P = 0;
    for (size_t i = 0; i < n; i++)
        P += v[i].y;
    double N = (double)n - P;
    rt_status st = RT_OK;
    /* ROC from (0, 0) and PR from recall 0; a point per distinct score
     * (predicted positive when score >= threshold) */
    if (P > 0 && N > 0)
        st = curve_push(&e->roc, 0, 0, 1.0, 1);
    double tp = 0, fp = 0;
    for (size_t i = 0; !st && i < n;) {
        size_t j = i;
        while (j < n && v[j].s == v[i].s) {
            tp += v[j].y;
            fp += 1.0 - v[j].y;
            j++;
        }
        int last = j == n;
        if (P > 0 && N > 0)
            st = curve_push(&e->roc, fp / N, tp / P, v[i].s, last);
        if (!st && P > 0)
            st = curve_push(&e->pr, tp / P, tp / (tp + fp), v[i].s, last || e->pr.n == 0);
        i = j;
    }
    /* calibration: equal-width bins of the predicted probability */
    for (size_t k = 0; k < PM_EVAL_BINS; k++) {
        e->calibration[k].lower = (double)k / PM_EVAL_BINS;
        e->calibration[k].upper = (double)(k + 1) / PM_EVAL_BINS;
    }
    double sp[PM_EVAL_BINS] = {0}, sy[PM_EVAL_BINS] = {0};
    for (size_t i = 0; i < n; i++) {
        size_t k = (size_t)(v[i].s * PM_EVAL_BINS);
        if (k >= PM_EVAL_BINS)
            k = PM_EVAL_BINS - 1;
        e->calibration[k].count++;
        sp[k] += v[i].s;
        sy[k] += v[i].y;
    }
    e->ece = 0;
    for (size_t k = 0; k < PM_EVAL_BINS; k++) {
        pm_eval_bin *b = &e->calibration[k];
        b->mean_prediction = b->count ? sp[k] / (double)b->count : NAN;
        b->mean_label = b->count ? sy[k] / (double)b->count : NAN;
        if (b->count)
            e->ece += (double)b->count / (double)n * fabs(b->mean_prediction - b->mean_label);
    }
    /* threshold table: predicted positive when score > threshold (at 0.5
     * as the accuracy, precision and recall metrics count it) */
    for (size_t k = 0; k < PM_EVAL_THRESHOLDS; k++) {
        pm_eval_threshold *t = &e->thresholds[k];
        memset(t, 0, sizeof *t);
        t->threshold = (double)(k + 1) / (PM_EVAL_THRESHOLDS + 1);
        for (size_t i = 0; i < n; i++) {
            int pos = v[i].s > t->threshold, y = v[i].y > 0.5f;
            t->tp += pos && y;
            t->fp += pos && !y;
            t->tn += !pos && !y;
            t->fn += !pos && y;
        }
        t->precision = t->tp + t->fp ? (double)t->tp / (double)(t->tp + t->fp) : NAN;
        t->recall = t->tp + t->fn ? (double)t->tp / (double)(t->tp + t->fn) : NAN;
        t->f1 = t->tp ? 2.0 * t->precision * t->recall / (t->precision + t->recall) : 0.0;
        t->accuracy = n ? (double)(t->tp + t->tn) / (double)n : NAN;
    }
    free(v);
    return st;
}
