/* Inverted dropout on the device (dropout.cu): C entry points; each tensor float32 or 16-bit
 * (core/precision.h ElemType), the arithmetic in float. */
#ifndef CDL_CUDA_DROPOUT_H
#define CDL_CUDA_DROPOUT_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#include "core/precision.h"

#ifdef __cplusplus
extern "C" {
#endif

/* For i < n, with d = i / per_draw (per_draw 1: a draw per value; a sample's size: per sample):
 * mask[d] = rng_uniform_at(key, first + d) < p ? 0 : scale, out[i] = in[i] * mask[d] (out of
 * out_type, in of in_type, mask float32): the CPU's draws (util/rng.h) bit for bit. */
/* draw_id: NULL, or device memory whose value replaces key by rng_key(seed, (*draw_id << 16) ^
 * layer), computed on the device (a step captured as a CUDA graph, whose draw id changes). */
cudaError_t cuda_dropout_forward(void *out, ElemType out_type, float *mask, const void *in,
                                 ElemType in_type, uint64_t key, const uint64_t *draw_id,
                                 uint64_t seed, int layer, uint64_t first, float p, float scale,
                                 size_t per_draw, size_t n, cudaStream_t stream);
/* dx[i] += dy[i] * mask[i / per_draw] for i < n (dx of dx_type, dy of dy_type). */
cudaError_t cuda_dropout_backward(void *dx, ElemType dx_type, const void *dy, ElemType dy_type,
                                  const float *mask, size_t per_draw, size_t n,
                                  cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
