/*
 * trn_gbdt_boost.c — gradient boosting of the BoostedTrees estimators over a
 * binned data set: second-order gradients of the head's loss, quantized to
 * integers so that histogram sums are exact (the same bits whatever the
 * order of the rows or the number of ranks), trees grown layer by layer
 * (depthwise, as TF) to max_depth with one histogram per node (the larger
 * child's by subtraction), pre- or post-pruning, leaf values with L1/L2 and
 * the learning rate, and the ensemble as the export's TreeEnsemble.
 */
#include "trn_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct tg_booster {
    const tg_data *d;
    Predictd__HeadType head;
    size_t ld, label_dim;
    trn_gbdt_params p;
    trn_dist *dist;
    float *labels;  /* n_rows x label_dim */
    float *logits;  /* n_rows x ld */
    double *gq, *hq; /* quantized gradients and hessians, n_rows x ld */
    double *og, *oh; /* one node's gradients in its row order (ld = 1) */
    double n_global; /* examples of every rank */
    size_t *off;
    tg_ctx ctx;
    uint32_t *idx, *tmp;
    Predictd__TreeEnsemble *ens;
};

/* A node while its tree grows. */
typedef struct gnode {
    size_t lo, hi;  /* this rank's rows idx[lo..hi) */
    double *hist;   /* while its layer is split; NULL after */
    double *tot;    /* stride: the node's sums (every rank's) */
    tg_split split;
    int is_split;
    uint32_t left, right, depth;
    uint32_t out;   /* index in the exported tree */
} gnode;

static rt_status nomem(rt_err *err)
{
    return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
}

static rt_status check_tree(const tg_booster *b, const Predictd__Tree *t, size_t ti,
                           rt_err *err);
static void walk_all(tg_booster *b);

rt_status trn_gbdt_new(const tg_data *d, const float *labels, Predictd__HeadType head,
                       size_t ld, const trn_gbdt_params *p, trn_dist *dist,
                       Predictd__TreeEnsemble *ens, tg_booster **out, rt_err *err)
{
    *out = NULL;
    if (ld == 0 || d->n_inputs == 0)
        return rt_err_set(err, RT_ERR_INVALID, "boosted trees: no inputs or no logits");
    if (ld > TG_MAX_LD)
        return rt_err_set(err, RT_ERR_LIMIT, "boosted trees: at most %d logits", TG_MAX_LD);
    tg_booster *b = calloc(1, sizeof *b);
    if (!b)
        return nomem(err);
    rt_status st = RT_OK;
    size_t n = d->n_rows;
    b->d = d;
    b->head = head;
    b->ld = ld;
    b->label_dim = head == PREDICTD__HEAD_TYPE__HEAD_REGRESSION ? ld : 1;
    b->p = *p;
    b->dist = dist;
    b->ens = ens;
    size_t nn = n ? n : 1;
    b->labels = malloc(nn * b->label_dim * sizeof *b->labels);
    b->logits = malloc(nn * ld * sizeof *b->logits);
    b->gq = malloc(nn * ld * sizeof *b->gq);
    b->hq = malloc(nn * ld * sizeof *b->hq);
    b->og = malloc(nn * sizeof *b->og);
    b->oh = malloc(nn * sizeof *b->oh);
    b->idx = malloc(nn * sizeof *b->idx);
    b->tmp = malloc(nn * sizeof *b->tmp);
    b->off = malloc(d->n_inputs * sizeof *b->off);
    if (!b->labels || !b->logits || !b->gq || !b->hq || !b->og || !b->oh || !b->idx ||
        !b->tmp || !b->off) {
        st = nomem(err);
        goto out;
    }
    memcpy(b->labels, labels, n * b->label_dim * sizeof *b->labels);
    tg_ctx *c = &b->ctx;
    c->ld = ld;
    c->n_inputs = d->n_inputs;
    c->stride = 2 * ld + 1;
    c->kind = d->kind;
    c->n_bins = d->n_bins;
    c->off = b->off;
    c->p = &b->p;
    size_t at = 0;
    for (size_t j = 0; j < d->n_inputs; j++) {
        b->off[j] = at;
        at += (size_t)d->n_bins[j] * c->stride;
    }
    c->hist_len = at;
    /* the label sums (center_bias) and the examples of every rank */
    double *sums = calloc(ld + 1, sizeof *sums);
    if (!sums) {
        st = nomem(err);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if (head == PREDICTD__HEAD_TYPE__HEAD_REGRESSION)
            for (size_t k = 0; k < ld; k++)
                sums[k] += b->labels[i * ld + k];
        else if (head == PREDICTD__HEAD_TYPE__HEAD_BINARY)
            sums[0] += b->labels[i];
        else {
            long y = (long)b->labels[i];
            if (y >= 0 && (size_t)y < ld)
                sums[y] += 1;
        }
    }
    sums[ld] = (double)n;
    st = trn_dist_sum(dist, sums, ld + 1, err);
    b->n_global = sums[ld];
    if (st == RT_OK && ens->n_trees > 0) {
        /* a checkpoint's ensemble: the logits its trees give */
        if (ens->n_bias != ld)
            st = rt_err_set(err, RT_ERR_FORMAT, "trees: %zu bias values, expected %zu",
                            ens->n_bias, ld);
        for (size_t t = 0; st == RT_OK && t < ens->n_trees; t++)
            st = check_tree(b, ens->trees[t], t, err);
        if (st == RT_OK)
            walk_all(b);
    } else if (st == RT_OK) {
        /* a new ensemble: zeros, or the label mean's logits (center_bias) */
        float *bias = calloc(ld, sizeof *bias);
        if (!bias)
            st = nomem(err);
        for (size_t k = 0; bias && p->center_bias && b->n_global > 0 && k < ld; k++) {
            double m = sums[k] / b->n_global, v;
            if (head == PREDICTD__HEAD_TYPE__HEAD_REGRESSION)
                v = m;
            else if (head == PREDICTD__HEAD_TYPE__HEAD_BINARY)
                v = m > 0 && m < 1 ? log(m / (1 - m)) : 0;
            else
                v = log(m > 1e-12 ? m : 1e-12);
            bias[k] = (float)v;
        }
        if (bias) {
            free(ens->bias);
            ens->bias = bias;
            ens->n_bias = ld;
            walk_all(b);
        }
    }
    free(sums);
    if (st)
        goto out;
    *out = b;
    b = NULL;
out:
    trn_gbdt_free(b);
    return st;
}

