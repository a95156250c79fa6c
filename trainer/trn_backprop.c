/*
 * trn_backprop.c — backprop through the model, from the d loss / d logits
 * of the head's loss (rt_metrics_head_loss, runtime/stats/rt_metrics.c).
 *
 * Backprop mirrors rt_forward (rt_forward.c): the linear part's gradients go
 * to the weight rows of each instance's ids (sparse, rows marked) or to
 * dense rows times the values; the DNN's go backwards through the layers with
 * cblas_sgemm (dW = X^T D, dX = D W^T, through batch normalization with the
 * batch's statistics, the dropout mask and the activation's derivative)
 * down to the input vector, whose embedding slices are spread over the
 * embedding rows of the source column's ids by the combiner (mean, sum,
 * sqrtn). What each feature-column kind contributes is its row in
 * trn_fc.c's table, which points at the functions here.
 */
#include "trn_internal.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Marks row r of a sparse parameter as touched. */
static inline void touch(tparam *p, uint64_t r)
{
    if (!p->mark[r]) {
        p->mark[r] = 1;
        p->touched[p->n_touched++] = (uint32_t)r;
    }
}

/* grad rows of ids += dlogits rows, times the ids' weights when they have
 * some (prune: only weights > 0, as rt_forward's linear part). */
static rt_status ids_grad(tparam *p, const rt_ids *ids, size_t n, const float *dl, size_t ld,
                          bool prune, rt_err *err)
{
    if (!ids || !ids->offsets)
        return rt_err_set(err, RT_ERR_INVALID, "backprop %s: no ids", p->name);
    const float *wt = ids->weights;
    for (size_t i = 0; i < n; i++) {
        for (uint32_t k = ids->offsets[i]; k < ids->offsets[i + 1]; k++) {
            int64_t id = ids->ids[k];
            float x = wt ? wt[k] : 1.0f; /* x * dl: exact for 1 */
            if (id < 0 || (prune && !(x > 0.0f)))
                continue;
            if ((uint64_t)id >= p->rows)
                return rt_err_set(err, RT_ERR_INVALID, "backprop %s: id %lld out of range",
                                  p->name, (long long)id);
            touch(p, (uint64_t)id);
            float *g = p->grad + (size_t)id * ld;
            for (size_t j = 0; j < ld; j++)
                g[j] += x * dl[i * ld + j];
        }
    }
    return RT_OK;
}

static rt_status grow(float **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return RT_OK;
    float *q = realloc(*buf, need * sizeof(float));
    if (!q)
        return RT_ERR_NOMEM;
    *buf = q;
    *cap = need;
    return RT_OK;
}

/* d loss / d (embedding column values), n x dim, for every embedding column. */
static rt_status emb_scratch(trn_model *m, size_t n, rt_err *err)
{
    if (n > m->cap_emb) {
        for (size_t e = 0; e < m->n_emb; e++) {
            float *q = realloc(m->emb_grad_in[e], n * m->emb[e].dim * sizeof(float));
            if (!q)
                return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
            m->emb_grad_in[e] = q;
        }
        m->cap_emb = n;
    }
    for (size_t e = 0; e < m->n_emb; e++)
        memset(m->emb_grad_in[e], 0, n * m->emb[e].dim * sizeof(float));
    return RT_OK;
}

static long emb_of_fc(const trn_model *m, size_t fc)
{
    for (size_t e = 0; e < m->n_emb; e++)
        if (m->emb[e].fc == fc)
            return (long)e;
    return -1;
}

/* The kinds' linear gradients (trn_fc.c's rows point at them). */

/* A categorical column's weights: the rows of its ids. */
rt_status trn_grad_linear_ids(trn_model *m, const lin_col *lc, size_t n, rt_err *err)
{
    return ids_grad(&m->p[lc->param], &m->f.ids[lc->fc], n, m->dlogits, m->ld, true, err);
}

/* A dense column's weights: its values times d loss / d logits (and, for a
 * column with a table, d loss / d its values for the table's gradient). */
rt_status trn_grad_linear_dense(trn_model *m, const lin_col *lc, size_t n, rt_err *err)
{
    size_t ld = m->ld;
    const float *dl = m->dlogits;
    const rt_features *f = &m->f;
    tparam *p = &m->p[lc->param];
    size_t w = f->width[lc->fc];
    const float *v = f->values ? f->values[lc->fc] : NULL;
    if (!v || w != p->rows)
        return rt_err_set(err, RT_ERR_INVALID, "backprop %s: expected %llu values", p->name,
                          (unsigned long long)p->rows);
    if (p->sparse) { /* indicator without ids: every row may change */
        for (uint64_t r = 0; r < p->rows; r++)
            touch(p, r);
    }
    long e = emb_of_fc(m, lc->fc);
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < w; k++) {
            float x = v[i * w + k];
            float acc = 0.0f;
            for (size_t j = 0; j < ld; j++) {
                p->grad[k * ld + j] += x * dl[i * ld + j];
                acc += p->data[k * ld + j] * dl[i * ld + j];
            }
            if (e >= 0)
                m->emb_grad_in[e][i * w + k] += acc;
        }
    return RT_OK;
}

