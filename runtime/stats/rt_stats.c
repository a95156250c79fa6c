/*
 * rt_stats.c — the statistics accumulator: rows of raw inputs in, TFDV's
 * per-feature statistics out (docs/data-validation.md).
 *
 * Each numeric input keeps a table of its distinct values with their counts
 * (exact, so min, max, histograms, quantiles, median, mean and std do not
 * depend on the order of the rows or how they were split between processes:
 * finish() sorts the table and sums in value order). Past RT_STATS_EXACT_MAX
 * distinct values the table's keys become logarithmic buckets (a value's
 * key is the bucket's middle, 1% relative accuracy), so memory stays
 * bounded; mean and std then come from running sums kept from the start.
 * Each string input keeps its distinct values and counts (up to
 * RT_STATS_STR_TABLE_MAX distinct values; later new values are counted as "other").
 */
#include "rt_stats.h"
#include "rt_data_internal.h"
#include "rt_core_internal.h"
#include "rt_stats_limits.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SKETCH_ALPHA 0.01

typedef struct entry {
    uint64_t hash; /* 0 = empty */
    uint64_t count;
    double v;      /* numeric key */
    char *s;       /* string key (malloc'd, NUL-terminated) */
    size_t len;
} entry;

typedef struct table {
    entry *e;
    size_t cap, n;
} table;

typedef struct feat {
    char *name;
    rt_stats_type type;
    long column;
    uint64_t non_missing, missing, nan;
    double min, max;
    /* running moments (Welford) over the non-NaN values: used when sketched */
    double w_n, w_mean, w_m2;
    int sketch;
    uint64_t other;     /* strings past the table */
    uint64_t tot_len;   /* string bytes */
    table t;
} feat;

struct rt_stats_acc {
    uint64_t examples;
    size_t n;
    feat *f;
};

/* ------------------------------------------------------------ hash table */

/* A slot hash: never 0, which marks an empty slot. */
static uint64_t mix64(uint64_t x)
{
    uint64_t h = rt_hash_mix64(x);
    return h ? h : 1;
}

static uint64_t num_hash(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return mix64(u);
}

static int table_grow(table *t)
{
    size_t nc = t->cap ? t->cap * 2 : 64;
    entry *ne = calloc(nc, sizeof *ne);
    if (!ne)
        return -1;
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->e[i].hash)
            continue;
        size_t k = (size_t)t->e[i].hash & (nc - 1);
        while (ne[k].hash)
            k = (k + 1) & (nc - 1);
        ne[k] = t->e[i];
    }
    free(t->e);
    t->e = ne;
    t->cap = nc;
    return 0;
}

static void table_free(table *t)
{
    for (size_t i = 0; i < t->cap; i++)
        free(t->e[i].s);
    free(t->e);
    memset(t, 0, sizeof *t);
}

/* Adds count to numeric key v. -1 out of memory. */
static int table_add_num(table *t, double v, uint64_t count)
{
    if ((t->n + 1) * 4 > t->cap * 3 && table_grow(t))
        return -1;
    uint64_t h = num_hash(v);
    size_t k = (size_t)h & (t->cap - 1);
    while (t->e[k].hash) {
        if (t->e[k].hash == h && t->e[k].v == v) {
            t->e[k].count += count;
            return 0;
        }
        k = (k + 1) & (t->cap - 1);
    }
    t->e[k].hash = h;
    t->e[k].v = v;
    t->e[k].count = count;
    t->n++;
    return 0;
}

/* Adds count to string key s[0..len). 1 when the table is full and s is new
 * (not added), 0 added, -1 out of memory. */
