/*
 * rt_xai_onnx.c — the input gradient of an ONNX network (model.onnx) at
 * serving time, for integrated gradients (rt_xai_ig.c).
 *
 * Forward: the graph inputs along the straight path from the baseline's
 * rows to the instance's, then the plan's own steps over those P rows
 * (rt_onnx_run_steps: the served arithmetic, in float), every value kept;
 * the logits are the head's (rt_onnx_run_logits).
 *
 * Backward, in double, exact (no finite differences): d output / d logits
 * into the value the logits are read from (a softmax classifier's binary
 * logit z1 - z0 gives +g to z1 and -g to z0), then each step in reverse
 * order adds its inputs' share: Gemm/MatMul the kernel's transpose; Add,
 * Sub, Mul, Div their partial derivatives through the broadcast maps (a
 * constant operand gets none); Relu 1 where x > 0; LeakyRelu 1 or alpha
 * (alpha where x < 0, as the forward); Sigmoid y (1 - y); Tanh 1 - y^2;
 * Softmax y (dy - sum dy y) and LogSoftmax dy - softmax sum dy along its
 * axis; Concat splits; BatchNormalization its scale; Scaler its scale;
 * Identity, Dropout, Flatten, Reshape, Squeeze, Unsqueeze, Cast share their
 * input's gradient (the value is its input's bytes); Imputer passes where
 * the value was not replaced; Normalizer the quotient rule of x / d
 * (MAX: d the first largest value; L1: sum |x|; L2: the norm); a
 * LinearClassifier's scores through NONE, LOGISTIC or SOFTMAX.
 *
 * What has no gradient is refused before any work (rt_xai_onnx_check):
 * tree ensembles, OneHotEncoder and LabelEncoder (their inputs are
 * categories), a LinearClassifier with SOFTMAX_ZERO or PROBIT.
 */
#include "rt_explain.h"
#include "rt_explain_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Why step s has no gradient, or NULL. */
static const char *no_gradient(const rt_onnx_step *s)
{
    switch (s->op) {
    case RT_ONNX_TREES: return "a tree ensemble (TreeEnsembleClassifier/Regressor)";
    case RT_ONNX_ONEHOT: return "OneHotEncoder (its input is a category)";
    case RT_ONNX_LABELENC: return "LabelEncoder (its input is a category)";
    case RT_ONNX_LINCLS:
        if (s->post == RT_ONNX_POST_NONE || s->post == RT_ONNX_POST_LOGISTIC ||
            (s->post == RT_ONNX_POST_SOFTMAX && s->m > 1))
            return NULL;
        return "LinearClassifier with this post_transform";
    default: return NULL;
    }
}

rt_status rt_xai_onnx_check(const rt_onnx *o, rt_err *err)
{
    for (size_t k = 0; k < o->n_steps; k++) {
        const rt_onnx_step *s = &o->steps[k];
        const char *why = no_gradient(s);
        if (why)
            return rt_err_set(err, RT_ERR_INVALID,
                              "integratedGradientsAttribution: the ONNX graph's node \"%s\", %s, "
                              "has no gradient (use exactShapleyAttribution or "
                              "sampledShapleyAttribution)",
                              s->node && s->node[0] ? s->node : o->vals[s->out].name, why);
    }
    return RT_OK;
}

void rt_xai_onnx_free(xai_opath *t)
{
    if (t->o && t->val)
        for (size_t v = 0; v < t->o->n_vals; v++)
            if (t->o->vals[v].batch && t->o->vals[v].alias < 0) {
                free(t->val[v]);
                if (t->grad)
                    free(t->grad[v]);
            }
    free(t->val);
    free(t->grad);
    free(t->logits);
    memset(t, 0, sizeof *t);
}

/* t's buffers for P rows: every batch value's floats and gradients (an
 * alias shares its target's), constants their data. */
static bool opath_alloc(xai_opath *t, const rt_onnx *o, size_t P, size_t ld)
{
    t->o = o;
    t->P = P;
    t->val = calloc(o->n_vals + 1, sizeof *t->val);
    t->grad = calloc(o->n_vals + 1, sizeof *t->grad);
    t->logits = malloc((P * ld + 1) * sizeof *t->logits);
    if (!t->val || !t->grad || !t->logits)
        return false;
    for (size_t v = 0; v < o->n_vals; v++) {
        const rt_onnx_val *val = &o->vals[v];
        if (!val->batch) {
            t->val[v] = val->cdata;
            continue;
        }
        if (val->alias >= 0) {
            t->val[v] = t->val[val->alias];
            t->grad[v] = t->grad[val->alias];
            continue;
        }
        if (!(t->val[v] = calloc(P * val->row + 1, sizeof(float))) ||
            !(t->grad[v] = calloc(P * val->row + 1, sizeof(double))))
            return false;
    }
    return true;
}

