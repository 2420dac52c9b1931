/* [upsample]: darknet's nearest-neighbour upsampling by an integer stride, times `scale`.
 *
 *   in  [batch][c][h][w]
 *   out [batch][c][h*stride][w*stride]   out[b][k][y][x] = scale * in[b][k][y/stride][x/stride]
 *
 * darknet's negative stride (a summing downsample) is refused. */
#include "layers/upsample.h"

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
    if (stride < 1 || (double)shape_size(in) * stride * stride > (double)NET_MAX_FLOATS)
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: layer %d: [%s] stride=%d: expected a positive upsampling factor "
                         "(darknet's negative stride, downsampling, is not supported)",
                         cfg->path, s->line, l->index, s->name, stride);
    Upsample *up = l->priv;
    up->stride = stride;
    up->scale = scale;
    l->out_shape = (Shape){in.c, in.h * stride, in.w * stride};
    l->flops = (double)shape_size(l->out_shape);
    return CDL_OK;
}

/* Resize (nearest; for an integer factor the default half-pixel coordinates with
 * round_prefer_floor pick source index y/stride), then Mul by scale unless it is 1. */
static int upsample_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)net, (void)e;
    const Upsample *up = l->priv;
    char x[ONNX_NAME_MAX], resized[ONNX_NAME_MAX], factors[ONNX_NAME_MAX + 8];
    char scale[ONNX_NAME_MAX + 8];
    onnx_input_nchw(g, l, 0, x);
    const char *out = onnx_output(g, l, 0);
    if (up->scale == 1.0f)
        snprintf(resized, sizeof resized, "%s", out);
    else
        onnx_name(resized, l, "resized");
    snprintf(factors, sizeof factors, "%s.scales", resized);
    const float s = (float)up->stride, scales[] = {1.0f, 1.0f, s, s};
    const int64_t dims[] = {4};
    onnx_initializer(g, factors, ONNX_FLOAT, 1, dims, scales);
    onnx_node(g, "Resize", 3, (const char *[]){x, "", factors}, resized, 0, NULL);
    if (up->scale == 1.0f)
        return CDL_OK;
    snprintf(scale, sizeof scale, "%s.factor", out);
    onnx_scalar(g, scale, up->scale);
    onnx_node(g, "Mul", 2, (const char *[]){resized, scale}, out, 0, NULL);
    return CDL_OK;
}

const LayerType upsample_layer = {
    .name = "upsample",
    .priv_size = sizeof(Upsample),
    .parse = upsample_parse,
    .export_onnx = upsample_export_onnx,
    .backward_ignores_inputs = 1,
    .backward_ignores_output = 1,
};
