/*
 * pm_eval.c — evaluating an export on labelled CSV files, as TensorFlow
 * Model Analysis does: the trainer's metrics (runtime/stats/rt_metrics.c, the same code
 * as predict-train's evaluation) overall and per slice, plus, for a binary
 * classifier, the ROC and precision-recall curves, a calibration plot with
 * the expected calibration error, the confusion matrix and a threshold
 * table; for a multi-class classifier the confusion matrix.
 *
 * Rows are read as the trainer reads them (rt_raw_csv_split, rt_raw_label,
 * rt_batch_push_cell: the spec's columns in file order, blank lines skipped,
 * empty cells taking the spec's defaults) in batches of batch_size, so
 * "loss" (the mean of the batch losses) equals the trainer's for the same
 * batch size. Each row also gets, per slice spec, the id of its slice (the
 * trimmed cells of the spec's columns), found in a hash table.
 */
#include "pm.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#define DEFAULT_BATCH 256

typedef struct slice_acc {
    rt_metrics *mt;
    size_t *pending; /* rows of the current batch */
    size_t n_pending, cap_pending;
    int touched;
} slice_acc;

typedef struct evaluator {
    const rt_graph *g;
    const Predictd__ModelDef *def;
    const pm_eval_opts *o;
    pm_eval *e;
    size_t ld, n_cols, bs;
    int loss_sum;       /* the spec's loss_reduction "SUM" */
    rt_loss loss;       /* the head's (a custom graph's regression loss) */
    long *input;        /* [n_cols] graph input or -1 (label, weight, unused) */
    size_t *label_cols; /* [ls] the label columns, in file order */
    size_t ls;          /* label values per row: label_dimension (regression), n_classes
                         * (multi-label: multi-hot) or 1 */
    int mlabel;         /* a multi-label head: one label cell lists the row's classes */
    long weight_col;    /* estimator.weight_column or -1 */
    size_t **spec_cols; /* [n_specs][e->specs[s].n_columns] raw column indexes */
    rt_batch *b;
    rt_features f;
    rt_workspace *ws;
    float *labels, *logits, *glabels, *glogits;
    float *weights, *gweights; /* NULL without a weight column */
    size_t *sid;         /* [n_specs][bs] slice ids of the batch's rows */
    slice_acc *acc;      /* [e->n_slices] */
    size_t acc_cap;
    size_t *touched;     /* slices with pending rows */
    size_t n_touched;
    pm_eval_keys keys;   /* the slices by their key */
    rt_metrics *all;
    const char *file;
    uint64_t first_line, last_line;
    pm_importance *imp; /* --importance, else NULL */
} evaluator;

/* ----------------------------------------------------------------- slices */

/* The slice of spec s the row at spans of buf falls in (*out), its
 * accumulator made when the slice is new. */
static rt_status slice_find(evaluator *v, size_t s, const char *buf, const rt_csv_span *spans,
                            size_t *out, rt_err *err)
{
    pm_eval *e = v->e;
    int added;
    rt_status st = pm_eval_keys_slice(&v->keys, e, s, v->spec_cols[s], buf, spans, out, &added,
                                      err);
    if (st || !added)
        return st;
    if (rt_grow(&v->acc, &v->acc_cap, e->n_slices, sizeof *v->acc) != 0)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    slice_acc *a = &v->acc[*out];
    memset(a, 0, sizeof *a);
    if (!(a->mt = rt_metrics_new(e->head, e->n_classes ? e->n_classes : v->ld)))
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    rt_metrics_set_loss(a->mt, &v->loss);
    return RT_OK;
}

/* ------------------------------------------------------------- batches */

static rt_status add_pending(slice_acc *a, size_t row)
{
    if (rt_grow(&a->pending, &a->cap_pending, a->n_pending + 1, sizeof *a->pending) != 0)
        return RT_ERR_NOMEM;
    a->pending[a->n_pending++] = row;
    return RT_OK;
}

/* Confusion matrix cell of one example: rows the label, columns the
 * predicted class (binary: logit > 0, as the accuracy counts it). */
