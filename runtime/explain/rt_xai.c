/*
 * rt_xai.c — feature attributions of one instance (rt_xai_explain):
 * which raw inputs are players, the value function over coalitions, and
 * the Shapley methods.
 *
 * The players are the raw inputs whose cells differ between the instance
 * and the baseline; an input with the same cells in both changes no row
 * and its Shapley value is exactly 0 (the dummy axiom), so it is left out
 * of every enumeration and permutation. A coalition is a row whose players
 * in it take the instance's cells and the others the baseline's, run
 * through the serving transform, forward pass and head like any request:
 * a crossed or embedded column sees the raw inputs it reads, so its part
 * belongs to them without any rule of ours.
 *
 *   exact      all 2^d coalitions (d <= RT_XAI_EXACT_MAX), then
 *              phi_i = sum over S not holding i of |S|! (d-|S|-1)! / d!
 *              (v(S + i) - v(S)), in double. Past that size, a model that is
 *              additive in its inputs (linear part only, every linear column
 *              reading one raw input, explained on its logits or
 *              predictions) has phi_i = v({i}) - v({}) exactly: d + 1 rows.
 *   sampled    path_count permutations of the players (rt_rng seeded with
 *              p->seed, the same for every instance: an instance's answer
 *              does not depend on its place in the request); along each,
 *              a player's marginal contribution; the mean over paths.
 *   gradients  rt_xai_ig.c.
 *
 * Every row's value has the bits it would have alone (rt_forward and the
 * head work row by row), so the coalition of all players is the instance's
 * :predict answer and the empty one the baseline's.
 *
 * A model of several heads (TF's MultiHead) is explained one head at a
 * time (p->head): the value function is that head's own output as the
 * served head computes it from its columns of the logits (rt_outputs.heads),
 * its output space, indices and classes the head's (rt_graph_head_view),
 * exactly as a one-head model of that head's type.
 */
#include "rt_explain.h"
#include "rt_explain_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

rt_xai_params rt_xai_default_params(void)
{
    return (rt_xai_params){.method = RT_XAI_DEFAULT,
                           .path_count = RT_XAI_PATHS_DEFAULT,
                           .step_count = RT_XAI_STEPS_DEFAULT,
                           .output = RT_XAI_OUT_DEFAULT,
                           .seed = 1};
}

const char *rt_xai_method_name(rt_xai_method m)
{
    switch (m) {
    case RT_XAI_EXACT: return "exactShapleyAttribution";
    case RT_XAI_SAMPLED: return "sampledShapleyAttribution";
    case RT_XAI_IG: return "integratedGradientsAttribution";
    case RT_XAI_TREE_SHAP: return "treeShapAttribution";
    default: return "default";
    }
}

/* ---------------------------------------------------- the value function */

float rt_xai_out_value(const xai_ctx *e, const rt_outputs *o, size_t r, size_t k)
{
    size_t w = e->hv->logits_dim;
    if (e->hv != e->g) /* several heads: the explained head's own outputs */
        o = &o->heads[e->p->head];
    switch (e->space) {
    case RT_XAI_OUT_PROBABILITIES: return o->probabilities[r * o->n_classes + k];
    case RT_XAI_OUT_PREDICTIONS: return o->predictions[r * w + k];
    default: return o->logits[r * w + k];
    }
}

/* Runs the rows in e->rows: transform, forward, head into e->o. */
static rt_status run_rows(xai_ctx *e, rt_err *err)
{
    rt_status st = rt_transform(e->g, e->rows, &e->f, err);
    if (st != RT_OK)
        return st;
    size_t n = e->f.n, ld = e->g->logits_dim;
    if (n * ld > e->logits_cap) {
        float *q = realloc(e->logits, n * ld * sizeof(float));
        if (!q)
            return rt_err_set(err, RT_ERR_NOMEM, "explanation rows: out of memory");
        e->logits = q;
        e->logits_cap = n * ld;
    }
    if ((st = rt_forward(e->g, &e->f, e->ws, e->logits, err)) != RT_OK)
        return st;
    e->evals += n;
    return rt_head_compute_ws(e->g, e->logits, e->ws, n, &e->o, err);
}

