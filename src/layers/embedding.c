/* [embedding]: token ids to learned vectors, the first layer of a language model.
 *
 *   in  [batch][R] token ids stored as floats (the net input, [net] inputs=1)
 *   out [batch][T][C]   out[b][t] = weights[in[b][first_row + t]]   (out_shape {1, T, C})
 *   weights [vocab][C], N(0, 1) as torch.nn.Embedding
 *
 * R = T, first_row 0, unless the net is sequence to sequence ([net] source=S, R = S + seq): there
 * part=source reads the S source rows (first_row 0, T = S) and part=target the seq target rows
 * (first_row S), wherever the layer stands, so the encoder and the decoder stacks each start with
 * their own [embedding]; share=N makes it read layer N's [embedding] weights instead of its own
 * (one table for both sides, as a shared source/target embedding), adding into their gradient.
 *
 * An id is the integer part of its float; an id outside [0, vocab) (or NaN: the padding of
 * paired text is -1) gives a zero row and no gradient. There is no input gradient: ids are not
 * differentiable. A [linear] with tie=1 reuses the weights as its output projection and adds into
 * their gradient too. Its kernels are in backend/cpu/embedding.c and cuda/embedding.c. */
#include "layers/embedding.h"

#include <stdio.h>

#include "core/net.h"
#include "core/onnx_graph.h"

static const char *const part_names[] = {"all", "source", "target"}; /* EmbeddingPart */

/* share=N: layer N must be an earlier [embedding] of C features; its weights become l's. */
static int parse_share(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, int channels,
                       Error *e)
{
    int index;
    int st = layer_parse_from(l, cfg, s, "share", &index, e);
    if (st)
        return st;
    if (cfg_find(s, "vocab"))
        return cfg_bad_value(cfg, s, "vocab", e, "share= reads layer %d's table, of its vocab",
                             index);
    const Layer *other = &net->layers[index];
    if (other->type != l->type || other->out_shape.w != channels)
        return cfg_bad_value(cfg, s, "share", e,
                             "layer %d is not an [embedding] of output=%d whose weights this one "
                             "could read",
                             index, channels);
    ((Embedding *)l->priv)->weights = embedding_weights(other);
    return CDL_OK;
}

static int embedding_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    int channels, vocab, part;
    int st = cfg_get_int(cfg, s, "output", 0, &channels, e);
    st = st ? st : cfg_get_int(cfg, s, "vocab", net->vocab, &vocab, e);
    st = st ? st : cfg_get_named(cfg, s, "part", part_names, 3, &part, e);
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
    if (!net->source != (part == EMBEDDING_ALL))
        return cfg_bad_value(cfg, s, "part", e,
                             net->source ? "a sequence-to-sequence net ([net] source=) embeds "
                                           "the source or the target: part=source or part=target"
                                         : "part= is for sequence-to-sequence nets ([net] "
                                           "source=S); this one has a single sequence");
    if ((part == EMBEDDING_ALL && l->index != 0) || net->in_shape.c != 1 || net->in_shape.w != 1)
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: layer %d [%s] reads token ids: it must be the first layer of a "
                         "net whose input is one id per token ([net] seq=T, inputs=1; here the "
                         "input to it is %dx%dx%d)",
                         cfg->path, s->line, l->index, s->name, l->in_shape.c, l->in_shape.h,
                         l->in_shape.w);
    Embedding *em = l->priv;
    em->first_row = part == EMBEDDING_TARGET ? net->source : 0;
    em->input_rows = net->in_shape.h;
    const int rows = part == EMBEDDING_ALL      ? net->in_shape.h
                     : part == EMBEDDING_SOURCE ? net->source
                                                : net->seq;
    l->in_shape = net->in_shape;
    l->inputs[0] = -1; /* the net input, wherever the layer stands */
    l->out_shape = (Shape){1, rows, channels};
    if (cfg_find(s, "share"))
        return parse_share(l, cfg, s, net, channels, e);
    em->weights = layer_add_param(l, "weights", 1, 1, 2, (int64_t[]){vocab, channels});
    return CDL_OK;
}

