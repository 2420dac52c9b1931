// Residual sums (backend/cpu/shortcut.c's semantics), elementwise and grid-strided. With shapes
// that differ, darknet's mapping: output (k, y, x) of a sample receives `from` (k, y/sample_h *
// stride_h, x/sample_w * stride_w) where k < channels, y is a multiple of sample_h below
// rows * sample_h, and x likewise; the backward gathers, a thread per value of `from`, the one
// output gradient (if any) that the forward sent it to.
// Each tensor is float, bf16 or fp16 (templates: A for prev, B for from, Y for y, D for dy, G for
// a gradient written), summed in float.
//   prev, y, dy: (batch, out)   from, dfrom: (batch, from)   (per-sample sizes of m)
#include "shortcut.h"

#include "kernels/dtype.cuh"
#include "kernels/grid.cuh"
#include "launch.h"

template <typename A, typename B, typename Y>
__global__ void shortcut_sum_kernel(Y *y, const A *a, const B *b, float alpha, float beta, size_t n)
{
    GRID_STRIDE_LOOP(i, n)
    {
        y[i] = from_float<Y>(alpha * to_float(a[i]) + beta * to_float(b[i]));
    }
}

template <typename A, typename B, typename Y>
__global__ void shortcut_sum_mapped_kernel(Y *y, const A *prev, const B *from, float alpha,
                                           float beta, ShortcutMapping m, size_t n)
{
    GRID_STRIDE_LOOP(i, n)
    {
        float v = alpha * to_float(prev[i]);
        const size_t b = i / m.out_sample, at = i % m.out_sample;
        const int k = (int)(at / m.out_plane), oy = (int)(at % m.out_plane / m.out_w),
                  ox = (int)(at % m.out_w);
        const int j = oy / m.sample_h, c = ox / m.sample_w;
        if (k < m.channels && oy % m.sample_h == 0 && ox % m.sample_w == 0 && j < m.rows &&
            c < m.cols)
            v += beta * to_float(from[b * m.from_sample + k * m.from_plane +
                                      (size_t)j * m.stride_h * m.from_w + (size_t)c * m.stride_w]);
        y[i] = from_float<Y>(v);
    }
}

template <typename D, typename G>
__global__ void add_scaled_kernel(G *dst, const D *src, float a, size_t n, int fresh)
{
    GRID_STRIDE_LOOP(i, n)
    {
        dst[i] = from_float<G>((fresh ? 0.0f : to_float(dst[i])) + a * to_float(src[i]));
    }
}

template <typename D, typename G>
__global__ void shortcut_from_backward_kernel(G *dfrom, const D *dy, float beta, ShortcutMapping m,
                                              size_t n, int fresh)
{
    GRID_STRIDE_LOOP(i, n)
    {
        float v = fresh ? 0.0f : to_float(dfrom[i]);
        const size_t b = i / m.from_sample, at = i % m.from_sample;
        const int k = (int)(at / m.from_plane), fy = (int)(at % m.from_plane / m.from_w),
                  fx = (int)(at % m.from_w);
        const int j = fy / m.stride_h, c = fx / m.stride_w;
        if (k < m.channels && fy % m.stride_h == 0 && fx % m.stride_w == 0 && j < m.rows &&
            c < m.cols)
            v += beta * to_float(dy[b * m.out_sample + k * m.out_plane +
                                    (size_t)j * m.sample_h * m.out_w + (size_t)c * m.sample_w]);
        dfrom[i] = from_float<G>(v);
    }
}

template <typename A, typename B, typename Y>
__global__ void shortcut_sum_rows_kernel(Y *y, const A *a, const B *b, float alpha, float beta,
                                         size_t sample, size_t offset, size_t row, size_t n)
{
    GRID_STRIDE_LOOP(t, n)
    {
        const size_t i = t / row * sample + offset + t % row;
        y[i] = from_float<Y>(alpha * to_float(a[i]) + beta * to_float(b[i]));
    }
}

