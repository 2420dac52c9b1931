/* [avgpool]: global average pooling, as darknet's avgpool layer, or with `size` an average over
 * size x size windows, as torch's F.avg_pool2d (count_include_pad=True, ceil_mode=False).
 *
 *   in  [batch][c][h][w]
 *   global:   out [batch][c][1][1]   out[b][k] = mean over h*w of in[b][k]
 *   windowed: out [batch][c][(h + 2*padding - size)/stride + 1][(w + ...)/stride + 1]
 *             out[b][k][i][j] = (sum of in[b][k] over rows i*stride - padding .. + size-1 and
 *             columns j*stride - padding .. + size-1 inside the plane) / (size*size)
 */
#include "layers/avgpool.h"

#include "core/net.h"
#include "core/onnx_graph.h"

static int avgpool_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    (void)net;
    Avgpool *a = l->priv;
    int st = cfg_get_int_min(cfg, s, "size", 0, 0, &a->size, e);
    st = st ? st : cfg_get_int_min(cfg, s, "stride", a->size ? a->size : 1, 1, &a->stride, e);
    st = st ? st : cfg_get_int_min(cfg, s, "padding", 0, 0, &a->padding, e);
    if (st)
        return st;
    const Shape in = l->in_shape;
    if (!a->size) {
        if (cfg_find(s, "stride") || cfg_find(s, "padding"))
            return cfg_bad_value(cfg, s, cfg_find(s, "stride") ? "stride" : "padding", e,
                                 "needs a window: give size (without it the pooling is global)");
        l->out_shape = (Shape){in.c, 1, 1};
        l->flops = (double)shape_size(in);
        return CDL_OK;
    }
    /* torch's limit: a window more than half in the padding would average padding alone */
    if (a->padding > a->size / 2)
        return cfg_bad_value(cfg, s, "padding", e, "must be at most size/2, as torch's");
    if (in.h + 2 * a->padding < a->size || in.w + 2 * a->padding < a->size)
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: layer %d [%s]: empty output: the %dx%d input plus padding %d on "
                         "each side is smaller than the window size %d",
                         cfg->path, s->line, l->index, s->name, in.h, in.w, a->padding, a->size);
    l->out_shape = (Shape){in.c, (in.h + 2 * a->padding - a->size) / a->stride + 1,
                           (in.w + 2 * a->padding - a->size) / a->stride + 1};
    l->flops = (double)shape_size(l->out_shape) * a->size * a->size;
    return CDL_OK;
}

/* GlobalAveragePool, or AveragePool with count_include_pad=1 as torch exports avg_pool2d. */
static int avgpool_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)net, (void)e;
    const Avgpool *a = l->priv;
    char x[ONNX_NAME_MAX];
    onnx_input_nchw(g, l, 0, x);
    if (!a->size) {
        onnx_node(g, "GlobalAveragePool", 1, (const char *[]){x}, onnx_output(g, l, 0), 0, NULL);
        return CDL_OK;
    }
    const int64_t kernel[] = {a->size, a->size}, strides[] = {a->stride, a->stride};
    const int64_t pads[] = {a->padding, a->padding, a->padding, a->padding};
    const OnnxAttr attrs[] = {
        onnx_attr_ints("kernel_shape", kernel, 2),
        onnx_attr_ints("strides", strides, 2),
        onnx_attr_ints("pads", pads, 4),
        onnx_attr_int("count_include_pad", 1),
    };
    onnx_node(g, "AveragePool", 1, (const char *[]){x}, onnx_output(g, l, 0), 4, attrs);
    return CDL_OK;
}

const LayerType avgpool_layer = {
    .name = "avgpool",
    .priv_size = sizeof(Avgpool),
    .parse = avgpool_parse,
    .export_onnx = avgpool_export_onnx,
    .backward_ignores_inputs = 1,
    .backward_ignores_output = 1,
};