rt_status rt_xai_onnx_forward(const rt_graph *g, const rt_features *f, size_t m, xai_opath *t,
                              rt_err *err)
{
    const rt_onnx *o = g->onnx;
    size_t P = m + 1;
    memset(t, 0, sizeof *t);
    xai_opath ends = {0};
    rt_status st = RT_OK;
    if (!opath_alloc(t, o, P, g->logits_dim) || !opath_alloc(&ends, o, 2, g->logits_dim)) {
        st = rt_err_set(err, RT_ERR_NOMEM, "integrated gradients: out of memory");
        goto out;
    }
    if ((st = rt_onnx_run_inputs(o, f, ends.val, err)) != RT_OK)
        goto out;
    for (size_t i = 0; i < o->n_inputs; i++) {
        size_t v = o->inputs[i], w = o->vals[v].row;
        const float *b = ends.val[v], *x = ends.val[v] + w;
        float *dst = t->val[v];
        for (size_t k = 0; k <= m; k++)
            for (size_t j = 0; j < w; j++) {
                float al = (float)k / (float)m;
                dst[k * w + j] = k == 0 ? b[j] : k == m ? x[j] : b[j] + al * (x[j] - b[j]);
            }
    }
    if ((st = rt_onnx_run_steps(o, P, t->val, err)) != RT_OK)
        goto out;
    rt_onnx_run_logits(o, P, t->val, t->logits);
out:
    rt_xai_onnx_free(&ends);
    if (st != RT_OK)
        rt_xai_onnx_free(t);
    return st;
}

/* d output / d logits (P x ld) into the values the logits are read from. */
static void seed(const xai_opath *t, const double *gl, size_t ld)
{
    const rt_onnx *o = t->o;
    if (o->ml_probs || (o->n_classes && o->n_classes > 2)) {
        double *g = t->grad[o->ml_probs ? o->ml_scores : o->classifier_logits];
        for (size_t e = 0; e < t->P * ld; e++)
            g[e] += gl[e];
        return;
    }
    if (o->n_classes) {
        double *g = t->grad[o->classifier_logits];
        for (size_t k = 0; k < t->P; k++) {
            g[k * 2 + 1] += gl[k];
            g[k * 2] -= gl[k];
        }
        return;
    }
    size_t off = 0;
    for (size_t q = 0; q < o->n_outputs; q++) {
        size_t v = o->outputs[q], w = o->vals[v].row;
        for (size_t k = 0; k < t->P; k++)
            for (size_t j = 0; j < w; j++)
                t->grad[v][k * w + j] += gl[k * ld + off + j];
        off += w;
    }
}

/* y = x W + b (W k x m): dx += W dy, per row. */
static void back_dense(size_t P, size_t kk, size_t mm, const float *w, const double *dy,
                       double *dx)
{
    for (size_t r = 0; r < P; r++)
        for (size_t i = 0; i < kk; i++) {
            double s = 0.0;
            for (size_t j = 0; j < mm; j++)
                s += (double)w[i * mm + j] * dy[r * mm + j];
            dx[r * kk + i] += s;
        }
}

static void back_binary(const xai_opath *t, const rt_onnx_step *s, size_t row, const double *dy)
{
    const rt_onnx_val *va = &t->o->vals[s->in[0]], *vb = &t->o->vals[s->in[1]];
    const float *a = t->val[s->in[0]], *b = t->val[s->in[1]];
    double *da = va->batch ? t->grad[s->in[0]] : NULL, *db = vb->batch ? t->grad[s->in[1]] : NULL;
    const uint32_t *ma = s->map[0], *mb = s->map[1];
    for (size_t r = 0; r < t->P; r++) {
        const float *ar = va->batch ? a + r * va->row : a;
        const float *br = vb->batch ? b + r * vb->row : b;
        double *dar = da ? da + r * va->row : NULL, *dbr = db ? db + r * vb->row : NULL;
        for (size_t e = 0; e < row; e++) {
            double g = dy[r * row + e], x = ar[ma[e]], z = br[mb[e]];
            double ga = g, gb = g;
            switch (s->sub) {
            case '+': break;
            case '-': gb = -g; break;
            case '*': ga = g * z; gb = g * x; break;
            default: ga = g / z; gb = -g * x / (z * z); break;
            }
            if (dar)
                dar[ma[e]] += ga;
            if (dbr)
                dbr[mb[e]] += gb;
        }
    }
}