static int table_add_str(table *t, const char *s, size_t len, uint64_t count)
{
    if ((t->n + 1) * 4 > t->cap * 3 && table_grow(t))
        return -1;
    uint64_t h = mix64(rt_hash_fingerprint64(s, len));
    size_t k = (size_t)h & (t->cap - 1);
    while (t->e[k].hash) {
        if (t->e[k].hash == h && t->e[k].len == len && memcmp(t->e[k].s, s, len) == 0) {
            t->e[k].count += count;
            return 0;
        }
        k = (k + 1) & (t->cap - 1);
    }
    if (t->n >= RT_STATS_STR_TABLE_MAX)
        return 1;
    char *c = malloc(len + 1);
    if (!c)
        return -1;
    memcpy(c, s, len);
    c[len] = '\0';
    t->e[k].hash = h;
    t->e[k].s = c;
    t->e[k].len = len;
    t->e[k].count = count;
    t->n++;
    return 0;
}

/* ----------------------------------------------------------- accumulator */

static feat *new_feats(size_t n)
{
    feat *f = calloc(n ? n : 1, sizeof *f);
    if (!f)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        f[i].min = INFINITY;
        f[i].max = -INFINITY;
        f[i].column = -1;
    }
    return f;
}

rt_stats_acc *rt_stats_acc_new_named(const char *const *names, const rt_stats_type *types,
                                     size_t n)
{
    rt_stats_acc *a = calloc(1, sizeof *a);
    if (!a || !(a->f = new_feats(n))) {
        free(a);
        return NULL;
    }
    a->n = n;
    for (size_t i = 0; i < n; i++) {
        a->f[i].type = types[i];
        if (!(a->f[i].name = strdup(names[i]))) {
            rt_stats_acc_free(a);
            return NULL;
        }
    }
    return a;
}

rt_stats_acc *rt_stats_acc_new(const Predictd__ModelDef *def)
{
    /* the raw inputs the feature columns read: not labels, weights or unused
     * columns, and only columns some feature column names */
    size_t n = 0;
    const char **names = calloc(def->n_raw_columns ? def->n_raw_columns : 1, sizeof *names);
    rt_stats_type *types = calloc(def->n_raw_columns ? def->n_raw_columns : 1, sizeof *types);
    long *cols = calloc(def->n_raw_columns ? def->n_raw_columns : 1, sizeof *cols);
    rt_stats_acc *a = NULL;
    if (!names || !types || !cols)
        goto out;
    for (size_t c = 0; c < def->n_raw_columns; c++) {
        const Predictd__RawColumn *rc = def->raw_columns[c];
        if (rc->is_label || rc->unused || rc->is_weight)
            continue;
        int used = 0;
        for (size_t k = 0; k < def->n_feature_columns && !used; k++) {
            const Predictd__FeatureColumn *fc = def->feature_columns[k];
            used = (fc->key && strcmp(fc->key, rc->name) == 0) ||
                   (fc->weight_feature_key && strcmp(fc->weight_feature_key, rc->name) == 0);
            for (size_t x = 0; x < fc->n_cross_keys && !used; x++)
                used = fc->cross_keys[x]->raw_key &&
                       strcmp(fc->cross_keys[x]->raw_key, rc->name) == 0;
        }
        if (!used)
            continue;
        names[n] = rc->name;
        types[n] = rc->dtype == PREDICTD__DTYPE__DT_STRING ? RT_STATS_STRING
                   : rc->is_int                            ? RT_STATS_INT
                                                           : RT_STATS_FLOAT;
        cols[n] = (long)c;
        n++;
    }
    a = rt_stats_acc_new_named(names, types, n);
    for (size_t i = 0; a && i < n; i++)
        a->f[i].column = cols[i];
out:
    free(names);
    free(types);
    free(cols);
    return a;
}

void rt_stats_acc_free(rt_stats_acc *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->n; i++) {
        free(a->f[i].name);
        table_free(&a->f[i].t);
    }
    free(a->f);
    free(a);
}

size_t rt_stats_acc_inputs(const rt_stats_acc *a)
{
    return a ? a->n : 0;
}

long rt_stats_acc_column(const rt_stats_acc *a, size_t i)
{
    return a->f[i].column;
}

