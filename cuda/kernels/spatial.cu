// Index maps over planes (backend/cpu/{upsample,reorg,crop,shuffle,pad}.c's semantics), a thread
// per value, grid-strided. Where several values feed one (upsample's gather) a thread per
// target sums them in the CPU's order; where the map is one to one (reorg, a crop's window) a
// thread per output adds into its input's gradient, no two threads into the same value.
//   upsample small: (planes, sh, sw)   big: (planes, sh*s, sw*s), or either NHWC (SpatialPlanes)
//   reorg in, out, dx, dy: (batch, c, h, w)
//   crop in, dx: (batch, c, ih, iw)   out, dy: (batch, c, oh, ow)   windows: (batch, 3)
//   shuffle in, out, dx, dy: (batch, c, spatial), or either NHWC (SpatialPlanes)
//   pad in, dx: (planes, ih, iw)   out, dy: (planes, oh, ow)
// Every tensor a map reads or writes is float, bf16 or fp16 (templates: R for the one read, W for
// the one written; a gradient added to is read and written as W), in float between.
#include "spatial.h"

#include "kernels/dtype.cuh"
#include "kernels/grid.cuh"
#include "kernels/layout.cuh"
#include "kernels/rng.cuh"
#include "launch.h"

// A thread per value of the written tensor, in its layout; the read one indexed in its own.
template <typename R, typename W>
__global__ void upsample_spread_kernel(W *big, const R *small, SpatialPlanes q, int sh, int sw,
                                       int s, float scale, int add, size_t n)
{
    const int bw = sw * s, big_plane = sh * s * bw;
    GRID_STRIDE_LOOP(o, n)
    {
        const int b = image_of(o, q.channels, big_plane);
        const int c = channel_of(o, q.channels, big_plane, q.w_nhwc);
        const int at = pixel_of(o, q.channels, big_plane, q.w_nhwc), y = at / bw, x = at % bw;
        const size_t from = index_of(b, c, y / s * sw + x / s, q.channels, sh * sw, q.r_nhwc);
        const float v = scale * to_float(small[from]);
        big[o] = from_float<W>(add ? to_float(big[o]) + v : v);
    }
}

template <typename R, typename W>
__global__ void upsample_gather_kernel(W *small, const R *big, SpatialPlanes q, int sh, int sw,
                                       int s, float scale, int add, size_t n)
{
    const int bw = sw * s, big_plane = sh * s * bw;
    GRID_STRIDE_LOOP(i, n)
    {
        const int b = image_of(i, q.channels, sh * sw);
        const int c = channel_of(i, q.channels, sh * sw, q.w_nhwc);
        const int at = pixel_of(i, q.channels, sh * sw, q.w_nhwc), y = at / sw, x = at % sw;
        const int corner = y * s * bw + x * s;
        float sum = add ? to_float(small[i]) : 0.0f;
        for (int wy = 0; wy < s; wy++)
            for (int wx = 0; wx < s; wx++)
                sum += scale * to_float(big[index_of(b, c, corner + wy * bw + wx, q.channels,
                                                     big_plane, q.r_nhwc)]);
        small[i] = from_float<W>(sum);
    }
}

// The input index (within a sample) that output (i, j, k), taken with the input's dims
// [c][h][w], reads (backend/cpu/reorg.c's source_index).
__device__ __forceinline__ size_t reorg_source(int c, int h, int w, int s, int i, int j, int k)
{
    const int oc = c / (s * s), c2 = k % oc, offset = k / oc;
    const size_t w2 = (size_t)i * s + offset % s, h2 = (size_t)j * s + offset / s;
    return w2 + (size_t)w * s * (h2 + (size_t)h * s * c2);
}

template <typename R, typename W>
__global__ void reorg_forward_kernel(W *out, const R *in, int c, int h, int w, int s, size_t n)
{
    const size_t sample = (size_t)c * h * w;
    GRID_STRIDE_LOOP(o, n)
    {
        const int k = (int)(o / ((size_t)h * w) % c), j = (int)(o / w % h), i = (int)(o % w);
        out[o] =
            from_float<W>(to_float(in[o / sample * sample + reorg_source(c, h, w, s, i, j, k)]));
    }
}

// A permutation: every input's gradient receives exactly one output's.
template <typename R, typename W>
__global__ void reorg_backward_kernel(W *dx, const R *dy, int c, int h, int w, int s, size_t n)
{
    const size_t sample = (size_t)c * h * w;
    GRID_STRIDE_LOOP(o, n)
    {
        const int k = (int)(o / ((size_t)h * w) % c), j = (int)(o / w % h), i = (int)(o % w);
        W *d = dx + o / sample * sample + reorg_source(c, h, w, s, i, j, k);
        *d = from_float<W>(to_float(*d) + to_float(dy[o]));
    }
}

