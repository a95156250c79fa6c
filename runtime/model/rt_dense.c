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
 * vector at a time: a compare and a bit mask, which with AVX2 picks the
 * permutation that packs them), and keeps up to
 * RT_DENSE_GROUP vectors of its sums in registers per pass over them, the
 * last vector ending at the row's end and overlapping its neighbour instead
 * of narrower tails (an output computed twice is the same sum twice).
 */
#include "rt_model.h"
#include "rt_model_internal.h"
#include "rt_data_internal.h"

#include <stdint.h>
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
            a0 += DENSE_LD(T, w + koff[t] + jq) * xv[t * xst];                                \
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

/* For each 8-bit mask of non-zero lanes: the indexes of its set bits in
 * order, one per byte (a permutation that packs the lanes), and their count. */
static const uint64_t dense_pack8[256] = {
    0x0000000000000000u, 0x0000000000000000u, 0x0000000000000001u, 0x0000000000000100u,
    0x0000000000000002u, 0x0000000000000200u, 0x0000000000000201u, 0x0000000000020100u,
    0x0000000000000003u, 0x0000000000000300u, 0x0000000000000301u, 0x0000000000030100u,
    0x0000000000000302u, 0x0000000000030200u, 0x0000000000030201u, 0x0000000003020100u,
    0x0000000000000004u, 0x0000000000000400u, 0x0000000000000401u, 0x0000000000040100u,
    0x0000000000000402u, 0x0000000000040200u, 0x0000000000040201u, 0x0000000004020100u,
    0x0000000000000403u, 0x0000000000040300u, 0x0000000000040301u, 0x0000000004030100u,
    0x0000000000040302u, 0x0000000004030200u, 0x0000000004030201u, 0x0000000403020100u,
    0x0000000000000005u, 0x0000000000000500u, 0x0000000000000501u, 0x0000000000050100u,
    0x0000000000000502u, 0x0000000000050200u, 0x0000000000050201u, 0x0000000005020100u,
    0x0000000000000503u, 0x0000000000050300u, 0x0000000000050301u, 0x0000000005030100u,
    0x0000000000050302u, 0x0000000005030200u, 0x0000000005030201u, 0x0000000503020100u,
    0x0000000000000504u, 0x0000000000050400u, 0x0000000000050401u, 0x0000000005040100u,
    0x0000000000050402u, 0x0000000005040200u, 0x0000000005040201u, 0x0000000504020100u,
    0x0000000000050403u, 0x0000000005040300u, 0x0000000005040301u, 0x0000000504030100u,
    0x0000000005040302u, 0x0000000504030200u, 0x0000000504030201u, 0x0000050403020100u,
    0x0000000000000006u, 0x0000000000000600u, 0x0000000000000601u, 0x0000000000060100u,
    0x0000000000000602u, 0x0000000000060200u, 0x0000000000060201u, 0x0000000006020100u,
    0x0000000000000603u, 0x0000000000060300u, 0x0000000000060301u, 0x0000000006030100u,
    0x0000000000060302u, 0x0000000006030200u, 0x0000000006030201u, 0x0000000603020100u,
    0x0000000000000604u, 0x0000000000060400u, 0x0000000000060401u, 0x0000000006040100u,
    0x0000000000060402u, 0x0000000006040200u, 0x0000000006040201u, 0x0000000604020100u,
    0x0000000000060403u, 0x0000000006040300u, 0x0000000006040301u, 0x0000000604030100u,
    0x0000000006040302u, 0x0000000604030200u, 0x0000000604030201u, 0x0000060403020100u,
    0x0000000000000605u, 0x0000000000060500u, 0x0000000000060501u, 0x0000000006050100u,
    0x0000000000060502u, 0x0000000006050200u, 0x0000000006050201u, 0x0000000605020100u,
    0x0000000000060503u, 0x0000000006050300u, 0x0000000006050301u, 0x0000000605030100u,
    0x0000000006050302u, 0x0000000605030200u, 0x0000000605030201u, 0x0000060503020100u,
    0x0000000000060504u, 0x0000000006050400u, 0x0000000006050401u, 0x0000000605040100u,
    0x0000000006050402u, 0x0000000605040200u, 0x0000000605040201u, 0x0000060504020100u,
    0x0000000006050403u, 0x0000000605040300u, 0x0000000605040301u, 0x0000060504030100u,
    0x0000000605040302u, 0x0000060504030200u, 0x0000060504030201u, 0x0006050403020100u,
    0x0000000000000007u, 0x0000000000000700u, 0x0000000000000701u, 0x0000000000070100u,
    0x0000000000000702u, 0x0000000000070200u, 0x0000000000070201u, 0x0000000007020100u,
    0x0000000000000703u, 0x0000000000070300u, 0x0000000000070301u, 0x0000000007030100u,
    0x0000000000070302u, 0x0000000007030200u, 0x0000000007030201u, 0x0000000703020100u,
    0x0000000000000704u, 0x0000000000070400u, 0x0000000000070401u, 0x0000000007040100u,
    0x0000000000070402u, 0x0000000007040200u, 0x0000000007040201u, 0x0000000704020100u,
    0x0000000000070403u, 0x0000000007040300u, 0x0000000007040301u, 0x0000000704030100u,
    0x0000000007040302u, 0x0000000704030200u, 0x0000000704030201u, 0x0000070403020100u,
    0x0000000000000705u, 0x0000000000070500u, 0x0000000000070501u, 0x0000000007050100u,
    0x0000000000070502u, 0x0000000007050200u, 0x0000000007050201u, 0x0000000705020100u,
    0x0000000000070503u, 0x0000000007050300u, 0x0000000007050301u, 0x0000000705030100u,
    0x0000000007050302u, 0x0000000705030200u, 0x0000000705030201u, 0x0000070503020100u,
    0x0000000000070504u, 0x0000000007050400u, 0x0000000007050401u, 0x0000000705040100u,
    0x0000000007050402u, 0x0000000705040200u, 0x0000000705040201u, 0x0000070504020100u,
    0x0000000007050403u, 0x0000000705040300u, 0x0000000705040301u, 0x0000070504030100u,
    0x0000000705040302u, 0x0000070504030200u, 0x0000070504030201u, 0x0007050403020100u,
    0x0000000000000706u, 0x0000000000070600u, 0x0000000000070601u, 0x0000000007060100u,
    0x0000000000070602u, 0x0000000007060200u, 0x0000000007060201u, 0x0000000706020100u,
    0x0000000000070603u, 0x0000000007060300u, 0x0000000007060301u, 0x0000000706030100u,
    0x0000000007060302u, 0x0000000706030200u, 0x0000000706030201u, 0x0000070603020100u,
    0x0000000000070604u, 0x0000000007060400u, 0x0000000007060401u, 0x0000000706040100u,
    0x0000000007060402u, 0x0000000706040200u, 0x0000000706040201u, 0x0000070604020100u,
    0x0000000007060403u, 0x0000000706040300u, 0x0000000706040301u, 0x0000070604030100u,
    0x0000000706040302u, 0x0000070604030200u, 0x0000070604030201u, 0x0007060403020100u,
    0x0000000000070605u, 0x0000000007060500u, 0x0000000007060501u, 0x0000000706050100u,
    0x0000000007060502u, 0x0000000706050200u, 0x0000000706050201u, 0x0000070605020100u,
    0x0000000007060503u, 0x0000000706050300u, 0x0000000706050301u, 0x0000070605030100u,
    0x0000000706050302u, 0x0000070605030200u, 0x0000070605030201u, 0x0007060503020100u,
    0x0000000007060504u, 0x0000000706050400u, 0x0000000706050401u, 0x0000070605040100u,
    0x0000000706050402u, 0x0000070605040200u, 0x0000070605040201u, 0x0007060504020100u,
    0x0000000706050403u, 0x0000070605040300u, 0x0000070605040301u, 0x0007060504030100u,
    0x0000070605040302u, 0x0007060504030200u, 0x0007060504030201u, 0x0706050403020100u,
};
static const uint8_t dense_count8[256] = {
    0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 1, 2, 2, 3, 2, 3, 3, 4, 2, 3, 3, 4, 3, 4, 4, 5,
    1, 2, 2, 3, 2, 3, 3, 4, 2, 3, 3, 4, 3, 4, 4, 5, 2, 3, 3, 4, 3, 4, 4, 5, 3, 4, 4, 5, 4, 5, 5, 6,
    1, 2, 2, 3, 2, 3, 3, 4, 2, 3, 3, 4, 3, 4, 4, 5, 2, 3, 3, 4, 3, 4, 4, 5, 3, 4, 4, 5, 4, 5, 5, 6,
    2, 3, 3, 4, 3, 4, 4, 5, 3, 4, 4, 5, 4, 5, 5, 6, 3, 4, 4, 5, 4, 5, 5, 6, 4, 5, 5, 6, 5, 6, 6, 7,
    1, 2, 2, 3, 2, 3, 3, 4, 2, 3, 3, 4, 3, 4, 4, 5, 2, 3, 3, 4, 3, 4, 4, 5, 3, 4, 4, 5, 4, 5, 5, 6,
    2, 3, 3, 4, 3, 4, 4, 5, 3, 4, 4, 5, 4, 5, 5, 6, 3, 4, 4, 5, 4, 5, 5, 6, 4, 5, 5, 6, 5, 6, 6, 7,
    2, 3, 3, 4, 3, 4, 4, 5, 3, 4, 4, 5, 4, 5, 5, 6, 3, 4, 4, 5, 4, 5, 5, 6, 4, 5, 5, 6, 5, 6, 6, 7,
    3, 4, 4, 5, 4, 5, 5, 6, 4, 5, 5, 6, 5, 6, 6, 7, 4, 5, 5, 6, 5, 6, 6, 7, 5, 6, 6, 7, 6, 7, 7, 8,
};

