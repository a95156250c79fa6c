/*
 * rt_forward.c — the forward pass: linear part + DNN part -> logits (or a
 * tree ensemble -> logits: rt_trees.c).
 *
 * Linear part: logits[i] = bias + sum over linear columns of
 *   categorical (bucketized, vocabulary, hash, crossed): the weight rows of
 *       the instance's ids (TensorFlow's linear_model, sparse_combiner "sum");
 *   indicator: the weight rows of its source column's ids (when the source's
 *       ids are present), else the dot product of its dense values;
 *   numeric / embedding: the dot product of the dense values with the rows.
 * Each weight tensor is [dim x logits_dim], row-major.
 *
 * DNN part: X = f->dnn_input (n x dnn_dim); every hidden layer
 * Y = act(X W + b) with rt_dense_rows (rt_dense.c), whose result per row does
 * not depend on the batch; the last layer (logits) is linear whatever its
 * stored activation says.
 * A hidden layer with batch normalization (estimator.batch_norm) is then
 * scaled per unit with its moving statistics, y' = y s + t with
 * s = gamma / sqrt(moving_variance + epsilon), t = beta - moving_mean s,
 * computed in double for each call (units square roots: nothing next to the
 * product; not folded into the next layer's kernel, which would need a copy
 * of it and round differently from the trainer's evaluation).
 * Activations stay in the rt_workspace (rt_workspace.c) for the trainer's backprop.
 *
 * Batch invariance: the linear part, batch normalization, the activations
 * and the trees work row by row and rt_dense_rows computes each row on its
 * own, so an instance's logits have the same bits alone, in a batch of any
 * size, merged with other requests (rt_merge.c) or in the trainer's
 * evaluation batches. OpenBLAS is not used here (the trainer's backprop
 * uses it).
 */
#include "rt_model.h"
#include "rt_model_internal.h"
#include "rt_data_internal.h"
#include "rt_model_limits.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Adds the weight rows of ids[offsets[i]..offsets[i+1]) to logits row i,
 * each times its id's weight when the ids have weights (prune: only the
 * weights > 0, as TensorFlow's safe_embedding_lookup_sparse; else all, as
 * an indicator's one-hot carries them). */
static rt_status add_id_rows(const rt_ids *ids, size_t n, const float *w, uint64_t dim,
                             size_t ld, float *logits, bool prune, const char *col, rt_err *err)
{
    const float *wt = ids->weights; /* read once: logits may alias it */
    for (size_t i = 0; i < n; i++) {
        float *out = logits + i * ld;
        for (uint32_t k = ids->offsets[i]; k < ids->offsets[i + 1]; k++) {
            int64_t id = ids->ids[k];
            float x = wt ? wt[k] : 1.0f; /* x * row: exact for 1 */
            if (id < 0 || (prune && !(x > 0.0f)))
                continue; /* dropped (default_id -1), or a pruned weight */
            if ((uint64_t)id >= dim)
                return rt_err_set(err, RT_ERR_INVALID,
                                  "linear column %s: id %lld out of range [0, %llu)", col,
                                  (long long)id, (unsigned long long)dim);
            const float *row = w + (size_t)id * ld;
            for (size_t j = 0; j < ld; j++)
                out[j] += x * row[j];
        }
    }
    return RT_OK;
}

/* Adds values (n x width) times w (width x ld) to logits. */
static void add_dense(const float *values, size_t n, size_t width, const float *w, size_t ld,
                      float *logits)
{
    for (size_t i = 0; i < n; i++) {
        float *out = logits + i * ld;
        const float *v = values + i * width;
        for (size_t k = 0; k < width; k++) {
            float x = v[k];
            if (x == 0.0f)
                continue;
            const float *row = w + k * ld;
            for (size_t j = 0; j < ld; j++)
                out[j] += x * row[j];
        }
    }
}

static const char *fcol_name(const rt_fcol *c)
{
    return (c->def && c->def->name) ? c->def->name : "?";
}

