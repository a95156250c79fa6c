/*
 * rt_onnx_run.c — runs an ONNX model's plan (rt_onnx_read.c) for a batch,
 * and describes the model to the rest of predictd as a ModelDef.
 *
 * Batch invariance: every step computes each instance's row from that row
 * alone: Gemm and MatMul with rt_dense_rows (each output summed in a fixed
 * order, no fused multiply-add: rt_dense.c), the element-wise operators and
 * softmax row by row, so an instance's outputs have the same bits alone or
 * in any batch.
 *
 * The ModelDef: one float raw column per graph input (the instance gives
 * its k numbers as a list) or, when serving.json maps the input to
 * features ({"inputs": {"x": ["age", ...]}}), one per named feature; numeric
 * feature columns over them (a string input: string raw columns and
 * vocabulary-list columns over its vocabulary, whose ids are its values); a LinearRegressor head with label_dimension
 * the outputs' widths summed, whose weights are zeros nobody reads:
 * rt_forward runs the ONNX graph in place of the linear part (its logits are
 * the outputs, predictions the same).
 */
#include "rt_model.h"
#include "rt_model_internal.h"
#include "onnx.pb-c.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

/* ------------------------------------------------------- kernels */

static rt_status run_step(const rt_onnx_step *s, size_t n, const rt_onnx_val *vals,
                          float *const *ptr)
{
    const rt_onnx_val *ov = &vals[s->out];
    float *y = ptr[s->out];
    size_t row = ov->row;
    const float *x = ptr[s->in[0]];
    switch (s->op) {
    case RT_ONNX_DENSE:
        rt_dense_rows(x, n, s->k, s->w, s->b, s->m, y);
        break;
    case RT_ONNX_BINARY: {
        const rt_onnx_val *va = &vals[s->in[0]], *vb = &vals[s->in[1]];
        const float *a = ptr[s->in[0]], *b = ptr[s->in[1]];
        for (size_t i = 0; i < n; i++) {
            const float *ar = va->batch ? a + i * va->row : a;
            const float *br = vb->batch ? b + i * vb->row : b;
            float *yr = y + i * row;
            const uint32_t *ma = s->map[0], *mb = s->map[1];
            switch (s->sub) {
            case '+':
                for (size_t e = 0; e < row; e++)
                    yr[e] = ar[ma[e]] + br[mb[e]];
                break;
            case '-':
                for (size_t e = 0; e < row; e++)
                    yr[e] = ar[ma[e]] - br[mb[e]];
                break;
            case '*':
                for (size_t e = 0; e < row; e++)
                    yr[e] = ar[ma[e]] * br[mb[e]];
                break;
            default:
                for (size_t e = 0; e < row; e++)
                    yr[e] = ar[ma[e]] / br[mb[e]];
                break;
            }
        }
        break;
    }
    case RT_ONNX_RELU:
        for (size_t e = 0; e < n * row; e++) /* NaN stays NaN, as torch.relu */
            y[e] = x[e] < 0.0f ? 0.0f : x[e];
        break;
    case RT_ONNX_LEAKY:
        for (size_t e = 0; e < n * row; e++)
            y[e] = x[e] < 0.0f ? x[e] * s->alpha : x[e];
        break;
    case RT_ONNX_SIGMOID:
    case RT_ONNX_TANH:
        memcpy(y, x, n * row * sizeof(float));
        rt_activate(s->op == RT_ONNX_SIGMOID ? PREDICTD__ACTIVATION__ACT_SIGMOID
                                             : PREDICTD__ACTIVATION__ACT_TANH,
                    y, n * row);
        break;
    case RT_ONNX_SOFTMAX:
    case RT_ONNX_LOGSOFTMAX:
        for (size_t i = 0; i < n; i++)
            for (size_t p = 0; p < s->outer; p++)
                for (size_t q = 0; q < s->inner; q++) {
                    size_t base = i * row + p * s->axis * s->inner + q, st = s->inner;
                    float mx = -INFINITY;
                    for (size_t a = 0; a < s->axis; a++)
                        mx = x[base + a * st] > mx ? x[base + a * st] : mx;
                    float sum = 0.0f;
                    for (size_t a = 0; a < s->axis; a++)
                        sum += expf(x[base + a * st] - mx);
                    if (s->op == RT_ONNX_SOFTMAX) {
                        for (size_t a = 0; a < s->axis; a++)
                            y[base + a * st] = expf(x[base + a * st] - mx) / sum;
                    } else {
                        float ls = logf(sum);
                        for (size_t a = 0; a < s->axis; a++)
                            y[base + a * st] = x[base + a * st] - mx - ls;
                    }
                }
        break;
    case RT_ONNX_CONCAT:
        for (size_t i = 0; i < n; i++) {
            float *yr = y + i * row;
            for (size_t p = 0; p < s->outer; p++)
                for (size_t k = 0; k < s->n_in; k++) {
                    const rt_onnx_val *v = &vals[s->in[k]];
                    size_t part = v->row / s->outer;
                    memcpy(yr, ptr[s->in[k]] + i * v->row + p * part, part * sizeof(float));
                    yr += part;
                }
        }
        break;
    case RT_ONNX_AFFINE:
        for (size_t i = 0; i < n; i++)
            for (size_t c = 0; c < s->outer; c++)
                for (size_t q = 0; q < s->inner; q++) {
                    size_t e = i * row + c * s->inner + q;
                    y[e] = x[e] * s->w[c] + s->b[c];
                }
        break;
    case RT_ONNX_SCALER:
        for (size_t i = 0; i < n; i++)
            for (size_t c = 0; c < row; c++)
                y[i * row + c] = (x[i * row + c] - s->w[c]) * s->b[c];
        break;
    case RT_ONNX_ALIAS:
        break;
    case RT_ONNX_TREES:
    case RT_ONNX_LINCLS:
    case RT_ONNX_NORMALIZER:
    case RT_ONNX_IMPUTER:
    case RT_ONNX_ONEHOT:
    case RT_ONNX_LABELENC:
        return rt_onnx_ml_run(s, n, x, vals[s->in[0]].row, y, row,
                              (s->op == RT_ONNX_TREES || s->op == RT_ONNX_LINCLS) &&
                                      s->out2 != SIZE_MAX
                                  ? ptr[s->out2]
                                  : NULL);
    }
    return RT_OK;
}