rt_status rt_xai_eval(xai_ctx *e, const uint64_t *masks, size_t n, const size_t *outs,
                      size_t n_outs, double *v, rt_err *err)
{
    for (size_t r0 = 0; r0 < n; r0 += XAI_CHUNK) {
        size_t m = n - r0 < XAI_CHUNK ? n - r0 : XAI_CHUNK;
        if (e->p->stop && e->p->stop(e->p->stop_arg))
            return rt_err_set(err, RT_ERR_LIMIT, "explain: stopped after %zu model rows",
                              e->evals);
        rt_status st = rt_xai_fill(e, masks + r0 * e->words, m, err);
        if (st == RT_OK)
            st = run_rows(e, err);
        if (st != RT_OK)
            return st;
        for (size_t r = 0; r < m; r++)
            for (size_t j = 0; j < n_outs; j++)
                v[(r0 + r) * n_outs + j] = (double)rt_xai_out_value(e, &e->o, r, outs[j]);
    }
    return RT_OK;
}

/* ----------------------------------------------------------- the methods */

static void set_bit(uint64_t *mk, size_t k)
{
    mk[k / 64] |= UINT64_C(1) << (k % 64);
}

/* Exact Shapley values by enumeration: attr[j][players[k]]. */
static rt_status exact_enumerate(xai_ctx *e, const size_t *outs, size_t n_outs, double *const *attr,
                                 rt_err *err)
{
    size_t d = e->d, rows = (size_t)1 << d;
    uint64_t *masks = malloc(rows * sizeof *masks);
    double *v = malloc(rows * n_outs * sizeof *v);
    double *w = malloc((d + 1) * sizeof *w);
    rt_status st = RT_OK;
    if (!masks || !v || !w) {
        st = rt_err_set(err, RT_ERR_NOMEM, "exact Shapley: %zu rows: out of memory", rows);
        goto out;
    }
    for (size_t s = 0; s < rows; s++)
        masks[s] = s;
    if ((st = rt_xai_eval(e, masks, rows, outs, n_outs, v, err)) != RT_OK)
        goto out;
    /* w[s] = s! (d-s-1)! / d!, by the recurrence w[s+1] = w[s] (s+1) / (d-s-1) */
    if (d > 0) {
        double w0 = 1.0 / (double)d;
        w[0] = w0;
        for (size_t s = 0; s + 1 < d; s++)
            w[s + 1] = w[s] * (double)(s + 1) / (double)(d - s - 1);
    }
    for (size_t j = 0; j < n_outs; j++) {
        for (size_t k = 0; k < d; k++) {
            double phi = 0.0;
            size_t bit = (size_t)1 << k;
            for (size_t s = 0; s < rows; s++) {
                if (s & bit)
                    continue;
                size_t size = (size_t)__builtin_popcountll((unsigned long long)s);
                phi += w[size] * (v[(s | bit) * n_outs + j] - v[s * n_outs + j]);
            }
            attr[j][e->players[k]] = phi;
        }
    }
out:
    free(masks);
    free(v);
    free(w);
    return st;
}

