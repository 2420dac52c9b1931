/* Which layer outputs a net keeps in 16 bits: the rule of net_storage.h. */
#include "core/net_storage.h"

/* 1 when every layer that reads layer i's output takes 16-bit tensors. */
static int readers_take_16bit(const Net *net, int i)
{
    for (int j = i + 1; j < net->n_layers; j++) {
        const Layer *r = &net->layers[j];
        for (int k = 0; k < r->n_inputs; k++)
            if (r->inputs[k] == i && !r->kernels->stores_16bit)
                return 0;
    }
    return 1;
}

void net_plan_storage(Net *net)
{
    const ElemType half = precision_storage(net->precision);
    for (int i = 0; i < net->n_layers; i++) {
        Layer *l = &net->layers[i];
        const int is_output = i == net->n_layers - 1;
        l->storage =
            half != ELEM_F32 && l->kernels->stores_16bit && !is_output && readers_take_16bit(net, i)
                ? half
                : ELEM_F32;
    }
    for (int i = 0; i < net->n_layers; i++) {
        Layer *l = &net->layers[i];
        for (int k = 0; k < l->n_inputs; k++)
            l->in_storage[k] = l->inputs[k] < 0 ? ELEM_F32 : net->layers[l->inputs[k]].storage;
    }
}