static void embedding_init(Layer *l, Rng *rng)
{
    if (!l->n_params) /* share=: another layer's */
        return;
    Param *w = &l->params[0];
    for (size_t i = 0; i < w->count; i++)
        w->data[i] = rng_normal(rng);
}

/* A sequence-to-sequence net's part: Gather of the weights' rows by the int64 ids [N][T] of the
 * source or of the decoder step's token, the padding's (-1) rows zero as in cdl:
 * out = Gather(weights, Where(padded, 0, ids)) * Unsqueeze(Not(padded), 2). */
static void export_part(const Layer *l, OnnxGraph *g, const char *w)
{
    static const char *const suffixes[] = {"padded", "ids", "rows", "kept", "keep", "keep3", NULL};
    enum { PADDED, IDS, ROWS, KEPT, KEEP, KEEP3 };
    char v[6][ONNX_NAME_MAX];
    for (int k = 0; suffixes[k]; k++)
        onnx_name(v[k], l, suffixes[k]);
    const char *ids = ((const Embedding *)l->priv)->first_row ? ONNX_TOKEN_ID : ONNX_SOURCE_IDS;
    char zero[ONNX_NAME_MAX + 8];
    snprintf(zero, sizeof zero, "%s.zero", v[PADDED]);
    onnx_padding(g, ids, v[PADDED]);
    onnx_node(g, "Where", 3, (const char *[]){v[PADDED], zero, ids}, v[IDS], 0, NULL);
    const OnnxAttr axis = onnx_attr_int("axis", 0), to_float = onnx_attr_int("to", ONNX_FLOAT);
    onnx_node(g, "Gather", 2, (const char *[]){w, v[IDS]}, v[ROWS], 1, &axis);
    onnx_node(g, "Not", 1, (const char *[]){v[PADDED]}, v[KEPT], 0, NULL);
    onnx_node(g, "Cast", 1, (const char *[]){v[KEPT]}, v[KEEP], 1, &to_float);
    onnx_unsqueeze(g, v[KEEP], 1, (const int64_t[]){2}, v[KEEP3]);
    onnx_node(g, "Mul", 2, (const char *[]){v[ROWS], v[KEEP3]}, onnx_output(g, l, 0), 0, NULL);
}

/* Gather of the weights' rows by the graph input's int64 ids [N][T]: out [N][T][C]. Unlike cdl,
 * which gives an id outside [0, vocab) a zero row, ONNX runtimes refuse such an index; in a
 * sequence-to-sequence net's parts the padding (-1) is masked (export_part). The weights are
 * named by the layer holding them (share=). */
static int embedding_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    if (net->source && g->part == ONNX_WHOLE_NET)
        return error_set(e, CDL_EUSAGE,
                         "layer %d [embedding]: a sequence-to-sequence net is exported as its "
                         "encoder and decoder step, not as one graph",
                         l->index);
    const Param *p = embedding_weights(l);
    char w[ONNX_NAME_MAX];
    onnx_param_name(net, p, w);
    onnx_initializer(g, w, ONNX_FLOAT, p->n_dims, p->dims, p->data);
    if (net->source) {
        export_part(l, g, w);
        return CDL_OK;
    }
    const OnnxAttr axis = onnx_attr_int("axis", 0);
    onnx_node(g, "Gather", 2, (const char *[]){w, onnx_input(g, l, 0)->name}, onnx_output(g, l, 0),
              1, &axis);
    return CDL_OK;
}

/* The rows of its part: the net input keeps its layout (first_row, input_rows). */
static void embedding_set_rows(Layer *l, const Net *net)
{
    l->out_shape.h = ((const Embedding *)l->priv)->first_row ? net->rows_target : net->rows_source;
}

const LayerType embedding_layer = {
    .name = "embedding",
    .set_rows = embedding_set_rows,
    .priv_size = sizeof(Embedding),
    .parse = embedding_parse,
    .init = embedding_init,
    .export_onnx = embedding_export_onnx,
    .reads_token_ids = 1,
    .splits_batch = 1,
};
