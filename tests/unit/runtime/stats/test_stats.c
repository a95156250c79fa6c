/* test_stats.c — data statistics and distances (runtime/rt_stats*.c):
 * TFDV's own known answers for L-infinity and Jensen-Shannon divergence
 * (github.com/tensorflow/data-validation,
 * tensorflow_data_validation/anomalies/metrics_test.cc: the same inputs, the
 * same expected values, every case of its LInftyDistanceTest and of its
 * JensenShannonDivergence tests but ReadsHistogramSource and
 * DifferentTypesHistogram, which test TFDV's choice of histogram; its
 * NormalizedAbsoluteDifference is not a distance predictd computes), hand-computed statistics of a small data set,
 * order and merge invariance, the JSON round trip and the sketch's bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <float.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rt.h"

#define NEAR(a, b) assert_true(fabs((a) - (b)) < 1e-5)

/* ------------------------------------------------- L-infinity (TFDV) */

static void test_linf_tfdv_cases(void **state)
{
    (void)state;
    const char *which;
    /* "Two empty maps" */
    NEAR(rt_stats_linf_counts(NULL, NULL, NULL, 0, &which), 0.0);
    /* "Normal distribution." */
    const char *n1[] = {"hello", "world"};
    double a1[] = {0.1, 0.9}, b1[] = {0.3, 0.7};
    NEAR(rt_stats_linf_counts(n1, a1, b1, 2, &which), 0.2);
    /* "Missing value in both." (union a, b, c) and flipped */
    const char *n2[] = {"a", "b", "c"};
    double a2[] = {0, 0.9, 0.1}, b2[] = {0.3, 0.7, 0};
    NEAR(rt_stats_linf_counts(n2, a2, b2, 3, &which), 0.3);
    NEAR(rt_stats_linf_counts(n2, b2, a2, 3, &which), 0.3);
    /* value lists: each normalised by its own total; the value named */
    char x[] = "x", y[] = "y", z[] = "z";
    rt_stats_value va[] = {{x, 10}, {y, 30}}, vb[] = {{y, 1}, {z, 3}};
    NEAR(rt_stats_linf(va, 2, vb, 2, &which), 0.75);
    assert_string_equal(which, "z");
    NEAR(rt_stats_linf(va, 2, va, 2, &which), 0.0);
}

/* ------------------------------------------- Jensen-Shannon (TFDV) */

static rt_stats_hist H(rt_stats_bucket *b, size_t n, uint64_t nan)
{
    rt_stats_hist h = {nan, n, b};
    return h;
}

