/* The activation step of the layers that have one, on the CPU (declared in core/layer.h, which
 * every family's kernels include): l->out = f(l->pre) forward, l->delta through f' backward. */
#include "backend/cpu/activation.h"
#include "core/layer.h"

void layer_activate(Layer *l, int batch)
{
    if (l->activation == CDL_ACT_LINEAR)
        return;
    activation_forward(l->pre, l->out, (size_t)batch * shape_size(l->out_shape), l->activation);
}

void layer_activate_row(Layer *l, int batch, int t)
{
    if (l->activation == CDL_ACT_LINEAR)
        return;
    const size_t row = (size_t)l->out_shape.w, sample = shape_size(l->out_shape);
    for (int b = 0; b < batch; b++) {
        const size_t at = (size_t)b * sample + (size_t)t * row;
        activation_forward(l->pre + at, l->out + at, row, l->activation);
    }
}

void layer_activation_backward(Layer *l, int batch)
{
    if (l->activation == CDL_ACT_LINEAR)
        return;
    activation_backward(l->pre, l->out, l->delta, (size_t)batch * shape_size(l->out_shape),
                        l->activation);
}
