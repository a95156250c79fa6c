/*
 * pm_eval_heads.c — predict-model evaluate of a model of several heads
 * (TF's MultiHead): each head's canned metrics over its columns of the
 * logits, its own label column (read by its own head: classes, vocabulary;
 * a multi-label head's cell as its n_classes multi-hot values)
 * and its own example weights (its weight_column, 1 without one), named
 * with the head's name as suffix (accuracy/income_bracket,
 * average_loss/hours_per_week, loss/<head>), and the merged "loss": sum of
 * loss_weight x loss/<head>. The same arithmetic as predict-train's
 * evaluation (trainer/trn_eval_run.c): a head's batch loss is its
 * rt_metrics_head_loss_with, times the batch's loss values under
 * loss_reduction SUM; "loss/<head>" the mean of the batch losses. Rows are
 * read as pm_eval.c reads CSV files (spec's columns in file order, blank
 * lines skipped, empty cells taking the spec's defaults), in batches of
 * batch_size. Per slice (--slice) the same per-head metrics, each slice's
 * rows of a batch a batch of their own as pm_eval.c does; per head also a
 * one-head result (e->head_evals: confusion matrix, a binary head's plots)
 * for the HTML report. --importance and TFRecord input are not
 * implemented yet for several heads (refused by name).
 */
#include "pm.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct heads_ev {
    const rt_graph *g;
    const Predictd__ModelDef *def;
    pm_eval *e;
    size_t n, ld, n_cols, bs;
    int loss_sum;
    const size_t *off, *w;  /* each head's logits columns (rt_graph_heads) */
    long *input;            /* [n_cols] graph input or -1 */
    long *label_col, *weight_col; /* [n] raw columns (weight: -1 none) */
    size_t *loff, lw;       /* [n] head k's label values at loff[k] of a row's lw */
    rt_metrics **mt;        /* [n] */
    rt_loss *loss;          /* [n] */
    rt_batch *b;
    rt_features f;
    rt_workspace *ws;
    float *labels, *weights, *logits; /* bs x lw, bs x n, bs x ld */
    float *z, *y, *hw;      /* one head's of a batch */
    const char *file;
    /* slices: per spec the raw columns, per batch row its slice ids */
    size_t **spec_cols;     /* [e->n_specs] */
    size_t *sid;            /* [n_specs][bs] */
    struct slice_acc *acc;  /* [e->n_slices] */
    size_t acc_cap;
    size_t *touched, n_touched;
    pm_eval_keys keys;      /* the slices by their key */
    float *gz, *gy, *gw;    /* one slice's rows of one head */
    size_t n_specs_parsed;  /* spec_cols' arrays (o->n_slices) */
} heads_ev;

typedef struct slice_acc {
    rt_metrics **mt;        /* [n] one per head */
    size_t *pending, n_pending, cap_pending;
    int touched;
} slice_acc;



static long column_named(const Predictd__ModelDef *def, const char *name)
{
    for (size_t j = 0; name && *name && j < def->n_raw_columns; j++)
        if (strcmp(def->raw_columns[j]->name, name) == 0)
            return (long)j;
    return -1;
}

static rt_status head_evals_new(heads_ev *v, rt_err *err);

