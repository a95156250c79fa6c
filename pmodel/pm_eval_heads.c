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
 * batch_size. Slices, --importance, TFRecord input and the HTML report are
 * not implemented yet for several heads (refused by name).
 */
#include "pm.h"

#include <errno.h>
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
} heads_ev;

static long column_named(const Predictd__ModelDef *def, const char *name)
{
    for (size_t j = 0; name && *name && j < def->n_raw_columns; j++)
        if (strcmp(def->raw_columns[j]->name, name) == 0)
            return (long)j;
    return -1;
}

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
    if (o->n_slices || o->importance)
        return rt_err_set(err, RT_ERR_UNSUPPORTED, "%s with several heads is not implemented "
                          "yet", o->n_slices ? "--slice" : "--importance");
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
    v->b = rt_batch_new(v->g);
    v->ws = rt_workspace_new();
    if (!v->input || !v->label_col || !v->weight_col || !v->loff || !v->mt || !v->loss || !v->labels ||
        !v->weights || !v->logits || !v->z || !v->y || !v->hw || !v->b || !v->ws)
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
    return RT_OK;
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
    }
    rt_batch_clear(v->b);
    rt_batch_set_missing(v->b, RT_MISSING_CSV_DEFAULT);
    return RT_OK;
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
    FILE *fp = fopen(path, "re");
    if (!fp)
        return rt_err_set(err, errno == ENOENT ? RT_ERR_NOTFOUND : RT_ERR_IO,
                          "%s: cannot open: %s", path, strerror(errno));
    char *line = NULL, *buf = NULL;
    size_t cap = 0;
    rt_csv_span *spans = calloc(v->n_cols + 1, sizeof *spans);
    ssize_t got;
    uint64_t lineno = 0;
    rt_status st = spans ? RT_OK : rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    v->file = path;
    while (!st && (got = getline(&line, &cap, fp)) >= 0) {
        if (++lineno <= skip)
            continue;
        size_t len = (size_t)got;
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            len--;
        size_t tl = len;
        rt_buf_trim_span(line, &tl);
        if (tl == 0)
            continue; /* blank line, as the trainer's reader skips it */
        char *nb = realloc(buf, len + 1);
        if (!nb) {
            st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
            break;
        }
        buf = nb;
        if ((st = add_row(v, line, len, buf, spans, err))) {
            rt_err_prefix(err, "%s:%llu", path, (unsigned long long)lineno);
            break;
        }
        if (rt_batch_size(v->b) == v->bs)
            st = flush(v, err);
    }
    if (!st && ferror(fp))
        st = rt_err_set(err, RT_ERR_IO, "%s: read error: %s", path, strerror(errno));
    free(spans);
    free(buf);
    free(line);
    fclose(fp);
    return st;
}

/* Each head's metrics suffixed with its name, then the merged loss. */
static rt_status finish(heads_ev *v, rt_err *err)
{
    rt_metric_list *out = &v->e->metrics;
    memset(out, 0, sizeof *out);
    double total = 0.0;
    for (size_t k = 0; k < v->n; k++) {
        const Predictd__NodeHead *nh = v->def->graph->heads[k];
        rt_metric_list one;
        rt_status st = rt_metrics_result(v->mt[k], v->e->global_step, &one);
        if (st)
            return st == RT_ERR_NOTFOUND
                       ? rt_err_set(err, RT_ERR_INVALID, "the data files hold no rows")
                       : rt_err_set(err, st, "metrics failed");
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