void trn_gbdt_free(tg_booster *b)
{
    if (!b)
        return;
    free(b->labels);
    free(b->logits);
    free(b->gq);
    free(b->hq);
    free(b->og);
    free(b->oh);
    free(b->idx);
    free(b->tmp);
    free(b->off);
    free(b);
}

const float *trn_gbdt_logits(const tg_booster *b)
{
    return b->logits;
}

double trn_gbdt_train_loss(const tg_booster *b)
{
    size_t n = b->d->n_rows;
    return n ? rt_metrics_head_loss(b->head, b->ld, b->logits, b->labels, NULL, n, n, NULL) : 0.0;
}

int64_t trn_gbdt_attempted_layers(const Predictd__TreeEnsemble *e, int64_t max_depth)
{
    int64_t sum = 0;
    size_t most = 0;
    for (size_t t = 0; e && t < e->n_trees; t++)
        most = e->trees[t]->n_nodes > most ? e->trees[t]->n_nodes : most;
    uint32_t *depth = most ? calloc(most, sizeof *depth) : NULL;
    if (most && !depth)
        return -1;
    for (size_t t = 0; e && t < e->n_trees; t++) {
        const Predictd__Tree *tr = e->trees[t];
        size_t n = tr->n_nodes;
        uint32_t d = 0;
        if (n)
            memset(depth, 0, n * sizeof *depth);
        for (size_t k = 0; k < n; k++) { /* children come after their parent */
            const Predictd__TreeNode *nd = tr->nodes[k];
            d = depth[k] > d ? depth[k] : d;
            if (nd->input >= 0 && nd->left > k && nd->left < n && nd->right > k &&
                nd->right < n)
                depth[nd->left] = depth[nd->right] = depth[k] + 1;
        }
        sum += (int64_t)d + 1 < max_depth ? (int64_t)d + 1 : max_depth;
    }
    free(depth);
    return sum;
}

