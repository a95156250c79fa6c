/* test_nodes.c — the custom graph's computing nodes: the forward
 * (runtime/model/rt_nodes.c) against plain double references, batch
 * invariance (a row alone has the bits it has in a batch), the canned
 * activations' bits equal rt_activate's, and every node kind's gradients
 * (trainer/trn_nodes.c) against central finite differences of the forward
 * itself, for every activation. The loss is L = sum c * y with random c, so
 * dL/dy = c. A coordinate whose difference quotients at h and h/2 disagree
 * straddles a kink (relu's 0, relu6's 6) and is skipped; at most 2% may be.
 * Prints the largest relative error seen (the report's number). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "trn_internal.h"

#define N 5 /* instances */
#define TOL 2e-2

static uint64_t rs = 0x9E3779B97F4A7C15u;
static double worst; /* largest relative error of any check */
static size_t checked, skipped;

static float urand(float lo, float hi)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return lo + (hi - lo) * (float)((double)(rs >> 11) / 9007199254740992.0);
}

static void fill(float *v, size_t n, float lo, float hi)
{
    for (size_t k = 0; k < n; k++)
        v[k] = urand(lo, hi);
}

/* L = sum c y for op's forward over xs. */
static double loss(const rt_node_op *op, float **xs, const float *c)
{
    size_t cnt = N * op->out;
    float *y = calloc(cnt, sizeof(float));
    rt_node_forward(op, (const float *const *)xs, N, NULL, y);
    double l = 0.0;
    for (size_t e = 0; e < cnt; e++)
        l += (double)c[e] * y[e];
    free(y);
    return l;
}

/* Checks analytic gradient g of L against finite differences in *v. */
static void fd_check(const rt_node_op *op, float **xs, const float *c, float *v, size_t cnt,
                     const float *g, const char *what)
{
    for (size_t k = 0; k < cnt; k++) {
        float keep = v[k];
        double h = 1e-2 * fmax(1.0, fabs(keep));
        double q[2];
        for (int t = 0; t < 2; t++) {
            double hh = t ? h / 2 : h;
            v[k] = (float)(keep + hh);
            double lp = loss(op, xs, c);
            v[k] = (float)(keep - hh);
            double lm = loss(op, xs, c);
            double dh = (double)(float)(keep + hh) - (double)(float)(keep - hh);
            q[t] = (lp - lm) / dh;
        }
        v[k] = keep;
        double scale = fmax(1.0, fmax(fabs(q[0]), fabs((double)g[k])));
        if (fabs(q[0] - q[1]) > TOL * scale) {
            skipped++; /* a kink between */
            continue;
        }
        double e = fabs(q[1] - (double)g[k]) / scale;
        if (e > worst)
            worst = e;
        checked++;
        if (e > TOL)
            fail_msg("%s[%zu]: analytic %.6g, numeric %.6g (act %d, kind %d)", what, k,
                     (double)g[k], q[1], (int)op->act, (int)op->kind);
    }
}

