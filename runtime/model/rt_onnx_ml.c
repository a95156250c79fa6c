/*
 * rt_onnx_ml.c — the ai.onnx.ml operators of scikit-learn's and XGBoost's
 * exports (ml opsets 1-3), planned and run: Scaler, Normalizer, Imputer,
 * OneHotEncoder and LabelEncoder (of numbers or strings: a string value
 * holds each text's index in its vocabulary, rt_onnx_str.c), LinearRegressor,
 * LinearClassifier, TreeEnsembleClassifier and TreeEnsembleRegressor
 * (rt_onnx_trees.c), ZipMap. Each reads an [N, C] value and computes every
 * instance's row from that row alone.
 *
 * The classifiers have two outputs, as ONNX defines them: the label
 * (output 0, [N]: here the class's index, written as its label, an int64
 * or a string, by the answer) and the scores (output 1, [N, classes]).
 * ZipMap gives the scores keyed by the class labels (ONNX Runtime's list
 * of maps: one {label: score} per instance).
 *
 * LinearClassifier, as ONNX Runtime: scores = x W' + intercepts; with one
 * coefficient row and two labels, the score s becomes [-s, s] (NONE) or
 * [logistic(-s), logistic(s)] (LOGISTIC) and the label is 1 when s > 0;
 * else post_transform over the scores, the label the first highest raw
 * score.
 */
#include "rt_model.h"
#include "rt_model_internal.h"
#include "rt_onnx_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ai.onnx.ml.Scaler: (x - offset) * scale per column */
static rt_status plan_ml_scaler(reader *r, const Onnx__NodeProto *nd, const rt_onnx_val *x,
                                size_t c, rt_onnx_val *out)
{
    rt_status st;
    rt_onnx_step *s;
    const float *off, *sc;
    size_t n_off, n_sc;
    if ((st = rt_onnx_plan_floats(r, nd, "offset", &off, &n_off)) ||
        (st = rt_onnx_plan_floats(r, nd, "scale", &sc, &n_sc)))
        return st;
    if ((n_off != 1 && n_off != c) || (n_sc != 1 && n_sc != c))
        return rt_onnx_plan_fail(r, nd, "attributes offset and scale: %zu and %zu values for %zu "
                         "columns (1 or %zu each)", n_off, n_sc, c, c);
    if ((st = rt_onnx_plan_batch_shape(r, nd, out, 2, x->dims)) || (st = rt_onnx_plan_step(r, &s)))
        return st;
    s->op = RT_ONNX_SCALER;
    if (!(s->w = malloc(c * sizeof(float))) || !(s->b = malloc(c * sizeof(float))))
        return rt_err_set(r->err, RT_ERR_NOMEM, "%s: out of memory", r->file);
    for (size_t j = 0; j < c; j++) {
        s->w[j] = off[n_off == 1 ? 0 : j];
        s->b[j] = sc[n_sc == 1 ? 0 : j];
    }
    return RT_OK;
}

/* ai.onnx.ml.LinearRegressor: a dense step of targets outputs */
static rt_status plan_ml_linear(reader *r, const Onnx__NodeProto *nd, size_t c, rt_onnx_val *out)
{
    rt_status st;
    rt_onnx_step *s;
    const float *co, *ic;
    size_t n_co, n_ic;
    int64_t targets;
    if ((st = rt_onnx_plan_floats(r, nd, "coefficients", &co, &n_co)) ||
        (st = rt_onnx_plan_floats(r, nd, "intercepts", &ic, &n_ic)) ||
        (st = rt_onnx_plan_int(r, nd, "targets", 1, &targets)) ||
        (st = rt_onnx_plan_string_is(r, nd, "post_transform", "NONE")))
        return st;
    if (targets < 1 || (size_t)targets > RT_ONNX_MAX_ROW / (c ? c : 1) ||
        n_co != (size_t)targets * c || (n_ic != 0 && n_ic != (size_t)targets))
        return rt_onnx_plan_fail(r, nd, "attributes coefficients and intercepts: %zu and %zu "
                         "values for %" PRId64 " targets of %zu columns", n_co, n_ic,
                         targets, c);
    size_t m = (size_t)targets;
    int64_t dims2[2] = {0, targets};
    if ((st = rt_onnx_plan_batch_shape(r, nd, out, 2, dims2)) || (st = rt_onnx_plan_step(r, &s)))
        return st;
    s->op = RT_ONNX_DENSE;
    s->k = c;
    s->m = m;
    if (!(s->w = malloc((c * m != 0 ? c * m : 1) * sizeof(float))) ||
        !(s->b = calloc(m, sizeof(float))))
        return rt_err_set(r->err, RT_ERR_NOMEM, "%s: out of memory", r->file);
    for (size_t t = 0; t < m; t++) { /* coefficients are [targets x C]: W = its transpose */
        for (size_t j = 0; j < c; j++)
            s->w[j * m + t] = co[t * c + j];
        s->b[t] = n_ic ? ic[t] : 0.0f;
    }
    return RT_OK;
}


