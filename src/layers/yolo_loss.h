/* [yolo]'s loss, the family's meaning apart from its kernels: darknet's delta and cost of a
 * mini-batch, computed on the host from the layer's outputs (the CPU's; the GPU runs the same
 * rules, layers/yolo_loss_rules.h, as kernels). */
#ifndef CDL_YOLO_LOSS_H
#define CDL_YOLO_LOSS_H

#include "layers/yolo.h"

/* Writes delta [batch][n_mask][classes + 5][h][w] (darknet's l.delta, the negative gradient)
 * from out (the layer's output, same shape) and truth [batch][truth_boxes][TRUTH_FLOATS] (the
 * first max= boxes of each sample read), and returns darknet's cost of the mini-batch, not yet
 * divided by the loss divisor. */
double yolo_loss(const Yolo *yo, const float *out, float *delta, const float *truth,
                 int truth_boxes, int batch, int w, int h);

#endif