static void confuse(evaluator *v, const float *z, float y)
{
    pm_eval *e = v->e;
    size_t pred;
    if (e->head == PREDICTD__HEAD_TYPE__HEAD_BINARY) {
        pred = z[0] > 0.0f;
        y = y > 0.5f ? 1.0f : 0.0f;
    } else {
        pred = 0;
        for (size_t j = 1; j < v->ld; j++)
            if (z[j] > z[pred])
                pred = j;
    }
    size_t lab = (size_t)y;
    if (lab < e->n_classes && pred < e->n_classes)
        e->confusion[lab * e->n_classes + pred]++;
}

/* A batch's loss as the trainer reports it: the mean per-example loss, times
 * the rows under loss_reduction SUM (trn_model.c's batch_loss). */
static double batch_loss(const evaluator *v, const float *logits, const float *labels,
                         const float *weights, size_t n)
{
    double l =
        rt_metrics_head_loss_with(v->e->head, &v->loss, v->ld, logits, labels, weights, n, n, NULL);
    /* SUM: every loss value, not their mean (multi-label: one per row) */
    double scale = (double)n * (v->mlabel ? 1.0 : (double)v->ls);
    return v->loss_sum && scale > 1 ? l * scale : l;
}

/* Runs the model on the batch and adds it to every accumulator. */
static rt_status flush(evaluator *v, rt_err *err)
{
    size_t n = rt_batch_size(v->b);
    if (n == 0)
        return RT_OK;
    pm_eval *e = v->e;
    rt_status st = rt_transform(v->g, v->b, &v->f, err);
    if (!st)
        st = rt_forward(v->g, &v->f, v->ws, v->logits, err);
    if (st) {
        rt_err_prefix(err, "%s:%llu-%llu", v->file, (unsigned long long)v->first_line,
                      (unsigned long long)v->last_line);
        return st;
    }
    double loss = batch_loss(v, v->logits, v->labels, v->weights, n);
    if ((st = rt_metrics_add(v->all, v->logits, v->labels, v->weights, n, loss)))
        return rt_err_set(err, st, "out of memory");
    if (e->confusion)
        for (size_t i = 0; i < n; i++)
            confuse(v, v->logits + i * v->ld, v->labels[i]);
    v->n_touched = 0;
    for (size_t s = 0; s < e->n_specs; s++) {
        for (size_t i = 0; i < n; i++) {
            size_t k = v->sid[s * v->bs + i];
            if (!v->acc[k].touched) {
                v->acc[k].touched = 1;
                v->touched[v->n_touched++] = k;
            }
            if (add_pending(&v->acc[k], i))
                return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        }
    }
    for (size_t t = 0; t < v->n_touched; t++) {
        slice_acc *a = &v->acc[v->touched[t]];
        for (size_t q = 0; q < a->n_pending; q++) {
            size_t i = a->pending[q];
            memcpy(v->glogits + q * v->ld, v->logits + i * v->ld, v->ld * sizeof(float));
            memcpy(v->glabels + q * v->ls, v->labels + i * v->ls, v->ls * sizeof(float));
            if (v->weights)
                v->gweights[q] = v->weights[i];
        }
        double l = batch_loss(v, v->glogits, v->glabels, v->gweights, a->n_pending);
        if ((st = rt_metrics_add(a->mt, v->glogits, v->glabels, v->gweights, a->n_pending, l)))
            return rt_err_set(err, st, "out of memory");
        a->n_pending = 0;
        a->touched = 0;
    }
    for (size_t i = 0; v->imp && i < n; i++) {
        const double *a;
        if ((st = pm_importance_row(v->imp, v->b, i, &a, err))) {
            rt_err_prefix(err, "%s:%llu-%llu: --importance", v->file,
                          (unsigned long long)v->first_line, (unsigned long long)v->last_line);
            return st;
        }
        for (size_t k = 0; k < e->n_inputs; k++)
            e->importance[k] += a[k];
        for (size_t s = 0; s < e->n_specs; s++) {
            pm_eval_slice *sl = &e->slices[v->sid[s * v->bs + i]];
            if (!sl->importance && !(sl->importance = calloc(e->n_inputs + 1, sizeof(double))))
                return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
            for (size_t k = 0; k < e->n_inputs; k++)
                sl->importance[k] += a[k];
        }
    }
    rt_batch_clear(v->b);
    rt_batch_set_missing(v->b, RT_MISSING_CSV_DEFAULT);
    return RT_OK;
}