static void test_jsd_tfdv_cases(void **state)
{
    (void)state;
    const double inf = INFINITY;
    /* SameStatistics */
    rt_stats_bucket s[] = {{1, 2.3333333, 2.9866667}, {2.3333333, 3.6666667, 1.0066667},
                           {3.6666667, 5, 2.0066667}};
    rt_stats_hist hs = H(s, 3, 0);
    NEAR(rt_stats_jsd(&hs, &hs), 0.0);
    /* DifferentBucketBoundaries */
    rt_stats_bucket d1[] = {{1, 2, 2}, {2, 3, 2}}, d2[] = {{2, 4, 2}, {4, 6, 2}};
    rt_stats_hist h1 = H(d1, 2, 0), h2 = H(d2, 2, 0);
    NEAR(rt_stats_jsd(&h1, &h2), 0.65563906222);
    /* NoOverlap */
    rt_stats_bucket o1[] = {{0, 1, 2}, {1, 2, 2}}, o2[] = {{3, 4, 2}, {4, 6, 2}};
    h1 = H(o1, 2, 0), h2 = H(o2, 2, 0);
    NEAR(rt_stats_jsd(&h1, &h2), 1.0);
    /* OneHasAllValuesInOneBucket */
    rt_stats_bucket p1[] = {{1, 1, 4}}, p2[] = {{2, 4, 2}, {4, 6, 2}};
    h1 = H(p1, 1, 0), h2 = H(p2, 2, 0);
    NEAR(rt_stats_jsd(&h1, &h2), 1.0);
    /* BothHaveAllValuesInOneBucket */
    rt_stats_bucket q1[] = {{1, 1, 4}}, q2[] = {{2.33, 2.33, 4}};
    h1 = H(q1, 1, 0), h2 = H(q2, 1, 0);
    NEAR(rt_stats_jsd(&h1, &h2), 1.0);
    /* OneHasOneBucketTheOtherHasMany */
    rt_stats_bucket m1[] = {{10, 10, 21}}, m2[] = {{0, 4, 150}, {4, 12, 200}, {12, 20, 20}};
    h1 = H(m1, 1, 0), h2 = H(m2, 3, 0);
    NEAR(rt_stats_jsd(&h1, &h2), 1.0);
    /* EmptyHistogram: an error */
    rt_stats_bucket e1[] = {{0, 4, 0}}, e2[] = {{0, 4, 10}};
    h1 = H(e1, 1, 0), h2 = H(e2, 1, 0);
    assert_true(rt_stats_jsd(&h1, &h2) < 0);
    assert_true(rt_stats_jsd(&h2, &h1) < 0);
    /* NaNNotEqualToSelf */
    h1 = H(NULL, 0, 1);
    NEAR(rt_stats_jsd(&h1, &h1), 1.0);
    /* WithNaNs */
    rt_stats_bucket w1[] = {{1, 2, 3}}, w2[] = {{1, 2, 4}};
    h1 = H(w1, 1, 1), h2 = H(w2, 1, 0);
    NEAR(rt_stats_jsd(&h1, &h2), 0.13792538096);
    /* MultiplePointBinsPartialOverlap */
    rt_stats_bucket mp1[] = {{0, 0, 1}, {1, 1, 1}}, mp2[] = {{0, 0, 1}, {2, 2, 1}};
    h1 = H(mp1, 2, 0), h2 = H(mp2, 2, 0);
    NEAR(rt_stats_jsd(&h1, &h2), 0.5);
    /* MixOfPointAndNonPointBoundaries */
    rt_stats_bucket x1[] = {{0, 0, 1}, {1, 2, 1}}, x2[] = {{1, 1, 1}, {2, 2, 1}};
    h1 = H(x1, 2, 0), h2 = H(x2, 2, 0);
    NEAR(rt_stats_jsd(&h1, &h2), 1.0);
    /* InfiniteBinBoundaries */
    rt_stats_bucket i1[] = {{-inf, 0, 1}, {inf, inf, 1}};
    h1 = H(i1, 2, 0);
    NEAR(rt_stats_jsd(&h1, &h1), 1.0);
}

/* TFDV's rank-histogram cases (SameStatistics' second dataset, RankHistogram):
 * its divergence of two value-count lists is the divergence over the union
 * of their labels, which is what the re-bucketing does with point buckets
 * (one per label, none shared between two labels). predictd compares
 * categorical features by L-infinity, so the labels are given here as
 * distinct points: a 0, b 1, c 2, X 3, Y 4, Z 5. */
static void test_jsd_tfdv_rank_histogram_cases(void **state)
{
    (void)state;
    /* SameStatistics: {b: 2, a: 2, c: 1} against itself */
    rt_stats_bucket s[] = {{1, 1, 2}, {0, 0, 2}, {2, 2, 1}};
    rt_stats_hist hs = H(s, 3, 0);
    NEAR(rt_stats_jsd(&hs, &hs), 0.0);
    /* RankHistogram: {b: 2, a: 2, c: 1} against {a: 2, Z: 1, Y: 1, X: 1} */
    rt_stats_bucket r1[] = {{0, 0, 2}, {1, 1, 2}, {2, 2, 1}},
                    r2[] = {{0, 0, 2}, {3, 3, 1}, {4, 4, 1}, {5, 5, 1}};
    rt_stats_hist h1 = H(r1, 3, 0), h2 = H(r2, 4, 0);
    NEAR(rt_stats_jsd(&h1, &h2), 0.6);
    NEAR(rt_stats_jsd(&h2, &h1), 0.6);
    /* EmptyRankHistogram: no counts on one side is an error */
    rt_stats_hist he = H(NULL, 0, 0);
    assert_true(rt_stats_jsd(&he, &h2) < 0);
}

