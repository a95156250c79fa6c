/* test_trn_metrics.c — the metrics (runtime/stats/rt_metrics.c) and the trainer's optimizers against
 * independent computations: ROC AUC against brute-force pair counting, PR AUC
 * and the binary metrics on hand-checkable data, and one step of each
 * optimizer against TensorFlow's formulas written out in double. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <string.h>
#include <cmocka.h>

#include "trn_internal.h"

/* AUC by counting pairs: P(score_pos > score_neg) + 0.5 P(equal). */
static double brute_auc(const float *s, const float *y, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            if (y[i] > 0.5f && y[j] < 0.5f) {
                den += 1;
                num += s[i] > s[j] ? 1.0 : s[i] == s[j] ? 0.5 : 0.0;
            }
    return num / den;
}

static void test_auc_matches_pair_counting(void **state)
{
    (void)state;
    trn_rng r;
    trn_rng_seed(&r, 7);
    enum { N = 500 };
    float s[N], y[N];
    for (int trial = 0; trial < 5; trial++) {
        for (int i = 0; i < N; i++) {
            y[i] = trn_rng_uniform(&r) < 0.3 ? 1.0f : 0.0f;
            /* coarse scores make many ties */
            s[i] = (float)floor((trn_rng_uniform(&r) + 0.3 * y[i]) * (trial + 2)) / 10.0f;
        }
        assert_true(fabs(rt_metrics_auc_roc(s, y, NULL, N) - brute_auc(s, y, N)) < 1e-12);
    }
    /* perfect and reversed rankings */
    float s2[4] = {0.1f, 0.2f, 0.8f, 0.9f}, y2[4] = {0, 0, 1, 1}, y3[4] = {1, 1, 0, 0};
    assert_true(rt_metrics_auc_roc(s2, y2, NULL, 4) == 1.0);
    assert_true(rt_metrics_auc_roc(s2, y3, NULL, 4) == 0.0);
}

static void test_auc_pr_hand_example(void **state)
{
    (void)state;
    /* ranked: 0.9 pos, 0.8 neg, 0.7 pos, 0.1 neg: AP = 0.5*1 + 0.5*(2/3) */
    float s[4] = {0.9f, 0.8f, 0.7f, 0.1f}, y[4] = {1, 0, 1, 0};
    assert_true(fabs(rt_metrics_auc_pr(s, y, NULL, 4) - (0.5 + 1.0 / 3.0)) < 1e-12);
}

static void test_binary_metrics(void **state)
{
    (void)state;
    rt_metrics *mt = rt_metrics_new(PREDICTD__HEAD_TYPE__HEAD_BINARY, 2);
    assert_non_null(mt);
    /* logits: 2 (pos, right), -1 (neg, right), 0.5 (neg, wrong), -3 (pos, wrong) */
    float z[4] = {2.0f, -1.0f, 0.5f, -3.0f}, y[4] = {1, 0, 0, 1};
    assert_int_equal(rt_metrics_add(mt, z, y, NULL, 2, 0.25), RT_OK);
    assert_int_equal(rt_metrics_add(mt, z + 2, y + 2, NULL, 2, 0.75), RT_OK);
    rt_metric_list l;
    assert_int_equal(rt_metrics_result(mt, 17, &l), RT_OK);
    assert_true(rt_metric_get(&l, "accuracy") == 0.5);
    assert_true(rt_metric_get(&l, "accuracy_baseline") == 0.5);
    assert_true(rt_metric_get(&l, "precision") == 0.5);
    assert_true(rt_metric_get(&l, "recall") == 0.5);
    assert_true(rt_metric_get(&l, "label/mean") == 0.5);
    assert_true(rt_metric_get(&l, "loss") == 0.5);
    assert_true(rt_metric_get(&l, "global_step") == 17);
    double avg = 0;
    for (int i = 0; i < 4; i++) {
        double p = 1.0 / (1.0 + exp(-z[i]));
        avg += -(y[i] * log(p) + (1 - y[i]) * log(1 - p)) / 4.0;
    }
    assert_true(fabs(rt_metric_get(&l, "average_loss") - avg) < 1e-9);
    double pm = 0;
    for (int i = 0; i < 4; i++)
        pm += 1.0 / (1.0 + exp(-z[i])) / 4.0;
    assert_true(fabs(rt_metric_get(&l, "prediction/mean") - pm) < 1e-6);
    /* sorted names, TF's log line */
    for (size_t i = 1; i < l.n; i++)
        assert_true(strcmp(l.m[i - 1].name, l.m[i].name) < 0);
    rt_buf b;
    rt_buf_init(&b);
    assert_int_equal(rt_metrics_format(&l, &b), 0);
    assert_non_null(strstr(b.data, "accuracy = 0.5, accuracy_baseline = 0.5, auc = "));
    assert_non_null(strstr(b.data, "global_step = 17"));
    rt_buf_reset(&b);
    assert_int_equal(rt_metrics_json(&l, &b), 0);
    assert_non_null(strstr(b.data, "\"global_step\": 17"));
    rt_buf_free(&b);
    rt_metrics_free(mt);
}