static rt_status add_cells(evaluator *v, const char *buf, const rt_csv_span *spans,
                           rt_err *err);

/* One CSV row (line end removed) into the batch. */
static rt_status add_row(evaluator *v, const char *line, size_t len, char *buf,
                         rt_csv_span *spans, rt_err *err)
{
    long nf = rt_raw_csv_split(line, len, buf, spans, v->n_cols, err);
    if (nf < 0)
        return RT_ERR_INVALID;
    if ((size_t)nf != v->n_cols)
        return rt_err_set(err, RT_ERR_INVALID, "%ld fields, the spec has %zu columns", nf,
                          v->n_cols);
    return add_cells(v, buf, spans, err);
}

/* One row's cells (a CSV row's or a tf.Example's) into the batch. */
static rt_status add_cells(evaluator *v, const char *buf, const rt_csv_span *spans,
                           rt_err *err)
{
    pm_eval *e = v->e;
    size_t idx = rt_batch_size(v->b);
    rt_status st = RT_OK;
    if (v->mlabel) { /* the cell's classes -> ls multi-hot values */
        rt_csv_span sp = spans[v->label_cols[0]];
        if ((st = rt_metrics_mlabel_cell(v->def->head, v->def->trim_strings, buf + sp.off,
                                         sp.len, &v->labels[idx * v->ls], err)))
            rt_err_prefix(err, "label %s", v->def->raw_columns[v->label_cols[0]]->name);
    }
    for (size_t k = 0; k < v->ls && !st && !v->mlabel; k++) {
        rt_csv_span sp = spans[v->label_cols[k]];
        st = rt_raw_label(v->def, v->label_cols[k], buf + sp.off, sp.len,
                          &v->labels[idx * v->ls + k], err);
    }
    if (!st && v->weights)
        st = rt_raw_weight(v->def, (size_t)v->weight_col, buf + spans[v->weight_col].off,
                           spans[v->weight_col].len, &v->weights[idx], err);
    if (st)
        return st;
    if ((st = rt_batch_add(v->b, &idx)))
        return rt_err_set(err, st, "out of memory");
    for (size_t j = 0; j < v->n_cols; j++) {
        if (v->input[j] < 0)
            continue;
        st = rt_batch_push_cell(v->b, idx, v->input[j], v->def->raw_columns[j], j,
                              buf + spans[j].off, spans[j].len, err);
        if (st)
            return st;
    }
    for (size_t s = 0; s < e->n_specs; s++)
        if ((st = slice_find(v, s, buf, spans, &v->sid[s * v->bs + idx], err)))
            return st;
    e->examples++;
    return RT_OK;
}

/* A TFRecord file of tf.Example (plain or gzip): record k is row k. */
static rt_status read_records(evaluator *v, const char *path, rt_err *err)
{
    rt_tfrecord *r = NULL;
    rt_buf text;
    rt_buf_init(&text);
    rt_csv_span *spans = calloc(v->n_cols ? v->n_cols : 1, sizeof *spans);
    rt_status st = spans ? rt_tfrecord_open(path, 0, 0, &r, err)
                         : rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    v->file = path;
    while (st == RT_OK) {
        const uint8_t *d;
        size_t len;
        st = rt_tfrecord_next(r, &d, &len, err);
        if (st == RT_ERR_NOTFOUND) {
            st = RT_OK;
            break;
        }
        if (st)
            break;
        uint64_t recno = rt_tfrecord_index(r);
        if (rt_batch_size(v->b) == 0)
            v->first_line = recno;
        v->last_line = recno;
        st = rt_example_to_row(v->def, d, len, 1, &text, spans, NULL, err);
        if (st == RT_OK)
            st = add_cells(v, text.data, spans, err);
        if (st) {
            rt_err_prefix(err, "%s: record %llu", path, (unsigned long long)recno);
            break;
        }
        if (rt_batch_size(v->b) == v->bs)
            st = flush(v, err);
    }
    rt_tfrecord_close(r);
    rt_buf_free(&text);
    free(spans);
    return st;
}

