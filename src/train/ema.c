/* The exponential moving average of the weights, on the net's backend (SlabKernels). */
#include "train/ema.h"

size_t ema_floats(const Net *net)
{
    return net->n_params + net->n_state;
}

void ema_start(float *shadow, const Net *net)
{
    const SlabKernels *k = net->backend->slab;
    k->copy(shadow, net->params, net->n_params, &net->exec);
    k->copy(shadow + net->n_params, net->state, net->n_state, &net->exec);
}

void ema_update(float *shadow, const Net *net, float decay)
{
    const SlabKernels *k = net->backend->slab;
    k->average(shadow, net->params, net->n_params, decay, &net->exec);
    k->average(shadow + net->n_params, net->state, net->n_state, decay, &net->exec);
}

void ema_swap(float *shadow, Net *net)
{
    const SlabKernels *k = net->backend->slab;
    k->swap(shadow, net->params, net->n_params, &net->exec);
    k->swap(shadow + net->n_params, net->state, net->n_state, &net->exec);
}