/* An independent JS divergence over aligned probabilities (the formula,
 * not the alignment): for histograms already on the same boundaries. */
static double js_plain(const double *p, const double *q, size_t n)
{
    double sp = 0, sq = 0, r = 0;
    for (size_t i = 0; i < n; i++)
        sp += p[i], sq += q[i];
    for (size_t i = 0; i < n; i++) {
        double a = p[i] / sp, b = q[i] / sq, m = (a + b) / 2;
        if (a > 0)
            r += a * log2(a / m) / 2;
        if (b > 0)
            r += b * log2(b / m) / 2;
    }
    return r;
}

static void test_jsd_same_boundaries_is_the_formula(void **state)
{
    (void)state;
    rt_rng g;
    rt_rng_seed(&g, 7);
    for (int t = 0; t < 50; t++) {
        rt_stats_bucket a[10], b[10];
        double p[10], q[10];
        for (int k = 0; k < 10; k++) {
            p[k] = (double)(rt_rng_next(&g) % 100);
            q[k] = (double)(rt_rng_next(&g) % 100) + 1;
            a[k] = (rt_stats_bucket){k, k + 1, p[k]};
            b[k] = (rt_stats_bucket){k, k + 1, q[k]};
        }
        p[0] += 1;
        a[0].count += 1;
        rt_stats_hist ha = H(a, 10, 0), hb = H(b, 10, 0);
        NEAR(rt_stats_jsd(&ha, &hb), js_plain(p, q, 10));
    }
}

/* -------------------------------------------------------- statistics */

static rt_stats_acc *small_acc(void)
{
    const char *names[] = {"x", "s"};
    rt_stats_type types[] = {RT_STATS_FLOAT, RT_STATS_STRING};
    return rt_stats_acc_new_named(names, types, 2);
}

static const char *const XS[] = {"0", "1", "2", "2", "3", "10", "-1", "nan", ""};
static const char *const SS[] = {"b", "a", "b", "c", " a ", "", "a", "b", "c"};

static void add_rows(rt_stats_acc *a, const size_t *order, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        size_t i = order[k];
        rt_err err;
        rt_stats_acc_example(a);
        assert_int_equal(rt_stats_acc_cell(a, 0, XS[i], strlen(XS[i]), 1, &err), RT_OK);
        assert_int_equal(rt_stats_acc_cell(a, 1, SS[i], strlen(SS[i]), 1, &err), RT_OK);
    }
}