static void test_multiclass_and_regression_metrics(void **state)
{
    (void)state;
    rt_metrics *mt = rt_metrics_new(PREDICTD__HEAD_TYPE__HEAD_MULTI_CLASS, 3);
    float z[6] = {1, 2, 3, 5, 0, 0}, y[2] = {2, 1};
    assert_int_equal(rt_metrics_add(mt, z, y, NULL, 2, 1.0), RT_OK);
    rt_metric_list l;
    assert_int_equal(rt_metrics_result(mt, 1, &l), RT_OK);
    assert_true(rt_metric_get(&l, "accuracy") == 0.5);
    assert_true(isnan(rt_metric_get(&l, "auc")));
    rt_metrics_free(mt);

    mt = rt_metrics_new(PREDICTD__HEAD_TYPE__HEAD_REGRESSION, 0);
    float p[3] = {1, 2, 4}, t[3] = {1, 3, 2};
    assert_int_equal(rt_metrics_add(mt, p, t, NULL, 3, 5.0 / 3.0), RT_OK);
    assert_int_equal(rt_metrics_result(mt, 1, &l), RT_OK);
    assert_true(fabs(rt_metric_get(&l, "average_loss") - 5.0 / 3.0) < 1e-12);
    assert_true(fabs(rt_metric_get(&l, "label/mean") - 2.0) < 1e-12);
    assert_true(fabs(rt_metric_get(&l, "prediction/mean") - 7.0 / 3.0) < 1e-6);
    rt_metrics_free(mt);
}

/* ------------------------------------------------ example weights */

/* Weighted AUC by counting pairs: sum w_i w_j [s_i > s_j] (+ half on ties)
 * over positive i and negative j, over sum w_i w_j. */
static double brute_auc_w(const float *s, const float *y, const float *w, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            if (y[i] > 0.5f && y[j] < 0.5f) {
                double ww = (double)w[i] * w[j];
                den += ww;
                num += ww * (s[i] > s[j] ? 1.0 : s[i] == s[j] ? 0.5 : 0.0);
            }
    return num / den;
}

/* Binary metrics with weights, by hand: logits 2 (pos, w 3), -1 (neg, w 1),
 * 0.5 (neg, w 2), -3 (pos, w 0.5). */
