/* Which layer outputs a net keeps in 16 bits: the rule of net_storage.h. */
#include "core/net_storage.h"

/* 1 when every layer that reads layer i's output takes 16-bit inputs of format half (its
 * precision's). */
static int readers_take(const Net *net, int i, ElemType half)
{
    for (int j = i + 1; j < net->n_layers; j++) {
        const Layer *r = &net->layers[j];
        for (int k = 0; k < r->n_inputs; k++)
            if (r->inputs[k] == i && !((r->kernels->stores_16bit || r->kernels->reads_16bit) &&
                                       precision_storage(r->precision) == half))
                return 0;
    }
    return 1;
}

void net_plan_storage(Net *net)
{
    for (int i = 0; i < net->n_layers; i++) {
        Layer *l = &net->layers[i];
        const ElemType half = precision_storage(l->precision);
        const int is_output = i == net->n_layers - 1;
        l->storage =
            half != ELEM_F32 && l->kernels->stores_16bit && !is_output && readers_take(net, i, half)
                ? half
                : ELEM_F32;
    }
    for (int i = 0; i < net->n_layers; i++) {
        Layer *l = &net->layers[i];
        for (int k = 0; k < l->n_inputs; k++)
            l->in_storage[k] = l->inputs[k] < 0 ? ELEM_F32 : net->layers[l->inputs[k]].storage;
    }
}
