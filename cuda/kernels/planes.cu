// Per-channel work over [batch][channels][spatial] tensors (the bias and its gradient also over
// [batch][spatial][channels] ones, channels_last 1): adding a bias and its gradient, scaling
// by a value per channel and its gradient, global average pooling with its gradient, and scaling
// each plane by its own value with its gradients (all templated over their tensors' element types,
// X: x and dx, Y: y, pooled and dpooled, D: delta, S: a plane's scales and their gradient; summed
// in float).
// Sums over a plane or over a channel's planes run in one block each (fixed order for a given
// shape: the same bits on every run).
//   x, y, delta: (batch, channels, spatial)   bias, dbias: (channels)
//   pooled, scale, dscale: (batch, channels)
#include "planes.h"

#include "kernels/dtype.cuh"
#include "kernels/layout.cuh"
#include "kernels/reduce.cuh"
#include "launch.h"

template <typename X, typename Y>
__global__ void add_bias_kernel(Y *y, const X *x, const float *bias, int channels, int spatial,
                                int channels_last, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] =
            from_float<Y>(to_float(x[i]) + bias[channel_of(i, channels, spatial, channels_last)]);
}

// y = x * scale[channel], or y += that with add.
template <typename X, typename Y>
__global__ void channel_scale_kernel(Y *y, const X *x, const float *scale, int channels,
                                     int spatial, int add, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] = from_float<Y>((add ? to_float(y[i]) : 0.0f) +
                             to_float(x[i]) * scale[(i / spatial) % channels]);
}

// One block per channel: dbias[c] += the sum of delta over the batch and the plane, each value
// times x's (x NULL: times 1).
template <typename D, typename X>
__global__ void bias_grad_kernel(float *dbias, const D *delta, const X *x, int batch, int channels,
                                 int spatial, int channels_last)
{
    const int c = blockIdx.x;
    float sum = 0.0f;
    for (int b = 0; b < batch; b++)
        for (int s = threadIdx.x; s < spatial; s += blockDim.x) {
            const size_t at = index_of(b, c, s, channels, spatial, channels_last);
            sum += x ? to_float(delta[at]) * to_float(x[at]) : to_float(delta[at]);
        }
    sum = block_sum(sum);
    if (threadIdx.x == 0)
        dbias[c] += sum;
}

// One block per plane (b, c): pooled[p] = its mean, from x NCHW or NHWC (channels_last).
template <typename X, typename Y>
__global__ void plane_mean_kernel(Y *pooled, const X *x, int channels, int spatial,
                                  int channels_last)
{
    const int b = blockIdx.x / channels, c = blockIdx.x % channels;
    float sum = 0.0f;
    for (int s = threadIdx.x; s < spatial; s += blockDim.x)
        sum += to_float(x[index_of(b, c, s, channels, spatial, channels_last)]);
    sum = block_sum(sum);
    if (threadIdx.x == 0)
        pooled[blockIdx.x] = from_float<Y>(sum / (float)spatial);
}

template <typename X, typename Y>
__global__ void plane_mean_backward_kernel(X *dx, const Y *dpooled, int channels, int spatial,
                                           int channels_last, size_t n)
{
    const float inv = 1.0f / (float)spatial;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const size_t plane = i / ((size_t)channels * spatial) * channels +
                             channel_of(i, channels, spatial, channels_last);
        dx[i] = from_float<X>(to_float(dx[i]) + to_float(dpooled[plane]) * inv);
    }
}

template <typename S, typename X, typename Y>
__global__ void plane_scale_kernel(Y *y, const X *x, const S *scale, int channels, int spatial,
                                   int channels_last, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const size_t plane = (size_t)image_of(i, channels, spatial) * channels +
                             channel_of(i, channels, spatial, channels_last);
        y[i] = from_float<Y>(to_float(scale[plane]) * to_float(x[i]));
    }
}

// One block per plane: dscale[p] += its sum of dy * x, and dx += dy * scale[p]. dx and dscale may
// be one buffer (the two inputs of [scale_channels] one layer, of 1x1 planes): thread 0 then adds
// both, one after the other.
template <typename S, typename X, typename D>
__global__ void plane_scale_backward_kernel(X *dx, S *dscale, const D *dy, const X *x,
                                            const S *scale, int channels, int spatial,
                                            int channels_last)
{
    const int b = blockIdx.x / channels, c = blockIdx.x % channels;
    const float k = to_float(scale[blockIdx.x]);
    float sum = 0.0f;
    for (int s = threadIdx.x; s < spatial; s += blockDim.x) {
        const size_t at = index_of(b, c, s, channels, spatial, channels_last);
        const float d = to_float(dy[at]);
        sum += d * to_float(x[at]);
        if (dx)
            dx[at] = from_float<X>(to_float(dx[at]) + d * k);
    }
    if (!dscale)
        return;
    sum = block_sum(sum);
    if (threadIdx.x == 0)
        dscale[blockIdx.x] = from_float<S>(to_float(dscale[blockIdx.x]) + sum);
}

static int grid_for(size_t n)
{
    const size_t blocks = (n + 255) / 256;
    return blocks > 4096 ? 4096 : blocks < 1 ? 1 : (int)blocks;
}

static int block_for(int spatial)
{
    return spatial <= 32 ? 32 : spatial <= 128 ? 128 : 256;
}

extern "C" cudaError_t cuda_add_bias(void *y, ElemType y_type, const void *x, ElemType x_type,
                                     const float *bias, int batch, int channels, int spatial,
                                     int channels_last, cudaStream_t stream)
{
    const size_t n = (size_t)batch * channels * spatial;
    if (n == 0)
        return cudaSuccess;
    return with_elem_types(x_type, y_type, [&](auto xt, auto yt) {
        using X = typename decltype(xt)::type;
        using Y = typename decltype(yt)::type;
        CUDA_LAUNCH((add_bias_kernel<X, Y>), grid_for(n), 256, 0, stream, (Y *)y, (const X *)x,
                    bias, channels, spatial, channels_last, n);
        return cuda_launch_error();
    });
}

