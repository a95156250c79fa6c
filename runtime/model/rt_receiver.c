/*
 * rt_receiver.c — serving input functions other than JSON features.
 *
 * CSV: one string per instance, parsed with the training CSV schema (the
 * ModelDef's raw_columns in file order). The label columns and the weight
 * column (estimator.weight_column), together, may be left out (the usual
 * case) or present (a line copied from the training data; their values are
 * ignored). The row is split, its numbers read and its empty cells
 * given their defaults by rt_raw.c, the code the trainer reads CSV files
 * with (rt_raw_csv_split, rt_batch_push_cell): a row means the same to both.
 * Unused columns are skipped.
 *
 * EXAMPLE: one serialized tf.Example per instance (runtime/data/example.proto),
 * decoded with protobuf-c. Features the model does not read are ignored, as
 * tf.parse_example does. float_list / int64_list feed numeric inputs;
 * bytes_list feeds string inputs (int64_list too, as decimal text).
 */
#include "rt_model.h"
#include "rt_model_internal.h"
#include "rt_data_internal.h"

#include "example.pb-c.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ CSV */

/* rt_receiver_csv_row with the graph given (the batch's). Splitting, numbers
 * and defaults are rt_raw.c's, the trainer's own. */
static rt_status csv_row(const rt_graph *g, rt_batch *b, size_t idx, const char *row,
                         size_t len, rt_err *err)
{
    const Predictd__ModelDef *def = rt_graph_def(g);
    rt_status st = RT_OK;
    rt_csv_span *fields = NULL;
    char *text = NULL;
    /* Strip the line end. */
    while (len > 0 && (row[len - 1] == '\n' || row[len - 1] == '\r'))
        len--;
    /* the label and weight columns (targets) may be given or left out */
    size_t ncols = def->n_raw_columns, nlabel = 0;
    for (size_t c = 0; c < ncols; c++)
        nlabel += def->raw_columns[c]->is_label || def->raw_columns[c]->is_weight ? 1 : 0;
    fields = malloc((ncols + 1) * sizeof *fields);
    text = malloc(len + 1);
    if (!fields || !text) {
        st = rt_err_set(err, RT_ERR_NOMEM, "csv_row: out of memory");
        goto out;
    }
    long nf = rt_raw_csv_split(row, len, text, fields, ncols + 1, err);
    if (nf < 0) {
        rt_err_prefix(err, "csv_row");
        st = RT_ERR_INVALID;
        goto out;
    }
    int with_label;
    if ((size_t)nf == ncols - nlabel)
        with_label = 0;
    else if (nlabel > 0 && (size_t)nf == ncols)
        with_label = 1;
    else {
        st = rt_err_set(err, RT_ERR_INVALID, "csv_row: expected %zu values, got %ld",
                        ncols - nlabel, nf);
        goto out;
    }
    size_t k = 0;
    for (size_t c = 0; c < ncols; c++) {
        const Predictd__RawColumn *rc = def->raw_columns[c];
        int target = rc->is_label || rc->is_weight;
        if (target && !with_label)
            continue;
        size_t field = k++;
        if (target || rc->unused)
            continue; /* a label's or weight's value is not read when serving */
        long in = rt_graph_find_input(g, rc->name, strlen(rc->name));
        st = rt_batch_push_cell(b, idx, in, rc, field, text + fields[field].off,
                              fields[field].len, err);
        if (st == RT_ERR_INVALID) {
            rt_err_prefix(err, "csv_row");
            goto out;
        }
        if (st != RT_OK) { /* the batch could not take the value */
            rt_err_set(err, st, "csv_row: %s: %s", rc->name, rt_err_status_str(st));
            goto out;
        }
    }
out:
    free(fields);
    free(text);
    return st;
}

/* ---------------------------------------------------------------- Example */

