/*
 * rt_stats_dist.c — the two distances TFDV's skew and drift comparators use
 * (anomalies/metrics.cc; semantics in docs/data-validation.md):
 *
 * - L-infinity for categorical features: each side's value counts divided by
 *   its own total, then the largest absolute difference over the union of
 *   the values (the value named is the last one, in byte order, reaching it);
 * - Jensen-Shannon divergence for numeric features, log base 2, capped at 1:
 *   buckets with an infinite bound are taken out (each side's mass becomes
 *   one bucket the other side has nothing in), so are point buckets (low ==
 *   high: one aligned bucket per distinct point), the remaining buckets of
 *   both histograms are cut at the union of their boundaries with each
 *   bucket's count spread evenly over its width, and NaNs are a bucket of
 *   their own on each side (a NaN never matches a NaN, as in TFDV).
 */
#include "rt_stats.h"
#include "rt_data_internal.h"
#include "rt_core_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct lab {
    const char *name;
    double a, b;
} lab;

static int cmp_lab(const void *x, const void *y)
{
    return strcmp(((const lab *)x)->name, ((const lab *)y)->name);
}

double rt_stats_linf_counts(const char *const *names, const double *pa, const double *pb,
                            size_t n, const char **which)
{
    double sa = 0, sb = 0;
    for (size_t i = 0; i < n; i++) {
        sa += pa[i];
        sb += pb[i];
    }
    double best = 0;
    if (which)
        *which = "";
    for (size_t i = 0; i < n; i++) {
        double x = sa > 0 ? pa[i] / sa : 0, y = sb > 0 ? pb[i] / sb : 0;
        double d = fabs(x - y);
        if (d >= best) {
            best = d;
            if (which)
                *which = names[i];
        }
    }
    return best;
}

double rt_stats_linf(const rt_stats_value *a, size_t na, const rt_stats_value *b, size_t nb,
                     const char **which)
{
    lab *l = malloc((na + nb ? na + nb : 1) * sizeof *l);
    if (!l)
        return -1;
    size_t n = 0;
    for (size_t i = 0; i < na; i++)
        l[n++] = (lab){a[i].value, (double)a[i].count, 0};
    for (size_t i = 0; i < nb; i++)
        l[n++] = (lab){b[i].value, 0, (double)b[i].count};
    qsort(l, n, sizeof *l, cmp_lab);
    size_t m = 0; /* merge equal names */
    for (size_t i = 0; i < n; i++) {
        if (m && strcmp(l[m - 1].name, l[i].name) == 0) {
            l[m - 1].a += l[i].a;
            l[m - 1].b += l[i].b;
        } else {
            l[m++] = l[i];
        }
    }
    const char **names = malloc((m ? m : 1) * sizeof *names);
    double *pa = malloc((m ? m : 1) * sizeof *pa), *pb = malloc((m ? m : 1) * sizeof *pb);
    double r = -1;
    if (names && pa && pb) {
        for (size_t i = 0; i < m; i++) {
            names[i] = l[i].name;
            pa[i] = l[i].a;
            pb[i] = l[i].b;
        }
        r = rt_stats_linf_counts(names, pa, pb, m, which);
    }
    free(names);
    free(pa);
    free(pb);
    free(l);
    return r;
}

/* ------------------------------------------------------ Jensen-Shannon */

static int cmp_d(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* Sorted distinct values of v[0..n) in place; returns the new n. */
static size_t uniq(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_d);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!m || v[m - 1] != v[i])
            v[m++] = v[i];
    return m;
}

static int is_regular(const rt_stats_bucket *k)
{
    return isfinite(k->low) && isfinite(k->high) && k->low != k->high;
}

static int is_point(const rt_stats_bucket *k)
{
    return isfinite(k->low) && isfinite(k->high) && k->low == k->high;
}

/* Mass of h's regular buckets inside [lo, hi), spread evenly in each. */
static double mass_in(const rt_stats_hist *h, double lo, double hi)
{
    double m = 0;
    for (size_t i = 0; i < h->n; i++) {
        const rt_stats_bucket *k = &h->b[i];
        if (!is_regular(k))
            continue;
        double a = fmax(lo, k->low), b = fmin(hi, k->high);
        if (b > a)
            m += k->count * (b - a) / (k->high - k->low);
    }
    return m;
}

static double point_mass(const rt_stats_hist *h, double v)
{
    double m = 0;
    for (size_t i = 0; i < h->n; i++)
        if (is_point(&h->b[i]) && h->b[i].low == v)
            m += h->b[i].count;
    return m;
}

static double kl_half(const double *p, const double *q, size_t n)
{
    double r = 0;
    for (size_t i = 0; i < n; i++) {
        double m = (p[i] + q[i]) / 2;
        if (p[i] > 0 && m > 0)
            r += p[i] * log2(p[i] / m);
    }
    return r;
}

double rt_stats_jsd(const rt_stats_hist *a, const rt_stats_hist *b)
{
    size_t nb = 2 * (a->n + b->n) + 1;
    double *bounds = malloc(nb * sizeof *bounds), *pts = malloc(nb * sizeof *pts);
    double *p = malloc((2 * nb + 4) * sizeof *p), *q = malloc((2 * nb + 4) * sizeof *q);
    double r = -1;
    if (!bounds || !pts || !p || !q)
        goto out;
    size_t nbd = 0, npt = 0;
    double ainf = 0, binf = 0;
    const rt_stats_hist *h[2] = {a, b};
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; i < h[s]->n; i++) {
            const rt_stats_bucket *k = &h[s]->b[i];
            if (is_regular(k)) {
                bounds[nbd++] = k->low;
                bounds[nbd++] = k->high;
            } else if (is_point(k)) {
                pts[npt++] = k->low;
            } else {
                *(s ? &binf : &ainf) += k->count;
            }
        }
    nbd = uniq(bounds, nbd);
    npt = uniq(pts, npt);
    size_t n = 0;
    for (size_t i = 0; i + 1 < nbd; i++, n++) {
        p[n] = mass_in(a, bounds[i], bounds[i + 1]);
        q[n] = mass_in(b, bounds[i], bounds[i + 1]);
    }
    for (size_t i = 0; i < npt; i++, n++) {
        p[n] = point_mass(a, pts[i]);
        q[n] = point_mass(b, pts[i]);
    }
    if (ainf != 0) {
        p[n] = ainf;
        q[n++] = 0;
    }
    if (binf != 0) {
        p[n] = 0;
        q[n++] = binf;
    }
    if (a->num_nan > 0 || b->num_nan > 0) {
        p[n] = 0;
        q[n++] = (double)b->num_nan;
        p[n] = (double)a->num_nan;
        q[n++] = 0;
    }
    double sa = 0, sb = 0;
    for (size_t i = 0; i < n; i++) {
        sa += p[i];
        sb += q[i];
    }
    if (!(sa > 0) || !(sb > 0))
        goto out;
    for (size_t i = 0; i < n; i++) {
        p[i] /= sa;
        q[i] /= sb;
    }
    r = (kl_half(p, q, n) + kl_half(q, p, n)) / 2;
    if (r > 1)
        r = 1;
    if (r < 0)
        r = 0;
out:
    free(bounds);
    free(pts);
    free(p);
    free(q);
    return r;
}