/* ------------------------------------------------------------ gradients */

/* g, h of the loss at row i's logits, per logit. */
static void row_grad(const tg_booster *b, size_t i, double *g, double *h)
{
    size_t ld = b->ld;
    const float *f = b->logits + i * ld;
    if (b->head == PREDICTD__HEAD_TYPE__HEAD_REGRESSION) {
        for (size_t k = 0; k < ld; k++) {
            g[k] = (double)f[k] - (double)b->labels[i * ld + k];
            h[k] = 1.0;
        }
    } else if (b->head == PREDICTD__HEAD_TYPE__HEAD_BINARY) {
        double pr = 1.0 / (1.0 + exp(-(double)f[0]));
        g[0] = pr - (double)b->labels[i];
        h[0] = pr * (1.0 - pr);
    } else {
        double mx = f[0], z = 0;
        for (size_t k = 1; k < ld; k++)
            if (f[k] > mx)
                mx = f[k];
        for (size_t k = 0; k < ld; k++)
            z += exp((double)f[k] - mx);
        long y = (long)b->labels[i];
        for (size_t k = 0; k < ld; k++) {
            double pr = exp((double)f[k] - mx) / z;
            g[k] = pr - ((long)k == y ? 1.0 : 0.0);
            h[k] = pr * (1.0 - pr);
        }
    }
}

/* x rounded to an integer, halves away from zero (|x| <= 2^30 here; no libm
 * call in the loop). */
static inline double round_half_away(double x)
{
    return (double)(int64_t)(x + (x >= 0 ? 0.5 : -0.5));
}

/*
 * Quantizes every row's gradients and hessians to integers: q = round(x /
 * scale * 2^bits), scale the largest |x| of all ranks, bits as many as keep
 * any sum over all examples below 2^53 (exact in a double). Sets the
 * context's gk / hk (histogram units -> means over the examples).
 */
static rt_status gradients(tg_booster *b, rt_err *err)
{
    size_t n = b->d->n_rows, ld = b->ld;
    double mx[2] = {0, 0};
    for (size_t i = 0; i < n; i++) {
        double *g = b->gq + i * ld, *h = b->hq + i * ld;
        row_grad(b, i, g, h);
        for (size_t k = 0; k < ld; k++) {
            if (fabs(g[k]) > mx[0])
                mx[0] = fabs(g[k]);
            if (h[k] > mx[1])
                mx[1] = h[k];
        }
    }
    rt_status st = trn_dist_max(b->dist, mx, 2, err);
    if (st)
        return st;
    int bits = 30;
    while (bits > 8 && ldexp(b->n_global + 1, bits) >= ldexp(1, 52))
        bits--;
    double gs = mx[0] > 0 ? mx[0] : 1, hs = mx[1] > 0 ? mx[1] : 1;
    double qg = ldexp(1, bits) / gs, qh = ldexp(1, bits) / hs;
    for (size_t i = 0; i < n * ld; i++) {
        b->gq[i] = round_half_away(b->gq[i] * qg);
        b->hq[i] = round_half_away(b->hq[i] * qh);
    }
    double nz = b->n_global > 0 ? b->n_global : 1;
    b->ctx.gk = 1.0 / (qg * nz);
    b->ctx.hk = 1.0 / (qh * nz);
    return RT_OK;
}

/* ------------------------------------------------------------ histograms */

