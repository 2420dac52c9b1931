/* A one-input layer's tensors as an index map of kernels/spatial.h takes them: its forward writes
 * l->out from l->in[0], its backward adds l->delta into l->in_delta[0], each in the layer's element
 * types (Layer.storage, Layer.in_storage[0]). */
#ifndef CDL_CUDA_SPATIAL_MAPS_H
#define CDL_CUDA_SPATIAL_MAPS_H

#include "core/layer.h"
#include "kernels/spatial.h"

static inline SpatialTensors forward_map(const Layer *l)
{
    return (SpatialTensors){l->out, l->in[0], l->storage, l->in_storage[0]};
}

static inline SpatialTensors backward_map(const Layer *l)
{
    return (SpatialTensors){l->in_delta[0], l->delta, l->in_storage[0], l->storage};
}

#endif
