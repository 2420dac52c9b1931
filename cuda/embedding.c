/* [embedding]'s GPU kernels (layers/embedding.c has its meaning): a row of the weights per token
 * id, and the weights' gradient summed in the CPU's order (cuda/kernels/sequence.cu).
 *
 *   in  [batch][T] token ids stored as floats
 *   out [batch][T][C]   out[b][t] = weights[in[b][t]]
 *   weights [vocab][C]
 */
#include "layers/embedding.h"
#include "gpu.h"
#include "kernels/sequence.h"

/* The GPU reads every row of the ids with the layer's own weights: a sequence-to-sequence
 * embedding's part= and share= are the CPU's. */
static int embedding_resize_gpu(Layer *l, int batch, LayerState *st, Error *e)
{
    (void)batch, (void)st;
    const Embedding *em = l->priv;
    if (em->first_row || em->input_rows != l->out_shape.h || !l->n_params)
        return error_set(e, CDL_EUSAGE,
                         "layer %d [embedding]: part= and share= (a sequence-to-sequence net) "
                         "run on the CPU only",
                         l->index);
    return CDL_OK;
}

static int vocab_of(const Layer *l)
{
    return (int)(l->params[0].count / (size_t)l->out_shape.w);
}

static void embedding_forward_gpu(Layer *l, const StepContext *ctx)
{
    const int channels = l->out_shape.w;
    gpu_note(ctx,
             cuda_embedding_lookup(l->out, (size_t)channels, l->in[0], 1, l->params[0].data,
                                   vocab_of(l), channels, ctx->batch * l->out_shape.h,
                                   gpu_stream(ctx)),
             "embedding forward");
}

static void embedding_forward_at(Layer *l, const StepContext *ctx, int t)
{
    const size_t tokens = (size_t)l->out_shape.h, channels = (size_t)l->out_shape.w;
    gpu_note(ctx,
             cuda_embedding_lookup(l->out + (size_t)t * channels, tokens * channels, l->in[0] + t,
                                   tokens, l->params[0].data, vocab_of(l), (int)channels,
                                   ctx->batch, gpu_stream(ctx)),
             "embedding forward_at");
}

static void embedding_backward_gpu(Layer *l, const StepContext *ctx)
{
    gpu_note(ctx,
             cuda_embedding_grad(l->params[0].grad, l->delta, l->in[0], vocab_of(l), l->out_shape.w,
                                 ctx->batch * l->out_shape.h, gpu_stream(ctx)),
             "embedding backward");
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family). */
const LayerKernels gpu_embedding_kernels = {
    .resize = embedding_resize_gpu,
    .forward = embedding_forward_gpu,
    .backward = embedding_backward_gpu,
    .forward_at = embedding_forward_at,
};
