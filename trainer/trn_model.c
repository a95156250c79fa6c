/*
 * trn_model.c — the trainable model: parameter tensors shaped by
 * rt_graph_tensor_specs, initialized as TensorFlow's canned estimators
 * do, bound to an rt_graph (so training runs the serving forward pass), with
 * gradient buffers and optimizer slots; a training step = rt_transform +
 * rt_forward + loss + backprop (trn_backprop.c) + optimizers (trn_optim.c).
 */
#include "trn_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static long fc_index(const Predictd__ModelDef *def, const char *name)
{
    for (size_t i = 0; i < def->n_feature_columns; i++)
        if (def->feature_columns[i]->name && strcmp(def->feature_columns[i]->name, name) == 0)
            return (long)i;
    return -1;
}

static long param_index(const trn_model *m, const char *name)
{
    if (!name || !name[0])
        return -1;
    for (size_t i = 0; i < m->n_params; i++)
        if (strcmp(m->p[i].name, name) == 0)
            return (long)i;
    return -1;
}

static const float *lookup(void *ctx, const char *name, uint64_t count, rt_err *err)
{
    trn_model *m = ctx;
    long k = param_index(m, name);
    if (k < 0) {
        rt_err_set(err, RT_ERR_NOTFOUND, "tensor %s: not among the parameters", name);
        return NULL;
    }
    if (m->p[k].count != count) {
        rt_err_set(err, RT_ERR_FORMAT, "tensor %s: %llu floats, the graph wants %llu", name,
                   (unsigned long long)m->p[k].count, (unsigned long long)count);
        return NULL;
    }
    return m->p[k].data;
}

void trn_model_free(trn_model *m)
{
    if (!m)
        return;
    rt_graph_free(m->g);
    free(m->heads);
    free(m->assets_dir);
    for (size_t i = 0; i < m->n_params; i++) {
        tparam *p = &m->p[i];
        free(p->data);
        free(p->grad);
        for (size_t s = 0; s < TRN_OPT_SLOTS_MAX; s++)
            free(p->slot[s]);
        free(p->mark);
        free(p->touched);
    }
    free(m->p);
    free(m->specs);
    free(m->lin);
    if (m->emb_grad_in)
        for (size_t i = 0; i < m->n_emb; i++)
            free(m->emb_grad_in[i]);
    free(m->emb_grad_in);
    free(m->emb);
    free(m->layers);
    rt_transform_features_free(&m->f);
    rt_workspace_free(m->ws);
    free(m->logits);
    free(m->dlogits);
    free(m->d0);
    free(m->d1);
    trn_dropout_free(m);
    trn_nodes_free(m);
    free(m);
}