static void test_weighted_binary_by_hand(void **state)
{
    (void)state;
    float z[4] = {2.0f, -1.0f, 0.5f, -3.0f}, y[4] = {1, 0, 0, 1}, w[4] = {3, 1, 2, 0.5f};
    rt_metrics *mt = rt_metrics_new(PREDICTD__HEAD_TYPE__HEAD_BINARY, 2);
    assert_int_equal(rt_metrics_add(mt, z, y, w, 4, 0.3), RT_OK);
    rt_metric_list l;
    assert_int_equal(rt_metrics_result(mt, 5, &l), RT_OK);
    double W = 6.5;
    /* right: rows 0 (3) and 1 (1) */
    assert_true(fabs(rt_metric_get(&l, "accuracy") - 4.0 / W) < 1e-12);
    /* predicted positive: rows 0 (pos, 3) and 2 (neg, 2) */
    assert_true(fabs(rt_metric_get(&l, "precision") - 3.0 / 5.0) < 1e-12);
    /* positives: rows 0 (3, found) and 3 (0.5, missed) */
    assert_true(fabs(rt_metric_get(&l, "recall") - 3.0 / 3.5) < 1e-12);
    assert_true(fabs(rt_metric_get(&l, "label/mean") - 3.5 / W) < 1e-12);
    assert_true(fabs(rt_metric_get(&l, "accuracy_baseline") - 3.5 / W) < 1e-12);
    /* ranked 0.88 (+3), 0.62 (-2), 0.27 (-1), 0.05 (+0.5): pairs (+3 > -2),
     * (+3 > -1) count 3*2 + 3*1 = 9 of 3.5*3 = 10.5 */
    assert_true(fabs(rt_metric_get(&l, "auc") - 9.0 / 10.5) < 1e-12);
    /* PR steps: recall 3/3.5 at precision 1, then (after -2, -1) recall 1 at
     * precision 3.5/6.5 */
    double ap = (3.0 / 3.5) * 1.0 + (0.5 / 3.5) * (3.5 / 6.5);
    assert_true(fabs(rt_metric_get(&l, "auc_precision_recall") - ap) < 1e-12);
    double avg = 0, pm = 0;
    for (int i = 0; i < 4; i++) {
        double p = 1.0 / (1.0 + exp(-z[i]));
        avg += w[i] * -(y[i] * log(p) + (1 - y[i]) * log(1 - p));
        pm += w[i] * p;
    }
    assert_true(fabs(rt_metric_get(&l, "average_loss") - avg / W) < 1e-9);
    assert_true(fabs(rt_metric_get(&l, "prediction/mean") - pm / W) < 1e-6);
    assert_true(rt_metric_get(&l, "loss") == 0.3); /* the batch losses' mean */
    /* the batch loss with weights: sum w l / n (SUM_OVER_BATCH_SIZE) */
    assert_true(
        fabs(rt_metrics_head_loss(PREDICTD__HEAD_TYPE__HEAD_BINARY, 1, z, y, w, 4, 4, NULL) -
             avg / 4.0) < 1e-9);
    rt_metrics_free(mt);
}

/* Random data: weights all 1 give the unweighted metrics bit for bit; a row
 * of weight 2 gives the metrics of that row twice; the weighted AUC equals
 * weighted pair counting. */
static void test_weights_one_and_two(void **state)
{
    (void)state;
    enum { N = 300 };
    static const Predictd__HeadType heads[3] = {PREDICTD__HEAD_TYPE__HEAD_BINARY,
                                                PREDICTD__HEAD_TYPE__HEAD_MULTI_CLASS,
                                                PREDICTD__HEAD_TYPE__HEAD_REGRESSION};
    static const size_t lds[3] = {1, 3, 2};
    trn_rng r;
    trn_rng_seed(&r, 11);
    for (int h = 0; h < 3; h++) {
        size_t ld = lds[h], ls = heads[h] == PREDICTD__HEAD_TYPE__HEAD_REGRESSION ? ld : 1;
        float z[N * 3], y[N * 2], one[N], w[N];
        float zd[(N + N / 3) * 3], yd[(N + N / 3) * 2]; /* rows with weight 2 twice */
        size_t nd = 0;
        for (int i = 0; i < N; i++) {
            for (size_t j = 0; j < ld; j++)
                z[i * ld + j] = (float)floor(8 * (trn_rng_uniform(&r) - 0.5)) / 4.0f;
            for (size_t j = 0; j < ls; j++)
                y[i * ls + j] = heads[h] == PREDICTD__HEAD_TYPE__HEAD_REGRESSION
                                    ? (float)(trn_rng_uniform(&r) - 0.5)
                                    : (float)trn_rng_below(&r, h == 0 ? 2 : 3);
            one[i] = 1.0f;
            w[i] = i % 3 == 0 ? 2.0f : 1.0f;
            for (int k = 0; k < (w[i] == 2.0f ? 2 : 1); k++, nd++) {
                memcpy(zd + nd * ld, z + i * ld, ld * sizeof(float));
                memcpy(yd + nd * ls, y + i * ls, ls * sizeof(float));
            }
        }
        size_t nc = h == 1 ? 3 : h == 0 ? 2 : 0;
        if (!nc)
            nc = ld; /* regression: label_dimension */
        rt_metrics *a = rt_metrics_new(heads[h], nc), *b = rt_metrics_new(heads[h], nc);
        rt_metrics *c = rt_metrics_new(heads[h], nc), *d = rt_metrics_new(heads[h], nc);
        assert_int_equal(rt_metrics_add(a, z, y, NULL, N, 1.0), RT_OK);
        assert_int_equal(rt_metrics_add(b, z, y, one, N, 1.0), RT_OK);
        assert_int_equal(rt_metrics_add(c, z, y, w, N, 1.0), RT_OK);
        assert_int_equal(rt_metrics_add(d, zd, yd, NULL, nd, 1.0), RT_OK);
        rt_metric_list la, lb, lc, ld_;
        assert_int_equal(rt_metrics_result(a, 1, &la), RT_OK);
        assert_int_equal(rt_metrics_result(b, 1, &lb), RT_OK);
        assert_int_equal(rt_metrics_result(c, 1, &lc), RT_OK);
        assert_int_equal(rt_metrics_result(d, 1, &ld_), RT_OK);
        assert_int_equal(la.n, lb.n);
        assert_int_equal(la.n, lc.n);
        for (size_t k = 0; k < la.n; k++) {
            assert_string_equal(la.m[k].name, lb.m[k].name);
            assert_memory_equal(&la.m[k].value, &lb.m[k].value, sizeof(double));
            double x = lc.m[k].value, e = ld_.m[k].value;
            if (fabs(x - e) > 1e-9 * (1 + fabs(e)))
                fail_msg("head %d: %s weighted %.12g, duplicated %.12g", h, lc.m[k].name, x, e);
        }
        /* the batch loss: weights 1 = none, bit for bit */
        double l0 = rt_metrics_head_loss(heads[h], ld, z, y, NULL, N, N, NULL);
        double l1 = rt_metrics_head_loss(heads[h], ld, z, y, one, N, N, NULL);
        assert_memory_equal(&l0, &l1, sizeof l0);
        if (h == 0) {
            float s[N];
            for (int i = 0; i < N; i++)
                s[i] = z[i];
            assert_true(fabs(rt_metrics_auc_roc(s, y, w, N) - brute_auc_w(s, y, w, N)) < 1e-12);
            assert_true(fabs(rt_metric_get(&lc, "auc") - rt_metric_get(&ld_, "auc")) < 1e-12);
        }
        rt_metrics_free(a);
        rt_metrics_free(b);
        rt_metrics_free(c);
        rt_metrics_free(d);
    }
}

