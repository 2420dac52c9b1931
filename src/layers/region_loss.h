/* [region]'s loss, the family's meaning apart from its kernels: darknet's delta and cost of a
 * mini-batch, computed on the host from the layer's outputs (the CPU's; the GPU runs the same
 * rules, layers/region_loss_rules.h, as kernels). */
#ifndef CDL_REGION_LOSS_H
#define CDL_REGION_LOSS_H

#include <stdint.h>

#include "layers/region.h"

/* Writes delta [batch][num][classes + 5][h][w] (darknet's l.delta) from out (the layer's output,
 * same shape) and truth [batch][truth_boxes][TRUTH_FLOATS] (the first max= boxes of each sample
 * read), and returns darknet's cost of the mini-batch (the sum of squared deltas), not yet divided
 * by the loss divisor. seen: the images trained on, this mini-batch's included (darknet's
 * net.seen in the forward): below REGION_PRIOR_IMAGES the anchor prior applies. */
double region_loss(const Region *r, const float *out, float *delta, const float *truth,
                   int truth_boxes, int batch, int w, int h, uint64_t seen);

#endif