const char *rt_stats_acc_name(const rt_stats_acc *a, size_t i)
{
    return a->f[i].name;
}

rt_stats_type rt_stats_acc_type(const rt_stats_acc *a, size_t i)
{
    return a->f[i].type;
}

int rt_stats_acc_example(rt_stats_acc *a)
{
    a->examples++;
    return 0;
}

int rt_stats_acc_missing(rt_stats_acc *a, size_t i)
{
    a->f[i].missing++;
    return 0;
}

/* The logarithmic bucket's middle for v (0 and +-Infinity are their own). */
static double sketch_key(double v)
{
    if (v == 0 || isinf(v))
        return v;
    const double gamma = (1 + SKETCH_ALPHA) / (1 - SKETCH_ALPHA);
    double a = fabs(v);
    double k = ceil(log(a) / log(gamma));
    double mid = 2 * pow(gamma, k) / (gamma + 1);
    return v < 0 ? -mid : mid;
}

/* The table of f becomes a sketch: every key moves to its bucket. */
static int to_sketch(feat *f)
{
    table old = f->t;
    memset(&f->t, 0, sizeof f->t);
    f->sketch = 1;
    int rc = 0;
    for (size_t i = 0; i < old.cap && rc == 0; i++)
        if (old.e[i].hash)
            rc = table_add_num(&f->t, sketch_key(old.e[i].v), old.e[i].count);
    table_free(&old);
    return rc;
}

static void welford(feat *f, double v, double n)
{
    if (!isfinite(v)) {
        f->w_n += n;
        f->w_mean = v; /* infinite mean, as the sum would give */
        return;
    }
    double n0 = f->w_n, n1 = n0 + n;
    double d = v - f->w_mean;
    f->w_mean += d * n / n1;
    f->w_m2 += d * (v - f->w_mean) * n;
    f->w_n = n1;
}

int rt_stats_acc_number(rt_stats_acc *a, size_t i, double v)
{
    feat *f = &a->f[i];
    f->non_missing++;
    if (isnan(v)) {
        f->nan++;
        return 0;
    }
    if (v == 0)
        v = 0; /* -0 and 0 are one value */
    if (v < f->min)
        f->min = v;
    if (v > f->max)
        f->max = v;
    welford(f, v, 1);
    if (!f->sketch && f->t.n >= RT_STATS_EXACT_MAX && to_sketch(f))
        return -1;
    return table_add_num(&f->t, f->sketch ? sketch_key(v) : v, 1);
}

int rt_stats_acc_string(rt_stats_acc *a, size_t i, const char *s, size_t len)
{
    feat *f = &a->f[i];
    f->non_missing++;
    f->tot_len += len;
    int rc = table_add_str(&f->t, s, len, 1);
    if (rc == 1)
        f->other++;
    return rc < 0 ? -1 : 0;
}

rt_status rt_stats_acc_cell(rt_stats_acc *a, size_t i, const char *s, size_t len, int trim,
                            rt_err *err)
{
    int rc;
    if (a->f[i].type == RT_STATS_STRING) {
        size_t l = len;
        const char *t = rt_buf_trim_span(s, &l);
        if (l == 0)
            rc = rt_stats_acc_missing(a, i);
        else
            rc = trim ? rt_stats_acc_string(a, i, t, l) : rt_stats_acc_string(a, i, s, len);
    } else {
        double v;
        rt_status st = rt_raw_number(s, len, &v);
        if (st == RT_ERR_NOTFOUND)
            rc = rt_stats_acc_missing(a, i);
        else if (st != RT_OK)
            return rt_raw_number_error(err, (size_t)(a->f[i].column < 0 ? 0 : a->f[i].column),
                                       a->f[i].name, s, len);
        else
            rc = rt_stats_acc_number(a, i, v);
    }
    return rc ? rt_err_set(err, RT_ERR_NOMEM, "out of memory") : RT_OK;
}