/* label_dimension 2: the loss is the squared error averaged over the two
 * values (TF's SUM_OVER_BATCH_SIZE over [batch, 2]); the means run over all
 * values. */
static void test_regression_two_values(void **state)
{
    (void)state;
    float z[4] = {1, 2, 3, 5}, y[4] = {0, 2, 3, 1}, w[2] = {1, 3};
    float dz[4];
    /* errors (1, 0) and (0, 4): losses 0.5 and 8 */
    double l = rt_metrics_head_loss(PREDICTD__HEAD_TYPE__HEAD_REGRESSION, 2, z, y, w, 2, 2, dz);
    assert_true(fabs(l - (0.5 + 3 * 8.0) / 2) < 1e-12);
    assert_true(dz[0] == 2.0f * 1 * 1 / 2 / 2 && dz[1] == 0.0f && dz[3] == 2.0f * 4 * 3 / 2 / 2);
    rt_metrics *mt = rt_metrics_new(PREDICTD__HEAD_TYPE__HEAD_REGRESSION, 2);
    assert_int_equal(rt_metrics_add(mt, z, y, w, 2, l), RT_OK);
    rt_metric_list m;
    assert_int_equal(rt_metrics_result(mt, 1, &m), RT_OK);
    assert_true(fabs(rt_metric_get(&m, "average_loss") - (0.5 + 3 * 8.0) / 4) < 1e-12);
    assert_true(fabs(rt_metric_get(&m, "label/mean") - (1 * 1.0 + 3 * 2.0) / 4) < 1e-12);
    assert_true(fabs(rt_metric_get(&m, "prediction/mean") - (1 * 1.5 + 3 * 4.0) / 4) < 1e-12);
    rt_metrics_free(mt);
}

/* One optimizer step on a 3-element tensor, compared with double math. */
static void run_step(trn_optimizer *o, float *w, float *g, float *s0, float *s1, int64_t step)
{
    tparam p;
    memset(&p, 0, sizeof p);
    p.count = 3;
    p.data = w;
    p.grad = g;
    p.slot[0] = s0;
    p.slot[1] = s1;
    trn_optim_update(o, &p, 0, 3, step);
}