static void test_stats_hand_computed(void **state)
{
    (void)state;
    rt_stats_acc *a = small_acc();
    size_t order[] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
    add_rows(a, order, 9);
    rt_stats *s = NULL;
    assert_int_equal(rt_stats_acc_finish(a, &s, NULL), RT_OK);
    assert_int_equal(s->num_examples, 9);
    const rt_feature_stats *x = rt_stats_find(s, "x");
    assert_non_null(x);
    /* numbers -1 0 1 2 2 3 10, one NaN, one empty cell */
    assert_int_equal(x->num_non_missing, 8);
    assert_int_equal(x->num_missing, 1);
    assert_int_equal(x->num_nan, 1);
    assert_int_equal(x->num_zeros, 1);
    NEAR(x->min, -1);
    NEAR(x->max, 10);
    NEAR(x->mean, 17.0 / 7);
    NEAR(x->std_dev, sqrt(119.0 / 7 - (17.0 / 7) * (17.0 / 7))); /* population std */
    NEAR(x->median, 2);
    const double q[] = {-1, -1, 0, 1, 1, 2, 2, 2, 3, 10, 10};
    for (int k = 0; k <= 10; k++)
        NEAR(x->quantiles[k], q[k]);
    /* equal width over [-1, 10]: width 1.1 */
    assert_int_equal(x->standard.n, 10);
    const double c[] = {2, 1, 2, 1, 0, 0, 0, 0, 0, 1};
    for (int k = 0; k < 10; k++) {
        NEAR(x->standard.b[k].low, -1 + 1.1 * k);
        NEAR(x->standard.b[k].count, c[k]);
    }
    NEAR(x->standard.b[9].high, 10);
    assert_int_equal(x->standard.num_nan, 1);
    assert_int_equal(x->quantile_hist.n, 10);
    NEAR(x->quantile_hist.b[0].count, 0.7);
    double med;
    assert_int_equal(rt_stats_median(s, "x", &med), RT_OK);
    NEAR(med, 2);
    /* strings trimmed: a 3, b 3, c 2; one empty cell is missing */
    const rt_feature_stats *st = rt_stats_find(s, "s");
    assert_int_equal(st->num_non_missing, 8);
    assert_int_equal(st->num_missing, 1);
    assert_int_equal(st->unique, 3);
    assert_int_equal(st->n_values, 3);
    assert_string_equal(st->values[0].value, "a"); /* ties by value */
    assert_int_equal(st->values[0].count, 3);
    assert_string_equal(st->values[1].value, "b");
    assert_string_equal(st->values[2].value, "c");
    NEAR(st->avg_length, 1.0);
    const char *top;
    assert_int_equal(rt_stats_top_value(s, "s", &top), RT_OK);
    assert_string_equal(top, "a");
    assert_int_equal(rt_stats_top_value(s, "x", &top), RT_ERR_NOTFOUND);
    assert_int_equal(rt_stats_median(s, "nope", &med), RT_ERR_NOTFOUND);
    rt_stats_free(s);
    rt_stats_acc_free(a);
}

static char *json_of(const rt_stats_acc *a)
{
    rt_stats *s = NULL;
    assert_int_equal(rt_stats_acc_finish(a, &s, NULL), RT_OK);
    rt_buf b;
    rt_buf_init(&b);
    assert_int_equal(rt_stats_write_json(s, "d", &b), RT_OK);
    rt_stats_free(s);
    char *t = strndup(b.data, b.len);
    rt_buf_free(&b);
    return t;
}

static void test_stats_order_and_merge_invariant(void **state)
{
    (void)state;
    size_t fwd[] = {0, 1, 2, 3, 4, 5, 6, 7, 8}, rev[] = {8, 7, 6, 5, 4, 3, 2, 1, 0};
    rt_stats_acc *a = small_acc(), *b = small_acc(), *p1 = small_acc(), *p2 = small_acc(),
                 *m = small_acc();
    add_rows(a, fwd, 9);
    add_rows(b, rev, 9);
    add_rows(p1, fwd + 4, 5); /* two "ranks" */
    add_rows(p2, fwd, 4);
    rt_buf s1, s2;
    rt_buf_init(&s1);
    rt_buf_init(&s2);
    assert_int_equal(rt_stats_acc_save(p1, &s1), RT_OK);
    assert_int_equal(rt_stats_acc_save(p2, &s2), RT_OK);
    assert_int_equal(rt_stats_acc_merge(m, s1.data, s1.len, NULL), RT_OK);
    assert_int_equal(rt_stats_acc_merge(m, s2.data, s2.len, NULL), RT_OK);
    char *ja = json_of(a), *jb = json_of(b), *jm = json_of(m);
    assert_string_equal(ja, jb);
    assert_string_equal(ja, jm);
    /* a truncated state is refused, not half merged */
    rt_stats_acc *bad = small_acc();
    rt_err err;
    assert_int_equal(rt_stats_acc_merge(bad, s1.data, s1.len - 3, &err), RT_ERR_FORMAT);
    rt_stats_acc_free(bad);
    /* the JSON round trip gives the same bytes */
    rt_stats *back = NULL;
    assert_int_equal(rt_stats_parse_json(ja, strlen(ja), &back, &err), RT_OK);
    rt_buf again;
    rt_buf_init(&again);
    assert_int_equal(rt_stats_write_json(back, "d", &again), RT_OK);
    assert_int_equal(again.len, strlen(ja));
    assert_memory_equal(again.data, ja, again.len);
    rt_buf_free(&again);
    rt_stats_free(back);
    free(ja);
    free(jb);
    free(jm);
    rt_buf_free(&s1);
    rt_buf_free(&s2);
    rt_stats_acc_free(a);
    rt_stats_acc_free(b);
    rt_stats_acc_free(p1);
    rt_stats_acc_free(p2);
    rt_stats_acc_free(m);
}

