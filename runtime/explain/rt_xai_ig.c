/*
 * rt_xai_ig.c — integrated gradients (Sundararajan, Taly and Yan 2017)
 * for linear, DNN and wide & deep graphs, with the input gradient of the
 * forward pass computed here (the runtime does not link the trainer), and
 * for custom model graphs through rt_xai_graph.c's backward.
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
 * probability; a multi-label head's probability k, sigmoid(logit k) alone,
 * only through logit k; 1 for a logit or a prediction), then back through each
 * dense layer: batch normalization's scale, the activation's derivative
 * (relu 1 where its input is > 0, as TensorFlow's; tanh 1 - y^2; sigmoid
 * y (1 - y); elu 1 or y + 1), the kernel's transpose. The forward pass
 * along the path is rt_forward's own arithmetic (rt_dense_rows,
 * rt_activate); the gradients are summed in double.
 *
 * A custom graph takes the same path: its input and embedding nodes read
 * the DNN input vector, its linear node moves from lin_b to lin_b + lin_x
 * (linear along the path, as the canned linear part), and its logits are
 * the head's node's (rt_xai_graph_forward: rt_node_forward's arithmetic).
 * The gradient at the DNN input is rt_xai_graph_backward's, attributed per
 * column as above; a linear column gets its change times the mean gradient
 * at the linear node's output (for wide & deep as a graph, the head's, as
 * the canned model's).
 *
 * Of several heads (TF's MultiHead) the explained head's output is
 * differentiated through its own columns of the logits (head_grad), and
 * back through the graph from its logits node (rt_xai_graph.c).
 *
 * An ONNX network (model.onnx) takes the straight path in its graph
 * inputs, from the rows the baseline's features make to the instance's;
 * rt_xai_onnx.c runs the plan along it and its exact backward gives each
 * input's gradient, attributed per feature column over the coordinates
 * the column fills.
 */
