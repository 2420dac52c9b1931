/* The exponential moving average (EMA) of a net's weights, [net] ema=DECAY: a shadow of the
 * parameter slab followed by the state slab, moved after every optimizer step by
 *
 *   shadow = decay * shadow + (1 - decay) * w
 *
 * Batch-norm running statistics are averaged like the parameters (as timm's ModelEmaV2 does), so
 * the shadow is a complete set of inference weights: evaluation during training swaps it in, and
 * checkpoints store it beside the raw weights for eval, predict and export. */
#ifndef CDL_EMA_H
#define CDL_EMA_H

#include "core/net.h"

/* Floats of a shadow: n_params + n_state. */
size_t ema_floats(const Net *net);
/* shadow [ema_floats] = the net's current weights. */
void ema_start(float *shadow, const Net *net);
/* One move of shadow [ema_floats] towards the net's current weights. Allocates nothing. */
void ema_update(float *shadow, const Net *net, float decay);
/* Exchanges the net's weights with shadow [ema_floats]; a second call undoes the first. */
void ema_swap(float *shadow, Net *net);

#endif
