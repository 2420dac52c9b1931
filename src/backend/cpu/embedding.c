/* [embedding]'s CPU kernels (layers/embedding.c has its meaning): a row of the weights per
 * token id.
 *
 *   in  [batch][T] token ids stored as floats
 *   out [batch][T][C]   out[b][t] = weights[in[b][t]]
 *   weights [vocab][C]
 */
#include <string.h>

#include <omp.h>

#include "core/layer.h"

/* Below this many values a parallel region costs more than it saves. */
#define EMBEDDING_PARALLEL_MIN 32768

/* The weights' row for an id, or -1 when the id is outside [0, vocab). */
static int row_of(float id, int vocab)
{
    return id >= 0 && id < (float)vocab ? (int)id : -1;
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

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_embedding_kernels = {
    .forward = embedding_forward,
    .backward = embedding_backward,
    .forward_at = embedding_forward_at,
};
