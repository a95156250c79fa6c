/*
 * trn_feed.c — CSV rows of the spec's columns -> an rt_batch (the raw
 * inputs the feature columns read) and the labels.
 *
 * Column j of the CSV is the ModelDef's raw_columns[j]. Unused columns are
 * dropped; the label becomes (rt_raw_label, shared with predict-model
 * evaluate) a class id (its index in the label vocabulary,
 * after trimming when the spec trims strings, or an integer class id without
 * a vocabulary) or a regression value (label_dimension label columns: that
 * many values, in file order; a multi-label head: its one label cell's
 * classes as n_classes multi-hot values, rt_metrics_mlabel_cell; several
 * heads: each head's label column read by its own head, rt_raw_label_of or,
 * multi-label, rt_metrics_mlabel_cell); the weight column (estimator.weight_column)
 * an example weight (rt_raw_weight; several heads: each head's weight_column
 * its weight, 1 for a head without one); the other columns are pushed to the
 * graph input of the same name by rt_batch_push_cell, the serving CSV
 * receiver's own code (numbers, and an empty cell's default as in
 * tf.decode_csv's record_defaults).
 */
#include "trn.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Weights a row at most: one per head (the spec takes at most 16 heads). */
#define FEED_MAX_WEIGHTS 16

struct trn_feeder {
    const rt_graph *g;
    const Predictd__ModelDef *def;
    size_t n_cols;
    long *input;      /* [n_cols] graph input or -1 */
    uint8_t *numeric; /* [n_cols] */
    const char **names; /* [n_cols] into def */
    size_t *label_cols; /* [ls] the label columns, in file order */
    size_t ls;        /* label values per row */
    const Predictd__Head **label_head; /* [n_heads] several heads: head k's */
    size_t n_heads;   /* several heads: label_cols[k] is head k's column */
    long weight_col;  /* -1: no weight column */
    size_t n_weights; /* weights per row: 0, 1, or n_heads (several heads) */
    long *head_wcol;  /* [n_weights] several heads: head k's weight column or -1 */
    int regression;
    int mlabel;       /* a multi-label head: one label cell -> ls multi-hot values */
    int counts;       /* a poisson head: labels must be >= 0 */
    uint8_t *label_counts; /* [n_heads] several heads: head k is a poisson head */
};

void trn_feeder_free(trn_feeder *f)
{
    if (!f)
        return;
    free(f->input);
    free(f->numeric);
    free(f->names);
    free(f->label_cols);
    free(f->label_head);
    free(f->head_wcol);
    free(f->label_counts);
    free(f);
}

/* Several heads (MultiHead): a row's label values are the heads' in head
 * order, each read from its label column by its own head (classes,
 * vocabulary; a poisson head's must be >= 0): one value, or a multi-label
 * head's n_classes multi-hot ones; with any head's weight_column weight k
 * of a row is head k's. */
