// Where a channel's values sit in a [batch][c][spatial] tensor (NCHW, channels_last 0) or a
// [batch][spatial][c] one (NHWC, channels_last 1): what the per-channel kernels (bias, batch norm)
// index with, so that one kernel serves both layouts (core/net_channels_last.h).
#ifndef CDL_CUDA_LAYOUT_CUH
#define CDL_CUDA_LAYOUT_CUH

#include <stddef.h>

// The channel of element i.
__host__ __device__ inline int channel_of(size_t i, int c, int spatial, int channels_last)
{
    return (int)(channels_last ? i % (size_t)c : i / (size_t)spatial % (size_t)c);
}

// The index of value (b, ch, s).
__host__ __device__ inline size_t index_of(int b, int ch, int s, int c, int spatial,
                                           int channels_last)
{
    return channels_last ? ((size_t)b * spatial + s) * c + ch : ((size_t)b * c + ch) * spatial + s;
}

// The image of element i.
__host__ __device__ inline int image_of(size_t i, int c, int spatial)
{
    return (int)(i / ((size_t)c * spatial));
}

// The pixel (index within the plane) of element i.
__host__ __device__ inline int pixel_of(size_t i, int c, int spatial, int channels_last)
{
    return (int)(channels_last ? i / (size_t)c % (size_t)spatial : i % (size_t)spatial);
}

#endif
