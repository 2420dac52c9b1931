/* SGD with momentum and weight decay, with PyTorch's update rule:
 *   g = grad + decay * w   (decay only on tensors flagged for it: conv/connected weights)
 *   v = momentum * v + g
 *   w = w - lr * v
 * then the gradient is zeroed, ready for the next accumulation. */
#ifndef CDL_SGD_H
#define CDL_SGD_H

#include "core/net.h"

/* velocity has net->n_params floats (zeroed at the start of training). */
void sgd_step(Net *net, float *velocity, float lr);

#endif
