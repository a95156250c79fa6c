/*
 * tun_search.c — where the next trial goes: parameter values <-> [0,1] by
 * scale type, the grid, random points, and the Bayesian choice (GP on the
 * completed trials, pending trials at the GP's mean (kriging believer),
 * expected improvement maximised over the box by random candidates and a
 * local search). Every suggestion is a pure function of (seed, trial index,
 * known points).
 */
#include "tun.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ rng */

/* A generator for one suggestion: the stream starts one step past the seed. */
static void rng_start(rt_rng *r, uint64_t seed)
{
    rt_rng_seed(r, seed + 0x9E3779B97F4A7C15ull);
}

static double rng_normal(rt_rng *r)
{
    double u = rt_rng_uniform(r), v = rt_rng_uniform(r);
    return sqrt(-2 * log(1 - u)) * cos(2 * M_PI * v);
}

/* ------------------------------------------------------------ scales */

double tun_to_unit(const tun_param *p, double v)
{
    double u;
    if (p->max <= p->min)
        return 0;
    switch (p->scale) {
    case TUN_SCALE_LOG:
        u = (log(v) - log(p->min)) / (log(p->max) - log(p->min));
        break;
    case TUN_SCALE_REVERSE_LOG:
        /* spreads the top of the range: 1 - log scale of the mirrored value */
        u = 1 - (log(p->max + p->min - v) - log(p->min)) / (log(p->max) - log(p->min));
        break;
    default:
        u = (v - p->min) / (p->max - p->min);
    }
    return u < 0 ? 0 : u > 1 ? 1 : u;
}

double tun_from_unit(const tun_param *p, double u)
{
    u = u < 0 ? 0 : u > 1 ? 1 : u;
    double v;
    switch (p->scale) {
    case TUN_SCALE_LOG:
        v = exp(log(p->min) + u * (log(p->max) - log(p->min)));
        break;
    case TUN_SCALE_REVERSE_LOG:
        v = p->max + p->min - exp(log(p->min) + (1 - u) * (log(p->max) - log(p->min)));
        break;
    default:
        v = p->min + u * (p->max - p->min);
    }
    return v < p->min ? p->min : v > p->max ? p->max : v;
}

/* A numeric parameter's feasible value nearest to unit coordinate u. */
static double snap_numeric(const tun_param *p, double u)
{
    if (p->type == TUN_DISCRETE) {
        size_t bi = 0;
        double bd = INFINITY;
        for (size_t k = 0; k < p->n_values; k++) {
            double dd = fabs(tun_to_unit(p, p->values[k]) - u);
            if (dd < bd) {
                bd = dd;
                bi = k;
            }
        }
        return p->values[bi];
    }
    double v = tun_from_unit(p, u);
    if (p->type == TUN_INTEGER) {
        v = floor(v + 0.5);
        v = v < p->min ? p->min : v > p->max ? p->max : v;
    }
    return v;
}

int tun_format_value(const tun_param *p, double v, char *buf, size_t cap)
{
    int k;
    if (p->type == TUN_CATEGORICAL)
        k = snprintf(buf, cap, "%s", p->cats[(size_t)v < p->n_values ? (size_t)v : 0]);
    else if (p->type == TUN_INTEGER)
        k = snprintf(buf, cap, "%lld", (long long)v);
    else
        k = snprintf(buf, cap, "%.17g", v);
    return k < 0 || (size_t)k >= cap ? -1 : 0;
}

