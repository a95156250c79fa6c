/*
 * rt_activate.c — the hidden layers' activations, one way for serving (the
 * forward pass) and training (the trainer's forward and dropout): a file of
 * its own so that its loops are compiled as they always were (O3 under gcc).
 */
#include "rt_model.h"

#include <math.h>

#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("O3"))) /* vectorize the element loops */
#endif
void rt_activate(Predictd__Activation act, float *y, size_t n)
{
    switch (act) {
    case PREDICTD__ACTIVATION__ACT_RELU:
        /* max(x, 0) with NaN kept: TensorFlow's Relu on CPU (and on GPU since
         * TF 1.15.3) passes NaN through instead of hiding it as 0. */
        for (size_t k = 0; k < n; k++)
            y[k] = y[k] < 0.0f ? 0.0f : y[k];
        break;
    case PREDICTD__ACTIVATION__ACT_TANH:
        for (size_t k = 0; k < n; k++)
            y[k] = tanhf(y[k]);
        break;
    case PREDICTD__ACTIVATION__ACT_SIGMOID:
        for (size_t k = 0; k < n; k++) { /* never exp of a large positive */
            float x = y[k];
            if (x >= 0.0f) {
                y[k] = 1.0f / (1.0f + expf(-x));
            } else {
                float e = expf(x);
                y[k] = e / (1.0f + e);
            }
        }
        break;
    case PREDICTD__ACTIVATION__ACT_ELU:
        for (size_t k = 0; k < n; k++)
            y[k] = y[k] > 0.0f ? y[k] : expm1f(y[k]);
        break;
    case PREDICTD__ACTIVATION__ACT_LINEAR:
    default:
        break;
    }
}
