/* test_metrics_mlabel.c — TF's MultiLabelHead numbers
 * (runtime/stats/rt_metrics_mlabel.c): the loss is the weighted batch mean of
 * each row's mean over the classes of -(y log p + (1 - y) log(1 - p)),
 * computed here by hand with p = 1 / (1 + exp(-z)); its gradient matches
 * central finite differences; a row's loss and gradient have the same bits
 * alone as in its batch; large logits stay finite; the probabilities are the
 * sigmoids; a row's labels are read from a delimited cell by vocabulary or
 * by class id, and unknown, empty and repeated names are refused by name;
 * auc and auc_precision_recall over the flattened (row, class) pairs equal
 * sklearn's roc_auc_score / average_precision_score of y.ravel(), p.ravel()
 * with each row's weight repeated per class (values below, computed once);
 * a CSV cell (a span) is read by a head's delimiter and vocabulary or ids,
 * each name trimmed under trim_strings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rt.h"

enum { N = 4, C = 3 };

static const float LOGITS[N * C] = {0.3f, -1.5f, 2.2f, -0.4f, 1.1f, 0.0f,
                                    3.0f, -2.0f, 0.5f, -0.1f, 0.2f, -0.9f};
static const float LABELS[N * C] = {1, 0, 1, 0, 0, 0, 1, 1, 1, 0, 1, 0};
static const float WEIGHTS[N] = {1.0f, 0.5f, 2.0f, 1.5f};

static double by_hand(const float *z)
{
    double s = 0;
    for (size_t i = 0; i < N; i++) {
        double l = 0;
        for (size_t j = 0; j < C; j++) {
            double p = 1.0 / (1.0 + exp(-(double)z[i * C + j])), y = LABELS[i * C + j];
            l += -(y * log(p) + (1 - y) * log(1 - p));
        }
        s += WEIGHTS[i] * l / C;
    }
    return s / N;
}

static void test_loss_by_hand(void **state)
{
    (void)state;
    double l = rt_metrics_mlabel_loss(C, LOGITS, LABELS, WEIGHTS, N, N, NULL);
    assert_true(fabs(l - by_hand(LOGITS)) < 1e-12 + 1e-10 * fabs(l));
    /* unweighted, one row: y = (1, 0, 1), z = (0.3, -1.5, 2.2) */
    double want = (log1p(exp(-0.3)) + log1p(exp(-1.5)) + log1p(exp(-2.2))) / 3;
    double got = rt_metrics_mlabel_loss(C, LOGITS, LABELS, NULL, 1, 1, NULL);
    assert_true(fabs(got - want) < 1e-7);
    assert_true(rt_metrics_mlabel_loss(C, LOGITS, LABELS, NULL, 0, 0, NULL) == 0.0);
}

static void test_gradient_finite_differences(void **state)
{
    (void)state;
    float d[N * C], z[N * C];
    rt_metrics_mlabel_loss(C, LOGITS, LABELS, WEIGHTS, N, N, d);
    for (size_t c = 0; c < N * C; c++) {
        const double eps = 1e-3;
        memcpy(z, LOGITS, sizeof z);
        z[c] = (float)(LOGITS[c] + eps);
        double up = by_hand(z);
        z[c] = (float)(LOGITS[c] - eps);
        double down = by_hand(z);
        double fd = (up - down) / ((double)(float)(LOGITS[c] + eps) -
                                   (double)(float)(LOGITS[c] - eps));
        if (fabs(fd - d[c]) > 1e-5 + 1e-3 * fabs(fd))
            fail_msg("logit %zu: gradient %g, finite differences %g", c, (double)d[c], fd);
    }
}

static void test_batch_invariance(void **state)
{
    (void)state;
    float d[N * C], d1[C];
    rt_metrics_mlabel_loss(C, LOGITS, LABELS, WEIGHTS, N, N, d);
    for (size_t i = 0; i < N; i++) {
        rt_metrics_mlabel_loss(C, LOGITS + i * C, LABELS + i * C, WEIGHTS + i, 1, N, d1);
        assert_memory_equal(d1, d + i * C, sizeof d1);
    }
    float p[N * C], p1[C];
    rt_metrics_mlabel_probabilities(C, LOGITS, N, p);
    for (size_t i = 0; i < N; i++) {
        rt_metrics_mlabel_probabilities(C, LOGITS + i * C, 1, p1);
        assert_memory_equal(p1, p + i * C, sizeof p1);
    }
}