/* Softmax (log: LogSoftmax) along s's axis: dx from y and dy. */
static void back_softmax(const rt_onnx_step *s, size_t P, size_t row, bool log_sm,
                         const float *y, const double *dy, double *dx)
{
    for (size_t r = 0; r < P; r++)
        for (size_t p = 0; p < s->outer; p++)
            for (size_t q = 0; q < s->inner; q++) {
                size_t base = r * row + p * s->axis * s->inner + q, st = s->inner;
                double dot = 0.0;
                for (size_t a = 0; a < s->axis; a++)
                    dot += log_sm ? dy[base + a * st] : dy[base + a * st] * y[base + a * st];
                for (size_t a = 0; a < s->axis; a++) {
                    size_t e = base + a * st;
                    dx[e] += log_sm ? dy[e] - exp((double)y[e]) * dot
                                    : (double)y[e] * (dy[e] - dot);
                }
            }
}

/* Normalizer: y = x / d per row (d == 0: y = x). */
static void back_normalizer(const rt_onnx_step *s, size_t P, size_t w, const float *x,
                            const double *dy, double *dx)
{
    for (size_t r = 0; r < P; r++) {
        const float *xr = x + r * w;
        const double *g = dy + r * w;
        double *o = dx + r * w, d = 0.0, dot = 0.0;
        size_t at = 0;
        for (size_t c = 0; c < w; c++) {
            double v = xr[c];
            if (s->sub == 'M') {
                if (c == 0 || v > d) {
                    d = v;
                    at = c;
                }
            } else {
                d += s->sub == '1' ? fabs(v) : v * v;
            }
            dot += g[c] * v;
        }
        if (s->sub == '2')
            d = sqrt(d);
        for (size_t c = 0; c < w; c++) {
            if (d == 0.0) {
                o[c] += g[c];
                continue;
            }
            double v = xr[c];
            o[c] += g[c] / d;
            if (s->sub == '1')
                o[c] -= (v > 0 ? 1.0 : v < 0 ? -1.0 : 0.0) * dot / (d * d);
            else if (s->sub == '2')
                o[c] -= v * dot / (d * d * d);
            else if (c == at)
                o[c] -= dot / (d * d);
        }
    }
}

/* LinearClassifier: its raw scores' gradient from the scores' (y, dy),
 * then back through its kernel. */
static rt_status back_lincls(const xai_opath *t, const rt_onnx_step *s, size_t row,
                             const double *dy, double *dx, rt_err *err)
{
    size_t P = t->P, mm = s->m;
    const float *y = t->val[s->out];
    double *draw = malloc((P * mm + 1) * sizeof *draw);
    if (!draw)
        return rt_err_set(err, RT_ERR_NOMEM, "integrated gradients: out of memory");
    for (size_t r = 0; r < P; r++) {
        const float *z = y + r * row;
        const double *g = dy + r * row;
        double *o = draw + r * mm;
        if (mm == 1) { /* scores [-v, v] or [1 - s(v), s(v)] */
            double d = g[1] - g[0];
            o[0] = s->post == RT_ONNX_POST_LOGISTIC ? d * z[1] * (1.0 - z[1]) : d;
            continue;
        }
        double dot = 0.0;
        for (size_t j = 0; j < mm; j++)
            dot += g[j] * z[j];
        for (size_t j = 0; j < mm; j++)
            o[j] = s->post == RT_ONNX_POST_NONE       ? g[j]
                   : s->post == RT_ONNX_POST_LOGISTIC ? g[j] * z[j] * (1.0 - z[j])
                                                      : z[j] * (g[j] - dot);
    }
    back_dense(P, s->k, mm, s->w, draw, dx);
    free(draw);
    return RT_OK;
}