/* Runs the gradient check of op with inputs of op->in_width. */
static void grad_check(rt_node_op *op, float *kernel, float *bias, float *gamma, float *beta,
                       const float *mask)
{
    float *xs[4] = {0}, *dx[4] = {0};
    for (size_t k = 0; k < op->n_in; k++) {
        xs[k] = malloc(N * op->in_width[k] * sizeof(float));
        dx[k] = calloc(N * op->in_width[k], sizeof(float));
        fill(xs[k], N * op->in_width[k], -2.0f, 2.0f);
    }
    size_t cnt = N * op->out;
    float *c = malloc(cnt * sizeof(float)), *y = malloc(cnt * sizeof(float));
    float *pre = malloc(cnt * sizeof(float));
    fill(c, cnt, -1.0f, 1.0f);
    rt_node_forward(op, (const float *const *)xs, N, pre, y);
    size_t in0 = op->n_in ? op->in_width[0] : 0;
    float *dk = kernel ? calloc(in0 * op->out, sizeof(float)) : NULL;
    float *db = bias ? calloc(op->out, sizeof(float)) : NULL;
    float *dg = gamma ? calloc(op->out, sizeof(float)) : NULL;
    float *dbe = beta ? calloc(op->out, sizeof(float)) : NULL;
    trn_node_io io = {.x = (const float *const *)xs, .pre = pre, .y = y, .dy = c, .mask = mask,
                      .dx = dx, .dkernel = dk, .dbias = db, .dgamma = dg, .dbeta = dbe};
    rt_err err;
    assert_int_equal(trn_node_backward(op, &io, N, &err), RT_OK);
    if (mask) /* the forward with the mask: dropout's training output */
        return;
    for (size_t k = 0; k < op->n_in; k++)
        fd_check(op, xs, c, xs[k], N * op->in_width[k], dx[k], "dx");
    if (kernel)
        fd_check(op, xs, c, kernel, in0 * op->out, dk, "dkernel");
    if (bias)
        fd_check(op, xs, c, bias, op->out, db, "dbias");
    if (gamma)
        fd_check(op, xs, c, gamma, op->out, dg, "dgamma");
    if (beta)
        fd_check(op, xs, c, beta, op->out, dbe, "dbeta");
    for (size_t k = 0; k < op->n_in; k++) {
        free(xs[k]);
        free(dx[k]);
    }
    free(c);
    free(y);
    free(pre);
    free(dk);
    free(db);
    free(dg);
    free(dbe);
}

static const Predictd__Activation all_acts[] = {
    PREDICTD__ACTIVATION__ACT_RELU,     PREDICTD__ACTIVATION__ACT_LINEAR,
    PREDICTD__ACTIVATION__ACT_TANH,     PREDICTD__ACTIVATION__ACT_SIGMOID,
    PREDICTD__ACTIVATION__ACT_ELU,      PREDICTD__ACTIVATION__ACT_RELU6,
    PREDICTD__ACTIVATION__ACT_SELU,     PREDICTD__ACTIVATION__ACT_SOFTPLUS,
    PREDICTD__ACTIVATION__ACT_LEAKY_RELU, PREDICTD__ACTIVATION__ACT_GELU,
    PREDICTD__ACTIVATION__ACT_SWISH,
};
#define N_ACTS (sizeof all_acts / sizeof all_acts[0])

static double ref_act(Predictd__Activation a, double x)
{
    switch (a) {
    case PREDICTD__ACTIVATION__ACT_RELU: return x > 0 ? x : 0;
    case PREDICTD__ACTIVATION__ACT_TANH: return tanh(x);
    case PREDICTD__ACTIVATION__ACT_SIGMOID: return 1 / (1 + exp(-x));
    case PREDICTD__ACTIVATION__ACT_ELU: return x > 0 ? x : exp(x) - 1;
    case PREDICTD__ACTIVATION__ACT_RELU6: return x < 0 ? 0 : x > 6 ? 6 : x;
    case PREDICTD__ACTIVATION__ACT_SELU:
        return 1.0507009873554805 * (x > 0 ? x : 1.6732632423543772 * (exp(x) - 1));
    case PREDICTD__ACTIVATION__ACT_SOFTPLUS: return log1p(exp(x));
    case PREDICTD__ACTIVATION__ACT_LEAKY_RELU: return x > 0 ? x : 0.2 * x;
    case PREDICTD__ACTIVATION__ACT_GELU: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    case PREDICTD__ACTIVATION__ACT_SWISH: return x / (1 + exp(-x));
    default: return x;
    }
}

/* Every activation against a double reference, over [-30, 30]; no NaN or
 * Inf at +-1000; the canned five have rt_activate's bits. */
static void test_activations(void **state)
{
    (void)state;
    enum { M = 2001 };
    static float x[M], y[M], z[M];
    for (size_t a = 0; a < N_ACTS; a++) {
        for (size_t k = 0; k < M; k++)
            x[k] = -30.0f + 60.0f * (float)k / (M - 1);
        memcpy(y, x, sizeof x);
        rt_node_activate(all_acts[a], 0.0f, y, M);
        for (size_t k = 0; k < M; k++) {
            double r = ref_act(all_acts[a], x[k]);
            assert_true(fabs(y[k] - r) <= 1e-5 * fmax(1.0, fabs(r)));
        }
        if (all_acts[a] <= PREDICTD__ACTIVATION__ACT_ELU) {
            memcpy(z, x, sizeof x);
            rt_activate(all_acts[a], z, M);
            assert_memory_equal(y, z, sizeof y);
        }
        float big[2] = {1000.0f, -1000.0f};
        rt_node_activate(all_acts[a], 0.0f, big, 2);
        assert_true(isfinite(big[0]) && isfinite(big[1]));
    }
}

