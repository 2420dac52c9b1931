/* Batch normalisation (backend/cpu/bn_math.h's semantics: PyTorch's, or darknet's) over activations
 * in oneDNN's blocked layout nChw8c, [batch][c/L][spatial][L] (L = DNNL_LANES,
 * backend/cpu/dnnl_conv.h: 16 with AVX-512, else 8; c a multiple of L): channel ch's values are
 * lane ch % L of block ch / L. The same arguments as batchnorm_forward_train, _eval and
 * batchnorm_backward, the fused activation (BnAct) too; the per-channel sums in double, in a fixed
 * order (results do not depend on the thread count). */
#ifndef CDL_BATCHNORM_BLOCKED_H
#define CDL_BATCHNORM_BLOCKED_H

#include "backend/cpu/bn_math.h"

void batchnorm_blocked_forward_train(const float *x, float *y, float *x_hat, float *inv_std,
                                     const float *scale, const float *bias, float *running_mean,
                                     float *running_var, int batch, int c, int spatial,
                                     float momentum, float eps, int darknet, const BnSync *sync,
                                     const BnAct *act);
void batchnorm_blocked_forward_eval(const float *x, float *y, const float *scale, const float *bias,
                                    const float *running_mean, const float *running_var, int batch,
                                    int c, int spatial, float eps, int darknet);
void batchnorm_blocked_backward(const float *dy, const float *x_hat, const float *inv_std,
                                const float *scale, float *dscale, float *dbias, float *dx,
                                int batch, int c, int spatial, int darknet, const BnSync *sync,
                                const BnAct *act);

#endif
