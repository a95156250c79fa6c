/*
 * pm_transform.c — predict-model transform: what the serving input function
 * produced for each instance of a --json-instances file (each feature
 * column's ids or values and the DNN input vector), as text or one JSON
 * object per line; with --leaves, the leaf each instance reaches in each
 * tree of a BoostedTrees model.
 */
#include "pm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Each appender returns 0, or non-zero when an append failed (out of
 * memory): the caller checks once per printed line. */

/* [v, ...] */
static int print_floats(rt_buf *b, const float *v, size_t n)
{
    int rc = rt_buf_puts(b, "[");
    for (size_t k = 0; k < n; k++) {
        if (k)
            rc |= rt_buf_puts(b, ", ");
        rc |= rt_buf_json_float(b, v[k]);
    }
    return rc | rt_buf_puts(b, "]");
}

/* [id, ...], or [[id, weight], ...] for a weighted column's ids. */
static int print_ids(rt_buf *b, const rt_ids *ids, size_t i)
{
    int rc = rt_buf_puts(b, "[");
    for (uint32_t k = ids->offsets[i]; k < ids->offsets[i + 1]; k++) {
        if (k > ids->offsets[i])
            rc |= rt_buf_puts(b, ", ");
        if (!ids->weights) {
            rc |= rt_buf_printf(b, "%lld", (long long)ids->ids[k]);
            continue;
        }
        rc |= rt_buf_printf(b, "[%lld, ", (long long)ids->ids[k]);
        rc |= rt_buf_json_float(b, ids->weights[k]);
        rc |= rt_buf_puts(b, "]");
    }
    return rc | rt_buf_puts(b, "]");
}

int pm_cmd_transform(const pm_opts *o)
{
    int ret = 1;
    rt_buf line;
    rt_buf_init(&line);
    pm_instances in;
    memset(&in, 0, sizeof in);
    rt_ctx *c = NULL;
    float *x = NULL;
    uint32_t *leaves = NULL;
    rt_model *m = pm_open_model(o->dir, NULL);
    if (!m)
        goto out;
    if (pm_read_instances(o->instances, NULL, &in) != 0)
        goto out;
    if (!(c = rt_ctx_new())) {
        fprintf(stderr, "predict-model: out of memory\n");
        goto out;
    }
    const rt_graph *g = rt_model_graph(m);
    rt_err err = {{0}};
    rt_json_params p = rt_json_default_params();
    if (in.count > p.max_instances)
        p.max_instances = in.count;
    const rt_features *f = NULL;
    rt_status st = rt_json_transform(g, in.body.data, in.body.len, &p, c, &f, &err);
    if (st != RT_OK) {
        pm_report_error(o->instances, g, &in, err.msg);
        goto out;
    }
    int json = o->format && strcmp(o->format, "json") == 0;
    size_t n_trees = rt_trees_count(g);
    if (o->leaves) {
        if (!n_trees) {
            fprintf(stderr, "predict-model: --leaves: the model has no trees\n");
            goto out;
        }
        x = malloc(f->n * rt_trees_scratch(g) * sizeof *x + 1);
        leaves = malloc(f->n * n_trees * sizeof *leaves + 1);
        if (!x || !leaves) {
            fprintf(stderr, "predict-model: out of memory\n");
            goto out;
        }
        if (rt_trees_leaves(g, f, x, leaves, &err) != RT_OK) {
            fprintf(stderr, "predict-model: %s\n", err.msg);
            goto out;
        }
    }
    if (!json && f->dnn_input) {
        /* Where each DNN column sits in dnn_input: name@offset(+width). */
        const size_t *cols, *off, *wid;
        size_t total = 0, nd = rt_graph_dnn_layout(g, &cols, &off, &wid, &total);
        printf("dnn_input layout (%zu values, columns sorted by name):", total);
        for (size_t k = 0; k < nd; k++) {
            printf(" %s@%zu", rt_graph_column(g, cols[k])->name, off[k]);
            if (wid[k] > 1)
                printf("+%zu", wid[k]);
        }
        printf("\n");
    }
    int name_w = pm_name_width(g);
    for (size_t i = 0; i < f->n; i++) {
        rt_buf_reset(&line);
        int rc = json ? rt_buf_puts(&line, "{") : rt_buf_printf(&line, "instance %zu:\n", i);
        size_t n_cols = rt_graph_num_columns(g);
        for (size_t col = 0; col < n_cols && col < f->n_columns; col++) {
            const char *name = rt_graph_column(g, col)->name;
            int is_ids = f->ids && f->ids[col].offsets;
            if (json) {
                if (col)
                    rc |= rt_buf_puts(&line, ", ");
                rc |= rt_buf_json_string(&line, name, strlen(name));
                rc |= rt_buf_puts(&line, is_ids ? ": {\"ids\": " : ": {\"values\": ");
            } else {
                rc |=
                    rt_buf_printf(&line, "  %-*s  %-6s ", name_w, name, is_ids ? "ids" : "values");
            }
            if (is_ids)
                rc |= print_ids(&line, &f->ids[col], i);
            else if (f->values && f->values[col])
                rc |= print_floats(&line, f->values[col] + i * f->width[col], f->width[col]);
            else
                rc |= rt_buf_puts(&line, "[]");
            rc |= rt_buf_puts(&line, json ? "}" : "\n");
        }
        if (f->dnn_input) {
            rc |= rt_buf_puts(&line, json ? ", \"dnn_input\": " : "  dnn_input ");
            if (!json)
                rc |= rt_buf_printf(&line, "(dim %zu) ", f->dnn_dim);
            rc |= print_floats(&line, f->dnn_input + i * f->dnn_dim, f->dnn_dim);
            if (!json)
                rc |= rt_buf_puts(&line, "\n");
        }
        if (o->leaves) {
            rc |= rt_buf_puts(&line, json ? ", \"leaves\": [" : "  leaves [");
            for (size_t t = 0; t < n_trees; t++)
                rc |= rt_buf_printf(&line, t ? ", %u" : "%u", leaves[i * n_trees + t]);
            rc |= rt_buf_puts(&line, json ? "]" : "]\n");
        }
        if (json)
            rc |= rt_buf_puts(&line, "}");
        if (rc || !line.data) {
            fprintf(stderr, "predict-model: out of memory\n");
            goto out;
        }
        printf("%s\n", line.data);
    }
    ret = 0;
out:
    free(x);
    free(leaves);
    rt_ctx_free(c);
    rt_model_close(m);
    pm_instances_free(&in);
    rt_buf_free(&line);
    return ret;
}
