// Inverted dropout (backend/cpu/dropout.c's semantics): value i belongs to draw i / per_draw
// (per_draw 1: [dropout], a sample's values: [drop_path]), whose value is SplitMix64's output
// first + i / per_draw of the layer's key (kernels/rng.cuh, util/rng.h's rng_uniform_at), so the
// device draws the CPU's masks, whatever the grid.
//   in, out, dx, dy: (n)   mask: (n / per_draw)
#include "dropout.h"

#include "kernels/grid.cuh"
#include "kernels/rng.cuh"
#include "launch.h"

// draw_id not NULL: the key is layer_draw_stream's of *draw_id and layer, rng_key'd here.
__global__ void dropout_forward_kernel(float *out, float *mask, const float *in, uint64_t key,
                                       const uint64_t *draw_id, uint64_t seed, int layer,
                                       uint64_t first, float p, float scale, size_t per_draw,
                                       size_t n)
{
    key = layer_key_dev(key, draw_id, seed, layer);
    GRID_STRIDE_LOOP(i, n)
    {
        const size_t draw = i / per_draw;
        const float m = rng_uniform_at_dev(key, first + draw) < p ? 0.0f : scale;
        if (i % per_draw == 0)
            mask[draw] = m;
        out[i] = in[i] * m;
    }
}

__global__ void dropout_backward_kernel(float *dx, const float *dy, const float *mask,
                                        size_t per_draw, size_t n)
{
    GRID_STRIDE_LOOP(i, n)
    {
        dx[i] += dy[i] * mask[i / per_draw];
    }
}

extern "C" cudaError_t cuda_dropout_forward(float *out, float *mask, const float *in, uint64_t key,
                                            const uint64_t *draw_id, uint64_t seed, int layer,
                                            uint64_t first, float p, float scale, size_t per_draw,
                                            size_t n, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    CUDA_LAUNCH(dropout_forward_kernel, grid_for(n), GRID_BLOCK, 0, stream, out, mask, in, key,
                draw_id, seed, layer, first, p, scale, per_draw, n);
    return cuda_launch_error();
}

extern "C" cudaError_t cuda_dropout_backward(float *dx, const float *dy, const float *mask,
                                             size_t per_draw, size_t n, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    CUDA_LAUNCH(dropout_backward_kernel, grid_for(n), GRID_BLOCK, 0, stream, dx, dy, mask, per_draw,
                n);
    return cuda_launch_error();
}
