/*
 * trn_graph.c — a custom model graph (graph.nodes, the custom estimator)
 * in the trainer: its tensors' roles and initializers, the training forward
 * (dropout's masks, batch_norm with the batch's statistics; the rest is the
 * serving forward's rt_node_forward), and
 * backprop through the DAG in reverse node order, each node's delta the sum
 * of its readers' (trn_nodes.c does one node). The linear block and the
 * embedding tables reuse the canned parts' backprop (trn_backprop.c): the
 * linear node's delta is handed over as the linear part's d loss / d
 * logits, the input nodes' deltas of embedding slices as the tables'.
 * The outputs of the nodes named in Graph.summaries are handed to the
 * TensorBoard summaries (trn_events.c) as the forward left them.
 * Several heads (TF's MultiHead): the logits are the heads' nodes' outputs
 * side by side, and each head's columns of d loss / d logits its node's delta.
 */
#include "trn_internal.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static long pidx(const trn_model *m, const char *name)
{
    for (size_t i = 0; i < m->n_params; i++)
        if (strcmp(m->p[i].name, name) == 0)
            return (long)i;
    return -1;
}

rt_status trn_nodes_classify(trn_model *m, rt_err *err)
{
    const Predictd__Graph *gr = m->def->graph;
    size_t n = gr->n_nodes;
    m->n_nodes = n;
    m->sum_node = calloc(gr->n_summaries ? gr->n_summaries : 1, sizeof *m->sum_node);
    if (!m->sum_node)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < gr->n_summaries; i++) {
        size_t k = 0;
        while (k < n && strcmp(gr->nodes[k]->name, gr->summaries[i]) != 0)
            k++;
        if (k == n)
            return rt_err_set(err, RT_ERR_FORMAT, "graph summaries[%zu]: no node named \"%s\"",
                              i, gr->summaries[i]);
        m->sum_node[i] = k;
    }
    m->np = calloc(n ? n : 1, sizeof *m->np);
    m->ny = calloc(n ? n : 1, sizeof *m->ny);
    m->npv = calloc(n ? n : 1, sizeof *m->npv);
    m->nbuf = calloc(n ? n : 1, sizeof *m->nbuf);
    m->npre = calloc(n ? n : 1, sizeof *m->npre);
    m->nmask = calloc(n ? n : 1, sizeof *m->nmask);
    m->nd = calloc(n ? n : 1, sizeof *m->nd);
    if (!m->np || !m->ny || !m->npv || !m->nbuf || !m->npre || !m->nmask || !m->nd)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    for (size_t k = 0; k < n; k++) {
        const Predictd__Node *nd = gr->nodes[k];
        trn_node_par *q = &m->np[k];
        q->kernel = q->bias = q->gamma = q->beta = q->mean = q->var = -1;
        if (nd->kind == PREDICTD__NODE_KIND__NODE_BATCH_NORM) {
            const Predictd__BatchNorm *bn = nd->batch_norm;
            if (!bn)
                return rt_err_set(err, RT_ERR_FORMAT, "graph node %s: no batch_norm", nd->name);
            long *ix[4] = {&q->gamma, &q->beta, &q->mean, &q->var};
            const char *names[4] = {bn->gamma, bn->beta, bn->moving_mean, bn->moving_variance};
            static const tp_kind kinds[4] = {TP_BN_GAMMA, TP_BN_BETA, TP_BN_MOVING,
                                             TP_BN_MOVING};
            for (size_t t = 0; t < 4; t++) {
                if ((*ix[t] = pidx(m, names[t])) < 0 || m->p[*ix[t]].count != nd->units)
                    return rt_err_set(err, RT_ERR_FORMAT, "graph node %s: tensor %s unknown "
                                      "or not [%u]", nd->name, names[t], nd->units);
                m->p[*ix[t]].kind = kinds[t];
                m->p[*ix[t]].dnn = 1;
            }
            q->eps = bn->epsilon;
            q->momentum = bn->momentum;
            m->batch_norm = 1; /* refused under mpirun, as the canned batch_norm */
            m->n_dropout++;    /* the training forward differs from serving's */
        }
        for (size_t j = 0; j < nd->n_inputs; j++)
            for (size_t r = 0; r < k; r++)
                if (strcmp(gr->nodes[r]->name, nd->inputs[j]) == 0)
                    m->np[r].readers++;
        m->n_dropout += nd->kind == PREDICTD__NODE_KIND__NODE_DROPOUT;
        if (nd->kind != PREDICTD__NODE_KIND__NODE_DENSE)
            continue;
        q->kernel = pidx(m, nd->kernel);
        q->bias = pidx(m, nd->bias);
        if (q->kernel < 0 || q->bias < 0)
            return rt_err_set(err, RT_ERR_FORMAT, "graph node %s: tensors %s/%s unknown",
                              nd->name, nd->kernel, nd->bias);
        m->p[q->kernel].kind = TP_KERNEL;
        m->p[q->bias].kind = TP_BIAS;
        m->p[q->kernel].dnn = m->p[q->bias].dnn = 1;
        q->l1 = nd->l1;
        q->l2 = nd->l2;
    }
    return RT_OK;
}

