/* [linear]: a dense layer applied to every token (row) on its own, as torch.nn.Linear on
 * [B][T][C], with an optional activation.
 *
 *   in  [batch][rows][inputs]  (rows = c*h: the T tokens of a sequence net; inputs = w)
 *   out [batch][rows][output]  out[b][r] = act(in[b][r] W^T + biases)
 *   weights [output][inputs], biases [output]: U(-1/sqrt(inputs), 1/sqrt(inputs)) as nn.Linear
 *
 * With tie=1 the layer has no weights of its own: W is the [embedding] weights [vocab][C] of
 * the last [embedding] before it (weight tying, as GPT-2's output projection), so output = vocab
 * and inputs = C; the forward reads them and the backward adds into their gradient.
 *
 * Its CPU kernels (float32, bf16 and int8 products) are in backend/cpu/linear.c. */
#include "layers/linear.h"

#include <math.h>

#include "core/net.h"
#include "core/onnx_graph.h"
#include "layers/embedding.h"

/* Checks tie=1 against the last [embedding] before l (layer 0 of a language model, the target's
 * in a sequence-to-sequence net), which must be of vocab `outputs` and C `inputs`; *tied gets
 * its weights. */
static int check_tie(const Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, int outputs,
                     const Param **tied, Error *e)
{
    const CfgWhere where = cfg_where(cfg, s, cfg_find(s, "tie"));
    int at = l->index - 1;
    while (at >= 0 && !net->layers[at].type->reads_token_ids)
        at--;
    if (at < 0)
        return error_set(e, CDL_EUSAGE,
                         "%s: layer %d [%s] tie=1 uses the weights of an [embedding] before it, "
                         "and this net has none",
                         where.text, l->index, s->name);
    const Layer *emb = &net->layers[at];
    const int channels = emb->out_shape.w;
    *tied = embedding_weights(emb);
    const int vocab = (int)((*tied)->count / (size_t)channels);
    if (outputs != vocab || l->in_shape.w != channels)
        return error_set(e, CDL_EUSAGE,
                         "%s: layer %d [%s] tie=1 needs output=%d (the [embedding]'s vocab) "
                         "and an input of %d values per token (its output), not output=%d and "
                         "%d inputs",
                         where.text, l->index, s->name, vocab, channels, outputs, l->in_shape.w);
    return CDL_OK;
}

static int linear_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    int outputs, has_biases, tied;
    int st = cfg_get_int(cfg, s, "output", net->vocab, &outputs, e);
    st = st ? st : cfg_get_flag(cfg, s, "bias", 1, &has_biases, e);
    st = st ? st : cfg_get_flag(cfg, s, "tie", 0, &tied, e);
    st = st ? st : layer_parse_activation(l, cfg, s, CDL_ACT_LINEAR, e);
    if (st)
        return st;
    const CfgEntry *out_en = cfg_find(s, "output");
    if (!out_en && outputs < 1)
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: layer %d [%s] needs key 'output' (its default, [net] vocab=, is "
                         "not set)",
                         cfg->path, s->line, l->index, s->name);
    if (outputs < 1)
        return cfg_require_min(cfg, s, "output", outputs, 1, e);
    Linear *li = l->priv;
    li->tied = NULL;
    if (tied && (st = check_tie(l, cfg, s, net, outputs, &li->tied, e)))
        return st;
    li->inputs = l->in_shape.w;
    li->outputs = outputs;
    li->has_biases = has_biases;
    l->out_shape = (Shape){l->in_shape.c, l->in_shape.h, outputs};
    if (!tied)
        layer_add_param(l, "weights", 1, 1, 2, (int64_t[]){outputs, li->inputs});
    if (has_biases)
        layer_add_param(l, "biases", 1, 0, 1, (int64_t[]){outputs});
    l->flops = 2.0 * l->in_shape.c * l->in_shape.h * (double)li->inputs * outputs;
    return CDL_OK;
}

/* As PyTorch's nn.Linear: weights (unless tied) and biases ~ U(-1/sqrt(inputs), 1/sqrt(inputs)). */
static void linear_init(Layer *l, Rng *rng)
{
    const Linear *li = l->priv;
    layer_init_uniform(l, rng, 1.0f / sqrtf((float)li->inputs));
}

/* Tied weights belong to the [embedding], which reads them as floats. */
static int linear_quant_weights(const Layer *l)
{
    const Linear *li = l->priv;
    return li->tied ? -1 : 0;
}

/* MatMul by the transposed weights (layer 0's, which the [embedding] exported, when tied), the
 * biases, then the activation. */
static int linear_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)e;
    const Linear *li = l->priv;
    char x[ONNX_NAME_MAX], w[ONNX_NAME_MAX], b[ONNX_NAME_MAX], pre[ONNX_NAME_MAX];
    onnx_input_nchw(g, l, 0, x);
    if (li->tied)
        onnx_param_name(net, li->tied, w);
    else
        onnx_param(g, l, 0, w);
    if (li->has_biases)
        onnx_param(g, l, li->tied ? 0 : 1, b);
    const char *out = onnx_output(g, l, 0);
    onnx_activation_input(pre, l->activation, out);
    onnx_linear(g, x, w, li->has_biases ? b : NULL, pre);
    onnx_activation(g, l->activation, pre, out);
    return CDL_OK;
}

const LayerType linear_layer = {
    .name = "linear",
    .set_rows = layer_rows_follow_input,
    .priv_size = sizeof(Linear),
    .parse = linear_parse,
    .init = linear_init,
    .export_onnx = linear_export_onnx,
    .quant_weights = linear_quant_weights,
    .backward_ignores_output = 1,
    .writes_input_delta = 1,
    .splits_batch = 1,
};
