// Max pooling with darknet's padding (backend/cpu/maxpool.c's semantics): a thread per output
// scans its clipped window as the CPU does, keeping the argmax; the backward gathers, a thread
// per input, the gradients of the outputs that took it, in output order (the CPU's order of
// adding them: the same bits, no atomics). Templated over the input's and the output's element
// types (X: in and dx, Y: out and dy; float, bf16 or fp16), compared and summed in float.
//   in, dx: (planes, ih, iw)   out, argmax, dy: (planes, oh, ow)
// each of the two sides NHWC instead where MaxpoolDims says (planes = batch * channels; argmax
// the index into the input plane, y * iw + x, either way).
#include "maxpool.h"

#include <math.h>

#include "kernels/dtype.cuh"
#include "kernels/grid.cuh"
#include "kernels/layout.cuh"
#include "launch.h"

// v takes a window's maximum from best: greater, or NaN (backend/cpu/maxpool.c's beats; without
// a NaN in the plane the CPU's plain v > best gives the same choices).
__device__ __forceinline__ bool beats(float v, float best)
{
    return v > best || v != v;
}

template <typename X, typename Y>
__global__ void maxpool_forward_kernel(Y *out, int *argmax, const X *in, MaxpoolDims d)
{
    const int out_plane = d.oh * d.ow, in_plane = d.ih * d.iw;
    const size_t n = (size_t)d.planes * out_plane;
    GRID_STRIDE_LOOP(o, n)
    {
        const int c = channel_of(o, d.channels, out_plane, d.out_nhwc);
        const int b = (int)(o / ((size_t)out_plane * d.channels));
        const int at_out = (int)(d.out_nhwc ? o / d.channels % out_plane : o % out_plane);
        const int i = at_out / d.ow, j = at_out % d.ow;
        const int y0 = i * d.stride - d.offset, x0 = j * d.stride - d.offset;
        const int ys = y0 > 0 ? y0 : 0, ye = y0 + d.size < d.ih ? y0 + d.size : d.ih;
        const int xs = x0 > 0 ? x0 : 0, xe = x0 + d.size < d.iw ? x0 + d.size : d.iw;
        float best = -INFINITY;
        int at = ys * d.iw + xs;
        for (int y = ys; y < ye; y++)
            for (int x = xs; x < xe; x++) {
                const float v =
                    to_float(in[index_of(b, c, y * d.iw + x, d.channels, in_plane, d.in_nhwc)]);
                if (beats(v, best)) {
                    best = v;
                    at = y * d.iw + x;
                }
            }
        out[o] = from_float<Y>(best);
        argmax[o] = at;
    }
}

template <typename X, typename Y>
__global__ void maxpool_backward_kernel(X *dx, const Y *dy, const int *argmax, MaxpoolDims d,
                                        int fresh)
{
    const int in_plane = d.ih * d.iw, out_plane = d.oh * d.ow;
    const size_t n = (size_t)d.planes * in_plane;
    GRID_STRIDE_LOOP(t, n)
    {
        const int c = channel_of(t, d.channels, in_plane, d.in_nhwc);
        const int b = (int)(t / ((size_t)in_plane * d.channels));
        const int at = (int)(d.in_nhwc ? t / d.channels % in_plane : t % in_plane);
        const int y = at / d.iw, x = at % d.iw;
        // the windows holding (y, x): i * stride - offset <= y <= i * stride - offset + size - 1
        const int lo_y = y + d.offset - d.size + 1, lo_x = x + d.offset - d.size + 1;
        const int i0 = lo_y > 0 ? (lo_y + d.stride - 1) / d.stride : 0;
        const int j0 = lo_x > 0 ? (lo_x + d.stride - 1) / d.stride : 0;
        const int i1 = (y + d.offset) / d.stride < d.oh ? (y + d.offset) / d.stride : d.oh - 1;
        const int j1 = (x + d.offset) / d.stride < d.ow ? (x + d.offset) / d.stride : d.ow - 1;
        float sum = fresh ? 0.0f : to_float(dx[t]);
        for (int i = i0; i <= i1; i++)
            for (int j = j0; j <= j1; j++) {
                const size_t o = index_of(b, c, i * d.ow + j, d.channels, out_plane, d.out_nhwc);
                if (argmax[o] == at)
                    sum += to_float(dy[o]);
            }
        dx[t] = from_float<X>(sum);
    }
}

extern "C" cudaError_t cuda_maxpool_forward(void *out, ElemType out_type, int *argmax,
                                            const void *in, ElemType in_type, MaxpoolDims d,
                                            cudaStream_t stream)
{
    const size_t n = (size_t)d.planes * d.oh * d.ow;
    if (n == 0)
        return cudaSuccess;
    return with_elem_types(in_type, out_type, [&](auto xt, auto yt) {
        using X = typename decltype(xt)::type;
        using Y = typename decltype(yt)::type;
        CUDA_LAUNCH((maxpool_forward_kernel<X, Y>), grid_for(n), GRID_BLOCK, 0, stream, (Y *)out,
                    argmax, (const X *)in, d);
        return cuda_launch_error();
    });
}

extern "C" cudaError_t cuda_maxpool_backward(void *dx, ElemType in_type, const void *dy,
                                             ElemType out_type, const int *argmax, MaxpoolDims d,
                                             int fresh, cudaStream_t stream)
{
    const size_t n = (size_t)d.planes * d.ih * d.iw;
    if (n == 0)
        return cudaSuccess;
    return with_elem_types(in_type, out_type, [&](auto xt, auto yt) {
        using X = typename decltype(xt)::type;
        using Y = typename decltype(yt)::type;
        CUDA_LAUNCH((maxpool_backward_kernel<X, Y>), grid_for(n), GRID_BLOCK, 0, stream, (X *)dx,
                    (const Y *)dy, argmax, d, fresh);
        return cuda_launch_error();
    });
}