/* ai.onnx.ml.LinearClassifier: a dense step of the coefficient rows, then
 * the scores and the label */
static rt_status plan_ml_lincls(reader *r, const Onnx__NodeProto *nd, size_t c)
{
    rt_onnx *o = r->o;
    rt_status st;
    rt_onnx_step *s;
    const float *co, *ic;
    size_t n_co, n_ic, n_lab;
    int64_t multi;
    int post;
    rt_onnx_val *label = &o->vals[r->out[0]], *scores = &o->vals[r->out[1]];
    if ((st = rt_onnx_plan_floats(r, nd, "coefficients", &co, &n_co)) ||
        (st = rt_onnx_plan_floats(r, nd, "intercepts", &ic, &n_ic)) ||
        (st = rt_onnx_plan_int(r, nd, "multi_class", 0, &multi)) ||
        (st = rt_onnx_plan_post(r, nd, &post)) ||
        (st = rt_onnx_plan_labels(r, nd, "classlabels_ints", label, &n_lab)))
        return st;
    size_t m = c ? n_co / c : 0;
    if (c == 0 || m == 0 || n_co != m * c || (n_ic && n_ic != m) ||
        !(m == n_lab || (m == 1 && n_lab == 2)))
        return rt_onnx_plan_fail(r, nd, "attributes coefficients and intercepts: %zu and %zu "
                                 "values for %zu columns and %zu class labels (a row of C "
                                 "coefficients per class, or one row for two classes)", n_co,
                                 n_ic, c, n_lab);
    int64_t dims[2] = {0, (int64_t)n_lab}, d1[2] = {0, 1};
    if ((st = rt_onnx_plan_batch_shape(r, nd, scores, 2, dims)) ||
        (st = rt_onnx_plan_batch_shape(r, nd, label, 2, d1)) || (st = rt_onnx_plan_step(r, &s)))
        return st;
    label->rank = 1;
    s->op = RT_ONNX_LINCLS;
    s->k = c;
    s->m = m;
    s->post = post;
    s->out2 = r->out[0];
    if (!(s->w = malloc(c * m * sizeof(float))) || !(s->b = calloc(m, sizeof(float))))
        return rt_err_set(r->err, RT_ERR_NOMEM, "%s: out of memory", r->file);
    for (size_t t = 0; t < m; t++) {
        for (size_t j = 0; j < c; j++)
            s->w[j * m + t] = co[t * c + j];
        s->b[t] = n_ic ? ic[t] : 0.0f;
    }
    return RT_OK;
}

