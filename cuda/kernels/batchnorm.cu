// Batch normalisation over (batch, c, spatial) tensors, or (batch, spatial, c) ones with
// channels_last (each sum in the same order either way), as backend/cpu/batchnorm.c computes it: a
// channel's sums (sum and sum of squares in training, dy and dy * x_hat in the backward) in double,
// by one block per channel over its planes in a fixed order (the same bits on every run), then the
// elementwise passes grid-strided over the whole tensor. x, y, dy and dx each float, bf16 or fp16
// (templates: X for x, Y for y, D for dy, G for dx), x_hat and the statistics float.
//   x, y, x_hat, dy, dx: (batch, c, spatial)
//   scale, bias, running_mean, running_var, mean, inv_std, dscale, dbias: (c)   sums: (2c)
#include "batchnorm.h"

#include <math.h>

#include "kernels/dtype.cuh"
#include "kernels/layout.cuh"
#include "launch.h"

#define STATS_THREADS 256

// The sums of *a and *b over the block, in every thread. blockDim.x is a multiple of 32 and every
// thread calls it.
__device__ inline void block_sum_pair(double *a, double *b)
{
    __shared__ double partial[2][32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    for (int offset = 16; offset > 0; offset >>= 1) {
        *a += __shfl_xor_sync(0xffffffffu, *a, offset);
        *b += __shfl_xor_sync(0xffffffffu, *b, offset);
    }
    if (lane == 0) {
        partial[0][warp] = *a;
        partial[1][warp] = *b;
    }
    __syncthreads();
    *a = lane < warps ? partial[0][lane] : 0.0;
    *b = lane < warps ? partial[1][lane] : 0.0;
    for (int offset = 16; offset > 0; offset >>= 1) {
        *a += __shfl_xor_sync(0xffffffffu, *a, offset);
        *b += __shfl_xor_sync(0xffffffffu, *b, offset);
    }
    __syncthreads();
}

// backend/cpu/bn_math.c's batchnorm_train_inv_std: 1/sqrt(var + eps), or darknet's
// 1/(sqrt(unbiased var) + 1e-6), of a channel of n values with the biased variance var.
__device__ inline double train_inv_std(double var, double n, float eps, int darknet)
{
    if (!darknet)
        return 1.0 / sqrt(var + (double)eps);
    return 1.0 / (sqrt(n > 1.0 ? var * n / (n - 1.0) : var) + 0.000001);
}

// backend/cpu/bn_math.c's batchnorm_xhat_gain: the factor on x_hat * mean(dy * x_hat) in dx.
__device__ inline float xhat_gain(float inv_std, double n, int darknet)
{
    if (!darknet)
        return 1.0f;
    const double s = 1.0 / (double)inv_std, std = s - 0.000001;
    return n > 1.0 && std > 0.0 ? (float)(n * s / ((n - 1.0) * std)) : 0.0f;
}

// One block per channel: its batch mean and inv_std, and the running statistics moved (channel
// _stats in backend/cpu/batchnorm.c, the same float and double expressions).
template <typename X>
__global__ void batchnorm_stats_kernel(float *mean, float *inv_std, float *running_mean,
                                       float *running_var, const X *x, int batch, int c,
                                       int spatial, int channels_last, float momentum, float eps,
                                       int darknet)
{
    const int ch = blockIdx.x;
    double sum = 0.0, sum_sq = 0.0;
    for (int b = 0; b < batch; b++)
        for (int s = threadIdx.x; s < spatial; s += blockDim.x) {
            const double v = to_float(x[index_of(b, ch, s, c, spatial, channels_last)]);
            sum += v;
            sum_sq += v * v;
        }
    block_sum_pair(&sum, &sum_sq);
    if (threadIdx.x != 0)
        return;
    const double n = (double)batch * spatial, m = sum / n;
    double var = sum_sq / n - m * m;
    if (var < 0.0)
        var = 0.0;
    mean[ch] = (float)m;
    inv_std[ch] = (float)train_inv_std(var, n, eps, darknet);
    if (!running_mean)
        return;
    const double unbiased = n > 1.0 ? var * n / (n - 1.0) : var;
    running_mean[ch] = (1.0f - momentum) * running_mean[ch] + momentum * (float)m;
    running_var[ch] = (1.0f - momentum) * running_var[ch] + momentum * (float)unbiased;
}

template <typename X, typename Y>
__global__ void batchnorm_normalize_kernel(Y *y, float *x_hat, const X *x, const float *mean,
                                           const float *inv_std, const float *scale,
                                           const float *bias, int c, int spatial, int channels_last,
                                           size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const int ch = channel_of(i, c, spatial, channels_last);
        const float h = (to_float(x[i]) - mean[ch]) * inv_std[ch];
        x_hat[i] = h;
        y[i] = from_float<Y>(h * scale[ch] + bias[ch]);
    }
}

template <typename X, typename Y>
__global__ void batchnorm_eval_kernel(Y *y, const X *x, const float *scale, const float *bias,
                                      const float *running_mean, const float *running_var, int c,
                                      int spatial, int channels_last, float eps, int darknet,
                                      size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const int ch = channel_of(i, c, spatial, channels_last);
        const float std =
            darknet ? sqrtf(running_var[ch]) + 0.000001f : sqrtf(running_var[ch] + eps);
        const float a = scale[ch] / std, b = bias[ch] - running_mean[ch] * a;
        y[i] = from_float<Y>(to_float(x[i]) * a + b);
    }
}

