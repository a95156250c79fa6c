/*
 * rt_metrics.c — the heads' losses and evaluation metrics with TensorFlow's
 * canned-head names, shared by the trainer's evaluation and predict-model
 * evaluate (one implementation, so both give the same numbers).
 *
 * Predictions are kept for the whole evaluation so AUC is exact
 * (rt_metrics_auc.c): the ROC AUC by the rank-sum (Mann-Whitney) formula
 * with tied scores averaged, and the PR AUC as step-wise average precision
 * over distinct thresholds. (TF's
 * tf.metrics.auc approximates both with 200 thresholds; on the census test
 * set the two agree to about 1e-3.) "loss" is the mean of the batch losses
 * and "average_loss" the mean per-example loss, as in TF 2's heads.
 *
 * Heads' losses (averaged over the batch, TensorFlow's SUM_OVER_BATCH_SIZE):
 *   binary      sigmoid cross-entropy  max(z,0) - z y + log(1 + e^-|z|)
 *               dz = sigmoid(z) - y
 *   multi-class softmax cross-entropy  logsumexp(z) - z_y;  dz = softmax(z) - 1_y
 *   regression  squared error averaged over the label_dimension d values
 *               (1/d) sum_j (z_j - y_j)^2;  dz_j = 2 (z_j - y_j) / d
 *   multi-label sigmoid cross-entropy averaged over the classes, against a
 *               multi-hot label row (rt_metrics_mlabel.c); its auc and
 *               auc_precision_recall are over the (row, class) pairs flattened
 *
 * Example weights (estimator.weight_column) enter as TF's heads take them:
 * the batch loss is sum_i w_i l_i / n (SUM_OVER_BATCH_SIZE divides by the
 * batch size, not by the weights' sum), and every metric is a weighted one
 * (tf.keras.metrics with sample_weight): a mean is sum w x / sum w, counts
 * (accuracy, precision, recall, the AUCs' confusion counts) add w per example.
 * NULL weights are all 1, and the result is then bit for bit the unweighted
 * one.
 */
#include "rt_stats.h"
#include "rt_data_internal.h"
#include "rt_core_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rt_metrics {
    Predictd__HeadType head;
    size_t n_classes, ld;
    float *scores;  /* binary: logistic; regression: prediction (first value) */
    float *labels;  /* regression: the first value */
    float *weights; /* NULL until a weighted batch comes (then 1 for the earlier) */
    size_t n, cap;
    double loss_sum;     /* per-example, weighted */
    double batch_loss_sum;
    size_t batches;
    double weight_sum;   /* sum of w (n when unweighted) */
    double correct;      /* weighted counts */
    double tp, fp, fn;
    double label_sum, pred_sum; /* weighted; regression: over the d values */
    rt_loss loss;        /* regression: squared unless set */
};

rt_metrics *rt_metrics_new(Predictd__HeadType head, size_t n_classes)
{
    rt_metrics *mt = calloc(1, sizeof *mt);
    if (!mt)
        return NULL;
    mt->head = head;
    mt->n_classes = n_classes;
    mt->ld = head == PREDICTD__HEAD_TYPE__HEAD_BINARY ? 1 : n_classes ? n_classes : 1;
    return mt;
}

void rt_metrics_set_loss(rt_metrics *mt, const rt_loss *loss)
{
    if (mt && loss)
        mt->loss = *loss;
}

void rt_metrics_free(rt_metrics *mt)
{
    if (!mt)
        return;
    free(mt->scores);
    free(mt->labels);
    free(mt->weights);
    free(mt);
}

int rt_metrics_loss_named(const char *name)
{
    static const char *const names[] = {"squared", "absolute", "huber", "pinball", "poisson"};
    for (int k = 0; k < 5; k++)
        if (name && strcmp(name, names[k]) == 0)
            return k;
    return -1;
}

/* One regression value's loss at logit z and label y (e = z - y), and
 * d loss / d z. */