/* One CSV row into the batch (pm_eval_read_csv's row), the batch run when
 * full (batches run across files, as the trainer's reader fills them). */
static rt_status csv_row(void *ctx, const char *line, size_t len, char *buf, rt_csv_span *spans,
                         uint64_t lineno, rt_err *err)
{
    evaluator *v = ctx;
    if (rt_batch_size(v->b) == 0)
        v->first_line = lineno;
    v->last_line = lineno;
    rt_status st = add_row(v, line, len, buf, spans, err);
    if (st) {
        rt_err_prefix(err, "%s:%llu", v->file, (unsigned long long)lineno);
        return st;
    }
    return rt_batch_size(v->b) == v->bs ? flush(v, err) : RT_OK;
}

static rt_status read_file(evaluator *v, const char *path, rt_err *err)
{
    rt_input_format fmt; /* CSV or TFRecord, by content */
    rt_status fs = rt_tfrecord_sniff(path, &fmt, err);
    if (fs == RT_OK && fmt != RT_INPUT_CSV)
        return read_records(v, path, err);
    if (fs == RT_ERR_FORMAT)
        return fs;
    v->file = path;
    return pm_eval_read_csv(path, v->o->skip_header_lines, v->n_cols, csv_row, v, err);
}

/* ---------------------------------------------------------------- driver */

/* What the trainer's evaluation took from the spec it stored in the export:
 * eval.batch_size (unless the caller gave one) and estimator.loss_reduction. */
static void spec_defaults(evaluator *v)
{
    const Predictd__TrainingInfo *t = v->def->training;
    cJSON *spec = t && t->spec_json ? cJSON_Parse(t->spec_json) : NULL;
    const cJSON *bs = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(spec, "eval"), "batch_size");
    const cJSON *lr = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(spec, "estimator"), "loss_reduction");
    if (!v->bs && cJSON_IsNumber(bs) && bs->valuedouble >= 1 && bs->valuedouble <= (1 << 20))
        v->bs = (size_t)bs->valuedouble;
    v->loss_sum = cJSON_IsString(lr) && strcmp(lr->valuestring, "SUM") == 0;
    cJSON_Delete(spec);
}