/* A OneHotEncoder of zeros = 0: as ONNX Runtime, an instance whose value
 * is none of the categories is refused (its row of the output all zeros). */
static rt_status onehot_known(const rt_onnx *o, const rt_onnx_step *s, size_t n,
                              float *const *ptr, rt_err *err)
{
    const rt_onnx_val *x = &o->vals[s->in[0]];
    const float *y = ptr[s->out];
    for (size_t i = 0; i < n; i++)
        for (size_t c = 0; c < x->row; c++) {
            const float *yr = y + (i * x->row + c) * s->m;
            bool hit = false;
            for (size_t j = 0; j < s->m && !hit; j++)
                hit = yr[j] != 0.0f;
            if (!hit)
                return rt_err_set(err, RT_ERR_INVALID, "instances[%zu]: input \"%s\"[%zu]: "
                                  "not one of the categories of OneHotEncoder \"%s\" (its zeros "
                                  "attribute is 0: an unknown category is refused)", i, x->name,
                                  c, s->node && s->node[0] ? s->node : "(unnamed)");
        }
    return RT_OK;
}

rt_status rt_onnx_run_inputs(const rt_onnx *o, const rt_features *f, float *const *ptr,
                             rt_err *err)
{
    rt_status st = RT_OK;
    size_t n = f->n;
    for (size_t i = 0; i < o->n_inputs && !st; i++) {
        const rt_onnx_val *val = &o->vals[o->inputs[i]];
        float *dst = ptr[o->inputs[i]];
        for (size_t r = 0; r < n && val->strings; r++) /* each column's one text, by id */
            for (size_t c = 0; c < o->n_fcols[i] && !st; c++) {
                const rt_ids *ids = &f->ids[o->fcols[i][c]];
                uint32_t a = ids->offsets ? ids->offsets[r] : 0,
                         b = ids->offsets ? ids->offsets[r + 1] : 0;
                if (b - a > 1)
                    st = rt_err_set(err, RT_ERR_INVALID, "instances[%zu]: input \"%s\": %u "
                                    "strings for one element of a string tensor", r, val->name,
                                    b - a);
                /* a text of no id (not in the vocabulary, or empty): -1 */
                dst[r * val->row + c] = b > a ? (float)ids->ids[a] : -1.0f;
            }
        for (size_t r = 0; r < n && !val->strings; r++) {
            size_t w = 0;
            for (size_t c = 0; c < o->n_fcols[i]; c++) {
                size_t fc = o->fcols[i][c], wd = f->width[fc];
                if (!f->values[fc] || w + wd > val->row) {
                    st = rt_err_set(err, RT_ERR_INVALID, "input \"%s\": expected %zu values",
                                    val->name, val->row);
                    break;
                }
                memcpy(dst + r * val->row + w, f->values[fc] + r * wd, wd * sizeof(float));
                w += wd;
            }
            if (!st && w != val->row)
                st = rt_err_set(err, RT_ERR_INVALID, "input \"%s\": %zu values, expected %zu",
                                val->name, w, val->row);
            if (st)
                break;
        }
    }
    return st;
}

