/* [reorg]: darknet's reorg layer (YOLOv2's passthrough), a fixed permutation that trades
 * space for channels. It is darknet's exact (and unusual) order, not a plain space-to-depth:
 * with s = stride and oc = c / s^2, the input read as [oc][h*s][w*s] gives
 *
 *   out[k][j][i] (viewed with the input's dims [c][h][w]) = in[c2][j*s + dy][i*s + dx]
 *   where k = (dy*s + dx)*oc + c2,
 *
 * and the result is declared [c*s^2][h/s][w/s]. darknet's reverse, flatten and extra
 * variants are refused (core/darknet_compat.c).
 *
 *   in  [batch][c][h][w]        (h, w divisible by s; c by s^2)
 *   out [batch][c*s*s][h/s][w/s] */
#include <stdio.h>

#include "core/net.h"
#include "core/onnx_graph.h"

static int reorg_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    (void)net;
    int stride;
    int st = cfg_get_int(cfg, s, "stride", 1, &stride, e);
    if (st)
        return st;
    const Shape in = l->in_shape;
    if (stride < 1 || in.h % stride || in.w % stride || in.c % (stride * stride))
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: layer %d: [%s] stride=%d must be at least 1 and divide the "
                         "input's height (%d) and width (%d), its square the channels (%d)",
                         cfg->path, s->line, l->index, s->name, stride, in.h, in.w, in.c);
    l->out_shape = (Shape){in.c * stride * stride, in.h / stride, in.w / stride};
    return CDL_OK;
}

static int stride_of(const Layer *l)
{
    return l->in_shape.h / l->out_shape.h;
}

/* The input index (within a sample) that output index (i, j, k), taken with the input's dims
 * [c][h][w], reads. */
static inline size_t source_index(Shape in, int s, int i, int j, int k)
{
    const int oc = in.c / (s * s), c2 = k % oc, offset = k / oc;
    const size_t w2 = (size_t)i * s + offset % s, h2 = (size_t)j * s + offset / s;
    return w2 + (size_t)in.w * s * (h2 + (size_t)in.h * s * c2);
}

static void reorg_forward(Layer *l, const StepContext *ctx)
{
    const float *in = l->in[0];
    const Shape is = l->in_shape;
    const int s = stride_of(l);
    const size_t n = shape_size(is);
    const int planes = ctx->batch * is.c;
#pragma omp parallel for schedule(static) if ((size_t)planes * is.h * is.w >= 65536)
    for (int p = 0; p < planes; p++) {
        const int b = p / is.c, k = p % is.c;
        float *out = l->out + (size_t)p * is.h * is.w;
        const float *src = in + (size_t)b * n;
        for (int j = 0; j < is.h; j++)
            for (int i = 0; i < is.w; i++)
                out[(size_t)j * is.w + i] = src[source_index(is, s, i, j, k)];
    }
}

static void reorg_backward(Layer *l, const StepContext *ctx)
{
    float *in_delta = l->in_delta[0];
    if (!in_delta)
        return;
    const Shape is = l->in_shape;
    const int s = stride_of(l);
    const size_t n = shape_size(is);
    /* A permutation: every input value receives exactly one delta, so planes do not race. */
    const int planes = ctx->batch * is.c;
#pragma omp parallel for schedule(static) if ((size_t)planes * is.h * is.w >= 65536)
    for (int p = 0; p < planes; p++) {
        const int b = p / is.c, k = p % is.c;
        const float *d = l->delta + (size_t)p * is.h * is.w;
        float *dsrc = in_delta + (size_t)b * n;
        for (int j = 0; j < is.h; j++)
            for (int i = 0; i < is.w; i++)
                dsrc[source_index(is, s, i, j, k)] += d[(size_t)j * is.w + i];
    }
}

/* Reshape to [N][oc][h][s][w][s], Transpose to [N][s][s][oc][h][w], Reshape to the output. */
static int reorg_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)net, (void)e;
    const Shape is = l->in_shape, os = l->out_shape;
    const int s = stride_of(l);
    char x[ONNX_NAME_MAX], split[ONNX_NAME_MAX], moved[ONNX_NAME_MAX];
    char split_shape[ONNX_NAME_MAX + 6], out_shape[ONNX_NAME_MAX + 6];
    onnx_input_nchw(g, l, 0, x);
    const char *out = onnx_output(g, l, 0);
    onnx_name(split, l, "split");
    onnx_name(moved, l, "moved");
    snprintf(split_shape, sizeof split_shape, "%s.shape", split);
    snprintf(out_shape, sizeof out_shape, "%s.shape", out);
    const int64_t rank6[] = {0, is.c / (s * s), is.h, s, is.w, s};
    const int64_t final[] = {0, os.c, os.h, os.w}, perm[] = {0, 3, 5, 1, 2, 4};
    onnx_int64s(g, split_shape, 6, rank6);
    onnx_int64s(g, out_shape, 4, final);
    onnx_node(g, "Reshape", 2, (const char *[]){x, split_shape}, split, 0, NULL);
    const OnnxAttr attr = onnx_attr_ints("perm", perm, 6);
    onnx_node(g, "Transpose", 1, (const char *[]){split}, moved, 1, &attr);
    onnx_node(g, "Reshape", 2, (const char *[]){moved, out_shape}, out, 0, NULL);
    return CDL_OK;
}

const LayerType reorg_layer = {
    .name = "reorg",
    .parse = reorg_parse,
    .export_onnx = reorg_export_onnx,
    .backward_ignores_inputs = 1,
    .backward_ignores_output = 1,
};

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_reorg_kernels = {
    .forward = reorg_forward,
    .backward = reorg_backward,
};