/* An indicator's weights: the rows of its source's ids (its one-hot). */
rt_status trn_grad_linear_src_ids(trn_model *m, const lin_col *lc, size_t n, rt_err *err)
{
    if (!m->f.ids || !m->f.ids[lc->src].offsets)
        return trn_grad_linear_dense(m, lc, n, err);
    return ids_grad(&m->p[lc->param], &m->f.ids[lc->src], n, m->dlogits, m->ld, false, err);
}

static rt_status linear_backprop(trn_model *m, size_t n, rt_err *err)
{
    size_t ld = m->ld;
    const float *dl = m->dlogits;
    if (m->lin_bias >= 0) {
        trn_node_add_rows(dl, n, ld, m->p[m->lin_bias].grad);
    }
    for (size_t l = 0; l < m->n_lin; l++) {
        rt_status st = m->lin[l].grad->linear(m, &m->lin[l], n, err);
        if (st)
            return st;
    }
    return RT_OK;
}

/* d *= the derivative of layer activation act at its outputs y: the canned
 * DNN's activations (relu, tanh, sigmoid, elu) have theirs as a function of
 * the output alone, y > 0 exactly where the input is, so y serves as the
 * input too (trn_act_grad, the graph's activation nodes' loops). */
static void act_backward(Predictd__Activation act, const float *y, float *d, size_t cnt)
{
    trn_act_grad(act, 0.0f, y, y, d, cnt);
}

void trn_dropout_free(trn_model *m)
{
    for (size_t l = 0; m->dx && l < m->n_layers; l++) {
        if (l > 0)
            free(m->dx[l]);
        free(m->dy[l]);
        free(m->dmask[l]);
        free(m->bn_xhat[l]);
        free(m->bn_istd[l]);
    }
    free(m->dx);
    free(m->dy);
    free(m->dmask);
    free(m->bn_xhat);
    free(m->bn_istd);
    m->dx = m->dy = m->dmask = m->bn_xhat = m->bn_istd = NULL;
    m->cap_drop = 0;
}

/* Scratch of the training forward pass for n rows. */
static rt_status train_scratch(trn_model *m, size_t n, rt_err *err)
{
    size_t L = m->n_layers;
    if (!m->dx) {
        m->dx = calloc(L, sizeof *m->dx);
        m->dy = calloc(L, sizeof *m->dy);
        m->dmask = calloc(L, sizeof *m->dmask);
        m->bn_xhat = calloc(L, sizeof *m->bn_xhat);
        m->bn_istd = calloc(L, sizeof *m->bn_istd);
        if (!m->dx || !m->dy || !m->dmask || !m->bn_xhat || !m->bn_istd)
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    }
    if (n <= m->cap_drop)
        return RT_OK;
    if (m->drop_reuse)
        return rt_err_set(err, RT_ERR_INVALID, "dropout: masks to reuse are too small");
    for (size_t l = 0; l + 1 < L; l++) {
        size_t w = m->layers[l].out;
        float **bufs[3] = {&m->dy[l], &m->dmask[l], &m->dx[l + 1]};
        for (size_t q = 0; q < 3; q++) {
            float *x = realloc(*bufs[q], n * w * sizeof(float));
            if (!x)
                return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
            *bufs[q] = x;
        }
        if (m->layers[l].bn_gamma >= 0) {
            float *x = realloc(m->bn_xhat[l], n * w * sizeof(float));
            if (x)
                m->bn_xhat[l] = x;
            if (!m->bn_istd[l])
                m->bn_istd[l] = malloc(w * sizeof(float));
            if (!x || !m->bn_istd[l])
                return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        }
    }
    m->cap_drop = n;
    return RT_OK;
}

static void bn_train(trn_model *m, const dnn_layer *D, size_t l, float *x, size_t n, int update)
{
    trn_bn b = {m->p[D->bn_gamma].data, m->p[D->bn_beta].data, m->p[D->bn_mean].data,
                m->p[D->bn_var].data, D->bn_eps, D->bn_momentum};
    trn_bn_train(&b, x, x, m->bn_xhat[l], m->bn_istd[l], n, D->out, update);
}

