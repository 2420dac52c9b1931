/* [tokens]: a vision transformer's token sequence from its patch embedding (torchvision's
 * VisionTransformer: _process_input's reshape and permute of conv_proj's map, the class token
 * concatenated in front, the encoder's pos_embedding added).
 *
 *   in  [batch][C][h][w]            the patch embedding's map (a [convolutional] with size =
 *                                   stride = the patch size)
 *   out [batch][1][T][C]            T = class_token + h*w tokens of C features, the layout of a
 *                                   sequence net's rows: out[b][class_token + p][k] = in[b][k][p]
 *                                   (+ positional[class_token + p][k]); with class_token,
 *                                   out[b][0][k] = class_token[k] (+ positional[0][k])
 *   class_token [1][1][C]   zeros at the start (torchvision's class_token, its shape too)
 *   positional [1][T][C]    N(0, 0.02^2) at the start (torchvision's encoder.pos_embedding)
 *
 * Neither takes weight decay. Its CPU kernels are in backend/cpu/tokens.c, its GPU ones in
 * cuda/tokens.c. */
#include "layers/tokens.h"

#include "core/net.h"
#include "core/onnx_graph.h"

static int tokens_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    Tokens *t = l->priv;
    int st = cfg_get_flag(cfg, s, "class_token", 0, &t->class_token, e);
    st = st ? st : cfg_get_flag(cfg, s, "positional", 0, &t->positional, e);
    if (st)
        return st;
    if (net->seq > 0)
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: layer %d: [tokens] turns an image net's map into tokens; a "
                         "sequence net has them already",
                         cfg->path, s->line, l->index);
    t->channels = l->in_shape.c;
    t->patches = l->in_shape.h * l->in_shape.w;
    const int seq = t->class_token + t->patches;
    l->out_shape = (Shape){1, seq, t->channels};
    t->token_param = t->pos_param = -1;
    if (t->class_token) {
        t->token_param = l->n_params;
        layer_add_param(l, "class_token", 1, 0, 3, (int64_t[]){1, 1, t->channels});
    }
    if (t->positional) {
        t->pos_param = l->n_params;
        layer_add_param(l, "positional", 1, 0, 3, (int64_t[]){1, seq, t->channels});
    }
    l->flops = (double)shape_size(l->out_shape);
    return CDL_OK;
}

static void tokens_init(Layer *l, Rng *rng)
{
    const Tokens *t = l->priv;
    if (t->token_param >= 0)
        for (size_t i = 0; i < l->params[t->token_param].count; i++)
            l->params[t->token_param].data[i] = 0.0f;
    if (t->pos_param >= 0)
        for (size_t i = 0; i < l->params[t->pos_param].count; i++)
            l->params[t->pos_param].data[i] = 0.02f * rng_normal(rng);
}

/* The map [N][C][h][w] reshaped to [N][C][P] and transposed to the patches' rows [N][P][C]; the
 * class token [1][1][C] expanded to [N][1][C] (its shape [N][1][1] from Shape of the map) and
 * concatenated in front; the positional table [1][T][C] added; then [N][1][T][C], the image net's
 * layout of token rows (one channel of T rows of C). */
static int tokens_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)net, (void)e;
    const Tokens *t = l->priv;
    static const char *const suffixes[] = {
        "patches_shape", "patch_rows", "patches",    "map_shape", "batch",      "token_tail",
        "token_shape",   "token_rows", "with_token", "rows",      "rows_shape", NULL};
    enum {
        PATCHES_SHAPE,
        PATCH_ROWS,
        PATCHES,
        MAP_SHAPE,
        BATCH,
        TOKEN_TAIL,
        TOKEN_SHAPE,
        TOKEN,
        WITH_TOKEN,
        ROWS,
        ROWS_SHAPE
    };
    char v[11][ONNX_NAME_MAX], x[ONNX_NAME_MAX], param[ONNX_NAME_MAX];
    for (int k = 0; suffixes[k]; k++)
        onnx_name(v[k], l, suffixes[k]);
    onnx_input_nchw(g, l, 0, x);
    onnx_int64s(g, v[PATCHES_SHAPE], 3, (const int64_t[]){0, t->channels, t->patches});
    onnx_node(g, "Reshape", 2, (const char *[]){x, v[PATCHES_SHAPE]}, v[PATCH_ROWS], 0, NULL);
    const OnnxAttr perm = onnx_attr_ints("perm", (const int64_t[]){0, 2, 1}, 3);
    onnx_node(g, "Transpose", 1, (const char *[]){v[PATCH_ROWS]}, v[PATCHES], 1, &perm);
    const char *rows = v[PATCHES];
    if (t->class_token) {
        onnx_node(g, "Shape", 1, (const char *[]){x}, v[MAP_SHAPE], 0, NULL);
        onnx_slice(g, v[MAP_SHAPE], 0, 0, 1, v[BATCH]);
        onnx_int64s(g, v[TOKEN_TAIL], 2, (const int64_t[]){1, 1});
        const OnnxAttr axis0 = onnx_attr_int("axis", 0);
        onnx_node(g, "Concat", 2, (const char *[]){v[BATCH], v[TOKEN_TAIL]}, v[TOKEN_SHAPE], 1,
                  &axis0);
        onnx_param(g, l, t->token_param, param);
        onnx_node(g, "Expand", 2, (const char *[]){param, v[TOKEN_SHAPE]}, v[TOKEN], 0, NULL);
        const OnnxAttr axis1 = onnx_attr_int("axis", 1);
        onnx_node(g, "Concat", 2, (const char *[]){v[TOKEN], v[PATCHES]}, v[WITH_TOKEN], 1, &axis1);
        rows = v[WITH_TOKEN];
    }
    if (t->positional) {
        onnx_param(g, l, t->pos_param, param);
        onnx_node(g, "Add", 2, (const char *[]){rows, param}, v[ROWS], 0, NULL);
        rows = v[ROWS];
    }
    const Shape o = l->out_shape;
    onnx_int64s(g, v[ROWS_SHAPE], 4, (const int64_t[]){0, o.c, o.h, o.w});
    onnx_node(g, "Reshape", 2, (const char *[]){rows, v[ROWS_SHAPE]}, onnx_output(g, l, 0), 0,
              NULL);
    return CDL_OK;
}

const LayerType tokens_layer = {
    .name = "tokens",
    .priv_size = sizeof(Tokens),
    .parse = tokens_parse,
    .init = tokens_init,
    .export_onnx = tokens_export_onnx,
    .backward_ignores_inputs = 1,
    .backward_ignores_output = 1,
    .splits_batch = 1,
};
