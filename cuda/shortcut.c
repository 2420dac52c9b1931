/* [shortcut]'s GPU kernels (layers/shortcut.c has its meaning): out = act(alpha * prev + beta *
 * from), `from` mapped as darknet when the shapes differ (ShortcutMapping), plain NCHW only (no
 * fused sums on the GPU: LayerKernels.plain_sum stays NULL); each input and the output float32 or
 * 16-bit (Layer.in_storage, Layer.storage).
 *
 *   prev [batch][c2][h2][w2]   the previous layer; also the output shape
 *   from [batch][c1][h1][w1]   the layer named by from=
 *   out  [batch][c2][h2][w2]
 */
#include "kernels/shortcut.h"
#include "gpu.h"
#include "kernels/layer_activation.h"
#include "layer_activation.h"

/* The sum's tensors: into the activation's input. */
static ShortcutTensors sum_tensors(Layer *l)
{
    return (ShortcutTensors){
        .y = layer_activation_input(l),
        .prev = l->in[0],
        .from = l->in[1],
        .y_type = layer_pre_storage(l),
        .prev_type = l->in_storage[0],
        .from_type = l->in_storage[1],
    };
}

static void shortcut_forward_gpu(Layer *l, const StepContext *ctx)
{
    const Shortcut *sc = l->priv;
    const Shape fs = shortcut_from_shape(l);
    cudaError_t err;
    if (shortcut_same_shape(fs, l->out_shape))
        err = cuda_shortcut_sum(sum_tensors(l), sc->alpha, sc->beta,
                                (size_t)ctx->batch * shape_size(l->out_shape), gpu_stream(ctx));
    else
        err = cuda_shortcut_sum_mapped(sum_tensors(l), sc->alpha, sc->beta,
                                       shortcut_mapping(fs, l->out_shape), ctx->batch,
                                       gpu_stream(ctx));
    gpu_note(ctx, err, "shortcut forward");
    gpu_layer_activate(l, ctx);
}

/* Row t of every sample, for sequence nets, whose shortcuts join equal shapes (parse checks). */
static void shortcut_forward_at_gpu(Layer *l, const StepContext *ctx, int t)
{
    const Shortcut *sc = l->priv;
    const size_t row = (size_t)l->out_shape.w, sample = shape_size(l->out_shape);
    gpu_note(ctx,
             cuda_shortcut_sum_rows(sum_tensors(l), sc->alpha, sc->beta, ctx->batch, sample,
                                    (size_t)t * row, row, gpu_stream(ctx)),
             "shortcut forward_at");
    if (!l->pre || l->activation == CDL_ACT_LINEAR)
        return;
    for (int b = 0; b < ctx->batch; b++) {
        const size_t at = (size_t)b * sample + (size_t)t * row;
        gpu_note(ctx,
                 cuda_activation_forward(elem_at(l->out, l->storage, at), l->storage,
                                         elem_at(l->pre, layer_pre_storage(l), at),
                                         layer_pre_storage(l), row, (int)l->activation,
                                         gpu_stream(ctx)),
                 "shortcut forward_at activation");
    }
}

/* A delta the net left unzeroed (Layer.in_delta_fresh) is written, not added to; one input twice
 * (the same delta) is written once, then added to, as on the CPU. */
static void shortcut_backward_gpu(Layer *l, const StepContext *ctx)
{
    const Shortcut *sc = l->priv;
    gpu_layer_activation_backward(l, ctx);
    const size_t n = (size_t)ctx->batch * shape_size(l->out_shape);
    float *prev_delta = l->in_delta[0], *from_delta = l->in_delta[1];
    const Shape fs = shortcut_from_shape(l);
    const int fresh0 = prev_delta && l->in_delta_fresh[0];
    const int fresh1 = from_delta && l->in_delta_fresh[1] && from_delta != prev_delta;
    if (prev_delta)
        gpu_note(ctx,
                 cuda_add_scaled(prev_delta, l->in_storage[0], l->delta, l->storage, sc->alpha, n,
                                 fresh0, gpu_stream(ctx)),
                 "shortcut backward");
    if (!from_delta)
        return;
    cudaError_t err;
    if (shortcut_same_shape(fs, l->out_shape))
        err = cuda_add_scaled(from_delta, l->in_storage[1], l->delta, l->storage, sc->beta, n,
                              fresh1, gpu_stream(ctx));
    else
        err = cuda_shortcut_from_backward(from_delta, l->in_storage[1], l->delta, l->storage,
                                          sc->beta, shortcut_mapping(fs, l->out_shape), ctx->batch,
                                          fresh1, gpu_stream(ctx));
    gpu_note(ctx, err, "shortcut backward");
}

/* The same-shape sum is elementwise: any one layout of its inputs and output; a mapped one is
 * NCHW only. */
static ChannelsLastUse shortcut_takes_channels_last(const Layer *l, const ExecContext *exec)
{
    (void)exec;
    return shortcut_same_shape(shortcut_from_shape(l), l->out_shape) ? CHANNELS_LAST_SAME
                                                                     : CHANNELS_LAST_NEVER;
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family). */
const LayerKernels gpu_shortcut_kernels = {
    .forward = shortcut_forward_gpu,
    .backward = shortcut_backward_gpu,
    .forward_at = shortcut_forward_at_gpu,
    .stores_16bit = 1,
    .takes_channels_last = shortcut_takes_channels_last,
};
