/* [embedding]: token ids to learned vectors, the first layer of a language model.
 *
 *   in  [batch][T] token ids stored as floats (the net input, [net] inputs=1)
 *   out [batch][T][C]   out[b][t] = weights[in[b][t]]   (out_shape {1, T, C})
 *   weights [vocab][C], N(0, 1) as torch.nn.Embedding
 *
 * An id is the integer part of its float; an id outside [0, vocab) (or NaN) gives a zero row
 * and no gradient. There is no input gradient: ids are not differentiable. A [linear] with
 * tie=1 reuses weights as its output projection and adds into their gradient too. Its CPU kernels
 * are in backend/cpu/embedding.c. */
#include "core/net.h"
#include "core/onnx_graph.h"

static int embedding_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    int channels, vocab;
    int st = cfg_get_int(cfg, s, "output", 0, &channels, e);
    st = st ? st : cfg_get_int(cfg, s, "vocab", net->vocab, &vocab, e);
    if (st)
        return st;
    const CfgEntry *out_en = cfg_find(s, "output"), *vocab_en = cfg_find(s, "vocab");
    if (!out_en)
        return error_set(e, CDL_EUSAGE, "%s:%d: layer %d [%s] needs key 'output' (C, a value >= 1)",
                         cfg->path, s->line, l->index, s->name);
    if (channels < 1)
        return cfg_require_min(cfg, s, "output", channels, 1, e);
    if (!vocab_en && vocab < 1)
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: layer %d [%s] needs the number of tokens: set vocab= here or in "
                         "[net]",
                         cfg->path, s->line, l->index, s->name);
    if (vocab < 1)
        return cfg_require_min(cfg, s, "vocab", vocab, 1, e);
    if (l->index != 0 || l->in_shape.c != 1 || l->in_shape.w != 1)
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: layer %d [%s] reads token ids: it must be the first layer of a "
                         "net whose input is one id per token ([net] seq=T, inputs=1; here the "
                         "input to it is %dx%dx%d)",
                         cfg->path, s->line, l->index, s->name, l->in_shape.c, l->in_shape.h,
                         l->in_shape.w);
    l->out_shape = (Shape){1, l->in_shape.h, channels};
    layer_add_param(l, "weights", 1, 1, 2, (int64_t[]){vocab, channels});
    return CDL_OK;
}

static void embedding_init(Layer *l, Rng *rng)
{
    Param *w = &l->params[0];
    for (size_t i = 0; i < w->count; i++)
        w->data[i] = rng_normal(rng);
}

/* Gather of the weights' rows by the graph input's int64 ids [N][T]: out [N][T][C]. Unlike cdl,
 * which gives an id outside [0, vocab) a zero row, ONNX runtimes refuse such an index. */
static int embedding_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)net, (void)e;
    char w[ONNX_NAME_MAX];
    onnx_param(g, l, 0, w);
    const OnnxAttr axis = onnx_attr_int("axis", 0);
    onnx_node(g, "Gather", 2, (const char *[]){w, onnx_input(g, l, 0)->name}, onnx_output(g, l, 0),
              1, &axis);
    return CDL_OK;
}

const LayerType embedding_layer = {
    .name = "embedding",
    .parse = embedding_parse,
    .init = embedding_init,
    .export_onnx = embedding_export_onnx,
    .reads_token_ids = 1,
    .splits_batch = 1,
};
