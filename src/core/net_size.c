/* An image net computing a mini-batch at a runtime spatial size, darknet's multi-scale training
 * (random=1): the memory is planned once for the largest size, and a size change derives every
 * layer's shapes again (LayerType.set_size) and resizes its kernels inside that plan
 * (net_resize_state: oneDNN's and cuDNN's primitives, bound to shapes, are made again there, once
 * per change and outside the step). cdl caches nothing per size: oneDNN's own primitive cache,
 * keyed by the shapes, serves a size seen before (yolov3-tiny at batch 8 on 2 threads: 30-65 ms a
 * change to a new size, about 1 ms back to one seen, against 1-4 s a forward).
 * Every buffer holds [batch][c][h][w] of the current size packed at its start. */
#include "core/net.h"

int net_can_set_size(const Net *net, Error *e)
{
    if (net->seq > 0)
        return error_set(e, CDL_EUSAGE, "a sequence net cannot change its input size"), 0;
    for (int i = 0; i < net->n_layers; i++)
        if (!net->layers[i].type->set_size)
            return error_set(e, CDL_EUSAGE, "layer %d [%s] cannot change its input size", i,
                             net->layers[i].type->name),
                   0;
    return 1;
}

/* Derives every layer's shapes from an input of w x h (LayerType.set_size). In a net not resized
 * yet, it releases what the kernels derived from the old shapes (LayerKernels.release: a memory
 * estimate's), which the next net_resize then derives from the new ones. */
static int derive_shapes(Net *net, int w, int h, Error *e)
{
    net->in_shape.w = w;
    net->in_shape.h = h;
    for (int i = 0; i < net->n_layers; i++) {
        Layer *l = &net->layers[i];
        int st = l->type->set_size(l, net, e);
        if (st)
            return st;
        if (!net->batch && l->kernels->release)
            l->kernels->release(l);
    }
    return CDL_OK;
}

int net_set_size(Net *net, int w, int h, Error *e)
{
    const Shape old = net->in_shape;
    if (w == old.w && h == old.h)
        return CDL_OK;
    if (w < 1 || h < 1 || (net->batch && (w > net->sized_in.w || h > net->sized_in.h)))
        return error_set(e, CDL_EUSAGE, "input size %dx%d: the net is sized for %dx%d at most", w,
                         h, net->sized_in.w, net->sized_in.h);
    int st = derive_shapes(net, w, h, e);
    if (!st && net->batch)
        st = net_resize_state(net, e);
    if (st) {
        Error ignored = {0}; /* the old size was valid */
        derive_shapes(net, old.w, old.h, &ignored);
        if (net->batch)
            net_resize_state(net, &ignored);
    }
    return st;
}