// Returns f(ElemTag<A>(), ElemTag<B>(), ElemTag<Y>()) for the types of a sum's three tensors.
template <typename F> static cudaError_t with_sum_types(ShortcutTensors t, F f)
{
    return with_elem_types(t.prev_type, t.from_type, t.y_type, f);
}

extern "C" cudaError_t cuda_shortcut_sum(ShortcutTensors t, float alpha, float beta, size_t n,
                                         cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    return with_sum_types(t, [&](auto at, auto bt, auto yt) {
        using A = typename decltype(at)::type;
        using B = typename decltype(bt)::type;
        using Y = typename decltype(yt)::type;
        CUDA_LAUNCH((shortcut_sum_kernel<A, B, Y>), grid_for(n), GRID_BLOCK, 0, stream, (Y *)t.y,
                    (const A *)t.prev, (const B *)t.from, alpha, beta, n);
        return cuda_launch_error();
    });
}

extern "C" cudaError_t cuda_shortcut_sum_mapped(ShortcutTensors t, float alpha, float beta,
                                                ShortcutMapping m, int batch, cudaStream_t stream)
{
    const size_t n = (size_t)batch * m.out_sample;
    if (n == 0)
        return cudaSuccess;
    return with_sum_types(t, [&](auto at, auto bt, auto yt) {
        using A = typename decltype(at)::type;
        using B = typename decltype(bt)::type;
        using Y = typename decltype(yt)::type;
        CUDA_LAUNCH((shortcut_sum_mapped_kernel<A, B, Y>), grid_for(n), GRID_BLOCK, 0, stream,
                    (Y *)t.y, (const A *)t.prev, (const B *)t.from, alpha, beta, m, n);
        return cuda_launch_error();
    });
}

extern "C" cudaError_t cuda_add_scaled(void *dst, ElemType dst_type, const void *src,
                                       ElemType src_type, float a, size_t n, int fresh,
                                       cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    return with_elem_types(src_type, dst_type, [&](auto dt, auto gt) {
        using D = typename decltype(dt)::type;
        using G = typename decltype(gt)::type;
        CUDA_LAUNCH((add_scaled_kernel<D, G>), grid_for(n), GRID_BLOCK, 0, stream, (G *)dst,
                    (const D *)src, a, n, fresh);
        return cuda_launch_error();
    });
}

extern "C" cudaError_t cuda_shortcut_from_backward(void *dfrom, ElemType dfrom_type, const void *dy,
                                                   ElemType dy_type, float beta, ShortcutMapping m,
                                                   int batch, int fresh, cudaStream_t stream)
{
    const size_t n = (size_t)batch * m.from_sample;
    if (n == 0)
        return cudaSuccess;
    return with_elem_types(dy_type, dfrom_type, [&](auto dt, auto gt) {
        using D = typename decltype(dt)::type;
        using G = typename decltype(gt)::type;
        CUDA_LAUNCH((shortcut_from_backward_kernel<D, G>), grid_for(n), GRID_BLOCK, 0, stream,
                    (G *)dfrom, (const D *)dy, beta, m, n, fresh);
        return cuda_launch_error();
    });
}

extern "C" cudaError_t cuda_shortcut_sum_rows(ShortcutTensors t, float alpha, float beta, int batch,
                                              size_t sample, size_t offset, size_t row,
                                              cudaStream_t stream)
{
    const size_t n = (size_t)batch * row;
    if (n == 0)
        return cudaSuccess;
    return with_sum_types(t, [&](auto at, auto bt, auto yt) {
        using A = typename decltype(at)::type;
        using B = typename decltype(bt)::type;
        using Y = typename decltype(yt)::type;
        CUDA_LAUNCH((shortcut_sum_rows_kernel<A, B, Y>), grid_for(n), GRID_BLOCK, 0, stream,
                    (Y *)t.y, (const A *)t.prev, (const B *)t.from, alpha, beta, sample, offset,
                    row, n);
        return cuda_launch_error();
    });
}