rt_status rt_onnx_run_steps(const rt_onnx *o, size_t n, float *const *ptr, rt_err *err)
{
    rt_status st = RT_OK;
    for (size_t k = 0; k < o->n_steps && !st; k++) {
        if (run_step(&o->steps[k], n, o->vals, ptr) != RT_OK)
            return rt_err_set(err, RT_ERR_NOMEM, "model.onnx: step %zu: out of memory", k);
        if (o->steps[k].strict)
            st = onehot_known(o, &o->steps[k], n, ptr, err);
    }
    return st;
}

void rt_onnx_run_logits(const rt_onnx *o, size_t n, float *const *ptr, float *logits)
{
    if (o->ml_probs) { /* an ai.onnx.ml classifier: its scores as they are */
        memcpy(logits, ptr[o->ml_scores], n * o->n_classes * sizeof(float));
        return;
    }
    if (o->n_classes) { /* a classifier's logits: the softmax's input */
        const float *z = ptr[o->classifier_logits];
        size_t c = o->n_classes;
        for (size_t r = 0; r < n; r++) {
            if (c == 2)
                logits[r] = z[r * 2 + 1] - z[r * 2];
            else
                memcpy(logits + r * c, z + r * c, c * sizeof(float));
        }
        return;
    }
    size_t off = 0;
    for (size_t q = 0; q < o->n_outputs; q++) {
        const rt_onnx_val *val = &o->vals[o->outputs[q]];
        const float *src = ptr[o->outputs[q]];
        for (size_t r = 0; r < n; r++)
            memcpy(logits + r * o->out_width + off, src + r * val->row, val->row * sizeof(float));
        off += val->row;
    }
}

rt_status rt_onnx_forward(const rt_onnx *o, const rt_features *f, rt_workspace *ws, float *logits,
                          rt_err *err)
{
    size_t n = f->n;
    float **ptr = calloc(o->n_vals ? o->n_vals : 1, sizeof *ptr);
    if (!ptr)
        return rt_err_set(err, RT_ERR_NOMEM, "model.onnx: out of memory");
    rt_status st = RT_OK;
    for (size_t v = 0; v < o->n_vals && !st; v++) {
        const rt_onnx_val *val = &o->vals[v];
        if (!val->batch) {
            ptr[v] = val->cdata; /* integer constants are read only at load */
            continue;
        }
        if (val->alias >= 0) {
            ptr[v] = ptr[val->alias];
            continue;
        }
        if (val->row && n > SIZE_MAX / sizeof(float) / val->row) {
            st = rt_err_set(err, RT_ERR_LIMIT, "batch of %zu instances too large", n);
            break;
        }
        if (!(ptr[v] = rt_workspace_scratch(ws, v, n, val->row)))
            st = rt_err_set(err, RT_ERR_NOMEM, "model.onnx: workspace for %zu x %zu values", n,
                            val->row);
    }
    if (!st)
        st = rt_onnx_run_inputs(o, f, ptr, err);
    if (!st)
        st = rt_onnx_run_steps(o, n, ptr, err);
    if (!st)
        rt_onnx_run_logits(o, n, ptr, logits);
    free(ptr);
    return st;
}