/* ai.onnx.ml.Normalizer (MAX, L1, L2 per row), Imputer (float values) */
static rt_status plan_ml_rowwise(reader *r, const Onnx__NodeProto *nd, const char *op,
                                 const rt_onnx_val *x, size_t c, rt_onnx_val *out)
{
    rt_status st;
    rt_onnx_step *s;
    if (op[0] == 'N') {
        char norm[8];
        if ((st = rt_onnx_plan_string(r, nd, "norm", "MAX", norm, sizeof norm)))
            return st;
        int sub = !strcmp(norm, "MAX") ? 'M' : !strcmp(norm, "L1") ? '1' : !strcmp(norm, "L2") ? '2' : 0;
        if (!sub)
            return rt_onnx_plan_fail(r, nd, "attribute norm: \"%s\" is not MAX, L1 or L2", norm);
        if ((st = rt_onnx_plan_batch_shape(r, nd, out, 2, x->dims)) ||
            (st = rt_onnx_plan_step(r, &s)))
            return st;
        s->op = RT_ONNX_NORMALIZER;
        s->sub = sub;
        return RT_OK;
    }
    const float *iv;
    size_t n_iv;
    float rep = 0;
    if (rt_onnx_plan_attr(nd, "imputed_value_int64s"))
        return rt_onnx_plan_fail(r, nd, "attribute imputed_value_int64s: only float inputs "
                                 "are read (imputed_value_floats)");
    const Onnx__AttributeProto *ra = rt_onnx_plan_attr(nd, "replaced_value_float");
    if ((st = rt_onnx_plan_floats(r, nd, "imputed_value_floats", &iv, &n_iv)))
        return st;
    if (ra && (!ra->has_f || (ra->has_type &&
                              ra->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)))
        return rt_onnx_plan_fail(r, nd, "attribute replaced_value_float: not a float");
    if (ra)
        rep = ra->f; /* NaN allowed: replaces the missing values */
    if (n_iv != 1 && n_iv != c)
        return rt_onnx_plan_fail(r, nd, "attribute imputed_value_floats: %zu values for %zu "
                                 "columns (1 or %zu)", n_iv, c, c);
    if ((st = rt_onnx_plan_batch_shape(r, nd, out, 2, x->dims)) || (st = rt_onnx_plan_step(r, &s)))
        return st;
    s->op = RT_ONNX_IMPUTER;
    s->alpha = rep;
    if (!(s->w = malloc(c * sizeof(float))))
        return rt_err_set(r->err, RT_ERR_NOMEM, "%s: out of memory", r->file);
    for (size_t j = 0; j < c; j++)
        s->w[j] = iv[n_iv == 1 ? 0 : j];
    return RT_OK;
}

/* ai.onnx.ml.OneHotEncoder: [N, C] -> [N, C, m], of integer categories
 * (cats_int64s, a float input) or string ones (cats_strings, a string
 * input: each category becomes its index in the input's vocabulary) */
static rt_status plan_ml_onehot(reader *r, const Onnx__NodeProto *nd, size_t in0,
                                const rt_onnx_val *x, size_t c, rt_onnx_val *out)
{
    rt_status st;
    rt_onnx_step *s;
    const int64_t *cats;
    const ProtobufCBinaryData *scats;
    size_t m, ms;
    int64_t zeros;
    if ((st = rt_onnx_plan_ints(r, nd, "cats_int64s", &cats, &m)) ||
        (st = rt_onnx_plan_strings(r, nd, "cats_strings", &scats, &ms)) ||
        (st = rt_onnx_plan_int(r, nd, "zeros", 1, &zeros)))
        return st;
    if (m && ms)
        return rt_onnx_plan_fail(r, nd, "attributes cats_int64s and cats_strings: only one "
                                 "may list the categories");
    const char *attr = x->strings ? "cats_strings" : "cats_int64s";
    if ((x->strings ? ms : m) == 0)
        return rt_onnx_plan_fail(r, nd, "attribute %s: no categories (input 0 \"%.80s\" holds "
                                 "%s)", attr, x->name, x->strings ? "strings" : "numbers");
    m = x->strings ? ms : m;
    if (zeros != 0 && zeros != 1)
        return rt_onnx_plan_fail(r, nd, "attribute zeros: %" PRId64 " (0 or 1)", zeros);
    if (m > RT_ONNX_MAX_ROW / (c ? c : 1))
        return rt_onnx_plan_fail(r, nd, "%zu categories for %zu columns: too wide", m, c);
    int64_t dims[3] = {0, (int64_t)c, (int64_t)m};
    if ((st = rt_onnx_plan_batch_shape(r, nd, out, 3, dims)) || (st = rt_onnx_plan_step(r, &s)))
        return st;
    s->op = RT_ONNX_ONEHOT;
    s->m = m;
    s->strict = zeros == 0;
    if (!(s->w = malloc(m * sizeof(float))))
        return rt_err_set(r->err, RT_ERR_NOMEM, "%s: out of memory", r->file);
    rt_onnx_val *voc = x->strings ? rt_onnx_str_root(r, in0) : NULL;
    for (size_t j = 0; j < m; j++) {
        if (voc) {
            size_t idx;
            if ((st = rt_onnx_str_intern(r, nd, attr, voc, scats[j].data, scats[j].len, &idx)))
                return st;
            s->w[j] = (float)idx;
            continue;
        }
        if (cats[j] > (1 << 24) || cats[j] < -(1 << 24))
            return rt_onnx_plan_fail(r, nd, "cats_int64s[%zu]: %" PRId64 " is not exact as a "
                                     "float input", j, cats[j]);
        s->w[j] = (float)cats[j];
    }
    return RT_OK;
}