/* Keras's initializers by name (fan_in = rows, fan_out = cols): uniform in
 * +-sqrt(3 scale), or truncated normal with stddev sqrt(scale) / .87962566
 * (TF's variance_scaling), scale = 1 / avg fan (glorot), 2 / fan_in (he),
 * 1 / fan_in (lecun). Returns false for glorot_uniform / zeros (done). */
static bool init_one(tparam *p, const char *how, trn_rng *rng)
{
    if (!how || !*how || strcmp(how, "glorot_uniform") == 0 || strcmp(how, "zeros") == 0)
        return false;
    double fin = (double)p->rows, fout = (double)p->cols;
    if (strcmp(how, "ones") == 0) {
        for (uint64_t k = 0; k < p->count; k++)
            p->data[k] = 1.0f;
        return true;
    }
    double scale = strncmp(how, "glorot", 6) == 0 ? 2.0 / (fin + fout)
                   : strncmp(how, "he", 2) == 0   ? 2.0 / fin
                                                  : 1.0 / fin;
    bool normal = strstr(how, "normal") != NULL;
    for (uint64_t k = 0; k < p->count; k++) {
        if (normal) {
            double x;
            do
                x = trn_rng_normal(rng);
            while (fabs(x) > 2.0);
            p->data[k] = (float)(x * sqrt(scale) / .87962566103423978);
        } else {
            p->data[k] = (float)((2.0 * trn_rng_uniform(rng) - 1.0) * sqrt(3.0 * scale));
        }
    }
    return true;
}

void trn_nodes_init(trn_model *m, uint64_t seed)
{
    trn_rng rng;
    trn_rng_seed(&rng, seed ^ 0x6e6f646573ULL); /* "nodes": the canned stream is untouched */
    const Predictd__Graph *gr = m->def->graph;
    for (size_t k = 0; k < m->n_nodes; k++) {
        const trn_node_par *q = &m->np[k];
        if (q->gamma >= 0) /* batch_norm: gamma and the moving variance start at 1 */
            for (uint64_t j = 0; j < m->p[q->gamma].count; j++)
                m->p[q->gamma].data[j] = m->p[q->var].data[j] = 1.0f;
        if (q->kernel >= 0)
            init_one(&m->p[q->kernel], gr->nodes[k]->kernel_initializer, &rng);
        if (q->bias >= 0)
            init_one(&m->p[q->bias], gr->nodes[k]->bias_initializer, &rng);
    }
}

