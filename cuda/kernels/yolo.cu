// [yolo]'s elementwise work on the device, grid-strided: its outputs (the logistic of x, y,
// objectness and classes, layers/yolo.c) and the delta into the input's gradient; the loss itself
// is computed on the host (layers/yolo_loss.c, cuda/yolo.c).
//   in, out, delta, in_delta: (n) = [batch][n_mask][entries][plane]
#include "yolo.h"

#include "kernels/grid.cuh"
#include "launch.h"

__global__ void yolo_forward_kernel(float *out, const float *in, size_t n, int entries,
                                    size_t plane, float scale_x_y)
{
    GRID_STRIDE_LOOP(i, n)
    {
        const int entry = (int)(i / plane % (size_t)entries);
        const float x = in[i];
        if (entry == 2 || entry == 3) {
            out[i] = x;
            continue;
        }
        const float y = 1.0f / (1.0f + expf(-x));
        out[i] = entry < 2 && scale_x_y != 1.0f ? y * scale_x_y - 0.5f * (scale_x_y - 1) : y;
    }
}

__global__ void yolo_backward_kernel(float *in_delta, const float *delta, size_t n, float k)
{
    GRID_STRIDE_LOOP(i, n)
    in_delta[i] += k * delta[i];
}

extern "C" cudaError_t cuda_yolo_forward(float *out, const float *in, size_t n, int entries,
                                         size_t plane, float scale_x_y, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    CUDA_LAUNCH(yolo_forward_kernel, grid_for(n), GRID_BLOCK, 0, stream, out, in, n, entries, plane,
                scale_x_y);
    return cuda_launch_error();
}

extern "C" cudaError_t cuda_yolo_backward(float *in_delta, const float *delta, size_t n, float k,
                                          cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    CUDA_LAUNCH(yolo_backward_kernel, grid_for(n), GRID_BLOCK, 0, stream, in_delta, delta, n, k);
    return cuda_launch_error();
}