typedef struct kv {
    float k, v;
} kv;

static int kv_cmp(const void *a, const void *b)
{
    float x = ((const kv *)a)->k, y = ((const kv *)b)->k;
    return x < y ? -1 : x > y ? 1 : 0;
}

/* The keys or values of a LabelEncoder: the float attribute, or the int64
 * one (exact as floats), or the strings one (each its index in voc's
 * vocabulary: the input's for the keys, the output's for the values; voc
 * NULL: strings refused, the value being numbers); *n of them into out
 * (malloc'd). */
static rt_status labelenc_list(reader *r, const Onnx__NodeProto *nd, const char *what,
                               rt_onnx_val *voc, float **out, size_t *n)
{
    char fn[32], in[32], sn[32];
    const float *fv;
    const int64_t *iv;
    const ProtobufCBinaryData *sv;
    size_t nf, ni, ns;
    rt_status st;
    snprintf(fn, sizeof fn, "%s_floats", what);
    snprintf(in, sizeof in, "%s_int64s", what);
    snprintf(sn, sizeof sn, "%s_strings", what);
    if ((st = rt_onnx_plan_floats(r, nd, fn, &fv, &nf)) ||
        (st = rt_onnx_plan_ints(r, nd, in, &iv, &ni)) ||
        (st = rt_onnx_plan_strings(r, nd, sn, &sv, &ns)))
        return st;
    if (rt_onnx_plan_attr(nd, strcmp(what, "keys") ? "values_tensor" : "keys_tensor"))
        return rt_onnx_plan_fail(r, nd, "attribute %s_tensor: tensor %s are not read (%s, %s "
                                 "or %s)", what, what, fn, in, sn);
    if ((nf != 0) + (ni != 0) + (ns != 0) != 1)
        return rt_onnx_plan_fail(r, nd, "attributes %s, %s and %s: exactly one must list the "
                                 "%s", fn, in, sn, what);
    if (ns && !voc)
        return rt_onnx_plan_fail(r, nd, "attribute %s: string %s for %s", sn, what,
                                 strcmp(what, "keys") ? "a numeric output" : "an input of numbers");
    if (!ns && voc && !strcmp(what, "keys"))
        return rt_onnx_plan_fail(r, nd, "attribute %s: number keys for an input of strings "
                                 "(keys_strings)", nf ? fn : in);
    *n = nf ? nf : ni ? ni : ns;
    if (*n > RT_ONNX_MAX_ROW)
        return rt_onnx_plan_fail(r, nd, "attribute %s: %zu %s (at most %zu)",
                                 nf ? fn : ni ? in : sn, *n, what, (size_t)RT_ONNX_MAX_ROW);
    if (!(*out = malloc((*n ? *n : 1) * sizeof(float))))
        return rt_err_set(r->err, RT_ERR_NOMEM, "%s: out of memory", r->file);
    for (size_t k = 0; k < *n; k++) {
        if (ns) {
            size_t idx;
            if ((st = rt_onnx_str_intern(r, nd, sn, voc, sv[k].data, sv[k].len, &idx)))
                return st;
            (*out)[k] = (float)idx;
            continue;
        }
        if (ni && (iv[k] > (1 << 24) || iv[k] < -(1 << 24)))
            return rt_onnx_plan_fail(r, nd, "%s[%zu]: %" PRId64 " is not exact as a float", in, k,
                                     iv[k]);
        (*out)[k] = nf ? fv[k] : (float)iv[k];
    }
    return RT_OK;
}

