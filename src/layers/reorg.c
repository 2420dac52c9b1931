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

/* Reshape to [N][oc][h][s][w][s], Transpose to [N][s][s][oc][h][w], Reshape to the output. */
static int reorg_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)net, (void)e;
    const Shape is = l->in_shape, os = l->out_shape;
    const int s = reorg_stride(l);
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