rt_status trn_dropout_forward(trn_model *m, size_t n, int update_moving, rt_err *err)
{
    size_t L = m->n_layers, ld = m->ld;
    if (L < 2 || (m->dropout <= 0 && !m->batch_norm))
        return RT_OK;
    rt_status st = train_scratch(m, n, err);
    if (st)
        return st;
    m->dx[0] = m->f.dnn_input;
    int drop = m->dropout > 0;
    float keep = (float)(1.0 - m->dropout), inv = 1.0f / keep;
    for (size_t l = 0; l + 1 < L; l++) {
        const dnn_layer *D = &m->layers[l];
        const tparam *K = &m->p[D->kernel], *B = &m->p[D->bias];
        float *y = m->dy[l];
        for (size_t i = 0; i < n; i++)
            memcpy(y + i * D->out, B->data, D->out * sizeof(float));
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)n, (blasint)D->out,
                    (blasint)D->in, 1.0f, m->dx[l], (blasint)D->in, K->data, (blasint)D->out,
                    1.0f, y, (blasint)D->out);
        float *mk = m->dmask[l], *x = m->dx[l + 1];
        rt_activate(D->act, y, n * D->out); /* serving's activation */
        for (size_t k = 0; k < n * D->out; k++) {
            if (!m->drop_reuse)
                mk[k] = !drop || trn_rng_uniform(&m->drop_rng) < keep ? (drop ? inv : 1.0f)
                                                                      : 0.0f;
            x[k] = y[k] * mk[k];
        }
        if (D->bn_gamma >= 0) /* after the dropout, as TF's canned DNN */
            bn_train(m, D, l, x, n, update_moving);
    }
    /* logits: swap the serving forward's DNN logits for the training ones */
    const dnn_layer *D = &m->layers[L - 1];
    size_t w;
    const float *plain = rt_workspace_layer(m->ws, L, &w);
    if (!plain || w != ld)
        return rt_err_set(err, RT_ERR_INVALID, "dropout: DNN logits missing");
    const tparam *K = &m->p[D->kernel], *B = &m->p[D->bias];
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < ld; j++)
            m->logits[i * ld + j] += B->data[j] - plain[i * ld + j];
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)n, (blasint)ld,
                (blasint)D->in, 1.0f, m->dx[L - 1], (blasint)D->in, K->data, (blasint)ld, 1.0f,
                m->logits, (blasint)ld);
    m->drop_active = 1;
    return RT_OK;
}

/* Backprop through layer l's batch normalization: d (n x w) holds d loss /
 * d output and becomes d loss / d input; gamma's and beta's gradients are
 * added (trn_bn_backward, as the graph's batch_norm nodes). */
static void bn_backward(trn_model *m, const dnn_layer *D, size_t l, float *d, size_t n)
{
    trn_bn_backward(m, D->bn_gamma, D->bn_beta, d, m->bn_xhat[l], m->bn_istd[l], d, true, n,
                    D->out);
}

static rt_status dnn_backprop(trn_model *m, size_t n, rt_err *err)
{
    size_t maxw = m->ld > m->dnn_dim ? m->ld : m->dnn_dim;
    for (size_t l = 0; l < m->n_layers; l++)
        if (m->layers[l].out > maxw)
            maxw = m->layers[l].out;
    size_t cap0 = m->cap_d, cap1 = m->cap_d;
    if (grow(&m->d0, &cap0, n * maxw) || grow(&m->d1, &cap1, n * maxw))
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    m->cap_d = cap0 < cap1 ? cap0 : cap1;
    float *delta = m->d0, *prev = m->d1;
    memcpy(delta, m->dlogits, n * m->ld * sizeof(float));
    int need_input = m->n_emb > 0;
    for (size_t l = m->n_layers; l-- > 0;) {
        const dnn_layer *L = &m->layers[l];
        size_t w_in = L->in;
        const float *x = m->drop_active ? m->dx[l] : rt_workspace_layer(m->ws, l, &w_in);
        if (!x || w_in != L->in)
            return rt_err_set(err, RT_ERR_INVALID, "backprop: layer %zu activations missing",
                              l);
        tparam *K = &m->p[L->kernel], *B = &m->p[L->bias];
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (blasint)L->in, (blasint)L->out,
                    (blasint)n, 1.0f, x, (blasint)L->in, delta, (blasint)L->out, 1.0f, K->grad,
                    (blasint)L->out);
        trn_node_add_rows(delta, n, L->out, B->grad);
        if (l == 0)
            break; /* the input's gradient: only its embedding slices, below */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)n, (blasint)L->in,
                    (blasint)L->out, 1.0f, delta, (blasint)L->out, K->data, (blasint)L->out,
                    0.0f, prev, (blasint)L->in);
        if (l > 0 && m->drop_active) {
            if (m->layers[l - 1].bn_gamma >= 0)
                bn_backward(m, &m->layers[l - 1], l - 1, prev, n);
            const float *mk = m->dmask[l - 1];
            for (size_t k = 0; k < n * L->in; k++)
                prev[k] *= mk[k];
            act_backward(m->layers[l - 1].act, m->dy[l - 1], prev, n * L->in);
        } else if (l > 0) {
            act_backward(m->layers[l - 1].act, x, prev, n * L->in);
        }
        float *t = delta;
        delta = prev;
        prev = t;
    }
    if (!need_input)
        return RT_OK;
    /* delta is now the first layer's (n x out): d loss / d dnn_input = delta
     * K^T, needed only in the embedding columns' slices (the one-hot and
     * numeric inputs have no parameters), so only those slices are computed:
     * slice = delta K[off..off+w)^T, added to the embedding's gradient. */
    const dnn_layer *L0 = &m->layers[0];
    const tparam *K0 = &m->p[L0->kernel];
    const size_t *cols, *off, *wid;
    size_t dim;
    size_t nc = rt_graph_dnn_layout(m->g, &cols, &off, &wid, &dim);
    if (dim != L0->in)
        return rt_err_set(err, RT_ERR_INVALID, "backprop: DNN input width %zu != %zu", dim,
                          L0->in);
    for (size_t k = 0; k < nc; k++) {
        long e = emb_of_fc(m, cols[k]);
        if (e < 0)
            continue;
        size_t w = m->emb[e].dim;
        if (wid[k] != w || off[k] + w > dim)
            return rt_err_set(err, RT_ERR_INVALID, "backprop: embedding width %zu != %zu",
                              wid[k], w);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)n, (blasint)w,
                    (blasint)L0->out, 1.0f, delta, (blasint)L0->out,
                    K0->data + off[k] * L0->out, (blasint)L0->out, 1.0f, m->emb_grad_in[e],
                    (blasint)w);
    }
    return RT_OK;
}

