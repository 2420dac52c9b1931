/* [yolo]'s GPU kernels (layers/yolo.c has its meaning): the outputs on the device, and with truth
 * boxes (StepContext.truth: device memory, uploaded with the mini-batch) the loss and its delta
 * there too, by the rules the CPU runs (layers/yolo_loss_rules.h). The cost goes to the pass's
 * loss as [softmax]'s does (gpu_add_loss): kept on the device in a training step, which the
 * host reads at its end, else downloaded at once.
 *
 *   in, out, Yolo.delta (device) [batch][n_mask][classes + 5][h][w]; the input and its gradient
 *   float32 or 16-bit (Layer.in_storage[0]), the output float32 (LayerKernels.reads_16bit)
 */
#include "layers/yolo.h"

#include "gpu.h"
#include "kernels/yolo.h"

static int yolo_resize_gpu(Layer *l, int batch, LayerState *st, Error *e)
{
    (void)e;
    Yolo *yo = l->priv;
    yo->delta = layer_state_floats(st, (size_t)batch * shape_size(l->out_shape));
    yo->sample_loss = layer_state_bytes(st, (size_t)batch * sizeof *yo->sample_loss);
    yo->plane_squares =
        layer_state_bytes(st, (size_t)batch * (size_t)yo->n_mask * (size_t)(yo->classes + 5) *
                                  sizeof *yo->plane_squares);
    yo->cost = layer_state_bytes(st, sizeof *yo->cost);
    return CDL_OK;
}

static void yolo_forward_gpu(Layer *l, const StepContext *ctx)
{
    Yolo *yo = l->priv;
    const int w = l->out_shape.w, h = l->out_shape.h;
    const size_t n = (size_t)ctx->batch * shape_size(l->out_shape);
    cudaStream_t stream = gpu_stream(ctx);
    gpu_note(ctx,
             cuda_yolo_forward(l->out, l->in[0], l->in_storage[0], n, yo->classes + 5,
                               (size_t)w * (size_t)h, yo->scale_x_y, yo->new_coords, stream),
             "yolo forward");
    if (!ctx->truth)
        return;
    gpu_note(ctx,
             cuda_yolo_loss(yo, l->out, yo->delta, ctx->truth, ctx->truth_boxes, ctx->batch, w, h,
                            yo->sample_loss, yo->plane_squares, yo->cost, stream),
             "yolo loss");
    gpu_add_loss(ctx, yo->cost, "yolo loss");
}

/* dL/d(in) = -delta / loss_divisor, as on the CPU (backend/cpu/yolo.c). */
static void yolo_backward_gpu(Layer *l, const StepContext *ctx)
{
    const Yolo *yo = l->priv;
    if (!l->in_delta[0] || !ctx->truth)
        return;
    gpu_note(ctx,
             cuda_yolo_backward(l->in_delta[0], l->in_storage[0], yo->delta,
                                (size_t)ctx->batch * shape_size(l->out_shape),
                                -ctx->grad_scale / ctx->loss_divisor, gpu_stream(ctx)),
             "yolo backward");
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family). */
const LayerKernels gpu_yolo_kernels = {
    .resize = yolo_resize_gpu,
    .forward = yolo_forward_gpu,
    .backward = yolo_backward_gpu,
    .reads_16bit = 1,
};