/* ----------------------------------------------------- save and merge */

static void put64(rt_buf *b, uint64_t v)
{
    uint8_t x[8];
    for (int k = 0; k < 8; k++)
        x[k] = (uint8_t)(v >> (8 * k));
    rt_buf_append(b, x, 8);
}

static void putd(rt_buf *b, double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    put64(b, u);
}

rt_status rt_stats_acc_save(const rt_stats_acc *a, rt_buf *out)
{
    rt_buf_append(out, "PDSTAT1\0", 8);
    put64(out, a->examples);
    put64(out, a->n);
    for (size_t i = 0; i < a->n; i++) {
        const feat *f = &a->f[i];
        put64(out, (uint64_t)f->type | (uint64_t)f->sketch << 8);
        put64(out, f->non_missing);
        put64(out, f->missing);
        put64(out, f->nan);
        putd(out, f->min);
        putd(out, f->max);
        putd(out, f->w_n);
        putd(out, f->w_mean);
        putd(out, f->w_m2);
        put64(out, f->other);
        put64(out, f->tot_len);
        put64(out, f->t.n);
        for (size_t k = 0; k < f->t.cap; k++) {
            const entry *e = &f->t.e[k];
            if (!e->hash)
                continue;
            put64(out, e->count);
            if (f->type == RT_STATS_STRING) {
                put64(out, e->len);
                rt_buf_append(out, e->s, e->len);
            } else {
                putd(out, e->v);
            }
        }
    }
    return rt_buf_failed(out) ? RT_ERR_NOMEM : RT_OK;
}

typedef struct rd {
    const uint8_t *p;
    size_t len, off;
    int bad;
} rd;

static uint64_t get64(rd *r)
{
    if (r->len - r->off < 8) {
        r->bad = 1;
        r->off = r->len;
        return 0;
    }
    uint64_t v = 0;
    for (int k = 0; k < 8; k++)
        v |= (uint64_t)r->p[r->off + (size_t)k] << (8 * k);
    r->off += 8;
    return v;
}