/* logits (n x ld) += the linear part. */
static rt_status forward_linear(const rt_graph *g, const rt_features *f, float *logits,
                                rt_err *err)
{
    size_t n = f->n, ld = g->logits_dim;
    if (g->linear_bias) {
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < ld; j++)
                logits[i * ld + j] += g->linear_bias[j];
    }
    for (size_t l = 0; l < g->n_linear; l++) {
        size_t c = g->linear_cols[l];
        if (c >= g->n_fcols || c >= f->n_columns)
            return rt_err_set(err, RT_ERR_INVALID, "linear column %zu out of range", c);
        const rt_fcol *col = &g->fcols[c];
        const float *w = g->linear_w[l];
        if (!w)
            return rt_err_set(err, RT_ERR_INVALID, "linear column %s has no weights",
                              fcol_name(col));
        rt_status st = RT_OK;
        if (col->kind ? col->kind->categorical : rt_fc_column_is_categorical(col->type)) {
            if (!f->ids || !f->ids[c].offsets)
                return rt_err_set(err, RT_ERR_INVALID, "linear column %s: no ids",
                                  fcol_name(col));
            st = add_id_rows(&f->ids[c], n, w, (uint64_t)col->num_buckets, ld, logits, true,
                             fcol_name(col), err);
        } else if (col->type == PREDICTD__COLUMN_TYPE__INDICATOR && col->source >= 0 &&
                   (size_t)col->source < f->n_columns && f->ids &&
                   f->ids[col->source].offsets) {
            st = add_id_rows(&f->ids[col->source], n, w, (uint64_t)col->width, ld, logits,
                             false, fcol_name(col), err);
        } else {
            if (!f->values || !f->values[c] || f->width[c] != col->width)
                return rt_err_set(err, RT_ERR_INVALID,
                                  "linear column %s: expected %zu dense values per instance",
                                  fcol_name(col), col->width);
            add_dense(f->values[c], n, col->width, w, ld, logits);
        }
        if (st != RT_OK)
            return st;
    }
    return RT_OK;
}

/* Batch normalization with the moving statistics of layer L on y (n x out). */
static rt_status batch_norm(const rt_layer *L, rt_workspace *ws, float *y, size_t n)
{
    size_t out = L->out;
    if (2 * out > ws->bn_cap) {
        float *p = realloc(ws->bn, 2 * out * sizeof(float));
        if (!p)
            return RT_ERR_NOMEM;
        ws->bn = p;
        ws->bn_cap = 2 * out;
    }
    float *scale = ws->bn, *shift = ws->bn + out;
    for (size_t j = 0; j < out; j++) {
        double s = (double)L->bn_gamma[j] / sqrt((double)L->bn_var[j] + (double)L->bn_eps);
        scale[j] = (float)s;
        shift[j] = (float)((double)L->bn_beta[j] - (double)L->bn_mean[j] * s);
    }
    for (size_t i = 0; i < n; i++) {
        float *r = y + i * out;
        for (size_t j = 0; j < out; j++)
            r[j] = r[j] * scale[j] + shift[j];
    }
    return RT_OK;
}

/* logits (n x ld) += the DNN part; activations into ws. */
static rt_status forward_dnn(const rt_graph *g, const rt_features *f, rt_workspace *ws,
                             float *logits, rt_err *err)
{
    size_t n = f->n, ld = g->logits_dim;
    rt_status st;
    if (!f->dnn_input || f->dnn_dim != g->dnn_dim)
        return rt_err_set(err, RT_ERR_INVALID, "DNN input: expected %zu values per instance",
                          g->dnn_dim);
    if (g->layers[0].in != g->dnn_dim || g->layers[g->n_layers - 1].out != ld)
        return rt_err_set(err, RT_ERR_INVALID, "DNN layers do not match the input (%zu) "
                          "or logits (%zu) dimension", g->dnn_dim, ld);
    if ((st = rt_workspace_reserve(ws, g->n_layers + 1)) != RT_OK)
        return rt_err_set(err, st, "DNN workspace: out of memory");
    /* layer 0 reads the features' DNN input where it is (no copy) */
    ws->in = f->dnn_input;
    ws->in_width = g->dnn_dim;
    for (size_t l = 0; l < g->n_layers; l++) {
        const rt_layer *L = &g->layers[l];
        if (l > 0 && L->in != g->layers[l - 1].out)
            return rt_err_set(err, RT_ERR_INVALID, "DNN layer %zu: %zu inputs, previous "
                              "layer has %zu units", l, L->in, g->layers[l - 1].out);
        if (!L->kernel || !L->bias)
            return rt_err_set(err, RT_ERR_INVALID, "DNN layer %zu has no weights", l);
        if ((st = rt_workspace_mat_size(ws, l + 1, n, L->out)) != RT_OK)
            return rt_err_set(err, st, "DNN workspace: %zu x %zu too large", n, L->out);
        const float *x = l ? ws->mats[l].data : f->dnn_input;
        rt_dense_rows(x, n, L->in, L->kernel, L->bias, L->out, ws->mats[l + 1].data);
        if (l + 1 < g->n_layers) /* the logits layer has none */
            rt_activate(L->act, ws->mats[l + 1].data, n * L->out);
        if (L->bn_gamma && (st = batch_norm(L, ws, ws->mats[l + 1].data, n)) != RT_OK)
            return rt_err_set(err, st, "DNN workspace: out of memory");
    }
    ws->used = g->n_layers + 1;
    const float *out = ws->mats[g->n_layers].data;
    for (size_t k = 0; k < n * ld; k++)
        logits[k] += out[k];
    return RT_OK;
}