/* ------------------------------------------------------- the ModelDef */

#define FILE_M "model.onnx"
#define FILE_S "serving.json"
#define NOMEM(err) rt_err_set(err, RT_ERR_NOMEM, "%s: out of memory", FILE_M)

/* A feature column over raw input name: numeric of width values, or, for
 * a string input (voc non-NULL), a vocabulary list of voc's names whose
 * texts outside it get no id (rt_onnx_forward reads that as -1). */
static rt_status add_col(cJSON *cols, cJSON *fcs, cJSON *names, const char *name, size_t width,
                         const rt_onnx_val *voc, rt_err *err)
{
    cJSON *c = cJSON_CreateObject(), *fc = cJSON_CreateObject();
    if (!c || !cJSON_AddItemToArray(cols, c) || !fc || !cJSON_AddItemToArray(fcs, fc) ||
        !cJSON_AddItemToArray(names, cJSON_CreateString(name)) ||
        !cJSON_AddStringToObject(c, "name", name) ||
        !cJSON_AddStringToObject(c, "type", voc ? "string" : "float") ||
        !cJSON_AddStringToObject(fc, "key", name))
        return NOMEM(err);
    if (voc) {
        cJSON *list = cJSON_AddArrayToObject(fc, "vocabulary_list");
        if (!list || !cJSON_AddStringToObject(fc, "type", "categorical_column_with_vocabulary_list"))
            return NOMEM(err);
        for (size_t k = 0; k < voc->n_names; k++)
            if (!cJSON_AddItemToArray(list, cJSON_CreateString(voc->names[k])))
                return NOMEM(err);
        return RT_OK;
    }
    if (!cJSON_AddStringToObject(fc, "type", "numeric_column") ||
        (width != 1 && !cJSON_AddNumberToObject(fc, "shape", (double)width)))
        return NOMEM(err);
    return RT_OK;
}

/* A tree ensemble or an Imputer of NaN reads NaN as a missing value: an
 * absent feature is NaN (ONNX Runtime's missing value) instead of an error.
 * false: out of memory. */
static bool nan_defaults(const rt_onnx *o, Predictd__ModelDef *def)
{
    bool nan_missing = false;
    for (size_t k = 0; k < o->n_steps; k++)
        nan_missing |= o->steps[k].op == RT_ONNX_TREES ||
                       (o->steps[k].op == RT_ONNX_IMPUTER && isnan(o->steps[k].alpha));
    for (size_t c = 0; nan_missing && c < def->n_feature_columns; c++) {
        Predictd__FeatureColumn *fc = def->feature_columns[c];
        size_t w = fc->shape ? fc->shape : 1;
        if (fc->n_default_value || fc->n_vocabulary)
            continue;
        if (!(fc->default_value = malloc(w * sizeof(float))))
            return false;
        for (size_t k = 0; k < w; k++)
            fc->default_value[k] = NAN;
        fc->n_default_value = w;
    }
    return true;
}

/* Who wrote it: "pytorch 1.13.0 (ONNX opset 13)" (predict-model show).
 * false: out of memory. */
static bool set_producer(const rt_onnx *o, Predictd__ModelDef *def)
{
    Predictd__TrainingInfo *ti = def->training;
    if (!ti && (ti = malloc(sizeof *ti)) != NULL) {
        predictd__training_info__init(ti);
        def->training = ti;
    }
    char prod[256];
    const Onnx__ModelProto *mp = o->proto;
    snprintf(prod, sizeof prod, "%.100s%s%.60s (ONNX opset %lld)",
             mp->producer_name && mp->producer_name[0] ? mp->producer_name : "an ONNX exporter",
             mp->producer_version && mp->producer_version[0] ? " " : "",
             mp->producer_version ? mp->producer_version : "", (long long)o->opset);
    return ti && (ti->producer = strdup(prod)) != NULL;
}

/* A label value's names as a JSON array (NULL: out of memory). */
static cJSON *label_names(const rt_onnx_val *lv)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t k = 0; a && k < lv->n_names; k++)
        if (!cJSON_AddItemToArray(a, cJSON_CreateString(lv->names[k]))) {
            cJSON_Delete(a);
            return NULL;
        }
    return a;
}

