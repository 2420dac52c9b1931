/* The detection losses' squared deltas per plane on the device (loss_squares.cu): C entry point.
 *
 *   delta [planes][plane]   plane_squares [planes] (device) */
#ifndef CDL_CUDA_LOSS_SQUARES_H
#define CDL_CUDA_LOSS_SQUARES_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* plane_squares[p] = the sum of delta[p][k]^2 over k, in double, in index order. */
cudaError_t cuda_plane_squares(double *plane_squares, const float *delta, size_t planes,
                               size_t plane, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