extern "C" cudaError_t cuda_scale_grad(float *dscale, const void *dy, ElemType dy_type,
                                       const void *x, ElemType x_type, int batch, int channels,
                                       int spatial, cudaStream_t stream)
{
    if (channels == 0)
        return cudaSuccess;
    return with_elem_types(dy_type, x_type, [&](auto dt, auto xt) {
        using D = typename decltype(dt)::type;
        using X = typename decltype(xt)::type;
        CUDA_LAUNCH((bias_grad_kernel<D, X>), channels, block_for(spatial), 0, stream, dscale,
                    (const D *)dy, (const X *)x, batch, channels, spatial, 0);
        return cuda_launch_error();
    });
}

extern "C" cudaError_t cuda_bias_grad(float *dbias, const void *delta, ElemType delta_type,
                                      int batch, int channels, int spatial, int channels_last,
                                      cudaStream_t stream)
{
    if (channels == 0)
        return cudaSuccess;
    return with_elem_type(delta_type, [&](auto dt) {
        using D = typename decltype(dt)::type;
        CUDA_LAUNCH((bias_grad_kernel<D, D>), channels, block_for(spatial), 0, stream, dbias,
                    (const D *)delta, (const D *)NULL, batch, channels, spatial, channels_last);
        return cuda_launch_error();
    });
}

extern "C" cudaError_t cuda_channel_scale(void *y, ElemType y_type, const void *x, ElemType x_type,
                                          const float *scale, int batch, int channels, int spatial,
                                          int add, cudaStream_t stream)
{
    const size_t n = (size_t)batch * channels * spatial;
    if (n == 0)
        return cudaSuccess;
    return with_elem_types(x_type, y_type, [&](auto xt, auto yt) {
        using X = typename decltype(xt)::type;
        using Y = typename decltype(yt)::type;
        CUDA_LAUNCH((channel_scale_kernel<X, Y>), grid_for(n), 256, 0, stream, (Y *)y, (const X *)x,
                    scale, channels, spatial, add, n);
        return cuda_launch_error();
    });
}

extern "C" cudaError_t cuda_plane_mean(void *pooled, ElemType pooled_type, const void *x,
                                       ElemType x_type, int batch, int channels, int spatial,
                                       int channels_last, cudaStream_t stream)
{
    const int planes = batch * channels;
    if (planes == 0)
        return cudaSuccess;
    return with_elem_types(x_type, pooled_type, [&](auto xt, auto yt) {
        using X = typename decltype(xt)::type;
        using Y = typename decltype(yt)::type;
        CUDA_LAUNCH((plane_mean_kernel<X, Y>), planes, block_for(spatial), 0, stream, (Y *)pooled,
                    (const X *)x, channels, spatial, channels_last);
        return cuda_launch_error();
    });
}

extern "C" cudaError_t cuda_plane_mean_backward(void *dx, ElemType x_type, const void *dpooled,
                                                ElemType pooled_type, int batch, int channels,
                                                int spatial, int channels_last, cudaStream_t stream)
{
    const size_t n = (size_t)batch * channels * spatial;
    if (n == 0)
        return cudaSuccess;
    return with_elem_types(x_type, pooled_type, [&](auto xt, auto yt) {
        using X = typename decltype(xt)::type;
        using Y = typename decltype(yt)::type;
        CUDA_LAUNCH((plane_mean_backward_kernel<X, Y>), grid_for(n), 256, 0, stream, (X *)dx,
                    (const Y *)dpooled, channels, spatial, channels_last, n);
        return cuda_launch_error();
    });
}

extern "C" cudaError_t cuda_plane_scale(void *y, ElemType y_type, PlaneScaleInputs in, int batch,
                                        int channels, int spatial, int channels_last,
                                        cudaStream_t stream)
{
    const size_t n = (size_t)batch * channels * spatial;
    if (n == 0)
        return cudaSuccess;
    return with_elem_types(in.scale_type, in.x_type, y_type, [&](auto st, auto xt, auto yt) {
        using S = typename decltype(st)::type;
        using X = typename decltype(xt)::type;
        using Y = typename decltype(yt)::type;
        CUDA_LAUNCH((plane_scale_kernel<S, X, Y>), grid_for(n), 256, 0, stream, (Y *)y,
                    (const X *)in.x, (const S *)in.scale, channels, spatial, channels_last, n);
        return cuda_launch_error();
    });
}

extern "C" cudaError_t cuda_plane_scale_backward(void *dx, void *dscale, const void *dy,
                                                 ElemType dy_type, PlaneScaleInputs in, int batch,
                                                 int channels, int spatial, int channels_last,
                                                 cudaStream_t stream)
{
    const int planes = batch * channels;
    if (planes == 0 || (!dx && !dscale))
        return cudaSuccess;
    return with_elem_types(in.scale_type, in.x_type, dy_type, [&](auto st, auto xt, auto dt) {
        using S = typename decltype(st)::type;
        using X = typename decltype(xt)::type;
        using D = typename decltype(dt)::type;
        CUDA_LAUNCH((plane_scale_backward_kernel<S, X, D>), planes, block_for(spatial), 0, stream,
                    (X *)dx, (S *)dscale, (const D *)dy, (const X *)in.x, (const S *)in.scale,
                    channels, spatial, channels_last);
        return cuda_launch_error();
    });
}
