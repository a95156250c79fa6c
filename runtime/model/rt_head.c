/*
 * rt_head.c — heads: logits -> the outputs a client sees.
 *
 *   binary      logistic = sigmoid(logit), probabilities = softmax([0, logit]),
 *               class_ids = argmax (ties go to class 0)
 *   multi-class probabilities = softmax(logits), class_ids = argmax
 *   multi-label probabilities = sigmoid of each logit (TF's MultiLabelHead:
 *               logits and probabilities only, no class_ids)
 *   regression  predictions = logits (an XGBoost model's: exp or sigmoid of
 *               them as its objective says, rt_xgb_graph_set)
 *   several     (MultiHead) each head's own outputs from its columns of the
 *               logits, in o->heads
 *
 * An XGBoost model's (rt_xgb_graph_set) use XGBoost's own sigmoid and
 * softmax, so its probabilities are Booster.predict's to the float.
 *
 * Every formula is written so that logits of +-1000 give exact 0 / 1 and
 * never Inf or NaN (exp of a non-positive number only).
 */
#include "rt_model.h"
#include "rt_model_internal.h"
#include "rt_data_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Allocated lengths of the output arrays (in elements). */
typedef struct out_caps {
    size_t logits, logistic, probabilities, class_ids, predictions;
} out_caps;

void rt_head_outputs_init(rt_outputs *o)
{
    memset(o, 0, sizeof *o);
}

void rt_head_outputs_free(rt_outputs *o)
{
    if (!o)
        return;
    free(o->logits);
    free(o->logistic);
    free(o->probabilities);
    free(o->class_ids);
    free(o->predictions);
    for (size_t h = 0; h < o->n_heads; h++)
        rt_head_outputs_free(&o->heads[h]);
    free(o->heads);
    free(o->priv);
    rt_head_outputs_init(o);
}

/* Grows *p to hold count elements of size sz; *cap tracks the allocation. */
static int grow(void **p, size_t *cap, size_t count, size_t sz)
{
    if (count <= *cap && *p)
        return 0;
    if (count > SIZE_MAX / sz)
        return -1;
    void *q = realloc(*p, (count ? count : 1) * sz);
    if (!q)
        return -1;
    *p = q;
    *cap = count;
    return 0;
}

/* Frees an array the current head does not produce (it stays NULL). */
static void drop(void **p, size_t *cap)
{
    free(*p);
    *p = NULL;
    *cap = 0;
}

/* sigmoid(x) without overflow for any finite x. */
static float stable_sigmoid(float x)
{
    if (x >= 0.0f)
        return 1.0f / (1.0f + expf(-x));
    float e = expf(x);
    return e / (1.0f + e);
}

/* XGBoost's common::Sigmoid (src/common/math.h), for reg:logistic: its
 * answers to the float. */
static float xgb_sigmoid(float x)
{
    float m = -x < 88.7f ? -x : 88.7f;
    return 1.0f / (expf(m) + 1.0f + 1e-16f);
}

/* XGBoost's common::Softmax (src/common/math.h, multi:softprob), the same
 * argmax as softmax below: the first maximum. */
static size_t xgb_softmax(const float *v, size_t k, float *p)
{
    size_t best = 0;
    float mx = v[0];
    for (size_t j = 1; j < k; j++) {
        mx = fmaxf(v[j], mx);
        if (v[j] > v[best])
            best = j;
    }
    double sum = 0.0;
    for (size_t j = 0; j < k; j++) {
        p[j] = expf(v[j] - mx);
        sum += p[j];
    }
    for (size_t j = 0; j < k; j++)
        p[j] /= (float)sum;
    return best;
}

/* Softmax of v[0..k) into p; returns the argmax (first maximum). */
static size_t softmax(const float *v, size_t k, float *p)
{
    size_t best = 0;
    for (size_t j = 1; j < k; j++)
        if (v[j] > v[best])
            best = j;
    float mx = v[best];
    double sum = 0.0;
    for (size_t j = 0; j < k; j++) {
        float e = expf(v[j] - mx);
        p[j] = e;
        sum += e;
    }
    for (size_t j = 0; j < k; j++)
        p[j] = (float)(p[j] / sum);
    return best;
}

/* An ai.onnx.ml classifier's head (rt_onnx_*.c): the logits are its scores,
 * one per class (binary too), and they are the probabilities as computed;
 * class_ids the first highest; logistic (binary) the second class's. */
