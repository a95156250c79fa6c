/* test_metrics_multi.c — the training loss of several heads (TF's
 * MultiHead, runtime/stats/rt_metrics_multi.c): the total is the
 * loss_weight-weighted sum of each head's loss, computed here by hand (the
 * logistic loss of a binary head, the huber loss of a regression head, the
 * softmax cross-entropy of a 3-class head); its gradient matches central
 * finite differences of the total across the heads' columns; one head at
 * weight 1 gives rt_metrics_head_loss_with's loss and gradient bit for bit;
 * a head outside the rows is refused; a multi-label head among them reads
 * its n_classes multi-hot label values (by hand and finite differences).
 * Each head's own example weights (the trainer's n x n_heads layout,
 * weight_stride, a 0 among them), loss reduction SUM and a poisson head:
 * the total by hand and its gradient by finite differences. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rt.h"

enum { N = 5, LD = 5, LW = 3 }; /* logits: binary | huber | 3 classes; labels: 1 | 1 | 1 */

static const float LOGITS[N * LD] = {
    0.3f,  1.5f,  0.2f,  -0.4f, 1.1f,  -1.2f, -0.7f, 0.9f, 0.1f, -0.3f,
    2.0f,  3.0f,  -1.0f, 0.5f,  0.0f,  -0.1f, 0.2f,  0.3f, 0.6f, -0.8f,
    0.8f,  -2.5f, 1.4f,  1.2f,  0.4f,
};
static const float LABELS[N * LW] = {
    1, 0.5f, 2, 0, -0.2f, 0, 1, 0.1f, 1, 0, 0.6f, 2, 1, -1.0f, 0,
};
static const float WEIGHTS[N] = {1.0f, 0.5f, 2.0f, 1.5f, 0.25f};

static void heads3(rt_head_slice h[3])
{
    memset(h, 0, 3 * sizeof *h);
    h[0] = (rt_head_slice){.head = PREDICTD__HEAD_TYPE__HEAD_BINARY, .off = 0, .ld = 1,
                           .label_off = 0, .loss_weight = 0.7, .weights = WEIGHTS};
    h[1] = (rt_head_slice){.head = PREDICTD__HEAD_TYPE__HEAD_REGRESSION,
                           .loss = {RT_LOSS_HUBER, 0.5}, .off = 1, .ld = 1, .label_off = 1,
                           .loss_weight = 2.0};
    h[2] = (rt_head_slice){.head = PREDICTD__HEAD_TYPE__HEAD_MULTI_CLASS, .off = 2, .ld = 3,
                           .label_off = 2, .loss_weight = 1.0};
}

/* The total by hand: each head's mean example loss (weighted: sum w l / n). */
static double by_hand(const float *z)
{
    double lb = 0, lr = 0, lm = 0;
    for (size_t i = 0; i < N; i++) {
        const float *r = z + i * LD, *y = LABELS + i * LW;
        double x = r[0], p = 1.0 / (1.0 + exp(-x));
        lb += WEIGHTS[i] * -(y[0] * log(p) + (1 - y[0]) * log(1 - p));
        double e = fabs((double)r[1] - y[1]);
        lr += e <= 0.5 ? e * e / 2 : 0.5 * (e - 0.25);
        double s = exp(r[2]) + exp(r[3]) + exp(r[4]);
        lm += log(s) - r[2 + (size_t)y[2]];
    }
    return 0.7 * lb / N + 2.0 * lr / N + lm / N;
}

static void test_total_by_hand(void **state)
{
    (void)state;
    rt_head_slice h[3];
    heads3(h);
    double total = 0;
    assert_int_equal(rt_metrics_multi_loss(h, 3, LD, LW, LOGITS, LABELS, N, N, NULL, &total),
                     RT_OK);
    assert_true(fabs(total - by_hand(LOGITS)) < 1e-9 * fabs(total) + 1e-12);
}

static void test_gradient_finite_differences(void **state)
{
    (void)state;
    rt_head_slice h[3];
    heads3(h);
    float d[N * LD];
    double total = 0;
    assert_int_equal(rt_metrics_multi_loss(h, 3, LD, LW, LOGITS, LABELS, N, N, d, &total),
                     RT_OK);
    float z[N * LD];
    for (size_t c = 0; c < N * LD; c++) {
        const double eps = 1e-3;
        memcpy(z, LOGITS, sizeof z);
        z[c] = (float)(LOGITS[c] + eps);
        double up = by_hand(z);
        z[c] = (float)(LOGITS[c] - eps);
        double down = by_hand(z);
        double fd = (up - down) / ((double)(float)(LOGITS[c] + eps) -
                                   (double)(float)(LOGITS[c] - eps));
        if (fabs(fd - d[c]) > 1e-4 + 1e-3 * fabs(fd))
            fail_msg("logit %zu (head column %zu): gradient %g, finite differences %g", c,
                     c % LD, (double)d[c], fd);
    }
}