/* ai.onnx.ml.LabelEncoder, opset 1: classes_strings maps a string to its
 * position (default_int64 when absent) or an int64 to the string at it
 * (default_string when out of range); the keys and values as opset 2's. */
static rt_status labelenc_v1(reader *r, const Onnx__NodeProto *nd, rt_onnx_val *xv,
                             rt_onnx_val *out, float **keys, float **vals, size_t *n)
{
    const ProtobufCBinaryData *cs;
    size_t m;
    rt_status st;
    if ((st = rt_onnx_plan_strings(r, nd, "classes_strings", &cs, &m)))
        return st;
    if (m == 0 || m > RT_ONNX_MAX_ROW)
        return rt_onnx_plan_fail(r, nd, "attribute classes_strings: %zu strings (1 to %zu)", m,
                                 (size_t)RT_ONNX_MAX_ROW);
    static const char *const v2[] = {"keys_strings", "keys_int64s", "keys_floats",
                                     "values_strings", "values_int64s", "values_floats"};
    for (size_t k = 0; k < sizeof v2 / sizeof v2[0]; k++)
        if (rt_onnx_plan_attr(nd, v2[k]))
            return rt_onnx_plan_fail(r, nd, "attribute %s: ai.onnx.ml opset 1's LabelEncoder "
                                     "has classes_strings", v2[k]);
    if (!(*keys = malloc(m * sizeof(float))) || !(*vals = malloc(m * sizeof(float))))
        return rt_err_set(r->err, RT_ERR_NOMEM, "%s: out of memory", r->file);
    *n = m;
    for (size_t k = 0; k < m; k++) {
        size_t idx;
        if ((st = rt_onnx_str_intern(r, nd, "classes_strings", xv->strings ? xv : out, cs[k].data,
                                     cs[k].len, &idx)))
            return st;
        (*keys)[k] = xv->strings ? (float)idx : (float)k;
        (*vals)[k] = xv->strings ? (float)k : (float)idx;
    }
    return RT_OK;
}

/* ai.onnx.ml.LabelEncoder: each value found among the keys becomes its
 * value, any other the default (default_float, default_int64 or
 * default_string by the values' type; ONNX's defaults -0.0, -1, "_Unused").
 * Strings in or out are indexes into a vocabulary (rt_onnx_str.c). */
