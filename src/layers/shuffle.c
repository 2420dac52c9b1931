/* [shuffle]: ShuffleNet's channel shuffle, torch.nn.ChannelShuffle(groups): the channels viewed as
 * [groups][c/groups] are transposed to [c/groups][groups], so that the next grouped convolution
 * sees channels of every group.
 *
 *   in  [batch][c][h][w]   (c divisible by groups)
 *   out [batch][c][h][w]   out[b][k] = in[b][(k % groups) * (c / groups) + k / groups]
 */
#include "layers/shuffle.h"

#include <stdio.h>

#include "core/net.h"
#include "core/onnx_graph.h"

static int shuffle_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    (void)net;
    int groups;
    const int st = cfg_get_int(cfg, s, "groups", 1, &groups, e);
    if (st)
        return st;
    if (groups < 1 || l->in_shape.c % groups)
        return layer_bad_key(l, cfg, s, "groups", groups,
                             "expected a positive divisor of the input's channels", e);
    ((Shuffle *)l->priv)->groups = groups;
    l->out_shape = l->in_shape;
    return CDL_OK;
}

/* Reshape to [N][g][c/g][h][w], Transpose to [N][c/g][g][h][w], Reshape back. */
static int shuffle_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)net, (void)e;
    const Shape s = l->in_shape;
    const int groups = ((const Shuffle *)l->priv)->groups;
    char x[ONNX_NAME_MAX], split[ONNX_NAME_MAX], moved[ONNX_NAME_MAX];
    char split_shape[ONNX_NAME_MAX + 6], out_shape[ONNX_NAME_MAX + 6];
    onnx_input_nchw(g, l, 0, x);
    const char *out = onnx_output(g, l, 0);
    onnx_name(split, l, "split");
    onnx_name(moved, l, "moved");
    snprintf(split_shape, sizeof split_shape, "%s.shape", split);
    snprintf(out_shape, sizeof out_shape, "%s.shape", out);
    const int64_t rank5[] = {0, groups, s.c / groups, s.h, s.w};
    const int64_t final[] = {0, s.c, s.h, s.w}, perm[] = {0, 2, 1, 3, 4};
    onnx_int64s(g, split_shape, 5, rank5);
    onnx_int64s(g, out_shape, 4, final);
    onnx_node(g, "Reshape", 2, (const char *[]){x, split_shape}, split, 0, NULL);
    const OnnxAttr attr = onnx_attr_ints("perm", perm, 5);
    onnx_node(g, "Transpose", 1, (const char *[]){split}, moved, 1, &attr);
    onnx_node(g, "Reshape", 2, (const char *[]){moved, out_shape}, out, 0, NULL);
    return CDL_OK;
}

const LayerType shuffle_layer = {
    .name = "shuffle",
    .priv_size = sizeof(Shuffle),
    .parse = shuffle_parse,
    .export_onnx = shuffle_export_onnx,
    .backward_ignores_inputs = 1,
    .backward_ignores_output = 1,
    .splits_batch = 1,
};