/* Buffers for n rows of every node. */
static rt_status node_scratch(trn_model *m, size_t n, rt_err *err)
{
    if (n <= m->cap_nodes)
        return RT_OK;
    for (size_t k = 0; k < m->n_nodes; k++) {
        const rt_node_op *op = rt_graph_node(m->g, k, NULL, NULL);
        size_t w = op->out;
        float *a = realloc(m->nbuf[k], n * w * sizeof(float));
        if (a)
            m->nbuf[k] = a;
        float *b = realloc(m->npre[k], n * w * sizeof(float));
        if (b)
            m->npre[k] = b;
        float *c = realloc(m->nmask[k], n * w * sizeof(float));
        if (c)
            m->nmask[k] = c;
        float *d = realloc(m->nd[k], n * w * sizeof(float));
        if (d)
            m->nd[k] = d;
        if (!a || !b || !c || !d)
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory (batch of %zu)", n);
    }
    m->cap_nodes = n;
    return RT_OK;
}

/* Batch normalization of x (n x w) into y with the batch's statistics
 * (biased variance, as tf.layers.BatchNormalization in training and the
 * canned DNN's bn_train), keeping the normalized values (xh, n x w) and
 * 1/std (istd, w) for backprop; moves the moving statistics when update. */
static void bn_train(trn_model *m, const trn_node_par *q, const float *x, float *y, float *xh,
                     float *istd, size_t n, size_t w, int update)
{
    trn_bn b = {m->p[q->gamma].data, m->p[q->beta].data, m->p[q->mean].data,
                m->p[q->var].data, q->eps, q->momentum};
    trn_bn_train(&b, x, y, xh, istd, n, w, update);
}

rt_status trn_nodes_forward(trn_model *m, size_t n, int update, rt_err *err)
{
    rt_status st = node_scratch(m, n, err);
    if (st)
        return st;
    const float *xs[64];
    for (size_t k = 0; k < m->n_nodes; k++) {
        const size_t *in;
        const rt_node_op *op = rt_graph_node(m->g, k, &in, NULL);
        size_t w = op->out;
        m->npv[k] = m->npre[k];
        if (!m->n_dropout) { /* no dropout: the serving forward's values are these */
            size_t ww = 0;
            m->ny[k] = rt_workspace_node(m->ws, k, &m->npv[k], &ww);
            if (!m->ny[k] || ww != w)
                return rt_err_set(err, RT_ERR_INVALID, "training forward: node %zu missing", k);
            continue;
        }
        switch (op->kind) {
        case PREDICTD__NODE_KIND__NODE_INPUT:
        case PREDICTD__NODE_KIND__NODE_EMBEDDING:
        case PREDICTD__NODE_KIND__NODE_LINEAR: {
            size_t ww = 0;
            m->ny[k] = rt_workspace_node(m->ws, k, NULL, &ww);
            if (!m->ny[k] || ww != w)
                return rt_err_set(err, RT_ERR_INVALID, "training forward: node %zu missing", k);
            continue;
        }
        case PREDICTD__NODE_KIND__NODE_DROPOUT:
            if (!m->drop_reuse)
                trn_dropout_mask(&m->drop_rng, op->rate, m->nmask[k], n * w);
            trn_dropout_apply(m->nmask[k], m->ny[in[0]], m->nbuf[k], n * w);
            break;
        case PREDICTD__NODE_KIND__NODE_BATCH_NORM: /* xhat in npre, 1/std in nmask */
            bn_train(m, &m->np[k], m->ny[in[0]], m->nbuf[k], m->npre[k], m->nmask[k], n, w,
                     update);
            break;
        default:
            if (op->n_in > sizeof xs / sizeof xs[0])
                return rt_err_set(err, RT_ERR_LIMIT, "training forward: too many inputs");
            for (size_t j = 0; j < op->n_in; j++)
                xs[j] = m->ny[in[j]];
            rt_node_forward(op, xs, n,
                            op->kind == PREDICTD__NODE_KIND__NODE_DENSE ? m->npre[k] : NULL,
                            m->nbuf[k]);
            break;
        }
        m->ny[k] = m->nbuf[k];
    }
    const size_t *hn, *ho, *hw;
    size_t nh = rt_graph_heads(m->g, &hn, &ho, &hw);
    for (size_t h = 0; h < nh; h++) /* several heads: their logits side by side */
        for (size_t i = 0; i < n; i++)
            memcpy(m->logits + i * m->ld + ho[h], m->ny[hn[h]] + i * hw[h],
                   hw[h] * sizeof(float));
    if (nh)
        return RT_OK;
    size_t L = rt_graph_logits_node(m->g);
    memcpy(m->logits, m->ny[L], n * m->ld * sizeof(float));
    return RT_OK;
}