static void test_stats_infinities_and_point_histograms(void **state)
{
    (void)state;
    const char *names[] = {"v"};
    rt_stats_type types[] = {RT_STATS_FLOAT};
    rt_stats_acc *a = rt_stats_acc_new_named(names, types, 1);
    double vs[] = {5, 5, 5, -INFINITY, INFINITY, INFINITY};
    for (int k = 0; k < 6; k++)
        assert_int_equal(rt_stats_acc_number(a, 0, vs[k]), 0);
    rt_stats *s = NULL;
    assert_int_equal(rt_stats_acc_finish(a, &s, NULL), RT_OK);
    const rt_stats_hist *h = &s->f[0].standard;
    assert_int_equal(h->n, 3); /* -inf point, [5, 5] point, +inf point */
    assert_true(h->b[0].low == -INFINITY && h->b[0].count == 1);
    assert_true(h->b[1].low == 5 && h->b[1].high == 5 && h->b[1].count == 3);
    assert_true(h->b[2].low == INFINITY && h->b[2].count == 2);
    assert_true(s->f[0].min == -INFINITY && s->f[0].max == INFINITY);
    rt_stats_free(s);
    rt_stats_acc_free(a);
}

/* issue 35 item 12: a finite range wider than DBL_MAX (hi - lo overflows)
 * still has finite, increasing bucket edges, every value counted, and the
 * histogram's distance to itself is 0, not 1 */
static void test_stats_range_past_dbl_max(void **state)
{
    (void)state;
    const char *names[] = {"v"};
    rt_stats_type types[] = {RT_STATS_FLOAT};
    rt_stats_acc *a = rt_stats_acc_new_named(names, types, 1);
    rt_stats_acc *b = rt_stats_acc_new_named(names, types, 1);
    double vs[] = {-DBL_MAX, -DBL_MAX / 2, -1, 0, 1, DBL_MAX / 3, DBL_MAX};
    for (int k = 0; k < 7; k++) {
        assert_int_equal(rt_stats_acc_number(a, 0, vs[k]), 0);
        assert_int_equal(rt_stats_acc_number(b, 0, k == 3 ? DBL_MAX : vs[k]), 0);
    }
    rt_stats *s = NULL, *s2 = NULL;
    assert_int_equal(rt_stats_acc_finish(a, &s, NULL), RT_OK);
    assert_int_equal(rt_stats_acc_finish(b, &s2, NULL), RT_OK);
    const rt_stats_hist *h = &s->f[0].standard;
    assert_int_equal(h->n, 10);
    assert_true(h->b[0].low == -DBL_MAX && h->b[9].high == DBL_MAX);
    double total = 0;
    for (size_t k = 0; k < h->n; k++) {
        assert_true(isfinite(h->b[k].low) && isfinite(h->b[k].high));
        assert_true(h->b[k].low < h->b[k].high);
        if (k > 0)
            assert_true(h->b[k].low == h->b[k - 1].high);
        total += h->b[k].count;
    }
    NEAR(total, 7);
    NEAR(h->b[0].count, 1);  /* -DBL_MAX */
    NEAR(h->b[2].count, 1);  /* -DBL_MAX / 2: [-0.6, -0.4) of DBL_MAX */
    NEAR(h->b[4].count, 1);  /* -1: [-0.2, 0) */
    NEAR(h->b[5].count, 2);  /* 0 and 1: [0, 0.2) */
    NEAR(h->b[6].count, 1);  /* DBL_MAX / 3 */
    NEAR(h->b[9].count, 1);  /* DBL_MAX */
    NEAR(rt_stats_jsd(h, h), 0.0);
    double d = rt_stats_jsd(h, &s2->f[0].standard);
    assert_true(d > 0 && d < 0.5);
    rt_stats_free(s);
    rt_stats_free(s2);
    rt_stats_acc_free(a);
    rt_stats_acc_free(b);
}

