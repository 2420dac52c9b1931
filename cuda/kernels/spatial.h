/* Index maps over planes on the device (spatial.cu): [upsample] and [shuffle] (NCHW or NHWC),
 * [reorg], [crop], [pad] (plain NCHW), each tensor float32 or 16-bit (core/precision.h ElemType); C
 * entry points. */
#ifndef CDL_CUDA_SPATIAL_H
#define CDL_CUDA_SPATIAL_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "core/precision.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A map's two tensors: w, written (or added to), and r, read; each float32 or 16-bit. In a forward
 * w is the output and r the input; in a backward w the input's gradient and r the output's. */
typedef struct SpatialTensors {
    void *w;
    const void *r;
    ElemType w_type, r_type;
} SpatialTensors;

/* The planes of a map's two tensors: batch * channels of them, w's and r's each NCHW (0) or NHWC
 * (1: [batch][h][w][channels], core/net_channels_last.h). */
typedef struct SpatialPlanes {
    int batch, channels, w_nhwc, r_nhwc;
} SpatialPlanes;

/* [upsample]'s two maps (backend/cpu/upsample.c): spread, big [planes][sh*s][sw*s] (=, or += with
 * add) scale * small [planes][sh][sw] at (y/s, x/s); gather, small (=, or += with add) the sum of
 * scale * its s x s window of big, in the CPU's order; each tensor in its layout (p). */
cudaError_t cuda_upsample_spread(SpatialTensors big_small, SpatialPlanes p, int sh, int sw, int s,
                                 float scale, int add, cudaStream_t stream);
cudaError_t cuda_upsample_gather(SpatialTensors small_big, SpatialPlanes p, int sh, int sw, int s,
                                 float scale, int add, cudaStream_t stream);
/* darknet's reorg (layers/reorg.c) of in [batch][c][h][w] with stride s, out taken with the
 * input's dims; backward: dx += the permuted dy. */
cudaError_t cuda_reorg_forward(SpatialTensors out_in, int batch, int c, int h, int w, int s,
                               cudaStream_t stream);
cudaError_t cuda_reorg_backward(SpatialTensors dx_dy, int batch, int c, int h, int w, int s,
                                cudaStream_t stream);
/* [shuffle] of in [batch][c][spatial] in groups (layers/shuffle.h's shuffle_source), each tensor
 * in its layout (p); backward: dx += the permuted dy. */
cudaError_t cuda_shuffle_forward(SpatialTensors out_in, SpatialPlanes p, int spatial, int groups,
                                 cudaStream_t stream);
cudaError_t cuda_shuffle_backward(SpatialTensors dx_dy, SpatialPlanes p, int spatial, int groups,
                                  cudaStream_t stream);
/* [pad]'s planes: in [planes][ih][iw] at row top, column left of out [planes][oh][ow]. */
typedef struct PadDims {
    int planes, ih, iw, oh, ow, top, left;
} PadDims;
/* out = in where it lies, value elsewhere. */
cudaError_t cuda_pad_forward(SpatialTensors out_in, PadDims d, float value, cudaStream_t stream);
/* dx += dy's window of the input. */
cudaError_t cuda_pad_backward(SpatialTensors dx_dy, PadDims d, cudaStream_t stream);
/* [crop]'s windows [batch][3] (row offset, column offset, mirrored): with train, sample b's drawn
 * by PCG32 seeded (key, first + b) as the CPU draws them (rng_below of spare_h + 1, of spare_w + 1,
 * then of 2 when flip); else the centre (spare_h / 2, spare_w / 2, 0). With draw_id not NULL (a
 * step captured as a CUDA graph) the key is that of seed, *draw_id and layer, computed on the
 * device (kernels/rng.cuh's layer_key_dev). */
cudaError_t cuda_crop_windows(int *windows, int batch, int spare_h, int spare_w, int flip,
                              int train, uint64_t key, const uint64_t *draw_id, uint64_t seed,
                              int layer, uint64_t first, cudaStream_t stream);
/* The dimensions of a crop: in [batch][c][ih][iw], out [batch][c][oh][ow]. */
typedef struct CropDims {
    int batch, c, ih, iw, oh, ow;
} CropDims;
/* out = in's window * scale + shift. */
cudaError_t cuda_crop_forward(SpatialTensors out_in, const int *windows, CropDims d, float scale,
                              float shift, cudaStream_t stream);
/* dx's window += dy * scale. */
cudaError_t cuda_crop_backward(SpatialTensors dx_dy, const int *windows, CropDims d, float scale,
                               cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