static rt_status setup(heads_ev *v, const pm_eval_opts *o, size_t bs, int loss_sum,
                       rt_err *err)
{
    const Predictd__Graph *gd = v->def->graph;
    const size_t *node;
    v->n = rt_graph_heads(v->g, &node, &v->off, &v->w);
    v->ld = rt_graph_logits_dim(v->g);
    v->n_cols = v->def->n_raw_columns;
    v->bs = bs;
    v->loss_sum = loss_sum;
    if (o->importance)
        return rt_err_set(err, RT_ERR_UNSUPPORTED, "--importance with several heads is not "
                          "implemented yet");
    rt_status ps = pm_eval_parse_specs(v->e, o, v->def, &v->spec_cols, err);
    if (ps)
        return ps;
    size_t ns = v->e->n_specs ? v->e->n_specs : 1;
    v->sid = malloc(ns * bs * sizeof *v->sid);
    v->touched = malloc(ns * bs * sizeof *v->touched);
    v->input = calloc(v->n_cols + 1, sizeof *v->input);
    v->label_col = calloc(v->n + 1, sizeof *v->label_col);
    v->weight_col = calloc(v->n + 1, sizeof *v->weight_col);
    v->loff = calloc(v->n + 1, sizeof *v->loff);
    for (size_t k = 0; v->loff && k < v->n; k++) {
        v->loff[k] = v->lw;
        v->lw += gd->heads[k]->head->type == PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL ? v->w[k] : 1;
    }
    v->mt = calloc(v->n + 1, sizeof *v->mt);
    v->loss = calloc(v->n + 1, sizeof *v->loss);
    v->labels = malloc(bs * (v->lw + 1) * sizeof *v->labels);
    v->weights = malloc(bs * v->n * sizeof *v->weights);
    v->logits = malloc(bs * v->ld * sizeof *v->logits);
    v->z = malloc(bs * v->ld * sizeof *v->z);
    v->y = malloc(bs * v->ld * sizeof *v->y);
    v->hw = malloc(bs * sizeof *v->hw);
    v->gz = malloc(bs * v->ld * sizeof *v->gz);
    v->gy = malloc(bs * v->ld * sizeof *v->gy);
    v->gw = malloc(bs * sizeof *v->gw);
    v->b = rt_batch_new(v->g);
    v->ws = rt_workspace_new();
    if (!v->input || !v->label_col || !v->weight_col || !v->loff || !v->mt || !v->loss || !v->labels ||
        !v->weights || !v->logits || !v->z || !v->y || !v->hw || !v->b || !v->ws || !v->sid ||
        !v->touched || !v->gz || !v->gy || !v->gw)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    rt_batch_set_missing(v->b, RT_MISSING_CSV_DEFAULT);
    for (size_t j = 0; j < v->n_cols; j++) {
        const Predictd__RawColumn *rc = v->def->raw_columns[j];
        v->input[j] = rc->is_label || rc->unused || rc->is_weight
                          ? -1
                          : rt_graph_find_input(v->g, rc->name, strlen(rc->name));
    }
    for (size_t k = 0; k < v->n; k++) {
        const Predictd__NodeHead *nh = gd->heads[k];
        v->label_col[k] = column_named(v->def, nh->label);
        v->weight_col[k] = column_named(v->def, nh->weight_column);
        if (v->label_col[k] < 0 || !nh->head)
            return rt_err_set(err, RT_ERR_INVALID, "head %s: its label column is not one of "
                              "the export's columns", nh->name);
        rt_graph_node_head_loss(nh, &v->loss[k]);
        size_t nc = nh->head->type == PREDICTD__HEAD_TYPE__HEAD_REGRESSION ? v->w[k]
                                                                           : nh->head->n_classes;
        if (!(v->mt[k] = rt_metrics_new(nh->head->type, v->w[k] > 1 ? v->w[k] : nc)))
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        rt_metrics_set_loss(v->mt[k], &v->loss[k]);
    }
    return head_evals_new(v, err);
}

/* Each head's one-head result (e->head_evals): its type, classes and, for
 * a classifier of one class per row, the confusion matrix to fill. */
static rt_status head_evals_new(heads_ev *v, rt_err *err)
{
    pm_eval *e = v->e;
    e->head_evals = calloc(v->n + 1, sizeof *e->head_evals);
    e->head_names = calloc(v->n + 1, sizeof *e->head_names);
    if (!e->head_evals || !e->head_names)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    for (size_t k = 0; k < v->n; k++) {
        const Predictd__NodeHead *nh = v->def->graph->heads[k];
        const Predictd__Head *h = nh->head;
        pm_eval *he = e->head_evals[k] = calloc(1, sizeof *he);
        if (!he)
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        e->head_names[k] = nh->name;
        he->head = h->type;
        he->global_step = e->global_step;
        he->batch_size = v->bs;
        he->n_classes = h->type == PREDICTD__HEAD_TYPE__HEAD_REGRESSION ? 0 : h->n_classes;
        if (!he->n_classes)
            continue;
        if (h->type != PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL &&
            !(he->confusion = calloc(he->n_classes * he->n_classes, sizeof *he->confusion)))
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        if (!(he->class_names = calloc(he->n_classes, sizeof *he->class_names)))
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        for (size_t c = 0; c < he->n_classes; c++) {
            char num[24];
            snprintf(num, sizeof num, "%zu", c);
            const char *name = c < h->n_label_vocabulary ? h->label_vocabulary[c] : num;
            if (!(he->class_names[c] = strdup(name)))
                return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        }
    }
    return RT_OK;
}

