/* [shuffle]: ShuffleNet's channel shuffle, torch.nn.ChannelShuffle(groups): the channels viewed as
 * [groups][c/groups] are transposed to [c/groups][groups], so that the next grouped convolution
 * sees channels of every group.
 *
 *   in  [batch][c][h][w]   (c divisible by groups)
 *   out [batch][c][h][w]   out[b][k] = in[b][(k % groups) * (c / groups) + k / groups]
 */
#include "layers/shuffle.h"

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
    const int64_t rank5[] = {0, groups, s.c / groups, s.h, s.w}, perm[] = {0, 2, 1, 3, 4};
    onnx_permute_channels(g, l, 5, rank5, perm);
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