/* Classifies every tensor by the role the graph gives it. */
static rt_status classify_params(trn_model *m, rt_err *err)
{
    const Predictd__Graph *gr = m->def->graph;
    for (size_t i = 0; i < m->n_params; i++)
        m->p[i].kind = (tp_kind)-1;
    m->lin_bias = -1;
    if (gr->linear_bias && gr->linear_bias[0]) {
        m->lin_bias = param_index(m, gr->linear_bias);
        if (m->lin_bias < 0)
            return rt_err_set(err, RT_ERR_FORMAT, "graph: linear bias %s has no tensor",
                              gr->linear_bias);
        m->p[m->lin_bias].kind = TP_LINEAR_BIAS;
    }
    m->lin = calloc(gr->n_linear_weights ? gr->n_linear_weights : 1, sizeof *m->lin);
    m->emb = calloc(gr->n_embeddings ? gr->n_embeddings : 1, sizeof *m->emb);
    size_t nl = gr->n_hidden_layers + (gr->logits_layer ? 1 : 0);
    m->layers = calloc(nl ? nl : 1, sizeof *m->layers);
    if (!m->lin || !m->emb || !m->layers)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < gr->n_linear_weights; i++) {
        const Predictd__LinearWeight *lw = gr->linear_weights[i];
        long fc = fc_index(m->def, lw->column), k = param_index(m, lw->tensor);
        if (fc < 0 || k < 0)
            return rt_err_set(err, RT_ERR_FORMAT, "graph: linear weight %s of column %s "
                              "unknown", lw->tensor, lw->column);
        const Predictd__FeatureColumn *c = m->def->feature_columns[fc];
        const trn_fc_grad *gk = trn_fc_grad_of(c->type);
        if (!gk || !gk->linear)
            return rt_err_set(err, RT_ERR_FORMAT, "graph: linear column %s: the trainer has "
                              "no linear gradient for a %s", c->name,
                              rt_fc_column_kind_name(c->type));
        lin_col *lc = &m->lin[m->n_lin++];
        lc->fc = (size_t)fc;
        lc->param = (size_t)k;
        lc->grad = gk;
        if (gk->via_source) {
            long src = fc_index(m->def, c->categorical_column);
            if (src < 0)
                return rt_err_set(err, RT_ERR_FORMAT, "%s %s: no source column",
                                  rt_fc_column_kind_name(c->type), c->name);
            lc->src = (size_t)src;
        }
        tparam *p = &m->p[k];
        p->kind = TP_LINEAR_W;
        p->sparse = gk->linear != trn_grad_linear_dense;
    }
    for (size_t i = 0; i < gr->n_embeddings; i++) {
        const Predictd__EmbeddingWeight *ew = gr->embeddings[i];
        long fc = fc_index(m->def, ew->column), k = param_index(m, ew->tensor);
        if (fc < 0 || k < 0)
            return rt_err_set(err, RT_ERR_FORMAT, "graph: embedding %s of column %s unknown",
                              ew->tensor, ew->column);
        const Predictd__FeatureColumn *c = m->def->feature_columns[fc];
        const trn_fc_grad *gk = trn_fc_grad_of(c->type);
        if (!gk || !gk->table)
            return rt_err_set(err, RT_ERR_FORMAT, "graph: embedding column %s: the trainer "
                              "has no table gradient for a %s", c->name,
                              rt_fc_column_kind_name(c->type));
        long src = fc_index(m->def, c->categorical_column);
        if (src < 0)
            return rt_err_set(err, RT_ERR_FORMAT, "embedding %s: no source column", c->name);
        emb_col *e = &m->emb[m->n_emb++];
        e->grad = gk;
        e->fc = (size_t)fc;
        e->src = (size_t)src;
        e->param = (size_t)k;
        e->dim = m->p[k].cols;
        e->combiner = c->combiner;
        m->p[k].kind = TP_EMBEDDING;
        m->p[k].sparse = 1;
        m->p[k].dnn = 1;
    }
    for (size_t l = 0; l < nl; l++) {
        const Predictd__DenseLayer *L =
            l < gr->n_hidden_layers ? gr->hidden_layers[l] : gr->logits_layer;
        long kk = param_index(m, L->kernel), kb = param_index(m, L->bias);
        if (kk < 0 || kb < 0)
            return rt_err_set(err, RT_ERR_FORMAT, "graph: layer %zu tensors %s/%s unknown",
                              l, L->kernel, L->bias);
        dnn_layer *d = &m->layers[l];
        d->kernel = (size_t)kk;
        d->bias = (size_t)kb;
        d->in = m->p[kk].rows;
        d->out = m->p[kk].cols;
        d->act = l + 1 < nl ? L->activation : PREDICTD__ACTIVATION__ACT_LINEAR;
        m->p[kk].kind = TP_KERNEL;
        m->p[kb].kind = TP_BIAS;
        m->p[kk].dnn = m->p[kb].dnn = 1;
        d->bn_gamma = d->bn_beta = d->bn_mean = d->bn_var = -1;
        if (L->batch_norm) {
            const Predictd__BatchNorm *bn = L->batch_norm;
            long *ix[4] = {&d->bn_gamma, &d->bn_beta, &d->bn_mean, &d->bn_var};
            const char *names[4] = {bn->gamma, bn->beta, bn->moving_mean, bn->moving_variance};
            static const tp_kind kinds[4] = {TP_BN_GAMMA, TP_BN_BETA, TP_BN_MOVING,
                                             TP_BN_MOVING};
            for (size_t q = 0; q < 4; q++) {
                long k = param_index(m, names[q]);
                if (k < 0 || m->p[k].count != d->out)
                    return rt_err_set(err, RT_ERR_FORMAT, "graph: layer %zu batch "
                                      "normalization tensor %s unknown or not [%zu]", l,
                                      names[q], d->out);
                *ix[q] = k;
                m->p[k].kind = kinds[q];
                m->p[k].dnn = 1;
            }
            d->bn_eps = bn->epsilon;
            d->bn_momentum = bn->momentum;
            m->batch_norm = 1;
        }
        if (m->p[kb].count != d->out)
            return rt_err_set(err, RT_ERR_FORMAT, "graph: layer %zu bias has %llu values, "
                              "kernel %zu units", l, (unsigned long long)m->p[kb].count,
                              d->out);
    }
    m->n_layers = nl;
    if (gr->n_nodes) { /* a custom graph (trn_graph.c) */
        rt_status st = trn_nodes_classify(m, err);
        if (st)
            return st;
    }
    for (size_t i = 0; i < m->n_params; i++)
        if ((int)m->p[i].kind < 0)
            return rt_err_set(err, RT_ERR_FORMAT, "tensor %s: no role in the graph",
                              m->p[i].name);
    return RT_OK;
}

