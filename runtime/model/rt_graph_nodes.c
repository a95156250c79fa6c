/*
 * rt_graph_nodes.c — compiles a custom model graph's nodes (Graph.nodes,
 * the custom estimator) into rt_gnode: each node's inputs as indexes of
 * earlier nodes, its widths checked against what it reads, an input or
 * embedding node's column slices of the graph's one DNN input vector, the
 * linear block (the graph's linear part), the head's logits node (several
 * heads, TF's MultiHead: each head's, and its columns of the logits). The
 * spec reader checked all this with the spec's paths; a ModelDef from
 * model.pb is checked again here (RT_ERR_FORMAT naming the node), never
 * trusted. Tensors are bound by rt_graph.c; the forward is rt_forward.c's.
 */
#include "rt_model.h"
#include "rt_model_internal.h"
#include "rt_model_limits.h"

#include <stdlib.h>
#include <string.h>

#define NOMEM(err) rt_err_set((err), RT_ERR_NOMEM, "out of memory")

static const char *nm(const Predictd__Node *nd)
{
    return nd && nd->name ? nd->name : "?";
}

/* The slices of the DNN input of columns cols[0..n). */
static rt_status compile_slices(rt_graph *g, rt_gnode *gn, rt_err *err)
{
    const Predictd__Node *nd = gn->def;
    gn->n_slices = nd->n_columns;
    gn->slice_off = calloc(nd->n_columns ? nd->n_columns : 1, sizeof(size_t));
    gn->slice_w = calloc(nd->n_columns ? nd->n_columns : 1, sizeof(size_t));
    if (!gn->slice_off || !gn->slice_w)
        return NOMEM(err);
    size_t w = 0;
    for (size_t k = 0; k < nd->n_columns; k++) {
        size_t i = 0;
        while (i < g->n_dnn && strcmp(g->fcols[g->dnn_cols[i]].def->name, nd->columns[k]))
            i++;
        if (i == g->n_dnn)
            return rt_err_set(err, RT_ERR_FORMAT, "graph node %s: column %.64s is not a DNN "
                              "column of the graph", nm(nd), nd->columns[k]);
        gn->slice_off[k] = g->dnn_offset[i];
        gn->slice_w[k] = g->dnn_width[i];
        w += g->dnn_width[i];
        for (size_t q = k; q > 0 && gn->slice_off[q - 1] > gn->slice_off[q]; q--) {
            size_t o = gn->slice_off[q], ww = gn->slice_w[q]; /* input_layer's order: */
            gn->slice_off[q] = gn->slice_off[q - 1];          /* by name, as the DNN */
            gn->slice_w[q] = gn->slice_w[q - 1];              /* input's */
            gn->slice_off[q - 1] = o;
            gn->slice_w[q - 1] = ww;
        }
    }
    if (nd->kind == PREDICTD__NODE_KIND__NODE_EMBEDDING &&
        (nd->n_columns != 1 || !rt_fc_kind_of(g->fcols[g->dnn_cols[0]].type)))
        return rt_err_set(err, RT_ERR_FORMAT, "graph node %s: an embedding node reads one "
                          "column", nm(nd));
    if (w == 0 || w != nd->units)
        return rt_err_set(err, RT_ERR_FORMAT, "graph node %s: its columns are %zu wide, "
                          "units %u", nm(nd), w, nd->units);
    return RT_OK;
}

/* Several heads: each head's logits node, its columns in the logits (the
 * heads' widths side by side, filling logits_dim). */
static rt_status compile_heads(rt_graph *g, rt_err *err)
{
    const Predictd__Graph *gd = g->def->graph;
    size_t n = gd->n_heads, at = 0;
    g->head_node = calloc(n, sizeof *g->head_node);
    g->head_off = calloc(n, sizeof *g->head_off);
    g->head_w = calloc(n, sizeof *g->head_w);
    if (!g->head_node || !g->head_off || !g->head_w)
        return NOMEM(err);
    g->n_heads = n;
    for (size_t k = 0; k < n; k++) {
        const Predictd__NodeHead *nh = gd->heads[k];
        size_t j = 0;
        while (nh && nh->logits && j < g->n_nodes && strcmp(g->nodes[j].def->name, nh->logits))
            j++;
        if (!nh || !nh->logits || j == g->n_nodes)
            return rt_err_set(err, RT_ERR_FORMAT, "graph: head %zu's logits node is not a "
                              "node", k);
        g->head_node[k] = j;
        g->head_off[k] = at;
        g->head_w[k] = g->nodes[j].op.out;
        at += g->nodes[j].op.out;
    }
    if (at != g->logits_dim)
        return rt_err_set(err, RT_ERR_FORMAT, "graph: the heads' logits nodes are %zu wide, "
                          "the heads read %zu", at, g->logits_dim);
    return RT_OK;
}