static rt_status head_scores(const rt_graph *g, const float *logits, const float *labels,
                             size_t n, rt_outputs *o, out_caps *cap, rt_err *err)
{
    size_t c = g->logits_dim;
    if (c != g->n_classes || c < 2)
        return rt_err_set(err, RT_ERR_INVALID, "classifier: %zu scores for %zu classes", c,
                          g->n_classes);
    o->n_classes = c;
    bool binary = g->head == PREDICTD__HEAD_TYPE__HEAD_BINARY;
    if (grow((void **)&o->probabilities, &cap->probabilities, n * c, sizeof(float)) != 0 ||
        grow((void **)&o->class_ids, &cap->class_ids, n, sizeof(int64_t)) != 0 ||
        (binary && grow((void **)&o->logistic, &cap->logistic, n, sizeof(float)) != 0))
        return rt_err_set(err, RT_ERR_NOMEM, "head outputs for %zu instances: out of memory", n);
    if (n)
        memcpy(o->probabilities, logits, n * c * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        const float *p = logits + i * c;
        size_t best = 0;
        for (size_t k = 1; k < c; k++)
            if (p[k] > p[best])
                best = k;
        /* the operator's own label where the forward pass kept it */
        if (labels && labels[i] >= 0 && labels[i] < (float)c)
            best = (size_t)labels[i];
        o->class_ids[i] = (int64_t)best;
        if (binary)
            o->logistic[i] = p[1];
    }
    if (!binary)
        drop((void **)&o->logistic, &cap->logistic);
    drop((void **)&o->predictions, &cap->predictions);
    return RT_OK;
}

/* Several heads (MultiHead): head h's outputs from its columns of the
 * logits (TF's _split_logits), computed by its view as a one-head model's,
 * so each row's bits are the same alone or in any batch. */
static rt_status heads_compute(const rt_graph *g, const float *logits, size_t n, rt_outputs *o,
                               out_caps *cap, rt_err *err)
{
    size_t nh = g->n_head_views, ld = g->logits_dim;
    if (o->n_heads != nh) {
        for (size_t h = 0; h < o->n_heads; h++)
            rt_head_outputs_free(&o->heads[h]);
        free(o->heads);
        o->n_heads = 0;
        if (!(o->heads = calloc(nh, sizeof *o->heads)))
            return rt_err_set(err, RT_ERR_NOMEM, "head outputs: out of memory");
        o->n_heads = nh;
    }
    float *slice = malloc((n ? n : 1) * ld * sizeof *slice);
    if (!slice)
        return rt_err_set(err, RT_ERR_NOMEM, "head outputs for %zu instances: out of memory", n);
    rt_status st = RT_OK;
    for (size_t h = 0; h < nh && st == RT_OK; h++) {
        size_t off = g->head_off[h], w = g->head_w[h];
        for (size_t i = 0; i < n; i++)
            memcpy(slice + i * w, logits + i * ld + off, w * sizeof *slice);
        st = rt_head_compute(&g->head_views[h], slice, n, &o->heads[h], err);
        if (st != RT_OK)
            rt_err_prefix(err, "head %s", g->def->graph->heads[h]->name);
    }
    free(slice);
    o->n_classes = 0;
    drop((void **)&o->logistic, &cap->logistic);
    drop((void **)&o->probabilities, &cap->probabilities);
    drop((void **)&o->class_ids, &cap->class_ids);
    drop((void **)&o->predictions, &cap->predictions);
    return st;
}

rt_status rt_head_compute(const rt_graph *g, const float *logits, size_t n, rt_outputs *o,
                          rt_err *err)
{
    return rt_head_compute_ws(g, logits, NULL, n, o, err);
}

