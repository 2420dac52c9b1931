/* [shortcut]'s sums on the device (shortcut.cu): C entry points, each tensor float32 or 16-bit
 * (core/precision.h ElemType, summed in float), plain NCHW, with
 * darknet's mapping between a `from` input and an output of other shapes (layers/shortcut.h's
 * ShortcutMapping, passed by value). */
#ifndef CDL_CUDA_SHORTCUT_H
#define CDL_CUDA_SHORTCUT_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#include "core/precision.h"
#include "layers/shortcut.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A sum's tensors: its output y and its inputs prev and from, each float32 or 16-bit. */
typedef struct ShortcutTensors {
    void *y;
    const void *prev, *from;
    ElemType y_type, prev_type, from_type;
} ShortcutTensors;

/* y[i] = alpha * prev[i] + beta * from[i] for n values. */
cudaError_t cuda_shortcut_sum(ShortcutTensors t, float alpha, float beta, size_t n,
                              cudaStream_t stream);
/* y [batch][out] = alpha * prev [batch][out], plus beta * from [batch][from] mapped by m where it
 * maps. */
cudaError_t cuda_shortcut_sum_mapped(ShortcutTensors t, float alpha, float beta, ShortcutMapping m,
                                     int batch, cudaStream_t stream);
/* dst[i] = (fresh ? 0 : dst[i]) + a * src[i] for n values, each of its type. */
cudaError_t cuda_add_scaled(void *dst, ElemType dst_type, const void *src, ElemType src_type,
                            float a, size_t n, int fresh, cudaStream_t stream);
/* dfrom [batch][from] = (fresh ? 0 : dfrom) + beta * the output gradient dy [batch][out] that
 * mapping m sends each value of `from` to (none for the values it skips). */
cudaError_t cuda_shortcut_from_backward(void *dfrom, ElemType dfrom_type, const void *dy,
                                        ElemType dy_type, float beta, ShortcutMapping m, int batch,
                                        int fresh, cudaStream_t stream);
/* rows [batch] of row values, sample values apart, from offset on: y = alpha * prev + beta * from
 * (forward_at's row t of every sample). */
cudaError_t cuda_shortcut_sum_rows(ShortcutTensors t, float alpha, float beta, int batch,
                                   size_t sample, size_t offset, size_t row, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