static void test_one_head_is_the_head_loss(void **state)
{
    (void)state;
    rt_head_slice h = {.head = PREDICTD__HEAD_TYPE__HEAD_MULTI_CLASS, .off = 0, .ld = 3,
                       .label_off = 0, .loss_weight = 1.0, .weights = WEIGHTS};
    float z[N * 3], y[N], d1[N * 3], d2[N * 3];
    for (size_t i = 0; i < N; i++) {
        memcpy(z + i * 3, LOGITS + i * LD + 2, 3 * sizeof *z);
        y[i] = LABELS[i * LW + 2];
    }
    double total = 0;
    assert_int_equal(rt_metrics_multi_loss(&h, 1, 3, 1, z, y, N, 7, d1, &total), RT_OK);
    double want = rt_metrics_head_loss_with(h.head, &h.loss, 3, z, y, WEIGHTS, N, 7, d2);
    assert_memory_equal(&total, &want, sizeof total);
    assert_memory_equal(d1, d2, sizeof d1);
}

/* Head k's weight of row i at HW[i * 3 + k]: binary, poisson, 3 classes. */
static const float HW[N * 3] = {
    1.0f, 2.0f, 0.0f, 0.0f, 1.0f, 0.5f, 2.0f, 0.0f, 1.5f, 1.5f, 1.0f, 1.0f, 0.25f, 3.0f, 2.0f,
};

static void heads_own(rt_head_slice h[3])
{
    heads3(h);
    for (size_t k = 0; k < 3; k++) {
        h[k].weights = HW + k;
        h[k].weight_stride = 3;
    }
    h[1].loss = (rt_loss){RT_LOSS_POISSON, 0.0};
    h[0].reduce_sum = h[1].reduce_sum = 1; /* the 3-class head SUM_OVER_BATCH_SIZE */
}

/* The poisson labels: 4 |y| (counts, some over 1: Stirling's term). */
static double count_of(float y)
{
    return 4.0 * fabs((double)y);
}

/* By hand: binary sum_i w l, poisson sum_i w (exp(z) - y z + Stirling's
 * log(y!) for y > 1, TF's compute_full_loss), 3 classes sum_i w l / n. */
static double by_hand_own(const float *z)
{
    double lb = 0, lp = 0, lm = 0;
    for (size_t i = 0; i < N; i++) {
        const float *r = z + i * LD, *y = LABELS + i * LW;
        const float *w = HW + i * 3;
        double x = r[0], p = 1.0 / (1.0 + exp(-x));
        lb += w[0] * -(y[0] * log(p) + (1 - y[0]) * log(1 - p));
        double c = count_of(y[1]);
        double st = c > 1 ? c * log(c) - c + 0.5 * log(2 * M_PI * c) : 0.0;
        lp += w[1] * (exp(r[1]) - c * r[1] + st);
        double s = exp(r[2]) + exp(r[3]) + exp(r[4]);
        lm += w[2] * (log(s) - r[2 + (size_t)y[2]]);
    }
    return 0.7 * lb + 2.0 * lp + lm / N;
}

static void test_own_weights_sum_poisson(void **state)
{
    (void)state;
    rt_head_slice h[3];
    heads_own(h);
    float y[N * LW], d[N * LD], z[N * LD];
    memcpy(y, LABELS, sizeof y);
    for (size_t i = 0; i < N; i++)
        y[i * LW + 1] = (float)count_of(y[i * LW + 1]);
    double total = 0;
    assert_int_equal(rt_metrics_multi_loss(h, 3, LD, LW, LOGITS, y, N, N, d, &total), RT_OK);
    double want = by_hand_own(LOGITS);
    if (fabs(total - want) > 1e-9 * fabs(want))
        fail_msg("total %.12g, by hand %.12g", total, want);
    for (size_t c = 0; c < N * LD; c++) {
        const double eps = 1e-3;
        memcpy(z, LOGITS, sizeof z);
        z[c] = (float)(LOGITS[c] + eps);
        double up = by_hand_own(z);
        z[c] = (float)(LOGITS[c] - eps);
        double down = by_hand_own(z);
        double fd = (up - down) / ((double)(float)(LOGITS[c] + eps) -
                                   (double)(float)(LOGITS[c] - eps));
        if (fabs(fd - d[c]) > 1e-4 + 1e-3 * fabs(fd))
            fail_msg("logit %zu (head column %zu): gradient %g, finite differences %g", c,
                     c % LD, (double)d[c], fd);
        if (HW[(c / LD) * 3 + (c % LD < 2 ? c % LD : 2)] == 0.0f && d[c] != 0.0f)
            fail_msg("logit %zu: a weight 0 row has gradient %g", c, (double)d[c]);
    }
}

