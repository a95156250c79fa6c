/*
 * trn_optim.c — the optimizers, as TensorFlow's training ops compute them,
 * applied element by element (a dense tensor: all elements; a sparse one:
 * the rows a batch touched).
 *
 *   Ftrl (FTRL-Proximal, McMahan et al. 2013; TF ApplyFtrl):
 *     n' = n + g^2
 *     z += g - (n'^-p - n^-p) / lr * w          (p = learning_rate_power)
 *     w  = |z| > l1 ? (sign(z) l1 - z) / (n'^-p / lr + 2 l2) : 0
 *   Adagrad: a += g^2; w -= lr g / sqrt(a)
 *   Adam:    m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
 *            w -= lr sqrt(1-b2^t)/(1-b1^t) m / (sqrt(v) + eps), t = step + 1
 *            (on sparse tensors only the touched rows: "lazy" Adam)
 *   SGD:     w -= lr g
 *   RMSProp (TF ApplyRMSProp / ApplyCenteredRMSProp; rms starts at 1):
 *            rms += (g^2 - rms)(1 - decay); [centered: mg += (g - mg)(1 - decay)]
 *            mom = momentum mom + lr g / sqrt(rms [- mg^2] + eps); w -= mom
 *   ProximalAdagrad (TF ApplyProximalAdagrad, FOBOS with Adagrad's rate):
 *            a += g^2; r = lr / sqrt(a); v = w - r g;
 *            w = sign(v) max(|v| - r l1, 0) / (1 + r l2)
 * The learning rate of every one may follow a schedule by global step s
 * (trn_optim_lr; tf.compat.v1.train's, lr0 the given rate, n = decay_steps):
 *   exponential_decay: lr0 rate^(s/n)     (staircase: rate^floor(s/n))
 *   cosine_decay:      lr0 ((1 - alpha) (1 + cos(pi min(s, n)/n))/2 + alpha)
 *   polynomial_decay:  (lr0 - end) (1 - min(s, n)/n)^power + end; with cycle
 *                      n is n ceil(s/n) instead (n at s = 0) and s is not capped
 * On a sparse tensor every one runs on the touched rows only (TF's sparse
 * kernels: an untouched row's slots do not decay, its momentum is not
 * applied); on a dense one on every element, a zero gradient included.
 */
#include "trn_internal.h"

#include <math.h>

/* The element loops vectorize only without errno-setting sqrt (the
 * arguments are accumulators >= the initial value > 0, never negative). */
#if defined(__GNUC__) && !defined(__clang__)
#define HOT __attribute__((optimize("O3", "no-math-errno")))
#else
#define HOT
#endif

double trn_optim_lr(const trn_optimizer *o, int64_t step)
{
    const trn_lr_decay *d = &o->lr_decay;
    double lr = o->learning_rate, s = (double)step, n = (double)d->decay_steps;
    switch (d->type) {
    case TRN_LR_EXPONENTIAL: {
        double p = s / n;
        return lr * pow(d->decay_rate, d->staircase ? floor(p) : p);
    }
    case TRN_LR_COSINE: {
        double c = 0.5 * (1.0 + cos(M_PI * fmin(s, n) / n));
        return lr * ((1.0 - d->alpha) * c + d->alpha);
    }
    case TRN_LR_POLYNOMIAL:
        if (d->cycle)
            n *= step <= 0 ? 1.0 : ceil(s / n);
        else
            s = fmin(s, n);
        return (lr - d->end_learning_rate) * pow(1.0 - s / n, d->power) + d->end_learning_rate;
    case TRN_LR_CONSTANT:
    default:
        return lr;
    }
}

const char *trn_optim_name(trn_opt_type t)
{
    switch (t) {
    case TRN_OPT_FTRL:
        return "Ftrl";
    case TRN_OPT_ADAGRAD:
        return "Adagrad";
    case TRN_OPT_ADAM:
        return "Adam";
    case TRN_OPT_RMSPROP:
        return "RMSProp";
    case TRN_OPT_PROXIMAL_ADAGRAD:
        return "ProximalAdagrad";
    case TRN_OPT_SGD:
    case TRN_OPT_DEFAULT:
    default:
        return "SGD";
    }
}

size_t trn_optim_slots(const trn_optimizer *o, float init[TRN_OPT_SLOTS_MAX])
{
    for (size_t s = 0; s < TRN_OPT_SLOTS_MAX; s++)
        init[s] = 0.0f;
    switch (o->type) {
    case TRN_OPT_RMSPROP:
        init[0] = 1.0f; /* TF's "rms" slot starts at ones; "momentum", "mg" at 0 */
        return o->centered ? 3 : 2;
    case TRN_OPT_FTRL:
        init[0] = (float)o->initial_accumulator;
        return 2;
    case TRN_OPT_ADAGRAD:
    case TRN_OPT_PROXIMAL_ADAGRAD:
        init[0] = (float)o->initial_accumulator;
        return 1;
    case TRN_OPT_ADAM:
        return 2;
    case TRN_OPT_SGD:
    case TRN_OPT_DEFAULT:
    default:
        return 0;
    }
}

