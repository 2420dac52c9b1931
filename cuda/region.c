/* [region]'s GPU kernels (layers/region.c has its meaning): the outputs on the device, and with
 * truth boxes (StepContext.truth: device memory, uploaded with the mini-batch) the loss and its
 * delta there too, by the rules the CPU runs (layers/region_loss_rules.h). The cost goes to the
 * pass's loss as [yolo]'s does (cuda/yolo.c); in a step being captured, the images seen (the
 * anchor prior's) are read from GpuStepValues.
 *
 *   in, out, Region.delta (device) [batch][num][classes + 5][h][w]; the input and its gradient
 *   float32 or 16-bit (Layer.in_storage[0]), the output float32 (LayerKernels.reads_16bit)
 */
#include "layers/region.h"

#include "gpu.h"
#include "kernels/region.h"

static int region_resize_gpu(Layer *l, int batch, LayerState *st, Error *e)
{
    (void)e;
    Region *r = l->priv;
    r->delta = layer_state_floats(st, (size_t)batch * shape_size(l->out_shape));
    r->plane_squares = layer_state_bytes(
        st, (size_t)batch * (size_t)r->num * (size_t)(r->classes + 5) * sizeof *r->plane_squares);
    r->cost = layer_state_bytes(st, sizeof *r->cost);
    return CDL_OK;
}

static void region_forward_gpu(Layer *l, const StepContext *ctx)
{
    Region *r = l->priv;
    const int w = l->out_shape.w, h = l->out_shape.h;
    const size_t n = (size_t)ctx->batch * shape_size(l->out_shape);
    cudaStream_t stream = gpu_stream(ctx);
    gpu_note(ctx,
             cuda_region_forward(l->out, l->in[0], l->in_storage[0], n, r->classes + 5,
                                 (size_t)w * (size_t)h, r->softmax, r->background, stream),
             "region forward");
    if (!ctx->truth)
        return;
    GpuHandles *handles = gpu_handles(ctx);
    gpu_note(ctx,
             cuda_region_loss(r, l->out, r->delta, ctx->truth, ctx->truth_boxes, ctx->batch, w, h,
                              handles->capturing ? &handles->step->images_seen : NULL,
                              ctx->images_seen, r->plane_squares, r->cost, stream),
             "region loss");
    gpu_add_loss(ctx, r->cost, "region loss");
}

/* dL/d(in) as on the CPU (backend/cpu/region.c). */
static void region_backward_gpu(Layer *l, const StepContext *ctx)
{
    const Region *r = l->priv;
    if (!l->in_delta[0] || !ctx->truth)
        return;
    gpu_note(ctx,
             cuda_region_backward(l->in_delta[0], l->in_storage[0], r->delta, l->out,
                                  (size_t)ctx->batch * shape_size(l->out_shape), r->classes + 5,
                                  (size_t)l->out_shape.w * (size_t)l->out_shape.h, r->background,
                                  -ctx->grad_scale / ctx->loss_divisor, gpu_stream(ctx)),
             "region backward");
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family). */
const LayerKernels gpu_region_kernels = {
    .resize = region_resize_gpu,
    .forward = region_forward_gpu,
    .backward = region_backward_gpu,
    .reads_16bit = 1,
};
