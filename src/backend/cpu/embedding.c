/* [embedding]'s CPU kernels (layers/embedding.c has its meaning): a row of the weights per
 * token id.
 *
 *   in  [batch][R] token ids stored as floats (R = Embedding.input_rows)
 *   out [batch][T][C]   out[b][t] = weights[in[b][first_row + t]]
 *   weights [vocab][C] (embedding_weights: the layer's own or a shared one)
 */
#include <string.h>

#include <omp.h>

#include "core/layer.h"
#include "layers/embedding.h"

/* Below this many values a parallel region costs more than it saves. */
#define EMBEDDING_PARALLEL_MIN 32768

/* The weights' row for an id, or -1 when the id is outside [0, vocab). */
static int row_of(float id, int vocab)
{
    return id >= 0 && id < (float)vocab ? (int)id : -1;
}

/* Copies the weights' row of each id to out: for sample b < batch and row r < rows, the id
 * in[b * in_sample + r] to out + b * out_sample + r * C. */
static void lookup_rows(const Layer *l, const float *in, size_t in_sample, float *out,
                        size_t out_sample, int batch, int rows)
{
    const Param *w = embedding_weights(l);
    const size_t channels = (size_t)l->out_shape.w;
    const int vocab = (int)(w->count / channels), n = batch * rows;
#pragma omp parallel for schedule(static) if ((size_t)n * channels > EMBEDDING_PARALLEL_MIN)
    for (int i = 0; i < n; i++) {
        const size_t b = (size_t)(i / rows), r = (size_t)(i % rows);
        const int id = row_of(in[b * in_sample + r], vocab);
        float *o = out + b * out_sample + r * channels;
        if (id < 0)
            memset(o, 0, channels * sizeof *o);
        else
            memcpy(o, w->data + (size_t)id * channels, channels * sizeof *o);
    }
}

/* The ids of out row 0 of sample 0, and the ids per sample. */
static const float *first_id(const Layer *l)
{
    return l->in[0] + ((const Embedding *)l->priv)->first_row;
}

static size_t ids_per_sample(const Layer *l)
{
    return (size_t)((const Embedding *)l->priv)->input_rows;
}

static void embedding_forward(Layer *l, const StepContext *ctx)
{
    const size_t sample = (size_t)l->out_shape.h * (size_t)l->out_shape.w;
    lookup_rows(l, first_id(l), ids_per_sample(l), l->out, sample, ctx->batch, l->out_shape.h);
}

static void embedding_forward_at(Layer *l, const StepContext *ctx, int t)
{
    const size_t tokens = (size_t)l->out_shape.h, channels = (size_t)l->out_shape.w;
    lookup_rows(l, first_id(l) + t, ids_per_sample(l), l->out + (size_t)t * channels,
                tokens * channels, ctx->batch, 1);
}

/* grad[id] += delta[b][t] for every token. Threads split the columns, so two tokens with the
 * same id never race and each sum runs in token order. */
static void embedding_backward(Layer *l, const StepContext *ctx)
{
    const Param *w = embedding_weights(l);
    const float *in = first_id(l);
    const size_t channels = (size_t)l->out_shape.w, in_sample = ids_per_sample(l);
    const int vocab = (int)(w->count / channels), rows = l->out_shape.h;
#pragma omp parallel if ((size_t)ctx->batch * (size_t)rows * channels > EMBEDDING_PARALLEL_MIN)
    {
        const size_t threads = (size_t)omp_get_num_threads(), me = (size_t)omp_get_thread_num();
        const size_t first = channels * me / threads, end = channels * (me + 1) / threads;
        for (int i = 0; i < ctx->batch * rows; i++) {
            const int id = row_of(in[(size_t)(i / rows) * in_sample + (size_t)(i % rows)], vocab);
            if (id < 0)
                continue;
            float *g = w->grad + (size_t)id * channels;
            const float *d = l->delta + (size_t)i * channels;
            for (size_t j = first; j < end; j++)
                g[j] += d[j];
        }
    }
}

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_embedding_kernels = {
    .forward = embedding_forward,
    .backward = embedding_backward,
    .forward_at = embedding_forward_at,
};