HOT static void ftrl(const trn_optimizer *o, tparam *p, uint64_t lo, uint64_t hi)
{
    float *w = p->data, *g = p->grad, *acc = p->slot[0], *lin = p->slot[1];
    double lr = o->learning_rate, l1 = o->l1, l2 = o->l2, pw = -o->lr_power;
    int half = fabs(pw - 0.5) < 1e-12;
    for (uint64_t k = lo; k < hi; k++) {
        double gk = g[k];
        if (gk == 0.0)
            continue; /* exact no-op in TF's formula too */
        double a = acc[k], a2 = a + gk * gk;
        double pa = half ? sqrt(a) : pow(a, pw);
        double pa2 = half ? sqrt(a2) : pow(a2, pw);
        double z = lin[k] + gk - (pa2 - pa) / lr * w[k];
        double quad = pa2 / lr + 2.0 * l2;
        lin[k] = (float)z;
        acc[k] = (float)a2;
        w[k] = fabs(z) > l1 ? (float)(((z > 0 ? l1 : -l1) - z) / quad) : 0.0f;
    }
}

/* Adagrad's element k, the reference the vector loops below must equal:
 * sqrt and division are correctly rounded in IEEE arithmetic, so the same
 * float operations in the same order give the same bits at any width. */
static inline void adagrad_one(float *w, float *acc, const float *g, float lr, size_t k)
{
    float gk = g[k];
    float a = acc[k] + gk * gk;
    acc[k] = a;
    w[k] -= lr * gk / sqrtf(a); /* g = 0: w unchanged */
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define TRN_OPTIM_X86 1

/* 8 floats at a time (AVX: vsqrtps, vdivps), only mul/add/sub/div/sqrt, no
 * fused multiply-add: bit for bit adagrad_one. Chosen at run time. */
__attribute__((target("avx"))) static void adagrad_avx(float *w, float *acc, const float *g,
                                                     float lr, size_t lo, size_t hi)
{
    size_t k = lo;
    __m256 vlr = _mm256_set1_ps(lr);
    for (; k + 8 <= hi; k += 8) {
        __m256 gk = _mm256_loadu_ps(g + k);
        __m256 a = _mm256_add_ps(_mm256_loadu_ps(acc + k), _mm256_mul_ps(gk, gk));
        _mm256_storeu_ps(acc + k, a);
        __m256 step = _mm256_div_ps(_mm256_mul_ps(vlr, gk), _mm256_sqrt_ps(a));
        _mm256_storeu_ps(w + k, _mm256_sub_ps(_mm256_loadu_ps(w + k), step));
    }
    for (; k < hi; k++)
        adagrad_one(w, acc, g, lr, k);
}

/* 4 at a time with SSE2 (every x86-64). */
static void adagrad_sse2(float *w, float *acc, const float *g, float lr, size_t lo, size_t hi)
{
    size_t k = lo;
    __m128 vlr = _mm_set1_ps(lr);
    for (; k + 4 <= hi; k += 4) {
        __m128 gk = _mm_loadu_ps(g + k);
        __m128 a = _mm_add_ps(_mm_loadu_ps(acc + k), _mm_mul_ps(gk, gk));
        _mm_storeu_ps(acc + k, a);
        __m128 step = _mm_div_ps(_mm_mul_ps(vlr, gk), _mm_sqrt_ps(a));
        _mm_storeu_ps(w + k, _mm_sub_ps(_mm_loadu_ps(w + k), step));
    }
    for (; k < hi; k++)
        adagrad_one(w, acc, g, lr, k);
}
#endif

static void adagrad(const trn_optimizer *o, tparam *p, uint64_t lo, uint64_t hi)
{
    float lr = (float)o->learning_rate;
#ifdef TRN_OPTIM_X86
    if (hi - lo >= 8 && __builtin_cpu_supports("avx"))
        adagrad_avx(p->data, p->slot[0], p->grad, lr, lo, hi);
    else
        adagrad_sse2(p->data, p->slot[0], p->grad, lr, lo, hi);
#else
    for (uint64_t k = lo; k < hi; k++)
        adagrad_one(p->data, p->slot[0], p->grad, lr, k);
#endif
}

HOT static void adam(const trn_optimizer *o, tparam *p, uint64_t lo, uint64_t hi, int64_t step)
{
    float *w = p->data, *g = p->grad, *m = p->slot[0], *v = p->slot[1];
    double t = (double)(step + 1);
    double b1 = o->beta1, b2 = o->beta2;
    float lr_t = (float)(o->learning_rate * sqrt(1.0 - pow(b2, t)) / (1.0 - pow(b1, t)));
    float fb1 = (float)b1, fb2 = (float)b2, eps = (float)o->epsilon;
    for (uint64_t k = lo; k < hi; k++) {
        float gk = g[k];
        m[k] = fb1 * m[k] + (1.0f - fb1) * gk;
        v[k] = fb2 * v[k] + (1.0f - fb2) * gk * gk;
        w[k] -= lr_t * m[k] / (sqrtf(v[k]) + eps);
    }
}

HOT static void rmsprop(const trn_optimizer *o, tparam *p, uint64_t lo, uint64_t hi)
{
    float *w = p->data, *g = p->grad, *ms = p->slot[0], *mom = p->slot[1], *mg = p->slot[2];
    float lr = (float)o->learning_rate, one_rho = 1.0f - (float)o->decay; /* in float, as TF */
    float mu = (float)o->momentum, eps = (float)o->epsilon;
    for (uint64_t k = lo; k < hi; k++) {
        float gk = g[k];
        ms[k] += (gk * gk - ms[k]) * one_rho;
        float denom = ms[k];
        if (mg) {
            mg[k] += (gk - mg[k]) * one_rho;
            denom -= mg[k] * mg[k];
        }
        mom[k] = mom[k] * mu + gk * lr / sqrtf(denom + eps);
        w[k] -= mom[k];
    }
}

HOT static void proximal_adagrad(const trn_optimizer *o, tparam *p, uint64_t lo, uint64_t hi)
{
    float *w = p->data, *g = p->grad, *acc = p->slot[0];
    float lr = (float)o->learning_rate, l1 = (float)o->l1, l2 = (float)o->l2;
    for (uint64_t k = lo; k < hi; k++) {
        float gk = g[k];
        acc[k] += gk * gk;
        float r = lr / sqrtf(acc[k]);
        float v = w[k] - gk * r;
        if (l1 > 0.0f) {
            float mag = fmaxf(fabsf(v) - r * l1, 0.0f);
            w[k] = (v > 0.0f ? mag : v < 0.0f ? -mag : 0.0f) / (1.0f + r * l2);
        } else
            w[k] = v / (1.0f + r * l2);
    }
}

HOT static void sgd(const trn_optimizer *o, tparam *p, uint64_t lo, uint64_t hi)
{
    float lr = (float)o->learning_rate;
    for (uint64_t k = lo; k < hi; k++)
        p->data[k] -= lr * p->grad[k];
}

void trn_optim_update(const trn_optimizer *o, tparam *p, uint64_t lo, uint64_t hi, int64_t step)
{
    switch (o->type) {
    case TRN_OPT_FTRL:
        ftrl(o, p, lo, hi);
        break;
    case TRN_OPT_ADAGRAD:
        adagrad(o, p, lo, hi);
        break;
    case TRN_OPT_ADAM:
        adam(o, p, lo, hi, step);
        break;
    case TRN_OPT_RMSPROP:
        rmsprop(o, p, lo, hi);
        break;
    case TRN_OPT_PROXIMAL_ADAGRAD:
        proximal_adagrad(o, p, lo, hi);
        break;
    case TRN_OPT_SGD:
    case TRN_OPT_DEFAULT:
    default:
        sgd(o, p, lo, hi);
        break;
    }
}

double trn_optim_clip_scale(double global_norm, double clip_norm)
{
    return clip_norm / fmax(global_norm, clip_norm);
}

double trn_optim_clip(tparam *ps, size_t n_params, int dnn, double clip_norm)
{
    double ss = 0.0, norm = 0.0; /* the squares of every gradient element, in double */
    float s = 1.0f;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            norm = sqrt(ss);
            if (!(norm > clip_norm))
                break; /* factor 1: the gradients stay as they are, bit for bit */
            s = (float)trn_optim_clip_scale(norm, clip_norm);
        }
        for (size_t i = 0; i < n_params; i++) {
            tparam *p = &ps[i];
            if (p->dnn != dnn || p->kind == TP_BN_MOVING)
                continue;
            size_t nr = p->sparse ? p->n_touched : 1;
            uint64_t w = p->sparse ? p->cols : p->count;
            for (size_t t = 0; t < nr; t++) {
                float *g = p->grad + (p->sparse ? (uint64_t)p->touched[t] * p->cols : 0);
                for (uint64_t k = 0; k < w; k++) {
                    if (pass == 0)
                        ss += (double)g[k] * g[k];
                    else
                        g[k] *= s;
                }
            }
        }
    }
    return norm;
}