static rt_status setup(evaluator *v, rt_err *err)
{
    pm_eval *e = v->e;
    const Predictd__ModelDef *def = v->def;
    if (!def->head)
        return rt_err_set(err, RT_ERR_INVALID, "the export has no head");
    e->head = def->head->type;
    rt_graph_head_loss(def, &v->loss);
    e->n_classes = e->head == PREDICTD__HEAD_TYPE__HEAD_REGRESSION ? 0 : def->head->n_classes;
    e->global_step = def->training ? def->training->global_step : 0;
    v->ld = rt_graph_logits_dim(v->g);
    v->mlabel = e->head == PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL;
    v->ls = e->head == PREDICTD__HEAD_TYPE__HEAD_REGRESSION || v->mlabel ? v->ld : 1;
    v->n_cols = def->n_raw_columns;
    v->weight_col = rt_raw_weight_column(def);
    v->input = calloc(v->n_cols ? v->n_cols : 1, sizeof *v->input);
    if (!v->input)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    for (size_t j = 0; j < v->n_cols; j++) {
        const Predictd__RawColumn *rc = def->raw_columns[j];
        v->input[j] = -1;
        if (!rc->is_label && !rc->unused && !rc->is_weight)
            v->input[j] = rt_graph_find_input(v->g, rc->name, strlen(rc->name));
    }
    size_t n_labels = rt_raw_label_columns(def, NULL, 0);
    if (!(v->label_cols = malloc((n_labels ? n_labels : 1) * sizeof *v->label_cols)))
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    rt_raw_label_columns(def, v->label_cols, n_labels);
    if (n_labels == 0)
        return rt_err_set(err, RT_ERR_INVALID,
                          "the export's columns have no label column: it cannot be evaluated");
    if (n_labels != (v->mlabel ? 1 : v->ls)) /* multi-label: one cell lists the classes */
        return rt_err_set(err, RT_ERR_INVALID, "the export has %zu label columns for %zu label "
                          "values", n_labels, v->ls);
    rt_status st = pm_eval_parse_specs(e, v->o, def, &v->spec_cols, err);
    if (st)
        return st;
    v->bs = v->o->batch_size;
    spec_defaults(v);
    if (!v->bs)
        v->bs = DEFAULT_BATCH;
    e->batch_size = v->bs;
    v->b = rt_batch_new(v->g);
    v->ws = rt_workspace_new();
    v->labels = malloc(v->bs * v->ls * sizeof *v->labels);
    v->glabels = malloc(v->bs * v->ls * sizeof *v->glabels);
    if (v->weight_col >= 0 && (!(v->weights = malloc(v->bs * sizeof *v->weights)) ||
                               !(v->gweights = malloc(v->bs * sizeof *v->gweights))))
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    v->logits = malloc(v->bs * v->ld * sizeof *v->logits);
    v->glogits = malloc(v->bs * v->ld * sizeof *v->glogits);
    v->sid = malloc((e->n_specs ? e->n_specs : 1) * v->bs * sizeof *v->sid);
    v->touched = malloc((e->n_specs ? e->n_specs : 1) * v->bs * sizeof *v->touched);
    v->all = rt_metrics_new(e->head, e->n_classes ? e->n_classes : v->ld);
    rt_metrics_set_loss(v->all, &v->loss);
    if (e->n_classes) { /* no confusion matrix for a multi-label head: no single class */
        if (!v->mlabel)
            e->confusion = calloc(e->n_classes * e->n_classes, sizeof *e->confusion);
        e->class_names = calloc(e->n_classes, sizeof *e->class_names);
        for (size_t k = 0; e->class_names && k < e->n_classes; k++)
            if (!(e->class_names[k] = strdup(rt_graph_class_name(v->g, k))))
                return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    }
    if (!v->b || !v->ws || !v->labels || !v->glabels || !v->logits || !v->glogits || !v->sid ||
        !v->touched || !v->all ||
        (e->n_classes && ((!v->mlabel && !e->confusion) || !e->class_names)))
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    rt_batch_set_missing(v->b, RT_MISSING_CSV_DEFAULT);
    rt_transform_features_init(&v->f);
    if (v->o->importance) {
        e->n_inputs = rt_graph_num_inputs(v->g);
        e->importance = calloc(e->n_inputs + 1, sizeof *e->importance);
        e->inputs = calloc(e->n_inputs + 1, sizeof *e->inputs);
        if (!e->importance || !e->inputs)
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        for (size_t k = 0; k < e->n_inputs; k++)
            e->inputs[k] = rt_graph_input_name(v->g, k);
        e->importance_method = rt_xai_method_name(v->o->importance_method);
    }
    return RT_OK;
}

typedef struct ranked {
    double v;
    size_t k;
} ranked;

/* Larger value first, then lower index. */
static int by_importance(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    return x->v != y->v ? (x->v < y->v) - (x->v > y->v) : (x->k > y->k) - (x->k < y->k);
}

static rt_status finish(evaluator *v, rt_err *err)
{
    pm_eval *e = v->e;
    rt_status st = rt_metrics_result(v->all, e->global_step, &e->metrics);
    if (st == RT_ERR_NOTFOUND)
        return rt_err_set(err, RT_ERR_INVALID, "the data files hold no rows");
    for (size_t q = 0; e->importance && e->examples && q < e->n_inputs; q++)
        e->importance[q] /= (double)e->examples;
    if (e->importance) {
        if (!(e->importance_order = malloc((e->n_inputs + 1) * sizeof *e->importance_order)))
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        ranked *r = malloc((e->n_inputs + 1) * sizeof *r);
        if (!r)
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        for (size_t q = 0; q < e->n_inputs; q++)
            r[q] = (ranked){e->importance[q], q};
        qsort(r, e->n_inputs, sizeof *r, by_importance);
        for (size_t q = 0; q < e->n_inputs; q++)
            e->importance_order[q] = r[q].k;
        free(r);
    }
    if (st)
        return rt_err_set(err, st, "metrics failed");
    for (size_t k = 0; k < e->n_slices; k++) {
        pm_eval_slice *sl = &e->slices[k];
        const float *s, *y;
        sl->count = rt_metrics_data(v->acc[k].mt, &s, &y, NULL);
        if (v->mlabel) /* the metrics hold a (row, class) pair per example */
            sl->count /= v->ld;
        for (size_t q = 0; sl->importance && sl->count && q < e->n_inputs; q++)
            sl->importance[q] /= (double)sl->count;
        if ((st = rt_metrics_result(v->acc[k].mt, e->global_step, &sl->metrics)))
            return rt_err_set(err, st, "metrics failed");
    }
    /* each spec's slices together, larger first */
    /* the worst slice of each spec, by accuracy (classifiers), auc (multi-label)
     * or average_loss (regression) */
    bool reg = e->head == PREDICTD__HEAD_TYPE__HEAD_REGRESSION;
    pm_eval_order_slices(e, reg ? "average_loss"
                            : e->head == PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL ? "auc"
                                                                                : "accuracy",
                         reg);
    if (e->head == PREDICTD__HEAD_TYPE__HEAD_BINARY) {
        const float *s, *y;
        size_t n = rt_metrics_data(v->all, &s, &y, NULL);
        if (pm_eval_binary_plots(e, s, y, n))
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        e->has_plots = 1;
    }
    return RT_OK;
}

