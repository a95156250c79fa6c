/*
 * rt_dense.c — the dense layer of the forward pass, y = b + x W for a batch
 * of rows, with a result per row that does not depend on the batch.
 *
 * Why not sgemm: an optimized GEMM (OpenBLAS's) splits and orders each
 * output's sum by the matrix shape and the CPU's kernel (a row among 1,000
 * is summed differently from the same row alone, and Haswell's kernels from
 * SkylakeX's), so the same instance got different last bits alone, in a
 * request of 1,000, merged with other requests, in the trainer's evaluation
 * batches, or on a host with OPENBLAS_CORETYPE set. Here every output is
 *   y[i][j] = (...((b[j] + 0) + w[k0][j] x[i][k0]) + w[k1][j] x[i][k1]) ...
 * in increasing k, products and sums each rounded to float (no fused
 * multiply-add), vectorized across the outputs j, which are independent:
 * the same bits for any number of rows, any neighbours, at SSE, AVX2 or
 * AVX-512 width, on every x86-64 CPU.
 *
 * Skipped inputs. An input that is zero in every row of a block (one-hot
 * indicators, ReLU outputs) is left out; a row alone skips its own zeros,
 * a row in a block only the block's common ones. Both give the same bits
 * because adding a zero product never changes a sum here: the sum starts at
 * b[j] + 0, which is never -0 (round to nearest gives -0 only for -0 + -0),
 * it stays that way (x + y = -0 needs both -0), and s + (+-0) = s for every
 * s that is not -0. A zero input times a finite weight is +-0; weights are
 * checked finite when a model is bound (rt_graph.c), so Inf * 0 = NaN never
 * arises. x itself may hold anything: NaN and Inf are not zero, never
 * skipped, and propagate as they should.
 *
 * Speed: four rows share each weight load (eight vector accumulators), so at
 * batch sizes of four and more the kernel streams W once per four rows; a
 * single row streams only the rows of W its non-zero inputs select (found a
 * vector at a time: a compare and a bit mask), and keeps up to
 * RT_DENSE_GROUP vectors of its sums in registers per pass over them, the
 * last vector ending at the row's end and overlapping its neighbour instead
 * of narrower tails (an output computed twice is the same sum twice).
 */
#include "rt_model.h"
#include "rt_model_internal.h"
#include "rt_data_internal.h"

#include <string.h>
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

#define RT_DENSE_ROWS 4    /* rows that share a weight load */
#define RT_DENSE_CHUNK 512 /* inputs gathered at a time (stack arrays) */
#define RT_DENSE_GROUP 14  /* vectors of one row's sums held at a time (16
                              registers: the sums, a product, the input) */

typedef float rt_dense_v4 __attribute__((vector_size(16), aligned(4), may_alias));
typedef float rt_dense_v8 __attribute__((vector_size(32), aligned(4), may_alias));

#define DENSE_LD(T, p) (*(const T *)(const void *)(p))
#define DENSE_ST(T, p, v) (*(T *)(void *)(p) = (v))
/* A sum's start: the bias or the sum so far, + 0 (turns a -0 bias into +0,
 * changes nothing else). */
#define DENSE_LD0(T, p) (DENSE_LD(T, p) + 0.0f)

/* Outputs [j, j+W) of the block's four rows per step, while they last. */
#define DENSE_ROWS4(T, W)                                                                     \
    for (; j + (W) <= out; j += (W)) {                                                        \
        T a0 = DENSE_LD0(T, sr[0] + j), a1 = DENSE_LD0(T, sr[1] + j);                         \
        T a2 = DENSE_LD0(T, sr[2] + j), a3 = DENSE_LD0(T, sr[3] + j);                         \
        for (size_t t = 0; t < nz; t++) {                                                     \
            T b0 = DENSE_LD(T, w + koff[t] + j);                                              \
            a0 += b0 * xs[t][0];                                                              \
            a1 += b0 * xs[t][1];                                                              \
            a2 += b0 * xs[t][2];                                                              \
            a3 += b0 * xs[t][3];                                                              \
        }                                                                                     \
        DENSE_ST(T, yr[0] + j, a0);                                                           \
        DENSE_ST(T, yr[1] + j, a1);                                                           \
        DENSE_ST(T, yr[2] + j, a2);                                                           \
        DENSE_ST(T, yr[3] + j, a3);                                                           \
    }

