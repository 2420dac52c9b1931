/* [maxpool] on the device (maxpool.cu): C entry points, NCHW or NHWC, each tensor float32 or
 * 16-bit (ElemType: the layer's in_storage[0] for in and dx, storage for out and dy). A window of
 * output (i, j) covers input rows i*stride - offset .. + size-1 (columns likewise, offset =
 * darknet's padding/2), clipped to the input. */
#ifndef CDL_CUDA_MAXPOOL_H
#define CDL_CUDA_MAXPOOL_H

#include <cuda_runtime_api.h>

#include "core/precision.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The window shapes of a layer: planes = batch * channels; in_nhwc and out_nhwc: the input (and
 * dx) and the output (out, argmax, dy) [batch][h][w][channels] instead of [planes][h][w]. */
typedef struct MaxpoolDims {
    int planes, channels, ih, iw, oh, ow, size, stride, offset;
    int in_nhwc, out_nhwc;
} MaxpoolDims;

/* out [planes][oh][ow] = each window's maximum of in [planes][ih][iw], argmax its index into the
 * input plane: the first of equal values, the last NaN where there is one (the CPU's choice). */
cudaError_t cuda_maxpool_forward(void *out, ElemType out_type, int *argmax, const void *in,
                                 ElemType in_type, MaxpoolDims d, cudaStream_t stream);
/* dx [planes][ih][iw] += (or = with fresh, Layer.in_delta_fresh) the output gradients dy of the
 * windows whose argmax each input is, added in output order as the CPU adds them. */
cudaError_t cuda_maxpool_backward(void *dx, ElemType in_type, const void *dy, ElemType out_type,
                                  const int *argmax, MaxpoolDims d, int fresh, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
