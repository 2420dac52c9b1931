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
#include "layers/reorg.h"

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

/* Reshape to [N][oc][h][s][w][s], Transpose to [N][s][s][oc][h][w], Reshape to the output. */
static int reorg_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)net, (void)e;
    const Shape is = l->in_shape;
    const int s = reorg_stride(l);
    const int64_t rank6[] = {0, is.c / (s * s), is.h, s, is.w, s}, perm[] = {0, 3, 5, 1, 2, 4};
    onnx_permute_channels(g, l, 6, rank6, perm);
    return CDL_OK;
}

/* The input's new height and width (net_set_size), still a multiple of the stride. */
static int reorg_set_size(Layer *l, const Net *net, Error *e)
{
    const int s = reorg_stride(l);
    const Shape in = layer_input_shape(l, net, 0);
    if (in.h % s || in.w % s)
        return error_set(e, CDL_EUSAGE,
                         "layer %d [reorg]: the input's %dx%d is not a multiple of %d", l->index,
                         in.h, in.w, s);
    l->in_shape = in;
    l->out_shape.h = in.h / s;
    l->out_shape.w = in.w / s;
    return CDL_OK;
}

const LayerType reorg_layer = {
    .name = "reorg",
    .parse = reorg_parse,
    .export_onnx = reorg_export_onnx,
    .set_size = reorg_set_size,
    .backward_ignores_inputs = 1,
    .backward_ignores_output = 1,
};