/* TreeSHAP (rt_trees.c) for an ensemble explained on its logits. */
static rt_status tree_shap(xai_ctx *e, const size_t *outs, size_t n_outs, double *const *attr,
                           rt_err *err)
{
    const rt_graph *g = e->g;
    size_t ni = rt_trees_num_inputs(g), ld = g->logits_dim;
    uint64_t *m2 = calloc(2 * e->words, sizeof *m2);
    long *raw = malloc((ni + 1) * sizeof *raw);
    size_t *in = malloc((e->n_in + 1) * sizeof *in);
    double *phi = malloc((e->n_in * ld + 1) * sizeof *phi);
    rt_status st = RT_OK;
    if (!m2 || !raw || !in || !phi) {
        st = rt_err_set(err, RT_ERR_NOMEM, "TreeSHAP: out of memory");
        goto out;
    }
    for (size_t k = 0; k < e->d; k++)
        set_bit(m2 + e->words, k);
    for (size_t k = 0; k < ni; k++) {
        long c = rt_trees_input_column(g, k);
        size_t n = 0;
        if (c >= 0)
            rt_xai_column_inputs(g, (size_t)c, in, &n);
        raw[k] = n == 1 ? (long)in[0] : -1;
    }
    if ((st = rt_xai_fill(e, m2, 2, err)) != RT_OK ||
        (st = rt_transform(g, e->rows, &e->f, err)) != RT_OK ||
        (st = rt_trees_shap(g, &e->f, raw, e->n_in, phi, err)) != RT_OK)
        goto out;
    for (size_t j = 0; j < n_outs; j++)
        for (size_t i = 0; i < e->n_in; i++)
            attr[j][i] = phi[i * ld + outs[j]];
out:
    free(m2);
    free(raw);
    free(in);
    free(phi);
    return st;
}

/* Path-dependent TreeSHAP (rt_trees_shap_path) of the instance's logits:
 * attr by raw input, *expected the expected logit of each output. */
static rt_status tree_shap_path(xai_ctx *e, const size_t *outs, size_t n_outs,
                                double *const *attr, float *expected, rt_err *err)
{
    const rt_graph *g = e->g;
    size_t ni = rt_trees_num_inputs(g), ld = g->logits_dim;
    uint64_t *m1 = calloc(e->words, sizeof *m1);
    size_t *in = malloc((e->n_in + 1) * sizeof *in);
    float *phi = malloc((ni * ld + 1) * sizeof *phi), *bias = malloc(ld * sizeof *bias);
    rt_status st = RT_OK;
    if (!m1 || !in || !phi || !bias) {
        st = rt_err_set(err, RT_ERR_NOMEM, "TreeSHAP: out of memory");
        goto out;
    }
    for (size_t k = 0; k < e->d; k++)
        set_bit(m1, k);
    if ((st = rt_xai_fill(e, m1, 1, err)) != RT_OK ||
        (st = rt_transform(g, e->rows, &e->f, err)) != RT_OK ||
        (st = rt_trees_shap_path(g, &e->f, phi, bias, err)) != RT_OK)
        goto out;
    for (size_t k = 0; k < ni; k++) {
        long c = rt_trees_input_column(g, k);
        size_t n = 0;
        if (c >= 0)
            rt_xai_column_inputs(g, (size_t)c, in, &n);
        for (size_t j = 0; j < n_outs; j++)
            for (size_t r = 0; r < n; r++) /* one raw input a tree input, or shared */
                attr[j][in[r]] += (double)phi[k * ld + outs[j]] / (double)n;
    }
    for (size_t j = 0; j < n_outs; j++)
        expected[j] = bias[outs[j]];
out:
    free(m1);
    free(in);
    free(phi);
    free(bias);
    return st;
}

/* A model whose explained output is a sum of one function per raw input. */
static bool additive(const rt_graph *g, rt_xai_output space)
{
    if (g->trees || g->n_layers > 0 || g->n_nodes > 0 || g->onnx) /* a custom graph or an ONNX network: any function */
        return false;
    if (space == RT_XAI_OUT_PROBABILITIES)
        return false;
    size_t *in = malloc((g->n_inputs + 1) * sizeof *in), n = 0;
    if (!in)
        return false;
    bool ok = true;
    for (size_t l = 0; ok && l < g->n_linear; l++) {
        rt_xai_column_inputs(g, g->linear_cols[l], in, &n);
        if (n > 1)
            ok = false;
    }
    free(in);
    return ok;
}

/* Rows: the empty coalition, then each player alone (additive models), or
 * along permutations (sampled). */