static double reg_loss(const rt_loss *L, double z, double y, double *de)
{
    double e = z - y, a = fabs(e), p = L->param;
    switch (L->kind) {
    case RT_LOSS_POISSON: { /* TF's PoissonRegressionHead: log_poisson_loss, the full loss */
        double ez = exp(z);
        *de = ez - y;
        /* compute_full_loss: Stirling's log(y!) for a label over 1 (no gradient) */
        double stirling = y > 1 ? y * log(y) - y + 0.5 * log(2.0 * M_PI * y) : 0.0;
        return ez - y * z + stirling;
    }
    case RT_LOSS_ABSOLUTE:
        *de = e > 0 ? 1.0 : e < 0 ? -1.0 : 0.0;
        return a;
    case RT_LOSS_HUBER:
        if (a <= p) {
            *de = e;
            return 0.5 * e * e;
        }
        *de = e > 0 ? p : -p;
        return p * (a - 0.5 * p);
    case RT_LOSS_PINBALL:
        if (e <= 0) {
            *de = -p;
            return -p * e;
        }
        *de = 1.0 - p;
        return (1.0 - p) * e;
    default:
        *de = 2.0 * e;
        return e * e;
    }
}

double rt_metrics_head_loss_with(Predictd__HeadType head, const rt_loss *loss, size_t ld,
                         const float *logits, const float *labels, const float *weights,
                         size_t n, size_t denom, float *dlogits)
{
    if (head != PREDICTD__HEAD_TYPE__HEAD_REGRESSION || !loss || loss->kind == RT_LOSS_SQUARED)
        return rt_metrics_head_loss(head, ld, logits, labels, weights, n, denom, dlogits);
    if (n == 0)
        return 0.0;
    double total = 0.0, inv = 1.0 / (double)(denom ? denom : n);
    for (size_t i = 0; i < n; i++) {
        const float *z = logits + i * ld, *y = labels + i * ld;
        float *d = dlogits ? dlogits + i * ld : NULL;
        double w = weights ? weights[i] : 1.0, g = w * inv, l = 0.0;
        for (size_t j = 0; j < ld; j++) {
            double de;
            l += reg_loss(loss, (double)z[j], (double)y[j], &de);
            if (d)
                d[j] = (float)(de * g / (double)ld);
        }
        if (ld > 1)
            l /= (double)ld;
        total += weights ? w * l : l;
    }
    return total * (1.0 / (double)n);
}

double rt_metrics_head_loss(Predictd__HeadType head, size_t ld, const float *logits,
                    const float *labels, const float *weights, size_t n, size_t denom,
                    float *dlogits)
{
    if (n == 0)
        return 0.0;
    if (head == PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL) /* ld multi-hot labels per row */
        return rt_metrics_mlabel_loss(ld, logits, labels, weights, n, denom ? denom : n,
                                      dlogits);
    double total = 0.0, inv = 1.0 / (double)(denom ? denom : n);
    for (size_t i = 0; i < n; i++) {
        const float *z = logits + i * ld;
        float *d = dlogits ? dlogits + i * ld : NULL;
        double w = weights ? weights[i] : 1.0, g = w * inv;
        if (head == PREDICTD__HEAD_TYPE__HEAD_BINARY) {
            double x = z[0], y = labels[i];
            double l = (x > 0 ? x : 0) - x * y + log1p(exp(-fabs(x)));
            total += weights ? w * l : l;
            double s = x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
            if (d)
                d[0] = (float)((s - y) * g);
        } else if (head == PREDICTD__HEAD_TYPE__HEAD_MULTI_CLASS) {
            size_t y = (size_t)labels[i];
            double mx = z[0];
            for (size_t j = 1; j < ld; j++)
                if (z[j] > mx)
                    mx = z[j];
            double sum = 0.0;
            for (size_t j = 0; j < ld; j++)
                sum += exp(z[j] - mx);
            double lse = mx + log(sum);
            double l = lse - (y < ld ? z[y] : 0.0);
            total += weights ? w * l : l;
            if (d)
                for (size_t j = 0; j < ld; j++)
                    d[j] = (float)((exp(z[j] - lse) - (j == y ? 1.0 : 0.0)) * g);
        } else {
            const float *y = labels + i * ld;
            double l = 0.0;
            for (size_t j = 0; j < ld; j++) {
                double e = (double)z[j] - y[j];
                l += e * e;
                if (d)
                    d[j] = (float)(2.0 * e * g / (double)ld);
            }
            if (ld > 1)
                l /= (double)ld;
            total += weights ? w * l : l;
        }
    }
    return total * (1.0 / (double)n);
}

static double sigmoid(double x)
{
    return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
}

