/*
 * trn_metrics.c — evaluation metrics with TensorFlow's canned-head names.
 *
 * Predictions are kept for the whole evaluation so AUC is exact: the ROC AUC
 * by the rank-sum (Mann-Whitney) formula with tied scores averaged, and the
 * PR AUC as step-wise average precision over distinct thresholds. (TF's
 * tf.metrics.auc approximates both with 200 thresholds; on the census test
 * set the two agree to about 1e-3.) "loss" is the mean of the batch losses
 * and "average_loss" the mean per-example loss, as in TF 2's heads.
 */
#include "trn_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct trn_metrics {
    Predictd__HeadType head;
    size_t n_classes, ld;
    float *scores;  /* binary: logistic; regression: prediction */
    float *labels;
    size_t n, cap;
    double loss_sum;     /* per-example */
    double batch_loss_sum;
    size_t batches;
    size_t correct;
    size_t tp, fp, fn;
    double label_sum, pred_sum;
};

trn_metrics *trn_metrics_new(Predictd__HeadType head, size_t n_classes)
{
    trn_metrics *mt = calloc(1, sizeof *mt);
    if (!mt)
        return NULL;
    mt->head = head;
    mt->n_classes = n_classes;
    mt->ld = head == PREDICTD__HEAD_TYPE__HEAD_MULTI_CLASS ? n_classes : 1;
    return mt;
}

void trn_metrics_free(trn_metrics *mt)
{
    if (!mt)
        return;
    free(mt->scores);
    free(mt->labels);
    free(mt);
}

static double sigmoid(double x)
{
    return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
}

rt_status trn_metrics_add(trn_metrics *mt, const float *logits, const float *labels, size_t n,
                          double batch_loss)
{
    if (n == 0)
        return RT_OK;
    if (mt->n + n > mt->cap) {
        size_t cap = mt->cap ? mt->cap : 4096;
        while (cap < mt->n + n)
            cap *= 2;
        float *s = realloc(mt->scores, cap * sizeof *s);
        if (s)
            mt->scores = s;
        float *l = realloc(mt->labels, cap * sizeof *l);
        if (l)
            mt->labels = l;
        if (!s || !l)
            return RT_ERR_NOMEM;
        mt->cap = cap;
    }
    size_t ld = mt->ld;
    double per = trn_head_loss(mt->head, ld, logits, labels, n, n, NULL);
    mt->loss_sum += per * (double)n;
    mt->batch_loss_sum += batch_loss;
    mt->batches++;
    for (size_t i = 0; i < n; i++) {
        const float *z = logits + i * ld;
        float y = labels[i];
        float score;
        if (mt->head == PREDICTD__HEAD_TYPE__HEAD_BINARY) {
            score = (float)sigmoid(z[0]);
            int cls = z[0] > 0.0f;
            int pos = y > 0.5f;
            mt->correct += cls == pos;
            mt->tp += cls && pos;
            mt->fp += cls && !pos;
            mt->fn += !cls && pos;
        } else if (mt->head == PREDICTD__HEAD_TYPE__HEAD_MULTI_CLASS) {
            size_t best = 0;
            for (size_t j = 1; j < ld; j++)
                if (z[j] > z[best])
                    best = j;
            mt->correct += (float)best == y;
            score = (float)best;
        } else {
            score = z[0];
        }
        mt->scores[mt->n + i] = score;
        mt->labels[mt->n + i] = y;
        mt->label_sum += y;
        mt->pred_sum += score;
    }
    mt->n += n;
    return RT_OK;
}

typedef struct scored {
    float s, y;
} scored;

static int by_score_desc(const void *a, const void *b)
{
    float x = ((const scored *)a)->s, y = ((const scored *)b)->s;
    return (x < y) - (x > y);
}

static scored *sorted_desc(const float *scores, const float *labels, size_t n)
{
    scored *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        v[i].s = scores[i];
        v[i].y = labels[i] > 0.5f ? 1.0f : 0.0f;
    }
    qsort(v, n, sizeof *v, by_score_desc);
    return v;
}