static rt_status plan_ml_labelenc(reader *r, const Onnx__NodeProto *nd, size_t in0,
                                  const rt_onnx_val *x, rt_onnx_val *out)
{
    rt_status st;
    rt_onnx_step *s;
    float *keys = NULL, *vals = NULL, dflt = -1.0f;
    size_t nk = 0, nv = 0;
    int64_t di;
    char ds[4096];
    rt_onnx_val *xv = x->strings ? rt_onnx_str_root(r, in0) : NULL;
    bool v1 = r->o->ml_opset < 2;
    /* the output holds strings: opset 1 of numbers, or values_strings */
    bool out_str = v1 ? !x->strings : rt_onnx_plan_attr(nd, "values_strings") != NULL;
    if (!v1 && rt_onnx_plan_attr(nd, "classes_strings"))
        return rt_onnx_plan_fail(r, nd, "attribute classes_strings: opset 1's (this model "
                                 "imports ai.onnx.ml %" PRId64 ": keys_*, values_*)",
                                 r->o->ml_opset);
    const Onnx__AttributeProto *df = rt_onnx_plan_attr(nd, "default_float");
    if ((st = rt_onnx_plan_int(r, nd, "default_int64", -1, &di)) ||
        (st = rt_onnx_plan_string(r, nd, "default_string", "_Unused", ds, sizeof ds)))
        goto out;
    out->strings = out_str;
    if (v1) {
        if ((st = labelenc_v1(r, nd, xv ? xv : (rt_onnx_val *)x, out, &keys, &vals, &nk)))
            goto out;
        nv = nk;
    } else if ((st = labelenc_list(r, nd, "keys", xv, &keys, &nk)) ||
               (st = labelenc_list(r, nd, "values", out_str ? out : NULL, &vals, &nv)))
        goto out;
    if (df && (!df->has_f || !isfinite(df->f))) {
        st = rt_onnx_plan_fail(r, nd, "attribute default_float: not a finite float");
        goto out;
    }
    if (out_str) {
        size_t idx;
        if ((st = rt_onnx_str_intern(r, nd, "default_string", out, ds, strlen(ds), &idx)))
            goto out;
        dflt = (float)idx;
    } else {
        dflt = rt_onnx_plan_attr(nd, "values_floats") ? (df ? df->f : -0.0f) : (float)di;
    }
    if (nk != nv || nk == 0 || nk > RT_ONNX_MAX_ROW) {
        st = rt_onnx_plan_fail(r, nd, "attributes keys_* and values_*: %zu keys and %zu values "
                               "(one value per key)", nk, nv);
        goto out;
    }
    kv *pairs = malloc(nk * sizeof *pairs);
    if (!pairs) {
        st = rt_err_set(r->err, RT_ERR_NOMEM, "%s: out of memory", r->file);
        goto out;
    }
    for (size_t k = 0; k < nk; k++)
        pairs[k] = (kv){keys[k], vals[k]};
    qsort(pairs, nk, sizeof *pairs, kv_cmp); /* NaN keys: not found (refused below) */
    for (size_t k = 0; k < nk && !st; k++)
        if (xv && k && pairs[k].k == pairs[k - 1].k) /* a string key: its index */
            st = rt_onnx_plan_fail(r, nd, "attribute %s: \"%.80s\" listed twice",
                                   v1 ? "classes_strings" : "keys_strings",
                                   xv->names[(size_t)pairs[k].k]);
        else if (isnan(pairs[k].k) || (k && pairs[k].k == pairs[k - 1].k))
            st = rt_onnx_plan_fail(r, nd, "keys: %g is NaN or listed twice",
                                   (double)pairs[k].k);
    if (!st && !(st = rt_onnx_plan_batch_shape(r, nd, out, x->rank, x->dims)) &&
        !(st = rt_onnx_plan_step(r, &s))) {
        s->op = RT_ONNX_LABELENC;
        s->m = nk;
        s->alpha = dflt;
        for (size_t k = 0; k < nk; k++) {
            keys[k] = pairs[k].k;
            vals[k] = pairs[k].v;
        }
        s->w = keys;
        s->b = vals;
        keys = vals = NULL;
    }
    free(pairs);
out:
    free(keys);
    free(vals);
    return st;
}

/* ai.onnx.ml.ZipMap: the scores keyed by the labels (the input's bytes) */
static rt_status plan_ml_zipmap(reader *r, const Onnx__NodeProto *nd, size_t in0,
                                const rt_onnx_val *x, rt_onnx_val *out)
{
    rt_status st;
    size_t n;
    char sb[96];
    if ((st = rt_onnx_plan_labels(r, nd, "classlabels_int64s", out, &n)))
        return st;
    if (x->rank != 2 || (size_t)x->dims[1] != n)
        return rt_onnx_plan_fail(r, nd, "input 0 \"%.80s\": shape %s for %zu class labels",
                                 x->name, rt_onnx_plan_shape_str(x, sb, sizeof sb), n);
    if ((st = rt_onnx_plan_batch_shape(r, nd, out, 2, x->dims)))
        return st;
    out->alias = x->alias >= 0 ? x->alias : (long)in0;
    out->zipmap = true;
    return RT_OK;
}