/* Dense, activation and the others: a row alone has its bits in a batch. */
static void test_batch_invariance(void **state)
{
    (void)state;
    enum { B = 37, IN = 19, OUT = 13 };
    static float x[B * IN], kern[IN * OUT], bias[OUT], y[B * OUT], y1[OUT];
    fill(x, B * IN, -2, 2);
    for (size_t k = 0; k < B * IN; k += 3)
        x[k] = 0.0f; /* zeros the kernel skips */
    fill(kern, IN * OUT, -1, 1);
    fill(bias, OUT, -1, 1);
    size_t w = IN;
    for (size_t a = 0; a < N_ACTS; a++) {
        rt_node_op op = {.kind = PREDICTD__NODE_KIND__NODE_DENSE, .n_in = 1, .in_width = &w,
                         .out = OUT, .act = all_acts[a], .kernel = kern, .bias = bias};
        rt_err err;
        assert_int_equal(rt_node_check(&op, "d", &err), RT_OK);
        const float *xp[1] = {x};
        rt_node_forward(&op, xp, B, NULL, y);
        for (size_t i = 0; i < B; i++) {
            const float *xi[1] = {x + i * IN};
            rt_node_forward(&op, xi, 1, NULL, y1);
            assert_memory_equal(y1, y + i * OUT, sizeof y1);
            /* and the double reference */
            for (size_t j = 0; j < OUT; j++) {
                double s = bias[j];
                for (size_t k = 0; k < IN; k++)
                    s += (double)x[i * IN + k] * kern[k * OUT + j];
                double r = ref_act(all_acts[a], s);
                assert_true(fabs(y1[j] - r) <= 1e-4 * fmax(1.0, fabs(r)));
            }
        }
    }
}

/* Forward values of concat, add, multiply, dropout, batch_norm. */
static void test_forward_values(void **state)
{
    (void)state;
    float a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40}, c2[2] = {-1, -2}, y[8];
    const float *ab[2] = {a, b};
    size_t w2[2] = {2, 2};
    rt_node_op add = {.kind = PREDICTD__NODE_KIND__NODE_ADD, .n_in = 2, .in_width = w2, .out = 2};
    rt_err err;
    assert_int_equal(rt_node_check(&add, "add", &err), RT_OK);
    rt_node_forward(&add, ab, 2, NULL, y);
    assert_true(y[0] == 11 && y[1] == 22 && y[2] == 33 && y[3] == 44);
    add.kind = PREDICTD__NODE_KIND__NODE_MULTIPLY;
    rt_node_forward(&add, ab, 2, NULL, y);
    assert_true(y[0] == 10 && y[1] == 40 && y[2] == 90 && y[3] == 160);
    size_t w3[2] = {2, 1};
    const float *ac[2] = {a, c2};
    rt_node_op cat = {.kind = PREDICTD__NODE_KIND__NODE_CONCAT, .n_in = 2, .in_width = w3, .out = 3};
    assert_int_equal(rt_node_check(&cat, "cat", &err), RT_OK);
    rt_node_forward(&cat, ac, 2, NULL, y);
    assert_true(y[0] == 1 && y[1] == 2 && y[2] == -1 && y[3] == 3 && y[4] == 4 && y[5] == -2);
    rt_node_op drop = {.kind = PREDICTD__NODE_KIND__NODE_DROPOUT, .n_in = 1, .in_width = w2,
                       .out = 2, .rate = 0.5f};
    assert_int_equal(rt_node_check(&drop, "drop", &err), RT_OK);
    rt_node_forward(&drop, ab, 2, NULL, y);
    assert_memory_equal(y, a, sizeof a);
    float g[2] = {2, 1}, be[2] = {1, 0}, mu[2] = {1, 2}, var[2] = {3.999f, 0.999f};
    rt_node_op bn = {.kind = PREDICTD__NODE_KIND__NODE_BATCH_NORM, .n_in = 1, .in_width = w2,
                     .out = 2, .bn_gamma = g, .bn_beta = be, .bn_mean = mu, .bn_var = var,
                     .bn_eps = 0.001f};
    assert_int_equal(rt_node_check(&bn, "bn", &err), RT_OK);
    rt_node_forward(&bn, ab, 2, NULL, y);
    assert_true(fabsf(y[0] - 1.0f) < 1e-6f && fabsf(y[1] - 0.0f) < 1e-6f);
    assert_true(fabsf(y[2] - 3.0f) < 1e-6f && fabsf(y[3] - 2.0f) < 1e-6f);
}

