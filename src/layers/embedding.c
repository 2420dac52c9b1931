/* [embedding]: token ids to learned vectors, the first layer of a language model.
 *
 *   in  [batch][T] token ids stored as floats (the net input, [net] inputs=1)
 *   out [batch][T][C]   out[b][t] = weights[in[b][t]]   (out_shape {1, T, C})
 *   weights [vocab][C], N(0, 1) as torch.nn.Embedding
 *
 * An id is the integer part of its float; an id outside [0, vocab) (or NaN) gives a zero row
 * and no gradient. There is no input gradient: ids are not differentiable. A [linear] with
 * tie=1 reuses weights as its output projection and adds into their gradient too. */
#include <string.h>

#include <omp.h>

#include "core/net.h"
#include "core/onnx_graph.h"

/* Below this many values a parallel region costs more than it saves. */
#define EMBEDDING_PARALLEL_MIN 32768

/* The weights' row for an id, or -1 when the id is outside [0, vocab). */
static int row_of(float id, int vocab)
{
    return id >= 0 && id < (float)vocab ? (int)id : -1;
}

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

/* Copies the weights' row of each id of in [rows] (strided by in_stride) to out [rows][C]
 * (strided by out_stride). */
static void lookup_rows(const Layer *l, const float *in, size_t in_stride, float *out,
                        size_t out_stride, int rows)
{
    const Param *w = &l->params[0];
    const size_t channels = (size_t)l->out_shape.w;
    const int vocab = (int)(w->count / channels);
#pragma omp parallel for schedule(static) if ((size_t)rows * channels > EMBEDDING_PARALLEL_MIN)
    for (int r = 0; r < rows; r++) {
        const int id = row_of(in[(size_t)r * in_stride], vocab);
        float *o = out + (size_t)r * out_stride;
        if (id < 0)
            memset(o, 0, channels * sizeof *o);
        else
            memcpy(o, w->data + (size_t)id * channels, channels * sizeof *o);
    }
}

static void embedding_forward(Layer *l, const StepContext *ctx)
{
    const int rows = ctx->batch * l->out_shape.h;
    lookup_rows(l, l->in[0], 1, l->out, (size_t)l->out_shape.w, rows);
}

static void embedding_forward_at(Layer *l, const StepContext *ctx, int t)
{
    const size_t tokens = (size_t)l->out_shape.h, channels = (size_t)l->out_shape.w;
    lookup_rows(l, l->in[0] + t, tokens, l->out + (size_t)t * channels, tokens * channels,
                ctx->batch);
}

/* grad[id] += delta[b][t] for every token. Threads split the columns, so two tokens with the
 * same id never race and each sum runs in token order. */
static void embedding_backward(Layer *l, const StepContext *ctx)
{
    const Param *w = &l->params[0];
    const float *in = l->in[0];
    const size_t channels = (size_t)l->out_shape.w;
    const int vocab = (int)(w->count / channels);
    const int rows = ctx->batch * l->out_shape.h;
#pragma omp parallel if ((size_t)rows * channels > EMBEDDING_PARALLEL_MIN)
    {
        const size_t threads = (size_t)omp_get_num_threads(), me = (size_t)omp_get_thread_num();
        const size_t first = channels * me / threads, end = channels * (me + 1) / threads;
        for (int r = 0; r < rows; r++) {
            const int id = row_of(in[r], vocab);
            if (id < 0)
                continue;
            float *g = w->grad + (size_t)id * channels;
            const float *d = l->delta + (size_t)r * channels;
            for (size_t j = first; j < end; j++)
                g[j] += d[j];
        }
    }
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

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_embedding_kernels = {
    .forward = embedding_forward,
    .backward = embedding_backward,
    .forward_at = embedding_forward_at,
};