rt_status rt_onnx_to_modeldef(rt_onnx *o, const char *serving_json, size_t serving_len,
                              Predictd__ModelDef **out, rt_err *err)
{
    *out = NULL;
    cJSON *serving = NULL, *spec = cJSON_CreateObject();
    const cJSON *inputs = NULL, *classes = NULL;
    rt_status st = RT_OK;
    if (!spec)
        return NOMEM(err);
    if (serving_json) {
        st = rt_xgb_json_parse(FILE_S, serving_json, serving_len, &serving, err);
        if (!st)
            st = rt_xgb_json_member(FILE_S, serving, "", "inputs", cJSON_Object, false, &inputs, err);
        if (!st)
            st = rt_xgb_json_member(FILE_S, serving, "", "classes", cJSON_Array, false, &classes,
                                    err);
        for (const cJSON *k = serving ? serving->child : NULL; k && !st; k = k->next)
            if (strcmp(k->string, "inputs") != 0 && strcmp(k->string, "classes") != 0)
                st = rt_err_set(err, RT_ERR_INVALID, "%s: %s: unknown key (an ONNX model's "
                                "serving.json has \"inputs\" and \"classes\")", FILE_S,
                                k->string);
        if (!st && classes && (!o->n_classes || (size_t)cJSON_GetArraySize(classes) != o->n_classes))
            st = rt_err_set(err, RT_ERR_INVALID, "%s: classes: %d names, the network has %zu "
                            "classes%s", FILE_S, cJSON_GetArraySize(classes), o->n_classes,
                            o->n_classes ? "" : " (its one output is not a softmax)");
    }
    cJSON *ml_names = NULL; /* an ai.onnx.ml classifier's labels, as the classes */
    if (!st && !classes && o->ml_probs && o->ml_label != SIZE_MAX &&
        !(classes = ml_names = label_names(&o->vals[o->ml_label])))
        st = NOMEM(err);
    cJSON *cols = cJSON_AddArrayToObject(spec, "columns"),
          *fcs = cJSON_AddArrayToObject(spec, "feature_columns"),
          *est = cJSON_AddObjectToObject(spec, "estimator"),
          *label = cJSON_AddObjectToObject(spec, "label"),
          *names = est ? cJSON_AddArrayToObject(est, "feature_columns") : NULL,
          *lcols = label ? cJSON_AddArrayToObject(label, "columns") : NULL;
    if (!st && (!cols || !fcs || !est || !label || !names || !lcols))
        st = NOMEM(err);
    if (!st && !(o->n_fcols = calloc(o->n_inputs, sizeof *o->n_fcols)))
        st = NOMEM(err);
    if (!st && !(o->fcols = calloc(o->n_inputs, sizeof *o->fcols)))
        st = NOMEM(err);
    for (const cJSON *k = inputs ? inputs->child : NULL; k && !st; k = k->next) {
        bool found = false;
        for (size_t i = 0; i < o->n_inputs && !found; i++)
            found = strcmp(o->vals[o->inputs[i]].name, k->string) == 0;
        if (!found)
            st = rt_err_set(err, RT_ERR_INVALID, "%s: inputs.%s: the graph has no such input",
                            FILE_S, k->string);
    }
    size_t ncols = 0;
    for (size_t i = 0; i < o->n_inputs && !st; i++) {
        const rt_onnx_val *v = &o->vals[o->inputs[i]];
        const cJSON *list = inputs ? cJSON_GetObjectItemCaseSensitive(inputs, v->name) : NULL;
        if (list) {
            if (!cJSON_IsArray(list) || (size_t)cJSON_GetArraySize(list) != v->row || v->rank != 2) {
                st = rt_err_set(err, RT_ERR_INVALID, "%s: inputs.%s: a list of %zu feature "
                                "names is needed for a [N, %zu] input", FILE_S, v->name, v->row,
                                v->row);
                break;
            }
            if (!(o->fcols[i] = calloc(v->row ? v->row : 1, sizeof(size_t)))) {
                st = NOMEM(err);
                break;
            }
            for (const cJSON *e = list->child; e && !st; e = e->next) {
                if (!cJSON_IsString(e))
                    st = rt_err_set(err, RT_ERR_INVALID, "%s: inputs.%s: feature names are "
                                    "strings", FILE_S, v->name);
                else if (!(st = add_col(cols, fcs, names, e->valuestring, 1,
                                        v->strings ? v : NULL, err)))
                    o->fcols[i][o->n_fcols[i]++] = ncols++;
            }
        } else {
            if (!(o->fcols[i] = calloc(1, sizeof(size_t)))) {
                st = NOMEM(err);
                break;
            }
            if (v->strings && v->row != 1) {
                st = rt_err_set(err, RT_ERR_INVALID, "%s: graph.input \"%s\": a [N, %zu] "
                                "string input needs serving.json's \"inputs\" to name its %zu "
                                "features", serving ? FILE_S : FILE_M, v->name, v->row, v->row);
                break;
            }
            if (!(st = add_col(cols, fcs, names, v->name, v->row, v->strings ? v : NULL, err)))
                o->fcols[i][o->n_fcols[i]++] = ncols++;
        }
    }
    for (size_t j = 0; j < (o->n_classes ? 1 : o->out_width) && !st; j++) {
        char lab[48];
        snprintf(lab, sizeof lab, "onnx_label_%zu", j);
        cJSON *lc = cJSON_CreateObject();
        if (!lc || !cJSON_AddItemToArray(cols, lc) || !cJSON_AddStringToObject(lc, "name", lab) ||
            !cJSON_AddStringToObject(lc, "type", "float") ||
            !cJSON_AddItemToArray(lcols, cJSON_CreateString(lab)))
            st = NOMEM(err);
    }
    if (!st && o->n_classes) { /* one label column: "column", as a classifier's spec has it */
        cJSON_DeleteItemFromObject(label, "columns");
        if (!cJSON_AddStringToObject(label, "column", "onnx_label_0"))
            st = NOMEM(err);
    }
    if (!st && o->n_classes) {
        cJSON *v = classes ? cJSON_Duplicate(classes, 1) : NULL;
        if (!cJSON_AddStringToObject(est, "type", "LinearClassifier") ||
            !cJSON_AddNumberToObject(est, "n_classes", (double)o->n_classes) ||
            (classes && (!v || !cJSON_AddItemToObject(label, "vocabulary", v))))
            st = NOMEM(err);
    } else if (!st && (!cJSON_AddStringToObject(est, "type", "LinearRegressor") ||
                       !cJSON_AddNumberToObject(est, "label_dimension", (double)o->out_width)))
        st = NOMEM(err);
    Predictd__ModelDef *def = NULL;
    if (!st && (st = rt_spec_to_modeldef(spec, NULL, &def, err)) != RT_OK)
        rt_err_prefix(err, "%s%s: its inputs as a model spec", FILE_M, serving ? " with " FILE_S : "");
    cJSON_Delete(spec);
    cJSON_Delete(serving);
    cJSON_Delete(ml_names);
    if (st)
        return st;
    def->trim_strings = false; /* ONNX Runtime compares a string input's texts as given:
                                  " Private" is not "Private", "" is a category */
    if (def->n_feature_columns != ncols) {
        rt_spec_modeldef_free(def);
        return rt_err_set(err, RT_ERR_FORMAT, "%s: the inputs' spec did not come out as expected",
                          FILE_M);
    }
    /* a tree ensemble or an Imputer reads NaN as a missing value: an absent
     * feature is NaN (ONNX Runtime's missing value) instead of an error */
    if (!nan_defaults(o, def) || !set_producer(o, def)) {
        rt_spec_modeldef_free(def);
        return NOMEM(err);
    }
    /* the zeros rt_graph_build binds as the unused linear weights */
    size_t most = o->out_width;
    for (size_t i = 0; i < o->n_inputs; i++) {
        const rt_onnx_val *v = &o->vals[o->inputs[i]];
        size_t per = v->strings ? v->n_names : v->row; /* a vocabulary's weight rows */
        most = per * o->out_width > most ? per * o->out_width : most;
    }
    if (!(o->zeros = calloc(most, sizeof(float)))) {
        rt_spec_modeldef_free(def);
        return NOMEM(err);
    }
    o->n_zeros = most;
    *out = def;
    return RT_OK;
}

