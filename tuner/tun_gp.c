/*
 * tun_gp.c — the Gaussian process of the Bayesian search: an ARD Matern 5/2
 * kernel on parameters scaled to [0,1], kernel hyperparameters (length scales,
 * signal and noise variance) fitted by maximum marginal likelihood with
 * Nelder-Mead on their logarithms, the Cholesky factor from OpenBLAS's LAPACK
 * (dpotrf_) and triangular solves from its CBLAS; expected improvement.
 */
#include "tun.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* LAPACK's Cholesky factorisation as OpenBLAS exports it (Debian ships no
 * lapacke.h with libopenblas-dev; the symbol is in libopenblas). */
extern void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info);

#define LS_MIN 0.01
#define LS_MAX 20.0
#define S2_MIN 0.01
#define S2_MAX 100.0
#define NOISE_MIN 1e-6
#define NOISE_MAX 1.0
#define JITTER 1e-9

double tun_matern52(const double *a, const double *b, size_t d, const double *ls, double s2)
{
    double r2 = 0;
    for (size_t k = 0; k < d; k++) {
        double t = (a[k] - b[k]) / ls[k];
        r2 += t * t;
    }
    double r = sqrt(5.0 * r2);
    return s2 * (1.0 + r + r * r / 3.0) * exp(-r);
}

/* K + noise I factored into chol (n x n column-major, lower). -1 if not PD. */
static int factor(const double *x, size_t n, size_t d, const double *ls, double s2, double noise,
                  double *chol)
{
    for (size_t j = 0; j < n; j++)
        for (size_t i = j; i < n; i++) {
            double v = tun_matern52(x + i * d, x + j * d, d, ls, s2);
            if (i == j)
                v += noise + JITTER;
            chol[j * n + i] = v;
            chol[i * n + j] = v;
        }
    int nn = (int)n, info = 0;
    dpotrf_("L", &nn, chol, &nn, &info);
    return info == 0 ? 0 : -1;
}

/* alpha = K^-1 y through L L^T. */
static void solve(const double *chol, size_t n, double *alpha)
{
    cblas_dtrsv(CblasColMajor, CblasLower, CblasNoTrans, CblasNonUnit, (int)n, chol, (int)n,
                alpha, 1);
    cblas_dtrsv(CblasColMajor, CblasLower, CblasTrans, CblasNonUnit, (int)n, chol, (int)n, alpha,
                1);
}

static double lml_work(const double *x, const double *y, size_t n, size_t d, const double *ls,
                       double s2, double noise, double *chol, double *alpha)
{
    if (factor(x, n, d, ls, s2, noise, chol) != 0)
        return -INFINITY;
    memcpy(alpha, y, n * sizeof *y);
    solve(chol, n, alpha);
    double fit = 0, logdet = 0;
    for (size_t i = 0; i < n; i++) {
        fit += y[i] * alpha[i];
        logdet += log(chol[i * n + i]);
    }
    return -0.5 * fit - logdet - 0.5 * (double)n * log(2 * M_PI);
}

double tun_gp_lml(const double *x, const double *y, size_t n, size_t d, const double *ls,
                  double s2, double noise)
{
    double *chol = malloc(n * n * sizeof *chol), *alpha = malloc(n * sizeof *alpha);
    double v = chol && alpha ? lml_work(x, y, n, d, ls, s2, noise, chol, alpha) : -INFINITY;
    free(chol);
    free(alpha);
    return v;
}

/* ------------------------------------------------- marginal likelihood fit */

typedef struct fit_ctx {
    const double *x, *y;
    size_t n, d;
    double *chol, *alpha, *ls;
} fit_ctx;

