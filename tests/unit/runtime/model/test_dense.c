/* test_dense.c — the dense layer kernel (runtime/model/rt_dense.c) gives every row
 * the bits of an independent reference, whatever it is batched with and at
 * every instruction set this CPU runs.
 *
 * The reference is a plain loop that skips nothing: y = (b + 0), then
 * y += w[k][j] * x[k] for every k in order, products and sums rounded to
 * float. The kernel skips zero inputs and blocks rows by four; its bits must
 * equal the reference's for rows alone, in whole batches of every size
 * 1..64 and 1000, in random groupings, with inputs full of zeros, -0, NaN
 * and Inf, and biases of -0. A reordered sum, a fused multiply-add or a
 * skipped zero that changed a sign would fail here (NaNs compare equal to
 * each other whatever their sign and payload: see same_float). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rt_serve_internal.h"
#include "rt_data_internal.h"

static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static float unit(uint64_t *s) /* in [-1, 1) */
{
    return (float)((double)(next(s) >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* Inputs as a DNN sees them: one-hot blocks, ReLU zeros, -0, some values
 * of every magnitude, an occasional NaN or Inf when special is set. */
static void fill_inputs(uint64_t *s, float *x, size_t n, int special)
{
    for (size_t k = 0; k < n; k++) {
        uint64_t r = next(s) % 16;
        if (r < 6)
            x[k] = 0.0f;
        else if (r == 6)
            x[k] = -0.0f;
        else if (r == 7)
            x[k] = 1.0f;
        else if (r == 8)
            x[k] = unit(s) * 1e-30f;
        else if (r == 9)
            x[k] = unit(s) * 1e20f;
        else
            x[k] = unit(s) * 3.0f;
        if (special && next(s) % 97 == 0)
            x[k] = next(s) % 2 ? NAN : -INFINITY;
    }
}

static void reference(const float *x, size_t m, size_t in, const float *w, const float *b,
                      size_t out, float *y)
{
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < out; j++) {
            float a = b[j] + 0.0f;
            for (size_t k = 0; k < in; k++) {
                float p = w[k * out + j] * x[i * in + k];
                a = a + p;
            }
            y[i * out + j] = a;
        }
}

typedef struct layer {
    size_t in, out;
    float *w, *b;
} layer;

static layer make_layer(uint64_t *s, size_t in, size_t out)
{
    layer L = {in, out, malloc((in * out + 1) * sizeof(float)),
               malloc((out + 1) * sizeof(float))};
    assert_non_null(L.w);
    assert_non_null(L.b);
    for (size_t q = 0; q < in * out; q++)
        L.w[q] = next(s) % 11 == 0 ? -0.0f : unit(s);
    for (size_t j = 0; j < out; j++)
        L.b[j] = next(s) % 5 == 0 ? -0.0f : unit(s);
    return L;
}

static void free_layer(layer *L)
{
    free(L->w);
    free(L->b);
}

/* Equal bits, or both NaN: which NaN an invalid sum yields (its sign and
 * payload) depends on the order the compiler puts an addition's operands
 * in, and every NaN is answered as NaN. */
static int same_float(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b));
}

static void assert_rows_equal(const float *got, const float *want, size_t rows, size_t out,
                              const char *what, int isa)
{
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < out; j++)
            if (!same_float(got[i * out + j], want[i * out + j]))
                fail_msg("%s, isa %d: row %zu output %zu: %a, reference %a", what, isa, i, j,
                         (double)got[i * out + j], (double)want[i * out + j]);
}

