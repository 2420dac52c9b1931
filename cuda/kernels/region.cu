// [region]'s elementwise work on the device, grid-strided: its outputs (logistic x, y and
// objectness, logistic or softmax classes, layers/region.c) and the gradient into the input; the
// loss itself is computed on the host (layers/region_loss.c, cuda/region.c).
//   in, out, delta, in_delta: (n) = [batch][num][entries][plane]
#include "region.h"

#include "kernels/grid.cuh"
#include "launch.h"

// Every value but the classes when softmax (those: region_softmax_kernel).
__global__ void region_forward_kernel(float *out, const float *in, size_t n, int entries,
                                      size_t plane, int softmax)
{
    GRID_STRIDE_LOOP(i, n)
    {
        const int entry = (int)(i / plane % (size_t)entries);
        const float x = in[i];
        if (entry == 2 || entry == 3 || (entry >= 5 && softmax))
            out[i] = x;
        else
            out[i] = 1.0f / (1.0f + expf(-x));
    }
}

// One thread per anchor and cell (groups = n / entries): the softmax of its classes, in place.
__global__ void region_softmax_kernel(float *out, size_t groups, int entries, size_t plane)
{
    GRID_STRIDE_LOOP(g, groups)
    {
        float *x = out + (g / plane * entries + 5) * plane + g % plane;
        float largest = x[0], sum = 0;
        for (int k = 1; k < entries - 5; k++)
            largest = fmaxf(largest, x[k * plane]);
        for (int k = 0; k < entries - 5; k++) {
            x[k * plane] = expf(x[k * plane] - largest);
            sum += x[k * plane];
        }
        for (int k = 0; k < entries - 5; k++)
            x[k * plane] /= sum;
    }
}

__global__ void region_backward_kernel(float *in_delta, const float *delta, const float *out,
                                       size_t n, int entries, size_t plane, float k)
{
    GRID_STRIDE_LOOP(i, n)
    {
        const int entry = (int)(i / plane % (size_t)entries);
        const float y = out[i];
        in_delta[i] += k * delta[i] * (entry < 2 || entry == 4 ? y * (1 - y) : 1.0f);
    }
}

extern "C" cudaError_t cuda_region_forward(float *out, const float *in, size_t n, int entries,
                                           size_t plane, int softmax, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    CUDA_LAUNCH(region_forward_kernel, grid_for(n), GRID_BLOCK, 0, stream, out, in, n, entries,
                plane, softmax);
    if (softmax) {
        const size_t groups = n / (size_t)entries;
        CUDA_LAUNCH(region_softmax_kernel, grid_for(groups), GRID_BLOCK, 0, stream, out, groups,
                    entries, plane);
    }
    return cuda_launch_error();
}

extern "C" cudaError_t cuda_region_backward(float *in_delta, const float *delta, const float *out,
                                            size_t n, int entries, size_t plane, float k,
                                            cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    CUDA_LAUNCH(region_backward_kernel, grid_for(n), GRID_BLOCK, 0, stream, in_delta, delta, out, n,
                entries, plane, k);
    return cuda_launch_error();
}