static void evaluator_free(evaluator *v)
{
    for (size_t k = 0; k < v->e->n_slices && v->acc; k++) {
        rt_metrics_free(v->acc[k].mt);
        free(v->acc[k].pending);
    }
    free(v->acc);
    for (size_t s = 0; s < v->o->n_slices && v->spec_cols; s++)
        free(v->spec_cols[s]);
    free(v->spec_cols);
    free(v->input);
    free(v->label_cols);
    rt_batch_free(v->b);
    rt_transform_features_free(&v->f);
    rt_workspace_free(v->ws);
    free(v->labels);
    free(v->glabels);
    free(v->weights);
    free(v->gweights);
    free(v->logits);
    free(v->glogits);
    free(v->sid);
    free(v->touched);
    pm_eval_keys_free(&v->keys);
    rt_metrics_free(v->all);
    pm_importance_free(v->imp);
}

rt_status pm_eval_run(const rt_model *m, const pm_eval_opts *o, pm_eval **out, rt_err *err)
{
    *out = NULL;
    evaluator v;
    memset(&v, 0, sizeof v);
    rt_transform_features_init(&v.f);
    rt_buf_init(&v.keys.key);
    v.g = rt_model_graph(m);
    v.def = rt_model_def(m);
    v.o = o;
    v.e = calloc(1, sizeof *v.e);
    if (!v.e)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    if (v.def->head && v.def->graph && v.def->graph->n_heads > 1) { /* pm_eval_heads.c */
        v.e->head = v.def->head->type;
        v.e->global_step = v.def->training ? v.def->training->global_step : 0;
        v.bs = o->batch_size;
        spec_defaults(&v);
        rt_status hs = pm_eval_heads_run(m, o, v.bs ? v.bs : DEFAULT_BATCH, v.loss_sum, v.e,
                                         err);
        if (hs) {
            pm_eval_free(v.e);
            return hs;
        }
        *out = v.e;
        return RT_OK;
    }
    rt_status st = setup(&v, err);
    if (!st && o->importance)
        st = pm_importance_new(m, o->importance_method, &v.imp, err);
    for (size_t i = 0; !st && i < o->n_files; i++)
        st = read_file(&v, o->files[i], err);
    if (!st)
        st = flush(&v, err);
    if (!st)
        st = finish(&v, err);
    evaluator_free(&v);
    if (st) {
        pm_eval_free(v.e);
        return st;
    }
    *out = v.e;
    return RT_OK;
}