/* hist (zeroed) = this rank's sums of rows idx[lo..hi). */
static void build_hist(const tg_booster *b, size_t lo, size_t hi, double *hist)
{
    const tg_data *d = b->d;
    size_t ld = b->ld, st = b->ctx.stride;
    memset(hist, 0, b->ctx.hist_len * sizeof *hist);
    if (ld == 1) {
        /* the node's gradients in row order once, then one pass per input
         * that reads only its bins */
        const uint32_t *idx = b->idx + lo;
        size_t m = hi - lo;
        for (size_t r = 0; r < m; r++) {
            b->og[r] = b->gq[idx[r]];
            b->oh[r] = b->hq[idx[r]];
        }
        for (size_t j = 0; j < d->n_inputs; j++) {
            double *h = hist + b->off[j];
            const uint16_t *bins = d->bins[j];
            for (size_t r = 0; r < m; r++) {
                double *s = h + (size_t)bins[idx[r]] * 3;
                s[0] += b->og[r];
                s[1] += b->oh[r];
                s[2] += 1;
            }
        }
        return;
    }
    for (size_t j = 0; j < d->n_inputs; j++) {
        double *h = hist + b->off[j];
        const uint16_t *bins = d->bins[j];
        for (size_t r = lo; r < hi; r++) {
            uint32_t i = b->idx[r];
            double *s = h + (size_t)bins[i] * st;
            for (size_t k = 0; k < ld; k++) {
                s[k] += b->gq[i * ld + k];
                s[ld + k] += b->hq[i * ld + k];
            }
            s[2 * ld] += 1;
        }
    }
}

/* Stable partition of idx[lo..hi) by s; returns the first right row. */
static size_t partition(tg_booster *b, const tg_split *s, size_t lo, size_t hi)
{
    const tg_data *d = b->d;
    size_t j = (size_t)s->input, nl = lo, nr = 0;
    const uint16_t *bins = d->bins[j];
    uint32_t miss = d->n_bins[j] - 1, thr = s->threshold;
    int cat = d->kind[j] == TG_CATEGORICAL, dl = s->default_left;
    for (size_t r = lo; r < hi; r++) {
        uint32_t i = b->idx[r], bin = bins[i];
        int left = bin == miss ? dl : cat ? s->left[bin] : bin <= thr;
        if (left)
            b->idx[nl++] = i;
        else
            b->tmp[nr++] = i;
    }
    memcpy(b->idx + nl, b->tmp, nr * sizeof *b->idx);
    return nl;
}

/* --------------------------------------------------------------- growing */

typedef struct grow {
    gnode *nodes;
    size_t n, cap;
} grow;

static void grow_free(grow *g)
{
    for (size_t i = 0; i < g->n; i++) {
        free(g->nodes[i].hist);
        free(g->nodes[i].tot);
        tg_split_clear(&g->nodes[i].split);
    }
    free(g->nodes);
}

static long add_node(grow *g, size_t lo, size_t hi, uint32_t depth, size_t stride)
{
    if (rt_grow(&g->nodes, &g->cap, g->n + 1, sizeof *g->nodes) != 0)
        return -1;
    gnode *nd = &g->nodes[g->n];
    memset(nd, 0, sizeof *nd);
    nd->split.input = -1;
    nd->lo = lo;
    nd->hi = hi;
    nd->depth = depth;
    nd->tot = calloc(stride, sizeof *nd->tot);
    if (!nd->tot)
        return -1;
    return (long)g->n++;
}

/* Post-pruning (TF's "post"): from the deepest nodes up, a split whose
 * children are both leaves and whose gain is negative becomes a leaf. */
static void post_prune(grow *g)
{
    for (size_t k = g->n; k-- > 0;) {
        gnode *nd = &g->nodes[k];
        if (!nd->is_split)
            continue;
        if (g->nodes[nd->left].is_split || g->nodes[nd->right].is_split)
            continue;
        if (nd->split.gain < 0)
            nd->is_split = 0;
    }
}

/* The grown tree as a Tree message (breadth-first: children after their
 * parent), its leaves' values added to the training logits. */
