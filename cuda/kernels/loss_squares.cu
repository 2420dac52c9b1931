// The detection losses' squared deltas per plane on the device (layers/loss_squares.h, the order
// the CPU sums them in): a thread per plane.
//   delta [planes][plane]   plane_squares [planes]
#include "loss_squares.h"

#include "kernels/grid.cuh"
#include "launch.h"
#include "layers/loss_squares.h"

__global__ void plane_squares_kernel(double *plane_squares, const float *delta, size_t planes,
                                     size_t plane)
{
    GRID_STRIDE_LOOP(p, planes)
    plane_squares[p] = loss_plane_squares(delta + p * plane, plane);
}

extern "C" cudaError_t cuda_plane_squares(double *plane_squares, const float *delta, size_t planes,
                                          size_t plane, cudaStream_t stream)
{
    if (planes == 0)
        return cudaSuccess;
    CUDA_LAUNCH(plane_squares_kernel, grid_for(planes), GRID_BLOCK, 0, stream, plane_squares, delta,
                planes, plane);
    return cuda_launch_error();
}