/* Several heads (MultiHead): each head's columns of the logits (the
 * graph's), its label (label value k of a row is head k's), loss,
 * loss_weight, estimator.loss_reduction and example weights (with any
 * head's weight_column, weight k of a row is head k's, 1 without one: the
 * feeder's layout, trn_feeder_weighted). */
static rt_status trn_model_heads(trn_model *m, rt_err *err)
{
    const Predictd__Graph *gd = m->def->graph;
    const size_t *node, *off, *w;
    size_t n = rt_graph_heads(m->g, &node, &off, &w);
    if (n == 0)
        return RT_OK;
    if (!(m->heads = calloc(n, sizeof *m->heads)))
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    m->n_heads = n;
    m->head_weights = 0;
    for (size_t k = 0; k < n; k++)
        if (gd->heads[k]->weight_column && *gd->heads[k]->weight_column)
            m->head_weights = n;
    for (size_t k = 0; k < n; k++) {
        const Predictd__NodeHead *nh = gd->heads[k];
        rt_head_slice *h = &m->heads[k];
        h->head = nh->head->type;
        h->off = off[k];
        h->ld = w[k];
        h->label_off = m->label_w; /* a multi-label head's n_classes multi-hot values */
        m->label_w += h->head == PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL ? h->ld : 1;
        h->loss_weight = nh->loss_weight > 0 ? nh->loss_weight : 1.0;
        h->reduce_sum = m->loss_sum;
        rt_graph_node_head_loss(nh, &h->loss);
    }
    return RT_OK;
}

void trn_model_head_weights(const trn_model *m, rt_head_slice *heads, const float *weights)
{
    for (size_t k = 0; k < m->n_heads; k++) {
        heads[k].weights = weights && m->head_weights ? weights + k : NULL;
        heads[k].weight_stride = m->head_weights;
    }
}

/* TensorFlow's initializers, from one seeded stream in tensor order. */
static void init_params(trn_model *m, uint64_t seed)
{
    trn_rng rng;
    trn_rng_seed(&rng, seed);
    for (size_t i = 0; i < m->n_params; i++) {
        tparam *p = &m->p[i];
        switch (p->kind) {
        case TP_KERNEL: {
            double lim = sqrt(6.0 / (double)(p->rows + p->cols));
            for (uint64_t k = 0; k < p->count; k++)
                p->data[k] = (float)((2.0 * trn_rng_uniform(&rng) - 1.0) * lim);
            break;
        }
        case TP_EMBEDDING: {
            double sd = 1.0 / sqrt((double)(p->cols ? p->cols : 1));
            for (uint64_t k = 0; k < p->count; k++) {
                double x;
                do
                    x = trn_rng_normal(&rng);
                while (fabs(x) > 2.0);
                p->data[k] = (float)(x * sd);
            }
            break;
        }
        default:
            memset(p->data, 0, p->count * sizeof(float));
            break;
        }
    }
    /* batch normalization: gamma and the moving variance start at 1 */
    for (size_t l = 0; l < m->n_layers; l++) {
        const dnn_layer *d = &m->layers[l];
        if (d->bn_gamma < 0)
            continue;
        for (size_t j = 0; j < d->out; j++)
            m->p[d->bn_gamma].data[j] = m->p[d->bn_var].data[j] = 1.0f;
    }
}

