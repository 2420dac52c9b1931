/* The squared deltas of a detection loss's cost ([yolo], [region]) summed in an order that CUDA
 * kernels can split and the CPU follows too: each plane (one entry of one anchor over the map's
 * cells) in index order, then a sample's planes in order, then the samples in order. */
#ifndef CDL_LOSS_SQUARES_H
#define CDL_LOSS_SQUARES_H

#include <stddef.h>

#include "util/host_device.h"

/* The sum of d[k]^2 over k < n, in double, in index order. */
static inline CDL_HOST_DEVICE double loss_plane_squares(const float *d, size_t n)
{
    double sum = 0;
    for (size_t k = 0; k < n; k++)
        sum += (double)d[k] * d[k];
    return sum;
}

#endif
