/* [maxpool]: max over size x size windows, darknet semantics.
 *
 *   in  [batch][c][h][w]
 *   out [batch][c][(h + padding - size)/stride + 1][(w + padding - size)/stride + 1]
 *
 * Output (i, j) looks at rows i*stride - padding/2 .. + size-1 (columns likewise);
 * positions outside the input count as -infinity. padding defaults to size-1, which
 * with stride 1 keeps the spatial size. The argmax of each output is kept for backward. */
#include "layers/maxpool.h"

#include "core/net.h"
#include "core/onnx_graph.h"

/* The output of m's windows over in (empty when in plus the padding is smaller than a window). */
static Shape maxpool_out_shape(const Maxpool *m, Shape in)
{
    return (Shape){in.c, (in.h + m->padding - m->size) / m->stride + 1,
                   (in.w + m->padding - m->size) / m->stride + 1};
}

static int maxpool_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    (void)net;
    int stride, size, padding;
    int st = cfg_get_int_min(cfg, s, "stride", 1, 1, &stride, e);
    st = st ? st : cfg_get_int_min(cfg, s, "size", stride, 1, &size, e);
    st = st ? st : cfg_get_int_min(cfg, s, "padding", size - 1, 0, &padding, e);
    if (st)
        return st;
    /* Beyond 2*(size-1) the first or last window would lie wholly outside the input. */
    if (padding > 2 * (size - 1))
        return cfg_bad_value(cfg, s, "padding", e,
                             "must be at most 2*(size-1), or a window lies outside the input");
    Shape in = l->in_shape;
    if (in.h + padding < size || in.w + padding < size)
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: layer %d [%s]: empty output: the %dx%d input plus padding %d is "
                         "smaller than the window size %d",
                         cfg->path, s->line, l->index, s->name, in.h, in.w, padding, size);
    Maxpool *m = l->priv;
    m->size = size;
    m->stride = stride;
    m->padding = padding;
    l->out_shape = maxpool_out_shape(m, in);
    l->flops = (double)shape_size(l->out_shape) * size * size;
    return CDL_OK;
}

static int maxpool_set_size(Layer *l, const Net *net, Error *e)
{
    const Maxpool *m = l->priv;
    const Shape in = layer_input_shape(l, net, 0);
    if (in.h + m->padding < m->size || in.w + m->padding < m->size)
        return error_set(e, CDL_EUSAGE, "layer %d [maxpool]: empty output at %dx%d", l->index, in.h,
                         in.w);
    l->in_shape = in;
    l->out_shape = maxpool_out_shape(m, in);
    l->flops = (double)shape_size(l->out_shape) * m->size * m->size;
    return CDL_OK;
}

/* MaxPool with darknet's uneven padding made explicit: padding/2 before, the rest after
 * (ONNX pads are [top, left, bottom, right]). */
static int maxpool_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)net, (void)e;
    const Maxpool *m = l->priv;
    char x[ONNX_NAME_MAX];
    onnx_input_nchw(g, l, 0, x);
    const int64_t begin = m->padding / 2, end = m->padding - m->padding / 2;
    const int64_t kernel[] = {m->size, m->size}, strides[] = {m->stride, m->stride};
    const int64_t pads[] = {begin, begin, end, end};
    const OnnxAttr attrs[] = {
        onnx_attr_ints("kernel_shape", kernel, 2),
        onnx_attr_ints("strides", strides, 2),
        onnx_attr_ints("pads", pads, 4),
    };
    onnx_node(g, "MaxPool", 1, (const char *[]){x}, onnx_output(g, l, 0), 3, attrs);
    return CDL_OK;
}

const LayerType maxpool_layer = {
    .name = "maxpool",
    .priv_size = sizeof(Maxpool),
    .parse = maxpool_parse,
    .export_onnx = maxpool_export_onnx,
    .set_size = maxpool_set_size,
    .backward_ignores_inputs = 1,
    .backward_ignores_output = 1,
    .writes_input_delta = 1,
};
