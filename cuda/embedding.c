/* [embedding]'s GPU kernels (layers/embedding.c has its meaning): a row of the weights per token
 * id, and the weights' gradient summed in the CPU's order (cuda/kernels/sequence.cu); the output
 * and its gradient float32 or 16-bit (Layer.storage).
 *
 *   in  [batch][R] token ids stored as floats (R = Embedding.input_rows)
 *   out [batch][T][C]   out[b][t] = weights[in[b][first_row + t]]
 *   weights [vocab][C] (embedding_weights: the layer's own or, with share=, another's)
 */
#include "layers/embedding.h"
#include "gpu.h"
#include "kernels/sequence.h"

static int vocab_of(const Layer *l)
{
    return (int)(embedding_weights(l)->count / (size_t)l->out_shape.w);
}

/* The ids of out row 0 of sample 0 (part=target starts at the source's length). */
static const float *first_id(const Layer *l)
{
    return l->in[0] + ((const Embedding *)l->priv)->first_row;
}

/* The ids per sample of the net input. */
static size_t ids_per_sample(const Layer *l)
{
    return (size_t)((const Embedding *)l->priv)->input_rows;
}

static void embedding_forward_gpu(Layer *l, const StepContext *ctx)
{
    const int channels = l->out_shape.w, rows = l->out_shape.h;
    gpu_note(ctx,
             cuda_embedding_lookup(l->out, l->storage, (size_t)channels, first_id(l), rows,
                                   ids_per_sample(l), embedding_weights(l)->data, vocab_of(l),
                                   channels, ctx->batch * rows, gpu_stream(ctx)),
             "embedding forward");
}

static void embedding_forward_at(Layer *l, const StepContext *ctx, int t)
{
    const size_t tokens = (size_t)l->out_shape.h, channels = (size_t)l->out_shape.w;
    gpu_note(ctx,
             cuda_embedding_lookup(elem_at(l->out, l->storage, (size_t)t * channels), l->storage,
                                   tokens * channels, first_id(l) + t, 1, ids_per_sample(l),
                                   embedding_weights(l)->data, vocab_of(l), (int)channels,
                                   ctx->batch, gpu_stream(ctx)),
             "embedding forward_at");
}

/* Adds into the weights' gradient, the shared table's with share= (after the tied head's and
 * the later [embedding]s', as on the CPU: the backward runs the layers in reverse). */
static void embedding_backward_gpu(Layer *l, const StepContext *ctx)
{
    const int rows = l->out_shape.h;
    gpu_note(ctx,
             cuda_embedding_grad(embedding_weights(l)->grad, l->delta, l->storage, first_id(l),
                                 rows, ids_per_sample(l), vocab_of(l), l->out_shape.w,
                                 ctx->batch * rows, gpu_stream(ctx)),
             "embedding backward");
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family). */
const LayerKernels gpu_embedding_kernels = {
    .forward = embedding_forward_gpu,
    .backward = embedding_backward_gpu,
    .forward_at = embedding_forward_at,
    .stores_16bit = 1,
};