static rt_status single_swaps(xai_ctx *e, const size_t *outs, size_t n_outs, double *const *attr,
                              rt_err *err)
{
    size_t d = e->d, W = e->words;
    uint64_t *masks = calloc((d + 1) * W, sizeof *masks);
    double *v = malloc((d + 1) * n_outs * sizeof *v);
    rt_status st = RT_OK;
    if (!masks || !v) {
        st = rt_err_set(err, RT_ERR_NOMEM, "Shapley: out of memory");
        goto out;
    }
    for (size_t k = 0; k < d; k++)
        set_bit(masks + (k + 1) * W, k);
    if ((st = rt_xai_eval(e, masks, d + 1, outs, n_outs, v, err)) != RT_OK)
        goto out;
    for (size_t j = 0; j < n_outs; j++)
        for (size_t k = 0; k < d; k++)
            attr[j][e->players[k]] = v[(k + 1) * n_outs + j] - v[j];
out:
    free(masks);
    free(v);
    return st;
}

static rt_status sampled(xai_ctx *e, const size_t *outs, size_t n_outs, double *const *attr,
                         rt_err *err)
{
    size_t d = e->d, W = e->words, paths = (size_t)e->p->path_count;
    size_t rows = paths * (d + 1);
    uint64_t *masks = calloc(rows * W, sizeof *masks);
    double *v = malloc(rows * n_outs * sizeof *v);
    size_t *perm = malloc((d + 1) * paths * sizeof *perm);
    rt_status st = RT_OK;
    if (!masks || !v || !perm) {
        st = rt_err_set(err, RT_ERR_NOMEM, "sampled Shapley: out of memory");
        goto out;
    }
    rt_rng rng;
    rt_rng_seed(&rng, e->p->seed);
    for (size_t q = 0; q < paths; q++) {
        size_t *pm = perm + q * (d + 1);
        for (size_t k = 0; k < d; k++)
            pm[k] = k;
        for (size_t k = d; k > 1; k--) { /* Fisher-Yates */
            size_t r = (size_t)rt_rng_below(&rng, k);
            size_t t = pm[k - 1];
            pm[k - 1] = pm[r];
            pm[r] = t;
        }
        uint64_t *base = masks + q * (d + 1) * W;
        for (size_t s = 1; s <= d; s++) { /* row s: the first s players of the path */
            memcpy(base + s * W, base + (s - 1) * W, W * sizeof *base);
            set_bit(base + s * W, pm[s - 1]);
        }
    }
    if ((st = rt_xai_eval(e, masks, rows, outs, n_outs, v, err)) != RT_OK)
        goto out;
    for (size_t j = 0; j < n_outs; j++) {
        for (size_t k = 0; k < d; k++)
            attr[j][e->players[k]] = 0.0;
        for (size_t q = 0; q < paths; q++) {
            const size_t *pm = perm + q * (d + 1);
            const double *vq = v + q * (d + 1) * n_outs;
            for (size_t s = 1; s <= d; s++)
                attr[j][e->players[pm[s - 1]]] += vq[s * n_outs + j] - vq[(s - 1) * n_outs + j];
        }
        for (size_t k = 0; k < d; k++)
            attr[j][e->players[k]] /= (double)paths;
    }
out:
    free(masks);
    free(v);
    free(perm);
    return st;
}

/* ------------------------------------------------------------ the entry */

/* Cells (a, ai, in) and (b, bi, in) hold the same values. */
static bool same_cell(const rt_batch *a, size_t ai, const rt_batch *b, size_t bi, size_t in)
{
    size_t na = 0, nb = 0;
    const rt_value *va = rt_batch_cell(a, ai, in, &na);
    const rt_value *vb = rt_batch_cell(b, bi, in, &nb);
    if (na != nb)
        return false;
    for (size_t k = 0; k < na; k++) {
        if (!va[k].str != !vb[k].str)
            return false;
        if (va[k].str) {
            if (va[k].len != vb[k].len || memcmp(va[k].str, vb[k].str, va[k].len) != 0)
                return false;
        } else if (memcmp(&va[k].num, &vb[k].num, sizeof(double)) != 0) {
            return false;
        }
    }
    return true;
}