void pm_eval_free(pm_eval *e)
{
    if (!e)
        return;
    for (size_t k = 0; k < e->n_slices; k++) {
        pm_eval_slice *sl = &e->slices[k];
        for (size_t q = 0; sl->values && q < e->specs[sl->spec].n_columns; q++)
            free(sl->values[q]);
        free(sl->values);
        free(sl->key);
        free(sl->importance);
    }
    free(e->importance);
    free(e->inputs);
    free(e->importance_order);
    free(e->slices);
    for (size_t s = 0; s < e->n_specs; s++) {
        free(e->specs[s].name);
        free(e->specs[s].columns);
    }
    free(e->specs);
    for (size_t k = 0; e->class_names && k < e->n_classes; k++)
        free(e->class_names[k]);
    free(e->class_names);
    free(e->confusion);
    free(e->roc.p);
    free(e->pr.p);
    for (size_t k = 0; e->head_evals && k < e->n_heads; k++)
        pm_eval_free(e->head_evals[k]);
    free(e->head_evals);
    free(e->head_names);
    for (size_t k = 0; e->slice_metrics && e->slice_metrics[k]; k++)
        free(e->slice_metrics[k]);
    free(e->slice_metrics);
    free(e);
}

/* ------------------------------------------------------------------ JSON */

static int jnum(rt_buf *b, double v)
{
    return isfinite(v) ? rt_buf_json_double(b, v) : rt_buf_puts(b, "null");
}

static int jstr(rt_buf *b, const char *s)
{
    return rt_buf_json_string(b, s, strlen(s));
}

static int json_curve(rt_buf *b, const char *name, const char *x, const char *y,
                      const pm_eval_curve *c)
{
    int rc = rt_buf_printf(b, ", \"%s\": {\"thresholds\": [", name);
    for (size_t i = 0; !rc && i < c->n; i++)
        rc = (i && rt_buf_puts(b, ", ")) || jnum(b, c->p[i].threshold);
    rc = rc || rt_buf_printf(b, "], \"%s\": [", x);
    for (size_t i = 0; !rc && i < c->n; i++)
        rc = (i && rt_buf_puts(b, ", ")) || jnum(b, c->p[i].x);
    rc = rc || rt_buf_printf(b, "], \"%s\": [", y);
    for (size_t i = 0; !rc && i < c->n; i++)
        rc = (i && rt_buf_puts(b, ", ")) || jnum(b, c->p[i].y);
    return rc || rt_buf_puts(b, "]}");
}

static const char *head_name(Predictd__HeadType h)
{
    return h == PREDICTD__HEAD_TYPE__HEAD_BINARY        ? "binary_classification"
           : h == PREDICTD__HEAD_TYPE__HEAD_MULTI_CLASS ? "multi_class_classification"
           : h == PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL ? "multi_label_classification"
                                                        : "regression";
}

/* , "feature_importance": {input: mean |attribution|, ...} */
static int json_importance(rt_buf *b, const pm_eval *e, const double *imp)
{
    if (!imp)
        return 0;
    int rc = rt_buf_puts(b, ", \"feature_importance\": {");
    for (size_t k = 0; !rc && k < e->n_inputs; k++)
        rc = (k && rt_buf_puts(b, ", ")) || jstr(b, e->inputs[k]) || rt_buf_puts(b, ": ") ||
             jnum(b, imp[k]);
    return rc || rt_buf_puts(b, "}");
}

