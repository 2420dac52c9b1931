// Inverted dropout (backend/cpu/dropout.c's semantics): value i belongs to draw i / per_draw
// (per_draw 1: [dropout], a sample's values: [drop_path]), whose value is SplitMix64's output
// at the draw's place in DropoutDraws (first + i / per_draw for a dense mask; [attention]'s
// weights at their uncut (pair, i, j), a cut [dropout] pass's values at their uncut (sample, t, j);
// an NHWC mask's values at their NCHW draw's, DropoutLayout) of the layer's key (kernels/rng.cuh,
// util/rng.h's rng_uniform_at), so the device draws the CPU's masks, whatever the grid. Templated
// over the element types of the input and its gradient (X) and of the output and its gradient (Y),
// float, bf16 or fp16.
//   in, out, dx, dy: (n)   mask: (n / per_draw)
#include "dropout.h"

#include "kernels/dtype.cuh"
#include "kernels/grid.cuh"
#include "kernels/rng.cuh"
#include "launch.h"

// Draw d's place in the key's sequence (DropoutLayout, DropoutDraws); a dense NCHW mask's without
// the divisions.
__device__ inline uint64_t draw_value_index(const DropoutDraws &w, const DropoutLayout &layout,
                                            uint64_t d)
{
    if (layout.channels) {
        const uint64_t c = layout.channels, sample = layout.pixels * c;
        d = d / sample * sample + d % c * layout.pixels + d / c % layout.pixels;
    }
    if (w.rows == 1 && w.cols == 1 && w.rows_max == 1 && w.cols_max == 1)
        return w.first + d;
    const uint64_t block = d / (w.rows * w.cols), row = d / w.cols % w.rows, col = d % w.cols;
    return w.first + (block * w.rows_max + row) * w.cols_max + col;
}

// draw_id not NULL: the key is layer_draw_stream's of *draw_id and layer, rng_key'd here.
template <typename X, typename Y>
__global__ void dropout_forward_kernel(Y *out, float *mask, const X *in, uint64_t key,
                                       const uint64_t *draw_id, uint64_t seed, int layer,
                                       DropoutDraws draws, DropoutLayout layout, float p,
                                       float scale, size_t per_draw, size_t n)
{
    key = layer_key_dev(key, draw_id, seed, layer);
    GRID_STRIDE_LOOP(i, n)
    {
        const size_t draw = i / per_draw;
        const float m =
            rng_uniform_at_dev(key, draw_value_index(draws, layout, draw)) < p ? 0.0f : scale;
        if (i % per_draw == 0)
            mask[draw] = m;
        out[i] = from_float<Y>(to_float(in[i]) * m);
    }
}

template <typename X, typename Y>
__global__ void dropout_backward_kernel(X *dx, const Y *dy, const float *mask, size_t per_draw,
                                        size_t n)
{
    GRID_STRIDE_LOOP(i, n)
    {
        dx[i] = from_float<X>(to_float(dx[i]) + to_float(dy[i]) * mask[i / per_draw]);
    }
}

extern "C" cudaError_t cuda_dropout_forward(void *out, ElemType out_type, float *mask,
                                            const void *in, ElemType in_type, uint64_t key,
                                            const uint64_t *draw_id, uint64_t seed, int layer,
                                            DropoutDraws draws, DropoutLayout layout, float p,
                                            float scale, size_t per_draw, size_t n,
                                            cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    return with_elem_types(in_type, out_type, [&](auto xt, auto yt) {
        using X = typename decltype(xt)::type;
        using Y = typename decltype(yt)::type;
        CUDA_LAUNCH((dropout_forward_kernel<X, Y>), grid_for(n), GRID_BLOCK, 0, stream, (Y *)out,
                    mask, (const X *)in, key, draw_id, seed, layer, draws, layout, p, scale,
                    per_draw, n);
        return cuda_launch_error();
    });
}

extern "C" cudaError_t cuda_dropout_backward(void *dx, ElemType dx_type, const void *dy,
                                             ElemType dy_type, const float *mask, size_t per_draw,
                                             size_t n, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    return with_elem_types(dx_type, dy_type, [&](auto xt, auto yt) {
        using X = typename decltype(xt)::type;
        using Y = typename decltype(yt)::type;
        CUDA_LAUNCH((dropout_backward_kernel<X, Y>), grid_for(n), GRID_BLOCK, 0, stream, (X *)dx,
                    (const Y *)dy, mask, per_draw, n);
        return cuda_launch_error();
    });
}