// The input index, in layout in_nhwc, of output o, in layout out_nhwc, of a shuffle: its channel k
// reads channel layers/shuffle.h's shuffle_source (a permutation: backward adds each dy into one
// dx).
__device__ __forceinline__ size_t shuffle_input(size_t o, int c, int spatial, int groups,
                                                int out_nhwc, int in_nhwc)
{
    const int k = channel_of(o, c, spatial, out_nhwc);
    return index_of(image_of(o, c, spatial), k % groups * (c / groups) + k / groups,
                    pixel_of(o, c, spatial, out_nhwc), c, spatial, in_nhwc);
}

template <typename R, typename W>
__global__ void shuffle_forward_kernel(W *out, const R *in, SpatialPlanes q, int spatial,
                                       int groups, size_t n)
{
    GRID_STRIDE_LOOP(o, n)
    out[o] = from_float<W>(
        to_float(in[shuffle_input(o, q.channels, spatial, groups, q.w_nhwc, q.r_nhwc)]));
}

template <typename R, typename W>
__global__ void shuffle_backward_kernel(W *dx, const R *dy, SpatialPlanes q, int spatial,
                                        int groups, size_t n)
{
    GRID_STRIDE_LOOP(o, n)
    {
        W *d = dx + shuffle_input(o, q.channels, spatial, groups, q.r_nhwc, q.w_nhwc);
        *d = from_float<W>(to_float(*d) + to_float(dy[o]));
    }
}

template <typename R, typename W>
__global__ void pad_forward_kernel(W *out, const R *in, PadDims d, float value, size_t n)
{
    GRID_STRIDE_LOOP(o, n)
    {
        const size_t p = o / ((size_t)d.oh * d.ow);
        const int y = (int)(o / d.ow % d.oh) - d.top, x = (int)(o % d.ow) - d.left;
        out[o] = from_float<W>(y >= 0 && y < d.ih && x >= 0 && x < d.iw
                                   ? to_float(in[(p * d.ih + y) * d.iw + x])
                                   : value);
    }
}

// A thread per input value: the one output gradient it receives.
template <typename R, typename W>
__global__ void pad_backward_kernel(W *dx, const R *dy, PadDims d, size_t n)
{
    GRID_STRIDE_LOOP(i, n)
    {
        const size_t p = i / ((size_t)d.ih * d.iw);
        const int y = (int)(i / d.iw % d.ih), x = (int)(i % d.iw);
        dx[i] = from_float<W>(to_float(dx[i]) +
                              to_float(dy[(p * d.oh + y + d.top) * d.ow + x + d.left]));
    }
}

// draw_id not NULL: the key is computed here (layer_key_dev).
__global__ void crop_windows_kernel(int *windows, int batch, int spare_h, int spare_w, int flip,
                                    int train, uint64_t key, const uint64_t *draw_id, uint64_t seed,
                                    int layer, uint64_t first)
{
    key = layer_key_dev(key, draw_id, seed, layer);
    GRID_STRIDE_LOOP(b, (size_t)batch)
    {
        int *win = windows + 3 * b;
        if (!train) {
            win[0] = spare_h / 2, win[1] = spare_w / 2, win[2] = 0;
            continue;
        }
        RngDev r = rng_seed_dev(key, first + b);
        win[0] = (int)rng_below_dev(&r, (uint32_t)spare_h + 1);
        win[1] = (int)rng_below_dev(&r, (uint32_t)spare_w + 1);
        win[2] = flip && rng_below_dev(&r, 2);
    }
}

// The input index of output (y, x) of plane p, its sample's window at win.
__device__ __forceinline__ size_t crop_source(CropDims d, const int *win, size_t p, int y, int x)
{
    const int col = win[1] + (win[2] ? d.ow - 1 - x : x);
    return (p * d.ih + win[0] + y) * d.iw + col;
}

template <typename R, typename W>
__global__ void crop_forward_kernel(W *out, const R *in, const int *windows, CropDims d,
                                    float scale, float shift, size_t n)
{
    GRID_STRIDE_LOOP(o, n)
    {
        const size_t p = o / ((size_t)d.oh * d.ow);
        const int y = (int)(o / d.ow % d.oh), x = (int)(o % d.ow);
        out[o] = from_float<W>(
            to_float(in[crop_source(d, windows + 3 * (p / d.c), p, y, x)]) * scale + shift);
    }
}

template <typename R, typename W>
__global__ void crop_backward_kernel(W *dx, const R *dy, const int *windows, CropDims d,
                                     float scale, size_t n)
{
    GRID_STRIDE_LOOP(o, n)
    {
        const size_t p = o / ((size_t)d.oh * d.ow);
        const int y = (int)(o / d.ow % d.oh), x = (int)(o % d.ow);
        W *t = dx + crop_source(d, windows + 3 * (p / d.c), p, y, x);
        *t = from_float<W>(to_float(*t) + to_float(dy[o]) * scale);
    }
}

