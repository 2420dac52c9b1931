// Softmax over rows with the cross-entropy loss, and their gradients, as [softmax] computes them
// (backend/cpu/softmax.c): one block per row, templated over the element types of the input and
// its gradient (X) and of the output and its gradient (Y), float, bf16 or fp16; arithmetic in
// float.
//   in, out, dx, dy: (rows, n)   labels, row_loss: (rows)
#include "softmax.h"

#include <float.h>

#include "kernels/dtype.cuh"
#include "kernels/reduce.cuh"
#include "launch.h"

// out = softmax(in) per row; with labels, row_loss[r] = (1 - s) (lse - x[label]) +
// s (lse - mean x), 0 for a label outside [0, n).
template <typename X, typename Y>
__global__ void softmax_forward_kernel(Y *out, float *row_loss, const X *in, const int *labels,
                                       int n, float smoothing)
{
    const X *x = in + (size_t)blockIdx.x * n;
    Y *y = out + (size_t)blockIdx.x * n;
    float m = -FLT_MAX;
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        m = fmaxf(m, to_float(x[i]));
    m = block_max(m);
    float sum = 0.0f, total = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        sum += expf(to_float(x[i]) - m);
        total += to_float(x[i]);
    }
    sum = block_sum(sum);
    total = block_sum(total);
    const float inv = 1.0f / sum;
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        y[i] = from_float<Y>(expf(to_float(x[i]) - m) * inv);
    if (labels && threadIdx.x == 0) {
        const int label = labels[blockIdx.x];
        const float lse = m + logf(sum);
        row_loss[blockIdx.x] = label >= 0 && label < n
                                   ? (1.0f - smoothing) * (lse - to_float(x[label])) +
                                         smoothing * (lse - total / (float)n)
                                   : 0.0f;
    }
}

// dx += the loss's gradient (labels) or the softmax's Jacobian times dy (no labels).
template <typename X, typename Y>
__global__ void softmax_backward_kernel(X *dx, const Y *p, const Y *dy, const int *labels, int n,
                                        float inv_divisor, float smoothing)
{
    const size_t at = (size_t)blockIdx.x * n;
    if (labels) {
        const int label = labels[blockIdx.x];
        if (label < 0 || label >= n)
            return;
        const float all_weight = smoothing / (float)n * inv_divisor;
        for (int i = threadIdx.x; i < n; i += blockDim.x)
            dx[at + i] =
                from_float<X>(to_float(dx[at + i]) + to_float(p[at + i]) * inv_divisor -
                              all_weight - (i == label ? (1.0f - smoothing) * inv_divisor : 0.0f));
        return;
    }
    float dot = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        dot += to_float(p[at + i]) * to_float(dy[at + i]);
    dot = block_sum(dot);
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        dx[at + i] = from_float<X>(to_float(dx[at + i]) +
                                   to_float(p[at + i]) * (to_float(dy[at + i]) - dot));
}

// total = the sum of row_loss in row order, in double (the CPU's order: the same bits from the
// same losses). One thread: the rows of a mini-batch are few.
__global__ void loss_total_kernel(double *total, const float *row_loss, int rows)
{
    double sum = 0;
    for (int r = 0; r < rows; r++)
        sum += row_loss[r];
    *total = sum;
}

// Threads per row: a warp for short rows, up to 256.
static int block_for(int n)
{
    return n <= 32 ? 32 : n <= 64 ? 64 : n <= 128 ? 128 : 256;
}

extern "C" cudaError_t cuda_softmax_forward(void *out, ElemType out_type, float *row_loss,
                                            const void *in, ElemType in_type, const int *labels,
                                            int rows, int n, float smoothing, cudaStream_t stream)
{
    if (rows == 0)
        return cudaSuccess;
    return with_elem_types(in_type, out_type, [&](auto xt, auto yt) {
        using X = typename decltype(xt)::type;
        using Y = typename decltype(yt)::type;
        CUDA_LAUNCH((softmax_forward_kernel<X, Y>), rows, block_for(n), 0, stream, (Y *)out,
                    row_loss, (const X *)in, labels, n, smoothing);
        return cuda_launch_error();
    });
}

extern "C" cudaError_t cuda_softmax_backward(void *dx, ElemType dx_type, const void *p,
                                             const void *dy, ElemType p_type, const int *labels,
                                             int rows, int n, float inv_divisor, float smoothing,
                                             cudaStream_t stream)
{
    if (rows == 0)
        return cudaSuccess;
    return with_elem_types(dx_type, p_type, [&](auto xt, auto yt) {
        using X = typename decltype(xt)::type;
        using Y = typename decltype(yt)::type;
        CUDA_LAUNCH((softmax_backward_kernel<X, Y>), rows, block_for(n), 0, stream, (X *)dx,
                    (const Y *)p, (const Y *)dy, labels, n, inv_divisor, smoothing);
        return cuda_launch_error();
    });
}

extern "C" cudaError_t cuda_loss_total(double *total, const float *row_loss, int rows,
                                       cudaStream_t stream)
{
    CUDA_LAUNCH(loss_total_kernel, 1, 1, 0, stream, total, row_loss, rows);
    return cuda_launch_error();
}