rt_status rt_head_compute_ws(const rt_graph *g, const float *logits, rt_workspace *ws, size_t n,
                             rt_outputs *o, rt_err *err)
{
    if (!g || !o || (!logits && n > 0))
        return rt_err_set(err, RT_ERR_INVALID, "rt_head_compute: NULL argument");
    size_t ld = g->logits_dim;
    if (ld == 0)
        return rt_err_set(err, RT_ERR_INVALID, "model has logits dimension 0");
    if (!o->priv && !(o->priv = calloc(1, sizeof(out_caps))))
        return rt_err_set(err, RT_ERR_NOMEM, "head outputs: out of memory");
    out_caps *cap = o->priv;
    if (n > SIZE_MAX / ld)
        return rt_err_set(err, RT_ERR_LIMIT, "batch of %zu instances too large", n);
    if (grow((void **)&o->logits, &cap->logits, n * ld, sizeof(float)) != 0)
        goto nomem;
    if (n)
        memcpy(o->logits, logits, n * ld * sizeof(float));
    o->n = n;

    if (g->n_head_views > 1)
        return heads_compute(g, logits, n, o, cap, err);
    if (g->onnx && g->onnx->ml_probs)
        return head_scores(g, logits, rt_onnx_run_labels(g->onnx, ws, n), n, o, cap, err);
    switch (g->head) {
    case PREDICTD__HEAD_TYPE__HEAD_BINARY:
        if (ld != 1)
            return rt_err_set(err, RT_ERR_INVALID, "binary head needs 1 logit, model has %zu",
                              ld);
        o->n_classes = 2;
        if (grow((void **)&o->logistic, &cap->logistic, n, sizeof(float)) != 0 ||
            grow((void **)&o->probabilities, &cap->probabilities, 2 * n, sizeof(float)) != 0 ||
            grow((void **)&o->class_ids, &cap->class_ids, n, sizeof(int64_t)) != 0)
            goto nomem;
        for (size_t i = 0; i < n; i++) {
            float l = logits[i];
            float p1 = g->absent_missing ? xgb_sigmoid(l) : stable_sigmoid(l);
            o->logistic[i] = p1;
            /* softmax([0, l])[0]; an XGBoost model's 1 - p as predict_proba's */
            o->probabilities[2 * i] = g->absent_missing ? 1.0f - p1 : stable_sigmoid(-l);
            o->probabilities[2 * i + 1] = p1;
            o->class_ids[i] = l > 0.0f ? 1 : 0;
        }
        drop((void **)&o->predictions, &cap->predictions);
        return RT_OK;
    case PREDICTD__HEAD_TYPE__HEAD_MULTI_CLASS:
        if (ld < 2 || g->n_classes != ld)
            return rt_err_set(err, RT_ERR_INVALID,
                              "multi-class head: %zu classes but %zu logits", g->n_classes, ld);
        o->n_classes = ld;
        if (grow((void **)&o->probabilities, &cap->probabilities, n * ld, sizeof(float)) != 0 ||
            grow((void **)&o->class_ids, &cap->class_ids, n, sizeof(int64_t)) != 0)
            goto nomem;
        for (size_t i = 0; i < n; i++)
            o->class_ids[i] = (int64_t)(g->absent_missing
                                            ? xgb_softmax(logits + i * ld, ld,
                                                          o->probabilities + i * ld)
                                            : softmax(logits + i * ld, ld,
                                                      o->probabilities + i * ld));
        drop((void **)&o->logistic, &cap->logistic);
        drop((void **)&o->predictions, &cap->predictions);
        return RT_OK;
    case PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL: /* TF's MultiLabelHead: a sigmoid per class */
        if (g->n_classes != ld)
            return rt_err_set(err, RT_ERR_INVALID,
                              "multi-label head: %zu classes but %zu logits", g->n_classes, ld);
        o->n_classes = ld;
        if (grow((void **)&o->probabilities, &cap->probabilities, n * ld, sizeof(float)) != 0)
            goto nomem;
        for (size_t i = 0; i < n * ld; i++)
            o->probabilities[i] = stable_sigmoid(logits[i]);
        drop((void **)&o->logistic, &cap->logistic);
        drop((void **)&o->class_ids, &cap->class_ids);
        drop((void **)&o->predictions, &cap->predictions);
        return RT_OK;
    case PREDICTD__HEAD_TYPE__HEAD_REGRESSION:
        o->n_classes = 0;
        if (grow((void **)&o->predictions, &cap->predictions, n * ld, sizeof(float)) != 0)
            goto nomem;
        if (n)
            memcpy(o->predictions, logits, n * ld * sizeof(float));
        if (g->xgb_link == RT_XGB_LINK_EXP) /* XGBoost's PredTransform, in float */
            for (size_t i = 0; i < n * ld; i++)
                o->predictions[i] = expf(logits[i]);
        else if (g->xgb_link == RT_XGB_LINK_SIGMOID)
            for (size_t i = 0; i < n * ld; i++)
                o->predictions[i] = xgb_sigmoid(logits[i]);
        drop((void **)&o->logistic, &cap->logistic);
        drop((void **)&o->probabilities, &cap->probabilities);
        drop((void **)&o->class_ids, &cap->class_ids);
        return RT_OK;
    default:
        return rt_err_set(err, RT_ERR_UNSUPPORTED, "unknown head type %d", (int)g->head);
    }
nomem:
    return rt_err_set(err, RT_ERR_NOMEM, "head outputs for %zu instances: out of memory", n);
}