static rt_status emit(tg_booster *b, grow *g, Predictd__Tree **out, rt_err *err)
{
    const tg_data *d = b->d;
    size_t ld = b->ld;
    uint32_t *queue = malloc(g->n * sizeof *queue);
    Predictd__Tree *t = malloc(sizeof *t);
    float vals[TG_MAX_LD];
    if (!queue || !t) {
        free(queue);
        free(t);
        return nomem(err);
    }
    predictd__tree__init(t);
    size_t qn = 0;
    queue[qn++] = 0;
    for (size_t q = 0; q < qn; q++) {
        gnode *nd = &g->nodes[queue[q]];
        nd->out = (uint32_t)q;
        if (nd->is_split) {
            queue[qn++] = nd->left;
            queue[qn++] = nd->right;
        }
    }
    rt_status st = RT_OK;
    t->nodes = calloc(qn, sizeof *t->nodes);
    if (!t->nodes) {
        st = nomem(err);
        goto out;
    }
    for (size_t q = 0; q < qn; q++) {
        gnode *nd = &g->nodes[queue[q]];
        Predictd__TreeNode *tn = malloc(sizeof *tn);
        if (!tn) {
            st = nomem(err);
            goto out;
        }
        predictd__tree_node__init(tn);
        t->nodes[t->n_nodes++] = tn;
        double hs = 0;
        for (size_t k = 0; k < ld; k++)
            hs += nd->tot[ld + k];
        tn->node_weight = hs * b->ctx.hk * b->n_global;
        if (!nd->is_split) {
            tn->input = -1;
            trn_gbdt_leaf(&b->ctx, nd->tot, nd->tot + ld, vals);
            if (!(tn->leaf_value = malloc(ld * sizeof *tn->leaf_value))) {
                st = nomem(err);
                goto out;
            }
            memcpy(tn->leaf_value, vals, ld * sizeof *vals);
            tn->n_leaf_value = ld;
            for (size_t r = nd->lo; r < nd->hi; r++) {
                float *f = b->logits + (size_t)b->idx[r] * ld;
                for (size_t k = 0; k < ld; k++)
                    f[k] += vals[k];
            }
            continue;
        }
        const tg_split *s = &nd->split;
        size_t j = (size_t)s->input;
        tn->input = (int32_t)j;
        tn->default_left = s->default_left;
        tn->left = g->nodes[nd->left].out;
        tn->right = g->nodes[nd->right].out;
        tn->gain = (float)s->gain;
        if (d->kind[j] == TG_CATEGORICAL) {
            tn->kind = PREDICTD__TREE_SPLIT_KIND__SPLIT_CATEGORY_SET;
            uint32_t nv = d->n_bins[j] - 1, m = 0;
            for (uint32_t c = 0; c < nv; c++)
                m += s->left[c];
            if (!(tn->left_categories = malloc((m ? m : 1) * sizeof *tn->left_categories))) {
                st = nomem(err);
                goto out;
            }
            for (uint32_t c = 0; c < nv; c++)
                if (s->left[c])
                    tn->left_categories[tn->n_left_categories++] = c;
        } else {
            tn->kind = PREDICTD__TREE_SPLIT_KIND__SPLIT_THRESHOLD;
            tn->threshold = d->kind[j] == TG_NUMERIC ? d->edges[j][s->threshold]
                                                     : (float)s->threshold;
        }
    }
out:
    free(queue);
    if (st) {
        predictd__tree__free_unpacked(t, NULL);
        return st;
    }
    *out = t;
    return RT_OK;
}

static rt_status append_tree(tg_booster *b, Predictd__Tree *t, rt_err *err)
{
    Predictd__TreeEnsemble *e = b->ens;
    Predictd__Tree **q = realloc(e->trees, (e->n_trees + 1) * sizeof *q);
    if (!q) {
        predictd__tree__free_unpacked(t, NULL);
        return nomem(err);
    }
    e->trees = q;
    e->trees[e->n_trees++] = t;
    return RT_OK;
}

/* Sums of this rank's rows of node nd into its tot (every rank's after the
 * caller's reduction). */
static void row_totals(const tg_booster *b, gnode *nd)
{
    size_t ld = b->ld;
    memset(nd->tot, 0, b->ctx.stride * sizeof *nd->tot);
    for (size_t r = nd->lo; r < nd->hi; r++) {
        uint32_t i = b->idx[r];
        for (size_t k = 0; k < ld; k++) {
            nd->tot[k] += b->gq[i * ld + k];
            nd->tot[ld + k] += b->hq[i * ld + k];
        }
        nd->tot[2 * ld] += 1;
    }
}