static const struct {
    const char *op;
    const char *const *attrs;
    bool two;
} ml_ops[] = {
    {"Scaler", (const char *const[]){"offset", "scale", NULL}, false},
    {"LinearRegressor",
     (const char *const[]){"coefficients", "intercepts", "targets", "post_transform", NULL},
     false},
    {"LinearClassifier",
     (const char *const[]){"coefficients", "intercepts", "classlabels_ints",
                           "classlabels_strings", "multi_class", "post_transform", NULL},
     true},
    {"Normalizer", (const char *const[]){"norm", NULL}, false},
    {"Imputer",
     (const char *const[]){"imputed_value_floats", "imputed_value_int64s",
                           "replaced_value_float", "replaced_value_int64", NULL},
     false},
    {"OneHotEncoder", (const char *const[]){"cats_int64s", "cats_strings", "zeros", NULL}, false},
    {"ZipMap", (const char *const[]){"classlabels_int64s", "classlabels_strings", NULL}, false},
    {"LabelEncoder",
     (const char *const[]){"keys_floats", "keys_int64s", "keys_strings", "keys_tensor",
                           "values_floats", "values_int64s", "values_strings", "values_tensor",
                           "default_float", "default_int64", "default_string", "default_tensor",
                           "classes_strings", NULL},
     false},
    {"TreeEnsembleClassifier", NULL, true},
    {"TreeEnsembleRegressor", NULL, false},
};

static long ml_row(const char *op)
{
    for (size_t i = 0; i < sizeof ml_ops / sizeof ml_ops[0]; i++)
        if (strcmp(op, ml_ops[i].op) == 0)
            return (long)i;
    return -1;
}

bool rt_onnx_ml_known(const char *op)
{
    return ml_row(op) >= 0;
}

bool rt_onnx_ml_two_outputs(const char *op)
{
    long i = ml_row(op);
    return i >= 0 && ml_ops[i].two;
}

rt_status rt_onnx_ml_plan(reader *r, const Onnx__NodeProto *nd, const char *op, size_t *in,
                          size_t n_in, rt_onnx_val *out)
{
    rt_status st;
    char sb[96];
    long row = ml_row(op);
    if (row < 0)
        return rt_onnx_plan_fail(r, nd, "not an ai.onnx.ml operator read here");
    if ((st = rt_onnx_plan_need_in(r, nd, n_in, 1, 1)))
        return st;
    const rt_onnx_val *x = &r->o->vals[in[0]];
    if (ml_ops[row].attrs && (st = rt_onnx_plan_only_attrs(r, nd, ml_ops[row].attrs)))
        return st;
    if ((st = rt_onnx_plan_want_batch(r, nd, 0, x)))
        return st;
    if (ml_ops[row].two && (nd->n_output != 2 || r->n_out != 2))
        return rt_onnx_plan_fail(r, nd, "%zu outputs (2 expected: the label, the scores)",
                                 nd->n_output);
    if (x->rank != 2)
        return rt_onnx_plan_fail(r, nd, "input 0 \"%.80s\": shape %s: a [N, C] input is needed",
                                 x->name, rt_onnx_plan_shape_str(x, sb, sizeof sb));
    if ((x->names && !x->strings) || x->zipmap)
        return rt_onnx_plan_fail(r, nd, "input 0 \"%.80s\": a label or a map, not numbers",
                                 x->name);
    size_t c = (size_t)x->dims[1];
    switch (op[0]) {
    case 'S': return plan_ml_scaler(r, nd, x, c, out);
    case 'N':
    case 'I': return plan_ml_rowwise(r, nd, op, x, c, out);
    case 'L':
        if (op[1] == 'a')
            return plan_ml_labelenc(r, nd, in[0], x, out);
        return op[6] == 'C' ? plan_ml_lincls(r, nd, c) : plan_ml_linear(r, nd, c, out);
    case 'O': return plan_ml_onehot(r, nd, in[0], x, c, out);
    case 'Z': return plan_ml_zipmap(r, nd, in[0], x, out);
    case 'T': return rt_onnx_trees_plan(r, nd, op[12] == 'C', x);
    default: return op[6] == 'C' ? plan_ml_lincls(r, nd, c) : plan_ml_linear(r, nd, c, out);
    }
}