static rt_status heads_labels(trn_feeder *f, rt_err *err)
{
    const Predictd__Graph *gd = f->def->graph;
    size_t n = gd ? gd->n_heads : 0;
    if (n < 2)
        return RT_OK;
    free(f->label_cols);
    f->label_cols = calloc(n, sizeof *f->label_cols);
    f->label_head = calloc(n, sizeof *f->label_head);
    f->label_counts = calloc(n, 1);
    f->head_wcol = calloc(n, sizeof *f->head_wcol);
    if (!f->label_cols || !f->label_head || !f->label_counts || !f->head_wcol)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    f->ls = 0;
    f->n_heads = n;
    f->counts = 0;
    f->n_weights = 0;
    f->mlabel = 0; /* per head below */
    for (size_t k = 0; k < n; k++) {
        const Predictd__NodeHead *nh = gd->heads[k];
        long r = -1;
        for (size_t j = 0; nh->label && j < f->n_cols && r < 0; j++)
            if (strcmp(f->def->raw_columns[j]->name, nh->label) == 0)
                r = (long)j;
        if (r < 0 || !nh->head)
            return rt_err_set(err, RT_ERR_INVALID, "label: head %zu's label column is not a "
                              "column", k);
        rt_loss hl;
        rt_graph_node_head_loss(nh, &hl);
        f->label_counts[k] = nh->head->type == PREDICTD__HEAD_TYPE__HEAD_REGRESSION &&
                             hl.kind == RT_LOSS_POISSON;
        f->head_wcol[k] = -1;
        for (size_t j = 0; nh->weight_column && *nh->weight_column && j < f->n_cols; j++)
            if (strcmp(f->def->raw_columns[j]->name, nh->weight_column) == 0)
                f->head_wcol[k] = (long)j;
        if (nh->weight_column && *nh->weight_column && f->head_wcol[k] < 0)
            return rt_err_set(err, RT_ERR_INVALID, "estimator.model.heads[%zu].weight_column: "
                              "not a column", k);
        if (f->head_wcol[k] >= 0)
            f->n_weights = n;
        if (f->n_weights > FEED_MAX_WEIGHTS)
            return rt_err_set(err, RT_ERR_LIMIT, "estimator.model.heads: %zu heads with "
                              "example weights, at most %d", n, FEED_MAX_WEIGHTS);
        bool ml = nh->head->type == PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL;
        f->label_cols[k] = (size_t)r;
        f->label_head[k] = nh->head;
        f->ls += ml ? nh->head->n_classes : 1;
        f->numeric[r] = !ml && (nh->head->type == PREDICTD__HEAD_TYPE__HEAD_REGRESSION ||
                                nh->head->n_label_vocabulary == 0);
    }
    return RT_OK;
}