static double getd(rd *r)
{
    uint64_t u = get64(r);
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

rt_status rt_stats_acc_merge(rt_stats_acc *a, const void *bytes, size_t len, rt_err *err)
{
    rd r = {bytes, len, 0, 0};
    if (len < 24 || memcmp(bytes, "PDSTAT1\0", 8) != 0)
        return rt_err_set(err, RT_ERR_FORMAT, "statistics: not an accumulator's bytes");
    r.off = 8;
    uint64_t ex = get64(&r), n = get64(&r);
    if (n != a->n)
        return rt_err_set(err, RT_ERR_FORMAT, "statistics: %llu inputs, expected %zu",
                          (unsigned long long)n, a->n);
    a->examples += ex;
    for (size_t i = 0; i < a->n && !r.bad; i++) {
        feat *f = &a->f[i];
        uint64_t ts = get64(&r);
        if ((rt_stats_type)(ts & 0xff) != f->type)
            return rt_err_set(err, RT_ERR_FORMAT, "statistics: input %s: type differs", f->name);
        int sk = (int)(ts >> 8 & 1);
        if (sk && !f->sketch && to_sketch(f))
            return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        f->non_missing += get64(&r);
        f->missing += get64(&r);
        f->nan += get64(&r);
        double mn = getd(&r), mx = getd(&r);
        if (mn < f->min)
            f->min = mn;
        if (mx > f->max)
            f->max = mx;
        double wn = getd(&r), wm = getd(&r), wm2 = getd(&r);
        if (wn > 0) { /* Chan et al.'s pairwise update */
            if (f->w_n == 0 || !isfinite(wm) || !isfinite(f->w_mean)) {
                double tot = f->w_n + wn;
                f->w_mean = f->w_n == 0 ? wm : (isfinite(wm) ? f->w_mean : wm);
                f->w_m2 = f->w_n == 0 ? wm2 : f->w_m2;
                f->w_n = tot;
            } else {
                double tot = f->w_n + wn, d = wm - f->w_mean;
                f->w_mean += d * wn / tot;
                f->w_m2 += wm2 + d * d * f->w_n * wn / tot;
                f->w_n = tot;
            }
        }
        f->other += get64(&r);
        f->tot_len += get64(&r);
        uint64_t ne = get64(&r);
        for (uint64_t k = 0; k < ne && !r.bad; k++) {
            uint64_t c = get64(&r);
            int rc;
            if (f->type == RT_STATS_STRING) {
                uint64_t l = get64(&r);
                if (l > r.len - r.off) {
                    r.bad = 1;
                    break;
                }
                rc = table_add_str(&f->t, (const char *)r.p + r.off, (size_t)l, c);
                r.off += (size_t)l;
                if (rc == 1)
                    f->other += c;
            } else {
                double v = getd(&r);
                if (!f->sketch && f->t.n >= RT_STATS_EXACT_MAX && to_sketch(f))
                    return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
                rc = table_add_num(&f->t, f->sketch ? sketch_key(v) : v, c);
            }
            if (rc < 0)
                return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
        }
    }
    if (r.bad || r.off != r.len)
        return rt_err_set(err, RT_ERR_FORMAT, "statistics: truncated or malformed accumulator");
    return RT_OK;
}

/* ------------------------------------------------------------- finish */

static int cmp_num(const void *x, const void *y)
{
    double a = ((const entry *)x)->v, b = ((const entry *)y)->v;
    return a < b ? -1 : a > b;
}

static int cmp_count(const void *x, const void *y)
{
    const entry *a = x, *b = y;
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    size_t l = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->s, b->s, l);
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

/* Sorted copy of the table's used entries (shallow). */
static entry *sorted(const table *t, int (*cmp)(const void *, const void *))
{
    entry *e = malloc((t->n ? t->n : 1) * sizeof *e);
    if (!e)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < t->cap; i++)
        if (t->e[i].hash)
            e[k++] = t->e[i];
    qsort(e, k, sizeof *e, cmp);
    return e;
}

/* The q-quantile (inverted CDF: the smallest value whose cumulative count
 * reaches q * n) of sorted entries e[0..ne) holding n values. */
static double quantile(const entry *e, size_t ne, uint64_t n, double q)
{
    if (ne == 0)
        return NAN;
    double target = q * (double)n;
    uint64_t cum = 0;
    for (size_t i = 0; i < ne; i++) {
        cum += e[i].count;
        if ((double)cum >= target && cum > 0)
            return e[i].v;
    }
    return e[ne - 1].v;
}

