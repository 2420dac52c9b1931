/* [select_token]: one token row of each sample, a vision transformer's class token for its head
 * (torchvision's VisionTransformer: x[:, 0] before heads).
 *
 *   in  [batch][1][T][C]   token rows (a sequence net's, or [tokens]' in an image net)
 *   out [batch][1][1][C]   out[b] = in[b][index]
 *
 * Its kernels are in backend/cpu/select_token.c and cuda/select_token.c. */
#include "core/net.h"
#include "core/onnx_graph.h"

static int select_token_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    (void)net;
    int *index = l->priv;
    int st = cfg_get_int(cfg, s, "index", 0, index, e);
    if (st)
        return st;
    if (l->in_shape.c != 1)
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: layer %d: [select_token] needs token rows (one channel of T "
                         "tokens), not %dx%dx%d (CxHxW)",
                         cfg->path, s->line, l->index, l->in_shape.c, l->in_shape.h, l->in_shape.w);
    if (*index < 0 || *index >= l->in_shape.h)
        return layer_bad_key(l, cfg, s, "index", *index, "expected a token of the input, 0..T-1",
                             e);
    l->out_shape = (Shape){1, 1, l->in_shape.w};
    return CDL_OK;
}

/* A Slice of row index along the rows' axis: [N][1][T][C] to [N][1][1][C] (in a sequence net,
 * [N][T][C] to [N][1][C]). */
static int select_token_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)net, (void)e;
    const int index = *(const int *)l->priv;
    char x[ONNX_NAME_MAX];
    onnx_input_nchw(g, l, 0, x);
    onnx_slice(g, x, g->sequence ? 1 : 2, index, index + 1, onnx_output(g, l, 0));
    return CDL_OK;
}

const LayerType select_token_layer = {
    .name = "select_token",
    .priv_size = sizeof(int),
    .parse = select_token_parse,
    .export_onnx = select_token_export_onnx,
    .backward_ignores_inputs = 1,
    .backward_ignores_output = 1,
    .splits_batch = 1,
};