/* A custom graph (g->nodes, in order): node k's output in matrix 2k, a
 * dense node's value before its activation in 2k + 1. Input and embedding
 * nodes copy their slices of the DNN input, the linear node is the linear
 * part (forward_linear into zeros), the others rt_node_forward (rt_nodes.c:
 * row by row, so batch invariance holds as for the canned layers). The
 * logits are the head's node's output (several heads: theirs side by side). */
static rt_status forward_nodes(const rt_graph *g, const rt_features *f, rt_workspace *ws,
                               float *logits, rt_err *err)
{
    size_t n = f->n;
    rt_status st;
    if (g->n_dnn && (!f->dnn_input || f->dnn_dim != g->dnn_dim))
        return rt_err_set(err, RT_ERR_INVALID, "DNN input: expected %zu values per instance",
                          g->dnn_dim);
    if ((st = rt_workspace_reserve(ws, 2 * g->n_nodes)) != RT_OK)
        return rt_err_set(err, st, "graph workspace: out of memory");
    for (size_t k = 0; k < g->n_nodes; k++) {
        const rt_gnode *gn = &g->nodes[k];
        size_t w = gn->op.out;
        bool dense = gn->op.kind == PREDICTD__NODE_KIND__NODE_DENSE;
        if ((st = rt_workspace_mat_size(ws, 2 * k, n, w)) != RT_OK ||
            (st = rt_workspace_mat_size(ws, 2 * k + 1, n, dense ? w : 0)) != RT_OK)
            return rt_err_set(err, st, "graph workspace: %zu x %zu too large", n, w);
        float *y = ws->mats[2 * k].data;
        switch (gn->op.kind) {
        case PREDICTD__NODE_KIND__NODE_INPUT:
        case PREDICTD__NODE_KIND__NODE_EMBEDDING:
            for (size_t i = 0; i < n; i++) {
                size_t off = 0;
                for (size_t q = 0; q < gn->n_slices; q++) {
                    memcpy(y + i * w + off, f->dnn_input + i * g->dnn_dim + gn->slice_off[q],
                           gn->slice_w[q] * sizeof(float));
                    off += gn->slice_w[q];
                }
            }
            break;
        case PREDICTD__NODE_KIND__NODE_LINEAR:
            memset(y, 0, n * w * sizeof(float));
            if ((st = forward_linear(g, f, y, err)) != RT_OK)
                return st;
            break;
        default: {
            const float *xs[RT_SPEC_MAX_NODE_INPUTS];
            for (size_t j = 0; j < gn->op.n_in; j++)
                xs[j] = ws->mats[2 * gn->in[j]].data;
            rt_node_forward(&gn->op, xs, n, dense ? ws->mats[2 * k + 1].data : NULL, y);
            break;
        }
        }
    }
    ws->used = 2 * g->n_nodes;
    if (g->n_heads > 1) { /* the heads' logits side by side */
        for (size_t h = 0; h < g->n_heads; h++)
            for (size_t i = 0; i < n; i++)
                memcpy(logits + i * g->logits_dim + g->head_off[h],
                       ws->mats[2 * g->head_node[h]].data + i * g->head_w[h],
                       g->head_w[h] * sizeof(float));
        return RT_OK;
    }
    memcpy(logits, ws->mats[2 * g->logits_node].data, n * g->logits_dim * sizeof(float));
    return RT_OK;
}