/* Makes room for n more examples (and the weights once weighted). */
static rt_status grow(rt_metrics *mt, size_t n, int weighted)
{
    if (n > SIZE_MAX - mt->n)
        return RT_ERR_NOMEM;
    if (mt->n + n > mt->cap) { /* the same growth for each: they share cap */
        size_t need = mt->n + n, cs = mt->cap, cl = mt->cap, cw = mt->cap;
        if (rt_grow(&mt->scores, &cs, need, sizeof *mt->scores) != 0 ||
            rt_grow(&mt->labels, &cl, need, sizeof *mt->labels) != 0 ||
            (mt->weights && rt_grow(&mt->weights, &cw, need, sizeof *mt->weights) != 0))
            return RT_ERR_NOMEM;
        mt->cap = cs;
    }
    if (weighted && !mt->weights) {
        if (!(mt->weights = malloc((mt->cap ? mt->cap : 1) * sizeof *mt->weights)))
            return RT_ERR_NOMEM;
        for (size_t i = 0; i < mt->n; i++)
            mt->weights[i] = 1.0f;
    }
    return RT_OK;
}

/* A multi-label batch: every (row, class) pair is kept as one example of
 * the flattened curves (its probability, its 0/1 label, its row's weight),
 * as TF's MultiLabelHead feeds its AUCs the whole [batch, n_classes]. */
static rt_status add_mlabel(rt_metrics *mt, const float *logits, const float *labels,
                            const float *weights, size_t n, double batch_loss)
{
    size_t ld = mt->ld;
    if (n > SIZE_MAX / ld || grow(mt, n * ld, weights != NULL))
        return RT_ERR_NOMEM;
    double per =
        rt_metrics_head_loss(mt->head, ld, logits, labels, weights, n, n, NULL);
    mt->loss_sum += per * (double)n;
    mt->batch_loss_sum += batch_loss;
    mt->batches++;
    rt_metrics_mlabel_probabilities(ld, logits, n, mt->scores + mt->n);
    memcpy(mt->labels + mt->n, labels, n * ld * sizeof *labels);
    for (size_t i = 0; i < n; i++) {
        double w = weights ? weights[i] : 1.0;
        mt->weight_sum += w;
        if (mt->weights)
            for (size_t j = 0; j < ld; j++)
                mt->weights[mt->n + i * ld + j] = (float)w;
    }
    mt->n += n * ld;
    return RT_OK;
}

rt_status rt_metrics_add(rt_metrics *mt, const float *logits, const float *labels,
                         const float *weights, size_t n, double batch_loss)
{
    if (n == 0)
        return RT_OK;
    if (mt->head == PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL)
        return add_mlabel(mt, logits, labels, weights, n, batch_loss);
    if (grow(mt, n, weights != NULL))
        return RT_ERR_NOMEM;
    size_t ld = mt->ld;
    int regression = mt->head == PREDICTD__HEAD_TYPE__HEAD_REGRESSION;
    double per =
        rt_metrics_head_loss_with(mt->head, &mt->loss, ld, logits, labels, weights, n, n, NULL);
    mt->loss_sum += per * (double)n;
    mt->batch_loss_sum += batch_loss;
    mt->batches++;
    for (size_t i = 0; i < n; i++) {
        const float *z = logits + i * ld;
        const float *yv = labels + (regression ? i * ld : i);
        float y = yv[0];
        double w = weights ? weights[i] : 1.0;
        float score;
        if (mt->head == PREDICTD__HEAD_TYPE__HEAD_BINARY) {
            score = (float)sigmoid(z[0]);
            int cls = z[0] > 0.0f;
            int pos = y > 0.5f;
            if (cls == pos)
                mt->correct += w;
            if (cls && pos)
                mt->tp += w;
            if (cls && !pos)
                mt->fp += w;
            if (!cls && pos)
                mt->fn += w;
            mt->label_sum += w * y;
            mt->pred_sum += w * score;
        } else if (mt->head == PREDICTD__HEAD_TYPE__HEAD_MULTI_CLASS) {
            size_t best = 0;
            for (size_t j = 1; j < ld; j++)
                if (z[j] > z[best])
                    best = j;
            if ((float)best == y)
                mt->correct += w;
            score = (float)best;
        } else { /* the predictions: the logits, or exp(logits) for poisson */
            int ex = mt->loss.kind == RT_LOSS_POISSON;
            score = ex ? expf(z[0]) : z[0];
            double ls = 0, ps = 0;
            for (size_t j = 0; j < ld; j++) {
                ls += yv[j];
                ps += ex ? (double)expf(z[j]) : (double)z[j];
            }
            mt->label_sum += w * ls / (double)ld;
            mt->pred_sum += w * ps / (double)ld;
        }
        mt->weight_sum += w;
        mt->scores[mt->n + i] = score;
        mt->labels[mt->n + i] = y;
        if (mt->weights)
            mt->weights[mt->n + i] = (float)w;
    }
    mt->n += n;
    return RT_OK;
}