/* Pushes the values of one tf.Example feature into input `in`. */
static rt_status push_feature(const rt_graph *g, rt_batch *b, size_t idx, size_t in,
                              const char *name, const Tensorflow__Feature *ft, rt_err *err)
{
    int is_num = rt_graph_input_dtype(g, in) != PREDICTD__DTYPE__DT_STRING;
    rt_status st = RT_OK;
    switch (ft->kind_case) {
    case TENSORFLOW__FEATURE__KIND_FLOAT_LIST:
        if (!is_num)
            break;
        for (size_t k = 0; k < ft->float_list->n_value && st == RT_OK; k++)
            st = rt_batch_push_num(b, idx, in, (double)ft->float_list->value[k]);
        return st;
    case TENSORFLOW__FEATURE__KIND_INT64_LIST:
        for (size_t k = 0; k < ft->int64_list->n_value && st == RT_OK; k++) {
            int64_t v = ft->int64_list->value[k];
            if (is_num) {
                st = rt_batch_push_num(b, idx, in, (double)v);
            } else {
                char tmp[32];
                int n = snprintf(tmp, sizeof tmp, "%" PRId64, v);
                st = rt_batch_push_str(b, idx, in, tmp, (size_t)n);
            }
        }
        return st;
    case TENSORFLOW__FEATURE__KIND_BYTES_LIST:
        if (is_num)
            break;
        for (size_t k = 0; k < ft->bytes_list->n_value && st == RT_OK; k++) {
            const ProtobufCBinaryData *v = &ft->bytes_list->value[k];
            st = rt_batch_push_str(b, idx, in, (const char *)v->data, v->len);
        }
        return st;
    default:
        return RT_OK; /* an empty feature: missing */
    }
    return rt_err_set(err, RT_ERR_INVALID, "example_proto: feature %s: expected %s, got %s",
                      name, is_num ? "float_list or int64_list" : "bytes_list or int64_list",
                      rt_example_kind_name(ft->kind_case));
}

static rt_status example(const rt_graph *g, rt_batch *b, size_t idx, const uint8_t *bytes,
                         size_t len, rt_err *err)
{
    rt_status st = RT_OK;
    rt_pb_alloc pa;
    rt_pb_alloc_init(&pa);
    Tensorflow__Example *ex = tensorflow__example__unpack(&pa.a, len, bytes);
    if (!ex && pa.failed)
        return rt_err_set(err, RT_ERR_NOMEM, "example_proto: out of memory unpacking %zu bytes",
                          len);
    if (!ex)
        return rt_err_set(err, RT_ERR_INVALID, "example_proto: not a serialized tf.Example "
                          "(%zu bytes)", len);
    size_t nf = ex->features ? ex->features->n_feature : 0;
    for (size_t k = 0; k < nf; k++) {
        const Tensorflow__Features__FeatureEntry *e = ex->features->feature[k];
        const char *name = e->key ? e->key : "";
        long in = rt_graph_find_input(g, name, strlen(name));
        if (in < 0 || !e->value)
            continue; /* not read by the model */
        size_t have = 0;
        rt_batch_cell(b, idx, (size_t)in, &have);
        if (have > 0) {
            st = rt_err_set(err, RT_ERR_INVALID, "example_proto: feature %s given twice", name);
            goto out;
        }
        if ((st = push_feature(g, b, idx, (size_t)in, name, e->value, err)) != RT_OK) {
            if (st == RT_ERR_NOMEM)
                rt_err_set(err, st, "example_proto: out of memory");
            goto out;
        }
    }
out:
    tensorflow__example__free_unpacked(ex, NULL);
    return st;
}

/* ------------------------------------------------------------ public API */

rt_status rt_receiver_csv_row(rt_batch *b, size_t idx, const char *row, size_t len, rt_err *err)
{
    const rt_graph *g = b ? rt_batch_graph(b) : NULL;
    if (!g || (!row && len > 0))
        return rt_err_set(err, RT_ERR_INVALID, "csv_row: NULL argument");
    if (idx >= rt_batch_size(b))
        return rt_err_set(err, RT_ERR_INVALID, "csv_row: no instance %zu", idx);
    return csv_row(g, b, idx, row ? row : "", len, err);
}

rt_status rt_receiver_example(rt_batch *b, size_t idx, const uint8_t *bytes, size_t len,
                              rt_err *err)
{
    const rt_graph *g = b ? rt_batch_graph(b) : NULL;
    if (!g || (!bytes && len > 0))
        return rt_err_set(err, RT_ERR_INVALID, "example_proto: NULL argument");
    if (idx >= rt_batch_size(b))
        return rt_err_set(err, RT_ERR_INVALID, "example_proto: no instance %zu", idx);
    static const uint8_t empty[1] = {0};
    /* A feature absent from the example means "no values", as for
     * tf.parse_example's VarLenFeature; numeric inputs still need a value or
     * their column's default_value. */
    rt_batch_set_missing(b, RT_MISSING_EMPTY);
    return example(g, b, idx, bytes ? bytes : empty, len, err);
}