static rt_status finish_num(const feat *f, rt_feature_stats *o)
{
    entry *e = sorted(&f->t, cmp_num);
    if (!e)
        return RT_ERR_NOMEM;
    size_t ne = f->t.n;
    uint64_t n = f->non_missing - f->nan; /* values that are numbers */
    o->num_nan = f->nan;
    o->approximate = f->sketch;
    o->standard.num_nan = o->quantile_hist.num_nan = f->nan;
    if (n == 0) {
        o->min = o->max = o->mean = o->std_dev = o->median = 0;
        for (int k = 0; k <= RT_STATS_BUCKETS; k++)
            o->quantiles[k] = 0;
        free(e);
        return RT_OK;
    }
    o->min = f->min;
    o->max = f->max;
    for (size_t i = 0; i < ne; i++)
        if (e[i].v == 0)
            o->num_zeros += e[i].count;
    if (f->sketch) {
        o->mean = f->w_mean;
        o->std_dev = f->w_n > 0 && isfinite(f->w_m2) ? sqrt(f->w_m2 / f->w_n) : NAN;
    } else { /* in value order: the same for any order of the rows */
        double s = 0;
        for (size_t i = 0; i < ne; i++)
            s += e[i].v * (double)e[i].count;
        double mean = s / (double)n, ss = 0;
        for (size_t i = 0; i < ne; i++) {
            double d = e[i].v - mean;
            ss += d * d * (double)e[i].count;
        }
        o->mean = mean;
        o->std_dev = isfinite(mean) ? sqrt(ss / (double)n) : NAN;
    }
    for (int k = 0; k <= RT_STATS_BUCKETS; k++)
        o->quantiles[k] = k == 0 ? o->min
                          : k == RT_STATS_BUCKETS
                              ? o->max
                              : quantile(e, ne, n, (double)k / RT_STATS_BUCKETS);
    o->median = quantile(e, ne, n, 0.5);
    if (f->sketch) { /* a bucket's middle may pass the exact ends */
        for (int k = 0; k <= RT_STATS_BUCKETS; k++)
            o->quantiles[k] = fmin(fmax(o->quantiles[k], o->min), o->max);
        o->median = fmin(fmax(o->median, o->min), o->max);
    }
    /* quantiles histogram: bucket k between cut points k and k+1, n/10 each */
    o->quantile_hist.b = calloc(RT_STATS_BUCKETS, sizeof *o->quantile_hist.b);
    /* standard: equal width over the finite range; -Infinity and +Infinity
     * values as point buckets of their own */
    o->standard.b = calloc(RT_STATS_BUCKETS + 2, sizeof *o->standard.b);
    if (!o->quantile_hist.b || !o->standard.b) {
        free(e);
        return RT_ERR_NOMEM;
    }
    o->quantile_hist.n = RT_STATS_BUCKETS;
    for (int k = 0; k < RT_STATS_BUCKETS; k++) {
        o->quantile_hist.b[k].low = o->quantiles[k];
        o->quantile_hist.b[k].high = o->quantiles[k + 1];
        o->quantile_hist.b[k].count = (double)n / RT_STATS_BUCKETS;
    }
    double lo = INFINITY, hi = -INFINITY;
    uint64_t ninf = 0, pinf = 0;
    for (size_t i = 0; i < ne; i++) {
        if (e[i].v == -INFINITY)
            ninf += e[i].count;
        else if (e[i].v == INFINITY)
            pinf += e[i].count;
        else {
            lo = fmin(lo, e[i].v);
            hi = fmax(hi, e[i].v);
        }
    }
    if (f->sketch && isfinite(lo)) { /* keys are bucket middles: use the exact ends */
        lo = isfinite(f->min) ? f->min : lo;
        hi = isfinite(f->max) ? f->max : hi;
    }
    rt_stats_hist *h = &o->standard;
    if (ninf)
        h->b[h->n++] = (rt_stats_bucket){-INFINITY, -INFINITY, (double)ninf};
    if (isfinite(lo)) {
        if (lo == hi) {
            uint64_t c = n - ninf - pinf;
            h->b[h->n++] = (rt_stats_bucket){lo, hi, (double)c};
        } else {
            size_t first = h->n;
            double w = (hi - lo) / RT_STATS_BUCKETS;
            int wide = !isfinite(w); /* hi - lo past DBL_MAX: edges that cannot overflow */
            for (int k = 0; k < RT_STATS_BUCKETS; k++) {
                double t = (double)k / RT_STATS_BUCKETS, u = (double)(k + 1) / RT_STATS_BUCKETS;
                double a = wide ? lo * (1 - t) + hi * t : lo + w * k;
                double b = k == RT_STATS_BUCKETS - 1 ? hi : wide ? lo * (1 - u) + hi * u
                                                                 : lo + w * (k + 1);
                h->b[h->n++] = (rt_stats_bucket){a, b, 0};
            }
            for (size_t i = 0; i < ne; i++) {
                double v = e[i].v;
                if (!isfinite(v))
                    continue;
                v = fmin(fmax(v, lo), hi);
                size_t k = 0; /* the bucket whose [low, high) holds v; high closes the last */
                while (k + 1 < RT_STATS_BUCKETS && v >= h->b[first + k + 1].low)
                    k++;
                h->b[first + k].count += (double)e[i].count;
            }
        }
    }
    if (pinf)
        h->b[h->n++] = (rt_stats_bucket){INFINITY, INFINITY, (double)pinf};
    free(e);
    return RT_OK;
}