rt_status trn_model_new(const Predictd__ModelDef *def, const trn_config *c, uint64_t seed,
                        trn_model **out, rt_err *err)
{
    *out = NULL;
    if (!def || !def->graph || !def->head)
        return rt_err_set(err, RT_ERR_INVALID, "model: ModelDef has no graph or head");
    trn_model *m = calloc(1, sizeof *m);
    if (!m)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    rt_status st;
    m->def = def;
    m->linear_opt = c->linear_opt;
    m->dnn_opt = c->dnn_opt;
    if (m->linear_opt.type == TRN_OPT_DEFAULT || m->dnn_opt.type == TRN_OPT_DEFAULT ||
        m->linear_opt.learning_rate <= 0 || m->dnn_opt.learning_rate <= 0) {
        st = rt_err_set(err, RT_ERR_INVALID, "model: optimizers not resolved "
                        "(trn_config_resolve)");
        goto out;
    }
    m->head = def->head->type;
    rt_graph_head_loss(def, &m->loss);
    m->loss_sum = c->loss_sum;
    m->dropout = c->dropout;
    trn_rng_seed(&m->drop_rng, seed ^ 0xd0d0d0d0ULL);
    rt_transform_features_init(&m->f);
    if ((st = trn_memory_check(def, c, err)))
        goto out;
    if ((st = rt_graph_tensor_specs(def, &m->specs, &m->n_params, err)))
        goto out;
    m->p = calloc(m->n_params ? m->n_params : 1, sizeof *m->p);
    if (!m->p) {
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < m->n_params; i++) {
        tparam *p = &m->p[i];
        const rt_tensor_spec *s = &m->specs[i];
        p->name = s->name;
        p->count = s->count;
        p->rows = s->shape[0];
        p->cols = s->rank == 2 ? s->shape[1] : 1;
        if (p->count == 0 || p->count > (UINT64_C(1) << 32) || p->rows > UINT32_MAX) {
            st = rt_err_set(err, RT_ERR_LIMIT, "tensor %s: %llu floats is out of range",
                            p->name, (unsigned long long)p->count);
            goto out;
        }
        p->data = calloc(p->count, sizeof(float));
        p->grad = calloc(p->count, sizeof(float));
        if (!p->data || !p->grad) {
            st = rt_err_set(err, RT_ERR_NOMEM, "tensor %s: out of memory", p->name);
            goto out;
        }
    }
    if ((st = classify_params(m, err)))
        goto out;
    for (size_t i = 0; i < m->n_params; i++) {
        tparam *p = &m->p[i];
        const trn_optimizer *o = p->dnn ? &m->dnn_opt : &m->linear_opt;
        float init[TRN_OPT_SLOTS_MAX];
        p->n_slots = p->kind == TP_BN_MOVING ? 0 : trn_optim_slots(o, init);
        for (size_t s = 0; s < p->n_slots; s++) {
            p->slot[s] = malloc(p->count * sizeof(float));
            if (!p->slot[s]) {
                st = rt_err_set(err, RT_ERR_NOMEM, "tensor %s: out of memory", p->name);
                goto out;
            }
            for (uint64_t k = 0; k < p->count; k++)
                p->slot[s][k] = init[s];
        }
        if (p->sparse) {
            p->mark = calloc(p->rows, 1);
            p->touched = malloc(p->rows * sizeof *p->touched);
            if (!p->mark || !p->touched) {
                st = rt_err_set(err, RT_ERR_NOMEM, "tensor %s: out of memory", p->name);
                goto out;
            }
        }
    }
    init_params(m, seed);
    if (m->n_nodes)
        trn_nodes_init(m, seed);
    if (c->assets_dir && !(m->assets_dir = strdup(c->assets_dir))) {
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    if ((st = rt_graph_build(def, lookup, m, c->assets_dir, &m->g, err)))
        goto out;
    m->ld = rt_graph_logits_dim(m->g);
    if ((st = trn_model_heads(m, err)))
        goto out;
    {
        const size_t *cols, *off, *wid;
        rt_graph_dnn_layout(m->g, &cols, &off, &wid, &m->dnn_dim);
    }
    m->emb_grad_in = calloc(m->n_emb ? m->n_emb : 1, sizeof *m->emb_grad_in);
    m->ws = rt_workspace_new();
    if (!m->emb_grad_in || !m->ws) {
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
out:
    if (st) {
        trn_model_free(m);
        return st;
    }
    *out = m;
    return RT_OK;
}

const rt_graph *trn_model_graph(const trn_model *m)
{
    return m->g;
}

int64_t trn_model_step(const trn_model *m)
{
    return m->step;
}

void trn_model_set_step(trn_model *m, int64_t step)
{
    m->step = step;
}

size_t trn_model_num_params(const trn_model *m)
{
    return m->n_params;
}

void trn_model_param(const trn_model *m, size_t i, trn_param_view *v)
{
    const tparam *p = &m->p[i];
    *v = (trn_param_view){.name = p->name, .count = p->count, .rows = p->rows, .cols = p->cols,
                          .data = p->data, .grad = p->grad, .sparse = p->sparse, .dnn = p->dnn};
}

size_t trn_model_slots(const trn_model *m, size_t i, float **slots)
{
    const tparam *p = &m->p[i];
    for (size_t s = 0; s < TRN_OPT_SLOTS_MAX; s++)
        slots[s] = p->slot[s];
    return p->n_slots;
}

/* Makes the per-batch scratch hold n rows. */
static rt_status reserve(trn_model *m, size_t n, rt_err *err)
{
    if (n <= m->cap_n)
        return RT_OK;
    size_t ld = m->ld;
    float *a = realloc(m->logits, n * ld * sizeof(float));
    if (a)
        m->logits = a;
    float *b = realloc(m->dlogits, n * ld * sizeof(float));
    if (b)
        m->dlogits = b;
    if (!a || !b)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory (batch of %zu)", n);
    m->cap_n = n;
    return RT_OK;
}


/* Weighted mean loss (sum w l / n) and 1/n-scaled dlogits; for
 * loss_reduction SUM the sum over every loss value: times n, and times
 * label_dimension for regression (whose per-example loss is the mean over its
 * values), as TF sums a [batch, label_dimension] loss. */
static double batch_loss(trn_model *m, const float *labels, const float *weights, size_t n)
{
    size_t denom = m->grad_denom && !m->loss_sum ? m->grad_denom : n;
    if (m->n_heads) { /* TF's MultiHead: sum of loss_weight x each head's loss */
        double total = 0.0;
        trn_model_head_weights(m, m->heads, weights);
        if (rt_metrics_multi_loss(m->heads, m->n_heads, m->ld, m->label_w, m->logits, labels, n,
                                  denom, m->dlogits, &total) != RT_OK)
            return NAN; /* out of memory: the step's loss is not finite */
        return total;
    }
    double l = rt_metrics_head_loss_with(m->head, &m->loss, m->ld, m->logits, labels, weights, n,
                                         denom, m->dlogits);
    size_t values = m->head == PREDICTD__HEAD_TYPE__HEAD_REGRESSION ? m->ld : 1;
    if (m->loss_sum && n * values > 1) {
        float scale = (float)(n * values);
        l *= (double)(n * values);
        for (size_t k = 0; k < n * m->ld; k++)
            m->dlogits[k] *= scale;
    }
    return l;
}

rt_features *trn_model_features(trn_model *m)
{
    return &m->f;
}

/* Instances of the step: b's, or (b NULL) the features already made. */
static size_t batch_n(const trn_model *m, const rt_batch *b)
{
    return b ? rt_batch_size(b) : m->f.n;
}

/* Transform (unless b is NULL: m->f holds the batch) + forward into m->logits. */
static rt_status forward(trn_model *m, const rt_batch *b, rt_err *err)
{
    rt_status st = reserve(m, batch_n(m, b), err);
    if (st)
        return st;
    if (b && (st = rt_transform(m->g, b, &m->f, err)))
        return st;
    return rt_forward(m->g, &m->f, m->ws, m->logits, err);
}

rt_status trn_model_loss(trn_model *m, const rt_batch *b, const float *labels,
                         const float *weights, double *loss, float *logits, rt_err *err)
{
    size_t n = batch_n(m, b);
    rt_status st = forward(m, b, err);
    if (st)
        return st;
    double l = batch_loss(m, labels, weights, n);
    if (loss)
        *loss = l;
    if (logits && n)
        memcpy(logits, m->logits, n * m->ld * sizeof(float));
    return RT_OK;
}

rt_status trn_model_train_loss(trn_model *m, const rt_batch *b, const float *labels,
                               const float *weights, double *loss, rt_err *err)
{
    size_t n = batch_n(m, b);
    rt_status st = forward(m, b, err);
    if (st == RT_OK && n > 0)
        st = m->n_nodes ? trn_nodes_forward(m, n, 0, err) : trn_dropout_forward(m, n, 0, err);
    if (st)
        return st;
    *loss = batch_loss(m, labels, weights, n) + (m->n_nodes ? trn_nodes_reg_loss(m) : 0.0);
    return RT_OK;
}

rt_status trn_model_gradients(trn_model *m, const rt_batch *b, const float *labels,
                              const float *weights, double *loss, rt_err *err)
{
    size_t n = batch_n(m, b);
    m->drop_active = 0;
    rt_status st = forward(m, b, err);
    if (st == RT_OK && n > 0)
        st = m->n_nodes ? trn_nodes_forward(m, n, 1, err) : trn_dropout_forward(m, n, 1, err);
    if (st)
        return st;
    double l = batch_loss(m, labels, weights, n);
    if (m->n_nodes)
        l += trn_nodes_reg_loss(m);
    if (loss)
        *loss = l;
    trn_model_clear_grads(m);
    if (!isfinite(l))
        return rt_err_set(err, RT_ERR_INVALID, "loss is %g at step %lld: diverged (lower the "
                          "learning rate)", l, (long long)m->step);
    return trn_backprop(m, n, err);
}

void trn_model_clear_grads(trn_model *m)
{
    for (size_t i = 0; i < m->n_params; i++) {
        tparam *p = &m->p[i];
        if (p->sparse) {
            for (size_t t = 0; t < p->n_touched; t++) {
                uint64_t r = p->touched[t];
                memset(p->grad + r * p->cols, 0, p->cols * sizeof(float));
                p->mark[r] = 0;
            }
            p->n_touched = 0;
        } else {
            memset(p->grad, 0, p->count * sizeof(float));
        }
    }
}

void trn_model_apply(trn_model *m)
{
    /* the rates of this step's update (decayed by global step) */
    trn_optimizer lin = m->linear_opt, dnn = m->dnn_opt;
    lin.learning_rate = trn_optim_lr(&m->linear_opt, m->step);
    dnn.learning_rate = trn_optim_lr(&m->dnn_opt, m->step);
    if (lin.clip_norm > 0) /* each optimizer clips its own gradients */
        (void)trn_optim_clip(m->p, m->n_params, 0, lin.clip_norm);
    if (dnn.clip_norm > 0)
        (void)trn_optim_clip(m->p, m->n_params, 1, dnn.clip_norm);
    for (size_t i = 0; i < m->n_params; i++) {
        tparam *p = &m->p[i];
        const trn_optimizer *o = p->dnn ? &dnn : &lin;
        if (p->kind == TP_BN_MOVING)
            continue; /* moved by the training forward pass */
        if (p->sparse) {
            for (size_t t = 0; t < p->n_touched; t++) {
                uint64_t r = p->touched[t];
                trn_optim_update(o, p, r * p->cols, (r + 1) * p->cols, m->step);
            }
        } else {
            trn_optim_update(o, p, 0, p->count, m->step);
        }
    }
    m->step++;
}

rt_status trn_model_train_step(trn_model *m, const rt_batch *b, const float *labels,
                               const float *weights, double *loss, rt_err *err)
{
    rt_status st = trn_model_gradients(m, b, labels, weights, loss, err);
    if (st)
        return st;
    trn_model_apply(m);
    return RT_OK;
}

rt_status trn_model_rebuild_graph(trn_model *m, rt_err *err)
{
    rt_graph *g = NULL;
    rt_status st = rt_graph_build(m->def, lookup, m, m->assets_dir, &g, err);
    if (st)
        return st;
    rt_graph_free(m->g);
    m->g = g;
    return RT_OK;
}