static void test_stats_sketch_past_the_exact_table(void **state)
{
    (void)state;
    const char *names[] = {"v"};
    rt_stats_type types[] = {RT_STATS_FLOAT};
    rt_stats_acc *a = rt_stats_acc_new_named(names, types, 1);
    size_t n = 200000;
    for (size_t i = 1; i <= n; i++)
        assert_int_equal(rt_stats_acc_number(a, 0, (double)i), 0);
    rt_stats *s = NULL;
    assert_int_equal(rt_stats_acc_finish(a, &s, NULL), RT_OK);
    const rt_feature_stats *f = &s->f[0];
    assert_int_equal(f->approximate, 1);
    assert_int_equal(f->num_non_missing, n);
    NEAR(f->min, 1);
    NEAR(f->max, (double)n);
    assert_true(fabs(f->mean - (n + 1) / 2.0) < 1e-6 * n);
    for (int k = 1; k < 10; k++) /* deciles within 1% (plus one value's rank) */
        assert_true(fabs(f->quantiles[k] - n * k / 10.0) <= 0.011 * n * k / 10.0 + 1);
    assert_true(fabs(f->median - n / 2.0) <= 0.011 * n / 2.0 + 1);
    double tot = 0;
    for (size_t k = 0; k < f->standard.n; k++)
        tot += f->standard.b[k].count;
    NEAR(tot, (double)n);
    rt_stats_free(s);
    rt_stats_acc_free(a);
}

static void test_stats_json_refusals(void **state)
{
    (void)state;
    rt_stats *s = NULL;
    rt_err err;
    const char *bad[] = {
        "[]",
        "{\"datasets\": [{\"num_examples\": 1, \"features\": [{\"type\": \"INT\"}]}]}",
        "{\"datasets\": [{\"num_examples\": 1, \"features\": [{\"name\": \"a\", \"type\": "
        "\"INT\"}]}]}",
        "{\"datasets\": [{\"num_examples\": 1, \"features\": [{\"name\": \"a\", \"type\": "
        "\"FLOAT\", \"num_stats\": {\"histograms\": [{\"buckets\": [{\"low_value\": 2, "
        "\"high_value\": 1, \"sample_count\": 1}]}]}}]}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_not_equal(rt_stats_parse_json(bad[i], strlen(bad[i]), &s, &err), RT_OK);
        assert_null(s);
        assert_true(strstr(err.msg, "statistics.json") != NULL);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linf_tfdv_cases),
        cmocka_unit_test(test_jsd_tfdv_cases),
        cmocka_unit_test(test_jsd_tfdv_rank_histogram_cases),
        cmocka_unit_test(test_jsd_same_boundaries_is_the_formula),
        cmocka_unit_test(test_stats_hand_computed),
        cmocka_unit_test(test_stats_order_and_merge_invariant),
        cmocka_unit_test(test_stats_infinities_and_point_histograms),
        cmocka_unit_test(test_stats_range_past_dbl_max),
        cmocka_unit_test(test_stats_sketch_past_the_exact_table),
        cmocka_unit_test(test_stats_json_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