/* ----------------------------------------------------------------- slices */

/* The slice of spec s the row at spans of buf falls in (*out), with a
 * metrics accumulator per head made when the slice is new. */
static rt_status slice_find(heads_ev *v, size_t s, const char *buf, const rt_csv_span *spans,
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
    if (!(a->mt = calloc(v->n + 1, sizeof *a->mt)))
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    for (size_t k = 0; k < v->n; k++) {
        const Predictd__Head *h = v->def->graph->heads[k]->head;
        size_t nc = h->type == PREDICTD__HEAD_TYPE__HEAD_REGRESSION ? v->w[k] : h->n_classes;
        if (!(a->mt[k] = rt_metrics_new(h->type, v->w[k] > 1 ? v->w[k] : nc)))
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        rt_metrics_set_loss(a->mt[k], &v->loss[k]);
    }
    return RT_OK;
}

/* The slice id of batch row idx for every spec (its trimmed cells). */
static rt_status slice_ids(heads_ev *v, const char *buf, const rt_csv_span *spans, size_t idx,
                           rt_err *err)
{
    for (size_t s = 0; s < v->e->n_specs; s++) {
        rt_status st = slice_find(v, s, buf, spans, &v->sid[s * v->bs + idx], err);
        if (st)
            return st;
    }
    return RT_OK;
}

/* Groups the batch's nb rows by slice (each touched slice's pending rows). */
static rt_status slice_group(heads_ev *v, size_t nb, rt_err *err)
{
    v->n_touched = 0;
    for (size_t s = 0; s < v->e->n_specs; s++)
        for (size_t i = 0; i < nb; i++) {
            slice_acc *a = &v->acc[v->sid[s * v->bs + i]];
            if (!a->touched) {
                a->touched = 1;
                a->n_pending = 0;
                v->touched[v->n_touched++] = v->sid[s * v->bs + i];
            }
            if (rt_grow(&a->pending, &a->cap_pending, a->n_pending + 1, sizeof *a->pending))
                return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
            a->pending[a->n_pending++] = i;
        }
    return RT_OK;
}

/* Head k's rows of each touched slice into that slice's accumulator, as a
 * batch of their own (its loss that batch's, as pm_eval.c's slices). */
static rt_status slice_add(heads_ev *v, size_t k, size_t lw, int weighted, rt_err *err)
{
    Predictd__HeadType ht = v->def->graph->heads[k]->head->type;
    for (size_t t = 0; t < v->n_touched; t++) {
        slice_acc *a = &v->acc[v->touched[t]];
        size_t m = a->n_pending;
        for (size_t q = 0; q < m; q++) {
            size_t i = a->pending[q];
            memcpy(v->gz + q * v->w[k], v->z + i * v->w[k], v->w[k] * sizeof *v->gz);
            memcpy(v->gy + q * lw, v->y + i * lw, lw * sizeof *v->gy);
            v->gw[q] = v->hw[i];
        }
        const float *w = weighted ? v->gw : NULL;
        double l = rt_metrics_head_loss_with(ht, &v->loss[k], v->w[k], v->gz, v->gy, w, m, m,
                                             NULL);
        if (v->loss_sum)
            l *= (double)(m * (ht == PREDICTD__HEAD_TYPE__HEAD_REGRESSION ? v->w[k] : 1));
        rt_status st = rt_metrics_add(a->mt[k], v->gz, v->gy, w, m, l);
        if (st)
            return rt_err_set(err, st, "out of memory");
    }
    return RT_OK;
}

/* Head k's confusion matrix cells of the batch (binary: logit > 0). */
static void confuse(heads_ev *v, size_t k, size_t nb)
{
    pm_eval *he = v->e->head_evals[k];
    if (!he->confusion)
        return;
    for (size_t i = 0; i < nb; i++) {
        const float *z = v->z + i * v->w[k];
        size_t pred = 0, lab;
        if (he->head == PREDICTD__HEAD_TYPE__HEAD_BINARY) {
            pred = z[0] > 0.0f;
            lab = v->y[i] > 0.5f;
        } else {
            for (size_t j = 1; j < v->w[k]; j++)
                if (z[j] > z[pred])
                    pred = j;
            lab = (size_t)v->y[i];
        }
        if (lab < he->n_classes && pred < he->n_classes)
            he->confusion[lab * he->n_classes + pred]++;
    }
}

