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

/* Where a mask's draws lie in its key's sequence: draw d, element (d / (rows cols), d / cols %
 * rows, d % cols) of a [blocks][rows][cols] mask, takes value first + ((d / (rows cols)) rows_max +
 * d / cols % rows) cols_max + d % cols, its place in a [blocks][rows_max][cols_max] one: rows and
 * cols all 1 (dropout_draws_dense), value first + d; [attention]'s (pairs, T, S) cut from the
 * cfg's (T, S), [dropout]'s samples [1][values] cut from [1][c T' w] (layers/dropout.h
 * dropout_sample_draws), the draws of the uncut pass. */
typedef struct DropoutDraws {
    uint64_t first;
    uint64_t rows, cols, rows_max, cols_max;
} DropoutDraws;

/* The layout of a mask: channels 0, as its draws count (NCHW); else NHWC,
 * [samples][pixels][channels], whose draw (b, p, c) takes what NCHW draw (b, c, p) takes in
 * DropoutDraws: the mask is stored in its tensor's layout and equals the NCHW one's. */
typedef struct DropoutLayout {
    uint64_t channels, pixels;
} DropoutLayout;

/* The NCHW layout: the mask's draws in their own order. */
static inline DropoutLayout dropout_layout_nchw(void)
{
    const DropoutLayout nchw = {0, 0};
    return nchw;
}

/* Draw d at value first + d. */
static inline DropoutDraws dropout_draws_dense(uint64_t first)
{
    const DropoutDraws dense = {first, 1, 1, 1, 1};
    return dense;
}

/* For i < n, with d = i / per_draw (per_draw 1: a draw per value; a sample's size: per sample):
 * mask[d] = rng_uniform_at(key, v) < p ? 0 : scale with v draw d's value in draws, the mask laid
 * out as layout says (NHWC: per_draw 1), out[i] = in[i] mask[d] (out of out_type, in of in_type,
 * mask float32): the CPU's draws (util/rng.h) bit for bit.
 * draw_id: NULL, or device memory whose value replaces key by rng_key(seed, (*draw_id << 16) ^
 * layer), computed on the device (a step captured as a CUDA graph, whose draw id changes). */
cudaError_t cuda_dropout_forward(void *out, ElemType out_type, float *mask, const void *in,
                                 ElemType in_type, uint64_t key, const uint64_t *draw_id,
                                 uint64_t seed, int layer, DropoutDraws draws, DropoutLayout layout,
                                 float p, float scale, size_t per_draw, size_t n,
                                 cudaStream_t stream);
/* dx[i] += dy[i] * mask[i / per_draw] for i < n (dx of dx_type, dy of dy_type). */
cudaError_t cuda_dropout_backward(void *dx, ElemType dx_type, const void *dy, ElemType dy_type,
                                  const float *mask, size_t per_draw, size_t n,
                                  cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