static void test_large_logits_and_probabilities(void **state)
{
    (void)state;
    const float z[3] = {-200.0f, 200.0f, 0.0f}, y[3] = {1, 1, 0};
    float d[3], p[3];
    double l = rt_metrics_mlabel_loss(3, z, y, NULL, 1, 1, d);
    assert_true(isfinite(l));
    assert_true(fabs(l - (200.0 + log(2.0)) / 3) < 1e-9);
    assert_true(fabs(d[0] - (-1.0f / 3)) < 1e-7 && fabs(d[1]) < 1e-7 &&
                fabs(d[2] - (0.5f / 3)) < 1e-7);
    rt_metrics_mlabel_probabilities(3, z, 1, p);
    assert_true(p[0] >= 0.0f && p[0] < 1e-30f && p[1] == 1.0f && p[2] == 0.5f);
    float q[N * C];
    rt_metrics_mlabel_probabilities(C, LOGITS, N, q);
    for (size_t c = 0; c < N * C; c++)
        assert_true(fabs(q[c] - 1.0 / (1.0 + exp(-(double)LOGITS[c]))) < 1e-7);
}

static void test_parse(void **state)
{
    (void)state;
    const char *const vocab[3] = {">50K", "married", "hours>40"};
    float m[3];
    rt_err err = {{0}};
    assert_int_equal(rt_metrics_mlabel_parse("hours>40|>50K", '|', vocab, 3, m, &err), RT_OK);
    assert_true(m[0] == 1.0f && m[1] == 0.0f && m[2] == 1.0f);
    assert_int_equal(rt_metrics_mlabel_parse("", '|', vocab, 3, m, &err), RT_OK);
    assert_true(m[0] == 0.0f && m[1] == 0.0f && m[2] == 0.0f);
    assert_int_equal(rt_metrics_mlabel_parse("married", '|', vocab, 3, m, &err), RT_OK);
    assert_true(m[0] == 0.0f && m[1] == 1.0f && m[2] == 0.0f);
    assert_int_equal(rt_metrics_mlabel_parse("2 1", ' ', NULL, 3, m, &err), RT_OK);
    assert_true(m[0] == 0.0f && m[1] == 1.0f && m[2] == 1.0f);

    assert_int_equal(rt_metrics_mlabel_parse("married|single", '|', vocab, 3, m, &err),
                     RT_ERR_INVALID);
    assert_string_equal(err.msg, "label \"single\" is not one of the head's 3 classes "
                                 "(its label_vocabulary)");
    assert_int_equal(rt_metrics_mlabel_parse("married||>50K", '|', vocab, 3, m, &err),
                     RT_ERR_INVALID);
    assert_string_equal(err.msg, "label \"\" is not one of the head's 3 classes "
                                 "(its label_vocabulary)");
    assert_int_equal(rt_metrics_mlabel_parse(">50K|>50K", '|', vocab, 3, m, &err), RT_ERR_INVALID);
    assert_string_equal(err.msg, "label \">50K\" is listed twice");
    assert_int_equal(rt_metrics_mlabel_parse("3", '|', NULL, 3, m, &err), RT_ERR_INVALID);
    assert_string_equal(err.msg, "label \"3\" is not a class id in [0, 3)");
    assert_int_equal(rt_metrics_mlabel_parse("-1", '|', NULL, 3, m, &err), RT_ERR_INVALID);
    assert_int_equal(rt_metrics_mlabel_parse("1x", '|', NULL, 3, m, &err), RT_ERR_INVALID);
    assert_string_equal(err.msg, "label \"1x\" is not a class id in [0, 3)");
}

/* A CSV cell (a span, not NUL-terminated) read by a head: its delimiter
 * ("" is '|'), its vocabulary or ids, each name trimmed with trim. */