/* One CSV row's labels, weights and inputs into the batch. */
static rt_status add_row(heads_ev *v, const char *line, size_t len, char *buf,
                         rt_csv_span *spans, rt_err *err)
{
    long nf = rt_raw_csv_split(line, len, buf, spans, v->n_cols, err);
    if (nf < 0)
        return RT_ERR_INVALID;
    if ((size_t)nf != v->n_cols)
        return rt_err_set(err, RT_ERR_INVALID, "%ld fields, the spec has %zu columns", nf,
                          v->n_cols);
    size_t idx = rt_batch_size(v->b);
    rt_status st = RT_OK;
    for (size_t k = 0; k < v->n && !st; k++) {
        const Predictd__Head *h = v->def->graph->heads[k]->head;
        rt_csv_span sp = spans[v->label_col[k]];
        float *y = &v->labels[idx * v->lw + v->loff[k]], *w = &v->weights[idx * v->n + k];
        if (h->type == PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL) {
            st = rt_metrics_mlabel_cell(h, v->def->trim_strings, buf + sp.off, sp.len, y, err);
            if (st)
                rt_err_prefix(err, "label %s", v->def->raw_columns[v->label_col[k]]->name);
        } else {
            st = rt_raw_label_of(v->def, h, (size_t)v->label_col[k], buf + sp.off, sp.len, y,
                                 err);
        }
        if (!st && v->loss[k].kind == RT_LOSS_POISSON &&
            h->type == PREDICTD__HEAD_TYPE__HEAD_REGRESSION && !(*y >= 0.0f))
            st = rt_err_set(err, RT_ERR_INVALID, "label %s is %g: the poisson loss needs "
                            "counts >= 0", v->def->raw_columns[v->label_col[k]]->name,
                            (double)*y);
        *w = 1.0f;
        if (!st && v->weight_col[k] >= 0) {
            rt_csv_span ws = spans[v->weight_col[k]];
            st = rt_raw_weight(v->def, (size_t)v->weight_col[k], buf + ws.off, ws.len, w, err);
        }
    }
    if (st)
        return st;
    if ((st = rt_batch_add(v->b, &idx)))
        return rt_err_set(err, st, "out of memory");
    for (size_t j = 0; j < v->n_cols && !st; j++)
        if (v->input[j] >= 0)
            st = rt_batch_push_cell(v->b, idx, v->input[j], v->def->raw_columns[j], j,
                                    buf + spans[j].off, spans[j].len, err);
    if (!st)
        st = slice_ids(v, buf, spans, idx, err);
    if (!st)
        v->e->examples++;
    return st;
}

/* Runs the model on the batch and adds each head's part to its metrics. */
static rt_status flush(heads_ev *v, rt_err *err)
{
    size_t nb = rt_batch_size(v->b);
    if (nb == 0)
        return RT_OK;
    rt_status st = rt_transform(v->g, v->b, &v->f, err);
    if (!st)
        st = rt_forward(v->g, &v->f, v->ws, v->logits, err);
    if (st) {
        rt_err_prefix(err, "%s", v->file);
        return st;
    }
    if ((st = slice_group(v, nb, err)))
        return st;
    for (size_t k = 0; k < v->n; k++) {
        Predictd__HeadType ht = v->def->graph->heads[k]->head->type;
        const float *w = v->weight_col[k] >= 0 ? v->hw : NULL;
        size_t lw = ht == PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL ? v->w[k] : 1;
        for (size_t i = 0; i < nb; i++) {
            memcpy(v->z + i * v->w[k], v->logits + i * v->ld + v->off[k],
                   v->w[k] * sizeof *v->z);
            memcpy(v->y + i * lw, v->labels + i * v->lw + v->loff[k], lw * sizeof *v->y);
            v->hw[i] = v->weights[i * v->n + k];
        }
        double l = rt_metrics_head_loss_with(ht, &v->loss[k], v->w[k], v->z, v->y, w, nb, nb,
                                             NULL);
        if (v->loss_sum) /* SUM: the batch's [rows, values] sum, as the trainer */
            l *= (double)(nb * (ht == PREDICTD__HEAD_TYPE__HEAD_REGRESSION ? v->w[k] : 1));
        if ((st = rt_metrics_add(v->mt[k], v->z, v->y, w, nb, l)))
            return rt_err_set(err, st, "out of memory");
        confuse(v, k, nb);
        if ((st = slice_add(v, k, lw, w != NULL, err)))
            return st;
    }
    for (size_t t = 0; t < v->n_touched; t++)
        v->acc[v->touched[t]].touched = 0;
    rt_batch_clear(v->b);
    rt_batch_set_missing(v->b, RT_MISSING_CSV_DEFAULT);
    return RT_OK;
}

