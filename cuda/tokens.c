/* [tokens]' GPU kernels (layers/tokens.c has its meaning): the map's planes transposed into token
 * rows after the class token, the position embedding added in the same kernel
 * (cuda/kernels/sequence.cu). The input and its gradient float32 or 16-bit (Layer.in_storage),
 * the output and its gradient too (Layer.storage): each value rounded once stored.
 *
 *   in  [batch][C][P]   out [batch][T][C], T = class_token + P
 */
#include "layers/tokens.h"
#include "gpu.h"
#include "kernels/sequence.h"

static void tokens_forward_gpu(Layer *l, const StepContext *ctx)
{
    const Tokens *t = l->priv;
    const float *token = t->token_param >= 0 ? l->params[t->token_param].data : NULL;
    const float *pos = t->pos_param >= 0 ? l->params[t->pos_param].data : NULL;
    gpu_note(ctx,
             cuda_tokens_forward(l->out, l->storage, l->in[0], l->in_storage[0], token, pos,
                                 ctx->batch, t->channels, t->patches, t->class_token,
                                 gpu_stream(ctx)),
             "tokens forward");
}

/* d class_token += the batch's sums of row 0, d positional += the batch's sums of every row, the
 * input's delta the token rows transposed back. */
static void tokens_backward_gpu(Layer *l, const StepContext *ctx)
{
    const Tokens *t = l->priv;
    const size_t sample = shape_size(l->out_shape);
    if (t->token_param >= 0 && l->params[t->token_param].grad)
        gpu_note(ctx,
                 cuda_column_sums_add_typed(l->params[t->token_param].grad, l->delta, l->storage,
                                            ctx->batch, t->channels, sample, gpu_stream(ctx)),
                 "tokens class token gradient");
    if (t->pos_param >= 0 && l->params[t->pos_param].grad)
        gpu_note(ctx,
                 cuda_column_sums_add_typed(l->params[t->pos_param].grad, l->delta, l->storage,
                                            ctx->batch, (int)sample, sample, gpu_stream(ctx)),
                 "tokens position embedding gradient");
    if (l->in_delta[0])
        gpu_note(ctx,
                 cuda_tokens_backward(l->in_delta[0], l->in_storage[0], l->delta, l->storage,
                                      ctx->batch, t->channels, t->patches, t->class_token,
                                      gpu_stream(ctx)),
                 "tokens input gradient");
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family). */
const LayerKernels gpu_tokens_kernels = {
    .forward = tokens_forward_gpu,
    .backward = tokens_backward_gpu,
    .stores_16bit = 1,
};
