/*
 * rt_explain_ig.c — integrated gradients (Sundararajan, Taly and Yan 2017)
 * for linear, DNN and wide & deep graphs, with the input gradient of the
 * forward pass computed here (the runtime does not link the trainer).
 *
 * The path is straight in the model's transformed inputs, from the
 * baseline's to the instance's: the DNN input vector (numeric values,
 * embeddings, indicators: a categorical input moves from its baseline's
 * embedding or one-hot to the instance's, what Vertex AI calls a combined
 * embedding), and each linear column's one-hot or values. The linear part
 * is linear along it, so its logits at alpha are exactly
 * lin_b + alpha (lin_x - lin_b) per column. The integral is the trapezoid
 * rule over step_count intervals (step_count + 1 points); the attribution
 * of a coordinate is its difference times the mean gradient, summed over
 * the coordinates of a column and given to the raw inputs that column
 * reads and that differ from the baseline (in equal parts when a cross
 * reads several that do). Gradients: the head's (sigmoid or softmax for a
 * probability, 1 for a logit or a prediction), then back through each
 * dense layer: batch normalization's scale, the activation's derivative
 * (relu 1 where its input is > 0, as TensorFlow's; tanh 1 - y^2; sigmoid
 * y (1 - y); elu 1 or y + 1), the kernel's transpose. The forward pass
 * along the path is rt_forward's own arithmetic (rt_dense_rows,
 * rt_activate); the gradients are summed in double.
 */
#include "rt_explain_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The logits linear column l adds for row r of f, into out[ld] (double). */
static void linear_column(const rt_graph *g, const rt_features *f, size_t l, size_t r, double *out)
{
    size_t ld = g->logits_dim, c = g->linear_cols[l];
    const rt_fcol *col = &g->fcols[c];
    const float *w = g->linear_w[l];
    for (size_t j = 0; j < ld; j++)
        out[j] = 0.0;
    const rt_ids *ids = NULL;
    bool prune = true;
    uint64_t dim = 0;
    if (rt_column_is_categorical(col->type)) {
        ids = &f->ids[c];
        dim = (uint64_t)col->num_buckets;
    } else if (col->type == PREDICTD__COLUMN_TYPE__INDICATOR && col->source >= 0 &&
               f->ids[col->source].offsets) {
        ids = &f->ids[col->source];
        prune = false;
        dim = col->width;
    }
    if (ids) {
        for (uint32_t k = ids->offsets[r]; k < ids->offsets[r + 1]; k++) {
            int64_t id = ids->ids[k];
            float x = ids->weights ? ids->weights[k] : 1.0f;
            if (id < 0 || (prune && !(x > 0.0f)) || (uint64_t)id >= dim)
                continue;
            for (size_t j = 0; j < ld; j++)
                out[j] += (double)x * (double)w[(size_t)id * ld + j];
        }
        return;
    }
    const float *v = f->values[c] + r * col->width;
    for (size_t k = 0; k < col->width; k++)
        for (size_t j = 0; j < ld; j++)
            out[j] += (double)v[k] * (double)w[k * ld + j];
}

/* d (output k) / d logits at logits l (double, ld) into gl. */
static void head_grad(const xai_ctx *e, size_t k, const double *l, double *gl)
{
    size_t ld = e->g->logits_dim;
    for (size_t j = 0; j < ld; j++)
        gl[j] = 0.0;
    if (e->space != RT_XAI_OUT_PROBABILITIES) {
        gl[k] = 1.0;
        return;
    }
    if (e->g->head == PREDICTD__HEAD_TYPE__HEAD_BINARY) {
        double p1 = 1.0 / (1.0 + exp(-l[0]));
        double d = p1 * (1.0 - p1);
        gl[0] = k == 1 ? d : -d;
        return;
    }
    double mx = l[0], sum = 0.0;
    for (size_t j = 1; j < ld; j++)
        mx = l[j] > mx ? l[j] : mx;
    double p[RT_XAI_MAX_OUTPUTS * 4];
    for (size_t j = 0; j < ld; j++)
        sum += (p[j] = exp(l[j] - mx));
    for (size_t j = 0; j < ld; j++)
        p[j] /= sum;
    for (size_t j = 0; j < ld; j++)
        gl[j] = p[k] * ((j == k ? 1.0 : 0.0) - p[j]);
}

/* Derivative of activation act at pre-activation z, activation y. */
static double act_grad(Predictd__Activation act, float z, float y)
{
    switch (act) {
    case PREDICTD__ACTIVATION__ACT_RELU: return z > 0.0f ? 1.0 : 0.0;
    case PREDICTD__ACTIVATION__ACT_TANH: return 1.0 - (double)y * (double)y;
    case PREDICTD__ACTIVATION__ACT_SIGMOID: return (double)y * (1.0 - (double)y);
    case PREDICTD__ACTIVATION__ACT_ELU: return z > 0.0f ? 1.0 : (double)y + 1.0;
    default: return 1.0;
    }
}