rt_status trn_gbdt_step(tg_booster *b, rt_err *err)
{
    const tg_data *d = b->d;
    const tg_ctx *c = &b->ctx;
    size_t n = d->n_rows, hl = c->hist_len, st_ = c->stride;
    grow g;
    memset(&g, 0, sizeof g);
    double *red = NULL; /* one layer's histograms (or totals) for the reduction */
    size_t *small = NULL;
    rt_status st = gradients(b, err);
    if (st)
        return st;
    for (size_t i = 0; i < n; i++)
        b->idx[i] = (uint32_t)i;
    if (add_node(&g, 0, n, 0, st_) < 0 || !(g.nodes[0].hist = malloc(hl * sizeof(double)))) {
        st = nomem(err);
        goto out;
    }
    build_hist(b, 0, n, g.nodes[0].hist);
    if ((st = trn_dist_sum(b->dist, g.nodes[0].hist, hl, err)))
        goto out;
    trn_gbdt_totals(c, g.nodes[0].hist, g.nodes[0].tot);
    size_t layer_lo = 0, layer_hi = 1;
    for (uint32_t depth = 0; depth < (uint32_t)b->p.max_depth; depth++) {
        int last = depth + 1 == (uint32_t)b->p.max_depth;
        /* split this layer's nodes */
        for (size_t k = layer_lo; k < layer_hi; k++) {
            gnode *nd = &g.nodes[k];
            if ((st = trn_gbdt_best_split(c, nd->hist, nd->tot, &nd->split, err)))
                goto out;
            int ok = nd->split.input >= 0;
            if (ok && b->p.pruning == TRN_PRUNE_PRE && nd->split.gain < 0)
                ok = 0;
            if (!ok)
                continue;
            size_t mid = partition(b, &nd->split, nd->lo, nd->hi);
            long l = add_node(&g, nd->lo, mid, depth + 1, st_);
            long r = l < 0 ? -1 : add_node(&g, mid, g.nodes[k].hi, depth + 1, st_);
            if (r < 0) {
                st = nomem(err);
                goto out;
            }
            nd = &g.nodes[k];
            nd->is_split = 1;
            nd->left = (uint32_t)l;
            nd->right = (uint32_t)r;
        }
        size_t next_lo = layer_hi, next_hi = g.n, nc = next_hi - next_lo;
        if (nc == 0)
            break;
        if (last) {
            /* leaves: their totals only */
            free(red);
            if (!(red = malloc(nc * st_ * sizeof *red))) {
                st = nomem(err);
                goto out;
            }
            for (size_t k = next_lo; k < next_hi; k++) {
                row_totals(b, &g.nodes[k]);
                memcpy(red + (k - next_lo) * st_, g.nodes[k].tot, st_ * sizeof *red);
            }
            if ((st = trn_dist_sum(b->dist, red, nc * st_, err)))
                goto out;
            for (size_t k = next_lo; k < next_hi; k++)
                memcpy(g.nodes[k].tot, red + (k - next_lo) * st_, st_ * sizeof *red);
        } else {
            /* the smaller child of each split (by every rank's count) from
             * its rows, summed over the ranks; the larger by subtraction */
            size_t np = nc / 2;
            free(red);
            free(small);
            red = malloc(np * hl * sizeof *red);
            small = malloc(np * sizeof *small);
            if (!red || !small) {
                st = nomem(err);
                goto out;
            }
            size_t q = 0;
            for (size_t k = layer_lo; k < layer_hi; k++) {
                gnode *nd = &g.nodes[k];
                if (!nd->is_split)
                    continue;
                int left_small = nd->split.count_left <= nd->split.count_right;
                small[q] = left_small ? nd->left : nd->right;
                build_hist(b, g.nodes[small[q]].lo, g.nodes[small[q]].hi, red + q * hl);
                q++;
            }
            if ((st = trn_dist_sum(b->dist, red, np * hl, err)))
                goto out;
            q = 0;
            for (size_t k = layer_lo; k < layer_hi; k++) {
                gnode *nd = &g.nodes[k];
                if (!nd->is_split)
                    continue;
                size_t sm = small[q], lg = sm == nd->left ? nd->right : nd->left;
                double *hs = malloc(hl * sizeof *hs);
                if (!hs) {
                    st = nomem(err);
                    goto out;
                }
                memcpy(hs, red + q * hl, hl * sizeof *hs);
                double *hp = nd->hist; /* the parent's becomes the larger's */
                for (size_t x = 0; x < hl; x++)
                    hp[x] -= hs[x];
                nd->hist = NULL;
                g.nodes[sm].hist = hs;
                g.nodes[lg].hist = hp;
                trn_gbdt_totals(c, hs, g.nodes[sm].tot);
                trn_gbdt_totals(c, hp, g.nodes[lg].tot);
                q++;
            }
        }
        for (size_t k = layer_lo; k < layer_hi; k++) {
            free(g.nodes[k].hist);
            g.nodes[k].hist = NULL;
        }
        layer_lo = next_lo;
        layer_hi = next_hi;
    }
    if (b->p.pruning == TRN_PRUNE_POST)
        post_prune(&g);
    Predictd__Tree *t = NULL;
    if ((st = emit(b, &g, &t, err)) || (st = append_tree(b, t, err)))
        goto out;
out:
    free(red);
    free(small);
    grow_free(&g);
    return st;
}