/* ------------------------------------------------------- running */

static void lincls_row(const rt_onnx_step *s, float *raw, float *z, float *label)
{
    if (s->m == 1) {
        float v = raw[0];
        if (s->post == RT_ONNX_POST_LOGISTIC) {
            z[0] = 1.0f - 1.0f / (1.0f + expf(-v)); /* logistic(-v), as z[1]'s complement */
            z[1] = 1.0f / (1.0f + expf(-v));
        } else {
            z[0] = -v;
            z[1] = v;
            if (s->post != RT_ONNX_POST_NONE)
                rt_onnx_trees_post(s->post, z, 2);
        }
        *label = v > 0 ? 1.0f : 0.0f;
        return;
    }
    size_t best = 0;
    for (size_t k = 1; k < s->m; k++)
        if (raw[k] > raw[best])
            best = k;
    *label = (float)best;
    memcpy(z, raw, s->m * sizeof(float));
    rt_onnx_trees_post(s->post, z, s->m);
}

rt_status rt_onnx_ml_run(const rt_onnx_step *s, size_t n, const float *x, size_t in_row, float *y,
                         size_t out_row, float *label)
{
    switch (s->op) {
    case RT_ONNX_TREES:
        return rt_onnx_trees_run(s->trees, n, x, in_row, y, label);
    case RT_ONNX_LINCLS: {
        float raw[2], *buf = s->m <= 2 ? raw : malloc(s->m * sizeof(float));
        if (!buf)
            return RT_ERR_NOMEM;
        for (size_t i = 0; i < n; i++) {
            rt_dense_rows(x + i * in_row, 1, s->k, s->w, s->b, s->m, buf);
            float lab;
            lincls_row(s, buf, y + i * out_row, &lab);
            if (label)
                label[i] = lab;
        }
        if (buf != raw)
            free(buf);
        return RT_OK;
    }
    case RT_ONNX_NORMALIZER:
        for (size_t i = 0; i < n; i++) {
            const float *xr = x + i * in_row;
            float *yr = y + i * out_row;
            double d = 0;
            for (size_t c = 0; c < in_row; c++) {
                double v = xr[c];
                if (s->sub == 'M')
                    d = c == 0 || v > d ? v : d;
                else
                    d += s->sub == '1' ? fabs(v) : v * v;
            }
            if (s->sub == '2')
                d = sqrt(d);
            for (size_t c = 0; c < in_row; c++)
                yr[c] = d != 0 ? (float)(xr[c] / d) : xr[c];
        }
        return RT_OK;
    case RT_ONNX_IMPUTER:
        for (size_t i = 0; i < n; i++)
            for (size_t c = 0; c < in_row; c++) {
                float v = x[i * in_row + c];
                bool rep = isnan(s->alpha) ? isnan(v) : v == s->alpha;
                y[i * out_row + c] = rep ? s->w[c] : v;
            }
        return RT_OK;
    case RT_ONNX_LABELENC:
        for (size_t e = 0; e < n * in_row; e++) {
            float v = x[e];
            size_t lo = 0, hi = s->m;
            while (lo < hi) { /* the first key >= v */
                size_t mid = lo + (hi - lo) / 2;
                if (s->w[mid] < v)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            y[e] = lo < s->m && s->w[lo] == v ? s->b[lo] : s->alpha;
        }
        return RT_OK;
    case RT_ONNX_ONEHOT:
        for (size_t i = 0; i < n; i++)
            for (size_t c = 0; c < in_row; c++) {
                float v = x[i * in_row + c], *yr = y + i * out_row + c * s->m;
                float t = isfinite(v) ? truncf(v) : NAN;
                for (size_t j = 0; j < s->m; j++)
                    yr[j] = t == s->w[j] ? 1.0f : 0.0f;
            }
        return RT_OK;
    default:
        return RT_ERR_INVALID;
    }
}