/* Every way of running the batch x (m rows) gives the reference's bits. */
static void check_layer(uint64_t *s, const layer *L, const float *x, size_t m)
{
    float *want = malloc((m * L->out + 1) * sizeof(float));
    float *got = malloc((m * L->out + 1) * sizeof(float));
    assert_non_null(want);
    assert_non_null(got);
    reference(x, m, L->in, L->w, L->b, L->out, want);
    for (int isa = RT_DENSE_BASE; isa <= (int)rt_dense_best_isa(); isa++) {
        /* the whole batch */
        memset(got, 0x7f, m * L->out * sizeof(float));
        rt_dense_rows_isa((rt_dense_isa)isa, x, m, L->in, L->w, L->b, L->out, got);
        assert_rows_equal(got, want, m, L->out, "whole batch", isa);
        /* each row alone */
        for (size_t i = 0; i < m; i++)
            rt_dense_rows_isa((rt_dense_isa)isa, x + i * L->in, 1, L->in, L->w, L->b, L->out,
                              got + i * L->out);
        assert_rows_equal(got, want, m, L->out, "rows alone", isa);
        /* random groups of 1..9 rows */
        for (size_t i = 0; i < m;) {
            size_t g = 1 + next(s) % 9;
            if (g > m - i)
                g = m - i;
            rt_dense_rows_isa((rt_dense_isa)isa, x + i * L->in, g, L->in, L->w, L->b, L->out,
                              got + i * L->out);
            i += g;
        }
        assert_rows_equal(got, want, m, L->out, "random groups", isa);
    }
    free(want);
    free(got);
}

/* Shapes around every vector width and block boundary, batches 1..64. */
static void test_shapes_and_batches(void **state)
{
    (void)state;
    uint64_t s = 0x9e3779b97f4a7c15ull;
    static const size_t outs[] = {1,  3,  4,  5,  8,   15,  16,  17,  31,  32,  33,  34,
                                  48, 63, 70, 100, 111, 112, 113, 119, 120, 121, 223, 224,
                                  225, 231, 240, 241, 300};
    static const size_t ins[] = {0, 1, 2, 7, 66, 100};
    for (size_t a = 0; a < sizeof outs / sizeof outs[0]; a++)
        for (size_t c = 0; c < sizeof ins / sizeof ins[0]; c++) {
            layer L = make_layer(&s, ins[c], outs[a]);
            size_t m = 1 + (a * 7 + c * 13) % 64;
            float *x = malloc((m * L.in + 1) * sizeof(float));
            assert_non_null(x);
            fill_inputs(&s, x, m * L.in, (a + c) % 3 == 0);
            check_layer(&s, &L, x, m);
            free(x);
            free_layer(&L);
        }
    /* one layer, every batch size 1..64 */
    layer L = make_layer(&s, 66, 100);
    float *x = malloc(64 * 66 * sizeof(float));
    assert_non_null(x);
    fill_inputs(&s, x, 64 * 66, 0);
    for (size_t m = 1; m <= 64; m++)
        check_layer(&s, &L, x, m);
    free(x);
    free_layer(&L);
}

/* A batch of 1000 and more inputs than the kernel gathers at a time. */
static void test_large(void **state)
{
    (void)state;
    uint64_t s = 42;
    layer L = make_layer(&s, 1200, 37);
    float *x = malloc(1000 * 1200 * sizeof(float));
    assert_non_null(x);
    fill_inputs(&s, x, 1000 * 1200, 1);
    check_layer(&s, &L, x, 1000);
    free(x);
    free_layer(&L);
}

/* The argument the kernel rests on: a -0 bias starts the sum at +0, so a
 * row whose inputs are all zero gets +0 alone and beside other rows. */
static void test_negative_zero_bias(void **state)
{
    (void)state;
    float w[2] = {1.0f, -2.0f}, b[1] = {-0.0f};
    float x[4] = {0.0f, 0.0f, 3.0f, 0.5f}; /* row 0 all zero, row 1 not */
    float y[2], alone[1];
    rt_dense_rows(x, 2, 2, w, b, 1, y);
    rt_dense_rows(x, 1, 2, w, b, 1, alone);
    assert_false(signbit(y[0]));
    assert_false(signbit(alone[0]));
    assert_true(y[1] == 2.0f); /* 3 * 1 + 0.5 * -2 */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shapes_and_batches),
        cmocka_unit_test(test_large),
        cmocka_unit_test(test_negative_zero_bias),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
