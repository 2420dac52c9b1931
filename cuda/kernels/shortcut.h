/* [shortcut]'s sums on the device (shortcut.cu): C entry points, float32, plain NCHW, with
 * darknet's mapping between a `from` input and an output of other shapes (layers/shortcut.h's
 * ShortcutMapping, passed by value). */
#ifndef CDL_CUDA_SHORTCUT_H
#define CDL_CUDA_SHORTCUT_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#include "layers/shortcut.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y[i] = alpha * a[i] + beta * b[i] for n values. */
cudaError_t cuda_shortcut_sum(float *y, const float *a, const float *b, float alpha, float beta,
                              size_t n, cudaStream_t stream);
/* y [batch][out] = alpha * prev [batch][out], plus beta * from [batch][from] mapped by m where it
 * maps. */
cudaError_t cuda_shortcut_sum_mapped(float *y, const float *prev, const float *from, float alpha,
                                     float beta, ShortcutMapping m, int batch, cudaStream_t stream);
/* dst[i] = (fresh ? 0 : dst[i]) + a * src[i] for n values. */
cudaError_t cuda_add_scaled(float *dst, const float *src, float a, size_t n, int fresh,
                            cudaStream_t stream);
/* dfrom [batch][from] = (fresh ? 0 : dfrom) + beta * the output gradient dy [batch][out] that
 * mapping m sends each value of `from` to (none for the values it skips). */
cudaError_t cuda_shortcut_from_backward(float *dfrom, const float *dy, float beta,
                                        ShortcutMapping m, int batch, int fresh,
                                        cudaStream_t stream);
/* rows [batch] of row values, sample values apart, from offset on: y = alpha * a + beta * b
 * (forward_at's row t of every sample). */
cudaError_t cuda_shortcut_sum_rows(float *y, const float *a, const float *b, float alpha,
                                   float beta, int batch, size_t sample, size_t offset, size_t row,
                                   cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
