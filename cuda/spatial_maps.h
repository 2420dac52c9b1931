/* A one-input layer's tensors as an index map of kernels/spatial.h takes them: its forward writes
 * l->out from l->in[0], its backward adds l->delta into l->in_delta[0], each in the layer's element
 * types (Layer.storage, Layer.in_storage[0]) and layouts (Layer.channels_last,
 * in_channels_last[0]). */
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

/* The layouts of forward_map's tensors (Layer.channels_last, in_channels_last[0]) for a layer
 * whose input and output have the same channels, batch samples. */
static inline SpatialPlanes forward_planes(const Layer *l, int batch)
{
    return (SpatialPlanes){batch, l->out_shape.c, l->channels_last, l->in_channels_last[0]};
}

/* The same for backward_map's. */
static inline SpatialPlanes backward_planes(const Layer *l, int batch)
{
    return (SpatialPlanes){batch, l->out_shape.c, l->in_channels_last[0], l->channels_last};
}

#endif