/* One CSV row into the batch (pm_eval_read_csv's row), the batch run when
 * full. */
static rt_status csv_row(void *ctx, const char *line, size_t len, char *buf, rt_csv_span *spans,
                         uint64_t lineno, rt_err *err)
{
    heads_ev *v = ctx;
    rt_status st = add_row(v, line, len, buf, spans, err);
    if (st) {
        rt_err_prefix(err, "%s:%llu", v->file, (unsigned long long)lineno);
        return st;
    }
    return rt_batch_size(v->b) == v->bs ? flush(v, err) : RT_OK;
}

static rt_status read_file(heads_ev *v, const char *path, size_t skip, rt_err *err)
{
    rt_input_format fmt;
    rt_status fs = rt_tfrecord_sniff(path, &fmt, err);
    if (fs == RT_OK && fmt != RT_INPUT_CSV)
        return rt_err_set(err, RT_ERR_UNSUPPORTED, "%s: TFRecord input with several heads is "
                          "not implemented yet", path);
    if (fs == RT_ERR_FORMAT)
        return fs;
    v->file = path;
    return pm_eval_read_csv(path, skip, v->n_cols, csv_row, v, err);
}

/* mt's (one per head) metrics suffixed with each head's name, then the
 * merged loss, into *out; each head's own list into one[k] when given. */
static rt_status merge(heads_ev *v, rt_metrics **mt, rt_metric_list *out,
                       rt_metric_list *const *one_out, rt_err *err)
{
    memset(out, 0, sizeof *out);
    double total = 0.0;
    for (size_t k = 0; k < v->n; k++) {
        const Predictd__NodeHead *nh = v->def->graph->heads[k];
        rt_metric_list one;
        rt_status st = rt_metrics_result(mt[k], v->e->global_step, &one);
        if (st)
            return st == RT_ERR_NOTFOUND
                       ? rt_err_set(err, RT_ERR_INVALID, "the data files hold no rows")
                       : rt_err_set(err, st, "metrics failed");
        if (one_out)
            *one_out[k] = one;
        for (size_t j = 0; j < one.n; j++) {
            int step = strcmp(one.m[j].name, "global_step") == 0;
            if (strcmp(one.m[j].name, "loss") == 0)
                total += (nh->loss_weight > 0 ? nh->loss_weight : 1.0) * one.m[j].value;
            if (step && k > 0)
                continue;
            if (out->n == RT_MAX_METRICS)
                return rt_err_set(err, RT_ERR_LIMIT, "more than %d metrics over the heads",
                                  RT_MAX_METRICS);
            rt_metric *o = &out->m[out->n++];
            if (step)
                snprintf(o->name, sizeof o->name, "%s", one.m[j].name);
            else if (snprintf(o->name, sizeof o->name, "%s/%s", one.m[j].name, nh->name) >=
                     (int)sizeof o->name)
                return rt_err_set(err, RT_ERR_LIMIT, "metric %s/%s: name too long",
                                  one.m[j].name, nh->name);
            o->value = one.m[j].value;
        }
    }
    if (out->n == RT_MAX_METRICS)
        return rt_err_set(err, RT_ERR_LIMIT, "more than %d metrics over the heads",
                          RT_MAX_METRICS);
    snprintf(out->m[out->n].name, sizeof out->m[out->n].name, "loss");
    out->m[out->n++].value = total;
    return RT_OK;
}

/* The slice table's columns: each head's one-head slice metrics, suffixed. */
static rt_status slice_metric_names(heads_ev *v, rt_err *err)
{
    pm_eval *e = v->e;
    size_t cap = 1;
    for (size_t k = 0; k < v->n; k++)
        for (const char *const *m = pm_eval_slice_metrics(e->head_evals[k]); *m; m++)
            cap++;
    if (!(e->slice_metrics = calloc(cap, sizeof *e->slice_metrics)))
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    size_t q = 0;
    for (size_t k = 0; k < v->n; k++)
        for (const char *const *m = pm_eval_slice_metrics(e->head_evals[k]); *m; m++) {
            rt_buf nb;
            rt_buf_init(&nb);
            if (rt_buf_printf(&nb, "%s/%s", *m, e->head_names[k]))
                return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
            e->slice_metrics[q++] = nb.data;
        }
    return RT_OK;
}