rt_status rt_graph_nodes_compile(rt_graph *g, rt_err *err)
{
    const Predictd__Graph *gd = g->def->graph;
    size_t n = gd->n_nodes;
    if (n > RT_SPEC_MAX_NODES)
        return rt_err_set(err, RT_ERR_LIMIT, "graph: %zu nodes, limit %d", n, RT_SPEC_MAX_NODES);
    if (gd->n_heads < 1 || !gd->heads[0] || !gd->heads[0]->logits)
        return rt_err_set(err, RT_ERR_FORMAT, "graph: a custom graph has one head (%zu)",
                          gd->n_heads);
    if (gd->n_hidden_layers || gd->logits_layer)
        return rt_err_set(err, RT_ERR_FORMAT, "graph: nodes and canned DNN layers together");
    if (!(g->nodes = calloc(n, sizeof *g->nodes)))
        return NOMEM(err);
    g->n_nodes = n;
    size_t linear = 0;
    long logits = -1;
    for (size_t i = 0; i < n; i++) {
        rt_gnode *gn = &g->nodes[i];
        const Predictd__Node *nd = gd->nodes[i];
        if (!nd || !nd->name || !*nd->name)
            return rt_err_set(err, RT_ERR_FORMAT, "graph node %zu: no name", i);
        for (size_t k = 0; k < i; k++)
            if (strcmp(gd->nodes[k]->name, nd->name) == 0)
                return rt_err_set(err, RT_ERR_FORMAT, "graph node %s: named twice", nd->name);
        gn->def = nd;
        gn->op.kind = nd->kind;
        gn->op.out = nd->units;
        gn->op.act = nd->activation;
        gn->op.alpha = nd->alpha;
        gn->op.rate = nd->rate;
        if (nd->units == 0 || nd->units > RT_GRAPH_MAX_SHAPE)
            return rt_err_set(err, RT_ERR_FORMAT, "graph node %s: units %u", nd->name,
                              nd->units);
        if (strcmp(gd->heads[0]->logits, nd->name) == 0)
            logits = (long)i;
        if (nd->n_inputs > RT_SPEC_MAX_NODE_INPUTS)
            return rt_err_set(err, RT_ERR_FORMAT, "graph node %s: too many inputs", nd->name);
        gn->in = calloc(nd->n_inputs ? nd->n_inputs : 1, sizeof(size_t));
        gn->in_width = calloc(nd->n_inputs ? nd->n_inputs : 1, sizeof(size_t));
        if (!gn->in || !gn->in_width)
            return NOMEM(err);
        gn->op.n_in = nd->n_inputs;
        gn->op.in_width = gn->in_width;
        for (size_t k = 0; k < nd->n_inputs; k++) {
            size_t j = 0;
            while (j < i && strcmp(gd->nodes[j]->name, nd->inputs[k]))
                j++;
            if (j == i)
                return rt_err_set(err, RT_ERR_FORMAT, "graph node %s: input %.64s is not an "
                                  "earlier node", nd->name, nd->inputs[k]);
            gn->in[k] = j;
            gn->in_width[k] = g->nodes[j].op.out;
        }
        rt_status st = RT_OK;
        switch (nd->kind) {
        case PREDICTD__NODE_KIND__NODE_INPUT:
        case PREDICTD__NODE_KIND__NODE_EMBEDDING:
            if (nd->n_inputs)
                return rt_err_set(err, RT_ERR_FORMAT, "graph node %s: reads no node", nd->name);
            st = compile_slices(g, gn, err);
            break;
        case PREDICTD__NODE_KIND__NODE_LINEAR:
            if (nd->n_inputs || ++linear > 1 || !g->n_linear || nd->units != g->logits_dim)
                return rt_err_set(err, RT_ERR_FORMAT, "graph node %s: one linear block, as "
                                  "wide as the logits, over the linear part", nd->name);
            break;
        default: {
            /* the structure, with stand-ins for the tensors bound later */
            static const float one[1] = {1.0f};
            rt_node_op op = gn->op;
            op.kernel = op.bias = op.bn_gamma = op.bn_beta = op.bn_mean = op.bn_var = one;
            if (nd->kind == PREDICTD__NODE_KIND__NODE_DENSE && (!nd->kernel || !*nd->kernel ||
                                                                !nd->bias || !*nd->bias))
                return rt_err_set(err, RT_ERR_FORMAT, "graph node %s: no tensor names",
                                  nd->name);
            if (nd->kind == PREDICTD__NODE_KIND__NODE_BATCH_NORM) {
                const Predictd__BatchNorm *bn = nd->batch_norm;
                if (!bn || !bn->gamma || !*bn->gamma || !bn->beta || !*bn->beta ||
                    !bn->moving_mean || !*bn->moving_mean || !bn->moving_variance ||
                    !*bn->moving_variance || !(bn->epsilon > 0 && bn->epsilon < 1) ||
                    !(bn->momentum >= 0 && bn->momentum <= 1))
                    return rt_err_set(err, RT_ERR_FORMAT, "graph node %s: bad batch_norm",
                                      nd->name);
                gn->op.bn_eps = bn->epsilon;
            }
            st = rt_node_check(&op, nd->name, err);
            if (st)
                return rt_err_set(err, RT_ERR_FORMAT, "graph %s", err ? err->msg : "");
            break;
        }
        }
        if (st)
            return st;
    }
    if (logits < 0)
        return rt_err_set(err, RT_ERR_FORMAT, "graph: the head's logits node %.64s is not a "
                          "node", gd->heads[0]->logits);
    if (gd->n_heads == 1 && g->nodes[logits].op.out != g->logits_dim)
        return rt_err_set(err, RT_ERR_FORMAT, "graph: the head's logits node %s is %zu wide, "
                          "the head reads %zu", gd->heads[0]->logits, g->nodes[logits].op.out,
                          g->logits_dim);
    if (g->n_linear && !linear)
        return rt_err_set(err, RT_ERR_FORMAT, "graph: a linear part without a linear node");
    g->logits_node = (size_t)logits;
    return gd->n_heads > 1 ? compile_heads(g, err) : RT_OK;
}