rt_status trn_feeder_new(const rt_graph *g, trn_feeder **out, rt_err *err)
{
    *out = NULL;
    const Predictd__ModelDef *def = g ? rt_graph_def(g) : NULL;
    if (!def || !def->head)
        return rt_err_set(err, RT_ERR_INVALID, "feeder: model has no head");
    trn_feeder *f = calloc(1, sizeof *f);
    if (!f)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    rt_status st = RT_OK;
    f->g = g;
    f->def = def;
    f->n_cols = def->n_raw_columns;
    f->regression = def->head->type == PREDICTD__HEAD_TYPE__HEAD_REGRESSION;
    f->mlabel = def->head->type == PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL;
    f->ls = f->regression ? def->head->label_dimension : f->mlabel ? def->head->n_classes : 1;
    rt_loss hl;
    rt_graph_head_loss(def, &hl);
    f->counts = f->regression && hl.kind == RT_LOSS_POISSON;
    f->weight_col = rt_raw_weight_column(def);
    f->n_weights = f->weight_col >= 0;
    f->input = calloc(f->n_cols ? f->n_cols : 1, sizeof *f->input);
    f->numeric = calloc(f->n_cols ? f->n_cols : 1, 1);
    f->names = calloc(f->n_cols ? f->n_cols : 1, sizeof *f->names);
    f->label_cols = calloc(f->ls ? f->ls : 1, sizeof *f->label_cols);
    if (!f->input || !f->numeric || !f->names || !f->label_cols) {
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (size_t j = 0; j < f->n_cols; j++) {
        const Predictd__RawColumn *rc = def->raw_columns[j];
        f->input[j] = -1;
        f->names[j] = rc->name;
        if (rc->is_label) {
            f->numeric[j] = !f->mlabel && (f->regression || def->head->n_label_vocabulary == 0);
            continue;
        }
        if (rc->unused)
            continue;
        if (rc->is_weight) {
            f->numeric[j] = 1;
            continue;
        }
        f->numeric[j] = rc->dtype == PREDICTD__DTYPE__DT_FLOAT;
        f->input[j] = rt_graph_find_input(g, rc->name, strlen(rc->name));
    }
    if ((st = heads_labels(f, err)))
        goto out;
    size_t want = f->mlabel ? 1 : f->ls; /* multi-label: one cell lists the classes */
    size_t n_labels = f->label_head ? f->n_heads
                                    : rt_raw_label_columns(def, f->label_cols, want);
    if (n_labels == 0)
        st = rt_err_set(err, RT_ERR_INVALID, "label: no label column among the columns");
    else if (f->mlabel && n_labels != 1)
        st = rt_err_set(err, RT_ERR_INVALID, "label: %zu label columns for a multi-label head",
                        n_labels);
    else if (!f->mlabel && !f->label_head && n_labels != f->ls)
        st = rt_err_set(err, RT_ERR_INVALID, "label: %zu label columns for label_dimension %zu",
                        n_labels, f->ls);
out:
    if (st) {
        trn_feeder_free(f);
        return st;
    }
    *out = f;
    return RT_OK;
}

const uint8_t *trn_feeder_numeric(const trn_feeder *f, size_t *n_columns)
{
    *n_columns = f->n_cols;
    return f->numeric;
}

const char *const *trn_feeder_names(const trn_feeder *f)
{
    return f->names;
}

const Predictd__ModelDef *trn_feeder_def(const trn_feeder *f)
{
    return f->def;
}

size_t trn_feeder_label_dim(const trn_feeder *f)
{
    return f->ls;
}

size_t trn_feeder_weighted(const trn_feeder *f)
{
    return f->n_weights;
}

/* "FILE:LINE" of row r, or "row R" without provenance. */
static void where(const trn_rows *rows, size_t r, char *buf, size_t cap)
{
    if (rows->src_file && rows->src_line && rows->src_file[r])
        snprintf(buf, cap, "%s:%llu", rows->src_file[r], (unsigned long long)rows->src_line[r]);
    else
        snprintf(buf, cap, "row %zu", r);
}

/* A multi-label head h's label cell of column col -> its n_classes
 * multi-hot values. */
static rt_status mlabel_target(const trn_feeder *f, const Predictd__Head *h, size_t col,
                               const trn_field *c, float *out, rt_err *err)
{
    rt_status st = rt_metrics_mlabel_cell(h, f->def->trim_strings, c->s, c->len, out, err);
    if (st)
        rt_err_prefix(err, "label %s", f->def->raw_columns[col]->name);
    return st;
}

/* Several heads: each head's label values, in head order. */
static rt_status heads_targets(const trn_feeder *f, const trn_field *row, float *labels,
                               rt_err *err)
{
    rt_status st = RT_OK;
    float *at = labels;
    for (size_t k = 0; k < f->n_heads && !st; k++) {
        const Predictd__Head *h = f->label_head[k];
        const trn_field *c = &row[f->label_cols[k]];
        if (h->type == PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL) {
            st = mlabel_target(f, h, f->label_cols[k], c, at, err);
            at += h->n_classes;
        } else {
            st = rt_raw_label_of(f->def, h, f->label_cols[k], c->s, c->len, at, err);
            if (!st && f->label_counts[k] && !(*at >= 0.0f))
                st = rt_err_set(err, RT_ERR_INVALID, "label %s is %g: the poisson loss needs "
                                "counts >= 0", f->def->raw_columns[f->label_cols[k]]->name,
                                (double)*at);
            at++;
        }
    }
    return st;
}

/* The targets of one row: its labels and its f->n_weights weights. */
static rt_status row_targets(const trn_feeder *f, const trn_field *row, float *labels,
                             float *weight, rt_err *err)
{
    rt_status st = RT_OK;
    if (f->label_head)
        st = heads_targets(f, row, labels, err);
    else if (f->mlabel) /* the cell's classes -> ls multi-hot values */
        st = mlabel_target(f, f->def->head, f->label_cols[0], &row[f->label_cols[0]], labels,
                           err);
    for (size_t k = 0; k < f->ls && !st && !f->mlabel && !f->label_head; k++) {
        const trn_field *c = &row[f->label_cols[k]];
        st = rt_raw_label(f->def, f->label_cols[k], c->s, c->len, &labels[k], err);
        if (!st && f->counts && !(labels[k] >= 0.0f))
            st = rt_err_set(err, RT_ERR_INVALID, "label %s is %g: the poisson loss needs "
                            "counts >= 0", f->def->raw_columns[f->label_cols[k]]->name,
                            (double)labels[k]);
    }
    if (!st && f->head_wcol) { /* several heads: each its own (1 without one) */
        for (size_t k = 0; k < f->n_weights && !st; k++) {
            long wc = f->head_wcol[k];
            weight[k] = 1.0f;
            if (wc >= 0)
                st = rt_raw_weight(f->def, (size_t)wc, row[wc].s, row[wc].len, &weight[k],
                                   err);
        }
    } else if (!st && f->weight_col >= 0) {
        const trn_field *c = &row[f->weight_col];
        st = rt_raw_weight(f->def, (size_t)f->weight_col, c->s, c->len, weight, err);
    }
    return st;
}

rt_status trn_feeder_fill(const trn_feeder *f, const trn_rows *rows, rt_batch *b, float *labels,
                          float *weights, trn_bad_row_policy bad, uint64_t *skipped, rt_err *err)
{
    return trn_feeder_fill_rows(f, rows, b, labels, weights, NULL, bad, skipped, err);
}

rt_status trn_feeder_fill_rows(const trn_feeder *f, const trn_rows *rows, rt_batch *b,
                               float *labels, float *weights, size_t *row_of,
                               trn_bad_row_policy bad, uint64_t *skipped, rt_err *err)
{
    if (rows->n_fields != f->n_cols)
        return rt_err_set(err, RT_ERR_INVALID, "rows have %zu fields, the spec %zu columns",
                          rows->n_fields, f->n_cols);
    rt_batch_clear(b);
    /* empty CSV cells take the spec's column defaults (tf.decode_csv's
     * record_defaults); rt_batch_clear resets this policy */
    rt_batch_set_missing(b, RT_MISSING_CSV_DEFAULT);
    char at[600];
    for (size_t r = 0; r < rows->n; r++) {
        const trn_field *row = rows->fields + r * f->n_cols;
        /* the targets first: a row without a usable label or weight is
         * malformed */
        size_t idx = rt_batch_size(b);
        float own[FEED_MAX_WEIGHTS];
        float *weight = weights && f->n_weights ? weights + idx * f->n_weights : own;
        rt_err lerr;
        rt_status st = row_targets(f, row, labels + idx * f->ls, weight, &lerr);
        if (st) { /* "FILE:LINE" formatted only for an error */
            where(rows, r, at, sizeof at);
            rt_err_prefix(&lerr, "%s", at);
            if (bad == TRN_BAD_ROW_SKIP) {
                if (skipped)
                    (*skipped)++;
                continue;
            }
            if (err)
                *err = lerr;
            return st;
        }
        if ((st = rt_batch_add(b, &idx)))
            return rt_err_set(err, st, "batch: out of memory");
        if (row_of)
            row_of[idx] = r;
        for (size_t j = 0; j < f->n_cols; j++) {
            const trn_field *c = &row[j];
            long in = f->input[j];
            if (in < 0)
                continue;
            const Predictd__RawColumn *rc = f->def->raw_columns[j];
            if (c->num_state && rc->dtype != PREDICTD__DTYPE__DT_STRING) /* read by the reader */
                st = rt_batch_push_number(b, idx, in, rc, c->num_state == 1 ? RT_OK : RT_ERR_NOTFOUND,
                                        c->num);
            else
                st = rt_batch_push_cell(b, idx, in, rc, j, c->s, c->len, err);
            if (st)
                where(rows, r, at, sizeof at);
            if (st == RT_ERR_INVALID) {
                rt_err_prefix(err, "%s", at);
                return st;
            }
            if (st)
                return rt_err_set(err, st, "%s: %s: cannot add the value", at,
                                  f->def->raw_columns[j]->name);
        }
    }
    return RT_OK;
}

rt_status trn_err_at_row(rt_status st, const trn_rows *rows, const size_t *row_of, size_t n,
                         rt_err *err)
{
    static const char pre[] = "instances[";
    if (!st || !err || strncmp(err->msg, pre, sizeof pre - 1) != 0)
        return st;
    char *end;
    unsigned long long i = strtoull(err->msg + sizeof pre - 1, &end, 10);
    if (*end != ']' || i >= n)
        return st;
    size_t r = row_of ? row_of[i] : (size_t)i;
    if (r >= rows->n)
        return st;
    const char *rest = end + 1;
    if (*rest == '.')
        rest++;
    else if (*rest == ':')
        rest += *(rest + 1) == ' ' ? 2 : 1;
    char at[600], msg[RT_ERR_MAX];
    where(rows, r, at, sizeof at);
    snprintf(msg, sizeof msg, "%s", rest);
    rt_err_set(err, st, "%s: %s", at, msg);
    return st;
}
