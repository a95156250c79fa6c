/*
 * rt_dense_kernel.h — one instance of the dense layer kernel, included by
 * rt_dense.c once per instruction set (a template in the C preprocessor's
 * way). Not a public header.
 *
 * The includer defines:
 *   DENSE_VL      floats per vector (4 = SSE, 8 = AVX2, 16 = AVX-512F)
 *   DENSE_V       the name of this instance's vector type
 *   DENSE_TARGET  the function attribute choosing the instruction set
 *   DENSE_FN      the name of the function to define
 * and rt_dense.c provides rt_dense_v4 / rt_dense_v8 (4 and 8 unaligned floats)
 * and the step macros DENSE_LD0 / DENSE_ST / DENSE_ROWS4 / DENSE_ROW1X4 / ... .
 *
 * DENSE_FN(x, m, in, w, bias, out, y) computes, for each of the m rows,
 *   y[i][j] = (...((bias[j] + 0) + w[k0][j] x[i][k0]) + w[k1][j] x[i][k1]) ...
 * over the inputs k in increasing order, each product rounded, then added
 * (no fused multiply-add: the build passes -ffp-contract=off). An input is
 * left out where it is zero in every row of the block being computed; that
 * changes no bit (rt_dense.c says why), so a row's result is the same
 * whether it runs alone or beside any other rows, and the same at every
 * vector width.
 */

typedef float DENSE_V __attribute__((vector_size(DENSE_VL * sizeof(float)), aligned(4),
                                     may_alias));

/* Outputs of row q in nv vectors (nv <= RT_DENSE_GROUP, a constant once
 * inlined: the sums stay in registers), at j, j + VL, ... and the last at
 * `last` (out - VL when the row ends inside it: the outputs computed twice
 * get the same bits twice). Every sum is loaded before any is stored, so sq
 * may be yq. */
DENSE_TARGET static inline __attribute__((always_inline)) void
DENSE_GROUP(size_t nv, const float *restrict w, const size_t *restrict koff,
            const float *restrict xv, size_t xst, size_t nz, const float *sq, float *yq,
            size_t j, size_t last)
{
    /* offsets from j: constants once inlined, but for the last one */
    size_t dl = last - j;
    const float *wj = w + j;
    DENSE_V a[RT_DENSE_GROUP];
#pragma GCC unroll 16
    for (size_t v = 0; v < nv; v++)
        a[v] = DENSE_LD0(DENSE_V, sq + j + (v + 1 < nv ? v * DENSE_VL : dl));
    for (size_t t = 0; t < nz; t++) {
        const float *wr = wj + koff[t];
        float xq = xv[t * xst];
#pragma GCC unroll 16
        for (size_t v = 0; v + 1 < nv; v++)
            a[v] += DENSE_LD(DENSE_V, wr + v * DENSE_VL) * xq;
        a[nv - 1] += DENSE_LD(DENSE_V, wr + dl) * xq;
    }
#pragma GCC unroll 16
    for (size_t v = 0; v < nv; v++)
        DENSE_ST(DENSE_V, yq + j + (v + 1 < nv ? v * DENSE_VL : dl), a[v]);
}

#define DENSE_CAT2(a, b) a##b
#define DENSE_CAT(a, b) DENSE_CAT2(a, b)
#define DENSE_NONZERO DENSE_CAT(DENSE_FN, _nonzero)

/* A row alone's non-zero inputs [k0, k1) (NaN kept, -0 dropped: x != 0):
 * their w offsets k * out into koff and their values into xk, in order;
 * returns how many. */
DENSE_TARGET static inline __attribute__((always_inline)) size_t
DENSE_NONZERO(const float *restrict x0, size_t k0, size_t k1, size_t out, size_t *restrict koff,
              float *restrict xk)
{
    size_t k = k0, nz = 0;
#ifdef DENSE_COMPACT /* DENSE_VL inputs at a time, packed by a permutation */
    if (k1 * out <= INT32_MAX)
        DENSE_COMPACT(x0, k, k1, out, koff, xk, nz);
#endif
#ifdef DENSE_NZ_MASK /* DENSE_VL inputs per test, then their non-zero lanes */
    for (; k + DENSE_VL <= k1; k += DENSE_VL) {
        for (unsigned msk = DENSE_NZ_MASK(x0 + k); msk; msk &= msk - 1) {
            size_t kb = k + (unsigned)__builtin_ctz(msk);
            koff[nz] = kb * out;
            xk[nz++] = x0[kb];
        }
    }
#endif
    for (; k < k1; k++) {
        if (x0[k] != 0.0f) {
            koff[nz] = k * out;
            xk[nz++] = x0[k];
        }
    }
    return nz;
}