void rt_graph_nodes_free(rt_graph *g)
{
    for (size_t i = 0; i < g->n_nodes; i++) {
        free(g->nodes[i].in);
        free(g->nodes[i].in_width);
        free(g->nodes[i].slice_off);
        free(g->nodes[i].slice_w);
    }
    free(g->nodes);
    free(g->head_node);
    free(g->head_off);
    free(g->head_w);
    g->nodes = NULL;
    g->head_node = g->head_off = g->head_w = NULL;
    g->n_nodes = g->n_heads = 0;
}

size_t rt_graph_heads(const rt_graph *g, const size_t **node, const size_t **off,
                      const size_t **w)
{
    *node = g->head_node;
    *off = g->head_off;
    *w = g->head_w;
    return g->n_heads;
}

size_t rt_graph_num_nodes(const rt_graph *g)
{
    return g ? g->n_nodes : 0;
}

size_t rt_graph_logits_node(const rt_graph *g)
{
    return g->logits_node;
}

const rt_node_op *rt_graph_node(const rt_graph *g, size_t k, const size_t **in,
                                const char **name)
{
    if (!g || k >= g->n_nodes)
        return NULL;
    if (in)
        *in = g->nodes[k].in;
    if (name)
        *name = g->nodes[k].def->name;
    return &g->nodes[k].op;
}

size_t rt_graph_node_slices(const rt_graph *g, size_t k, const size_t **off, const size_t **w)
{
    const rt_gnode *gn = &g->nodes[k];
    *off = gn->slice_off;
    *w = gn->slice_w;
    return gn->n_slices;
}

void rt_graph_node_head_loss(const Predictd__NodeHead *nh, rt_loss *out)
{
    out->kind = RT_LOSS_SQUARED;
    out->param = 0.0;
    if (!nh || !nh->loss)
        return;
    int k = rt_metrics_loss_named(nh->loss);
    if (k > 0) {
        out->kind = (rt_loss_kind)k;
        out->param = nh->loss_param;
    }
}

void rt_graph_head_loss(const Predictd__ModelDef *def, rt_loss *out)
{
    const Predictd__Graph *gd = def ? def->graph : NULL;
    rt_graph_node_head_loss(gd && gd->n_heads == 1 ? gd->heads[0] : NULL, out);
}
