/* [convolutional]'s configuration: what its parse (layers/convolutional.c) fills and every
 * backend's kernels read, with a pointer to the CPU's state of the layer (backend/cpu/conv.h).
 *
 *   in  [batch][c][h][w] (l->in_shape)
 *   out [batch][filters][out_h][out_w] (l->out_shape), out_h = (h + 2*pad_h - size_h)/stride_h + 1,
 *       out_w likewise along w (Conv.win)
 *   weights [filters][c/groups][size_h][size_w] (l->params[CONV_WEIGHTS]); then the stage's: biases
 *   [filters] (none with bias=0), or with batch_normalize scales, biases (the BN shift),
 *   rolling_mean, rolling_variance [filters]
 */
#ifndef CDL_CONVOLUTIONAL_H
#define CDL_CONVOLUTIONAL_H

#include "core/net.h"
#include "core/window2d.h"
#include "layers/bias_norm.h"

/* The position of the weights in l->params (the stage's follow them, Conv.stage.first_param). */
enum { CONV_WEIGHTS };

struct ConvCpu;
struct ConvGpu;

typedef struct Conv {
    int filters, groups;
    Window2d win;    /* the kernel's extent, stride and padding per axis (square unless the cfg
                        gives two values: size=1,7) */
    BiasNorm stage;  /* bias, or batch norm over batch and positions */
    int train_batch; /* the training mini-batch, [net] batch / subdivisions (engine choices) */
    /* The CPU's state of the layer (backend/cpu/conv.h: its engine, oneDNN's primitives,
     * Winograd's plan and kept weights, the bf16 copies, its buffers in the net's slabs): made by
     * the CPU's first resize of the layer, freed by its release; NULL before. */
    struct ConvCpu *cpu;
    /* The GPU's state of the layer (cuda/convolutional.c: cuDNN's descriptors and algorithms),
     * made by the GPU's first resize of the layer, freed by its release; NULL before. */
    struct ConvGpu *gpu;
} Conv;

#endif