static void test_cell(void **state)
{
    (void)state;
    char *vocab[] = {"rich", "long_hours", "married"};
    Predictd__Head h;
    predictd__head__init(&h);
    h.type = PREDICTD__HEAD_TYPE__HEAD_MULTI_LABEL;
    h.n_classes = 3;
    h.n_label_vocabulary = 3;
    h.label_vocabulary = vocab;
    float m[3];
    rt_err err = {{0}};
    const char *row = "married|rich,next"; /* the cell is the first 12 bytes */
    assert_int_equal(rt_metrics_mlabel_cell(&h, 0, row, 12, m, &err), RT_OK);
    assert_true(m[0] == 1.0f && m[1] == 0.0f && m[2] == 1.0f);
    assert_int_equal(rt_metrics_mlabel_delimiter(&h), '|');
    assert_int_equal(rt_metrics_mlabel_cell(&h, 1, " rich | married ", 16, m, &err), RT_OK);
    assert_true(m[0] == 1.0f && m[1] == 0.0f && m[2] == 1.0f);
    /* untrimmed, " rich " is no class */
    assert_int_equal(rt_metrics_mlabel_cell(&h, 0, " rich ", 6, m, &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "label \" rich \" is not one of the head's 3 classes"));
    assert_int_equal(rt_metrics_mlabel_cell(&h, 1, "  ", 2, m, &err), RT_OK); /* no class */
    assert_true(m[0] == 0.0f && m[1] == 0.0f && m[2] == 0.0f);
    h.label_delimiter = ";";
    assert_int_equal(rt_metrics_mlabel_delimiter(&h), ';');
    assert_int_equal(rt_metrics_mlabel_cell(&h, 0, "long_hours;rich", 15, m, &err), RT_OK);
    assert_true(m[0] == 1.0f && m[1] == 1.0f && m[2] == 0.0f);
    assert_int_equal(rt_metrics_mlabel_cell(&h, 0, "rich|married", 12, m, &err),
                     RT_ERR_INVALID);
    /* without a vocabulary: class ids; a long cell (past the stack buffer) */
    h.n_label_vocabulary = 0;
    h.label_vocabulary = NULL;
    assert_int_equal(rt_metrics_mlabel_cell(&h, 0, "2;0", 3, m, &err), RT_OK);
    assert_true(m[0] == 1.0f && m[1] == 0.0f && m[2] == 1.0f);
    char *big = malloc(2000);
    memset(big, ' ', 2000);
    big[1999] = '1';
    assert_int_equal(rt_metrics_mlabel_cell(&h, 1, big, 2000, m, &err), RT_OK);
    assert_true(m[0] == 0.0f && m[1] == 1.0f && m[2] == 0.0f);
    free(big);
}

static void test_auc_flattened(void **state)
{
    (void)state;
    float p[N * C];
    rt_metrics_mlabel_probabilities(C, LOGITS, N, p);
    double auc = 0, pr = 0;
    rt_err err = {0};
    /* sklearn 1.2 (Debian python3-sklearn), the weights np.repeat(WEIGHTS, C) */
    assert_int_equal(rt_metrics_mlabel_auc(C, p, LABELS, WEIGHTS, N, &auc, &pr, &err), RT_OK);
    assert_true(fabs(auc - 0.7464114832535885) < 1e-12);
    assert_true(fabs(pr - 0.885702674518464) < 1e-12);
    assert_int_equal(rt_metrics_mlabel_auc(C, p, LABELS, NULL, N, &auc, &pr, &err), RT_OK);
    assert_true(fabs(auc - 0.75) < 1e-12);
    assert_true(fabs(pr - 0.8138888888888889) < 1e-12);
    /* no positive (row, class) pair: no ROC curve, NaN as rt_metrics_auc_roc */
    float one[C] = {0};
    assert_int_equal(rt_metrics_mlabel_auc(C, p, one, NULL, 1, &auc, &pr, &err), RT_OK);
    assert_true(isnan(auc));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loss_by_hand),
        cmocka_unit_test(test_gradient_finite_differences),
        cmocka_unit_test(test_batch_invariance),
        cmocka_unit_test(test_large_logits_and_probabilities),
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_auc_flattened),
        cmocka_unit_test(test_cell),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
