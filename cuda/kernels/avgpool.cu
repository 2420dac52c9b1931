// Windowed average pooling (backend/cpu/avgpool.c's semantics): a thread per output sums its
// clipped window in the CPU's order; the backward gathers, a thread per input, the gradients of
// the windows holding it, in output order (the CPU's order of adding them: no atomics). Templated
// over the input's and the output's element types (X: in and dx, Y: out and dy; float, bf16 or
// fp16), summed in float, and over the layouts (a thread per value of the tensor it writes, in
// that tensor's layout).
//   in, dx: (planes, ih, iw)   out, dy: (planes, oh, ow), or either (batch, h, w, channels)
#include "avgpool.h"

#include "kernels/dtype.cuh"
#include "kernels/grid.cuh"
#include "kernels/layout.cuh"
#include "launch.h"

// [*lo, *hi): the rows (or columns) of window i along an axis of extent n inside the plane.
__device__ __forceinline__ void window_span(AvgpoolDims d, int i, int n, int *lo, int *hi)
{
    const int start = i * d.stride - d.padding;
    *lo = start > 0 ? start : 0;
    *hi = start + d.size < n ? start + d.size : n;
}

template <typename X, typename Y>
__global__ void avgpool_forward_kernel(Y *out, const X *in, AvgpoolDims d)
{
    const int out_plane = d.oh * d.ow, in_plane = d.ih * d.iw;
    const size_t n = (size_t)d.planes * out_plane;
    const float inv = 1.0f / (float)(d.size * d.size);
    GRID_STRIDE_LOOP(o, n)
    {
        const int b = image_of(o, d.channels, out_plane);
        const int c = channel_of(o, d.channels, out_plane, d.out_nhwc);
        const int at = pixel_of(o, d.channels, out_plane, d.out_nhwc), i = at / d.ow, j = at % d.ow;
        int y0, y1, x0, x1;
        window_span(d, i, d.ih, &y0, &y1);
        window_span(d, j, d.iw, &x0, &x1);
        float sum = 0.0f;
        for (int y = y0; y < y1; y++)
            for (int x = x0; x < x1; x++)
                sum += to_float(in[index_of(b, c, y * d.iw + x, d.channels, in_plane, d.in_nhwc)]);
        out[o] = from_float<Y>(sum * inv);
    }
}

template <typename X, typename Y>
__global__ void avgpool_backward_kernel(X *dx, const Y *dy, AvgpoolDims d)
{
    const int in_plane = d.ih * d.iw, out_plane = d.oh * d.ow;
    const size_t n = (size_t)d.planes * in_plane;
    const float inv = 1.0f / (float)(d.size * d.size);
    GRID_STRIDE_LOOP(t, n)
    {
        const int b = image_of(t, d.channels, in_plane);
        const int c = channel_of(t, d.channels, in_plane, d.in_nhwc);
        const int at = pixel_of(t, d.channels, in_plane, d.in_nhwc), y = at / d.iw, x = at % d.iw;
        // the windows holding (y, x): i * stride - padding <= y <= i * stride - padding + size - 1
        const int lo_y = y + d.padding - d.size + 1, lo_x = x + d.padding - d.size + 1;
        const int i0 = lo_y > 0 ? (lo_y + d.stride - 1) / d.stride : 0;
        const int j0 = lo_x > 0 ? (lo_x + d.stride - 1) / d.stride : 0;
        const int i1 = (y + d.padding) / d.stride < d.oh ? (y + d.padding) / d.stride : d.oh - 1;
        const int j1 = (x + d.padding) / d.stride < d.ow ? (x + d.padding) / d.stride : d.ow - 1;
        float sum = to_float(dx[t]);
        for (int i = i0; i <= i1; i++)
            for (int j = j0; j <= j1; j++)
                sum +=
                    to_float(dy[index_of(b, c, i * d.ow + j, d.channels, out_plane, d.out_nhwc)]) *
                    inv;
        dx[t] = from_float<X>(sum);
    }
}

extern "C" cudaError_t cuda_avgpool_forward(void *out, ElemType out_type, const void *in,
                                            ElemType in_type, AvgpoolDims d, cudaStream_t stream)
{
    const size_t n = (size_t)d.planes * d.oh * d.ow;
    if (n == 0)
        return cudaSuccess;
    return with_elem_types(in_type, out_type, [&](auto xt, auto yt) {
        using X = typename decltype(xt)::type;
        using Y = typename decltype(yt)::type;
        CUDA_LAUNCH((avgpool_forward_kernel<X, Y>), grid_for(n), GRID_BLOCK, 0, stream, (Y *)out,
                    (const X *)in, d);
        return cuda_launch_error();
    });
}

extern "C" cudaError_t cuda_avgpool_backward(void *dx, ElemType in_type, const void *dy,
                                             ElemType out_type, AvgpoolDims d, cudaStream_t stream)
{
    const size_t n = (size_t)d.planes * d.ih * d.iw;
    if (n == 0)
        return cudaSuccess;
    return with_elem_types(in_type, out_type, [&](auto xt, auto yt) {
        using X = typename decltype(xt)::type;
        using Y = typename decltype(yt)::type;
        CUDA_LAUNCH((avgpool_backward_kernel<X, Y>), grid_for(n), GRID_BLOCK, 0, stream, (X *)dx,
                    (const Y *)dy, d);
        return cuda_launch_error();
    });
}