/* A row alone's non-zero inputs from *kp on, eight at a time while eight
 * are left before k1: a compare and a mask, whose permutation packs the
 * values into xk and their offsets k * out (which must fit in 31 bits) into
 * koff from nz on, stored whole (up to 7 entries past the last kept one).
 * Returns the new nz and leaves *kp at the first input not read. The kept
 * inputs and their order are the scalar loop's (NaN kept, -0 dropped). */
__attribute__((target("avx2"))) static inline __attribute__((always_inline)) size_t
dense_compact_avx2(const float *x0, size_t *kp, size_t k1, size_t out, size_t *koff, float *xk,
                   size_t nz)
{
    size_t k = *kp;
    const __m256 zero = _mm256_setzero_ps();
    const __m256i vout = _mm256_set1_epi32((int)out), step = _mm256_set1_epi32(8);
    __m256i idx = _mm256_add_epi32(_mm256_set1_epi32((int)k),
                                   _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    for (; k + 8 <= k1; k += 8, idx = _mm256_add_epi32(idx, step)) {
        __m256 v = _mm256_loadu_ps(x0 + k);
        unsigned m = (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(v, zero, _CMP_NEQ_UQ));
        if (!m)
            continue;
        __m256i perm = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)dense_pack8[m]));
        _mm256_storeu_ps(xk + nz, _mm256_permutevar8x32_ps(v, perm));
        __m256i off = _mm256_mullo_epi32(_mm256_permutevar8x32_epi32(idx, perm), vout);
        _mm256_storeu_si256((__m256i *)(void *)(koff + nz),
                            _mm256_cvtepu32_epi64(_mm256_castsi256_si128(off)));
        _mm256_storeu_si256((__m256i *)(void *)(koff + nz + 4),
                            _mm256_cvtepu32_epi64(_mm256_extracti128_si256(off, 1)));
        nz += dense_count8[m];
    }
    *kp = k;
    return nz;
}

#define DENSE_VL 8
#define DENSE_V dense_v_avx2
#define DENSE_TARGET __attribute__((target("avx2")))
#define DENSE_FN dense_avx2
#define DENSE_GROUP dense_group_avx2
#define DENSE_COMPACT(x0, k, k1, out, koff, xk, nz) \
    ((nz) = dense_compact_avx2((x0), &(k), (k1), (out), (koff), (xk), (nz)))
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
#undef DENSE_COMPACT

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

/* The kernel of isa (one the CPU has) over the rows. */
static void dense_dispatch(rt_dense_isa isa, const float *x, size_t m, size_t in,
                           const float *w, const float *bias, size_t out, float *y)
{
    if (m == 0 || out == 0)
        return;
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

void rt_dense_rows_isa(rt_dense_isa isa, const float *x, size_t m, size_t in, const float *w,
                       const float *bias, size_t out, float *y)
{
    rt_dense_isa best = rt_dense_best_isa();
    dense_dispatch(isa > best ? best : isa, x, m, in, w, bias, out, y);
}

void rt_dense_rows(const float *x, size_t m, size_t in, const float *w, const float *bias,
                   size_t out, float *y)
{
    dense_dispatch(rt_dense_best_isa(), x, m, in, w, bias, out, y);
}
