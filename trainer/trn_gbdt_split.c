/*
 * trn_gbdt_split.c — the boosted trees' split search: quantile bin edges of
 * numeric inputs, the regularized score and leaf values (L1, L2,
 * learning rate), and the best split of a node from its histogram: a
 * threshold over ordered bins (numeric, bucketized) or a category set
 * (categories sorted by gradient / hessian, as LightGBM), each with the
 * direction of missing values learned.
 */
#include "trn_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

rt_status trn_gbdt_edges(float *v, size_t n, double epsilon, float **edges, size_t *n_edges,
                         rt_err *err)
{
    *edges = NULL;
    *n_edges = 0;
    if (n == 0)
        return RT_OK;
    qsort(v, n, sizeof *v, cmp_float);
    double qd = floor(1.0 / epsilon + 0.5);
    size_t q = qd >= TG_MAX_BINS ? TG_MAX_BINS : qd < 1 ? 1 : (size_t)qd;
    size_t distinct = 1;
    for (size_t i = 1; i < n; i++)
        distinct += v[i] != v[i - 1];
    float *e = malloc((distinct <= q ? distinct : q) * sizeof *e);
    if (!e)
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    /* equal-frequency bins over the distinct values: a bin closes at the
     * first value that brings it to its share of the rows left (rows left /
     * bins left), so a value heavier than a share gets a bin of its own and
     * the other values share the rest; once no more values are left than
     * bins, every value closes one */
    size_t k = 0, left = n, acc = 0, values_left = distinct;
    for (size_t i = 0; i < n; i++) {
        acc++;
        if (i + 1 < n && v[i + 1] == v[i])
            continue;
        values_left--;
        size_t bins_left = q - k;
        if (i + 1 == n || values_left < bins_left || acc * bins_left >= left) {
            e[k++] = v[i];
            left -= acc;
            acc = 0;
        }
    }
    *edges = e;
    *n_edges = k;
    return RT_OK;
}

uint32_t trn_gbdt_bin(const float *e, size_t n, float x)
{
    if (isnan(x) || n == 0 || x > e[n - 1])
        return (uint32_t)n;
    size_t lo = 0, hi = n - 1; /* the first edge >= x is in [lo, hi] */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (e[mid] >= x)
            hi = mid;
        else
            lo = mid + 1;
    }
    return (uint32_t)lo;
}

void tg_split_clear(tg_split *s)
{
    free(s->left);
    memset(s, 0, sizeof *s);
    s->input = -1;
}

/* T(G): the gradient sum after L1 (TF's and XGBoost's soft threshold). */
static double l1_shrink(double g, double l1)
{
    if (l1 <= 0)
        return g;
    return g > l1 ? g - l1 : g < -l1 ? g + l1 : 0.0;
}

double trn_gbdt_score(const tg_ctx *c, const double *g, const double *h)
{
    double s = 0;
    for (size_t d = 0; d < c->ld; d++) {
        double G = l1_shrink(g[d] * c->gk, c->p->l1);
        double H = h[d] * c->hk + c->p->l2;
        if (H > 0)
            s += G * G / H;
    }
    return s;
}

void trn_gbdt_leaf(const tg_ctx *c, const double *g, const double *h, float *out)
{
    for (size_t d = 0; d < c->ld; d++) {
        double G = l1_shrink(g[d] * c->gk, c->p->l1);
        double H = h[d] * c->hk + c->p->l2;
        out[d] = H > 0 ? (float)(c->p->learning_rate * -G / H) : 0.0f;
    }
}

void trn_gbdt_totals(const tg_ctx *c, const double *hist, double *tot)
{
    memset(tot, 0, c->stride * sizeof *tot);
    const double *h = hist + c->off[0];
    for (uint32_t b = 0; b < c->n_bins[0]; b++)
        for (size_t k = 0; k < c->stride; k++)
            tot[k] += h[(size_t)b * c->stride + k];
}

/* Scratch of one search: left/right sums and the categorical order. */
typedef struct search {
    const tg_ctx *c;
    const double *tot;
    double parent;    /* score of the node */
    double min_h;     /* least hessian sum of a child, histogram units */
    double *left, *right;
    tg_split *best;
    uint32_t *order;
    double *ratio;
} search;

/* Evaluates left = acc (+ the missing bin when mleft); keeps it when better. */
static int consider(search *s, const double *acc, const double *miss, int mleft, long input,
                    uint32_t threshold, rt_err *err)
{
    (void)err;
    const tg_ctx *c = s->c;
    size_t ld = c->ld, st = c->stride;
    for (size_t k = 0; k < st; k++) {
        s->left[k] = acc[k] + (mleft ? miss[k] : 0.0);
        s->right[k] = s->tot[k] - s->left[k];
    }
    double nl = s->left[2 * ld], nr = s->right[2 * ld];
    if (nl <= 0 || nr <= 0)
        return 0;
    double hl = 0, hr = 0;
    for (size_t d = 0; d < ld; d++) {
        hl += s->left[ld + d];
        hr += s->right[ld + d];
    }
    if (hl < s->min_h || hr < s->min_h)
        return 0;
    double gain = trn_gbdt_score(c, s->left, s->left + ld) +
                  trn_gbdt_score(c, s->right, s->right + ld) - s->parent -
                  c->p->tree_complexity;
    tg_split *b = s->best;
    if (b->input >= 0 && !(gain > b->gain))
        return 0;
    /* the best split so far is this one (a categorical mask stays the split's) */
    *b = (tg_split){.input = input, .threshold = threshold, .left = b->left,
                    .default_left = mleft, .gain = gain, .count_left = nl, .count_right = nr};
    return 1;
}

