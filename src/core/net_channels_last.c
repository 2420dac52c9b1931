/* Which layer outputs a net keeps channels-last: the rule of net_channels_last.h. */
#include "core/net_channels_last.h"

static ChannelsLastUse use_of(const Net *net, const Layer *l)
{
    return net->channels_last && l->kernels->takes_channels_last
               ? l->kernels->takes_channels_last(l, &net->exec)
               : CHANNELS_LAST_NEVER;
}

/* 1 when every layer that reads layer from's output takes it NHWC: a CHANNELS_LAST_SAME reader
 * only where its own output stays NHWC. */
static int readers_take(const Net *net, int from)
{
    for (int j = from + 1; j < net->n_layers; j++) {
        const Layer *r = &net->layers[j];
        for (int k = 0; k < r->n_inputs; k++)
            if (r->inputs[k] == from) {
                const ChannelsLastUse use = use_of(net, r);
                if (use == CHANNELS_LAST_NEVER || (use == CHANNELS_LAST_SAME && !r->channels_last))
                    return 0;
            }
    }
    return 1;
}

/* 1 when every input of l is NHWC. */
static int inputs_nhwc(const Net *net, const Layer *l)
{
    for (int k = 0; k < l->n_inputs; k++)
        if (l->inputs[k] < 0 || !net->layers[l->inputs[k]].channels_last)
            return 0;
    return 1;
}

void net_plan_channels_last(Net *net)
{
    for (int i = 0; i < net->n_layers; i++)
        net->layers[i].channels_last =
            use_of(net, &net->layers[i]) != CHANNELS_LAST_NEVER && i != net->n_layers - 1;
    /* Start from every candidate NHWC and drop what a reader or an input refuses until nothing
     * changes: each round only clears flags, so it ends. */
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = net->n_layers - 1; i >= 0; i--) {
            Layer *l = &net->layers[i];
            if (l->channels_last &&
                (!readers_take(net, i) ||
                 (use_of(net, l) == CHANNELS_LAST_SAME && !inputs_nhwc(net, l))))
                l->channels_last = 0, changed = 1;
        }
    }
    for (int i = 0; i < net->n_layers; i++) {
        Layer *l = &net->layers[i];
        for (int k = 0; k < l->n_inputs; k++)
            l->in_channels_last[k] = l->inputs[k] >= 0 && net->layers[l->inputs[k]].channels_last;
    }
}