#include "rt_explain.h"
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
    if (rt_fc_column_is_categorical(col->type)) {
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

/* d (output k) / d logits at logits l (double, g's ld) into gl: of several
 * heads, the explained head's columns (e->hoff on, its width) only, by its
 * own type; the others' are 0. */
static void head_grad(const xai_ctx *e, size_t k, const double *l, double *gl)
{
    for (size_t j = 0; j < e->g->logits_dim; j++)
        gl[j] = 0.0;
    size_t ld = e->hv->logits_dim;
    l += e->hoff;
    gl += e->hoff;
    if (e->space != RT_XAI_OUT_PROBABILITIES || (e->g->onnx && e->g->onnx->ml_probs)) {
        gl[k] = 1.0; /* a logit, a prediction, or an ai.onnx.ml classifier's score as served */
        return;
    }
    if (e->hv->head == PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL) {
        /* TF's MultiLabelHead: probability k = sigmoid(logit k) alone */
        double pk = 1.0 / (1.0 + exp(-l[k]));
        gl[k] = pk * (1.0 - pk);
        return;
    }
    if (e->hv->head == PREDICTD__HEAD_TYPE__HEAD_BINARY) {
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
    rt_xai_column_inputs(e->g, c, in, &n);
    for (size_t k = 0; k < n; k++)
        for (size_t q = 0; q < e->d; q++)
            if (e->players[q] == in[k])
                in[np++] = in[k];
    for (size_t k = 0; k < np; k++)
        attr[in[k]] += a / (double)np;
}

/* One integrated-gradients run: the path's buffers, filled by the steps
 * below in order (ig_open, ig_ends, ig_forward, then per output ig_head,
 * ig_linear, ig_backward, ig_dnn), released by ig_close. */
typedef struct ig_run {
    xai_ctx *e;
    const rt_graph *g;
    size_t ld, m, P; /* logits, intervals, points on the path (m + 1) */
    size_t D, H;     /* DNN input width, dense layers */
    uint64_t *m2;    /* the two ends' masks */
    double *lin;     /* [end][col][ld]; each end's last slot: lin_b, lin_x */
    double *lin_b, *lin_x;
    double *gl, *gsum, *logit;
    size_t *in;
    float *zx, *zb;                     /* DNN input at the instance, the baseline */
    float **act, **pre, **bns, **bnact; /* per layer, [0] the input */
    const float *dnn_out;
    double *delta, *next, *G;
    xai_gpath gp;          /* a custom graph (g->n_nodes): its nodes along the path */
    float *zpath, *lpath;  /* its DNN input and linear node's output, P rows */
    double *glin, *glsum;  /* d out / d linear node, per point and trapezoid-summed */
    xai_opath op;          /* an ONNX network (g->onnx): its values along the path */
} ig_run;

/* Allocates r's buffers for e; false when one is missing (r can still be
 * closed). */
static bool ig_open(ig_run *r, xai_ctx *e)
{
    const rt_graph *g = e->g;
    memset(r, 0, sizeof *r);
    r->e = e;
    r->g = g;
    r->ld = g->logits_dim;
    r->m = (size_t)e->p->step_count;
    r->P = r->m + 1;
    r->D = g->n_layers > 0 || g->n_nodes ? g->dnn_dim : 0;
    r->H = g->n_layers;
    size_t ld = r->ld, P = r->P, D = r->D, H = r->H;
    r->m2 = calloc(2 * e->words, sizeof *r->m2);
    r->lin = calloc(2 * (g->n_linear + 1) * ld, sizeof *r->lin);
    r->gl = calloc(P * ld, sizeof *r->gl);
    r->gsum = calloc(ld, sizeof *r->gsum);
    r->logit = calloc(ld, sizeof *r->logit);
    r->in = malloc((e->n_in + 1) * sizeof *r->in);
    r->zx = calloc(D + 1, sizeof *r->zx);
    r->zb = calloc(D + 1, sizeof *r->zb);
    r->act = calloc(H + 1, sizeof *r->act);
    r->pre = calloc(H + 1, sizeof *r->pre);
    r->bns = calloc(H + 1, sizeof *r->bns);
    r->bnact = calloc(H + 1, sizeof *r->bnact);
    r->G = calloc(D + 1, sizeof *r->G);
    if (g->n_nodes) {
        r->zpath = calloc(P * D + 1, sizeof *r->zpath);
        r->lpath = calloc(P * ld, sizeof *r->lpath);
        r->glin = calloc(P * ld, sizeof *r->glin);
        r->glsum = calloc(ld, sizeof *r->glsum);
        if (!r->zpath || !r->lpath || !r->glin || !r->glsum)
            return false;
    }
    size_t wmax = D;
    for (size_t l = 0; l < H; l++)
        wmax = g->layers[l].out > wmax ? g->layers[l].out : wmax;
    r->delta = calloc(P * (wmax + 1), sizeof *r->delta);
    r->next = calloc(P * (wmax + 1), sizeof *r->next);
    return r->m2 && r->lin && r->gl && r->gsum && r->logit && r->in && r->zx && r->zb && r->act &&
           r->pre && r->bns && r->bnact && r->delta && r->next && r->G;
}

/* Frees what ig_open and ig_forward allocated. */
static void ig_close(ig_run *r)
{
    for (size_t l = 0; r->act && r->pre && r->bns && r->bnact && l <= r->H; l++) {
        free(r->act[l]);
        free(r->pre[l]);
        free(r->bns[l]);
        free(r->bnact[l]);
    }
    free(r->bnact);
    free(r->act);
    free(r->pre);
    free(r->bns);
    free(r->m2);
    free(r->lin);
    free(r->gl);
    free(r->gsum);
    free(r->logit);
    free(r->in);
    free(r->zx);
    free(r->zb);
    free(r->delta);
    free(r->next);
    free(r->G);
    rt_xai_graph_free(&r->gp);
    rt_xai_onnx_free(&r->op);
    free(r->zpath);
    free(r->lpath);
    free(r->glin);
    free(r->glsum);
}

/* The two ends, transformed as the serving input function does: each
 * linear column's logits, the DNN inputs zb and zx, the linear logits at
 * the baseline (lin_b) and their change along the path (lin_x). */
static rt_status ig_ends(ig_run *r, rt_err *err)
{
    xai_ctx *e = r->e;
    const rt_graph *g = r->g;
    size_t ld = r->ld, nl = g->n_linear;
    rt_status st;
    for (size_t k = 0; k < e->d; k++)
        r->m2[e->words + k / 64] |= UINT64_C(1) << (k % 64);
    if ((st = rt_xai_fill(e, r->m2, 2, err)) != RT_OK ||
        (st = rt_transform(g, e->rows, &e->f, err)) != RT_OK)
        return st;
    for (size_t end = 0; end < 2; end++)
        for (size_t l = 0; l < nl; l++)
            linear_column(g, &e->f, l, end, r->lin + (end * (nl + 1) + l) * ld);
    if (r->D) {
        memcpy(r->zb, e->f.dnn_input, r->D * sizeof *r->zb);
        memcpy(r->zx, e->f.dnn_input + r->D, r->D * sizeof *r->zx);
    }
    const double *lin = r->lin;
    double *lin_b = r->lin + nl * ld, *lin_x = r->lin + (2 * nl + 1) * ld;
    for (size_t j = 0; j < ld; j++) {
        lin_b[j] = g->linear_bias ? (double)g->linear_bias[j] : 0.0;
        lin_x[j] = 0.0;
        for (size_t l = 0; l < nl; l++) {
            lin_b[j] += lin[l * ld + j];
            lin_x[j] += lin[((nl + 1) + l) * ld + j] - lin[l * ld + j];
        }
    }
    r->lin_b = lin_b;
    r->lin_x = lin_x;
    return RT_OK;
}

/* The straight path from b to x (w values each) at the m + 1 points
 * alpha = k / m into out (P x w); its ends are b and x exactly. */
static void path_points(const float *b, const float *x, size_t w, size_t m, float *out)
{
    for (size_t k = 0; k <= m; k++)
        for (size_t j = 0; j < w; j++) {
            float al = (float)k / (float)m;
            out[k * w + j] = k == 0 ? b[j] : k == m ? x[j] : b[j] + al * (x[j] - b[j]);
        }
}

/* A custom graph along the path (r->g->n_nodes): its DNN input moves from
 * zb to zx and its linear node's output from lin_b to lin_b + lin_x, the
 * nodes run by rt_xai_graph_forward; the logits are its head's node's. */
static rt_status ig_forward_graph(ig_run *r, rt_err *err)
{
    size_t ld = r->ld, m = r->m;
    float b[RT_XAI_MAX_OUTPUTS * 4], x[RT_XAI_MAX_OUTPUTS * 4];
    for (size_t j = 0; j < ld; j++) {
        b[j] = (float)r->lin_b[j];
        x[j] = (float)(r->lin_b[j] + r->lin_x[j]);
    }
    path_points(r->zb, r->zx, r->D, m, r->zpath);
    path_points(b, x, ld, m, r->lpath);
    rt_status st = rt_xai_graph_forward(r->g, r->zpath, r->g->n_linear ? r->lpath : NULL, r->P,
                                        &r->gp, err);
    if (st != RT_OK)
        return st;
    r->e->evals += r->P;
    r->dnn_out = r->gp.logits;
    return RT_OK;
}

/* The DNN along the path (r->H > 0): P rows, every layer kept for the
 * backward; each layer as rt_forward runs it (activation, then batch
 * normalization's scale and shift), y before the scale kept in bnact.
 * False when out of memory. */
static bool ig_forward(ig_run *r)
{
    const rt_graph *g = r->g;
    size_t P = r->P, D = r->D, H = r->H, m = r->m;
    float **act = r->act, **pre = r->pre, **bns = r->bns, **bnact = r->bnact;
    const float *zb = r->zb, *zx = r->zx;
    if (!(act[0] = malloc(P * D * sizeof(float))))
        return false;
    path_points(zb, zx, D, m, act[0]);
    for (size_t l = 0; l < H; l++) {
        const rt_layer *L = &g->layers[l];
        size_t no = L->out;
        if (!(pre[l + 1] = malloc(P * no * sizeof(float))) ||
            !(act[l + 1] = malloc(P * no * sizeof(float))))
            return false;
        rt_dense_rows(act[l], P, L->in, L->kernel, L->bias, no, pre[l + 1]);
        memcpy(act[l + 1], pre[l + 1], P * no * sizeof(float));
        if (l + 1 < H)
            rt_activate(L->act, act[l + 1], P * no);
        if (L->bn_gamma) {
            if (!(bns[l + 1] = malloc(2 * no * sizeof(float))) ||
                !(bnact[l + 1] = malloc(P * no * sizeof(float))))
                return false;
            bn_params(L, bns[l + 1], bns[l + 1] + no);
            memcpy(bnact[l + 1], act[l + 1], P * no * sizeof(float));
            const float *sc = bns[l + 1], *sh = bns[l + 1] + no;
            for (size_t k = 0; k < P; k++)
                for (size_t j = 0; j < no; j++)
                    act[l + 1][k * no + j] = act[l + 1][k * no + j] * sc[j] + sh[j];
        }
    }
    r->e->evals += P;
    r->dnn_out = act[H];
    return true;
}

/* The head's gradient for output out at each point of the path into gl,
 * and their trapezoid-weighted sum into gsum. */
static void ig_head(ig_run *r, size_t out)
{
    size_t ld = r->ld, m = r->m;
    for (size_t j = 0; j < ld; j++)
        r->gsum[j] = 0.0;
    for (size_t k = 0; k < r->P; k++) {
        double alpha = (double)k / (double)m, wk = (k == 0 || k == m) ? 0.5 / m : 1.0 / m;
        for (size_t j = 0; j < ld; j++)
            r->logit[j] = r->g->n_nodes || r->g->onnx ? (double)r->dnn_out[k * ld + j]
                                        : r->lin_b[j] + alpha * r->lin_x[j] +
                                              (r->dnn_out ? r->dnn_out[k * ld + j] : 0.0);
        head_grad(r->e, out, r->logit, r->gl + k * ld);
        for (size_t j = 0; j < ld; j++)
            r->gsum[j] += wk * r->gl[k * ld + j];
    }
}

/* Linear columns: their change times gs, the mean gradient at the linear
 * part's logits, into a. */
static void ig_linear(ig_run *r, const double *gs, double *a)
{
    const rt_graph *g = r->g;
    size_t ld = r->ld, nl = g->n_linear;
    for (size_t l = 0; l < nl; l++) {
        double s = 0.0;
        for (size_t j = 0; j < ld; j++)
            s += (r->lin[((nl + 1) + l) * ld + j] - r->lin[l * ld + j]) * gs[j];
        give(r->e, g->linear_cols[l], s, r->in, a);
    }
}

/* Back through a custom graph from the head's gradients gl: delta gets
 * the gradient at the DNN input for each point of the path, glsum the
 * trapezoid-weighted one at the linear node's output. */
static rt_status ig_backward_graph(ig_run *r, rt_err *err)
{
    size_t ld = r->ld, m = r->m;
    rt_status st = rt_xai_graph_backward(&r->gp, r->gl, r->delta, r->glin, err);
    for (size_t j = 0; j < ld; j++) {
        r->glsum[j] = 0.0;
        for (size_t k = 0; k < r->P; k++)
            r->glsum[j] += ((k == 0 || k == m) ? 0.5 / m : 1.0 / m) * r->glin[k * ld + j];
    }
    return st;
}

/* Back through the DNN from the head's gradients gl: afterwards delta
 * holds the gradient at the DNN input for each point of the path. */
static void ig_backward(ig_run *r)
{
    size_t P = r->P, H = r->H, ld = r->ld;
    float **act = r->act, **pre = r->pre, **bns = r->bns, **bnact = r->bnact;
    for (size_t k = 0; k < P; k++)
        for (size_t j = 0; j < ld; j++)
            r->delta[k * ld + j] = r->gl[k * ld + j];
    for (size_t l = H; l-- > 0;) {
        const rt_layer *L = &r->g->layers[l];
        for (size_t k = 0; k < P; k++) {
            double *dk = r->delta + k * L->out;
            for (size_t j = 0; j < L->out; j++) {
                if (bns[l + 1])
                    dk[j] *= (double)bns[l + 1][j];
                if (l + 1 < H) {
                    float y =
                        bns[l + 1] ? bnact[l + 1][k * L->out + j] : act[l + 1][k * L->out + j];
                    dk[j] *= rt_xai_act_grad(L->act, 0.0f, pre[l + 1][k * L->out + j], y);
                }
            }
            double *nk = r->next + k * L->in;
            for (size_t i = 0; i < L->in; i++) {
                const float *wr = L->kernel + i * L->out;
                double s = 0.0;
                for (size_t j = 0; j < L->out; j++)
                    s += (double)wr[j] * dk[j];
                nk[i] = s;
            }
        }
        double *t = r->delta;
        r->delta = r->next;
        r->next = t;
    }
}

/* DNN columns: the trapezoid-weighted input gradient G, then each
 * column's change times G summed over its coordinates, into a. */
static void ig_dnn(ig_run *r, double *a)
{
    const rt_graph *g = r->g;
    size_t D = r->D, P = r->P, m = r->m;
    for (size_t j = 0; j < D; j++) {
        r->G[j] = 0.0;
        for (size_t k = 0; k < P; k++)
            r->G[j] += ((k == 0 || k == m) ? 0.5 / m : 1.0 / m) * r->delta[k * D + j];
    }
    for (size_t c = 0; c < g->n_dnn; c++) {
        double s = 0.0;
        for (size_t j = g->dnn_offset[c]; j < g->dnn_offset[c] + g->dnn_width[c]; j++)
            s += ((double)r->zx[j] - (double)r->zb[j]) * r->G[j];
        give(r->e, g->dnn_cols[c], s, r->in, a);
    }
}

/* An ONNX network along the path: its graph inputs move from the
 * baseline's rows to the instance's (rt_xai_onnx_forward). */
static rt_status ig_forward_onnx(ig_run *r, rt_err *err)
{
    rt_status st = rt_xai_onnx_forward(r->g, &r->e->f, r->m, &r->op, err);
    if (st != RT_OK)
        return st;
    r->e->evals += r->P;
    r->dnn_out = r->op.logits;
    return RT_OK;
}

/* ONNX inputs: back from the head's gradients gl, then per feature column
 * its change times the trapezoid-weighted gradient at its coordinates of
 * the graph input it feeds, into a. */
static rt_status ig_onnx(ig_run *r, double *a, rt_err *err)
{
    const rt_onnx *o = r->g->onnx;
    size_t m = r->m;
    rt_status st = rt_xai_onnx_backward(&r->op, r->gl, r->ld, err);
    if (st != RT_OK)
        return st;
    for (size_t i = 0; i < o->n_inputs; i++) {
        size_t v = o->inputs[i], w = o->vals[v].row, off = 0;
        const float *x = r->op.val[v];
        const double *gd = r->op.grad[v];
        for (size_t c = 0; c < o->n_fcols[i]; c++) {
            size_t fc = o->fcols[i][c], wd = r->e->f.width[fc];
            double s = 0.0;
            for (size_t j = off; j < off + wd && j < w; j++) {
                double G = 0.0;
                for (size_t k = 0; k < r->P; k++)
                    G += ((k == 0 || k == m) ? 0.5 / m : 1.0 / m) * gd[k * w + j];
                s += ((double)x[m * w + j] - (double)x[j]) * G;
            }
            give(r->e, fc, s, r->in, a);
            off += wd;
        }
    }
    return RT_OK;
}

rt_status rt_xai_integrated_gradients(xai_ctx *e, const size_t *outs, size_t n_outs,
                                   double *const *attr, rt_err *err)
{
    ig_run r;
    rt_status st = RT_OK;
    if (!ig_open(&r, e))
        goto nomem;
    if ((st = ig_ends(&r, err)) != RT_OK)
        goto out;
    if (r.H && !ig_forward(&r))
        goto nomem;
    if (e->g->n_nodes && (st = ig_forward_graph(&r, err)) != RT_OK)
        goto out;
    if (e->g->onnx && (st = ig_forward_onnx(&r, err)) != RT_OK)
        goto out;
    for (size_t q = 0; q < n_outs; q++) {
        ig_head(&r, outs[q]);
        if (e->g->onnx) {
            if ((st = ig_onnx(&r, attr[q], err)) != RT_OK)
                goto out;
            continue;
        }
        if (e->g->n_nodes) {
            if ((st = ig_backward_graph(&r, err)) != RT_OK)
                goto out;
            ig_linear(&r, r.glsum, attr[q]);
            ig_dnn(&r, attr[q]);
            continue;
        }
        ig_linear(&r, r.gsum, attr[q]);
        if (!r.H)
            continue;
        ig_backward(&r);
        ig_dnn(&r, attr[q]);
    }
    goto out;
nomem:
    st = rt_err_set(err, RT_ERR_NOMEM, "integrated gradients: out of memory");
out:
    ig_close(&r);
    return st;
}