static void put(rt_metric_list *l, const char *name, double v)
{
    if (l->n >= RT_MAX_METRICS)
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

rt_status rt_metrics_result(const rt_metrics *mt, int64_t global_step, rt_metric_list *out)
{
    memset(out, 0, sizeof *out);
    if (mt->n == 0)
        return RT_ERR_NOTFOUND;
    double n = mt->weight_sum; /* weighted means: sum w x / sum w */
    put(out, "average_loss", n > 0 ? mt->loss_sum / n : NAN);
    put(out, "loss", mt->batches ? mt->batch_loss_sum / (double)mt->batches : NAN);
    put(out, "global_step", (double)global_step);
    if (mt->head == PREDICTD__HEAD_TYPE__HEAD_BINARY) {
        double lm = n > 0 ? mt->label_sum / n : NAN;
        put(out, "accuracy", n > 0 ? mt->correct / n : NAN);
        put(out, "accuracy_baseline", lm > 0.5 ? lm : 1.0 - lm);
        put(out, "auc", rt_metrics_auc_roc(mt->scores, mt->labels, mt->weights, mt->n));
        put(out, "auc_precision_recall",
            rt_metrics_auc_pr(mt->scores, mt->labels, mt->weights, mt->n));
        put(out, "label/mean", lm);
        put(out, "prediction/mean", n > 0 ? mt->pred_sum / n : NAN);
        put(out, "precision", mt->tp + mt->fp > 0 ? mt->tp / (mt->tp + mt->fp) : 0);
        put(out, "recall", mt->tp + mt->fn > 0 ? mt->tp / (mt->tp + mt->fn) : 0);
    } else if (mt->head == PREDICTD__HEAD_TYPE__HEAD_MULTI_CLASS) {
        put(out, "accuracy", n > 0 ? mt->correct / n : NAN);
    } else if (mt->head == PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL) {
        /* the (row, class) pairs flattened, each weighted by its row's weight */
        put(out, "auc", rt_metrics_auc_roc(mt->scores, mt->labels, mt->weights, mt->n));
        put(out, "auc_precision_recall",
            rt_metrics_auc_pr(mt->scores, mt->labels, mt->weights, mt->n));
    } else {
        put(out, "label/mean", n > 0 ? mt->label_sum / n : NAN);
        put(out, "prediction/mean", n > 0 ? mt->pred_sum / n : NAN);
    }
    return RT_OK;
}

size_t rt_metrics_data(const rt_metrics *mt, const float **scores, const float **labels,
                       const float **weights)
{
    *scores = mt->scores;
    *labels = mt->labels;
    if (weights)
        *weights = mt->weights;
    return mt->n;
}

double rt_metric_get(const rt_metric_list *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->m[i].name, name) == 0)
            return l->m[i].value;
    return NAN;
}

int rt_metrics_format(const rt_metric_list *l, rt_buf *b)
{
    for (size_t i = 0; i < l->n; i++) {
        const rt_metric *m = &l->m[i];
        int rc = strcmp(m->name, "global_step") == 0
                     ? rt_buf_printf(b, "%s%s = %lld", i ? ", " : "", m->name,
                                     (long long)m->value)
                     : rt_buf_printf(b, "%s%s = %.7g", i ? ", " : "", m->name, m->value);
        if (rc)
            return -1;
    }
    return 0;
}

int rt_metrics_json(const rt_metric_list *l, rt_buf *b)
{
    if (rt_buf_puts(b, "{"))
        return -1;
    for (size_t i = 0; i < l->n; i++) {
        const rt_metric *m = &l->m[i];
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