// One block per channel: the sums of dy and dy * x_hat, added into the parameter gradients and
// kept in sums for the input gradient.
template <typename D>
__global__ void batchnorm_grad_sums_kernel(double *sums, float *dscale, float *dbias, const D *dy,
                                           const float *x_hat, int batch, int c, int spatial,
                                           int channels_last)
{
    const int ch = blockIdx.x;
    double sum_dy = 0.0, sum_dy_xhat = 0.0;
    for (int b = 0; b < batch; b++)
        for (int s = threadIdx.x; s < spatial; s += blockDim.x) {
            const size_t at = index_of(b, ch, s, c, spatial, channels_last);
            const double d = to_float(dy[at]);
            sum_dy += d;
            sum_dy_xhat += d * x_hat[at];
        }
    block_sum_pair(&sum_dy, &sum_dy_xhat);
    if (threadIdx.x != 0)
        return;
    dbias[ch] += (float)sum_dy;
    dscale[ch] += (float)sum_dy_xhat;
    sums[2 * ch] = sum_dy;
    sums[2 * ch + 1] = sum_dy_xhat;
}

// dx = scale * inv_std * (dy - mean(dy) - x_hat * mean(dy * x_hat) * gain), as plane_dx.
template <typename D, typename G>
__global__ void batchnorm_dx_kernel(G *dx, float dx_beta, const double *sums, const D *dy,
                                    const float *x_hat, const float *inv_std, const float *scale,
                                    double count, int c, int spatial, int channels_last,
                                    int darknet, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const int ch = channel_of(i, c, spatial, channels_last);
        const float k = scale[ch] * inv_std[ch];
        const float mean_dy = (float)(sums[2 * ch] / count);
        const float mean_dy_xhat =
            (float)(sums[2 * ch + 1] / count) * xhat_gain(inv_std[ch], count, darknet);
        const float v = k * (to_float(dy[i]) - mean_dy - x_hat[i] * mean_dy_xhat);
        dx[i] = from_float<G>(dx_beta != 0.0f ? dx_beta * to_float(dx[i]) + v : v);
    }
}

static int grid_for(size_t n)
{
    const size_t blocks = (n + 255) / 256;
    return blocks > 65536 ? 65536 : blocks < 1 ? 1 : (int)blocks;
}

extern "C" cudaError_t cuda_batchnorm_forward_train(void *y, ElemType y_type, float *x_hat,
                                                    float *mean, float *inv_std, const void *x,
                                                    ElemType x_type, const float *scale,
                                                    const float *bias, float *running_mean,
                                                    float *running_var, int batch, int c,
                                                    int spatial, int channels_last, float momentum,
                                                    float eps, int darknet, cudaStream_t stream)
{
    const size_t n = (size_t)batch * c * spatial;
    if (n == 0)
        return cudaSuccess;
    return with_elem_types(x_type, y_type, [&](auto xt, auto yt) {
        using X = typename decltype(xt)::type;
        using Y = typename decltype(yt)::type;
        CUDA_LAUNCH(batchnorm_stats_kernel<X>, c, STATS_THREADS, 0, stream, mean, inv_std,
                    running_mean, running_var, (const X *)x, batch, c, spatial, channels_last,
                    momentum, eps, darknet);
        cudaError_t err = cuda_launch_error();
        if (err != cudaSuccess)
            return err;
        CUDA_LAUNCH((batchnorm_normalize_kernel<X, Y>), grid_for(n), 256, 0, stream, (Y *)y, x_hat,
                    (const X *)x, mean, inv_std, scale, bias, c, spatial, channels_last, n);
        return cuda_launch_error();
    });
}

extern "C" cudaError_t cuda_batchnorm_forward_eval(void *y, ElemType y_type, const void *x,
                                                   ElemType x_type, const float *scale,
                                                   const float *bias, const float *running_mean,
                                                   const float *running_var, int batch, int c,
                                                   int spatial, int channels_last, float eps,
                                                   int darknet, cudaStream_t stream)
{
    const size_t n = (size_t)batch * c * spatial;
    if (n == 0)
        return cudaSuccess;
    return with_elem_types(x_type, y_type, [&](auto xt, auto yt) {
        using X = typename decltype(xt)::type;
        using Y = typename decltype(yt)::type;
        CUDA_LAUNCH((batchnorm_eval_kernel<X, Y>), grid_for(n), 256, 0, stream, (Y *)y,
                    (const X *)x, scale, bias, running_mean, running_var, c, spatial, channels_last,
                    eps, darknet, n);
        return cuda_launch_error();
    });
}

extern "C" cudaError_t cuda_batchnorm_backward(void *dx, ElemType dx_type, float dx_beta,
                                               float *dscale, float *dbias, double *sums,
                                               const void *dy, ElemType dy_type, const float *x_hat,
                                               const float *inv_std, const float *scale, int batch,
                                               int c, int spatial, int channels_last, int darknet,
                                               cudaStream_t stream)
{
    const size_t n = (size_t)batch * c * spatial;
    if (n == 0)
        return cudaSuccess;
    return with_elem_types(dy_type, dx_type, [&](auto dt, auto gt) {
        using D = typename decltype(dt)::type;
        using G = typename decltype(gt)::type;
        CUDA_LAUNCH(batchnorm_grad_sums_kernel<D>, c, STATS_THREADS, 0, stream, sums, dscale, dbias,
                    (const D *)dy, x_hat, batch, c, spatial, channels_last);
        cudaError_t err = cuda_launch_error();
        if (err != cudaSuccess || !dx)
            return err;
        CUDA_LAUNCH((batchnorm_dx_kernel<D, G>), grid_for(n), 256, 0, stream, (G *)dx, dx_beta,
                    sums, (const D *)dy, x_hat, inv_std, scale, (double)batch * spatial, c, spatial,
                    channels_last, darknet, n);
        return cuda_launch_error();
    });
}
