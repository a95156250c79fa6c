/*
 * rt_metrics_mlabel.c — the numbers of TensorFlow's MultiLabelHead (the
 * custom estimator's multi_label_classification head): a row's labels read
 * from one cell into a multi-hot row, the sigmoid cross-entropy loss (the
 * mean over the classes, then reduced over the batch as SUM_OVER_BATCH_SIZE)
 * and its gradient, the served probabilities (a sigmoid per class) and the
 * evaluation's auc and auc_precision_recall over the flattened (row, class) pairs.
 * Every row is computed alone, so a row's numbers do not depend on its batch.
 */
#include "rt_stats.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* sigmoid_cross_entropy_with_logits as TF computes it, stable for large |z|:
 * max(z, 0) - z y + log(1 + exp(-|z|)). */
static double sce(double z, double y)
{
    return (z > 0 ? z : 0) - z * y + log1p(exp(-fabs(z)));
}

static double sigmoid(double z)
{
    if (z >= 0)
        return 1.0 / (1.0 + exp(-z));
    double e = exp(z);
    return e / (1.0 + e);
}

double rt_metrics_mlabel_loss(size_t n_classes, const float *logits, const float *labels,
                              const float *weights, size_t n, size_t denom, float *dlogits)
{
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        const float *z = logits + i * n_classes, *y = labels + i * n_classes;
        double w = weights ? (double)weights[i] : 1.0, l = 0.0;
        for (size_t j = 0; j < n_classes; j++) {
            l += sce(z[j], y[j]);
            if (dlogits)
                dlogits[i * n_classes + j] =
                    (float)(w * (sigmoid(z[j]) - (double)y[j]) / (double)n_classes /
                            (double)(denom ? denom : 1));
        }
        sum += w * (l / (double)n_classes);
    }
    return n ? sum / (double)n : 0.0;
}

void rt_metrics_mlabel_probabilities(size_t n_classes, const float *logits, size_t n,
                                     float *probs)
{
    for (size_t c = 0; c < n * n_classes; c++)
        probs[c] = (float)sigmoid(logits[c]);
}

/* The class id of name[0, len) by the vocabulary, or as a number in
 * [0, n_classes) without one; -1 if neither. */
static long class_of(const char *name, size_t len, const char *const *vocab, size_t n_classes)
{
    if (vocab) {
        for (size_t k = 0; k < n_classes; k++)
            if (strlen(vocab[k]) == len && memcmp(vocab[k], name, len) == 0)
                return (long)k;
        return -1;
    }
    char buf[32];
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, name, len);
    buf[len] = '\0';
    char *end = NULL;
    errno = 0;
    long v = strtol(buf, &end, 10);
    if (errno || *end || buf[0] == '+' || buf[0] == '-' || v < 0 || (size_t)v >= n_classes)
        return -1;
    return v;
}

rt_status rt_metrics_mlabel_parse(const char *cell, char delim, const char *const *vocab,
                                  size_t n_classes, float *multihot, rt_err *err)
{
    for (size_t k = 0; k < n_classes; k++)
        multihot[k] = 0.0f;
    if (!cell || !*cell)
        return RT_OK; /* no label: every class 0 (TF's empty SparseTensor row) */
    const char *p = cell;
    for (;;) {
        const char *q = strchr(p, delim);
        size_t len = q ? (size_t)(q - p) : strlen(p);
        long k = class_of(p, len, vocab, n_classes);
        if (k < 0) {
            if (vocab)
                return rt_err_set(err, RT_ERR_INVALID, "label \"%.*s\" is not one of the "
                                  "head's %zu classes (its label_vocabulary)",
                                  (int)(len > 64 ? 64 : len), p, n_classes);
            return rt_err_set(err, RT_ERR_INVALID, "label \"%.*s\" is not a class id in "
                              "[0, %zu)", (int)(len > 64 ? 64 : len), p, n_classes);
        }
        if (multihot[k] != 0.0f)
            return rt_err_set(err, RT_ERR_INVALID, "label \"%.*s\" is listed twice",
                              (int)(len > 64 ? 64 : len), p);
        multihot[k] = 1.0f;
        if (!q)
            return RT_OK;
        p = q + 1;
    }
}

char rt_metrics_mlabel_delimiter(const Predictd__Head *h)
{
    return h && h->label_delimiter && h->label_delimiter[0] ? h->label_delimiter[0] : '|';
}

rt_status rt_metrics_mlabel_cell(const Predictd__Head *h, int trim, const char *s, size_t len,
                                 float *multihot, rt_err *err)
{
    char delim = rt_metrics_mlabel_delimiter(h);
    char stack[512], *buf = len < sizeof stack ? stack : malloc(len + 1);
    if (!buf)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    size_t o = 0;
    for (size_t p = 0; p <= len;) { /* each name, trimmed when the spec trims strings */
        const char *q = memchr(s + p, delim, len - p);
        size_t e = q ? (size_t)(q - s) : len, a = p, b = e;
        while (trim && a < b && (s[a] == ' ' || s[a] == '\t'))
            a++;
        while (trim && b > a && (s[b - 1] == ' ' || s[b - 1] == '\t' || s[b - 1] == '\r'))
            b--;
        memcpy(buf + o, s + a, b - a);
        o += b - a;
        if (q)
            buf[o++] = delim;
        p = e + 1;
    }
    buf[o] = '\0';
    /* a cell of blanks lists no class, as an empty one */
    rt_status st = rt_metrics_mlabel_parse(buf, delim,
                                           h->n_label_vocabulary
                                               ? (const char *const *)h->label_vocabulary
                                               : NULL,
                                           h->n_classes, multihot, err);
    if (buf != stack)
        free(buf);
    return st;
}

rt_status rt_metrics_mlabel_auc(size_t n_classes, const float *probs, const float *labels,
                                const float *weights, size_t n, double *auc, double *auc_pr,
                                rt_err *err)
{
    size_t pairs = n * n_classes;
    float *w = NULL;
    if (weights && pairs) {
        if (n_classes && pairs / n_classes != n)
            return rt_err_set(err, RT_ERR_INVALID, "multi-label auc: %zu rows of %zu classes "
                              "overflow", n, n_classes);
        if (!(w = malloc(pairs * sizeof *w)))
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n_classes; j++)
                w[i * n_classes + j] = weights[i];
    }
    *auc = rt_metrics_auc_roc(probs, labels, w, pairs);
    *auc_pr = rt_metrics_auc_pr(probs, labels, w, pairs);
    free(w);
    return RT_OK;
}