const float *rt_onnx_lookup(void *ctx, const char *name, uint64_t count, rt_err *err)
{
    const rt_onnx *o = ctx;
    if (count > o->n_zeros) {
        rt_err_set(err, RT_ERR_FORMAT, "%s: tensor \"%s\" of %llu values", FILE_M,
                   name ? name : "", (unsigned long long)count);
        return NULL;
    }
    return o->zeros;
}

rt_status rt_onnx_bind(rt_onnx *o, rt_graph *g, rt_err *err)
{
    size_t ld = o->n_classes == 2 ? 1 : o->n_classes ? o->n_classes : o->out_width;
    if (g->n_fcols < 1 || g->logits_dim != ld)
        return rt_err_set(err, RT_ERR_FORMAT, "%s: the graph does not match the network", FILE_M);
    if (o->ml_probs) /* the head reads the scores: one per class, binary too (rt_head.c) */
        g->logits_dim = o->n_classes;
    for (size_t i = 0; i < o->n_inputs; i++)
        for (size_t c = 0; c < o->n_fcols[i]; c++)
            if (o->fcols[i][c] >= g->n_fcols ||
                g->fcols[o->fcols[i][c]].type !=
                    (o->vals[o->inputs[i]].strings ? PREDICTD__COLUMN_TYPE__VOCABULARY_LIST
                                                   : PREDICTD__COLUMN_TYPE__NUMERIC))
                return rt_err_set(err, RT_ERR_FORMAT, "%s: input %zu: column %zu is not %s",
                                  FILE_M, i, c,
                                  o->vals[o->inputs[i]].strings ? "a vocabulary" : "numeric");
    g->onnx = o;
    return RT_OK;
}

