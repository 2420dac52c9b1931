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

const LayerType tokens_layer = {
    .name = "tokens",
    .priv_size = sizeof(Tokens),
    .parse = tokens_parse,
    .init = tokens_init,
    .backward_ignores_inputs = 1,
    .backward_ignores_output = 1,
    .splits_batch = 1,
};