/* Outputs [jq, jq+W) of row q per step, while they last. */
#define DENSE_ROW1(T, W)                                                                      \
    for (; jq + (W) <= out; jq += (W)) {                                                      \
        T a0 = DENSE_LD0(T, sq + jq);                                                         \
        for (size_t t = 0; t < nz; t++)                                                       \
            a0 += DENSE_LD(T, w + koff[t] + jq) * xs[t][q];                                   \
        DENSE_ST(T, yq + jq, a0);                                                             \
    }

/* The baseline: 4 floats, SSE on any x86-64 (NEON or plain code elsewhere). */
#define DENSE_VL 4
#define DENSE_V dense_v_base
#define DENSE_TARGET
#define DENSE_FN dense_base
#define DENSE_GROUP dense_group_base
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* The non-zero lanes of 4 floats as bits (NaN is non-zero, -0 is zero: as
 * x != 0.0f). */
#define DENSE_NZ_MASK(p) ((unsigned)_mm_movemask_ps(_mm_cmpneq_ps(_mm_loadu_ps(p), \
                                                                  _mm_setzero_ps())))
#endif
#include "rt_dense_kernel.h"
#undef DENSE_VL
#undef DENSE_V
#undef DENSE_TARGET
#undef DENSE_FN
#undef DENSE_GROUP
#undef DENSE_NZ_MASK

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define RT_DENSE_X86 1

#define DENSE_VL 8
#define DENSE_V dense_v_avx2
#define DENSE_TARGET __attribute__((target("avx2")))
#define DENSE_FN dense_avx2
#define DENSE_GROUP dense_group_avx2
#define DENSE_NZ_MASK(p)                                                                  \
    ((unsigned)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(p), _mm256_setzero_ps(), \
                                                _CMP_NEQ_UQ)))
#include "rt_dense_kernel.h"
#undef DENSE_VL
#undef DENSE_V
#undef DENSE_TARGET
#undef DENSE_FN
#undef DENSE_GROUP
#undef DENSE_NZ_MASK

#define DENSE_VL 16
#define DENSE_V dense_v_avx512
#define DENSE_TARGET __attribute__((target("avx512f")))
#define DENSE_FN dense_avx512
#define DENSE_GROUP dense_group_avx512
#define DENSE_NZ_MASK(p)                                                                  \
    ((unsigned)_mm512_cmp_ps_mask(_mm512_loadu_ps(p), _mm512_setzero_ps(), _CMP_NEQ_UQ))
#include "rt_dense_kernel.h"
#undef DENSE_VL
#undef DENSE_V
#undef DENSE_TARGET
#undef DENSE_FN
#undef DENSE_GROUP
#undef DENSE_NZ_MASK
#endif

rt_dense_isa rt_dense_best_isa(void)
{
#ifdef RT_DENSE_X86
    if (__builtin_cpu_supports("avx512f"))
        return RT_DENSE_AVX512;
    if (__builtin_cpu_supports("avx2"))
        return RT_DENSE_AVX2;
#endif
    return RT_DENSE_BASE;
}

void rt_dense_rows_isa(rt_dense_isa isa, const float *x, size_t m, size_t in, const float *w,
                       const float *bias, size_t out, float *y)
{
    if (m == 0 || out == 0)
        return;
    if (isa > rt_dense_best_isa())
        isa = rt_dense_best_isa();
    switch (isa) {
#ifdef RT_DENSE_X86
    case RT_DENSE_AVX512:
        dense_avx512(x, m, in, w, bias, out, y);
        return;
    case RT_DENSE_AVX2:
        dense_avx2(x, m, in, w, bias, out, y);
        return;
#endif
    default:
        dense_base(x, m, in, w, bias, out, y);
        return;
    }
}

void rt_dense_rows(const float *x, size_t m, size_t in, const float *w, const float *bias,
                   size_t out, float *y)
{
    rt_dense_rows_isa(rt_dense_best_isa(), x, m, in, w, bias, out, y);
}