/* ------------------------------------------------------------- walking */

static int in_set(const uint32_t *s, size_t n, uint32_t x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s[mid] == x)
            return 1;
        if (s[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

uint32_t trn_gbdt_walk(const Predictd__TreeEnsemble *e, const Predictd__Tree *t,
                       const tg_data *d, size_t i)
{
    (void)e;
    uint32_t k = 0;
    while (t->nodes[k]->input >= 0) {
        const Predictd__TreeNode *nd = t->nodes[k];
        size_t j = (size_t)nd->input;
        uint32_t bin = d->bins[j][i];
        int left;
        if (bin == d->n_bins[j] - 1)
            left = nd->default_left;
        else if (nd->kind == PREDICTD__TREE_SPLIT_KIND__SPLIT_CATEGORY_SET)
            left = in_set(nd->left_categories, nd->n_left_categories, bin);
        else if (d->kind[j] == TG_NUMERIC)
            left = d->edges[j][bin] <= nd->threshold;
        else
            left = (float)bin <= nd->threshold;
        k = left ? nd->left : nd->right;
    }
    return k;
}

/* A checkpoint's tree must fit the data before it is walked. */
static rt_status check_tree(const tg_booster *b, const Predictd__Tree *t, size_t ti, rt_err *err)
{
    if (t->n_nodes == 0)
        return rt_err_set(err, RT_ERR_FORMAT, "tree %zu: no nodes", ti);
    for (size_t k = 0; k < t->n_nodes; k++) {
        const Predictd__TreeNode *nd = t->nodes[k];
        if (nd->input < 0) {
            if (nd->n_leaf_value != b->ld)
                return rt_err_set(err, RT_ERR_FORMAT, "tree %zu node %zu: %zu leaf values, "
                                  "expected %zu", ti, k, nd->n_leaf_value, b->ld);
            continue;
        }
        if ((size_t)nd->input >= b->d->n_inputs || nd->left <= k || nd->right <= k ||
            nd->left >= t->n_nodes || nd->right >= t->n_nodes)
            return rt_err_set(err, RT_ERR_FORMAT, "tree %zu node %zu: bad input or children",
                              ti, k);
        for (size_t q = 1; q < nd->n_left_categories; q++)
            if (nd->left_categories[q] <= nd->left_categories[q - 1])
                return rt_err_set(err, RT_ERR_FORMAT, "tree %zu node %zu: left_categories "
                                  "not increasing", ti, k);
    }
    return RT_OK;
}

/* The training logits: the bias plus each tree's leaf, in tree order (the
 * order training adds them in, so a resumed run has the same bits). */
static void walk_all(tg_booster *b)
{
    size_t ld = b->ld, n = b->d->n_rows;
    const Predictd__TreeEnsemble *e = b->ens;
    for (size_t i = 0; i < n; i++) {
        float *f = b->logits + i * ld;
        for (size_t k = 0; k < ld; k++)
            f[k] = e->bias[k];
        for (size_t t = 0; t < e->n_trees; t++) {
            const Predictd__Tree *tr = e->trees[t];
            const Predictd__TreeNode *leaf = tr->nodes[trn_gbdt_walk(e, tr, b->d, i)];
            for (size_t k = 0; k < ld; k++)
                f[k] += leaf->leaf_value[k];
        }
    }
}