DENSE_TARGET static void DENSE_FN(const float *restrict x, size_t m, size_t in,
                                  const float *restrict w, const float *restrict bias,
                                  size_t out, float *restrict y)
{
    /* The kept inputs: w offset (k * out) and value in each row of the block
     * (blocks write one past the kept ones: branch-free gathering). */
    size_t koff[RT_DENSE_CHUNK + 16];
    float xs[RT_DENSE_CHUNK + 1][RT_DENSE_ROWS];
    float xk[RT_DENSE_CHUNK + 16]; /* a row alone: its kept values, in a row
                                      (vector stores may write 15 past them) */
    for (size_t i0 = 0; i0 < m; i0 += RT_DENSE_ROWS) {
        size_t r = m - i0 < RT_DENSE_ROWS ? m - i0 : RT_DENSE_ROWS;
        const float *xr[RT_DENSE_ROWS], *sr[RT_DENSE_ROWS];
        float *yr[RT_DENSE_ROWS];
        for (size_t q = 0; q < r; q++) {
            xr[q] = x + (i0 + q) * in;
            yr[q] = y + (i0 + q) * out;
        }
        /* Each chunk of inputs adds to sr's sums and stores them in y: the
         * first starts from the bias (+ 0, so -0 becomes +0: see rt_dense.c),
         * the next from y. One chunk even without inputs, to store the bias. */
        for (size_t k0 = 0; k0 < in || k0 == 0; k0 += RT_DENSE_CHUNK) {
            for (size_t q = 0; q < r; q++)
                sr[q] = k0 == 0 ? bias : yr[q];
            size_t k1 = in - k0 < RT_DENSE_CHUNK ? in : k0 + RT_DENSE_CHUNK, nz = 0;
            if (r == 1) { /* a row alone: its own non-zero inputs */
                nz = DENSE_NONZERO(xr[0], k0, k1, out, koff, xk);
            } else if (r == RT_DENSE_ROWS) {
                const float *x0 = xr[0], *x1 = xr[1], *x2 = xr[2], *x3 = xr[3];
                for (size_t k = k0; k < k1; k++) {
                    float v0 = x0[k], v1 = x1[k], v2 = x2[k], v3 = x3[k];
                    koff[nz] = k * out;
                    xs[nz][0] = v0;
                    xs[nz][1] = v1;
                    xs[nz][2] = v2;
                    xs[nz][3] = v3;
                    nz += (v0 != 0.0f) | (v1 != 0.0f) | (v2 != 0.0f) | (v3 != 0.0f);
                }
            } else {
                for (size_t k = k0; k < k1; k++) {
                    int any = 0;
                    koff[nz] = k * out;
                    for (size_t q = 0; q < r; q++) {
                        xs[nz][q] = xr[q][k];
                        any |= xr[q][k] != 0.0f;
                    }
                    nz += any;
                }
            }
            if (nz == 0 && k0 > 0)
                continue;
            size_t j = 0;
            if (r == RT_DENSE_ROWS) {
                /* Four rows times two vectors: each weight load feeds four
                 * rows, eight accumulators stay in registers. */
                for (; j + 2 * DENSE_VL <= out; j += 2 * DENSE_VL) {
                    DENSE_V a00 = DENSE_LD0(DENSE_V, sr[0] + j);
                    DENSE_V a01 = DENSE_LD0(DENSE_V, sr[0] + j + DENSE_VL);
                    DENSE_V a10 = DENSE_LD0(DENSE_V, sr[1] + j);
                    DENSE_V a11 = DENSE_LD0(DENSE_V, sr[1] + j + DENSE_VL);
                    DENSE_V a20 = DENSE_LD0(DENSE_V, sr[2] + j);
                    DENSE_V a21 = DENSE_LD0(DENSE_V, sr[2] + j + DENSE_VL);
                    DENSE_V a30 = DENSE_LD0(DENSE_V, sr[3] + j);
                    DENSE_V a31 = DENSE_LD0(DENSE_V, sr[3] + j + DENSE_VL);
                    for (size_t t = 0; t < nz; t++) {
                        const float *wr = w + koff[t] + j;
                        DENSE_V b0 = DENSE_LD(DENSE_V, wr);
                        DENSE_V b1 = DENSE_LD(DENSE_V, wr + DENSE_VL);
                        const float *xv = xs[t];
                        a00 += b0 * xv[0];
                        a01 += b1 * xv[0];
                        a10 += b0 * xv[1];
                        a11 += b1 * xv[1];
                        a20 += b0 * xv[2];
                        a21 += b1 * xv[2];
                        a30 += b0 * xv[3];
                        a31 += b1 * xv[3];
                    }
                    DENSE_ST(DENSE_V, yr[0] + j, a00);
                    DENSE_ST(DENSE_V, yr[0] + j + DENSE_VL, a01);
                    DENSE_ST(DENSE_V, yr[1] + j, a10);
                    DENSE_ST(DENSE_V, yr[1] + j + DENSE_VL, a11);
                    DENSE_ST(DENSE_V, yr[2] + j, a20);
                    DENSE_ST(DENSE_V, yr[2] + j + DENSE_VL, a21);
                    DENSE_ST(DENSE_V, yr[3] + j, a30);
                    DENSE_ST(DENSE_V, yr[3] + j + DENSE_VL, a31);
                }
                DENSE_ROWS4(DENSE_V, DENSE_VL);
#if DENSE_VL > 8
                DENSE_ROWS4(rt_dense_v8, 8);
#endif
#if DENSE_VL > 4
                DENSE_ROWS4(rt_dense_v4, 4);
#endif
            }
            /* The rest, per row: narrower vectors, then one float at a time
             * (the same sums in the same order). */
            for (size_t q = 0; q < r; q++) {
                float *yq = yr[q];
                const float *sq = sr[q];
                /* input t's value in this row: xv[t * xst] */
                const float *xv = r == 1 ? xk : &xs[0][q];
                size_t xst = r == 1 ? 1 : RT_DENSE_ROWS, jq = j;
                /* Groups of up to RT_DENSE_GROUP vectors, each leaving at
                 * least one whole vector to the next, the last one ending at
                 * out (overlapping its neighbour instead of a narrower tail). */
                while (out - jq >= DENSE_VL) {
                    size_t left = out - jq, nv = (left + DENSE_VL - 1) / DENSE_VL;
                    if (nv > RT_DENSE_GROUP)
                        nv = left - RT_DENSE_GROUP * DENSE_VL >= DENSE_VL ? RT_DENSE_GROUP
                                                                         : RT_DENSE_GROUP - 1;
                    bool whole = nv * DENSE_VL <= left;
                    size_t last = whole ? jq + (nv - 1) * DENSE_VL : out - DENSE_VL;
                    switch (nv) {
#define DENSE_CASE(N)                                                                         \
    case N:                                                                                   \
        DENSE_GROUP(N, w, koff, xv, xst, nz, sq, yq, jq, last);                               \
        break;
                        DENSE_CASE(1) DENSE_CASE(2) DENSE_CASE(3) DENSE_CASE(4) DENSE_CASE(5)
                        DENSE_CASE(6) DENSE_CASE(7) DENSE_CASE(8) DENSE_CASE(9) DENSE_CASE(10)
                        DENSE_CASE(11) DENSE_CASE(12) DENSE_CASE(13) DENSE_CASE(14)
#undef DENSE_CASE
                    }
                    jq = whole ? jq + nv * DENSE_VL : out;
                }
#if DENSE_VL > 8
                DENSE_ROW1(rt_dense_v8, 8);
#endif
#if DENSE_VL > 4
                DENSE_ROW1(rt_dense_v4, 4);
#endif
                for (; jq < out; jq++) {
                    float a = sq[jq] + 0.0f;
                    for (size_t t = 0; t < nz; t++)
                        a += w[koff[t] + jq] * xv[t * xst];
                    yq[jq] = a;
                }
            }
        }
    }
}
#undef DENSE_NONZERO
#undef DENSE_CAT
#undef DENSE_CAT2