static int cmp_ratio_ctx(const void *a, const void *b, void *ctx)
{
    const double *r = ctx;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    if (r[x] < r[y])
        return -1;
    if (r[x] > r[y])
        return 1;
    return (x > y) - (x < y);
}

rt_status trn_gbdt_best_split(const tg_ctx *c, const double *hist, const double *tot,
                              tg_split *best, rt_err *err)
{
    size_t ld = c->ld, st = c->stride;
    uint32_t max_bins = 1;
    for (size_t j = 0; j < c->n_inputs; j++)
        if (c->n_bins[j] > max_bins)
            max_bins = c->n_bins[j];
    tg_split_clear(best);
    search s = {c, tot, trn_gbdt_score(c, tot, tot + ld), 0, NULL, NULL, best, NULL, NULL};
    /* min_node_weight is a mean hessian (TF: sum / examples of the layer) */
    s.min_h = c->hk > 0 ? c->p->min_node_weight / c->hk : 0;
    double *acc = calloc(3 * st, sizeof *acc);
    s.order = malloc(max_bins * sizeof *s.order);
    s.ratio = malloc(max_bins * sizeof *s.ratio);
    uint8_t *set = NULL;
    rt_status rs = RT_OK;
    if (!acc || !s.order || !s.ratio) {
        rs = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    s.left = acc + st;
    s.right = acc + 2 * st;
    for (size_t j = 0; j < c->n_inputs; j++) {
        const double *h = hist + c->off[j];
        uint32_t nv = c->n_bins[j] - 1; /* value bins; bin nv is missing */
        const double *miss = h + (size_t)nv * st;
        int has_miss = miss[2 * ld] > 0;
        memset(acc, 0, st * sizeof *acc);
        if (c->kind[j] != TG_CATEGORICAL) {
            for (uint32_t t = 0; t + 1 < nv; t++) {
                const double *bin = h + (size_t)t * st;
                for (size_t k = 0; k < st; k++)
                    acc[k] += bin[k];
                if (bin[2 * ld] <= 0) /* the same split as the last threshold */
                    continue;
                /* without missing values here: they go with the larger side */
                if (has_miss) {
                    consider(&s, acc, miss, 0, (long)j, t, err);
                    consider(&s, acc, miss, 1, (long)j, t, err);
                } else {
                    int ml = acc[2 * ld] >= tot[2 * ld] - acc[2 * ld];
                    consider(&s, acc, miss, ml, (long)j, t, err);
                }
            }
            continue;
        }
        /* categories present in the node, by gradient / hessian (summed
         * over the logits), as LightGBM; prefixes of that order go left */
        uint32_t m = 0;
        for (uint32_t b = 0; b < nv; b++) {
            const double *bin = h + (size_t)b * st;
            if (bin[2 * ld] <= 0)
                continue;
            double g = 0, hh = 0;
            for (size_t d = 0; d < ld; d++) {
                g += bin[d] * c->gk;
                hh += bin[ld + d] * c->hk;
            }
            s.ratio[b] = g / (hh + c->p->l2 + 1e-300);
            s.order[m++] = b;
        }
        qsort_r(s.order, m, sizeof *s.order, cmp_ratio_ctx, s.ratio);
        long found = -1;
        for (uint32_t k = 0; k + 1 < m; k++) {
            const double *bin = h + (size_t)s.order[k] * st;
            for (size_t q = 0; q < st; q++)
                acc[q] += bin[q];
            int got;
            if (has_miss)
                got = consider(&s, acc, miss, 0, (long)j, k, err) |
                      consider(&s, acc, miss, 1, (long)j, k, err);
            else
                got = consider(&s, acc, miss, acc[2 * ld] >= tot[2 * ld] - acc[2 * ld],
                               (long)j, k, err);
            if (got)
                found = k;
        }
        if (found >= 0) {
            free(set);
            set = calloc(nv ? nv : 1, 1);
            if (!set) {
                rs = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
                goto out;
            }
            for (long k = 0; k <= found; k++)
                set[s.order[k]] = 1;
            free(best->left);
            best->left = set;
            set = NULL;
        }
    }
    /* a threshold split found after a categorical one replaced it */
    if (best->input >= 0 && c->kind[best->input] != TG_CATEGORICAL) {
        free(best->left);
        best->left = NULL;
    }
out:
    free(set);
    free(acc);
    free(s.order);
    free(s.ratio);
    return rs;
}
