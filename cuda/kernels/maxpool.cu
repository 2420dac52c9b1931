// Max pooling with darknet's padding (backend/cpu/maxpool.c's semantics): a thread per output
// scans its clipped window as the CPU does, keeping the argmax; the backward gathers, a thread
// per input, the gradients of the outputs that took it, in output order (the CPU's order of
// adding them: the same bits, no atomics).
//   in, dx: (planes, ih, iw)   out, argmax, dy: (planes, oh, ow)
#include "maxpool.h"

#include <math.h>

#include "kernels/grid.cuh"
#include "launch.h"

// v takes a window's maximum from best: greater, or NaN (backend/cpu/maxpool.c's beats; without
// a NaN in the plane the CPU's plain v > best gives the same choices).
__device__ __forceinline__ bool beats(float v, float best)
{
    return v > best || v != v;
}

__global__ void maxpool_forward_kernel(float *out, int *argmax, const float *in, MaxpoolDims d)
{
    const size_t out_plane = (size_t)d.oh * d.ow, n = (size_t)d.planes * out_plane;
    GRID_STRIDE_LOOP(o, n)
    {
        const size_t p = o / out_plane;
        const int i = (int)(o % out_plane / d.ow), j = (int)(o % d.ow);
        const int y0 = i * d.stride - d.offset, x0 = j * d.stride - d.offset;
        const int ys = y0 > 0 ? y0 : 0, ye = y0 + d.size < d.ih ? y0 + d.size : d.ih;
        const int xs = x0 > 0 ? x0 : 0, xe = x0 + d.size < d.iw ? x0 + d.size : d.iw;
        const float *plane = in + p * d.ih * d.iw;
        float best = -INFINITY;
        int at = ys * d.iw + xs;
        for (int y = ys; y < ye; y++)
            for (int x = xs; x < xe; x++) {
                const float v = plane[y * d.iw + x];
                if (beats(v, best)) {
                    best = v;
                    at = y * d.iw + x;
                }
            }
        out[o] = best;
        argmax[o] = at;
    }
}

__global__ void maxpool_backward_kernel(float *dx, const float *dy, const int *argmax,
                                        MaxpoolDims d, int fresh)
{
    const size_t in_plane = (size_t)d.ih * d.iw, n = (size_t)d.planes * in_plane;
    GRID_STRIDE_LOOP(t, n)
    {
        const size_t p = t / in_plane;
        const int at = (int)(t % in_plane), y = at / d.iw, x = at % d.iw;
        // the windows holding (y, x): i * stride - offset <= y <= i * stride - offset + size - 1
        const int lo_y = y + d.offset - d.size + 1, lo_x = x + d.offset - d.size + 1;
        const int i0 = lo_y > 0 ? (lo_y + d.stride - 1) / d.stride : 0;
        const int j0 = lo_x > 0 ? (lo_x + d.stride - 1) / d.stride : 0;
        const int i1 = (y + d.offset) / d.stride < d.oh ? (y + d.offset) / d.stride : d.oh - 1;
        const int j1 = (x + d.offset) / d.stride < d.ow ? (x + d.offset) / d.stride : d.ow - 1;
        const size_t base = p * d.oh * d.ow;
        float sum = fresh ? 0.0f : dx[t];
        for (int i = i0; i <= i1; i++)
            for (int j = j0; j <= j1; j++) {
                const size_t o = base + (size_t)i * d.ow + j;
                if (argmax[o] == at)
                    sum += dy[o];
            }
        dx[t] = sum;
    }
}

extern "C" cudaError_t cuda_maxpool_forward(float *out, int *argmax, const float *in, MaxpoolDims d,
                                            cudaStream_t stream)
{
    const size_t n = (size_t)d.planes * d.oh * d.ow;
    if (n == 0)
        return cudaSuccess;
    CUDA_LAUNCH(maxpool_forward_kernel, grid_for(n), GRID_BLOCK, 0, stream, out, argmax, in, d);
    return cuda_launch_error();
}

extern "C" cudaError_t cuda_maxpool_backward(float *dx, const float *dy, const int *argmax,
                                             MaxpoolDims d, int fresh, cudaStream_t stream)
{
    const size_t n = (size_t)d.planes * d.ih * d.iw;
    if (n == 0)
        return cudaSuccess;
    CUDA_LAUNCH(maxpool_backward_kernel, grid_for(n), GRID_BLOCK, 0, stream, dx, dy, argmax, d,
                fresh);
    return cuda_launch_error();
}