rt_status rt_forward(const rt_graph *g, const rt_features *f, rt_workspace *ws, float *logits,
                     rt_err *err)
{
    if (!g || !f || !ws || (!logits && f->n > 0))
        return rt_err_set(err, RT_ERR_INVALID, "rt_forward: NULL argument");
    size_t n = f->n, ld = g->logits_dim;
    if (ld == 0)
        return rt_err_set(err, RT_ERR_INVALID, "model has logits dimension 0");
    if (ld > SIZE_MAX / sizeof(float) / (n ? n : 1))
        return rt_err_set(err, RT_ERR_LIMIT, "batch of %zu instances too large", n);
    if (f->n_columns < g->n_fcols)
        return rt_err_set(err, RT_ERR_INVALID, "features have %zu columns, model %zu",
                          f->n_columns, g->n_fcols);
    ws->used = 0;
    ws->n = n;
    ws->in = NULL;
    if (n == 0)
        return RT_OK;
    memset(logits, 0, n * ld * sizeof(float));
    if (g->onnx) /* an ONNX network in place of the linear part (rt_onnx_run.c) */
        return rt_onnx_forward(g->onnx, f, ws, logits, err);
    if (g->trees) {
        /* Trees replace the linear and DNN parts; matrix 0 is their scratch. */
        size_t w = rt_trees_gather_width(g->trees);
        rt_status st = rt_workspace_reserve(ws, 1);
        if (st == RT_OK)
            st = rt_workspace_mat_size(ws, 0, n, w);
        if (st == RT_OK)
            st = rt_trees_forward(g, f, ws->mats[0].data, logits, err);
        else
            rt_err_set(err, st, "trees: workspace for %zu x %zu inputs", n, w);
        return st;
    }
    if (g->n_nodes)
        return forward_nodes(g, f, ws, logits, err);
    rt_status st = forward_linear(g, f, logits, err);
    if (st == RT_OK && g->n_layers > 0)
        st = forward_dnn(g, f, ws, logits, err);
    return st;
}

rt_status rt_forward_stoppable(const rt_graph *g, const rt_features *f, rt_workspace *ws,
                               float *logits, size_t chunk, bool (*stop)(void *arg), void *arg,
                               rt_err *err)
{
    if (stop && stop(arg))
        return rt_err_set(err, RT_ERR_LIMIT, "stopped before the forward pass");
    if (!stop || chunk == 0 || !g || !f || f->n <= chunk || g->onnx)
        return rt_forward(g, f, ws, logits, err);
    /* row views of f: chunk rows at a time (absolute CSR offsets shifted,
     * dense values and the DNN input at their first row) */
    size_t nc = f->n_columns, ld = g->logits_dim;
    rt_ids *ids = malloc((nc ? nc : 1) * sizeof *ids);
    float **values = malloc((nc ? nc : 1) * sizeof *values);
    if (!ids || !values) {
        free(ids);
        free(values);
        return rt_err_set(err, RT_ERR_NOMEM, "forward pass: out of memory");
    }
    rt_status st = RT_OK;
    for (size_t r0 = 0; r0 < f->n && st == RT_OK; r0 += chunk) {
        if (r0 > 0 && stop(arg)) {
            st = rt_err_set(err, RT_ERR_LIMIT, "stopped after %zu of %zu rows of the forward "
                            "pass", r0, f->n);
            break;
        }
        rt_features v = *f;
        v.n = f->n - r0 < chunk ? f->n - r0 : chunk;
        for (size_t c = 0; c < nc; c++) {
            ids[c] = f->ids[c];
            if (ids[c].offsets)
                ids[c].offsets += r0;
            values[c] = f->values[c] ? f->values[c] + r0 * f->width[c] : NULL;
        }
        v.ids = f->ids ? ids : NULL;
        v.values = f->values ? values : NULL;
        v.dnn_input = f->dnn_input ? f->dnn_input + r0 * f->dnn_dim : NULL;
        st = rt_forward(g, &v, ws, logits + r0 * ld, err);
    }
    free(ids);
    free(values);
    return st;
}
