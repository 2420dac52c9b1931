/* [maxpool] on the device (maxpool.cu): C entry points, float32, plain NCHW. A window of output
 * (i, j) covers input rows i*stride - offset .. + size-1 (columns likewise, offset = darknet's
 * padding/2), clipped to the input. */
#ifndef CDL_CUDA_MAXPOOL_H
#define CDL_CUDA_MAXPOOL_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The window shapes of a layer: planes = batch * channels. */
typedef struct MaxpoolDims {
    int planes, ih, iw, oh, ow, size, stride, offset;
} MaxpoolDims;

/* out [planes][oh][ow] = each window's maximum of in [planes][ih][iw], argmax its index into the
 * input plane: the first of equal values, the last NaN where there is one (the CPU's choice). */
cudaError_t cuda_maxpool_forward(float *out, int *argmax, const float *in, MaxpoolDims d,
                                 cudaStream_t stream);
/* dx [planes][ih][iw] += (or = with fresh, Layer.in_delta_fresh) the output gradients dy of the
 * windows whose argmax each input is, added in output order as the CPU adds them. */
cudaError_t cuda_maxpool_backward(float *dx, const float *dy, const int *argmax, MaxpoolDims d,
                                  int fresh, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
