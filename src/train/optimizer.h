/* The optimizers of [net] optimizer=, with torch.optim's update rules, over the parameter slab.
 * Weight decay applies to tensors flagged for it (convolution and connected weights), or to every
 * trainable tensor with decay_bn_bias=1; g is the accumulated gradient, after clipping.
 *
 *   sgd    (torch.optim.SGD, dampening 0):  g += decay*w;  v = momentum*v + g;
 *          w -= lr * (nesterov ? g + momentum*v : v)
 *   adam   (torch.optim.Adam, L2 decay):    g += decay*w;  m = b1*m + (1-b1)*g;
 *          v = b2*v + (1-b2)*g*g;  w -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps)
 *   adamw  (torch.optim.AdamW):             w *= 1 - lr*decay; then adam's step without decay
 *
 * t counts the updates from 1. A step first scales the gradients by
 * min(1, clip_grad_norm / (norm + 1e-6)) when clip_grad_norm > 0, norm being their global L2 norm
 * (torch.nn.utils.clip_grad_norm_, summed in double); after the update it zeroes them and moves
 * the EMA of the weights (train/ema.h) when ema > 0. Layers before net->train_from (frozen) are
 * left alone. */
#ifndef CDL_OPTIMIZER_H
#define CDL_OPTIMIZER_H

#include <stdint.h>

#include "core/net.h"
#include "train/loss_scale.h"
#include "train/train_settings.h"

typedef struct Optimizer {
    /* The run's training keys, read from the net's cfg when the optimizer is set up. */
    TrainSettings settings;
    OptimizerKind kind; /* settings.optimizer */
    /* The kind's state, one allocation on the net's backend: sgd: velocity [n_params]; adam,
     * adamw: m [n_params] then v [n_params]. Same layout as the parameter slab. */
    float *slab;
    size_t slab_floats;
    uint64_t steps; /* updates applied (t of the bias correction) */
    LossScale loss_scale; /* fp16's (train/loss_scale.h): the steps it skipped are not in steps */
    float *ema;     /* [ema_floats(net)] the weights' EMA (train/ema.h); NULL when ema=0 */
    const BackendOps *backend; /* the net's, whose memory slab and ema are */
} Optimizer;

/* Floats of state an optimizer of kind keeps for n_params parameters. */
size_t optimizer_state_floats(OptimizerKind kind, size_t n_params);

/* Sets o up for the optimizer of the net's cfg (train_settings_read; fails as it does): zeroed
 * state, steps 0, and the EMA (when asked for) starting from the net's current weights. o is
 * overwritten; free with optimizer_free, even after a failure. */
int optimizer_init(Optimizer *o, const Net *net, Error *e);
/* optimizer_init without starting the EMA (o->ema uninitialised): for a caller that fills
 * it next, as loading a checkpoint that saved one does. */
int optimizer_alloc(Optimizer *o, const Net *net, Error *e);
void optimizer_free(Optimizer *o);

/* One update of net's parameters at rate lr from the gradients accumulated in net->grads (see
 * the top of this file); leaves the gradients zeroed. Allocates nothing. */
void optimizer_step(Optimizer *o, Net *net, float lr);
/* The rule of the update optimizer_step(o, net, lr) applies next (step o->steps + 1), its weight
 * decay left 0 (each tensor has its own): what a step replayed as a CUDA graph uploads. */
UpdateRule optimizer_next_rule(const Optimizer *o, float lr);

#endif