/* The embedding table (index into m->emb) of DNN input offset off, or -1. */
static long emb_at(const trn_model *m, size_t off)
{
    const size_t *cols, *offs, *wid;
    size_t dim;
    size_t nc = rt_graph_dnn_layout(m->g, &cols, &offs, &wid, &dim);
    for (size_t c = 0; c < nc; c++)
        if (offs[c] == off)
            for (size_t e = 0; e < m->n_emb; e++)
                if (m->emb[e].fc == cols[c])
                    return (long)e;
    return -1;
}

/* Adds d (n x w, a dense node's d loss / d pre-activation) times the
 * rows of its kernel (w wide) of input node j's embedding slices to the
 * tables' gradients: the canned DNN's first layer (trn_backprop.c), the same
 * sgemm per slice, when j is an input node read by that dense node alone. */
static void dense_to_tables(trn_model *m, size_t j, const float *d, const float *kernel,
                            size_t w, size_t n)
{
    const size_t *off, *sw;
    size_t ns = rt_graph_node_slices(m->g, j, &off, &sw), at = 0;
    for (size_t q = 0; q < ns; at += sw[q], q++) {
        long e = emb_at(m, off[q]);
        if (e < 0)
            continue;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)n, (blasint)sw[q],
                    (blasint)w, 1.0f, d, (blasint)w, kernel + at * w, (blasint)w, 1.0f,
                    m->emb_grad_in[e], (blasint)sw[q]);
    }
}

static bool is_input(const rt_node_op *op)
{
    return op->kind == PREDICTD__NODE_KIND__NODE_INPUT ||
           op->kind == PREDICTD__NODE_KIND__NODE_EMBEDDING;
}