/* The outputs to explain, highest value at the instance first. */
static rt_status pick_outputs(xai_ctx *e, const float *xv, size_t *outs, size_t max, size_t *n_outs,
                              rt_err *err)
{
    const rt_xai_params *p = e->p;
    if (p->n_output_indices > 0) {
        if (p->n_output_indices > max)
            return rt_err_set(err, RT_ERR_LIMIT, "outputIndices: more than %zu", max);
        for (size_t j = 0; j < p->n_output_indices; j++) {
            if (p->output_indices[j] >= e->n_out)
                return rt_err_set(err, RT_ERR_INVALID,
                                  "outputIndices[%zu]: %zu is out of range [0, %zu)", j,
                                  p->output_indices[j], e->n_out);
            outs[j] = p->output_indices[j];
        }
        *n_outs = p->n_output_indices;
        return RT_OK;
    }
    size_t k = p->top_k == 0 ? 1 : p->top_k < 0 ? e->n_out : (size_t)p->top_k;
    if (k > e->n_out)
        return rt_err_set(err, RT_ERR_INVALID, "topK: %d is out of range [1, %zu] (or -1)",
                          p->top_k, e->n_out);
    if (k > max)
        k = max;
    bool taken[RT_XAI_MAX_OUTPUTS * 4] = {false};
    for (size_t j = 0; j < k; j++) {
        size_t best = SIZE_MAX;
        for (size_t o = 0; o < e->n_out && o < sizeof taken; o++)
            if (!taken[o] && (best == SIZE_MAX || xv[o] > xv[best]))
                best = o;
        taken[best] = true;
        outs[j] = best;
    }
    *n_outs = k;
    return RT_OK;
}

/* The output p explains on g (never RT_XAI_OUT_DEFAULT) into *space, by
 * the explained head hv's type. */
static rt_status resolve_space(const rt_graph *g, const rt_graph *hv, const rt_xai_params *p,
                               rt_xai_output *space, rt_err *err)
{
    bool cls = hv->head != PREDICTD__HEAD_TYPE__HEAD_REGRESSION;
    *space = p->output;
    if (p->method == RT_XAI_TREE_SHAP) {
        if (!g->trees)
            return rt_err_set(err, RT_ERR_INVALID,
                              "treeShapAttribution: the model is not a tree ensemble (use "
                              "exactShapleyAttribution or sampledShapleyAttribution)");
        if (*space != RT_XAI_OUT_DEFAULT && *space != RT_XAI_OUT_LOGITS)
            return rt_err_set(err, RT_ERR_INVALID,
                              "outputs: treeShapAttribution explains the logits (the margin)");
        *space = RT_XAI_OUT_LOGITS;
    }
    if (*space == RT_XAI_OUT_DEFAULT)
        *space = cls ? RT_XAI_OUT_PROBABILITIES : RT_XAI_OUT_PREDICTIONS;
    if (*space == RT_XAI_OUT_PROBABILITIES && !cls)
        return rt_err_set(err, RT_ERR_INVALID,
                          "outputs: a regressor has no probabilities (explain its predictions "
                          "or logits)");
    if (*space == RT_XAI_OUT_PREDICTIONS && cls)
        return rt_err_set(err, RT_ERR_INVALID,
                          "outputs: a classifier has no predictions (explain its "
                          "probabilities or logits)");
    return RT_OK;
}

/* The head p explains into e->hv and e->hoff: g itself for one head; of
 * several, p->head's view and its columns (RT_ERR_INVALID past the last). */