int tun_parse_value(const tun_param *p, const char *text, double *v)
{
    if (p->type == TUN_CATEGORICAL) {
        for (size_t k = 0; k < p->n_values; k++)
            if (strcmp(p->cats[k], text) == 0) {
                *v = (double)k;
                return 0;
            }
        return -1;
    }
    char *end;
    *v = strtod(text, &end);
    if (end == text || *end || !isfinite(*v) || *v < p->min || *v > p->max)
        return -1;
    if (p->type == TUN_INTEGER && *v != floor(*v))
        return -1;
    if (p->type == TUN_DISCRETE) {
        for (size_t k = 0; k < p->n_values; k++)
            if (p->values[k] == *v)
                return 0;
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ encoding */

static size_t enc_dims(const tun_spec *s)
{
    size_t d = 0;
    for (size_t i = 0; i < s->n_params; i++)
        d += s->params[i].type == TUN_CATEGORICAL ? s->params[i].n_values : 1;
    return d;
}

/* values -> encoded point (unit coordinates, categoricals one-hot) */
static void encode(const tun_spec *s, const double *v, double *u)
{
    for (size_t i = 0; i < s->n_params; i++) {
        const tun_param *p = &s->params[i];
        if (p->type == TUN_CATEGORICAL) {
            for (size_t k = 0; k < p->n_values; k++)
                *u++ = (size_t)v[i] == k ? 1.0 : 0.0;
        } else {
            *u++ = tun_to_unit(p, v[i]);
        }
    }
}

/* encoded point -> feasible values (rounded integers, nearest discrete value,
 * the largest categorical coordinate) */
static void decode(const tun_spec *s, const double *u, double *v)
{
    for (size_t i = 0; i < s->n_params; i++) {
        const tun_param *p = &s->params[i];
        if (p->type == TUN_CATEGORICAL) {
            size_t bk = 0;
            for (size_t k = 1; k < p->n_values; k++)
                if (u[k] > u[bk])
                    bk = k;
            v[i] = (double)bk;
            u += p->n_values;
        } else {
            v[i] = snap_numeric(p, *u++);
        }
    }
}

static void random_values(const tun_spec *s, rt_rng *r, double *v)
{
    for (size_t i = 0; i < s->n_params; i++) {
        const tun_param *p = &s->params[i];
        if (p->type == TUN_CATEGORICAL)
            v[i] = (double)(rt_rng_next(r) % p->n_values);
        else
            v[i] = snap_numeric(p, rt_rng_uniform(r));
    }
}

/* Point i of a Latin hypercube of n points (the Bayesian search's first
 * trials): each parameter's range is cut into n strata and a seeded
 * permutation gives point i its stratum, so the first trials spread over
 * every axis whatever order they run in. */
static void latin_values(const tun_spec *s, uint64_t seed, size_t i, size_t n, rt_rng *r,
                         double *v)
{
    for (size_t k = 0; k < s->n_params; k++) {
        const tun_param *p = &s->params[k];
        rt_rng pr;
        rng_start(&pr, seed * 0xA24BAED4963EE407ull + k + 1);
        size_t stratum = i, perm[64];
        if (n <= 64) {
            for (size_t j = 0; j < n; j++)
                perm[j] = j;
            for (size_t j = n; j > 1; j--) {
                size_t t = (size_t)(rt_rng_next(&pr) % j), tmp = perm[j - 1];
                perm[j - 1] = perm[t];
                perm[t] = tmp;
            }
            stratum = perm[i];
        }
        double u = ((double)stratum + rt_rng_uniform(r)) / (double)n;
        if (p->type == TUN_CATEGORICAL)
            v[k] = (double)((size_t)(u * (double)p->n_values) % p->n_values);
        else
            v[k] = snap_numeric(p, u);
    }
}

/* ------------------------------------------------------------ grid */

static int64_t param_count(const tun_param *p)
{
    if (p->type == TUN_DOUBLE)
        return 0;
    if (p->type == TUN_INTEGER)
        return (int64_t)(p->max - p->min) + 1;
    return (int64_t)p->n_values;
}

int64_t tun_grid_size(const tun_spec *s)
{
    int64_t n = 1;
    for (size_t i = 0; i < s->n_params; i++) {
        int64_t c = param_count(&s->params[i]);
        if (c == 0)
            return 0;
        n = n > INT64_MAX / c ? INT64_MAX : n * c;
    }
    return n;
}

/* grid point `index`: the last parameter varies fastest */
static void grid_values(const tun_spec *s, int64_t index, double *v)
{
    for (size_t i = s->n_params; i-- > 0;) {
        const tun_param *p = &s->params[i];
        int64_t c = param_count(p), k = index % c;
        index /= c;
        v[i] = p->type == TUN_INTEGER ? p->min + (double)k
             : p->type == TUN_DISCRETE ? p->values[k] : (double)k;
    }
}

/* ------------------------------------------------------------ Bayesian */

/* the closest a suggestion comes to a known point, in unit coordinates */
#define MIN_DIST 0.01

typedef struct bo {
    const tun_spec *s;
    const tun_gp *gp;
    size_t d;
    double best;
    double *u, *v; /* scratch: encoded and decoded point */
} bo;

/* EI at the feasible point nearest to u (u is snapped in place) */
static double ei_at(bo *b, double *u)
{
    decode(b->s, u, b->v);
    encode(b->s, b->v, u);
    /* a point next to a known one teaches nothing: EI overrates them once the
     * GP is sure of itself, and the search would creep along (Branin's edge) */
    for (size_t i = 0; i < b->gp->n; i++) {
        double d2 = 0;
        for (size_t j = 0; j < b->d; j++) {
            double t = u[j] - b->gp->x[i * b->d + j];
            d2 += t * t;
        }
        if (d2 < MIN_DIST * MIN_DIST)
            return -0.5;
    }
    double m, sd;
    tun_gp_predict(b->gp, u, &m, &sd);
    double e = tun_expected_improvement(m, sd, b->best);
    return isfinite(e) ? e : -1; /* never chosen */
}

static int same_values(const tun_spec *s, const double *a, const double *b)
{
    for (size_t i = 0; i < s->n_params; i++)
        if (a[i] != b[i])
            return 0;
    return 1;
}

static int seen(const tun_spec *s, const double *v, const tun_point *pts, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (same_values(s, v, pts[i].v))
            return 1;
    return 0;
}

static int dcmp_search(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of v[0..n) (n > 0); tmp has room for n values (tmp == v: v is
 * sorted in place). */
static double median(const double *v, size_t n, double *tmp)
{
    if (tmp != v)
        memcpy(tmp, v, n * sizeof *v);
    qsort(tmp, n, sizeof *tmp, dcmp_search);
    return n % 2 ? tmp[n / 2] : tmp[n / 2 - 1] / 2 + tmp[n / 2] / 2;
}

/* (a - b) / s without overflow: clamped to +-DBL_MAX. */
static double scaled_diff(double a, double b, double s)
{
    double d = a - b;
    if (!isfinite(d))
        d = a > b ? DBL_MAX : -DBL_MAX;
    double q = d / s;
    if (!isfinite(q))
        q = d > 0 ? DBL_MAX : -DBL_MAX;
    return q;
}

/*
 * The objectives as the GP sees them: any finite values, whatever their
 * magnitudes (a diverging loss of 1e200 beside 0.3, objectives of 1e-300),
 * become numbers of moderate size in the same order. They are centred on
 * their median and divided by their median absolute deviation (the mean
 * one, or 1, when that is 0), so tiny objectives keep their resolution;
 * values more than WARP_AT deviations out (a diverging trial) are brought
 * next to the others: with B the farthest of the others (at least 1),
 * q -> B (1 + log(1 + log(|q| / WARP_AT)) / 4) with q's sign, so DBL_MAX
 * deviations out becomes 2.6 B and one such trial does not flatten the
 * rest. The order of the values, and so which one is best, does not
 * change; a study whose values all lie within WARP_AT deviations is only
 * shifted and scaled.
 */
#define WARP_AT 100.0
static void objective_scale(double *y, size_t n, double *tmp)
{
    if (n == 0)
        return;
    double c = median(y, n, tmp);
    for (size_t i = 0; i < n; i++)
        tmp[i] = fabs(scaled_diff(y[i], c, 1.0));
    double s = median(tmp, n, tmp);
    if (!(s > 0) || !isfinite(s)) {
        s = 0;
        for (size_t i = 0; i < n; i++)
            s += fabs(scaled_diff(y[i], c, 1.0)) / (double)n;
        if (!(s > 0) || !isfinite(s))
            s = 1.0;
    }
    double b = 1;
    for (size_t i = 0; i < n; i++) {
        y[i] = scaled_diff(y[i], c, s);
        if (fabs(y[i]) <= WARP_AT)
            b = fmax(b, fabs(y[i]));
    }
    for (size_t i = 0; i < n; i++)
        if (fabs(y[i]) > WARP_AT)
            y[i] = copysign(b * (1 + log1p(log(fabs(y[i]) / WARP_AT)) / 4), y[i]);
}

/*
 * What a suggestion costs in a long study. The GP conditions on at most
 * GP_MAX completed trials (every EI evaluation is O(n^2), the Cholesky
 * O(n^3)), its hyperparameters are fitted to at most FIT_MAX of them (each
 * marginal-likelihood evaluation of the fit builds and factors K, and the fit
 * takes thousands), and the candidates' neighbourhoods are those of the
 * NEAR_MAX most recent points. Below the caps nothing changes; above them, a
 * subset keeps the half with the best objectives and the most recent of the
 * rest (docs/tuning.md has the figures).
 */
#ifndef GP_MAX
#define GP_MAX 128
#endif
#ifndef FIT_MAX
#define FIT_MAX 64
#endif
#ifndef FIT_SUB
#define FIT_SUB 32
#endif
#define NEAR_MAX 64

typedef struct rank_item {
    double y;
    size_t i;
} rank_item;

static int rank_cmp(const void *a, const void *b)
{
    const rank_item *p = a, *q = b;
    return p->y < q->y ? -1 : p->y > q->y ? 1 : p->i < q->i ? -1 : p->i > q->i;
}

/* Keeps `cap` of the n points (rows of x, n x d, and y) in place and in their
 * order when n > cap: the cap/2 with the lowest y (ties: the earlier), then
 * the latest of the others. Returns how many remain; -1 (as SIZE_MAX) when
 * out of memory. */
static size_t keep_subset(double *x, double *y, size_t n, size_t d, size_t cap)
{
    if (n <= cap)
        return n;
    rank_item *it = malloc(n * sizeof *it);
    unsigned char *keep = calloc(n, 1);
    if (!it || !keep) {
        free(it);
        free(keep);
        return SIZE_MAX;
    }
    for (size_t i = 0; i < n; i++)
        it[i] = (rank_item){y[i], i};
    qsort(it, n, sizeof *it, rank_cmp);
    for (size_t k = 0; k < cap / 2; k++)
        keep[it[k].i] = 1;
    for (size_t i = n, kept = cap / 2; i-- > 0 && kept < cap;)
        if (!keep[i]) {
            keep[i] = 1;
            kept++;
        }
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (keep[i]) {
            memmove(x + m * d, x + i * d, d * sizeof *x);
            y[m++] = y[i];
        }
    free(it);
    free(keep);
    return m;
}

/* Fits gp to the n points x, y (d dimensions): on all of them up to FIT_MAX;
 * past that the hyperparameters from FIT_SUB of the points and the posterior
 * from all n of them. */
static rt_status fit_gp(tun_gp *gp, double *x, double *y, size_t n, size_t d, rt_err *err)
{
    if (n <= FIT_MAX)
        return tun_gp_fit(gp, x, y, n, d, NULL, err);
    tun_gp gpl = {0};
    rt_status st;
    double *xf = malloc(n * d * sizeof *xf), *yf = malloc(n * sizeof *yf);
    size_t nf = xf && yf ? n : 0;
    if (nf) {
        memcpy(xf, x, n * d * sizeof *x);
        memcpy(yf, y, n * sizeof *y);
        nf = keep_subset(xf, yf, n, d, FIT_SUB);
    }
    if (!nf || nf == SIZE_MAX)
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    else if (!(st = tun_gp_fit(&gpl, xf, yf, nf, d, NULL, err)))
        st = tun_gp_fit(gp, x, y, n, d, &gpl, err);
    free(xf);
    free(yf);
    tun_gp_free(&gpl);
    return st;
}

static rt_status bayes(const tun_spec *s, rt_rng *r, const tun_point *pts, size_t n_pts,
                       double *out, rt_err *err)
{
    rt_status st = RT_OK;
    size_t d = enc_dims(s), n_done = 0;
    for (size_t i = 0; i < n_pts; i++)
        n_done += pts[i].done != 0;
    tun_gp gp = {0}, gpl = {0};
    double *x = calloc((n_pts + 1) * d, sizeof *x), *y = calloc(n_pts + 1, sizeof *y);
    double *cand = malloc(d * sizeof *cand), *bestu = calloc(d ? d : 1, sizeof *bestu),
           *tryu = malloc(d * sizeof *tryu), *v = malloc(s->n_params * sizeof *v),
           *tmp = malloc((n_pts + 1) * sizeof *tmp);
    if (!x || !y || !cand || !bestu || !tryu || !v || !tmp) {
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    /* completed points first, objective turned into a minimisation */
    size_t n = 0;
    double ybest = INFINITY;
    for (size_t i = 0; i < n_pts; i++)
        if (pts[i].done) {
            if (!isfinite(pts[i].objective)) {
                st = rt_err_set(err, RT_ERR_INVALID, "an objective is not a finite number");
                goto out;
            }
            encode(s, pts[i].v, x + n * d);
            y[n] = s->maximize ? -pts[i].objective : pts[i].objective;
            n++;
        }
    objective_scale(y, n, tmp);
    for (size_t i = 0; i < n; i++)
        ybest = fmin(ybest, y[i]);
    if ((n = keep_subset(x, y, n, d, GP_MAX)) == SIZE_MAX) {
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    if ((st = fit_gp(&gp, x, y, n, d, err)))
        goto out;
    const tun_gp *model = &gp;
    if (n_done < n_pts) {
        /* kriging believer: each pending trial "returned" the GP's mean at
         * its point, so the posterior variance collapses there and EI looks
         * elsewhere, while the mean elsewhere stays what the completed trials
         * say (conditioning on the mean leaves the mean unchanged, so the
         * pending points can take their means at once, not one by one); a
         * believed value below the best counts as the best. The constant
         * liar at the best value so far, used before, made the region around
         * each pending point look as good as the incumbent: the parallel
         * trials crowded there and Branin's median regret at 30 trials with 4
         * in parallel was 50x the sequential one (docs/tuning.md). */
        for (size_t i = 0; i < n_pts; i++)
            if (!pts[i].done) {
                double m, sd;
                encode(s, pts[i].v, x + n * d);
                tun_gp_predict(&gp, x + n * d, &m, &sd);
                y[n++] = m;
                ybest = fmin(ybest, m);
            }
        if ((st = tun_gp_fit(&gpl, x, y, n, d, &gp, err)))
            goto out;
        model = &gpl;
    }
    bo b = {s, model, d, ybest, tryu, v};
    /* random candidates and the neighbourhoods of the observed points; the
     * best few start a local search with a shrinking step */
    enum { STARTS = 5 };
    double *top = malloc(STARTS * d * sizeof *top), topf[STARTS];
    if (!top) {
        st = rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (int k = 0; k < STARTS; k++)
        topf[k] = -1;
    size_t near0 = n_pts > NEAR_MAX ? n_pts - NEAR_MAX : 0;
    for (int k = 0; k < 2000 + 50 * (int)(n_pts - near0); k++) {
        if (k < 2000) {
            random_values(s, r, v);
            encode(s, v, cand);
        } else {
            const tun_point *q = &pts[near0 + (size_t)(k - 2000) / 50];
            encode(s, q->v, cand);
            for (size_t j = 0; j < d; j++)
                cand[j] += 0.05 * rng_normal(r);
        }
        double e = ei_at(&b, cand);
        int slot = -1;
        for (int t = 0; t < STARTS; t++)
            if (e > topf[t] && (slot < 0 || topf[t] < topf[slot]))
                slot = t;
        if (slot >= 0) {
            topf[slot] = e;
            memcpy(top + (size_t)slot * d, cand, d * sizeof *cand);
        }
    }
    double best_ei = -1;
    for (int t = 0; t < STARTS; t++) {
        if (topf[t] < 0)
            continue;
        double *u = top + (size_t)t * d, f = topf[t], step = 0.1;
        for (int it = 0; it < 200; it++) {
            for (size_t j = 0; j < d; j++)
                cand[j] = u[j] + step * rng_normal(r);
            double e = ei_at(&b, cand);
            if (e > f) {
                f = e;
                memcpy(u, cand, d * sizeof *cand);
            } else if (it % 20 == 19) {
                step *= 0.5;
            }
        }
        if (f > best_ei) {
            best_ei = f;
            memcpy(bestu, u, d * sizeof *u);
        }
    }
    free(top);
    decode(s, bestu, out);
    if (!(best_ei >= 0) || seen(s, out, pts, n_pts)) {
        /* no candidate had a usable EI (none is chosen, so none is
         * suggested), or EI found nothing new (a small discrete space): an
         * unseen random point */
        for (int k = 0; k < 1000; k++) {
            random_values(s, r, out);
            if (!seen(s, out, pts, n_pts))
                break;
        }
    }
out:
    tun_gp_free(&gp);
    tun_gp_free(&gpl);
    free(x);
    free(y);
    free(cand);
    free(bestu);
    free(tryu);
    free(v);
    free(tmp);
    return st;
}

rt_status tun_suggest(const tun_spec *s, uint64_t seed, int64_t index, const tun_point *pts,
                      size_t n_pts, double *out, rt_err *err)
{
    if (s->algorithm == TUN_GRID) {
        int64_t g = tun_grid_size(s);
        if (index >= g)
            return rt_err_set(err, RT_ERR_LIMIT, "the grid has only %lld points", (long long)g);
        grid_values(s, index, out);
        return RT_OK;
    }
    rt_rng r;
    rng_start(&r, seed * 0x9E3779B97F4A7C15ull + (uint64_t)index * 0xD1B54A32D192ED03ull + 1);
    size_t n_done = 0;
    for (size_t i = 0; i < n_pts; i++)
        n_done += pts[i].done != 0;
    /* a few random trials before the GP has something to fit */
    size_t n_init = s->n_params + 1 < 3 ? 3 : s->n_params + 1;
    if (s->algorithm == TUN_BAYESIAN && index < (int64_t)n_init) {
        latin_values(s, seed, (size_t)index, n_init, &r, out);
        return RT_OK;
    }
    if (s->algorithm == TUN_RANDOM || n_done < n_init) {
        random_values(s, &r, out);
        return RT_OK;
    }
    return bayes(s, &r, pts, n_pts, out, err);
}