/* An embedding table: d loss / d the column's values (emb_grad_in) spread
 * over the rows of its source's ids by the combiner, each row's share times
 * its id's weight (weights > 0 only, as rt_transform). A shared table gets
 * the sum of its users' gradients: each user adds into the same buffer. */
rt_status trn_grad_table(trn_model *m, const emb_col *ec, size_t n, rt_err *err)
{
    tparam *p = &m->p[ec->param];
    const rt_ids *ids = &m->f.ids[ec->src];
    if (!ids->offsets)
        return rt_err_set(err, RT_ERR_INVALID, "backprop %s: source has no ids", p->name);
    const float *gin = m->emb_grad_in[ec - m->emb];
    const float *wt = ids->weights;
    size_t w = ec->dim;
    for (size_t i = 0; i < n; i++) {
        float sum = 0.0f, squares = 0.0f;
        for (uint32_t k = ids->offsets[i]; k < ids->offsets[i + 1]; k++) {
            float x = wt ? wt[k] : 1.0f;
            if (ids->ids[k] >= 0 && x > 0.0f) {
                sum += x;
                squares += x * x;
            }
        }
        if (sum == 0.0f)
            continue;
        float scale = 1.0f;
        if (ec->combiner == PREDICTD__COMBINER__COMBINER_MEAN)
            scale = 1.0f / sum;
        else if (ec->combiner == PREDICTD__COMBINER__COMBINER_SQRTN)
            scale = 1.0f / sqrtf(squares);
        for (uint32_t k = ids->offsets[i]; k < ids->offsets[i + 1]; k++) {
            int64_t id = ids->ids[k];
            float x = wt ? wt[k] : 1.0f;
            if (id < 0 || !(x > 0.0f))
                continue;
            if ((uint64_t)id >= p->rows)
                return rt_err_set(err, RT_ERR_INVALID, "backprop %s: id %lld out of range",
                                  p->name, (long long)id);
            touch(p, (uint64_t)id);
            float *g = p->grad + (size_t)id * w;
            float sx = wt ? scale * x : scale;
            for (size_t j = 0; j < w; j++)
                g[j] += sx * gin[i * w + j];
        }
    }
    return RT_OK;
}

static rt_status embedding_backprop(trn_model *m, size_t n, rt_err *err)
{
    for (size_t e = 0; e < m->n_emb; e++) {
        rt_status st = m->emb[e].grad->table(m, &m->emb[e], n, err);
        if (st)
            return st;
    }
    return RT_OK;
}

rt_status trn_backprop(trn_model *m, size_t n, rt_err *err)
{
    rt_status st;
    if (n == 0)
        return RT_OK;
    if ((st = emb_scratch(m, n, err)))
        return st;
    if (m->n_nodes && (st = trn_nodes_backprop(m, n, err))) /* custom graph: trn_graph.c */
        return st;
    if ((st = linear_backprop(m, n, err)))
        return st;
    if (!m->n_nodes && m->n_layers > 0 && (st = dnn_backprop(m, n, err)))
        return st;
    if (m->n_emb > 0 && (st = embedding_backprop(m, n, err)))
        return st;
    return RT_OK;
}
