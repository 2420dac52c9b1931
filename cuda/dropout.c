/* [dropout]'s and [drop_path]'s GPU kernels (layers/dropout.c has their meaning): inverted dropout
 * in training with the CPU's masks (the key rng_key(seed, layer_draw_stream) computed here on the
 * host, each draw's SplitMix64 value on the device: kernels/rng.cuh), a draw per value or per
 * sample, the identity in inference. Input and output each float32 or 16-bit (Layer.in_storage,
 * Layer.storage), each NCHW or, where both are, NHWC (Layer.channels_last), the mask in the same
 * layout with each value's NCHW draw.
 *
 *   in, out [batch][c][h][w] or [batch][h][w][c]   mask: as out, or [batch]
 */
#include "kernels/dropout.h"
#include "gpu.h"
#include "kernels/copy.h"
#include "layers/dropout.h"

/* Where the pass's draws lie (layers/dropout.h dropout_sample_draws): sample b of the global
 * mini-batch from b stride; dense where each sample spans its stride (uncut), else each sample's
 * values [1][sample] placed in [1][stride] (rows cut). */
static DropoutDraws dropout_draws(const Layer *l, const StepContext *ctx)
{
    const uint64_t stride = dropout_sample_draws(l),
                   sample = shape_size(l->out_shape) / dropout_values_per_draw(l);
    const DropoutDraws cut = {(uint64_t)ctx->sample_offset * stride, 1, sample, 1, stride};
    return stride == sample ? dropout_draws_dense(cut.first) : cut;
}

/* The mask's layout, its tensor's: NHWC where the output is (the input then is too,
 * CHANNELS_LAST_SAME) and a draw per value; a per-sample mask is the same in both. */
static DropoutLayout dropout_layout(const Layer *l)
{
    const Shape s = l->out_shape;
    const DropoutLayout nhwc = {(uint64_t)s.c, (uint64_t)s.h * (uint64_t)s.w};
    return l->channels_last && !((const Dropout *)l->priv)->per_sample ? nhwc
                                                                       : dropout_layout_nchw();
}

static void dropout_forward_gpu(Layer *l, const StepContext *ctx)
{
    Dropout *d = l->priv;
    const size_t n = (size_t)ctx->batch * shape_size(l->out_shape);
    d->mask_is_valid = ctx->train && d->probability > 0;
    if (!d->mask_is_valid) {
        gpu_note(ctx,
                 cuda_convert_rows(l->out, l->storage, n, l->in[0], l->in_storage[0], n, 1, n, 0,
                                   gpu_stream(ctx)),
                 "dropout forward");
        return;
    }
    const uint64_t key = rng_key(ctx->seed, layer_draw_stream(ctx, l));
    const size_t per_draw = dropout_values_per_draw(l);
    const GpuHandles *h = gpu_handles(ctx);
    /* a captured step keys on the draw id each replay uploads */
    gpu_note(ctx,
             cuda_dropout_forward(l->out, l->storage, d->mask, l->in[0], l->in_storage[0], key,
                                  h->capturing ? &h->step->draw_id : NULL, ctx->seed, l->index,
                                  dropout_draws(l, ctx), dropout_layout(l), d->probability,
                                  d->scale, per_draw, n, gpu_stream(ctx)),
             "dropout forward");
}

/* Inference: row t passes through (sequence nets). */
static void dropout_forward_at_gpu(Layer *l, const StepContext *ctx, int t)
{
    const size_t row = (size_t)l->out_shape.w, sample = shape_size(l->out_shape);
    const size_t at = (size_t)t * row;
    gpu_note(ctx,
             cuda_convert_rows(elem_at(l->out, l->storage, at), l->storage, sample,
                               elem_at(l->in[0], l->in_storage[0], at), l->in_storage[0], sample,
                               ctx->batch, row, 0, gpu_stream(ctx)),
             "dropout forward_at");
}

static void dropout_backward_gpu(Layer *l, const StepContext *ctx)
{
    const Dropout *d = l->priv;
    void *in_delta = l->in_delta[0];
    if (!in_delta)
        return;
    const size_t n = (size_t)ctx->batch * shape_size(l->out_shape);
    const cudaError_t err =
        d->mask_is_valid
            ? cuda_dropout_backward(in_delta, l->in_storage[0], l->delta, l->storage, d->mask,
                                    dropout_values_per_draw(l), n, gpu_stream(ctx))
            : cuda_convert_rows(in_delta, l->in_storage[0], n, l->delta, l->storage, n, 1, n, 1,
                                gpu_stream(ctx));
    gpu_note(ctx, err, "dropout backward");
}

/* Elementwise: NHWC where the input and the output are, the mask too (dropout_layout). */
static ChannelsLastUse dropout_takes_channels_last(const Layer *l, const ExecContext *exec)
{
    (void)l, (void)exec;
    return CHANNELS_LAST_SAME;
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family, [dropout] and
 * [drop_path] alike). */
const LayerKernels gpu_dropout_kernels = {
    .resize = dropout_resize,
    .forward = dropout_forward_gpu,
    .backward = dropout_backward_gpu,
    .forward_at = dropout_forward_at_gpu,
    .stores_16bit = 1,
    .takes_channels_last = dropout_takes_channels_last,
};