int pm_eval_json(const pm_eval *e, rt_buf *b)
{
    int rc = rt_buf_printf(b, "{\"head\": \"%s\", \"global_step\": %lld, \"examples\": %llu, "
                           "\"batch_size\": %zu, \"metrics\": ",
                           head_name(e->head), (long long)e->global_step,
                           (unsigned long long)e->examples, e->batch_size);
    rc = rc || rt_metrics_json(&e->metrics, b) || rt_buf_puts(b, ", \"slices\": [");
    for (size_t k = 0; !rc && k < e->n_slices; k++) {
        const pm_eval_slice *sl = &e->slices[k];
        const pm_eval_spec *sp = &e->specs[sl->spec];
        rc = (k && rt_buf_puts(b, ", ")) || rt_buf_puts(b, "{\"slice\": ") ||
             jstr(b, sp->name) || rt_buf_puts(b, ", \"values\": {");
        for (size_t q = 0; !rc && q < sp->n_columns; q++)
            rc = (q && rt_buf_puts(b, ", ")) || jstr(b, sp->columns[q]) ||
                 rt_buf_puts(b, ": ") || jstr(b, sl->values[q]);
        rc = rc || rt_buf_printf(b, "}, \"count\": %zu, \"worst\": %s, \"metrics\": ", sl->count,
                                 sl->worst ? "true" : "false") ||
             rt_metrics_json(&sl->metrics, b) || json_importance(b, e, sl->importance) ||
             rt_buf_puts(b, "}");
    }
    rc = rc || rt_buf_puts(b, "]");
    if (!rc && e->importance)
        rc = rt_buf_puts(b, ", \"feature_importance_method\": ") ||
             jstr(b, e->importance_method) || json_importance(b, e, e->importance);
    if (!rc && e->confusion) {
        rc = rt_buf_puts(b, ", \"confusion_matrix\": {\"classes\": [");
        for (size_t k = 0; !rc && k < e->n_classes; k++)
            rc = (k && rt_buf_puts(b, ", ")) || jstr(b, e->class_names[k]);
        rc = rc || rt_buf_puts(b, "], \"matrix\": [");
        for (size_t i = 0; !rc && i < e->n_classes; i++) {
            rc = (i && rt_buf_puts(b, ", ")) || rt_buf_puts(b, "[");
            for (size_t j = 0; !rc && j < e->n_classes; j++)
                rc = rt_buf_printf(b, "%s%llu", j ? ", " : "",
                                   (unsigned long long)e->confusion[i * e->n_classes + j]);
            rc = rc || rt_buf_puts(b, "]");
        }
        rc = rc || rt_buf_puts(b, "]}");
    }
    if (!rc && e->has_plots) {
        rc = json_curve(b, "roc_curve", "false_positive_rate", "true_positive_rate", &e->roc) ||
             json_curve(b, "pr_curve", "recall", "precision", &e->pr) ||
             rt_buf_puts(b, ", \"calibration\": {\"expected_calibration_error\": ") ||
             jnum(b, e->ece) || rt_buf_puts(b, ", \"bins\": [");
        for (size_t k = 0; !rc && k < PM_EVAL_BINS; k++) {
            const pm_eval_bin *c = &e->calibration[k];
            rc = rt_buf_printf(b, "%s{\"lower\": ", k ? ", " : "") || jnum(b, c->lower) ||
                 rt_buf_puts(b, ", \"upper\": ") || jnum(b, c->upper) ||
                 rt_buf_printf(b, ", \"count\": %llu, \"mean_prediction\": ",
                               (unsigned long long)c->count) ||
                 jnum(b, c->mean_prediction) || rt_buf_puts(b, ", \"mean_label\": ") ||
                 jnum(b, c->mean_label) || rt_buf_puts(b, "}");
        }
        rc = rc || rt_buf_puts(b, "]}, \"thresholds\": [");
        for (size_t k = 0; !rc && k < PM_EVAL_THRESHOLDS; k++) {
            const pm_eval_threshold *t = &e->thresholds[k];
            rc = rt_buf_printf(b, "%s{\"threshold\": ", k ? ", " : "") ||
                 jnum(b, t->threshold) ||
                 rt_buf_printf(b, ", \"tp\": %llu, \"fp\": %llu, \"tn\": %llu, \"fn\": %llu, "
                               "\"precision\": ", (unsigned long long)t->tp,
                               (unsigned long long)t->fp, (unsigned long long)t->tn,
                               (unsigned long long)t->fn) ||
                 jnum(b, t->precision) || rt_buf_puts(b, ", \"recall\": ") ||
                 jnum(b, t->recall) || rt_buf_puts(b, ", \"f1\": ") || jnum(b, t->f1) ||
                 rt_buf_puts(b, ", \"accuracy\": ") || jnum(b, t->accuracy) ||
                 rt_buf_puts(b, "}");
        }
        rc = rc || rt_buf_puts(b, "]");
    }
    if (!rc && e->n_heads > 1 && e->head_evals) { /* each head's own result */
        rc = rt_buf_puts(b, ", \"heads\": {");
        for (size_t k = 0; !rc && k < e->n_heads; k++)
            rc = (k && rt_buf_puts(b, ", ")) || jstr(b, e->head_names[k]) ||
                 rt_buf_puts(b, ": ") || pm_eval_json(e->head_evals[k], b);
        rc = rc || rt_buf_puts(b, "}");
    }
    return rc || rt_buf_puts(b, "}");
}
