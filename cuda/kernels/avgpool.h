/* Windowed [avgpool] on the device (avgpool.cu): C entry points, each tensor NCHW or NHWC
 * (AvgpoolDims) and float32 or 16-bit (ElemType: the layer's in_storage[0] for in and dx, storage
 * for out and dy). Output (i, j) averages the input rows i*stride - padding .. + size-1 (columns
 * likewise) that lie in the plane, over size*size (torch's count_include_pad=True). Global pooling
 * is planes.h's. */
#ifndef CDL_CUDA_AVGPOOL_H
#define CDL_CUDA_AVGPOOL_H

#include <cuda_runtime_api.h>

#include "core/precision.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The window shapes of a layer: planes = batch * channels; in_nhwc, out_nhwc: in and dx, out and
 * dy [batch][h][w][channels] (channels-last, core/net_channels_last.h). */
typedef struct AvgpoolDims {
    int planes, channels, ih, iw, oh, ow, size, stride, padding;
    int in_nhwc, out_nhwc;
} AvgpoolDims;

/* out [planes][oh][ow] = each window's sum of in [planes][ih][iw] over size*size. */
cudaError_t cuda_avgpool_forward(void *out, ElemType out_type, const void *in, ElemType in_type,
                                 AvgpoolDims d, cudaStream_t stream);
/* dx [planes][ih][iw] += the output gradients dy over size*size of the windows holding each
 * input, added in output order as the CPU adds them. */
cudaError_t cuda_avgpool_backward(void *dx, ElemType in_type, const void *dy, ElemType out_type,
                                  AvgpoolDims d, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