static void test_optimizers_one_step(void **state)
{
    (void)state;
    trn_optimizer o;
    memset(&o, 0, sizeof o);
    float g[3] = {0.5f, -2.0f, 0.0f};

    /* Ftrl, lr 0.1, l1 0.01, l2 0.02, power -0.5, accum 0.1 */
    o.type = TRN_OPT_FTRL;
    o.learning_rate = 0.1;
    o.l1 = 0.01;
    o.l2 = 0.02;
    o.lr_power = -0.5;
    float w[3] = {0.3f, -0.1f, 0.7f}, a[3] = {0.1f, 0.1f, 0.1f}, z[3] = {0, 0, 0};
    float w0[3];
    memcpy(w0, w, sizeof w);
    run_step(&o, w, g, a, z, 0);
    for (int k = 0; k < 2; k++) {
        double na = 0.1 + (double)g[k] * g[k];
        double zz = g[k] - (sqrt(na) - sqrt(0.1)) / 0.1 * w0[k];
        double quad = sqrt(na) / 0.1 + 2 * 0.02;
        double nw = fabs(zz) > 0.01 ? ((zz > 0 ? 0.01 : -0.01) - zz) / quad : 0.0;
        assert_true(fabs(w[k] - nw) < 1e-6);
        assert_true(fabs(a[k] - na) < 1e-6);
        assert_true(fabs(z[k] - zz) < 1e-6);
    }
    assert_true(w[2] == w0[2]); /* zero gradient: untouched */

    /* Adagrad lr 0.5 */
    o.type = TRN_OPT_ADAGRAD;
    o.learning_rate = 0.5;
    float w2[3] = {1, 1, 1}, a2[3] = {0.1f, 0.1f, 0.1f};
    run_step(&o, w2, g, a2, NULL, 0);
    for (int k = 0; k < 3; k++) {
        double na = 0.1 + (double)g[k] * g[k];
        assert_true(fabs(w2[k] - (1 - 0.5 * g[k] / sqrt(na))) < 1e-6);
    }

    /* Adam lr 0.01, step 0 -> t = 1 */
    o.type = TRN_OPT_ADAM;
    o.learning_rate = 0.01;
    o.beta1 = 0.9;
    o.beta2 = 0.999;
    o.epsilon = 1e-8;
    float w3[3] = {1, 1, 1}, m3[3] = {0, 0, 0}, v3[3] = {0, 0, 0};
    run_step(&o, w3, g, m3, v3, 0);
    for (int k = 0; k < 3; k++) {
        double m = 0.1 * g[k], v = 0.001 * g[k] * g[k];
        double lr_t = 0.01 * sqrt(1 - 0.999) / (1 - 0.9);
        assert_true(fabs(w3[k] - (1 - lr_t * m / (sqrt(v) + 1e-8))) < 1e-5);
    }

    /* SGD */
    o.type = TRN_OPT_SGD;
    o.learning_rate = 0.25;
    float w4[3] = {1, 1, 1};
    run_step(&o, w4, g, NULL, NULL, 0);
    assert_true(w4[0] == 1 - 0.125f && w4[1] == 1.5f && w4[2] == 1.0f);
}

static void test_rng_deterministic(void **state)
{
    (void)state;
    trn_rng a, b;
    trn_rng_seed(&a, 99);
    trn_rng_seed(&b, 99);
    for (int i = 0; i < 100; i++)
        assert_true(trn_rng_next(&a) == trn_rng_next(&b));
    double mean = 0, var = 0;
    for (int i = 0; i < 20000; i++) {
        double x = trn_rng_normal(&a);
        mean += x / 20000;
        var += x * x / 20000;
    }
    assert_true(fabs(mean) < 0.05 && fabs(var - 1) < 0.05);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_auc_matches_pair_counting),
        cmocka_unit_test(test_auc_pr_hand_example),
        cmocka_unit_test(test_binary_metrics),
        cmocka_unit_test(test_multiclass_and_regression_metrics),
        cmocka_unit_test(test_weighted_binary_by_hand),
        cmocka_unit_test(test_weights_one_and_two),
        cmocka_unit_test(test_regression_two_values),
        cmocka_unit_test(test_optimizers_one_step),
        cmocka_unit_test(test_rng_deterministic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