// Launches kernel<R, W> over n threads for a map that reads r (of r_type) and writes w (of
// w_type), with the kernel's other arguments after them.
#define LAUNCH_MAP(kernel, n, stream, w, w_type, r, r_type, ...)                                   \
    ((n) == 0 ? cudaSuccess : with_elem_types((r_type), (w_type), [&](auto rt, auto wt) {          \
        using R = typename decltype(rt)::type;                                                     \
        using W = typename decltype(wt)::type;                                                     \
        CUDA_LAUNCH((kernel<R, W>), grid_for(n), GRID_BLOCK, 0, (stream), (W *)(w),                \
                    (const R *)(r), __VA_ARGS__);                                                  \
        return cuda_launch_error();                                                                \
    }))

extern "C" cudaError_t cuda_upsample_spread(SpatialTensors t, SpatialPlanes p, int sh, int sw,
                                            int s, float scale, int add, cudaStream_t stream)
{
    const size_t n = (size_t)p.batch * p.channels * sh * s * sw * s;
    return LAUNCH_MAP(upsample_spread_kernel, n, stream, t.w, t.w_type, t.r, t.r_type, p, sh, sw, s,
                      scale, add, n);
}

extern "C" cudaError_t cuda_upsample_gather(SpatialTensors t, SpatialPlanes p, int sh, int sw,
                                            int s, float scale, int add, cudaStream_t stream)
{
    const size_t n = (size_t)p.batch * p.channels * sh * sw;
    return LAUNCH_MAP(upsample_gather_kernel, n, stream, t.w, t.w_type, t.r, t.r_type, p, sh, sw, s,
                      scale, add, n);
}

extern "C" cudaError_t cuda_reorg_forward(SpatialTensors t, int batch, int c, int h, int w, int s,
                                          cudaStream_t stream)
{
    const size_t n = (size_t)batch * c * h * w;
    return LAUNCH_MAP(reorg_forward_kernel, n, stream, t.w, t.w_type, t.r, t.r_type, c, h, w, s, n);
}

extern "C" cudaError_t cuda_reorg_backward(SpatialTensors t, int batch, int c, int h, int w, int s,
                                           cudaStream_t stream)
{
    const size_t n = (size_t)batch * c * h * w;
    return LAUNCH_MAP(reorg_backward_kernel, n, stream, t.w, t.w_type, t.r, t.r_type, c, h, w, s,
                      n);
}

extern "C" cudaError_t cuda_crop_windows(int *windows, int batch, int spare_h, int spare_w,
                                         int flip, int train, uint64_t key, const uint64_t *draw_id,
                                         uint64_t seed, int layer, uint64_t first,
                                         cudaStream_t stream)
{
    if (batch == 0)
        return cudaSuccess;
    CUDA_LAUNCH(crop_windows_kernel, grid_for((size_t)batch), GRID_BLOCK, 0, stream, windows, batch,
                spare_h, spare_w, flip, train, key, draw_id, seed, layer, first);
    return cuda_launch_error();
}

extern "C" cudaError_t cuda_crop_forward(SpatialTensors t, const int *windows, CropDims d,
                                         float scale, float shift, cudaStream_t stream)
{
    const size_t n = (size_t)d.batch * d.c * d.oh * d.ow;
    return LAUNCH_MAP(crop_forward_kernel, n, stream, t.w, t.w_type, t.r, t.r_type, windows, d,
                      scale, shift, n);
}

extern "C" cudaError_t cuda_crop_backward(SpatialTensors t, const int *windows, CropDims d,
                                          float scale, cudaStream_t stream)
{
    const size_t n = (size_t)d.batch * d.c * d.oh * d.ow;
    return LAUNCH_MAP(crop_backward_kernel, n, stream, t.w, t.w_type, t.r, t.r_type, windows, d,
                      scale, n);
}

extern "C" cudaError_t cuda_shuffle_forward(SpatialTensors t, SpatialPlanes p, int spatial,
                                            int groups, cudaStream_t stream)
{
    const size_t n = (size_t)p.batch * p.channels * spatial;
    return LAUNCH_MAP(shuffle_forward_kernel, n, stream, t.w, t.w_type, t.r, t.r_type, p, spatial,
                      groups, n);
}

extern "C" cudaError_t cuda_shuffle_backward(SpatialTensors t, SpatialPlanes p, int spatial,
                                             int groups, cudaStream_t stream)
{
    const size_t n = (size_t)p.batch * p.channels * spatial;
    return LAUNCH_MAP(shuffle_backward_kernel, n, stream, t.w, t.w_type, t.r, t.r_type, p, spatial,
                      groups, n);
}

extern "C" cudaError_t cuda_pad_forward(SpatialTensors t, PadDims d, float value,
                                        cudaStream_t stream)
{
    const size_t n = (size_t)d.planes * d.oh * d.ow;
    return LAUNCH_MAP(pad_forward_kernel, n, stream, t.w, t.w_type, t.r, t.r_type, d, value, n);
}

extern "C" cudaError_t cuda_pad_backward(SpatialTensors t, PadDims d, cudaStream_t stream)
{
    const size_t n = (size_t)d.planes * d.ih * d.iw;
    return LAUNCH_MAP(pad_backward_kernel, n, stream, t.w, t.w_type, t.r, t.r_type, d, n);
}