/* rt_node_check refuses what the nodes cannot compute, naming the node. */
static void test_check_refusals(void **state)
{
    (void)state;
    rt_err err;
    size_t w[3] = {2, 3, 2};
    float k = 0;
    rt_node_op op = {.kind = PREDICTD__NODE_KIND__NODE_ADD, .n_in = 2, .in_width = w, .out = 2};
    assert_int_equal(rt_node_check(&op, "res", &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "node res: input 1 has width 3"));
    op.kind = PREDICTD__NODE_KIND__NODE_CONCAT;
    op.out = 4;
    assert_int_equal(rt_node_check(&op, "cat", &err), RT_ERR_INVALID);
    op = (rt_node_op){.kind = PREDICTD__NODE_KIND__NODE_DENSE, .n_in = 1, .in_width = w,
                      .out = 0, .kernel = &k, .bias = &k};
    assert_int_equal(rt_node_check(&op, "h", &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "node h: width 0"));
    op.out = 3;
    op.act = (Predictd__Activation)99;
    assert_int_equal(rt_node_check(&op, "h", &err), RT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "unknown activation"));
    op = (rt_node_op){.kind = PREDICTD__NODE_KIND__NODE_MULTIPLY, .n_in = 1, .in_width = w,
                      .out = 2};
    assert_int_equal(rt_node_check(&op, "m", &err), RT_ERR_INVALID);
    op.kind = PREDICTD__NODE_KIND__NODE_INPUT;
    assert_int_equal(rt_node_check(&op, "in", &err), RT_ERR_UNSUPPORTED);
}

/* Dense with every activation: dx, dkernel, dbias. */
static void test_grad_dense(void **state)
{
    (void)state;
    enum { IN = 4, OUT = 3 };
    float kern[IN * OUT], bias[OUT];
    size_t w = IN;
    for (size_t a = 0; a < N_ACTS; a++) {
        fill(kern, IN * OUT, -1, 1);
        fill(bias, OUT, -0.5f, 0.5f);
        rt_node_op op = {.kind = PREDICTD__NODE_KIND__NODE_DENSE, .n_in = 1, .in_width = &w,
                         .out = OUT, .act = all_acts[a], .kernel = kern, .bias = bias};
        grad_check(&op, kern, bias, NULL, NULL, NULL);
    }
}

/* The activation node alone, every activation (leaky_relu at 0.1 too). */
static void test_grad_activation(void **state)
{
    (void)state;
    size_t w = 6;
    for (size_t a = 0; a < N_ACTS; a++) {
        rt_node_op op = {.kind = PREDICTD__NODE_KIND__NODE_ACTIVATION, .n_in = 1, .in_width = &w,
                         .out = 6, .act = all_acts[a]};
        grad_check(&op, NULL, NULL, NULL, NULL, NULL);
    }
    rt_node_op lk = {.kind = PREDICTD__NODE_KIND__NODE_ACTIVATION, .n_in = 1, .in_width = &w,
                     .out = 6, .act = PREDICTD__ACTIVATION__ACT_LEAKY_RELU, .alpha = 0.1f};
    grad_check(&lk, NULL, NULL, NULL, NULL, NULL);
}

