/* [dropout]'s and [drop_path]'s configuration and state (layers/dropout.c parses them;
 * backend/cpu/dropout.c and cuda/dropout.c compute with them): one family, whose masks hold a draw
 * per value ([dropout]) or per sample ([drop_path]). */
#ifndef CDL_DROPOUT_H
#define CDL_DROPOUT_H

#include "core/layer.h"

typedef struct Dropout {
    float probability;
    float scale;    /* 1 / (1 - probability) */
    int per_sample; /* [drop_path]: one draw per sample, not one per value */
    /* The rows (out_shape.h) the layer was sized for (parse, set_size), which a pass set_rows cuts
     * to fewer rows keeps: the stride of a sample's draws (dropout_sample_draws). */
    int sized_rows;
    float *mask;       /* [batch][c][h][w] ([dropout]) or [batch] ([drop_path]): 0 or scale */
    int mask_is_valid; /* the last forward applied the mask (training) */
} Dropout;

/* The values one draw of the mask keeps or drops: 1, or the whole sample (c*h*w). */
static inline size_t dropout_values_per_draw(const Layer *l)
{
    return ((const Dropout *)l->priv)->per_sample ? shape_size(l->out_shape) : 1;
}

/* How far apart two samples' draws lie in the layer's key's sequence: 1 ([drop_path]), or a
 * sample's values at the rows it was sized for, c sized_rows w. Value (sample b, row t, column j)
 * of a [dropout] pass cut to fewer rows (set_rows: a sequence-to-sequence net's batch, c = 1) thus
 * draws at b T' C + t C + j with the cfg's T' whatever the cut, where an uncut pass (every image
 * net, a padded graphed step) draws value i at i. b counts in the step's global mini-batch
 * (StepContext.sample_offset + the pass's sample). */
static inline uint64_t dropout_sample_draws(const Layer *l)
{
    const Dropout *d = l->priv;
    if (d->per_sample)
        return 1;
    return (uint64_t)l->out_shape.c * (uint64_t)d->sized_rows * (uint64_t)l->out_shape.w;
}

/* LayerKernels.resize of every backend: the mask from st, a float per draw. */
int dropout_resize(Layer *l, int batch, LayerState *st, Error *e);

#endif
