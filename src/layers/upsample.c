/* [upsample]: darknet's nearest-neighbour upsampling by an integer stride, times `scale`.
 *
 *   in  [batch][c][h][w]
 *   out [batch][c][h*stride][w*stride]   out[b][k][y][x] = scale * in[b][k][y/stride][x/stride]
 *
 * darknet's negative stride (a summing downsample) is refused. */
#include <stdio.h>

#include "core/net.h"
#include "core/onnx_graph.h"

typedef struct Upsample {
    int stride;
    float scale;
} Upsample;

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

static void upsample_forward(Layer *l, const StepContext *ctx)
{
    const Upsample *up = l->priv;
    const float *in = l->in[0];
    const Shape is = l->in_shape, os = l->out_shape;
    const int planes = ctx->batch * os.c, s = up->stride;
#pragma omp parallel for schedule(static) if ((size_t)planes * os.h * os.w >= 65536)
    for (int p = 0; p < planes; p++) {
        const float *src = in + (size_t)p * is.h * is.w;
        float *dst = l->out + (size_t)p * os.h * os.w;
        for (int y = 0; y < os.h; y++)
            for (int x = 0; x < os.w; x++)
                dst[(size_t)y * os.w + x] = up->scale * src[(size_t)(y / s) * is.w + x / s];
    }
}

static void upsample_backward(Layer *l, const StepContext *ctx)
{
    const Upsample *up = l->priv;
    float *in_delta = l->in_delta[0];
    if (!in_delta)
        return;
    const Shape is = l->in_shape, os = l->out_shape;
    const int planes = ctx->batch * os.c, s = up->stride;
#pragma omp parallel for schedule(static) if ((size_t)planes * os.h * os.w >= 65536)
    for (int p = 0; p < planes; p++) {
        float *dsrc = in_delta + (size_t)p * is.h * is.w;
        const float *d = l->delta + (size_t)p * os.h * os.w;
        for (int y = 0; y < os.h; y++)
            for (int x = 0; x < os.w; x++)
                dsrc[(size_t)(y / s) * is.w + x / s] += up->scale * d[(size_t)y * os.w + x];
    }
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

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_upsample_kernels = {
    .forward = upsample_forward,
    .backward = upsample_backward,
};