double trn_auc_roc(const float *scores, const float *labels, size_t n)
{
    scored *v = sorted_desc(scores, labels, n);
    if (!v)
        return NAN;
    /* Walk down the thresholds; each tie group adds a trapezoid. */
    double P = 0, N = 0;
    for (size_t i = 0; i < n; i++)
        P += v[i].y, N += 1.0 - v[i].y;
    double auc = 0, tp = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        double gp = 0, gn = 0;
        while (j < n && v[j].s == v[i].s) {
            gp += v[j].y;
            gn += 1.0 - v[j].y;
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

double trn_auc_pr(const float *scores, const float *labels, size_t n)
{
    scored *v = sorted_desc(scores, labels, n);
    if (!v)
        return NAN;
    double P = 0;
    for (size_t i = 0; i < n; i++)
        P += v[i].y;
    double ap = 0, tp = 0, fp = 0, prev_recall = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && v[j].s == v[i].s) {
            tp += v[j].y;
            fp += 1.0 - v[j].y;
            j++;
        }
        double recall = P > 0 ? tp / P : 0, precision = tp / (tp + fp);
        ap += (recall - prev_recall) * precision;
        prev_recall = recall;
        i = j;
    }
    free(v);
    return P > 0 ? ap : NAN;
}

static void put(trn_metric_list *l, const char *name, double v)
{
    if (l->n >= TRN_MAX_METRICS)
        return;
    size_t k = l->n;
    /* keep sorted by name */
    while (k > 0 && strcmp(l->m[k - 1].name, name) > 0) {
        l->m[k] = l->m[k - 1];
        k--;
    }
    snprintf(l->m[k].name, sizeof l->m[k].name, "%s", name);
    l->m[k].value = v;
    l->n++;
}

rt_status trn_metrics_result(const trn_metrics *mt, int64_t global_step, trn_metric_list *out)
{
    memset(out, 0, sizeof *out);
    double n = (double)mt->n;
    if (mt->n == 0)
        return RT_ERR_NOTFOUND;
    put(out, "average_loss", mt->loss_sum / n);
    put(out, "loss", mt->batches ? mt->batch_loss_sum / (double)mt->batches : NAN);
    put(out, "global_step", (double)global_step);
    if (mt->head == PREDICTD__HEAD_TYPE__HEAD_BINARY) {
        double lm = mt->label_sum / n;
        put(out, "accuracy", (double)mt->correct / n);
        put(out, "accuracy_baseline", lm > 0.5 ? lm : 1.0 - lm);
        put(out, "auc", trn_auc_roc(mt->scores, mt->labels, mt->n));
        put(out, "auc_precision_recall", trn_auc_pr(mt->scores, mt->labels, mt->n));
        put(out, "label/mean", lm);
        put(out, "prediction/mean", mt->pred_sum / n);
        put(out, "precision", mt->tp + mt->fp ? (double)mt->tp / (double)(mt->tp + mt->fp) : 0);
        put(out, "recall", mt->tp + mt->fn ? (double)mt->tp / (double)(mt->tp + mt->fn) : 0);
    } else if (mt->head == PREDICTD__HEAD_TYPE__HEAD_MULTI_CLASS) {
        put(out, "accuracy", (double)mt->correct / n);
    } else {
        put(out, "label/mean", mt->label_sum / n);
        put(out, "prediction/mean", mt->pred_sum / n);
    }
    return RT_OK;
}

double trn_metric_get(const trn_metric_list *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->m[i].name, name) == 0)
            return l->m[i].value;
    return NAN;
}

int trn_metrics_format(const trn_metric_list *l, rt_buf *b)
{
    for (size_t i = 0; i < l->n; i++) {
        const trn_metric *m = &l->m[i];
        int rc = strcmp(m->name, "global_step") == 0
                     ? rt_buf_printf(b, "%s%s = %lld", i ? ", " : "", m->name,
                                     (long long)m->value)
                     : rt_buf_printf(b, "%s%s = %.7g", i ? ", " : "", m->name, m->value);
        if (rc)
            return -1;
    }
    return 0;
}

int trn_metrics_json(const trn_metric_list *l, rt_buf *b)
{
    if (rt_buf_puts(b, "{"))
        return -1;
    for (size_t i = 0; i < l->n; i++) {
        const trn_metric *m = &l->m[i];
        if ((i && rt_buf_puts(b, ", ")) || rt_buf_json_string(b, m->name, strlen(m->name)) ||
            rt_buf_puts(b, ": "))
            return -1;
        int rc = strcmp(m->name, "global_step") == 0
                     ? rt_buf_printf(b, "%lld", (long long)m->value)
                     : isfinite(m->value) ? rt_buf_json_double(b, m->value)
                                          : rt_buf_puts(b, "null");
        if (rc)
            return -1;
    }
    return rt_buf_puts(b, "}");
}