static rt_status explained_head(xai_ctx *e, rt_err *err)
{
    const rt_graph *g = e->g;
    size_t nh = g->n_head_views, h = e->p->head;
    e->hv = g;
    e->hoff = 0;
    if (nh == 0 && h == 0)
        return RT_OK;
    if (nh == 0)
        return rt_err_set(err, RT_ERR_INVALID, "head: %zu, the model has one head", h);
    if (h >= nh || !g->head_off)
        return rt_err_set(err, RT_ERR_INVALID, "head: %zu is out of range [0, %zu)", h, nh);
    e->hv = &g->head_views[h];
    e->hoff = g->head_off[h];
    return RT_OK;
}

rt_status rt_xai_explain(const rt_graph *g, const rt_batch *xb, size_t xi, const rt_batch *bb,
                         size_t bi, const rt_xai_params *p, rt_xai_result *res, size_t max_res,
                         size_t *n_res, rt_err *err)
{
    if (!g || !xb || !bb || !p || !res || !n_res)
        return rt_err_set(err, RT_ERR_INVALID, "rt_xai_explain: NULL argument");
    *n_res = 0;
    if (xi >= rt_batch_size(xb) || bi >= rt_batch_size(bb))
        return rt_err_set(err, RT_ERR_INVALID, "rt_xai_explain: no such instance");
    xai_ctx e = {.g = g, .p = p, .xb = xb, .xi = xi, .bb = bb, .bi = bi, .n_in = g->n_inputs};
    rt_transform_features_init(&e.f);
    rt_head_outputs_init(&e.o);
    rt_status st0 = explained_head(&e, err);
    if (st0 == RT_OK)
        st0 = resolve_space(g, e.hv, p, &e.space, err);
    if (st0 != RT_OK)
        return st0;
    e.n_out = e.space == RT_XAI_OUT_PROBABILITIES ? e.hv->n_classes : e.hv->logits_dim;
    rt_xai_method method = p->method;
    if (method == RT_XAI_DEFAULT)
        method =
            g->n_inputs <= RT_XAI_EXACT_MAX || (g->trees && e.space != RT_XAI_OUT_PROBABILITIES)
                ? RT_XAI_EXACT
                : RT_XAI_SAMPLED;
    if (method == RT_XAI_IG && g->trees)
        return rt_err_set(err, RT_ERR_INVALID,
                          "integratedGradientsAttribution: a BoostedTrees model has no "
                          "gradient (use exactShapleyAttribution or "
                          "sampledShapleyAttribution)");
    rt_status st_onnx;
    if (method == RT_XAI_IG && g->onnx && (st_onnx = rt_xai_onnx_check(g->onnx, err)) != RT_OK)
        return st_onnx;
    if (method == RT_XAI_SAMPLED && (p->path_count < 1 || p->path_count > 50))
        return rt_err_set(err, RT_ERR_INVALID,
                          "sampledShapleyAttribution.pathCount: %d is out of range [1, 50]",
                          p->path_count);
    if (method == RT_XAI_IG && (p->step_count < 1 || p->step_count > 100))
        return rt_err_set(err, RT_ERR_INVALID,
                          "integratedGradientsAttribution.stepCount: %d is out of range "
                          "[1, 100]",
                          p->step_count);

    rt_status st = RT_OK;
    size_t outs[RT_XAI_MAX_OUTPUTS], n_outs = 0;
    double *attr[RT_XAI_MAX_OUTPUTS];
    double ends[2 * RT_XAI_MAX_OUTPUTS * 4];
    float xv[RT_XAI_MAX_OUTPUTS * 4], bv[RT_XAI_MAX_OUTPUTS * 4];
    e.players = malloc((e.n_in + 1) * sizeof *e.players);
    e.from_base = malloc(e.n_in + 1);
    e.rows = rt_batch_new(g);
    e.ws = rt_workspace_new();
    if (!e.players || !e.from_base || !e.rows || !e.ws) {
        st = rt_err_set(err, RT_ERR_NOMEM, "explanation: out of memory");
        goto out;
    }
    for (size_t in = 0; in < e.n_in; in++)
        if (!same_cell(xb, xi, bb, bi, in))
            e.players[e.d++] = in;
    e.words = (e.d + 63) / 64 ? (e.d + 63) / 64 : 1;
    if (e.n_out > RT_XAI_MAX_OUTPUTS * 4) {
        st = rt_err_set(err, RT_ERR_LIMIT, "explanation: %zu outputs, at most %d", e.n_out,
                        RT_XAI_MAX_OUTPUTS * 4);
        goto out;
    }
    {
        /* the two ends: the baseline (no player) and the instance (all) */
        uint64_t *m2 = calloc(2 * e.words, sizeof *m2);
        size_t all[RT_XAI_MAX_OUTPUTS * 4];
        if (!m2) {
            st = rt_err_set(err, RT_ERR_NOMEM, "explanation: out of memory");
            goto out;
        }
        for (size_t k = 0; k < e.d; k++)
            set_bit(m2 + e.words, k);
        for (size_t o = 0; o < e.n_out; o++)
            all[o] = o;
        st = rt_xai_eval(&e, m2, 2, all, e.n_out, ends, err);
        free(m2);
        if (st != RT_OK)
            goto out;
        for (size_t o = 0; o < e.n_out; o++) {
            bv[o] = (float)ends[o];
            xv[o] = (float)ends[e.n_out + o];
        }
    }
    size_t max = max_res < RT_XAI_MAX_OUTPUTS ? max_res : RT_XAI_MAX_OUTPUTS;
    if ((st = pick_outputs(&e, xv, outs, max, &n_outs, err)) != RT_OK)
        goto out;
    for (size_t j = 0; j < n_outs; j++) {
        attr[j] = res[j].attr;
        for (size_t in = 0; in < e.n_in; in++)
            attr[j][in] = 0.0;
    }
    float expected[RT_XAI_MAX_OUTPUTS];
    bool have_expected = false;
    if (method == RT_XAI_TREE_SHAP) {
        st = tree_shap_path(&e, outs, n_outs, attr, expected, err);
        have_expected = true;
    } else if (method == RT_XAI_EXACT) {
        if (g->trees && e.space != RT_XAI_OUT_PROBABILITIES && !p->enumerate)
            st = tree_shap(&e, outs, n_outs, attr, err);
        else if (e.d <= RT_XAI_EXACT_MAX)
            st = exact_enumerate(&e, outs, n_outs, attr, err);
        else if (additive(g, e.space))
            st = single_swaps(&e, outs, n_outs, attr, err);
        else
            st = rt_err_set(err, RT_ERR_LIMIT,
                            "exactShapleyAttribution: %zu inputs differ from the baseline, "
                            "exact enumeration takes at most %d (use "
                            "sampledShapleyAttribution)",
                            e.d, RT_XAI_EXACT_MAX);
    } else if (method == RT_XAI_SAMPLED) {
        st = sampled(&e, outs, n_outs, attr, err);
    } else {
        st = rt_xai_integrated_gradients(&e, outs, n_outs, attr, err);
    }
    if (st != RT_OK)
        goto out;
    for (size_t j = 0; j < n_outs; j++) {
        rt_xai_result *r = &res[j];
        r->output_index = outs[j];
        r->instance_value = xv[outs[j]];
        r->baseline_value = have_expected ? expected[j] : bv[outs[j]];
        r->method = method;
        r->evaluations = e.evals;
        double sum = 0.0, delta = (double)r->instance_value - (double)r->baseline_value;
        for (size_t in = 0; in < e.n_in; in++)
            sum += attr[j][in];
        double gap = fabs(sum - delta);
        r->approx_error = fabs(delta) > 0.0 ? gap / fabs(delta) : gap;
    }
    *n_res = n_outs;
out:
    free(e.players);
    free(e.from_base);
    rt_batch_free(e.rows);
    rt_workspace_free(e.ws);
    rt_transform_features_free(&e.f);
    rt_head_outputs_free(&e.o);
    free(e.logits);
    return st;
}