static rt_status finish_str(const feat *f, rt_feature_stats *o)
{
    entry *e = sorted(&f->t, cmp_count);
    if (!e)
        return RT_ERR_NOMEM;
    o->unique = f->t.n;
    o->unique_at_least = f->other > 0;
    o->avg_length = f->non_missing ? (double)f->tot_len / (double)f->non_missing : 0;
    size_t keep = f->t.n < RT_STATS_RANK_MAX ? f->t.n : RT_STATS_RANK_MAX;
    o->values = calloc(keep ? keep : 1, sizeof *o->values);
    if (!o->values) {
        free(e);
        return RT_ERR_NOMEM;
    }
    o->other_count = f->other;
    for (size_t i = 0; i < f->t.n; i++) {
        if (i >= keep) {
            o->other_count += e[i].count;
            continue;
        }
        if (!(o->values[i].value = strdup(e[i].s))) {
            free(e);
            return RT_ERR_NOMEM;
        }
        o->values[i].count = e[i].count;
        o->n_values = i + 1;
    }
    free(e);
    return RT_OK;
}

rt_status rt_stats_acc_finish(const rt_stats_acc *a, rt_stats **out, rt_err *err)
{
    *out = NULL;
    rt_stats *s = calloc(1, sizeof *s);
    if (!s || !(s->f = calloc(a->n ? a->n : 1, sizeof *s->f))) {
        free(s);
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    }
    s->num_examples = a->examples;
    rt_status st = RT_OK;
    for (size_t i = 0; i < a->n && st == RT_OK; i++) {
        const feat *f = &a->f[i];
        rt_feature_stats *o = &s->f[i];
        s->n = i + 1;
        if (!(o->name = strdup(f->name))) {
            st = RT_ERR_NOMEM;
            break;
        }
        o->type = f->type;
        o->num_non_missing = f->non_missing;
        o->num_missing = f->missing;
        st = f->type == RT_STATS_STRING ? finish_str(f, o) : finish_num(f, o);
    }
    if (st != RT_OK) {
        rt_stats_free(s);
        return rt_err_set(err, RT_ERR_NOMEM, "out of memory");
    }
    *out = s;
    return RT_OK;
}

/* -------------------------------------------------------------- results */

void rt_stats_free(rt_stats *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        rt_feature_stats *f = &s->f[i];
        free(f->name);
        free(f->standard.b);
        free(f->quantile_hist.b);
        for (size_t k = 0; k < f->n_values; k++)
            free(f->values[k].value);
        free(f->values);
    }
    free(s->f);
    free(s);
}

const rt_feature_stats *rt_stats_find(const rt_stats *s, const char *name)
{
    for (size_t i = 0; s && name && i < s->n; i++)
        if (strcmp(s->f[i].name, name) == 0)
            return &s->f[i];
    return NULL;
}

rt_status rt_stats_median(const rt_stats *s, const char *name, double *median)
{
    const rt_feature_stats *f = rt_stats_find(s, name);
    if (!f || f->type == RT_STATS_STRING || f->num_non_missing == f->num_nan)
        return RT_ERR_NOTFOUND;
    *median = f->median;
    return RT_OK;
}

rt_status rt_stats_top_value(const rt_stats *s, const char *name, const char **value)
{
    const rt_feature_stats *f = rt_stats_find(s, name);
    if (!f || f->type != RT_STATS_STRING || f->n_values == 0)
        return RT_ERR_NOTFOUND;
    *value = f->values[0].value;
    return RT_OK;
}