static double clampd(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Negative log marginal likelihood at theta = (log ls[d], log s2, log noise),
 * clamped into the bounds (with a penalty for leaving them, so the simplex
 * comes back). */
static double nlml(fit_ctx *c, const double *theta)
{
    double pen = 0;
    for (size_t k = 0; k < c->d; k++) {
        double t = clampd(theta[k], log(LS_MIN), log(LS_MAX));
        pen += fabs(t - theta[k]);
        c->ls[k] = exp(t);
    }
    double ts = clampd(theta[c->d], log(S2_MIN), log(S2_MAX));
    double tn = clampd(theta[c->d + 1], log(NOISE_MIN), log(NOISE_MAX));
    pen += fabs(ts - theta[c->d]) + fabs(tn - theta[c->d + 1]);
    double v = lml_work(c->x, c->y, c->n, c->d, c->ls, exp(ts), exp(tn), c->chol, c->alpha);
    return isfinite(v) ? -v + 10 * pen : 1e300;
}

/* Nelder-Mead minimisation of nlml from theta (m values) in place; returns
 * the minimum. Deterministic. */
static double nelder_mead(fit_ctx *c, double *theta, size_t m, int iters)
{
    size_t np = m + 1;
    double *s = malloc(np * m * sizeof *s), *f = malloc(np * sizeof *f);
    double *cen = malloc(m * sizeof *cen), *xr = malloc(m * sizeof *xr),
           *xe = malloc(m * sizeof *xe);
    double best = 1e300;
    if (!s || !f || !cen || !xr || !xe)
        goto out;
    for (size_t i = 0; i < np; i++) {
        memcpy(s + i * m, theta, m * sizeof *theta);
        if (i > 0)
            s[i * m + (i - 1)] += 0.7;
        f[i] = nlml(c, s + i * m);
    }
    for (int it = 0; it < iters; it++) {
        /* order: best at 0, worst at np-1 (insertion sort, np is small) */
        for (size_t i = 1; i < np; i++)
            for (size_t j = i; j > 0 && f[j] < f[j - 1]; j--) {
                double tf = f[j];
                f[j] = f[j - 1];
                f[j - 1] = tf;
                for (size_t k = 0; k < m; k++) {
                    double t = s[j * m + k];
                    s[j * m + k] = s[(j - 1) * m + k];
                    s[(j - 1) * m + k] = t;
                }
            }
        if (fabs(f[np - 1] - f[0]) < 1e-8 * (1 + fabs(f[0])) && it > 20)
            break;
        double *w = s + (np - 1) * m;
        for (size_t k = 0; k < m; k++) {
            cen[k] = 0;
            for (size_t i = 0; i + 1 < np; i++)
                cen[k] += s[i * m + k];
            cen[k] /= (double)m;
            xr[k] = cen[k] + (cen[k] - w[k]);
        }
        double fr = nlml(c, xr);
        if (fr < f[0]) {
            for (size_t k = 0; k < m; k++)
                xe[k] = cen[k] + 2 * (cen[k] - w[k]);
            double fe = nlml(c, xe);
            memcpy(w, fe < fr ? xe : xr, m * sizeof *w);
            f[np - 1] = fe < fr ? fe : fr;
        } else if (fr < f[np - 2]) {
            memcpy(w, xr, m * sizeof *w);
            f[np - 1] = fr;
        } else {
            int outside = fr < f[np - 1];
            for (size_t k = 0; k < m; k++)
                xe[k] = outside ? cen[k] + 0.5 * (xr[k] - cen[k]) : cen[k] + 0.5 * (w[k] - cen[k]);
            double fc = nlml(c, xe);
            if (fc < (outside ? fr : f[np - 1])) {
                memcpy(w, xe, m * sizeof *w);
                f[np - 1] = fc;
            } else {
                for (size_t i = 1; i < np; i++) {
                    for (size_t k = 0; k < m; k++)
                        s[i * m + k] = s[k] + 0.5 * (s[i * m + k] - s[k]);
                    f[i] = nlml(c, s + i * m);
                }
            }
        }
    }
    size_t bi = 0;
    for (size_t i = 1; i < np; i++)
        if (f[i] < f[bi])
            bi = i;
    memcpy(theta, s + bi * m, m * sizeof *theta);
    best = f[bi];
out:
    free(s);
    free(f);
    free(cen);
    free(xr);
    free(xe);
    return best;
}

void tun_gp_free(tun_gp *g)
{
    if (!g)
        return;
    free(g->x);
    free(g->chol);
    free(g->alpha);
    free(g->ls);
    memset(g, 0, sizeof *g);
}

rt_status tun_gp_fit(tun_gp *g, const double *x, const double *y, size_t n, size_t d,
                     const tun_gp *fixed, rt_err *err)
{
    rt_status st = RT_OK;
    tun_gp_free(g);
    double *ys = malloc(n * sizeof *ys), *theta = malloc((d + 2) * sizeof *theta),
           *best = malloc((d + 2) * sizeof *best);
    g->x = malloc(n * d * sizeof *g->x);
    g->chol = malloc(n * n * sizeof *g->chol);
    g->alpha = malloc(n * sizeof *g->alpha);
    g->ls = malloc(d * sizeof *g->ls);
    if (!ys || !theta || !best || !g->x || !g->chol || !g->alpha || !g->ls || n == 0) {
        st = rt_err_set(err, n ? RT_ERR_NOMEM : RT_ERR_INVALID,
                        n ? "out of memory" : "a GP needs at least one point");
        goto out;
    }
    g->n = n;
    g->d = d;
    memcpy(g->x, x, n * d * sizeof *x);
    double mean = 0, var = 0;
    for (size_t i = 0; i < n; i++)
        mean += y[i];
    mean /= (double)n;
    for (size_t i = 0; i < n; i++)
        var += (y[i] - mean) * (y[i] - mean);
    var /= (double)n;
    if (!isfinite(mean) || !isfinite(var)) {
        /* the search scales objectives first (tun_search.c); a caller that
         * does not gets an error, never a NaN posterior */
        st = rt_err_set(err, RT_ERR_INVALID,
                        "the GP's targets are not finite or too large to standardise");
        goto out;
    }
    g->y_mean = mean;
    g->y_std = var > 1e-24 ? sqrt(var) : 1.0;
    for (size_t i = 0; i < n; i++)
        ys[i] = (y[i] - mean) / g->y_std;
    if (fixed) {
        memcpy(g->ls, fixed->ls, d * sizeof *g->ls);
        g->s2 = fixed->s2;
        g->noise = fixed->noise;
    } else {
        fit_ctx c = {x, ys, n, d, g->chol, g->alpha, g->ls};
        static const double starts[][3] = {{0.3, 1.0, 1e-3}, {1.0, 1.0, 1e-2}, {0.1, 1.0, 1e-4}};
        double fbest = 1e301;
        for (size_t s = 0; s < sizeof starts / sizeof starts[0]; s++) {
            for (size_t k = 0; k < d; k++)
                theta[k] = log(starts[s][0]);
            theta[d] = log(starts[s][1]);
            theta[d + 1] = log(starts[s][2]);
            double f = nelder_mead(&c, theta, d + 2, 150 * (int)(d + 2));
            if (f < fbest) {
                fbest = f;
                memcpy(best, theta, (d + 2) * sizeof *best);
            }
        }
        for (size_t k = 0; k < d; k++)
            g->ls[k] = exp(clampd(best[k], log(LS_MIN), log(LS_MAX)));
        g->s2 = exp(clampd(best[d], log(S2_MIN), log(S2_MAX)));
        g->noise = exp(clampd(best[d + 1], log(NOISE_MIN), log(NOISE_MAX)));
    }
    g->lml = lml_work(x, ys, n, d, g->ls, g->s2, g->noise, g->chol, g->alpha);
    if (!isfinite(g->lml)) {
        /* a nearly singular K (duplicate points, tiny noise): more noise */
        g->noise = fmax(g->noise * 100, 1e-4);
        g->lml = lml_work(x, ys, n, d, g->ls, g->s2, g->noise, g->chol, g->alpha);
        if (!isfinite(g->lml))
            st = rt_err_set(err, RT_ERR_INVALID, "the GP covariance is not positive definite");
    }
out:
    free(ys);
    free(theta);
    free(best);
    if (st)
        tun_gp_free(g);
    return st;
}

void tun_gp_predict(const tun_gp *g, const double *p, double *mean, double *sd)
{
    double kbuf[256];
    double *k = g->n <= 256 ? kbuf : malloc(g->n * sizeof *k);
    if (!k) {
        *mean = g->y_mean;
        *sd = g->y_std;
        return;
    }
    double m = 0;
    for (size_t i = 0; i < g->n; i++) {
        k[i] = tun_matern52(p, g->x + i * g->d, g->d, g->ls, g->s2);
        m += k[i] * g->alpha[i];
    }
    cblas_dtrsv(CblasColMajor, CblasLower, CblasNoTrans, CblasNonUnit, (int)g->n, g->chol,
                (int)g->n, k, 1);
    double var = g->s2;
    for (size_t i = 0; i < g->n; i++)
        var -= k[i] * k[i];
    *mean = g->y_mean + g->y_std * m;
    *sd = g->y_std * sqrt(var > 1e-12 ? var : 1e-12);
    if (k != kbuf)
        free(k);
}

double tun_expected_improvement(double mean, double sd, double best)
{
    double imp = best - mean;
    if (sd <= 0)
        return imp > 0 ? imp : 0;
    double z = imp / sd;
    double cdf = 0.5 * erfc(-z / M_SQRT2);
    double pdf = exp(-0.5 * z * z) / sqrt(2 * M_PI);
    return imp * cdf + sd * pdf;
}