/* One step's inputs' share of its output's gradient. */
static rt_status back_step(const xai_opath *t, const rt_onnx_step *s, rt_err *err)
{
    const rt_onnx *o = t->o;
    size_t P = t->P, row = o->vals[s->out].row;
    const double *dy = t->grad[s->out];
    double *dx = o->vals[s->in[0]].batch ? t->grad[s->in[0]] : NULL;
    const float *x = t->val[s->in[0]], *y = t->val[s->out];
    if (s->op == RT_ONNX_ALIAS || !dy)
        return RT_OK; /* an alias shares its input's gradient */
    if (s->op == RT_ONNX_BINARY) {
        back_binary(t, s, row, dy);
        return RT_OK;
    }
    if (s->op == RT_ONNX_CONCAT) {
        for (size_t r = 0; r < P; r++) {
            const double *g = dy + r * row;
            for (size_t p = 0; p < s->outer; p++)
                for (size_t k = 0; k < s->n_in; k++) {
                    const rt_onnx_val *v = &o->vals[s->in[k]];
                    size_t part = v->row / s->outer;
                    double *d = v->batch ? t->grad[s->in[k]] + r * v->row + p * part : NULL;
                    for (size_t j = 0; d && j < part; j++)
                        d[j] += g[j];
                    g += part;
                }
        }
        return RT_OK;
    }
    if (!dx)
        return RT_OK;
    size_t w = o->vals[s->in[0]].row;
    switch (s->op) {
    case RT_ONNX_DENSE: back_dense(P, s->k, s->m, s->w, dy, dx); break;
    case RT_ONNX_RELU:
        for (size_t e = 0; e < P * row; e++)
            dx[e] += x[e] > 0.0f ? dy[e] : 0.0;
        break;
    case RT_ONNX_LEAKY:
        for (size_t e = 0; e < P * row; e++)
            dx[e] += x[e] < 0.0f ? dy[e] * (double)s->alpha : dy[e];
        break;
    case RT_ONNX_SIGMOID:
        for (size_t e = 0; e < P * row; e++)
            dx[e] += dy[e] * (double)y[e] * (1.0 - (double)y[e]);
        break;
    case RT_ONNX_TANH:
        for (size_t e = 0; e < P * row; e++)
            dx[e] += dy[e] * (1.0 - (double)y[e] * (double)y[e]);
        break;
    case RT_ONNX_SOFTMAX:
    case RT_ONNX_LOGSOFTMAX:
        back_softmax(s, P, row, s->op == RT_ONNX_LOGSOFTMAX, y, dy, dx);
        break;
    case RT_ONNX_AFFINE:
        for (size_t r = 0; r < P; r++)
            for (size_t c = 0; c < s->outer; c++)
                for (size_t q = 0; q < s->inner; q++) {
                    size_t e = r * row + c * s->inner + q;
                    dx[e] += dy[e] * (double)s->w[c];
                }
        break;
    case RT_ONNX_SCALER:
        for (size_t r = 0; r < P; r++)
            for (size_t c = 0; c < row; c++)
                dx[r * row + c] += dy[r * row + c] * (double)s->b[c];
        break;
    case RT_ONNX_IMPUTER:
        for (size_t e = 0; e < P * row; e++) {
            bool rep = isnan(s->alpha) ? isnan(x[e]) : x[e] == s->alpha;
            dx[e] += rep ? 0.0 : dy[e];
        }
        break;
    case RT_ONNX_NORMALIZER: back_normalizer(s, P, w, x, dy, dx); break;
    case RT_ONNX_LINCLS: return back_lincls(t, s, row, dy, dx, err);
    default:
        return rt_err_set(err, RT_ERR_INVALID, "integratedGradientsAttribution: no gradient "
                          "through \"%s\"", o->vals[s->out].name);
    }
    return RT_OK;
}

rt_status rt_xai_onnx_backward(const xai_opath *t, const double *gl, size_t ld, rt_err *err)
{
    const rt_onnx *o = t->o;
    for (size_t v = 0; v < o->n_vals; v++)
        if (o->vals[v].batch && o->vals[v].alias < 0)
            memset(t->grad[v], 0, t->P * o->vals[v].row * sizeof(double));
    seed(t, gl, ld);
    for (size_t k = o->n_steps; k-- > 0;) {
        rt_status st = back_step(t, &o->steps[k], err);
        if (st != RT_OK)
            return st;
    }
    return RT_OK;
}
