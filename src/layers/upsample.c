/* [upsample]: darknet's nearest-neighbour upsampling by an integer stride, times `scale`, and
 * with a negative stride its downsampling: the sum of each window, times `scale`.
 *
 *   stride s > 0:  in [batch][c][h][w]  out [batch][c][h*s][w*s]
 *                  out[b][k][y][x] = scale * in[b][k][y/s][x/s]
 *   stride -s < 0: in [batch][c][h][w]  out [batch][c][h/s][w/s]   (h, w multiples of s)
 *                  out[b][k][y][x] = scale * sum over the s x s window in[b][k][y*s..][x*s..] */
#include "layers/upsample.h"

#include <limits.h>
#include <stdio.h>

#include "core/net.h"
#include "core/onnx_graph.h"

static int upsample_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    (void)net;
    int stride;
    float scale;
    int st = cfg_get_int(cfg, s, "stride", 2, &stride, e);
    st = st ? st : cfg_get_float(cfg, s, "scale", 1.0f, &scale, e);
    if (st)
        return st;
    const Shape in = l->in_shape;
    Upsample *up = l->priv;
    up->downsample = stride < 0;
    up->stride = stride < 0 ? -stride : stride;
    up->scale = scale;
    if (stride == 0 || stride == INT_MIN ||
        (!up->downsample && (double)shape_size(in) * stride * stride > (double)NET_MAX_FLOATS))
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: layer %d: [%s] stride=%d: expected a nonzero factor (positive "
                         "upsamples, negative downsamples)",
                         cfg->path, s->line, l->index, s->name, stride);
    if (up->downsample && (in.h % up->stride || in.w % up->stride))
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: layer %d: [%s] stride=%d: the input's %dx%d (height x width) is "
                         "not a multiple of %d",
                         cfg->path, s->line, l->index, s->name, stride, in.h, in.w, up->stride);
    if (up->downsample) {
        l->out_shape = (Shape){in.c, in.h / up->stride, in.w / up->stride};
        l->flops = (double)shape_size(in);
    } else {
        l->out_shape = (Shape){in.c, in.h * stride, in.w * stride};
        l->flops = (double)shape_size(l->out_shape);
    }
    return CDL_OK;
}

/* Upsampling: Resize (nearest; for an integer factor the default half-pixel coordinates with
 * round_prefer_floor pick source index y/stride), then Mul by scale unless it is 1.
 * Downsampling: AveragePool over stride x stride windows, then Mul by scale * stride^2. */
static int upsample_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)net, (void)e;
    const Upsample *up = l->priv;
    const float factor = up->downsample ? up->scale * (float)(up->stride * up->stride) : up->scale;
    char x[ONNX_NAME_MAX], resampled[ONNX_NAME_MAX], factors[ONNX_NAME_MAX + 8];
    char scale[ONNX_NAME_MAX + 8];
    onnx_input_nchw(g, l, 0, x);
    const char *out = onnx_output(g, l, 0);
    if (factor == 1.0f)
        snprintf(resampled, sizeof resampled, "%s", out);
    else
        onnx_name(resampled, l, "resampled");
    if (up->downsample) {
        const int64_t window[] = {up->stride, up->stride};
        const OnnxAttr attrs[] = {onnx_attr_ints("kernel_shape", window, 2),
                                  onnx_attr_ints("strides", window, 2)};
        onnx_node(g, "AveragePool", 1, (const char *[]){x}, resampled, 2, attrs);
    } else {
        snprintf(factors, sizeof factors, "%s.scales", resampled);
        const float s = (float)up->stride, scales[] = {1.0f, 1.0f, s, s};
        const int64_t dims[] = {4};
        onnx_initializer(g, factors, ONNX_FLOAT, 1, dims, scales);
        onnx_node(g, "Resize", 3, (const char *[]){x, "", factors}, resampled, 0, NULL);
    }
    if (factor == 1.0f)
        return CDL_OK;
    snprintf(scale, sizeof scale, "%s.factor", out);
    onnx_scalar(g, scale, factor);
    onnx_node(g, "Mul", 2, (const char *[]){resampled, scale}, out, 0, NULL);
    return CDL_OK;
}

/* The input's new height and width (net_set_size), a multiple of the stride when downsampling. */
static int upsample_set_size(Layer *l, const Net *net, Error *e)
{
    const Upsample *up = l->priv;
    const Shape in = layer_input_shape(l, net, 0);
    if (up->downsample && (in.h % up->stride || in.w % up->stride))
        return error_set(e, CDL_EUSAGE,
                         "layer %d [upsample]: the input's %dx%d is not a multiple of %d", l->index,
                         in.h, in.w, up->stride);
    l->in_shape = in;
    l->out_shape.h = up->downsample ? in.h / up->stride : in.h * up->stride;
    l->out_shape.w = up->downsample ? in.w / up->stride : in.w * up->stride;
    l->flops = (double)shape_size(up->downsample ? in : l->out_shape);
    return CDL_OK;
}

const LayerType upsample_layer = {
    .name = "upsample",
    .priv_size = sizeof(Upsample),
    .parse = upsample_parse,
    .export_onnx = upsample_export_onnx,
    .set_size = upsample_set_size,
    .backward_ignores_inputs = 1,
    .backward_ignores_output = 1,
};