/* Each slice's merged metrics and count, the slices sorted as pm_eval.c's
 * (by spec, larger first), each spec's worst by the first head's first
 * slice metric (lowest accuracy or auc; regression: highest average_loss). */
static rt_status finish_slices(heads_ev *v, rt_err *err)
{
    pm_eval *e = v->e;
    Predictd__HeadType h0 = v->def->graph->heads[0]->head->type;
    for (size_t k = 0; k < e->n_slices; k++) {
        pm_eval_slice *sl = &e->slices[k];
        const float *sc, *y;
        sl->count = rt_metrics_data(v->acc[k].mt[0], &sc, &y, NULL);
        if (h0 == PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL)
            sl->count /= v->w[0]; /* a (row, class) pair per example */
        rt_status st = merge(v, v->acc[k].mt, &sl->metrics, NULL, err);
        if (st)
            return st;
    }
    pm_eval_order_slices(e, e->slice_metrics[0], h0 == PREDICTD__HEAD_TYPE__HEAD_REGRESSION);
    return RT_OK;
}

/* The merged metrics, each head's own result (binary heads: plots), the
 * slices. */
static rt_status finish(heads_ev *v, rt_err *err)
{
    pm_eval *e = v->e;
    rt_metric_list **one = calloc(v->n + 1, sizeof *one);
    if (!one)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    for (size_t k = 0; k < v->n; k++)
        one[k] = &e->head_evals[k]->metrics;
    rt_status st = merge(v, v->mt, &e->metrics, one, err);
    free(one);
    for (size_t k = 0; !st && k < v->n; k++) {
        pm_eval *he = e->head_evals[k];
        he->examples = e->examples;
        if (he->head != PREDICTD__HEAD_TYPE__HEAD_BINARY)
            continue;
        const float *sc, *y;
        size_t n = rt_metrics_data(v->mt[k], &sc, &y, NULL);
        if (pm_eval_binary_plots(he, sc, y, n))
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        he->has_plots = 1;
    }
    if (!st)
        st = slice_metric_names(v, err);
    return st ? st : finish_slices(v, err);
}

static void heads_ev_free(heads_ev *v)
{
    for (size_t k = 0; v->mt && k < v->n; k++)
        rt_metrics_free(v->mt[k]);
    free(v->mt);
    free(v->loss);
    free(v->input);
    free(v->label_col);
    free(v->weight_col);
    free(v->loff);
    free(v->labels);
    free(v->weights);
    free(v->logits);
    free(v->z);
    free(v->y);
    free(v->hw);
    rt_batch_free(v->b);
    rt_transform_features_free(&v->f);
    rt_workspace_free(v->ws);
    for (size_t k = 0; v->acc && k < v->e->n_slices; k++) {
        for (size_t h = 0; v->acc[k].mt && h < v->n; h++)
            rt_metrics_free(v->acc[k].mt[h]);
        free(v->acc[k].mt);
        free(v->acc[k].pending);
    }
    free(v->acc);
    for (size_t s = 0; v->spec_cols && s < v->n_specs_parsed; s++)
        free(v->spec_cols[s]);
    free(v->spec_cols);
    free(v->sid);
    free(v->touched);
    pm_eval_keys_free(&v->keys);
    free(v->gz);
    free(v->gy);
    free(v->gw);
}

rt_status pm_eval_heads_run(const rt_model *m, const pm_eval_opts *o, size_t bs, int loss_sum,
                            pm_eval *e, rt_err *err)
{
    heads_ev v;
    memset(&v, 0, sizeof v);
    rt_transform_features_init(&v.f);
    v.g = rt_model_graph(m);
    v.def = rt_model_def(m);
    v.e = e;
    e->n_heads = v.def->graph->n_heads;
    e->batch_size = bs;
    rt_buf_init(&v.keys.key);
    v.n_specs_parsed = o->n_slices;
    rt_status st = setup(&v, o, bs, loss_sum, err);
    for (size_t i = 0; !st && i < o->n_files; i++)
        st = read_file(&v, o->files[i], o->skip_header_lines, err);
    if (!st)
        st = flush(&v, err);
    if (!st)
        st = finish(&v, err);
    heads_ev_free(&v);
    return st;
}