/* A binary head (column 0, label 0) and a 3-class multi-label head (columns
 * 1..3, labels 1..3: its multi-hot values), weighted 0.5 and 2: the total by
 * hand (the multi-label loss the mean over its classes of the logistic
 * loss, with the rows' weights) and its gradient by finite differences. */
static const float ML_LABELS[N * 4] = {
    1, 1, 0, 1, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 1, 0, 1, 1, 0, 0,
};

static double ml_by_hand(const float *z)
{
    double lb = 0, lm = 0;
    for (size_t i = 0; i < N; i++) {
        const float *r = z + i * LD, *y = ML_LABELS + i * 4;
        for (size_t j = 0; j < 4; j++) {
            double p = 1.0 / (1.0 + exp(-(double)r[j]));
            double l = -(y[j] * log(p) + (1 - y[j]) * log(1 - p));
            if (j == 0)
                lb += l;
            else
                lm += WEIGHTS[i] * l / 3.0;
        }
    }
    return 0.5 * lb / N + 2.0 * lm / N;
}

static void test_multi_label_among_heads(void **state)
{
    (void)state;
    rt_head_slice h[2] = {
        {.head = PREDICTD__HEAD_TYPE__HEAD_BINARY, .off = 0, .ld = 1, .label_off = 0,
         .loss_weight = 0.5},
        {.head = PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL, .off = 1, .ld = 3, .label_off = 1,
         .loss_weight = 2.0, .weights = WEIGHTS},
    };
    float d[N * LD];
    double total = 0;
    /* rows of LD logits, the last column no head's (its gradient stays untouched) */
    for (size_t c = 0; c < N * LD; c++)
        d[c] = 7.0f;
    assert_int_equal(rt_metrics_multi_loss(h, 2, LD, 4, LOGITS, ML_LABELS, N, N, d, &total),
                     RT_OK);
    assert_true(fabs(total - ml_by_hand(LOGITS)) < 1e-9 * fabs(total) + 1e-12);
    float z[N * LD];
    for (size_t c = 0; c < N * LD; c++) {
        if (c % LD == 4) {
            assert_true(d[c] == 7.0f);
            continue;
        }
        const double eps = 1e-3;
        memcpy(z, LOGITS, sizeof z);
        z[c] = (float)(LOGITS[c] + eps);
        double up = ml_by_hand(z);
        z[c] = (float)(LOGITS[c] - eps);
        double down = ml_by_hand(z);
        double fd = (up - down) / ((double)(float)(LOGITS[c] + eps) -
                                   (double)(float)(LOGITS[c] - eps));
        if (fabs(fd - d[c]) > 1e-4 + 1e-3 * fabs(fd))
            fail_msg("logit %zu: gradient %g, finite differences %g", c, (double)d[c], fd);
    }
    /* loss_reduction SUM: a multi-label row's loss (its classes' mean) summed
     * over the batch, n times the mean, not n x n_classes (TF's
     * MultiLabelHead); the binary head's stays the mean */
    h[1].reduce_sum = 1;
    double mean = total;
    assert_int_equal(rt_metrics_multi_loss(h, 2, LD, 4, LOGITS, ML_LABELS, N, N, NULL, &total),
                     RT_OK);
    h[1].loss_weight = 0.0; /* the binary head alone */
    double only_b = 0.0;
    assert_int_equal(rt_metrics_multi_loss(h, 2, LD, 4, LOGITS, ML_LABELS, N, N, NULL, &only_b),
                     RT_OK);
    double want = only_b + (double)N * (mean - only_b);
    if (fabs(total - want) > 1e-9 * fabs(want))
        fail_msg("SUM multi-label total %.12g, want %.12g", total, want);
    h[1].loss_weight = 2.0;
    h[1].reduce_sum = 0;
    /* its labels past the rows' 4 values: refused */
    h[1].label_off = 2;
    assert_int_equal(rt_metrics_multi_loss(h, 2, LD, 4, LOGITS, ML_LABELS, N, N, NULL, &total),
                     RT_ERR_INVALID);
}

static void test_refusals(void **state)
{
    (void)state;
    rt_head_slice h[3];
    heads3(h);
    double total = 0;
    h[2].off = 3; /* 3 classes from column 3 of 5 */
    assert_int_equal(rt_metrics_multi_loss(h, 3, LD, LW, LOGITS, LABELS, N, N, NULL, &total),
                     RT_ERR_INVALID);
    heads3(h);
    h[1].label_off = 3;
    assert_int_equal(rt_metrics_multi_loss(h, 3, LD, LW, LOGITS, LABELS, N, N, NULL, &total),
                     RT_ERR_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_total_by_hand),
        cmocka_unit_test(test_gradient_finite_differences),
        cmocka_unit_test(test_one_head_is_the_head_loss),
        cmocka_unit_test(test_own_weights_sum_poisson),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_multi_label_among_heads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