static void test_grad_combine(void **state)
{
    (void)state;
    size_t w3[3] = {3, 3, 3}, wc[3] = {2, 4, 1};
    rt_node_op add = {.kind = PREDICTD__NODE_KIND__NODE_ADD, .n_in = 3, .in_width = w3, .out = 3};
    grad_check(&add, NULL, NULL, NULL, NULL, NULL);
    rt_node_op mul = {.kind = PREDICTD__NODE_KIND__NODE_MULTIPLY, .n_in = 3, .in_width = w3,
                      .out = 3};
    grad_check(&mul, NULL, NULL, NULL, NULL, NULL);
    rt_node_op cat = {.kind = PREDICTD__NODE_KIND__NODE_CONCAT, .n_in = 3, .in_width = wc, .out = 7};
    grad_check(&cat, NULL, NULL, NULL, NULL, NULL);
}

static void test_grad_batch_norm(void **state)
{
    (void)state;
    float g[4], be[4], mu[4], var[4];
    fill(g, 4, 0.5f, 2);
    fill(be, 4, -1, 1);
    fill(mu, 4, -1, 1);
    fill(var, 4, 0.5f, 3);
    size_t w = 4;
    rt_node_op bn = {.kind = PREDICTD__NODE_KIND__NODE_BATCH_NORM, .n_in = 1, .in_width = &w,
                     .out = 4, .bn_gamma = g, .bn_beta = be, .bn_mean = mu, .bn_var = var,
                     .bn_eps = 0.001f};
    grad_check(&bn, NULL, NULL, g, be, NULL);
}

/* Dropout: serving is the identity (its gradient checked by differences);
 * training multiplies by the mask, and so does the gradient. */
static void test_grad_dropout(void **state)
{
    (void)state;
    size_t w = 8;
    rt_node_op op = {.kind = PREDICTD__NODE_KIND__NODE_DROPOUT, .n_in = 1, .in_width = &w,
                     .out = 8, .rate = 0.25f};
    grad_check(&op, NULL, NULL, NULL, NULL, NULL);
    rt_rng r;
    rt_rng_seed(&r, 7);
    float mask[N * 8], x[N * 8], y[N * 8], dy[N * 8], dx[N * 8] = {0};
    trn_dropout_mask(&r, 0.25f, mask, N * 8);
    size_t zeros = 0;
    for (size_t k = 0; k < N * 8; k++) {
        assert_true(mask[k] == 0.0f || mask[k] == 1.0f / 0.75f);
        zeros += mask[k] == 0.0f;
    }
    assert_true(zeros > 0 && zeros < N * 8);
    fill(x, N * 8, -1, 1);
    fill(dy, N * 8, -1, 1);
    trn_dropout_apply(mask, x, y, N * 8);
    const float *xs[1] = {x};
    float *dxs[1] = {dx};
    trn_node_io io = {.x = xs, .y = y, .dy = dy, .mask = mask, .dx = dxs};
    rt_err err;
    assert_int_equal(trn_node_backward(&op, &io, N, &err), RT_OK);
    for (size_t k = 0; k < N * 8; k++) {
        assert_true(y[k] == x[k] * mask[k]);
        assert_true(dx[k] == dy[k] * mask[k]);
    }
}

static int report(void **state)
{
    (void)state;
    printf("# gradient checks: %zu coordinates, %zu skipped at kinks, max relative error %.3g\n",
           checked, skipped, worst);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_activations),     cmocka_unit_test(test_batch_invariance),
        cmocka_unit_test(test_forward_values),  cmocka_unit_test(test_check_refusals),
        cmocka_unit_test(test_grad_dense),      cmocka_unit_test(test_grad_activation),
        cmocka_unit_test(test_grad_combine),    cmocka_unit_test(test_grad_batch_norm),
        cmocka_unit_test(test_grad_dropout),
    };
    int rc = cmocka_run_group_tests(tests, NULL, report);
    if (skipped * 50 > checked + skipped) {
        printf("too many coordinates skipped at kinks: %zu of %zu\n", skipped, checked + skipped);
        return 1;
    }
    return rc;
}