bool rt_onnx_in_graph(const rt_graph *g, size_t *steps, size_t *classes)
{
    const rt_onnx *o = g ? g->onnx : NULL;
    if (steps)
        *steps = o ? o->n_steps : 0;
    if (classes)
        *classes = o ? o->n_classes : 0;
    return o != NULL;
}

size_t rt_onnx_run_output(const rt_graph *g, size_t q, rt_onnx_output *out)
{
    const rt_onnx *o = g ? g->onnx : NULL;
    if (!o)
        return 0;
    if (q >= o->n_outputs || !out)
        return o->n_outputs;
    const rt_onnx_val *v = &o->vals[o->outputs[q]];
    *out = (rt_onnx_output){
        .name = v->name, .kind = RT_ONNX_OUT_NONE, .rank = v->rank, .dims = v->dims};
    if (o->ml_probs) {
        const rt_onnx_val *lab = o->ml_label != SIZE_MAX ? &o->vals[o->ml_label] : NULL;
        out->labels_int = lab && lab->names_int;
        if (lab && o->outputs[q] == o->ml_label) {
            out->names = (const char *const *)lab->names;
            out->n_names = lab->n_names;
        }
        out->kind = o->outputs[q] == o->ml_label ? RT_ONNX_OUT_LABEL
                    : v->zipmap                  ? RT_ONNX_OUT_MAP
                                                 : RT_ONNX_OUT_SCORES;
        if (v->zipmap) {
            out->labels_int = v->names_int;
            out->names = (const char *const *)v->names;
            out->n_names = v->n_names;
        }
    } else if (o->n_classes) {
        out->kind = RT_ONNX_OUT_SCORES;
    } else {
        size_t off = 0;
        for (size_t k = 0; k < q; k++)
            off += o->vals[o->outputs[k]].row;
        out->kind = RT_ONNX_OUT_FLOATS;
        out->off = off;
        out->width = v->row;
    }
    return o->n_outputs;
}

const float *rt_onnx_run_labels(const rt_onnx *o, rt_workspace *ws, size_t n)
{
    if (!o || !ws || o->ml_label == SIZE_MAX || ws->mats_cap <= o->ml_label ||
        ws->mats[o->ml_label].width != 1 || ws->mats[o->ml_label].cap < n)
        return NULL;
    return ws->mats[o->ml_label].data;
}

bool rt_onnx_run_scores(const rt_graph *g)
{
    return g && g->onnx && g->onnx->ml_probs;
}