rt_status trn_nodes_backprop(trn_model *m, size_t n, rt_err *err)
{
    rt_status st = node_scratch(m, n, err);
    if (st)
        return st;
    for (size_t k = 0; k < m->n_nodes; k++)
        m->np[k].dset = 0;
    const size_t *hn, *ho, *hw;
    size_t nh = rt_graph_heads(m->g, &hn, &ho, &hw);
    for (size_t h = 0; h < nh; h++) { /* several heads: each its columns' gradient */
        for (size_t i = 0; i < n; i++)
            memcpy(m->nd[hn[h]] + i * hw[h], m->dlogits + i * m->ld + ho[h],
                   hw[h] * sizeof(float));
        m->np[hn[h]].dset = 1;
    }
    if (!nh) {
        size_t L = rt_graph_logits_node(m->g);
        memcpy(m->nd[L], m->dlogits, n * m->ld * sizeof(float));
        m->np[L].dset = 1;
    }
    memset(m->dlogits, 0, n * m->ld * sizeof(float));
    float *dxs[64];
    const float *xs[64];
    unsigned char *sets[64];
    for (size_t k = m->n_nodes; k-- > 0;) {
        const size_t *in;
        const rt_node_op *op = rt_graph_node(m->g, k, &in, NULL);
        size_t w = op->out;
        if (!m->np[k].dset)
            continue; /* the head does not read it */
        if (op->kind == PREDICTD__NODE_KIND__NODE_LINEAR) {
            memcpy(m->dlogits, m->nd[k], n * w * sizeof(float));
            continue;
        }
        if (is_input(op)) {
            const size_t *off, *sw;
            size_t ns = rt_graph_node_slices(m->g, k, &off, &sw), at = 0;
            for (size_t q = 0; q < ns; at += sw[q], q++) {
                long e = emb_at(m, off[q]);
                if (e < 0)
                    continue; /* one-hot and numeric inputs have no parameters */
                float *g = m->emb_grad_in[e];
                for (size_t i = 0; i < n; i++)
                    for (size_t j = 0; j < sw[q]; j++)
                        g[i * sw[q] + j] += m->nd[k][i * w + at + j];
            }
            continue;
        }
        if (op->n_in > sizeof xs / sizeof xs[0])
            return rt_err_set(err, RT_ERR_LIMIT, "backprop: too many inputs");
        if (op->kind == PREDICTD__NODE_KIND__NODE_BATCH_NORM) {
            unsigned char *set = &m->np[in[0]].dset;
            bool assign = !*set;
            *set = 1;
            trn_bn_backward(m, m->np[k].gamma, m->np[k].beta, m->nd[k], m->npre[k], m->nmask[k],
                            m->nd[in[0]], assign, n, w);
            continue;
        }
        /* a dense node alone over an input node: straight to the tables */
        bool direct = op->kind == PREDICTD__NODE_KIND__NODE_DENSE &&
                      is_input(rt_graph_node(m->g, in[0], NULL, NULL)) &&
                      m->np[in[0]].readers == 1;
        for (size_t j = 0; j < op->n_in; j++) {
            xs[j] = m->ny[in[j]];
            dxs[j] = direct ? NULL : m->nd[in[j]];
            sets[j] = &m->np[in[j]].dset;
        }
        const trn_node_par *q = &m->np[k];
        trn_node_io io = {.x = xs, .pre = m->npv[k], .y = m->ny[k], .dy = m->nd[k],
                          .mask = op->kind == PREDICTD__NODE_KIND__NODE_DROPOUT ? m->nmask[k]
                                                                                : NULL,
                          .dx = dxs, .dx_set = sets,
                          .dpre = op->kind == PREDICTD__NODE_KIND__NODE_DENSE ? m->nd[k]
                                                                              : NULL,
                          .dkernel = q->kernel >= 0 ? m->p[q->kernel].grad : NULL,
                          .dbias = q->bias >= 0 ? m->p[q->bias].grad : NULL};
        if ((st = trn_node_backward(op, &io, n, err)))
            return st;
        if (direct && m->n_emb)
            dense_to_tables(m, in[0], m->nd[k], op->kernel, w, n); /* now d / d pre */
        if (q->kernel >= 0 && (q->l1 > 0 || q->l2 > 0)) {
            tparam *p = &m->p[q->kernel]; /* d (l1 |w| + l2 w^2) */
            for (uint64_t e = 0; e < p->count; e++) {
                float v = p->data[e];
                p->grad[e] += 2.0f * q->l2 * v + (v > 0 ? q->l1 : v < 0 ? -q->l1 : 0.0f);
            }
        }
    }
    return RT_OK;
}

double trn_nodes_reg_loss(const trn_model *m)
{
    double r = 0.0;
    for (size_t k = 0; k < m->n_nodes; k++) {
        const trn_node_par *q = &m->np[k];
        if (q->kernel < 0 || (q->l1 <= 0 && q->l2 <= 0))
            continue;
        const tparam *p = &m->p[q->kernel];
        double a = 0.0, b = 0.0;
        for (uint64_t e = 0; e < p->count; e++) {
            a += fabs((double)p->data[e]);
            b += (double)p->data[e] * p->data[e];
        }
        r += q->l1 * a + q->l2 * b;
    }
    return r;
}

const float *trn_nodes_summary(const trn_model *m, size_t i, const char **name, size_t *width)
{
    size_t k = m->sum_node[i];
    *name = m->def->graph->nodes[k]->name;
    *width = rt_graph_node(m->g, k, NULL, NULL)->out;
    return m->ny ? m->ny[k] : NULL;
}

void trn_nodes_free(trn_model *m)
{
    free(m->sum_node);
    for (size_t k = 0; k < m->n_nodes; k++) {
        if (m->nbuf)
            free(m->nbuf[k]);
        if (m->npre)
            free(m->npre[k]);
        if (m->nmask)
            free(m->nmask[k]);
        if (m->nd)
            free(m->nd[k]);
    }
    free(m->np);
    free(m->ny);
    free(m->npv);
    free(m->nbuf);
    free(m->npre);
    free(m->nmask);
    free(m->nd);
}
