// Residual sums (backend/cpu/shortcut.c's semantics), elementwise and grid-strided. With shapes
// that differ, darknet's mapping: output (k, y, x) of a sample receives `from` (k, y/sample_h *
// stride_h, x/sample_w * stride_w) where k < channels, y is a multiple of sample_h below
// rows * sample_h, and x likewise; the backward gathers, a thread per value of `from`, the one
// output gradient (if any) that the forward sent it to.
//   prev, y, dy: (batch, out)   from, dfrom: (batch, from)   (per-sample sizes of m)
#include "shortcut.h"

#include "kernels/grid.cuh"
#include "launch.h"

__global__ void shortcut_sum_kernel(float *y, const float *a, const float *b, float alpha,
                                    float beta, size_t n)
{
    GRID_STRIDE_LOOP(i, n)
    {
        y[i] = alpha * a[i] + beta * b[i];
    }
}

__global__ void shortcut_sum_mapped_kernel(float *y, const float *prev, const float *from,
                                           float alpha, float beta, ShortcutMapping m, size_t n)
{
    GRID_STRIDE_LOOP(i, n)
    {
        float v = alpha * prev[i];
        const size_t b = i / m.out_sample, at = i % m.out_sample;
        const int k = (int)(at / m.out_plane), oy = (int)(at % m.out_plane / m.out_w),
                  ox = (int)(at % m.out_w);
        const int j = oy / m.sample_h, c = ox / m.sample_w;
        if (k < m.channels && oy % m.sample_h == 0 && ox % m.sample_w == 0 && j < m.rows &&
            c < m.cols)
            v += beta * from[b * m.from_sample + k * m.from_plane +
                             (size_t)j * m.stride_h * m.from_w + (size_t)c * m.stride_w];
        y[i] = v;
    }
}

__global__ void add_scaled_kernel(float *dst, const float *src, float a, size_t n, int fresh)
{
    GRID_STRIDE_LOOP(i, n)
    {
        dst[i] = (fresh ? 0.0f : dst[i]) + a * src[i];
    }
}

__global__ void shortcut_from_backward_kernel(float *dfrom, const float *dy, float beta,
                                              ShortcutMapping m, size_t n, int fresh)
{
    GRID_STRIDE_LOOP(i, n)
    {
        float v = fresh ? 0.0f : dfrom[i];
        const size_t b = i / m.from_sample, at = i % m.from_sample;
        const int k = (int)(at / m.from_plane), fy = (int)(at % m.from_plane / m.from_w),
                  fx = (int)(at % m.from_w);
        const int j = fy / m.stride_h, c = fx / m.stride_w;
        if (k < m.channels && fy % m.stride_h == 0 && fx % m.stride_w == 0 && j < m.rows &&
            c < m.cols)
            v += beta * dy[b * m.out_sample + k * m.out_plane + (size_t)j * m.sample_h * m.out_w +
                           (size_t)c * m.sample_w];
        dfrom[i] = v;
    }
}

__global__ void shortcut_sum_rows_kernel(float *y, const float *a, const float *b, float alpha,
                                         float beta, size_t sample, size_t offset, size_t row,
                                         size_t n)
{
    GRID_STRIDE_LOOP(t, n)
    {
        const size_t i = t / row * sample + offset + t % row;
        y[i] = alpha * a[i] + beta * b[i];
    }
}

extern "C" cudaError_t cuda_shortcut_sum(float *y, const float *a, const float *b, float alpha,
                                         float beta, size_t n, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    CUDA_LAUNCH(shortcut_sum_kernel, grid_for(n), GRID_BLOCK, 0, stream, y, a, b, alpha, beta, n);
    return cuda_launch_error();
}

extern "C" cudaError_t cuda_shortcut_sum_mapped(float *y, const float *prev, const float *from,
                                                float alpha, float beta, ShortcutMapping m,
                                                int batch, cudaStream_t stream)
{
    const size_t n = (size_t)batch * m.out_sample;
    if (n == 0)
        return cudaSuccess;
    CUDA_LAUNCH(shortcut_sum_mapped_kernel, grid_for(n), GRID_BLOCK, 0, stream, y, prev, from,
                alpha, beta, m, n);
    return cuda_launch_error();
}

extern "C" cudaError_t cuda_add_scaled(float *dst, const float *src, float a, size_t n, int fresh,
                                       cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    CUDA_LAUNCH(add_scaled_kernel, grid_for(n), GRID_BLOCK, 0, stream, dst, src, a, n, fresh);
    return cuda_launch_error();
}

extern "C" cudaError_t cuda_shortcut_from_backward(float *dfrom, const float *dy, float beta,
                                                   ShortcutMapping m, int batch, int fresh,
                                                   cudaStream_t stream)
{
    const size_t n = (size_t)batch * m.from_sample;
    if (n == 0)
        return cudaSuccess;
    CUDA_LAUNCH(shortcut_from_backward_kernel, grid_for(n), GRID_BLOCK, 0, stream, dfrom, dy, beta,
                m, n, fresh);
    return cuda_launch_error();
}

extern "C" cudaError_t cuda_shortcut_sum_rows(float *y, const float *a, const float *b, float alpha,
                                              float beta, int batch, size_t sample, size_t offset,
                                              size_t row, cudaStream_t stream)
{
    const size_t n = (size_t)batch * row;
    if (n == 0)
        return cudaSuccess;
    CUDA_LAUNCH(shortcut_sum_rows_kernel, grid_for(n), GRID_BLOCK, 0, stream, y, a, b, alpha, beta,
                sample, offset, row, n);
    return cuda_launch_error();
}