/* Batch normalization's scale and shift of layer L (rt_forward.c's). */
static void bn_params(const rt_layer *L, float *scale, float *shift)
{
    for (size_t j = 0; j < L->out; j++) {
        double s = (double)L->bn_gamma[j] / sqrt((double)L->bn_var[j] + (double)L->bn_eps);
        scale[j] = (float)s;
        shift[j] = (float)((double)L->bn_beta[j] - (double)L->bn_mean[j] * s);
    }
}

/* Gives column c's attribution a to the players among the raw inputs it
 * reads, in equal parts. */
static void give(const xai_ctx *e, size_t c, double a, size_t *in, double *attr)
{
    size_t n = 0, np = 0;
    xai_column_inputs(e->g, c, in, &n);
    for (size_t k = 0; k < n; k++)
        for (size_t q = 0; q < e->d; q++)
            if (e->players[q] == in[k])
                in[np++] = in[k];
    for (size_t k = 0; k < np; k++)
        attr[in[k]] += a / (double)np;
}

rt_status xai_integrated_gradients(xai_ctx *e, const size_t *outs, size_t n_outs,
                                   double *const *attr, rt_err *err)
{
    const rt_graph *g = e->g;
    size_t ld = g->logits_dim, m = (size_t)e->p->step_count, P = m + 1;
    size_t D = g->n_layers > 0 ? g->dnn_dim : 0, H = g->n_layers;
    rt_status st = RT_OK;
    uint64_t *m2 = calloc(2 * e->words, sizeof *m2);
    double *lin = calloc(2 * (g->n_linear + 1) * ld, sizeof *lin); /* [end][col][ld] */
    double *gl = calloc(P * ld, sizeof *gl), *gsum = calloc(ld, sizeof *gsum);
    double *logit = calloc(ld, sizeof *logit);
    size_t *in = malloc((e->n_in + 1) * sizeof *in);
    float *zx = calloc(D + 1, sizeof *zx), *zb = calloc(D + 1, sizeof *zb);
    float **act = calloc(H + 1, sizeof *act), **pre = calloc(H + 1, sizeof *pre);
    float **bns = calloc(H + 1, sizeof *bns), **bnact = calloc(H + 1, sizeof *bnact);
    float *dnn_out = NULL;
    double *delta = NULL, *next = NULL, *G = calloc(D + 1, sizeof *G);
    size_t wmax = D;
    for (size_t l = 0; l < H; l++)
        wmax = g->layers[l].out > wmax ? g->layers[l].out : wmax;
    delta = calloc(P * (wmax + 1), sizeof *delta);
    next = calloc(P * (wmax + 1), sizeof *next);
    if (!m2 || !lin || !gl || !gsum || !logit || !in || !zx || !zb || !act || !pre || !bns ||
        !bnact || !delta || !next || !G)
        goto nomem;

    /* the two ends, transformed as the serving input function does */
    for (size_t k = 0; k < e->d; k++)
        m2[e->words + k / 64] |= UINT64_C(1) << (k % 64);
    if ((st = xai_fill(e, m2, 2, err)) != RT_OK ||
        (st = rt_transform(g, e->rows, &e->f, err)) != RT_OK)
        goto out;
    for (size_t end = 0; end < 2; end++)
        for (size_t l = 0; l < g->n_linear; l++)
            linear_column(g, &e->f, l, end, lin + (end * (g->n_linear + 1) + l) * ld);
    if (D) {
        memcpy(zb, e->f.dnn_input, D * sizeof *zb);
        memcpy(zx, e->f.dnn_input + D, D * sizeof *zx);
    }
    /* the linear logits at the baseline and their change along the path */
    double *lin_b = lin + g->n_linear * ld, *lin_x = lin + (2 * g->n_linear + 1) * ld;
    for (size_t j = 0; j < ld; j++) {
        lin_b[j] = g->linear_bias ? (double)g->linear_bias[j] : 0.0;
        lin_x[j] = 0.0;
        for (size_t l = 0; l < g->n_linear; l++) {
            lin_b[j] += lin[l * ld + j];
            lin_x[j] += lin[((g->n_linear + 1) + l) * ld + j] - lin[l * ld + j];
        }
    }

    /* the DNN along the path: P rows, every layer kept for the backward;
     * each layer as rt_forward runs it (activation, then batch
     * normalization's scale and shift), y before the scale kept in bnact */
    if (H) {
        if (!(act[0] = malloc(P * D * sizeof(float))))
            goto nomem;
        for (size_t k = 0; k < P; k++)
            for (size_t j = 0; j < D; j++) {
                float al = (float)k / (float)m;
                act[0][k * D + j] = k == 0 ? zb[j] : k == m ? zx[j] : zb[j] + al * (zx[j] - zb[j]);
            }
        for (size_t l = 0; l < H; l++) {
            const rt_layer *L = &g->layers[l];
            size_t no = L->out;
            if (!(pre[l + 1] = malloc(P * no * sizeof(float))) ||
                !(act[l + 1] = malloc(P * no * sizeof(float))))
                goto nomem;
            rt_dense_rows(act[l], P, L->in, L->kernel, L->bias, no, pre[l + 1]);
            memcpy(act[l + 1], pre[l + 1], P * no * sizeof(float));
            if (l + 1 < H)
                rt_activate(L->act, act[l + 1], P * no);
            if (L->bn_gamma) {
                if (!(bns[l + 1] = malloc(2 * no * sizeof(float))) ||
                    !(bnact[l + 1] = malloc(P * no * sizeof(float))))
                    goto nomem;
                bn_params(L, bns[l + 1], bns[l + 1] + no);
                memcpy(bnact[l + 1], act[l + 1], P * no * sizeof(float));
                const float *sc = bns[l + 1], *sh = bns[l + 1] + no;
                for (size_t k = 0; k < P; k++)
                    for (size_t j = 0; j < no; j++)
                        act[l + 1][k * no + j] = act[l + 1][k * no + j] * sc[j] + sh[j];
            }
        }
        e->evals += P;
        dnn_out = act[H];
    }

    for (size_t q = 0; q < n_outs; q++) {
        double *a = attr[q];
        /* the head's gradient at each point, the trapezoid weights */
        for (size_t j = 0; j < ld; j++)
            gsum[j] = 0.0;
        for (size_t k = 0; k < P; k++) {
            double alpha = (double)k / (double)m, wk = (k == 0 || k == m) ? 0.5 / m : 1.0 / m;
            for (size_t j = 0; j < ld; j++)
                logit[j] = lin_b[j] + alpha * lin_x[j] + (dnn_out ? dnn_out[k * ld + j] : 0.0);
            head_grad(e, outs[q], logit, gl + k * ld);
            for (size_t j = 0; j < ld; j++)
                gsum[j] += wk * gl[k * ld + j];
        }
        /* linear columns: their change times the mean gradient */
        for (size_t l = 0; l < g->n_linear; l++) {
            double s = 0.0;
            for (size_t j = 0; j < ld; j++)
                s += (lin[((g->n_linear + 1) + l) * ld + j] - lin[l * ld + j]) * gsum[j];
            give(e, g->linear_cols[l], s, in, a);
        }
        if (!H)
            continue;
        /* back through the DNN */
        for (size_t k = 0; k < P; k++)
            for (size_t j = 0; j < ld; j++)
                delta[k * ld + j] = gl[k * ld + j];
        for (size_t l = H; l-- > 0;) {
            const rt_layer *L = &g->layers[l];
            for (size_t k = 0; k < P; k++) {
                double *dk = delta + k * L->out;
                for (size_t j = 0; j < L->out; j++) {
                    if (bns[l + 1])
                        dk[j] *= (double)bns[l + 1][j];
                    if (l + 1 < H) {
                        float y =
                            bns[l + 1] ? bnact[l + 1][k * L->out + j] : act[l + 1][k * L->out + j];
                        dk[j] *= act_grad(L->act, pre[l + 1][k * L->out + j], y);
                    }
                }
                double *nk = next + k * L->in;
                for (size_t i = 0; i < L->in; i++) {
                    const float *wr = L->kernel + i * L->out;
                    double s = 0.0;
                    for (size_t j = 0; j < L->out; j++)
                        s += (double)wr[j] * dk[j];
                    nk[i] = s;
                }
            }
            double *t = delta;
            delta = next;
            next = t;
        }
        for (size_t j = 0; j < D; j++) {
            G[j] = 0.0;
            for (size_t k = 0; k < P; k++)
                G[j] += ((k == 0 || k == m) ? 0.5 / m : 1.0 / m) * delta[k * D + j];
        }
        for (size_t c = 0; c < g->n_dnn; c++) {
            double s = 0.0;
            for (size_t j = g->dnn_offset[c]; j < g->dnn_offset[c] + g->dnn_width[c]; j++)
                s += ((double)zx[j] - (double)zb[j]) * G[j];
            give(e, g->dnn_cols[c], s, in, a);
        }
    }
    goto out;
nomem:
    st = rt_err_set(err, RT_ERR_NOMEM, "integrated gradients: out of memory");
out:
    for (size_t l = 0; act && pre && bns && bnact && l <= H; l++) {
        free(act[l]);
        free(pre[l]);
        free(bns[l]);
        free(bnact[l]);
    }
    free(bnact);
    free(act);
    free(pre);
    free(bns);
    free(m2);
    free(lin);
    free(gl);
    free(gsum);
    free(logit);
    free(in);
    free(zx);
    free(zb);
    free(delta);
    free(next);
    free(G);
    return st;
}
